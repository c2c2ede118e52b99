#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0-only
# /init of the comeback guest (tests/e2e/check-comeback.sh), laid over the
# rerandd guest's initramfs (lib-daemon.sh) with the kernel's own watchdog
# and ramoops modules.  QEMU runs with an i6300esb, -watchdog-action reset
# and WITHOUT -no-reboot: a reset brings the firmware back.
#   boot 0 (firmware): rerandd stages, `rerand now`: it arms the watchdog
#     (KexecWatchdogSec=) and kexecs.
#   boot 1 (the rerandomized kernel): the fault, before the watchdog driver
#     is loaded (its probe would stop the timer): "hang" spins PID 1 for
#     ever, "panic" crashes through sysrq (no crash kernel; panic= on the
#     command line reboots); "check": rerandd runs with a post-boot check
#     that fails, and must reboot through the firmware itself.
#   boot 2 (firmware again): rerandd names the cause; the status, JSON and
#     metrics go to the console; poweroff.
# Lines: RRC-BOOT n=N verify=rc=R, RRC-INJECT n=N kind=K, RRC-STATUS,
# RRC-JSON n=N {...}, RRC-METRIC, RRC-DONE, RRC-FAIL reason.

/bin/busybox mkdir -p /proc /sys /dev /tmp /run
/bin/busybox mount -t devtmpfs devtmpfs /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t tmpfs -o mode=0755 tmpfs /run
echo 1 >/proc/sys/kernel/printk

boot='?'
fail() {
	echo
	echo "RRC-FAIL boot=$boot $*"
	sync
	poweroff -f
	sleep 10
	exit 1
}

# module.param=value of the kernel command line: busybox insmod does not
# read it (kmod's modprobe does, on a real system).
cmdline_param() {
	local w
	for w in $(cat /proc/cmdline); do
		case "$w" in "$1="*) echo "${w#*=}"; return 0 ;; esac
	done
	return 1
}

load_modules() {
	local sor m
	sor=$(cmdline_param watchdog.stop_on_reboot) || sor=
	insmod /lib/comeback/watchdog.ko ${sor:+stop_on_reboot=$sor} || fail "insmod watchdog.ko"
	insmod /lib/comeback/i6300esb.ko || fail "insmod i6300esb.ko"
	i=0
	while [ ! -c /dev/watchdog0 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	[ -c /dev/watchdog0 ] || fail "no /dev/watchdog0 after loading i6300esb"
	echo "RRC-WATCHDOG boot=$boot bootstatus=$(cat /sys/class/watchdog/watchdog0/bootstatus) max_timeout=$(cat /sys/class/watchdog/watchdog0/max_timeout) stop_on_reboot=$(cat /sys/module/watchdog/parameters/stop_on_reboot)"
}

load_ramoops() {
	local a s
	a=$(cmdline_param ramoops.mem_address) && s=$(cmdline_param ramoops.mem_size) || return 0
	insmod /lib/comeback/reed_solomon.ko || fail "insmod reed_solomon.ko"
	insmod /lib/comeback/ramoops.ko mem_address=$a mem_size=$s record_size=0x10000 ||
		fail "insmod ramoops.ko"
	mkdir -p /sys/fs/pstore
	mount -t pstore pstore /sys/fs/pstore 2>/dev/null
	echo "RRC-PSTORE boot=$boot $(ls /sys/fs/pstore | tr '\n' ' ')"
}

i=0
until [ -b /dev/nvme0n1 ]; do
	i=$((i + 1))
	[ $i -le 200 ] || fail "no NVMe namespace after 20 s"
	sleep 0.1
done
mkdir -p /persist
mount -t ext4 /dev/nvme0n1 /persist || fail "cannot mount the state disk"
mkdir -p /boot /var/lib/rerand /etc
mount --bind /persist/boot /boot || fail "bind /boot"
mount --bind /persist/var/lib/rerand /var/lib/rerand || fail "bind /var/lib/rerand"
ln -sfn /persist/etc/rerand /etc/rerand
boot=$(cat /persist/test/boots 2>/dev/null || echo 0)
echo $((boot + 1)) >/persist/test/boots
sync
kind=$(cat /persist/test/scenario)
out=/persist/out
rerand verify >"$out/verify.$boot.txt" 2>&1
vrc=$?
echo
echo "RRC-BOOT n=$boot verify=rc=$vrc kind=$kind uptime=$(cut -d' ' -f1 /proc/uptime)"

show_status() {
	rerand status >"$out/status.$boot.txt" 2>&1
	rerand status --json >"$out/status.$boot.json" 2>&1
	cp /run/rerand/rerand.prom "$out/metrics.$boot.prom" 2>/dev/null
	sed "s/^/RRC-STATUS n=$boot | /" "$out/status.$boot.txt"
	echo "RRC-JSON n=$boot $(tr '\n' ' ' <"$out/status.$boot.json")"
	grep -E '^rerand_(failures_by_cause_total|reboots_total|consecutive_failures|confirm)' \
		"$out/metrics.$boot.prom" 2>/dev/null | sed "s/^/RRC-METRIC n=$boot | /"
}

start_daemon() {
	rerandd --config /etc/rerand/rerand.conf --config-dir /etc/rerand/rerand.conf.d \
		2>>"$out/rerandd.$boot.log" &
	dpid=$!
	# boot 0 never unmounts: its journal lines go to the console as they come
	[ "$boot" -eq 0 ] && tail -f "$out/rerandd.$boot.log" 2>/dev/null | sed "s/^/RRC-LOG n=$boot | /" &
	i=0
	while [ $i -lt 600 ]; do
		rerand status 2>/dev/null | grep -q '^staged: *yes' && return 0
		kill -0 "$dpid" 2>/dev/null || fail "rerandd exited (rerandd.$boot.log)"
		sleep 1
		i=$((i + 1))
	done
	fail "rerandd staged nothing in 600 s"
}

case "$boot" in
0)
	[ "$vrc" -eq 2 ] || fail "boot 0 should be the firmware's (verify rc $vrc)"
	load_modules
	load_ramoops
	start_daemon
	show_status
	rerand now >"$out/now.$boot.txt" 2>&1
	echo "RRC-NOW boot=$boot"
	sleep 400
	show_status
	fail "no reboot within 400 s of rerand now"
	;;
1)
	[ "$vrc" -eq 0 ] || fail "boot 1 is not the rerandomized kernel (verify rc $vrc)"
	load_ramoops
	sync
	umount /boot /var/lib/rerand
	umount /persist
	echo "RRC-INJECT n=$boot kind=$kind uptime=$(cut -d' ' -f1 /proc/uptime)"
	case "$kind" in
	check)
		# a post-boot check that fails: rerandd (the watchdog taken over
		# from the driver's probe) must send the boot back through the
		# firmware, the staged kernel unloaded
		mount -t ext4 /dev/nvme0n1 /persist || fail "cannot mount the state disk again"
		mount --bind /persist/boot /boot && mount --bind /persist/var/lib/rerand /var/lib/rerand ||
			fail "bind again"
		mkdir -p /persist/etc/rerand/post-boot.d
		printf '#!/bin/sh\necho "RRC-CHECK-HOOK ran, failing" >/dev/console\nexit 3\n' \
			>/persist/etc/rerand/post-boot.d/50-fail
		chmod 0755 /persist/etc/rerand/post-boot.d/50-fail
		load_modules
		rerandd --config /etc/rerand/rerand.conf --config-dir /etc/rerand/rerand.conf.d \
			2>>"$out/rerandd.$boot.log"
		fail "rerandd returned instead of rebooting through the firmware"
		;;
	hang)
		# PID 1 spins: userspace never comes up, nothing feeds anything
		while :; do :; done
		;;
	panic)
		echo 1 >/proc/sys/kernel/sysrq
		echo c >/proc/sysrq-trigger
		;;
	esac
	fail "the $kind injection returned"
	;;
2)
	load_modules
	load_ramoops
	start_daemon
	show_status
	kill -TERM "$dpid"
	wait "$dpid"
	sed "s/^/RRC-LOG n=$boot | /" "$out/rerandd.$boot.log"
	echo "RRC-DONE boot=$boot"
	sync
	umount /boot /var/lib/rerand
	umount /persist
	poweroff -f
	;;
*)
	fail "unexpected boot $boot"
	;;
esac
sleep 10
fail "fell through"
