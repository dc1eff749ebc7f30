#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# mkinitramfs.sh KVER MODROOT OUT: a busybox initramfs that loads what a
# 9p root needs (nothing when MODROOT is empty: all built in) and runs
# ./init.  Modules are stored decompressed: busybox insmod cannot read .xz.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
kver=$1
modroot=$2
out=$3

busybox=/bin/busybox
# ldd fails on a static executable.
! ldd "$busybox" > /dev/null 2>&1 ||
	{ echo "mkinitramfs: $busybox is not static (apt install busybox-static)" >&2; exit 1; }

work=$(mktemp -d "${out}.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work"/{bin,dev,proc,sys,newroot,lib/modules}
cp "$busybox" "$work/bin/busybox"
cp "$here/init" "$work/init"
chmod +x "$work/init"

: > "$work/modules"
if [ -n "$modroot" ]; then
	# virtio transport first, then the 9p client; modprobe takes one
	# module per call (further names are read as parameters).
	for m in virtio_pci 9pnet_virtio 9p; do
		modprobe -S "$kver" --show-depends "$m"
	done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' |
	while read -r ko; do
		base=$(basename "$ko")
		base=${base%.xz}
		case "$ko" in
		*.xz) xz -dc "$ko" > "$work/lib/modules/$base" ;;
		*) cp "$ko" "$work/lib/modules/$base" ;;
		esac
		echo "$base" >> "$work/modules"
	done
fi

(cd "$work" && find . | cpio -o -H newc --quiet) | gzip -1 > "$out.tmp"
mv "$out.tmp" "$out"
