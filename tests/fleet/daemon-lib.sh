# SPDX-License-Identifier: GPL-2.0-only
# Helpers for tests/fleet/test-fleet-daemon.sh: real rerandd instances as simulated
# hosts.  Each host has its own directory $tmp/h/ID with its state, runtime dir,
# boot id, /proc/stat (btime) and configuration; fixtures stand in for the kernel
# interfaces, the procfs ones as real procfs files (tests/lib/procfs-fixture.sh).
# The reboot is the one simulated step (see host_run).
# Expects $tmp, $top, $RERANDD, $R, $KERNEL, $SD (setup_data fixture), $EVENTS.

. "$(dirname "${BASH_SOURCE[0]}")/../lib/rerandd.sh"

# ev HOST EVENT [DETAIL]: one line in the shared event log, unix ms first
ev() { echo "$(date +%s%3N) $*" >>"$EVENTS"; }

# host_new ID GROUP_SECTION_FILE [extra config text]: a host directory and config.
# The [Fleet] section comes from a file so groups can share it.
host_new() {
	local id=$1 fleet=$2 extra=${3:-} hd=$tmp/h/$1
	rerandd_dirs "$hd" pre-reboot.d post-boot.d
	# procfs-like fixtures (tests/lib/procfs-fixture.sh): size 0 in stat();
	# due at once: this "boot" began two hours ago, MaxLayoutAge is one hour
	rerandd_procfs_fixtures "$hd" "console=ttyS0 quiet" 7200
	echo "machine-$id" >"$hd/machine-id"
	# the one image built for every host (rerandd_prebuilt_image)
	rerandd_seed_cache "$hd"
	rerandd_conf "$hd" /bin/true "$SD" <<EOF
PreRebootDirectory=$hd/pre-reboot.d
PostBootDirectory=$hd/post-boot.d

[Stage]
Kernel=$KERNEL
Initrd=none
CommandLine=console=ttyS0 quiet
RestageInterval=1h

$(rerandd_policy MaxLayoutAge=1h MinRebootInterval=0 BackoffBase=1min MaxFailures=3)

$(rerandd_reboot_by "$SIMREBOOT $hd" HookTimeout=20s)

$(cat "$fleet")
MachineIDFile=$hd/machine-id
HelperSocket=$hd/run/fleet.sock
$extra
EOF
}

# sim_reboot_recorder TEST: $SIMREBOOT for a test that needs no more of the
# reboot than host_run's: "$SIMREBOOT DIR [KIND]" (RebootCommand= and
# FirmwareRebootCommand= alike) appends the time and KIND (default kexec) to
# DIR/reboot.log and asks the host's runner to reboot it.  Also makes an
# empty $EVENTS and $tmp/h.
sim_reboot_recorder() {
	cat >"$SIMREBOOT" <<EOF
#!/bin/sh
# SIMULATED reboot for $1: no kexec, no reboot.
echo "\$(date +%s%3N) \${2:-kexec}" >>"\$1/reboot.log"
touch "\$1/reboot-requested"
EOF
	chmod +x "$SIMREBOOT"
	: >"$EVENTS"
	mkdir -p "$tmp/h"
}

# conf_harmless ID: the instance can neither kexec nor reboot this machine: the
# reboot is our script, kexec-tools is /bin/true, no kexec_file_load, no other
# configuration is read, and rerandd itself accepts the file.
conf_harmless() {
	local hd=$tmp/h/$1 c=$tmp/h/$1/rerand.conf
	[ "$(grep -c '^Method=' "$c")" = 1 ] && grep -qx 'Method=command' "$c" &&
	[ "$(grep -c '^RebootCommand=' "$c")" = 1 ] && grep -qx "RebootCommand=$SIMREBOOT $hd" "$c" &&
	[ "$(grep -c '^KexecBinary=' "$c")" = 1 ] && grep -qx 'KexecBinary=/bin/true' "$c" &&
	! grep -q '^FileSyscall=' "$c" &&
	[ -z "$(ls -A "$hd/conf.d")" ] &&
	"$RERANDD" --check-config --config "$c" --config-dir "$hd/conf.d" >/dev/null 2>&1
}

# host_run ID [die]: the host's "machine".  It runs rerandd; when rerandd's
# RebootCommand asks for a reboot, the reboot is SIMULATED here: rerandd is
# stopped with SIGTERM (as systemd does at shutdown), the host stays down for
# $DOWN seconds, gets a new boot id and a new btime, and rerandd starts again.
# With "die" the host never comes back from its reboot (SIGKILL, no restart).
# A rerandd that exits on its own (kill -9 by the test) is not restarted
# until $hd/restart appears.
host_run() {
	local id=$1 mode=${2:-} hd=$tmp/h/$1 pid
	while :; do
		if ! conf_harmless "$id"; then
			ev "$id" UNSAFE_CONFIG
			# why, for the log: rerandd's own words
			"$RERANDD" --check-config --config "$hd/rerand.conf" --config-dir "$hd/conf.d" 2>&1 |
				sed "s/^/# $id: unsafe config: /" >&2
			return 1
		fi
		# the host's rerand-fleetd: what rerand-fleetd.socket starts on a real one
		fleetd_start "$hd"
		rerandd_start "$hd"
		pid=$(<"$hd/pid")
		ev "$id" BOOT "$(procfs_text "$hd/boot_id")"
		while kill -0 "$pid" 2>/dev/null && [ ! -e "$hd/reboot-requested" ] && [ ! -e "$hd/stop" ]; do
			sleep 0.1
		done
		if [ -e "$hd/reboot-requested" ] && [ "$mode" = die ]; then
			kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
			fleetd_stop "$hd" KILL
			ev "$id" DIED
			return 0
		fi
		if [ -e "$hd/reboot-requested" ]; then
			kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
			fleetd_stop "$hd" TERM
			ev "$id" DOWN
			sleep "$DOWN"
			procfs_fixture "$hd/boot_id" "$(cat /proc/sys/kernel/random/uuid)"$'\n'
			procfs_fixture "$hd/stat" "btime $(date +%s)"$'\n'
			rm -f "$hd/reboot-requested"
			continue
		fi
		if [ -e "$hd/stop" ]; then
			kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
			fleetd_stop "$hd" TERM
			return 0
		fi
		wait "$pid" 2>/dev/null
		ev "$id" EXITED
		# killed by the test: the same boot, restarted only when asked
		while [ ! -e "$hd/restart" ] && [ ! -e "$hd/stop" ]; do sleep 0.1; done
		[ -e "$hd/stop" ] && { fleetd_stop "$hd" TERM; return 0; }
		rm -f "$hd/restart"
	done
}

# fleetd_start DIR: the host's rerand-fleetd on DIR/run/fleet.sock (unless one
# runs), output appended to DIR/fleetd.log; fleetd_stop DIR SIGNAL: stopped.
fleetd_start() {
	[ -e "$1/fleetd.pid" ] && kill -0 "$(<"$1/fleetd.pid")" 2>/dev/null && return 0
	rm -f "$1/run/fleet.sock"
	"$FLEETD" --socket "$1/run/fleet.sock" >>"$1/fleetd.log" 2>&1 &
	echo $! >"$1/fleetd.pid"
	# as with rerand-fleetd.socket, the socket is there before rerandd starts
	wait_for 10 test -S "$1/run/fleet.sock"
}
fleetd_stop() {
	[ -e "$1/fleetd.pid" ] || return 0
	kill -"$2" "$(<"$1/fleetd.pid")" 2>/dev/null; wait "$(<"$1/fleetd.pid")" 2>/dev/null
	rm -f "$1/fleetd.pid"
}

# host_due_in ID SECONDS: this "boot" began MaxLayoutAge (1 h) minus SECONDS ago, so
# the host becomes due SECONDS after now (rerandd reads btime when it starts).
# Prints the unix ms at which it becomes due.
host_due_in() {
	local b=$(( $(date +%s) - 3600 + $2 ))
	procfs_fixture "$tmp/h/$1/stat" "btime $b"$'\n'
	echo $(( b * 1000 + 3600000 ))
}

# host_reboots ID: the unix ms of every reboot the host's RebootCommand logged,
# one a line (the simulator writes $hd/reboot.log)
host_reboots() { cut -d' ' -f1 "$tmp/h/$1/reboot.log" 2>/dev/null; }

# reboots_held IDS...: "H of N": of the N reboots these hosts asked for, H came while
# etcd said the host held a slot (held=yes in reboot.log, written by the simulator)
reboots_held() {
	local id
	for id in "$@"; do cat "$tmp/h/$id/reboot.log" 2>/dev/null; done |
		awk '{ n++ } $3 == "held=yes" { h++ } END { printf "%d of %d\n", h, n }'
}

# outside_windows ID: no windows needed, the host may reboot whenever due
outside_windows() { sed -i 's/^\[Policy\]$/[Policy]\nRebootOutsideWindows=yes/' "$tmp/h/$1/rerand.conf"; }

hosts_stop() { local h; for h in "$@"; do touch "$tmp/h/$h/stop"; done; }

# host_done ID: one verified rerandomization, and the slot given back
host_done() {
	local s=$tmp/h/$1/state/state
	grep -qx 'successes=1' "$s" 2>/dev/null && grep -qx 'fleet_held=0' "$s" &&
	grep -qx 'attempt=0' "$s" && grep -qx 'last_verify=randomized' "$s"
}
hosts_done() { local h; for h in "$@"; do host_done "$h" || return 1; done; }
hosts_count_done() { local h c=0; for h in "$@"; do host_done "$h" && c=$((c + 1)); done; echo $c; }

# ctl ID ARGS...: rerand ARGS against the host's control socket
ctl() { local id=$1; shift; RERAND_CONTROL_SOCKET=$tmp/h/$id/run/control "$R" "$@"; }

# obs_caught_up LOG N: the observer has seen N hosts take a slot and the group empty
# again (wait for it before stopping the observer: after an outage it lags a little)
obs_caught_up() {
	awk -v n="$2" '$4 == "PUT" && !($6 in s) { s[$6] = 1; c++ } NF >= 3 { last = $3 }
		END { exit !(c >= n && last == 0) }' "$1"
}

# obs_max LOG: most keys under the prefix the observer ever saw
obs_max() { awk 'NF >= 3 && $3 ~ /^[0-9]+$/ && $3 > m { m = $3 } END { print m + 0 }' "$1"; }
