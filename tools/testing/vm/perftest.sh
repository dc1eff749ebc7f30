#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# perftest's rdma_cm mode (-R) against kqp, for tools/testing/vm/run.sh
# --script FILE NAME: each program with 200 iterations, stock on both
# sides, then with LD_PRELOAD=libkqp.so on the client, the server and
# both.  The server starts first and the client waits for its listener
# (rdma res show cm_id).  Results: $KQP_OUT/perftest/summary$PERF_TAG and
# each side's output beside it.  Knobs (a wrapper script sets them):
# PERF_PROGS, PERF_MODES (none client server both), PERF_ARGS (extra
# perftest arguments, e.g. "-c UD"), PERF_TAG (a suffix for the files).
# Debian's perftest 4.5 uses its ibv_wr_* path only on mlx5 and EFA
# devices: on rxe it posts with ibv_post_send() and makes its QPs with
# rdma_create_qp().
insmod "$KQP_KMOD" || exit 1
LIB=$KQP_REPO/lib/libkqp.so
ADDR=${KQP_TEST_ADDR:-192.0.2.1}
DEV=${KQP_TEST_RDMA_DEV:-rxe0}
OUT=$KQP_OUT/perftest
mkdir -p "$OUT"
res=$OUT/summary${PERF_TAG:-}
: > "$res"

wait_listen() {
	local i
	for i in $(seq 1 200); do
		rdma res show cm_id 2>/dev/null | grep -q LISTEN && return 0
		kill -0 "$1" 2>/dev/null || return 1
		sleep 0.2
	done
	return 1
}

one() { # prog mode(none|client|server|both)
	local prog=$1 mode=$2 spre= cpre= spid src crc tag=$1.$2${PERF_TAG:-}
	case $mode in
	client) cpre=$LIB ;;
	server) spre=$LIB ;;
	both) cpre=$LIB; spre=$LIB ;;
	esac
	LD_PRELOAD=$spre timeout -k 5 90 $prog -R -d "$DEV" -n 200 $PERF_ARGS \
		> "$OUT/$tag.server" 2>&1 &
	spid=$!
	if ! wait_listen $spid; then
		wait $spid; src=$?
		echo "$prog $mode: FAIL (server never listened, rc $src)" | tee -a "$res"
		return
	fi
	LD_PRELOAD=$cpre timeout -k 5 90 $prog -R -d "$DEV" -n 200 $PERF_ARGS "$ADDR" \
		> "$OUT/$tag.client" 2>&1
	crc=$?
	wait $spid; src=$?
	# Stale listeners would confuse the next wait.
	for i in $(seq 1 50); do
		rdma res show cm_id 2>/dev/null | grep -q LISTEN || break
		sleep 0.2
	done
	if [ $crc -eq 0 ] && [ $src -eq 0 ]; then
		echo "$prog $mode: ok" | tee -a "$res"
	else
		echo "$prog $mode: FAIL (client rc $crc, server rc $src)" | tee -a "$res"
		tail -n 5 "$OUT/$tag.client" "$OUT/$tag.server"
	fi
}

PROGS=${PERF_PROGS:-"ib_send_bw ib_send_lat ib_write_bw ib_write_lat ib_read_bw ib_read_lat ib_atomic_bw ib_atomic_lat"}
MODES=${PERF_MODES:-"none client server both"}
for p in $PROGS; do
	for m in $MODES; do
		one $p $m
	done
done
cat "$res"
! grep -q FAIL "$res"
