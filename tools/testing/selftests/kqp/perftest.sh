#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# perftest.sh: Debian's perftest, unchanged, over kqp in the bench guest.
#
# Every perftest program in its RDMA CM mode (-R) runs with short counts
# with LD_PRELOAD=libkqp.so on both sides, on the client only and on the
# server only, against perftest stock on the other side; then the options
# people use with them, preloaded on both sides.  A run passes when both
# sides exit 0, the client prints its table of results (one line per
# message size), and /sys/kernel/debug/kqp/objects shows that kqp made the
# preloaded sides' QPs.  perftest checks no data.  A run that fails is run
# again stock on both sides: if rdma-core fails too, the line is a SKIP
# that says so, as the option is then not kqp's to support.  --quick runs
# each program preloaded on both sides only (make check); make
# perftest-all runs it whole.  The whole run has a budget
# (KQP_PERFTEST_BUDGET seconds): runs it leaves no time for are SKIPs
# that say so, never a hang of the bench.  Prints TAP.
set -u

here=$(cd "$(dirname "$0")" && pwd)
repo=${KQP_REPO:-$(cd "$here/../.." && pwd)}
KQP_LIB=$repo/lib/libkqp.so
# Per process; -a runs 23 sizes.
export KQP_LIMIT=${KQP_PERFTEST_TIMEOUT:-180}
KQP_WORK=$(mktemp -d)
trap 'rm -rf "$KQP_WORK"' EXIT
# shellcheck source=tools/testing/selftests/kqp/lib.sh
. "$here/lib.sh"
kqp_need_bench

addr=${KQP_TEST_ADDR:-192.0.2.1}
dev=${KQP_TEST_RDMA_DEV:-rxe0}
objects=/sys/kernel/debug/kqp/objects
port=18600

budget=${KQP_PERFTEST_BUDGET:-540}

usage() {
	cat <<EOF
usage: perftest.sh [--quick] [--list]
Runs perftest's programs with -R over the bench's rxe device ($dev,
$addr), preloaded with $KQP_LIB; prints TAP.  --quick: each program
preloaded on both sides only.  --list prints the runs.
Environment: KQP_PERFTEST_TIMEOUT (seconds per process, default 180),
KQP_PERFTEST_BUDGET (seconds for the whole run, default 540).
EOF
}

# The client's results: lines that start with a message size and an
# iteration count (the figures may read "inf", perftest's arithmetic
# over a handful of iterations under TCG: seen with -a -n 10).
result_lines() {
	grep -cE '^ *[0-9]+ +[0-9]+ +([0-9]|inf)' "$KQP_WORK/$1.c.out"
}

# perf WHERE LINES QPS PROG ARGS...: one run; WHERE is both, client, server
# or stock (who is preloaded), LINES how many result lines the client must
# print, QPS how many QPs each side makes.
perf() {
	local where=$1 lines=$2 qps=$3 prog=$4 sw=kqp cw=kqp name before rc
	shift 4
	roles "$where"
	port=$((port + 1))
	name="$prog-$where-$port"
	desc="$prog -R $* (kqp: $where)"
	[ "$where" = stock ] && desc="$prog -R $* (stock on both sides)"
	if [ -n "${list:-}" ]; then
		echo "$desc"
		return
	fi
	if [ $(($(date +%s) - start)) -gt "$budget" ]; then
		tap_skip "$desc" "past the run's budget of ${budget}s"
		return
	fi
	before=$(kqp_qps_made)
	SECONDS=0
	run_pair "$name" "$sw" "$cw" "$port" \
		"$prog" -R -F -d "$dev" -p "$port" "$@" -- \
		"$prog" -R -F -d "$dev" -p "$port" "$@" "$addr"
	echo "# $name: ${SECONDS}s"
	# perftest -R connects twice: a control connection, then, once the
	# server has listened again, the test's.  A client that comes back
	# before that listen is rejected for want of a listener (reason 8,
	# invalid service id) and gives up; perftest has no retry.  Seen in
	# about one run in ten with the server preloaded, under TCG on a
	# busy host.  That run, and only it, is made once more.
	if ! pair_ok "$name" > /dev/null &&
	   grep -q 'RDMA_CM_EVENT_REJECTED; error: 8\.' "$KQP_WORK/$name.c.out" \
		"$KQP_WORK/$name.c.err"; then
		echo "# $name: the client came back before perftest's second listen (REJECTED 8); once more"
		port=$((port + 1))
		name="$name-again"
		before=$(kqp_qps_made)
		run_pair "$name" "$sw" "$cw" "$port" \
			"$prog" -R -F -d "$dev" -p "$port" "$@" -- \
			"$prog" -R -F -d "$dev" -p "$port" "$@" "$addr"
	fi
	if pair_ok "$name" && check_run "$name" "$where" "$lines" "$qps" \
			"$before"; then
		tap 0 "$desc"
		return
	fi
	[ "$where" = stock ] && { tap 1 "$desc"; return; }
	# Does rdma-core do it?
	port=$((port + 1))
	run_pair "$name-ref" stock stock "$port" \
		"$prog" -R -F -d "$dev" -p "$port" "$@" -- \
		"$prog" -R -F -d "$dev" -p "$port" "$@" "$addr"
	# 255: the client never ran, as the server never listened (a bad
	# command line, say): not rdma-core's verdict on the device.
	rc=$(cat "$KQP_WORK/$name-ref.c.rc")
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 255 ]; then
		echo "# $name: fails stock on both sides too:"
		show "$KQP_WORK/$name-ref.c.out" "$KQP_WORK/$name-ref.c.err"
		tap_skip "$desc" "rdma-core fails it on this device too"
	else
		tap 1 "$desc"
	fi
}

# check_run NAME WHERE LINES QPS BEFORE
check_run() {
	local name=$1 where=$2 lines=$3 qps=$4 before=$5 got want
	got=$(result_lines "$name")
	if [ "$got" -lt "$lines" ]; then
		echo "# $name: $got result lines, not $lines"
		show "$KQP_WORK/$name.c.out"
		return 1
	fi
	case $where in
	both) want=$((2 * qps)) ;;
	stock) want=0 ;;
	*) want=$qps ;;
	esac
	got=$(($(kqp_qps_made) - before))
	# perftest may make a QP of its own beyond -q; stock makes none.
	if [ "$got" -lt "$want" ] || { [ "$want" -eq 0 ] && [ "$got" -ne 0 ]; }; then
		echo "# $name: kqp made $got QPs, expected $want"
		return 1
	fi
}

runs() {
	local p w
	# Every program, preloaded on each side.
	for p in ib_send_lat ib_send_bw ib_write_lat ib_write_bw ib_read_lat \
		 ib_read_bw ib_atomic_lat ib_atomic_bw; do
		for w in both client server; do
			[ "$w" = both ] || [ -z "$quick" ] || continue
			perf "$w" 1 1 "$p" -n 100
		done
	done
	[ -z "$quick" ] || return 0
	# What people run them with, preloaded on both sides.  -a: 2 B to
	# 8 MiB.
	perf both 23 1 ib_send_bw -a -n 10
	perf both 1 1 ib_send_bw -s 1048576 -n 10
	perf both 1 1 ib_read_bw -s 65536 -n 50 -o 4
	perf both 1 1 ib_send_bw -l 16 -n 320
	perf both 1 1 ib_write_bw -l 8 -t 64 -n 320
	perf both 1 4 ib_send_bw -q 4 -n 100
	perf both 1 4 ib_write_bw -q 4 -n 100
	perf both 1 1 ib_write_bw --report_gbits -n 100
	perf both 1 1 ib_send_lat -c UD -n 100
	perf both 1 1 ib_send_bw -c UD -n 100
	perf both 1 1 ib_send_bw --use-srq -n 100
	perf both 1 1 ib_send_lat -I 64 -n 100
	perf both 1 1 ib_send_lat --use_old_post_send -n 100
	perf both 1 1 ib_atomic_bw -A FETCH_AND_ADD -n 100
}

quick='' list=''
while [ $# -gt 0 ]; do
	case $1 in
	-h|--help) usage; exit 0 ;;
	--quick) quick=1 ;;
	--list) list=1 ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done
if [ -n "$list" ]; then
	runs
	exit 0
fi

if [ ! -r "$objects" ] || [ ! -e "$KQP_LIB" ]; then
	echo "1..0 # SKIP needs kqp.ko loaded (debugfs) and $KQP_LIB"
	exit 4
fi
if ! command -v ib_send_bw > /dev/null; then
	echo "1..0 # SKIP perftest is not installed"
	exit 4
fi

echo "TAP version 13"
echo "1..$(list=1 runs | wc -l)"
start=$(date +%s)
runs
