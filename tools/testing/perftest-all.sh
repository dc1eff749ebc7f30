#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# make perftest-all: every perftest program over kqp, with one side preloaded
# and with both, and the options people use with them
# (tools/testing/selftests/kqp/perftest.sh without --quick), in a guest of
# PERFTEST_KERNEL (default 6.12).  make check runs each program once,
# preloaded on both sides (--quick); this is the rest, about four minutes
# of TCG that CI's hour has no room for.  Prints TAP and run.sh's verdict.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
name=${PERFTEST_KERNEL:-6.12}

# host_build and host_guest.
# shellcheck source=tools/testing/host.sh
. "$here/host.sh" perftest-all
host_build lib selftests
host_guest "$name"
