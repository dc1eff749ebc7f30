# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# median.awk: median(v, k), the median of the n[v, k] values of key k
# for variant v in val[v, k, 1..n[v, k]], or "" for none.  The awk
# programs of table.sh, bench-perftest.sh and bench-floor.sh put it before
# their own text.
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
