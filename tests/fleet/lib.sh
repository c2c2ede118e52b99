# SPDX-License-Identifier: GPL-2.0-only
# Helpers for the fleet tests: our own etcd members on loopback (data in a temp
# dir, ports in 127.0.0.1:23xx), simulated hosts, and waiting with a bound.
# Sourced by tests/fleet/test-fleet.sh, which sets $tmp, $SIM and $FLEET.

export ETCDCTL_API=3

now_ms() { date +%s%3N; }

# port_free PORT: nobody listens on 127.0.0.1:PORT
port_free() { ! ss -Htln "sport = :$1" 2>/dev/null | grep -q .; }

# etcd_member NAME CLIENT_PORT PEER_PORT INITIAL_CLUSTER: start (or restart, same
# data dir) one member in the background; its pid goes to $tmp/etcd-NAME.pid.
etcd_member() {
	local name=$1 cp=$2 pp=$3 cluster=$4
	etcd --name "$name" --data-dir "$tmp/etcd-$name" \
		--listen-client-urls "http://127.0.0.1:$cp" --advertise-client-urls "http://127.0.0.1:$cp" \
		--listen-peer-urls "http://127.0.0.1:$pp" --initial-advertise-peer-urls "http://127.0.0.1:$pp" \
		--initial-cluster "$cluster" --initial-cluster-state new \
		--initial-cluster-token "rerand-fleet-test-$$" \
		>>"$tmp/etcd-$name.log" 2>&1 &
	echo $! >"$tmp/etcd-$name.pid"
}

etcd_kill() { # NAME [SIGNAL]
	local pid
	pid=$(cat "$tmp/etcd-$1.pid" 2>/dev/null) || return 0
	kill -"${2:-KILL}" "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	rm -f "$tmp/etcd-$1.pid"
}

# etcd_healthy ENDPOINTS TIMEOUT_S: every endpoint answers health within the time.
etcd_healthy() {
	local eps=$1 until=$(($(date +%s) + $2))
	while [ "$(date +%s)" -le "$until" ]; do
		etcdctl --endpoints="$eps" --dial-timeout=1s --command-timeout=2s endpoint health \
			>/dev/null 2>&1 && return 0
		sleep 0.2
	done
	return 1
}

# wait_for TIMEOUT_S CMD...
. "$(dirname "${BASH_SOURCE[0]}")/../lib/rerandd.sh"

# run_host CONF ID DOWN_MS [sim options...]: one simulated host.  The reboot is the
# one simulated step: when fleet-sim exits 100 the "host" is down for DOWN_MS and then
# boots again (a new process, a new boot id).  The final exit code goes to
# $tmp/host-ID/rc.
run_host() {
	local conf=$1 id=$2 down=$3; shift 3
	local dir=$tmp/host-$id rc
	mkdir -p "$dir"
	while :; do
		"$SIM" -c "$conf" -i "$id" -s "$dir" -l "$FLEET" "$@" boot 2>>"$dir/stderr" &
		echo $! >"$dir/pid"
		wait $!
		rc=$?
		[ $rc -eq 100 ] || break
		sleep "$(printf '%d.%03d' $((down / 1000)) $((down % 1000)))"
	done
	echo "$rc" >"$dir/rc"
}

# hosts_done N...: every listed host has an rc file.
hosts_done() { local h; for h in "$@"; do [ -s "$tmp/host-$h/rc" ] || return 1; done; }
hosts_rc_zero() { local h; for h in "$@"; do [ "$(cat "$tmp/host-$h/rc" 2>/dev/null)" = 0 ] || return 1; done; }

# kv KEY FILE: the value of KEY=... printed by analyze.py
kv() { sed -n "s/^$1=//p" "$2"; }

etcd_slots() { # ENDPOINTS GROUP_PREFIX: how many places are held, numbered slot keys
	# (GROUP_PREFIX slot/N) and holder keys (GROUP_PREFIX holder/ID), not the
	# breaker's failure records beside them; fails if etcd does not answer
	local out
	out=$(etcdctl --endpoints="$1" --dial-timeout=1s --command-timeout=2s get --prefix "$2" \
		--keys-only 2>/dev/null) || return 1
	grep -cxE "${2}(slot/[0-9]+|holder/[^/]+)" <<<"$out"
}
etcd_keys() { # ENDPOINTS PREFIX: how many keys under the prefix, the group's marker
	# (PREFIX semaphore, an admin's) left out; fails if etcd does not answer
	local out
	out=$(etcdctl --endpoints="$1" --dial-timeout=1s --command-timeout=2s get --prefix "$2" \
		--keys-only 2>/dev/null) || return 1
	grep -vxF "${2}semaphore" <<<"$out" | grep -c .
}

# fleet_one_host DIR MACHINE_ID GROUP ENDPOINT [LINE...]: one real rerandd's
# directory and configuration (test-fleet-latency.sh, test-fleet-fence.sh):
# procfs fixtures, the reboot only recorded (a line in DIR/reboot-called), and
# a [Fleet] section for etcd group GROUP on ENDPOINT with short retries, the
# LINEs added to it.  Expects $tmp, $KERNEL and $SD (rerandd_randomized_sd).
fleet_one_host() {
	local hd=$1 mid=$2 group=$3 ep=$4
	shift 4
	rerandd_dirs "$hd"
	rerandd_procfs_fixtures "$hd" "console=ttyS0 quiet"
	echo "$mid" >"$hd/machine-id"
	printf '#!/bin/sh\necho "$(date +%%s%%3N) REBOOT" >>"$1/reboot-called"\nexit 0\n' >"$tmp/reboot"
	chmod +x "$tmp/reboot"
	rerandd_conf "$hd" /bin/true "$SD" <<EOF

[Stage]
Kernel=$KERNEL
Initrd=none
CommandLine=console=ttyS0 quiet
RestageInterval=1h

$(rerandd_policy MaxLayoutAge=1h MinRebootInterval=0)

$(rerandd_reboot_by "$tmp/reboot $hd")

[Fleet]
Backend=etcd
Group=$group
Endpoints=$ep
MaxConcurrent=1
LockTTL=60
Timeout=4
RetryBase=200ms
RetryMax=1000ms
MachineIDFile=$hd/machine-id
$(printf '%s\n' "$@")
EOF
}
