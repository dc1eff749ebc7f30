#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# make check's package step, in a 6.12 guest (run.sh --script, from
# tools/testing/check-deb.sh), while the packages are installed on the
# host whose root the guest runs on: modprobe loads the kqp.ko dkms
# installed, a stock rping server talks to rping with
# LD_PRELOAD=libkqp.so.1 (the installed library, found by ld.so's cache),
# data verified, and the program built with pkg-config against libkqp-dev
# (check-deb-prog.c) runs with and without the module.  TAP in
# $KQP_OUT/tap/10-deb.tap.  guest.sh set up rxe0 on kqp0 with $KQP_TEST_ADDR.
set -u

tap=$KQP_OUT/tap/10-deb.tap
prog=$KQP_REPO/build/deb-check/prog
pings=20
n=0
fail=0
: > "$tap"
t() {
	local what=$1
	shift
	n=$((n + 1))
	if "$@"; then
		echo "ok $n $what" >> "$tap"
	else
		echo "not ok $n $what" >> "$tap"
		echo "deb: FAILED: $what"
		fail=1
	fi
}

kver=$(uname -r)
installed() {
	local f
	f=$(modinfo -n kqp 2>/dev/null)
	echo "deb: modinfo -n kqp: $f"
	case "$f" in /lib/modules/"$kver"/updates/dkms/kqp.ko*) return 0 ;; esac
	return 1
}
t "modinfo -n kqp is dkms's kqp.ko in /lib/modules/$kver/updates/dkms" installed
t "modprobe kqp" modprobe kqp
t "/dev/kqp is there" test -c /dev/kqp

lib_path() {
	local f
	f=$(ldconfig -p | awk '$1 == "libkqp.so.1" && /x86-64/ { print $NF; exit }')
	echo "deb: ld.so finds libkqp.so.1 at $f"
	[ "$f" = /lib/x86_64-linux-gnu/libkqp.so.1 ] ||
		[ "$f" = /usr/lib/x86_64-linux-gnu/libkqp.so.1 ]
}
unset LD_LIBRARY_PATH
t "ld.so's cache has libkqp1's libkqp.so.1" lib_path

# wait_listen and kqp_qps_made.
# shellcheck source=tools/testing/selftests/kqp/lib.sh
. "$KQP_REPO/tools/testing/selftests/kqp/lib.sh"

rping_pair() {
	local server rc src before after
	before=$(kqp_qps_made)
	timeout -k 5 300 rping -s -a "$KQP_TEST_ADDR" -C $pings -v -V \
		> /tmp/deb-server.out 2>&1 &
	server=$!
	wait_listen 7174 "$server" "$KQP_TEST_ADDR" || { cat /tmp/deb-server.out; return 1; }
	LD_PRELOAD=libkqp.so.1 timeout -k 5 300 \
		rping -c -a "$KQP_TEST_ADDR" -C $pings -v -V > /tmp/deb-client.out 2>&1
	rc=$?
	wait "$server"
	src=$?
	after=$(kqp_qps_made)
	echo "deb: client exit $rc, server exit $src, kqp QPs made: $before -> $after"
	tail -n 3 /tmp/deb-client.out
	if [ $rc -ne 0 ] || [ $src -ne 0 ]; then
		cat /tmp/deb-client.out /tmp/deb-server.out
		return 1
	fi
	# -V: rping compares each ping's data and fails on a mismatch; -v
	# prints each one, on both sides.
	grep -qi mismatch /tmp/deb-client.out /tmp/deb-server.out && return 1
	[ "$(grep -c '^ping data: ' /tmp/deb-client.out)" -eq $pings ] &&
		[ "$(grep -c '^server ping data: ' /tmp/deb-server.out)" -eq $pings ] &&
		# The client's QP was kqp.ko's: the preloaded library was used.
		[ "$after" -eq $((before + 1)) ]
}
t "stock rping -s against LD_PRELOAD=libkqp.so.1 rping -c, $pings pings, data verified (-V)" rping_pair

t "the program built with pkg-config against libkqp-dev runs with the module" "$prog" loaded
t "rmmod kqp" rmmod kqp
t "without the module, the program's rdma_create_event_channel fails with ENOENT" "$prog" unloaded

echo "1..$n" >> "$tap"
cat "$tap"
exit $fail
