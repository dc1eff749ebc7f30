#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# bench.sh [NAME]: make bench.  Installs what is missing (make deps), builds
# libkqp and rcbench (against libkqp and against rdma-core), boots the
# bench kernel NAME (default 6.12; see tools/testing/vm/kernel-info.sh)
# with tools/bench/guest-bench.sh, which runs four variants on one rxe
# device: rdma-core's, libkqp's, libkqp's with KQP_RINGS=0 (its
# ioctl-per-post path) and with KQP_POLLER=1.  Then prints the table
# (tools/bench/table.sh), also kept in build/vm/NAME/out/bench-table.txt,
# and writes the same rows as JSON to build/vm/NAME/out/bench.json.
# Non-zero when a variant failed or a result is missing.
#
# Environment:
#   BENCH_ROUNDS  rounds of the four variants (default 3), the order
#                 rotated every round; the table shows the median over
#                 rounds
#   BENCH_ARGS    extra rcbench client options, the same for both, e.g.
#                 "--lat-iters 1000" (see rcbench --help)
#   BENCH_SCALE_BUDGET  seconds each variant's scale run (rcbench --scale)
#                 may take per round (default 120); 0 leaves it out
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
name=${1:-6.12}
out=$repo/build/vm/$name/out
start=$(date +%s)
rounds=${BENCH_ROUNDS:-3}
scale_budget=${BENCH_SCALE_BUDGET:-120}

# host_deps, host_build and the rest of what the host halves share.
# shellcheck source=tools/testing/host.sh
. "$repo/tools/testing/host.sh" bench
host_positive BENCH_ROUNDS "$rounds"
host_number BENCH_SCALE_BUDGET "$scale_budget"
host_deps || exit 1
host_build lib rcbench
host_args "$repo/build/bench/args" BENCH_ROUNDS="$rounds" \
	SCALE_BUDGET="$scale_budget" args="${BENCH_ARGS:-}"

# Three variants take half as long again as two did: 14 minutes with two
# other guests on the host then.  run.sh gives a --script guest 1800 s.
export KQP_GUEST_TIMEOUT=${KQP_GUEST_TIMEOUT:-3600}
host_guest "$name"
rc=$?
echo
"$here/table.sh" "$out" "$out/bench.json" | tee "$out/bench-table.txt"
trc=${PIPESTATUS[0]}
echo
echo "bench: the table in $out/bench-table.txt, as JSON in $out/bench.json"
echo "bench: $name, $(( $(date +%s) - start )) s on the host"
[ $rc -eq 0 ] && [ "$trc" -eq 0 ]
