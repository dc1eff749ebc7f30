#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The guest half of make fuzz (tools/testing/fuzz.sh), run by guest.sh in
# script mode after the Soft-RoCE setup: load kqp.ko, run the fuzzer with
# the arguments fuzz.sh left in build/fuzz/args, take a kmemleak report
# where the kernel has one, and unload kqp.ko.
set -u

# shellcheck source=/dev/null
. "$KQP_REPO/build/fuzz/args"
# Files the fuzzer writes go to the results: the tree is read-only here.
FUZZ_ARGS=${FUZZ_ARGS//@OUT@/$KQP_OUT}
# shellcheck source=tools/testing/selftests/kqp/lib.sh
. "$KQP_REPO/tools/testing/selftests/kqp/lib.sh"
kqp_load "$KQP_KMOD" fuzz || exit 1
# shellcheck disable=SC2086
"$KQP_REPO/build/selftests/fuzz" $FUZZ_ARGS | tee "$KQP_OUT/tap/50-fuzz.tap"
rc=${PIPESTATUS[0]}
kqp_kmemleak_scan "$KQP_OUT/kmemleak"
kqp_unload fuzz || rc=1
exit $rc
