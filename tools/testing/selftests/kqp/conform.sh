#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# conform.sh: conform.c prints what a program can observe of the library
# under it; built against rdma-core (conform_rdmacm) and against libkqp
# (conform), both run here, in the bench guest, and must print the same
# lines.  The differences kqp makes on purpose are listed in conform.allow,
# each with its reason (doc/features.md, "Deliberate differences", says the
# same): a difference not listed there fails, and so does a listed one
# that no longer happens, so that the list stays true.  Prints TAP.
set -u

here=$(cd "$(dirname "$0")" && pwd)
addr=${KQP_TEST_ADDR:-192.0.2.1}
limit=${KQP_CONFORM_TIMEOUT:-300}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# shellcheck source=tools/testing/selftests/kqp/lib.sh
. "$here/lib.sh"
kqp_need_bench
KQP_SHOW_LINES=60

echo "TAP version 13"
echo "1..4"

# Both runs count the device's kernel objects (a forked child's, left
# behind or not): without kqp's QP cache, which a refill changes.
qp_cache_off || echo "# the QP cache did not empty"
trap qp_cache_restore EXIT

timeout -k 5 "$limit" "$here/conform_rdmacm" "$addr" 7400 \
	> "$work/rdmacm.out" 2> "$work/rdmacm.err"
rc=$?
[ $rc -eq 0 ] || { echo "# conform_rdmacm: exit $rc"; show "$work/rdmacm.out" "$work/rdmacm.err"; }
tap $rc "conform_rdmacm: rdma-core's run completes"

timeout -k 5 "$limit" "$here/conform" "$addr" 7410 \
	> "$work/kqp.out" 2> "$work/kqp.err"
rc=$?
[ $rc -eq 0 ] || { echo "# conform: exit $rc"; show "$work/kqp.out" "$work/kqp.err"; }
tap $rc "conform: libkqp's run completes"

# Keep both outputs with the bench's results (KQP_OUT), for whoever reads
# a failure.
if [ -n "${KQP_OUT:-}" ]; then
	cp "$work/rdmacm.out" "$KQP_OUT/conform_rdmacm.out"
	cp "$work/kqp.out" "$KQP_OUT/conform.out"
fi

# Each difference as "-LINE" (rdma-core's) or "+LINE" (kqp's).
diff "$work/rdmacm.out" "$work/kqp.out" | sed -n 's/^< /-/p; s/^> /+/p' |
	sort > "$work/diff"
grep -v '^#' "$here/conform.allow" | grep -v '^$' | sort > "$work/allow"
comm -23 "$work/diff" "$work/allow" > "$work/unexpected"
comm -13 "$work/diff" "$work/allow" > "$work/stale"
rc=0
[ -s "$work/unexpected" ] && rc=1
[ $rc -eq 0 ] || { echo "# differences not in conform.allow (- rdma-core, + kqp):"; show "$work/unexpected"; }
tap $rc "conform: kqp prints what rdma-core prints, but for conform.allow"

rc=0
[ -s "$work/stale" ] && rc=1
[ $rc -eq 0 ] || { echo "# conform.allow lists differences that no longer happen:"; show "$work/stale"; }
tap $rc "conform: every difference conform.allow lists still happens"
