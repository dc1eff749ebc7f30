#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# make bench, inside the guest (tools/testing/vm/run.sh --script), after
# guest.sh created the Soft-RoCE device and exported KQP_KMOD, KQP_REPO,
# KQP_OUT and KQP_TEST_ADDR.  Loads kqp.ko, then runs rcbench built
# against rdma-core and against libkqp on that device with the same
# counts, BENCH_ROUNDS times, swapping which goes first every round so
# neither always runs on a fresher or a warmer guest.  Each run's results
# go to $KQP_OUT/bench-VARIANT-ROUND.txt for tools/bench/table.sh; a run
# that failed leaves bench-VARIANT-ROUND.failed instead.
# $KQP_REPO/build/bench/args, written by tools/bench/bench.sh on the host,
# holds BENCH_ROUNDS and the client's extra options.
set -u

bin=$KQP_REPO/build/bench
addr=${KQP_TEST_ADDR:-192.0.2.1}
# A run with the default counts takes well under a minute, a few on a
# busy host; rcbench itself fails after 30 s without progress.  This is
# the last resort.
RUN_TIMEOUT=600
# How long a server may take to listen, in tenths of a second.
LISTEN_WAIT=600

args=
BENCH_ROUNDS=3
# shellcheck disable=SC1091
[ -r "$bin/args" ] && . "$bin/args"

fail=0

# run_one VARIANT PROGRAM ROUND PORT
run_one() {
	local variant=$1 prog=$2 round=$3 port=$4
	local ready=/tmp/rcbench-$variant-$round.ready
	local res=$KQP_OUT/bench-$variant-$round
	local spid crc src t=0

	echo "bench: $variant, round $round: $prog"
	rm -f "$ready" "$res.txt" "$res.failed"
	timeout -k 5 "$RUN_TIMEOUT" "$prog" --server --addr "$addr" \
		--port "$port" --ready "$ready" &
	spid=$!
	# The server creates the file once rdma_listen() returned.
	while [ ! -e "$ready" ] && kill -0 "$spid" 2>/dev/null &&
	      [ $t -lt $LISTEN_WAIT ]; do
		sleep 0.1
		t=$((t + 1))
	done
	if [ ! -e "$ready" ]; then
		echo "bench: $variant, round $round: the server did not start listening"
		kill "$spid" 2>/dev/null
		wait "$spid"
		return 1
	fi
	# shellcheck disable=SC2086
	timeout -k 5 "$RUN_TIMEOUT" "$prog" --addr "$addr" --port "$port" \
		$args > "$res.tmp"
	crc=$?
	cat "$res.tmp"
	# The client's last request tells the server to exit.
	[ $crc -eq 0 ] || kill "$spid" 2>/dev/null
	wait "$spid"
	src=$?
	if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
		echo "bench: $variant, round $round: FAILED (client $crc, server $src)"
		mv "$res.tmp" "$res.failed"
		return 1
	fi
	mv "$res.tmp" "$res.txt"
}

# kqp's completion path, from the kernel CQ's callback to the ring.
kqp_cq_stats() {
	local f=/sys/kernel/debug/kqp/completions

	[ -r "$f" ] || return 0
	echo "bench: kqp.ko completion path so far ($f):"
	sed 's/^/bench:   /' "$f"
}

if ! insmod "$KQP_KMOD" || [ ! -c /dev/kqp ]; then
	echo "bench: insmod $KQP_KMOD failed"
	exit 1
fi

port=18515
for round in $(seq 1 "$BENCH_ROUNDS"); do
	if [ $((round % 2)) -eq 1 ]; then
		order="rdmacm kqp"
	else
		order="kqp rdmacm"
	fi
	for variant in $order; do
		prog=$bin/rcbench
		[ "$variant" = rdmacm ] && prog=$bin/rcbench_rdmacm
		run_one "$variant" "$prog" "$round" $port || fail=1
		port=$((port + 1))
	done
done
kqp_cq_stats

splats='WARNING:|BUG:|KASAN:|UBSAN:|KFENCE:|Oops|general protection|refcount_t|blocked for more than|Call Trace:'
if dmesg | grep -Eq "$splats"; then
	echo "bench: kernel splat in the guest:"
	dmesg | grep -E -B 5 -A 30 "$splats" | head -n 100
	fail=1
fi
if ! rmmod kqp; then
	echo "bench: rmmod kqp failed: a reference leaked"
	fail=1
fi
exit $fail
