#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# rerand-fleetd as deployed (issue 23, item 1): the real build/rerand-fleetd against
# Debian's etcd over TLS with client-certificate authentication, a FleetLock server
# over HTTPS, and etcd's own authentication (user, password, token), with the TLS
# files and the password handed over as systemd's LoadCredential= hands them over.
# Certificates are made here with openssl.
#
# systemd is not PID 1 on the build host, so the helper cannot run under the real
# unit here (tests/e2e/check-systemd-fleet.sh does that in the Debian guest).
# Instead $CREDENTIALS_DIRECTORY is laid out exactly as systemd lays it out for
# rerand-fleetd.service's LoadCredential=rerand-fleet:/etc/rerand/fleet-tls: each
# file below the directory becomes "rerand-fleet_" + its path with '/' as '_'
# (systemd 252 src/core/execute.c, 257 src/core/exec-credential.c), mode 0400.
# The [Fleet] settings name /etc/rerand/fleet-tls/... as docs/fleet.md says; those
# paths do not exist on this host, so only the credentials can satisfy them.
# rerandd is replaced by tests/fleet/fleetd-ask.py, which speaks the helper's line
# protocol; `rerandd --check-config` is the real one.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/rerand-fleet-tls.XXXXXX)
FLEETD=${FLEETD:-$top/build/rerand-fleetd}
RERANDD=$top/build/rerandd
ASK="python3 $top/tests/fleet/fleetd-ask.py"
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); echo "not ok $n - $*"; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else nok "$d"; fi; }
bail() { nok "$*"; echo "1..$n"; exit 1; }
bg_pids=()
cleanup() {
	local p f
	exec 2>/dev/null
	for p in "${bg_pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for f in "$tmp"/etcd-*.pid; do [ -e "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null; done
	wait 2>/dev/null
	[ -n "${KEEP:-}" ] && echo "# kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
. "$top/tests/fleet/lib.sh"

for tool in etcd etcdctl openssl python3 ss; do
	command -v "$tool" >/dev/null || bail "$tool is missing (Debian: etcd-server etcd-client openssl python3 iproute2)"
done
[ -x "$FLEETD" ] && [ -x "$RERANDD" ] || bail "build rerandd and rerand-fleetd first (make)"
[ -e /etc/rerand/fleet-tls ] && bail "/etc/rerand/fleet-tls exists on this host: the test needs it absent"
for p in 2351 2352; do port_free "$p" || bail "port 127.0.0.1:$p is in use; the test needs 2351-2352"; done

# ---- certificates: a CA, etcd's server certificate, a host's client certificate -----
(
	cd "$tmp" || exit 1
	gen() { # NAME SUBJECT EXT...: an EC key and a certificate signed by the test CA
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$1.key" \
			-out "$1.csr" -subj "$2" &&
		printf '%s\n' "${@:3}" >"$1.ext" &&
		openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 \
			-out "$1.pem" -extfile "$1.ext"
	}
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key \
		-out ca.pem -days 1 -subj /CN=rerand-fleet-test-ca &&
	# etcd's JSON gateway dials its own port with the server certificate (docs/fleet.md)
	gen srv /CN=etcd-test subjectAltName=IP:127.0.0.1,DNS:localhost extendedKeyUsage=serverAuth,clientAuth &&
	gen cli "/O=rerand-fleet/CN=host-1.example" extendedKeyUsage=clientAuth &&
	# with etcd authentication on, etcd refuses gateway requests whose client
	# certificate has a CN (docs/fleet.md): the host's certificate without one
	gen nocn "/O=rerand-fleet/OU=host-1.example" extendedKeyUsage=clientAuth
) >"$tmp/openssl.log" 2>&1 || { sed 's/^/#   /' "$tmp/openssl.log"; bail "openssl could not make the certificates"; }

# ---- $CREDENTIALS_DIRECTORY as systemd makes it for the shipped unit ----------------
# The admin's /etc/rerand/fleet-tls, per docs/fleet.md: ca.pem, client.pem, client.key,
# and (for etcd auth) etcd-password; a key in a subdirectory shows the '_' naming.
mkcreds() { # DIR: the credentials of a /etc/rerand/fleet-tls holding the test's files
	mkdir -p "$1"
	cp "$tmp/ca.pem" "$1/rerand-fleet_ca.pem"
	cp "$tmp/cli.pem" "$1/rerand-fleet_client.pem"
	cp "$tmp/cli.key" "$1/rerand-fleet_keys_client.key"
	cp "$tmp/nocn.pem" "$1/rerand-fleet_host.pem"
	cp "$tmp/nocn.key" "$1/rerand-fleet_host.key"
	printf 'S3cret-etcd-pw\n' >"$1/rerand-fleet_etcd-password"
	printf 'wrong-pw\n' >"$1/rerand-fleet_wrong-password"
	chmod 0400 "$1"/*
	chmod 0500 "$1"
}
mkcreds "$tmp/creds"
TLS=(CACert=/etc/rerand/fleet-tls/ca.pem Cert=/etc/rerand/fleet-tls/client.pem
     Key=/etc/rerand/fleet-tls/keys/client.key)

# fleetd SOCKNAME [ENV...]: a helper on $tmp/SOCKNAME.sock, its log in $tmp/SOCKNAME.log
fleetd() {
	local s=$1; shift
	rm -f "$tmp/$s.sock"
	env "$@" "$FLEETD" --socket "$tmp/$s.sock" 2>>"$tmp/$s.log" &
	bg_pids+=($!)
	wait_for 30 test -S "$tmp/$s.sock" || bail "rerand-fleetd did not listen on $tmp/$s.sock"
}
ask() { local s=$1; shift; $ASK "$tmp/$s.sock" "$@" 2>&1; }

# ---- etcd with TLS and client-certificate authentication -----------------------------
E=https://127.0.0.1:2351
ECTL=(etcdctl --endpoints="$E" --cacert="$tmp/ca.pem" --cert="$tmp/cli.pem" --key="$tmp/cli.key"
      --dial-timeout=2s --command-timeout=4s)
etcd_start() {
	etcd --name t1 --data-dir "$tmp/etcd-t1" \
		--listen-client-urls "$E" --advertise-client-urls "$E" \
		--listen-peer-urls http://127.0.0.1:2352 --initial-advertise-peer-urls http://127.0.0.1:2352 \
		--initial-cluster t1=http://127.0.0.1:2352 --cert-file "$tmp/srv.pem" --key-file "$tmp/srv.key" \
		--client-cert-auth --trusted-ca-file "$tmp/ca.pem" >>"$tmp/etcd-t1.log" 2>&1 &
	echo $! >"$tmp/etcd-t1.pid"
	wait_for 60 "${ECTL[@]}" endpoint health >/dev/null 2>&1
}
etcd_start || bail "etcd did not start on $E"
BASE=(Backend=etcd Group=tls Endpoints=$E MaxConcurrent=1 LockTTL=30 Timeout=3 ID=host-1)

fleetd a CREDENTIALS_DIRECTORY="$tmp/creds"
out=$(ask a "${BASE[@]}" "${TLS[@]}" -- acquire status release)
echo "$out" | sed 's/^/#   /'
check "credentials as systemd names them (rerand-fleet_ca.pem, rerand-fleet_keys_client.key): the helper takes a slot over TLS with its client certificate" \
	grep -q '^acquire 1 held' <<<"$out"
check "... and gives it back (etcd holds no key under the group afterwards)" \
	eval 'grep -q "^release 0 idle" <<<"$out" &&
	      [ -z "$("${ECTL[@]}" get --prefix /rerand/fleet/tls/ --keys-only 2>/dev/null)" ]'

# the layout the old helper looked for (bare file names) is not what systemd makes
mkdir -p "$tmp/bare"
cp "$tmp/ca.pem" "$tmp/bare/ca.pem"; cp "$tmp/cli.pem" "$tmp/bare/client.pem"; cp "$tmp/cli.key" "$tmp/bare/client.key"
fleetd b CREDENTIALS_DIRECTORY="$tmp/bare"
out=$(ask b "${BASE[@]}" "${TLS[@]}" -- acquire)
echo "$out" | sed 's/^/#   /'
check "a credential missing: open refused, naming the setting, the file and the credential looked for" \
	eval 'grep -q "^open -2 error CACert=/etc/rerand/fleet-tls/ca.pem: no credential rerand-fleet_ca.pem in \$CREDENTIALS_DIRECTORY ($tmp/bare)" <<<"$out" &&
	      grep -q "LoadCredential=rerand-fleet:/etc/rerand/fleet-tls" <<<"$out" &&
	      grep -q "no credential rerand-fleet_ca.pem" "$tmp/b.log"'
check "... and nothing is attempted with it (fail closed)" \
	grep -q '^acquire -107 error the fleet client is not configured yet' <<<"$out"
fleetd c
out=$(ask c "${BASE[@]}" "${TLS[@]}" -- acquire)
check "no \$CREDENTIALS_DIRECTORY and no file: open refused naming the file and the credential it would be" \
	grep -q '^open -2 error CACert=/etc/rerand/fleet-tls/ca.pem: cannot read: No such file or directory (and no $CREDENTIALS_DIRECTORY: .*credential rerand-fleet_ca.pem)' <<<"$out"

# without a client certificate etcd's client-cert-auth refuses the handshake
out=$(ask a "${BASE[@]}" CACert=/etc/rerand/fleet-tls/ca.pem -- acquire)
check "etcd with --client-cert-auth refuses a helper without a client certificate (fail closed)" \
	grep -q '^acquire -113 error etcd: no endpoint answered' <<<"$out"

# ---- etcd's own authentication: user, password (a credential), token ------------------
{
	"${ECTL[@]}" user add root --new-user-password=rootpw &&
	"${ECTL[@]}" role add rerand-tls &&
	"${ECTL[@]}" role grant-permission rerand-tls --prefix=true readwrite /rerand/fleet/tls/ &&
	"${ECTL[@]}" user add rerand --new-user-password=S3cret-etcd-pw &&
	"${ECTL[@]}" user grant-role rerand rerand-tls &&
	"${ECTL[@]}" auth enable
} >"$tmp/auth.log" 2>&1 || { sed 's/^/#   /' "$tmp/auth.log"; bail "etcdctl could not set up etcd authentication"; }
AUTH=(User=rerand PasswordFile=/etc/rerand/fleet-tls/etcd-password)
out=$(ask a "${BASE[@]}" "${TLS[@]}" "${AUTH[@]}" -- acquire)
echo "$out" | sed 's/^/#   /'
check "etcd auth on and a client certificate with a CN: etcd's refusal is reported as it is, with the fix" \
	grep -q '^acquire -71 error .*/v3/auth/authenticate: HTTP 400: CommonName of client sending a request against gateway will be ignored.*must have no CN' <<<"$out"
TLS=(CACert=/etc/rerand/fleet-tls/ca.pem Cert=/etc/rerand/fleet-tls/host.pem Key=/etc/rerand/fleet-tls/host.key)
out=$(ask a "${BASE[@]}" "${TLS[@]}" -- acquire)
check "etcd auth on, no User=: etcd refuses the helper (fail closed)" \
	eval '! grep -q "^acquire 1" <<<"$out" && grep -q "^acquire -[0-9]* error" <<<"$out"'
out=$(ask a "${BASE[@]}" "${TLS[@]}" "${AUTH[@]}" -- acquire status release)
echo "$out" | sed 's/^/#   /'
check "User= with the password from the credential rerand-fleet_etcd-password: a slot taken and given back" \
	eval 'grep -q "^acquire 1 held" <<<"$out" && grep -q "^release 0 idle" <<<"$out"'
out=$(ask a "${BASE[@]/Group=tls/Group=other}" "${TLS[@]}" "${AUTH[@]}" -- acquire)
check "the user's role covers /rerand/fleet/tls/ only: another group is refused (permission denied)" \
	grep -q '^acquire -71 error .*permission denied' <<<"$out"
out=$(ask a "${BASE[@]}" "${TLS[@]}" User=rerand PasswordFile=/etc/rerand/fleet-tls/wrong-password -- acquire)
check "a wrong password: refused, naming the user, and no password shows in the reply or the logs" \
	eval 'grep -q "^acquire -[0-9]* error etcd: authentication as user rerand failed" <<<"$out" &&
	      ! grep -q "wrong-pw\|S3cret" <<<"$out" && ! grep -q "wrong-pw\|S3cret" "$tmp"/*.log'
# simple tokens live in etcd's memory: after a restart the helper's token is
# unknown, and its next call must authenticate again on the same connection
$ASK "$tmp/a.sock" "${BASE[@]}" "${TLS[@]}" "${AUTH[@]}" -- acquire wait:"$tmp/go" refresh release \
	>"$tmp/restart.out" 2>&1 &
asker=$!
wait_for 60 grep -q "^acquire" "$tmp/restart.out"
etcd_kill t1 TERM
etcd_start
touch "$tmp/go"
wait "$asker"
sed 's/^/#   /' "$tmp/restart.out"
check "after an etcd restart (its tokens forgotten) the helper authenticates again: keepalive and release pass" \
	eval 'grep -q "^acquire 1 held" "$tmp/restart.out" && grep -q "^refresh 1 held" "$tmp/restart.out" &&
	      grep -q "^release 0 idle" "$tmp/restart.out"'
etcd_kill t1

# ---- FleetLock over HTTPS, with a client certificate ---------------------------------
python3 "$top/tests/fleet/fleetlock-server.py" 1 "$tmp/fl.port" "$tmp/srv.pem" "$tmp/srv.key" "$tmp/ca.pem" \
	2>"$tmp/fl.log" &
bg_pids+=($!)
wait_for 60 test -s "$tmp/fl.port" || bail "the FleetLock server did not start"
FL=https://127.0.0.1:$(cat "$tmp/fl.port")/
out=$(ask a Backend=fleetlock Group=workers URL="$FL" ID=host-1 "${TLS[@]}" -- acquire release)
echo "$out" | sed 's/^/#   /'
check "FleetLock over https with the CA and client certificate from the credentials: lock and unlock" \
	eval 'grep -q "^acquire 1 held" <<<"$out" && grep -q "^release 0 idle" <<<"$out"'
out=$(ask a Backend=fleetlock Group=workers URL="$FL" ID=host-1 -- acquire)
check "FleetLock over https without our CA: the server is not trusted (fail closed)" \
	eval '! grep -q "^acquire 1" <<<"$out" && grep -q "^acquire -5 error" <<<"$out"'

# ---- plaintext to anything but loopback is refused ------------------------------------
out=$(ask a Backend=etcd Endpoints=http://192.0.2.10:2379 ID=h -- acquire)
check "the helper refuses Endpoints=http://192.0.2.10:2379 (plaintext, not loopback)" \
	grep -q '^open -22 error \[Fleet\] Endpoints=http://192.0.2.10:2379: plaintext HTTP to 192.0.2.10, which is not on loopback' <<<"$out"
# user info (issue 39, point 6): curl would connect to etcd.example, after the '@'
out=$(ask a Backend=etcd "Endpoints=http://127.0.0.1:2379@etcd.example:2379" ID=h -- acquire)
echo "$out" | sed 's/^/#   /'
check "the helper refuses Endpoints=http://127.0.0.1:2379@etcd.example:2379 (user info) and asks nobody" \
	eval 'grep -q "Endpoints=http://127.0.0.1:2379@etcd.example:2379: user info" <<<"$out" && ! grep -q "^acquire [01]" <<<"$out"'
mkdir -p "$tmp/none.d"
cc() { "$RERANDD" --check-config --config "$tmp/f.conf" --config-dir "$tmp/none.d" 2>&1; }
printf '[Fleet]\nBackend=etcd\nEndpoints=etcd1.example:2379\n' >"$tmp/f.conf"
out=$(cc); rc=$?
echo "$out" | grep -i plaintext | sed 's/^/#   /'
check "rerandd --check-config: a bare host:port to another host without CACert= is plaintext: refused, saying why (exit $rc)" \
	eval '[ $rc -ne 0 ] && grep -q "Endpoints=etcd1.example:2379: plaintext HTTP to etcd1.example, which is not on loopback.*AllowPlaintext=yes" <<<"$out"'
printf '[Fleet]\nBackend=fleetlock\nURL=http://[fd00::1]:8080/\n' >"$tmp/f.conf"
out=$(cc); rc=$?
check "rerandd --check-config: FleetLock URL=http://[fd00::1]:8080/ refused (exit $rc)" \
	eval '[ $rc -ne 0 ] && grep -q "URL=http://\[fd00::1\]:8080/: plaintext HTTP to \[fd00::1\]" <<<"$out"'
printf '[Fleet]\nBackend=etcd\nEndpoints=http://127.example.org:2379\n' >"$tmp/f.conf"
out=$(cc); rc=$?
check "rerandd --check-config: http://127.example.org is a name, not loopback: refused (exit $rc)" \
	eval '[ $rc -ne 0 ] && grep -q "plaintext HTTP to 127.example.org" <<<"$out"'
printf '[Fleet]\nBackend=etcd\nEndpoints=http://etcd1.example:2379\nAllowPlaintext=yes\n' >"$tmp/f.conf"
out=$(cc); rc=$?
check "rerandd --check-config: AllowPlaintext=yes accepts it (exit $rc)" eval '! grep -qi plaintext <<<"$out"'
printf '[Fleet]\nBackend=etcd\nEndpoints=etcd1.example:2379 https://etcd2.example:2379 http://127.0.0.1:2379 localhost:2379 http://[::1]:2379\nCACert=/etc/rerand/fleet-tls/ca.pem\n' >"$tmp/f.conf"
out=$(cc); rc=$?
check "rerandd --check-config: https, a bare host:port with CACert= and loopback http are accepted" \
	eval '! grep -qi plaintext <<<"$out"'
printf '[Fleet]\nBackend=etcd\nEndpoints=https://etcd1.example:2379\nUser=rerand\n' >"$tmp/f.conf"
out=$(cc); rc=$?
check "rerandd --check-config: User= without PasswordFile= is refused (exit $rc)" \
	eval '[ $rc -ne 0 ] && grep -q "User= and PasswordFile= go together" <<<"$out"'

echo "1..$n"
