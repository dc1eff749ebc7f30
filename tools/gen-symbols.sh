#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# gen-symbols.sh VERSION: print libkqp1's dpkg symbols file, made from
# lib/libkqp.map (every global of every version node, and each node's own
# symbol) and the .symver directives of lib/*.c (the hidden versions the
# map does not list).  debian/rules writes it to debian/libkqp1.symbols,
# and dpkg-gensymbols -c4 fails the build if the library built says
# otherwise, so the map, the library and the package cannot disagree.
# Every symbol has been there since VERSION, the first packaged one; a
# symbol added later gets the version that adds it, here.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
version=${1:?usage: gen-symbols.sh VERSION}

echo "libkqp.so.1 libkqp1 #MINVER#"
echo "* Build-Depends-Package: libkqp-dev"
{
	# NODE { global: sym; ... local: *; };  (comments stripped first)
	sed -e 's|/\*.*\*/||' -e '/\/\*/,/\*\//d' "$top/lib/libkqp.map" |
	awk '
		/^[A-Za-z0-9_.]+[ \t]*{/ { node = $1; sub(/{.*/, "", node)
					    print node "@" node; global = 0; next }
		/global:/ { global = 1; next }
		/local:/ { global = 0; next }
		/^}/ { node = ""; next }
		global && node != "" && /^[ \t]*[A-Za-z_][A-Za-z0-9_]*;/ {
			s = $1; sub(/;.*/, "", s); print s "@" node }'
	# __asm__(".symver impl, name@NODE");
	sed -n 's/.*\.symver [A-Za-z0-9_]*, *\([A-Za-z0-9_]*@[A-Za-z0-9_.]*\)".*/\1/p' \
		"$top"/lib/*.c
} | LC_ALL=C sort -u | sed "s/\$/ $version/; s/^/ /"
