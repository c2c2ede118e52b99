#!/bin/bash
# Fleet coordination against real engines: Debian's etcd (one member, then a
# 3-member cluster, all on loopback) and a FleetLock server of our own (Debian ships
# none).  Simulated hosts are fleet-sim processes using the daemon's fleet API; only
# the reboot is simulated (the host process stops, waits, and starts again with a
# new boot id).  The locks, etcd, its leases and the timing are real.
# RERAND_MODE=long runs more hosts and longer outages.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/rerand-fleet.XXXXXX)
SIM=$top/build/tests/fleet/fleet-sim
FLEET=$tmp/fleet.log
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); echo "not ok $n - $*"; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else nok "$d"; fi; }
bg_pids=()
cleanup() {
	local p f
	exec 2>/dev/null
	for p in "${bg_pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for f in "$tmp"/host-*/pid; do [ -e "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null; done
	for f in "$tmp"/etcd-*.pid; do [ -e "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
. "$top/tests/fleet/lib.sh"

mode=${RERAND_MODE:-short}
if [ "$mode" = long ]; then HOSTS=12; OUTAGE=15; else HOSTS=6; OUTAGE=5; fi
TTL=5

for tool in etcd etcdctl python3 ss; do
	if ! command -v "$tool" >/dev/null; then
		nok "$tool is missing (Debian: etcd-server etcd-client python3 iproute2)"
		echo "1..$n"; exit 1
	fi
done

# fleet-sim: rerand-fleetd's client and the [Fleet] parser under a small
# driver, built by the Makefile (make fleet-test-helpers; make check does).
if [ ! -x "$SIM" ]; then
	nok "$SIM is missing: make fleet-test-helpers"; echo "1..$n"; exit 1
fi

for p in 2311 2312 2321 2322 2323 2324 2325 2326 2331 2332; do
	if ! port_free "$p"; then
		nok "port 127.0.0.1:$p is in use; the test needs 2311-2312, 2321-2326 and 2331-2332"
		echo "1..$n"; exit 1
	fi
done

# ---- [Fleet] configuration keys, as the daemon's parser hands them over -----------
cat >"$tmp/bad.conf" <<'EOF'
[Fleet]
Backend=zookeeper
Group=has space
MaxConcurrent=0
LockTTL=soon
Endpoints=ftp://127.0.0.1:2311
Colour=blue
EOF
"$SIM" -c "$tmp/bad.conf" -i x identity >/dev/null 2>"$tmp/err"
check "config: a bad [Fleet] section is refused with every error and its line" \
	test "$(grep -cE '^.*bad.conf:[2-7]: ' "$tmp/err")" -eq 6
printf '[Fleet]\nBackend=etcd\n' >"$tmp/noep.conf"
"$SIM" -c "$tmp/noep.conf" -i x identity >/dev/null 2>"$tmp/err"
check "config: Backend=etcd without Endpoints= is refused" grep -q 'needs Endpoints=' "$tmp/err"
printf '  3f1c0a9e5b7d4c21a0e6f8b2c4d6e8f0  \n' >"$tmp/machine-id"
printf '[Fleet]\nBackend=fleetlock\nURL=http://127.0.0.1:9\nMachineIDFile=%s\n' "$tmp/machine-id" >"$tmp/mid.conf"
check "config: the identity is the machine id, trimmed" \
	test "$("$SIM" -c "$tmp/mid.conf" identity 2>&1)" = 3f1c0a9e5b7d4c21a0e6f8b2c4d6e8f0

# ---- fail closed with nothing listening --------------------------------------------
cat >"$tmp/dead.conf" <<'EOF'
[Fleet]
Backend=etcd
Group=dead
Endpoints=127.0.0.1:2311 127.0.0.1:2321
Timeout=1
EOF
out=$("$SIM" -c "$tmp/dead.conf" -i h1 metrics 2>&1)
check "fail closed: unreachable etcd gives lock state error and counts the error" \
	eval 'grep -q "rerand_fleet_lock_state{backend=\"etcd\",group=\"dead\",state=\"error\"} 1" <<<"$out" &&
	      grep -q "rerand_fleet_errors_total{backend=\"etcd\"} 1" <<<"$out"'
"$SIM" -c "$tmp/dead.conf" -i h1 acquire >"$tmp/out" 2>&1
rc=$?
check "fail closed: acquire says error (exit $rc) naming both endpoints tried" \
	eval '[ $rc -eq 2 ] && grep -q "no endpoint answered (2 tried" "$tmp/out"'

# ---- FleetLock -------------------------------------------------------------------------
python3 "$top/tests/fleet/fleetlock-server.py" 2 "$tmp/fl.port" 2>"$tmp/fl.log" &
bg_pids+=($!)
wait_for 10 test -s "$tmp/fl.port"
FL=http://127.0.0.1:$(cat "$tmp/fl.port")
printf '[Fleet]\nBackend=fleetlock\nGroup=workers\nURL=%s\nRetryBase=100ms\nRetryMax=800ms\n' "$FL/" >"$tmp/fl.conf"
flstate() { curl -s "$FL/debug/state"; }

# the server is strict: requests that break the protocol are refused with an error body
r=$(curl -s -w ' %{http_code}' -d '{"client_params":{"id":"a","group":"workers"}}' "$FL/v1/pre-reboot")
check "fleetlock server: no fleet-lock-protocol header -> 400 {kind,value}" \
	eval 'grep -q "\"kind\": \"missing_protocol_header\".* 400$" <<<"$r"'
r=$(curl -s -w ' %{http_code}' -H 'fleet-lock-protocol: true' -d '{"client_params":{"id":"a"}}' "$FL/v1/pre-reboot")
check "fleetlock server: a body without group -> 400 bad_body" eval 'grep -q "bad_body.* 400$" <<<"$r"'

out=$("$SIM" -c "$tmp/fl.conf" -i a acquire; "$SIM" -c "$tmp/fl.conf" -i b acquire; "$SIM" -c "$tmp/fl.conf" -i a acquire)
check "fleetlock: two hosts lock the two slots, a lock again is recursive" \
	test "$(grep -c '^held' <<<"$out")" -eq 3
out=$("$SIM" -c "$tmp/fl.conf" -i c acquire 2>&1); rc=$?
check "fleetlock: a third host is refused with the server's kind and value (exit $rc)" \
	eval '[ $rc -eq 1 ] && grep -q "^refused .*HTTP 409: failed_lock_semaphore_full: semaphore currently full" <<<"$out"'
check "fleetlock: every request our client sent passed the server's checks" \
	eval 'flstate | python3 -c "import json,sys; s=json.load(sys.stdin); sys.exit(s[\"rejected\"] != 2)"'
# a restarted host releases whatever it held, as Zincati does on start-up
"$SIM" -c "$tmp/fl.conf" -i a release >/dev/null
"$SIM" -c "$tmp/fl.conf" -i b release >/dev/null
check "fleetlock: steady-state frees the slots (server holds none)" \
	eval 'flstate | grep -q "\"holders\": {\"workers\": \[\]}"'
curl -s -d on "$FL/debug/fail" >/dev/null
out=$("$SIM" -c "$tmp/fl.conf" -i a metrics 2>&1)
check "fleetlock: a 500 from the server is an error: state error, errors counted" \
	eval 'grep -q "rerand_fleet_lock_state{backend=\"fleetlock\",group=\"workers\",state=\"error\"} 1" <<<"$out" &&
	      grep -q "rerand_fleet_errors_total{backend=\"fleetlock\"} 1" <<<"$out"'
curl -s -d off "$FL/debug/fail" >/dev/null

: >"$FLEET"
t0=$(now_ms)
for i in $(seq 1 "$HOSTS"); do run_host "$tmp/fl.conf" "fl$i" 500 -d 600 -v 300 -t 60 & bg_pids+=($!); done
ids=$(seq -f 'fl%g' 1 "$HOSTS")
wait_for 90 hosts_done $ids
python3 "$top/tests/fleet/analyze.py" "$FLEET" >"$tmp/fl.sum"
smax=$(flstate | python3 -c 'import json,sys; print(json.load(sys.stdin)["max_seen"])')
check "fleetlock: $HOSTS hosts, 2 slots: all complete in $(( $(now_ms) - t0 )) ms" hosts_rc_zero $ids
check "fleetlock: at most 2 holders at once (server saw $smax, hosts saw $(kv hosts_max "$tmp/fl.sum"))" \
	eval '[ "$smax" -le 2 ] && [ "$(kv hosts_max "$tmp/fl.sum")" -le 2 ] && [ "$smax" -ge 1 ]'

# ---- etcd, one member -------------------------------------------------------------------
E1=127.0.0.1:2311
etcd_member s1 2311 2312 s1=http://127.0.0.1:2312
check "etcd: a single member starts on $E1" etcd_healthy "$E1" 20
cat >"$tmp/e1.conf" <<EOF
[Fleet]
Backend=etcd
Group=web
Endpoints=$E1
MaxConcurrent=2
LockTTL=$TTL
Timeout=2
RetryBase=100ms
RetryMax=1000ms
EOF

# operator view and override
"$SIM" -c "$tmp/e1.conf" -i op1 acquire >"$tmp/tok"
tok=$(awk '{print $2}' "$tmp/tok")
"$SIM" -c "$tmp/e1.conf" -i any status --json >"$tmp/st.json"
check "status --json: op1 holds slot 0, one slot free, ttl within LockTTL" \
	python3 -c "import json,sys; s=json.load(open('$tmp/st.json')); h=s['holders'];
sys.exit(not (s['free']==1 and len(h)==1 and h[0]['id']=='op1' and h[0]['slot']==0 and 0 < h[0]['ttl'] <= $TTL))"
"$SIM" -c "$tmp/e1.conf" -i any release-host op1 >"$tmp/rel" 2>&1
# "freed 0" here means op1's lease ($TTL s) ran out before the operator
# got to it: a machine too loaded for this test's short LockTTL.
check "release-host: the operator frees op1's slot (said: $(tr '\n' ' ' <"$tmp/rel"))" grep -qx 'freed 1' "$tmp/rel"
"$SIM" -c "$tmp/e1.conf" -i op1 refresh "$tok" >"$tmp/out" 2>&1
check "release-host: op1's next keepalive learns its slot is gone" grep -q '^lost' "$tmp/out"

# MaxConcurrent=2, $HOSTS hosts due at the same moment, with an observer on etcd
: >"$FLEET"
python3 "$top/tests/fleet/observer.py" "$E1" /rerand/fleet/web/ "$tmp/obs1.log" &
obs=$!; bg_pids+=($obs)
wait_for 10 test -s "$tmp/obs1.log"
t0=$(now_ms)
ids=$(seq -f 'w%g' 1 "$HOSTS")
for id in $ids; do run_host "$tmp/e1.conf" "$id" 1500 -d 1000 -v 500 -t 90 & bg_pids+=($!); done
wait_for 120 hosts_done $ids
t1=$(now_ms)
sleep 0.5; kill "$obs" 2>/dev/null
python3 "$top/tests/fleet/analyze.py" "$FLEET" "$tmp/obs1.log" >"$tmp/e1.sum"
check "etcd: all $HOSTS hosts rerandomized once, in $((t1 - t0)) ms" hosts_rc_zero $ids
check "etcd: the observer never saw more than 2 holders (max $(kv obs_max "$tmp/e1.sum"))" \
	eval '[ "$(kv obs_max "$tmp/e1.sum")" -le 2 ] && [ "$(kv obs_max "$tmp/e1.sum")" -ge 1 ]'
check "etcd: the hosts never believed more than 2 held at once (max $(kv hosts_max "$tmp/e1.sum"))" \
	test "$(kv hosts_max "$tmp/e1.sum")" -le 2
check "etcd: every host took its lease back after the reboot ($(kv resumed_held "$tmp/e1.sum") of $HOSTS)" \
	test "$(kv resumed_held "$tmp/e1.sum")" -eq "$HOSTS"
check "etcd: the group is empty afterwards" test "$(etcd_keys "$E1" /rerand/fleet/web/)" -eq 0
echo "# etcd single: obs_max=$(kv obs_max "$tmp/e1.sum") hosts_max=$(kv hosts_max "$tmp/e1.sum") span_ms=$((t1 - t0))"

# a holder killed with SIGKILL never comes back; its slot frees when the lease expires
sed -e 's/^Group=web/Group=kill/' -e 's/^MaxConcurrent=2/MaxConcurrent=1/' "$tmp/e1.conf" >"$tmp/k.conf"
: >"$FLEET"
python3 "$top/tests/fleet/observer.py" "$E1" /rerand/fleet/kill/ "$tmp/obsk.log" &
obs=$!; bg_pids+=($obs)
wait_for 10 test -s "$tmp/obsk.log"
mkdir -p "$tmp/host-victim"
"$SIM" -c "$tmp/k.conf" -i victim -s "$tmp/host-victim" -l "$FLEET" -d 60000 -t 30 boot 2>/dev/null &
victim=$!; bg_pids+=($victim)
wait_for 10 grep -q ' victim ACQUIRED' "$FLEET"
run_host "$tmp/k.conf" waiter 500 -d 300 -v 300 -t 60 & bg_pids+=($!)
wait_for 5 grep -q ' waiter WAIT' "$FLEET"
{ kill -KILL "$victim"; tk=$(now_ms); wait "$victim"; } 2>/dev/null
# the observer sees the victim's slot key deleted by etcd when the lease expires
wait_for $((TTL * 3)) grep -q ' DELETE /rerand/fleet/kill/slot/0 ' "$tmp/obsk.log"
tfree=$(awk '$4 == "DELETE" { print $1; exit }' "$tmp/obsk.log")
wait_for 30 hosts_done waiter
tw=$(sed -n 's/^\([0-9]*\) waiter ACQUIRED.*/\1/p' "$FLEET" | head -1)
kill "$obs" 2>/dev/null
free_ms=$(( ${tfree:-0} - tk )); take_ms=$(( ${tw:-0} - tk ))
# the last keepalive came at most LockTTL/3 before the kill, so expiry is due
# between 2/3 LockTTL and LockTTL after it (plus etcd's 0.5 s expiry sweep)
lo=$((TTL * 2000 / 3 - 500)); hi=$(((TTL + 2) * 1000))
check "kill -9: the dead holder's slot freed after ${free_ms} ms (LockTTL=${TTL}s)" \
	eval '[ -n "$tfree" ] && [ $free_ms -ge $lo ] && [ $free_ms -le $hi ]'
check "kill -9: the waiting host got the slot ${take_ms} ms after the kill and completed" \
	eval '[ -n "$tw" ] && [ $take_ms -ge $((free_ms - 250)) ] && hosts_rc_zero waiter'
check "kill -9: the victim never came back" eval '! grep -q " victim \(RESUMED\|COMPLETE\)" "$FLEET"'
echo "# recovery after a holder died: slot free after ${free_ms} ms, next holder after ${take_ms} ms (TTL ${TTL} s)"

# two hosts cloned with one /etc/machine-id: each install has its own id (rerandd
# makes it), so a slot names the install; the clone is refused, and neither
# adopts nor releases the other's slot
printf 'c0ffee0000000000000000000000cafe\n' >"$tmp/clone-mid"
sed -e 's/^Group=web/Group=clone/' "$tmp/e1.conf" >"$tmp/clone.conf"
printf 'MachineIDFile=%s\nLockTTL=30\n' "$tmp/clone-mid" >>"$tmp/clone.conf"
{ cat "$tmp/clone.conf"; echo InstallID=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa; } >"$tmp/clone-a.conf"
{ cat "$tmp/clone.conf"; echo InstallID=bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb; } >"$tmp/clone-b.conf"
"$SIM" -c "$tmp/clone-a.conf" acquire >"$tmp/ca.out" 2>&1
"$SIM" -c "$tmp/clone-b.conf" acquire >"$tmp/cb.out" 2>&1; rcb=$?
sed 's/^/#   /' "$tmp/cb.out"
check "fencing: a holder is MACHINEID~INSTALLID, then the acquisition's fence" \
	eval 'grep -q "^held" "$tmp/ca.out" &&
	      etcdctl --endpoints="$E1" get --print-value-only /rerand/fleet/clone/slot/0 |
	      grep -qxE "c0ffee0000000000000000000000cafe~aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa [0-9a-f]{32}"'
check "fencing: a second host with the same machine id is refused as an error, naming both (exit $rcb)" \
	eval '[ $rcb -eq 2 ] && grep -q "^error etcd: slot 0 of group clone is held by c0ffee0000000000000000000000cafe~aaaa.*another host with this machine id c0ffee0000000000000000000000cafe" "$tmp/cb.out"'
"$SIM" -c "$tmp/clone-b.conf" release >/dev/null 2>&1
check "fencing: the clone's start-up release leaves the other's slot alone" \
	test "$(etcd_keys "$E1" /rerand/fleet/clone/)" -eq 1
tok=$(awk '{print $2}' "$tmp/ca.out")
"$SIM" -c "$tmp/clone-b.conf" refresh "$tok" >"$tmp/out" 2>&1
check "fencing: the clone cannot adopt the slot with the other's token" grep -q '^lost' "$tmp/out"
"$SIM" -c "$tmp/clone-a.conf" refresh "$tok" >"$tmp/out" 2>&1
check "fencing: the install that took the slot resumes it after its \"reboot\"" grep -q '^held' "$tmp/out"
check "release-host by machine id frees the slot of every install of it" \
	eval '[ "$("$SIM" -c "$tmp/clone.conf" -i any release-host c0ffee0000000000000000000000cafe | sed "s/^freed //")" = 1 ] &&
	      [ "$(etcd_keys "$E1" /rerand/fleet/clone/)" -eq 0 ]'
etcd_kill s1

# ---- etcd over TLS with client certificates ----------------------------------------------
if command -v openssl >/dev/null; then
	(
		cd "$tmp" || exit 1
		# etcd's JSON gateway dials its own port with the server certificate, so that
		# one needs clientAuth as well
		gen() { # NAME CN EXT...: an EC key and a certificate signed by the test CA
			openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$1.key" \
				-out "$1.csr" -subj "/CN=$2" 2>/dev/null &&
			printf '%s\n' "${@:3}" >"$1.ext" &&
			openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 \
				-out "$1.pem" -extfile "$1.ext" 2>/dev/null
		}
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key \
			-out ca.pem -days 1 -subj /CN=rerand-test-ca 2>/dev/null &&
		gen srv 127.0.0.1 subjectAltName=IP:127.0.0.1 extendedKeyUsage=serverAuth,clientAuth &&
		gen cli rerand-host extendedKeyUsage=clientAuth
	) >"$tmp/openssl.log" 2>&1
	etcd --name t1 --data-dir "$tmp/etcd-t1" \
		--listen-client-urls https://127.0.0.1:2331 --advertise-client-urls https://127.0.0.1:2331 \
		--listen-peer-urls http://127.0.0.1:2332 --initial-advertise-peer-urls http://127.0.0.1:2332 \
		--initial-cluster t1=http://127.0.0.1:2332 --cert-file "$tmp/srv.pem" --key-file "$tmp/srv.key" \
		--client-cert-auth --trusted-ca-file "$tmp/ca.pem" >>"$tmp/etcd-t1.log" 2>&1 &
	echo $! >"$tmp/etcd-t1.pid"
	printf '[Fleet]\nBackend=etcd\nGroup=tls\nEndpoints=https://127.0.0.1:2331\nCACert=%s\nCert=%s\nKey=%s\nTimeout=2\n' \
		"$tmp/ca.pem" "$tmp/cli.pem" "$tmp/cli.key" >"$tmp/tls.conf"
	grep -v '^Cert=\|^Key=' "$tmp/tls.conf" >"$tmp/tls-nocert.conf"
	wait_for 20 eval '"$SIM" -c "$tmp/tls.conf" -i t status >/dev/null 2>&1'
	check "tls: with CACert=, Cert= and Key= a host takes and frees a slot over https" \
		eval '"$SIM" -c "$tmp/tls.conf" -i t acquire | grep -q "^held" &&
		      "$SIM" -c "$tmp/tls.conf" -i t release | grep -q "^released"'
	"$SIM" -c "$tmp/tls-nocert.conf" -i t acquire >"$tmp/out" 2>&1; rc=$?
	check "tls: without a client certificate etcd refuses: error, fail closed (exit $rc)" \
		eval '[ $rc -eq 2 ] && grep -q "no endpoint answered" "$tmp/out"'
	etcd_kill t1
else
	nok "tls: openssl is missing (Debian: openssl)"
fi

# ---- etcd, three members ------------------------------------------------------------------
CL=c1=http://127.0.0.1:2322,c2=http://127.0.0.1:2324,c3=http://127.0.0.1:2326
EP=127.0.0.1:2321,127.0.0.1:2323,127.0.0.1:2325
etcd_member c1 2321 2322 "$CL"; etcd_member c2 2323 2324 "$CL"; etcd_member c3 2325 2326 "$CL"
check "etcd cluster: three members start" etcd_healthy "$EP" 30
sed -e "s/^Endpoints=.*/Endpoints=$EP/" -e 's/^Group=web/Group=db/' "$tmp/e1.conf" >"$tmp/c.conf"

: >"$FLEET"
python3 "$top/tests/fleet/observer.py" "$EP" /rerand/fleet/db/ "$tmp/obs2.log" &
obs=$!; bg_pids+=($obs)
wait_for 10 test -s "$tmp/obs2.log"
t0=$(now_ms)
ids=$(seq -f 'd%g' 1 "$HOSTS")
for id in $ids; do run_host "$tmp/c.conf" "$id" 1500 -d 1000 -v 500 -t 120 & bg_pids+=($!); done
# the first endpoint every host talks to dies while slots are held
wait_for 20 grep -q ' ACQUIRED' "$FLEET"
etcd_kill c1
wait_for 150 hosts_done $ids
t1=$(now_ms)
sleep 0.5; kill "$obs" 2>/dev/null
python3 "$top/tests/fleet/analyze.py" "$FLEET" "$tmp/obs2.log" >"$tmp/c.sum"
check "cluster: member c1 killed mid-run, all $HOSTS hosts still complete ($((t1 - t0)) ms)" hosts_rc_zero $ids
check "cluster: at most 2 holders (observer $(kv obs_max "$tmp/c.sum"), hosts $(kv hosts_max "$tmp/c.sum"))" \
	eval '[ "$(kv obs_max "$tmp/c.sum")" -le 2 ] && [ "$(kv hosts_max "$tmp/c.sum")" -le 2 ] &&
	      [ "$(kv obs_max "$tmp/c.sum")" -ge 1 ]'
check "cluster: every host took its lease back after the reboot" \
	test "$(kv resumed_held "$tmp/c.sum")" -eq "$HOSTS"
echo "# etcd cluster: obs_max=$(kv obs_max "$tmp/c.sum") hosts_max=$(kv hosts_max "$tmp/c.sum") span_ms=$((t1 - t0))"
etcd_member c1 2321 2322 "$CL"
check "cluster: c1 rejoins" etcd_healthy "$EP" 30

# all members down: nobody reboots; a host caught draining aborts; all recover after
sed -e 's/^Group=db/Group=dark/' -e 's/^MaxConcurrent=2/MaxConcurrent=1/' "$tmp/c.conf" >"$tmp/o.conf"
: >"$FLEET"
run_host "$tmp/o.conf" drainer 500 -d 3000 -v 300 -t 120 & bg_pids+=($!)
wait_for 10 grep -q ' drainer ACQUIRED' "$FLEET"
etcd_kill c1; etcd_kill c2; etcd_kill c3
tdown=$(now_ms)
ids=$(seq -f 'o%g' 1 $((HOSTS - 1)))
for id in $ids; do run_host "$tmp/o.conf" "$id" 500 -d 300 -v 300 -t 120 & bg_pids+=($!); done
sleep "$OUTAGE"
tup=$(now_ms)
awk -v a="$tdown" -v b="$tup" '$1 >= a && $1 <= b' "$FLEET" >"$tmp/outage.log"
check "all members down: no host acquired or rebooted during the ${OUTAGE}s outage" \
	eval '! grep -qE " (ACQUIRED|REBOOT) " "$tmp/outage.log"'
check "all members down: the draining host aborted its reboot (fail closed)" \
	grep -q ' drainer ABORT' "$tmp/outage.log"
check "all members down: waiting hosts report errors and retry with back-off" \
	test "$(grep -c ' ERROR retry_ms=' "$tmp/outage.log")" -ge "$((HOSTS - 1))"
etcd_member c1 2321 2322 "$CL"; etcd_member c2 2323 2324 "$CL"; etcd_member c3 2325 2326 "$CL"
etcd_healthy "$EP" 30
wait_for 150 hosts_done drainer $ids
python3 "$top/tests/fleet/analyze.py" "$FLEET" >"$tmp/o.sum"
check "etcd back: every host recovers and completes ($(( $(now_ms) - tup )) ms after the restart)" \
	hosts_rc_zero drainer $ids
check "etcd back: still one at a time (hosts max $(kv hosts_max "$tmp/o.sum"))" \
	test "$(kv hosts_max "$tmp/o.sum")" -eq 1

echo "1..$n"
