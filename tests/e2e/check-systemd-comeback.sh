#!/bin/bash
# run-check: long only (each case is a guest of 10 to 25 minutes under TCG)
# SPDX-License-Identifier: GPL-2.0-only
# A rerandomization never costs a node (issue 22), on the Debian 12 systemd
# guest of check-systemd-fleet.sh (systemd as PID 1, etcd and rerand-fleetd,
# one fleet slot) with a real watchdog: QEMU's i6300esb, `-action
# watchdog=reset`, no -no-reboot (a reset boots QEMU's -kernel again through
# SeaBIOS), and the 6.12 cloud kernel's own watchdog.ko and i6300esb.ko in
# /usr/lib/modules, loaded by systemd-modules-load (before rerandd.service,
# whose private /dev must see /dev/watchdog0).  Boot 0's command line has
# watchdog.stop_on_reboot=0; rerandd arms the watchdog before its kexec.
# One guest per case, three boots each (tests/e2e/debian/comeback-agent.sh,
# comeback-inject.sh):
#   check: the rerandomized boot's post-boot check fails: rerandd unloads the
#          staged kernel and reboots through the firmware; the next boot
#          names "check-failed" and the hook, the slot stays held.
#   block: a unit RequiredBy= and Before=boot-complete.target never finishes:
#          rerandd's ConfirmTimeoutSec= runs out, it reboots through the
#          firmware; the next boot names "never-confirmed".
#   hang:  the same unit ignores its stop as well, so that reboot hangs too:
#          the watchdog, no longer fed, resets the machine; the cause stays
#          "never-confirmed" (counted once) and its detail adds the
#          watchdog's reset, read from the i6300esb's boot status.
#   good:  confirmed, the watchdog stopped again (handed back), and the boot
#          id unchanged over the next RRCS_WATCH seconds (660: 5 minutes, and
#          more than the 600 s watchdog period, so a watchdog left running
#          would have reset it).
# Prints for each the seconds from the injection to the next boot's
# userspace (RRC-COMEBACK), the cause, the slot and the metrics.
#   short (make check): nothing (each guest takes 15-40 min under TCG).
# RRCS_ANALYZE=1: judge the logs of the last run again, without a guest.
#   long (make check-long): the four cases, RRCS_JOBS (2) guests at a time.
# RRCS_KINDS: a subset.  RRCS_WATCHDOG_OFF=1 sets KexecWatchdogSec=off (the
# hang case must then fail: the node stays down).  Mocked: nothing.
set -u
export RRS_FLEET=1 RRS_INSTALL=tree RRS_RESET=1
. "$(dirname "$0")/lib-systemd.sh"
. "$(dirname "$0")/lib-comeback.sh"

what=${1:-short}
case "$what" in short|long) ;; *) echo "usage: $0 short|long" >&2; exit 2 ;; esac
if [ "$what" = short ] && [ -z "${RRCS_KINDS:-}" ]; then
	echo "# check-systemd-comeback: long mode only (make check-long)"
	exit 0
fi
kinds=${RRCS_KINDS:-check block hang good}
# "good" watches its boot for 5 minutes after the confirmation, and at least
# one watchdog period and a minute: a watchdog left running would reset it
# within that time (its KexecWatchdogSec= is GOOD_WD, 600 s).
GOOD_WD=600
WATCH=${RRCS_WATCH:-$((GOOD_WD + 60 > 300 ? GOOD_WD + 60 : 300))}

e2e_kernels "systemd comeback" || exit 0
kernel=${RRC_KERNEL:-$(e2e_pick cloud612)}
[ -n "$kernel" ] && [ -r "$kernel" ] ||
	{ echo "not ok - systemd comeback: no 6.12 cloud kernel in $RERAND_KERNELS (RRC_KERNEL)"; exit 0; }
kver=${kernel##*/vmlinuz-}

# rrcs_conf KIND: rerandd's drop-in (50-e2e.conf, replacing rrs_conf's).
# No reboot but the one `rerand now` asks for; a failure backs off for an
# hour.  Timings: under TCG on a loaded host a kexec'd Debian boot reaches
# rerandd in 1-3 min; "good" must be confirmed well within its deadline,
# the faults should not wait longer than needed.
rrcs_conf() {
	local confirm=$GOOD_WD
	[ "$1" = block ] || [ "$1" = hang ] && confirm=360
	cat <<EOF
# rerandd drop-in of the Debian comeback guest (check-systemd-comeback.sh, $1)
[Daemon]
CheckInterval=5s

[Stage]
Initrd=none

[Policy]
MaxLayoutAge=1d
Jitter=0
MinRebootInterval=0
RebootOutsideWindows=yes
OnNewKernel=ignore
BackoffBase=1h
BackoffMax=2h

[Comeback]
KexecWatchdogSec=$([ "${RRCS_WATCHDOG_OFF:-0}" = 1 ] && echo off || echo ${confirm}s)
ConfirmTimeoutSec=${confirm}s
EOF
}

# rrcs_disk KIND DISK: the fleet guest's disk (rrs_fill, "vm" mode: no
# check-systemd agent), plus the watchdog modules, the comeback agent and
# the fault's unit.
rrcs_disk() {
	local kind=$1 disk=$2 base d mods m lx=/usr/local/libexec/rerand-e2e
	base=$(rrs_rootfs) || return 1
	mods=$(rrc_modules) || return 1
	d=$(mktemp -d "${disk}.root.XXXXXX") || return 1
	rrs_fill "$d" "$base" "$kernel" vm 1 || { rm -rf "$d"; return 1; }
	for m in watchdog i6300esb; do
		install -D -m 0644 "$mods/$m.ko" "$d/usr/lib/modules/$kver/kernel/drivers/watchdog/$m.ko" || return 1
	done
	depmod -b "$d" "$kver" || { echo "e2e: depmod -b $d $kver failed" >&2; return 1; }
	echo i6300esb >"$d/etc/modules-load.d/rerand-e2e-watchdog.conf"
	rrcs_conf "$kind" >"$d/etc/rerand/rerand.conf.d/50-e2e.conf"
	echo "$kind" >"$d/var/lib/rerand-e2e/kind"
	echo "$WATCH" >"$d/var/lib/rerand-e2e/watch"
	install -m 0755 "$E2E_DIR/debian/comeback-agent.sh" "$d$lx/comeback-agent" &&
		install -m 0755 "$E2E_DIR/debian/comeback-inject.sh" "$d$lx/comeback-inject" || return 1
	cat >"$d/etc/systemd/system/rerand-e2e-comeback.service" <<EOF
# tests/e2e/check-systemd-comeback.sh: the agent
[Unit]
Description=rerand e2e comeback agent
After=rerandd.service systemd-journald.service

[Service]
Type=simple
ExecStart=$lx/comeback-agent
StandardOutput=journal

[Install]
WantedBy=multi-user.target
EOF
	cat >"$d/etc/systemd/system/rerand-e2e-inject.service" <<EOF
# tests/e2e/check-systemd-comeback.sh: the fault ($kind), before
# boot-complete.target, which requires it
[Unit]
Description=rerand e2e comeback fault
After=local-fs.target
Before=boot-complete.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=$lx/comeback-inject
TimeoutStartSec=infinity
EOF
	[ "$kind" = hang ] && printf 'KillSignal=SIGCONT\nSendSIGKILL=no\nTimeoutStopSec=infinity\n' \
		>>"$d/etc/systemd/system/rerand-e2e-inject.service"
	printf '\n[Install]\nRequiredBy=boot-complete.target\n' >>"$d/etc/systemd/system/rerand-e2e-inject.service"
	rrs_enable_units "$d" rerand-e2e-comeback rerand-e2e-inject || return 1
	e2e_mkfs "$d" "$disk" "$RRS_DISK_MIB" rrroot
}

t() { rrs_t "$@"; }
secs() { rrs_secs "$@"; }

run() {
	local kind=$1 name="systemd comeback $1" dir="$E2E_BUILD/runs/systemd-comeback-$1"
	local log rc t0 tmo want bs fails b0 b1 b2 inj js cause detail n fw slot
	log=$dir/serial.log
	if [ -n "${RRCS_ANALYZE:-}" ]; then
		# RRCS_ANALYZE=1: judge the last run's log again, without a guest
		rc=$(cat "$dir/qemu.rc" 2>/dev/null) || { echo "not ok - $name: no run in $dir to analyze"; return 0; }
	else
		run_guest || return 0
	fi
	judge
}

# run_guest: build the disk and boot it (run's locals)
run_guest() {
	rm -rf "$dir"; mkdir -p "$dir"
	if ! RRD_KERNEL=$kernel rrd_preflight "$name" qemu-system-x86_64 mkfs.ext4 debugfs debootstrap systemctl depmod >"$dir/pre" ||
		! rrcs_disk "$kind" "$dir/disk.img" 2>"$dir/build.err"; then
		cat "$dir/pre"; sed 's/^/# /' "$dir/build.err" 2>/dev/null | tail -n 10
		echo "not ok - $name: cannot build the guest"
		return 1
	fi
	export RRS_APPEND="quiet watchdog.stop_on_reboot=0"
	export RRS_QEMU_EXTRA="-device i6300esb -action watchdog=reset"
	tmo=${RRCS_TIMEOUT:-3600}
	t0=$EPOCHSECONDS
	rc=0
	rrs_qemu "$kernel" "$dir/disk.img" "$log" "$dir/agent.log" "$tmo" || rc=$?
	e2e_note "$name: QEMU exit $rc after $((EPOCHSECONDS - t0)) s (limit $tmo); log $log"
	echo "$rc" >"$dir/qemu.rc"
	rm -f "$dir/disk.img"
}

# judge: TAP lines from the serial log (run's locals)
judge() {

	fails=$(grep -a -o 'RRC-FAIL.*' "$log" | head -n 1)
	e2e_tap "$([ -z "$fails" ]; echo $?)" "$name: the guest reported no failure" "$fails"
	b0=$(grep -a 'RRC-WATCHDOG n=0 ' "$log" | head -n 1)
	e2e_tap "$(grep -q 'stop_on_reboot=0 ' <<<"$b0" && grep -q 'state=inactive' <<<"$b0"; echo $?)" \
		"$name: boot 0 has the i6300esb driver (stopped), watchdog.stop_on_reboot=0" "${b0:-no RRC-WATCHDOG n=0}"
	# (read from boot 0's journal by boot 1's agent, or by boot 2's: a boot
	# 1 that fails its check can be gone before its agent starts)
	grep -aq 'RRC-LOG n=\(1 b=-1\|2 b=-2\) | .*/dev/watchdog0 armed for [0-9]*s across the kexec' "$log"
	e2e_tap $? "$name: boot 0's rerandd armed /dev/watchdog0 before its kexec"
	b1=$(grep -a 'RRC-BOOT n=1 ' "$log" | head -n 1)
	inj=$(grep -a "RRC-INJECT n=1 kind=$kind" "$log" | head -n 1)
	# comeback-inject.sh acts only where `rerand verify` exits 0; boot 1's
	# agent, when it ran before the boot went away, must agree
	e2e_tap "$([ -n "$inj" ] && { [ -z "$b1" ] || grep -q 'verify=rc=0 ' <<<"$b1"; }; echo $?)" \
		"$name: boot 1 is the rerandomized kernel (rerand verify 0) and the fault ($kind) went in" "${b1:-no agent line at boot 1}; ${inj:-no injection}"
	# SeaBIOS's last line, once per firmware boot, counted from boot 0's
	# agent on: a first boot that died early (the starved-TCG "IO-APIC +
	# timer doesn't work" panic, panic=-1) is booted again by QEMU
	fw=$(awk '/RRC-BOOT n=0 / { b = 1 } b && /Booting from ROM/ { n++ } END { print n + 1 }' "$log")
	js=$(grep -a 'RRC-JSON n=[12] ' "$log" | tail -n 1)
	cause=$(grep -o '"last_cause":"[^"]*"' <<<"$js" | cut -d'"' -f4)
	detail=$(grep -o '"last_cause_detail":"[^"]*"' <<<"$js" | cut -d'"' -f4)
	slot=$(grep -a 'RRC-SLOT n=[12] ' "$log" | tail -n 1 | sed 's/^[^ ]* //')

	if [ "$kind" = good ]; then
		local c ws we
		c=$(grep -a 'RRC-CONFIRMED n=1' "$log" | head -n 1)
		e2e_tap "$([ -n "$c" ]; echo $?)" "$name: the rerandomized boot was confirmed" "no RRC-CONFIRMED"
		[ -n "$c" ] && [ -n "$inj" ] && e2e_note "$name: confirmed $(secs "$(t "$inj")" "$(t "$c")") s after the injection point (before boot-complete.target)"
		grep -aq 'RRC-LOG n=1 b=0 | .*rerandomized boot confirmed .*the watchdog is handed back (stopped)' "$log" &&
			grep -aq 'RRC-WATCHDOG n=1 after-confirm .*state=inactive' "$log"
		e2e_tap $? "$name: the watchdog is handed back: stopped (state inactive, systemd's RuntimeWatchdogSec= unset)" \
			"$(grep -a 'RRC-WATCHDOG n=1' "$log" | tail -n 1)"
		ws=$(grep -a 'RRC-WATCH-START n=1' "$log" | head -n 1)
		we=$(grep -a 'RRC-WATCH-END n=1' "$log" | head -n 1)
		local bs_ bw s_
		bs_=$(grep -o 'boot_id=[^ ]*' <<<"$ws"); bw=$(grep -o 'boot_id=[^ ]*' <<<"$we")
		s_=$([ -n "$ws" ] && [ -n "$we" ] && secs "$(t "$ws")" "$(t "$we")")
		e2e_tap "$([ -n "$bs_" ] && [ "$bs_" = "$bw" ] && [ "${s_:-0}" -ge "$WATCH" ] && [ "$fw" -eq 1 ] &&
			! grep -aq 'RRC-BOOT n=2' "$log" && grep -q 'state=inactive' <<<"$we"; echo $?)" \
			"$name: no spurious reset over ${s_:-?} s after the confirmation (same boot id, one firmware boot, watchdog inactive)" \
			"start '$bs_' end '$bw', firmware boots $fw"
		e2e_tap "$(grep -q '"last_cause":"none"' <<<"$js" && grep -q '"confirmed":1' <<<"$js"; echo $?)" \
			"$name: rerand status: confirmed 1, no failure" "$(cut -c1-300 <<<"$js")"
		e2e_note "$name: slot after the confirmation: $slot; $(grep -a 'RRC-LOG n=1 b=0 | .*\(fleet: slot released\|confirmed\)' "$log" | sed 's/.*| //' | tr '\n' ';' | cut -c1-300)"
		e2e_note "$name: metrics: $(grep -a 'RRC-METRIC n=1 ' "$log" | tail -n 6 | sed 's/.*| //' | tr '\n' ';')"
		e2e_tap "$([ "$rc" -eq 0 ] && grep -aq 'RRC-DONE n=1' "$log"; echo $?)" "$name: the guest powered off by itself (QEMU exit $rc)"
		return 0
	fi

	want=check-failed bs=0
	[ "$kind" = block ] && want=never-confirmed
	[ "$kind" = hang ] && want=never-confirmed bs=32
	b2=$(grep -a 'RRC-BOOT n=2 ' "$log" | head -n 1)
	e2e_tap "$(grep -q 'verify=rc=2 ' <<<"$b2" && [ "$fw" -eq 2 ]; echo $?)" \
		"$name: the machine came back by itself through the firmware (firmware boots: $fw, want 2; kexec unloaded)" \
		"${b2:-no boot 2$([ "$rc" -eq 124 ] && echo ": QEMU timed out, the node stayed down")}"
	if [ -n "$inj" ] && [ -n "$b2" ]; then
		n=$(secs "$(t "$inj")" "$(t "$b2")")
		e2e_note "$name: RRC-COMEBACK $n s from the injection to boot 2's userspace (the agent)"
	fi
	e2e_tap "$(grep -a 'RRC-WATCHDOG n=2 ' "$log" | grep -q "bootstatus=$bs "; echo $?)" \
		"$name: boot 2's i6300esb boot status is $bs ($([ $bs = 32 ] && echo "WDIOF_CARDRESET: the watchdog reset it" || echo "not the watchdog: a reboot"))" \
		"$(grep -a 'RRC-WATCHDOG n=2 ' "$log" | head -n 1)"
	e2e_note "$name: rerand status: last_cause=$cause ($detail)"
	e2e_tap "$([ "$cause" = "$want" ]; echo $?)" "$name: rerand status names the cause '$want'" "got '${cause:-none}': $detail"
	[ "$kind" = check ] && e2e_tap "$(grep -q '50-e2e-fail' <<<"$detail"; echo $?)" \
		"$name: the cause names the check that failed" "$detail"
	[ "$kind" = hang ] && e2e_tap "$(grep -q 'watchdog reset the machine' <<<"$detail"; echo $?)" \
		"$name: the cause's detail adds that the reboot hung and the watchdog reset the machine" "$detail"
	# boot 2 is rerandd's own reboot through the firmware, not an unplanned one
	e2e_tap "$(grep -q '"boot_origin":"fallback"' <<<"$js" &&
		grep -aq 'RRC-LOG n=2 b=0 | .*back through the firmware after the failed rerandomized boot' "$log"; echo $?)" \
		"$name: boot 2 is rerandd's fallback (boot_origin fallback), not a reboot it did not plan" \
		"$(grep -o '"boot_origin":"[^"]*"' <<<"$js")"
	grep -aq "RRC-METRIC n=2 | rerand_failures_by_cause_total{cause=\"$want\"} 1" "$log"
	e2e_tap $? "$name: the metric rerand_failures_by_cause_total{cause=\"$want\"} is 1" \
		"$(grep -a 'RRC-METRIC n=2 | rerand_failures_by_cause_total' "$log" | sed 's/.*| //' | tr '\n' ';')"
	e2e_note "$name: metrics: $(grep -a 'RRC-METRIC n=2 ' "$log" | sed 's/.*| //' | tr '\n' ';')"
	grep -aq "RRC-LOG n=2 b=0 | .*rerandomizing reboot failed: cause $want" "$log" ||
		grep -aq "RRC-LOG n=2 b=-1 | .*rerandomizing reboot failed: cause $want" "$log"
	e2e_tap $? "$name: the journal names the cause"
	if [ "$kind" != hang ]; then
		grep -aq 'RRC-LOG n=2 b=-1 | .*rebooting through the firmware (the staged kernel unloaded first)' "$log"
		e2e_tap $? "$name: boot 1's rerandd unloaded the staged kernel and rebooted through the firmware"
	fi
	e2e_note "$name: slot at boot 2: $slot; $(grep -a 'RRC-LOG n=2 .*fleet' "$log" | sed 's/.*| //' | tr '\n' ';' | cut -c1-400)"
	if [ "$kind" = check ]; then
		# boot 1's rerandd keeps the slot when its confirmation fails; boot
		# 2 (the firmware fallback) says it stays until its lease runs out
		grep -q '/rerand/fleet/e2e/slot/0' <<<"$slot" &&
			grep -aq 'RRC-LOG n=2 b=-1 | .*keeping the slot' "$log" &&
			grep -aq 'RRC-LOG n=2 b=0 | .*the slot of the failed rerandomization stays' "$log" &&
			! grep -aq 'RRC-LOG n=2 b=\(0\|-1\) | .*fleet: slot released' "$log"
		e2e_tap $? "$name: the fleet slot is kept (held in etcd, never released)" "$slot"
	fi
	e2e_tap "$([ "$rc" -eq 0 ] && grep -aq 'RRC-DONE n=2' "$log"; echo $?)" "$name: the guest powered off by itself (QEMU exit $rc)"
}

# RRCS_JOBS guests at a time, their TAP in order
# shellcheck disable=SC2086 # $kinds: a list
rrs_parallel "${RRCS_JOBS:-2}" run $kinds
exit 0
