#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# check-deb.sh TAPDIR: make check's package step (tools/testing/check.sh,
# as root, before the guests).  Builds the packages (make deb), runs lintian
# on them, installs them with apt-get, checks that dkms built and
# installed kqp.ko for the bench kernels 6.1 and 6.12, and does so again
# for a kernel installed later (dkms's kernel hook), builds a program
# with pkg-config against the installed libkqp-dev (check-deb-prog.c),
# runs tools/testing/guest-check-deb.sh in a 6.12 guest (the installed
# module and library; results in build/vm/6.12-deb, not the suite's
# build/vm/6.12), then purges the packages and checks that nothing they installed is
# left.  Its own TAP goes to TAPDIR/deb.tap, the guest's to
# TAPDIR/deb-guest-*.tap.
#
# It will not touch a kqp already installed (packages or make install):
# it fails instead.  Whatever happens, it purges what it installed.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
vm=$top/tools/testing/vm
tapdir=${1:?usage: check-deb.sh TAPDIR}
version=$(sed -n 's/^VERSION := //p' "$top/Makefile")
work=$top/build/deb-check
pkgs=(kqp-dkms libkqp1 libkqp-dev libkqp1-dbgsym)
guest_dir=6.12-deb
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
out=$tapdir/deb.tap
start=$(date +%s)

rm -rf "$work"
mkdir -p "$work" "$tapdir"
rm -f "$tapdir"/deb*.tap "$tapdir"/deb*.rc
: > "$out"
# tap and show, each also into $out; a log is shown whole.
# shellcheck source=tools/testing/selftests/kqp/lib.sh
. "$top/tools/testing/selftests/kqp/lib.sh"
# host_guest: guest-check-deb.sh.
# shellcheck source=tools/testing/host.sh
. "$top/tools/testing/host.sh" deb
KQP_TAP_FILE=$out
KQP_SHOW_LINES=100000
elapsed() { echo "# $1: $(( $(date +%s) - start )) s so far" | tee -a "$out"; }
finish() {
	echo "1..$kqp_n" >> "$out"
	exit 0
}

installed_pkgs() {
	dpkg-query -W -f '${db:Status-Status} ${Package}\n' "${pkgs[@]}" 2>/dev/null |
		awk '$1 != "not-installed" { print $2 }'
}

# Every name under the directories the packages and dkms write to.  A
# concurrent tools/dkms.sh check's kqp/VERSION.checkPID is not ours.
snapshot() {
	find /usr/src /var/lib/dkms /lib/modules/*/updates /usr/include \
	     "/usr/lib/$multiarch" /usr/lib/debug /usr/share/doc \
	     /usr/share/man/man7 /etc/kernel -xdev 2> /dev/null |
		grep -v -e '/kqp[-/][^/]*\.check[0-9]' | LC_ALL=C sort
}

make -s -C "$top" deb > "$work/build.log" 2>&1
rc=$?
[ $rc -eq 0 ] || show "$work/build.log"
tap $rc "make deb builds kqp-dkms, libkqp1 and libkqp-dev"
[ $rc -eq 0 ] || finish
debs=("$top"/build/deb/*.deb)
for p in kqp-dkms libkqp1 libkqp-dev; do
	ls "$top/build/deb/${p}_${version}_"*.deb > /dev/null 2>&1
	tap $? "build/deb has $p $version"
done
elapsed "make deb"

# Errors and warnings fail; a warning kqp keeps would be in an override
# with its reason (debian/*.lintian-overrides).
lintian --fail-on error,warning -I "${debs[@]}" > "$work/lintian.log" 2>&1
rc=$?
grep -v 'running with root privileges' "$work/lintian.log" | show
tap $rc "lintian: no error or warning (overrides apart)"
elapsed "lintian"

left=$(installed_pkgs)
rc=0
if [ -n "$left" ] || [ -e "/usr/src/kqp-$version" ]; then
	echo "# kqp is installed already (${left:-/usr/src/kqp-$version}): not touched" | tee -a "$out"
	rc=1
fi
tap $rc "no kqp installed before the package check"
[ $rc -eq 0 ] || finish

snapshot > "$work/before"
purged=0
purge() {
	[ "$purged" -eq 0 ] || return 0
	purged=1
	DEBIAN_FRONTEND=noninteractive apt-get purge -y "${pkgs[@]}" \
		> "$work/purge.log" 2>&1
}
trap purge EXIT

DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
	"${debs[@]}" > "$work/install.log" 2>&1
rc=$?
[ $rc -eq 0 ] || show "$work/install.log"
tap $rc "apt-get install ./build/deb/*.deb"
grep -E '^(Building for|Building initial module|Done\.|.*skipped)' \
	"$work/install.log" | show
elapsed "apt-get install"

for k in 6.1 6.12; do
	if ! info=$("$vm/kernel-info.sh" "$k"); then
		tap 1 "kernel $k is known"
		continue
	fi
	eval "$info"
	st=$(dkms status -m kqp -v "$version" -k "$KVER" 2> /dev/null)
	echo "# $st" >> "$out"
	rc=1
	case "$st" in *": installed"*) rc=0 ;; esac
	ls "/lib/modules/$KVER/updates/dkms/"kqp.ko* > /dev/null 2>&1 || rc=1
	tap $rc "dkms built and installed kqp.ko for $k ($KVER) in updates/dkms"
	modinfo -k "$KVER" -n kqp 2> /dev/null | grep -q "^/lib/modules/$KVER/updates/dkms/kqp.ko"
	tap $? "modprobe would find dkms's kqp.ko for $KVER (depmod ran)"
	grep -q kqp_create_qp "/var/lib/dkms/kqp/$version/$KVER/x86_64/Module.symvers" 2> /dev/null
	tap $? "dkms kept kqp's Module.symvers for $KVER, for kernel ULPs"
done

# A kernel installed or upgraded later: its package's postinst runs
# /etc/kernel/postinst.d/dkms, which must build kqp.ko for it (dkms.conf's
# AUTOINSTALL).  6.1 stands for it, its kqp.ko removed first.
upgrade() {
	local kver=$1
	dkms remove -m kqp -v "$version" -k "$kver" > "$work/upgrade.log" 2>&1 &&
		[ ! -e "/lib/modules/$kver/updates/dkms/kqp.ko" ] &&
		[ ! -e "/lib/modules/$kver/updates/dkms/kqp.ko.xz" ] &&
		/etc/kernel/postinst.d/dkms "$kver" >> "$work/upgrade.log" 2>&1 &&
		dkms status -m kqp -v "$version" -k "$kver" | grep -q ': installed' &&
		ls "/lib/modules/$kver/updates/dkms/"kqp.ko* > /dev/null 2>&1
}
if info=$("$vm/kernel-info.sh" 6.1); then
	eval "$info"
	upgrade "$KVER"
	rc=$?
	[ $rc -eq 0 ] || show "$work/upgrade.log"
	tap $rc "a kernel installed later (6.1, kqp.ko removed first): /etc/kernel/postinst.d/dkms builds kqp.ko for it"
	elapsed "kernel upgrade"
fi

# A program built against the installed libkqp-dev, the way a user would.
mv=$(env -u PKG_CONFIG_PATH pkg-config --modversion kqp 2>&1)
[ "$mv" = "$version" ]
tap $? "pkg-config --modversion kqp says $version (got $mv)"
# shellcheck disable=SC2046
cc -Wall -Werror -o "$work/prog" "$top/tools/testing/check-deb-prog.c" \
	$(env -u PKG_CONFIG_PATH pkg-config --cflags --libs kqp) > "$work/cc.log" 2>&1
rc=$?
[ $rc -eq 0 ] || show "$work/cc.log"
tap $rc "cc check-deb-prog.c \$(pkg-config --cflags --libs kqp) against the installed libkqp-dev"
needed=$(readelf -d "$work/prog" 2> /dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
rc=1
case " $needed " in *" libkqp.so.1 "*) rc=0 ;; esac
case " $needed " in *" librdmacm.so"*|*" libibverbs.so"*) rc=1 ;; esac
tap $rc "the program needs libkqp.so.1 and not rdma-core's libraries ($needed)"
if [ -e /dev/kqp ]; then
	tap 0 "the program on the host without the module # SKIP /dev/kqp is there"
else
	env -u LD_LIBRARY_PATH "$work/prog" unloaded > "$work/prog.log" 2>&1
	rc=$?
	show "$work/prog.log"
	tap $rc "the program runs on the host (installed libkqp.so.1): no /dev/kqp, ENOENT"
fi
elapsed "host checks"

# The guest: its own results directory, so the suite's 6.12 counts stay.
rm -f "$top/build/vm/$guest_dir/counts"
host_guest 6.12 "$guest_dir" > "$work/guest.log" 2>&1
grc=$?
res=$top/build/vm/$guest_dir
rc=1
if [ -r "$res/counts" ]; then
	read -r p f _ < "$res/counts"
	[ "$f" -eq 0 ] && [ "$p" -gt 0 ] && rc=0
	for t in "$res"/out/tap/*.tap; do
		cp "$t" "$tapdir/deb-guest-$(basename "$t")"
		[ -e "${t%.tap}.rc" ] && cp "${t%.tap}.rc" "$tapdir/deb-guest-$(basename "${t%.tap}").rc"
	done
fi
if [ $rc -ne 0 ] || [ $grc -ne 0 ]; then
	show "$work/guest.log"
fi
tap $rc "6.12 guest with the installed module and library ran (build/vm/$guest_dir)"
elapsed "6.12 guest"

purge
rc=$?
[ $rc -eq 0 ] || show "$work/purge.log"
tap $rc "apt-get purge ${pkgs[*]}"
left=$(installed_pkgs)
[ -z "$left" ]
tap $? "no kqp package left in dpkg's database ($left)"
st=$(dkms status -m kqp 2> /dev/null | grep -v '\.check[0-9]')
[ -z "$st" ]
tap $? "dkms status knows no kqp ($st)"
[ ! -e "/usr/src/kqp-$version" ]
tap $? "/usr/src/kqp-$version is gone"
mods=$(ls /lib/modules/*/updates/dkms/kqp.ko* 2> /dev/null)
[ -z "$mods" ]
tap $? "no kqp.ko left in /lib/modules/*/updates/dkms ($mods)"
snapshot > "$work/after"
diff "$work/before" "$work/after" > "$work/diff"
rc=$?
[ $rc -eq 0 ] || show "$work/diff"
tap $rc "the same files as before the install, under /usr/src, /var/lib/dkms, updates/, /usr/include, /usr/lib/$multiarch, /usr/lib/debug, /usr/share/doc, man7, /etc/kernel"
elapsed "package step"
finish
