#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# run.sh [--demo | --script FILE | --pair] NAME: build kqp.ko for the bench kernel NAME (see
# kernel-info.sh), boot that kernel under QEMU/TCG with the host's root over
# 9p and Soft-RoCE inside, run the selftests (or the demo), and judge the
# results: TAP counts, kernel splats in the guest's dmesg, kmemleak reports
# naming kqp, in every mode.  Prints "NAME: N passed, N failed" last and writes the counts
# to build/vm/NAME/counts.  Never hangs: the boot has a deadline (one
# retry), the guest a timeout, every test a timeout.
#
# --pair boots two guests of NAME instead, a and b, joined by a QEMU link
# (UDP on the host's loopback, two free ports picked per boot), each with
# rxe0 on its eth0, and runs tools/testing/vm/pair.sh in both: the tests
# across two hosts.  Results in build/vm/NAME-pair/ (out/a, out/b, and
# out/rv where the guests meet); each guest's log is judged as one
# guest's is.
#
# KQP_VM_DIR=DIR: results in build/vm/DIR instead of build/vm/NAME, for a
# --script run that must not overwrite the suite's results on NAME (make
# check's package step, tools/testing/check-deb.sh).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
mode=test
script=
case "${1:-}" in
--demo)
	mode=demo
	shift ;;
--script)
	mode=script
	script=$(realpath "$2")
	shift 2 ;;
--pair)
	mode=pair
	shift ;;
esac
name=${1:?usage: run.sh [--demo | --script FILE | --pair] NAME}
# KQP_TESTS="prog ...": run only these of the tests list (a developer's
# shortcut; make check runs them all).  With --pair: these of pair.sh's
# tests.
only=$(echo "${KQP_TESTS:-}" | tr ' ' ',')

BOOT_DEADLINE=${KQP_BOOT_DEADLINE:-180}
# The debug kernel (KASAN, lockdep) runs the suite several times slower.
if [ "$name" = debug ]; then
	GUEST_TIMEOUT=${KQP_GUEST_TIMEOUT:-3000}
elif [ "$mode" = pair ]; then
	# 921 s measured on 6.12 on a quiet host; pair.sh's own timeout in
	# the guests is 2400 s.
	GUEST_TIMEOUT=${KQP_GUEST_TIMEOUT:-2700}
else
	GUEST_TIMEOUT=${KQP_GUEST_TIMEOUT:-1800}
fi

info=$("$here/kernel-info.sh" "$name") || exit 1
eval "$info"

work=$repo/build/vm/${KQP_VM_DIR:-$name}
[ "$mode" = pair ] && work=$repo/build/vm/${KQP_VM_DIR:-$name-pair}
out=$work/out
mkdir -p "$work"
rm -rf "$out"
mkdir -p "$out"
host_tap=$out/tap/99-host.tap
mkdir -p "$out/tap"
: > "$host_tap"
host_n=0
host_check() {
	host_n=$((host_n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $host_n $2" >> "$host_tap"
	else
		echo "not ok $host_n $2" >> "$host_tap"
		echo "$name: FAILED: $2"
	fi
}

finish() {
	echo "1..$host_n" >> "$host_tap"
	# The programs that took longest (guest.sh's times), for CI's budget.
	if [ -s "$out/times" ]; then
		echo "$name: slowest (s): $(sort -rn "$out/times" | head -n 8 |
			awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1 }')"
		echo "$name: all programs took $(awk '{ t += $1 } END { print t }' "$out/times") s"
	fi
	shopt -s nullglob
	read -r pass fail skip < <("$here/tapsum.sh" "$out"/tap/*.tap \
		"$out"/[ab]/tap/*.tap)
	echo "$pass $fail $skip" > "$work/counts"
	[ "$skip" -eq 0 ] || echo "$name: $skip skipped"
	echo "$name: $pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
}

echo "$name: kernel $KVER"

# kqp.ko for this kernel, in a build directory of its own, W=1 clean.
kmod=$repo/build/kmod/$name
make -s -C "$repo" module KDIR="$KDIR" MODDIR="$kmod" W=1 \
	> "$work/kbuild.log" 2>&1
rc=$?
# Any warning: the compiler's "warning:" and modpost's "WARNING:" (an
# export whose version generation failed makes a kqp.ko that every ULP
# built against it fails to load into).
if [ $rc -eq 0 ] && grep -Eiq '(^|[^a-z])warning:' "$work/kbuild.log"; then
	rc=1
fi
[ $rc -eq 0 ] || cat "$work/kbuild.log"
host_check $rc "kqp.ko builds for $KVER with W=1 and no warnings"
[ $rc -eq 0 ] || finish
# Built from the sources alone: an in-tree build's objects, linked into
# the farm, once made a 6.12-rt kqp.ko of 6.12's objects.
stray=$(find "$kmod/kernel" "$kmod/include" -type l ! -name '*.[ch]')
[ -z "$stray" ] || echo "$stray" | sed 's/^/# linked, not built: /'
host_check "$([ -z "$stray" ]; echo $?)" "kqp.ko's build directory links only sources"

# The sample ULP, against that kqp.ko's Module.symvers, in build/kmod/NAME/ulp.
# From scratch: kbuild does not notice that the Module.symvers it was
# linked against changed, and a kqp_ulp.ko with the old CRCs fails to load.
rm -rf "$kmod/ulp"
make -s -C "$repo/tools/testing/selftests/kqp/ulp" KDIR="$KDIR" \
	MODDIR="$kmod/ulp" KQP_SYMVERS="$kmod/Module.symvers" W=1 \
	> "$work/ulp-kbuild.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -Eiq '(^|[^a-z])warning:' "$work/ulp-kbuild.log"; then
	rc=1
fi
[ $rc -eq 0 ] || cat "$work/ulp-kbuild.log"
host_check $rc "kqp_ulp.ko builds for $KVER against kqp's Module.symvers with W=1 and no warnings"

# Initramfs with whatever a 9p root needs on this kernel; made again when
# the kernel behind NAME changed (its modules would not load in another).
initrd=$work/initrd.gz
if [ ! -e "$initrd" ] || [ "$here/init" -nt "$initrd" ] ||
   [ "$here/mkinitramfs.sh" -nt "$initrd" ] ||
   [ "$(cat "$work/initrd.kver" 2>/dev/null)" != "$KVER" ]; then
	"$here/mkinitramfs.sh" "$KVER" "$MODROOT" "$initrd" || {
		host_check 1 "initramfs for $KVER"
		finish
	}
	echo "$KVER" > "$work/initrd.kver"
fi

# launch DIR APPEND [QEMU ARGS...]: one guest in the background, its
# console in DIR/console.log, its pid in $!.  tsc=reliable: under TCG on
# a busy host, the clocksource watchdog takes a descheduled vCPU for a
# skewed TSC, marks it unstable some seconds after boot and moves
# timekeeping to the emulated HPET, where every clock read (ktime_get(),
# a vDSO clock_gettime()) is an emulated device access.  Runs then
# measured different clocks depending on when the switch came, and the
# switch itself patches sched_clock's static key on a live guest.
launch() {
	local dir=$1 app=$2
	shift 2
	timeout -k 10 "$GUEST_TIMEOUT" qemu-system-x86_64 \
		-accel tcg,thread=multi -cpu max -smp 2 -m 2G \
		-nodefaults -no-reboot -display none -monitor none \
		-serial "file:$dir/console.log" \
		-kernel "$VMLINUZ" -initrd "$initrd" \
		-append "console=ttyS0 quiet panic=-1 tsc=reliable $APPEND kqp_out=$out kqp_repo=$repo kqp_guest=$here/guest.sh kqp_kmod=$kmod/kqp.ko kqp_mode=$mode kqp_script=$script kqp_tests=$only kqp_bench=$name kqp_pair_reference=${KQP_PAIR_REFERENCE:-1} $app" \
		-fsdev local,id=root,path=/,readonly=on,multidevs=remap,security_model=none \
		-device virtio-9p-pci,fsdev=root,mount_tag=hostroot \
		-fsdev "local,id=out,path=$out,security_model=none" \
		-device virtio-9p-pci,fsdev=out,mount_tag=results \
		"$@" > "$dir/qemu.log" 2>&1 &
}

# await_boot FILE PID...: until FILE exists for every PID given as
# FILE PID pairs; fails at the boot deadline or when a QEMU exits.
await_boot() {
	local t=0 f p all
	while :; do
		all=1
		set -- "${guests[@]}"
		while [ $# -gt 0 ]; do
			f=$1 p=$2
			shift 2
			kill -0 "$p" 2>/dev/null || return 1
			[ -e "$f" ] || all=0
		done
		[ $all -eq 1 ] && break
		[ $t -ge "$BOOT_DEADLINE" ] && return 1
		sleep 1
		t=$((t + 1))
	done
	echo "$name: guest reached userspace in ${t}s"
}

kill_guests() {
	local f p
	set -- "${guests[@]}"
	while [ $# -gt 0 ]; do
		f=$1 p=$2
		shift 2
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
}

boot() {
	rm -f "$out/booted" "$out/done" "$out/console.log"
	launch "$out" ""
	qemu=$!
	guests=("$out/booted" "$qemu")
	if ! await_boot; then
		kill_guests
		return 1
	fi
	wait "$qemu"
	qemu_rc=$?
	return 0
}

# Two UDP ports on the host's loopback that nothing holds: QEMU binds
# each guest's own, so a port taken meanwhile fails that boot, and the
# retry picks others.
free_ports() {
	local p
	while :; do
		p=$((20000 + RANDOM % 40000))
		ss -Hanu "( sport = :$p or sport = :$((p + 1)) )" 2>/dev/null |
			grep -q . || break
	done
	echo "$p $((p + 1))"
}

# The two guests: a (198.51.100.1) and b (198.51.100.2), each's eth0 the
# other's.  Their pids in $qemu_a and $qemu_b.
boot_pair() {
	local pa pb
	rm -rf "$out/a" "$out/b" "$out/rv"
	mkdir -p "$out/a" "$out/b" "$out/rv"
	read -r pa pb < <(free_ports)
	echo "$name: guests a and b on 127.0.0.1 UDP ports $pa and $pb"
	launch "$out/a" "kqp_role=a" \
		-netdev "socket,id=n0,udp=127.0.0.1:$pb,localaddr=127.0.0.1:$pa" \
		-device virtio-net-pci,netdev=n0,mac=52:54:00:4b:51:0a
	qemu_a=$!
	launch "$out/b" "kqp_role=b" \
		-netdev "socket,id=n0,udp=127.0.0.1:$pa,localaddr=127.0.0.1:$pb" \
		-device virtio-net-pci,netdev=n0,mac=52:54:00:4b:51:0b
	qemu_b=$!
	guests=("$out/a/booted" "$qemu_a" "$out/b/booted" "$qemu_b")
	if ! await_boot; then
		kill_guests
		return 1
	fi
	# A guest that died (a panic, its timeout) cannot say it left: say it
	# for it, so that the other one's waits end now (pair.sh's gone.ROLE).
	while kill -0 "$qemu_a" 2>/dev/null || kill -0 "$qemu_b" 2>/dev/null; do
		kill -0 "$qemu_a" 2>/dev/null || [ -e "$out/rv/gone.a" ] ||
			echo host > "$out/rv/gone.a"
		kill -0 "$qemu_b" 2>/dev/null || [ -e "$out/rv/gone.b" ] ||
			echo host > "$out/rv/gone.b"
		sleep 1
	done
	wait "$qemu_a"
	qemu_rc_a=$?
	wait "$qemu_b"
	qemu_rc_b=$?
	return 0
}

start=$(date +%s)
boot_fn=boot
[ "$mode" = pair ] && boot_fn=boot_pair
if ! $boot_fn; then
	echo "$name: boot deadline (${BOOT_DEADLINE}s) missed; console:"
	for d in "$out" "$out"/[ab]; do
		[ -e "$d/console.log" ] || continue
		tail -n 40 "$d/console.log"
		mv "$d/console.log" "$work/console-boot1${d#"$out"}.log" 2>/dev/null
	done
	echo "$name: retrying the boot once (first console kept in $work/console-boot1*.log)"
	if ! $boot_fn; then
		echo "$name: boot deadline missed again; console:"
		for d in "$out" "$out"/[ab]; do
			[ -e "$d/console.log" ] && tail -n 60 "$d/console.log"
		done
		host_check 1 "guest boots within ${BOOT_DEADLINE}s"
		finish
	fi
fi
echo "$name: guest ran $(( $(date +%s) - start ))s"

# judge DIR QEMU_RC WHO: did the guest whose results are in DIR finish,
# and is its log clean (splats, kmemleak)?  WHO names it in the TAP lines.
judge() {
	local dir=$1 qrc=$2 who=$3 log rc
	rc=0
	[ -e "$dir/done" ] || rc=1
	if [ $rc -ne 0 ]; then
		[ "$qrc" -eq 124 ] &&
			echo "$name: $who timed out after ${GUEST_TIMEOUT}s: killed"
		echo "$name: $who did not finish; console:"
		tail -n 80 "$dir/console.log"
	fi
	host_check $rc "$who ran to the end"

	# Kernel splats anywhere in the guest's log.  A failed allocation's
	# report (warn_alloc(): "page allocation failure", "vmalloc error",
	# with a stack dump) is not one: fail_nth provokes them on purpose,
	# in rxe's code too, and what a failure breaks shows up as a splat or
	# a leak of its own.  Nor is a user program's fault ("traps: PROG[PID]
	# general protection fault ... in LIB"): that program's test fails.
	log=$dir/dmesg
	[ -s "$log" ] || log=$dir/console.log
	awk '/\] traps: [^ ]+\[[0-9]+\] / { next }
	     /(page allocation failure|vmalloc error): / { skip = 1; n++ }
	     !skip { print }
	     skip && /<\/TASK>/ { skip = 0 }
	     END { if (n) printf "%d allocation failure reports left out\n", n > "/dev/stderr" }' \
		"$log" > "$dir/dmesg.checked"
	log=$dir/dmesg.checked
	rm -f "$dir/splat"
	rc=0
	if grep -Eq "$splats" "$log"; then
		rc=1
		echo "$name: kernel splat in the $who:"
		grep -E -B 5 -A 30 "$splats" "$log" | head -n 200
		# The first one again, for check.sh's summary (CI keeps
		# only the end of the output).
		grep -E -m 1 -A 24 "$splats" "$log" > "$dir/splat"
	fi
	host_check $rc "no kernel splat in the $who's dmesg"

	# kmemleak (debug kernel): any leak whose backtrace names kqp.
	if [ -e "$dir/kmemleak" ]; then
		rc=0
		if awk 'BEGIN { RS = "unreferenced object" } NR > 1 && /kqp/ { found = 1 } END { exit !found }' "$dir/kmemleak"; then
			rc=1
			echo "$name: kmemleak reports leaks from kqp in the $who:"
			head -n 100 "$dir/kmemleak"
		fi
		host_check $rc "kmemleak: nothing leaked by kqp$([ "$who" = guest ] || echo " in $who")"
	fi
}

splats='WARNING:|BUG:|KASAN:|UBSAN:|KFENCE:|Oops|general protection|possible circular locking|possible recursive locking|inconsistent lock state|suspicious RCU usage|refcount_t|blocked for more than|Kernel panic|Call Trace:|cm_destroy_id_wait_timeout|kqp: the device refused'
if [ "$mode" = pair ]; then
	judge "$out/a" "$qemu_rc_a" "guest a"
	judge "$out/b" "$qemu_rc_b" "guest b"
	for d in a b; do
		echo "--- guest $d:"
		cat "$out/$d/guest.log"
	done
	finish
fi
judge "$out" "$qemu_rc" guest

# The demo, the bench and make fuzz: their script's verdict too.
if [ "$mode" != test ]; then
	cat "$out/guest.log"
	rc=1
	[ -r "$out/$mode.rc" ] && rc=$(cat "$out/$mode.rc")
	host_check "$rc" "$mode"
fi

finish
