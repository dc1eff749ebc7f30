#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Print the kernel build directory to build kqp.ko against when KDIR is not
# given: the running kernel's, or else the newest installed Debian headers.
# Says on stderr which one it chose and why.
set -eu

running=/lib/modules/$(uname -r)/build
if [ -d "$running" ]; then
	echo "kqp: building for the running kernel ($running)" >&2
	echo "$running"
	exit 0
fi

# The generic flavour: never a PREEMPT_RT (-rt-amd64) or cloud one, which
# would otherwise sort after it.
newest=$(ls -d /usr/src/linux-headers-*[0-9]-amd64 2>/dev/null | sort -V | tail -n 1)
if [ -n "$newest" ]; then
	echo "kqp: $running does not exist; building for the newest installed headers ($newest)" >&2
	echo "$newest"
	exit 0
fi

echo "kqp: no kernel headers found: install linux-headers-amd64 (make deps) or pass KDIR=" >&2
exit 1
