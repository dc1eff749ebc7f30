#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# preload.sh: unmodified TCP programs from Debian (socat, nc, iperf3),
# and rdma-core's rstream on plain sockets (-T s) and in fork mode (-T f,
# RDMAV_FORK_SAFE=1: the server forks after accept() and its child makes
# the RDMA connection), moving data over RDMA with
# LD_PRELOAD=libkqp-preload.so, to and from a peer under
# libkqp-preload.so or under rdma-core's librspreload.so; the run with
# librspreload.so on both sides shows what right is (fail() says what a
# failure of rdma-core's makes a SKIP).  Each run checks:
#  - both sides exit 0, and the data arrived whole (cmp; iperf3 reports
#    the bytes it received; rstream -T v compares each byte and prints
#    its result row only at the end);
#  - RDMA carried it: rxe's sent_pkts moved by at least one packet per
#    4 KiB moved;
#  - TCP did not: the kernel's TCP sent fewer segments than the data
#    needs at the loopback's 64 KiB (/proc/net/snmp's OutSegs);
#  - a side under libkqp-preload.so made its ids through kqp
#    (/sys/kernel/debug/kqp/objects).
# Prints TAP.
set -u

here=$(cd "$(dirname "$0")" && pwd)
repo=${KQP_REPO:-$(cd "$here/../.." && pwd)}
# side() preloads KQP_LIB for a "kqp" side.
KQP_LIB=$repo/lib/libkqp-preload.so
RSPRELOAD=${KQP_RSPRELOAD:-/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so}
# A 4 MiB run takes seconds; librspreload.so's
# failures hang until this, two or three runs of them per pass.
export KQP_LIMIT=${KQP_PRELOAD_TIMEOUT:-30}
KQP_WORK=$(mktemp -d)
trap 'rm -rf "$KQP_WORK"' EXIT
# shellcheck source=tools/testing/selftests/kqp/lib.sh
. "$here/lib.sh"
[ "${1:-}" = --list ] || kqp_need_bench

addr=${KQP_TEST_ADDR:-192.0.2.1}
dev=${KQP_TEST_RDMA_DEV:-rxe0}
objects=/sys/kernel/debug/kqp/objects
counters=/sys/class/infiniband/$dev/ports/1/hw_counters
[ -d "$counters" ] || counters=/sys/class/infiniband/$dev/hw_counters
size=4194304
port=7700
# rstream's own runs: 64 transfers of 64 KiB each way ($size), verified.
rs_opts="-S 65536 -C 64 -T s -T v"

made_ids() {
	awk '$1 == "cm_ids" { print $3 }' "$objects"
}

tcp_out() {
	awk '$1 == "Tcp:" && $2 ~ /^[0-9]/ { print $12 }' /proc/net/snmp
}

# The command prefix of a side: kqp's preload comes from side(); the
# stock side names librspreload.so itself.
pre() {
	[ "$1" = stock ] && echo "env LD_PRELOAD=$RSPRELOAD"
}

# fail WHERE TOOL NAME DESC: a failed run.  When librspreload.so fails
# with itself, the reference run (stock) is a SKIP, and it blames each
# side that failed on its own: any exit but 0, 255 (never ran) and, for a
# server, 143 (run_pair killed it because its client had failed);
# cross_ref() blames sides too.  A run whose librspreload.so side is one
# blamed is a SKIP too, since rdma-core would fail it whatever the other
# side did.
fail() {
	local n=$KQP_WORK/$3 s c
	s=$(cat "$n.s.rc") c=$(cat "$n.c.rc")
	case $1 in
	stock)
		case $s in 0|143|255) ;; *) : > "$KQP_WORK/$2.server-fails" ;; esac
		case $c in 0|255) ;; *) : > "$KQP_WORK/$2.client-fails" ;; esac
		tap_skip "$4" "rdma-core fails it with itself (server exit $s, client exit $c)"
		return
		;;
	client)
		if [ -e "$KQP_WORK/$2.server-fails" ]; then
			tap_skip "$4" "librspreload.so fails as its server with rdma-core"
			return
		fi
		;;
	server)
		if [ -e "$KQP_WORK/$2.client-fails" ]; then
			tap_skip "$4" "librspreload.so fails as its client with rdma-core"
			return
		fi
		;;
	esac
	tap 1 "$4"
}

# move WHERE TOOL: one transfer with TOOL (socat or iperf3); WHERE is
# both, client, server (who runs under libkqp-preload.so) or stock.
move() {
	local where=$1 t=$2 sw=kqp cw=kqp name desc ids pkts segs
	local src=$KQP_WORK/src dst s_pre c_pre
	roles "$where"
	port=$((port + 1))
	name=$t-$where
	case $t in
	rstream-s) desc="rstream -T s (plain sockets) moves $size bytes each way over RDMA (libkqp-preload.so: $where)" ;;
	rstream-f) desc="rstream -T f (RDMAV_FORK_SAFE=1: the server's child connects) moves $size bytes each way over RDMA (libkqp-preload.so: $where)" ;;
	*) desc="$t moves $size bytes over RDMA (libkqp-preload.so: $where)" ;;
	esac
	if [ -n "${list:-}" ]; then
		echo "$desc"
		return
	fi
	dst=$KQP_WORK/$name.dst
	s_pre=$(pre "$sw") c_pre=$(pre "$cw")
	ids=$(made_ids) pkts=$(cat "$counters/sent_pkts") segs=$(tcp_out)
	# shellcheck disable=SC2086 # the prefixes are words
	case $t in
	socat)
		run_pair "$name" "$sw" "$cw" "$port" \
			$s_pre socat -u "TCP-LISTEN:$port,bind=$addr,reuseaddr" \
			"OPEN:$dst,creat,trunc" -- \
			$c_pre socat -u "OPEN:$src" "TCP:$addr:$port"
		;;
	nc)
		# The client's stdin is the file; -N shuts down at its end.
		# shellcheck disable=SC2016 # sh -c expands them
		run_pair "$name" "$sw" "$cw" "$port" \
			$s_pre nc -l "$addr" "$port" -- \
			$c_pre sh -c 'exec nc -N -w 20 "$0" "$1" < "$2"' \
			"$addr" "$port" "$src"
		dst=$KQP_WORK/$name.s.out
		;;
	iperf3)
		run_pair "$name" "$sw" "$cw" "$port" \
			$s_pre iperf3 -s -1 -B "$addr" -p "$port" -J -- \
			$c_pre iperf3 -c "$addr" -p "$port" -n "$size" -J
		;;
	rstream-s)
		# rstream on plain sockets, verifying what it reads.
		run_pair "$name" "$sw" "$cw" "$port" \
			$s_pre rstream -b "$addr" -p "$port" $rs_opts -- \
			$c_pre rstream -s "$addr" -p "$port" $rs_opts
		;;
	rstream-f)
		# Fork mode: the server forks after accept(), and its child
		# makes the RDMA connection; the sockets are TCP until then.
		RDMAV_FORK_SAFE=1 KQP_LISTEN_TCP=1 run_pair "$name" "$sw" "$cw" \
			"$port" $s_pre rstream -b "$addr" -p "$port" \
			${rs_opts/-T s/-T f} -- \
			$c_pre rstream -s "$addr" -p "$port" $rs_opts
		;;
	esac
	pkts=$(($(cat "$counters/sent_pkts") - pkts))
	segs=$(($(tcp_out) - segs))
	ids=$(($(made_ids) - ids))
	echo "# $name: rxe sent $pkts packets, TCP sent $segs segments, kqp made $ids ids"
	if ! pair_ok "$name"; then
		fail "$where" "$t" "$name" "$desc"
		return
	fi
	if [ "${t%-*}" = rstream ]; then
		if ! grep -Eq '[0-9.]+s +[0-9.]+ +[0-9.]+$' "$KQP_WORK/$name.c.out" ||
		   ! grep -Eq '[0-9.]+s +[0-9.]+ +[0-9.]+$' "$KQP_WORK/$name.s.out"; then
			echo "# $name: a side printed no result row"
			show "$KQP_WORK/$name.s.out" "$KQP_WORK/$name.c.out"
			fail "$where" "$t" "$name" "$desc"
			return
		fi
	elif [ "$t" = iperf3 ]; then
		if ! grep -q "\"bytes\":[[:space:]]*$size" "$KQP_WORK/$name.s.out"; then
			echo "# $name: the server did not report $size bytes"
			show "$KQP_WORK/$name.s.out"
			fail "$where" "$t" "$name" "$desc"
			return
		fi
	elif ! cmp "$src" "$dst"; then
		fail "$where" "$t" "$name" "$desc"
		return
	fi
	local ok=0 want=0
	[ "$sw" = kqp ] && want=$((want + 1))
	[ "$cw" = kqp ] && want=$((want + 1))
	if [ "$pkts" -lt $((size / 4096)) ]; then
		echo "# $name: too few RDMA packets for $size bytes"
		ok=1
	fi
	if [ "$segs" -ge $((size / 65536)) ]; then
		echo "# $name: TCP sent enough segments to carry the data"
		ok=1
	fi
	if [ "$ids" -lt "$want" ]; then
		echo "# $name: kqp made $ids ids, fewer than its $want sides"
		ok=1
	fi
	tap "$ok" "$desc"
}

# rdma-core against itself with another of its programs, for the sides
# whose own reference run cannot show it because the other side fails
# first (librspreload.so's socat client crashes, its nc server fails):
# a librspreload.so socat server must write what rdma-core's rstream
# client sends it, and a librspreload.so nc client must connect to
# rdma-core's rstream server.  Each failure is a diagnostic line, and
# makes that side's runs a SKIP through fail()'s marks.
cross_ref() {
	local dst=$KQP_WORK/ref.dst spid
	port=$((port + 1))
	side stock env LD_PRELOAD="$RSPRELOAD" socat -u \
		"TCP-LISTEN:$port,bind=$addr,reuseaddr" "OPEN:$dst,creat,trunc" \
		> /dev/null 2>&1 &
	spid=$!
	if wait_listen "$port" "$spid"; then
		(KQP_LIMIT=20 side stock rstream -s "$addr" -p "$port" -S 4096 \
			-C 4 -T b > /dev/null 2>&1)
	fi
	kill "$spid" 2> /dev/null
	wait "$spid"
	if [ ! -s "$dst" ]; then
		echo "# librspreload.so's socat server wrote none of what rstream sent it"
		: > "$KQP_WORK/socat.server-fails"
	fi

	port=$((port + 1))
	side stock rstream -b "$addr" -p "$port" -S 64 -C 1 -T b \
		> /dev/null 2>&1 &
	spid=$!
	if wait_listen "$port" "$spid"; then
		(KQP_LIMIT=20 side stock env LD_PRELOAD="$RSPRELOAD" \
			nc -v -w 10 "$addr" "$port" < /dev/null \
			> /dev/null 2> "$KQP_WORK/ref.err")
	fi
	kill "$spid" 2> /dev/null
	wait "$spid"
	if ! grep -q succeeded "$KQP_WORK/ref.err"; then
		echo "# librspreload.so's nc client did not connect to rstream's server"
		show "$KQP_WORK/ref.err"
		: > "$KQP_WORK/nc.client-fails"
	fi
}

runs() {
	local t w
	for t in socat nc iperf3 rstream-s rstream-f; do
		for w in stock both client server; do
			move "$w" "$t"
		done
	done
}

case ${1:-} in
-h|--help)
	echo "usage: preload.sh [--list]: prints TAP; --list prints the runs"
	exit 0
	;;
--list) list=1; runs; exit 0 ;;
'') ;;
*) echo "usage: preload.sh [--list]" >&2; exit 2 ;;
esac

if [ ! -r "$objects" ] || [ ! -e "$KQP_LIB" ] || [ ! -e "$RSPRELOAD" ]; then
	echo "1..0 # SKIP needs kqp.ko loaded (debugfs), $KQP_LIB and $RSPRELOAD"
	exit 4
fi
for t in socat nc iperf3 rstream; do
	command -v "$t" > /dev/null && continue
	echo "1..0 # SKIP needs $t (make deps)"
	exit 4
done

head -c "$size" /dev/urandom > "$KQP_WORK/src"
echo "TAP version 13"
echo "1..$( (list=1; runs) | wc -l)"
cross_ref
runs
exit "$kqp_failed"
