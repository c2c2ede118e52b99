#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The kernel's own verdict on rerand images (verify_pefile + PKCS#7 through
# kexec_file_load): a Debian kernel booted by OVMF with Debian's snakeoil
# key in db (so in the .platform keyring) and locked down loads, but never
# executes, each image with stock kexec-tools:
#   signed by snakeoil -> loaded; unsigned, one byte changed after signing,
#   or signed by a key not in db -> refused; kexec_load -> refused.
set -u
. "$(dirname "$0")/lib.sh"
what=${1:-short}
case "$what" in short|long) ;; *) echo "usage: $0 short|long" >&2; exit 2 ;; esac

SB_CODE=/usr/share/OVMF/OVMF_CODE_4M.snakeoil.fd
SB_VARS=/usr/share/OVMF/OVMF_VARS_4M.snakeoil.fd
KEY=/usr/share/ovmf/PkKek-1-snakeoil.key
CERT=/usr/share/ovmf/PkKek-1-snakeoil.pem

if [ -z "${RERAND_KERNELS:-}" ] || [ ! -d "$RERAND_KERNELS" ]; then
	echo "ok - image signatures # SKIP RERAND_KERNELS not set: no kernel"
	exit 0
fi
for f in "$SB_CODE" "$SB_VARS" "$KEY" "$CERT"; do
	[ -r "$f" ] || { echo "not ok - image signatures: $f missing (ovmf)"; exit 0; }
done
[ -x "$E2E_RERAND" ] || { echo "not ok - image signatures: $E2E_RERAND not built"; exit 0; }
for t in sbsign openssl cpio; do
	command -v $t >/dev/null || { echo "not ok - image signatures: $t missing"; exit 0; }
done

dir=$E2E_BUILD/image-sig
rm -rf "$dir"
mkdir -p "$dir/root/img"
kernel=$RERAND_KERNELS/vmlinuz-6.1.0-57-cloud-amd64
r=$dir/root
openssl rsa -passin pass:snakeoil -in $KEY -out "$dir/snakeoil.key" 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/other.key" -out "$dir/other.pem" \
	-days 3650 -subj "/CN=rerand test key not in db" 2>/dev/null
"$E2E_RERAND" image "$kernel" -o "$r/img/unsigned.img" &&
"$E2E_RERAND" image "$kernel" -o "$r/img/signed.img" --sign-key "$dir/snakeoil.key" --sign-cert $CERT &&
"$E2E_RERAND" image "$kernel" -o "$r/img/other.img" --sign-key "$dir/other.key" --sign-cert "$dir/other.pem" ||
	{ echo "not ok - image signatures: rerand image failed"; exit 0; }
cp "$r/img/signed.img" "$r/img/tampered.img"
printf '\x55' | dd of="$r/img/tampered.img" bs=1 seek=$((0x400 + 0x8000)) conv=notrunc status=none
# The guest kernel itself must pass Secure Boot: sign it with snakeoil too.
sbsign --key "$dir/snakeoil.key" --cert $CERT --output "$dir/vmlinuz" "$kernel" >/dev/null 2>&1 ||
	{ echo "not ok - image signatures: sbsign of the guest kernel failed"; exit 0; }
rm -f "$dir/snakeoil.key" "$dir/other.key"

mkdir -p "$r"/{bin,sbin,proc,sys,dev,tmp}
install -m 0755 "$E2E_BUSYBOX" "$r/bin/busybox"
for a in $("$E2E_BUSYBOX" --list); do [ "$a" = busybox ] || ln -s busybox "$r/bin/$a"; done
e2e_copy_bin "$E2E_KEXEC" "$r" /sbin/kexec || { echo "not ok - image signatures: cannot copy kexec"; exit 0; }
install -m 0755 "$E2E_DIR/image-sig-init.sh" "$r/init"
mknod -m 0600 "$r/dev/console" c 5 1 2>/dev/null || true
(cd "$r" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$dir/initrd.cpio"

cp $SB_VARS "$dir/vars.fd"
log=$dir/serial.log
timeout -k 5 600 qemu-system-x86_64 -accel "$E2E_ACCEL" -machine q35,smm=on -m 1G -smp 1 -cpu max \
	-global driver=cfi.pflash01,property=secure,value=on \
	-drive "if=pflash,format=raw,readonly=on,file=$SB_CODE" \
	-drive "if=pflash,format=raw,file=$dir/vars.fd" \
	-nographic -monitor none -serial stdio -no-reboot -net none \
	-kernel "$dir/vmlinuz" -initrd "$dir/initrd.cpio" -append "console=ttyS0 panic=-1" \
	</dev/null 2>"$log.stderr" | tr -d '\r' >"$log"
rc=${PIPESTATUS[0]}
e2e_note "image signatures: QEMU exit $rc; $(grep -E '^SIG-' "$log" | cut -c1-300 | tr '\n' '|')"
rm -rf "$r/img"

res() { grep -E "^SIG-RESULT $1 " "$log" | head -1; }
grep -q "SIG-DONE" "$log" || echo "not ok - image signatures: the guest did not finish (log: $log)"
check() {
	local desc=$1 line=$2 want=$3
	if [ -n "$line" ] && echo "$line" | grep -qE -- "$want"; then
		echo "ok - image signatures: $desc: ${line#SIG-RESULT }"
	else
		echo "not ok - image signatures: $desc: '${line#SIG-RESULT }' (want /$want/; log: $log)"
	fi
}
check "the guest kernel is locked down" "$(grep '^SIG-LOCKDOWN' "$log")" '\[(integrity|confidentiality)\]'
check "snakeoil-signed image accepted by kexec_file_load" "$(res signed-file)" 'rc=0'
check "unsigned image refused" "$(res unsigned-file)" 'rc=[1-9]'
check "image changed after signing refused" "$(res tampered-file)" 'rc=[1-9]'
check "image signed by a key not in db refused" "$(res other-key-file)" 'rc=[1-9]'
check "kexec_load refused under lockdown" "$(res signed-kexec_load)" 'rc=[1-9]'
