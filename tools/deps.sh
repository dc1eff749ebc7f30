#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Install, with apt, everything kqp's build and test bench need on Debian
# bookworm: the test kernels with headers (6.1, 6.12, 6.12 PREEMPT_RT),
# QEMU, the guest's tools, rdma-core's peers and headers, dkms, debhelper
# and lintian for the packages, and the kernel source the debug kernel and
# the kselftest harness come from.
#
# deps.sh --missing: install nothing; print the first thing missing and
# exit 0, or exit 1 when nothing is.  make check, make demo and make bench
# ask this before they run deps.sh.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)

missing() {
	local c
	for c in qemu-system-x86_64 busybox modprobe cpio xz rdma ibv_devices \
		 rping dkms pkg-config bc flex bison gcc make dpkg-buildpackage \
		 dh lintian; do
		command -v "$c" > /dev/null || { echo "$c"; return 0; }
	done
	for c in /usr/src/linux-source-6.12.tar.xz \
		 /usr/include/infiniband/verbs.h /usr/include/rdma/rdma_cma.h \
		 /usr/include/libelf.h /usr/include/openssl/ssl.h \
		 /usr/bin/dh_dkms; do
		[ -e "$c" ] || { echo "$c"; return 0; }
	done
	for c in 6.1 6.12 6.12-rt; do
		"$here/testing/vm/kernel-info.sh" "$c" > /dev/null 2>&1 ||
			{ echo "$c kernel"; return 0; }
	done
	return 1
}

if [ "${1:-}" = --missing ]; then
	missing
	exit
fi

pkgs=(
	# kernels the bench boots, and their headers for kqp.ko
	linux-image-amd64 linux-headers-amd64
	linux-image-6.12-amd64 linux-headers-6.12-amd64
	linux-image-6.12-rt-amd64 linux-headers-6.12-rt-amd64
	# the debug kernel and kselftest_harness.h come from this
	linux-source-6.12 bc bison flex libelf-dev libssl-dev
	# the guest
	qemu-system-x86 busybox-static kmod cpio xz-utils gzip iproute2
	# rdma-core: peers, tools and the headers libkqp implements
	rdma-core ibverbs-utils rdmacm-utils perftest
	libibverbs-dev librdmacm-dev
	# TCP programs preload.sh runs under libkqp-preload.so
	socat netcat-openbsd iperf3
	# make bench-floor's CPU times
	time
	# building and installing
	build-essential pkg-config dkms
	# make deb, and make check's look at the packages
	debhelper dh-dkms lintian
)

if [ "$(id -u)" -ne 0 ]; then
	echo "deps: run as root (apt-get install)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends "${pkgs[@]}"
