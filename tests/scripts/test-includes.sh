#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The include rule of the layers (issue 41, point 6): src/shared/ includes
# only include/ and src/shared/, src/ nothing under daemon/, fleetd/ or
# kexec/, include/ only itself (scripts/check-includes.py, which resolves
# each #include as the Makefile's -I lists do).  The tree must pass; then
# negative controls on a copy of it: each planted include is refused with a
# line naming the file.  Static: no build needed.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/tap.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chk=$top/scripts/check-includes.py
plan 7

out=$("$chk" "$top" 2>&1)
check "the tree keeps the include rule${out:+: $out}" test -z "$out"

# plant FILE LINE WANT: a copy of the layers with LINE added to FILE; the
# checker must fail and name FILE with WANT in its line.
plant() {
	local d=$tmp/t$n o rc
	mkdir -p "$d"
	cp -r "$top/include" "$top/src" "$top/daemon" "$top/fleetd" "$top/kexec" "$d/"
	mkdir -p "$(dirname "$d/$1")"
	echo "$2" >>"$d/$1"
	o=$("$chk" "$d" 2>&1)
	rc=$?
	if [ "$rc" -eq 1 ] && grep -q "^$1:[0-9]*: .*$3" <<<"$o"; then
		ok "planted in $1: '$2' is refused ($3)"
	else
		nok "planted in $1: '$2' not refused as '$3' (exit $rc): $o"
	fi
}
plant src/pesig.c '#include "crypto_dl.h"' 'found only through another -I'
plant src/common/log.c '#include "../../daemon/rerandd.h"' 'reaches daemon/rerandd.h, above src/'
plant src/image.h '#include "../kexec/cli.h"' 'reaches kexec/cli.h, above src/'
plant src/shared/rng.c '#include "err.h"' 'reaches src/err.h; src/shared/ includes only'
plant src/shared/select.h '#include <stdio.h>' 'a system header in freestanding code'
plant include/rerand/abi.h '#include "../../src/kernel.h"' 'include/ includes only include/'
done_
