#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Per-host least privilege in etcd and the fleet's audit trail (issue 39,
# point 12).  etcd (Debian's etcd-server, one member on 127.0.0.1:2471-2472, a
# port range no other test uses) with its authentication on and the roles
# that etc/examples/etcd/rerand-etcd-roles makes: one per host, one admin.
#   - the roles: host a's etcd user cannot remove or forge host b's failure
#     records, clear the breaker (`rerand fleet clear-breaker` on a is refused
#     by etcd itself, and says so), remove b's breaker key, write the old
#     breaker key, or read another group; with its own role a takes its slot,
#     keeps it across its reboot and gives it back; b trips the breaker with
#     its own role; the admin's role clears it;
#   - the semaphore (the group's marker says "holders": each host takes its
#     own key /rerand/fleet/G/holder/ID): a's role cannot delete or overwrite
#     b's holder key, take a numbered slot, or write the marker, and
#     `rerand fleet release` of b on a is refused by etcd itself; the keys a's
#     role may write (under its own holder/ prefix) count as held, so they
#     can only keep c waiting (the group full), never let a K+1st host in;
#     the admin's role frees b's key; a's role can keep b's lease alive (a
#     limit of etcd's, docs/fleet.md); the script's -m (a rolling upgrade)
#     grants the shared slots, and a run without it revokes them;
#   - the journal: each slot, release and breaker operation on a is a native
#     entry with a MESSAGE_ID= of its own and the RERAND_FLEET_* fields, no
#     kernel address in any; systemd/rerand.catalog explains each (journalctl
#     -x) and names every id daemon/rerandd.h defines, as the table in
#     docs/operations.md does.
# REAL: etcd, build/rerandd, build/rerand-fleetd, systemd-journald.
# SIMULATED or standing in, and why:
#  - host a's reboot (tests/fleet/daemon-lib.sh: RebootCommand= asks the
#    host's runner to restart rerandd with a new boot id; kexec-tools is
#    /bin/true): nothing may reboot this machine;
#  - host b is rerand-fleetd driven by tests/fleet/fleetd-ask.py speaking the
#    helper's protocol, as rerandd would (its failure report is one request);
#  - journald runs in a mount namespace of the test's own (unshare -m) over
#    tmpfs /run/systemd, /run/log, /var/log/journal and, for journalctl -x, a
#    catalog database made from systemd/rerand.catalog over
#    /var/lib/systemd/catalog: the host's journal and catalog are not
#    touched; rerandd's stderr is a journald stream (systemd-cat) with
#    JOURNAL_STREAM set by hand, as systemd sets it for a unit.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
if [ -z "${RERAND_ROLES_NS:-}" ]; then
	[ "$(id -u)" = 0 ] || { echo "not ok 1 - run as root: the test runs journald in a mount namespace"; echo "1..1"; exit 1; }
	exec unshare -m --propagation private env RERAND_ROLES_NS=1 "$0" "$@"
fi
tmp=$(mktemp -d /tmp/rerand-roles.XXXXXX)
R=$top/build/rerand
RERANDD=$top/build/rerandd
FLEETD=$top/build/rerand-fleetd
ROLES=${RERAND_TEST_ROLES:-$top/etc/examples/etcd/rerand-etcd-roles}
CATALOG=${RERAND_TEST_CATALOG:-$top/systemd/rerand.catalog}
ASK="python3 $top/tests/fleet/fleetd-ask.py"
EVENTS=$tmp/events.log
SIMREBOOT=$tmp/sim-reboot
SD=$tmp/setup_data
DOWN=1
. "$top/tests/lib/tap.sh"
. "$top/tests/fleet/lib.sh"
. "$top/tests/lib/procfs-fixture.sh"
. "$top/tests/fleet/daemon-lib.sh"
bg_pids=()
cleanup() {
	local f p
	exec 2>/dev/null
	for f in "$tmp"/h/*; do [ -d "$f" ] && touch "$f/stop"; done
	sleep 0.5
	for f in "$tmp"/h/*/fleetd.pid; do [ -e "$f" ] && kill -KILL "$(<"$f")"; done
	for p in "${bg_pids[@]}"; do kill -KILL "$p"; done
	etcd_kill r1
	[ -n "${jpid:-}" ] && kill "$jpid"
	rerandd_cleanup
}
trap cleanup EXIT

rerandd_need_bins "$FLEETD"
rerandd_need_builder "rerandd's control socket answers root only"
for t in etcd etcdctl systemd-cat journalctl python3; do
	command -v $t >/dev/null || bail "$t is missing (Debian: etcd-server etcd-client systemd python3)"
done
JOURNALD=/lib/systemd/systemd-journald
[ -x "$JOURNALD" ] || bail "$JOURNALD is missing (package systemd)"
[ -x "$ROLES" ] || bail "$ROLES is missing or not executable"
rerandd_pick_kernel
for p in 2471 2472; do port_free "$p" || bail "port 127.0.0.1:$p is in use"; done
chmod 0755 "$tmp"

# ---- a journald of this namespace's own, and the catalog for journalctl -x --------
for d in /run/systemd /run/log /var/log/journal /var/lib/systemd/catalog; do
	mount -t tmpfs tmpfs "$d" || bail "cannot mount a tmpfs on $d in the test's namespace"
done
mkdir -p "$tmp/croot/usr/lib/systemd/catalog"
cp "$CATALOG" "$tmp/croot/usr/lib/systemd/catalog/rerand.catalog"
journalctl --root "$tmp/croot" --update-catalog >"$tmp/catalog.out" 2>&1 ||
	bail "journalctl --update-catalog refused $CATALOG: $(tail -3 "$tmp/catalog.out")"
cp "$tmp/croot/var/lib/systemd/catalog/database" /var/lib/systemd/catalog/database
"$JOURNALD" >"$tmp/journald.out" 2>&1 &
jpid=$!
wait_for 10 test -S /run/systemd/journal/stdout || bail "journald did not come up: $(tail -3 "$tmp/journald.out")"
J=(journalctl -D /run/log/journal --no-pager)
# rerandd as a unit runs it: its stderr the journal, JOURNAL_STREAM naming it;
# its stream lines (SYSLOG_IDENTIFIER rerandd-ID) are copied to $hd/log for
# daemon-lib's waits
rerandd_start() {
	local id=${1##*/}
	systemd-cat -t "rerandd-$id" sh -c 'JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2) exec "$@"' sh \
		"$RERANDD" --config "$1/rerand.conf" --config-dir "$1/conf.d" &
	rerandd_pids+=($!)
	echo $! >"$1/pid"
}
hostlog() { "${J[@]}" -t "rerandd-$1" -o cat >"$tmp/h/$1/log" 2>/dev/null; }

# ---- etcd, its users and roles, then its authentication on ---------------------
E=http://127.0.0.1:2471
etcd_member r1 2471 2472 r1=http://127.0.0.1:2472
etcd_healthy "$E" 30 || bail "etcd did not start on $E"
export ETCDCTL_ENDPOINTS=$E
G=/rerand/fleet/rg/
IB=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
BID=machine-b~$IB
for u in ha hb hc hm adm root; do printf 'pw-%s-%s\n' "$u" "$RANDOM" >"$tmp/$u.pw"; chmod 0600 "$tmp/$u.pw"; done
{
	etcdctl user add root --interactive=false <"$tmp/root.pw" &&
	"$ROLES" host rg ha machine-a "$tmp/ha.pw" &&
	"$ROLES" host rg hb machine-b "$tmp/hb.pw" &&
	"$ROLES" host rg hc machine-c "$tmp/hc.pw" &&
	"$ROLES" admin rg adm "$tmp/adm.pw" &&
	"$ROLES" holders rg &&
	"$ROLES" -m host rg hm machine-m "$tmp/hm.pw" && etcdctl role get rerand-rg-host-hm >"$tmp/role-mixed" &&
	"$ROLES" host rg hm machine-m && etcdctl role get rerand-rg-host-hm >"$tmp/role-after" &&
	etcdctl auth enable
} >"$tmp/roles.out" 2>&1 || { sed 's/^/#   /' "$tmp/roles.out"; bail "the roles script or etcdctl failed"; }
etcdctl --user "root:$(cat "$tmp/root.pw")" role get rerand-rg-host-ha | sed 's/^/# role: /'
# as USER: etcdctl with that user's password
# (etcdctl's own retry warnings, JSON lines, left out)
as() {
	local u=$1
	shift
	etcdctl --user "$u:$(cat "$tmp/$u.pw")" --dial-timeout=2s --command-timeout=4s "$@" 2>&1 |
		grep -v '^{"level":"warn"'
}
denied() { grep -q "permission denied" <<<"$1"; }
check "the roles script's password files are never on a command line (no password in its output)" \
	eval '! grep -qF "$(cat "$tmp/ha.pw")" "$tmp/roles.out"'
check "the roles script: -m (a rolling upgrade) grants write on the shared slots; run again without it, that is revoked" \
	eval 'grep -qF "[${G}slot/, " "$tmp/role-mixed" && ! grep -qF "[${G}slot/, " "$tmp/role-after" &&
	      grep -qF "[${G}holder/machine-m~, " "$tmp/role-after"'
out=$("$ROLES" host 'rg/x' ha machine-a 2>&1); rc=$?
check "the roles script refuses a group rerand would not accept, saying which (exit $rc)" \
	eval '[ $rc = 2 ] && grep -q "GROUP .rg/x.: want" <<<"$out"'

# ---- what a's role may write (under its own holder/ prefix) counts as held ---------
# two keys of a's fill the group (MaxConcurrent=2): c, whose own role asks, is
# refused, and no key of c's appears; a K+1st host never gets in through them
for x in x1 x2; do out=$(as ha put "${G}holder/machine-a~$x" "machine-a~$x 00112233445566778899aabbccddeeff"); done
"$FLEETD" --socket "$tmp/c.sock" 2>>"$tmp/c.log" & bg_pids+=($!)
wait_for 30 test -S "$tmp/c.sock" || bail "c's rerand-fleetd did not listen"
cout=$($ASK "$tmp/c.sock" Backend=etcd Group=rg "Endpoints=$E" MaxConcurrent=2 LockTTL=60 Timeout=3 ID=machine-c \
	InstallID=$IB User=hc "PasswordFile=$tmp/hc.pw" -- acquire 2>&1)
echo "# c: $(tr '\n' '|' <<<"$cout")"
check "a cannot let more than K hosts in by writing keys: the keys its role may write count, c is refused (group full)" \
	eval '[ "$out" = OK ] && grep -q "^acquire 0 waiting etcd: group rg is full (2 of 2 slots held)" <<<"$cout" &&
	      [ -z "$(as root get --keys-only --prefix "${G}holder/machine-c~")" ]'
out=$(as ha del --prefix "${G}holder/machine-a~")
check "... and a's role may delete its own keys again ($out)" eval '[ "$out" = 2 ]'

# ---- b: its own role takes a slot and trips the breaker -------------------------
B=(Backend=etcd Group=rg "Endpoints=$E" MaxConcurrent=2 LockTTL=60 DownTTL=90 Timeout=3 ID=machine-b
   "InstallID=$IB" User=hb "PasswordFile=$tmp/hb.pw" BreakerFailures=1 BreakerWindowSec=3600)
"$FLEETD" --socket "$tmp/b.sock" 2>>"$tmp/b.log" & bg_pids+=($!)
wait_for 30 test -S "$tmp/b.sock" || bail "b's rerand-fleetd did not listen"
$ASK "$tmp/b.sock" "${B[@]}" -- acquire "failed:never-confirmed $(date +%s)" wait:"$tmp/b.done" \
	>"$tmp/b.out" 2>&1 & bg_pids+=($!)
wait_for 30 grep -q "^failed" "$tmp/b.out"
sed 's/^/# b: /' "$tmp/b.out"
check "b, with its own role: takes a slot, records its failure and trips the breaker under its own key" \
	eval 'grep -q "^acquire 1 held" "$tmp/b.out" && grep -q "^failed 1 " "$tmp/b.out" &&
	      [ "$(as root get --keys-only --prefix ${G}breaker | grep -c .)" = 1 ] &&
	      as root get --keys-only ${G}breaker/$BID | grep -qx "${G}breaker/$BID"'

# ---- what a's role may not do (etcd refuses) -------------------------------------
rec=$(as root get --keys-only --prefix "${G}failures/" | grep . | head -n 1)
slot=$(as root get --keys-only --prefix "${G}holder/" | grep . | head -n 1)
echo "# b's failure record: $rec; its holder key: $slot"
check "b's place in the semaphore is its own holder key, not a numbered slot" \
	eval '[ "$slot" = "${G}holder/$BID" ] && [ -z "$(as root get --keys-only --prefix "${G}slot/")" ]'
bval=$(as root get --print-value-only "$slot")
# ---- the semaphore: a's role writes its own holder key and nothing else -------------
out=$(as ha del "$slot")
check "a's role cannot delete b's holder key: etcd says permission denied ($out)" \
	eval 'denied "$out" && [ "$(as root get --print-value-only "$slot")" = "$bval" ]'
out=$(as ha put "$slot" "machine-a~x 00112233445566778899aabbccddeeff")
check "a's role cannot overwrite b's holder key ($out)" \
	eval 'denied "$out" && [ "$(as root get --print-value-only "$slot")" = "$bval" ]'
bl=$(as root get "$slot" -w json | python3 -c 'import json, sys; print("%x" % json.load(sys.stdin)["kvs"][0]["lease"])')
out=$(as ha lease revoke "$bl")
check "a's role cannot revoke the lease b's key hangs on (etcd asks for write on each of its keys) ($out)" \
	eval 'denied "$out" && [ "$(as root get --print-value-only "$slot")" = "$bval" ]'
# the limit docs/fleet.md names: etcd checks no role on a keepalive, so a's
# role can keep b's lease (and a dead host's place) alive
out=$(as ha lease keep-alive --once "$bl")
check "limit (docs/fleet.md): a's role can keep b's lease alive, etcd checks no role on a keepalive ($out)" \
	eval 'grep -qE "^lease 0*$bl keepalived with TTL\\([1-9]" <<<"$out"'
out=$(as ha del --prefix "${G}holder/")
check "a's role cannot delete the holder range ($out)" \
	eval 'denied "$out" && [ -n "$(as root get --keys-only "$slot")" ]'
out=$(as ha put "${G}slot/1" "machine-a~x 00112233445566778899aabbccddeeff")
check "a's role cannot take a numbered slot, which hosts of an older rerand count ($out)" \
	eval 'denied "$out" && [ -z "$(as root get --keys-only --prefix "${G}slot/")" ]'
out=$(as ha put "${G}holder/machine-c~x" "machine-c~x 00112233445566778899aabbccddeeff")
check "a's role cannot write a holder key in another host's name ($out)" denied "$out"
out=$(as ha put "${G}semaphore" slots)
check "a's role cannot change the group's marker ($out)" \
	eval 'denied "$out" && [ "$(as root get --print-value-only "${G}semaphore")" = holders ]'
out=$(as ha del "$rec")
check "a's role cannot delete b's failure record: etcd says permission denied ($out)" \
	eval 'denied "$out" && [ -n "$(as root get --keys-only "$rec")" ]'
out=$(as ha put "${G}failures/$BID/1" never-confirmed)
check "a's role cannot forge a failure record in b's name ($out)" denied "$out"
out=$(as ha del "${G}breaker/$BID")
check "a's role cannot delete b's breaker key ($out)" denied "$out"
out=$(as ha del --prefix "${G}breaker")
check "a's role cannot delete the breaker range ($out)" denied "$out"
out=$(as ha put "${G}breaker" "tripped by a")
check "a's role cannot write the old single breaker key ($out)" denied "$out"
out=$(as ha del --prefix "${G}failures/")
check "a's role cannot delete the group's failure records ($out)" denied "$out"
out=$(as ha get --prefix /rerand/fleet/other/)
check "a's role cannot read another group ($out)" denied "$out"

# ---- a: rerandd with its own role sees the breaker and cannot clear it -----------
rerandd_prebuilt_image
rerandd_randomized_sd "$SD"
sim_reboot_recorder test-fleet-roles.sh
printf '[Fleet]\nBackend=etcd\nEndpoints=%s\nGroup=rg\nMaxConcurrent=2\nLockTTL=30s\nDownTTL=60s\nTimeout=3s\nRetryBase=300ms\nRetryMax=1500ms\nUser=ha\nPasswordFile=%s\nBreakerFailures=1\n' \
	"$E" "$tmp/ha.pw" >"$tmp/a.fleet"
host_new a "$tmp/a.fleet"
outside_windows a
host_run a 2>>"$tmp/a.run" & bg_pids+=($!)
# the id of the entries: MESSAGE_ID=ID, as JSON lines
entries() { "${J[@]}" MESSAGE_ID="$1" -o json 2>/dev/null; }
msgid() { sed -n "s/^#define $1 *\"\([0-9a-f]*\)\".*/\1/p" "$top/daemon/rerandd.h"; }
ID_TAKEN=$(msgid RR_MSGID_SLOT_TAKEN) ID_DOWN=$(msgid RR_MSGID_SLOT_DOWN)
ID_RESUMED=$(msgid RR_MSGID_SLOT_RESUMED) ID_RELEASED=$(msgid RR_MSGID_SLOT_RELEASED)
ID_FREL=$(msgid RR_MSGID_FLEET_RELEASE) ID_TRIP=$(msgid RR_MSGID_BREAKER_TRIP)
ID_CLEAR=$(msgid RR_MSGID_BREAKER_CLEAR) ID_CONTROL=$(msgid RR_MSGID_CONTROL)
ID_FAILREC=$(msgid RR_MSGID_FAILURE_REC)
wait_for 60 eval '[ -n "$(entries $ID_TRIP)" ]'
entries $ID_TRIP >"$tmp/trip.json"
check "a learns of the breaker: one native entry, MESSAGE_ID=$ID_TRIP, with its group and id" \
	python3 -c 'import json, sys
es = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
sys.exit(not (len(es) == 1 and es[0].get("RERAND_FLEET_GROUP") == "rg" and es[0].get("_TRANSPORT") == "journal" and
              es[0].get("RERAND_FLEET_HOLDER", "").startswith("machine-a~") and "BREAKER TRIPPED" in es[0]["MESSAGE"]))' \
	"$tmp/trip.json"
out=$(ctl a fleet clear-breaker 2>&1); rc=$?
echo "# a: rerand fleet clear-breaker: $out"
check "rerand fleet clear-breaker on a (its own role) is refused by etcd, and says so (exit $rc)" \
	eval '[ $rc != 0 ] && grep -q "cannot clear the breaker of group rg: .*permission denied" <<<"$out" &&
	      [ "$(as root get --keys-only --prefix ${G}breaker | grep -c .)" = 1 ]'
check "... and nothing was deleted: b's failure record is still there" eval '[ -n "$(as root get --keys-only "$rec")" ]'
wait_for 10 eval '[ -n "$(entries $ID_CLEAR)" ]'
check "the refused clear-breaker is in a's journal: MESSAGE_ID=$ID_CLEAR, RERAND_FLEET_RESULT=failed" \
	eval 'entries $ID_CLEAR | grep -q "\"RERAND_FLEET_RESULT\":\"failed\""'
check "... after the control command's own entry, with who asked (uid 0)" \
	eval 'entries $ID_CONTROL | grep "\"RERAND_COMMAND\":\"fleet clear-breaker\"" | grep -q "\"RERAND_PEER_UID\":\"0\""'
wait_for 30 eval 'ctl a status 2>&1 | grep -q "^fleet wait: *waiting for a slot: etcd: group rg: the breaker is tripped"'
check "a, due, takes no slot while the breaker is tripped (its status says so)" \
	eval 'ctl a status 2>&1 | grep -q "^fleet wait: *waiting for a slot: etcd: group rg: the breaker is tripped" &&
	      [ ! -e "$tmp/h/a/reboot.log" ] && [ -z "$(entries $ID_TAKEN)" ]'

# ---- c: a failed rerandomization recorded with its own role ------------------------
# (its last rerandomized boot was never confirmed; not due: this boot began now)
sed 's/^User=ha$/User=hc/; s|^PasswordFile=.*|PasswordFile='"$tmp/hc.pw"'|' "$tmp/a.fleet" >"$tmp/c.fleet"
host_new c "$tmp/c.fleet"
old=$(cat /proc/sys/kernel/random/uuid | tr -d -)
printf 'version=1\nboot_id=%s\nattempt=0\nattempt_boot_id=\nfailures=0\nhold=0\nfleet_keep=0\nconfirm_pending=1\nconfirm_boot_id=%s\nphase=idle\n' \
	"$old" "$old" >"$tmp/h/c/state/state"
procfs_fixture "$tmp/h/c/stat" "btime $(date +%s)"$'\n'
fleetd_start "$tmp/h/c"
rerandd_start "$tmp/h/c"
wait_for 30 eval '[ -n "$(entries $ID_FAILREC)" ]'
entries $ID_FAILREC >"$tmp/failrec.json"
check "c records its failure with its own role: MESSAGE_ID=$ID_FAILREC, RERAND_FLEET_CAUSE=never-confirmed, in etcd under c's id" \
	eval 'grep -q "\"RERAND_FLEET_CAUSE\":\"never-confirmed\"" "$tmp/failrec.json" &&
	      grep -q "\"RERAND_FLEET_HOLDER\":\"machine-c~" "$tmp/failrec.json" &&
	      as root get --keys-only --prefix "${G}failures/machine-c~" | grep -q .'
touch "$tmp/h/c/stop"
kill -TERM "$(<"$tmp/h/c/pid")"; fleetd_stop "$tmp/h/c" TERM

# ---- rerand fleet release of another host: the admin's, not a host's --------------
out=$(ctl a fleet release "$BID" 2>&1); rc=$?
echo "# a: rerand fleet release $BID: $out"
wait_for 20 eval '[ -n "$(entries $ID_FREL)" ]'
entries $ID_FREL | python3 -c 'import json, sys
for l in sys.stdin:
    e = json.loads(l); print("# journal: %s | %s" % (e.get("MESSAGE"), e.get("RERAND_FLEET_RESULT")))'
check "rerand fleet release of b on a (its own role) is refused by etcd, b's key stays; the journal says so" \
	eval '[ $rc = 0 ] && [ "$(as root get --print-value-only "$slot")" = "$bval" ] &&
	      entries $ID_FREL | grep "\"RERAND_FLEET_HOST\":\"$BID\"" | grep "permission denied" |
	      grep -q "\"RERAND_FLEET_RESULT\":\"failed\""'

# ---- the admin's role clears it; a then does its cycle with its own role ----------
"$FLEETD" --socket "$tmp/adm.sock" 2>>"$tmp/adm.log" & bg_pids+=($!)
wait_for 30 test -S "$tmp/adm.sock" || bail "the admin's rerand-fleetd did not listen"
out=$($ASK "$tmp/adm.sock" Backend=etcd Group=rg "Endpoints=$E" MaxConcurrent=2 LockTTL=60 Timeout=3 \
	ID=admin-host User=adm "PasswordFile=$tmp/adm.pw" -- clear-breaker 2>&1)
echo "# admin: $out" | head -n 3
check "the admin's role clears the breaker (records and key)" \
	eval 'grep -q "^clear-breaker 1 .*breaker cleared; 2 failure records removed" <<<"$out" &&
	      [ -z "$(as root get --keys-only --prefix ${G}breaker)" ] && [ -z "$(as root get --keys-only --prefix ${G}failures/)" ]'
out=$($ASK "$tmp/adm.sock" Backend=etcd Group=rg "Endpoints=$E" MaxConcurrent=2 LockTTL=60 Timeout=3 \
	ID=admin-host User=adm "PasswordFile=$tmp/adm.pw" -- release-host:"$BID" 2>&1)
echo "# admin: $(tr '\n' '|' <<<"$out")"
check "the admin's role frees b's holder key (rerand fleet release through rerand-fleetd)" \
	eval 'grep -q "^release-host 1 " <<<"$out" && [ -z "$(as root get --keys-only "$slot")" ]'
touch "$tmp/b.done"
wait_for 120 host_done a
hostlog a
check "a, with its own role, takes a slot, reboots holding it, takes it back and gives it back" \
	eval 'host_done a && grep -q kexec "$tmp/h/a/reboot.log" && [ -z "$(as root get --keys-only --prefix ${G}holder/)" ] &&
	      [ -z "$(as root get --keys-only --prefix ${G}slot/)" ]'
"${J[@]}" -o json 2>/dev/null | grep '"RERAND_FLEET_' >"$tmp/fleet.json"
python3 - "$tmp/fleet.json" "$ID_TAKEN" "$ID_DOWN" "$ID_RESUMED" "$ID_RELEASED" >"$tmp/cycle.out" 2>&1 <<'EOF'
import json, sys
es = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
for want, what in zip(sys.argv[2:], ["taken", "down", "resumed", "released"]):
    mine = [e for e in es if e.get("MESSAGE_ID") == want]
    if len(mine) != 1:
        sys.exit("%s: %d entries, want 1" % (what, len(mine)))
    e = mine[0]
    if not (e.get("RERAND_FLEET_GROUP") == "rg" and e.get("RERAND_FLEET_BACKEND") == "etcd" and
            e.get("RERAND_FLEET_HOLDER", "").startswith("machine-a~") and
            e.get("SYSLOG_IDENTIFIER") == "rerandd" and e.get("_TRANSPORT") == "journal"):
        sys.exit("%s: %r" % (what, e))
    if what != "released" and not e.get("RERAND_FLEET_SLOT"):
        sys.exit("%s: no RERAND_FLEET_SLOT: %r" % (what, e))
    # LEASEHEX:SLOT: the token's fence (its third part) stays out of the journal
    if any(str(v).count(":") > 1 and len(str(v).split(":")[-1]) == 32 for k, v in e.items()
           if k in ("RERAND_FLEET_SLOT", "MESSAGE")):
        sys.exit("%s: the fence is in the journal: %r" % (what, e))
    print("# %s: %s | %s" % (what, e["MESSAGE"], e.get("RERAND_FLEET_SLOT")))
if [e.get("RERAND_FLEET_RESULT") for e in es if e.get("MESSAGE_ID") == sys.argv[4]] != ["resumed"]:
    sys.exit("resumed: RERAND_FLEET_RESULT")
if "RERAND_FLEET_DOWN_TTL" not in [e for e in es if e.get("MESSAGE_ID") == sys.argv[3]][0]:
    sys.exit("down: no RERAND_FLEET_DOWN_TTL")
EOF
rc=$?
cat "$tmp/cycle.out"
check "a's journal: slot taken, moved to the down lease, taken back, released: one native entry each, own MESSAGE_ID, group, holder, slot" \
	test $rc = 0
"${J[@]}" -o json 2>/dev/null >"$tmp/all.json"
# a kernel address is a 16-hex-digit word beginning ffff (an etcd lease, also
# 16 digits, is a positive int64: 7fff... at most); hashes and ids are longer
check "no entry of rerandd's (its MESSAGE and RERAND_* fields) names a kernel address" \
	python3 -c 'import json, re, sys
bad = re.compile(r"(?<![0-9a-fA-F])(0x)?ffff[0-9a-f]{12}(?![0-9a-fA-F])", re.I)
n = 0
for l in open(sys.argv[1]):
    e = json.loads(l)
    if not str(e.get("SYSLOG_IDENTIFIER", "")).startswith("rerandd"):
        continue
    n += 1
    for k, v in e.items():
        if (k == "MESSAGE" or k.startswith("RERAND_")) and bad.search(str(v)):
            sys.exit("%s=%s" % (k, v))
sys.exit(n == 0)' "$tmp/all.json"

# ---- the catalog: every id, explained ------------------------------------------------
out=$("${J[@]}" -x MESSAGE_ID="$ID_TAKEN" 2>/dev/null)
check "journalctl -x explains a's slot entry from the catalog, its fields filled in" \
	grep -q "Subject: fleet slot taken in group rg" <<<"$out"
ids=$(sed -n 's/^#define RR_MSGID_[A-Z_]* *"\([0-9a-f]\{32\}\)".*/\1/p' "$top/daemon/rerandd.h" | sort)
listed=$(journalctl --root "$tmp/croot" --list-catalog 2>/dev/null | awk '{print $1}' | sort)
check "the catalog has an entry for each of the $(wc -w <<<"$ids") MESSAGE_IDs in daemon/rerandd.h" \
	eval '[ -n "$ids" ] && [ "$(comm -23 <(echo "$ids") <(echo "$listed"))" = "" ]'
missing=$(for i in $ids; do grep -q "^| \`$i\` |" "$top/docs/operations.md" || echo "$i"; done)
check "docs/operations.md's table has a row for each (${missing:-none missing})" test -z "$missing"
hosts_stop a
done_
