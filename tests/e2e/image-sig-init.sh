#!/bin/busybox sh
# /init of the image-signature guest (check-image-sig.sh): under lockdown,
# ask the running kernel to load (never execute) each image with
# kexec_file_load, and once with kexec_load; per try one SIG-RESULT line
# (kexec's exit status and first line, /sys/kernel/kexec_loaded right after)
# and a SIG-KMSG line for each kernel message the try caused, so the host
# can tell a refusal for the signature from a load that failed otherwise.
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t securityfs none /sys/kernel/security 2>/dev/null
exec >/dev/ttyS0 2>&1
echo "SIG-LOCKDOWN $(cat /sys/kernel/security/lockdown 2>&1)"
# try NAME KEXEC-ARGS...: load, report, unload.
try() {
	name=$1; shift
	before=$(dmesg | wc -l)
	out=$(kexec "$@" --command-line=console=ttyS0 2>&1)
	rc=$?
	loaded=$(cat /sys/kernel/kexec_loaded 2>/dev/null)
	# First line only: kexec_load's failure report goes on to list segments.
	echo "SIG-RESULT $name rc=$rc loaded=${loaded:-?} $(echo "$out" | head -1)"
	echo "$out" | grep -m1 -i 'failed\|not permitted\|rejected' | sed "s/^/SIG-KEXEC $name | /"
	dmesg | tail -n +$((before + 1)) | sed 's/^\[[ 0-9.]*\] //; s/^/SIG-KMSG '"$name"' | /' | cut -c1-200
	kexec -s -u >/dev/null 2>&1
	kexec -u >/dev/null 2>&1
}
try signed-file -s -l /img/signed.img
try unsigned-file -s -l /img/unsigned.img
try tampered-file -s -l /img/tampered.img
try other-key-file -s -l /img/other.img
try signed-kexec_load -l /img/signed.img
echo SIG-DONE
poweroff -f
