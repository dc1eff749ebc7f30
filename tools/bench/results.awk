# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# results.awk: what the bench's tables share, put before each table's own
# awk program (table.sh, bench-perftest.sh, bench-floor.sh,
# bench-breakdown.sh).  A guest leaves its results as "key value" lines
# in files PREFIX-VARIANT-ROUND.txt; a table reads them into n[v, k] (how
# many values key k has for variant v), val[v, k, 1..n[v, k]] and
# by[v, k, round], and prints medians and ratios.
#
#   file_variant(prefix)  VARIANT of the file being read
#   file_round()          its ROUND, a number
#   take(v, r)            the line's key and value, for variant v, round r
#   add(v, k, x)          value x of key k for variant v, of no round
#   median(v, k)          the median of k's values for v, or "" for none
#   ratio(q, s)           q / s with two decimals, or "" without both or
#                         unless s is above 0
#   cell(x)               x, or "-" for ""
#   ratio_row(fmt, label, k, more)  one row, printed with fmt: label,
#                         rdmacm's median of k, kqp's, kqp / rdmacm, more

function file_variant(prefix,    v) {
	v = FILENAME
	sub(".*/" prefix "-", "", v)
	sub(/-[0-9]+\.txt$/, "", v)
	return v
}

function file_round(    x) {
	x = FILENAME
	sub(/\.txt$/, "", x)
	sub(/.*-/, "", x)
	return x + 0
}

function add(v, k, x) {
	n[v, k]++
	val[v, k, n[v, k]] = x
}

function take(v, r) {
	add(v, $1, $2)
	by[v, $1, r] = $2
}

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

function ratio(q, s) {
	return (s != "" && q != "" && s + 0 > 0) ? sprintf("%.2f", q / s) : ""
}

function cell(x) {
	return x == "" ? "-" : x
}

function ratio_row(fmt, label, k, more,    s, q) {
	s = median("rdmacm", k)
	q = median("kqp", k)
	printf fmt, label, cell(s), cell(q), cell(ratio(q, s)), more
}
