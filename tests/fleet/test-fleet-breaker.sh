#!/bin/bash
# The fleet's group-wide breaker and the slot across a confirmation (issue 22,
# item 4), as rerandd and rerand-fleetd run: real build/rerandd and
# build/rerand-fleetd instances as simulated hosts (tests/fleet/daemon-lib.sh)
# against a real etcd on loopback (Debian's etcd-server, one member on
# 127.0.0.1:2461-2462, a port range no other test uses; data in a temp dir).
# SIMULATED: the reboot only (kexec-tools is /bin/true, RebootCommand= and
# FirmwareRebootCommand= only ask the host's runner to restart rerandd with a
# new boot id), and the failed boots of hosts a and b, which start from a
# state file saying their last rerandomized boot was never confirmed.
#   breaker: a and b report their failures to the group; the second trips
#     the breaker (BreakerFailures=2): c, due, takes no slot; its status names
#     the hosts and causes, its metric says 1, each journal says it once,
#     `rerand due` (kured's sentinel) says not due;
#     `rerand fleet clear-breaker` on c clears it, and c then reboots with
#     the slot.
#   confirm: a rerandomized boot keeps its slot while post-boot.d runs,
#     runs post-boot.d once, and gives the slot back after it passed.
#   failed: a boot whose post-boot check fails goes back through the
#     firmware; the next boot keeps the slot in the group (left to DownTTL=)
#     and the failure is recorded for the group.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/rerand-breaker.XXXXXX)
R=$top/build/rerand
RERANDD=$top/build/rerandd
FLEETD=$top/build/rerand-fleetd
EVENTS=$tmp/events.log
SIMREBOOT=$tmp/sim-reboot
SD=$tmp/setup_data
DOWN=1
. "$top/tests/lib/tap.sh"
. "$top/tests/fleet/lib.sh"
. "$top/tests/lib/procfs-fixture.sh"
. "$top/tests/fleet/daemon-lib.sh"
cleanup() {
	local f p
	for f in "$tmp"/h/*; do [ -d "$f" ] && touch "$f/stop"; done
	sleep 0.5
	for f in "$tmp"/h/*/fleetd.pid; do [ -e "$f" ] && kill -KILL "$(<"$f")" 2>/dev/null; done
	for p in "${bg_pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	etcd_kill b1
	rerandd_cleanup
}
bg_pids=()
trap cleanup EXIT

rerandd_need_bins "$FLEETD"
rerandd_need_builder "rerandd's control socket answers root only"
command -v etcd >/dev/null && command -v etcdctl >/dev/null || bail "etcd/etcdctl missing (Debian: etcd-server etcd-client)"
rerandd_pick_kernel
for p in 2461 2462; do port_free "$p" || bail "port 127.0.0.1:$p is in use"; done
chmod 0755 "$tmp"

rerandd_prebuilt_image
# the record the stage leaves in a randomized boot (format as in test-cli.sh)
rerandd_randomized_sd "$SD"
# the simulated reboot (both kinds): the runner restarts rerandd with a new boot id
sim_reboot_recorder test-fleet-breaker.sh

E=http://127.0.0.1:2461
etcd_member b1 2461 2462 b1=http://127.0.0.1:2462
etcd_healthy "$E" 30 || bail "etcd did not start on $E"
keys() { etcd_keys "$E" "$1"; }
# fleet GROUP FILE [LOCKTTL DOWNTTL]: the [Fleet] section, short TTLs (that
# still outlast a simulated reboot on a loaded machine) and back-off
fleet() {
	printf '[Fleet]\nBackend=etcd\nEndpoints=%s\nGroup=%s\nMaxConcurrent=1\nLockTTL=%s\nDownTTL=%s\nTimeout=2s\nRetryBase=300ms\nRetryMax=1500ms\nBreakerFailures=2\nBreakerWindowSec=1h\n' \
		"$E" "$1" "${3:-8s}" "${4:-40s}" >"$2"
}
st() { ctl "$1" status 2>&1; }
prom() { grep -qxF "$2" "$tmp/h/$1/run/rerand.prom" 2>/dev/null; }
# failed_before ID: the state of a host whose last rerandomized boot reached
# rerandd and was never confirmed (it hung, and a reset brought it back)
failed_before() {
	local old
	old=$(cat /proc/sys/kernel/random/uuid | tr -d -)
	printf 'version=1\nboot_id=%s\nattempt=0\nattempt_boot_id=\nfailures=0\nhold=0\nfleet_keep=0\nconfirm_pending=1\nconfirm_boot_id=%s\nphase=idle\n' "$old" "$old" \
		>"$tmp/h/$1/state/state"
	# not due: this boot began now
	procfs_fixture "$tmp/h/$1/stat" "btime $(date +%s)"$'\n'
}
start() { fleetd_start "$tmp/h/$1"; rerandd_start "$tmp/h/$1"; rerandd_wait_up "$tmp/h/$1"; }
stop() { local h; for h in "$@"; do kill -TERM "$(<"$tmp/h/$h/pid")" 2>/dev/null; fleetd_stop "$tmp/h/$h" TERM; done; }

# d and f run in groups of their own while the breaker is tested (time)
# ---- confirm: the slot is held until post-boot.d passed; it runs once -------------------
fleet cf "$tmp/cf.fleet"
host_new d "$tmp/cf.fleet"
outside_windows d
# runs once per boot at most; waits for the test to let it pass
printf '#!/bin/sh\necho "$(cat %s/boot_id)" >>%s/hook-runs\nwhile [ ! -e %s/pass ]; do sleep 0.1; done\nexit 0\n' \
	"$tmp/h/d" "$tmp/h/d" "$tmp/h/d" >"$tmp/h/d/post-boot.d/10-check"
chmod +x "$tmp/h/d/post-boot.d/10-check"
host_run d 2>/dev/null & bg_pids+=($!)
# 2 s into the hook (after the reboot): is the slot still held?  Then let it pass.
( wait_for 60 test -s "$tmp/h/d/hook-runs"; sleep 2
  { keys /rerand/fleet/cf/slot/; grep -c "rerandomized boot: confirming" "$tmp/h/d/log"; } >"$tmp/d.during"
  touch "$tmp/h/d/pass" ) & bg_pids+=($!)
# ---- failed: a failed check keeps the slot across the firmware reboot -------------------
# the failed boot took the slot back (LockTTL=) and kept it alive until its
# firmware reboot: 40 s outlast that reboot on a loaded machine
fleet fl "$tmp/fl.fleet" 40s 60s
host_new f "$tmp/fl.fleet" "
[Reboot]
FirmwareRebootCommand=$SIMREBOOT $tmp/h/f firmware"
outside_windows f
# healthy before the rerandomization, sick after it
printf '#!/bin/sh\necho "health: the service did not come back"\nexit 1\n' >"$tmp/h/f/post-boot.d/10-check"
chmod +x "$tmp/h/f/post-boot.d/10-check"
host_run f 2>/dev/null & bg_pids+=($!)
# 2 s into the boot after the firmware reboot: is the slot still in the group?
# and its lease, 2 s apart: running down, no longer kept alive
ttl_left() { etcdctl --endpoints=$E lease timetolive "$1" | grep -o "remaining([0-9]*s)" | tr -dc 0-9; }
( wait_for 90 grep -q "the slot of the failed rerandomization stays in group fl" "$tmp/h/f/log"; sleep 2
  lease=$(etcdctl --endpoints=$E get --prefix /rerand/fleet/fl/slot/ -w json |
	python3 -c 'import json,sys; print("%x" % json.load(sys.stdin)["kvs"][0]["lease"])' 2>/dev/null)
  t1=$(ttl_left "$lease"); sleep 2; t2=$(ttl_left "$lease")
  echo "$lease $t1 $t2" >"$tmp/f.lease"
  keys /rerand/fleet/fl/slot/ >"$tmp/f.after" ) & bg_pids+=($!)
# ---- breaker -----------------------------------------------------------------------
fleet brk "$tmp/brk.fleet"
for id in a b c; do host_new "$id" "$tmp/brk.fleet"; outside_windows "$id"; done
failed_before a
failed_before b
t0=$(date +%s)
start a
wait_for 20 grep -q 'fleet: failure (never-confirmed) recorded for group brk' "$tmp/h/a/log"
check "breaker: a's failure is recorded in etcd under the group ($(keys /rerand/fleet/brk/failures/) record)" \
	eval '[ "$(keys /rerand/fleet/brk/failures/)" = 1 ] && [ "$(keys /rerand/fleet/brk/breaker)" = 0 ]'
rec=$(etcdctl --endpoints=$E get --prefix /rerand/fleet/brk/failures/ | head -2 | tr '\n' ' ')
echo "# etcd: $rec"
check "breaker: the record is ID/TIME = cause, the time the failure was seen" \
	eval '[[ "$rec" =~ ^/rerand/fleet/brk/failures/machine-a~[0-9a-f]{32}/([0-9]+)\ never-confirmed\ $ ]] &&
	      [ "${BASH_REMATCH[1]}" -ge "$t0" ] && [ "${BASH_REMATCH[1]}" -le "$(date +%s)" ]'
check "breaker: the failure is no longer pending in a's state" grep -qx fleet_report=0 "$tmp/h/a/state/state"
start b
wait_for 20 eval '[ "$(keys /rerand/fleet/brk/breaker)" = 1 ]'
check "breaker: b's failure, the second in the window, trips it (the breaker key exists)" \
	eval '[ "$(keys /rerand/fleet/brk/breaker)" = 1 ] && [ "$(keys /rerand/fleet/brk/failures/)" = 2 ]'
# c is due (host_new: its boot began two hours ago, MaxLayoutAge=1h)
start c
wait_for 20 eval 'st c | grep -q "^fleet breaker:     TRIPPED"'
# c's first acquire, once it has staged, is refused
wait_for 40 eval 'st c | grep -q "^fleet wait:        waiting for a slot: etcd: group brk: the breaker is tripped"'
sleep 2
check "breaker: c, due, takes no slot and does not reboot while it is tripped" \
	eval '[ ! -e "$tmp/h/c/reboot.log" ] && [ "$(keys /rerand/fleet/brk/slot/)" = 0 ]'
st c >"$tmp/c.status"
sed -n 's/^/# c: /; /^# c: fleet/p' "$tmp/c.status"
check "breaker: c's status names the hosts and causes, and how to clear it" \
	eval 'grep "^fleet breaker:     TRIPPED: " "$tmp/c.status" | grep -q "machine-a~[0-9a-f]* (never-confirmed)" &&
	      grep "^fleet breaker:" "$tmp/c.status" | grep -q "machine-b~[0-9a-f]* (never-confirmed)" &&
	      grep -q "until .rerand fleet clear-breaker." "$tmp/c.status"'
check "breaker: c's status says why it waits" \
	grep -q '^fleet wait:        waiting for a slot: etcd: group brk: the breaker is tripped' "$tmp/c.status"
# kured's sentinel: not due while the breaker is tripped, so that kured does
# not drain c for a reboot command the gate would refuse
out=$(ctl c due 2>&1); rc=$?
check "breaker: rerand due on c (kured's sentinel) says not due, blocked by the breaker (exit $rc: $out)" \
	eval '[ $rc = 1 ] && [[ "$out" == "not due: layout-age is due but blocked by fleet-breaker "* ]]'
check "breaker: the status shows no address (no run of 8+ hex digits but the ids)" \
	eval '! grep -E "^fleet" "$tmp/c.status" | sed -E "s/machine-[a-z]~[0-9a-f]{32}//g" | grep -qiE "[0-9a-f]{8,}"'
wait_for 10 prom c 'rerand_fleet_breaker_tripped{group="brk"} 1'
check "breaker: c's metric rerand_fleet_breaker_tripped{group=\"brk\"} is 1" prom c 'rerand_fleet_breaker_tripped{group="brk"} 1'
ctl c status --json >"$tmp/c.json" 2>&1
check "breaker: status --json has it too" \
	python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["fleet"]; assert f["breaker"]=="tripped" and "machine-b" in f["breaker_failures"], f' "$tmp/c.json"
check "breaker: each journal says it once (a $(grep -c 'BREAKER TRIPPED' "$tmp/h/a/log"), b $(grep -c 'BREAKER TRIPPED' "$tmp/h/b/log"), c $(grep -c 'BREAKER TRIPPED' "$tmp/h/c/log"))" \
	eval 'for h in b c; do [ "$(grep -c "BREAKER TRIPPED for group brk" "$tmp/h/$h/log")" = 1 ] || exit 1; done'
out=$(ctl c fleet clear-breaker 2>&1); rc=$?
echo "# rerand fleet clear-breaker: $out"
check "clear-breaker: one command clears it, and says what it removed (exit $rc)" \
	eval '[ $rc = 0 ] && [ "$out" = "group brk: breaker cleared; 2 failure records removed" ] &&
	      [ "$(keys /rerand/fleet/brk/breaker)" = 0 ] && [ "$(keys /rerand/fleet/brk/failures/)" = 0 ]'
wait_for 20 test -e "$tmp/h/c/reboot.log"
check "clear-breaker: c then takes the slot and reboots" \
	eval 'grep -q kexec "$tmp/h/c/reboot.log" && grep -q "fleet: slot taken" "$tmp/h/c/log"'
wait_for 10 prom c 'rerand_fleet_breaker_tripped{group="brk"} 0'
check "clear-breaker: the metric is 0 again, the status says ok" \
	eval 'prom c "rerand_fleet_breaker_tripped{group=\"brk\"} 0" && st c | grep -q "^fleet breaker:     ok (0 failures"'
out=$(ctl c fleet clear-breaker 2>&1); rc=$?
check "clear-breaker: again, nothing to clear: says so ($out)" \
	eval '[ $rc = 0 ] && [ "$out" = "group brk: the breaker was not tripped; 0 failure records removed" ]'
stop a b c
# ---- more records than one answer holds (issue 43: the idle look at the breaker
# is one range request over the breaker keys and the failure records, the
# newest 64 first; with more, a breaker key older than all of them is not in
# that answer, and the look must ask for the breaker keys on their own)
now=$(date +%s)
etcdctl --endpoints=$E put /rerand/fleet/brk/breaker/machine-z~0 "the planted breaker key of test-fleet-breaker" >/dev/null
for i in $(seq 1 70); do
	etcdctl --endpoints=$E put "/rerand/fleet/brk/failures/machine-z~0/$((now - 70 + i))" never-confirmed >/dev/null
done
host_new z "$tmp/brk.fleet"
start z
wait_for 30 eval 'st z | grep -q "^fleet breaker:     TRIPPED"'
st z >"$tmp/z.status"
sed -n 's/^/# z: /; /^# z: fleet breaker/p' "$tmp/z.status"
check "breaker: a breaker key older than 70 newer failure records is still seen (the look past one answer)" \
	grep -q '^fleet breaker:     TRIPPED.*the planted breaker key of test-fleet-breaker' "$tmp/z.status"
etcdctl --endpoints=$E del --prefix /rerand/fleet/brk/breaker >/dev/null
etcdctl --endpoints=$E del --prefix /rerand/fleet/brk/failures/ >/dev/null
stop z

wait_for 60 test -s "$tmp/d.during"
check "confirm: after the reboot the slot is still held while post-boot.d runs (2 s in)" \
	test "$(cat "$tmp/d.during" | tr '\n' ' ')" = "1 1 "
wait_for 20 eval '[ "$(keys /rerand/fleet/cf/slot/)" = 0 ]'
check "confirm: confirmed, then the slot is given back" \
	eval '[ "$(keys /rerand/fleet/cf/slot/)" = 0 ] && grep -q "rerandomized boot confirmed" "$tmp/h/d/log" && host_done d'
check "confirm: post-boot.d ran once ($(wc -l <"$tmp/h/d/hook-runs") runs)" test "$(wc -l <"$tmp/h/d/hook-runs")" = 1
hosts_stop d

wait_for 60 test -s "$tmp/f.after"
check "failed: the check failure went back through the firmware ($(cut -d' ' -f2 "$tmp/h/f/reboot.log" | tr '\n' ' '))" \
	eval '[ "$(cut -d" " -f2 "$tmp/h/f/reboot.log" | tr "\n" " ")" = "kexec firmware " ]'
check "failed: the next boot keeps the slot in the group (not given back at start-up)" \
	eval '[ "$(cat "$tmp/f.after")" = 1 ] && grep -q "stays in group fl until its lease runs out (DownTTL=60s" "$tmp/h/f/log"'
check "failed: the failure is recorded for the group as check-failed" \
	eval 'etcdctl --endpoints=$E get --prefix /rerand/fleet/fl/failures/ --print-value-only | grep -qx check-failed'
check "failed: rerand status names the cause" eval 'st f | grep -q "check-failed"'
read -r lease t1 t2 <"$tmp/f.lease"
echo "# the kept slot's lease $lease: ${t1}s, 2 s later ${t2}s left"
check "failed: ... its lease runs down, no longer kept alive by the host" \
	eval '[ -n "$t2" ] && [ "$t1" -le 40 ] && [ "$t2" -lt "$t1" ]'
hosts_stop f
done_
