#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Secure Boot end-to-end check (issue 12), run by scripts/run-check.sh:
# OVMF with Debian's snakeoil keys enrolled, kernels signed with sbsign,
# kexec chains and crash kernels under lockdown.  short: the firmware check,
# a rerand chain on 6.1 (5 kexecs, stock kexec tries and refusals in
# generation 0) and two crash kernels on 6.12; long: chains and crash
# kernels on both kernels, plus a stock kexec -s chain on each; radar
# (tests/e2e/check-upstream.sh): a rerand chain on every kernel of
# $RERAND_KERNELS, whatever their versions.  TAP, with
# the plan first (sb_plan): run-check.sh holds the suite to it, so a check
# that returns early without a line cannot drop a case.
set -u
. "$(dirname "$0")/lib-sb.sh"

what=${1:-short}
case "$what" in short|long|radar) ;; *) echo "usage: $0 short|long|radar" >&2; exit 2 ;; esac
kexecs=${E2E_KEXECS:-5}

if [ -z "${RERAND_KERNELS:-}" ] || [ ! -d "$RERAND_KERNELS" ]; then
	e2e_note "RERAND_KERNELS is not set (no ../shared/kernels): no kernels to boot"
	echo "ok - e2e secure boot # SKIP no test kernels"
	exit 0
fi
loader=${E2E_SB_LOADER:-rerand}

# The plan: the TAP lines of a run that gets to the end of every check.
# Each count is the lines of the functions it names (lib-sb.sh, lib.sh).
# e2e_check (lib.sh) with -cpu max and no nokaslr: generations, alignment,
# inside RAM, distinct virtual bases; for rerand also distinct physical
# bases, KASLR_FLAG and verify, the entropy sources.
SB_N_E2E_RERAND=7
SB_N_E2E_STOCK=4
# chain: e2e_check, sb_check_lockdown 1, sb_check_base 2 (generation 0
# tries stock kexec: sb-init.sh's base=1), sb_check_staging 1; for rerand
# also sb_check_kseed 1 and sb_check_refusals 2.
sb_n_chain() { if [ "$1" = rerand ]; then echo $((SB_N_E2E_RERAND + 1 + 2 + 1 + 1 + 2)); else echo $((SB_N_E2E_STOCK + 1 + 2 + 1)); fi; }
# crash kernel, three panics: sb_check_crash's panic, load, lockdown and
# region lines (4) each; the first panic (base 1) adds sb_check_base (2)
# and, for rerand, the untrusted crash image's refusal (1); then for
# rerand sb_check_crash_distinct (1).
sb_n_crash() { if [ "$1" = rerand ]; then echo $((3 * 4 + 2 + 1 + 1)); else echo $((3 * 4 + 2)); fi; }
# sb_plan: the firmware check (2), the stock chains (long), the chains and
# the crash kernels of the loader.
sb_plan() {
	local nk=1
	[ "$what" = long ] && nk=2
	if [ "$what" = radar ]; then
		nk=$(ls "$RERAND_KERNELS"/vmlinuz-* 2>/dev/null | wc -l)
		echo $((nk * $(sb_n_chain "$loader")))
		return
	fi
	local p=$((2 + nk * $(sb_n_chain "$loader") + nk * $(sb_n_crash "$loader")))
	[ "$what" = long ] && p=$((p + 2 * $(sb_n_chain stock)))
	echo "$p"
}
echo "1..$(sb_plan)"
miss=$(sb_preflight)
[ -z "$miss" ] || { echo "not ok - e2e secure boot: $miss"; exit 0; }

# The Debian 12 default series and the newest one Debian 12 carries; in
# radar mode, the kernels given (the first one for the firmware check).
if [ "$what" = radar ]; then
	mapfile -t radar_kernels < <(ls "$RERAND_KERNELS"/vmlinuz-* 2>/dev/null | LC_ALL=C sort)
	k61=${radar_kernels[0]:-} k612=${radar_kernels[0]:-}
else
	k61=$(ls "$RERAND_KERNELS"/vmlinuz-6.1.*-cloud-amd64 2>/dev/null | LC_ALL=C sort | tail -n1)
	k612=$(ls "$RERAND_KERNELS"/vmlinuz-6.12.*-cloud-amd64 2>/dev/null | LC_ALL=C sort | tail -n1)
fi
[ -n "$k61" ] && [ -n "$k612" ] ||
	{ echo "not ok - e2e secure boot: no 6.1 and 6.12 cloud kernels in $RERAND_KERNELS"; exit 0; }
runs="$E2E_BUILD/runs/sb"
mkdir -p "$runs"
t0=$EPOCHSECONDS
short() { basename "$1" | sed 's/^vmlinuz-//; s/-cloud-amd64$/-cloud/'; }

# 1. The firmware enforces Secure Boot: signed starts, unsigned is refused.
signed61=$(sb_signed_kernel "$k61") && unsigned61=$(sb_unsigned_kernel "$k61") ||
	{ echo "not ok - e2e secure boot: cannot sign $(basename "$k61")"; exit 0; }
# (Not in radar mode: the firmware's own check, made on 6.1 by make check.
# Started from the ESP with no command line, the 7.2.12 and 7.3.4 stubs
# printed nothing on the serial port within 360 s on 7 Dec 2026, where
# 6.1's prints "EFI stub: UEFI Secure Boot is enabled."; the same kernels
# boot under Secure Boot through QEMU's -kernel in the chains below.)
[ "$what" = radar ] || sb_check_fw "fw-$(short "$k61")" "$signed61" "$unsigned61" "$runs/fw"

# 2. Stock kexec under lockdown, the harness's own baseline.
chain() { # NAME KERNEL LOADER GENS IMAGE [NAME=FILE...]
	local name=$1 kernel=$2 loader=$3 gens=$4 image=$5; shift 5
	local signed initrd dir rc=0 t=$EPOCHSECONDS
	signed=$(sb_signed_kernel "$kernel") ||
		{ echo "not ok - $name: cannot sign $(basename "$kernel") (sb_signed_kernel)"; return 0; }
	initrd=$(sb_initrd chain "$image" "$@") || { echo "not ok - $name: cannot build the initramfs"; return 0; }
	dir="$runs/$name"
	rm -rf "$dir"
	mkdir -p "$dir"
	e2e_note "$name: $(basename "$kernel") signed, Secure Boot firmware, cpu max, $gens kexecs by $loader"
	sb_qemu "$signed" "$initrd" "console=ttyS0,115200 panic=-1 no_timer_check e2e.role=chain e2e.gen=0 e2e.target=$gens e2e.loader=$loader" \
		"$dir/serial.log" 1 "${E2E_TIMEOUT:-$((120 + 60 * gens))}" || rc=$?
	e2e_note "$name: QEMU exit $rc after $((EPOCHSECONDS - t)) s"
	sb_check_chain "$name" "$dir/serial.log" "$rc" "$gens" "$loader" 1
	[ "$loader" = rerand ] && sb_check_refusals "$name" "$dir/serial.log"
	return 0
}
# (short: generation 0 of the rerand chain (6.1) and of the first crash run
# (6.12) try stock kexec both ways; long: also a stock chain per kernel.)
if [ "$what" = long ]; then
	for k in "$k61" "$k612"; do
		chain "stock-$(short "$k")" "$k" stock 2 "$(sb_signed_kernel "$k")"
	done
fi

# 3. rerand chains with signed images, and the refusals.  E2E_SB_LOADER=stock
# runs the same chains and crash kernels with stock kexec -s instead (to
# try the harness without the product).
chain_kernels=("$k61")
[ "$what" = long ] && chain_kernels=("$k61" "$k612")
[ "$what" = radar ] && chain_kernels=("${radar_kernels[@]}")
for k in "${chain_kernels[@]}"; do
	name="$loader-chain-$(short "$k")"
	if [ "$loader" = stock ]; then
		chain "$name" "$k" stock "$kexecs" "$(sb_signed_kernel "$k")"
		continue
	fi
	if ! sb_images "$k"; then
		echo "not ok - $name: chain of $kexecs kexecs with signed images: waiting: $SB_WAITING"
		echo "not ok - $name: refusals of an unsigned and an untrusted image: waiting: $SB_WAITING"
		continue
	fi
	chain "$name" "$k" rerand "$kexecs" "$SB_IMG_SIGNED" "kernel.signed=$(sb_signed_kernel "$k")" \
		"image.unsigned=$SB_IMG_UNSIGNED" "image.untrusted=$SB_IMG_UNTRUSTED"
done

# 4. Crash kernels: three panics per kernel, each a fresh boot (the
# distinct-offset check allows one chance repeat, so it needs three).
crash_kernels=("$k612")
[ "$what" = long ] && crash_kernels=("$k61" "$k612")
[ "$what" = radar ] && crash_kernels=()
for k in "${crash_kernels[@]}"; do
	name="$loader-crash-$(short "$k")"
	if [ "$loader" = stock ]; then
		initrd=$(sb_initrd crash "$(sb_signed_kernel "$k")")
	elif ! sb_images "$k"; then
		echo "not ok - $name: rerand crash kernels under Secure Boot, three times: waiting: $SB_WAITING"
		continue
	else
		initrd=$(sb_initrd crash "$SB_IMG_SIGNED" "kernel.signed=$(sb_signed_kernel "$k")" \
			"image.untrusted=$SB_IMG_UNTRUSTED")
	fi
	[ -n "$initrd" ] || { echo "not ok - $name: cannot build the initramfs"; continue; }
	dirs=()
	for i in 1 2 3; do
		# The stock tries and the refusal once per kernel are enough.
		sb_crash_boot "$name-$i" "$(sb_signed_kernel "$k")" "$initrd" "$loader" "$runs/$name-$i" \
			"$([ "$i" = 1 ] && echo 1 || echo 0)"
		sb_check_crash "$name-$i" "$runs/$name-$i" "$loader"
		dirs+=("$runs/$name-$i")
	done
	sb_check_crash_distinct "$name" "$loader" "${dirs[@]}"
done
e2e_note "e2e secure boot: $what set in $((EPOCHSECONDS - t0)) s"
exit 0
