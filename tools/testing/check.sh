#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# make check: the whole kqp suite.  Host-side tests first (the build, dkms,
# libkqp's symbols against rdma-core's, the README's Layout against the
# tree, the library without a module, the
# Debian packages with their own 6.12 guest: tools/testing/check-deb.sh),
# then the VM suite on every kernel in $KERNELS, and on those of them in
# $PAIR_KERNELS the two-guest tests too (run.sh --pair).  The last line is
# "N passed, N failed", summed over all of it; the exit status is non-zero
# on any failure.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
vm=$top/tools/testing/vm
KERNELS=${KERNELS:-6.1 6.12 6.12-rt debug}
PAIR_KERNELS=${PAIR_KERNELS:-6.1 6.12}
VERSION=${VERSION:-$(sed -n 's/^VERSION := //p' "$top/Makefile")}

# host_deps.
# shellcheck source=tools/testing/host.sh
. "$top/tools/testing/host.sh" check
host_deps || { echo "check: make deps failed"; echo "0 passed, 1 failed"; exit 1; }

host=$top/build/host
rm -rf "$host"
mkdir -p "$host/tap"

# A new machine builds the debug kernel first (about 18 minutes on 2
# idle cores).  It builds in the background while the host tests and the
# other kernels' guests run, whose CPUs are idle much of the time; the
# debug guest's run.sh waits for it (the build script takes a lock).  At
# nice 19 it still slowed what ran beside it: in a fresh .ci/run the host
# tests took about 515 s instead of 330, and 6.1's guest ran 593 s where
# its tests add up to about 350.  So it runs as SCHED_IDLE as well: a
# guest thread that wakes takes the CPU from it at once.
case " $KERNELS " in
*" debug "*)
	echo "check: the debug kernel builds in the background (SCHED_IDLE; build/debug-kernel.log)"
	nice -n 19 chrt --idle 0 "$vm/build-debug-kernel.sh" \
		> "$top/build/debug-kernel.log" 2>&1 &
	;;
esac

# The library and the selftests, -Werror.
if make -s -C "$top" lib selftests > "$host/build.log" 2>&1; then
	echo "ok 1 library and selftests build with -Wall -Wextra -Werror" > "$host/tap/build.tap"
else
	cat "$host/build.log"
	echo "not ok 1 library and selftests build with -Wall -Wextra -Werror" > "$host/tap/build.tap"
fi
echo "1..1" >> "$host/tap/build.tap"

echo "check: dkms add/build/remove"
"$top/tools/dkms.sh" check "$VERSION" > "$host/tap/dkms.tap" 2>&1
grep -E '^(not )?ok' "$host/tap/dkms.tap"

# libkqp defines every symbol of the installed rdma-core, on its node.
"$top/tools/testing/selftests/kqp/symbols.sh" "$top/lib/libkqp.so.1" \
	> "$host/tap/symbols.tap" 2>&1
echo $? > "$host/tap/symbols.rc"
grep -E '^(not )?ok' "$host/tap/symbols.tap"

# The README's Layout section names the tree as it is.
"$top/tools/testing/layout.sh" > "$host/tap/layout.tap" 2>&1
grep -E '^(not )?ok' "$host/tap/layout.tap"

# The bench's kernel names are exact (a PREEMPT_RT kernel is never "6.12").
"$vm/kernel-info-test.sh" > "$host/tap/kernel-info.tap" 2>&1
grep -E '^(not )?ok' "$host/tap/kernel-info.tap"

# No /dev/kqp on the host: the library must fail cleanly with ENOENT.
if [ ! -e /dev/kqp ] && [ -x "$top/build/selftests/lib_device" ]; then
	"$top/build/selftests/lib_device" -t module_not_loaded \
		> "$host/tap/lib-no-module.tap" 2>&1
	echo $? > "$host/tap/lib-no-module.rc"
fi

# kselftest's way in, as a kernel developer would run it: on the host,
# without the bench's setup, what needs it skips and the rest passes.
rt=$host/run_tests.log
what="make -C tools/testing/selftests TARGETS=kqp run_tests on the host"
if make -s -C "$top/tools/testing/selftests" TARGETS=kqp run_tests > "$rt" 2>&1 &&
   ! grep -q '^not ok' "$rt" && grep -q '^ok .* symbols.sh$' "$rt"; then
	echo "ok 1 $what: $(grep -c '^ok ' "$rt") programs, $(grep -c '^ok .*# SKIP' "$rt") skipped"
else
	sed 's/^/# /' "$rt" | tail -n 40
	echo "not ok 1 $what"
fi > "$host/tap/run_tests.tap"
echo "1..1" >> "$host/tap/run_tests.tap"
grep -E '^(not )?ok' "$host/tap/run_tests.tap"

# The Debian packages: built, lintian, installed on the host, used in a
# 6.12 guest (its results in build/vm/6.12-deb), purged.
echo "check: the Debian packages (make deb, lintian, install, a 6.12 guest, purge)"
deb_start=$(date +%s)
"$top/tools/testing/check-deb.sh" "$host/tap" > "$host/deb.log" 2>&1
[ -s "$host/tap/deb.tap" ] ||
	printf 'not ok 1 the package check ran\n1..1\n' > "$host/tap/deb.tap"
grep -E '^(not )?ok' "$host/tap/deb.tap"
echo "check: packages took $(( $(date +%s) - deb_start )) s"

read -r hp hf hs < <("$vm/tapsum.sh" "$host"/tap/*.tap)
echo "host: $hp passed, $hf failed"
total_p=$hp total_f=$hf total_s=$hs
# Each part's wall time too: CI keeps only the end of the output, and its
# hour is spent here.
summary="host: $hp passed, $hf failed (${SECONDS} s)"

for k in $KERNELS; do
	echo
	echo "=== $k === (at ${SECONDS} s)"
	rm -f "$top/build/vm/$k/counts"
	start=$SECONDS
	"$vm/run.sh" "$k"
	if [ -r "$top/build/vm/$k/counts" ]; then
		read -r p f s < "$top/build/vm/$k/counts"
	else
		echo "$k: the runner gave no result"
		p=0 f=1 s=0
	fi
	total_p=$((total_p + p)) total_f=$((total_f + f)) total_s=$((total_s + s))
	summary+=$'\n'"$k: $p passed, $f failed ($((SECONDS - start)) s)"

	case " $PAIR_KERNELS " in *" $k "*) ;; *) continue ;; esac
	echo
	echo "=== $k, two guests === (at ${SECONDS} s)"
	rm -f "$top/build/vm/$k-pair/counts"
	start=$SECONDS
	"$vm/run.sh" --pair "$k"
	if [ -r "$top/build/vm/$k-pair/counts" ]; then
		read -r p f s < "$top/build/vm/$k-pair/counts"
	else
		echo "$k (two guests): the runner gave no result"
		p=0 f=1 s=0
	fi
	total_p=$((total_p + p)) total_f=$((total_f + f)) total_s=$((total_s + s))
	summary+=$'\n'"$k, two guests: $p passed, $f failed ($((SECONDS - start)) s)"
done

# What failed, next to the summary: CI keeps only the end of the output.
failures() {
	local label=$1 dir=$2 f
	shopt -s nullglob
	for f in "$dir"/tap/*.tap "$dir"/[ab]/tap/*.tap; do
		# Each failure with the diagnostics printed just before it
		# (the harness's "# file:line:test:..." lines, a script's
		# "# why"), at most 8 of them, for the first 5 failures.
		awk '
			/^ok [0-9]+/ { n = 0; next }
			/^not ok [0-9]+/ {
				if (++bad > 5)
					exit
				for (i = (n > 8 ? n - 8 : 0); i < n; i++)
					print "    " buf[i % 8]
				print
				n = 0
				next
			}
			/^ *#/ && !/^# *(RUN|OK|Starting)/ { buf[n % 8] = $0; n++ }
		' "$f" | sed "s|^|$label: ${f#"$dir"/}: |"
		"$vm/tapsum.sh" "$f" 2>&1 > /dev/null | sed "s|^|$label: |"
	done
	# The first kernel splat of each guest (run.sh keeps it).
	for f in "$dir"/splat "$dir"/[ab]/splat; do
		[ -e "$f" ] || continue
		sed "s|^|$label: ${f#"$dir"/}: |" "$f"
	done
	shopt -u nullglob
}

echo
echo "=== failures ==="
failures host "$host"
for k in $KERNELS; do
	failures "$k" "$top/build/vm/$k/out"
	case " $PAIR_KERNELS " in *" $k "*) ;; *) continue ;; esac
	failures "$k, two guests" "$top/build/vm/$k-pair/out"
done

echo
echo "=== summary ==="
echo "$summary"
[ "$total_s" -eq 0 ] || echo "($total_s skipped)"
echo "in ${SECONDS} s"
echo "$total_p passed, $total_f failed"
[ "$total_f" -eq 0 ]
