#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The agent of the Debian comeback guest (tests/e2e/check-systemd-comeback.sh;
# rerand-e2e-comeback.service, after rerandd), run at every boot.  It writes
# RRC-* lines on the console (/dev/ttyS0, which the host time-stamps):
#   boot 0 (QEMU's firmware boot): the watchdog driver is there, rerandd
#     staged; it arms the fault (comeback-inject.sh acts on the next,
#     rerandomized boot only) and asks for the reboot with `rerand now`.
#   boot 1 (the rerandomized kernel): "good": waits for rerandd's
#     confirmation, reports the watchdog and the slot, then watches the boot
#     for $D/watch seconds (the boot id must not change) and powers off.
#     The faults: it only reports; the machine must go away by itself.
#   boot 2 (the firmware again): the cause rerandd names, its metrics, the
#     fleet slot, the watchdog's boot status; powers off.
# RRC-BOOT n=N ..., RRC-WATCHDOG, RRC-JSON, RRC-STATUS, RRC-METRIC, RRC-SLOT,
# RRC-LOG (rerandd's journal), RRC-DONE, RRC-FAIL reason.
set -u
D=/var/lib/rerand-e2e
exec 3>/dev/ttyS0
# The boot's number from the persistent journal, not from the agent's own
# runs: a boot that goes away before this agent starts (the failing check's
# reboot can come first under TCG) still counts.
n=$(($(journalctl --list-boots --no-pager 2>/dev/null | grep -cE '[0-9a-f]{32}') - 1))
kind=$(cat "$D/kind")
ETCD=https://127.0.0.1:2379
EC=$D/etcd-client
ectl() { ETCDCTL_API=3 timeout 20 etcdctl --endpoints="$ETCD" --cacert="$EC/ca.pem" \
	--cert="$EC/agent.pem" --key="$EC/agent.key" "$@"; }
say() { echo "$*" >&3; echo "$*"; }
up() { cut -d' ' -f1 /proc/uptime; }
bye() {
	say "RRC-DONE n=$n uptime=$(up)"
	sync
	systemctl poweroff
	sleep 600
}
fail() {
	say "RRC-FAIL n=$n $*"
	journalctl -b -u rerandd -o cat --no-pager 2>&1 | tail -n 15 | sed "s/^/RRC-LOG n=$n b=0 | /" >&3
	bye
}
wait_for() { # wait_for SECONDS CMD...: until CMD succeeds
	local end=$((SECONDS + $1)); shift
	until "$@"; do [ $SECONDS -lt $end ] || return 1; sleep 2; done
}
wd() {
	local s=/sys/class/watchdog/watchdog0
	echo "bootstatus=$(cat $s/bootstatus 2>/dev/null) state=$(cat $s/state 2>/dev/null)" \
		"timeout=$(cat $s/timeout 2>/dev/null) stop_on_reboot=$(cat /sys/module/watchdog/parameters/stop_on_reboot 2>/dev/null)" \
		"runtime_watchdog=$(systemctl show -P RuntimeWatchdogUSec 2>/dev/null)"
}
# jlog B PATTERN: rerandd's journal lines of boot B (0, -1, ...) matching PATTERN
jlog() {
	journalctl -b "$1" -u rerandd -o short-monotonic --no-pager 2>/dev/null | grep -E "$2" |
		cut -c1-300 | sed "s/^/RRC-LOG n=$n b=$1 | /" >&3
}
report() {
	local js
	rerand status >"$D/out/status.$n.txt" 2>&1
	js=$(rerand status --json 2>&1)
	say "RRC-JSON n=$n $js"
	sed "s/^/RRC-STATUS n=$n | /" "$D/out/status.$n.txt" >&3
	grep -E '^rerand_(failures_by_cause_total|failures_total|consecutive_failures|confirm|reboots_total)' \
		/var/lib/prometheus/node-exporter/rerand.prom 2>/dev/null | sed "s/^/RRC-METRIC n=$n | /" >&3
	say "RRC-SLOT n=$n keys=$(ectl get --prefix /rerand/fleet/ 2>&1 | tr '\n' ' ')"
}

mkdir -p "$D/out"
vrc=0
rerand verify >/dev/null 2>&1 || vrc=$?
say "RRC-BOOT n=$n boot_id=$(cat /proc/sys/kernel/random/boot_id) verify=rc=$vrc kind=$kind uptime=$(up)"
say "RRC-WATCHDOG n=$n $(wd)"

case "$n" in
0)
	[ "$vrc" -eq 2 ] || fail "boot 0 should be the firmware's (rerand verify rc $vrc)"
	[ -c /dev/watchdog0 ] || fail "no /dev/watchdog0 (i6300esb not loaded)"
	wait_for 900 sh -c 'rerand status 2>/dev/null | grep -q "^staged: *yes"' ||
		fail "rerandd staged nothing in 900 s"
	touch "$D/inject-armed" && sync
	rerand now >"$D/out/now.txt" 2>&1
	say "RRC-NOW n=0 rc=$? uptime=$(up)"
	sleep 1500
	report
	fail "no reboot within 1500 s of rerand now"
	;;
1)
	[ "$vrc" -eq 0 ] || fail "boot 1 is not the rerandomized kernel (rerand verify rc $vrc)"
	jlog -1 'armed for|fleet: slot taken|watchdog'
	if [ "$kind" != good ]; then
		# The machine must leave by itself; say what rerandd is waiting for.
		end=$((SECONDS + 2400))
		while [ $SECONDS -lt $end ]; do
			say "RRC-ALIVE n=1 uptime=$(up) $(journalctl -b -u rerandd -o cat --no-pager 2>/dev/null | tail -n 1 | cut -c1-160)"
			sleep 30
		done
		report
		fail "the $kind boot is still up after 2400 s"
	fi
	wait_for 900 sh -c 'journalctl -b -u rerandd -o cat | grep -q "rerandomized boot confirmed"' ||
		{ report; fail "not confirmed in 900 s"; }
	say "RRC-CONFIRMED n=1 uptime=$(up)"
	say "RRC-WATCHDOG n=1 after-confirm $(wd)"
	# the slot: released once the boot is confirmed and its checks passed
	wait_for 300 sh -c 'journalctl -b -u rerandd -o cat | grep -q "fleet: slot released"'
	jlog 0 'confirm|watchdog|fleet|post-boot'
	report
	bid=$(cat /proc/sys/kernel/random/boot_id)
	w=$(cat "$D/watch")
	say "RRC-WATCH-START n=1 boot_id=$bid seconds=$w uptime=$(up)"
	sleep "$w"
	say "RRC-WATCH-END n=1 boot_id=$(cat /proc/sys/kernel/random/boot_id) uptime=$(up) $(wd)"
	report
	bye
	;;
2)
	[ "$vrc" -eq 2 ] || fail "boot 2 should be a firmware boot (rerand verify rc $vrc)"
	wait_for 600 sh -c 'rerand status --json 2>/dev/null | grep -q "\"last_cause\":\"[a-z-]*\"" &&
		! rerand status --json | grep -q "\"last_cause\":\"none\""' || { report; fail "no cause named in 600 s"; }
	# the slot's fate is decided after the post-boot health hooks
	wait_for 400 sh -c 'journalctl -b -u rerandd -o cat | grep -Eq "keeping the slot|fleet: slot released"'
	jlog -2 'armed for|fleet: slot taken'
	jlog -1 'confirm|watchdog|firmware|post-boot|fleet|fail'
	jlog 0 'cause|fleet|post-boot|watchdog'
	report
	bye
	;;
*)
	fail "unexpected boot $n"
	;;
esac
