#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# `make bench`, downtime part (issue 15, part 3): whole-reboot downtime in
# the Debian systemd guest of tests/e2e/lib-systemd.sh, stock against
# rerand, in alternating pairs within one guest (QEMU TCG, one guest).
#   stock:  `kexec -l` beforehand, then "go" and `systemctl kexec`;
#   rerand: "go", then `rerand now`: rerandd decides, checks its blockers
#           and reboots through the image it keeps staged.
# Downtime = host time stamp of the new boot's "RRB up" line, printed once
# multi-user.target is reached (rerand-bench.service), minus that of "go".
# Both modes run the same services (rerandd, the e2e writer, getty).
# The clock (DOWNTIME_CLOCK):
#   wall (default): no -icount (the guest's TSC is the host's);
#   icount: QEMU runs with -icount shift=DOWNTIME_SHIFT (0: one
#       instruction a virtual ns),sleep=DOWNTIME_SLEEP (default off),align=off:
#       the guest's clocks, its TSC among them, advance with the instructions
#       it executes and skip its idle time, so the host's load (which only
#       delays them) does not change what the guest measures.  sleep=on lets
#       idle time follow the host's clock instead.
# The root (DOWNTIME_RAMROOT, 1 by default under icount): a disk's I/O
#   completes in the host's time, so with a disk the guest's icount clock
#   still moved with the host (6 Dec 2026: with sleep=off one `mount -o
#   remount,ro` took 58 virtual s, the clock jumping to the next timer while
#   the host wrote).  With DOWNTIME_RAMROOT=1 there is no disk: the whole root
#   is the initrd (zstd, about 27 MiB: a Debian cloud initrd's size), systemd
#   its init (rdinit=), and each boot's initrd is built by the agent for the
#   next from the root archive that QEMU keeps in fw_cfg (bench/downtime/
#   rrb-fwcfg) plus the next step's number.  /boot and rerandd's cached image
#   come from fw_cfg too, at every boot before rerandd starts, so that, as
#   on a machine with a disk, they are not part of the initrd that every
#   kexec's purgatory hashes.  Both modes boot the same initrd and kexec it.
# Either way the guest stamps its own TSC (bench/downtime/stamp.sh, agent.sh)
# at "go", shutdown begins, systemd-shutdown's last hook, and multi-user.target,
# and bench/downtime-parse.sh splits each reboot with them; the host's time
# stamps of "go" and "up" give the wall-clock table as before.
# Usage: [DOWNTIME_DEADLINE=EPOCH] bench/downtime.sh OUT_DIR PAIRS [KERNEL]; writes
# OUT_DIR/data/downtime.tsv (step, mode, seconds) and the guest's logs in
# OUT_DIR/downtime/.  Never run by `make check`.
set -u
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:?usage: bench/downtime.sh OUT_DIR PAIRS [KERNEL]}
PAIRS=${2:?usage: bench/downtime.sh OUT_DIR PAIRS [KERNEL]}
export RERAND_KERNELS=${RERAND_KERNELS:-$TOP/../shared/kernels}
[ -n "${3:-}" ] && export RRD_KERNEL=$3
export E2E_BUILD=$OUT/downtime/e2e
# shellcheck source=../tests/e2e/lib-systemd.sh
. "$TOP/tests/e2e/lib-systemd.sh"
die() { echo "bench/downtime.sh: $*" >&2; exit 1; }

dir=$OUT/downtime
mkdir -p "$dir" "$OUT/data" || die "cannot create $dir"
clock=${DOWNTIME_CLOCK:-wall}
case "$clock" in
icount)
	shift_=${DOWNTIME_SHIFT:-0}
	[[ "$shift_" =~ ^[0-9]+$ ]] && [ "$shift_" -le 10 ] ||
		die "DOWNTIME_SHIFT=$shift_: not a fixed shift 0..10 (shift=auto is not deterministic)"
	sleep_=${DOWNTIME_SLEEP:-off}
	case "$sleep_" in on | off) ;; *) die "DOWNTIME_SLEEP=$sleep_: neither on nor off" ;; esac
	export RRS_QEMU_EXTRA="${RRS_QEMU_EXTRA:+$RRS_QEMU_EXTRA }-icount shift=$shift_,sleep=$sleep_,align=off"
	echo "icount $shift_ $sleep_" >"$dir/clock" ;;
wall) echo "wall" >"$dir/clock" ;;
*) die "DOWNTIME_CLOCK=$clock: neither icount nor wall" ;;
esac
# DOWNTIME_RAMROOT=1 (the default under icount): the root in RAM, see the top.
ram=${DOWNTIME_RAMROOT:-$([ "$clock" = icount ] && echo 1 || echo 0)}
case "$ram" in 0 | 1) ;; *) die "DOWNTIME_RAMROOT=$ram: neither 0 nor 1" ;; esac
[ "$ram" = 1 ] && echo "ramroot" >>"$dir/clock"
tsc=$TOP/build/bench-guest/rrb-tsc
[ -x "$tsc" ] || die "$tsc: not built (make build/bench-guest/rrb-tsc)"
fwcfg=$TOP/build/bench-guest/rrb-fwcfg
[ "$ram" = 0 ] || [ -x "$fwcfg" ] || die "$fwcfg: not built (make build/bench-guest/rrb-fwcfg)"
kernel=$(rrd_preflight downtime qemu-system-x86_64 mkfs.ext4 debootstrap systemctl) ||
	die "${kernel:-preflight failed}"
v=$("$E2E_RERAND" inspect "$kernel" 2>/dev/null | sed -n 's/^ *\(kernel \)\{0,1\}version: *\([^ ]*\).*/\2/p' | head -n 1)
[ -n "$v" ] || v=${kernel##*/vmlinuz-}

# The plan: pairs in alternating order (s r, r s, ...).
plan=()
for ((i = 0; i < PAIRS; i++)); do
	if ((i % 2)); then plan+=(r s); else plan+=(s r); fi
done

# The disk: the `make vm` guest (rrs_fill mode vm: rerandd, the writer, a
# getty) plus the bench agent, and a drop-in that keeps rerandd from
# rebooting unless the agent asked (its blocker command) and from aging out.
base=$(rrs_rootfs) || die "no base root (debootstrap)"
root=$(mktemp -d "$dir/root.XXXXXX") || die "mktemp"
trap 'rm -rf "$root"' EXIT
rrs_fill "$root" "$base" "$kernel" vm 0 || die "cannot fill the guest root"
lx0=/usr/local/libexec/rerand-bench
lx=$root$lx0
install -d "$lx" "$root/var/lib/rerand-bench" &&
	install -m 0755 "$TOP/bench/downtime/agent.sh" "$lx/agent" &&
	install -m 0755 "$TOP/bench/downtime/gate.sh" "$lx/gate" &&
	install -m 0755 "$tsc" "$lx/rrb-tsc" &&
	install -m 0755 "$TOP/bench/downtime/stamp.sh" "$lx/stamp" &&
	install -d "$root/usr/lib/systemd/system-shutdown" &&
	install -m 0755 "$TOP/bench/downtime/shutdown-hook.sh" "$root/usr/lib/systemd/system-shutdown/rerand-bench" &&
	install -m 0644 "$TOP/bench/downtime/rerand-bench.service" \
		"$TOP/bench/downtime/rerand-bench-mark.service" "$root/etc/systemd/system/" ||
	die "cannot install the bench agent"
systemctl --root="$root" enable rerand-bench.service rerand-bench-mark.service >/dev/null 2>&1 ||
	die "cannot enable rerand-bench"
printf '# bench/downtime.sh\n[Policy]\nMaxLayoutAge=30d\nBlockerCommand=/usr/local/libexec/rerand-bench/gate\nBlockerTimeout=10s\n' \
	>"$root/etc/rerand/rerand.conf.d/60-bench.conf"
# The kernel's rerand image in rerandd's cache, under the key and with the
# .sha256 record rerandd gives the images it builds (on a machine, rerandd
# builds it when the kernel hook asks, as the kernel is installed): rerandd
# finds it and does not build it at boot (with the root in RAM, every boot).
# Built here on the host, by this tree's rerand, for the bench only.
key=$("$E2E_RERAND" cache-key "$root/boot/vmlinuz-$v") || die "rerand cache-key failed"
install -d -m 0700 "$root/var/lib/rerand" "$root/var/lib/rerand/images" "$root/var/lib/rerand/kernels"
"$E2E_RERAND" image "$root/boot/vmlinuz-$v" -o "$root/var/lib/rerand/images/$key.img" ||
	die "rerand image built no image"
(cd "$root/var/lib/rerand/images" && sha256sum "$key.img" >"$key.img.sha256") || die "no image record"
printf '%s\n' "${key%%.*}" >"$root/var/lib/rerand/kernels/$v"
if [ "$ram" = 1 ]; then
	# The root in RAM (see the top): no fstab, nothing on disk.  rerandd
	# stages the initrd the agent builds for the next boot (with the host's
	# static busybox's cpio and rrb-fwcfg).  rerandd's stop is stamped from
	# its unit (the previous boot's journal is gone with its RAM): "+",
	# outside rerandd's sandbox, which has no /dev/kmsg.
	: >"$root/etc/fstab"
	# What no service here reads, so that the initrd is the size of a
	# Debian cloud initrd (about 30 MiB): every kexec hashes it in
	# kexec-tools' purgatory, and every boot unpacks it.  Both modes boot it.
	rm -rf "$root"/usr/share/{doc,man,info,locale,lintian,bash-completion,zsh,common-licenses,doc-base,bug,menu}/* \
		"$root"/usr/lib/udev/hwdb.bin "$root"/usr/lib/udev/hwdb.d/* "$root"/usr/lib/x86_64-linux-gnu/gconv \
		"$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* "$root"/var/cache/debconf/*-old
	find "$root/usr/share/zoneinfo" -mindepth 1 -maxdepth 1 ! -name Etc ! -name UTC -exec rm -rf {} +
	printf '[Stage]\nInitrd=/run/rerand-bench/initrd\n[Crash]\nInitrd=none\n' \
		>>"$root/etc/rerand/rerand.conf.d/60-bench.conf"
	# Until the agent has built the next initrd: an empty archive.
	printf 'd /run/rerand-bench 0755 root root -\nL /run/rerand-bench/initrd - - - - %s\n' \
		/usr/local/libexec/rerand-bench/empty.cpio >"$root/etc/tmpfiles.d/rerand-bench.conf"
	(cd "$root" && cpio -o -H newc --quiet </dev/null >"$lx/empty.cpio") || die "cannot make empty.cpio"
	install -d "$root/etc/systemd/system/rerandd.service.d" &&
		printf '[Service]\nExecStop=+%s stop-rerandd\nExecStopPost=+%s stopped-rerandd\n' \
			/usr/local/libexec/rerand-bench/stamp /usr/local/libexec/rerand-bench/stamp \
			>"$root/etc/systemd/system/rerandd.service.d/60-bench-stamp.conf" &&
		install -m 0755 "$E2E_BUSYBOX" "$lx/busybox" && install -m 0755 "$fwcfg" "$lx/rrb-fwcfg" &&
		: >"$root/var/lib/rerand-bench/ramroot" ||
		die "cannot set up the root in RAM"
fi
echo "${plan[*]}" >"$root/var/lib/rerand-bench/plan"
echo "/boot/vmlinuz-$v" >"$root/var/lib/rerand-bench/kernel"
echo "${DOWNTIME_SETTLE:-20}" >"$root/var/lib/rerand-bench/settle"
if [ "$ram" = 1 ]; then
	# /boot's kernel and rerandd's cached image stay out of the initrd, as on
	# a machine with a disk (and out of what every kexec hashes): QEMU keeps
	# them in fw_cfg, from which rerand-bench-boot.service puts them back at
	# every boot before rerandd starts (a copy by port I/O: a few ms of
	# the guest's clock, the same in both modes).
	(cd "$root" && { echo boot; echo var; echo var/lib; echo var/lib/rerand; echo var/lib/rerand/images
		ls -d boot/vmlinuz-* var/lib/rerand/images/*.img; } | cpio -o -H newc --quiet) >"$dir/boot.cpio" &&
		rm -f "$root"/boot/vmlinuz-* "$root"/var/lib/rerand/images/*.img ||
		die "cannot archive /boot"
	printf '%s\n' '[Unit]' 'Description=rerand downtime bench: /boot and the image cache from fw_cfg' \
		'DefaultDependencies=no' 'After=local-fs.target' 'Before=sysinit.target rerandd.service' \
		'[Service]' 'Type=oneshot' 'RemainAfterExit=yes' \
		"ExecStart=/bin/sh -c '$lx0/rrb-fwcfg opt/rerand-bench/boot | (cd / && $lx0/busybox cpio -idm)'" \
		'[Install]' 'WantedBy=sysinit.target' >"$root/etc/systemd/system/rerand-bench-boot.service"
	systemctl --root="$root" enable rerand-bench-boot.service >/dev/null 2>&1 ||
		die "cannot enable rerand-bench-boot"
	# The initrd of every boot: a small archive with the step (first, as
	# Debian's initrds put their uncompressed early archive first), then the
	# root, compressed with zstd as Debian's initramfs-tools does.  The root
	# archive reaches the guest again through fw_cfg (ram_qemu), from which
	# agent.sh builds the next boot's the same way.
	(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet | zstd -q -19 -T0) \
		>"$dir/root.cpio.zst" || die "cannot archive the root"
	b=$(mktemp -d "$dir/b.XXXXXX") || die mktemp
	mkdir -p "$b/var/lib/rerand-bench" && echo 0 >"$b/var/lib/rerand-bench/n" &&
		(cd "$b" && printf '%s\n' var var/lib var/lib/rerand-bench var/lib/rerand-bench/n |
			cpio -o -H newc --quiet) >"$dir/initrd.cpio" &&
		cat "$dir/root.cpio.zst" >>"$dir/initrd.cpio" || die "cannot make the first initrd"
	rm -rf "$b"
	echo "bench/downtime.sh: root in RAM, initrd $(($(stat -c %s "$dir/initrd.cpio") >> 20)) MiB (zstd)"
else
	e2e_mkfs "$root" "$dir/disk.img" "$RRS_DISK_MIB" rrroot || die "cannot make the disk image"
fi
rm -rf "$root"

# ram_qemu KERNEL INITRD LOG ALOG TIMEOUT: rrs_qemu's machine without a
# disk: the root is the initramfs, systemd its init (rdinit=), the root file
# system the kernel's rootfs (tmpfs, as no root= is given).
ram_qemu() {
	# tb-size: TCG's translation cache, 1 GiB by default, kept the old
	# kernel's and programs' translations across each kexec; the new
	# kernel's first writes to those pages (clearing them for the unpacked
	# root) then invalidated them one by one: the same boot took 2 min of
	# host time or over 30 (6 Dec 2026, `info jit`: 1.5 M blocks cached).
	# A smaller cache is flushed whole instead.  Host time only: the icount
	# clock counts the guest's instructions either way.
	local args=(-accel "tcg,tb-size=${DOWNTIME_TB_MIB:-128}" -machine q35 -m "${DOWNTIME_MEM:-3}G" -smp 1 -cpu max -no-reboot
		-nographic -nic none -kernel "$1" -initrd "$2"
		-fw_cfg "name=opt/rerand-bench/root,file=${2%/*}/root.cpio.zst"
		-fw_cfg "name=opt/rerand-bench/boot,file=${2%/*}/boot.cpio"
		-append "rdinit=/sbin/init console=ttyS0,115200 panic=-1 no_timer_check ${RRS_APPEND:-quiet}")
	[ -z "${RRS_QEMU_EXTRA:-}" ] || args+=($RRS_QEMU_EXTRA)
	echo "qemu-system-x86_64 ${args[*]}" >"$3.cmd"
	rm -f "$3.pid"
	# DOWNTIME_MONITOR=1: QEMU's human monitor on the socket LOG.mon, to
	# look at a guest that stopped printing (`info registers`).
	local mon=(-monitor none)
	[ "${DOWNTIME_MONITOR:-0}" = 1 ] && mon=(-monitor "unix:$3.mon,server,nowait")
	timeout -k 5 "$5" qemu-system-x86_64 "${args[@]}" "${mon[@]}" -serial stdio -serial "file:$4" \
		-pidfile "$3.pid" </dev/null 2>"$3.stderr" | e2e_stamp >"$3"
	return "${PIPESTATUS[0]}"
}

log=$dir/serial.log
tmo=${DOWNTIME_TIMEOUT:-$((900 + 420 * ${#plan[@]}))}
# DOWNTIME_DEADLINE (epoch seconds): stop the guest then at the latest; the
# pairs completed before it are what is measured, and data/downtime-cut says
# so (bench/downtime-parse.sh).
cut=0
if [ -n "${DOWNTIME_DEADLINE:-}" ]; then
	left=$((DOWNTIME_DEADLINE - EPOCHSECONDS))
	[ "$left" -ge 120 ] || die "DOWNTIME_DEADLINE leaves ${left}s: too little for one boot"
	if [ "$left" -lt "$tmo" ]; then tmo=$left; cut=1; fi
fi
echo "bench/downtime.sh: $(basename "$kernel"), ${#plan[@]} reboots (${plan[*]}), clock $(cat "$dir/clock"), timeout ${tmo}s"
# The agent ends with "RRB done" and `systemctl poweroff`, after which QEMU
# exits.  Once (4 Dec 2026) it kept running after the guest's "reboot: Power
# down" until it was stopped by hand, which would hold `make bench` until the
# timeout above (hours).  So QEMU gets DOWNTIME_GRACE seconds (120) after
# "RRB done" to exit, then SIGTERM; data/downtime-stopped says so.  Every
# reboot is measured by then.
grace=${DOWNTIME_GRACE:-120}
rm -f "$OUT/data/downtime-stopped"
stop_after_done() {
	local pid sp=
	# Its sleeps end with it, so none is left holding make's output open.
	trap '[ -n "$sp" ] && kill "$sp" 2>/dev/null; exit 0' TERM
	until grep -aq 'RRB done' "$log" 2>/dev/null; do sleep 5 & sp=$!; wait "$sp"; done
	sleep "$grace" & sp=$!
	wait "$sp"
	pid=$(cat "$log.pid" 2>/dev/null) || return 0
	[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = qemu-system-x86 ] || return 0
	echo "bench/downtime.sh: QEMU still running ${grace}s after the guest's 'RRB done': stopping it" >&2
	echo "$grace" >"$OUT/data/downtime-stopped"
	kill -TERM "$pid"
}
stop_after_done &
watcher=$!
rc=0
if [ "$ram" = 1 ]; then
	ram_qemu "$kernel" "$dir/initrd.cpio" "$log" "$dir/ttyS1.log" "$tmo" || rc=$?
else
	rrs_qemu "$kernel" "$dir/disk.img" "$log" "$dir/ttyS1.log" "$tmo" || rc=$?
fi
kill "$watcher" 2>/dev/null
wait "$watcher" 2>/dev/null
echo "$rc" >"$dir/qemu-rc"

[ "$cut" = 1 ] && date -u -d "@$DOWNTIME_DEADLINE" +%H:%M >"$dir/deadline"
echo "${plan[*]}" >"$dir/plan"
"$TOP/bench/downtime-parse.sh" "$OUT"
