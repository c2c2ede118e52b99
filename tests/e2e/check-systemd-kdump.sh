#!/bin/bash
# run-check: long only (a real kdump under TCG: three boots per guest, 15-30 min)
# SPDX-License-Identifier: GPL-2.0-only
# kdump coexists (issue 38, point 4) on a real Debian machine: the Debian 12
# systemd guest of check-systemd.sh (RRS_SUITE=trixie: Debian 13) with
# Debian's own kdump-tools and makedumpfile installed and enabled by
# debootstrap (RRS_KDUMP=1, lib-systemd.sh), crashkernel=384M on the command
# line of a 2 GiB guest, and rerand's package installed by dpkg -i at boot 0
# (RRS_INSTALL=deb).  QEMU runs without -no-reboot (RRS_RESET=1): when
# kdump-tools' service in the crash kernel has saved the dump and runs
# `reboot -f`, the firmware boots QEMU's -kernel again.  Agent:
# tests/e2e/debian/kdump-agent.sh (TAP lines on ttyS1); the crash kernel's
# probe: tests/e2e/debian/kdump-probe.sh (a unit WantedBy= and Before=
# kdump-tools-dump.service).  One guest per kind, RRKD_JOBS (2) at a time:
#   stock:  kdump-tools as installed.  rerandd must leave the crash kernel to
#           it and say so (status "crash kernel: left to kdump-tools",
#           --json "state":"other-loader", the journal), kdump-tools' kernel
#           stays loaded; rerand doctor's crash line says kdump-tools owns
#           it, its exit status follows its fail lines; no watchdog device:
#           doctor warns.  Then `echo c > /proc/sysrq-trigger`: the crash
#           kernel (kdump-tools', rerand verify there: absent) writes a
#           vmcore under /var/crash, which must be non-trivial, makedumpfile's
#           format, and hold the first kernel's log (a marker written to
#           /dev/kmsg before the crash, read back with makedumpfile
#           --dump-dmesg); the machine comes back by itself.
#   rerand: the same, then docs/kdump.md's second way: KDUMP_KERNEL= a rerand image of the
#           running kernel, rerandd's [Crash] Mode=off, kdump-config unload
#           and load.  The crash kernel that writes the dump must have run at
#           a randomized base: `rerand verify` in it says randomized and
#           crash, and its _text in /proc/kallsyms (read by the test only,
#           never printed) is not its link address.
#   watchdog: boot 0 only, no crash: the 6.12 cloud kernel (the 6.1 one has
#           no i6300esb driver) with QEMU's i6300esb and its own watchdog.ko
#           and i6300esb.ko from its Debian package in the root, as
#           check-systemd-comeback.sh has them: doctor's watchdog lines must
#           be ok where stock's warn; the crash checks of boot 0 as above.
#   plant:  (not in the default list) the self-check: stock with two planted
#           defects, rerandd told to look for no other loader ([Paths]
#           CrashLoaderWants= empty: it loads its own crash kernel over
#           kdump-tools') and kdump-tools' KDUMP_COREDIR moved off /var/crash;
#           the checks of both must say not ok.
#   plant-rerand: (not in the default list) rerand with kdump-tools left on
#           its own kernel and nokaslr in KDUMP_CMDLINE_APPEND: the checks of
#           the crash kernel's base must say not ok.
# Prints the seconds from the panic to the crash kernel's probe, to
# kdump-tools' "saved vmcore" and to the next boot's agent (the machine back),
# and the dump's size.
#   short (make check): nothing.  long (make check-long, make check-kdump):
#   stock, rerand and watchdog.  RRKD_KINDS: a subset; RRKD_ANALYZE=1: judge
#   the last run's logs again.  The crashes run Debian 12's own 6.1 cloud
#   kernel: bookworm's makedumpfile 1.7.2 predates 6.12.
#   RRS_SUITE=trixie: stock, rerand and watchdog on trixie's 6.12 cloud kernel with
#   trixie's makedumpfile 1.7.6, the newest Debian 13 has (none in
#   trixie-backports): it says "The kernel version is not supported. The
#   makedumpfile operation may be incomplete." and writes the dump, which
#   every check here reads back (the agent prints its messages); whether its
#   page filtering is right for 6.12 is not judged (docs/kdump.md).
# Mocked: kdump-tools' initrd.  The guest's kernel has no modules tree and
# mounts its NVMe ext4 root itself; the root carries, as
# /var/lib/kdump/initrd.img-VERSION, a one-file cpio without /init (the
# kernel then mounts root= itself and starts systemd, which runs
# kdump-tools-dump.service from the root's own kdump-tools), where
# kdump-tools' kernel hook would build one with mkinitramfs (minutes under
# TCG, and it needs the modules).  Everything else is Debian's.
set -u
export RRS_INSTALL=deb RRS_RESET=1 RRS_KDUMP=1
. "$(dirname "$0")/lib-systemd.sh"
. "$(dirname "$0")/lib-comeback.sh"

what=${1:-short}
case "$what" in short|long) ;; *) echo "usage: $0 short|long" >&2; exit 2 ;; esac
if [ "$what" = short ] && [ -z "${RRKD_KINDS:-}" ]; then
	echo "# check-systemd-kdump: long mode only (make check-long, make check-kdump)"
	exit 0
fi
# (watchdog: watchdog.ko and i6300esb.ko of the kernel under test, from
# its suite's archive, lib-comeback.sh rrc_modules)
dkinds="stock rerand watchdog"
kinds=${RRKD_KINDS:-$dkinds}
# RRS_SUITE=trixie (Debian 13): the suite's own cloud kernel (6.12, from
# its archive, as check-systemd-trixie.sh fetches it) for every kind, and
# the package built for it (make deb-chroot SUITE=trixie, or RRS_DEB).
suite_kernel=""
if [ "$RRS_SUITE" != bookworm ]; then
	mkdir -p "$E2E_BUILD" || exit 1
	suite_kernel=$(RERAND_SUITE=$RRS_SUITE "$E2E_TOP/scripts/fetch-kernel.sh" "${RRS_SUITE_KERNEL:-linux-image-cloud-amd64}" \
		2>"$E2E_BUILD/fetch-$RRS_SUITE.err") ||
		{ echo "not ok - systemd kdump: no $RRS_SUITE cloud kernel: $(tail -n 1 "$E2E_BUILD/fetch-$RRS_SUITE.err")"; exit 0; }
	if [ -z "${RRS_DEB:-}" ]; then
		RRS_DEB=$(rrs_suite_deb "$RRS_SUITE" 2>"$E2E_BUILD/deb-$RRS_SUITE.err") ||
			{ echo "not ok - systemd kdump: no $RRS_SUITE package: $(tail -n 1 "$E2E_BUILD/deb-$RRS_SUITE.err")"; exit 0; }
		export RRS_DEB
	fi
	e2e_note "systemd kdump: $RRS_SUITE: kernel $(basename "$suite_kernel"), package $RRS_DEB"
fi
# Debian's kdump-tools.cfg asks 128M on machines of 384M and more (its
# initrd crash kernel); rerand's image needs about 85 MiB of the region
# more (docs/kdump.md), systemd in the crash kernel the rest.
CRASHKERNEL=${RRKD_CRASHKERNEL:-384M}
export RRS_MEM=${RRS_MEM:-2}

if [ -n "$suite_kernel" ]; then
	kernel61=${RRKD_KERNEL:-$suite_kernel} kernel612=${RRKD_WD_KERNEL:-$suite_kernel}
else
	e2e_kernels "systemd kdump" || exit 0
	kernel61=${RRKD_KERNEL:-$(e2e_pick cloud61)}
	kernel612=${RRKD_WD_KERNEL:-$(e2e_pick cloud612)}
fi
for k in "$kernel61" "$kernel612"; do
	[ -n "$k" ] && [ -r "$k" ] ||
		{ echo "not ok - systemd kdump: no 6.1 and 6.12 cloud kernels in $RERAND_KERNELS (RRKD_KERNEL, RRKD_WD_KERNEL)"; exit 0; }
done

# rrkd_conf: rerandd's drop-in (50-e2e.conf, replacing rrs_conf's): no
# reboot at all in this test, [Crash] as shipped (Mode=auto).
rrkd_conf() {
	cat <<'EOF'
# rerandd drop-in of the Debian kdump guest (tests/e2e/check-systemd-kdump.sh)
[Daemon]
CheckInterval=5s

[Stage]
Initrd=none

[Policy]
MaxLayoutAge=30d
Jitter=0
OnNewKernel=ignore
EOF
}

# rrkd_disk KIND DISK: the Debian guest's disk with kdump-tools
rrkd_disk() {
	local kind=$1 disk=$2 base d mods m kd lx=/usr/local/libexec/rerand-e2e config
	config=$(dirname "$kernel")/config-$kver
	base=$(rrs_rootfs) || return 1
	d=$(mktemp -d "${disk}.root.XXXXXX") || return 1
	rrs_fill "$d" "$base" "$kernel" vm 1 || { rm -rf "$d"; return 1; }
	rrkd_conf >"$d/etc/rerand/rerand.conf.d/50-e2e.conf"
	[ -r "$config" ] && cp "$config" "$d/boot/config-$kver"
	# kdump-tools as debootstrap left it: enabled (Debian links it in
	# basic.target.wants), USE_KDUMP=1 (debconf's default)
	ls "$d"/etc/systemd/system/*.wants/kdump-tools.service >/dev/null 2>&1 ||
		{ echo "e2e: kdump-tools.service is not enabled in the base root" >&2; return 1; }
	grep -q '^USE_KDUMP=1' "$d/etc/default/kdump-tools" ||
		{ echo "e2e: $d/etc/default/kdump-tools: USE_KDUMP is not 1" >&2; return 1; }
	# the stand-in initrd (see the head) and the sysctl copy kdump-config
	# compares before it keeps an initrd
	kd=$d/var/lib/kdump
	mkdir -p "$kd" "$d.ird" && echo "rerand e2e: stand-in kdump initrd (no /init)" >"$d.ird/rerand-e2e-kdump" &&
		(cd "$d.ird" && find . | cpio -o -H newc --quiet) >"$kd/initrd.img-$kver" &&
		cp "$d/etc/kdump/sysctl.conf" "$kd/latest_sysctls-$kver" || return 1
	rm -rf "$d.ird"
	if [ "$kind" = watchdog ]; then
		mods=$(rrc_modules) || return 1
		for m in watchdog i6300esb; do
			install -D -m 0644 "$mods/$m.ko" "$d/usr/lib/modules/$kver/kernel/drivers/watchdog/$m.ko" || return 1
		done
		depmod -b "$d" "$kver" || { echo "e2e: depmod -b $d $kver failed" >&2; return 1; }
		echo i6300esb >"$d/var/lib/rerand-e2e/watchdog"
	fi
	if [ "$kind" = plant ]; then
		printf '# PLANTED DEFECT (check-systemd-kdump.sh plant): no other loader looked for\n[Paths]\nCrashLoaderWants=\n' \
			>"$d/etc/rerand/rerand.conf.d/55-e2e-plant.conf"
		echo 'KDUMP_COREDIR="/var/crash-planted"' >>"$d/etc/default/kdump-tools"
	fi
	if [ "$kind" = plant-rerand ]; then
		# PLANTED DEFECTS: kdump-tools keeps its own kernel, with nokaslr
		echo /var/lib/kdump/vmlinuz >"$d/var/lib/rerand-e2e/plant-kernel"
		echo 'KDUMP_CMDLINE_APPEND="reset_devices systemd.unit=kdump-tools-dump.service nr_cpus=1 irqpoll usbcore.nousb nokaslr"' \
			>>"$d/etc/default/kdump-tools"
	fi
	case "$kind" in
	plant) echo stock ;;
	plant-rerand) echo rerand ;;
	*) echo "$kind" ;;
	esac >"$d/var/lib/rerand-e2e/kind"
	echo 0 >"$d/var/lib/rerand-e2e/phase"
	install -m 0755 "$E2E_DIR/debian/kdump-agent.sh" "$d$lx/kdump-agent" &&
		install -m 0755 "$E2E_DIR/debian/kdump-probe.sh" "$d$lx/kdump-probe" || return 1
	cat >"$d/etc/systemd/system/rerand-e2e-kdump.service" <<EOF
# tests/e2e/check-systemd-kdump.sh: the agent
[Unit]
Description=rerand e2e kdump agent
After=rerandd.service kdump-tools.service systemd-journald.service

[Service]
Type=simple
ExecStart=$lx/kdump-agent
StandardOutput=journal

[Install]
WantedBy=multi-user.target
EOF
	cat >"$d/etc/systemd/system/rerand-e2e-crash-probe.service" <<EOF
# tests/e2e/check-systemd-kdump.sh: the crash kernel's probe, before
# kdump-tools' dump
[Unit]
Description=rerand e2e crash kernel probe
DefaultDependencies=no
Before=kdump-tools-dump.service

[Service]
Type=oneshot
ExecStart=$lx/kdump-probe
TimeoutStartSec=300

[Install]
WantedBy=kdump-tools-dump.service
EOF
	rrs_enable_units "$d" rerand-e2e-kdump rerand-e2e-crash-probe || return 1
	e2e_mkfs "$d" "$disk" "$RRS_DISK_MIB" rrroot
}

t() { rrs_t "$@"; }
secs() { rrs_secs "$@"; }

run() {
	local kind=$1 name="systemd kdump $1" dir="$E2E_BUILD/runs/systemd-kdump-$1"
	local log alog rc t0 tmo kernel=$kernel61 kver
	[ "$kind" = watchdog ] && kernel=$kernel612
	kver=${kernel##*/vmlinuz-}
	log=$dir/serial.log alog=$dir/agent.log
	if [ -n "${RRKD_ANALYZE:-}" ]; then
		rc=$(cat "$dir/qemu.rc" 2>/dev/null) || { echo "not ok - $name: no run in $dir to analyze"; return 0; }
	else
		rm -rf "$dir"; mkdir -p "$dir"
		if ! RRD_KERNEL=$kernel rrd_preflight "$name" qemu-system-x86_64 mkfs.ext4 debugfs debootstrap systemctl depmod cpio >"$dir/pre" ||
			! rrkd_disk "$kind" "$dir/disk.img" 2>"$dir/build.err"; then
			cat "$dir/pre"; sed 's/^/# /' "$dir/build.err" 2>/dev/null | tail -n 10
			echo "not ok - $name: cannot build the guest"
			return 0
		fi
		export RRS_APPEND="quiet crashkernel=$CRASHKERNEL"
		export RRS_QEMU_EXTRA=""
		[ "$kind" = watchdog ] && RRS_QEMU_EXTRA="-device i6300esb"
		tmo=${RRKD_TIMEOUT:-3600}
		t0=$EPOCHSECONDS
		rc=0
		rrs_qemu "$kernel" "$dir/disk.img" "$log" "$alog" "$tmo" || rc=$?
		e2e_note "$name: QEMU exit $rc after $((EPOCHSECONDS - t0)) s (limit $tmo); log $log"
		echo "$rc" >"$dir/qemu.rc"
		[ "$rc" -eq 0 ] || rrs_last_journal "$dir" | sed 's/^/# /'
		rm -f "$dir/disk.img"
	fi
	judge
}

# judge: TAP lines from the logs (run's locals)
judge() {
	local a p c s b fw n
	a=$(sed 's/\x1b\[[0-9;=]*[a-zA-Z]//g; s/\r//g' "$alog" 2>/dev/null)
	# the agent's TAP, "RRK n=P ok - NAME": this suite's lines
	grep -a '^RRK n=[0-9]* \(not \)\{0,1\}ok - ' <<<"$a" |
		sed "s/^RRK n=\([0-9]*\) \(\(not \)\{0,1\}ok\) - /\2 - $name: [\1] /"
	grep -a '^RRK-INFO' <<<"$a" | cut -c1-300 | sed 's/^/# /'
	if [ "$kind" = watchdog ]; then
		fw=$(grep -ac 'Booting from ROM' "$log")
		e2e_tap "$([ "$(grep -ac '^RRK n=0 ' <<<"$a")" -ge 8 ] && [ "$rc" -eq 0 ] && [ "$fw" -eq 1 ] &&
			grep -aq 'RRK-DONE n=0' <<<"$a"; echo $?)" \
			"$name: the agent reported (8 or more checks) and the guest powered off (QEMU exit $rc, $fw firmware boots)" \
			"$(grep -ac '^RRK n=0 ' <<<"$a") checks"
		return 0
	fi
	# (an agent that never ran, or died, prints no line to fail)
	e2e_tap "$([ "$(grep -ac '^RRK n=0 ' <<<"$a")" -ge 8 ] && [ "$(grep -ac '^RRK n=1 ' <<<"$a")" -ge 8 ]; echo $?)" \
		"$name: the agent reported before the crash and after it (8 or more checks each)" \
		"$(grep -ac '^RRK n=0 ' <<<"$a") and $(grep -ac '^RRK n=1 ' <<<"$a")"
	# the panic: the kernel's own line on the console (the agent's
	# RRK-PANIC on ttyS0 did not always make it out before the panic)
	p=$(grep -a 'sysrq: Trigger a crash' "$log" | head -n 1)
	c=$(grep -a 'RRK-CRASH ' "$log" | head -n 1)
	s=$(grep -a 'saved vmcore in' "$log" | head -n 1)
	b=$(grep -a 'RRK-BOOT n=1 ' "$log" | head -n 1)
	# SeaBIOS's last line, once per firmware boot: QEMU's first and the one
	# after kdump-tools' reboot; the crash kernel is a kexec, not one
	fw=$(grep -ac 'Booting from ROM' "$log")
	e2e_tap "$([ -n "$p" ] && [ -n "$c" ]; echo $?)" "$name: the panic started the crash kernel (its probe ran)" "${p:-no RRK-PANIC}; ${c:-no RRK-CRASH}"
	e2e_tap "$([ -n "$b" ] && [ "$fw" -eq 2 ]; echo $?)" \
		"$name: the machine came back by itself (kdump-tools rebooted it through the firmware: $fw firmware boots, want 2)" "${b:-no boot after the crash}"
	if [ -n "$p" ]; then
		n="$name: from the panic:"
		[ -n "$c" ] && n+=" crash kernel's userspace (probe) $(secs "$(t "$p")" "$(t "$c")") s;"
		[ -n "$s" ] && n+=" kdump-tools' 'saved vmcore' $(secs "$(t "$p")" "$(t "$s")") s;"
		[ -n "$b" ] && n+=" the next boot's agent $(secs "$(t "$p")" "$(t "$b")") s"
		e2e_note "$n"
	fi
	# The panic's report goes to the console (panic() makes the console
	# verbose): symbols and offsets, user-space registers, and no address
	# of the kernel image's range (0xffffffff80000000-0xffffffffbfffffff)
	! grep -aqE 'ffffffff[89ab][0-9a-f]{7}' "$log"
	e2e_tap $? "$name: no kernel image address in the host's serial log (the panic's report included)" \
		"$(grep -acE 'ffffffff[89ab][0-9a-f]{7}' "$log") lines"
	e2e_tap "$([ "$rc" -eq 0 ] && grep -aq 'RRK-DONE n=1' <<<"$a"; echo $?)" \
		"$name: the agent finished after the dump and the guest powered off (QEMU exit $rc)"
}

run_kinds=()
for k in $kinds; do
	case "$k" in
	stock|rerand|watchdog|plant|plant-rerand) run_kinds+=("$k") ;;
	*) echo "not ok - systemd kdump: unknown kind '$k' (stock rerand watchdog plant plant-rerand)" ;;
	esac
done
# RRKD_JOBS guests at a time, their TAP in order
rrs_parallel "${RRKD_JOBS:-2}" run "${run_kinds[@]}"
exit 0
