#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0-only
# /init of the benchmark guest (scripts/bench.sh): marks when init starts,
# reads the stage's status record, times staging of the next kernel and
# marks the moment right before `kexec -e`, following a plan of images.
#
# Command line: bench.gen=N bench.plan=L1,L2,... where each letter names the
# image that boots the next generation: s = /boot/stock (the distro
# bzImage, kexec -l), l = /boot/l.img (rerand, lz4), n = /boot/n.img (rerand,
# stored), h = /boot/h.img (rerand, lz4 HC).  Generation N was booted by
# plan[N] (1-based; generation 0 by QEMU).  Lines: BENCH-INIT, BENCH-VERIFY,
# BENCH-STAGE, BENCH-KEXEC, BENCH-DONE, BENCH-FAIL; the host time-stamps them.

/bin/busybox mount -t devtmpfs devtmpfs /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1
echo "BENCH-INIT"
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
echo 1 >/proc/sys/kernel/printk
up0=$(cut -d' ' -f1 /proc/uptime)

gen=
plan=
for w in $(cat /proc/cmdline); do
	case "$w" in
	bench.gen=*) gen=${w#bench.gen=} ;;
	bench.plan=*) plan=${w#bench.plan=} ;;
	esac
done

fail() {
	echo
	echo "BENCH-FAIL gen=${gen:-?} $*"
	poweroff -f
	sleep 10
	exit 1
}
case "$gen" in ''|*[!0-9]*) fail "no bench.gen=N on the command line" ;; esac

# plan_at I: the I-th letter (1-based) of the plan, empty past its end.
plan_at() { echo "$plan" | cut -d, -f"$1" -s; }
nplan=$(echo "$plan" | tr ',' '\n' | grep -c .)

booted=qemu
[ "$gen" -gt 0 ] && booted=$(plan_at "$gen")
echo "BENCH-BOOTED gen=$gen by=$booted uptime=$up0"

if [ "$booted" != s ] && [ "$booted" != qemu ]; then
	json=$(rerand verify --json 2>&1)
	rc=$?
	rnd=$(echo "$json" | tr -d ' \n' | sed -n 's/.*"randomized":\([a-z]*\).*/\1/p')
	echo "BENCH-VERIFY gen=$gen by=$booted rc=$rc randomized=$rnd"
fi

if [ "$gen" -ge "$nplan" ]; then
	echo "BENCH-DONE gen=$gen"
	poweroff -f
	sleep 10
	exit 0
fi

next=$((gen + 1))
m=$(plan_at "$next")
cmd=
for w in $(cat /proc/cmdline); do
	case "$w" in
	bench.gen=*|initrd=*|BOOT_IMAGE=*) ;;
	*) cmd="$cmd $w" ;;
	esac
done
cmd="${cmd# } bench.gen=$next"

# The same initramfs for the next kernel, rebuilt from the root filesystem
# (its memory is freed after boot).
cd / || fail "cd /"
find . -xdev | grep -v -E '^\./(tmp|proc|sys|dev)/' | cpio -o -H newc >/tmp/next.cpio 2>/dev/null ||
	fail "cpio -o failed"

t0=$(cut -d' ' -f1 /proc/uptime)
echo "BENCH-STAGE-BEGIN gen=$gen next=$m"
case "$m" in
s) out=$(kexec -l /boot/stock --initrd=/tmp/next.cpio --command-line="$cmd" 2>&1) ;;
l|n|h) out=$(rerand load "/boot/$m.img" --initrd /tmp/next.cpio --append "$cmd" 2>&1) ;;
*) fail "plan letter '$m' unknown" ;;
esac
rc=$?
t1=$(cut -d' ' -f1 /proc/uptime)
[ $rc -eq 0 ] || fail "staging $m: $(echo "$out" | tr '\n' ' ')"
echo "BENCH-STAGE gen=$gen next=$m guest_secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')"
rm -f /tmp/next.cpio
sync
echo "BENCH-KEXEC gen=$gen next=$m"
kexec -e
fail "kexec -e returned"
