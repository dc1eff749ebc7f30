#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# cmtools.sh: rdmacm-utils' programs, unchanged, over kqp in the bench
# guest, beyond what dropin.sh (rping and rdma_server/rdma_client,
# preloaded on one side) and mckey.sh do: rping -V and rdma_server/
# rdma_client preloaded on both sides, then ucmatose, udaddy, cmtime and
# rdma_xserver/rdma_xclient, each with LD_PRELOAD=libkqp.so on both sides,
# on the client only and on the server only.  A run passes when both sides exit 0 (cmtime's server,
# which never exits, is stopped once its client is done) and
# /sys/kernel/debug/kqp/objects shows that kqp made the preloaded sides'
# ids.  A run that fails is run again stock on both sides; if rdma-core
# fails too, the line is a SKIP that says so.  Last, the rsockets tools:
# rstream in its modes, rcopy and riostream (riomap() and riowrite()),
# each way; udpong, datagram rsockets.  Prints TAP.
set -u

here=$(cd "$(dirname "$0")" && pwd)
repo=${KQP_REPO:-$(cd "$here/../.." && pwd)}
KQP_LIB=$repo/lib/libkqp.so
export KQP_LIMIT=${KQP_CMTOOLS_TIMEOUT:-180}
KQP_WORK=$(mktemp -d)
trap 'rm -rf "$KQP_WORK"' EXIT
# shellcheck source=tools/testing/selftests/kqp/lib.sh
. "$here/lib.sh"
kqp_need_bench

addr=${KQP_TEST_ADDR:-192.0.2.1}
objects=/sys/kernel/debug/kqp/objects
port=7600

# cm_ids kqp ever made ("cm_ids LIVE MADE").
made_ids() {
	awk '$1 == "cm_ids" { print $3 }' "$objects"
}

# tool WHERE IDS PORT SERVER_CMD... -- CLIENT_CMD...: one run; WHERE is
# both, client or server (who is preloaded), IDS the fewest ids each
# preloaded side makes.
tool() {
	local where=$1 ids=$2 p=$3 sw=kqp cw=kqp name before got want
	shift 3
	roles "$where"
	name="$1-$where-$p"
	desc="$* (kqp: $where)"
	if [ -n "${list:-}" ]; then
		echo "$desc"
		return
	fi
	before=$(made_ids)
	SECONDS=0
	run_pair "$name" "$sw" "$cw" "$p" "$@"
	echo "# $name: ${SECONDS}s"
	# rdma_xserver disconnects as soon as its message arrives, and rxe
	# can then leave the client waiting for that message's ACK for ever
	# (lib.sh's lost_ack()): seen once on 6.1 with a stock server.
	if lost_ack "$name"; then
		echo "# $name: one side still waited after ${KQP_LIMIT}s (rxe's lost ACK, lib.sh's lost_ack()); once more"
		show "$KQP_WORK/$name.s.out" "$KQP_WORK/$name.c.out"
		name="$name-again"
		before=$(made_ids)
		run_pair "$name" "$sw" "$cw" "$p" "$@"
	fi
	want=$ids
	[ "$where" = both ] && want=$((2 * ids))
	got=$(($(made_ids) - before))
	if pair_ok "$name"; then
		if [ "$got" -ge "$want" ]; then
			tap 0 "$desc"
			return
		fi
		echo "# $name: kqp made $got ids, expected at least $want"
		tap 1 "$desc"
		return
	fi
	run_pair "$name-ref" stock stock "$p" "$@"
	if [ "$(cat "$KQP_WORK/$name-ref.c.rc")" -ne 0 ]; then
		echo "# $name: fails stock on both sides too"
		tap_skip "$desc" "rdma-core fails it on this device too"
	else
		tap 1 "$desc"
	fi
}

runs() {
	local w
	# dropin.sh runs these preloaded on one side; here, on both.
	tool both 1 7474 rping -s -V -C 20 -S 4096 -a "$addr" -p 7474 -- \
		rping -c -V -C 20 -S 4096 -a "$addr" -p 7474
	tool both 1 7475 rdma_server -s "$addr" -p 7475 -- \
		rdma_client -s "$addr" -p 7475
	for w in $placements; do
		tool "$w" 4 7471 ucmatose -c 4 -C 20 -p 7471 -- \
			ucmatose -c 4 -C 20 -p 7471 -s "$addr"
		# udaddy's -p is the port space; it always uses port 7174.
		tool "$w" 4 7174 udaddy -c 4 -C 20 -- \
			udaddy -c 4 -C 20 -s "$addr"
		KQP_SERVER_STAYS=1 tool "$w" 50 7472 cmtime -c 50 -p 7472 -- \
			cmtime -c 50 -p 7472 -s "$addr"
		tool "$w" 1 7473 rdma_xserver -p 7473 -- \
			rdma_xclient -s "$addr" -p 7473
	done
}

# rsockets: rstream blocking (-T b), non-blocking (-T n), with every
# byte checked (-T v) and through rdma_getaddrinfo() (-T r), kqp on both
# sides, the client only and the server only; then with rpoll() (-T a);
# then rcopy, whose copy is compared with the file; then riostream,
# blocking and checking every byte (non-blocking), whose data goes by
# riowrite() into the peer's riomap()ped buffer.
rsockets() {
	local w o p=7480
	streams rstream b n v r
	for w in $placements; do
		p=$((p + 1))
		rstream_async "$w" "$p"
	done
	for w in $placements; do
		p=$((p + 1))
		rcopy_run "$w" "$p"
	done
	streams riostream b v
	for w in $placements; do
		p=$((p + 1))
		udpong_run "$w" "$p"
	done
}

# udpong_run WHERE PORT: datagram rsockets, 100 round trips of 512 bytes
# (-T e; rxe's UD MTU is 1024 on the bench's 1500-byte link).  udpong's
# client exits 0 whatever its test did, so a run also needs the result
# line it prints only once every datagram came back.  rdma-core's
# datagram rsockets cannot make a QP on RoCE (an address handle with no
# GRH), so a placement with a stock side is a SKIP when stock on both
# sides fails too.  That reference runs first: it fails at once, where a
# kqp client against a stock server (which cannot answer) waits out its
# limit.
# udpong_pair NAME SW CW PORT: one run; true when it passed.  100 round
# trips take seconds; a run that waits for ever gets 30 s, not
# KQP_LIMIT's 180.
udpong_pair() {
	KQP_LIMIT=30 KQP_SERVER_STAYS=1 KQP_LISTEN_UDP=1 \
		run_pair "$1" "$2" "$3" "$4" \
		udpong -b "$addr" -p "$4" -- \
		udpong -s "$addr" -p "$4" -T e -S 512 -C 100
	pair_ok "$1" && grep -q '^custom ' "$KQP_WORK/$1.c.out"
}

udpong_run() {
	local where=$1 p=$2 sw=kqp cw=kqp name desc
	roles "$where"
	name="udpong-$where-$p"
	desc="udpong -T e -S 512 -C 100 (kqp: $where)"
	if [ -n "${list:-}" ]; then
		echo "$desc"
		return
	fi
	if [ "$where" != both ] && ! udpong_pair "$name-ref" stock stock "$p"; then
		show "$KQP_WORK/$name-ref.c.out"
		echo "# $name: fails stock on both sides"
		tap_skip "$desc" "rdma-core fails it on this device too"
		return
	fi
	if udpong_pair "$name" "$sw" "$cw" "$p"; then
		tap 0 "$desc"
		return
	fi
	show "$KQP_WORK/$name.c.out"
	tap 1 "$desc"
}

# streams PROG MODE...: PROG (rstream or riostream), 300 transfers of
# 1000 B, with -T MODE, in each placement; the port from rsockets()' p.
streams() {
	local prog=$1 o w
	shift
	for o in "$@"; do
		for w in $placements; do
			p=$((p + 1))
			tool "$w" 1 "$p" "$prog" -b "$addr" -p "$p" -S 1000 \
				-C 300 -T "$o" -- "$prog" -s "$addr" -p "$p" \
				-S 1000 -C 300 -T "$o"
		done
	done
}

# rstream -T a: both sides wait in rpoll().  The server closes as soon as
# its last send is done, and the client's last rpoll() can then see the
# hang-up with the last bytes (POLLIN | POLLHUP), which rstream's
# do_poll() takes for an error: exit 16.  rdma-core does the same on rxe
# (4 of 6 stock runs in one guest); so a client's 16 passes when the
# server, which has received and sent everything by then, exited 0.
rstream_async() {
	local where=$1 p=$2 sw=kqp cw=kqp name desc s c
	roles "$where"
	name="rstream-async-$where-$p"
	desc="rstream -T a (kqp: $where)"
	if [ -n "${list:-}" ]; then
		echo "$desc"
		return
	fi
	run_pair "$name" "$sw" "$cw" "$p" rstream -b "$addr" -p "$p" -S 1000 \
		-C 300 -T a -- rstream -s "$addr" -p "$p" -S 1000 -C 300 -T a
	s=$(cat "$KQP_WORK/$name.s.rc") c=$(cat "$KQP_WORK/$name.c.rc")
	if [ "$s" -eq 0 ] && { [ "$c" -eq 0 ] || [ "$c" -eq 16 ]; }; then
		[ "$c" -eq 16 ] && echo "# $name: the client saw the hang-up with the last bytes (exit 16)"
		tap 0 "$desc"
		return
	fi
	echo "# $name: server exit $s, client exit $c"
	show "$KQP_WORK/$name.s.out" "$KQP_WORK/$name.s.err" \
		"$KQP_WORK/$name.c.out" "$KQP_WORK/$name.c.err"
	tap 1 "$desc"
}

# rcopy: a 3 MiB file through an rcopy server, compared byte for byte.
rcopy_run() {
	local where=$1 p=$2 sw=kqp cw=kqp name desc src dst
	roles "$where"
	name="rcopy-$where-$p"
	desc="rcopy of a 3 MiB file (kqp: $where)"
	if [ -n "${list:-}" ]; then
		echo "$desc"
		return
	fi
	src=$KQP_WORK/$name.src dst=$KQP_WORK/$name.dst
	head -c 3145728 /dev/urandom > "$src"
	KQP_SERVER_STAYS=1 run_pair "$name" "$sw" "$cw" "$p" rcopy -p "$p" -- \
		rcopy "$src" "$addr:$dst" -p "$p"
	if pair_ok "$name" && cmp "$src" "$dst"; then
		tap 0 "$desc"
	else
		tap 1 "$desc"
	fi
}

# Who runs under libkqp.so: both sides, the client, the server.  --both
# keeps to the first (tests: on 6.1), where the other two placements say
# again what they say on 6.12: how libkqp speaks to rdma-core's userspace,
# which no kernel changes, over kqp.ko paths a "both" run takes too.
placements="both client server"
if [ "${1:-}" = --both ]; then
	placements=both
	shift
fi

case ${1:-} in
-h|--help)
	echo "usage: cmtools.sh [--both] [--list]: prints TAP; --list prints the runs;"
	echo "       --both: kqp on both sides only, not on one side against stock"
	exit 0
	;;
--list) list=1; runs; rsockets; exit 0 ;;
'') ;;
*) echo "usage: cmtools.sh [--both] [--list]" >&2; exit 2 ;;
esac

if [ ! -r "$objects" ] || [ ! -e "$KQP_LIB" ]; then
	echo "1..0 # SKIP needs kqp.ko loaded (debugfs) and $KQP_LIB"
	exit 4
fi

echo "TAP version 13"
echo "1..$( (list=1; runs; rsockets) | wc -l)"
runs
rsockets
