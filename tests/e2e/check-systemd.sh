#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# rerandd on a real Debian 12 machine in QEMU TCG: systemd as PID 1, a
# persistent ext4 root on NVMe, the project installed as a user would: the
# .deb that `make deb` built on this host, with `dpkg -i` in the guest at
# boot 0 (tests/e2e/lib-systemd.sh builds the disk; RRS_INSTALL=tree for
# `make install DESTDIR=` instead, as the Secure Boot variant still does).
# At the last boot the agent installs a second Debian kernel package (the
# 6.12 cloud kernel bookworm ships): the package's hook has rerandd build its image and
# rerandd stages it; then `apt-get purge rerand` must leave only what
# docs/operations.md says.  The guest's agent
# (tests/e2e/debian/agent.sh) checks every boot; this script turns its lines
# into TAP and adds the host-side checks.
#   short (make check): one rerandomizing reboot.
#   long (make check-long): two, plus the watchdog (fed for 3 min, then
#   SIGSTOP must get rerandd restarted); then the uki run.
#   (trixie's short run adds the first of the "reboots" steps,
#   `systemctl reboot`, and the kexec-tools probe: see below.)
#   reboots (trixie's make check-long): one rerandomizing reboot by
#   rerandd, then the reboot commands of systemd 256+ (tests/e2e/debian/
#   reboots.sh): systemctl reboot and reboot with an image staged, soft-reboot,
#   systemctl kexec with nothing staged, SYSTEMCTL_SKIP_AUTO_KEXEC; QEMU
#   without -no-reboot, so that the last one's firmware reboot comes back.
#   upgrade (check-systemd-upgrade.sh, long only): boot 0 installs the
#   package of an earlier commit (scripts/old-deb.sh: RRS_OLD_COMMIT, by
#   default the last 0.1) and rerandd reboots into its image; at boot 1 the
#   agent edits the conffile, holds, upgrades to this tree's package with
#   dpkg and checks config, state, hold and the restart, that nothing is
#   loaded while held, and that `rerand release` (unhold's old name, as a
#   script written for 0.1 says it) has the new rerandd stage its image;
#   it reboots into that one (boot 2, verified, the new version).
#   uki (also part of long): the guest boots OVMF -> systemd-boot -> a UKI
#   of the 6.12 cloud kernel on an ESP; rerandd must find the UKI through
#   LoaderEntrySelected, stage it with `rerand load --uki`, and the next
#   boot must be verified randomized.  One reboot; too slow for make check.
# RRS_SB=1 (check-systemd-sb.sh): the same guest under Secure Boot, from a
# pre-signed image.
# Mocked: nothing in the guest in the default, SB and trixie runs; only the
# network is absent (not needed).  The default (package) run installs
# Debian's prometheus-node-exporter first, at boot 0, and the agent scrapes
# it on :9100 for rerandd's metrics (issue 40); the other runs have its
# textfile directory only (lib-systemd.sh).
# RRS_FLEET=1 (check-systemd-fleet.sh): the same guest in fleet mode against
# Debian's etcd-server in the guest: take the slot, rerandomize, give it back.
# Mocked in fleet mode: kubectl.  The example Kubernetes hooks run for real
# (through systemd-run out of rerandd's sandbox), but there is no cluster:
# /usr/local/bin/kubectl is a stand-in that only records each call
# (lib-systemd.sh, rrs_fleet_k8s).
set -u
sb=${RRS_SB:-0}
fleet=${RRS_FLEET:-0}
# RRS_SUITE=trixie (check-systemd-trixie.sh): Debian 13's guest (systemd
# 257, its kexec-tools) on the 6.12 cloud kernel trixie's archive serves
# (scripts/fetch-kernel.sh with RERAND_SUITE), installing the .deb built for
# trixie; one kernel series, no second kernel package and no uki run.
suite=${RRS_SUITE:-bookworm}
host_suite=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
top=$(cd "$(dirname "$0")/../.." && pwd)
# The package to install: RRS_DEB when given; `make deb` when the guest's
# suite is this host's (a package built here is built for it); else the one
# `make deb-chroot SUITE=` builds in a pristine root of the suite.  Without
# that target (a tree that predates it) the tree install, said in a note.
install_note=""
if [ "$sb" = 0 ] && [ "$fleet" = 0 ] && [ -z "${RRS_INSTALL:-}" ] && [ -z "${RRS_DEB:-}" ] &&
	[ "$suite" != "$host_suite" ] && ! grep -q '^deb-chroot:' "$top/Makefile"; then
	export RRS_INSTALL=tree
	install_note="no \`make deb-chroot\` in this tree to build the $suite package: make install DESTDIR= instead"
fi
# Before lib-systemd.sh: the package's guest has its own base root.  Under
# Secure Boot and in fleet mode the tree install (their point is elsewhere).
[ "$sb" = 1 ] || [ "$fleet" = 1 ] || export RRS_INSTALL=${RRS_INSTALL:-deb}
export RRS_SUITE=$suite
. "$(dirname "$0")/lib-systemd.sh"
[ "$sb" = 1 ] && . "$(dirname "$0")/lib-sb.sh"

what=${1:-short}
case "$what" in
short) target=${RRS_REBOOTS:-1} ;;
long) target=${RRS_REBOOTS:-2} ;;
uki) target=${RRS_REBOOTS:-1} ;;
reboots) target=1 ;;
upgrade) target=2 ;;
*) echo "usage: $0 short|long|uki|reboots|upgrade" >&2; exit 2 ;;
esac
# "reboots": the boots after rerandd's, one per step of debian/reboots.sh,
# and how many of them are a new kernel from rerand's image (systemctl
# reboot, reboot).
xsteps="" xboots=0 xkexec=0
if [ "$what" = reboots ]; then
	xsteps="systemctl-reboot reboot soft-reboot kexec-default skip-auto-kexec"
	xboots=5 xkexec=2
	export RRS_RESET=1
fi
# Trixie's short run (make check): the first of them only, `systemctl
# reboot` with rerandd's image staged (systemd 257 kexecs it: one boot more,
# 1-2 min under TCG), then kexec-tools' syscall probe.  Without -no-reboot
# dropped: a firmware reboot instead of the kexec ends the run, not ok.
if [ "$what" = short ] && [ "$suite" != bookworm ] && [ "$sb" = 0 ] && [ "$fleet" = 0 ]; then
	xsteps="systemctl-reboot"
	xboots=1 xkexec=1
fi
export RRS_XSTEPS=$xsteps
last=$((target + xboots))
# Test names: debian-systemd-MODE-KERNEL for bookworm (as before), with the
# suite after "systemd" for any other.
sn=""
[ "$suite" = bookworm ] || sn=-$suite
name=debian-systemd$sn-$what
[ "$sb" = 1 ] && name=debian-systemd$sn-sb-$what
[ "$fleet" = 1 ] && name=debian-systemd$sn-fleet-$what
tap() { e2e_tap "$@"; }
[ -z "$install_note" ] || e2e_note "$name: $install_note"

# suite_deb: print the .deb built for $suite in its pristine root (build/
# deb-SUITE/, scripts/deb-chroot.sh), running `make deb-chroot` first when it
# is missing or older than any source file.
suite_deb() {
	local deb d="$E2E_TOP/build/deb-$suite"
	deb=$(ls -t "$d"/rerand_*_amd64.deb 2>/dev/null | head -n 1)
	if [ -z "$deb" ] || [ -n "$(cd "$E2E_TOP" && find Makefile debian src kexec daemon fleetd include systemd etc docs scripts/deb-chroot.sh \
		-newer "$deb" -type f -print -quit 2>/dev/null)" ]; then
		echo "# make deb-chroot SUITE=$suite (the $suite guest installs the package built for $suite)" >&2
		mkdir -p "$E2E_BUILD" || return 1
		make -s -C "$E2E_TOP" deb-chroot SUITE="$suite" >"$E2E_BUILD/deb-$suite.log" 2>&1 ||
			{ tail -n 20 "$E2E_BUILD/deb-$suite.log" >&2; echo "e2e: make deb-chroot SUITE=$suite failed (log: $E2E_BUILD/deb-$suite.log)" >&2; return 1; }
		deb=$(ls -t "$d"/rerand_*_amd64.deb 2>/dev/null | head -n 1)
	fi
	[ -s "$deb" ] || { echo "e2e: make deb-chroot SUITE=$suite wrote no rerand_*_amd64.deb in $d" >&2; return 1; }
	echo "$deb"
}

# old_deb: the earlier commit's package for $suite (upgrade mode), built
# by that commit's own deb-chroot.sh and cached (scripts/old-deb.sh).
old_deb() {
	mkdir -p "$E2E_BUILD" || return 1
	"$E2E_TOP/scripts/old-deb.sh" "${RRS_OLD_COMMIT:-}" "$suite" 2>"$E2E_BUILD/old-deb-$suite.err" ||
		{ tail -n 5 "$E2E_BUILD/old-deb-$suite.err" >&2; return 1; }
}

# pick_deb: the package the guest installs (see install_note above).
pick_deb() {
	if [ -n "${RRS_DEB:-}" ]; then
		echo "$RRS_DEB"
	elif [ "$suite" = "$host_suite" ]; then
		rrs_deb
	else
		suite_deb
	fi
}

# The kernels: RRD_KERNEL alone when given; else Debian 12's own series, the
# 6.1 cloud kernel (its stat of /proc/cmdline says 0 bytes), and in long mode
# the 6.12 cloud kernel bookworm also ships (scripts/kernels.sh pick).
kernels=()
if [ -n "${RRD_KERNEL:-}" ]; then
	kernels=("$RRD_KERNEL")
elif [ "$suite" != bookworm ]; then
	# The suite's own cloud kernel, from its archive (cached).
	mkdir -p "$E2E_BUILD" && k=$(RERAND_SUITE=$suite "$E2E_TOP/scripts/fetch-kernel.sh" "${RRS_SUITE_KERNEL:-linux-image-cloud-amd64}" 2>"$E2E_BUILD/fetch-$suite.err") ||
		{ echo "not ok - $name: no $suite cloud kernel: $(tail -n 1 "$E2E_BUILD/fetch-$suite.err")"; exit 0; }
	kernels=("$k")
else
	e2e_kernels "$name" || exit 0
	roles=cloud61
	# Under Secure Boot and in fleet mode the 6.1 kernel only: the point
	# is the signed path, or the fleet.
	[ "$what" = long ] && [ "$sb" = 0 ] && [ "$fleet" = 0 ] && roles="cloud61 cloud612"
	[ "$what" = uki ] && roles=""
	for r in $roles; do
		k=$(e2e_pick "$r") || { echo "not ok - $name: no $r kernel in $RERAND_KERNELS"; continue; }
		kernels+=("$k")
	done
fi
# The systemd-boot guest boots the kernel of the second kernel's package,
# inside a UKI (run_one "uki").
{ [ "$what" = uki ] || [ "$what" = long ]; } && [ "$sb" = 0 ] && [ "$fleet" = 0 ] && [ "$suite" = bookworm ] && kernels+=(uki)

# The package guest's second kernel: the 6.12 cloud kernel's Debian package
# (named after the test kernel of that role), fetched once.
kernel2_deb="" exporter_deb=""
if [ "$RRS_INSTALL" = deb ] && [ "$what" = upgrade ]; then
	# (No second kernel: the last boot is the upgraded package's; the
	# packages are chosen below.)
	:
elif [ "$RRS_INSTALL" = deb ] && [ "$suite" != bookworm ]; then
	# (No second kernel: trixie's archive serves one 6.12 cloud kernel, the
	# one the guest boots.)
	deb=$(pick_deb) || { echo "not ok - $name: no $suite package to install (make deb or make deb-chroot SUITE=$suite failed)"; exit 0; }
	export RRS_DEB=$deb
	e2e_note "$name: installs $deb ($(dpkg-deb -f "$deb" Version)) with dpkg -i; no second kernel package"
elif [ "$RRS_INSTALL" = deb ]; then
	{ [ -n "${RERAND_KERNELS:-}" ] || e2e_kernels "$name"; } && k2=$(e2e_pick cloud612) ||
		{ echo "not ok - $name: no cloud612 kernel to name the second kernel package"; exit 0; }
	kernel2_deb=$(rrs_kernel_deb "linux-image-${k2##*/vmlinuz-}") ||
		{ echo "not ok - $name: no linux-image-${k2##*/vmlinuz-} package for the second-kernel check"; exit 0; }
	deb=$(pick_deb) || { echo "not ok - $name: no $suite package to install (make deb or make deb-chroot SUITE=$suite failed)"; exit 0; }
	export RRS_DEB=$deb
	e2e_note "$name: installs $(basename "$deb") with dpkg -i; second kernel $(basename "$kernel2_deb")"
	# Debian's prometheus-node-exporter, installed in the guest at boot 0
	# (the agent scrapes it: rerandd's metrics from its default directory)
	exporter_deb=$(rrs_kernel_deb prometheus-node-exporter "$suite") ||
		{ echo "not ok - $name: no prometheus-node-exporter package to install in the guest"; exit 0; }
	e2e_note "$name: installs $(basename "$exporter_deb") first"
fi

# Upgrade: the earlier commit's package first, this tree's over it.
if [ "$what" = upgrade ]; then
	[ "$RRS_INSTALL" = deb ] || { echo "not ok - $name: the upgrade needs the package (RRS_INSTALL=deb)"; exit 0; }
	new=${RRS_DEB:-}
	[ -n "$new" ] || new=$(pick_deb) ||
		{ echo "not ok - $name: no $suite package of this tree (make deb or make deb-chroot SUITE=$suite failed)"; exit 0; }
	old=$(old_deb) || { echo "not ok - $name: no package of the earlier commit ${RRS_OLD_COMMIT:-(the default of scripts/old-deb.sh)} for $suite: $(tail -n 1 "$E2E_BUILD/old-deb-$suite.err")"; exit 0; }
	ov=$(dpkg-deb -f "$old" Version) nv=$(dpkg-deb -f "$new" Version)
	dpkg --compare-versions "$nv" gt "$ov" ||
		{ echo "not ok - $name: this tree's package $nv is not newer than the earlier one $ov (debian/changelog)"; exit 0; }
	export RRS_DEB=$old RRS_UPGRADE_DEB=$new
	e2e_note "$name: installs $(basename "$(dirname "$old")")/$(basename "$old") ($ov), upgrades to $new ($nv)"
fi

# run_one KERNEL|uki: build the disk, boot it, turn the agent's lines into TAP.
run_one() {
	local kernel name boot miss
	export RRS_BOOT="" RRS_FW=${RRS_FW:-seabios}
	if [ "$1" = uki ]; then
		[ -n "$kernel2_deb" ] || { echo "not ok - debian-systemd-uki: RRS_INSTALL=deb is needed"; return 0; }
		RRS_BOOT=uki RRS_FW=ovmf-uki RRS_UKI_DEB=$kernel2_deb
		export RRS_UKI_DEB
		set -- "$(e2e_pick cloud612)"
		name=debian-systemd$sn-uki-$(basename "$1" | sed 's/^vmlinuz-//')
	else
		name=debian-systemd$sn-$what-$(basename "$1" | sed 's/^vmlinuz-//')
	fi
	[ "$sb" = 1 ] && name=debian-systemd$sn-sb-$what-$(basename "$1" | sed 's/^vmlinuz-//')
	[ "$fleet" = 1 ] && name=debian-systemd$sn-fleet-$what-$(basename "$1" | sed 's/^vmlinuz-//')
	kernel=$(RRD_KERNEL=$1 rrd_preflight "$name" qemu-system-x86_64 mkfs.ext4 debugfs debootstrap systemctl) ||
		{ echo "$kernel"; return 0; }
	boot=$kernel
	if [ "$sb" = 1 ]; then
		# The build host's part: sign the kernel for the firmware and the
		# rerand image for kexec_file_load, both with the snakeoil key.
		miss=$(sb_preflight)
		[ -z "$miss" ] || { echo "not ok - $name: $miss"; return 0; }
		boot=$(sb_signed_kernel "$kernel") ||
			{ echo "not ok - $name: cannot sign $(basename "$kernel") for the firmware"; return 0; }
		sb_images "$kernel" ||
			{ echo "not ok - $name: no signed rerand image: ${SB_WAITING:-sb_images failed}"; return 0; }
		RRS_SB_SIGNER=$("$E2E_RERAND" inspect "$SB_IMG_SIGNED" 2>/dev/null |
			sed -n 's/^ *signature: *signed by "\([^"]*\)".*/\1/p' | head -n 1)
		case "$RRS_SB_SIGNER" in
		*SnakeOil*) ;;
		*) echo "not ok - $name: rerand inspect $SB_IMG_SIGNED: signer '${RRS_SB_SIGNER:-none}', want the snakeoil certificate"; return 0 ;;
		esac
		export RRS_SB_IMAGE=$SB_IMG_SIGNED RRS_SB_SIGNER RRS_FW=ovmf-sb
		e2e_note "$name: image signed on the host by \"$RRS_SB_SIGNER\" ($(basename "$SB_IMG_SIGNED"))"
	fi

	dir="$E2E_BUILD/runs/$name"
	rm -rf "$dir"; mkdir -p "$dir"
	log="$dir/serial.log"; alog="$dir/agent.log"
	t0=$EPOCHSECONDS
	# The second kernel only where it is new to the guest.
	RRS_KERNEL2_DEB=""
	[ -n "$kernel2_deb" ] && [ -z "$RRS_BOOT" ] &&
		[ "$(basename "$kernel")" != "vmlinuz-$(dpkg-deb -f "$kernel2_deb" Package | sed 's/^linux-image-//')" ] &&
		RRS_KERNEL2_DEB=$kernel2_deb
	export RRS_KERNEL2_DEB RRS_ESP="$dir/esp.img"
	# the exporter in the package guest's plain runs (not under the UKI)
	RRS_EXPORTER_DEB=$exporter_deb
	[ -z "$RRS_BOOT" ] || RRS_EXPORTER_DEB=""
	export RRS_EXPORTER_DEB
	if ! rrs_disk "$boot" "$dir/disk.img" "$what" "$target" 2>"$dir/build.err"; then
		sed 's/^/# /' "$dir/build.err" | tail -n 20
		echo "not ok - $name: cannot build the Debian guest disk"
		return 0
	fi
	# The base root's lines: the package names chosen for the suite.
	grep -a "^# $RRS_SUITE" "$dir/build.err" | cut -c1-400
	e2e_note "$name: disk built in $((EPOCHSECONDS - t0)) s; $(basename "$kernel")$([ "$sb" = 1 ] && echo " (snakeoil-signed, Secure Boot)"), $target rerandomizing reboot(s)"
	# TCG: a cold boot to multi-user takes 1-3 min, each kexec'd boot as long;
	# on a host shared by several QEMUs (load 20 on 2 CPUs) a short run
	# took over 720 s, so the hang limit leaves room.
	base=900; [ "$what" = long ] && base=1200
	# OVMF, and at the last boot the blocked check (about a minute).
	[ "$sb" = 1 ] && base=$((base + 180))
	# dpkg -i of rerand, and of a kernel package (its initramfs) under TCG.
	# (A short run took over 1800 s on a host at load 19 with mkinitramfs
	# taking "most" modules.)
	[ "$RRS_INSTALL" = deb ] && base=$((base + 1200))
	# The upgrade: a second dpkg -i, a restart, a restage.
	[ "$what" = upgrade ] && base=$((base + 600))
	# OVMF and systemd-boot before the first boot.
	[ "$RRS_BOOT" = uki ] && base=$((base + 300))
	# Fleet: etcd's start, the fail-closed wait and a rerandd restart.
	[ "$fleet" = 1 ] && base=$((base + 300))
	# (reboots: 600 s per extra boot; at load 40-60 the first 3 of them
	# took 45 min.)
	tmo=${RRS_TIMEOUT:-$((base + 300 * target + 600 * xboots))}
	t0=$EPOCHSECONDS
	rc=0
	rrs_qemu "$boot" "$dir/disk.img" "$log" "$alog" "$tmo" || rc=$?
	e2e_note "$name: QEMU exit $rc after $((EPOCHSECONDS - t0)) s"
	# (OVMF draws on every serial port: drop its escape sequences.)
	sed 's/\x1b\[[0-9;=]*[a-zA-Z]//g; s/\r//g' "$alog" >"$alog.txt" 2>/dev/null

	# 1. Every boot came up, reported, and the last one powered off.
	# (Every boot says its kernel; "reboots" mode leaves RRS-BOOT out for the
	# boots that are not a new kernel from rerand's image.)
	got=$(grep -ao 'RRS-INFO n=[0-9]* kernel=' "$alog.txt" | sed 's/.*n=//; s/ .*//' | tr '\n' ' ')
	want=$(seq 0 "$last" | tr '\n' ' ')
	why=""
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		why="timeout after ${tmo}s; boots: ${got:-none}"
	elif ! grep -aq "RRS-DONE n=$last" "$alog.txt"; then
		why="QEMU exit $rc without RRS-DONE; boots: ${got:-none}"
	elif [ "$got" != "$want" ]; then
		why="boots reported: $got, want: $want"
	fi
	tap "$([ -z "$why" ]; echo $?)" "$name: boots 0..$last came up, the last powered off" "$why"
	[ -z "$why" ] || { grep -aE 'Kernel panic|BUG:|Failed|rerandd|reboot: |watchdog' "$log" | tail -n 8 |
		cut -c1-200 | sed 's/^/#   /'; rrs_last_journal "$dir" | sed 's/^/#   /'; }

	# 2. The agent's own checks, boot by boot.
	while IFS= read -r line; do
		line=${line#*RRS }
		b=${line%% *}; b=${b#n=}; rest=${line#* }
		case "$rest" in
		"ok - "*) tap 0 "$name: boot $b: ${rest#ok - }" ;;
		"not ok - "*) tap 1 "$name: boot $b: ${rest#not ok - }" ;;
		esac
	done < <(grep -a '^RRS n=' "$alog.txt")
	grep -a 'RRS-INFO' "$alog.txt" | cut -c1-300 | sed 's/^/# /'

	# 3. The rerandomizations: distinct bases, one verified boot id each.
	rows=$(grep -a '^RRS-BOOT' "$alog.txt")
	nb=$(grep -c . <<<"$rows")
	vrep=$(( nb - $(grep -o 'text=[0-9a-f]*' <<<"$rows" | sort -u | wc -l) ))
	prep=$(( nb - $(grep -o 'code=[0-9a-f]*' <<<"$rows" | sort -u | wc -l) ))
	tap "$([ "$nb" -eq $((target + 1 + xkexec)) ] && e2e_bases_by_chance "$vrep" "$prep"; echo $?)" \
		"$name: every boot at a new virtual and physical base ($nb boots; one chance repeat of one kind allowed: virtual repeats $vrep, physical $prep)" \
		"virtual repeats $vrep, physical $prep"
	verified=$(grep -ao 'RRS-INFO n=[0-9]* verified boot_id=[0-9a-f-]*' "$alog.txt" | sed 's/.*boot_id=//' | sort -u | wc -l)
	tap "$([ "$verified" -eq "$target" ]; echo $?)" "$name: $target rerandomizing reboot(s) verified, each with its own boot id" "distinct verified boot ids: $verified"
	e2e_note "$name: verified boot ids: $(grep -ao 'RRS-INFO n=[0-9]* verified boot_id=[0-9a-f-]*' "$alog.txt" | sed 's/RRS-INFO //; s/ verified / /' | tr '\n' ' ')"
	if [ -n "$xsteps" ]; then
		xv=$(grep -ao 'RRS-INFO n=[0-9]* xverified boot_id=[0-9a-f-]* after=[a-z-]*' "$alog.txt")
		tap "$([ "$(sed 's/.*boot_id=//; s/ .*//' <<<"$xv" | sort -u | grep -c .)" -eq "$xkexec" ]; echo $?)" \
			"$name: $xkexec reboots by the administrator's commands landed in rerandomized kernels, each with its own boot id" \
			"$(tr '\n' ';' <<<"$xv")"
		e2e_note "$name: rerandomized by systemctl reboot / reboot: $(sed 's/RRS-INFO //; s/ xverified / /' <<<"$xv" | tr '\n' ' ')"
	fi

	# 4. Nothing the product wrote holds an address: the journals (export
	# format), status, metrics and state the agent copied, read off the disk.
	files="$dir/files"
	rm -rf "$files"; mkdir -p "$files"
	# (The package guest purged /var/lib/rerand: the agent copied it first.)
	if debugfs -R "rdump /var/lib/rerand-e2e/out $files" "$dir/disk.img" >/dev/null 2>&1 &&
		{ [ -n "$RRS_KERNEL2_DEB" ] || debugfs -R "rdump /var/lib/rerand $files" "$dir/disk.img" >/dev/null 2>&1; }; then
		sed -n 's/^RRS-BOOT n=\([0-9]*\) boot_id=[^ ]* text=\([0-9a-f]*\) code=\([0-9a-f]*\)-.*/RRD-BOOT n=\1 text=\2 code=\3-/p' \
			"$alog.txt" >"$dir/addrs.src"
		rrd_addrs "$dir/addrs.src" >"$dir/addrs.txt"
		mapfile -t list < <(find "$files" -type f ! -path '*/images/*' | sort)
		hits=$(rrd_leak_search "$dir/addrs.txt" "${list[@]}")
		njournal=$(find "$files" -name 'journal.*' | wc -l)
		tap "$([ -s "$dir/addrs.txt" ] && [ "$njournal" -ge $((target + 1)) ] && [ -z "$hits" ]; echo $?)" \
			"$name: no base of $nb boots in ${#list[@]} product files ($njournal journals, status, metrics, state)" \
			"$(head -n 3 <<<"$hits" | tr '\n' ';')"
	else
		tap 1 "$name: read the product files back from the disk" "debugfs failed on $dir/disk.img"
	fi
	e2e_note "$name: logs in $dir (serial.log, agent.log.txt)"
	# (RRS_KEEP_DISK=1 keeps the disks, to look into by hand.)
	[ "${RRS_KEEP_DISK:-0}" = 1 ] || rm -f "$dir/disk.img" "$dir/esp.img"
}

for k in "${kernels[@]}"; do run_one "$k"; done
exit 0
