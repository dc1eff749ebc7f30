#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build (once) the kqp debug kernel from Debian's linux-source-6.12 with the
# options in debug.config, and print the build directory.  The result is
# cached under $KQP_CACHE keyed by the fragment's hash and the source
# package version, so a machine that already has it never rebuilds.
#
# Usage: build-debug-kernel.sh        prints the kernel build dir on stdout
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
frag=$here/debug.config
cache=${KQP_CACHE:-/var/cache/kqp}
tarball=/usr/src/linux-source-6.12.tar.xz

[ -r "$tarball" ] || { echo "build-debug-kernel: $tarball missing (make deps)" >&2; exit 1; }
srcver=$(dpkg-query -W -f '${Version}' linux-source-6.12)
key=$( (cat "$frag"; echo "$srcver") | sha256sum | cut -c1-12)
dest=$cache/debug-6.12-$key

log() { echo "build-debug-kernel: $*" >&2; }

# One build at a time: make check starts one in the background, and the
# debug guest's run.sh waits here for it instead of starting another.
mkdir -p "$cache"
exec 9> "$dest.lock"
if ! flock -n 9; then
	log "another build of $dest runs; waiting for it"
	flock 9
fi

if [ -e "$dest/.kqp-done" ]; then
	echo "$dest"
	exit 0
fi

tmp=$dest.tmp
rm -rf "$tmp"
mkdir -p "$tmp"
log "unpacking linux-source $srcver into $tmp"
tar -xJf "$tarball" -C "$tmp" --strip-components=1

cd "$tmp"
log "configuring (x86_64_defconfig + kvm_guest.config + $(basename "$frag"))"
make -s x86_64_defconfig >&2
make -s kvm_guest.config >&2
scripts/kconfig/merge_config.sh -m .config "$frag" >&2
make -s olddefconfig >&2

# merge_config and scripts/config ignore names that no longer exist; check
# that every request survived olddefconfig.
bad=0
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=*)
		grep -qxF "$line" .config || { log "not applied: $line"; bad=1; } ;;
	"# CONFIG_"*" is not set")
		sym=${line#\# }; sym=${sym%% *}
		if grep -q "^$sym=" .config; then log "still set: $sym"; bad=1; fi ;;
	esac
done < "$frag"
[ $bad -eq 0 ] || { log "config check failed"; exit 1; }

jobs=$(( $(nproc) + 1 ))
log "building bzImage and modules with -j$jobs (about 15 minutes on 2 cores)"
start=$(date +%s)
make -s -j"$jobs" bzImage modules >&2
log "built in $(( $(date +%s) - start )) s"

mv "$tmp" "$dest"
touch "$dest/.kqp-done"
echo "$dest"
