#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The kernel radar (`make check-upstream`, issue 42): the newest cloud
# kernel of each Debian suite that has one (scripts/kernel-radar.sh:
# unstable, experimental, testing, stable-backports, fetched from Debian's
# archive and checked against its signed index), read by `rerand inspect`
# (its relocation layout, which the reader finds from the structure and
# refuses when it cannot prove) and run through the core chain
# (tests/e2e/check-core.sh radar: SeaBIOS with kexec_load and OVMF with
# kexec_file, 5 rerandomizing kexecs each, under QEMU TCG).  Ends with one
# table: kernel, suite, relocation layout, boots, distinct bases, result.
# Needs the network (Debian's archive); nothing is mocked.
# run-check: long only
# run-check: long timeout 7200
set -u
. "$(dirname "$0")/lib.sh"

err=$(mktemp)
out=$(mktemp)
trap 'rm -f "$err" "$out"' EXIT
if ! dir=$("$E2E_TOP/scripts/kernel-radar.sh" 2>"$err"); then
	sed 's/^/# /' "$err"
	echo "not ok - upstream: no radar kernels ($(tail -n1 "$err"))"
	exit 0
fi
sed 's/^/# /' "$err"
export RERAND_KERNELS=$dir

# what the reader makes of each kernel, before any guest
declare -A layout
while read -r f s pkg ver; do
	[ -n "${layout[$f]:-}" ] && continue
	if j=$("$E2E_RERAND" inspect --json=short "$dir/$f" 2>"$err"); then
		layout[$f]=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1])
print("%s, %d lists: %d 64-bit, %d 32-bit, %d inverse" % (d["codec"], d["reloc_layout"], d["relocs64"], d["relocs32"], d["inverse32"]))' "$j")
		e2e_tap 0 "upstream: rerand inspect reads $f ($s, $ver): ${layout[$f]}"
	else
		layout[$f]="refused: $(tail -n1 "$err")"
		e2e_tap 1 "upstream: rerand inspect reads $f ($s, $ver)" "${layout[$f]}"
	fi
done <"$dir/RADAR"

"$E2E_TOP/tests/e2e/check-core.sh" radar | tee "$out"

# the table: per kernel, its runs' boots, distinct-base checks and result
e2e_note "upstream: | kernel | suite | relocations | boots | distinct bases | result |"
e2e_note "upstream: |---|---|---|---|---|---|"
while read -r f s pkg ver; do
	k=${f#vmlinuz-}
	booted=$(grep -c "^ok - $k-[a-z]*-max-[a-z]*: all [0-9]* generations booted" "$out")
	runs=$(grep -c "^\(not \)\?ok - $k-[a-z]*-max-[a-z]*: all [0-9]* generations booted" "$out")
	dist=$(grep -c "^ok - $k-[a-z]*-max-[a-z]*: \(virtual\|physical\) bases distinct" "$out")
	dall=$(grep -c "^\(not \)\?ok - $k-[a-z]*-max-[a-z]*: \(virtual\|physical\) bases distinct" "$out")
	bad=$(grep -c "^not ok - $k-" "$out")
	res=pass
	[ "$bad" -eq 0 ] && [ "$runs" -gt 0 ] || res="FAIL ($bad not ok)"
	e2e_note "upstream: | $k | $s ($ver) | ${layout[$f]} | $booted of $runs runs | $dist of $dall checks | $res |"
done <"$dir/RADAR"
exit 0
