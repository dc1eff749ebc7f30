#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# tapsum.sh FILE...: count the top-level TAP results in each file and print
# "PASS FAIL SKIP".  A stream whose plan does not match what it reported
# (the program crashed or timed out) counts one more failure, as does a
# program whose exit status (FILE with .rc for .tap) says it failed.
set -uo pipefail

pass=0 fail=0 skip=0
for f in "$@"; do
	read -r p x s planned seen < <(awk '
		/^ok [0-9]+/ && /# *SKIP/ { s++; seen++; next }
		/^ok [0-9]+/ { p++; seen++; next }
		/^not ok [0-9]+/ { x++; seen++; next }
		/^1\.\.[0-9]+/ { split($1, a, "\\.\\."); planned = a[2] }
		END { printf "%d %d %d %d %d\n", p, x, s, planned == "" ? -1 : planned, seen }
	' "$f")
	rcfile=${f%.tap}.rc
	rc=0
	[ -r "$rcfile" ] && rc=$(cat "$rcfile")
	if [ "$planned" -ne "$seen" ]; then
		echo "tapsum: $(basename "$f"): planned $planned, reported $seen (exit $rc)" >&2
		x=$((x + 1))
	elif [ "$rc" -ne 0 ] && [ "$x" -eq 0 ] && [ "$rc" -ne 4 ]; then
		# 4 is KSFT_SKIP: everything was skipped.
		echo "tapsum: $(basename "$f"): exit status $rc" >&2
		x=$((x + 1))
	fi
	pass=$((pass + p)) fail=$((fail + x)) skip=$((skip + s))
done
echo "$pass $fail $skip"
