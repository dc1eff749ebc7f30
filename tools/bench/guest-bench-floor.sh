#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# make bench-floor, inside the guest (tools/testing/vm/run.sh --script,
# after guest.sh made the Soft-RoCE device and exported KQP_KMOD, KQP_REPO,
# KQP_OUT and KQP_TEST_ADDR).  Measures what bounds kqp's ratios on this
# bench, for rdma-core and for libkqp, FLOOR_ROUNDS times (default 3), the
# order swapped every round:
#
# Connection setup: rdma-core's cmtime -c 200, server and client stock or
# both with LD_PRELOAD=libkqp.so, while ftrace's function_graph tracer
# times rdma_rxe's own rxe_create_qp() (set_ftrace_filter: only that
# function is patched, the rest of the kernel runs untraced).  Its
# durations are wall time: a call that was preempted counts whole.  Keys:
#   fl_cmtime_create_qp_us, fl_cmtime_connect_us   cmtime's us / conn
#   fl_rxe_create_qp_us    mean time per call, server's and client's QPs
# Then cmtime again, with the functions in $parts traced together, to show
# where a create QP's kernel time goes: the command's entry point
# (uverbs' or kqp's), and what it calls that makes the CQs, the channels,
# the rings and the QP, and the driver's mmap handler.  Each function that
# the kernel has, and that ran, gives
#   fl_fn_NAME_us          its time, summed over the run, per QP made
#                          (the rxe_create_qp() calls)
#   fl_fn_NAME_calls       its calls per QP made
# A traced function's time includes the traced functions it called.
#
# Message rate: rcbench's 64 B rate test (post lists of 1 and of 16; the
# other tests at their smallest counts), built against rdma-core and
# against libkqp as make bench runs them, twice per round: with
# FLOOR_SHORT and with FLOOR_LONG messages per list.  What the longer run
# cost more, over the messages it sent more, is the cost of a message,
# without start, exit, connections and the other tests.  CPU time is both
# processes' (/usr/bin/time) and the guest's busy time (/proc/stat: user,
# nice, system, irq, softirq).  The bench kernels have no
# IRQ_TIME_ACCOUNTING, so a softirq that ran on a process's time counts
# as that process's system time.  Keys:
#   fl_rate_list1_kmsgs, fl_rate_list16_kmsgs  what the longer run measured
#   fl_sys_us    both processes' system time per message
#   fl_rest_us   busy time outside the two processes per message: rxe's
#                workers and softirqs, kqp's kworkers, whatever else ran
#   fl_busy_us   all busy time per message (both processes spin, so it is
#                mostly waiting, not the work a message needs)
#   fl_busy_cpus how many of the guest's CPUs were busy meanwhile
# Each round's keys go to $KQP_OUT/floor-VARIANT-ROUND.txt for
# tools/bench/bench-floor.sh; a round that failed leaves .failed instead.
set -u

repo=$KQP_REPO
bin=$repo/build/bench
addr=${KQP_TEST_ADDR:-192.0.2.1}
lib=$repo/lib/libkqp.so
tr=/sys/kernel/tracing
FLOOR_ROUNDS=3
# shellcheck disable=SC1091
[ -r "$bin/floor-args" ] && . "$bin/floor-args"
FLOOR_SHORT=4000
FLOOR_LONG=44000
WARMUP=2000
# How long a server may take to listen, in tenths of a second, and any
# one program to run, in seconds.
LISTEN_WAIT=600
RUN_TIMEOUT=600
hz=$(getconf CLK_TCK)
fail=0

# libkqp as it runs by default, whatever started the guest said.
unset KQP_RINGS KQP_POLLER

# tracer_off: the tracer back to nop, whatever state a step left it in.
tracer_off() {
	[ -w $tr/tracing_on ] || return 0
	echo 0 > $tr/tracing_on
	echo nop > $tr/current_tracer
	echo > $tr/set_ftrace_filter
	echo 0 > $tr/options/funcgraph-tail
}
trap tracer_off EXIT

# kqp_load, wait_listen and the rest of what kqp's scripts share.
# shellcheck source=tools/testing/selftests/kqp/lib.sh
. "$repo/tools/testing/selftests/kqp/lib.sh"

kqp_load "$KQP_KMOD" floor || exit 1
if ! mountpoint -q $tr && ! mount -t tracefs nodev $tr; then
	echo "floor: no tracefs"
	exit 1
fi
if ! grep -qw function_graph $tr/available_tracers; then
	echo "floor: this kernel has no function_graph tracer"
	exit 1
fi

# stop PID: the server stopped and reaped.
stop() {
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# traced_cmtime VARIANT PORT FUNCTION...: cmtime -c 200 with the
# functions the kernel has of those named traced by function_graph; the
# client's output in /tmp/floor-client.txt, the trace in
# /tmp/floor-trace.txt.  Non-zero when cmtime failed or the trace lost
# entries.
traced_cmtime() {
	local v=$1 p=$2 f spid crc lost
	local -a pre=()

	shift 2
	[ "$v" = kqp ] && pre=(env LD_PRELOAD="$lib")
	"${pre[@]}" timeout -k 5 $RUN_TIMEOUT cmtime -c 200 -p "$p" \
		> /tmp/floor-server.txt 2>&1 &
	spid=$!
	if ! wait_listen "$p" $spid; then
		echo "floor: $v: cmtime's server did not listen" >&2
		cat /tmp/floor-server.txt >&2
		stop $spid
		return 1
	fi
	echo > $tr/set_ftrace_filter
	for f in "$@"; do
		grep -qw "^$f" $tr/available_filter_functions &&
			echo "$f" >> $tr/set_ftrace_filter
	done
	# funcgraph-tail names the function on a closing brace, for a call
	# that the trace split (it slept, or another traced call ran).
	if ! grep -q . $tr/set_ftrace_filter ||
	   ! echo 1 > $tr/options/funcgraph-tail ||
	   ! echo function_graph > $tr/current_tracer; then
		echo "floor: $v: cannot trace $*" >&2
		stop $spid
		tracer_off
		return 1
	fi
	echo > $tr/trace
	echo 1 > $tr/tracing_on
	"${pre[@]}" timeout -k 5 $RUN_TIMEOUT cmtime -c 200 -p "$p" \
		-s "$addr" > /tmp/floor-client.txt 2>&1
	crc=$?
	echo 0 > $tr/tracing_on
	stop $spid
	cp $tr/trace /tmp/floor-trace.txt
	lost=$(awk '/^overrun:/ { s += $2 } END { print s + 0 }' \
		$tr/per_cpu/cpu*/stats)
	tracer_off
	if [ $crc -ne 0 ] || [ "$lost" -ne 0 ]; then
		echo "floor: $v: cmtime failed ($crc), or its trace is short ($lost lost)" >&2
		cat /tmp/floor-client.txt >&2
		return 1
	fi
}

# setup_cost VARIANT PORT: cmtime with rxe_create_qp() timed; keys on
# stdout.
setup_cost() {
	traced_cmtime "$1" "$2" rxe_create_qp || return 1
	# "create qp    :   total ms   max ms   min us   us / conn"
	awk -F: '$1 ~ /^create qp *$/ { n = split($2, a, " "); print "fl_cmtime_create_qp_us", a[n] }
		 $1 ~ /^connect *$/ { n = split($2, a, " "); print "fl_cmtime_connect_us", a[n] }' \
		/tmp/floor-client.txt > /tmp/floor-keys.txt
	# A call is a leaf, " 1)   1.234 us    |  rxe_create_qp [rdma_rxe]();",
	# or a closing brace, " 0) + 47.606 us   |  } /* rxe_create_qp ... */".
	awk '/rxe_create_qp/ && match($0, /[0-9.]+ us/) {
			d = substr($0, RSTART, RLENGTH - 3); c += d; n++
		}
		END { if (n) printf "fl_rxe_create_qp_us %.1f\nfl_rxe_create_qp_calls %d\n", c / n, n }' \
		/tmp/floor-trace.txt >> /tmp/floor-keys.txt
	# cmtime exits 0 even when connections failed: a round counts only
	# with every key, and with every QP's create in the trace.
	if [ "$(wc -l < /tmp/floor-keys.txt)" -ne 4 ] ||
	   ! grep -q '^fl_rxe_create_qp_calls 400$' /tmp/floor-keys.txt; then
		echo "floor: $1: a key is missing, or a QP's create:" >&2
		cat /tmp/floor-keys.txt /tmp/floor-client.txt >&2
		return 1
	fi
	grep -v '_calls ' /tmp/floor-keys.txt
}

# What setup_parts traces; a name the kernel does not have is left out.
# rdma-core 44's rxe provider makes its CQs and QPs with the write
# commands or the ioctl methods, whichever the kernel takes.
# ksys_mmap_pgoff() is every mmap(2) in the guest meanwhile, most of them
# the libraries' mappings of queues and rings.
parts="ib_uverbs_create_comp_channel ib_uverbs_create_cq ib_uverbs_create_qp
ib_uverbs_handler_UVERBS_METHOD_CQ_CREATE
ib_uverbs_handler_UVERBS_METHOD_QP_CREATE ib_uverbs_modify_qp ib_uverbs_mmap
kqp_create_qp_ioctl kqp_channel_make_fd kqp_cq_create_locked
kqp_cq_ring_alloc kqp_qp_rings_init kqp_fops_mmap ib_create_qp_kernel
rxe_create_cq rxe_create_qp rxe_modify_qp ksys_mmap_pgoff
kqp_cm_id_lock kqp_vobj_begin kqp_core_create_qp kqp_pd_get_default_locked
ib_modify_qp rdma_init_qp_attr kqp_ring_stage_alloc kqp_queue_charge
kqp_vmem_alloc"

# setup_parts VARIANT PORT: cmtime with every function in $parts traced;
# keys on stdout.
setup_parts() {
	# shellcheck disable=SC2086 # one function per word
	traced_cmtime "$1" "$2" $parts || return 1
	# A call is "name() {", then a closing brace with its time,
	# "} /* name */", or a leaf with its time, "name();"; a module's
	# functions have " [module]" after the name.  Rows go in the order
	# the calls first began.
	awk '/\|/ {
			f = $0
			sub(/.*\| */, "", f)
			sub(/^} \/\* /, "", f)
			sub(/[ (\[].*/, "", f)
			if (f == "") next
			if (!(f in seen)) { seen[f] = 1; order[++m] = f }
			if (!match($0, /[0-9.]+ us/)) next
			t[f] += substr($0, RSTART, RLENGTH - 3); c[f]++
		}
		END {
			q = c["rxe_create_qp"]
			if (!q) exit 1
			for (i = 1; i <= m; i++)
				printf "fl_fn_%s_us %.1f\nfl_fn_%s_calls %.2f\n",
				       order[i], t[order[i]] / q,
				       order[i], c[order[i]] / q
		}' /tmp/floor-trace.txt
}

# busy_ticks: the guest's busy time so far: user, nice, system, irq and
# softirq (guest time is inside user and nice; steal is not this guest's).
busy_ticks() {
	awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat
}

# rate_run VARIANT PORT MSGS: one rate run of MSGS messages per list;
# "busy_ticks wall_ms client_user client_sys server_user server_sys
# rate1 rate16" on stdout.
rate_run() {
	local -a cmd=("$bin/rcbench")
	local spid crc b0 b1 t0 t1 t=0

	[ "$1" = rdmacm ] && cmd=("$bin/rcbench_rdmacm")
	rm -f /tmp/floor-ready
	# timeout outermost: stopping it stops its whole process group.
	timeout -k 5 $RUN_TIMEOUT /usr/bin/time -f "%U %S" \
		-o /tmp/floor-server.time "${cmd[@]}" --server --addr "$addr" \
		--port "$2" --ready /tmp/floor-ready > /dev/null &
	spid=$!
	while [ ! -e /tmp/floor-ready ]; do
		if ! kill -0 $spid 2>/dev/null || [ $t -ge $LISTEN_WAIT ]; then
			echo "floor: $1: rcbench's server did not listen" >&2
			stop $spid
			return 1
		fi
		sleep 0.1
		t=$((t + 1))
	done
	b0=$(busy_ticks)
	t0=$(date +%s%N)
	timeout -k 5 $RUN_TIMEOUT /usr/bin/time -f "%U %S" \
		-o /tmp/floor-client.time "${cmd[@]}" --addr "$addr" \
		--port "$2" --lat-iters 1 --lat-warmup 0 \
		--rate-msgs "$3" --rate-warmup $WARMUP \
		--write-msgs 1 --write-warmup 0 \
		--sendbw-msgs 1 --sendbw-warmup 0 > /tmp/floor-rate.txt
	crc=$?
	if [ $crc -ne 0 ]; then
		echo "floor: $1: rcbench failed ($crc)" >&2
		stop $spid
		return 1
	fi
	if ! wait $spid; then
		echo "floor: $1: rcbench's server failed" >&2
		return 1
	fi
	b1=$(busy_ticks)
	t1=$(date +%s%N)
	echo "$((b1 - b0)) $(((t1 - t0) / 1000000))" \
	     "$(cat /tmp/floor-client.time) $(cat /tmp/floor-server.time)" \
	     "$(awk '$1 == "rate_64_list1_kmsgs" { a = $2 }
		     $1 == "rate_64_list16_kmsgs" { b = $2 }
		     END { print a, b }' /tmp/floor-rate.txt)"
}

# rate_cost VARIANT PORT: the short and the long run, and the difference
# per message; keys on stdout.
rate_cost() {
	local s l

	s=$(rate_run "$1" "$2" $FLOOR_SHORT) || return 1
	l=$(rate_run "$1" $(($2 + 1)) $FLOOR_LONG) || return 1
	# Two post-list sizes, each FLOOR_LONG - FLOOR_SHORT more messages.
	echo "$s $l" | awk -v hz="$hz" -v m=$((2 * (FLOOR_LONG - FLOOR_SHORT))) '
		NF != 16 || $15 == "" || $16 == "" { exit 1 }
		{
			busy = ($9 - $1) * 1e6 / hz	# us
			sys = ($12 + $14 - $4 - $6) * 1e6
			app = ($11 + $12 + $13 + $14 - $3 - $4 - $5 - $6) * 1e6
			wall = ($10 - $2) * 1000	# us
			if (wall <= 0) exit 1
			printf "fl_rate_list1_kmsgs %s\nfl_rate_list16_kmsgs %s\n", $15, $16
			printf "fl_sys_us %.1f\nfl_rest_us %.1f\nfl_busy_us %.1f\n",
			       sys / m, (busy - app) / m, busy / m
			printf "fl_busy_cpus %.2f\n", busy / wall
		}'
}

variants=(rdmacm kqp)
port=18900
for round in $(seq 1 "$FLOOR_ROUNDS"); do
	for i in 0 1; do
		v=${variants[(i + round - 1) % 2]}
		res=$KQP_OUT/floor-$v-$round
		echo "floor: $v, round $round"
		if setup_cost "$v" $port > "$res.tmp" &&
		   setup_parts "$v" $((port + 2)) >> "$res.tmp" &&
		   rate_cost "$v" $((port + 3)) >> "$res.tmp"; then
			mv "$res.tmp" "$res.txt"
			sed 's/^/floor:   /' "$res.txt"
		else
			fail=1
			mv "$res.tmp" "$res.failed"
		fi
		port=$((port + 10))
	done
done

# Kernel splats: run.sh's judge() reads this guest's dmesg afterwards, with
# the suite's whole pattern, and fails the run on one.
tracer_off
kqp_unload floor || fail=1
exit $fail
