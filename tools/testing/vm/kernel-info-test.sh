#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# kernel-info-test.sh: kernel-info.sh's names are exact.  In a made-up
# /lib/modules and /boot with generic and PREEMPT_RT kernels side by side,
# "6.1" and "6.12" must name the newest generic kernel of their series,
# never an RT one however new, and "6.12-rt" the newest RT one.  Prints TAP.
set -u

here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export KQP_MODULES_DIR=$work/modules KQP_BOOT_DIR=$work/boot
mkdir -p "$KQP_BOOT_DIR"
for k in 6.1.0-57-amd64 6.1.0-60-rt-amd64 6.12.99+deb12-amd64 \
	 6.12.117+deb12-amd64 6.12.200+deb12-rt-amd64 6.12.117+deb12-cloud-amd64; do
	mkdir -p "$KQP_MODULES_DIR/$k/build"
	touch "$KQP_BOOT_DIR/vmlinuz-$k"
done

n=0
expect() {
	local name=$1 want=$2 got
	n=$((n + 1))
	got=$("$here/kernel-info.sh" "$name" 2>/dev/null | sed -n "s/^KVER='\\(.*\\)'\$/\\1/p")
	if [ "$got" = "$want" ]; then
		echo "ok $n kernel-info.sh $name is $want"
	else
		echo "not ok $n kernel-info.sh $name is $want (got '${got}')"
	fi
}

echo "TAP version 13"
echo "1..3"
expect 6.1 6.1.0-57-amd64
expect 6.12 6.12.117+deb12-amd64
expect 6.12-rt 6.12.200+deb12-rt-amd64
