#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# make demo: build kqp, boot the 6.12 bench kernel with Soft-RoCE, and show
# kqp working there: rdma-core's rping as a stock server and, unchanged, as
# a client with LD_PRELOAD=libkqp.so (tools/testing/vm/guest.sh, demo()).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
kernel=${DEMO_KERNEL:-6.12}

if what=$("$top/tools/deps.sh" --missing); then
	echo "demo: $what is missing; installing what is (make deps)"
	"$top/tools/deps.sh" || exit 1
fi
make -s -C "$top" lib || exit 1
exec "$top/tools/testing/vm/run.sh" --demo "$kernel"
