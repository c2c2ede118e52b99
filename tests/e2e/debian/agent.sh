#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The test agent of the Debian e2e guest (rerand-e2e-agent.service), run at
# every boot.  It checks rerandd as systemd runs it and reports TAP-style
# lines on the second serial port (/dev/ttyS1), which the host turns into
# TAP (tests/e2e/check-systemd.sh):
#   RRS n=N ok - NAME            RRS n=N not ok - NAME (why)
#   RRS-BOOT n=N boot_id=ID text=_TEXT code=PHYS-RANGE   (test only: the
#       secret, read from /proc/kallsyms and /proc/iomem for the leak search)
#   RRS-INFO n=N key=value       RRS-DONE n=N
# Under Secure Boot (check-systemd-sb.sh, $D/secureboot names the pre-signed
# image and its signer) it also checks lockdown, the kernel seed and the
# signed image, and at the last boot that rerandd is blocked without one.
# With the package (RRS_INSTALL=deb, $D/rerand.deb) it installs rerand with
# `dpkg -i` at boot 0, and at the last boot installs a second Debian kernel
# package ($D/kernel2.deb: the hook builds its image, rerandd stages it) and
# then purges rerand, checking what stays against docs/operations.md.
# Boot 0 is the cold boot QEMU made; each later one followed a rerandomizing
# kexec that rerandd decided on its own.  The last boot powers the guest off.
set -u
D=/var/lib/rerand-e2e
R=/run/rerand-e2e
mkdir -p "$D/out" "$R"
exec 3>/dev/ttyS1 || exec 3>/dev/console
n=$(cat "$D/boots" 2>/dev/null || echo 0)
echo $((n + 1)) >"$D/boots.tmp" && mv "$D/boots.tmp" "$D/boots" && sync "$D/boots" "$D"
target=$(cat "$D/target")
mode=$(cat "$D/mode")
security_max=$(cat "$D/security-max")
sbimg="" signer=""
fleet=$(cat "$D/fleet" 2>/dev/null)    # "etcd" in fleet mode (check-systemd-fleet.sh)
# etcd in the guest speaks https only and wants a client certificate
# (lib-systemd.sh rrs_fleet_tls); the agent has one of its own.
ETCD=https://127.0.0.1:2379
EC=$D/etcd-client
ectl() { ETCDCTL_API=3 timeout 20 etcdctl --endpoints="$ETCD" --cacert="$EC/ca.pem" \
	--cert="$EC/agent.pem" --key="$EC/agent.key" "$@"; }
[ -r "$D/secureboot" ] && { read -r sbimg; read -r signer; } <"$D/secureboot"

say() { echo "$*" >&3; echo "$*"; }
tap() { # tap STATUS NAME [WHY]
	if [ "$1" -eq 0 ]; then say "RRS n=$n ok - $2"; else say "RRS n=$n not ok - $2${3:+ ($3)}"; fi
}
prop() { systemctl show -P "$1" rerandd.service; }
jval() { # jval JSON KEY: a scalar of a flat JSON object
	grep -o "\"$2\":\(\"[^\"]*\"\|[^,}]*\)" <<<"$1" | head -n 1 | sed 's/^[^:]*://; s/"//g'
}
# k8s_rounds_ok: stdin, one kubectl call a line, is one or more rounds of
# cordon, drain, then (wait Ready, uncordon) once or more
k8s_rounds_ok() {
	awk -v drain="drain e2e-node --ignore-daemonsets --delete-emptydir-data --timeout=300s" \
	    -v wait="wait --for=condition=Ready node/e2e-node --timeout=120s" '
		st == 0 { if ($0 == "cordon e2e-node") st = 1; else bad = 1; next }
		st == 1 { if ($0 == drain) st = 2; else bad = 1; next }
		st == 2 { if ($0 == wait) st = 3; else bad = 1; next }
		st == 3 { if ($0 == "uncordon e2e-node") st = 4; else bad = 1; next }
		st == 4 { if ($0 == wait) st = 3; else if ($0 == "cordon e2e-node") st = 1; else bad = 1; next }
		END { exit !(!bad && st == 4) }'
}
wait_for() { # wait_for SECONDS CMD...: until CMD succeeds
	local end=$((SECONDS + $1)); shift
	until "$@"; do [ $SECONDS -lt $end ] || return 1; sleep 2; done
}

# Boot 0 builds the image: watch, as it happens, the processes that stage
# it under the shipped unit (daemon/run.c names them): rerandd-plan and
# rerandd-check (rerandd's helpers, which parse the builder's output),
# rerandd-reaper, and the builder (rerand, as the rerand user).  The first
# /proc status of each goes to $R/procwatch/NAME (issue 24's figures).
procwatch() {
	local end=$((SECONDS + 900)) f c p u
	mkdir -p "$R/procwatch"
	while [ $SECONDS -lt $end ] && [ ! -e "$R/procwatch.stop" ]; do
		for f in $(grep -lxE 'rerandd-(plan|check|reaper)|rerand' /proc/[0-9]*/comm 2>/dev/null); do
			p=${f%/comm}
			read -r c <"$f" 2>/dev/null || continue
			if [ "$c" = rerand ]; then
				u=$(awk '/^Uid:/ { print $2 }' "$p/status" 2>/dev/null)
				[ -n "$u" ] && [ "$u" != 0 ] || continue  # root's: rerand status and the like
				c=builder
			fi
			[ -e "$R/procwatch/$c" ] ||
				grep -E '^(Uid|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp|Seccomp_filters):' \
					"$p/status" 2>/dev/null | tr -s '\t ' ' ' | tr '\n' ' ' >"$R/procwatch/$c"
		done
		sleep 0.1
	done
}
# (not under Secure Boot: the image is pre-signed, nothing is built to watch)
[ "$n" -eq 0 ] && [ -z "$sbimg" ] && { procwatch & }

# The system must have finished booting (every unit started or failed).
state=$(timeout 900 systemctl is-system-running --wait 2>&1)
tap "$([ "$state" = running ]; echo $?)" "system reached running (not degraded)" \
	"$state: $(systemctl --failed --no-legend --plain 2>&1 | awk '{print $1}' | tr '\n' ' ')"

boot_id=$(cat /proc/sys/kernel/random/boot_id)
btime=$(sed -n 's/^btime //p' /proc/stat)
text=$(awk '$3 == "_text" { print $1; exit }' /proc/kallsyms)
code=$(awk -F' : ' '/Kernel code/ { gsub(/ /, "", $1); print $1; exit }' /proc/iomem)
# The secret goes to the host only (never to the journal: the leak search
# reads the journal).  In "reboots" mode ($D/xsteps) not for the boots that
# are not a new kernel from rerand's image (soft-reboot: the same kernel;
# systemd's own kexec and the firmware reboot: the kernel's own KASLR).
xsteps=$(cat "$D/xsteps" 2>/dev/null)
xlast=""
[ -z "$xsteps" ] || [ "$n" -le "$target" ] || xlast=$(cat "$D/xstep" 2>/dev/null)
case "$xlast" in
soft-reboot | kexec-default | skip-auto-kexec) ;;
*) echo "RRS-BOOT n=$n boot_id=$boot_id text=$text code=$code" >&3 ;;
esac
say "RRS-INFO n=$n kernel=$(uname -r) cmdline=$(cat /proc/cmdline)"
# QEMU gave boot 0 its command line; every later one is what rerandd staged.
[ "$n" -eq 0 ] && cp /proc/cmdline "$D/cmdline.0"

# ---- the package: dpkg -i at boot 0 (tests/e2e/lib-systemd.sh, RRS_INSTALL=deb) --
# Every path the package or its purge may touch, for the diff after the purge.
pkg_paths() {
	find -H /usr/bin /usr/sbin /usr/lib/rerand /usr/lib/kernel /lib/systemd/system \
		/usr/lib/sysusers.d /etc/systemd/system /etc/rerand /etc/kernel /var/lib/rerand /usr/share/man/man1 \
		/usr/share/man/man8 /usr/share/doc/rerand /usr/share/lintian/overrides \
		/usr/lib/modprobe.d /etc/modprobe.d /etc/modules-load.d \
		/var/lib/prometheus/node-exporter 2>/dev/null | sort
}
# Debian's prometheus-node-exporter ($D/node-exporter.deb, RRS_EXPORTER_DEB),
# installed first as an admin would (its directory then exists when
# rerandd starts, as its unit's ReadWritePaths= needs): rerandd's metrics
# must reach :9100/metrics from the exporter's default textfile directory.
if [ -r "$D/node-exporter.deb" ] && [ "$n" -eq 0 ]; then
	out=$(DEBIAN_FRONTEND=noninteractive dpkg -i "$D/node-exporter.deb" 2>&1)
	rc=$?
	echo "$out" >"$D/out/dpkg-install-node-exporter.log"
	wait_for 120 sh -c '[ "$(systemctl show -P ActiveState prometheus-node-exporter.service)" = active ]'
	tap "$([ $rc = 0 ] && [ "$(systemctl show -P ActiveState prometheus-node-exporter.service)" = active ]; echo $?)" \
		"dpkg -i prometheus-node-exporter (Debian's): exit $rc, its service active" \
		"$(tail -n 3 <<<"$out" | tr '\n' '|') $(systemctl show -P ActiveState prometheus-node-exporter.service)"
fi
if [ -r "$D/rerand.deb" ] && [ "$n" -eq 0 ]; then
	pkg_paths >"$D/paths.before"
	out=$(DEBIAN_FRONTEND=noninteractive dpkg -i "$D/rerand.deb" 2>&1)
	rc=$?
	echo "$out" >"$D/out/dpkg-install.log"
	say "RRS-INFO n=$n package $(dpkg-query -W -f='${Package} ${Version} ${Status}' rerand 2>&1)"
	tap "$rc" "dpkg -i rerand.deb: exit $rc" "$(tail -n 4 <<<"$out" | tr '\n' '|')"
	wait_for 120 sh -c '[ "$(systemctl show -P ActiveState rerandd.service)" = active ]'
	en=$(systemctl is-enabled rerandd.service 2>&1)
	# The unit where the package put it: /lib/systemd/system on bookworm,
	# /usr/lib/systemd/system where the release wants that (trixie); the
	# same file either way on a merged-/usr root.
	unit=$(dpkg -L rerand 2>/dev/null | grep -m1 '/systemd/system/rerandd\.service$')
	tap "$([ "$en" = enabled ] && [ "$(prop ActiveState)/$(prop SubState)" = active/running ] &&
		[ -n "$unit" ] && [ "$(readlink -f "$(prop FragmentPath)")" = "$(readlink -f "$unit")" ]; echo $?)" \
		"the package enabled and started rerandd.service (dh_installsystemd) from ${unit:-?}" \
		"is-enabled $en, $(prop ActiveState)/$(prop SubState), unit $(prop FragmentPath), package's ${unit:-none}"
fi

# ---- rerandd as systemd runs it ---------------------------------------------
pid=$(prop MainPID)
tap "$([ "$(prop ActiveState)/$(prop SubState)" = active/running ]; echo $?)" \
	"rerandd.service is active (running)" "$(prop ActiveState)/$(prop SubState)"
# Type=notify: the unit turns active only on READY=1, after the main process
# started (for Type=simple the two would be the same instant).
start_us=$(prop ExecMainStartTimestampMonotonic); active_us=$(prop ActiveEnterTimestampMonotonic)
tap "$([ "$(prop Type)" = notify ] && [ "${active_us:-0}" -gt "${start_us:-0}" ]; echo $?)" \
	"rerandd reached READY (Type=notify, active $(( (${active_us:-0} - ${start_us:-0}) / 1000 )) ms after exec)" \
	"Type=$(prop Type) exec=$start_us active=$active_us"
st=/proc/$pid/status
caps=$(grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' "$st" 2>/dev/null | tr -s '\t ' ' ' | tr '\n' ' ')
say "RRS-INFO n=$n caps=$caps"
# docs/design.md, "Privileges": effective CAP_SYS_BOOT (22) only; permitted
# and inheritable CAP_SYS_BOOT + CAP_SYS_ADMIN (21); permitted only
# CAP_SETGID, CAP_SETUID, CAP_SETPCAP (6-8), for the image builder child to
# become the rerand user, and CAP_LINUX_IMMUTABLE (9), raised only to lift
# efivarfs' immutable flag off LoaderEntryOneShot; bounding set the same six (with CAP_SETPCAP
# rerandd drops CAP_SYSLOG, 34, from it after opening /dev/kmsg); no ambient
# capability.
want="CapInh: 0000000000600000 CapPrm: 00000000006003c0 CapEff: 0000000000400000 CapBnd: 00000000006003c0 CapAmb: 0000000000000000 NoNewPrivs: 1 "
tap "$([ "$caps" = "$want" ]; echo $?)" "rerandd capabilities as designed: CapEff 0x400000 (CAP_SYS_BOOT), NoNewPrivs 1" "got: $caps"
# The image builder: the user sysusers.d/rerand.conf (from make install)
# made, and a built image staged, which under this root rerandd can only
# have been written by a child that became that user (daemon/stage_child.c).
wait_for 300 sh -c 'rerand status --json 2>/dev/null | grep -q "\"staged\":true"'
js=$(rerand status --json 2>&1)
pw=$(getent passwd rerand)
src=$(jval "$js" image_source)
tap "$([ -n "$pw" ] && [ "${pw%%:*}" = rerand ] && [ "$(cut -d: -f3 <<<"$pw")" != 0 ] &&
	{ [ -n "$sbimg" ] || [ "$src" = built ]; } && [ -z "$(jval "$js" stage_error)" ]; echo $?)" \
	"the rerand user exists (sysusers.d) and rerandd staged ${src:-no} image" "passwd '$pw', status $js"
# Boot 0 built the image (later boots find it cached): rerandd says as whom.
if [ "$n" -eq 0 ] && [ -z "$sbimg" ]; then
	# What /proc showed while they ran: no capability in any set but the
	# bounding one, no_new_privs, and a seccomp filter (mode 2): the unit's,
	# and the builder's own on top (one more filter).  A helper that ran
	# between two looks may be missed: a SKIP line says so (the check could
	# not be made), never no line at all; the builder runs for seconds, and
	# the line after the loop fails if it was not seen.
	touch "$R/procwatch.stop"
	for c in rerandd-plan rerandd-check rerandd-reaper builder; do
		st=$(cat "$R/procwatch/$c" 2>/dev/null)
		say "RRS-INFO n=$n proc $c: ${st:-not seen}"
		if [ -z "$st" ]; then
			tap 0 "$c ran with no capability, no_new_privs and a seccomp filter # SKIP not seen running (the watcher looks every 0.1 s)"
			continue
		fi
		tap "$(grep -q 'CapInh: 0000000000000000 CapPrm: 0000000000000000 CapEff: 0000000000000000 .*CapAmb: 0000000000000000 NoNewPrivs: 1 Seccomp: 2 ' <<<"$st"; echo $?)" \
			"$c ran with no capability, no_new_privs and a seccomp filter" "$st"
	done
	tap "$([ -s "$R/procwatch/builder" ]; echo $?)" "the builder was seen running as the rerand user"
	jl=$(journalctl -b -u rerandd.service -o cat --no-pager 2>&1 | grep -m1 '^built .* as rerand without capabilities')
	tap "$([ -n "$jl" ]; echo $?)" "the journal says the image was built as rerand without capabilities" \
		"$(journalctl -b -u rerandd.service -o cat --no-pager 2>&1 | grep -iE 'built|image|ImageUser' | tail -n 3 | tr '\n' ';')"
fi

score=$(systemd-analyze security rerandd.service --no-pager 2>/dev/null |
	sed -n 's/.*Overall exposure level for rerandd.service: \([0-9.]*\).*/\1/p')
say "RRS-INFO n=$n exposure=${score:-none}"
systemd-analyze security rerandd.service --no-pager >"$D/out/security.$n.txt" 2>&1
tap "$(awk -v s="${score:-99}" -v m="$security_max" 'BEGIN { exit !(s + 0 <= m + 0) }'; echo $?)" \
	"systemd-analyze security rerandd: exposure ${score:-none} <= $security_max"

# ---- Secure Boot: locked down, staged from the pre-signed image -----------------
if [ -n "$sbimg" ]; then
	ld=$(cat /sys/kernel/security/lockdown 2>&1)
	say "RRS-INFO n=$n lockdown=$ld"
	tap "$(grep -Eq '\[(integrity|confidentiality)\]' <<<"$ld"; echo $?)" "the kernel is locked down ($ld)"
	# The firmware's verdict as the boot stub passed it on: boot_params
	# secure_boot (0x1ec) 3 = enabled (independent of rerand).
	bp=$(od -An -t u1 -j $((0x1ec)) -N 1 /sys/kernel/boot_params/data 2>/dev/null | tr -d ' ')
	tap "$([ "$bp" = 3 ]; echo $?)" "boot_params says Secure Boot enabled (secure_boot=${bp:-unreadable})"
	# rerand reads the SecureBoot variable from efivarfs; the guest has no
	# kernel modules (the cloud kernel builds efivarfs as one), so it may
	# be unmounted: then rerandd takes boot_params' byte ([Paths]
	# BootParams=) and must still say "on", with where it read it.
	sbw=on sbsrc=mounted
	ls /sys/firmware/efi/efivars/SecureBoot-* >/dev/null 2>&1 || sbsrc="absent: boot_params"
	wait_for 120 sh -c 'rerand status --json 2>/dev/null | grep -q "\"staged\":true"'
	js=$(rerand status --json 2>&1)
	echo "$js" >"$D/out/status-staged.$n.json"
	ok=1
	[ "$(jval "$js" secure_boot)" = "$sbw" ] && [ "$(jval "$js" locked_down)" = true ] &&
		[ "$(jval "$js" staged)" = true ] && [ "$(jval "$js" image_source)" = pre-signed ] &&
		[ "$(jval "$js" signer)" = "$signer" ] && [ -z "$(jval "$js" stage_error)" ] && ok=0
	[ "$sbsrc" = mounted ] || rerand status 2>&1 | grep -q '^secure boot: *on (per boot_params: no efivarfs)' || ok=1
	tap "$ok" "rerand status: Secure Boot $sbw (efivarfs $sbsrc), lockdown $(jval "$js" lockdown), staged the pre-signed image signed by \"$(jval "$js" signer)\"" "$js"
	# The guest signs nothing: no key configured, no image signed here.
	ok=1
	! grep -rqs '^ *SignKey *=' /etc/rerand/ && ! ls /var/lib/rerand/images/*.signed.img >/dev/null 2>&1 && ok=0
	tap "$ok" "no signing key on the machine (no SignKey=, no image signed here)"
fi

# ---- systemd-boot and a UKI (check-systemd.sh uki) ------------------------------
if [ -r "$D/uki" ]; then
	{ read -r uki_id; read -r uki_path; } <"$D/uki"
	var=/sys/firmware/efi/efivars/LoaderEntrySelected-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f
	# Through a pipe: efivarfs files cannot seek (no_llseek), and tail -c +5
	# on the file itself seeks, fails and prints nothing.
	sel=$(cat "$var" 2>/dev/null | tail -c +5 | tr -d '\000')
	say "RRS-INFO n=$n LoaderEntrySelected=${sel:-none} esp=$(findmnt -n -o SOURCE,FSTYPE /boot/efi | tr ' ' ,)"
	if [ "$n" -eq 0 ]; then
		tap "$([ "$sel" = "$uki_id" ] && [ -r "$uki_path" ]; echo $?)" \
			"systemd-boot booted the UKI: LoaderEntrySelected is $uki_id, the ESP is at /boot/efi" \
			"LoaderEntrySelected '${sel}' ($(ls $var 2>&1)); $(ls -l "$uki_path" 2>&1)"
	else
		# kexec leaves the EFI variables (runtime services) as they were.
		tap "$([ "$sel" = "$uki_id" ]; echo $?)" "LoaderEntrySelected still names $uki_id after the kexec" "'$sel'"
		# The UKI's .initrd (512 bytes) reached this kexec'd kernel: only
		# `rerand load --uki` passes it (rerandd has no Initrd= here).
		fi=$(dmesg | grep -o 'Freeing initrd memory: [0-9]*K' | head -n 1)
		tap "$([ -n "$fi" ]; echo $?)" "the kexec'd kernel got the UKI's initrd (${fi:-no initrd}): rerand load --uki" \
			"$(dmesg | grep -iE 'initrd|initramfs' | head -n 3 | tr '\n' '|')"
	fi
	wait_for 300 sh -c 'rerand status --json 2>/dev/null | grep -q "\"staged\":true"'
	js=$(rerand status --json 2>&1)
	echo "$js" >"$D/out/status-uki.$n.json"
	log=$(journalctl -b -u rerandd -o cat --no-pager)
	tap "$([ "$(jval "$js" kernel)" = "$uki_path" ] && [ "$(jval "$js" staged)" = true ] &&
		grep -q "^staged $uki_path " <<<"$log"; echo $?)" \
		"rerandd found the UKI through LoaderEntrySelected and staged it ($uki_path)" \
		"kernel $(jval "$js" kernel), staged $(jval "$js" staged), error '$(jval "$js" stage_error)'; $(grep -E '^staged|staging failed' <<<"$log" | tail -n 2 | tr '\n' '|')"
	# A one-shot entry (what `bootctl set-oneshot` and `systemctl reboot
	# --boot-loader-entry=` write): the same UKI, so the image staged is
	# the one-shot's.  The kexec boot into it does not run systemd-boot,
	# which would delete it; rerandd must, once that boot is confirmed.
	os=/sys/firmware/efi/efivars/LoaderEntryOneShot-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f
	if [ "$n" -eq 0 ]; then
		{ printf '\007\000\000\000'; printf '%s' "$uki_id" | iconv -f UTF-8 -t UTF-16LE; printf '\000\000'; } >"$R/oneshot.var"
		cat "$R/oneshot.var" >"$os" 2>"$R/oneshot.err"
		got=$(cat "$os" 2>/dev/null | tail -c +5 | tr -d '\000')
		say "RRS-INFO n=$n LoaderEntryOneShot=${got:-none} attributes: $(lsattr "$os" 2>&1 | cut -d' ' -f1)"
		tap "$([ "$got" = "$uki_id" ]; echo $?)" "LoaderEntryOneShot set to $uki_id (as bootctl set-oneshot)" \
			"'$got' $(cat "$R/oneshot.err")"
	else
		cleared() { [ ! -e "$os" ] && rerand status 2>/dev/null | grep -q '^one-shot entry: '; }
		wait_for 300 cleared
		st_os=$(rerand status 2>&1 | grep '^one-shot entry:')
		say "RRS-INFO n=$n $st_os"
		tap "$([ ! -e "$os" ] && grep -q "systemd-boot LoaderEntryOneShot \"$uki_id\" cleared" <<<"$st_os"; echo $?)" \
			"the kexec boot into the one-shot entry confirmed: rerandd deleted LoaderEntryOneShot, status says so" \
			"$(ls -l "$os" 2>&1); '$st_os'; $(journalctl -b -u rerandd -o cat --no-pager | grep -i 'one-shot\|LoaderEntryOneShot' | tail -n 3 | tr '\n' '|')"
	fi
fi

# ---- what the previous boot left ----------------------------------------------
# (After rerandd's own reboots, in "reboots" mode, debian/reboots.sh checks.)
if [ "$n" -gt 0 ] && [ "$n" -le "$target" ]; then
	prev=$(cat "$D/last-boot-id")
	tap "$([ "$prev" != "$boot_id" ]; echo $?)" "a new boot id after the rerandomizing reboot"
	# The writer's ExecStop fsyncs a marker with the last record number.
	m="$D/marker.$prev"
	last=$(cut -d' ' -f2 "$m" 2>/dev/null)
	tap "$([ -n "$last" ]; echo $?)" "ExecStop marker of the previous boot is on disk" "$m: $(cat "$m" 2>&1)"
	# Every record the running writer appended (never fsynced) up to the
	# reboot is there, in order, and the file has no hole of zeros.
	# This boot's writer keeps appending: look at one snapshot.
	cp "$D/data" "$R/data.snap"
	seqs=$(awk -v b="$prev" '$1 == b { print $2 }' "$R/data.snap")
	count=$(wc -l <<<"$seqs"); maxs=$(tail -n 1 <<<"$seqs")
	zeros=$(tr -cd '\000' <"$R/data.snap" | wc -c)
	ok=1
	[ -n "$last" ] && [ "$count" = "${maxs:-x}" ] && [ "${maxs:-0}" -ge "$last" ] && [ "$zeros" = 0 ] && ok=0
	tap "$ok" "data written by a running service before the reboot is intact ($count records, marker at ${last:-none})" \
		"records=$count max=$maxs marker=$last zero-bytes=$zeros"
	# The persistent journal of the previous boot.
	pj=$(journalctl -b -1 -o short-monotonic --no-pager 2>&1)
	echo "$pj" >"$D/out/journal.boot$((n - 1)).txt"
	grep -q 'rerandd\[[0-9]*\]: rerandomizing reboot (' <<<"$pj"
	tap $? "previous boot's journal is readable and shows rerandd's decision" \
		"$(grep -c . <<<"$pj") lines; rerandd: $(grep 'rerandd\[' <<<"$pj" | tail -n 2 | tr '\n' '|')"
	# logind's RebootWithFlags(kexec) starts kexec.target itself and says
	# so; Method=systemd starts kexec.target directly.  Either way systemd
	# runs systemd-kexec.service after the clean shutdown, and the journal
	# says so as the release writes it: systemd 252 (bookworm) logs
	# "Starting systemd-kexec.service", 257 (trixie) only "Finished
	# systemd-kexec.service".  Neither line: not through systemd-kexec.
	path=""
	if grep -Eq '(Starting|Finished) systemd-kexec\.service' <<<"$pj"; then
		path=kexec.target
		grep -q 'System is rebooting with kexec' <<<"$pj" && path=logind
	fi
	expect=$(cat "$D/expect-path" 2>/dev/null || echo logind)
	say "RRS-INFO n=$n reboot_path=${path:-unknown}"
	tap "$([ "$path" = "$expect" ] && ! grep -q 'reboot(LINUX_REBOOT_CMD_KEXEC)' <<<"$pj"; echo $?)" \
		"the reboot went through $expect (seen: ${path:-neither}), not a raw reboot(2)"
	grep -q 'rerand-e2e writer: stop marker' <<<"$pj" &&
		grep -Eq 'Stopped (rerand-e2e-writer.service|rerand e2e)' <<<"$pj"
	tap $? "previous boot's journal shows the clean shutdown (writer's ExecStop, unit stopped)" \
		"$(grep -E 'writer|Stopped|kexec' <<<"$pj" | tail -n 3 | tr '\n' '|')"
	# rerandd verified this boot and says so.
	wait_for 120 sh -c 'rerand status --json 2>/dev/null | grep -q "\"verify\":\"randomized\""'
	js=$(rerand status --json 2>&1)
	echo "$js" >"$D/out/status.$n.json"
	ok=1
	[ "$(jval "$js" verify)" = randomized ] && [ "$(jval "$js" randomized)" = true ] &&
		[ "$(jval "$js" successes)" = "$n" ] && [ "$(jval "$js" verified_at)" -ge "$btime" ] && ok=0
	tap "$ok" "rerand status --json: this boot verified randomized, success $n" "$js"
	say "RRS-INFO n=$n verified boot_id=$boot_id entropy_bits=$(jval "$js" entropy_bits) successes=$(jval "$js" successes)"
	if [ -e "$D/confirm-wait" ]; then
		# check-systemd-load.sh: rerandd's default ConfirmTimeoutSec= on a
		# loaded host.  Wait for its verdict (at most its 2 x 600 s cap
		# from the kernel's start, and some), then say when rerandd
		# started and boot-complete.target came, in seconds into the boot.
		wait_for 1500 sh -c '! rerand status --json 2>/dev/null | grep -q "\"confirmation\":\"pending\""'
		cj=$(rerand status --json 2>&1)
		echo "$cj" >"$D/out/status-confirm.$n.json"
		jl=$(journalctl -b -u rerandd -o cat --no-pager 2>&1)
		mono() { local v; v=$(systemctl show -P "$1" "$2"); echo $(( ${v:-0} / 1000000 )); }
		secs() { if [ -n "$1" ]; then echo "${1}s"; else echo "$2"; fi; }
		started=$(grep -o 'rerandd started [0-9]*s into the boot' <<<"$jl" | head -n 1 | grep -o '[0-9][0-9]*')
		within=$(grep -o 'confirming within [0-9]*s' <<<"$jl" | head -n 1 | grep -o '[0-9][0-9]*')
		cat_=$(grep -o 'rerandomized boot confirmed [0-9]*s after it began' <<<"$jl" | head -n 1 | grep -o '[0-9][0-9]*')
		nc=$(grep -o '"never-confirmed":[0-9]*' <<<"$cj" | head -n 1 | cut -d: -f2)
		say "RRS-INFO n=$n confirm rerandd_started=$(secs "$started" ?) confirming_within=$(secs "$within" ?)" \
			"unit_active=$(mono ActiveEnterTimestampMonotonic rerandd.service)s" \
			"boot_complete=$(mono ActiveEnterTimestampMonotonic boot-complete.target)s" \
			"confirmed_at=$(secs "$cat_" none) confirmation='$(jval "$cj" confirmation)' confirmed=$(jval "$cj" confirmed)" \
			"never_confirmed=${nc:-?} failures_total=$(jval "$cj" failures_total) guest_load=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' /)"
		tap "$([ -z "$(jval "$cj" confirmation)" ] && [ "$(jval "$cj" confirmed)" = "$n" ] && [ "${nc:-x}" = 0 ] &&
			[ "$(jval "$cj" failures_total)" = 0 ] && [ -n "$cat_" ]; echo $?)" \
			"with the default ConfirmTimeoutSec= the rerandomized boot is confirmed (confirmed $n, no never-confirmed failure)" \
			"confirmation '$(jval "$cj" confirmation)', confirmed $(jval "$cj" confirmed), never-confirmed ${nc:-?}, failures $(jval "$cj" failures_total); $(grep -E 'confirm|boot-complete' <<<"$jl" | tail -n 3 | tr '\n' '|')"
	fi
	# What an operator reads after a rerandomizing reboot, as text (the
	# README's sample comes from here): never an address in either.
	{ rerand status; rerand verify; } 2>&1 | sed "s/^/RRS-TEXT n=$n | /" >&3
	if [ -n "$sbimg" ]; then
		# The stage's own record: the kernel's SETUP_RNG_SEED node
		# (added by kexec_file_load) fed the choice.
		vj=$(rerand verify --json 2>&1)
		echo "$vj" >"$D/out/verify.$n.json"
		src=$(jval "$vj" sources)
		say "RRS-INFO n=$n sources=$src weak=$(jval "$vj" weak)"
		ok=1
		[ "$(jval "$vj" randomized)" = true ] && [ "$(jval "$vj" weak)" = false ] &&
			case "+$src+" in *+kernel-seed+*) true ;; *) false ;; esac && ok=0
		tap "$ok" "rerand verify: randomized, kernel-seed among the sources ($src)" "$vj"
	fi
	if [ -n "$fleet" ]; then
		# The slot came back with the reboot, and rerandd gave it back
		# once the boot was verified and its health hooks passed.
		mid=$(cat /etc/machine-id)
		wait_for 180 sh -c "[ -z \"\$(ETCDCTL_API=3 etcdctl --endpoints=$ETCD --cacert=$EC/ca.pem --cert=$EC/agent.pem --key=$EC/agent.key get --prefix /rerand/fleet/ --keys-only 2>&1)\" ] &&
			journalctl -b -u rerandd -o cat | grep -q 'fleet: slot released'"
		keys=$(ectl get --prefix /rerand/fleet/ --keys-only 2>&1)
		leases=$(ectl lease list 2>&1 | head -n 1)
		# No lease may hold a key.  A lease with none is allowed: a revoke
		# that timed out while etcd was slow at boot leaves one, and it
		# expires by itself (fleetd/fleet_etcd.c, move_lease); the Debian
		# 13 fleet guest of 5 Dec 2026 had one after a keepalive timeout.
		held=""
		for l in $(ectl lease list 2>/dev/null | tail -n +2); do
			lt=$(ectl lease timetolive "$l" --keys 2>&1)
			grep -q 'attached keys(\[\])' <<<"$lt" || held+="$lt; "
		done
		jl=$(journalctl -b -u rerandd.service -o cat --no-pager 2>&1 | grep 'fleet:')
		fj=$(rerand status --json 2>&1 | grep -o '"fleet":{[^}]*}')
		echo "$jl" >"$D/out/fleet-journal.$n.txt"
		tap "$(grep -q 'fleet: took slot .* back after the reboot' <<<"$jl" && grep -q 'fleet: slot released' <<<"$jl" &&
			[ -z "$keys" ] && [ -z "$held" ] && [ "$(jval "$fj" state)" = idle ] &&
			[ -z "$(jval "$fj" waiting_because)" ]; echo $?)" \
			"fleet: the slot taken before the reboot was resumed and given back (no slot key, $leases, none holding a key, state $(jval "$fj" state))" \
			"keys '$keys'; $leases; $(tr '\n' '|' <<<"$jl"); $fj"
		# etcd's own history, replayed from revision 1: the slot key was
		# created with this machine's id and deleted again.
		hist=$(ETCDCTL_API=3 timeout 8 etcdctl --endpoints="$ETCD" --cacert="$EC/ca.pem" --cert="$EC/agent.pem" \
			--key="$EC/agent.key" watch --rev=1 --prefix /rerand/fleet/ 2>&1)
		echo "$hist" >"$D/out/etcd-history.$n.txt"
		put=$(grep -A2 -x PUT <<<"$hist" | tr '\n' ' ')
		del=$(grep -A1 -x DELETE <<<"$hist" | tr '\n' ' ')
		# the holder names this install: machine id ~ rerandd's install id
		iid=$(cat /var/lib/rerand/fleet-install-id 2>/dev/null)
		tap "$([ -n "$iid" ] && grep -q "/rerand/fleet/e2e/slot/0 $mid~$iid " <<<"$put " && grep -q '/rerand/fleet/e2e/slot/0' <<<"$del"; echo $?)" \
			"etcd history: PUT /rerand/fleet/e2e/slot/0 = this machine's id ~ its install id, then DELETE" "iid '$iid'; $(tr '\n' '|' <<<"$hist" | cut -c1-400)"
		grep -q 'rerandd\[[0-9]*\]: fleet: slot taken' <<<"$pj"
		tap $? "previous boot's journal: rerandd took the slot before rebooting" \
			"$(grep 'fleet:' <<<"$pj" | tail -n 3 | tr '\n' '|')"
		# The TLS material reached rerand-fleetd through LoadCredential= under
		# the names systemd gives a directory's files, and it is what the slot
		# was taken with: etcd listens on https only and refuses a client
		# without a certificate (checked at boot 0).  etcd 3.4 does not log the
		# subject of a client certificate it accepts: the agent reports the
		# subject of the one rerand-fleetd holds (computed where it was made).
		cd_=/run/credentials/rerand-fleetd.service ok=0 why=""
		for f in ca.pem client.pem client.key; do
			cmp -s "$cd_/rerand-fleet_$f" "/etc/rerand/fleet-tls/$f" || { ok=1; why+="rerand-fleet_$f differs or is missing; "; }
		done
		fj_=$(journalctl -b -u rerand-fleetd.service -o cat --no-pager 2>&1)
		grep -qi 'SSL\|credential\|cannot read' <<<"$fj_" && { ok=1; why+="fleetd journal: $(grep -i 'SSL\|credential\|cannot read' <<<"$fj_" | head -n 2 | tr '\n' '|')"; }
		tap "$ok" "fleet TLS: rerand-fleetd's credentials are /etc/rerand/fleet-tls/{ca.pem,client.pem,client.key} as rerand-fleet_FILE; no TLS error in its journal" \
			"$why $(ls "$cd_" 2>&1 | tr '\n' ' ')"
		say "RRS-INFO n=$n fleet_client_cert_subject=$(cat "$D/fleet-client-subject") etcd=$ETCD client-cert-auth"
		# The example Kubernetes hooks ran under rerandd.service, through
		# systemd-run: kubectl (a stand-in, lib-systemd.sh) outside rerandd's
		# sandbox, in the host's network namespace and a transient unit.
		kc=$(cat "$D/kubectl-calls" 2>/dev/null)
		init_net=$(readlink /proc/1/ns/net)
		say "RRS-INFO n=$n kubectl calls: $(tr '\n' ';' <<<"$kc")"
		# per reboot: the pre-reboot hook's cordon and drain, then the new
		# boot's post-boot hook: wait Ready and uncordon, once or more
		# (rerandd may run its post-boot hooks again); the long run's
		# second reboot repeats the round
		ok=0
		cut -d'|' -f1 <<<"$kc" | k8s_rounds_ok || ok=1
		while IFS='|' read -r args kcfg net cg; do
			[ "$kcfg" = /etc/rerand-e2e/kubeconfig ] && [ "$net" = "$init_net" ] &&
				case "$cg" in /system.slice/run-*.service) true ;; *) false ;; esac || ok=1
		done <<<"$kc"
		tap "$ok" "k8s hooks under rerandd.service: cordon, drain, wait Ready, uncordon, each kubectl run by systemd-run in a transient unit outside the sandbox (host network namespace, KUBECONFIG passed)" \
			"calls: $(tr '\n' ';' <<<"$kc"); init net $init_net"
		st_txt=$(rerand status 2>&1)
		grep -q "^fleet: *etcd, group e2e as .*: idle" <<<"$st_txt"
		tap $? "rerand status: fleet etcd, group e2e, idle" "$(grep -i fleet <<<"$st_txt" | tr '\n' '|')"
	fi
	# This kernel runs on the command line rerandd staged (read from the
	# running kernel's /proc/cmdline, size 0 in stat on 6.1): it must hold
	# boot 0's root=, or the machine would not have found its disk.
	root0=$(grep -o 'root=[^ ]*' "$D/cmdline.0" 2>/dev/null | head -n 1)
	cmd=$(cat /proc/cmdline)
	ok=1
	[ -n "$root0" ] && grep -qw -- "$root0" <<<"$cmd" && [ "$(jval "$js" verify)" = randomized ] && ok=0
	tap "$ok" "the command line rerandd staged holds ${root0:-root=?} (boot verified randomized): $cmd" \
		"boot 0: $(cat "$D/cmdline.0" 2>&1); verify=$(jval "$js" verify)"
	# MetricsFile='s default, in prometheus-node-exporter's directory
	# (lib-systemd.sh makes it); /run/rerand under a package from before
	# issue 40 (the upgrade guest's first boots)
	prom=/var/lib/prometheus/node-exporter/rerand.prom
	[ -e "$prom" ] || [ ! -e /run/rerand/rerand.prom ] || prom=/run/rerand/rerand.prom
	cp "$prom" "$D/out/metrics.$n.prom" 2>/dev/null
	ok=1
	[ "$(stat -c %Y "$prom" 2>/dev/null || echo 0)" -ge "$btime" ] &&
		grep -qx 'rerand_boot_randomized 1' "$prom" &&
		grep -qx "rerand_reboots_total{result=\"success\"} $n" "$prom" && ok=0
	tap "$ok" "Prometheus textfile updated this boot (randomized, $n successes)" "$(grep -v '^#' "$prom" 2>&1 | tr '\n' ' ')"
	if [ -r "$D/node-exporter.deb" ]; then
		# what Prometheus would scrape: HTTP from the exporter itself
		# (bash's /dev/tcp: the guest has no curl)
		scrape=$(exec 3<>/dev/tcp/127.0.0.1/9100 &&
			printf 'GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3 && timeout 20 cat <&3)
		echo "$scrape" >"$D/out/node-exporter.$n.txt"
		since=$(sed -n 's/^rerand_layout_since_timestamp_seconds \(.*\)\r\?$/\1/p' <<<"$scrape" | awk '{ printf "%d", $1 }')
		ok=1
		grep -q '^rerand_boot_randomized 1' <<<"$scrape" &&
			grep -q "^rerand_reboots_total{result=\"success\"} $n" <<<"$scrape" &&
			grep -q '^node_textfile_scrape_error 0' <<<"$scrape" &&
			[ -n "$since" ] && [ $((since - btime)) -ge -2 ] && [ $((since - btime)) -le 2 ] && ok=0
		tap "$ok" "prometheus-node-exporter serves rerandd's metrics from its default directory on :9100 (randomized, $n successes, layout since btime $btime)" \
			"since=${since:-none}; $(grep -E '^(rerand_boot_randomized|rerand_reboots_total|node_textfile_scrape_error|rerand_layout_since)' <<<"$scrape" | tr '\n' ' ' | cut -c1-400)"
	fi
fi
echo "$boot_id" >"$D/last-boot-id"
sync "$D/last-boot-id"

# ---- boot 0: reload and watchdog ----------------------------------------------
if [ "$n" -eq 0 ]; then
	conf=/etc/rerand/rerand.conf.d
	before=$(jval "$(rerand status --json)" next_reboot)
	t0=$(date '+%Y-%m-%d %H:%M:%S')
	printf '[Policy]\nMaxLayoutAge=soon\n' >"$conf/90-broken.conf"
	systemctl reload rerandd.service 2>/dev/null
	rc=$?
	tap "$([ "$rc" -ne 0 ]; echo $?)" "systemctl reload with a broken drop-in fails (exit $rc)"
	# The daemon's own check, as a bare SIGHUP (no ExecReload check first).
	kill -HUP "$pid"
	wait_for 30 sh -c "journalctl -u rerandd --since '$t0' -o cat | grep -q 'keeping the previous one'"
	log=$(journalctl -u rerandd --since "$t0" -o cat --no-pager)
	grep -q "$conf/90-broken.conf:2: MaxLayoutAge=soon" <<<"$log" &&
		grep -q 'configuration has errors: keeping the previous one' <<<"$log"
	tap $? "the error is logged with its file and line, and the old configuration kept" \
		"$(tail -n 4 <<<"$log" | tr '\n' '|')"
	after=$(jval "$(rerand status --json)" next_reboot)
	tap "$([ "$(prop MainPID)" = "$pid" ] && [ "$(prop ActiveState)" = active ] && [ "$after" = "$before" ]; echo $?)" \
		"rerandd still runs (same PID) on the old policy" "pid $(prop MainPID) was $pid; next_reboot $after was $before"
	rm -f "$conf/90-broken.conf"

	if [ "$mode" = long ]; then
		# The watchdog, with the interval shortened by a runtime drop-in so
		# that minutes cover many periods (rerandd takes it from
		# WATCHDOG_USEC either way).
		mkdir -p /run/systemd/system/rerandd.service.d
		printf '[Service]\nWatchdogSec=20s\nRestartSec=5s\n' \
			>/run/systemd/system/rerandd.service.d/50-e2e-watchdog.conf
		systemctl daemon-reload && systemctl restart rerandd.service
		wait_for 120 sh -c '[ "$(systemctl show -P ActiveState rerandd)" = active ]'
		pid=$(prop MainPID); nr=$(prop NRestarts); wd=$(prop WatchdogUSec)
		say "RRS-INFO n=$n watchdog=$wd pid=$pid"
		end=$((SECONDS + 180)); same=0
		while [ $SECONDS -lt $end ]; do
			[ "$(prop MainPID)" = "$pid" ] || { same=1; break; }
			sleep 10
		done
		tap "$([ "$same" = 0 ] && [ "$(prop NRestarts)" = "$nr" ]; echo $?)" \
			"watchdog fed: not restarted in 180 s with WatchdogSec=20s" \
			"pid $(prop MainPID) was $pid, NRestarts $(prop NRestarts) was $nr"
		t1=$(date '+%Y-%m-%d %H:%M:%S')
		kill -STOP "$pid"
		wait_for 120 sh -c "p=\$(systemctl show -P MainPID rerandd); [ \"\$p\" != $pid ] && [ \"\$p\" != 0 ] && [ \"\$(systemctl show -P ActiveState rerandd)\" = active ]"
		log=$(journalctl -u rerandd --since "$t1" -o cat --no-pager)
		tap "$([ "$(prop NRestarts)" = $((nr + 1)) ] && grep -q 'Watchdog timeout' <<<"$log"; echo $?)" \
			"SIGSTOP: systemd's watchdog killed rerandd and restarted it" \
			"NRestarts $(prop NRestarts) was $nr; $(grep -E 'Watchdog|Main process' <<<"$log" | tr '\n' '|')"
		pid=$(prop MainPID)
	fi

	# Now the fast policy: rerandomize after a minute of layout age.
	t2=$(date '+%Y-%m-%d %H:%M:%S')
	printf '[Policy]\nMaxLayoutAge=1min\n' >"$conf/60-e2e-fast.conf"
	systemctl reload rerandd.service
	rc=$?
	wait_for 30 sh -c "journalctl -u rerandd --since '$t2' -o cat | grep -q 'configuration reloaded'"
	tap "$([ "$rc" = 0 ] && [ "$(prop MainPID)" = "$pid" ]; echo $?)" "a valid drop-in reloads (exit $rc, same PID)"
fi

# Long: the second reboot goes through Method=systemd (kexec.target without
# logind), the path auto falls back to.
if [ "$mode" = long ] && [ "$n" -eq 1 ]; then
	t3=$(date '+%Y-%m-%d %H:%M:%S')
	printf '[Reboot]\nMethod=systemd\n' >/etc/rerand/rerand.conf.d/61-e2e-method.conf
	echo kexec.target >"$D/expect-path"
	sync "$D/expect-path"
	systemctl reload rerandd.service
	rc=$?
	wait_for 30 sh -c "journalctl -u rerandd --since '$t3' -o cat | grep -q 'configuration reloaded'"
	tap "$rc" "reload with Method=systemd for the next reboot"
fi

# ---- Secure Boot, last boot: no signed image, blocked, no loop -----------------
if [ -n "$sbimg" ] && [ "$n" -ge "$target" ]; then
	t4=$(date '+%Y-%m-%d %H:%M:%S')
	mv "$sbimg" "$R/held.img"
	nimg=$(ls /var/lib/rerand/images 2>/dev/null | wc -l)
	systemctl restart rerandd.service
	wait_for 120 sh -c 'rerand status --json 2>/dev/null | grep -q "no signed image"'
	pid=$(prop MainPID)
	# Six CheckInterval ticks: a retry loop would show here.
	sleep 30
	js=$(rerand status --json 2>&1)
	echo "$js" >"$D/out/status-blocked.$n.json"
	log=$(journalctl -u rerandd --since "$t4" -o cat --no-pager)
	nfail=$(grep -c 'staging failed' <<<"$log")
	err=$(jval "$js" stage_error)
	say "RRS-INFO n=$n blocked: $err"
	ok=1
	[ "$(jval "$js" staged)" = false ] && grep -q 'locked down' <<<"$err" &&
		grep -q "no signed image" <<<"$err" && grep -q "$sbimg" <<<"$err" && ok=0
	tap "$ok" "without the pre-signed image rerandd stages nothing and says why (blocker $(jval "$js" blocker))" "$js"
	ok=1
	[ "$nfail" = 1 ] && [ "$(prop MainPID)" = "$pid" ] && [ "$(prop ActiveState)" = active ] &&
		[ "$(ls /var/lib/rerand/images 2>/dev/null | wc -l)" = "$nimg" ] && ok=0
	tap "$ok" "blocked without a loop: one 'staging failed' in 30 s, no image built, same PID" \
		"staging failed x$nfail; pid $(prop MainPID) was $pid; images $(ls /var/lib/rerand/images 2>/dev/null | wc -l) were $nimg"
	mv "$R/held.img" "$sbimg"
fi

# ---- last boot with the package: a second kernel package, then the purge --------
if [ -r "$D/kernel2.deb" ] && [ -z "$sbimg" ] && [ "$n" -ge "$target" ]; then
	v2=$(cat "$D/kernel2.version")
	t5=$(date '+%Y-%m-%d %H:%M:%S')
	out=$(DEBIAN_FRONTEND=noninteractive dpkg -i "$D/kernel2.deb" 2>&1)
	rc=$?
	echo "$out" >"$D/out/dpkg-kernel2.log"
	tap "$rc" "dpkg -i linux-image-$v2: exit $rc" "$(tail -n 4 <<<"$out" | tr '\n' '|')"
	# The hook (/etc/kernel/postinst.d/rerand) ran inside dpkg: it indexed
	# the kernel and rerandd, asked with `rerand build`, built the image.
	sha2=$(sha256sum "/boot/vmlinuz-$v2" 2>/dev/null | cut -d' ' -f1)
	img2=$(ls /var/lib/rerand/images/"$sha2".*.img 2>/dev/null | head -n 1)
	ino2=$(stat -c %i "$img2" 2>/dev/null)
	idx=$(cat "/var/lib/rerand/kernels/$v2" 2>&1)
	tap "$([ -n "$sha2" ] && [ "$idx" = "$sha2" ] && [ -n "$ino2" ] && ! grep -q '^rerand:' <<<"$out"; echo $?)" \
		"the kernel hook built $(basename "${img2:-none}") and indexed $v2 during dpkg -i" \
		"index: $idx; image: ${img2:-none}; $(grep '^rerand:' <<<"$out" | head -n 2 | tr '\n' '|')"
	# rerandd saw /boot change, waited NewKernelSettle= and for dpkg, and
	# staged the newest kernel from its cache: the hook's file, not a rebuild.
	wait_for 600 sh -c "rerand status --json 2>/dev/null | grep -q '\"kernel_sha256\":\"$sha2\"'"
	js=$(rerand status --json 2>&1)
	echo "$js" >"$D/out/status-kernel2.$n.json"
	log=$(journalctl -u rerandd --since "$t5" -o cat --no-pager)
	ok=1
	[ "$(jval "$js" kernel)" = "/boot/vmlinuz-$v2" ] && [ "$(jval "$js" kernel_sha256)" = "$sha2" ] &&
		[ "$(jval "$js" staged)" = true ] && grep -q "new kernel /boot/vmlinuz-$v2" <<<"$log" &&
		grep -q "staged /boot/vmlinuz-$v2" <<<"$log" && ok=0
	tap "$ok" "rerandd staged the new kernel: rerand status says /boot/vmlinuz-$v2, sha256 ${sha2:0:16}" \
		"$(grep -E 'new kernel|staged|staging failed' <<<"$log" | tail -n 3 | tr '\n' '|') $js"
	# NewKernelSettle=10s expires while dpkg still configures the package
	# (depmod, mkinitramfs, then the hook): rerandd must have waited on
	# dpkg's lock, probed from inside its sandbox.
	tap "$(grep -q '^new kernel: waiting while the package manager holds /var/lib/dpkg/lock' <<<"$log"; echo $?)" \
		"rerandd waited while dpkg held its lock (NewKernelSettle=10s expired during dpkg -i)" \
		"$(grep -E '^new kernel' <<<"$log" | head -n 3 | tr '\n' '|')"
	# rerandd logs "building IMAGE from KERNEL" whenever it builds one, with
	# "(build only, not staged)" when the kernel hook asked (`rerand build`:
	# the one build path, issue 39); it waits while the hook's
	# .hook-VERSION.tmp exists, and while dpkg runs.
	built=$(grep "^building .* from /boot/vmlinuz-$v2" <<<"$log" | grep -vc "(build only, not staged)")
	forhook=$(grep -c "^building .* from /boot/vmlinuz-$v2 (build only, not staged)" <<<"$log")
	tap "$([ "$built" = 0 ] && [ "$forhook" = 1 ] && [ -n "$ino2" ] && [ "$(stat -c %i "$img2" 2>/dev/null)" = "$ino2" ]; echo $?)" \
		"rerandd built the image once, at the hook's request, and staged that file (same file after staging and pruning)" \
		"for the hook $forhook time(s), for itself $built time(s); inode $(stat -c %i "$img2" 2>&1) was $ino2"
	say "RRS-INFO n=$n kernel2=$v2 image=$(basename "${img2:-none}")"

	# What the product wrote, before the purge takes it.
	journalctl -b -o export --no-pager >"$D/out/journal.boot$n.export" 2>/dev/null
	cp /var/lib/rerand/* "$D/out/" 2>/dev/null
	# An admin's files under /etc/rerand: docs/operations.md says they stay
	# (the drop-ins this agent added at boot 0, and a pre-reboot hook).
	admin=$(find /etc/rerand/rerand.conf.d -type f | sort | comm -13 "$D/paths.before" - | tr '\n' ' ')
	printf '#!/bin/sh\nexit 0\n' >/etc/rerand/pre-reboot.d/10-site
	chmod 0755 /etc/rerand/pre-reboot.d/10-site
	out=$(DEBIAN_FRONTEND=noninteractive apt-get purge -y rerand 2>&1)
	rc=$?
	echo "$out" >"$D/out/apt-purge.log"
	tap "$rc" "apt-get purge -y rerand: exit $rc" "$(tail -n 4 <<<"$out" | tr '\n' '|')"
	pkg_paths >"$R/paths.after"
	added=$(comm -13 "$D/paths.before" "$R/paths.after" | tr '\n' ' ')
	removed=$(comm -23 "$D/paths.before" "$R/paths.after" | tr '\n' ' ')
	st=$(dpkg-query -W -f='${Status}' rerand 2>/dev/null)
	# docs/operations.md, "Removal": left are the admin's files under
	# /etc/rerand (and so their directories) and rerandd's lines in the
	# journal; nothing else, and nothing of rerand's loaded (issue 38).
	want=$(printf '%s\n' /etc/rerand/pre-reboot.d /etc/rerand/pre-reboot.d/10-site $admin | sort | tr '\n' ' ')
	tap "$([ "$added" = "$want" ] && [ -z "$removed" ]; echo $?)" \
		"after the purge only the admin's files under /etc/rerand stay (docs/operations.md)" \
		"new since before dpkg -i: ${added:-none}; want: $want; gone: ${removed:-none}"
	ok=1
	[ -z "$st" ] || [ "$st" = "unknown ok not-installed" ] || [ "$st" = "deinstall ok config-files" ] || st=bad
	[ "$st" != bad ] && [ "$st" != "deinstall ok config-files" ] && [ ! -e /var/lib/rerand ] && [ ! -e /etc/rerand/rerand.conf ] &&
		[ ! -e /etc/kernel/postinst.d/rerand ] && [ ! -e /etc/kernel/postrm.d/rerand ] &&
		[ ! -e /usr/lib/kernel/install.d/60-rerand.install ] && [ ! -e /usr/bin/rerand ] &&
		[ ! -e /usr/sbin/rerand-fleetd ] && [ ! -e /etc/rerand/fleet-tls ] &&
		[ ! -e /usr/lib/sysusers.d/rerand.conf ] &&
		[ "$(systemctl show -P LoadState rerandd.service)" = not-found ] &&
		[ "$(systemctl show -P LoadState rerand-fleetd.socket)" = not-found ] && ok=0
	# The rerand system user stays, as Debian leaves system users (the
	# image builder's; nothing of the package runs as it any more).
	say "RRS-INFO n=$n after purge: user rerand $(getent passwd rerand >/dev/null && echo stays || echo gone)"
	tap "$ok" "purged: no package record, conffiles, hooks, /var/lib/rerand, fleet-tls, sysusers.d file or units left" \
		"status '${st}'; $(ls -d /var/lib/rerand /etc/rerand/rerand.conf /etc/kernel/postinst.d/rerand /usr/bin/rerand /usr/sbin/rerand-fleetd /etc/rerand/fleet-tls /usr/lib/sysusers.d/rerand.conf 2>/dev/null | tr '\n' ' ') units $(systemctl show -P LoadState rerandd.service) $(systemctl show -P LoadState rerand-fleetd.socket)"
	kl=$(cat /sys/kernel/kexec_loaded 2>&1)
	tap "$([ "$kl" = 0 ] && journalctl -b -u rerandd -o cat --no-pager | grep -q '^staged /boot/vmlinuz-' &&
		journalctl -b -u rerandd -o cat --no-pager | grep -q '^unloaded the staged image: '; echo $?)" \
		"after the purge nothing of rerand's is loaded (kexec_loaded $kl: rerandd unloaded its image when stopped) and rerandd's journal lines stay" \
		"$(journalctl -b -u rerandd -o cat --no-pager | grep -E '^(staged|unloaded)' | tail -n 2 | tr '\n' '|')"
fi

# ---- fleet, boot 0: before rerandd may reboot ------------------------------------
if [ -n "$fleet" ] && [ "$n" -eq 0 ]; then
	# up to 90 s: a TCG guest on a busy host starts etcd slowly (seen as
	# "activating", or a health call over its timeout, then healthy)
	for etcd_try in $(seq 1 30); do
		systemctl is-active -q etcd.service && ectl endpoint health >/dev/null 2>&1 && break
		sleep 3
	done
	tap "$(systemctl is-active -q etcd.service && ectl endpoint health >/dev/null 2>&1; echo $?)" \
		"etcd.service (Debian's etcd-server) is active and healthy on $ETCD" \
		"$(systemctl is-active etcd.service 2>&1); $(ectl endpoint health 2>&1)"
	# client-cert-auth: the same CA but no client certificate is refused
	nocert=$(ETCDCTL_API=3 timeout 20 etcdctl --endpoints="$ETCD" --cacert="$EC/ca.pem" --dial-timeout=3s \
		--command-timeout=5s endpoint health 2>&1)
	tap "$(! grep -q 'is healthy' <<<"$nocert"; echo $?)" \
		"etcd refuses a client without a certificate (--client-cert-auth)" "$(tr '\n' '|' <<<"$nocert" | cut -c1-300)"
	# The fleet client has a unit of its own (make install ships it):
	# rerandd keeps its network-less sandbox and reaches etcd through it.
	tap "$([ "$(prop PrivateNetwork)" = yes ] && [ -e /lib/systemd/system/rerand-fleetd.service ] &&
		systemctl is-enabled -q rerand-fleetd.socket; echo $?)" \
		"rerandd.service keeps PrivateNetwork=yes; rerand-fleetd.socket is installed and enabled" \
		"PrivateNetwork=$(prop PrivateNetwork) fleetd socket $(systemctl is-enabled rerand-fleetd.socket 2>&1)"
	fscore=$(systemd-analyze security rerand-fleetd.service --no-pager 2>/dev/null |
		sed -n 's/.*Overall exposure level for rerand-fleetd.service: \([0-9.]*\).*/\1/p')
	say "RRS-INFO n=$n fleetd_exposure=${fscore:-none}"
	say "RRS-INFO n=$n fleet: rerandd takes the slot through rerand-fleetd and reboots"
fi

# ---- upgrade (check-systemd.sh upgrade): the earlier package to this one -------
# Boot 0 installed the earlier commit's package ($D/rerand.deb) and rerandd
# rebooted into its image: this boot counts one success.  Now, as an admin
# would: an edit of the conffile, an operator's hold, then the upgrade with
# dpkg (as unattended-upgrades runs it: --force-confdef --force-confold).
# After it: the edit, the drop-ins, the counters and the hold kept; rerandd
# restarted as the new binary; nothing loaded while held; on release the new
# rerandd stages its image.  Then it reboots into that image (the next boot
# is checked like every rerandomized one, and says the new version).
if [ -r "$D/rerand-new.deb" ] && [ "$n" -eq $((target - 1)) ]; then
	conffile=/etc/rerand/rerand.conf
	oldv=$(dpkg-query -W -f='${Version}' rerand 2>&1)
	newv=$(dpkg-deb -f "$D/rerand-new.deb" Version 2>&1)
	say "RRS-INFO n=$n upgrade: rerand $oldv -> $newv"
	wait_for 300 sh -c 'rerand status --json 2>/dev/null | grep -q "\"staged\":true"'
	js0=$(rerand status --json 2>&1)
	echo "$js0" >"$D/out/status-before-upgrade.$n.json"
	kl0=$(cat /sys/kernel/kexec_loaded 2>&1)
	tap "$([ "$kl0" = 1 ] && [ "$(jval "$js0" staged)" = true ] && [ "$(jval "$js0" successes)" = "$n" ] &&
		[ "$(jval "$js0" daemon_version)" = "$oldv" ] && [ "$oldv" != "$newv" ]; echo $?)" \
		"before the upgrade: rerandd $oldv runs with an image staged (kexec_loaded $kl0) and $(jval "$js0" successes) success(es) counted" \
		"daemon_version $(jval "$js0" daemon_version), new package $newv; $js0"
	# The admin's edit of the conffile and the drop-ins: kept byte for byte.
	printf '\n# rerand-e2e: an admin edit, kept across the upgrade\n' >>"$conffile"
	sums0=$(sha256sum "$conffile" /etc/rerand/rerand.conf.d/* 2>&1)
	hold_text="e2e: upgrade under a hold"
	rerand hold --reason "$hold_text" >/dev/null 2>&1
	rc=$?
	wait_for 60 sh -c 'rerand status --json 2>/dev/null | grep -q "\"hold\":true"'
	js1=$(rerand status --json 2>&1)
	echo "$js1" >"$D/out/status-held-before-upgrade.$n.json"
	kl1=$(cat /sys/kernel/kexec_loaded 2>&1)
	# (What the earlier version does with its image under a hold is its
	# own business: reported, not judged.  The new one is judged below.)
	say "RRS-INFO n=$n upgrade: held under $oldv: kexec_loaded $kl1, staged $(jval "$js1" staged)"
	tap "$([ "$rc" = 0 ] && [ "$(jval "$js1" hold)" = true ]; echo $?)" \
		"before the upgrade: rerand hold --reason (exit $rc): status says held" "$js1"
	pid0=$(prop MainPID)
	t_up=$(date '+%Y-%m-%d %H:%M:%S')
	up_mono=$(awk '{ printf "%d", $1 * 1000000 }' /proc/uptime)
	out=$(DEBIAN_FRONTEND=noninteractive dpkg --force-confdef --force-confold -i "$D/rerand-new.deb" 2>&1)
	rc=$?
	echo "$out" >"$D/out/dpkg-upgrade.log"
	tap "$([ "$rc" = 0 ] && [ "$(dpkg-query -W -f='${Version} ${Status}' rerand 2>&1)" = "$newv install ok installed" ]; echo $?)" \
		"dpkg -i of $newv over $oldv: exit $rc, package $(dpkg-query -W -f='${Version} ${Status}' rerand 2>&1)" \
		"$(tail -n 4 <<<"$out" | tr '\n' '|')"
	wait_for 120 sh -c '[ "$(systemctl show -P ActiveState rerandd.service)" = active ] &&
		rerand status --json 2>/dev/null | grep -q "\"daemon_version\":\"'"$newv"'\""'
	pid1=$(prop MainPID)
	exe=$(readlink "/proc/$pid1/exe" 2>&1)
	start1=$(prop ExecMainStartTimestampMonotonic)
	js2=$(rerand status --json 2>&1)
	echo "$js2" >"$D/out/status-after-upgrade.$n.json"
	tap "$([ "$pid1" != "$pid0" ] && [ "${pid1:-0}" != 0 ] && [ "${start1:-0}" -ge "$up_mono" ] &&
		[ "$exe" = /usr/sbin/rerandd ] && [ "$(jval "$js2" daemon_version)" = "$newv" ] &&
		[ "$(/usr/sbin/rerandd --version 2>&1)" = "rerandd $newv" ]; echo $?)" \
		"rerandd restarted by the upgrade: PID $pid0 -> $pid1, running /usr/sbin/rerandd $(jval "$js2" daemon_version)" \
		"pid $pid1 (was $pid0), exe '$exe', started at ${start1}us (upgrade at ${up_mono}us), status version $(jval "$js2" daemon_version), --version '$(/usr/sbin/rerandd --version 2>&1)'"
	sums1=$(sha256sum "$conffile" /etc/rerand/rerand.conf.d/* 2>&1)
	tap "$([ "$sums1" = "$sums0" ] && grep -q '^# rerand-e2e: an admin edit' "$conffile"; echo $?)" \
		"config kept: the admin's edit of $conffile and the drop-ins, byte for byte" \
		"before: $(tr '\n' '|' <<<"$sums0"); after: $(tr '\n' '|' <<<"$sums1")"
	ok=0 why=""
	for k in successes failures_total weak_total unplanned_boots last_success consecutive_failures hold_since hold_reason; do
		[ "$(jval "$js2" "$k")" = "$(jval "$js1" "$k")" ] || { ok=1; why+="$k $(jval "$js1" "$k") -> $(jval "$js2" "$k"); "; }
	done
	[ "$(jval "$js2" hold)" = true ] && [ "$(jval "$js2" hold_text)" = "$hold_text" ] || { ok=1; why+="hold $(jval "$js2" hold) '$(jval "$js2" hold_text)'; "; }
	jl=$(journalctl -u rerandd --since "$t_up" -o cat --no-pager 2>&1)
	# (a state file the new version doubts is held as "damaged-state")
	[ "$(jval "$js2" hold_reason)" != damaged-state ] && ! grep -q 'damaged state' <<<"$jl" ||
		{ ok=1; why+="damaged state: $(grep 'damaged' <<<"$jl" | head -n 2 | tr '\n' '|')"; }
	tap "$ok" "state kept: $(jval "$js2" successes) success(es), the counters and the operator's hold ('$(jval "$js2" hold_text)', $(jval "$js2" hold_reason)) as before, the state file not doubted" \
		"$why"
	# Held: the new rerandd wants nothing loaded, whatever the old one left.
	wait_for 60 sh -c '[ "$(cat /sys/kernel/kexec_loaded)" = 0 ]'
	kl2=$(cat /sys/kernel/kexec_loaded 2>&1)
	js3=$(rerand status --json 2>&1)
	tap "$([ "$kl2" = 0 ] && [ "$(jval "$js3" staged)" = false ] && [ -n "$(jval "$js3" unstaged_why)" ] &&
		[ ! -e /var/lib/rerand/loaded ]; echo $?)" \
		"after the upgrade, held: nothing loaded (kexec_loaded $kl2, no marker), status says why ('$(jval "$js3" unstaged_why)')" \
		"staged $(jval "$js3" staged); marker $(cat /var/lib/rerand/loaded 2>&1); $js3"
	t_rel=$(date '+%Y-%m-%d %H:%M:%S')
	sleep 1
	rerand release >/dev/null 2>&1
	rc=$?
	wait_for 300 sh -c 'rerand status --json 2>/dev/null | grep -q "\"staged\":true" && [ "$(cat /sys/kernel/kexec_loaded)" = 1 ]'
	js4=$(rerand status --json 2>&1)
	echo "$js4" >"$D/out/status-restaged.$n.json"
	kl3=$(cat /sys/kernel/kexec_loaded 2>&1)
	jl=$(journalctl -u rerandd --since "$t_rel" -o cat --no-pager 2>&1)
	sl=$(journalctl -u rerandd --since "$t_rel" -o json --no-pager 2>/dev/null | grep '"MESSAGE":"staged /' | grep -o '"_PID":"[0-9]*"' | head -n 1)
	tap "$([ "$rc" = 0 ] && [ "$kl3" = 1 ] && [ "$(jval "$js4" staged)" = true ] && [ "$(jval "$js4" hold)" = false ] &&
		[ "$(cat /var/lib/rerand/loaded 2>/dev/null)" = "$boot_id" ] && [ "$sl" = "\"_PID\":\"$pid1\"" ] &&
		[ "$(prop MainPID)" = "$pid1" ]; echo $?)" \
		"rerand release: the new rerandd (PID $pid1) staged its image (kexec_loaded $kl3, marker this boot, $(jval "$js4" kernel))" \
		"release exit $rc; staged $(jval "$js4" staged) hold $(jval "$js4" hold); marker '$(cat /var/lib/rerand/loaded 2>&1)'; staged by ${sl:-nobody}; $(grep -E '^(staged|staging failed|building|unloaded)' <<<"$jl" | tail -n 3 | tr '\n' '|')"
	say "RRS-INFO n=$n upgrade: images $(ls /var/lib/rerand/images 2>/dev/null | tr '\n' ' ')"
	echo "$newv" >"$D/upgraded-to"
fi
# The boot after the upgrade: the new package and rerandd, and the image
# the new rerandd staged rebooted into (verified above with the counters).
if [ -r "$D/upgraded-to" ] && [ "$n" -eq "$target" ]; then
	newv=$(cat "$D/upgraded-to")
	wait_for 120 sh -c 'rerand status --json 2>/dev/null | grep -q "\"verify\":\"randomized\""'
	js=$(rerand status --json 2>&1)
	tap "$([ "$(dpkg-query -W -f='${Version}' rerand 2>&1)" = "$newv" ] && [ "$(jval "$js" daemon_version)" = "$newv" ] &&
		[ "$(rerand --version 2>&1)" = "rerand $newv" ] && [ "$(jval "$js" successes)" = "$n" ] &&
		[ "$(jval "$js" verify)" = randomized ]; echo $?)" \
		"after the upgrade: rerand $newv rebooted into the image it staged, verified randomized, $(jval "$js" successes) successes in all" \
		"package $(dpkg-query -W -f='${Version}' rerand 2>&1), rerand --version '$(rerand --version 2>&1)'; $js"
fi

# ---- hand over to rerandd ------------------------------------------------------
journalctl -b -o export --no-pager >"$D/out/journal.boot$n.export" 2>/dev/null
cp /var/lib/rerand/* "$D/out/" 2>/dev/null
sync -f "$D"
if [ -n "$xsteps" ] && [ "$n" -ge "$target" ]; then
	# "reboots" mode: the administrator's reboot commands, one per boot.
	. /usr/local/libexec/rerand-e2e/reboots
	x_main
elif [ "$n" -ge "$target" ]; then
	say "RRS-DONE n=$n"
	systemctl poweroff
else
	# fleet, boot 0: fencing.  A slot key as a clone of this machine would
	# hold it (this machine id, another install id) is there when rerandd
	# first asks for a slot: it must refuse, say so in its journal and
	# status, and take the slot once the clone's key is gone.
	if [ -n "$fleet" ] && [ "$n" -eq 0 ]; then
		mid=$(cat /etc/machine-id)
		ectl put /rerand/fleet/e2e/slot/0 "$mid~c10e0000000000000000000000000000" >/dev/null 2>&1
	fi
	# rerandd's BlockerCommand waits for this file: no reboot before the
	# checks above are done.
	touch "$R/checked"
	say "RRS-INFO n=$n handed over: rerandd reboots when the layout is 1 min old"
	if [ -n "$fleet" ] && [ "$n" -eq 0 ]; then
		refused() { journalctl -b -u rerandd.service -o cat --no-pager | grep -q 'another host uses this identity'; }
		wait_for 600 refused
		jline=$(journalctl -b -u rerandd.service -o cat --no-pager | grep -m1 'another host uses this identity')
		st_txt=$(rerand status 2>&1 | grep -i 'fleet')
		fj=$(rerand status --json 2>&1 | grep -o '"fleet":{[^}]*}')
		say "RRS-INFO n=$n clone refusal, journal: $jline"
		say "RRS-INFO n=$n clone refusal, rerand status: $(tr '\n' '|' <<<"$st_txt")"
		say "RRS-INFO n=$n clone refusal, rerand status --json: $fj"
		tap "$(grep -q "held by $mid~c10e0000000000000000000000000000, another host with this machine id $mid" <<<"$jline" &&
			grep -q '"waiting_because":"another host uses this identity' <<<"$fj"; echo $?)" \
			"fleet fencing: a slot held with this machine id and another install id (a clone) is refused; journal and status say so" \
			"journal '$jline'; status $fj"
		ectl del /rerand/fleet/e2e/slot/0 >/dev/null 2>&1
		say "RRS-INFO n=$n clone's slot key deleted: rerandd takes the slot at its next try"
	fi
fi
exit 0
