# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# lib.sh: what kqp's shell scripts share, sourced, not run: the
# selftests here, and the bench's guest and host scripts in tools/.
#
# TAP lines (tap), logs as TAP comments (show), commands run preloaded
# with libkqp or not, under a timeout (side), a listener to wait for
# (wait_listen), the QPs kqp made (kqp_qps_made), a server and client
# pair (run_pair), and, in a guest, loading and unloading kqp.ko
# (kqp_load, kqp_unload) and a kmemleak report (kqp_kmemleak_scan).  A
# script may set, before calling them:
#   KQP_LIB		libkqp.so to preload (side, run_pair)
#   KQP_PRELOAD		libraries to preload ahead of it, either side (side)
#   KQP_LIMIT		seconds each process may run (side, run_pair)
#   KQP_WORK		a directory for outputs (run_pair)
#   KQP_TAP_PREFIX	put before each TAP description
#   KQP_TAP_FILE	a file every TAP line and show's comments also go to
#   KQP_SHOW_LINES	how many last lines show prints (default 40)
# kqp_n counts the TAP lines so far; kqp_failed is 1 once one failed.
# shellcheck shell=bash

kqp_n=0
# shellcheck disable=SC2034 # read by the scripts that source this
kqp_failed=0

# Standard input to standard output, and to KQP_TAP_FILE if it is set.
kqp_emit() {
	if [ -n "${KQP_TAP_FILE:-}" ]; then
		tee -a "$KQP_TAP_FILE"
	else
		cat
	fi
}

# kqp_need_bench: exit with kselftest's skip (4) and a TAP plan that says
# why, unless the bench's Soft-RoCE setup is there: KQP_TEST_RDMA_DEV,
# which the bench always sets (as kqp_test.h's programs do).
kqp_need_bench() {
	[ -n "${KQP_TEST_RDMA_DEV:-}" ] && return 0
	echo "1..0 # SKIP no Soft-RoCE setup: KQP_TEST_RDMA_DEV unset"
	exit 4
}

# tap STATUS DESCRIPTION: one TAP line, numbered in order.
tap() {
	kqp_n=$((kqp_n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $kqp_n ${KQP_TAP_PREFIX:-}$2" | kqp_emit
	else
		echo "not ok $kqp_n ${KQP_TAP_PREFIX:-}$2" | kqp_emit
		# shellcheck disable=SC2034 # as above
		kqp_failed=1
	fi
}

# tap_skip DESCRIPTION REASON
tap_skip() {
	kqp_n=$((kqp_n + 1))
	echo "ok $kqp_n ${KQP_TAP_PREFIX:-}$1 # SKIP $2" | kqp_emit
}

# show [FILE...]: the last lines of files (or stdin) as TAP comments.
show() {
	sed 's/^/# /' "$@" | tail -n "${KQP_SHOW_LINES:-40}" | kqp_emit
}

# side WHO CMD... &: run CMD under the timeout, preloaded if WHO is "kqp",
# with KQP_PRELOAD's libraries ahead of libkqp (and alone for stock).
# It execs, so run it in the background, or in a subshell to wait for
# it: $! is then timeout's pid, and a kill of it reaches CMD (a kill of a
# shell running the function would leave CMD running, holding its port
# and /dev/kqp).
side() {
	local who=$1 pre=${KQP_PRELOAD:-}
	shift
	if [ "$who" = kqp ]; then
		pre="$pre $KQP_LIB"
	fi
	if [ -n "$pre" ]; then
		LD_PRELOAD=${pre# } exec timeout -k 5 "$KQP_LIMIT" "$@"
	fi
	exec timeout -k 5 "$KQP_LIMIT" "$@"
}

# roles WHERE: set the caller's sw and cw (kqp or stock: the server's and
# the client's) for WHERE: both, client or server (who is preloaded), or
# stock (neither).
roles() {
	sw=kqp cw=kqp
	case $1 in
	client) sw=stock ;;
	server) cw=stock ;;
	stock) sw=stock cw=stock ;;
	esac
}

# wait_listen PORT PID [ADDR]: until an RDMA CM id listens on PORT
# (rdma_cm lists it, whoever made it), on ADDR if given, on any address
# otherwise, while PID lives; at most a minute.  With KQP_LISTEN_UDP=1,
# until a UDP socket is bound to PORT instead; with KQP_LISTEN_TCP=1, until
# a TCP socket listens on PORT.
wait_listen() {
	local addr=${3:-[^ ]*}

	for _ in $(seq 1 600); do
		# A datagram server (KQP_LISTEN_UDP=1) only binds its socket;
		# a preloaded one in fork mode listens over TCP first.
		if [ "${KQP_LISTEN_UDP:-0}" = 1 ]; then
			ss -Hlun "sport = :$1" 2>/dev/null | grep -q . &&
				return 0
		elif [ "${KQP_LISTEN_TCP:-0}" = 1 ]; then
			ss -Hltn "sport = :$1" 2>/dev/null | grep -q . &&
				return 0
		elif rdma res show cm_id 2>/dev/null |
			grep -q "state LISTEN .*src-addr $addr:$1 "; then
			return 0
		fi
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# kqp_qps_made: the QPs this machine's kqp.ko made since it was loaded.
kqp_qps_made() {
	awk '$1 == "qps" { print $3 }' /sys/kernel/debug/kqp/objects
}

# qp_cache_off: turn kqp's QP cache off and wait (10 s at most) until it
# holds nothing, so that counts of the device's kernel objects (rdma res)
# are the programs' alone; the value it had goes to $qp_cache_was, for
# qp_cache_restore.  Non-zero if it did not empty.
qp_cache_off() {
	local p=/sys/module/kqp/parameters/qp_cache
	local d=/sys/kernel/debug/kqp/qp_cache

	qp_cache_was=$(cat $p 2>/dev/null) || return 0
	echo 0 > $p
	for _ in $(seq 1 100); do
		awk '$2 == "idle" && $3 != 0 { busy = 1 } END { exit busy }' $d &&
			return 0
		sleep 0.1
	done
	return 1
}

qp_cache_restore() {
	[ -z "${qp_cache_was:-}" ] ||
		echo "$qp_cache_was" > /sys/module/kqp/parameters/qp_cache
}

# kqp_load KMOD [WHO]: insmod kqp.ko and see /dev/kqp made (devtmpfs
# makes the node synchronously; no udev is needed).  With WHO, says so
# when it failed, WHO first.
kqp_load() {
	insmod "$1" && [ -c /dev/kqp ] && return 0
	[ -z "${2:-}" ] || echo "$2: insmod $1 failed"
	return 1
}

# kqp_unload WHO: rmmod kqp; says so when it failed, WHO first: a
# reference leaked.
kqp_unload() {
	rmmod kqp && return 0
	echo "$1: rmmod kqp failed: a reference leaked"
	return 1
}

# kqp_kmemleak_scan FILE: kmemleak's report into FILE, on a kernel that
# has kmemleak.  Two scans: kmemleak does not report an object whose
# contents changed since the previous scan, and the first scan is its
# first look at them all; only the second one reports (measured: 0
# leaks, then 19 of 20).
kqp_kmemleak_scan() {
	local k=/sys/kernel/debug/kmemleak

	[ -w "$k" ] || return 0
	echo scan > "$k"
	echo scan > "$k"
	cat "$k" > "$1"
}

# run_pair NAME SERVER_WHO CLIENT_WHO PORT SERVER_CMD... -- CLIENT_CMD...
# The server first; the client once the server listens on PORT.  Outputs
# in $KQP_WORK/NAME.{s,c}.{out,err}, exit statuses in NAME.{s,c}.rc (255:
# never ran).  A server whose client failed is killed, so that it does
# not hold its port for the next pair.  With KQP_SERVER_STAYS=1 (a server
# that never exits, as cmtime's), the server is killed once the client
# is done, and its status is 0 if it was still there to kill.
run_pair() {
	local name=$1 sw=$2 cw=$3 port=$4 spid cpid crc=255
	local -a scmd=() ccmd=()
	shift 4
	while [ "$1" != -- ]; do scmd+=("$1"); shift; done
	shift
	ccmd=("$@")
	side "$sw" stdbuf -oL "${scmd[@]}" > "$KQP_WORK/$name.s.out" \
		2> "$KQP_WORK/$name.s.err" &
	spid=$!
	if wait_listen "$port" "$spid"; then
		side "$cw" stdbuf -oL "${ccmd[@]}" > "$KQP_WORK/$name.c.out" \
			2> "$KQP_WORK/$name.c.err" &
		cpid=$!
		wait "$cpid"
		crc=$?
	else
		echo "# $name: the server never listened on port $port"
	fi
	echo "$crc" > "$KQP_WORK/$name.c.rc"
	if [ "${KQP_SERVER_STAYS:-0}" = 1 ]; then
		if kill "$spid" 2> /dev/null; then
			wait "$spid"
			echo 0 > "$KQP_WORK/$name.s.rc"
		else
			wait "$spid"
			echo $? > "$KQP_WORK/$name.s.rc"
		fi
		return
	fi
	# A client that failed may leave its server waiting for it.
	if [ "$crc" -ne 0 ]; then
		sleep 2
		kill "$spid" 2> /dev/null
	fi
	wait "$spid"
	echo $? > "$KQP_WORK/$name.s.rc"
}

# pair_ok NAME: both sides of run_pair NAME exited 0; says why not.
pair_ok() {
	local s c
	s=$(cat "$KQP_WORK/$1.s.rc") c=$(cat "$KQP_WORK/$1.c.rc")
	if [ "$s" -ne 0 ] || [ "$c" -ne 0 ]; then
		echo "# $1: server exit $s, client exit $c"
		show "$KQP_WORK/$1.s.out" "$KQP_WORK/$1.s.err"
		show "$KQP_WORK/$1.c.out" "$KQP_WORK/$1.c.err"
		return 1
	fi
}

# lost_ack NAME: did run_pair NAME end as rxe's lost ACK leaves a pair?
# rxe's responder posts a receive's completion, then sends the ACK, and
# skips the ACK if its QP reached ERR in between (do_complete(),
# rxe_resp.c); a program that disconnects as soon as its message arrives
# (rdma_client, rdma_xserver) can get there first.  The sender then
# retransmits to a QP that answers nothing, and rxe takes librdmacm's
# retry_count of 7 as "retry for ever" (rxe_comp.c), so it waits until
# its timeout.  What that leaves: one side timed out (124) having printed
# only its first line ("PROG: start") and nothing on stderr, and the
# other printed nothing on stderr and exited 0, or timed out or was
# killed after it.  kqp's completions reach the process before rxe's
# worker goes on, which widens that gap; seen on 6.12-rt, on 6.1 and
# across two 6.12 guests (doc/features.md, Standard RDMA tools).
lost_ack() {
	local n=$KQP_WORK/$1 w o
	for w in s c; do
		o=c
		[ "$w" = c ] && o=s
		[ "$(cat "$n.$w.rc")" = 124 ] && [ ! -s "$n.$w.err" ] &&
			[ ! -s "$n.$o.err" ] &&
			[ "$(wc -l < "$n.$w.out")" -eq 1 ] &&
			grep -q ': start$' "$n.$w.out" || continue
		case $(cat "$n.$o.rc") in 0|124|143) return 0 ;; esac
	done
	return 1
}
