#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# make demo: build kqp, boot the 6.12 bench kernel with Soft-RoCE, and show
# kqp working there: rdma-core's rping as a stock server and, unchanged, as
# a client with LD_PRELOAD=libkqp.so (tools/testing/vm/guest.sh, demo()).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
kernel=${DEMO_KERNEL:-6.12}

# host_deps and host_build.
# shellcheck source=tools/testing/host.sh
. "$top/tools/testing/host.sh" demo
host_deps || exit 1
host_build lib
exec "$top/tools/testing/vm/run.sh" --demo "$kernel"
