#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The PE side of a rerand image, run by real firmware (OVMF under QEMU TCG),
# the image as \EFI\BOOT\BOOTX64.EFI on a FAT drive:
#  - Secure Boot off: OVMF starts the unsigned image; its EFI stub prints
#    its line and returns EFI_UNSUPPORTED (no kernel is started);
#  - Secure Boot on (Debian's OVMF_*_4M.snakeoil.fd: snakeoil key in db):
#    the image signed by `rerand image --sign-key/--sign-cert` passes the
#    firmware's own Authenticode check and runs (the same line);
#  - Secure Boot on: the unsigned image is refused by the firmware (no line).
# One QEMU at a time; each stops as soon as the firmware has answered.
set -u
. "$(dirname "$0")/lib.sh"
what=${1:-short}
case "$what" in short|long) ;; *) echo "usage: $0 short|long" >&2; exit 2 ;; esac

LINE="rerand: this image is for kexec only, not for firmware"
SB_CODE=/usr/share/OVMF/OVMF_CODE_4M.snakeoil.fd
SB_VARS=/usr/share/OVMF/OVMF_VARS_4M.snakeoil.fd
KEY=/usr/share/ovmf/PkKek-1-snakeoil.key
CERT=/usr/share/ovmf/PkKek-1-snakeoil.pem

if [ -z "${RERAND_KERNELS:-}" ] || [ ! -d "$RERAND_KERNELS" ]; then
	echo "ok - efi stub # SKIP RERAND_KERNELS not set: no kernel to build an image from"
	exit 0
fi
for f in "$E2E_OVMF_CODE" "$SB_CODE" "$SB_VARS" "$KEY" "$CERT"; do
	[ -r "$f" ] || { echo "not ok - efi stub: $f missing (scripts/deps.sh check: ovmf)"; exit 0; }
done
[ -x "$E2E_RERAND" ] || { echo "not ok - efi stub: $E2E_RERAND not built"; exit 0; }
command -v sbsign >/dev/null || { echo "not ok - efi stub: sbsign missing (sbsigntool)"; exit 0; }

dir=$E2E_BUILD/efistub
rm -rf "$dir"
mkdir -p "$dir"
kernel=$RERAND_KERNELS/vmlinuz-6.1.0-57-cloud-amd64
openssl rsa -passin pass:snakeoil -in $KEY -out "$dir/snakeoil.key" 2>/dev/null
"$E2E_RERAND" image "$kernel" -o "$dir/unsigned.img" ||
	{ echo "not ok - efi stub: rerand image failed"; exit 0; }
"$E2E_RERAND" image "$kernel" -o "$dir/signed.img" --sign-key "$dir/snakeoil.key" --sign-cert $CERT ||
	{ echo "not ok - efi stub: rerand image --sign-key failed"; exit 0; }
rm -f "$dir/snakeoil.key"

# efi_boot NAME IMAGE CODE VARS SECURE(0|1): boot OVMF with IMAGE as the
# removable-media loader; stop once the stub's line or a firmware refusal
# shows on the serial console, or after 240 s.  Log in $dir/NAME.log.
efi_boot() {
	local name=$1 image=$2 code=$3 vars=$4 secure=$5
	local esp=$dir/$name.esp log=$dir/$name.log
	mkdir -p "$esp/EFI/BOOT"
	cp "$image" "$esp/EFI/BOOT/BOOTX64.EFI"
	cp "$vars" "$dir/$name.vars.fd"
	local machine=q35 extra=()
	if [ "$secure" = 1 ]; then
		machine=q35,smm=on
		extra=(-global driver=cfi.pflash01,property=secure,value=on)
	fi
	qemu-system-x86_64 -accel "$E2E_ACCEL" -machine $machine "${extra[@]}" -m 512M -smp 1 \
		-nographic -monitor none -serial "file:$log" -no-reboot -net none \
		-drive "if=pflash,format=raw,readonly=on,file=$code" \
		-drive "if=pflash,format=raw,file=$dir/$name.vars.fd" \
		-drive "file=fat:$esp,format=raw,if=virtio,readonly=on" \
		</dev/null >"$log.stdout" 2>&1 &
	local pid=$! t=0
	while [ $t -lt 240 ] && kill -0 $pid 2>/dev/null; do
		if grep -aqE "Misc Device.*(Unsupported|Access Denied|Security Violation)" "$log" 2>/dev/null; then
			sleep 3   # let the firmware print what follows
			break
		fi
		sleep 2; t=$((t + 2))
	done
	kill $pid 2>/dev/null; wait $pid 2>/dev/null
	e2e_note "efi stub $name: $t s; firmware said: $(tr -d '\r' <"$log" | grep -aE "rerand:|BdsDxe|Access Denied|Security Violation|Unsupported" | head -6 | tr '\n' '|' | sed 's/\x1b\[[0-9;]*[A-Za-z]//g')"
}

efi_boot plain "$dir/unsigned.img" "$E2E_OVMF_CODE" "$E2E_OVMF_VARS" 0
# The stub's return value shows in the boot manager's next line.
if grep -aqF "$LINE" "$dir/plain.log" &&
   grep -aqE 'failed to start Boot[0-9A-F]+ "UEFI Misc Device".*: Unsupported' "$dir/plain.log"; then
	echo "ok - efi stub: OVMF (Secure Boot off) started the unsigned image: it printed '$LINE' and returned EFI_UNSUPPORTED"
else
	echo "not ok - efi stub: OVMF (Secure Boot off) did not show the stub's line (log: $dir/plain.log)"
fi
efi_boot secure-signed "$dir/signed.img" "$SB_CODE" "$SB_VARS" 1
if grep -aqF "$LINE" "$dir/secure-signed.log" &&
   grep -aqE 'failed to start Boot[0-9A-F]+ "UEFI Misc Device".*: Unsupported' "$dir/secure-signed.log"; then
	echo "ok - efi stub: OVMF with Secure Boot on verified the snakeoil-signed image and started it"
else
	echo "not ok - efi stub: OVMF with Secure Boot on did not start the signed image (log: $dir/secure-signed.log)"
fi
efi_boot secure-unsigned "$dir/unsigned.img" "$SB_CODE" "$SB_VARS" 1
if ! grep -aqF "$LINE" "$dir/secure-unsigned.log" &&
   grep -aqE 'failed to load Boot[0-9A-F]+ "UEFI Misc Device".*: (Access Denied|Security Violation)' \
	"$dir/secure-unsigned.log"; then
	echo "ok - efi stub: OVMF with Secure Boot on refused the unsigned image"
else
	echo "not ok - efi stub: OVMF with Secure Boot on did not refuse the unsigned image (log: $dir/secure-unsigned.log)"
fi
rm -rf "$dir"/*.esp
