#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# dropin.sh: unchanged rdma-core programs over kqp, in the bench guest.
#
# Stock rping and rdma_server/rdma_client run against each other with
# LD_PRELOAD=libkqp.so on one side and nothing on the other, both ways
# round, over the bench's rxe device.  Each mixed run must do what the
# stock pair does (exit statuses, the data each side prints), and
# /sys/kernel/debug/kqp/objects must show that the preloaded side, and
# only it, made its objects in kqp: a stock pair makes nothing there, and
# a mixed pair exactly what one side of it needs.  Then dropin.c, built
# once with pkg-config's kqp and once with -lrdmacm -libverbs, must print
# the same lines, and rdma-core's device tools must see the same devices
# through kqp.  Prints TAP.
set -u

here=$(cd "$(dirname "$0")" && pwd)
repo=${KQP_REPO:-$(cd "$here/../.." && pwd)}
lib=$repo/lib/libkqp.so
addr=${KQP_TEST_ADDR:-192.0.2.1}
objects=/sys/kernel/debug/kqp/objects
# Per process; TCG is slow, and a server can need seconds to listen.
limit=${KQP_DROPIN_TIMEOUT:-180}
# Pings per rping run: each is five messages each way (send, RDMA READ,
# send, RDMA WRITE, send), so 20 go round rping's loop often enough.
count=20

KQP_LIB=$lib
KQP_LIMIT=$limit
# shellcheck source=tools/testing/selftests/kqp/lib.sh
. "$here/lib.sh"
kqp_need_bench

# How many objects of a type kqp ever made ("TYPE LIVE MADE").
made() {
	awk -v t="$1" '$1 == t { print $3 }' "$objects"
}

snapshot() {
	echo "$(made cm_ids) $(made qps)"
}

# Did kqp make exactly $2 ids and $3 QPs since snapshot $1?
made_since() {
	local before=$1 ids=$2 qps=$3 b_ids b_qps now
	read -r b_ids b_qps <<< "$before"
	now=$(snapshot)
	echo "# kqp made $((${now% *} - b_ids)) ids and $((${now#* } - b_qps)) QPs (expected $ids and $qps)"
	[ $((${now% *} - b_ids)) -eq "$ids" ] && [ $((${now#* } - b_qps)) -eq "$qps" ]
}

work=$(mktemp -d)
KQP_WORK=$work
trap 'rm -rf "$work"' EXIT

if [ ! -r "$objects" ] || [ ! -e "$lib" ]; then
	echo "1..0 # SKIP needs kqp.ko loaded (debugfs) and $lib"
	exit 4
fi
for c in rping rdma_server rdma_client ibv_devices ibv_devinfo; do
	if ! command -v "$c" > /dev/null; then
		echo "1..0 # SKIP $c is not installed"
		exit 4
	fi
done

echo "TAP version 13"
echo "1..20"

# A server and a client; $1 names the run, $2/$3 who the server and client
# are (kqp or stock), $4 the port, then the server's command, "--", the
# client's.  Outputs go to $work/NAME.{s,c}.{out,err}, statuses to
# $work/NAME.{s,c}.rc.
pair() {
	local name=$1 sw=$2 cw=$3 port=$4 spid cpid wpid= rc
	local -a scmd=() ccmd=()
	shift 4
	while [ "$1" != -- ]; do scmd+=("$1"); shift; done
	shift
	ccmd=("$@")
	# Line-buffered, so that a side killed by its timeout still shows
	# how far it got.
	side "$sw" stdbuf -oL "${scmd[@]}" > "$work/$name.s.out" \
		2> "$work/$name.s.err" &
	spid=$!
	if ! wait_listen "$port" "$spid"; then
		echo "# $name: the server never listened on port $port"
		kill "$spid" 2>/dev/null
	else
		side "$cw" stdbuf -oL "${ccmd[@]}" > "$work/$name.c.out" \
			2> "$work/$name.c.err" &
		cpid=$!
		watch_pair "$name" &
		wpid=$!
		wait "$cpid"
		rc=$?
		echo $rc > "$work/$name.c.rc"
		# A client that failed may leave its server waiting for it.
		if [ $rc -ne 0 ]; then
			sleep 2
			kill "$spid" 2>/dev/null
		fi
	fi
	wait "$spid"
	rc=$?
	echo $rc > "$work/$name.s.rc"
	[ -e "$work/$name.c.rc" ] || echo 255 > "$work/$name.c.rc"
	[ -z "$wpid" ] || { kill "$wpid" 2>/dev/null; wait "$wpid" 2>/dev/null; }
	[ ! -s "$work/$name.stuck" ] || show "$work/$name.stuck"
}

# If a pair is still running shortly before its timeout, record what
# rdma_cm and kqp hold, and where its threads wait.
watch_pair() {
	local name=$1 p t
	sleep $((limit - 15))
	{
		echo "$name: still running after $((limit - 15))s"
		rdma res show cm_id
		rdma res show qp
		cat "$objects"
		for p in $(pgrep -x 'rping|rdma_server|rdma_client'); do
			for t in /proc/"$p"/task/*; do
				echo "-- $t $(cat "$t/comm"): $(cat "$t/wchan")"
			done
		done
		dmesg | grep -v 'speed is unknown' | tail -n 20
	} > "$work/$name.stuck" 2>&1
}

# rping -v: the client prints "ping data: ...", the server "server ping
# data: ..."; one line per iteration, the same data on both sides.
ping_lines() {
	grep '^ping data: ' "$work/$1.c.out" > "$work/$1.c.ping"
	grep '^server ping data: ' "$work/$1.s.out" | sed 's/^server //' \
		> "$work/$1.s.ping"
	[ "$(wc -l < "$work/$1.c.ping")" -eq "$count" ] || {
		echo "# $1: $(wc -l < "$work/$1.c.ping") client lines, not $count"
		return 1
	}
	cmp -s "$work/$1.c.ping" "$work/$1.s.ping" || {
		echo "# $1: the two sides printed different data"
		diff "$work/$1.c.ping" "$work/$1.s.ping" | show
		return 1
	}
	[ -z "${2:-}" ] || cmp -s "$work/$1.c.ping" "$work/$2.c.ping" || {
		echo "# $1: data differs from the stock pair's"
		diff "$work/$2.c.ping" "$work/$1.c.ping" | show
		return 1
	}
}

rping_args=(-C "$count" -v -a "$addr")

# 1-2: the stock pair, the reference and the control.
before=$(snapshot)
pair rping0 stock stock 7301 rping -s "${rping_args[@]}" -p 7301 -- \
	rping -c "${rping_args[@]}" -p 7301
pair_ok rping0 && ping_lines rping0
tap $? "stock rping -s and rping -c: $count pings, the same data on both sides"
made_since "$before" 0 0
tap $? "stock rping pair: kqp made nothing"

# 3-5: a preloaded client against a stock server.
before=$(snapshot)
pair rping1 stock kqp 7302 rping -s "${rping_args[@]}" -p 7302 -- \
	rping -c "${rping_args[@]}" -p 7302
pair_ok rping1
tap $? "LD_PRELOAD=libkqp.so rping -c against stock rping -s: both exit 0"
ping_lines rping1 rping0
tap $? "LD_PRELOAD=libkqp.so rping -c against stock rping -s: the stock pair's $count pings on both sides"
made_since "$before" 1 1
tap $? "LD_PRELOAD=libkqp.so rping -c: its id and QP are kqp's, the server's are not"

# 6-8: a preloaded server against a stock client.
before=$(snapshot)
pair rping2 kqp stock 7303 rping -s "${rping_args[@]}" -p 7303 -- \
	rping -c "${rping_args[@]}" -p 7303
pair_ok rping2
tap $? "LD_PRELOAD=libkqp.so rping -s against stock rping -c: both exit 0"
ping_lines rping2 rping0
tap $? "LD_PRELOAD=libkqp.so rping -s against stock rping -c: the stock pair's $count pings on both sides"
made_since "$before" 2 1
tap $? "LD_PRELOAD=libkqp.so rping -s: its listener, connection and QP are kqp's, the client's are not"

# rdma_server/rdma_client: one message each way; they print start/end.
same_out() {
	cmp -s "$work/$1.$3.out" "$work/$2.$3.out" || {
		echo "# $1: $3 printed something else than in the stock pair"
		diff "$work/$2.$3.out" "$work/$1.$3.out" | show
		return 1
	}
}

# cm_pair NAME SERVER_WHO CLIENT_WHO PORT: rdma_server and rdma_client,
# each with a minute (they need a second or two), and once more, on
# PORT + 10, if the first run ended as rxe's lost ACK leaves a pair
# (lib.sh's lost_ack()).  rdma_client disconnects as soon as the server's
# reply arrives, so the server can wait for that reply's ACK until it is
# killed: on 6.12-rt with a preloaded client, 6 runs in about 310 (a
# stock client, 0 in 150 beside them).  A rerun that hangs again fails,
# as does any other failure.  The rerun's objects are counted from a new
# snapshot ($before).
cm_pair() {
	local name=$1 sw=$2 cw=$3 port=$4 KQP_LIMIT=60 limit=60

	pair "$name" "$sw" "$cw" "$port" rdma_server -s "$addr" -p "$port" -- \
		rdma_client -s "$addr" -p "$port"
	if lost_ack "$name"; then
		echo "# $name: the server still waited after ${limit}s (rxe's lost ACK, see cm_pair()); once more"
		port=$((port + 10))
		before=$(snapshot)
		rm -f "$work/$name.stuck"
		pair "$name" "$sw" "$cw" "$port" rdma_server -s "$addr" \
			-p "$port" -- rdma_client -s "$addr" -p "$port"
	fi
}

# 9-10: the stock pair.
before=$(snapshot)
cm_pair cm0 stock stock 7304
pair_ok cm0 && grep -qx 'rdma_server: end 0' "$work/cm0.s.out" &&
	grep -qx 'rdma_client: end 0' "$work/cm0.c.out"
tap $? "stock rdma_server and rdma_client: both end 0"
made_since "$before" 0 0
tap $? "stock rdma_server/rdma_client pair: kqp made nothing"

# 11-12: a preloaded client.
before=$(snapshot)
cm_pair cm1 stock kqp 7305
pair_ok cm1 && same_out cm1 cm0 s && same_out cm1 cm0 c
tap $? "LD_PRELOAD=libkqp.so rdma_client against stock rdma_server: what the stock pair prints"
made_since "$before" 1 1
tap $? "LD_PRELOAD=libkqp.so rdma_client: its id and QP are kqp's, the server's are not"

# 13-14: a preloaded server.
before=$(snapshot)
cm_pair cm2 kqp stock 7306
pair_ok cm2 && same_out cm2 cm0 s && same_out cm2 cm0 c
tap $? "LD_PRELOAD=libkqp.so rdma_server against stock rdma_client: what the stock pair prints"
made_since "$before" 2 1
tap $? "LD_PRELOAD=libkqp.so rdma_server: its listener, connection and QP are kqp's, the client's are not"

# 15-18: one source, built against rdma-core and against pkg-config's kqp.
before=$(snapshot)
timeout -k 5 "$limit" "$here/dropin_rdmacm" "$addr" 7307 \
	> "$work/dropin0.out" 2> "$work/dropin0.err"
rc=$?
[ $rc -eq 0 ] && [ "$(tail -n 1 "$work/dropin0.out")" = done ] ||
	{ echo "# dropin_rdmacm: exit $rc"; show "$work/dropin0.out" "$work/dropin0.err"; false; }
tap $? "dropin built with -lrdmacm -libverbs runs to the end"
made_since "$before" 0 0
tap $? "dropin built with -lrdmacm -libverbs: kqp made nothing"
before=$(snapshot)
timeout -k 5 "$limit" "$here/dropin_pc" "$addr" 7307 \
	> "$work/dropin1.out" 2> "$work/dropin1.err"
rc=$?
[ $rc -eq 0 ] && cmp -s "$work/dropin0.out" "$work/dropin1.out" ||
	{ echo "# dropin_pc: exit $rc"; diff "$work/dropin0.out" "$work/dropin1.out" | show; show "$work/dropin1.err"; false; }
tap $? "dropin built with pkg-config --libs kqp prints what the rdma-core build prints ($(wc -l < "$work/dropin0.out") lines)"
made_since "$before" 3 2
tap $? "dropin built with pkg-config --libs kqp: its ids and QPs are kqp's"

# 19-20: the device tools.  ibv_devinfo -v differs in these lines only:
# kqp's extended query has none of rxe's extended flags
# (device_cap_flags_ex, Unknown flags), kqp gives
# each context one completion vector, and it advertises no memory
# windows or other features it does not implement (device_cap_flags, the
# names of those flags, max_mw).
timeout -k 5 60 ibv_devices > "$work/dev0" 2>&1
(side kqp ibv_devices) > "$work/dev1" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q "${KQP_TEST_RDMA_DEV:-rxe0}" "$work/dev1" &&
	cmp -s "$work/dev0" "$work/dev1" ||
	{ echo "# exit $rc"; diff "$work/dev0" "$work/dev1" | show; false; }
tap $? "LD_PRELOAD=libkqp.so ibv_devices lists what ibv_devices lists"
unext() {
	grep -Ev 'device_cap_flags_ex:|Unknown flags:|num_comp_vectors:' "$1" |
	grep -Ev 'device_cap_flags:|max_mw:' |
	grep -Ev '^[[:space:]]*(SRQ_RESIZE|MEM_WINDOW|MEM_WINDOW_TYPE_2[AB]|MEM_MGT_EXTENSIONS|XRC|RAW_MULTI|RAW_IP_CSUM|MANAGED_FLOW_STEERING|RAW_SCATTER_FCS|PCI_WRITE_END_PADDING|RESIZE_MAX_WR)[[:space:]]*$'
}
timeout -k 5 60 ibv_devinfo -v > "$work/info0" 2>&1
(side kqp ibv_devinfo -v) > "$work/info1" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q 'GID\[' "$work/info1" &&
	cmp -s <(unext "$work/info0") <(unext "$work/info1") ||
	{ echo "# exit $rc"; diff "$work/info0" "$work/info1" | show; false; }
tap $? "LD_PRELOAD=libkqp.so ibv_devinfo -v prints what ibv_devinfo -v prints, GIDs included"
