#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Secure Boot end-to-end check (issue 12), run by scripts/run-check.sh:
# OVMF with Debian's snakeoil keys enrolled, kernels signed with sbsign,
# kexec chains and crash kernels under lockdown.  short: the firmware check,
# a rerand chain on 6.1 (5 kexecs, stock kexec tries and refusals in
# generation 0) and two crash kernels on 6.12; long: chains and crash
# kernels on both kernels, plus a stock kexec -s chain on each.  TAP.
set -u
. "$(dirname "$0")/lib-sb.sh"

what=${1:-short}
case "$what" in short|long) ;; *) echo "usage: $0 short|long" >&2; exit 2 ;; esac
kexecs=${E2E_KEXECS:-5}

if [ -z "${RERAND_KERNELS:-}" ] || [ ! -d "$RERAND_KERNELS" ]; then
	e2e_note "RERAND_KERNELS is not set (no ../shared/kernels): no kernels to boot"
	echo "ok - e2e secure boot # SKIP no test kernels"
	exit 0
fi
miss=$(sb_preflight)
[ -z "$miss" ] || { echo "not ok - e2e secure boot: $miss"; exit 0; }

# The Debian 12 default series and the newest one Debian 12 carries.
k61=$(ls "$RERAND_KERNELS"/vmlinuz-6.1.*-cloud-amd64 2>/dev/null | LC_ALL=C sort | tail -n1)
k612=$(ls "$RERAND_KERNELS"/vmlinuz-6.12.*-cloud-amd64 2>/dev/null | LC_ALL=C sort | tail -n1)
[ -n "$k61" ] && [ -n "$k612" ] ||
	{ echo "not ok - e2e secure boot: no 6.1 and 6.12 cloud kernels in $RERAND_KERNELS"; exit 0; }
runs="$E2E_BUILD/runs/sb"
mkdir -p "$runs"
t0=$EPOCHSECONDS
short() { basename "$1" | sed 's/^vmlinuz-//; s/-cloud-amd64$/-cloud/'; }

# 1. The firmware enforces Secure Boot: signed starts, unsigned is refused.
signed61=$(sb_signed_kernel "$k61") && unsigned61=$(sb_unsigned_kernel "$k61") ||
	{ echo "not ok - e2e secure boot: cannot sign $(basename "$k61")"; exit 0; }
sb_check_fw "fw-$(short "$k61")" "$signed61" "$unsigned61" "$runs/fw"

# 2. Stock kexec under lockdown, the harness's own baseline.
chain() { # NAME KERNEL LOADER GENS IMAGE [NAME=FILE...]
	local name=$1 kernel=$2 loader=$3 gens=$4 image=$5; shift 5
	local signed initrd dir rc=0 t=$EPOCHSECONDS
	signed=$(sb_signed_kernel "$kernel") || return 0
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
loader=${E2E_SB_LOADER:-rerand}
chain_kernels=("$k61")
[ "$what" = long ] && chain_kernels=("$k61" "$k612")
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
