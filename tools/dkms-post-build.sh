#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# dkms POST_BUILD (see dkms.conf): keep the Module.symvers of the kqp.ko
# just built, beside dkms's record of that build, for kernel ULPs built
# against kqp (KBUILD_EXTRA_SYMBOLS).  dkms runs this in the build
# directory, which it deletes afterwards; DEST is
# /var/lib/dkms/kqp/VERSION/KERNELVER/ARCH, which dkms removes with the
# build.
set -eu
dest=${1:?usage: dkms-post-build.sh DEST}
install -D -m 0644 Module.symvers "$dest/Module.symvers"
