#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# mckey.sh: stock mckey, unchanged, over kqp, in the bench guest.
#
# A receiving mckey joins a group and waits for its messages; a sending
# mckey joins the same group and sends them.  mckey's sender destroys its
# QP right after posting its (unsignaled) sends, and under TCG rxe has
# sent few of them by then, stock or preloaded alike (measured: a stock
# sender posting 25 got one packet out, rxe's sent_pkts).  So every
# sender runs with mckey_slow.so preloaded first, which waits a second
# before leaving the group; the receiver waits for 10 of the 25.
# mcast.c checks every byte of every message, both ways.  Each role runs once with
# LD_PRELOAD=libkqp.so against a stock peer, and the stock pair runs
# first to show what right is.  The receiver must get every message
# (mckey waits for it, so none is a timeout), both must
# exit 0, and /sys/kernel/debug/kqp/objects must show that the preloaded
# side made its QP in kqp.  rdma_cm refuses multicast on an id whose QP it
# holds (with a WARN): the kernel's log must not show one.  Prints TAP.
set -u

here=$(cd "$(dirname "$0")" && pwd)
repo=${KQP_REPO:-$(cd "$here/../.." && pwd)}
lib=$repo/lib/libkqp.so
slow=$here/mckey_slow.so
addr=${KQP_TEST_ADDR:-192.0.2.1}
objects=/sys/kernel/debug/kqp/objects
count=10
# For lib.sh's side(); the sender adds mckey_slow.so (KQP_PRELOAD).
KQP_LIB=$lib
KQP_LIMIT=${KQP_MCKEY_TIMEOUT:-120}

# shellcheck source=tools/testing/selftests/kqp/lib.sh
. "$here/lib.sh"
kqp_need_bench

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ ! -r "$objects" ] || [ ! -e "$lib" ]; then
	echo "1..0 # SKIP needs kqp.ko loaded (debugfs) and $lib"
	exit 4
fi
if ! command -v mckey > /dev/null; then
	echo "1..0 # SKIP mckey is not installed"
	exit 4
fi

echo "TAP version 13"
echo "1..6"

# run NAME RECEIVER SENDER GROUP: who (kqp or stock) receives and sends.
run() {
	local name=$1 rw=$2 sw=$3 group=$4 rpid rrc src i want before lines
	local joined=1

	before=$(kqp_qps_made)
	# Only what this run adds to the kernel's log; the bench reads it all.
	lines=$(dmesg | wc -l)
	side "$rw" stdbuf -oL mckey -m "$group" -b "$addr" -C "$count" \
		> "$work/$name.r.out" 2>&1 &
	rpid=$!
	# The sender's messages are lost unless the receiver joined first.
	for i in $(seq 1 600); do
		if grep -q 'joined dgid' "$work/$name.r.out"; then
			joined=0
			break
		fi
		kill -0 "$rpid" 2>/dev/null || break
		sleep 0.1
	done
	if [ $joined -eq 0 ]; then
		(KQP_PRELOAD=$slow side "$sw" stdbuf -oL mckey -m "$group" \
			-b "$addr" -C 25 -s) \
			> "$work/$name.s.out" 2>&1
		src=$?
	else
		echo "# $name: the receiver never joined"
		kill "$rpid" 2>/dev/null
		src=1
	fi
	wait "$rpid"
	rrc=$?
	echo "# $name: receiver exit $rrc, sender exit $src"
	show "$work/$name.r.out"
	show "$work/$name.s.out" 2>/dev/null
	[ $rrc -eq 0 ] && [ $src -eq 0 ] &&
		grep -q 'data transfers complete' "$work/$name.r.out"
	tap $? "$name: $rw mckey receives $count messages $sw mckey sends to $group"

	want=0
	[ "$rw" = kqp ] && want=$((want + 1))
	[ "$sw" = kqp ] && want=$((want + 1))
	echo "# $name: kqp made $(( $(kqp_qps_made) - before )) QPs (expected $want)"
	if [ $(( $(kqp_qps_made) - before )) -eq $want ] &&
	   ! dmesg | tail -n +$((lines + 1)) | grep -q 'WARNING:'; then
		tap 0 "$name: kqp made the preloaded side's QPs, and nothing warned"
	else
		dmesg | tail -n +$((lines + 1)) | grep -A 5 'WARNING:' |
			sed 's/^/# /'
		tap 1 "$name: kqp made the preloaded side's QPs, and nothing warned"
	fi
}

run stock stock stock 239.7.0.1
run kqp-receives kqp stock 239.7.0.2
run kqp-sends stock kqp 239.7.0.3
