#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# bench-perftest.sh [NAME]: make bench-perftest.  Boots the bench kernel
# NAME (default 6.12) with tools/bench/guest-bench-perftest.sh, which runs
# Debian's perftest (ib_send_lat, ib_send_bw, ib_write_bw, with -R) stock
# on both sides and preloaded with libkqp on both sides, then prints the
# medians over rounds and their ratio, kept in
# build/vm/NAME-perftest/out/perftest-table.txt.  PERFTEST_ROUNDS (default
# 3) sets the rounds.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
name=${1:-6.12}
out=$repo/build/vm/$name-perftest/out
rounds=${PERFTEST_ROUNDS:-3}

# host_build and the rest of what the host halves share.
# shellcheck source=tools/testing/host.sh
. "$repo/tools/testing/host.sh" perftest
host_positive PERFTEST_ROUNDS "$rounds"
host_build lib
host_args "$repo/build/bench/perftest-args" PERFTEST_ROUNDS="$rounds"
host_guest "$name" "$name-perftest"
rc=$?

# take(), ratio_row() and the rest from results.awk, then the table.
awk "$(cat "$here/results.awk")"'
FNR == 1 { v = file_variant("perftest") }
NF == 2 { add(v, $1, $2) }
function row(k, label, better) {
	ratio_row("%-36s %10s %10s %8s   %s\n", label, k, better)
}
END {
	printf "perftest -R on Soft-RoCE under QEMU/TCG, stock on both sides against\n"
	printf "LD_PRELOAD=libkqp.so on both sides; median of rounds; ratio = kqp / stock.\n\n"
	printf "%-36s %10s %10s %8s   %s\n", "test", "stock", "kqp", "ratio", "better"
	row("pt_send_lat_8_median_us", "ib_send_lat 8 B, typical (us)", "lower")
	row("pt_send_lat_8_p99_us", "ib_send_lat 8 B, p99 (us)", "lower")
	row("pt_send_lat_4096_median_us", "ib_send_lat 4 KB, typical (us)", "lower")
	row("pt_send_lat_4096_p99_us", "ib_send_lat 4 KB, p99 (us)", "lower")
	row("pt_send_bw_64_kmsgs", "ib_send_bw 64 B (Kmsg/s)", "higher")
	row("pt_send_bw_65536_mbs", "ib_send_bw 64 KB (MB/s)", "higher")
	row("pt_write_bw_65536_mbs", "ib_write_bw 64 KB (MB/s)", "higher")
}' "$out"/perftest-*-*.txt | tee "$out/perftest-table.txt"
exit $rc
