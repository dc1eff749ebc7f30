# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# kqp: kqp.ko (Kbuild, built from kernel/) and libkqp (lib/).
#
#   make help                 this list
#   make                      module for KDIR (default: see tools/kdir.sh) + library
#   make KDIR=/lib/modules/VER/build
#   make module MODDIR=DIR    build the module in DIR, away from the sources
#   make check                the whole suite, on every kernel in KERNELS
#   make pair                 the two-guest tests alone, on PAIR_KERNEL (6.12)
#   make demo                 kqp working in a guest
#   make bench                rcbench against libkqp and rdma-core in a 6.12 guest,
#                             kqp/rdma-core per test (BENCH_ROUNDS, BENCH_ARGS)
#   make bench-perftest       perftest (-R) stock against preloaded with libkqp,
#                             both sides each, in a 6.12 guest (PERFTEST_ROUNDS)
#   make bench-floor          what bounds the bench's ratios: rxe's own QP create
#                             under cmtime, CPU per message (FLOOR_ROUNDS)
#   make bench-breakdown      where an 8 B ping-pong's one-way time goes, stage
#                             by stage, rdma-core beside kqp (BREAKDOWN_ROUNDS)
#   make fuzz                 the ioctl fuzzer on the debug kernel for as long as
#                             asked (FUZZ_SECONDS, FUZZ_CALLS, FUZZ_SEED, ...)
#   make perftest-all         every perftest program over kqp, each side preloaded
#                             and both, with its options (PERFTEST_KERNEL, 6.12)
#   make deps                 install what the build and the bench need (apt)
#   make install | install-lib | install-man | uninstall
#   make deb                  Debian packages kqp-dkms, libkqp1, libkqp-dev
#                             in build/deb (debian/, dpkg-buildpackage)
#
# A target's script is tools/.../TARGET.sh, and what it runs in a guest
# guest-TARGET.sh beside it (doc/testing.md, Scripts and code checks).

VERSION := 0.1.0
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
MANDIR ?= $(PREFIX)/share/man
DESTDIR ?=

# The bench's kernels: Debian's 6.1, 6.12 and 6.12 PREEMPT_RT, and the 6.12 debug build.
# tools/testing/vm/kernel-info.sh says how each name is found.
KERNELS ?= 6.1 6.12 6.12-rt debug
# Those of them on which make check runs the two-guest tests too.
PAIR_KERNELS ?= 6.1 6.12

KDIR ?=
MODDIR ?=
export KERNELS PAIR_KERNELS VERSION

.PHONY: help all module lib selftests bench bench-perftest bench-floor bench-breakdown check pair demo deps fuzz perftest-all install \
	install-lib install-man uninstall clean clean-module deb

all: module lib

# The list at the top of this file.
help:
	@sed -n 's/^#   //p' $(firstword $(MAKEFILE_LIST))

# Out-of-tree objects land beside the sources, so a build for a second
# kernel must not share them: MODDIR gets a symlink farm of the sources,
# and of nothing else.  Objects of an in-tree build (make module without
# MODDIR) would otherwise be linked in too: Kbuild would take them as up
# to date, or write through the links into the tree.
module:
	@kdir='$(KDIR)'; [ -n "$$kdir" ] || kdir=$$(tools/kdir.sh) || exit 1; \
	moddir='$(MODDIR)'; \
	if [ -n "$$moddir" ]; then \
		mkdir -p "$$moddir" && moddir=$$(cd "$$moddir" && pwd) && \
		rm -rf "$$moddir/kernel" "$$moddir/include" "$$moddir/Kbuild" && \
		cp -rs $(CURDIR)/kernel $(CURDIR)/include $(CURDIR)/Kbuild "$$moddir/" && \
		find "$$moddir/kernel" "$$moddir/include" -type l \
			! -name '*.[ch]' -delete; \
	else moddir=$(CURDIR); fi; \
	$(MAKE) -C "$$kdir" M="$$moddir" modules

lib:
	$(MAKE) -C lib VERSION=$(VERSION) PREFIX=$(PREFIX) LIBDIR=$(LIBDIR) \
		INCLUDEDIR=$(INCLUDEDIR)

selftests: lib
	$(MAKE) -C tools/testing/selftests/kqp

check:
	@tools/testing/check.sh

# Two guests of one kernel joined by a QEMU link: tools/testing/vm/pair.sh.
# Builds what the guests run first.
PAIR_KERNEL ?= 6.12
pair: selftests
	@tools/testing/vm/run.sh --pair $(PAIR_KERNEL)

# The kernel the bench boots (a name tools/testing/vm/kernel-info.sh knows).
BENCH_KERNEL ?= 6.12

# Installs what is missing and builds lib and tools/bench itself.
bench:
	@tools/bench/bench.sh $(BENCH_KERNEL)

bench-perftest:
	@tools/bench/bench-perftest.sh $(BENCH_KERNEL)

# What bounds the bench's ratios: tools/bench/bench-floor.sh.
bench-floor:
	@tools/bench/bench-floor.sh $(BENCH_KERNEL)

# Where the ping-pong's time goes: tools/bench/bench-breakdown.sh.
bench-breakdown:
	@tools/bench/bench-breakdown.sh $(BENCH_KERNEL)

demo:
	@tools/testing/demo.sh

# tools/testing/fuzz.sh says what the FUZZ_* variables do.
fuzz:
	@tools/testing/fuzz.sh

# perftest's whole set over kqp (make check runs each program once):
# tools/testing/perftest-all.sh.
perftest-all:
	@tools/testing/perftest-all.sh

deps:
	tools/deps.sh

# The module goes to dkms as sources in /usr/src/kqp-$(VERSION), with the
# kernel API's header (include/linux/kqp.h) for kernel ULPs; each dkms build
# keeps its Module.symvers in /var/lib/dkms/kqp/$(VERSION)/KVER/ARCH.
install: install-lib install-man
	tools/dkms.sh install $(VERSION)

install-lib: lib
	$(MAKE) -C lib install DESTDIR=$(DESTDIR) VERSION=$(VERSION) \
		PREFIX=$(PREFIX) LIBDIR=$(LIBDIR) INCLUDEDIR=$(INCLUDEDIR) \
		PKGCONFIGDIR=$(PKGCONFIGDIR)

install-man:
	install -d $(DESTDIR)$(MANDIR)/man7
	install -m 0644 doc/kqp.7 $(DESTDIR)$(MANDIR)/man7/

uninstall:
	-tools/dkms.sh uninstall $(VERSION)
	rm -f $(DESTDIR)$(MANDIR)/man7/kqp.7
	$(MAKE) -C lib uninstall DESTDIR=$(DESTDIR) LIBDIR=$(LIBDIR) \
		INCLUDEDIR=$(INCLUDEDIR) PKGCONFIGDIR=$(PKGCONFIGDIR)

# Built in a copy of the tree under build/deb, so that neither the build
# nor dpkg-buildpackage's output (written to the parent directory) lands
# in the sources; the copy goes afterwards, the packages stay.
DEB_SRC = build/deb/kqp-$(VERSION)
deb:
	rm -rf build/deb
	mkdir -p $(DEB_SRC)
	tar -c --exclude=./build --exclude=./.git --exclude='*.o' \
		--exclude='*.ko' . | tar -x -C $(DEB_SRC)
	cd $(DEB_SRC) && dpkg-buildpackage -us -uc -b
	rm -rf $(DEB_SRC)

clean-module:
	rm -rf kernel/*.o kernel/.*.cmd .*.cmd *.o .module-common.o *.ko \
		*.mod *.mod.c modules.order Module.symvers

clean: clean-module
	rm -rf build
	$(MAKE) -C lib clean
	$(MAKE) -C tools/testing/selftests/kqp clean
	$(MAKE) -C tools/testing/selftests/kqp/ulp clean
	$(MAKE) -C tools/bench clean
