#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The kernel's own verdict on rerand images (verify_pefile + PKCS#7 through
# kexec_file_load): a Debian kernel booted by OVMF with Debian's snakeoil
# key in db (so in the .platform keyring) and locked down loads, but never
# executes, each image with stock kexec-tools:
#   signed by snakeoil -> loaded; unsigned, one byte changed after signing,
#   or signed by a key not in db -> refused, each for its own reason (the
#   errno kexec reports and the kernel's own messages); kexec_load -> refused.
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
# By role, not by build: Debian 12's 6.1 cloud kernel, whatever its build.
kernel=$(e2e_pick cloud61) ||
	{ echo "not ok - image signatures: no 6.1 cloud kernel in $RERAND_KERNELS (scripts/kernels.sh pick cloud61)"; exit 0; }
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
	-kernel "$dir/vmlinuz" -initrd "$dir/initrd.cpio" -append 'console=ttyS0 panic=-1 dyndbg="file verify_pefile.c +p"' \
	</dev/null 2>"$log.stderr" | tr -d '\r' >"$log"
rc=${PIPESTATUS[0]}
e2e_note "image signatures: QEMU exit $rc; $(grep -E '^SIG-(LOCKDOWN|RESULT)' "$log" | cut -c1-300 | tr '\n' '|')"
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
# verdict DESC NAME RESULT KMSG...: the try NAME's SIG-RESULT line matches
# RESULT (kexec's status, /sys/kernel/kexec_loaded, kexec's own first line)
# and, for each KMSG, one of the kernel messages that try caused matches it
# (!KMSG: none does).
# A refusal is judged by its reason, not by a non-zero exit alone: a load
# that fails for any other reason (a file kexec cannot parse, no memory)
# names another errno and lacks the kernel's verdict.
verdict() {
	local desc=$1 name=$2 want=$3 line k bad=""
	shift 3
	line=$(res "$name")
	[ -n "$line" ] || bad=" no SIG-RESULT line"
	[ -z "$line" ] || grep -qE -- "$want" <<<"$line" || bad+=" result not /$want/"
	for k in "$@"; do
		case "$k" in
		!*) ! grep -E "^SIG-KMSG $name \| " "$log" | grep -qE -- "${k#!}" || bad+=" kernel message /${k#!}/" ;;
		*) grep -E "^SIG-KMSG $name \| " "$log" | grep -qE -- "$k" || bad+=" no kernel message /$k/" ;;
		esac
	done
	if [ -z "$bad" ]; then
		echo "ok - image signatures: $desc: ${line#SIG-RESULT }"
	else
		echo "not ok - image signatures: $desc: '${line#SIG-RESULT }' (${bad# }; log: $log)"
	fi
}
# The reasons, from kernel/kexec_file.c and crypto/asymmetric_keys/
# verify_pefile.c (the PEFILE lines are pr_debug, enabled by dyndbg= above):
# the kernel says "signature verification failed (-ERRNO)" and kexec-tools
# prints strerror(ERRNO): ENODATA (61) for no signature, EKEYREJECTED (129)
# for a digest that does not match, ENOKEY (126) for a signer in no keyring.
check "the guest kernel is locked down" "$(grep '^SIG-LOCKDOWN' "$log")" '\[(integrity|confidentiality)\]'
verdict "snakeoil-signed image accepted by kexec_file_load (positive control: loaded, digests match)" \
	signed-file '^SIG-RESULT signed-file rc=0 loaded=1 ' 'PEFILE: The digests match' '!signature verification failed'
verdict "unsigned image refused for having no signature (ENODATA)" unsigned-file \
	'^SIG-RESULT unsigned-file rc=[1-9][0-9]* loaded=0 kexec_file_load failed: No data available$' \
	'PEFILE: Unsigned PE binary' 'signature verification failed \(-61\)'
verdict "image changed after signing refused for its digest (EKEYREJECTED)" tampered-file \
	'^SIG-RESULT tampered-file rc=[1-9][0-9]* loaded=0 kexec_file_load failed: Key was rejected by service$' \
	'PEFILE: Digest mismatch' 'signature verification failed \(-129\)'
verdict "image signed by a key not in db refused for its signer (ENOKEY)" other-key-file \
	'^SIG-RESULT other-key-file rc=[1-9][0-9]* loaded=0 kexec_file_load failed: Required key not available$' \
	'signature verification failed \(-126\)'
# kexec_load hands the kernel no file to verify: IMA's arch policy (Secure
# Boot) refuses it with EACCES, or lockdown with EPERM; the kernel says which.
verdict "kexec_load refused under lockdown (no file to verify)" signed-kexec_load \
	'^SIG-RESULT signed-kexec_load rc=[1-9][0-9]* loaded=0 kexec_load failed: (Permission denied|Operation not permitted)$' \
	'ima: impossible to appraise a kernel image without a file descriptor|Lockdown: .*kexec of unsigned images is restricted'
