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
# fails too, the line is a SKIP that says so.  Last, the rsockets tools
# kqp does not implement must fail at once, not hang.  Prints TAP.
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
	case $where in
	client) sw=stock ;;
	server) cw=stock ;;
	esac
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
	for w in both client server; do
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

# rsockets: rsocket() fails with ENOSYS under kqp, so the tools give up
# at once.
rsockets() {
	local t rc
	for t in rstream riostream; do
		if [ -n "${list:-}" ]; then
			echo "$t -s $addr fails at once (rsockets: not yet)"
			continue
		fi
		LD_PRELOAD=$KQP_LIB timeout -k 5 30 "$t" -s "$addr" \
			> "$KQP_WORK/$t.out" 2>&1
		rc=$?
		# Not 0, nor timeout's 124 or a kill's 137.
		if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ]; then
			tap 0 "$t -s $addr fails at once (rsockets: not yet)"
		else
			echo "# $t: exit $rc"
			show "$KQP_WORK/$t.out"
			tap 1 "$t -s $addr fails at once (rsockets: not yet)"
		fi
	done
}

case ${1:-} in
-h|--help)
	echo "usage: cmtools.sh [--list]: prints TAP; --list prints the runs"
	exit 0
	;;
--list) list=1; runs; rsockets; exit 0 ;;
'') ;;
*) echo "usage: cmtools.sh [--list]" >&2; exit 2 ;;
esac

if [ ! -r "$objects" ] || [ ! -e "$KQP_LIB" ]; then
	echo "1..0 # SKIP needs kqp.ko loaded (debugfs) and $KQP_LIB"
	exit 4
fi

echo "TAP version 13"
echo "1..$( (list=1; runs; rsockets) | wc -l)"
runs
rsockets
