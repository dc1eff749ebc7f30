#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# dkms.sh install|uninstall|check|sources VERSION [DEST]
#   sources    copy the module's sources, as install does, to DEST (the
#              kqp-dkms package's /usr/src/kqp-VERSION: debian/rules)
#   install    copy the module's sources (with include/linux/kqp.h, the
#              kernel API's header) to /usr/src/kqp-VERSION and dkms
#              install them for the running kernel (or every kernel with
#              headers, via AUTOINSTALL); each build keeps its
#              Module.symvers in /var/lib/dkms/kqp/VERSION/KVER/ARCH
#   uninstall  dkms remove kqp/VERSION and delete the sources
#   check      dkms add, build for each Debian test kernel, and remove a
#              copy of the tree under a version of its own; prints TAP
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
usage="usage: dkms.sh install|uninstall|check VERSION | sources VERSION DEST"
action=${1:?$usage}
version=${2:?$usage}

# What dkms needs to build the module, and nothing else.
copy_sources() {
	local dest=$1
	mkdir -p "$dest/tools"
	cp -r "$top/Kbuild" "$top/Makefile" "$top/dkms.conf" "$top/kernel" \
		"$top/include" "$dest/"
	# Not an in-tree build's objects and .cmd files (as the Makefile's farm).
	find "$dest/kernel" "$dest/include" -type f ! -name '*.[ch]' -delete
	cp "$top/tools/kdir.sh" "$top/tools/dkms-post-build.sh" "$dest/tools/"
}

case "$action" in
sources)
	copy_sources "${3:?$usage}"
	;;
install)
	src=/usr/src/kqp-$version
	rm -rf "$src"
	copy_sources "$src"
	dkms add "kqp/$version" &&
	dkms install "kqp/$version"
	;;
uninstall)
	dkms remove "kqp/$version" --all
	rm -rf "/usr/src/kqp-$version"
	;;
check)
	# A version of its own, so an installed kqp is never touched.
	cver=$version.check$$
	tmp=$(mktemp -d /var/tmp/kqp-dkms.XXXXXX)
	trap 'dkms remove "kqp/$cver" --all > /dev/null 2>&1; rm -rf "$tmp" "/usr/src/kqp-$cver"' EXIT
	copy_sources "$tmp/kqp"
	sed -i "s/^PACKAGE_VERSION=.*/PACKAGE_VERSION=\"$cver\"/" "$tmp/kqp/dkms.conf"
	# shellcheck source=tools/testing/selftests/kqp/lib.sh
	. "$top/tools/testing/selftests/kqp/lib.sh"
	# An in-tree build's objects and .cmd files are not sources.
	stray=$(find "$tmp/kqp/kernel" "$tmp/kqp/include" -type f ! -name '*.[ch]')
	[ -z "$stray" ] || echo "$stray" | sed 's/^/# copied, not a source: /'
	tap "$([ -z "$stray" ]; echo $?)" "dkms sources hold only sources"
	dkms add "$tmp/kqp" > "$tmp/log" 2>&1
	rc=$?
	[ $rc -eq 0 ] || KQP_SHOW_LINES=100000 show "$tmp/log"
	tap $rc "dkms add"
	for k in 6.1 6.12; do
		eval "$("$top/tools/testing/vm/kernel-info.sh" "$k")" || { tap 1 "dkms build -k $k"; continue; }
		dkms build "kqp/$cver" -k "$KVER" > "$tmp/log" 2>&1
		rc=$?
		[ $rc -ne 0 ] || ls "/var/lib/dkms/kqp/$cver/$KVER/x86_64/module/"kqp.ko* > /dev/null 2>&1 || rc=1
		[ $rc -eq 0 ] || KQP_SHOW_LINES=100000 show "$tmp/log"
		tap $rc "dkms build -k $KVER"
		grep -q "kqp_create_qp" "/var/lib/dkms/kqp/$cver/$KVER/x86_64/Module.symvers" 2> /dev/null
		tap $? "dkms build -k $KVER keeps kqp's Module.symvers for kernel ULPs"
	done
	dkms remove "kqp/$cver" --all > "$tmp/log" 2>&1
	rc=$?
	[ $rc -ne 0 ] || [ ! -e "/var/lib/dkms/kqp/$cver" ] || rc=1
	[ $rc -eq 0 ] || KQP_SHOW_LINES=100000 show "$tmp/log"
	tap $rc "dkms remove"
	echo "1..$kqp_n"
	;;
*)
	echo "dkms.sh: unknown action $action" >&2
	exit 2
	;;
esac
