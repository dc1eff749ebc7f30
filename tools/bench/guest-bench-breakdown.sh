#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# make bench-breakdown, inside the guest (tools/testing/vm/run.sh --script,
# after guest.sh made the Soft-RoCE device and exported KQP_KMOD, KQP_REPO,
# KQP_OUT and KQP_TEST_ADDR).  Runs rcbench's 8 B RC ping-pong, built
# against rdma-core and against libkqp (as it runs by default, and as
# kqp-sync with KQP_RECV_ASYNC=0), BREAKDOWN_ROUNDS times (default 3), the
# order rotated every round, with both sides' --stamps and an ftrace of
# the points between them, all on one clock (trace_clock mono, which is
# CLOCK_MONOTONIC):
#   drv_post      rdma_rxe's rxe_post_send(): the driver takes the send
#   k_ioctl       kqp_fops_ioctl(): libkqp's doorbell enters the kernel
#   k_write       ib_uverbs_write(): rdma-core's doorbell enters the kernel
#   k_*_ret       the same calls' returns
#   drv_cqe       rxe_cq_post() of a receive completion (op == IB_WC_RECV,
#                 which ib_uverbs_wc's opcode shares)
#   drv_cqe_ret   rxe_cq_post()'s return: rdma-core's CQE is in the
#                 process's queue
#   k_handler     kqp_cq_comp_handler(): kqp's callback from the driver
#   k_poll        kqp_cq_poll(): kqp's softirq starts
#   kqp_cq_publish  kqp's tracepoint: the ring's tail covers the CQE
# Each round leaves $KQP_OUT/bd-VARIANT-ROUND.trace (the trace) and
# .client/.server (the stamps) for tools/bench/bench-breakdown.sh, or
# bd-VARIANT-ROUND.failed.
set -u

repo=$KQP_REPO
bin=$repo/build/bench
addr=${KQP_TEST_ADDR:-192.0.2.1}
tr=/sys/kernel/tracing
BREAKDOWN_ROUNDS=3
BREAKDOWN_ITERS=2000
# shellcheck disable=SC1091
[ -r "$bin/breakdown-args" ] && . "$bin/breakdown-args"
# The other tests at their smallest: only the 8 B ping-pong is read.
SMALL="--rate-msgs 1 --rate-warmup 0 --write-msgs 1 --write-warmup 0"
SMALL="$SMALL --sendbw-msgs 1 --sendbw-warmup 0"
RUN_TIMEOUT=600
fail=0

# libkqp as it runs by default, whatever started the guest said.
unset KQP_RINGS KQP_POLLER KQP_RECV_ASYNC

tracer_off() {
	[ -w $tr/tracing_on ] || return 0
	echo 0 > $tr/tracing_on
	echo 0 > $tr/events/enable 2>/dev/null
	echo > $tr/kprobe_events 2>/dev/null
}
trap tracer_off EXIT

# kqp_load and the rest of what kqp's scripts share.
# shellcheck source=tools/testing/selftests/kqp/lib.sh
. "$repo/tools/testing/selftests/kqp/lib.sh"

kqp_load "$KQP_KMOD" breakdown || exit 1
if ! mountpoint -q $tr && ! mount -t tracefs nodev $tr; then
	echo "breakdown: no tracefs"
	exit 1
fi
echo 0 > $tr/tracing_on
echo mono > $tr/trace_clock
echo 32768 > $tr/buffer_size_kb
# x86-64: the second argument is in %si.  Both wc layouts have the
# opcode at offset 12, and IB_WC_RECV == IB_UVERBS_WC_RECV == 128.
probes=(
	"p:kqpbd/drv_post rxe_post_send"
	"p:kqpbd/drv_cqe rxe_cq_post op=+12(%si):u32"
	"r:kqpbd/drv_cqe_ret rxe_cq_post"
	"p:kqpbd/k_ioctl kqp:kqp_fops_ioctl"
	"r:kqpbd/k_ioctl_ret kqp:kqp_fops_ioctl"
	"p:kqpbd/k_write ib_uverbs:ib_uverbs_write"
	"r:kqpbd/k_write_ret ib_uverbs:ib_uverbs_write"
	"p:kqpbd/k_handler kqp:kqp_cq_comp_handler"
	"p:kqpbd/k_poll kqp:kqp_cq_poll"
)
for p in "${probes[@]}"; do
	if ! echo "$p" >> $tr/kprobe_events; then
		echo "breakdown: cannot place the probe '$p'"
		exit 1
	fi
done
echo 'op == 128' > $tr/events/kqpbd/drv_cqe/filter
echo 'recv > 0' > $tr/events/kqp/kqp_cq_publish/filter
echo 1 > $tr/events/kqpbd/enable
echo 1 > $tr/events/kqp/kqp_cq_publish/enable

# round VARIANT ROUND PORT: one traced ping-pong run.
round() {
	local v=$1 r=$2 port=$3 res=$KQP_OUT/bd-$1-$2
	local ready=/tmp/bd-$v-$r.ready prog spid crc src t=0

	prog=$bin/rcbench
	[ "$v" = rdmacm ] && prog=$bin/rcbench_rdmacm
	# kqp-sync: libkqp ringing for every receive, as before receives
	# could wait in the ring.
	sync=
	[ "$v" = kqp-sync ] && sync=0
	rm -f "$res".* "$ready"
	echo > $tr/trace
	echo 1 > $tr/tracing_on
	KQP_RECV_ASYNC=$sync timeout -k 5 $RUN_TIMEOUT "$prog" --server \
		--addr "$addr" --port "$port" --ready "$ready" \
		--stamps "$res.server" &
	spid=$!
	while [ ! -e "$ready" ] && kill -0 $spid 2>/dev/null && [ $t -lt 600 ]; do
		sleep 0.1
		t=$((t + 1))
	done
	# shellcheck disable=SC2086
	KQP_RECV_ASYNC=$sync timeout -k 5 $RUN_TIMEOUT "$prog" \
		--addr "$addr" --port "$port" \
		--lat-iters "$BREAKDOWN_ITERS" --lat-warmup 200 $SMALL \
		--stamps "$res.client" > "$res.out"
	crc=$?
	[ $crc -eq 0 ] || kill $spid 2>/dev/null
	wait $spid
	src=$?
	echo 0 > $tr/tracing_on
	cat "$res.out"
	if [ $crc -ne 0 ] || [ $src -ne 0 ] || [ ! -s "$res.client" ] ||
	   [ ! -s "$res.server" ]; then
		echo "breakdown: $v, round $r: FAILED (client $crc, server $src)"
		mv "$res.out" "$res.failed"
		return 1
	fi
	# A full buffer would have lost the oldest events.
	if grep -q 'overrun: [1-9]' $tr/per_cpu/cpu*/stats; then
		echo "breakdown: $v, round $r: the trace buffer overran"
		mv "$res.out" "$res.failed"
		return 1
	fi
	grep -v '^#' $tr/trace > "$res.trace"
}

variants=(rdmacm kqp kqp-sync)
port=19515
for r in $(seq 1 "$BREAKDOWN_ROUNDS"); do
	for i in "${!variants[@]}"; do
		v=${variants[(i + r - 1) % ${#variants[@]}]}
		echo "breakdown: $v, round $r"
		round "$v" "$r" $port || fail=1
		port=$((port + 1))
	done
done
tracer_off
kqp_unload breakdown || fail=1
exit $fail
