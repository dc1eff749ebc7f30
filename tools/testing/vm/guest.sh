#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Runs inside the bench guest, chrooted into the host's read-only root.
# From the kernel command line (init's environment):
#   kqp_out    results directory (a writable 9p share at the same path)
#   kqp_repo   the kqp tree
#   kqp_kmod   the kqp.ko built for this kernel, with the sample ULP
#              beside it in ulp/kqp_ulp.ko
#   kqp_mode   "test" (the selftests), "demo", or "script" (run
#              $kqp_script after the Soft-RoCE setup)
#   kqp_tests  comma-separated: run only these tests (empty: all)
#   kqp_bench  the bench kernel's name (6.1, 6.12, 6.12-rt, debug)
#   kqp_role   a or b: one of the two guests of run.sh --pair, whose
#              results go to $kqp_out/ROLE; it runs pair.sh instead
#   kqp_pair_reference  0: pair.sh skips its stock->stock direction
# Writes TAP files under $kqp_out/tap, the guest's dmesg and kmemleak
# report, and "done" when it finished; then powers the guest off.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp LANG=C

OUT=$kqp_out${kqp_role:+/$kqp_role}
REPO=$kqp_repo
TESTS=$REPO/build/selftests
TAP=$OUT/tap
mkdir -p "$TAP"
echo "$(uname -r)" > "$OUT/booted"

# Everything this script says goes to the results and to the console.
exec > >(tee "$OUT/guest.log" > /dev/console) 2>&1

poweroff_now() {
	dmesg > "$OUT/dmesg"
	sync
	echo o > /proc/sysrq-trigger
	sleep 60
}
trap poweroff_now EXIT

export KQP_TEST_NETDEV=kqp0
export KQP_TEST_RDMA_DEV=rxe0
export KQP_TEST_ADDR=192.0.2.1
# Its IPv6 address too (a GID of its own in rxe's table).
export KQP_TEST_ADDR6=2001:db8::1
# A second netdev with no RDMA device under it, for addresses no RDMA
# device can reach.
export KQP_TEST_NORDMA_NETDEV=kqp1
export KQP_TEST_NORDMA_ADDR=203.0.113.1
export KQP_TEST_NORDMA_PEER=203.0.113.5
# The modules built for this kernel, for tests and scripts that load them.
export KQP_KMOD=$kqp_kmod
# Where a test may leave files for whoever reads its failure.
export KQP_OUT=$OUT
export KQP_ULP_KMOD=${kqp_kmod%/*}/ulp/kqp_ulp.ko
# Tests that only wait out rdma_cm's own timeouts (cm.c), on one kernel
# per build, not on every one: the reference build's on 6.12-rt (which
# CI leaves out), kqp's on the debug kernel.
[ "${kqp_bench:-}" = 6.12-rt ] && export KQP_TEST_SLOW_REFERENCE=1
case $(uname -r) in *-debug) export KQP_TEST_SLOW=1 ;; esac
TEST_TIMEOUT=${kqp_test_timeout:-600}
# KASAN and lockdep make the debug kernel several times slower: a program
# that needs a minute elsewhere can need ten there on a busy host.
case $(uname -r) in
*-debug)
	TEST_TIMEOUT=${kqp_test_timeout:-1500}
	;;
esac

# The bench's own checks, as one more TAP stream.
bench_n=0
bench_tap=$TAP/00-bench.tap
: > "$bench_tap"
check() {
	local what=$1
	shift
	bench_n=$((bench_n + 1))
	if "$@"; then
		echo "ok $bench_n $what" >> "$bench_tap"
	else
		echo "not ok $bench_n $what" >> "$bench_tap"
		echo "bench: FAILED: $what"
	fi
}

modules_installed() { [ -d "/lib/modules/$(uname -r)" ]; }

setup_rdma() {
	if modules_installed; then
		modprobe -a dummy rdma_rxe ib_uverbs rdma_ucm rdma_cm || return 1
	fi
	# The loopback, as on any machine: IP to the guest's own addresses
	# (datagram rsockets' UDP, a preload's TCP fallback) goes through it.
	ip link set lo up &&
	ip link add "$KQP_TEST_NETDEV" type dummy &&
	ip addr add "$KQP_TEST_ADDR/24" dev "$KQP_TEST_NETDEV" &&
	# Kept when a test sets the link down (verbs.c): Linux drops a
	# netdev's IPv6 addresses then, unless told not to.
	echo 1 > "/proc/sys/net/ipv6/conf/$KQP_TEST_NETDEV/keep_addr_on_down" &&
	ip -6 addr add "$KQP_TEST_ADDR6/64" dev "$KQP_TEST_NETDEV" nodad &&
	ip link set "$KQP_TEST_NETDEV" up &&
	rdma link add "$KQP_TEST_RDMA_DEV" type rxe netdev "$KQP_TEST_NETDEV" &&
	rdma link show "$KQP_TEST_RDMA_DEV/1" &&
	ip link add "$KQP_TEST_NORDMA_NETDEV" type dummy &&
	ip addr add "$KQP_TEST_NORDMA_ADDR/24" dev "$KQP_TEST_NORDMA_NETDEV" &&
	ip link set "$KQP_TEST_NORDMA_NETDEV" up
}

# run.sh --pair: rxe0 on eth0, the QEMU link to the other guest.
export KQP_PAIR_A=198.51.100.1 KQP_PAIR_B=198.51.100.2
setup_pair() {
	local addr=$KQP_PAIR_A i
	[ "$kqp_role" = b ] && addr=$KQP_PAIR_B
	modprobe -a virtio_net rdma_rxe ib_uverbs rdma_ucm rdma_cm || return 1
	for i in $(seq 1 100); do
		[ -e /sys/class/net/eth0 ] && break
		sleep 0.1
	done
	ip link set lo up &&
	ip link set eth0 up &&
	ip addr add "$addr/24" dev eth0 &&
	rdma link add "$KQP_TEST_RDMA_DEV" type rxe netdev eth0 &&
	rdma link show "$KQP_TEST_RDMA_DEV/1"
}

dev_is_0666() {
	[ -c /dev/kqp ] && [ "$(stat -c %a /dev/kqp)" = 666 ]
}

dev_gone() { [ ! -e /dev/kqp ]; }

# Run one selftest program with a timeout; its TAP goes to a file of its own.
run_test() {
	local idx=$1 prog=$2
	shift 2
	local tap pid dog rc stuck start
	tap=$TAP/$(printf '%02d' "$idx")-$prog.tap
	echo "bench: running $prog $*"
	start=$(date +%s)
	timeout -k 10 "$TEST_TIMEOUT" "$TESTS/$prog" "$@" > "$tap" 2>&1 &
	pid=$!
	# A program stuck in the kernel outlives timeout's SIGKILL, and would
	# hold the guest until run.sh kills it, with nothing said of where.
	# A minute after the timeout, show the blocked tasks (a splat in the
	# guest's log) and go on without it.
	stuck=0
	trap 'stuck=1' USR1
	( sleep $((TEST_TIMEOUT + 60)) && kill -USR1 $$ ) 2> /dev/null &
	dog=$!
	wait "$pid"
	rc=$?
	if [ $stuck -eq 1 ]; then
		echo "bench: $prog is stuck in the kernel; blocked tasks:"
		echo w > /proc/sysrq-trigger
		echo "not ok 999 $prog stuck in the kernel past its timeout" >> "$tap"
		rc=125
	else
		pkill -P "$dog" sleep
		wait "$dog" 2> /dev/null
	fi
	trap - USR1
	echo $rc > "${tap%.tap}.rc"
	# Where the guest's time goes: run.sh prints the slowest.
	echo "$(( $(date +%s) - start )) $prog" >> "$OUT/times"
	cat "$tap"
}

run_phase() {
	local phase=$1 p prog args
	while read -r p prog args; do
		case "$p" in '#'*|'') continue ;; esac
		# PHASE:KERNEL,...: only on those bench kernels.
		case "$p" in
		*:*) case ",${p#*:}," in *",${kqp_bench:-}",*) ;; *) continue ;; esac ;;
		esac
		[ "${p%%:*}" = "$phase" ] || continue
		# kqp_tests (run.sh's KQP_TESTS): only the tests it names.
		case ",${kqp_tests:-$prog}," in *",$prog,"*) ;; *) continue ;; esac
		test_idx=$((test_idx + 1))
		# shellcheck disable=SC2086
		run_test "$test_idx" "$prog" $args
	done < "$REPO/tools/testing/selftests/kqp/tests"
}

# wait_listen, kqp_qps_made and the rest of what kqp's scripts share.
# shellcheck source=tools/testing/selftests/kqp/lib.sh
. "$REPO/tools/testing/selftests/kqp/lib.sh"

demo() {
	local lib=$REPO/lib/libkqp.so objects=/sys/kernel/debug/kqp/objects
	local before after server rc src

	echo
	echo "=== kqp demo on $(uname -r) ==="
	echo "--- Soft-RoCE: $KQP_TEST_RDMA_DEV on $KQP_TEST_NETDEV ($KQP_TEST_ADDR)"
	rdma link show
	echo "--- insmod kqp.ko"
	kqp_load "$kqp_kmod" || return 1
	ls -l /dev/kqp
	echo "--- rdma-core's ibv_devices, unchanged, with LD_PRELOAD=libkqp.so:"
	echo "    the list comes from kqp.ko's QUERY ioctl, not from uverbs"
	LD_PRELOAD=$lib ibv_devices || return 1
	echo "--- what kqp.ko has made so far ($objects: TYPE LIVE MADE)"
	cat "$objects"
	before=$(kqp_qps_made)

	echo "--- a stock rping server, rdma-core through uverbs:"
	echo "    rping -s -a $KQP_TEST_ADDR -C 5 -v"
	timeout -k 5 120 rping -s -a "$KQP_TEST_ADDR" -C 5 -v \
		> /tmp/demo-server.out 2> /tmp/demo-server.err &
	server=$!
	wait_listen 7174 "$server" "$KQP_TEST_ADDR" || { cat /tmp/demo-server.err; return 1; }
	echo "--- the same rping binary as a client, with LD_PRELOAD=libkqp.so:"
	echo "    LD_PRELOAD=$lib rping -c -a $KQP_TEST_ADDR -C 5 -v"
	LD_PRELOAD=$lib timeout -k 5 120 stdbuf -oL \
		rping -c -a "$KQP_TEST_ADDR" -C 5 -v
	rc=$?
	wait "$server"
	src=$?
	[ $rc -eq 0 ] && [ $src -eq 0 ] || { cat /tmp/demo-server.err; return 1; }
	echo "--- what the stock server saw:"
	cat /tmp/demo-server.out
	echo "--- what kqp.ko made: the client's id, its PD and the id's, its CQ, QP and"
	echo "    MRs; the server's are uverbs', not counted here"
	cat "$objects"
	after=$(kqp_qps_made)
	[ "$after" -eq $((before + 1)) ] || return 1

	echo "--- rmmod kqp"
	rmmod kqp || return 1
	echo "--- without the module, libkqp says why:"
	LD_PRELOAD=$lib ibv_devices
	echo "--- while stock libibverbs still sees the device through uverbs:"
	ibv_devices
	echo "=== demo done ==="
}

echo "bench: guest up, kernel $(uname -r)"
[ -n "${kqp_role:-}" ] ||
	check "rxe device $KQP_TEST_RDMA_DEV on $KQP_TEST_NETDEV" setup_rdma

if [ -n "${kqp_role:-}" ]; then
	check "rxe device $KQP_TEST_RDMA_DEV on eth0, the link to the other guest" setup_pair
	check "insmod kqp.ko" kqp_load "$kqp_kmod"
	echo "bench: running pair.sh $kqp_role"
	KQP_REPO=$REPO KQP_PAIR_RV=$kqp_out/rv \
	KQP_PAIR_REFERENCE=${kqp_pair_reference:-1} \
	KQP_PAIR_TESTS=$(echo "${kqp_tests:-}" | tr , ' ') \
		timeout -k 10 "${kqp_pair_timeout:-2400}" \
		bash "$REPO/tools/testing/vm/pair.sh" "$kqp_role" \
		> "$TAP/10-pair.tap" 2>&1
	echo $? > "$TAP/10-pair.rc"
	cat "$TAP/10-pair.tap"
	check "rmmod kqp" rmmod kqp
	check "/dev/kqp is gone after rmmod" dev_gone
	echo "1..$bench_n" >> "$bench_tap"
elif [ "${kqp_mode:-test}" = script ]; then
	# run.sh --script FILE: a developer's experiment, with the same setup.
	export KQP_REPO=$REPO
	bash "$kqp_script"
	echo $? > "$OUT/script.rc"
	echo "1..$bench_n" >> "$bench_tap"
elif [ "${kqp_mode:-test}" = demo ]; then
	demo
	echo $? > "$OUT/demo.rc"
	echo "1..$bench_n" >> "$bench_tap"
else
	test_idx=0
	check "insmod kqp.ko" kqp_load "$kqp_kmod"
	check "/dev/kqp is a character device with mode 0666" dev_is_0666
	run_phase loaded
	echo "bench: kmemleak scan"
	kqp_kmemleak_scan "$OUT/kmemleak"
	check "rmmod kqp" rmmod kqp
	check "/dev/kqp is gone after rmmod" dev_gone
	run_phase unloaded
	echo "1..$bench_n" >> "$bench_tap"
fi

echo done > "$OUT/done"
