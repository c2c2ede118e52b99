# SPDX-License-Identifier: GPL-2.0-only
# Helpers shared by the tests that run real build/rerandd instances against
# fixtures (tests/daemon/test-*.sh, tests/fleet/*.sh): bounded waiting,
# the common head of an instance's rerand.conf, and starting and stopping the
# instances.  Sourced (more than once is harmless); expects $R, $RERANDD and
# $tmp where the functions using them are called, and bail (tap.sh) for
# rerandd_wait_up.

# wait_for TIMEOUT_S CMD...: poll CMD every 0.1 s until it succeeds.
wait_for() {
	local until=$(($(date +%s%3N) + $1 * 1000)); shift
	while [ "$(date +%s%3N)" -le "$until" ]; do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# rerandd_conf DIR KEXEC SETUP_DATA <REST: DIR/rerand.conf for an instance
# whose files are all under DIR: [Daemon] (KexecBinary=KEXEC, a 1 s check)
# and the [Paths] fixtures every test has; REST continues [Paths] and gives
# the other sections.  Run as root, rerandd builds images as ImageUser=
# (nobody here: the tests create no system user; RERANDD_IMAGE_USER to vary).
rerandd_conf() {
	local hd=$1
	{
		cat <<EOF
[Daemon]
StateDirectory=$hd/state
RuntimeDirectory=$hd/run
MetricsFile=$hd/run/rerand.prom
RerandBinary=$R
KexecBinary=$2
ImageUser=${RERANDD_IMAGE_USER:-nobody}
CheckInterval=1s

[Paths]
Boot=$hd/boot
ProcCmdline=$hd/cmdline
SetupData=$3
Kmsg=$hd/no-kmsg
Tainted=$hd/tainted
BootId=$hd/boot_id
ProcStat=$hd/stat
# never the host's watchdog or pstore: a rerandd under test arms nothing
Watchdog=
WatchdogSysfs=$hd/no-watchdog
WatchdogStopOnReboot=
Pstore=$hd/no-pstore
# never the host's boot_params either (a test sets its own fixture)
BootParams=
EOF
		cat
	} >"$hd/rerand.conf"
}

# rerandd_no_reboot FILE: a RebootCommand for instances that must never
# reboot: "FILE DIR" records the call in DIR/reboot-called (which the tests
# check for) and fails.
rerandd_no_reboot() {
	printf '#!/bin/sh\necho REBOOT >>"$1/reboot-called"\nexit 1\n' >"$1"
	chmod +x "$1"
}

# rerandd_start DIR: rerandd on DIR/rerand.conf and DIR/conf.d in the
# background, its output appended to DIR/log, its pid in DIR/pid and in
# $rerandd_pids (stopped by rerandd_cleanup).
declare -p rerandd_pids >/dev/null 2>&1 || rerandd_pids=()
rerandd_start() {
	"$RERANDD" --config "$1/rerand.conf" --config-dir "$1/conf.d" >>"$1/log" 2>&1 &
	rerandd_pids+=($!)
	echo $! >"$1/pid"
}

# rerandd_wait_up DIR: its control socket appears within 30 s, or bail
rerandd_wait_up() {
	wait_for 30 test -S "$1/run/control" ||
		bail "${1##*/}: rerandd did not come up: $(tail -3 "$1/log")"
}

# rerandd_cleanup: the EXIT trap: SIGTERM to every rerandd and procfs
# fixture, SIGKILL to what is left, $tmp removed (kept with KEEP=1).
rerandd_cleanup() {
	local p all=("${rerandd_pids[@]}" ${procfs_fixture_pids[@]+"${procfs_fixture_pids[@]}"})
	for p in "${all[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 0.2
	for p in "${all[@]}"; do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
