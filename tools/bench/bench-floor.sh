#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# bench-floor.sh [NAME]: make bench-floor.  What bounds make bench's
# ratios on this bench, measured rather than argued: boots the bench kernel
# NAME (default 6.12) with tools/bench/guest-bench-floor.sh, which times
# rdma_rxe's own rxe_create_qp() under cmtime, where a create QP's kernel
# time goes, and the CPU time each message of rcbench's 64 B rate test
# costs, for rdma-core and for libkqp.  Prints
# the medians over rounds, kept in
# build/vm/NAME-floor/out/floor-table.txt.  FLOOR_ROUNDS (default 3)
# sets the rounds.  Non-zero when a round failed.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
name=${1:-6.12}
out=$repo/build/vm/$name-floor/out
rounds=${FLOOR_ROUNDS:-3}

# host_build and the rest of what the host halves share.
# shellcheck source=tools/testing/host.sh
. "$repo/tools/testing/host.sh" floor
host_positive FLOOR_ROUNDS "$rounds"
host_build lib rcbench
host_args "$repo/build/bench/floor-args" FLOOR_ROUNDS="$rounds"
rm -f "$out"/floor-*-*.txt "$out"/floor-*-*.failed
host_guest "$name" "$name-floor"
rc=$?
if ! ls "$out"/floor-*-*.txt > /dev/null 2>&1; then
	echo "floor: no round left results in $out"
	exit 1
fi

# take(), ratio_row() and the rest from results.awk, then the table.
awk "$(cat "$here/results.awk")"'
FNR == 1 {
	v = file_variant("floor"); rd = file_round()
	r[v]++; if (rd > last) last = rd
}
NF == 2 { take(v, rd) }
/^fl_fn_.*_us / && !($1 in fn_seen) { fn_seen[$1] = 1; fn[++fns] = $1 }
function row(label, k) { ratio_row("%-48s %9s %9s %7s\n", label, k) }
function fn_cell(v, k, c,    t) {
	t = median(v, k)
	return t == "" ? "-" : sprintf("%.1f (%.2f)", t, median(v, c))
}
END {
	printf "What bounds the bench, on Soft-RoCE under QEMU/TCG; median of rounds\n"
	printf "(rdma-core %d, kqp %d); ratio = kqp / rdma-core.\n\n", r["rdmacm"], r["kqp"]
	printf "%-48s %9s %9s %7s\n", "connection setup, cmtime -c 200", "rdma-core", "kqp", "ratio"
	row("create QP (us/conn)", "fl_cmtime_create_qp_us")
	row("connect (us/conn)", "fl_cmtime_connect_us")
	row("rdma_rxe rxe_create_qp(), per call (us)", "fl_rxe_create_qp_us")
	printf "\nWhat a create QP 5x faster than rdma-core may take, against what rxe\n"
	printf "alone took to create a kqp kernel QP, round by round (us):\n"
	for (i = 1; i <= last; i++) {
		s = by["rdmacm", "fl_cmtime_create_qp_us", i]
		c = by["kqp", "fl_rxe_create_qp_us", i]
		if (s != "" && c != "")
			printf "  round %d: 5x needs at most %7.1f, rxe alone took %7.1f\n", i, s / 5, c
	}
	printf "\nWhere the kernel time of a create QP goes: cmtime -c 200 again, these\n"
	printf "functions traced together; us per QP made (calls per QP). The time of a\n"
	printf "function includes the traced functions it called.\n"
	printf "%-48s %15s %15s\n", "function", "rdma-core", "kqp"
	for (i = 1; i <= fns; i++) {
		k = fn[i]; c = k; sub(/_us$/, "_calls", c)
		name = k; sub(/^fl_fn_/, "", name); sub(/_us$/, "", name)
		printf "%-48s %15s %15s\n", name, fn_cell("rdmacm", k, c),
		       fn_cell("kqp", k, c)
	}
	printf "\n%-48s %9s %9s %7s\n", "64 B SEND rate, rcbench, per extra message", "rdma-core", "kqp", "ratio"
	row("rate, 1 WR/post (Kmsg/s)", "fl_rate_list1_kmsgs")
	row("rate, 16 WRs/post (Kmsg/s)", "fl_rate_list16_kmsgs")
	row("both processes system time (us/msg)", "fl_sys_us")
	row("busy outside the two processes (us/msg)", "fl_rest_us")
	row("guest busy, spinning included (us/msg)", "fl_busy_us")
	row("CPUs busy meanwhile", "fl_busy_cpus")
}' "$out"/floor-*-*.txt | tee "$out/floor-table.txt"
exit $rc
