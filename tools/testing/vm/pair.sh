#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# pair.sh a|b: the tests across the two guests of `run.sh --pair`, run by
# guest.sh in each of them once rxe0 runs on eth0, the QEMU link between
# them, and kqp.ko is loaded.  Guest a (KQP_PAIR_A) runs every server,
# guest b (KQP_PAIR_B) every client.
#
# Each test is a numbered step in the same list on both sides; the guests
# meet in $KQP_PAIR_RV, a directory both see (the bench's writable 9p
# share): a writes ID.ready when its server listens (or has joined), b
# runs its client and writes ID.client (its exit status), a stops its
# server and writes ID.done.  Every wait has a deadline, and a guest that
# leaves writes gone.ROLE, which ends the other's waits at once: a dead or
# stuck peer fails its tests and hangs nothing.
#
# Every test runs in three directions, "CLIENT->SERVER": kqp->kqp
# (LD_PRELOAD=libkqp.so on both sides), kqp->stock and stock->kqp, after
# stock->stock, which shows that the link and the program work at all;
# but udpong, which rdma-core fails on RoCE, runs kqp->kqp only (see
# udpong_dirs).  With KQP_PAIR_REFERENCE=0 (CI's .ci/run) stock->stock is
# a SKIP: the mixed directions show the link and the stock programs at
# work too when they pass, and make check keeps the reference for when
# they do not.
# A prints those as TAP ("ok N - pair: rping kqp->stock"): both sides must
# exit 0 (the cmtime server never exits: it is killed once its client is
# done), their outputs must show success and no error (see server_cmd),
# and a preloaded side must have made its QPs in kqp
# (/sys/kernel/debug/kqp/objects), a stock side none.
#
# Last, the link is cut in the middle of a transfer: b runs linkcut (see
# linkcut.c), a stream of RDMA WRITEs, against a's server, and a sets its
# eth0 down once b streams; the link stays down.  Both builds stream at
# once, to two servers, and see the same cut: linkcut_rdmacm (the
# reference) and linkcut over kqp.  rxe never fails the WRs on its own
# (see linkcut.c): 20 s after the cut linkcut disconnects, which flushes
# them.  b prints that TAP: every outstanding WR completed with an error
# status, the same first status, flushes and CM events as stock, and no
# kqp object left once the program exited.  guest.sh then checks that
# kqp.ko unloads, in both guests.
#
# KQP_PAIR_TESTS="rping mckey ...": only these tests (a developer's
# shortcut; the names are those of the list below, "linkcut" included).
set -u

role=${1:?usage: pair.sh a|b}
case $role in
a) peer=b ;;
b) peer=a ;;
*) echo "usage: pair.sh a|b" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
repo=${KQP_REPO:-$(cd "$here/../../.." && pwd)}
sel=$repo/build/selftests
lib=$repo/lib/libkqp.so
slow=$sel/mckey_slow.so
rv=${KQP_PAIR_RV:?KQP_PAIR_RV: the directory both guests share}
A=${KQP_PAIR_A:?KQP_PAIR_A: guest a\'s address}
dev=${KQP_TEST_RDMA_DEV:-rxe0}
netdev=${KQP_PAIR_NETDEV:-eth0}
objects=/sys/kernel/debug/kqp/objects
# Per process; TCG is slow.  A wait for the peer allows for its process.
limit=${KQP_PAIR_TIMEOUT:-180}
peer_wait=$((limit + 60))
only=" ${KQP_PAIR_TESTS:-} "

mkdir -p "$rv"
trap 'echo gone > "$rv/gone.$role"' EXIT

# tap, show, side, wait_listen and kqp_qps_made.
# shellcheck source=tools/testing/selftests/kqp/lib.sh
. "$repo/tools/testing/selftests/kqp/lib.sh"
KQP_TAP_PREFIX="- pair: "
KQP_SHOW_LINES=15
KQP_LIB=$lib
KQP_LIMIT=$limit

# put NAME WORDS...: write $rv/NAME whole, so that the peer never reads
# half of it.
put() {
	local name=$1
	shift
	echo "$*" > "$rv/.$name.$role" && mv "$rv/.$name.$role" "$rv/$name"
}

# wait_file NAME SECS [OR]: until $rv/NAME exists; fails at the deadline,
# as soon as the peer is gone, or when $rv/OR exists.
wait_file() {
	local end=$((SECONDS + $2))
	while [ $SECONDS -lt $end ]; do
		[ -e "$rv/$1" ] && return 0
		[ -e "$rv/gone.$peer" ] && { sleep 0.5; [ -e "$rv/$1" ]; return; }
		[ -n "${3:-}" ] && [ -e "$rv/$3" ] && return 1
		sleep 0.1
	done
	[ -e "$rv/$1" ]
}

# wait_pid PID SECS: until PID exits, then reap it; killed at the deadline.
# Its status is in $wait_rc.
wait_pid() {
	local end=$((SECONDS + $2))
	while [ $SECONDS -lt $end ]; do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill "$1" 2>/dev/null && echo "# killed process $1 after ${2}s"
	wait "$1"
	wait_rc=$?
}

# made_ok WHO BEFORE: did this guest's kqp make QPs since BEFORE exactly
# when WHO is kqp?
made_ok() {
	local now
	now=$(kqp_qps_made)
	if [ "$1" = kqp ]; then
		[ "$now" -gt "$2" ]
	else
		[ "$now" -eq "$2" ]
	fi
}

# Until mckey's output $1 says it joined, while process $2 lives.
wait_joined() {
	local i
	for i in $(seq 1 600); do
		grep -q 'joined dgid' "$1" && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

perftest_n=100

# The servers (guest a) and clients (guest b) of each test: NAME PORT.
# A server sets $ready: "listen" (wait for its listener), "joined"
# (mckey), and $stop: "exit" (it ends by itself) or "kill".  Some of
# these programs exit 0 whatever failed (cmtime goes on past a failed
# connection), so each test also says what its outputs must show
# ($sgood, $cgood: an extended regex each must match, if set) and what
# neither may ($bad).  rping -V prints nothing on success but for the
# events it does not expect, whose order depends on timing; a data
# mismatch makes it exit non-zero.
server_cmd() {
	local port=$2
	ready=listen stop=exit sgood='' cgood=''
	bad='[Ff]ail|[Ee]rror|mismatch|[Cc]ouldn.t|Invalid|[Uu]nable'
	case $1 in
	rping) cmd=(rping -s -a "$A" -p "$port" -C 20 -S 4096 -V) ;;
	rdma_server) cmd=(rdma_server -s "$A" -p "$port")
		sgood='^rdma_server: end 0$'
		cgood='^rdma_client: end 0$' ;;
	cmtime) cmd=(cmtime -b "$A" -p "$port" -c 200); stop='kill'
		cgood='^destroy +:' ;;
	udaddy) cmd=(udaddy -b "$A"); port=7174
		sgood='^test complete$' cgood='^test complete$' ;;
	mckey) cmd=(mckey -m "239.7.9.$id" -b "$A" -C 10); ready=joined
		sgood='^data transfers complete$'
		cgood='^data transfers complete$' ;;
	# rsockets, blocking: rstream, and riostream (riomap and riowrite).
	# Each side prints its result row: ... time, Gb/sec, usec/xfer.
	rstream|riostream) cmd=("$1" -b "$A" -p "$port" -S 1000 -C 300 -T b)
		sgood='[0-9.]+s +[0-9.]+ +[0-9.]+$' cgood=$sgood ;;
	# rcopy's server serves until it is killed; data_ok compares the
	# copy it wrote with the file.
	rcopy) cmd=(rcopy -p "$port"); stop='kill'
		[ -e "$rv/rcopy.src" ] ||
			head -c 1048576 /dev/urandom > "$rv/rcopy.src"
		rm -f "/tmp/rcopy.$id"
		sgood='done$' ;;
	# udpong, datagram rsockets: its one-way test (see udpong_dirs).
	# The server never exits; the client's result row comes only once
	# the server has answered its last message, and its xfers column is
	# what the server counted: every datagram arrived.
	udpong) cmd=(udpong -b "$A" -p "$port"); stop='kill'; ready=udp
		cgood='^custom +512 +100 ' ;;
	ib_*) perftest "$1"
		# The result row: the message size first.
		sgood="^ *${1##*-} +[0-9]+ " cgood=$sgood ;;
	esac
	listen_port=$port
}

# data_ok NAME: rcopy's copy is the file, byte for byte; true for the
# other tests, which their outputs judge.
data_ok() {
	[ "$1" != rcopy ] || cmp -s "$rv/rcopy.src" "/tmp/rcopy.$id" || {
		echo "# $id: rcopy's copy is not the file"
		return 1
	}
}

# outputs_ok SERVER-OUT CLIENT-OUT: what server_cmd said they must show.
outputs_ok() {
	{ [ -z "$sgood" ] || grep -Eq "$sgood" "$1"; } &&
	{ [ -z "$cgood" ] || grep -Eq "$cgood" "$2"; } &&
		! grep -Eq "$bad" "$1" "$2"
}

client_cmd() {
	local port=$2
	pre=
	case $1 in
	rping) cmd=(rping -c -a "$A" -p "$port" -C 20 -S 4096 -V) ;;
	rdma_server) cmd=(rdma_client -s "$A" -p "$port") ;;
	cmtime) cmd=(cmtime -s "$A" -p "$port" -c 200) ;;
	udaddy) cmd=(udaddy -s "$A") ;;
	# mckey's sender leaves the group right after posting: see mckey.sh.
	mckey) cmd=(mckey -m "239.7.9.$id" -b "$KQP_PAIR_B" -C 25 -s); pre=$slow ;;
	rstream|riostream) cmd=("$1" -s "$A" -p "$port" -S 1000 -C 300 -T b) ;;
	rcopy) cmd=(rcopy "$rv/rcopy.src" "$A:/tmp/rcopy.$id" -p "$port") ;;
	udpong) cmd=(udpong -s "$A" -p "$port" -S 512 -C 100) ;;
	ib_*) perftest "$1"; cmd+=("$A") ;;
	esac
}

# ib_send_bw-64 and the like: TOOL-SIZE.
perftest() {
	cmd=("${1%-*}" -R -d "$dev" -p "$port" -s "${1##*-}" -n "$perftest_n" -F)
}

# One step of a test on guest a: start the server, say when it is ready,
# wait for the client's status, stop the server, print the TAP line.
a_step() {
	local name=$1 cw=$2 sw=$3 spid before ok crc cmade why= rc oks
	local out=$rv/$id.server.out
	server_cmd "$name" $((18000 + id))
	before=$(kqp_qps_made)
	side "$sw" stdbuf -oL "${cmd[@]}" > "$out" 2>&1 &
	spid=$!
	ok=0
	if [ "$ready" = joined ]; then
		wait_joined "$out" "$spid" || ok=1
	elif [ "$ready" = udp ]; then
		KQP_LISTEN_UDP=1 wait_listen "$listen_port" "$spid" || ok=1
	else
		wait_listen "$listen_port" "$spid" || ok=1
	fi
	if [ $ok -eq 0 ]; then
		put "$id.ready" ok
		if wait_file "$id.client" "$peer_wait"; then
			read -r crc cmade why < "$rv/$id.client"
		else
			echo "# $id: no word from guest b's client within ${peer_wait}s"
			crc=timeout cmade=no
		fi
	else
		echo "# $id: the server was not ready"
		put "$id.ready" fail
		crc=none cmade=no
	fi
	if [ "$stop" = kill ]; then
		kill "$spid" 2>/dev/null
		wait "$spid"
		wait_rc=0
	else
		wait_pid "$spid" 30
	fi
	# perftest -R connects twice, the second time once the server has
	# listened again; a client that comes back before that is rejected
	# (reason 8, no listener) and perftest gives up, stock or not.  Such
	# a run, and only it, is made once more (see perftest.sh).
	if [ "$why" = reject8 ] && [ -z "${again:-}" ]; then
		echo "# $id: $name's client came back before its server's second listen (REJECTED 8); once more"
		put "$id.done" again
		return 10
	fi
	# rdma_client disconnects as soon as the server's reply arrives, and
	# rxe can then leave the server waiting for ever for that reply's ACK
	# (tools/testing/selftests/kqp/lib.sh's lost_ack() says how): seen
	# once here, a preloaded client against a stock server on 6.12.  A
	# server that had to be killed having printed only its first line,
	# beside a client that ended 0, is made once more, as above.
	if [ "$name" = rdma_server ] && [ -z "${again:-}" ] && [ "$crc" = 0 ] &&
	   [ "$wait_rc" -ne 0 ] && [ "$(cat "$out")" = "rdma_server: start" ]; then
		echo "# $id: the server waited for the ACK of its reply until it was killed (rxe's lost ACK); once more"
		put "$id.done" again
		return 10
	fi
	rc=1
	if [ "$crc" = 0 ] && [ "$wait_rc" -eq 0 ] && [ "$cmade" = yes ] &&
	   made_ok "$sw" "$before" && outputs_ok "$out" "$rv/$id.client.out" &&
	   data_ok "$name"; then
		rc=0
	else
		oks=no
		outputs_ok "$out" "$rv/$id.client.out" 2>/dev/null && oks=yes
		echo "# $id: client exit $crc (its QPs where they belong: $cmade), server exit $wait_rc, server made $(( $(kqp_qps_made) - before )) QPs in kqp, outputs as they must be: $oks"
		show "$out"
		[ ! -e "$rv/$id.client.out" ] || show "$rv/$id.client.out"
	fi
	tap $rc "$name $cw->$sw"
	put "$id.done" "$wait_rc"
}

# The same step on guest b: wait for the server, run the client.
b_step() {
	local name=$1 cw=$2 before rc made=no why=
	client_cmd "$name" $((18000 + id))
	if ! wait_file "$id.ready" "$peer_wait"; then
		echo "# $id: guest a's server never got ready"
		put "$id.client" timeout no
		return
	fi
	if [ "$(cat "$rv/$id.ready")" = ok ]; then
		before=$(kqp_qps_made)
		(KQP_PRELOAD=$pre side "$cw" stdbuf -oL "${cmd[@]}") \
			> "$rv/$id.client.out" 2>&1
		rc=$?
		made_ok "$cw" "$before" && made=yes
		case $name in
		ib_*) [ $rc -eq 0 ] ||
			! grep -q 'RDMA_CM_EVENT_REJECTED; error: 8\.' \
				"$rv/$id.client.out" || why=reject8 ;;
		esac
	else
		rc=noserver
	fi
	put "$id.client" "$rc" "$made" $why
	if ! wait_file "$id.done" "$peer_wait"; then
		echo "# $id: guest a did not finish with its server"
	elif [ "$(cat "$rv/$id.done")" = again ]; then
		return 10
	fi
}

# The cut link, on guest a: two linkcut servers (stock), one for each of
# b's clients; cut eth0 once b says both stream.  The link stays down.
a_linkcut() {
	local p1=$((18000 + id)) p2=$((18100 + id)) s1 s2 ok=ok
	side stock "$sel/linkcut_rdmacm" -s "$A" -p "$p1" -t $((limit - 10)) \
		> "$rv/$id.server1.out" 2>&1 &
	s1=$!
	side stock "$sel/linkcut_rdmacm" -s "$A" -p "$p2" -t $((limit - 10)) \
		> "$rv/$id.server2.out" 2>&1 &
	s2=$!
	wait_listen "$p1" "$s1" && wait_listen "$p2" "$s2" || ok=fail
	put "$id.ready" $ok
	if wait_file "$id.cut" "$peer_wait" "$id.client"; then
		ip link set "$netdev" down
		echo "# $id: $netdev down while b's clients stream"
		put "$id.cutdone" ok
	fi
	wait_file "$id.client" "$peer_wait"
	kill "$s1" "$s2" 2>/dev/null
	wait "$s1" "$s2"
	put "$id.done" ok
}

# On guest b: stream with both builds at once (linkcut_rdmacm, the
# reference, and linkcut, over kqp), ask for the cut, wait for both.
# Their statuses in $rc_stock and $rc_kqp, their outputs in
# $rv/ID.{stock,kqp}.out.
b_linkcut() {
	local c1 c2 i s1=/tmp/linkcut.stock s2=/tmp/linkcut.kqp
	rc_stock=noserver rc_kqp=noserver
	if ! wait_file "$id.ready" "$peer_wait" ||
	   [ "$(cat "$rv/$id.ready")" != ok ]; then
		echo "# $id: guest a's linkcut servers never listened"
		put "$id.client" noserver
		return
	fi
	rm -f "$s1" "$s2"
	timeout -k 5 "$limit" "$sel/linkcut_rdmacm" -c "$A" -p $((18000 + id)) \
		-t 120 -w 20 -r "$s1" > "$rv/$id.stock.out" 2>&1 &
	c1=$!
	timeout -k 5 "$limit" "$sel/linkcut" -c "$A" -p $((18100 + id)) \
		-t 120 -w 20 -r "$s2" > "$rv/$id.kqp.out" 2>&1 &
	c2=$!
	for i in $(seq 1 1200); do
		[ -e "$s1" ] && [ -e "$s2" ] && break
		kill -0 "$c1" 2>/dev/null && kill -0 "$c2" 2>/dev/null || break
		sleep 0.1
	done
	if [ -e "$s1" ] && [ -e "$s2" ]; then
		put "$id.cut" go
	else
		echo "# $id: the two clients did not both stream"
	fi
	wait "$c1"
	rc_stock=$?
	wait "$c2"
	rc_kqp=$?
	put "$id.client" "$rc_stock" "$rc_kqp"
	wait_file "$id.done" "$peer_wait" ||
		echo "# $id: guest a did not finish with its servers"
}

# Nothing of kqp's left: rdma_cm and the device list nothing that a
# program made, and kqp counts no live object.
nothing_left() {
	local res rc=0
	# kqp's idle QP cache is the kernel's too, and not the program's.
	qp_cache_off || echo "# the QP cache did not empty"
	res=$(rdma res show cm_id; rdma res show qp; rdma res show cq;
	      rdma res show mr; rdma res show pd)
	qp_cache_restore
	echo "$res" | sed 's/^/# /'
	sed 's/^/# /' "$objects"
	echo "$res" | grep -E 'comm \[(kqp|rdma_cm)\]|linkcut' | grep -v 'type GSI' && rc=1
	awk '$2 != 0 { bad = 1 } END { exit bad }' "$objects" || rc=1
	return $rc
}

wanted() {
	[ "$only" = "  " ] || [[ $only == *" $1 "* ]]
}

# perftest at 64 B for SEND only: a one-packet RDMA WRITE or READ goes
# through kqp as the 64 KiB one does (one WR, one completion), and the
# eight pairs they took were about 80 s of CI's hour.
# udpong_dirs DIRECTION: udpong runs kqp->kqp only.  rdma-core's datagram
# rsockets cannot make a QP on a RoCE device (their loopback address
# handle has no GRH, which the kernel refuses), so a stock side fails
# with itself; the three other directions are SKIPs that say so.  Its
# echo test (-T e) is not run here: udpong's client sends again after
# 1 ms without a reply, and a late reply overwrites the message it then
# sends again, so every duplicate lives for ever.  Across these guests a
# round trip takes 10-50 ms; a trace of kqp's datagrams showed each
# reply delivered, in order, and the duplicates growing to 140 queued
# in 60 s.  Its one-way test waits for two replies (1 s each) before
# the data, and for one after it, the last: no duplicate outlives it.
udpong_dirs() {
	[ "$1" = kqp:kqp ]
}

tests=
for t in rping rdma_server cmtime udaddy mckey rstream riostream rcopy udpong \
	 ib_send_bw-64 ib_send_bw-65536 ib_write_bw-65536 ib_read_bw-65536; do
	wanted "$t" || wanted "${t%-*}" && tests+=" $t"
done

id=0
if [ "$role" = a ]; then
	echo "TAP version 13"
	echo "1..$(( $(echo $tests | wc -w) * 4 ))"
fi
for t in $tests; do
	for d in stock:stock kqp:kqp kqp:stock stock:kqp; do
		id=$((id + 1))
		if [ "$t" = udpong ] && ! udpong_dirs "$d"; then
			[ "$role" = b ] || tap_skip "udpong ${d%:*}->${d#*:}" \
				"rdma-core's datagram rsockets make no QP on RoCE"
			continue
		fi
		if [ "$d" = stock:stock ] && [ "${KQP_PAIR_REFERENCE:-1}" = 0 ]; then
			[ "$role" = b ] || tap_skip "$t stock->stock" \
				"the reference direction: make check runs it, CI does not"
			continue
		fi
		# A step that asks to be made once more does so under an
		# id (and so a port) of its own.
		if [ "$role" = a ]; then
			a_step "$t" "${d%:*}" "${d#*:}" ||
				{ [ $? -eq 10 ] && id=$((id + 1000)) again=1 \
					a_step "$t" "${d%:*}" "${d#*:}"; }
		else
			b_step "$t" "${d%:*}" ||
				{ [ $? -eq 10 ] && id=$((id + 1000)) \
					b_step "$t" "${d%:*}"; }
		fi
	done
done

if wanted linkcut; then
	id=$((id + 1))
	if [ "$role" = a ]; then
		a_linkcut
	else
		echo "TAP version 13"
		echo "1..4"
		b_linkcut
		KQP_SHOW_LINES=40 show "$rv/$id.stock.out" 2>/dev/null
		[ "$rc_stock" = 0 ]
		tap $? "linkcut stock: a link cut mid-transfer fails every outstanding WRITE (the reference)"
		KQP_SHOW_LINES=40 show "$rv/$id.kqp.out" 2>/dev/null
		[ "$rc_kqp" = 0 ]
		tap $? "linkcut kqp: a link cut mid-transfer fails every outstanding WRITE, nothing hangs"
		ref=$(grep -s '^summary:' "$rv/$id.stock.out")
		got=$(grep -s '^summary:' "$rv/$id.kqp.out")
		echo "# stock: $ref"
		echo "# kqp:   $got"
		[ -n "$ref" ] && [ "$ref" = "$got" ]
		tap $? "linkcut kqp: the same first error status, flushes and CM events as stock"
		# Only worth saying if the kqp client ran.
		[ "$rc_kqp" != noserver ] && nothing_left
		tap $? "linkcut kqp: no kqp object left after the program exited"
	fi
fi
if [ "$role" = b ] && ! wanted linkcut; then
	echo "1..0 # SKIP linkcut not asked for"
fi
exit 0
