#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# version-check.sh: the top Makefile's VERSION is kqp's one version
# number; dkms.conf's PACKAGE_VERSION, lib/Makefile's default and
# debian/changelog's newest entry (a native package: no Debian revision)
# must say the same.  kqp.pc is made from VERSION by lib/Makefile.  Run by
# debian/rules before it builds, so no package can come out with a
# version that disagrees.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
version=$(sed -n 's/^VERSION := //p' "$top/Makefile")
rc=0
same() {
	if [ "$2" != "$version" ]; then
		echo "version-check: $1 says '$2', the Makefile's VERSION is '$version'" >&2
		rc=1
	fi
}
same dkms.conf "$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$top/dkms.conf")"
same lib/Makefile "$(sed -n 's/^VERSION ?= //p' "$top/lib/Makefile")"
same debian/changelog "$(sed -n '1s/^kqp (\([^)]*\)).*/\1/p' "$top/debian/changelog")"
[ $rc -ne 0 ] || echo "version-check: $version everywhere"
exit $rc
