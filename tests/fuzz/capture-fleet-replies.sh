#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Capture the seed corpora of the fleet reply fuzzers from the real servers the
# fleet tests run: Debian's etcd (its JSON gateway, the requests rerand-fleetd
# sends, group "fuzz") and the FleetLock test server (tests/fleet/
# fleetlock-server.py).  Each reply body is one seed, as the server sent it.
#
#   tests/fuzz/capture-fleet-replies.sh     (rewrites corpus/{fleet_etcd,fleet_lock,b64}/real-*)
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
C=$top/tests/fuzz/corpus
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$C/fleet_etcd" "$C/fleet_lock" "$C/b64"
rm -f "$C"/fleet_etcd/real-* "$C"/fleet_lock/real-* "$C"/b64/real-*

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
b64() { printf '%s' "$1" | base64 -w0; }

# ---- etcd ----------------------------------------------------------------------
cp=$(free_port); pp=$(free_port)
EP=http://127.0.0.1:$cp
etcd --name fuzz --data-dir "$tmp/etcd" --listen-client-urls "$EP" --advertise-client-urls "$EP" \
	--listen-peer-urls "http://127.0.0.1:$pp" --initial-advertise-peer-urls "http://127.0.0.1:$pp" \
	--initial-cluster "fuzz=http://127.0.0.1:$pp" >"$tmp/etcd.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
	curl -sf "$EP/health" >/dev/null 2>&1 && break
	sleep 0.2
done
# save NAME PATH BODY: POST BODY to the gateway, keep the reply body as NAME
save() {
	curl -s -o "$C/fleet_etcd/real-$1" -X POST "$EP$2" -d "$3"
	echo "fleet_etcd/real-$1: $(head -c 120 "$C/fleet_etcd/real-$1")"
}
slot=/rerand/fleet/fuzz/slot/
fail=/rerand/fleet/fuzz/failures/
save lease-grant /v3/lease/grant '{"TTL":"30"}'
lease=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ID"])' "$C/fleet_etcd/real-lease-grant")
acq() { # SLOT ID LEASE: the txn fleet_etcd_acquire_body() builds for a
	# numbered slot without its range compare (as an older rerand sends it)
	printf '{"compare":[{"key":"%s","target":"CREATE","result":"EQUAL","create_revision":"0"}],"success":[{"request_put":{"key":"%s","value":"%s","lease":"%s"}}]}' \
		"$(b64 "$slot$1")" "$(b64 "$slot$1")" "$(b64 "$2")" "$3"
}
save range-empty /v3/kv/range "{\"key\":\"$(b64 $slot)\",\"range_end\":\"$(b64 /rerand/fleet/fuzz/slot0)\"}"
save txn-acquired /v3/kv/txn "$(acq 0 host-a~1234 "$lease")"
save txn-refused /v3/kv/txn "$(acq 0 host-b~5678 "$lease")"
save txn-acquired-1 /v3/kv/txn "$(acq 1 'host-ü~9' "$lease")"
curl -s -o /dev/null -X POST "$EP/v3/kv/put" -d "{\"key\":\"$(b64 ${slot}7)\",\"value\":\"$(b64 stray-host)\"}"
save range-holders /v3/kv/range "{\"key\":\"$(b64 $slot)\",\"range_end\":\"$(b64 /rerand/fleet/fuzz/slot0)\"}"
# the semaphore's whole range [holder/, slot0): the group's marker, holder
# keys (one on the lease, one whose value names another host) and the slots
hold=/rerand/fleet/fuzz/holder/
curl -s -o /dev/null -X POST "$EP/v3/kv/put" -d "{\"key\":\"$(b64 /rerand/fleet/fuzz/semaphore)\",\"value\":\"$(b64 holders)\"}"
curl -s -o /dev/null -X POST "$EP/v3/kv/put" -d "{\"key\":\"$(b64 "${hold}host-c~42")\",\"value\":\"$(b64 'host-c~42 00112233445566778899aabbccddeeff')\",\"lease\":\"$lease\"}"
curl -s -o /dev/null -X POST "$EP/v3/kv/put" -d "{\"key\":\"$(b64 "${hold}host-d~7")\",\"value\":\"$(b64 'host-e~8 ffeeddccbbaa99887766554433221100')\"}"
save range-semaphore /v3/kv/range "{\"key\":\"$(b64 $hold)\",\"range_end\":\"$(b64 /rerand/fleet/fuzz/slot0)\"}"
save keepalive /v3/lease/keepalive "{\"ID\":\"$lease\"}"
save timetolive /v3/lease/timetolive "{\"ID\":\"$lease\"}"
for t in 1764900000 1764900060 1764900120; do
	curl -s -o /dev/null -X POST "$EP/v3/kv/put" \
		-d "{\"key\":\"$(b64 "${fail}host-a~1234/$t")\",\"value\":\"$(b64 no-comeback)\"}"
done
curl -s -o /dev/null -X POST "$EP/v3/kv/put" -d "{\"key\":\"$(b64 "${fail}host-b/notatime")\",\"value\":\"$(b64 'Bad Cause')\"}"
save put /v3/kv/put "{\"key\":\"$(b64 "${fail}host-c/1764900200")\",\"value\":\"$(b64 kernel-panic)\"}"
save range-failures /v3/kv/range "{\"key\":\"$(b64 $fail)\",\"range_end\":\"$(b64 /rerand/fleet/fuzz/failures0)\",\"limit\":\"64\",\"sort_order\":\"DESCEND\",\"sort_target\":\"CREATE\"}"
save txn-breaker /v3/kv/txn "{\"compare\":[{\"key\":\"$(b64 /rerand/fleet/fuzz/breaker)\",\"target\":\"CREATE\",\"result\":\"EQUAL\",\"create_revision\":\"0\"}],\"success\":[{\"request_put\":{\"key\":\"$(b64 /rerand/fleet/fuzz/breaker)\",\"value\":\"$(b64 '3 failures in 600 s')\"}}]}"
save range-breaker /v3/kv/range "{\"key\":\"$(b64 /rerand/fleet/fuzz/breaker)\"}"
save delete /v3/kv/txn "{\"compare\":[{\"key\":\"$(b64 ${slot}0)\",\"target\":\"VALUE\",\"result\":\"EQUAL\",\"value\":\"$(b64 host-a~1234)\"}],\"success\":[{\"request_delete_range\":{\"key\":\"$(b64 ${slot}0)\"}}]}"
save revoke /v3/lease/revoke "{\"ID\":\"$lease\"}"
save error-lease-not-found /v3/lease/revoke "{\"ID\":\"$lease\"}"
save timetolive-gone /v3/lease/timetolive "{\"ID\":\"$lease\"}"
save error-bad-json /v3/kv/range '{"key":'
save error-bad-base64 /v3/kv/range '{"key":"!!!"}'
# authentication: the token reply, then the refusals without one
etcdctl --endpoints "$EP" user add root:fuzz-pw >/dev/null
etcdctl --endpoints "$EP" auth enable >/dev/null 2>&1
save auth-token /v3/auth/authenticate '{"name":"root","password":"fuzz-pw"}'
save error-auth-failed /v3/auth/authenticate '{"name":"root","password":"wrong"}'
save error-unauthenticated /v3/kv/range "{\"key\":\"$(b64 $slot)\"}"

# every base64 text etcd sent back: the b64 seeds
python3 - "$C" <<'EOF'
import json, os, sys
c = sys.argv[1]
seen = set()
def walk(o):
    if isinstance(o, dict):
        for k, v in o.items():
            if k in ("key", "value") and isinstance(v, str):
                seen.add(v)
            walk(v)
    elif isinstance(o, list):
        for v in o:
            walk(v)
for f in sorted(os.listdir(os.path.join(c, "fleet_etcd"))):
    try:
        walk(json.load(open(os.path.join(c, "fleet_etcd", f))))
    except ValueError:
        pass
for i, v in enumerate(sorted(seen)):
    open(os.path.join(c, "b64", "real-%02d" % i), "w").write(v)
print("b64: %d seeds" % len(seen))
EOF

# ---- FleetLock -------------------------------------------------------------------
python3 "$top/tests/fleet/fleetlock-server.py" 1 "$tmp/fl.port" 2>"$tmp/fl.log" &
pids+=($!)
for _ in $(seq 100); do [ -s "$tmp/fl.port" ] && break; sleep 0.1; done
FL=http://127.0.0.1:$(cat "$tmp/fl.port")
fl() { # NAME PATH BODY [curl args]
	local name=$1 path=$2 body=$3; shift 3
	curl -s -o "$C/fleet_lock/real-$name" -X POST "$FL$path" -H 'fleet-lock-protocol: true' "$@" -d "$body"
	echo "fleet_lock/real-$name: $(head -c 120 "$C/fleet_lock/real-$name")"
}
fl locked /v1/pre-reboot '{"client_params":{"id":"host-a","group":"fuzz"}}'
fl full /v1/pre-reboot '{"client_params":{"id":"host-b","group":"fuzz"}}'
fl unlocked /v1/steady-state '{"client_params":{"id":"host-a","group":"fuzz"}}'
fl bad-group /v1/pre-reboot '{"client_params":{"id":"host-a","group":"has space"}}'
fl bad-id /v1/pre-reboot '{"client_params":{"id":"","group":"fuzz"}}'
fl bad-body /v1/pre-reboot 'not json'
fl bad-params /v1/pre-reboot '{"client_params":{"id":"x"}}'
fl not-found /v1/nowhere '{}'
curl -s -o "$C/fleet_lock/real-no-header" -X POST "$FL/v1/pre-reboot" -d '{"client_params":{"id":"a","group":"g"}}'
curl -s -o /dev/null -X POST "$FL/debug/fail" -d on
fl internal-error /v1/pre-reboot '{"client_params":{"id":"host-c","group":"fuzz"}}'
echo "done: $(ls "$C/fleet_etcd" | wc -l) etcd, $(ls "$C/fleet_lock" | wc -l) FleetLock, $(ls "$C/b64" | wc -l) base64 seeds"
