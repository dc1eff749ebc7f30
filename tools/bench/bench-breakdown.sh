#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# bench-breakdown.sh [NAME]: make bench-breakdown.  Where the one-way time
# of an 8 B RC SEND ping-pong goes, for rdma-core and for libkqp on the
# same rxe device, and for libkqp ringing for every receive (kqp-sync,
# KQP_RECV_ASYNC=0): boots the bench kernel NAME (default 6.12) with
# tools/bench/guest-bench-breakdown.sh, which traces BREAKDOWN_ROUNDS
# (default 3) rounds of each, then attributes each message's trip, from
# the sender's ibv_post_send() to the receiver's ibv_poll_cq() returning
# it, to:
#   A1 post call -> kernel entry   the doorbell's system call starts
#   A2 kernel entry -> driver post  to rdma_rxe's rxe_post_send()
#   B  driver post -> peer's CQE    to rxe_cq_post() of the peer's receive
#   C  driver CQE -> CQE visible    rdma-core: rxe_cq_post() returns;
#                                   kqp: its ring's tail is published
#                                   (C1 to kqp's callback, C2 to its
#                                   softirq, C3 to the publish)
#   D  CQE visible -> poll returns  the receiver's poll comes back with it
# A trip missing a point is left out of that stage, not of the others.
# Two more rows: D for the trips whose receiver was inside a doorbell
# system call of its own (a post, either queue) when the CQE became
# visible, and how long such a call takes; a line under the table says
# how many trips that was.
# Prints the medians (the median over rounds of each round's median over
# its trips), kept in build/vm/NAME-breakdown/out/breakdown-table.txt, and
# the same as JSON in breakdown.json beside it.  BREAKDOWN_ITERS (default
# 2000) sets the ping-pongs per round.  Non-zero when a round failed.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
name=${1:-6.12}
out=$repo/build/vm/$name-breakdown/out
rounds=${BREAKDOWN_ROUNDS:-3}
iters=${BREAKDOWN_ITERS:-2000}

# host_build and the rest of what the host halves share.
# shellcheck source=tools/testing/host.sh
. "$repo/tools/testing/host.sh" breakdown
host_positive BREAKDOWN_ROUNDS "$rounds"
host_positive BREAKDOWN_ITERS "$iters"
host_build lib rcbench
host_args "$repo/build/bench/breakdown-args" BREAKDOWN_ROUNDS="$rounds" \
	BREAKDOWN_ITERS="$iters"
host_guest "$name" "$name-breakdown"
rc=$?

# One round's events, one per line, in time order: "US EVENT PID", with
# the stamps' "post"/"poll" carrying their side as a fourth word.
events() {
	awk '{ printf "%.3f %s %s %s\n", $1 / 1000, $2, $4, $3 }' \
		"$1.client" "$1.server"
	# "comm-pid [cpu] flags ts: event: ..."; comm may hold spaces, the
	# pid is what precedes the first " [".
	sed -n 's/^ *\(.*\)-\([0-9]*\) *\[[0-9]*\] [^ ]* *\([0-9.]*\): \([a-z_]*\):.*/\3 \4 \2/p' \
		"$1.trace" | awk '{ printf "%.3f %s %s\n", $1 * 1000000, $2, $3 }'
}

for t in "$out"/bd-*-*.trace; do
	[ -e "$t" ] || continue
	base=${t%.trace}
	events "$base" | sort -n -s -k1,1 | awk -v file="${base##*/}" '
	function reset() { s = 0; t0 = ta = t1 = t2 = th = tp = t3 = "" }
	function put(k, v) { if (v != "") print file, k, v }
	# The processes inside a system call when the CQE became visible.
	function busy(   p) { split("", was); for (p in insys) if (insys[p] != "") was[p] = 1 }
	BEGIN { reset(); kqp = file ~ /^bd-kqp-/ }
	# Who is inside a doorbell system call, and for how long it was.
	$2 == "k_ioctl" || $2 == "k_write" { insys[$3] = $1 }
	($2 == "k_ioctl_ret" || $2 == "k_write_ret") && insys[$3] != "" {
		print file, "syscall", $1 - insys[$3]; insys[$3] = ""
	}
	$2 == "post" {
		if (s) dropped++
		reset(); s = 1; t0 = $1; pid = $3; side = $4; next
	}
	!s { next }
	s == 1 && ($2 == "k_ioctl" || $2 == "k_write") && $3 == pid && ta == "" { ta = $1; next }
	s == 1 && $2 == "drv_post" { t1 = $1; s = 2; next }
	s == 2 && $2 == "drv_cqe" { t2 = $1; s = 3; next }
	s == 3 && !kqp && $2 == "drv_cqe_ret" { t3 = $1; s = 4; busy(); next }
	s == 3 && kqp && $2 == "k_handler" && th == "" { th = $1; next }
	s == 3 && kqp && $2 == "k_poll" && th != "" && tp == "" { tp = $1; next }
	s == 3 && kqp && $2 == "kqp_cq_publish" { t3 = $1; s = 4; busy(); next }
	s == 4 && $2 == "poll" && $4 != side {
		put("A1", ta != "" ? ta - t0 : "")
		put("A2", ta != "" ? t1 - ta : "")
		put("B", t2 - t1)
		put("C", t3 - t2)
		if (th != "" && tp != "") {
			put("C1", th - t2); put("C2", tp - th); put("C3", t3 - tp)
		}
		put("D", $1 - t3)
		if ($3 in was) { put("D_insys", $1 - t3); insys_trips++ }
		put("total", $1 - t0)
		trips++
		reset()
	}
	END {
		print file, "trips", trips + 0; print file, "dropped", dropped + 0
		print file, "insys", insys_trips + 0
	}'
done > "$out/breakdown-trips.txt"

# Each round's median per stage ("VARIANT STAGE US"), from values sorted
# by round and stage; then results.awk's median() over rounds.
grep -v ' trips \| dropped \| insys ' "$out/breakdown-trips.txt" |
	sort -k1,1 -k2,2 -k3,3g | awk '
	function flush() { if (c) print v, k, c % 2 ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2 }
	$1 != f || $2 != k { flush(); f = $1; k = $2; c = 0
		v = f; sub(/^bd-/, "", v); sub(/-[0-9]+$/, "", v) }
	{ a[++c] = $3 }
	END { flush() }' > "$out/breakdown-rounds.txt"
awk "$(cat "$here/results.awk")"'
FNR == NR {
	v = $1; sub(/^bd-/, "", v); sub(/-[0-9]+$/, "", v)
	if ($2 == "trips" || $2 == "dropped" || $2 == "insys") cnt[v, $2] += $3
	if ($2 == "trips") nr[v]++
	next
}
{ add($1, $2, $3) }
function us(x) { return x == "" ? "-" : sprintf("%.1f", x) }
END {
	split("A1 A2 B C C1 C2 C3 D D_insys total syscall", st, " ")
	lab["A1"] = "A1 post call -> kernel entry"
	lab["A2"] = "A2 kernel entry -> driver post"
	lab["B"] = "B  driver post -> peer driver CQE"
	lab["C"] = "C  driver CQE -> CQE visible"
	lab["C1"] = "   C1 -> kqp callback"
	lab["C2"] = "   C2 -> kqp softirq"
	lab["C3"] = "   C3 -> ring tail published"
	lab["D"] = "D  CQE visible -> poll returns"
	lab["D_insys"] = "   D, receiver in its own syscall"
	lab["total"] = "one way: post call -> peer poll"
	lab["syscall"] = "a doorbell system call, send or recv"
	printf "8 B RC SEND ping-pong on rxe, one way, us: the median over rounds of\n"
	printf "each round median (rounds: rdma-core %d, kqp %d, kqp-sync %d;\n",
	       nr["rdmacm"], nr["kqp"], nr["kqp-sync"]
	printf "trips: %d, %d, %d; cut short: %d, %d, %d).\n",
	       cnt["rdmacm", "trips"], cnt["kqp", "trips"],
	       cnt["kqp-sync", "trips"], cnt["rdmacm", "dropped"],
	       cnt["kqp", "dropped"], cnt["kqp-sync", "dropped"]
	printf "kqp-sync: KQP_RECV_ASYNC=0.  Stage medians need not add up to the total.\n\n"
	printf "%-36s %9s %9s %9s %9s\n", "stage", "rdma-core", "kqp",
	       "kqp-sync", "kqp - rc"
	json = "{"
	for (i = 1; i <= 11; i++) {
		s = median("rdmacm", st[i]); q = median("kqp", st[i])
		y = median("kqp-sync", st[i])
		printf "%-36s %9s %9s %9s %9s\n", lab[st[i]], us(s), us(q),
		       us(y), (s == "" || q == "") ? "-" : sprintf("%+.1f", q - s)
		json = json sprintf("%s\"%s\": {\"rdmacm\": %s, \"kqp\": %s, \"kqp_sync\": %s}",
				    i > 1 ? ", " : "", st[i], s == "" ? "null" : s,
				    q == "" ? "null" : q, y == "" ? "null" : y)
	}
	for (v in nr)
		printf "%s: the receiver was inside a system call of its own when %d of %d CQEs became visible\n",
		       v == "rdmacm" ? "rdma-core" : v, cnt[v, "insys"], cnt[v, "trips"]
	print json "}" > jsonfile
}' jsonfile="$out/breakdown.json" "$out/breakdown-trips.txt" \
	"$out/breakdown-rounds.txt" | tee "$out/breakdown-table.txt"
echo
echo "breakdown: the table in $out/breakdown-table.txt, as JSON in $out/breakdown.json"
exit $rc
