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

# tap, show and the rest of what kqp's scripts share.
# shellcheck source=tools/testing/selftests/kqp/lib.sh
. "$top/tools/testing/selftests/kqp/lib.sh"

list=$(named)
if [ -z "$list" ]; then
	tap 1 "the README has a Layout section"
	echo "1..1"
	exit 1
fi

gone=$(while read -r p; do [ -e "$top/$p" ] || echo "$p"; done <<< "$list")
tap "$([ -z "$gone" ]; echo $?)" "every path the README's Layout names exists"
# shellcheck disable=SC2086 # a word per path: paths here have no spaces
[ -z "$gone" ] || printf 'named, but not in the tree: %s\n' $gone | show

left=$(sources | grep -vxF -f <(printf '%s\n' "$list"))
tap "$([ -z "$left" ]; echo $?)" \
	"the README's Layout names every source file of kernel/ and lib/"
# shellcheck disable=SC2086 # as above
[ -z "$left" ] || printf 'not named: %s\n' $left | show
echo "1..2"
exit $kqp_failed
