#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# kqp's exported in-kernel API, through the sample ULP (ulp/kqp_ulp.ko).
# Runs in the bench guest with kqp.ko loaded, and prints one TAP stream:
# its own checks and the ULP's, numbered together.
#
#  - kqp_ulp.ko loads, and kqp cannot be unloaded under it;
#  - a second rxe device, on the bench's RDMA-less netdev, for the checks
#    that need two devices;
#  - the ULP's "run": the API checks, then SENDs and an RDMA WRITE between
#    two kernel ids, verified;
#  - the ULP's "hold" on the second device, then "rdma link delete" of it
#    under the connected QPs: the ULP tears down on DEVICE_REMOVAL and
#    kqp is left holding nothing;
#  - kqp_ulp.ko unloads.  The bench's own device is left as it was, and
#    the bench's final "rmmod kqp" shows no reference was leaked.
#
# Environment: KQP_ULP_KMOD (the kqp_ulp.ko for the running kernel), and
# the bench's KQP_TEST_* names and addresses.
set -u

# kqp_need_bench; the rest of lib.sh goes unused.
# shellcheck source=tools/testing/selftests/kqp/lib.sh
. "$(dirname "$0")/lib.sh"
kqp_need_bench

ulp=${KQP_ULP_KMOD:-}
dev=${KQP_TEST_RDMA_DEV:-rxe0}
addr=${KQP_TEST_ADDR:-192.0.2.1}
netdev2=${KQP_TEST_NORDMA_NETDEV:-kqp1}
addr2=${KQP_TEST_NORDMA_ADDR:-203.0.113.1}
dev2=kqpulp
run=/sys/kernel/debug/kqp_ulp/run
results=/sys/kernel/debug/kqp_ulp/results
counts=/sys/kernel/debug/kqp/kernel

n=0
failed=0
consumed=0

check() {
	local what=$1
	shift
	n=$((n + 1))
	if "$@"; then
		echo "ok $n $what"
		return 0
	fi
	echo "not ok $n $what"
	failed=1
	return 1
}

skip() {
	n=$((n + 1))
	echo "ok $n $1 # SKIP $2"
}

# The ULP's results since the last call, numbered into this stream.
collect() {
	local line
	while IFS= read -r line; do
		case "$line" in
		"ok - "*)
			n=$((n + 1))
			echo "ok $n ${line#ok - }" ;;
		"not ok - "*)
			n=$((n + 1))
			failed=1
			echo "not ok $n ${line#not ok - }" ;;
		esac
	done < <(tail -n "+$((consumed + 1))" "$results")
	consumed=$(wc -l < "$results")
}

ulp_cmd() {
	echo "$1" > "$run"
}

# kqp's counts of what it holds for kernel callers, as debugfs shows them.
counts_are() {
	local want="default_pds $1 default_pd_refs $2 cqs $3 qps $4" got
	got=$(tr '\n' ' ' < "$counts")
	got=${got% }
	[ "$got" = "$want" ] && return 0
	echo "# $counts: $got"
	return 1
}

rmmod_kqp_refused() {
	! rmmod kqp 2> /dev/null && [ -e /dev/kqp ]
}

kqp_held_by_ulp() {
	[ -e /sys/module/kqp/holders/kqp_ulp ]
}

kqp_has_no_holders() {
	[ -z "$(ls /sys/module/kqp/holders)" ]
}

echo "TAP version 13"
if [ -z "$ulp" ] || [ ! -r "$ulp" ]; then
	check "kqp_ulp.ko for $(uname -r) exists (${ulp:-KQP_ULP_KMOD unset})" false
	echo "1..$n"
	exit 1
fi
check "insmod kqp_ulp.ko" insmod "$ulp"
if [ ! -w "$run" ]; then
	echo "1..$n"
	exit 1
fi
check "rmmod kqp is refused while kqp_ulp is loaded" rmmod_kqp_refused
check "kqp_ulp holds kqp" kqp_held_by_ulp

two=0
check "a second rxe device, $dev2 on $netdev2" \
	rdma link add "$dev2" type rxe netdev "$netdev2" && two=1

if [ $two -eq 1 ]; then
	check "kqp_ulp: run $addr 7999 $addr2" ulp_cmd "run $addr 7999 $addr2"
else
	check "kqp_ulp: run $addr 7999" ulp_cmd "run $addr 7999"
fi
collect

if [ $two -eq 1 ]; then
	check "kqp_ulp: hold $addr2 7998" ulp_cmd "hold $addr2 7998"
	collect
	check "debugfs: kqp holds 1 default PD (2 users), 4 CQs, 2 QPs" \
		counts_are 1 2 4 2
	check "rdma link delete $dev2 under the held pair completes" \
		timeout 120 rdma link delete "$dev2"
	check "$dev2 is gone" eval "! rdma link show $dev2/1 > /dev/null 2>&1"
	check "debugfs: kqp holds nothing after the device removal" \
		counts_are 0 0 0 0
	check "kqp_ulp: release" ulp_cmd release
	collect
else
	skip "device removal under a held pair" "no second rxe device"
fi

check "rmmod kqp_ulp" rmmod kqp_ulp
check "kqp has no holders left" kqp_has_no_holders
check "debugfs: kqp holds nothing for kernel callers" counts_are 0 0 0 0
check "$dev is untouched" eval "rdma link show $dev/1 > /dev/null"
echo "1..$n"
exit $failed
