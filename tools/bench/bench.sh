#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# bench.sh [NAME]: make bench after the build.  Boots the bench kernel NAME
# (default 6.12; see tools/testing/vm/kernel-info.sh) with
# tools/bench/guest-bench.sh, which runs rcbench against rdma-core and
# against libkqp on one rxe device, then prints the table.  Non-zero when
# either variant failed or a result is missing.
#
# Environment:
#   BENCH_ROUNDS  alternate rounds of both variants (default 1); the table
#                 shows the median over rounds
#   BENCH_ARGS    extra rcbench client options, the same for both, e.g.
#                 "--lat-iters 1000" (see rcbench --help)
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
name=${1:-6.12}
out=$repo/build/vm/$name/out
start=$(date +%s)

for p in rcbench rcbench_rdmacm; do
	if [ ! -x "$repo/build/bench/$p" ]; then
		echo "bench: build/bench/$p missing (make -C tools/bench)" >&2
		exit 1
	fi
done
rounds=${BENCH_ROUNDS:-1}
case "$rounds" in
''|*[!0-9]*|0)
	echo "bench: BENCH_ROUNDS must be a positive number, not '$rounds'" >&2
	exit 1 ;;
esac
# The guest reads its parameters from here: the kernel command line
# carries no environment.
printf 'BENCH_ROUNDS=%q\nargs=%q\n' "$rounds" "${BENCH_ARGS:-}" \
	> "$repo/build/bench/args"

"$repo/tools/testing/vm/run.sh" --script "$here/guest-bench.sh" "$name"
rc=$?
echo
"$here/table.sh" "$out" | tee "$out/bench-table.txt"
trc=${PIPESTATUS[0]}
echo
echo "bench: $name, $(( $(date +%s) - start )) s on the host"
[ $rc -eq 0 ] && [ "$trc" -eq 0 ]
