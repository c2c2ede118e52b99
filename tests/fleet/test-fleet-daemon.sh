#!/bin/bash
# rerandd with fleet coordination, end to end: real build/rerandd instances as
# simulated hosts (separate state, runtime dirs, boot ids, machine ids) against a
# real etcd on loopback (Debian's etcd-server, data in temp dirs): a single member
# on 127.0.0.1:2411-2412 and a 3-member cluster on 127.0.0.1:2421-2426; and against
# the FleetLock test server (tests/fleet/fleetlock-server.py, Debian ships no
# FleetLock server).  Nothing listens or connects anywhere but 127.0.0.1.
# SIMULATED: only the reboot.  kexec-tools is /bin/true and the RebootCommand only
# asks the host's runner (tests/fleet/daemon-lib.sh host_run) to stop rerandd,
# wait, write a new boot id and start it again.  The daemon, its policy and lock
# logic, etcd, its leases, and the timing are real.  Every instance's config is
# checked to be harmless before it starts.  RERAND_MODE=long: more hosts, longer
# outages.  However the test ends, every process it started is killed (tests/lib/tagged.sh).
set -u
# Every process this test starts, forked subshells included, must carry a tag of
# this run in its environment (tests/lib/tagged.sh): /proc/PID/environ shows what a process
# was exec'ed with, so the shell itself is started again with the tag.
. "$(dirname "$0")/../lib/tagged.sh"
tagged_reexec rerand-fleetd "$@"
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/rerand-fleetd.XXXXXX)
R=$top/build/rerand
RERANDD=$top/build/rerandd
FLEETD=$top/build/rerand-fleetd
EVENTS=$tmp/events.log
SIMREBOOT=$tmp/sim-reboot
SD=$tmp/setup_data
DOWN=1
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); echo "not ok $n - $*"; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else nok "$d"; return 1; fi; }
bail() { nok "$*"; echo "1..$n"; exit 1; }
bg_pids=()
# Every process this test starts inherits RERAND_FLEETD_TEST (rerandd passes its
# environment on to hooks and to the RebootCommand, the observer to its etcdctl),
# so the clean-up finds each one by its id, orphans included, however the test ends.
trap "tagged_cleanup 0.3" EXIT
trap 'exit 130' INT; trap 'exit 143' TERM; trap 'exit 129' HUP
# nap S: a sleep a signal interrupts at once (bash runs traps only between commands)
nap() { sleep "$1" & wait $!; }
. "$top/tests/fleet/lib.sh"
. "$top/tests/lib/procfs-fixture.sh"
. "$top/tests/fleet/daemon-lib.sh"
T0=$(now_ms)
# fstatus ID [--json]: `rerand fleet status` answers from what rerand-fleetd said
# last and asks it again: the second answer is at most a moment old.
fstatus() {
	local i out
	ctl "$1" fleet status >/dev/null 2>&1
	for ((i = 0; i < 50; i++)); do
		sleep 0.2
		out=$(ctl "$1" fleet status ${2:-} 2>&1) && { printf '%s\n' "$out"; return 0; }
	done
	printf '%s\n' "$out"; return 1
}
elapsed() { echo $(( ($(now_ms) - T0) / 1000 ))s; }

mode=${RERAND_MODE:-short}
if [ "$mode" = long ]; then HOSTS=12; OUTAGE=20; WLEN=150; else HOSTS=6; OUTAGE=8; WLEN=60; fi
# Q: how long all three cluster members stay down after the hosts became due
if [ "$mode" = long ]; then QOUT=20; else QOUT=6; fi
# A and Q1: the lease of a host in its reboot must outlast the reboot (fleet.md:
# LockTTL covers drain + reboot + boot).  The simulated one (the simulator's etcdctl,
# SIGTERM, DOWN s, new boot id, rerand-fleetd and rerandd started again) takes 2-3 s
# idle and 7-8 s at load 20 on two cores: a 6 s lease modelled a host whose TTL is
# shorter than its reboot.  C, R and Q2 keep 6 s, B 10 s: there the TTL itself is
# tested (B's waiter must start and find the group full before the dead holder's
# lease runs out: at load 15 that took more than 6 s).
RTTL=20

rerandd_need_bins "$FLEETD"
command -v etcd >/dev/null && command -v etcdctl >/dev/null || bail "etcd/etcdctl missing (Debian: etcd-server etcd-client)"
rerandd_pick_kernel
[ -r "$KERNEL" ] || bail "$KERNEL: a kernel to stage is needed"
PORTS="2411 2412 2421 2422 2423 2424 2425 2426"
for p in $PORTS; do port_free "$p" || bail "port 127.0.0.1:$p is in use"; done

# one image for every host (the daemon's cache is keyed by the kernel's and the stage's hashes)
rerandd_prebuilt_image
# the boot record the stage would leave: a randomized boot (format as in test-cli.sh)
rerandd_randomized_sd "$SD"
"$R" verify --setup-data "$SD" >/dev/null || bail "the setup_data fixture does not verify"
# the simulated reboot: ask the runner, return at once (as logind does).  It logs
# each request with its time in the host's reboot.log, and on etcd whether etcd
# itself says, at that moment, that this host holds a slot of its group.
cat >"$SIMREBOOT" <<EOF
#!/bin/sh
# SIMULATED reboot for test-fleet-daemon.sh: no kexec, no reboot; the host's
# runner stops this rerandd, waits, and boots it again with a new boot id.
t=\$(date +%s%3N)
held=-
if grep -qx 'Backend=etcd' "\$1/rerand.conf"; then
	eps=\$(sed -n 's/^Endpoints=//p' "\$1/rerand.conf" | tr -d ' ')
	grp=\$(sed -n 's/^Group=//p' "\$1/rerand.conf")
	if v=\$(ETCDCTL_API=3 etcdctl --endpoints="\$eps" --dial-timeout=2s --command-timeout=8s \\
		get --prefix "/rerand/fleet/\$grp/slot/" --print-value-only 2>/dev/null); then
		held=no
		# the holder is MACHINEID~INSTALLID (rerandd made the install id),
		# then the acquisition's fence
		printf '%s\\n' "\$v" | cut -d' ' -f1 | grep -qxF "\$(cat "\$1/machine-id")~\$(cat "\$1/state/fleet-install-id")" && held=yes
	else
		held=unknown
	fi
fi
echo "\$t \$(basename "\$1") REBOOT" >>"$EVENTS"
echo "\$t REBOOT held=\$held" >>"\$1/reboot.log"
touch "\$1/reboot-requested"
EOF
chmod +x "$SIMREBOOT"
: >"$EVENTS"
mkdir -p "$tmp/h"

# ---- the safety check itself must bite --------------------------------------------
printf '[Fleet]\nBackend=none\n' >"$tmp/none.fleet"
host_new unsafe "$tmp/none.fleet"
sed -i 's|^RebootCommand=.*|RebootCommand=/sbin/reboot|' "$tmp/h/unsafe/rerand.conf"
check "safety: a config whose RebootCommand is not the simulator is refused" eval '! conf_harmless unsafe'
host_new unsafe2 "$tmp/none.fleet"
sed -i 's|^Method=command|Method=syscall|' "$tmp/h/unsafe2/rerand.conf"
check "safety: Method=syscall is refused" eval '! conf_harmless unsafe2'
rm -rf "$tmp/h/unsafe" "$tmp/h/unsafe2"

# ---- [Fleet] in rerandd's configuration ------------------------------------------------
cat >"$tmp/badfleet.conf" <<'EOF'
[Daemon]
StateDirectory=/nonexistent-rerand-test
[Fleet]
Backend=zookeeper
MaxConcurrent=0
Colour=blue
EOF
"$RERANDD" --check-config --config "$tmp/badfleet.conf" --config-dir "$tmp/none.d" 2>"$tmp/err"
check "config: bad [Fleet] keys are reported with file:line" \
	eval 'grep -q "badfleet.conf:4: Backend=zookeeper" "$tmp/err" && grep -q "badfleet.conf:5: MaxConcurrent=0" "$tmp/err" &&
	      grep -q "badfleet.conf:6: unknown key Colour= in \[Fleet\]" "$tmp/err"'
printf '[Fleet]\nBackend=etcd\nLockTTL=6\nTimeout=2\n' >"$tmp/noep.conf"
"$RERANDD" --check-config --config "$tmp/noep.conf" --config-dir "$tmp/none.d" 2>"$tmp/err"
check "config: Backend=etcd without Endpoints= and a TTL under 3 timeouts are refused" \
	eval 'grep -q "needs Endpoints=" "$tmp/err" && grep -q "LockTTL= must be longer than 3 times Timeout=" "$tmp/err"'

# ---- etcd and the FleetLock server -----------------------------------------------------
E=127.0.0.1:2411
etcd_member s1 2411 2412 s1=http://127.0.0.1:2412
# the 3-member cluster for Q starts now and is ready by then
QCL=m1=http://127.0.0.1:2422,m2=http://127.0.0.1:2424,m3=http://127.0.0.1:2426
QEP=127.0.0.1:2421,127.0.0.1:2423,127.0.0.1:2425
qport() { echo $((2419 + 2 * ${1#m})); }    # m1 -> 2421 (client), 2422 (peer)
qstart() { local m; for m in "$@"; do etcd_member "$m" "$(qport "$m")" $(($(qport "$m") + 1)) "$QCL"; done; }
qstart m1 m2 m3
etcd_healthy "$E" 20 || bail "etcd did not start on $E"
python3 "$top/tests/fleet/fleetlock-server.py" 2 "$tmp/fl.port" 2>"$tmp/fl.log" &
bg_pids+=($!)
wait_for 10 test -s "$tmp/fl.port" || bail "the FleetLock server did not start"
FL=http://127.0.0.1:$(cat "$tmp/fl.port")
fleet_etcd() { # FILE GROUP K TTL [ENDPOINTS]
	printf '[Fleet]\nBackend=etcd\nGroup=%s\nEndpoints=%s\nMaxConcurrent=%s\nLockTTL=%s\nTimeout=1\nRetryBase=200ms\nRetryMax=2000ms\n' \
		"$2" "${5:-$E}" "$3" "$4" >"$1"
}

# ---- W: a maintenance window across a FleetLock fleet (runs while the etcd parts do) ----
# Windows start on a minute: the next one at least 25 s away, WLEN s long, in UTC.
now=$(date +%s); wopen=$(( (now / 60 + 1) * 60 )); [ $((wopen - now)) -lt 25 ] && wopen=$((wopen + 60))
printf '[Fleet]\nBackend=fleetlock\nGroup=edge\nURL=%s\nTimeout=2\nRetryBase=200ms\nRetryMax=2000ms\n' "$FL" >"$tmp/w.fleet"
wids=$(seq -f 'w%g' 1 "$HOSTS")
for id in $wids; do
	host_new "$id" "$tmp/w.fleet" "[Window edge]
Days=daily
Start=$(date -u -d "@$wopen" +%H:%M)
Length=${WLEN}s
TimeZone=UTC"
	host_run "$id" & bg_pids+=($!)
done
echo "# window opens at $(date -u -d "@$wopen" +%H:%M:%S) UTC, $((wopen - now)) s from now ($(elapsed))"

# ---- A: MaxConcurrent=2 over etcd, every host due at once ------------------------------
fleet_etcd "$tmp/a.fleet" web 2 "$RTTL"
python3 "$top/tests/fleet/observer.py" "$E" /rerand/fleet/web/ "$tmp/obs-a.log" & bg_pids+=($!)
obs_a=$!
wait_for 10 test -s "$tmp/obs-a.log"
aids=$(seq -f 'a%g' 1 "$HOSTS")
ta=$(now_ms)
for id in $aids; do host_new "$id" "$tmp/a.fleet"; outside_windows "$id"; done
unsafe=0; for id in $aids; do conf_harmless "$id" || unsafe=1; done
check "A: every instance's config is harmless (RebootCommand is the simulator, kexec is /bin/true)" test $unsafe = 0
for id in $aids; do host_run "$id" & bg_pids+=($!); done
wait_for 120 hosts_done $aids
tad=$(now_ms)
wait_for 10 obs_caught_up "$tmp/obs-a.log" "$HOSTS"; kill "$obs_a" 2>/dev/null
amax=$(obs_max "$tmp/obs-a.log")
check "A: all $HOSTS hosts completed a verified rerandomization ($(hosts_count_done $aids) done, $((tad - ta)) ms)" hosts_done $aids
check "A: the etcd observer never saw more than 2 holders (max $amax)" eval '[ "$amax" -le 2 ] && [ "$amax" -ge 1 ]'
check "A: each host rebooted exactly once" \
	test "$(grep -cE '^[0-9]+ a[0-9]+ REBOOT$' "$EVENTS")" -eq "$HOSTS"
check "A: every reboot command ran while etcd said the host held a slot ($(reboots_held $aids))" \
	test "$(reboots_held $aids)" = "$HOSTS of $HOSTS"
check "A: every slot was given back (group empty)" test "$(etcd_keys "$E" /rerand/fleet/web/)" -eq 0
j=$(ctl a1 status --json)
check "A: rerand status --json: randomized, 1 verified reboot, fleet idle with no errors" \
	python3 -c "import json,sys; d=json.loads(sys.argv[1]); f=d['fleet']
assert d['randomized'] and d['successes']==1 and f['backend']=='etcd' and f['state']=='idle' and f['errors']==0 and f['id']=='machine-a1~'+open('$tmp/h/a1/state/fleet-install-id').read().strip(), d" "$j"
check "A: the metrics file has rerand_fleet_lock_state{state=idle} 1 and no errors" \
	eval 'grep -qx "rerand_fleet_lock_state{backend=\"etcd\",group=\"web\",state=\"idle\"} 1" "$tmp/h/a1/run/rerand.prom" &&
	      grep -qx "rerand_fleet_errors_total{backend=\"etcd\"} 0" "$tmp/h/a1/run/rerand.prom"'
echo "# A: max concurrency seen by the etcd observer: $amax of 2; $HOSTS hosts in $((tad - ta)) ms ($(elapsed))"
# SIGHUP: a [Fleet] with errors is refused and the old one kept; a good one applies
c=$tmp/h/a1/rerand.conf
sed -i 's/^Backend=etcd$/Backend=zookeeper/' "$c"
kill -HUP "$(cat "$tmp/h/a1/pid")"
wait_for 5 grep -q 'configuration has errors: keeping the previous one' "$tmp/h/a1/log"
check "SIGHUP: a bad [Fleet] value is logged with file:line and the running one kept" \
	eval 'grep -q "rerand.conf:[0-9]*: Backend=zookeeper: want none, etcd or fleetlock" "$tmp/h/a1/log" &&
	      ctl a1 status --json | grep -q "\"group\":\"web\""'
sed -i -e 's/^Backend=zookeeper$/Backend=etcd/' -e 's/^Group=web$/Group=web2/' "$c"
conf_harmless a1 && kill -HUP "$(cat "$tmp/h/a1/pid")"
check "SIGHUP: a good new [Fleet] group applies at once while no slot is held" \
	wait_for 5 eval 'ctl a1 status --json | grep -q "\"group\":\"web2\""'
hosts_stop $aids

# ---- B: a holder dies mid-reboot; an operator frees a stuck slot ---------------------
fleet_etcd "$tmp/b.fleet" kill 1 10
# the slot goes to a lease of DownTTL= for the reboot (docs/fleet.md): the dead
# holder's slot frees DownTTL= after its last confirm
echo DownTTL=12 >>"$tmp/b.fleet"
python3 "$top/tests/fleet/observer.py" "$E" /rerand/fleet/kill/ "$tmp/obs-b.log" & bg_pids+=($!)
obs_b=$!
wait_for 10 test -s "$tmp/obs-b.log"
for id in victim waiter; do
	host_new "$id" "$tmp/b.fleet"
	outside_windows "$id"
done
host_run victim die & bg_pids+=($!)
wait_for 20 grep -q ' victim DIED' "$EVENTS"
tk=$(sed -n 's/^\([0-9]*\) victim DIED.*/\1/p' "$EVENTS")
# The lease was last renewed by the confirm just before the reboot command ran, so
# its TTL counts from the reboot request (the simulator's first act), not from the
# death, which comes after the simulator's own etcdctl (seconds under load).
treq=$(host_reboots victim | head -1)
host_run waiter & bg_pids+=($!)
wait_for 10 test -S "$tmp/h/waiter/run/control"
# its start-up release and first acquire are two round trips to its helper
wait_for 20 eval 'ctl waiter status >"$tmp/waiter.txt" 2>&1 && grep -q "waiting for a slot" "$tmp/waiter.txt"'
j=$(fstatus waiter --json)
check "B: rerand fleet status --json shows the dead victim holding the one slot, ttl <= 12 s" \
	python3 -c "import json,sys; d=json.loads(sys.argv[1]); h=d['holders']
assert d['group']=='kill' and d['free']==0 and len(h)==1 and h[0]['id'].startswith('machine-victim~') and 0 < h[0]['ttl'] <= 12, d" "$j"
check "B: rerand status says the waiter waits for a slot" grep -q "fleet wait: .*waiting for a slot: etcd: group kill is full" "$tmp/waiter.txt"
wait_for 20 grep -q 'DELETE /rerand/fleet/kill/slot/0 ' "$tmp/obs-b.log"
tfree=$(awk '$4 == "DELETE" { print $1; exit }' "$tmp/obs-b.log")
wait_for 30 host_done waiter
tw=$(awk '$4 == "PUT" && index($6, "machine-waiter~") == 1 { print $1; exit }' "$tmp/obs-b.log")
# DownTTL= (12 s) from the confirm just before the request, plus the observer's lag
# (14.7 s seen at load 57)
free_ms=$(( ${tfree:-0} - ${treq:-0} )); take_ms=$(( ${tw:-0} - ${treq:-0} ))
check "B: the dead holder's slot freed ${free_ms} ms after its reboot request (which came $(( ${tk:-0} - ${treq:-0} )) ms before its death; LockTTL=10s, DownTTL=12s)" \
	eval '[ -n "$tfree" ] && [ -n "$treq" ] && [ $free_ms -ge 10000 ] && [ $free_ms -le 16000 ] && [ "${tfree:-0}" -gt "${tk:-0}" ]'
check "B: the waiting host took the slot ${take_ms} ms after the reboot request and completed" \
	eval '[ -n "$tw" ] && [ $take_ms -ge $free_ms ] && host_done waiter'
check "B: the victim never came back (one boot, nothing after its death)" \
	eval '[ "$(grep -c " victim BOOT" "$EVENTS")" -eq 1 ] && [ -z "$(awk -v t="$tk" '"'"'$1 > t && $2 == "victim"'"'"' "$EVENTS")" ]'
echo "# B: recovery after a holder died: slot free ${free_ms} ms after its reboot request, next holder after ${take_ms} ms (DownTTL 12 s)"
# an operator frees a stuck slot long before its TTL
fleet_etcd "$tmp/b2.fleet" stuck 1 60
host_new victim2 "$tmp/b2.fleet"; host_new waiter2 "$tmp/b2.fleet"
outside_windows victim2; outside_windows waiter2
host_run victim2 die & bg_pids+=($!)
wait_for 20 grep -q ' victim2 DIED' "$EVENTS"
host_run waiter2 & bg_pids+=($!)
wait_for 10 test -S "$tmp/h/waiter2/run/control"
sleep 1
out=$(ctl waiter2 fleet release machine-victim2); trel=$(now_ms)
check "B: rerand fleet release queues the release at once ($out)" grep -q '^queued: free the slots held by machine-victim2' <<<"$out"
check "B: rerand-fleetd freed the dead host's one slot (rerandd's journal)" \
	wait_for 10 grep -q 'fleet: operator freed 1 slot(s)' "$tmp/h/waiter2/log"
wait_for 20 host_done waiter2
check "B: the waiting host then completes in $(( $(now_ms) - trel )) ms, far inside the 60 s TTL" \
	eval 'host_done waiter2 && [ $(( $(now_ms) - trel )) -lt 20000 ]'
kill "$obs_b" 2>/dev/null
hosts_stop waiter waiter2

# ---- D: kill -9 while holding (mid-drain), restart in the same boot -------------------
fleet_etcd "$tmp/d.fleet" drain 1 60
host_new k9 "$tmp/d.fleet"
outside_windows k9
printf '#!/bin/sh\n[ -e %s/slow ] && { touch %s/in-hook; sleep 30; }\nexit 0\n' "$tmp/h/k9" "$tmp/h/k9" >"$tmp/h/k9/pre-reboot.d/10-drain"
chmod +x "$tmp/h/k9/pre-reboot.d/10-drain"; touch "$tmp/h/k9/slow"
python3 "$top/tests/fleet/observer.py" "$E" /rerand/fleet/drain/ "$tmp/obs-d.log" & bg_pids+=($!)
obs_d=$!
wait_for 10 test -s "$tmp/obs-d.log"
host_run k9 2>/dev/null & bg_pids+=($!)
wait_for 20 test -e "$tmp/h/k9/in-hook"
check "D: the drain runs while the slot is held (state has fleet_held=1 and the token)" \
	eval 'grep -qx fleet_held=1 "$tmp/h/k9/state/state" && grep -qE "^fleet_token=[0-9a-f]+:0:[0-9a-f]{32}$" "$tmp/h/k9/state/state" &&
	      [ "$(etcd_keys "$E" /rerand/fleet/drain/)" -eq 1 ]'
kill -KILL "$(cat "$tmp/h/k9/pid")"; tk9=$(now_ms)
rm -f "$tmp/h/k9/slow"
wait_for 5 grep -q ' k9 EXITED' "$EVENTS"
touch "$tmp/h/k9/restart"
wait_for 40 host_done k9
check "D: after kill -9 and a restart it gave the slot back, retook it and completed ($(( $(now_ms) - tk9 )) ms, TTL 60 s)" \
	eval 'host_done k9 && [ $(( $(now_ms) - tk9 )) -lt 30000 ]'
check "D: the kill -9 left a state file that parses (no .corrupt)" eval '[ ! -e "$tmp/h/k9/state/state.corrupt" ]'
# PUT (first boot), PUT (the persisted token resumed after the kill: a new lease
# and fence), DELETE (start-up release), PUT (retaken), PUT (the confirm moves it
# to the DownTTL= lease), PUT (back on a LockTTL= lease, a new fence, after the
# boot), DELETE (released after the reboot)
dseq() { awk '$4 == "PUT" || $4 == "DELETE" { printf "%s ", $4 }' "$tmp/obs-d.log"; }
# the observer's watch lags a little under load: stop it once it saw seven changes (or 10 s)
wait_for 10 eval '[ "$(dseq | wc -w)" -ge 7 ]'
kill "$obs_d" 2>/dev/null
dseq=$(dseq)
check "D: the restarted daemon gave the old slot back at start-up before taking one again ($dseq)" \
	test "$dseq" = "PUT PUT DELETE PUT PUT PUT DELETE "
hosts_stop k9

# ---- R: etcd down across a host's reboot; its health check fails after it --------------
# The slot must be taken back once etcd answers again and kept alive while the
# post-boot hook fails (a sick host keeps the group paused), not left to expire.
# (The failed check is also recorded for the group's breaker, a key beside
# the slots: only slot keys are counted.  Method=command without
# FirmwareRebootCommand= cannot go back through the firmware, so the host
# stays up in the failed boot, as a sick host did before confirmation.)
fleet_etcd "$tmp/r.fleet" resume 1 6
host_new r1 "$tmp/r.fleet"
outside_windows r1
printf '#!/bin/sh\n[ -e %s/sick ] && { echo "health: sick"; exit 1; }\nexit 0\n' "$tmp/h/r1" \
	>"$tmp/h/r1/post-boot.d/10-health"
chmod +x "$tmp/h/r1/post-boot.d/10-health"; touch "$tmp/h/r1/sick"
host_run r1 2>/dev/null & bg_pids+=($!)
wait_for 30 test -e "$tmp/h/r1/reboot-requested"
etcd_kill s1
wait_for 20 grep -q 'cannot take the slot from before the reboot back yet' "$tmp/h/r1/log"
check "R: etcd down at boot: the slot cannot be taken back yet, and says so" \
	grep -q 'cannot take the slot from before the reboot back yet' "$tmp/h/r1/log"
etcd_member s1 2411 2412 s1=http://127.0.0.1:2412
etcd_healthy "$E" 20 || bail "etcd did not restart on $E"
wait_for 30 grep -q 'took slot .* back after the reboot' "$tmp/h/r1/log"
nap 15
check "R: etcd back: slot taken back and still held 15 s later (TTL 6 s) while the health hook fails" \
	eval 'grep -q "took slot .* back after the reboot" "$tmp/h/r1/log" && [ "$(etcd_slots "$E" /rerand/fleet/resume/)" -eq 1 ] &&
	      grep -qx fleet_held=1 "$tmp/h/r1/state/state"'
rm -f "$tmp/h/r1/sick"
wait_for 30 host_done r1
check "R: healthy again: the slot is given back and the host completes" \
	eval 'host_done r1 && [ "$(etcd_slots "$E" /rerand/fleet/resume/)" -eq 0 ]'
hosts_stop r1

# ---- C: every etcd member down: nobody reboots; all recover when etcd returns -------
fleet_etcd "$tmp/c.fleet" dark 2 6
cids=$(seq -f 'c%g' 1 "$HOSTS")
for id in $cids; do
	host_new "$id" "$tmp/c.fleet"
	outside_windows "$id"
done
etcd_kill s1
tdown=$(now_ms)
for id in $cids; do host_run "$id" & bg_pids+=($!); done
nap "$OUTAGE"
check "C: etcd down ${OUTAGE}s: no host rebooted" eval '! grep -qE "^[0-9]+ c[0-9]+ REBOOT" "$EVENTS"'
bad=0
for id in $cids; do
	ctl "$id" status --json >"$tmp/c-$id.json" 2>/dev/null || bad=1
	grep -qx "rerand_fleet_lock_state{backend=\"etcd\",group=\"dark\",state=\"error\"} 1" "$tmp/h/$id/run/rerand.prom" || bad=1
done
check "C: every host says why: status fleet state error, fail closed; metrics lock state 4" \
	eval '[ $bad = 0 ] && python3 - "$tmp"/c-c*.json <<"EOP"
import json, sys
for p in sys.argv[1:]:
    f = json.load(open(p))["fleet"]
    assert f["state"] == "error" and "fail closed" in f["waiting_because"], (p, f)
    assert f["errors"] >= 2, (p, f)
EOP'
errs=$(for id in $cids; do sed -n 's/^rerand_fleet_errors_total{backend="etcd"} //p' "$tmp/h/$id/run/rerand.prom"; done | sort -n | tr '\n' ' ')
# 200 ms doubling to a 2 s cap: about OUTAGE/2 s + 4 tries, never one a tick
check "C: retries back off: errors per host over ${OUTAGE}s: $errs" \
	eval '( for e in $errs; do [ "$e" -ge 3 ] && [ "$e" -le $((OUTAGE + 8)) ] || exit 1; done )'
ctl c1 status >"$tmp/c1.txt"
check "C: rerand status names the unreachable backend" grep -q 'fleet wait: .*backend unreachable, not rebooting (fail closed): .*etcd: no endpoint answered' "$tmp/c1.txt"
etcd_member s1 2411 2412 s1=http://127.0.0.1:2412
tup=$(now_ms)
python3 "$top/tests/fleet/observer.py" "$E" /rerand/fleet/dark/ "$tmp/obs-c.log" & bg_pids+=($!)
obs_c=$!
wait_for 120 hosts_done $cids
tcd=$(now_ms)
wait_for 10 obs_caught_up "$tmp/obs-c.log" 0; kill "$obs_c" 2>/dev/null
cmax=$(obs_max "$tmp/obs-c.log")
check "C: etcd back: all $HOSTS hosts completed, $((tcd - tup)) ms after the restart" hosts_done $cids
check "C: and never more than 2 at once (observer max $cmax)" eval '[ "$cmax" -le 2 ] && [ "$cmax" -ge 1 ]'
check "C: every reboot command ran while etcd said the host held a slot ($(reboots_held $cids))" \
	test "$(reboots_held $cids)" = "$HOSTS of $HOSTS"
check "C: after recovery the fleet state is idle again" eval 'ctl c1 status --json | grep -q "\"state\":\"idle\""'
hosts_stop $cids
echo "# C: outage ${OUTAGE}s, recovery of $HOSTS hosts in $((tcd - tup)) ms ($(elapsed))"
etcd_kill s1

# ---- Q: a 3-member etcd cluster (127.0.0.1:2421-2426, data in temp dirs) -------------
# Every host lists all three members.  Q1: one member is killed while a holder is in
# its reboot, first a follower, then the raft leader; each time it is the member
# every host talks to first.  Q2: all three are killed while one host drains and the
# others are about to become due: no reboot happens until the members are back, then
# every host completes.
etcd_healthy "$QEP" 30 || bail "the 3-member etcd cluster did not start on $QEP"
qleader() { # [ENDPOINTS]: the member name of the raft leader, as the members report it
	etcdctl --endpoints="${1:-$QEP}" --dial-timeout=1s --command-timeout=2s endpoint status -w json 2>/dev/null |
		python3 -c 'import json,sys
try:
    members = json.load(sys.stdin)
except ValueError:
    members = []    # no member answered
for s in members:
    st = s.get("Status") or {}
    # no "leader" while an election runs (etcd omits zero fields)
    if st.get("leader") and st.get("header", {}).get("member_id") == st["leader"]:
        print("m%d" % ((int(s["Endpoint"].rsplit(":", 1)[1]) - 2419) // 2)); break'
}
# sockets_loopback: every TCP/UDP socket of every process of this test, as ss sees
# them by pid, is on 127.0.0.1 at both ends; prints "SOCKETS BAD PROCESS-NAMES"
sockets_loopback() {
	ss -Htuanp >"$tmp/ss.txt" 2>/dev/null
	scan_ours
	python3 - "$tmp/ss.txt" "${ours[@]}" <<'EOP'
import re, sys
ours = set(sys.argv[2:]); n = bad = 0; procs = set()
for line in open(sys.argv[1]):
    f = line.split()
    pids = set(re.findall(r"pid=(\d+)", line)) & ours
    if len(f) < 6 or not pids:
        continue
    n += 1; procs |= set(re.findall(r'\("([^"]+)",pid=(?:%s),' % "|".join(pids), line))
    local, peer = f[4].rsplit(":", 1)[0], f[5].rsplit(":", 1)[0]
    idle = f[1] in ("LISTEN", "UNCONN") and peer in ("0.0.0.0", "*", "[::]")
    if local != "127.0.0.1" or not (idle or peer == "127.0.0.1"):
        bad += 1; print("#   not loopback:", line.strip())
print(n, bad, ",".join(sorted(procs)))
EOP
}
# fleet_trouble IDS...: the fleet warnings and errors the hosts logged (every
# process of a host appends to its log; the metrics counter restarts with rerandd)
fleet_trouble() { local id; for id in "$@"; do grep -h '^<[34]>fleet' "$tmp/h/$id/log"; done | wc -l; }

# q_kill TAG GROUP follower|leader: 6 (12) hosts against the cluster, one member killed
q_kill() {
	local tag=$1 group=$2 which=$3 lead victim eps m ids id obs t0 tk td left after qmax took trouble alive nl
	lead=$(qleader)
	[ -n "$lead" ] || bail "$tag: the cluster reports no leader"
	victim=$lead
	[ "$which" = follower ] && for m in m1 m2 m3; do [ "$m" = "$lead" ] || { victim=$m; break; }; done
	# the victim is every host's first endpoint: its death must be survived by failover
	eps="127.0.0.1:$(qport "$victim")"
	for m in m1 m2 m3; do [ "$m" = "$victim" ] || eps="$eps, 127.0.0.1:$(qport "$m")"; done
	fleet_etcd "$tmp/$tag.fleet" "$group" 2 "$RTTL" "$eps"
	python3 "$top/tests/fleet/observer.py" "$QEP" "/rerand/fleet/$group/" "$tmp/obs-$tag.log" & bg_pids+=($!)
	obs=$!
	wait_for 10 test -s "$tmp/obs-$tag.log"
	ids=$(seq -f "${tag}h%g" 1 "$HOSTS")
	for id in $ids; do host_new "$id" "$tmp/$tag.fleet"; outside_windows "$id"; done
	unsafe=0; for id in $ids; do conf_harmless "$id" || unsafe=1; done
	check "$tag: every instance's config is harmless and lists the 3 members ($eps)" \
		eval '[ $unsafe = 0 ] && [ "$(grep -hx "Endpoints=$eps" "$tmp"/h/${tag}h*/rerand.conf | wc -l)" -eq $HOSTS ]'
	t0=$(now_ms)
	for id in $ids; do host_run "$id" & bg_pids+=($!); done
	# mid-run: the first holder has just asked for its reboot and is "down", its lease held
	wait_for 60 grep -qE "^[0-9]+ ${tag}h[0-9]+ REBOOT$" "$EVENTS"
	etcd_kill "$victim"; tk=$(now_ms)
	left=$(( HOSTS - $(hosts_count_done $ids) ))
	if [ "$which" = leader ]; then
		# how long the survivors take to elect a new leader (polled, about 0.1 s steps)
		alive=""; for m in m1 m2 m3; do [ "$m" = "$victim" ] || alive="$alive${alive:+,}127.0.0.1:$(qport "$m")"; done
		wait_for 20 eval 'nl=$(qleader "$alive"); [ -n "$nl" ]'
		echo "# $tag: the survivors elected $nl $(( $(now_ms) - tk )) ms after the leader was killed"
	fi
	if [ "$which" = follower ]; then
		# everything runs now: 2 members, 2N rerandd, observers, the FleetLock server
		read -r nsock nbad socknames < <(sockets_loopback | tee "$tmp/sock.txt" | tail -1)
		# rerandd itself has none: the network is rerand-fleetd's
		check "loopback only: $nsock TCP/UDP sockets of this test's processes ($socknames), all 127.0.0.1 at both ends; none is rerandd's" \
			eval '[ "${nbad:-1}" = 0 ] && [ "${nsock:-0}" -ge 10 ] && [[ ",$socknames," == *,etcd,*,rerand-fleetd,* ]] && [[ ",$socknames," != *,rerandd,* ]]' ||
			grep '^#' "$tmp/sock.txt"
	fi
	wait_for 120 hosts_done $ids
	td=$(now_ms)
	wait_for 10 obs_caught_up "$tmp/obs-$tag.log" "$HOSTS"; kill "$obs" 2>/dev/null
	qmax=$(obs_max "$tmp/obs-$tag.log")
	after=$(awk -v t="$tk" '$1 > t && $4 == "PUT"' "$tmp/obs-$tag.log" | wc -l)
	took=0; for id in $ids; do grep -q 'fleet: took slot .* back after the reboot' "$tmp/h/$id/log" && took=$((took + 1)); done
	trouble=$(fleet_trouble $ids)
	# the longest simulated reboot: from its request to rerandd's start again
	rbt=$(awk -v p="^${tag}h[0-9]+\$" '$2 ~ p && $3 == "REBOOT" { r[$2] = $1 }
		$2 ~ p && $3 == "BOOT" && ($2 in r) { d = $1 - r[$2]; if (d > m) m = d; delete r[$2] } END { print m + 0 }' "$EVENTS")
	check "$tag: the $which ($victim) killed with $left of $HOSTS hosts unfinished; all completed $((td - tk)) ms later" \
		eval 'hosts_done $ids && [ "$left" -ge 2 ]'
	check "$tag: the two survivors kept serving: $after slots taken after the kill" test "$after" -ge 1
	check "$tag: the etcd observer never saw more than 2 holders (max $qmax)" eval '[ "$qmax" -le 2 ] && [ "$qmax" -ge 1 ]'
	check "$tag: each host rebooted exactly once" test "$(grep -cE "^[0-9]+ ${tag}h[0-9]+ REBOOT$" "$EVENTS")" -eq "$HOSTS"
	check "$tag: every reboot command ran while etcd said the host held a slot ($(reboots_held $ids))" \
		test "$(reboots_held $ids)" = "$HOSTS of $HOSTS"
	check "$tag: every slot was given back (group empty on the survivors)" \
		test "$(etcd_keys "$QEP" "/rerand/fleet/$group/")" -eq 0
	if [ "$which" = follower ]; then
		check "$tag: nothing changed: every host took its slot back after its reboot ($took of $HOSTS; longest reboot $rbt ms, LockTTL ${RTTL} s), no fleet warning or error ($trouble)" \
			eval '[ $took -eq $HOSTS ] && [ $trouble -eq 0 ]' ||
			for id in $ids; do grep -H '^<[34]>fleet' "$tmp/h/$id/log" | sed 's/^/#   /'; done
	else
		# no quorum until a new leader is elected (etcd's election timeout is 1 s):
		# a keepalive then fails on every endpoint, and a draining host fails closed,
		# gives its slot back and tries again; nobody reboots twice or unconfirmed
		# (the check above shows that no host rebooted on a failed keepalive)
		nab=$(cat "$tmp"/h/${tag}h*/log | grep -c 'slot is not confirmed (backend unreachable): not rebooting')
		echo "# $tag: $nab drains met the election and were retried; $trouble fleet warnings or errors; $took of $HOSTS hosts took their slot back after the reboot"
		for id in $ids; do grep -h '^<[34]>fleet' "$tmp/h/$id/log"; done | sed 's/ (3 tried.*//' | sort | uniq -c | sed 's/^ */#   /'
	fi
	echo "# $tag: $which $victim killed; max concurrency $qmax of 2; $HOSTS hosts done $((td - t0)) ms after start, $((td - tk)) ms after the kill; fleet warnings/errors logged: $trouble ($(elapsed))"
	hosts_stop $ids
	qstart "$victim"
	etcd_healthy "$QEP" 30 || bail "member $victim did not rejoin"
}
q_kill Q1f quorum follower
q_kill Q1l quorum2 leader

# Q2: all members down
fleet_etcd "$tmp/q2.fleet" dark3 2 6 "$QEP"
python3 "$top/tests/fleet/observer.py" "$QEP" /rerand/fleet/dark3/ "$tmp/obs-q2.log" & bg_pids+=($!)
obs_q2=$!
wait_for 10 test -s "$tmp/obs-q2.log"
oids=$(seq -f 'o%g' 1 "$HOSTS")
for id in $oids; do host_new "$id" "$tmp/q2.fleet"; outside_windows "$id"; done
# o1 is due now and drains slowly: its pre-reboot hook waits for the test
# (up to 45 s by the clock, under its HookTimeout: the others start meanwhile)
printf '#!/bin/sh\ntouch %s/in-hook\nend=$(($(date +%%s) + 45))\nwhile [ "$(date +%%s)" -lt "$end" ]; do [ -e %s/go ] && exit 0; sleep 0.1; done\nexit 0\n' \
	"$tmp/h/o1" "$tmp/h/o1" >"$tmp/h/o1/pre-reboot.d/10-drain"
sed -i 's/^HookTimeout=.*/HookTimeout=60s/' "$tmp/h/o1/rerand.conf"
chmod +x "$tmp/h/o1/pre-reboot.d/10-drain"
unsafe=0; for id in $oids; do conf_harmless "$id" || unsafe=1; done
check "Q2: every instance's config is harmless" test $unsafe = 0
host_run o1 & bg_pids+=($!)
wait_for 30 test -e "$tmp/h/o1/in-hook"
# the others start while etcd answers (their start-up release succeeds) and become
# due a few seconds later, inside the outage; the members go down when all are up,
# or at the latest a second before they become due
# (up: each one's start-up release answered, so its fleet state is idle; starting
# five rerandd and five helpers takes a few seconds idle and over ten at load 20)
# (At load 15 one pass of oup, five `rerand status` calls, took over 2.5 s and
# the members went down 3.3 s after the hosts became due: a wider margin.)
odue=0
for id in $(seq -f 'o%g' 2 "$HOSTS"); do odue=$(host_due_in "$id" $((20 + HOSTS / 2))); done
for id in $(seq -f 'o%g' 2 "$HOSTS"); do host_run "$id" & bg_pids+=($!); done
oidle() { ctl "$1" status --json 2>/dev/null | grep -q '"state":"idle"'; }
oup() { local id; for id in $(seq -f 'o%g' 2 "$HOSTS"); do oidle "$id" || return 1; done; }
while ! oup && [ "$(now_ms)" -lt $((odue - 6000)) ]; do sleep 0.2; done
nup=0; for id in $(seq -f 'o%g' 2 "$HOSTS"); do oidle "$id" && nup=$((nup + 1)); done
etcd_kill m1; etcd_kill m2; etcd_kill m3
tdown=$(now_ms)
check "Q2: all three members down ($((odue - tdown)) ms before the hosts became due; $nup of $((HOSTS - 1)) others up and idle) while o1 holds a slot and drains" \
	eval '[ $tdown -lt $odue ] && [ $nup -eq $((HOSTS - 1)) ] && [ "$(grep -c "^fleet_held=1" "$tmp/h/o1/state/state")" -eq 1 ]'
touch "$tmp/h/o1/go"
nap $(( (odue - $(now_ms)) / 1000 + QOUT ))
tup=$(now_ms)
bad=0
for id in $oids; do
	ctl "$id" status --json >"$tmp/q2-$id.json" 2>/dev/null || bad=1
	grep -qx "rerand_fleet_lock_state{backend=\"etcd\",group=\"dark3\",state=\"error\"} 1" "$tmp/h/$id/run/rerand.prom" || bad=1
done
rb=$(for id in $oids; do host_reboots "$id"; done | wc -l)
check "Q2: down $((tup - tdown)) ms: no host's reboot command ran (reboot logs: $rb entries)" test "$rb" -eq 0
check "Q2: the draining host did not reboot: its last keepalive failed (fail closed)" \
	grep -q 'slot is not confirmed (backend unreachable): not rebooting (fail closed)' "$tmp/h/o1/log"
check "Q2: every host says why: fleet state error, fail closed, all 3 endpoints tried; metrics lock state 4" \
	eval '[ $bad = 0 ] && python3 - "$tmp"/q2-o*.json <<"EOP"
import json, sys
for p in sys.argv[1:]:
    f = json.load(open(p))["fleet"]
    assert f["state"] == "error" and "fail closed" in f["waiting_because"], (p, f)
    assert "no endpoint answered (3 tried" in f["waiting_because"] and f["errors"] >= 2, (p, f)
EOP'
# 200 ms doubling to a 2 s cap with jitter: a handful of tries, no tight loop.  Each
# host counts from when it first needed etcd: o1 from the kill (its confirm), the
# others from when they became due (before that they have nothing to ask), until
# now: the restarted members answer only once they have a leader, so a try
# between the restart and now can fail too (12 against a limit counted to the
# restart was seen at load 10).
errs=""; ebad=0; tread=$(now_ms)
for id in $oids; do
	e=$(sed -n 's/^rerand_fleet_errors_total{backend="etcd"} //p' "$tmp/h/$id/run/rerand.prom")
	if [ "$id" = o1 ]; then lim=$(( (tread - tdown) / 1000 + 6 )); else lim=$(( (tread - odue) / 1000 + 6 )); fi
	errs="$errs$id ${e:-none} (at most $lim), "
	[ -n "$e" ] && [ "$e" -ge 2 ] && [ "$e" -le "$lim" ] || ebad=1
done
check "Q2: retries back off: errors per host: ${errs%, }" test "$ebad" = 0
ctl o2 status >"$tmp/o2.txt" 2>&1
check "Q2: rerand status names the unreachable backend" \
	grep -q 'fleet wait: .*backend unreachable, not rebooting (fail closed): .*etcd: no endpoint answered (3 tried' "$tmp/o2.txt" ||
	{ sed 's/^/#   /' "$tmp/o2.txt"; grep fleet "$tmp/h/o2/log" | tail -5 | sed 's/^/#   /'; }
qstart m1 m2 m3
etcd_healthy "$QEP" 30; thealthy=$(now_ms)
wait_for 120 hosts_done $oids
trec=$(now_ms)
wait_for 10 obs_caught_up "$tmp/obs-q2.log" "$HOSTS"; kill "$obs_q2" 2>/dev/null
q2max=$(obs_max "$tmp/obs-q2.log")
check "Q2: members back: all $HOSTS hosts completed $((trec - tup)) ms after the restart (cluster healthy after $((thealthy - tup)) ms)" \
	hosts_done $oids
early=$(for id in $oids; do host_reboots "$id"; done | awk -v t="$tup" '$1 < t' | wc -l)
first=$(for id in $oids; do host_reboots "$id"; done | sort -n | head -1)
check "Q2: the reboot logs: one reboot per host, none before the members came back (first $(( ${first:-0} - tup )) ms after)" \
	eval '[ "$early" -eq 0 ] && [ "$(for id in $oids; do host_reboots "$id"; done | wc -l)" -eq $HOSTS ]'
check "Q2: every reboot command ran while etcd said the host held a slot ($(reboots_held $oids))" \
	test "$(reboots_held $oids)" = "$HOSTS of $HOSTS"
check "Q2: never more than 2 holders, outage included (observer max $q2max, saw all $HOSTS hosts take a slot)" \
	eval '[ "$q2max" -le 2 ] && [ "$q2max" -ge 1 ] && [ "$(awk '"'"'$4 == "PUT" { print $6 }'"'"' "$tmp/obs-q2.log" | sort -u | wc -l)" -eq $HOSTS ]'
check "Q2: after recovery the fleet state is idle again and the group is empty" \
	eval 'ctl o1 status --json | grep -q "\"state\":\"idle\"" && [ "$(etcd_keys "$QEP" /rerand/fleet/dark3/)" -eq 0 ]'
hosts_stop $oids
echo "# Q2: outage $((tup - tdown)) ms, max concurrency $q2max of 2; recovery of $HOSTS hosts in $((trec - tup)) ms after the restart ($(elapsed))"

# ---- W: results ----------------------------------------------------------------------
wait_for $(( wopen + WLEN + 40 - $(date +%s) )) hosts_done $wids
curl -s "$FL/debug/state" >"$tmp/fl.json"
twd=$(python3 -c "import json; print(max([t for t,k,i in json.load(open('$tmp/fl.json'))['log'] if k=='unlock' and i.startswith('machine-w')] or [0]))")
check "W: all $HOSTS FleetLock hosts completed inside the window ($(hosts_count_done $wids) done)" hosts_done $wids
first=$(grep -hE '^[0-9]+ w[0-9]+ REBOOT' "$EVENTS" | sort -n | head -1 | cut -d' ' -f1)
check "W: no host rebooted before the window opened (first reboot $(( ${first:-0} - wopen * 1000 )) ms after it)" \
	eval '[ -n "$first" ] && [ "$first" -ge $((wopen * 1000)) ]'
check "W: the server granted no lock before the window and never more than 2 at once" \
	python3 -c "import json,sys; s=json.load(open('$tmp/fl.json'))
locks=[t for t,k,i in s['log'] if k=='lock' and i.startswith('machine-w')]
assert len(locks)>=$HOSTS and min(locks) >= $wopen*1000 and s['max_seen']<=2 and s['rejected']==0, s"
spreads=$(for id in $wids; do sed -n 's/.*fleet: first attempt in \([0-9]*\) ms.*/\1/p' "$tmp/h/$id/log" | head -1; done | sort -n | tr '\n' ' ')
check "W: due hosts spread their first attempts over the window's first half (ms: $spreads)" \
	eval 'set -- $spreads; [ $# -eq $HOSTS ] && [ "${!#}" -le $((WLEN * 500)) ] && [ $(( ${!#} - $1 )) -ge 1000 ]'
check "W: every host gave its FleetLock slot back (steady-state)" \
	python3 -c "import json,sys; s=json.load(open('$tmp/fl.json')); assert s['holders'].get('edge')==[], s"
j=$(fstatus w1)
check "W: rerand fleet status on FleetLock explains the protocol cannot list holders" grep -q 'cannot list holders; this host (machine-w1~[0-9a-f]*) is idle' <<<"$j"
echo "# W: window $(date -u -d "@$wopen" +%H:%M) UTC; last slot given back $(( twd - wopen * 1000 )) ms after it opened ($(elapsed))"
hosts_stop $wids

check "no instance was started with an unsafe config" test "$(grep -c UNSAFE_CONFIG "$EVENTS")" -eq 0

# ---- teardown: the clean-up the EXIT trap also runs leaves nothing behind ------------
nstarted=$(grep -c ' BOOT ' "$EVENTS")
{ kill_ours; krc=$?; wait; } 2>/dev/null
ps -eo pid=,comm=,args= >"$tmp/ps.txt"
leftover=$(grep -F "$tmp" "$tmp/ps.txt" | awk '$2 == "etcd" || $2 == "rerandd" || $2 == "rerand-fleetd" || $2 == "etcdctl"' | wc -l)
busy=""; for p in $PORTS; do port_free "$p" || busy="$busy $p"; done
check "teardown: of $nstarted rerandd starts and every etcd member, none is left (ps: $leftover); ports free (busy:${busy:- none})" \
	eval '[ $krc = 0 ] && [ "$leftover" -eq 0 ] && [ -z "$busy" ]'
echo "# total $(elapsed)"
echo "1..$n"
