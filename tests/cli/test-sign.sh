#!/bin/bash
# `rerand image --sign-*` as a user meets it: sbsign with a PEM key (plain,
# and encrypted with a passphrase typed on a terminal), with a PKCS#11 key
# through OpenSSL's pkcs11 engine (SoftHSM), sbverify's verdict, what
# inspect says, byte-identical unsigned output, and failed signings that
# leave nothing behind (not even a stale temporary file) and say why.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
R=$top/build/rerand
K=${RERAND_KERNELS:-}
KEY=/usr/share/ovmf/PkKek-1-snakeoil.key
CERT=/usr/share/ovmf/PkKek-1-snakeoil.pem
SUBJ="O=SnakeOil,L=Fort Collins,ST=Colorado,C=US"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$top/tests/lib/tap.sh"
# every check below, counted: both branches of the terminal and PKCS#11
# tests print theirs when the tool is there
plan 42

# --- inspect on PE files that are not kernels (committed corpus) -----------
C=$top/tests/fuzz/corpus/pesig
check "inspect of a small sbsign-signed PE file names its signer" \
	bash -c "'$R' inspect '$C/signed-snakeoil' | grep -qF 'signed by \"$SUBJ\"'"
"$R" inspect "$C/bad-pkcs7" >/dev/null 2>"$tmp/stderr"; rc=$?
check "inspect of a PE file with a damaged PKCS#7: exit $rc, '$(cat "$tmp/stderr")'" \
	bash -c "[ $rc -eq 1 ] && grep -qF '$C/bad-pkcs7: the PE signature is not a PKCS#7 message' '$tmp/stderr'"

# A missing prerequisite is a not ok, never a skip: scripts/deps.sh check
# installs every one of them.
[ -n "$K" ] || bail "RERAND_KERNELS not set: the signing tests need a kernel (scripts/run-check.sh sets it)"
for t in sbsign sbverify openssl; do
	command -v $t >/dev/null || bail "$t not installed (sbsigntool, openssl: scripts/deps.sh check)"
done
[ -r $KEY ] || bail "$KEY missing (ovmf: scripts/deps.sh check)"
k=$("$top/scripts/kernels.sh" pick cloud61 2>"$tmp/kernels.err") ||
	bail "a 6.1 cloud kernel: scripts/kernels.sh pick cloud61: $(tail -n1 "$tmp/kernels.err")"
openssl rsa -passin pass:snakeoil -in $KEY -out "$tmp/snake.key" 2>/dev/null

# No temporary file of ours may remain in the output directory.
no_leftovers() { ! ls -A "$tmp/out" | grep -qE '\.(unsigned|signed|tmp)'; }
mkdir "$tmp/out"

# --- reproducible unsigned output --------------------------------------------
"$R" image "$k" -o "$tmp/out/a.img" && "$R" image "$k" -o "$tmp/out/b.img"
check "two unsigned builds of the same kernel are byte-identical ($(sha256sum <"$tmp/out/a.img" | cut -c1-16)...)" \
	cmp -s "$tmp/out/a.img" "$tmp/out/b.img"
"$R" image "$k" --codec none -o "$tmp/out/c.img"
check "a different option gives a different file (the comparison can fail)" \
	bash -c "! cmp -s '$tmp/out/a.img' '$tmp/out/c.img'"

# --- PEM key --------------------------------------------------------------
if "$R" image "$k" -o "$tmp/out/s.img" --sign-key "$tmp/snake.key" --sign-cert $CERT \
	>"$tmp/log" 2>&1; then ok "signed with a PEM key: exit 0"; else nok "signed with a PEM key"; sed 's/^/#   /' "$tmp/log"; fi
check "sbverify --cert snakeoil accepts it" bash -c "sbverify --cert $CERT '$tmp/out/s.img' >/dev/null"
check "inspect names the signer: $("$R" inspect "$tmp/out/s.img" | grep signature:)" \
	bash -c "'$R' inspect '$tmp/out/s.img' | grep -qF 'signed by \"$SUBJ\"'"
check "inspect --json: signed, signer_subject" bash -c "'$R' inspect --json '$tmp/out/s.img' |
	python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"signed\"] and d[\"signer_subject\"]==\"$SUBJ\" and d[\"signature_size\"]>0, d'"
check "inspect --json of the unsigned image: signed false" bash -c "'$R' inspect --json '$tmp/out/a.img' |
	python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"pe\"] and not d[\"signed\"], d'"
"$R" image "$k" -o "$tmp/out/s2.img" --sign-key "$tmp/snake.key" --sign-cert $CERT 2>/dev/null
sz=$(stat -c %s "$tmp/out/a.img")
check "signed file = the unsigned image's bytes (checksum and certificate entry aside) + signature" \
	bash -c "cmp -s <(head -c $sz '$tmp/out/s.img' | tail -c +$((0x200))) <(tail -c +$((0x200)) '$tmp/out/a.img') &&
		 [ \$(stat -c %s '$tmp/out/s.img') -gt $sz ]"
cp "$tmp/out/s.img" "$tmp/flip.img"
printf '\x55' | dd of="$tmp/flip.img" bs=1 seek=$((0x400 + 0x4000)) conv=notrunc status=none
check "a changed byte in the signed range: sbverify refuses" \
	bash -c "! sbverify --cert $CERT '$tmp/flip.img' >/dev/null 2>&1"
check "inspect --json of the signed image: signature verified (sha256)" bash -c "'$R' inspect --json '$tmp/out/s.img' |
	python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"signature\"]==\"verified\" and d[\"signature_digest\"]==\"sha256\", d'"
# The signer is named only once the signature verifies: a changed file, or
# another file's signature grafted on, shows why and no name.
"$R" inspect "$tmp/flip.img" >"$tmp/flip.out" 2>&1; rc=$?
check "a changed byte: inspect says the signature does not verify, names no signer: $(grep signature: "$tmp/flip.out")" \
	bash -c "[ $rc -eq 0 ] && grep -qF 'signature does not verify: digest mismatch' '$tmp/flip.out' &&
		 ! grep -qF 'SnakeOil' '$tmp/flip.out'"
check "a changed byte: inspect --json signature bad, signature_error, no signer_subject" \
	bash -c "'$R' inspect --json '$tmp/flip.img' | python3 -c 'import json,sys; d=json.load(sys.stdin);
assert d[\"signed\"] and d[\"signature\"]==\"bad\" and d[\"signature_error\"].startswith(\"digest mismatch\") and \"signer_subject\" not in d and \"signer_issuer\" not in d, d'"
# graft FROM TO OUT: TO's bytes up to its certificate table, then FROM's
# certificate table, the directory entry pointed at it.
graft() {
	python3 - "$1" "$2" "$3" <<'PY'
import struct, sys
def certdir(b):
    pe = struct.unpack_from('<I', b, 0x3c)[0]
    opt = pe + 24
    dirs = opt + (112 if struct.unpack_from('<H', b, opt)[0] == 0x20b else 96)
    return dirs + 4 * 8
src, dst = open(sys.argv[1], 'rb').read(), open(sys.argv[2], 'rb').read()
so, ss = struct.unpack_from('<II', src, certdir(src))
do, ds = struct.unpack_from('<II', dst, certdir(dst))
out = bytearray(dst[:do] + src[so:so + ss])
struct.pack_into('<II', out, certdir(dst), do, ss)
open(sys.argv[3], 'wb').write(out)
PY
}
graft "$C/signed-snakeoil" "$tmp/out/s.img" "$tmp/graft.img"
"$R" inspect "$tmp/graft.img" >"$tmp/graft.out" 2>&1; rc=$?
check "another file's signature (same signer) grafted on: does not verify, no signer: $(grep signature: "$tmp/graft.out")" \
	bash -c "[ $rc -eq 0 ] && grep -qF 'signature does not verify: digest mismatch' '$tmp/graft.out' &&
		 ! grep -qF 'SnakeOil' '$tmp/graft.out' && ! sbverify --cert $CERT '$tmp/graft.img' >/dev/null 2>&1"
graft "$tmp/out/s2.img" "$tmp/out/s.img" "$tmp/regraft.img"
check "the same image's own signature grafted back: verifies (the graft itself is sound)" \
	bash -c "'$R' inspect '$tmp/regraft.img' | grep -qF 'signed by \"$SUBJ\"'"
check "no temporary files left after signing" no_leftovers

# --- failed signings leave nothing and say why ---------------------------
# expect_fail DESC PATTERN ARGS...: non-zero exit, message names the output
# and matches PATTERN, the old output untouched, no leftovers.
expect_fail() {
	local desc=$1 pat=$2; shift 2
	echo old >"$tmp/out/f.img"
	"$@" -o "$tmp/out/f.img" >"$tmp/stdout" 2>"$tmp/stderr" </dev/null
	local rc=$?
	if [ $rc -ne 0 ] && grep -qF "$tmp/out/f.img" "$tmp/stderr" && grep -qiE -- "$pat" "$tmp/stderr" &&
	   [ "$(cat "$tmp/out/f.img")" = old ] && no_leftovers; then
		ok "$desc: exit $rc, '$(head -1 "$tmp/stderr")'"
	else
		nok "$desc (exit $rc)"; sed 's/^/#   /' "$tmp/stderr"
	fi
}
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/other.key" -out "$tmp/other.pem" \
	-days 3650 -subj "/CN=rerand test other signer" 2>/dev/null
expect_fail "key and certificate that do not match" "sbsign failed" \
	"$R" image "$k" --sign-key "$tmp/snake.key" --sign-cert "$tmp/other.pem"
# refused before the kernel is read and sbsign runs; the message names the key
echo old >"$tmp/out/f.img"
"$R" image "$k" --sign-key "$tmp/nope.key" --sign-cert $CERT -o "$tmp/out/f.img" 2>"$tmp/stderr"
rc=$?
check "missing key file: exit $rc, '$(head -1 "$tmp/stderr")'" bash -c "[ $rc -eq 1 ] &&
	grep -qF '$tmp/nope.key: cannot read the --sign-key: No such file' '$tmp/stderr' &&
	[ \"\$(cat '$tmp/out/f.img')\" = old ]"
check "missing key file: nothing left beside the output" no_leftovers
expect_fail "encrypted key without a terminal: says so" "passphrase" \
	setsid "$R" image "$k" --sign-key $KEY --sign-cert $CERT
expect_fail "sbsign not installed" "cannot run.*sbsigntool" \
	env RERAND_SBSIGN=/nonexistent/sbsign "$R" image "$k" --sign-key "$tmp/snake.key" --sign-cert $CERT
"$R" image "$k" -o "$tmp/out/u.img" --sign-key "$tmp/snake.key" 2>"$tmp/stderr"
check "--sign-key without --sign-cert: usage error (exit $?)" test $? -eq 64

# --- intermediate certificates, and a signature too big for the room -------
"$R" image "$k" -o "$tmp/out/ac.img" --sign-key "$tmp/snake.key" --sign-cert $CERT \
	--sign-addcert "$tmp/other.pem" 2>"$tmp/stderr"
check "--sign-addcert: signed, sbverify accepts, the signature carries 2 certificates" \
	bash -c "sbverify --cert $CERT '$tmp/out/ac.img' >/dev/null 2>&1 &&
		 sbverify --list '$tmp/out/ac.img' 2>/dev/null | grep -c 'subject:' | grep -qx 2"
openssl genrsa -out "$tmp/bulk.key" 4096 2>/dev/null
for i in $(seq 1 60); do
	openssl req -x509 -key "$tmp/bulk.key" -subj "/CN=rerand bulk $i" -set_serial "$i" -days 1 2>/dev/null
done >"$tmp/bulk.pem"
expect_fail "60 intermediate certificates: the signature does not fit the image's room" \
	"signature runs into the stage's scratch area" \
	"$R" image "$k" --sign-key "$tmp/snake.key" --sign-cert $CERT --sign-addcert "$tmp/bulk.pem"

# --- another signer: sbverify against snakeoil fails, inspect names it -----
"$R" image "$k" -o "$tmp/out/o.img" --sign-key "$tmp/other.key" --sign-cert "$tmp/other.pem" 2>/dev/null
check "signed by another key: sbverify --cert snakeoil refuses" \
	bash -c "! sbverify --cert $CERT '$tmp/out/o.img' >/dev/null 2>&1"
check "signed by another key: inspect names CN=rerand test other signer" \
	bash -c "'$R' inspect '$tmp/out/o.img' | grep -qF 'signed by \"CN=rerand test other signer\"'"

# --- trust: what "verified" was checked against (--trust-cert) -------------
# Without --trust-cert only the signature's own certificate is checked, and
# inspect says so; with it, the signer must be one of the certificates given
# or chain to one through those the signature carries (the kernel's rule:
# no root needed, no dates). A CA and a leaf it signed, made here.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/ca.key" -out "$tmp/ca.pem" -days 30 \
	-subj "/CN=rerand test fleet CA" -addext basicConstraints=critical,CA:TRUE \
	-addext keyUsage=keyCertSign 2>/dev/null
openssl req -new -newkey rsa:2048 -nodes -keyout "$tmp/leaf.key" -out "$tmp/leaf.csr" \
	-subj "/CN=rerand test fleet signer" 2>/dev/null
openssl x509 -req -in "$tmp/leaf.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" -set_serial 7 \
	-days 30 -out "$tmp/leaf.pem" 2>/dev/null
openssl x509 -in "$tmp/ca.pem" -outform DER -out "$tmp/ca.der"
"$R" image "$k" -o "$tmp/out/l.img" --sign-key "$tmp/leaf.key" --sign-cert "$tmp/leaf.pem" 2>/dev/null
check "no --trust-cert: inspect says only the signature's own certificate was checked" \
	bash -c "'$R' inspect '$tmp/out/s.img' | grep -qF 'verified against its own certificate only'"
out=$("$R" inspect --trust-cert "$CERT" "$tmp/out/s.img" 2>&1); rc=$?
check "--trust-cert the signer's own certificate: trusted, exit $rc: $(grep signature: <<<"$out")" \
	bash -c "[ $rc -eq 0 ] && grep -qF 'verified against the trusted certificate \"$SUBJ\"' <<<'$out'"
out=$("$R" inspect --trust-cert "$tmp/ca.der" "$tmp/out/l.img" 2>&1); rc=$?
check "--trust-cert the issuing CA (DER): trusted through the chain, anchor named, exit $rc" \
	bash -c "[ $rc -eq 0 ] && grep -qF 'verified against the trusted certificate \"CN=rerand test fleet CA\"' <<<'$out'"
cat "$tmp/other.pem" "$tmp/ca.pem" >"$tmp/bundle.pem"
check "--trust-cert a PEM bundle holding the CA second: trusted (JSON signature_trust, trust_anchor)" \
	bash -c "'$R' inspect --json --trust-cert '$tmp/bundle.pem' '$tmp/out/l.img' | python3 -c 'import json,sys; d=json.load(sys.stdin);
assert d[\"signature_trust\"]==\"trusted\" and d[\"trust_anchor\"]==\"CN=rerand test fleet CA\", d'"
"$R" inspect --trust-cert "$tmp/other.pem" "$tmp/out/l.img" >"$tmp/untrusted.out" 2>&1; rc=$?
check "--trust-cert a certificate that signed nothing here: NOT trusted, exit 3 (got $rc): $(grep signature: "$tmp/untrusted.out")" \
	bash -c "[ $rc -eq 3 ] && grep -qF 'intact but NOT trusted: the signer'\''s certificate does not chain to a certificate of $tmp/other.pem' '$tmp/untrusted.out'"
"$R" inspect --json --trust-cert "$tmp/other.pem" "$tmp/out/l.img" >"$tmp/untrusted.json" 2>&1; rc=$?
python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
assert d["signature"]=="verified" and d["signature_trust"]=="untrusted" and "trust_anchor" not in d and d["trust_error"], d' \
	"$tmp/untrusted.json" 2>"$tmp/py.err"
check "--trust-cert, JSON of an untrusted signer (exit $rc): signature verified, signature_trust untrusted, trust_error $(tail -n1 "$tmp/py.err")" \
	bash -c "[ $rc -eq 3 ] && [ ! -s '$tmp/py.err' ]"
"$R" inspect --trust-cert "$CERT" "$tmp/out/a.img" >/dev/null 2>&1; rc=$?
check "--trust-cert on an unsigned image: exit 3 (got $rc)" test $rc -eq 3
"$R" inspect --trust-cert "$CERT" "$tmp/flip.img" >/dev/null 2>&1; rc=$?
check "--trust-cert on a signature that does not verify: exit 3 (got $rc)" test $rc -eq 3
"$R" inspect --trust-cert "$tmp/snake.key" "$tmp/out/s.img" >/dev/null 2>"$tmp/stderr"; rc=$?
check "--trust-cert a file without a certificate: exit 1, file named: $(cat "$tmp/stderr")" \
	bash -c "[ $rc -eq 1 ] && grep -qF '$tmp/snake.key: holds no certificate' '$tmp/stderr'"
# rerand load --trust-cert refuses before kexec runs (a stand-in kexec that
# leaves a mark: nothing is ever loaded here).
printf '#!/bin/sh\n[ "$1" = --version ] && { echo kexec-tools 2.0.25; exit 0; }\ntouch "%s/kexec-ran"\n' \
	"$tmp" >"$tmp/fake-kexec"
chmod +x "$tmp/fake-kexec"
ld() { rm -f "$tmp/kexec-ran"; RERAND_LOCKDOWN_FILE=/nonexistent RERAND_SECUREBOOT_FILE=/nonexistent \
	RERAND_BOOT_PARAMS_FILE= "$R" load --kexec "$tmp/fake-kexec" --append console=ttyS0 "$@" \
	>/dev/null 2>"$tmp/stderr"; }
ld --trust-cert "$tmp/other.pem" "$tmp/out/l.img"; rc=$?
check "load --trust-cert, signer not trusted: refused before kexec (exit $rc): $(cat "$tmp/stderr")" \
	bash -c "[ $rc -ne 0 ] && [ ! -e '$tmp/kexec-ran' ] && grep -qF 'not signed by a key of $tmp/other.pem' '$tmp/stderr'"
ld --trust-cert "$tmp/ca.pem" "$tmp/out/a.img"; rc=$?
check "load --trust-cert, unsigned image: refused before kexec (exit $rc)" \
	bash -c "[ $rc -ne 0 ] && [ ! -e '$tmp/kexec-ran' ] && grep -qF 'it is not signed' '$tmp/stderr'"
ld --trust-cert "$tmp/ca.pem" "$tmp/out/l.img"; rc=$?
check "load --trust-cert the issuing CA: kexec runs (exit $rc) $(cat "$tmp/stderr")" \
	bash -c "[ $rc -eq 0 ] && [ -e '$tmp/kexec-ran' ]"

# --- encrypted PEM key, passphrase typed on a terminal ---------------------
if command -v script >/dev/null; then
	rm -f "$tmp/out/p.img"
	(sleep 3; printf 'snakeoil\n') | timeout 120 script -qec \
		"'$R' image '$k' -o '$tmp/out/p.img' --sign-key $KEY --sign-cert $CERT" /dev/null >"$tmp/log" 2>&1
	check "encrypted PEM key: sbsign asks on the terminal, signs with the typed passphrase" \
		bash -c "grep -q 'pass phrase' '$tmp/log' && sbverify --cert $CERT '$tmp/out/p.img' >/dev/null 2>&1"
else
	nok "script (util-linux) not installed: no terminal for the passphrase test (scripts/deps.sh check)"
fi

# --- PKCS#11 key through the engine (SoftHSM token) ---------------------
if command -v softhsm2-util >/dev/null && [ -e /usr/lib/x86_64-linux-gnu/engines-3/pkcs11.so ]; then
	mkdir -p "$tmp/hsm"
	printf 'directories.tokendir = %s\nobjectstore.backend = file\n' "$tmp/hsm" >"$tmp/softhsm2.conf"
	export SOFTHSM2_CONF=$tmp/softhsm2.conf
	openssl pkcs8 -topk8 -nocrypt -in "$tmp/snake.key" -out "$tmp/snake.pk8"
	softhsm2-util --init-token --free --label rerand-test --pin 1234 --so-pin 5678 >/dev/null &&
		softhsm2-util --import "$tmp/snake.pk8" --token rerand-test --label snake --id 01 \
			--pin 1234 >/dev/null
	uri='pkcs11:token=rerand-test;object=snake;type=private;pin-value=1234'
	"$R" image "$k" -o "$tmp/out/h.img" --sign-engine pkcs11 --sign-key "$uri" --sign-cert $CERT \
		>"$tmp/log" 2>&1
	check "PKCS#11 key (SoftHSM through the pkcs11 engine): sbverify accepts" \
		bash -c "sbverify --cert $CERT '$tmp/out/h.img' >/dev/null"
	expect_fail "PKCS#11 key that is not on the token" "sbsign failed" \
		"$R" image "$k" --sign-engine pkcs11 --sign-key 'pkcs11:token=rerand-test;object=nope;type=private;pin-value=1234' --sign-cert $CERT
else
	nok "softhsm2 or the pkcs11 engine (libengine-pkcs11-openssl) not installed (scripts/deps.sh check)"
fi
done_
