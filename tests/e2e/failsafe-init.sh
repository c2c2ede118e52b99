#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0-only
# /init of the fail-safe guest (check-failsafe.sh).  First boot: stage the
# deliberately corrupted rerand image in /boot/image with stock `kexec -l`
# (none of rerand load's checks), mark the disk, `kexec -e`.  The stage must
# fail to decode, print why (rerand.debug) and reset the machine; the
# firmware then boots this kernel again, and this init, seeing the mark,
# reports the second boot and `rerand verify` and powers off.
# Lines: FAILSAFE-BOOT n=1|2, FAILSAFE-KEXEC, FAILSAFE-VERIFY rc=R,
# FAILSAFE-DONE, FAILSAFE-FAIL reason.

/bin/busybox mkdir -p /proc /sys /dev /tmp
/bin/busybox mount -t devtmpfs devtmpfs /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
echo 1 >/proc/sys/kernel/printk

fail() {
	echo
	echo "FAILSAFE-FAIL $*"
	sync
	poweroff -f
	sleep 10
	exit 1
}

MARK=RERAND-FAILSAFE-STAGED
disk=/dev/nvme0n1
i=0
while [ ! -b "$disk" ] && [ $i -lt 100 ]; do sleep 0.2; i=$((i + 1)); done
[ -b "$disk" ] || fail "no $disk (the marker disk)"
mark=$(dd if="$disk" bs=${#MARK} count=1 2>/dev/null)

if [ "$mark" = "$MARK" ]; then
	echo
	echo "FAILSAFE-BOOT n=2"
	# The stage never finished: no status record may be left.
	out=$(rerand verify 2>&1)
	echo "FAILSAFE-VERIFY rc=$? $(echo "$out" | tr '\n' ' ')"
	echo "FAILSAFE-DONE"
	sync
	poweroff -f
	sleep 10
	exit 0
fi

echo
echo "FAILSAFE-BOOT n=1"
cmd="console=ttyS0,115200 panic=-1 rerand.debug"
out=$(kexec -l /boot/image --command-line="$cmd" 2>&1) ||
	fail "kexec -l: $(echo "$out" | tr '\n' ' ')"
printf '%s' "$MARK" | dd of="$disk" conv=notrunc 2>/dev/null || fail "cannot mark $disk"
sync
echo "FAILSAFE-KEXEC"
out=$(kexec -e 2>&1)
fail "kexec -e returned: $(echo "$out" | tr '\n' ' ')"
