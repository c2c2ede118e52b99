#!/bin/bash
# Fencing that survives cloning (issue 39 point 5), against a real etcd
# (Debian's etcd-server, one member on 127.0.0.1:2491-2492, a port range no
# other test uses).  Two "hosts" cloned after a run share the machine id and
# the install id: they are fleet-sim processes (rerand-fleetd's client, the
# same code, driven op by op) with one configuration.  The first takes a slot
# and holds its token (LEASE:SLOT:FENCE, as rerandd persists it); the clone
# can neither adopt it (acquire, resume with a forged or an older token),
# refresh it, move it, nor delete it: the compares are in etcd's txns, and the
# slot's key is checked unchanged (value, lease, mod_revision) in etcd after
# each try.  The original resumes it (a new fence: the token a clone copied
# before is dead).  A clone made while a slot was held, with the current
# token, takes it over by resuming first, and then the stale holder's release
# is refused by etcd.  Then real rerandd and rerand-fleetd with an
# unreadable install id: no slot, no reboot, the file named in the journal
# and in `rerand status`; once the file is fixed, the slot and the reboot.
# Last, the count's guard as this etcd evaluates it: the txn rerand-fleetd
# sends to take a key, with its compare over the semaphore's whole range.
# SIMULATED: only the reboot (KexecBinary=/bin/true, a RebootCommand that
# records the call).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/rerand-fence.XXXXXX)
SIM=$top/build/tests/fleet/fleet-sim
R=$top/build/rerand
RERANDD=$top/build/rerandd
FLEETD=$top/build/rerand-fleetd
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/procfs-fixture.sh"
. "$top/tests/fleet/lib.sh"          # etcd_member, port_free, tests/lib/rerandd.sh
cleanup() {
	exec 2>/dev/null
	etcd_kill s1 KILL
	[ -e "$tmp/fleetd.pid" ] && kill -KILL "$(cat "$tmp/fleetd.pid")"
	rerandd_cleanup
}
trap cleanup EXIT

rerandd_need_bins
[ -x "$FLEETD" ] || bail "$FLEETD is missing: make all"
[ -x "$SIM" ] || bail "$SIM is missing: make fleet-test-helpers"
command -v etcd >/dev/null && command -v etcdctl >/dev/null || bail "etcd/etcdctl missing (Debian: etcd-server etcd-client)"
for p in 2491 2492; do port_free "$p" || bail "port 127.0.0.1:$p is in use"; done

E=127.0.0.1:2491
etcd_member s1 2491 2492 s1=http://127.0.0.1:2492
etcd_healthy "$E" 20 || bail "etcd did not start on $E"

MID=c10e0000000000000000000000000001
IID=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
printf '%s\n' "$MID" >"$tmp/machine-id"
# both "hosts": one configuration, as a clone copies it, install id included;
# two slots, so a clone that got past the checks would find a free one
cat >"$tmp/clone.conf" <<EOF
[Fleet]
Backend=etcd
Group=fence
Endpoints=$E
MaxConcurrent=2
LockTTL=30
DownTTL=90
Timeout=4
MachineIDFile=$tmp/machine-id
InstallID=$IID
EOF
KEY=/rerand/fleet/fence/slot/0
sim() { "$SIM" -c "$tmp/clone.conf" ops "$@" 2>>"$tmp/sim.err"; }
# the slot key as etcd has it: "MOD_REVISION LEASE VALUE" ("none" without it)
slot() {
	etcdctl --endpoints="$E" --command-timeout=4s get "$KEY" -w json 2>/dev/null | python3 -c '
import base64, json, sys
kvs = json.load(sys.stdin).get("kvs") or []
if not kvs: print("none"); sys.exit()
kv = kvs[0]
print(kv["mod_revision"], kv.get("lease", 0), base64.b64decode(kv["value"]).decode())'
}
nslots() { etcd_slots "$E" /rerand/fleet/fence/; }
lease_ttl() { # LEASE_HEX: seconds left, as etcd says
	etcdctl --endpoints="$E" lease timetolive "$1" 2>/dev/null | sed -n 's/.*remaining(\(-\{0,1\}[0-9]*\)s).*/\1/p'
}
field() { awk -v op="$1" '$1 == op { print $2 " " $3; exit }' "$2"; }
fence_of() { echo "${1##*:}"; }
lease_of() { echo "${1%%:*}"; }

# ---- the first host takes a slot ------------------------------------------------
sim acquire >"$tmp/a1"
tokA=$(awk '$1 == "acquire" && $2 == "held" { print $3 }' "$tmp/a1")
check "original: takes slot 0, its token LEASE:SLOT:FENCE with a 32-digit fence ($(lease_of "${tokA:-?}"):0:...)" \
	eval '[[ "$tokA" =~ ^[0-9a-f]+:0:[0-9a-f]{32}$ ]]'
s0=$(slot)
check "original: etcd's slot value is \"MACHINEID~INSTALLID FENCE\", the fence the token's" \
	test "${s0#* * }" = "$MID~$IID $(fence_of "$tokA")"
"$SIM" -c "$tmp/clone.conf" status --json >"$tmp/st.json" 2>>"$tmp/sim.err"
check "status: the holder is shown as MACHINEID~INSTALLID, the fence nowhere in the JSON" \
	eval 'grep -q "\"id\":\"$MID~$IID\"" "$tmp/st.json" && ! grep -q "$(fence_of "$tokA")" "$tmp/st.json"'

# ---- the clone, with nothing persisted (cloned when no slot was held) -------------
sim acquire refresh down release >"$tmp/b1"
sed 's/^/#   clone: /' "$tmp/b1"
check "clone: acquire is refused as an error, not adopted: $(field acquire "$tmp/b1" | cut -c1-90)..." \
	eval 'grep -q "^acquire error etcd: slot 0 of group fence is held by $MID~$IID, this host.s own id, under an acquisition this host does not hold" "$tmp/b1"'
check "clone: refresh and down find nothing held (lost)" \
	eval 'grep -q "^refresh lost etcd: this host holds no slot" "$tmp/b1" && grep -q "^down lost" "$tmp/b1"'
check "clone: neither took a second slot nor changed the first (etcd: $(slot | cut -d" " -f1,2))" \
	eval '[ "$(slot)" = "$s0" ] && [ "$(nslots)" = 1 ]'

# ---- the clone tries the slot's lease with a fence of its own ---------------------
forged=$(lease_of "$tokA"):0:$(head -c16 /dev/urandom | od -An -tx1 | tr -d ' \n')
sim "resume:$forged" refresh down release >"$tmp/b2"
sed 's/^/#   clone: /' "$tmp/b2"
check "clone: a resume with the slot's lease and another fence is refused by etcd's txn" \
	eval 'grep -q "^resume lost .*does not carry this host.s fence (etcd refused the txn)" "$tmp/b2"'
check "clone: after it, refresh, down and release change nothing in etcd (value, lease, revision)" \
	eval '[ "$(slot)" = "$s0" ] && [ "$(nslots)" = 1 ]'
sim "resume:$(lease_of "$tokA"):0" >"$tmp/b3"
check "clone: an older rerand's token (LEASE:SLOT, no fence) is not adopted, the slot unchanged" \
	eval 'grep -q "^resume lost fleet token .* is an older rerand.s (no fence)" "$tmp/b3" && [ "$(slot)" = "$s0" ]'
ttl=$(lease_ttl "$(lease_of "$tokA")")
check "clone: the original's lease was not kept alive by the clone (${ttl:-?} s of 30 left)" \
	eval '[ -n "$ttl" ] && [ "$ttl" -gt 0 ] && [ "$ttl" -lt 30 ]'

# ---- the original resumes: a new lease and a new fence ------------------------------
sim "resume:$tokA" refresh down >"$tmp/a2"
sed 's/^/#   original: /' "$tmp/a2"
tokA2=$(awk '$1 == "resume" && $2 == "held" { print $3 }' "$tmp/a2")
tokA3=$(awk '$1 == "down" && $2 == "held" { print $3 }' "$tmp/a2")
s1=$(slot)
check "original: resumes with its token; the slot gets a new lease and fence, the value says so" \
	eval '[ -n "$tokA2" ] && [ "$(fence_of "$tokA2")" != "$(fence_of "$tokA")" ] &&
	      [ "$(lease_of "$tokA2")" != "$(lease_of "$tokA")" ] && grep -q "^refresh held" "$tmp/a2"'
ttl=$(lease_ttl "$(lease_of "${tokA3:-0}")")
check "original: down moves the slot to a lease of DownTTL= (${ttl:-?} s left), same fence" \
	eval '[ -n "$tokA3" ] && [ "$(fence_of "$tokA3")" = "$(fence_of "$tokA2")" ] && [ "${ttl:-0}" -gt 30 ] &&
	      [ "${s1#* * }" = "$MID~$IID $(fence_of "$tokA3")" ]'
sim "resume:$tokA" >"$tmp/b4"
check "clone made before that resume: the token it copied is dead (lost), the slot unchanged" \
	eval 'grep -q "^resume lost" "$tmp/b4" && [ "$(slot)" = "$s1" ]'

# ---- a clone made while the slot was held, with the current token ------------------
# the original (a running helper) holds tokA4 in memory; the clone resumes the
# same token first and takes the slot over; the original's release after that
# must not delete the clone's slot: etcd refuses the delete
rm -f "$tmp/go"
sim "resume:$tokA3" "wait:$tmp/go" release refresh >"$tmp/a3" &
apid=$!
wait_for 20 grep -q '^resume ' "$tmp/a3"
tokA4=$(awk '$1 == "resume" && $2 == "held" { print $3 }' "$tmp/a3")
sim "resume:$tokA4" >"$tmp/b5"
tokB=$(awk '$1 == "resume" && $2 == "held" { print $3 }' "$tmp/b5")
sB=$(slot)
touch "$tmp/go"
wait "$apid"
sed 's/^/#   original: /' "$tmp/a3"
check "cloned while held: of two holders of one token, the first to resume gets the slot" \
	eval '[ -n "$tokA4" ] && [ -n "$tokB" ] && [ "${sB#* * }" = "$MID~$IID $(fence_of "$tokB")" ]'
check "cloned while held: the stale holder's release is refused by etcd, the other's slot stays" \
	eval '[ "$(slot)" = "$sB" ] && grep -q "^refresh lost" "$tmp/a3"'
sim "resume:$tokB" release >"$tmp/b6"
check "the holder with the current token releases: no slot key left" \
	eval 'grep -q "^release released" "$tmp/b6" && [ "$(slot)" = none ]'

# ---- rerandd with an unreadable install id: fail closed --------------------------
rerandd_pick_kernel
SD=$tmp/setup_data
rerandd_randomized_sd "$SD"
hd=$tmp/h
fleet_one_host "$hd" machine-fence fence-d "$E" "HelperSocket=$hd/run/fleet.sock"
IIDF=$hd/state/fleet-install-id
echo not-an-install-id >"$IIDF"
ctl() { RERAND_CONTROL_SOCKET=$hd/run/control "$R" "$@"; }
"$FLEETD" --socket "$hd/run/fleet.sock" >>"$hd/fleetd.log" 2>&1 &
echo $! >"$tmp/fleetd.pid"
rerandd_up "$hd"
wait_for 120 eval 'ctl status 2>/dev/null | grep -q "^staged: *yes"' ||
	bail "rerandd did not stage: $(tail -3 "$hd/log")"
ctl now >/dev/null || bail "rerand now failed"
wait_for 20 eval 'ctl status 2>/dev/null | grep -q "^fleet wait: *no install id"'
sleep 3
ctl status >"$tmp/status.txt" 2>&1
sed -n 's/^\(fleet wait:.*\)/#   \1/p' "$tmp/status.txt"
check "no install id: rerand status says why, naming the file, not rebooting (fail closed)" \
	eval 'grep -q "^fleet wait: *no install id ($IIDF: not an install id.*no slot, no reboot (fail closed)" "$tmp/status.txt"'
check "no install id: the journal says it at error level, naming the file" \
	eval 'grep -q "fleet: no install id ($IIDF: not an install id" "$hd/log"'
check "no install id: no reboot, no slot key in etcd, the helper never opened" \
	eval '[ ! -e "$hd/reboot-called" ] && [ "$(etcd_slots "$E" /rerand/fleet/fence-d/)" = 0 ] &&
	      ! grep -q "Backend=etcd\|group fence-d" "$hd/fleetd.log"'
rm -f "$IIDF"
wait_for 30 test -e "$hd/reboot-called"
v=$(etcdctl --endpoints="$E" get --prefix /rerand/fleet/fence-d/slot/ --print-value-only)
check "install id made again (file removed): the slot is taken as machine id ~ new install id, the reboot goes out" \
	eval '[ -e "$hd/reboot-called" ] && [ -s "$IIDF" ] &&
	      [[ "$v" =~ ^machine-fence~$(cat "$IIDF")\ [0-9a-f]{32}$ ]]'
check "the journal shows the token without its fence" \
	eval 'grep -q "fleet: slot taken [0-9a-f]*:0$" "$hd/log" && ! grep -q "${v##* }" "$hd/log"'

# ---- the count's guard, as this etcd evaluates it ---------------------------------
# rerand-fleetd counts the holders in [G/holder/, G/slot0) at revision R and
# takes its key only in a txn whose compare says no key of that range has a
# mod_revision above R (Compare.range_end; etcd's applyCompare checks every
# key of the range, an empty range as one key of revision 0).  The txn as
# rerand-fleetd builds it (fleet_etcd_acquire_body, printed by fleet-sim),
# sent to the JSON gateway.
GB=/rerand/fleet/guard/
b64() { printf '%s' "$1" | base64 -w0; }
gw() { curl -s --max-time 4 "http://$E$1" -d "$2"; }
rev_now() { # the revision a range read of the semaphore's range answers with
	gw /v3/kv/range "{\"key\":\"$(b64 "${GB}holder/")\",\"range_end\":\"$(b64 "${GB}slot0")\"}" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["header"]["revision"])'
}
take() { # KEY REV: "true" if the guarded create of KEY succeeded; the body is
	# rerand-fleetd's own (fleet_etcd_acquire_body, through fleet-sim)
	local body
	body=$("$SIM" acquire-body "$1" x "${GB}holder/" "${GB}slot0" "$2") || return 1
	gw /v3/kv/txn "$body" | python3 -c 'import json, sys; print(str(json.load(sys.stdin).get("succeeded", False)).lower())'
}
ectl() { etcdctl --endpoints="$E" --command-timeout=4s "$@" >/dev/null 2>&1; }
r0=$(rev_now)
check "guard: over an empty range the compare holds (the first host takes its key)" \
	eval '[ "$(take "${GB}holder/h1" "$r0")" = true ]'
r1=$(rev_now)
ectl put "${GB}holder/h2" x
check "guard: a key created in the range after the count fails the txn (nothing written)" \
	eval '[ "$(take "${GB}holder/h3" "$r1")" = false ] && [ "$(etcd_slots "$E" "$GB")" = 2 ]'
ectl put "${GB}slot/0" x
r2=$(rev_now)
ectl put "${GB}slot/0" y
check "guard: a numbered slot of an older rerand, written after the count, fails it too" \
	eval '[ "$(take "${GB}holder/h3" "$r2")" = false ]'
r3=$(rev_now)
ectl del "${GB}holder/h1"
check "guard: a key deleted after the count does not fail it (a delete only frees a place)" \
	eval '[ "$(take "${GB}holder/h3" "$r3")" = true ] && [ "$(etcd_slots "$E" "$GB")" = 3 ]'
echo "1..$n"
