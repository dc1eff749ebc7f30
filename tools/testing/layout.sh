#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# layout.sh [README]: does the README's Layout section name the tree as it
# is?  TAP, two tests: every path the section names exists, and every
# source file of kernel/ and lib/ (*.c, *.h, *.map, as git tracks them) is
# named.  make check runs it on the host.
#
# The section is the fenced block after "## Layout".  A line that starts
# with a space continues the description above it.  Otherwise its first
# column (up to two spaces) lists paths separated by ", ": "kernel/pd.h,
# cq.h" names kernel/pd.h and kernel/cq.h.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
readme=${1:-$top/README.md}

# The paths the section names, one per line.
named() {
	awk '
	/^## Layout/ { sec = 1; next }
	sec && /^```/ { if (inblk) exit; inblk = 1; next }
	!inblk || /^[ \t]/ || NF == 0 { next }
	{
		col = $0
		sub(/  .*/, "", col)
		n = split(col, p, /, */)
		dir = ""
		for (i = 1; i <= n; i++) {
			path = p[i]
			if (path !~ /\// && dir != "")
				path = dir "/" path
			else if (path ~ /\/./) {
				dir = path
				sub(/\/[^\/]*$/, "", dir)
			}
			print path
		}
	}' "$readme"
}

sources() {
	if git -C "$top" rev-parse --git-dir > /dev/null 2>&1; then
		git -C "$top" ls-files -- 'kernel/*.c' 'kernel/*.h' 'lib/*.c' \
			'lib/*.h' 'lib/*.map'
	else
		(cd "$top" && find kernel lib -maxdepth 1 -type f \
			\( -name '*.c' -o -name '*.h' -o -name '*.map' \) \
			! -name '*.mod.c' | sort)
	fi
}

list=$(named)
if [ -z "$list" ]; then
	echo "not ok 1 the README has a Layout section"
	echo "1..1"
	exit 1
fi

fail=0
gone=$(while read -r p; do [ -e "$top/$p" ] || echo "$p"; done <<< "$list")
if [ -z "$gone" ]; then
	echo "ok 1 every path the README's Layout names exists"
else
	echo "not ok 1 every path the README's Layout names exists"
	while read -r p; do echo "# named, but not in the tree: $p"; done <<< "$gone"
	fail=1
fi

left=$(sources | grep -vxF -f <(printf '%s\n' "$list"))
if [ -z "$left" ]; then
	echo "ok 2 the README's Layout names every source file of kernel/ and lib/"
else
	echo "not ok 2 the README's Layout names every source file of kernel/ and lib/"
	while read -r p; do echo "# not named: $p"; done <<< "$left"
	fail=1
fi
echo "1..2"
exit $fail
