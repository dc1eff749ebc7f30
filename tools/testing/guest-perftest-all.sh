#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The guest half of make perftest-all (tools/testing/perftest-all.sh),
# run by guest.sh in script mode after the Soft-RoCE setup: load kqp.ko,
# run the selftest perftest.sh's whole set into the results' TAP, and
# unload kqp.ko.
set -u

# shellcheck source=tools/testing/selftests/kqp/lib.sh
. "$KQP_REPO/tools/testing/selftests/kqp/lib.sh"
kqp_load "$KQP_KMOD" perftest-all || exit 1
"$KQP_REPO/build/selftests/perftest.sh" | tee "$KQP_OUT/tap/50-perftest.tap"
rc=${PIPESTATUS[0]}
kqp_unload perftest-all || rc=1
exit $rc
