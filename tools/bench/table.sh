#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# table.sh DIR: the table of make bench, from the rcbench results in DIR
# (bench-rdmacm-ROUND.txt and bench-kqp-ROUND.txt, "key value" lines).
# With several rounds, each cell is the median over them.  Exits non-zero
# when a result is missing or a run failed (bench-VARIANT-ROUND.failed).
set -uo pipefail

dir=${1:?usage: table.sh DIR}
shopt -s nullglob

awk '
FNR == 1 {
	v = FILENAME
	sub(/.*\/bench-/, "", v)
	sub(/-[0-9]+\.txt$/, "", v)
	rounds[v]++
}
/^#/ || NF != 2 { next }
{ n[v, $1]++; val[v, $1, n[v, $1]] = $2 }

function median(v, k,    m, i, j, t, a) {
	m = n[v, k]
	if (!m)
		return ""
	for (i = 1; i <= m; i++)
		a[i] = val[v, k, i]
	for (i = 2; i <= m; i++)
		for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}

function row(k, label, better,    s, q, r) {
	s = median("rdmacm", k)
	q = median("kqp", k)
	r = (s != "" && q != "" && s + 0 > 0) ? sprintf("%.2f", q / s) : "-"
	if (s == "" || q == "")
		missing = 1
	printf "%-40s %10s %10s %8s   %s\n", label, s == "" ? "-" : s,
	       q == "" ? "-" : q, r, better
}

END {
	printf "rcbench on Soft-RoCE (rxe) under QEMU/TCG: absolute numbers mean little,\n"
	printf "compare the ratio. ratio = kqp / rdma-core. Latency: lower is better,\n"
	printf "a ratio below 1 means kqp is faster. Rate and bandwidth: higher is\n"
	printf "better, a ratio above 1 means kqp is faster. Latency is one-way (half\n"
	printf "the round trip). Rounds: rdma-core %d, kqp %d%s.\n\n",
	       rounds["rdmacm"], rounds["kqp"],
	       (rounds["kqp"] > 1 ? " (median of rounds)" : "")
	printf "%-40s %10s %10s %8s   %s\n", "test", "rdma-core", "kqp", "ratio", "better"
	row("lat_8_median_us", "RC SEND latency 8 B, median (us)", "lower")
	row("lat_8_p99_us", "RC SEND latency 8 B, p99 (us)", "lower")
	row("lat_4096_median_us", "RC SEND latency 4 KB, median (us)", "lower")
	row("lat_4096_p99_us", "RC SEND latency 4 KB, p99 (us)", "lower")
	row("rate_64_list1_kmsgs", "64 B SEND rate, 1 WR/post (Kmsg/s)", "higher")
	row("rate_64_list16_kmsgs", "64 B SEND rate, 16 WRs/post (Kmsg/s)", "higher")
	row("write_65536_mbs", "64 KB RDMA WRITE bandwidth (MB/s)", "higher")
	exit missing
}
' /dev/null "$dir"/bench-rdmacm-*.txt "$dir"/bench-kqp-*.txt
rc=$?
for f in "$dir"/bench-*.failed; do
	echo "table: $(basename "$f"): that run failed, its results are left out"
	rc=1
done
exit $rc
