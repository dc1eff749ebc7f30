#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# kernel-info.sh NAME: how the bench finds the kernel called NAME.  Prints
# shell assignments for:
#   KVER      its release string
#   VMLINUZ   the image QEMU boots
#   KDIR      the build directory kqp.ko is built against
#   MODROOT   /lib/modules/KVER when its modules are installed there, or
#             empty when everything the guest needs is built in
#   APPEND    extra kernel command line
#
# Adding a kernel to the bench is one line here plus its name in KERNELS.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
name=${1:?usage: kernel-info.sh NAME}

# Where Debian installs kernels (moved only by kernel-info-test.sh).
modules=${KQP_MODULES_DIR:-/lib/modules}
boot=${KQP_BOOT_DIR:-/boot}

# Newest installed Debian kernel whose release starts with $1 and ends in
# $2: "-amd64" for the generic flavour, which a release ending in
# "-rt-amd64" (PREEMPT_RT) must never stand in for, nor the reverse.
debian() {
	local kver
	kver=$(ls "$modules" 2>/dev/null | grep -E "^$1[.-]" |
	       grep -E "[0-9]$2\$" | sort -V | tail -n 1)
	if [ -z "$kver" ] || [ ! -e "$boot/vmlinuz-$kver" ] ||
	   [ ! -e "$modules/$kver/build" ]; then
		echo "kernel-info: no Debian $1 kernel (flavour $2) with headers installed (make deps)" >&2
		exit 1
	fi
	echo "KVER='$kver'"
	echo "VMLINUZ='$boot/vmlinuz-$kver'"
	echo "KDIR='$modules/$kver/build'"
	echo "MODROOT='$modules/$kver'"
	echo "APPEND=''"
}

case "$name" in
6.1)	debian 6.1 -amd64 ;;
6.12)	debian 6.12 -amd64 ;;
6.12-rt) debian 6.12 -rt-amd64 ;;
debug)
	kdir=$("$here/build-debug-kernel.sh")
	echo "KVER='$(make -s -C "$kdir" kernelrelease)'"
	echo "VMLINUZ='$kdir/arch/x86/boot/bzImage'"
	echo "KDIR='$kdir'"
	echo "MODROOT=''"
	# acpi=noirq: SeaBIOS's _PRT loop times out on this slow kernel.
	# no5lvl: 5-level paging gives false KASAN reports in early boot.
	# kasan_multi_shot: report every bad access, not only the first.
	echo "APPEND='acpi=noirq no5lvl kasan_multi_shot'"
	;;
*)	echo "kernel-info: unknown kernel '$name'" >&2; exit 1 ;;
esac
