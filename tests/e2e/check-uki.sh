#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# A chain of rerandomizing kexecs whose image is built from a unified kernel
# image: the shared 6.1 cloud kernel wrapped with bookworm's systemd-boot
# stub by objcopy (tests/mkuki.sh, with .cmdline, .osrel, .ucode and .initrd
# sections), then `rerand image UKI`.  The guest stages that image with
# `rerand load` and checks every generation as check-core does.  The UKI's
# own .initrd cannot be the harness initramfs (which carries the image), so
# the guest passes --initrd/--append itself; `rerand load --uki` is tested
# in tests/cli/test-uki.sh.  One run in short and long.
set -u
. "$(dirname "$0")/lib.sh"
what=${1:-short}
case "$what" in short|long) ;; *) echo "usage: $0 short|long" >&2; exit 2 ;; esac
kexecs=${E2E_KEXECS:-5}
STUB=/usr/lib/systemd/boot/efi/linuxx64.efi.stub

if [ -z "${RERAND_KERNELS:-}" ] || [ ! -d "$RERAND_KERNELS" ]; then
	echo "ok - e2e uki # SKIP RERAND_KERNELS not set: no kernel to wrap"
	exit 0
fi
[ -r "$STUB" ] || { echo "not ok - e2e uki: $STUB missing (scripts/deps.sh check: systemd-boot-efi)"; exit 0; }
[ -x "$E2E_RERAND" ] || { echo "not ok - e2e uki: $E2E_RERAND not built"; exit 0; }
command -v qemu-system-x86_64 >/dev/null ||
	{ echo "not ok - e2e uki: qemu-system-x86_64 missing (scripts/deps.sh check)"; exit 0; }

kernel=$RERAND_KERNELS/vmlinuz-6.1.0-57-cloud-amd64
ukidir=$E2E_BUILD/uki
rm -rf "$ukidir"
mkdir -p "$ukidir/ird"
echo "e2e-uki" > "$ukidir/ird/marker"
(cd "$ukidir/ird" && echo marker | cpio -o -H newc -R 0:0 --quiet) > "$ukidir/initrd.cpio"
printf 'ucode' > "$ukidir/ucode"
"$E2E_TOP/tests/mkuki.sh" -o "$ukidir/kernel.efi" -k "$kernel" -i "$ukidir/initrd.cpio" \
	-u "$ukidir/ucode" -c "console=ttyS0,115200 quiet" -r /etc/os-release ||
	{ echo "not ok - e2e uki: tests/mkuki.sh failed"; exit 0; }
type=$("$E2E_RERAND" inspect --json "$ukidir/kernel.efi" |
	python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["type"], len(d["sections"]))')
if [ "$type" = "uki 5" ]; then
	echo "ok - e2e uki: $(basename "$kernel") wrapped in a UKI with 5 parts (rerand inspect: $type)"
else
	echo "not ok - e2e uki: rerand inspect says '$type', not a UKI with 5 parts"
	exit 0
fi

# The harness builds its image with e2e_image: here from the UKI.
e2e_image() {
	local out=$ukidir/uki.img
	"$E2E_RERAND" image "$ukidir/kernel.efi" -o "$out" >&2 ||
		e2e_die "$E2E_RERAND image $ukidir/kernel.efi failed"
	echo "$out"
}

e2e_note "e2e uki: $kexecs kexecs of an image built from $ukidir/kernel.efi"
e2e_run uki-chain "$kernel" seabios max load "$kexecs" rerand
