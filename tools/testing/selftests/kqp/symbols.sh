#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# symbols.sh [LIBKQP]: does libkqp define every symbol of the installed
# rdma-core's librdmacm.so.1 and libibverbs.so.1, each on the version node
# rdma-core gives it?  A binary linked against rdma-core (Debian links with
# BIND_NOW) and run with LD_PRELOAD=libkqp.so binds each of its references,
# name@node, to the first library that defines exactly that; a gap would
# send the call to the real library, with kqp's objects.  The only gaps
# allowed are the ones symbols.allow lists with their reasons.  Runs on the
# host; prints TAP.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../../.." && pwd)
kqp=${1:-$top/lib/libkqp.so.1}
allow=$here/symbols.allow
libdir=${KQP_RDMA_LIBDIR:-/usr/lib/x86_64-linux-gnu}
rdmacm=$libdir/librdmacm.so.1
ibverbs=$libdir/libibverbs.so.1

# tap and show; a list of symbols is shown whole.
# shellcheck source=tools/testing/selftests/kqp/lib.sh
. "$here/lib.sh"
KQP_SHOW_LINES=100000

# name@node (hidden) or name@@node (default) of every function and object a
# library defines, without the version nodes' own absolute symbols.
syms() {
	nm -D --defined-only --with-symbol-versions "$1" |
		awk '$2 != "A" && NF == 3 { print $3 }' | sort -u
}

# "NODE PARENT" for every version node a library defines ("NODE -" for a
# node without one); the library's own soname entry is skipped.
nodes() {
	objdump -p "$1" | awk '
		/^Version definitions:/ { on = 1; next }
		/^Version References:/ { on = 0 }
		!on || NF == 0 { next }
		/^[0-9]/ { if (node != "") print node, parent; node = ($2 == "0x01") ? "" : $4; parent = "-"; next }
		{ parent = $1 }
		END { if (node != "") print node, parent }' | sort
}

# Only the symbols lines of the allow-list.
allowed() {
	grep -Ev '^[[:space:]]*(#|$)' "$allow" | awk '{ print $1 }' | sort -u
}

for f in "$kqp" "$rdmacm" "$ibverbs" "$allow"; do
	if [ ! -r "$f" ]; then
		echo "1..0 # SKIP $f is missing"
		exit 4
	fi
done

echo "TAP version 13"
echo "1..6"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
syms "$kqp" > "$tmp/kqp"
syms "$rdmacm" > "$tmp/rdmacm"
syms "$ibverbs" > "$tmp/ibverbs"
allowed > "$tmp/allow"

echo "# libkqp: $kqp"
echo "# rdma-core: $(dpkg-query -W -f '${Version}' librdmacm1 2>/dev/null || echo '?')," \
     "$(wc -l < "$tmp/rdmacm") symbols in librdmacm.so.1, $(wc -l < "$tmp/ibverbs") in libibverbs.so.1," \
     "$(wc -l < "$tmp/allow") allowed gaps"

# 1, 2: every symbol, name and node both, or an allowed gap.
for lib in rdmacm ibverbs; do
	comm -23 "$tmp/$lib" "$tmp/kqp" | comm -23 - "$tmp/allow" > "$tmp/gap-$lib"
	[ -s "$tmp/gap-$lib" ] && show < "$tmp/gap-$lib"
	[ ! -s "$tmp/gap-$lib" ]
	tap $? "lib$lib.so.1: libkqp defines each of its $(wc -l < "$tmp/$lib") symbols on the same node, or symbols.allow says why not"
done

# 3: nothing of libkqp's on an rdma-core node that rdma-core does not have
# there (a symbol on the wrong node binds nothing and hides the gap).
sort -u "$tmp/rdmacm" "$tmp/ibverbs" > "$tmp/rdma"
grep -E '@@?(IBVERBS|RDMACM)_' "$tmp/kqp" | comm -23 - "$tmp/rdma" > "$tmp/extra"
[ -s "$tmp/extra" ] && show < "$tmp/extra"
[ ! -s "$tmp/extra" ]
tap $? "libkqp puts no symbol on an rdma-core node where rdma-core does not"

# 4: the nodes libkqp shares with rdma-core inherit from the same parents.
nodes "$rdmacm" > "$tmp/nodes"
nodes "$ibverbs" >> "$tmp/nodes"
sort -o "$tmp/nodes" "$tmp/nodes"
nodes "$kqp" | grep -E '^(IBVERBS|RDMACM)_' > "$tmp/kqp-nodes"
comm -23 "$tmp/kqp-nodes" "$tmp/nodes" > "$tmp/bad-nodes"
# And every node rdma-core has, libkqp has (except the private one).
grep -v '^IBVERBS_PRIVATE_' "$tmp/nodes" | comm -23 - "$tmp/kqp-nodes" >> "$tmp/bad-nodes"
[ -s "$tmp/bad-nodes" ] && show < "$tmp/bad-nodes"
[ ! -s "$tmp/bad-nodes" ]
tap $? "libkqp has rdma-core's version nodes, with rdma-core's parents"

# 5: an allow-list entry must still be a gap, or it hides nothing and rots.
comm -23 "$tmp/allow" <(sort -u "$tmp/rdma") > "$tmp/stale"
comm -12 "$tmp/allow" "$tmp/kqp" >> "$tmp/stale"
[ -s "$tmp/stale" ] && show < "$tmp/stale"
[ ! -s "$tmp/stale" ]
tap $? "every symbols.allow entry is an rdma-core symbol that libkqp lacks"

# 6: and of the two kinds it may hold.
grep -Ev '^[^@]+@IBVERBS_1\.0$|^[^@]+@@?IBVERBS_PRIVATE_[0-9]+$' "$tmp/allow" > "$tmp/kinds"
[ -s "$tmp/kinds" ] && show < "$tmp/kinds"
[ ! -s "$tmp/kinds" ]
tap $? "symbols.allow holds only hidden IBVERBS_1.0 compat and IBVERBS_PRIVATE symbols"

exit $kqp_failed
