#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# make bench-floor, inside the guest (tools/testing/vm/run.sh --script,
# after guest.sh made the Soft-RoCE device and exported KQP_KMOD, KQP_REPO,
# KQP_OUT and KQP_TEST_ADDR).  Measures what bounds kqp's ratios on this
# bench, for rdma-core stock and for LD_PRELOAD=libkqp.so, FLOOR_ROUNDS
# times (default 3), the order swapped every round:
#
# Connection setup: rdma-core's cmtime -c 200, server and client in the
# variant, while ftrace's function_graph tracer times rdma_rxe's own
# rxe_create_qp() and rxe_modify_qp() (set_ftrace_filter: only those two
# functions are patched, so the rest of the kernel runs untraced).  Keys:
#   fl_cmtime_create_qp_us, fl_cmtime_connect_us   cmtime's us / conn
#   fl_rxe_create_qp_us, fl_rxe_modify_qp_us       mean time per call
#
# Message rate: rcbench's 64 B rate test alone (20,000 messages and
# 2,000 of warm-up, for post lists of 1 and of 16), with the CPU time it
# took: both processes' user and system time (/usr/bin/time), and the
# guest's busy time (/proc/stat) less theirs, which is rxe's workers,
# softirqs, kqp's kworkers and whatever else ran.  Keys, per message:
#   fl_rate_list1_kmsgs, fl_rate_list16_kmsgs  what rcbench measured
#   fl_sys_us   both processes' system time
#   fl_rest_us  busy time outside the two processes
#   fl_busy_us  the guest's busy time (both processes spin, so it is
#               mostly spinning; it is not the work a message needs)
# Each round's keys go to $KQP_OUT/floor-VARIANT-ROUND.txt for
# tools/bench/floor.sh.
set -u

repo=$KQP_REPO
bin=$repo/build/bench
addr=${KQP_TEST_ADDR:-192.0.2.1}
lib=$repo/lib/libkqp.so
tr=/sys/kernel/tracing
rounds=3
# shellcheck disable=SC1091
[ -r "$bin/args" ] && . "$bin/args"
rounds=${FLOOR_ROUNDS:-$rounds}
# rcbench's counts: the rate test alone, as far as its options allow.
rate_msgs=20000
rate_warmup=2000
counts=(--lat-iters 10 --lat-warmup 1 --rate-msgs "$rate_msgs"
	--rate-warmup "$rate_warmup" --write-msgs 1 --write-warmup 1
	--sendbw-msgs 1 --sendbw-warmup 1)
# How long a server may take to listen, in tenths of a second.
LISTEN_WAIT=600
fail=0

if ! insmod "$KQP_KMOD" || [ ! -c /dev/kqp ]; then
	echo "floor: insmod $KQP_KMOD failed"
	exit 1
fi
mountpoint -q $tr || mount -t tracefs nodev $tr || exit 1
if ! grep -qw function_graph $tr/available_tracers; then
	echo "floor: this kernel has no function_graph tracer"
	exit 1
fi

# wait_listen PID PORT: until an id listens on PORT; 1 if PID died first.
wait_listen() {
	local t=0

	until rdma res show cm_id 2>/dev/null |
	      grep -q "state LISTEN .*src-addr [^ ]*:$2 "; do
		if ! kill -0 "$1" 2>/dev/null || [ $t -ge $LISTEN_WAIT ]; then
			return 1
		fi
		sleep 0.1
		t=$((t + 1))
	done
}

# setup_cost VARIANT PORT: cmtime with rxe's two functions timed; the
# keys on stdout.
setup_cost() {
	local -a pre=()
	local spid crc

	[ "$1" = kqp ] && pre=(env LD_PRELOAD="$lib")
	"${pre[@]}" timeout -k 5 600 cmtime -c 200 -p "$2" \
		> /tmp/floor-server.txt 2>&1 &
	spid=$!
	if ! wait_listen $spid "$2"; then
		echo "floor: $1: cmtime's server did not listen" >&2
		cat /tmp/floor-server.txt >&2
		kill $spid 2>/dev/null
		return 1
	fi
	echo 'rxe_create_qp rxe_modify_qp' > $tr/set_ftrace_filter || return 1
	echo function_graph > $tr/current_tracer
	echo > $tr/trace
	echo 1 > $tr/tracing_on
	"${pre[@]}" timeout -k 5 600 cmtime -c 200 -p "$2" -s "$addr" \
		> /tmp/floor-client.txt 2>&1
	crc=$?
	echo 0 > $tr/tracing_on
	kill $spid 2>/dev/null
	wait $spid
	cp $tr/trace /tmp/floor-trace.txt
	echo nop > $tr/current_tracer
	echo > $tr/set_ftrace_filter
	if [ $crc -ne 0 ]; then
		echo "floor: $1: cmtime failed ($crc)" >&2
		cat /tmp/floor-client.txt >&2
		return 1
	fi
	# "create qp    :   total ms   max ms   min us   us / conn"
	awk -F: '$1 ~ /^create qp *$/ { n = split($2, a, " "); print "fl_cmtime_create_qp_us", a[n] }
		 $1 ~ /^connect *$/ { n = split($2, a, " "); print "fl_cmtime_connect_us", a[n] }' \
		/tmp/floor-client.txt
	# A call is a leaf line, " 1)   1.234 us    |  rxe_create_qp [rdma_rxe]();",
	# or, when the trace broke it up, its closing "} /* rxe_create_qp ... */".
	awk '/rxe_(create|modify)_qp/ && match($0, /[0-9.]+ us/) {
			d = substr($0, RSTART, RLENGTH - 3)
			if (/rxe_create_qp/) { c += d; nc++ } else { m += d; nm++ }
		}
		END {
			if (nc) printf "fl_rxe_create_qp_us %.1f\n", c / nc
			if (nm) printf "fl_rxe_modify_qp_us %.1f\n", m / nm
		}' /tmp/floor-trace.txt
}

# busy_ms: the guest's busy time so far, idle and iowait left out.
busy_ms() {
	awk '/^cpu / { b = 0; for (i = 2; i <= NF; i++) if (i != 5 && i != 6) b += $i; print b * 10 }' /proc/stat
}

# rate_cpu VARIANT PORT: the rate test and its CPU time; keys on stdout.
rate_cpu() {
	local -a cmd=("$bin/rcbench")
	local spid crc b0 b1 cu cs su ss

	[ "$1" = rdmacm ] && cmd=("$bin/rcbench_rdmacm")
	rm -f /tmp/floor-ready
	/usr/bin/time -f "%U %S" -o /tmp/floor-server.time \
		"${cmd[@]}" --server --addr "$addr" --port "$2" \
		--ready /tmp/floor-ready > /dev/null &
	spid=$!
	while [ ! -e /tmp/floor-ready ]; do
		if ! kill -0 $spid 2>/dev/null; then
			echo "floor: $1: rcbench's server did not listen" >&2
			return 1
		fi
		sleep 0.1
	done
	b0=$(busy_ms)
	/usr/bin/time -f "%U %S" -o /tmp/floor-client.time \
		"${cmd[@]}" --addr "$addr" --port "$2" "${counts[@]}" \
		> /tmp/floor-rate.txt
	crc=$?
	wait $spid || crc=1
	b1=$(busy_ms)
	if [ $crc -ne 0 ]; then
		echo "floor: $1: rcbench failed" >&2
		return 1
	fi
	read -r cu cs < /tmp/floor-client.time
	read -r su ss < /tmp/floor-server.time
	awk '$1 == "rate_64_list1_kmsgs" { print "fl_rate_list1_kmsgs", $2 }
	     $1 == "rate_64_list16_kmsgs" { print "fl_rate_list16_kmsgs", $2 }' \
		/tmp/floor-rate.txt
	# Messages: two post-list sizes, each its warm-up and its count.
	awk -v b=$((b1 - b0)) -v cu="$cu" -v cs="$cs" -v su="$su" -v ss="$ss" \
	    -v m=$((2 * (rate_msgs + rate_warmup))) 'BEGIN {
		app = (cu + cs + su + ss) * 1000
		printf "fl_sys_us %.1f\n", (cs + ss) * 1e6 / m
		printf "fl_rest_us %.1f\n", (b - app) * 1000 / m
		printf "fl_busy_us %.1f\n", b * 1000 / m
	}'
}

variants=(rdmacm kqp)
port=18900
for round in $(seq 1 "$rounds"); do
	for i in 0 1; do
		v=${variants[(i + round - 1) % 2]}
		res=$KQP_OUT/floor-$v-$round
		echo "floor: $v, round $round"
		if setup_cost "$v" $port > "$res.tmp" &&
		   rate_cpu "$v" $((port + 1)) >> "$res.tmp"; then
			mv "$res.tmp" "$res.txt"
			sed 's/^/floor:   /' "$res.txt"
		else
			fail=1
			mv "$res.tmp" "$res.failed"
		fi
		port=$((port + 10))
	done
done

splats='WARNING:|BUG:|KASAN:|UBSAN:|KFENCE:|Oops|general protection|refcount_t|blocked for more than|Call Trace:'
if dmesg | grep -Eq "$splats"; then
	echo "floor: kernel splat in the guest:"
	dmesg | grep -E -B 5 -A 30 "$splats" | head -n 100
	fail=1
fi
if ! rmmod kqp; then
	echo "floor: rmmod kqp failed: a reference leaked"
	fail=1
fi
exit $fail
