#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# table.sh DIR [JSON]: the table of make bench, from the rcbench results
# in DIR (bench-VARIANT-ROUND.txt, the scale runs'
# bench-scale-VARIANT-ROUND.txt, cmtime's bench-cmtime-VARIANT-ROUND.txt and
# rstream's bench-rstream-VARIANT-ROUND.txt, "key value" lines), printed on
# stdout;
# the same rows go to JSON (default DIR/bench.json).  With several
# rounds, each cell is the median over them.  Exits non-zero when a
# result is missing or a run failed (bench-VARIANT-ROUND.failed,
# bench-scale-, bench-cmtime- or bench-rstream-VARIANT-ROUND.failed); a
# scale or cmtime row's cell may be missing,
# an N the scale run's time budget left out.
#
# The JSON: an object with "variants" (in column order), "rounds" (per
# variant, how many result files), "scale_rounds", "cmtime_rounds" and
# "rstream_rounds" (the same for the scale, cmtime and rstream runs), "ratio" and "ratio_kqp_ioctl" (what
# each ratio is of: "kqp / rdmacm", "kqp-ioctl / rdmacm") and "rows",
# one per table row, each
#   { "key", "label", "unit", "better": "lower" | "higher",
#     "variants": { VARIANT: { "median", "rounds": [per round] } },
#     "ratio", "ratio_kqp_ioctl" }
# in the table's order.  A value nobody measured is null; "rounds" is
# indexed by round number, 1 first.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
dir=${1:?usage: table.sh DIR [JSON]}
json=${2:-$dir/bench.json}
shopt -s nullglob

# median(), take() and the rest from results.awk, then the table.
awk -v json="$json" "$(cat "$here/results.awk")"'
FNR == 1 {
	v = file_variant("bench")
	r = file_round()
	# A scale run: its keys count for its variant, in its round.
	if (sub(/^scale-/, "", v))
		scalerounds[v]++
	else if (sub(/^cmtime-/, "", v))
		cmtimerounds[v]++
	else if (sub(/^rstream-/, "", v))
		rstreamrounds[v]++
	else
		rounds[v]++
	if (r > maxround)
		maxround = r
}
/^#/ || NF != 2 { next }
{ take(v, r) }

function jstr(s) {
	gsub(/\\/, "\\\\", s)
	gsub(/"/, "\\\"", s)
	return "\"" s "\""
}

# A number as rcbench wrote it; null for none (or for nan, inf...).
function jnum(x) {
	x = x ""
	if (x ~ /^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/)
		return x
	return "null"
}

# The JSON key of the ratio of variant v: "ratio_kqp_ioctl" for kqp-ioctl.
function ratiokey(v) {
	gsub(/[^A-Za-z0-9]/, "_", v)
	return "ratio_" v
}

# One row: the table line, and its JSON object.  A cell of an @optional
# row may be missing.
function row(k, label, unit, better, optional,    s, q, r, t, i, j, line) {
	s = median(base, k)
	q = median(main, k)
	r = ratio(q, s)
	line = sprintf("%-40s", label (unit ~ /^(count|ratio)$/ ? "" : " (" unit ")"))
	for (i = 1; i <= nvar; i++) {
		med[i] = median(var[i], k)
		if (med[i] == "" && !optional)
			missing = 1
		line = line sprintf(" %10s", cell(med[i]))
	}
	line = line sprintf(" %8s", cell(r))
	for (i = 1; i <= nextra; i++) {
		t = ratio(median(extra[i], k), s)
		line = line sprintf(" %8s", cell(t))
	}
	print line "   " better

	printf "%s    { \"key\": %s, \"label\": %s, \"unit\": %s, \"better\": %s,\n",
	       (nrows++ ? ",\n" : ""), jstr(k), jstr(label), jstr(unit),
	       jstr(better) > json
	printf "      \"variants\": {" > json
	for (i = 1; i <= nvar; i++) {
		printf "%s\n        %s: { \"median\": %s, \"rounds\": [",
		       (i > 1 ? "," : ""), jstr(var[i]), jnum(med[i]) > json
		for (j = 1; j <= maxround; j++)
			printf "%s%s", (j > 1 ? ", " : ""),
			       jnum(by[var[i], k, j]) > json
		printf "] }" > json
	}
	printf "\n      },\n      \"ratio\": %s", jnum(r) > json
	for (i = 1; i <= nextra; i++)
		printf ",\n      %s: %s", jstr(ratiokey(extra[i])),
		       jnum(ratio(median(extra[i], k), s)) > json
	printf " }" > json
}

# The rows of one operation of rcbench --scale: at 10 and at 1000
# connections in one process (SCALE in guest-bench.sh), and the second
# over the first.
function scale(op, what) {
	row("scale_10_" op "_us", "10 RC QPs: " what, "us/QP", "lower", 1)
	row("scale_1000_" op "_us", "1000 RC QPs: " what, "us/QP", "lower", 1)
	row("scale_" op "_1000_over_10", "  " what ", 1000 / 10", "ratio",
	    "lower", 1)
}

BEGIN {
	# Columns: the baseline first, then kqp.  The ratio is kqp over the
	# baseline; each variant in extra[] gets its own ratio column.
	nvar = split("rdmacm kqp kqp-ioctl kqp-poller", var, " ")
	split("rdma-core kqp kqp-ioctl kqp-poller", head, " ")
	base = "rdmacm"
	main = "kqp"
	nextra = split("kqp-ioctl kqp-poller", extra, " ")
	split("ioctl poller", extrahead, " ")
}

END {
	printf "rcbench on Soft-RoCE (rxe) under QEMU/TCG: absolute numbers mean little,\n"
	printf "compare the ratio. kqp is libkqp as it runs by default, kqp-ioctl is\n"
	printf "libkqp with KQP_RINGS=0 (an ioctl per post), kqp-poller libkqp with\n"
	printf "KQP_POLLER=1 (a kernel poller per process). ratio = kqp / rdma-core,\n"
	printf "ioctl = kqp-ioctl / rdma-core, poller = kqp-poller / rdma-core.\n"
	printf "Latency: lower is better, a ratio below 1 means kqp is faster. Rate\n"
	printf "and bandwidth: higher is better, a ratio above 1 means kqp is faster.\n"
	printf "Latency is one-way (half the round trip). The poller runs the client\n"
	printf "only (its scale and cmtime cells are -: it does not change them).\n"
	printf "Scale: microseconds or bytes per QP, CQ or id; a 1000 / 10 row is the\n"
	printf "cost at 1000 over that at 10 (1 is flat); - is what did not run.\n"
	printf "cmtime: rdma-core cmtime unchanged, server and client in the variant\n"
	printf "(LD_PRELOAD=libkqp.so for kqp), its client us / conn. rstream: the\n"
	printf "same for rdma-core rstream: usec/xfer and Gb/sec of its client.\n"
	printf "Rounds:"
	for (i = 1; i <= nvar; i++)
		printf "%s %s %d", (i > 1 ? "," : ""), head[i], rounds[var[i]]
	printf "%s; scale runs:", (rounds[main] > 1 ? " (median of rounds)" : "")
	for (i = 1; i <= nvar; i++)
		printf "%s %s %d", (i > 1 ? "," : ""), head[i],
		       scalerounds[var[i]]
	printf "; cmtime runs:"
	for (i = 1; i <= nvar; i++)
		printf "%s %s %d", (i > 1 ? "," : ""), head[i],
		       cmtimerounds[var[i]]
	printf "; rstream runs:"
	for (i = 1; i <= nvar; i++)
		printf "%s %s %d", (i > 1 ? "," : ""), head[i],
		       rstreamrounds[var[i]]
	printf ".\n\n"
	printf "%-40s", "test"
	for (i = 1; i <= nvar; i++)
		printf " %10s", head[i]
	printf " %8s", "ratio"
	for (i = 1; i <= nextra; i++)
		printf " %8s", extrahead[i]
	printf "   %s\n", "better"

	printf "{\n  \"variants\": [" > json
	for (i = 1; i <= nvar; i++)
		printf "%s%s", (i > 1 ? ", " : ""), jstr(var[i]) > json
	printf "],\n  \"rounds\": {" > json
	for (i = 1; i <= nvar; i++)
		printf "%s %s: %d", (i > 1 ? "," : ""), jstr(var[i]),
		       rounds[var[i]] > json
	printf " },\n  \"scale_rounds\": {" > json
	for (i = 1; i <= nvar; i++)
		printf "%s %s: %d", (i > 1 ? "," : ""), jstr(var[i]),
		       scalerounds[var[i]] > json
	printf " },\n  \"cmtime_rounds\": {" > json
	for (i = 1; i <= nvar; i++)
		printf "%s %s: %d", (i > 1 ? "," : ""), jstr(var[i]),
		       cmtimerounds[var[i]] > json
	printf " },\n  \"rstream_rounds\": {" > json
	for (i = 1; i <= nvar; i++)
		printf "%s %s: %d", (i > 1 ? "," : ""), jstr(var[i]),
		       rstreamrounds[var[i]] > json
	printf " },\n  \"ratio\": %s,\n", jstr(main " / " base) > json
	for (i = 1; i <= nextra; i++)
		printf "  %s: %s,\n", jstr(ratiokey(extra[i])),
		       jstr(extra[i] " / " base) > json
	printf "  \"rows\": [\n" > json

	row("lat_8_median_us", "RC SEND latency 8 B, median", "us", "lower")
	row("lat_8_p99_us", "RC SEND latency 8 B, p99", "us", "lower")
	row("lat_4096_median_us", "RC SEND latency 4 KB, median", "us", "lower")
	row("lat_4096_p99_us", "RC SEND latency 4 KB, p99", "us", "lower")
	row("lat_sig_8_median_us", "8 B, sends awaited (ib_send_lat)", "us",
	    "lower")
	row("lat_sig_8_p99_us", "8 B, sends awaited, p99", "us", "lower")
	row("rate_64_list1_kmsgs", "64 B SEND rate, 1 WR/post", "Kmsg/s", "higher")
	row("rate_64_list16_kmsgs", "64 B SEND rate, 16 WRs/post", "Kmsg/s", "higher")
	row("write_65536_mbs", "64 KB RDMA WRITE bandwidth", "MB/s", "higher")
	row("send_65536_mbs", "64 KB SEND bandwidth", "MB/s", "higher")
	row("rnr_rcvd_per_run", "RNR NAKs (rcvd) per run", "count", "lower")
	# rdma-core cmtime, CMTIME_CONNS in guest-bench.sh.
	row("cmtime_create_qp_us", "cmtime, 200 conns: create QP",
	    "us/conn", "lower", 1)
	row("cmtime_connect_us", "cmtime, 200 conns: connect",
	    "us/conn", "lower", 1)
	# rdma-core rstream, RSTREAM_* in guest-bench.sh.
	row("rstream_lat_us", "rstream 64 B ping-pong, one way", "us",
	    "lower", 1)
	row("rstream_bw_gbps", "rstream 64 KB transfers", "Gb/s", "higher", 1)
	scale("create_qp", "create QP")
	scale("connect", "connect")
	scale("post", "post + completion")
	scale("destroy", "destroy QP + id")
	row("scale_1000_qp_kernel_bytes", "1000 RC QPs: kernel memory per QP",
	    "B", "lower", 1)
	row("scale_1000_qp_pinned_bytes", "1000 RC QPs: pinned per QP", "B",
	    "lower", 1)
	row("cq_256_kernel_bytes", "CQ of 256: kernel memory per CQ", "B",
	    "lower", 1)
	row("cq_256_pinned_bytes", "CQ of 256: pinned per CQ", "B", "lower", 1)
	# IDS in guest-bench.sh.
	row("ids_100_us", "100 ids: create + destroy", "us/id", "lower", 1)
	row("ids_10000_us", "10000 ids: create + destroy", "us/id", "lower", 1)
	row("ids_10000_over_100", "  create + destroy, 10000 / 100", "ratio",
	    "lower", 1)
	row("ids_10000_kernel_bytes", "10000 ids: kernel memory per id", "B",
	    "lower", 1)

	printf "\n  ]\n}\n" > json
	close(json)
	exit missing
}
' /dev/null "$dir"/bench-*-[0-9]*.txt
rc=$?
for f in "$dir"/bench-*.failed; do
	echo "table: $(basename "$f"): that run failed, its results are left out"
	rc=1
done
exit $rc
