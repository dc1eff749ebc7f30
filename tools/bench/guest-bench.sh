#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# make bench, inside the guest (tools/testing/vm/run.sh --script), after
# guest.sh created the Soft-RoCE device and exported KQP_KMOD, KQP_REPO,
# KQP_OUT and KQP_TEST_ADDR.  Loads kqp.ko, then runs three variants of
# rcbench on that device with the same counts, BENCH_ROUNDS times:
#   rdmacm     built against rdma-core
#   kqp        built against libkqp, as libkqp runs by default (rings)
#   kqp-ioctl  the same with KQP_RINGS=0: libkqp's ioctl-per-post path
#   kqp-poller the same with KQP_POLLER=1: each process's table has a
#              poller, so posts make no system call while it is awake
#              (client only: the scale and cmtime runs are the kqp
#              variant's, which the poller does not change)
# Each round starts one variant later than the one before, so none always
# runs on a fresher or a warmer guest.  Each run's results
# go to $KQP_OUT/bench-VARIANT-ROUND.txt for tools/bench/table.sh; a run
# that failed leaves bench-VARIANT-ROUND.failed instead.  To each run's
# results it adds the RNR NAKs the device counted during the run (rxe's
# hw counters, read before and after; nothing else uses the device then):
#   rnr_rcvd_per_run           RNR NAKs the requesters received
#   rnr_sent_per_run           RNR NAKs the responders sent
#   rnr_retry_exceeded_per_run  requests that ran out of RNR retries
# After each client, the variant's rcbench --scale $SCALE --ids $IDS
# runs alone, within SCALE_BUDGET seconds (rcbench skips or stops an N
# that does not fit, and says so).  Its results go to a file of their
# own, $KQP_OUT/bench-scale-VARIANT-ROUND.txt, or .failed, so a scale
# failure loses none of the other results.  Then rdma-core's cmtime
# runs in the same variant (run_cmtime()), and rstream (run_rstream()).
# $KQP_REPO/build/bench/args, written by tools/bench/bench.sh on the host,
# holds BENCH_ROUNDS, SCALE_BUDGET and the client's extra options.
set -u

bin=$KQP_REPO/build/bench

# wait_listen and the rest of what kqp's scripts share.
# shellcheck source=tools/testing/selftests/kqp/lib.sh
. "$KQP_REPO/tools/testing/selftests/kqp/lib.sh"

addr=${KQP_TEST_ADDR:-192.0.2.1}
dev=${KQP_TEST_RDMA_DEV:-rxe0}
# A run with the default counts takes well under a minute, a few on a
# busy host; rcbench itself fails after 30 s without progress.  This is
# the last resort.
RUN_TIMEOUT=600
# How long a server may take to listen, in tenths of a second.
LISTEN_WAIT=600
# rcbench --scale and --ids: the Ns, the first and the last compared
# (tools/bench/table.sh has rows for these), and the seconds each scale
# run may take, 0 for none.  A run stopped past its budget still tears
# down what it set up: SCALE_GRACE seconds more for that.
SCALE=10,1000
IDS=100,10000
SCALE_BUDGET=120
SCALE_GRACE=120
# rdma-core's cmtime: connections per run, 0 for none (the issue's
# connection-setup rows are for 200).
CMTIME_CONNS=200
# rdma-core's rstream: round trips of 64 B, and 64 KB transfers each way
# (0 for no rstream runs).
RSTREAM_ITERS=2000
RSTREAM_XFERS=200

args=
BENCH_ROUNDS=3
# shellcheck disable=SC1091
[ -r "$bin/args" ] && . "$bin/args"

fail=0

# rxe counts per port on 6.1 and 6.12; the device's own directory is
# the fallback.
counters=/sys/class/infiniband/$dev/ports/1/hw_counters
[ -d "$counters" ] || counters=/sys/class/infiniband/$dev/hw_counters
rnr_counters="rcvd_rnr_err send_rnr_err retry_rnr_exceeded_err"
rnr_keys="rnr_rcvd_per_run rnr_sent_per_run rnr_retry_exceeded_per_run"

# The RNR counters now, in the order of $rnr_counters; "-" for one the
# device does not have.
rnr_read() {
	local c v

	for c in $rnr_counters; do
		v=$(cat "$counters/$c" 2>/dev/null) || v=-
		printf '%s ' "${v:--}"
	done
}

# rnr_delta "BEFORE" "AFTER": "key value" lines, one per counter read
# both times.
rnr_delta() {
	local -a b a k
	local i

	read -r -a b <<< "$1"
	read -r -a a <<< "$2"
	read -r -a k <<< "$rnr_keys"
	for i in "${!k[@]}"; do
		case "${b[i]:--}${a[i]:--}" in
		*-*) continue ;;
		esac
		echo "${k[i]} $((a[i] - b[i]))"
	done
}

# run_one VARIANT ROUND PORT COMMAND...: the server and the client,
# each COMMAND with its own options added.
run_one() {
	local variant=$1 round=$2 port=$3
	local ready=/tmp/rcbench-$variant-$round.ready
	local res=$KQP_OUT/bench-$variant-$round
	local spid crc src t=0 rnr0

	shift 3
	echo "bench: $variant, round $round: $*"
	rm -f "$ready" "$res.txt" "$res.failed"
	rnr0=$(rnr_read)
	timeout -k 5 "$RUN_TIMEOUT" "$@" --server --addr "$addr" \
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
	timeout -k 5 "$RUN_TIMEOUT" "$@" --addr "$addr" --port "$port" \
		$args > "$res.tmp"
	crc=$?
	cat "$res.tmp"
	# The client's last request tells the server to exit.
	[ $crc -eq 0 ] || kill "$spid" 2>/dev/null
	wait "$spid"
	src=$?
	rnr_delta "$rnr0" "$(rnr_read)" | tee -a "$res.tmp"
	if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
		echo "bench: $variant, round $round: FAILED (client $crc, server $src)"
		mv "$res.tmp" "$res.failed"
		return 1
	fi
	mv "$res.tmp" "$res.txt"
}

# run_scale VARIANT ROUND PORT COMMAND...: COMMAND --scale, alone, on
# PORT and the ports after it, one per N and one for its warm-up.
run_scale() {
	local variant=$1 round=$2 port=$3
	local res=$KQP_OUT/bench-scale-$variant-$round
	local rc

	shift 3
	echo "bench: $variant, round $round: --scale $SCALE --ids $IDS"
	rm -f "$res.txt" "$res.failed"
	timeout -k 5 $((SCALE_BUDGET + SCALE_GRACE)) "$@" --scale "$SCALE" \
		--ids "$IDS" --budget "$SCALE_BUDGET" --addr "$addr" \
		--port "$port" > "$res.tmp"
	rc=$?
	cat "$res.tmp"
	if [ $rc -ne 0 ]; then
		echo "bench: $variant, round $round: scale FAILED ($rc)"
		mv "$res.tmp" "$res.failed"
		return 1
	fi
	mv "$res.tmp" "$res.txt"
}

# variant_pre VARIANT: set the caller's pre[] to what runs an unchanged
# rdma-core program in VARIANT: nothing (stock), LD_PRELOAD=libkqp.so,
# and KQP_RINGS=0 as well for kqp-ioctl.
variant_pre() {
	pre=()
	case $1 in
	kqp) pre=(env LD_PRELOAD="$KQP_REPO/lib/libkqp.so") ;;
	kqp-ioctl) pre=(env KQP_RINGS=0 LD_PRELOAD="$KQP_REPO/lib/libkqp.so") ;;
	esac
}

# run_cmtime VARIANT ROUND PORT: rdma-core's cmtime, unchanged, with
# CMTIME_CONNS connections, server and client in the same variant (stock,
# or LD_PRELOAD=libkqp.so, with KQP_RINGS=0 for kqp-ioctl).  From the
# client's table, the "us / conn" column of its create qp and connect
# steps goes to $KQP_OUT/bench-cmtime-VARIANT-ROUND.txt (or .failed).
run_cmtime() {
	local variant=$1 round=$2 port=$3
	local res=$KQP_OUT/bench-cmtime-$variant-$round
	local spid crc
	local -a pre

	variant_pre "$variant"
	echo "bench: $variant, round $round: cmtime -c $CMTIME_CONNS"
	rm -f "$res.txt" "$res.failed"
	# The server never exits by itself; it is stopped below.
	"${pre[@]}" timeout -k 5 "$RUN_TIMEOUT" cmtime -c "$CMTIME_CONNS" \
		-p "$port" > "$res.server" 2>&1 &
	spid=$!
	if ! wait_listen "$port" "$spid"; then
		echo "bench: $variant, round $round: cmtime's server did not listen"
		cat "$res.server"
		kill "$spid" 2>/dev/null
		wait "$spid"
		mv "$res.server" "$res.failed"
		return 1
	fi
	"${pre[@]}" timeout -k 5 "$RUN_TIMEOUT" cmtime -c "$CMTIME_CONNS" \
		-p "$port" -s "$addr" > "$res.client" 2>&1
	crc=$?
	kill "$spid" 2>/dev/null
	wait "$spid"
	cat "$res.client"
	# "create qp    :   total ms   max ms   min us   us / conn"
	awk -F: '$1 ~ /^create qp *$/ { n = split($2, a, " "); print "cmtime_create_qp_us", a[n] }
		 $1 ~ /^connect *$/ { n = split($2, a, " "); print "cmtime_connect_us", a[n] }' \
		"$res.client" > "$res.tmp"
	if [ $crc -ne 0 ] || [ "$(wc -l < "$res.tmp")" -ne 2 ]; then
		echo "bench: $variant, round $round: cmtime FAILED ($crc)"
		cat "$res.server" >> "$res.client"
		mv "$res.client" "$res.failed"
		rm -f "$res.tmp" "$res.server"
		return 1
	fi
	mv "$res.tmp" "$res.txt"
	rm -f "$res.client" "$res.server"
}

# rstream_one VARIANT PORT RES KEY FIELD OPTIONS...: one rstream run
# with OPTIONS, server and client in VARIANT (pre[], set by the caller);
# from the client's last line, field FIELD (awk's, of "name bytes xfers
# iters total time Gb/sec usec/xfer") goes to RES.tmp as KEY.  Non-zero
# when a side failed.
rstream_one() {
	local port=$1 res=$2 key=$3 field=$4 spid crc src
	shift 4
	"${pre[@]}" timeout -k 5 "$RUN_TIMEOUT" rstream -b "$addr" \
		-p "$port" "$@" > "$res.server" 2>&1 &
	spid=$!
	if ! wait_listen "$port" "$spid"; then
		echo "bench: rstream's server did not listen"
		kill "$spid" 2>/dev/null
		wait "$spid"
		return 1
	fi
	"${pre[@]}" timeout -k 5 "$RUN_TIMEOUT" rstream -s "$addr" \
		-p "$port" "$@" > "$res.client" 2>&1
	crc=$?
	wait "$spid"
	src=$?
	cat "$res.client"
	[ $crc -eq 0 ] && [ $src -eq 0 ] || return 1
	awk -v k="$key" -v f="$field" 'NF == 8 && $NF ~ /^[0-9.]+$/ {
		v = $(f == "last" ? NF : NF - 1) } END { if (v != "") print k, v }' \
		"$res.client" >> "$res.tmp"
}

# run_rstream VARIANT ROUND PORT: rdma-core's rstream, unchanged, in the
# same variant as run_cmtime's: a 64 B ping-pong (-S 64 -C 1), whose
# usec/xfer is one way, and a stream of 64 KB transfers, its Gb/sec.  To
# $KQP_OUT/bench-rstream-VARIANT-ROUND.txt (or .failed).
run_rstream() {
	local variant=$1 round=$2 port=$3
	local res=$KQP_OUT/bench-rstream-$variant-$round
	local -a pre

	variant_pre "$variant"
	echo "bench: $variant, round $round: rstream"
	rm -f "$res.txt" "$res.failed" "$res.tmp"
	if ! rstream_one "$port" "$res" rstream_lat_us last -S 64 -C 1 \
			-I "$RSTREAM_ITERS" ||
	   ! rstream_one $((port + 1)) "$res" rstream_bw_gbps gbps \
			-S 65536 -C "$RSTREAM_XFERS" -I 1 ||
	   [ "$(wc -l < "$res.tmp")" -ne 2 ]; then
		echo "bench: $variant, round $round: rstream FAILED"
		cat "$res.server" >> "$res.client"
		mv "$res.client" "$res.failed"
		rm -f "$res.tmp" "$res.server"
		return 1
	fi
	mv "$res.tmp" "$res.txt"
	rm -f "$res.client" "$res.server"
}

# kqp's completion path, from the kernel CQ's callback to the ring.
kqp_cq_stats() {
	local f=/sys/kernel/debug/kqp/completions

	[ -r "$f" ] || return 0
	echo "bench: kqp.ko completion path so far ($f):"
	sed 's/^/bench:   /' "$f"
}

for c in $rnr_counters; do
	[ -r "$counters/$c" ] ||
		echo "bench: $counters/$c is missing: no RNR count in the results"
done

kqp_load "$KQP_KMOD" bench || exit 1

# The kqp variant is libkqp's default, whatever started the guest said.
unset KQP_RINGS
variants=(rdmacm kqp kqp-ioctl kqp-poller)
port=18515
for round in $(seq 1 "$BENCH_ROUNDS"); do
	for i in "${!variants[@]}"; do
		variant=${variants[(i + round - 1) % ${#variants[@]}]}
		case $variant in
		rdmacm)
			cmd=("$bin/rcbench_rdmacm") ;;
		kqp)
			cmd=("$bin/rcbench") ;;
		kqp-ioctl)
			cmd=(env KQP_RINGS=0 "$bin/rcbench") ;;
		kqp-poller)
			cmd=(env KQP_POLLER=1 "$bin/rcbench") ;;
		esac
		run_one "$variant" "$round" $port "${cmd[@]}" || fail=1
		if [ "$variant" = kqp-poller ]; then
			port=$((port + 10))
			continue
		fi
		if [ "$SCALE_BUDGET" -gt 0 ]; then
			run_scale "$variant" "$round" $((port + 1)) \
				"${cmd[@]}" || fail=1
		fi
		if [ "$CMTIME_CONNS" -gt 0 ]; then
			run_cmtime "$variant" "$round" $((port + 5)) || fail=1
		fi
		if [ "$RSTREAM_ITERS" -gt 0 ]; then
			run_rstream "$variant" "$round" $((port + 6)) || fail=1
		fi
		port=$((port + 10))
	done
done
kqp_cq_stats

# Kernel splats: run.sh's judge() reads this guest's dmesg afterwards, with
# the suite's whole pattern, and fails the run on one.
kqp_unload bench || fail=1
exit $fail
