#!/bin/bash
# A chaos test of the fleet guarantee, in the spirit of Jepsen, on loopback only.
# A 3-member etcd cluster (Debian's etcd-server, 127.0.0.1:2441-2446, data in temp
# dirs) and 8 hosts, each a real build/rerandd with its own real build/rerand-fleetd
# (the setup of tests/fleet/test-fleet-daemon.sh: own state, runtime dir, machine id,
# boot id and /proc/stat fixtures), MaxConcurrent=2.  SIMULATED: only the reboot
# (kexec-tools is /bin/true; the RebootCommand asks the host's runner to stop rerandd
# and its helper, wait, write a new boot id and start both again) and the clock
# steps (tests/fleet/wallstep.c preloaded into each host's rerandd and rerand-fleetd:
# the wall clock alone steps, CLOCK_MONOTONIC, CLOCK_BOOTTIME and the timers on them
# do not, as in a real step; see hostenv).  While the hosts rerandomize over and over, faults are injected:
# the etcd leader and a follower killed and SIGSTOPped, a host SIGSTOPped while it
# holds a slot, a host down longer than LockTTL=, forward and backward clock steps,
# two hosts cloned with one machine id (for the whole run), rerand-fleetd killed
# while its host waits for a slot.  Then the faults heal and every host must
# rerandomize again.  An independent checker (tests/fleet/chaos-check.py) reads the
# history: the hosts' down and up times (taken outside the hosts, on the real
# clock) and every change etcd made to the group's keys (an etcd watch) and asserts
# that no more than 2 hosts were ever down at once, that no slot lapsed while its
# host was down, that every host rerandomized after the heal, and that no slot is
# left.  First the checker must catch a deliberately broken helper
# (build/chaos-broken/rerand-fleetd: DownTTL= switched off at build time).
# The checker's own groups take numbered slots (slot/N, as in a fleet that
# still has hosts of an older rerand); the chaos run's group has the marker
# that makes each host take its own holder key (holder/ID, docs/fleet.md).
# RERAND_MODE=long (make check-long, make check-chaos CHAOS=long): 30 minutes.
# Every process the test starts carries a tag and is killed however it ends.
set -u
. "$(dirname "$0")/../lib/tagged.sh"
tagged_reexec rerand-chaos "$@"
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/rerand-chaos.XXXXXX)
R=$top/build/rerand
RERANDD=$top/build/rerandd
FLEETD_GOOD=$top/build/rerand-fleetd
FLEETD_BROKEN=$top/build/chaos-broken/rerand-fleetd
WALLSTEP=$top/build/tests/fleet/wallstep.so
EVENTS=$tmp/events.log
FAULTS=$tmp/faults.log
SIMREBOOT=$tmp/sim-reboot
SD=$tmp/setup_data
DOWN=1
LTTL=8              # LockTTL=: 8 s, Timeout=1
DTTL=120            # DownTTL=: covers the long-down fault (LTTL + 6 s) many times
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); echo "not ok $n - $*"; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else nok "$d"; return 1; fi; }
bail() { nok "$*"; echo "1..$n"; exit 1; }
trap "tagged_cleanup" EXIT
trap 'exit 130' INT; trap 'exit 143' TERM; trap 'exit 129' HUP
nap() { sleep "$1" & wait $!; }
. "$top/tests/fleet/lib.sh"
. "$top/tests/lib/procfs-fixture.sh"
. "$top/tests/fleet/daemon-lib.sh"

mode=${RERAND_MODE:-short}
# how long faults are injected while the hosts cycle, and the heal's bound
# (the short run goes on until each kind of fault was injected once).  The
# bound includes the clock step (300 s): a host whose rerandd rebooted while
# its wall clock ran 300 s ahead has its last attempt that far in the future
# once the clock is back, and waits it out (it errs on not rebooting); a
# clean-clone make check saw one such host miss a 180 s bound.
if [ "$mode" = long ]; then CHAOS_S=1620; HEAL_S=600; else CHAOS_S=90; HEAL_S=480; fi

for b in "$R" "$RERANDD" "$FLEETD_GOOD" "$FLEETD_BROKEN"; do
	[ -x "$b" ] || bail "$b is missing: make all $FLEETD_BROKEN (or make check-chaos)"
done
command -v etcd >/dev/null && command -v etcdctl >/dev/null || bail "etcd/etcdctl missing (Debian: etcd-server etcd-client)"
[ -e "$WALLSTEP" ] || bail "$WALLSTEP is missing: make fleet-test-helpers (or make check-chaos)"
# the mock itself: under a +300 s step the wall clock reads 300 s further from
# CLOCK_MONOTONIC than without it, CLOCK_BOOTTIME as far as without it (each
# pair read in one process: the probes may start seconds apart on a loaded host)
echo "+300" >"$tmp/ws-probe"
ws_probe() { # wall - monotonic, boot-time - monotonic, in s, with $1 preloaded
	env LD_PRELOAD="$1" RERAND_WALLSTEP_FILE="$tmp/ws-probe" python3 -c '
import time
m = time.monotonic(); w = time.time(); b = time.clock_gettime(time.CLOCK_BOOTTIME)
print("%.0f %.0f" % (w - m, b - m))'
}
read -r w0 b0 <<<"$(ws_probe "")"; read -r w1 b1 <<<"$(ws_probe "$WALLSTEP")"
check "wallstep mock: a +300 s step moves the wall clock $((w1 - w0)) s from CLOCK_MONOTONIC, CLOCK_BOOTTIME $((b1 - b0)) s" \
	eval '[ $((w1 - w0)) -ge 299 ] && [ $((w1 - w0)) -le 301 ] && [ $((b1 - b0)) -ge -1 ] && [ $((b1 - b0)) -le 1 ]'
# and it touches no timer (libfaketime's fault): it defines the four readers alone
ws_syms=$(nm -D --defined-only "$WALLSTEP" | awk '$2 == "T" { print $3 }' | sort | tr '\n' ' ')
check "wallstep mock: it defines only the wall-clock readers ($ws_syms)" \
	test "$ws_syms" = "clock_gettime gettimeofday time timespec_get "
rerandd_pick_kernel
PORTS="2441 2442 2443 2444 2445 2446"
for p in $PORTS; do port_free "$p" || bail "port 127.0.0.1:$p is in use"; done
rerandd_prebuilt_image
rerandd_randomized_sd "$SD"
"$R" verify --setup-data "$SD" >/dev/null || bail "the setup_data fixture does not verify"
# The simulated reboot.  It runs as rerandd's child, so it drops the clock step
# first: the history's times are the real clock's.
cat >"$SIMREBOOT" <<EOF
#!/bin/sh
# SIMULATED reboot for test-fleet-chaos.sh: no kexec, no reboot.
unset LD_PRELOAD RERAND_WALLSTEP_FILE
t=\$(date +%s%3N)
# skew: rerandd's record of this attempt (its wall clock) less the real clock
a=\$(sed -n 's/^attempt_time=//p' "\$1/state/state")
echo "\$t \$(basename "\$1") REBOOT skew=\$(( \${a:-0} - t / 1000 ))" >>"$EVENTS"
touch "\$1/reboot-requested"
EOF
chmod +x "$SIMREBOOT"
: >"$EVENTS"; : >"$FAULTS"
mkdir -p "$tmp/h"
fault() { echo "$(now_ms) $*" >>"$FAULTS"; echo "# $(elapsed) fault: $*"; }
T0=$(now_ms)
elapsed() { echo $(( ($(now_ms) - T0) / 1000 ))s; }

# ---- the etcd cluster ---------------------------------------------------------------
CL=e1=http://127.0.0.1:2442,e2=http://127.0.0.1:2444,e3=http://127.0.0.1:2446
EP=127.0.0.1:2441,127.0.0.1:2443,127.0.0.1:2445
eport() { echo $((2439 + 2 * ${1#e})); }     # e1 -> 2441 (client), 2442 (peer)
estart() { local m; for m in "$@"; do etcd_member "$m" "$(eport "$m")" $(($(eport "$m") + 1)) "$CL"; done; }
estart e1 e2 e3
etcd_healthy "$EP" 30 || bail "the etcd cluster did not start on $EP"
# leader / follower: the member names by role, from etcd's own status
etcd_role() { # leader|follower: one running member of that role
	etcdctl --endpoints="$EP" --dial-timeout=1s --command-timeout=2s endpoint status -w json 2>/dev/null |
		python3 -c '
import json, sys
want = sys.argv[1]
for s in json.load(sys.stdin):
    st = s["Status"]
    lead = st["header"]["member_id"] == st["leader"]
    if lead == (want == "leader"):
        print("e%d" % ((int(s["Endpoint"].rsplit(":", 1)[1]) - 2439) // 2)); break' "$1"
}

# ---- the hosts ---------------------------------------------------------------------
fleet_conf() { # FILE GROUP
	printf '[Fleet]\nBackend=etcd\nGroup=%s\nEndpoints=%s\nMaxConcurrent=2\nLockTTL=%s\nDownTTL=%s\nTimeout=1\nRetryBase=300ms\nRetryMax=3000ms\n' \
		"$2" "$EP" "$LTTL" "$DTTL" >"$1"
}
# The host's rerandd and rerand-fleetd see its wall clock through
# tests/fleet/wallstep.c: $hd/wallstep holds the step ("+0", "+300", "-300"), re-read
# every second; CLOCK_MONOTONIC, CLOCK_BOOTTIME and the timers on them are left
# alone, as a real clock step leaves them.  What each reads: rerandd its policy's
# wall times (layout age, state records, the maintenance windows, unused here:
# RebootOutsideWindows=yes) while its fleet pacing runs on CLOCK_BOOTTIME (coord.c);
# rerand-fleetd none of its own (libcurl's timeouts are CLOCK_MONOTONIC; a TLS
# check would read it, but this etcd is plaintext on loopback).  Not libfaketime:
# 0.9.10 also shifts absolute CLOCK_MONOTONIC and CLOCK_BOOTTIME timerfd deadlines by
# its offset (even with FAKETIME_DONT_FAKE_MONOTONIC=1: a 1 s timer fires at once
# at +300 and 300 s late at -300), so every sd-event timer of rerandd would spin or
# stall, which no real clock step does.  The btime fixture stays on the real clock.
# (exec: run with &, the process whose pid $! gives must be the host's own, not a
# subshell's, or a signal to it would miss the host and leave it running)
hostenv() {
	exec env LD_PRELOAD="$WALLSTEP" RERAND_WALLSTEP_FILE="$1/wallstep" "${@:2}"
}
cfleetd_start() { # DIR: the host's rerand-fleetd, as its .socket would start it
	rm -f "$1/run/fleet.sock"
	hostenv "$1" "$2" --socket "$1/run/fleet.sock" >>"$1/fleetd.log" 2>&1 &
	echo $! >"$1/fleetd.pid"
	wait_for 10 test -S "$1/run/fleet.sock"
}
cstop() { # PIDFILE SIGNAL
	[ -e "$1" ] || return 0
	kill -CONT "$(<"$1")" 2>/dev/null
	kill -"$2" "$(<"$1")" 2>/dev/null; wait "$(<"$1")" 2>/dev/null
	rm -f "$1"
}
# chaos_host ID FLEETD: the host's "machine".  Its rerand-fleetd is started again
# when a fault killed it.  A reboot takes $DOWN s, or what $hd/down-next says once.
# While $tmp/rounds exists, every boot makes the host due again 3-12 s later.
chaos_host() {
	local id=$1 fd=$2 hd=$tmp/h/$1 pid d due
	while :; do
		conf_harmless "$id" || { ev "$id" UNSAFE_CONFIG; return 1; }
		cfleetd_start "$hd" "$fd"
		# up: logged before rerandd starts, whose first act may be to give its
		# slot back (logged after, a release could seem to come while it was down)
		ev "$id" BOOT
		hostenv "$hd" "$RERANDD" --config "$hd/rerand.conf" --config-dir "$hd/conf.d" >>"$hd/log" 2>&1 &
		pid=$!; echo $pid >"$hd/pid"
		while [ ! -e "$hd/reboot-requested" ] && [ ! -e "$hd/stop" ]; do
			if ! kill -0 "$(<"$hd/fleetd.pid")" 2>/dev/null; then
				wait "$(<"$hd/fleetd.pid")" 2>/dev/null
				ev "$id" FLEETD_RESTART
				cfleetd_start "$hd" "$fd"
			fi
			kill -0 "$pid" 2>/dev/null || { ev "$id" EXITED; touch "$hd/stop"; }
			sleep 0.1
		done
		cstop "$hd/pid" TERM
		cstop "$hd/fleetd.pid" TERM
		[ -e "$hd/stop" ] && return 0
		ev "$id" DOWN
		d=$DOWN
		[ -e "$hd/down-next" ] && { d=$(<"$hd/down-next"); rm -f "$hd/down-next"; ev "$id" LONG_DOWN "$d"; }
		nap "$d"
		procfs_fixture "$hd/boot_id" "$(cat /proc/sys/kernel/random/uuid)"$'\n'
		# MaxLayoutAge=1h: due again in 3-12 s, or not for an hour
		due=3600
		[ -e "$tmp/rounds" ] && due=$((3 + RANDOM % 10))
		procfs_fixture "$hd/stat" "btime $(( $(date +%s) - 3600 + due ))"$'\n'
		rm -f "$hd/reboot-requested"
	done
}
# hosts_new GROUP FLEETD ID...: configured and started; one machine id each unless
# $hd/machine-id is changed before (clones)
declare -A MID=()
hosts_new() {
	local g=$1 fd=$2 id; shift 2
	fleet_conf "$tmp/$g.fleet" "$g"
	for id in "$@"; do
		host_new "$id" "$tmp/$g.fleet"
		outside_windows "$id"
		echo "+0" >"$tmp/h/$id/wallstep"
		MID[$id]=machine-$id
	done
}
hosts_start() { local fd=$1 id; shift; for id in "$@"; do chaos_host "$id" "$fd" & done; }
# holder ID: what a slot taken by host ID holds, its machine id ~ its install id
# (rerandd makes the install id once, in its state directory): a clone's slot,
# with the same machine id, does not name the other host
holder() {
	local f=$tmp/h/$1/state/fleet-install-id
	if [ -s "$f" ]; then echo "${MID[$1]}~$(<"$f")"; else echo "${MID[$1]}"; fi
}
ids_arg() { local id s=; for id in "$@"; do s+=${s:+,}$id=$(holder "$id"); done; echo "$s"; }
holding() { # the hosts whose machine id a slot or holder key of group $1 names now
	local v id
	v=$(etcdctl --endpoints="$EP" --dial-timeout=1s --command-timeout=2s get --prefix \
		"/rerand/fleet/$1/" --print-value-only 2>/dev/null) || return 1
	for id in "${@:2}"; do
		# a slot's value is the holder, a space and the acquisition's fence
		cut -d' ' -f1 <<<"$v" | grep -qxF "$(holder "$id")" &&
			[ ! -e "$tmp/h/$id/reboot-requested" ] && echo "$id"
	done
}
host_idle() { # no reboot pending, no slot on disk
	[ ! -e "$tmp/h/$1/reboot-requested" ] && grep -qx 'fleet_held=0' "$tmp/h/$1/state/state" 2>/dev/null
}
# cycled_once IDS...: each host had its long reboot, is up again and idle
cycled_once() {
	local id
	for id in "$@"; do
		grep -q " $id LONG_DOWN" "$EVENTS" && [ "$(grep -c " $id BOOT" "$EVENTS")" -ge 2 ] &&
			host_idle "$id" || return 1
	done
}
# run_checker NAME GROUP HEAL IDS...: the checker's verdict on a group's history
# (etcd_keys leaves the group's marker out; the observer counts it: base)
run_checker() {
	local name=$1 g=$2 heal=$3 keys base=0; shift 3
	keys=$(etcd_keys "$EP" "/rerand/fleet/$g/"); [ -n "$keys" ] || keys=-1
	etcdctl --endpoints="$EP" get --keys-only "/rerand/fleet/$g/semaphore" 2>/dev/null | grep -q . && base=1
	python3 "$top/tests/fleet/chaos-check.py" --events "$tmp/$name.events" --obs "$tmp/obs-$g.log" \
		--faults "$tmp/$name.faults" --k 2 --heal "$heal" --final-keys "$keys" --base-keys "$base" \
		--ids "$(ids_arg "$@")" >"$tmp/$name.verdict"
}
kv() { sed -n "s/^$1=//p" "$2"; }

# ---- 1. the checker catches a broken build ---------------------------------------------
# Four hosts each down 2 x LockTTL=, all due at once, MaxConcurrent=2.  The broken
# helper (DownTTL= off) lets each slot lapse while its host is down, so the next
# hosts go down too; the real helper keeps the slot on the down lease.  The same
# scenario and the same checker for both.
downbound() { # NAME FLEETD GROUP
	local name=$1 fd=$2 g=$3 ids=() id t0
	for i in 1 2 3 4; do ids+=("$g$i"); done
	python3 "$top/tests/fleet/observer.py" "$EP" "/rerand/fleet/$g/" "$tmp/obs-$g.log" &
	wait_for 10 test -s "$tmp/obs-$g.log"
	hosts_new "$g" "$fd" "${ids[@]}"
	for id in "${ids[@]}"; do echo $((2 * LTTL)) >"$tmp/h/$id/down-next"; done
	t0=$(now_ms)
	: >"$tmp/$name.faults"
	for id in "${ids[@]}"; do echo "$t0 long-down $id" >>"$tmp/$name.faults"; done
	hosts_start "$fd" "${ids[@]}"
	# each host down once (16 s) and back, two at a time at most: about 40 s
	wait_for 150 cycled_once "${ids[@]}"
	wait_for 20 eval '[ "$(etcd_keys "$EP" "/rerand/fleet/$g/")" = 0 ]'
	hosts_stop "${ids[@]}"
	grep -E " ($g[0-9]) " "$EVENTS" >"$tmp/$name.events"
	run_checker "$name" "$g" "$t0" "${ids[@]}"
}
downbound broken "$FLEETD_BROKEN" brk
rc=$?
sed 's/^/# broken: /' "$tmp/broken.verdict"
check "checker: on the broken helper (DownTTL= off) it reports a violation ($(grep -c ^VIOLATION "$tmp/broken.verdict") found, max down $(kv max_down "$tmp/broken.verdict") of 2)" \
	eval '[ $rc = 1 ] && grep -q "^VIOLATION .*lapsed while it was down" "$tmp/broken.verdict"'
downbound fixed "$FLEETD_GOOD" fix
rc=$?
sed 's/^/# fixed: /' "$tmp/fixed.verdict"
check "DownTTL: hosts down 2 x LockTTL= keep their slots (max down $(kv max_down "$tmp/fixed.verdict") of 2, no lapse)" \
	eval '[ $rc = 0 ] && [ "$(kv max_down "$tmp/fixed.verdict")" -le 2 ] && [ "$(kv lapses "$tmp/fixed.verdict")" = 0 ]'

# ---- 2. the chaos run ------------------------------------------------------------------
# 8 hosts; c1 and c2 are clones with one machine id (for the whole run).
G=chaos
HS=(h1 h2 h3 h4 h5 h6 c1 c2)
# every host of this group takes its own holder key (the roles example's
# `holders GROUP` puts this marker)
etcdctl --endpoints="$EP" put "/rerand/fleet/$G/semaphore" holders >/dev/null || bail "cannot put the group's marker"
python3 "$top/tests/fleet/observer.py" "$EP" "/rerand/fleet/$G/" "$tmp/obs-$G.log" &
wait_for 10 test -s "$tmp/obs-$G.log"
hosts_new "$G" "$FLEETD_GOOD" "${HS[@]}"
cp "$tmp/h/c1/machine-id" "$tmp/h/c2/machine-id"; MID[c2]=${MID[c1]}
TC=$(now_ms)
echo "$TC clone c1,c2" >"$tmp/chaos.faults"
touch "$tmp/rounds"
hosts_start "$FLEETD_GOOD" "${HS[@]}"
echo "# $(elapsed) chaos: ${#HS[@]} hosts (c1 and c2 share ${MID[c1]}), MaxConcurrent=2, LockTTL=${LTTL}s, DownTTL=${DTTL}s, faults for ${CHAOS_S}s"

# the faults, each logged when it starts; each ends (heals) before the next
cfault() { echo "$(now_ms) $*" >>"$tmp/chaos.faults"; echo "# $(elapsed) fault: $*"; }
pick() { shuf -n1 -e "$@" 2>/dev/null; }
f_etcd_kill() { # leader|follower
	local m; m=$(etcd_role "$1"); [ -n "$m" ] || return 1
	cfault "etcd-kill-$1" "$m"
	etcd_kill "$m" KILL; nap 3; estart "$m"
	etcd_healthy "$EP" 30 || echo "# etcd not healthy again after restarting $m"
}
f_etcd_stop() { # leader|follower
	local m; m=$(etcd_role "$1"); [ -n "$m" ] || return 1
	cfault "etcd-sigstop-$1" "$m"
	kill -STOP "$(<"$tmp/etcd-$m.pid")"; nap 4; kill -CONT "$(<"$tmp/etcd-$m.pid")"
	etcd_healthy "$EP" 30 || echo "# etcd not healthy again after SIGCONT to $m"
}
f_host_stop() { # a host SIGSTOPped while it holds a slot, for longer than LockTTL=
	local h i p
	for ((i = 0; i < 40; i++)); do
		h=$(pick $(holding "$G" "${HS[@]}"))
		if [ -n "$h" ]; then
			p="$(cat "$tmp/h/$h/pid" "$tmp/h/$h/fleetd.pid" 2>/dev/null)"
			# stopped, and still the holder it was (not gone down in between)
			kill -STOP $p 2>/dev/null && [ ! -e "$tmp/h/$h/reboot-requested" ] && break
			kill -CONT $p 2>/dev/null
			h=
		fi
		nap 0.25
	done
	[ -n "$h" ] || return 1
	cfault host-sigstop-holding "$h"
	nap $((LTTL + 4)); kill -CONT $p 2>/dev/null
	return 0
}
f_long_down() { # the next reboot of a host takes LockTTL= + 6 s
	local h; h=$(pick "${HS[@]}")
	cfault host-down-longer-than-ttl "$h"
	echo $((LTTL + 6)) >"$tmp/h/$h/down-next"
	nap 2
}
f_clock() { # forward|backward: the host's wall clock steps 300 s
	local h; h=$(pick "${HS[@]}")
	cfault "clock-step-$1" "$h"
	if [ "$1" = forward ]; then echo "+300" >"$tmp/h/$h/wallstep"; else echo "-300" >"$tmp/h/$h/wallstep"; fi
	nap 2
}
f_fleetd_kill() { # while its host waits for a slot (a request in flight or next)
	local h i c=()
	# rerandd's metrics file says "waiting" or "error": no process per look
	for ((i = 0; i < 40 && ${#c[@]} == 0; i++)); do
		for h in "${HS[@]}"; do
			grep -qE '^rerand_fleet_lock_state\{.*state="(waiting|error)"\} 1$' "$tmp/h/$h/run/rerand.prom" 2>/dev/null && c+=("$h")
		done
		[ ${#c[@]} -gt 0 ] || nap 0.25
	done
	h=$(pick "${c[@]:-${HS[0]}}")
	cfault fleetd-kill-mid-acquire "$h"
	kill -KILL "$(<"$tmp/h/$h/fleetd.pid")" 2>/dev/null
	nap 1
}
FAULT_CYCLE=(
	"f_etcd_kill leader" "f_host_stop" "f_clock forward" "f_etcd_stop follower"
	"f_long_down" "f_fleetd_kill" "f_etcd_kill follower" "f_clock backward"
	"f_etcd_stop leader" "f_long_down" "f_host_stop" "f_fleetd_kill"
)
tend=$(( $(now_ms) + CHAOS_S * 1000 )); fi_=0
while [ "$(now_ms)" -lt "$tend" ] || [ $fi_ -lt 9 ]; do
	${FAULT_CYCLE[fi_ % ${#FAULT_CYCLE[@]}]} || echo "# $(elapsed) fault ${FAULT_CYCLE[fi_ % ${#FAULT_CYCLE[@]}]}: no target now"
	fi_=$((fi_ + 1))
	# both ends of every TCP socket of the test's etcd members and hosts, mid-run
	[ $fi_ = 3 ] && ss -Htnp 2>/dev/null | grep -E '"(etcd|rerand-fleetd|rerandd)"' |
		awk '{ print $4; print $5 }' >"$tmp/sockets"
	nap $((1 + RANDOM % 2))
done

# ---- the heal --------------------------------------------------------------------------
# every member running, every process running, every clock back to the real one (a
# step too), then every host must go down and come up again once
for m in e1 e2 e3; do
	if [ -e "$tmp/etcd-$m.pid" ] && kill -0 "$(<"$tmp/etcd-$m.pid")" 2>/dev/null; then
		kill -CONT "$(<"$tmp/etcd-$m.pid")"
	else
		estart "$m"
	fi
done
for h in "${HS[@]}"; do
	echo "+0" >"$tmp/h/$h/wallstep"
	for p in "$tmp/h/$h/pid" "$tmp/h/$h/fleetd.pid"; do [ -e "$p" ] && kill -CONT "$(<"$p")" 2>/dev/null; done
done
etcd_healthy "$EP" 30 || echo "# the etcd cluster is not healthy after the heal"
# the clock reset is read within 1 s (wallstep.c)
nap 2
TH=$(now_ms)
echo "# $(elapsed) healed; every host must rerandomize once more"
rerandomized_since() { # T IDS...: a REBOOT after T then a BOOT, for each
	local t=$1 id; shift
	for id in "$@"; do
		awk -v t="$t" -v h="$id" '$2 == h && $1 >= t && $3 == "REBOOT" { r = 1 } r && $2 == h && $3 == "BOOT" { b = 1 }
			END { exit !b }' "$EVENTS" || return 1
	done
}
wait_for "$HEAL_S" rerandomized_since "$TH" "${HS[@]}"
echo "# $(elapsed) all rerandomized after the heal: $(rerandomized_since "$TH" "${HS[@]}" && echo yes || echo no)"
# no more rounds: each host's next boot is not due again; then all idle, no slot
rm -f "$tmp/rounds"
TR=$(now_ms)
booted_since() { local t=$1 id; shift; for id in "$@"; do
	awk -v t="$t" -v h="$id" '$2 == h && $1 >= t && $3 == "BOOT" { b = 1 } END { exit !b }' "$EVENTS" || return 1; done; }
all_idle() { local id; for id in "$@"; do host_idle "$id" || return 1; done; }
wait_for 90 booted_since "$TR" "${HS[@]}"
wait_for 60 eval 'all_idle "${HS[@]}" && [ "$(etcd_keys "$EP" "/rerand/fleet/$G/")" = 0 ]'
# the observer's watch may lag the last release a little
nap 3
hosts_stop "${HS[@]}"
grep -E " (h[0-9]|c[0-9]) " "$EVENTS" >"$tmp/chaos.events"
run_checker chaos "$G" "$TH" "${HS[@]}"
rc=$?
sed 's/^/# chaos: /' "$tmp/chaos.verdict"
v=$tmp/chaos.verdict
check "chaos: never more than 2 hosts down at once (max $(kv max_down "$v"))" eval '[ "$(kv max_down "$v")" -le 2 ]'
check "chaos: no slot lapsed while its host was down" eval '! grep -q "^VIOLATION .*\(lapsed\|without a slot\)" "$v"'
check "chaos: every host rerandomized after the faults healed (in $(kv heal_ms "$v") ms)" \
	eval '! grep -q "^VIOLATION .*\(did not rerandomize\|never came up\)" "$v"'
check "chaos: no slot left held at the end, observer consistent" \
	eval '! grep -q "^VIOLATION .*\(left held\|observer\)" "$v"'
check "chaos: the checker's verdict is clean (exit $rc)" test "$rc" = 0
all_kinds() {
	local k
	for k in clone etcd-kill-leader etcd-kill-follower etcd-sigstop-leader etcd-sigstop-follower \
		host-sigstop-holding host-down-longer-than-ttl clock-step-forward clock-step-backward \
		fleetd-kill-mid-acquire; do
		grep -q " $k " "$tmp/chaos.faults" || { echo "# no $k fault"; return 1; }
	done
}
check "chaos: each kind of fault was injected" all_kinds
# The clock steps reached the processes (wallstep.c's own record of a wall-clock
# read under a step), and rerandd's records used the stepped clock: the skew of
# its attempt time, taken at each reboot (SIMREBOOT).
seen() { cat "$tmp"/h/*/wallstep.seen 2>/dev/null | awk -v c="$1" -v s="$2" '$1 == c && $3 == s' | wc -l; }
skews=$(grep -o ' REBOOT skew=-\{0,1\}[0-9]*' "$tmp/chaos.events" | sed 's/.*=//' |
	awk '$1 >= 290 { f++ } $1 <= -290 { b++ } $1 > -5 && $1 < 5 { z++ } END { printf "%d %d %d", f, b, z }')
read -r skf skb skz <<<"$skews"
echo "# clock steps seen: rerandd +300 $(seen rerandd +300)x, -300 $(seen rerandd -300)x; rerand-fleetd +300 $(seen rerand-fleetd +300)x, -300 $(seen rerand-fleetd -300)x"
echo "# reboots whose attempt time (rerandd's wall clock) was ~300 s ahead: $skf, ~300 s behind: $skb, on time: $skz"
check "clock steps: rerandd read its wall clock stepped forward and back ($(seen rerandd +300) and $(seen rerandd -300) process starts or step changes)" \
	eval '[ "$(seen rerandd +300)" -ge 1 ] && [ "$(seen rerandd -300)" -ge 1 ]'
# two hosts with one machine id: the clone that asks while the other holds a slot
# is refused, as rerandd's journal (its stderr here) says
dup=$(grep -h 'another host uses this identity' "$tmp/h/c1/log" "$tmp/h/c2/log" 2>/dev/null)
echo "# duplicate-id refusals logged: $(grep -c . <<<"$dup"); the first, as printed:"
echo "# $(head -n 1 <<<"$dup")"
check "clones: a host refused a slot because its clone held one ($(grep -c . <<<"$dup") times)" \
	eval 'grep -q "fleet: another host uses this identity, not rebooting (fail closed): etcd: the holder key machine-c1~[0-9a-f]* of group chaos is held by machine-c1~[0-9a-f]*, another host with this machine id machine-c1 " <<<"$dup"'
check "loopback only: every TCP socket of etcd, rerand-fleetd and rerandd was on 127.0.0.1 ($(wc -l <"$tmp/sockets") seen mid-run)" \
	eval '[ -s "$tmp/sockets" ] && ! grep -vE "^(127\.0\.0\.1|\[::ffff:127\.0\.0\.1\]):[0-9]+$" "$tmp/sockets"'
echo "1..$n"
echo "chaos: $(kv operations "$v") operations, $(kv faults "$v") faults, max down $(kv max_down "$v") of 2"
[ "$rc" = 0 ]
