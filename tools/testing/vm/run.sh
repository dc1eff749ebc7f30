#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# run.sh [--demo | --script FILE] NAME: build kqp.ko for the bench kernel NAME (see
# kernel-info.sh), boot that kernel under QEMU/TCG with the host's root over
# 9p and Soft-RoCE inside, run the selftests (or the demo), and judge the
# results: TAP counts, kernel splats in the guest's dmesg, kmemleak reports
# naming kqp, in every mode.  Prints "NAME: N passed, N failed" last and writes the counts
# to build/vm/NAME/counts.  Never hangs: the boot has a deadline (one
# retry), the guest a timeout, every test a timeout.
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
esac
name=${1:?usage: run.sh [--demo | --script FILE] NAME}
# KQP_TESTS="prog ...": run only these of the tests list (a developer's
# shortcut; make check runs them all).
only=$(echo "${KQP_TESTS:-}" | tr ' ' ',')

BOOT_DEADLINE=${KQP_BOOT_DEADLINE:-180}
# The debug kernel (KASAN, lockdep) runs the suite several times slower.
if [ "$name" = debug ]; then
	GUEST_TIMEOUT=${KQP_GUEST_TIMEOUT:-3000}
else
	GUEST_TIMEOUT=${KQP_GUEST_TIMEOUT:-1800}
fi

info=$("$here/kernel-info.sh" "$name") || exit 1
eval "$info"

work=$repo/build/vm/$name
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
	read -r pass fail skip < <("$here/tapsum.sh" "$out"/tap/*.tap)
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
if [ $rc -eq 0 ] && grep -q 'warning:' "$work/kbuild.log"; then
	rc=1
fi
[ $rc -eq 0 ] || cat "$work/kbuild.log"
host_check $rc "kqp.ko builds for $KVER with W=1 and no warnings"
[ $rc -eq 0 ] || finish

# The sample ULP, against that kqp.ko's Module.symvers, in build/kmod/NAME/ulp.
make -s -C "$repo/tools/testing/selftests/kqp/ulp" KDIR="$KDIR" \
	MODDIR="$kmod/ulp" KQP_SYMVERS="$kmod/Module.symvers" W=1 \
	> "$work/ulp-kbuild.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q 'warning:' "$work/ulp-kbuild.log"; then
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

boot() {
	rm -f "$out/booted" "$out/done" "$out/console.log"
	timeout -k 10 "$GUEST_TIMEOUT" qemu-system-x86_64 \
		-accel tcg,thread=multi -cpu max -smp 2 -m 2G \
		-nodefaults -no-reboot -display none -monitor none \
		-serial "file:$out/console.log" \
		-kernel "$VMLINUZ" -initrd "$initrd" \
		-append "console=ttyS0 quiet panic=-1 $APPEND kqp_out=$out kqp_repo=$repo kqp_guest=$here/guest.sh kqp_kmod=$kmod/kqp.ko kqp_mode=$mode kqp_script=$script kqp_tests=$only kqp_bench=$name" \
		-fsdev local,id=root,path=/,readonly=on,multidevs=remap,security_model=none \
		-device virtio-9p-pci,fsdev=root,mount_tag=hostroot \
		-fsdev "local,id=out,path=$out,security_model=none" \
		-device virtio-9p-pci,fsdev=out,mount_tag=results \
		> "$work/qemu.log" 2>&1 &
	qemu=$!
	local t=0
	while [ ! -e "$out/booted" ]; do
		if ! kill -0 "$qemu" 2>/dev/null || [ $t -ge "$BOOT_DEADLINE" ]; then
			kill "$qemu" 2>/dev/null
			wait "$qemu" 2>/dev/null
			return 1
		fi
		sleep 1
		t=$((t + 1))
	done
	echo "$name: guest reached userspace in ${t}s"
	wait "$qemu"
	qemu_rc=$?
	return 0
}

start=$(date +%s)
if ! boot; then
	echo "$name: boot deadline (${BOOT_DEADLINE}s) missed; console:"
	tail -n 40 "$out/console.log" 2>/dev/null
	mv "$out/console.log" "$out/console-boot1.log" 2>/dev/null
	echo "$name: retrying the boot once (first console kept in console-boot1.log)"
	if ! boot; then
		echo "$name: boot deadline missed again; console:"
		tail -n 60 "$out/console.log" 2>/dev/null
		host_check 1 "guest boots within ${BOOT_DEADLINE}s"
		finish
	fi
fi
echo "$name: guest ran $(( $(date +%s) - start ))s"

rc=0
[ -e "$out/done" ] || rc=1
if [ $rc -ne 0 ]; then
	[ "$qemu_rc" -eq 124 ] && echo "$name: guest timed out after ${GUEST_TIMEOUT}s"
	echo "$name: guest did not finish; console:"
	tail -n 80 "$out/console.log"
fi
host_check $rc "guest ran to the end"

# Kernel splats anywhere in the guest's log.  A failed allocation's report
# (warn_alloc(): "page allocation failure", "vmalloc error", with a stack
# dump) is not one: fail_nth provokes them on purpose, in rxe's code too,
# and what a failure breaks shows up as a splat or a leak of its own.
splats='WARNING:|BUG:|KASAN:|UBSAN:|KFENCE:|Oops|general protection|possible circular locking|possible recursive locking|inconsistent lock state|suspicious RCU usage|refcount_t|blocked for more than|Kernel panic|Call Trace:|cm_destroy_id_wait_timeout|kqp: the device refused'
log=$out/dmesg
[ -s "$log" ] || log=$out/console.log
awk '/(page allocation failure|vmalloc error): / { skip = 1; n++ }
     !skip { print }
     skip && /<\/TASK>/ { skip = 0 }
     END { if (n) printf "%d allocation failure reports left out\n", n > "/dev/stderr" }' \
	"$log" > "$work/dmesg.checked"
log=$work/dmesg.checked
rc=0
if grep -Eq "$splats" "$log"; then
	rc=1
	echo "$name: kernel splat in the guest:"
	grep -E -B 5 -A 30 "$splats" "$log" | head -n 200
fi
host_check $rc "no kernel splat in the guest's dmesg"

# kmemleak (debug kernel): any leak whose backtrace names kqp.
if [ -e "$out/kmemleak" ]; then
	rc=0
	if awk 'BEGIN { RS = "unreferenced object" } NR > 1 && /kqp/ { found = 1 } END { exit !found }' "$out/kmemleak"; then
		rc=1
		echo "$name: kmemleak reports leaks from kqp:"
		head -n 100 "$out/kmemleak"
	fi
	host_check $rc "kmemleak: nothing leaked by kqp"
fi

# The demo, the bench and make fuzz: their script's verdict too.
if [ "$mode" != test ]; then
	cat "$out/guest.log"
	rc=1
	[ -r "$out/$mode.rc" ] && rc=$(cat "$out/$mode.rc")
	host_check "$rc" "$mode"
fi

finish
