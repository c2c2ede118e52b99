#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The kernel radar (`make check-upstream`, issue 42): the newest cloud
# kernel of each Debian suite that has one (scripts/kernel-radar.sh:
# unstable, experimental, testing, stable-backports, fetched from Debian's
# archive and checked against its signed index), read by `rerand inspect`
# (its relocation layout, which the reader finds from the structure and
# refuses when it cannot prove) and run through the core chain
# (tests/e2e/check-core.sh radar: SeaBIOS with kexec_load and OVMF with
# kexec_file, 5 rerandomizing kexecs each, under QEMU TCG), then under
# Secure Boot (tests/e2e/check-secureboot.sh radar: snakeoil OVMF, the
# kernel snakeoil-signed, a chain of signed rerand images under lockdown).
# Ends with one table: kernel, suite, relocation layout, boots, distinct
# bases, Secure Boot checks, result.
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
# Secure Boot (OVMF with Debian's snakeoil keys, lockdown): each kernel
# snakeoil-signed, booted, and kexec'd into signed rerand images.  Its plan
# line is kept out of this suite's TAP and held here instead.
sbout=$(mktemp)
"$E2E_TOP/tests/e2e/check-secureboot.sh" radar >"$sbout"
plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$sbout" | head -n1)
grep -v '^1\.\.[0-9]*$' "$sbout" | tee -a "$out"
got=$(grep -c '^\(not \)\?ok ' "$sbout")
e2e_tap "$([ -n "$plan" ] && [ "$got" -eq "$plan" ]; echo $?)" \
	"upstream: the Secure Boot part printed its whole plan ($got of ${plan:-no plan} lines)"
rm -f "$sbout"

# the table: per kernel, its runs' boots, distinct-base checks and result
e2e_note "upstream: | kernel | suite | relocations | boots | distinct bases | Secure Boot | result |"
e2e_note "upstream: |---|---|---|---|---|---|---|"
while read -r f s pkg ver; do
	k=${f#vmlinuz-}
	booted=$(grep -c "^ok - $k-[a-z]*-max-[a-z]*: all [0-9]* generations booted" "$out")
	runs=$(grep -c "^\(not \)\?ok - $k-[a-z]*-max-[a-z]*: all [0-9]* generations booted" "$out")
	dist=$(grep -c "^ok - $k-[a-z]*-max-[a-z]*: \(virtual\|physical\) bases distinct" "$out")
	dall=$(grep -c "^\(not \)\?ok - $k-[a-z]*-max-[a-z]*: \(virtual\|physical\) bases distinct" "$out")
	sbk=rerand-chain-${k%-cloud-amd64}-cloud
	sbok=$(grep -c "^ok - $sbk:" "$out")
	sball=$(grep -c "^\(not \)\?ok - $sbk:" "$out")
	bad=$(grep -c "^not ok - \($k\|$sbk\)[-:]" "$out")
	res=pass
	[ "$bad" -eq 0 ] && [ "$runs" -gt 0 ] && [ "$sball" -gt 0 ] || res="FAIL ($bad not ok)"
	e2e_note "upstream: | $k | $s ($ver) | ${layout[$f]} | $booted of $runs runs | $dist of $dall checks | $sbok of $sball checks | $res |"
done <"$dir/RADAR"
exit 0
