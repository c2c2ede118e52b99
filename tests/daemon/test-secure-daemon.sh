#!/bin/bash
# rerandd under lockdown, host side: real build/rerandd and build/rerand,
# lockdown and SecureBoot from fixture files ([Paths] Lockdown=, SecureBoot=, BootParams=),
# kexec-tools REPLACED by a stand-in that only records what it was given
# (nothing is ever loaded on this machine).  Checks: with no signed image
# rerandd is blocked with the reason, logged once, and never tries an
# unsigned image; a pre-signed <release>.img is staged byte for byte with
# kexec -s; SignKey= signs on the machine; a pre-signed image of another
# release is refused; status and metrics show Secure Boot, lockdown and the
# signer.  The real thing runs in the Secure Boot guest (sb-e2e).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/rerandd.sh"
rerandd_test secd

rerandd_need_bins
rerandd_kernel
OTHER=$kdir/vmlinuz-6.12.118+deb12-cloud-amd64
REL=6.1.0-57-cloud-amd64
[ -r "$OTHER" ] || bail "$OTHER: a kernel to stage is needed"
openssl req -x509 -newkey rsa:2048 -nodes -subj "/CN=rerand fleet db/O=rerand tests" -days 30 \
	-keyout "$tmp/db.key" -out "$tmp/db.crt" 2>/dev/null || bail "openssl req"
SUBJECT="O=rerand tests,CN=rerand fleet db"
# the build host's work: one signed image per kernel release
"$R" image "$KERNEL" -o "$tmp/presigned.img" --sign-key "$tmp/db.key" --sign-cert "$tmp/db.crt" \
	2>"$tmp/sign.err" || bail "rerand image --sign-key: $(cat "$tmp/sign.err")"
"$R" image "$OTHER" -o "$tmp/other.img" --sign-key "$tmp/db.key" --sign-cert "$tmp/db.crt" \
	2>"$tmp/sign.err" || bail "rerand image --sign-key: $(cat "$tmp/sign.err")"

cat >"$tmp/fake-kexec" <<'EOF'
#!/bin/sh
# STAND-IN for kexec-tools (test-secure-daemon.sh): records, loads nothing.
[ "$1" = --version ] && { echo "kexec-tools 2.0.25"; exit 0; }
d=$(dirname "$(dirname "$0")")
for a in "$@"; do
	printf '%s\n' "$a"
	case $a in /proc/self/fd/*) cat "$a" >"$d/staged.img" ;; esac
done >"$d/kexec-args.$$"
printf '%s\n' "$*" >>"$d/kexec.log"
exit 0
EOF
chmod +x "$tmp/fake-kexec"
rerandd_no_reboot "$tmp/no-reboot"

# inst ID [extra [Stage] lines]: an instance locked down by its fixtures
inst() {
	local id=$1 extra=${2:-} hd=$tmp/$1
	rerandd_dirs "$hd" state/images bin pre post signed
	cp "$tmp/fake-kexec" "$hd/bin/kexec"
	rerandd_fixtures "$hd" "root=/dev/vda1 ro console=ttyS0"
	echo 0 >"$hd/crash_size"
	echo 0 >"$hd/crash_loaded"
	printf 'none [integrity] confidentiality\n' >"$hd/lockdown"
	printf '\x06\x00\x00\x00\x01' >"$hd/SecureBoot"
	mkfifo "$hd/uevents"
	rerandd_conf "$hd" "$hd/bin/kexec" "$hd/no-setup-data" <<EOF
PreRebootDirectory=$hd/pre
PostBootDirectory=$hd/post
KexecCrashSize=$hd/crash_size
KexecCrashLoaded=$hd/crash_loaded
ProcVmcore=$hd/no-vmcore
Uevents=$hd/uevents
Lockdown=$hd/lockdown
SecureBoot=${SB_FILE:-$hd/SecureBoot}
BootParams=${BP_FILE:-}

[Stage]
Kernel=$KERNEL
Initrd=none
CommandLine=console=ttyS0 quiet
SignedImageDirectory=$hd/signed
$extra

$(rerandd_policy MaxLayoutAge=30d)

$(rerandd_reboot_by "$tmp/no-reboot $hd")
EOF
}
run() { rerandd_start "$tmp/$1"; }
st() { rerandd_status "$tmp/$1" ${2:-}; }
status_has() { st "$1" 2>/dev/null | grep -qF -- "$2"; }
staged() { status_has "$1" "staged:            yes"; }

inst blocked
inst presigned
cp "$tmp/presigned.img" "$tmp/presigned/signed/$REL.img"
inst signhere "SignKey=$tmp/db.key
SignCert=$tmp/db.crt"
inst wrongrel
cp "$tmp/other.img" "$tmp/wrongrel/signed/$REL.img"
inst late
# TrustCert=: the signer must chain to a certificate the admin gives
openssl req -x509 -newkey rsa:2048 -nodes -subj "/CN=rerand some other CA" -days 30 \
	-keyout "$tmp/other-ca.key" -out "$tmp/other-ca.crt" 2>/dev/null || bail "openssl req"
inst trusted "TrustCert=$tmp/db.crt"
cp "$tmp/presigned.img" "$tmp/trusted/signed/$REL.img"
inst untrusted "TrustCert=$tmp/other-ca.crt"
cp "$tmp/presigned.img" "$tmp/untrusted/signed/$REL.img"
# the pre-signed image with one byte changed after signing
inst tampered
cp "$tmp/presigned.img" "$tmp/tampered/signed/$REL.img"
printf '\x55' | dd of="$tmp/tampered/signed/$REL.img" bs=1 seek=$((0x400 + 0x4000)) conv=notrunc status=none
# no efivarfs (a container, an initramfs): Secure Boot from boot_params'
# secure_boot byte (0x1ec; 3 = enabled)
SB_FILE=$tmp/bponly/no-efivars BP_FILE=$tmp/bponly/boot_params inst bponly
python3 -c 'import sys; b = bytearray(4096); b[0x1ec] = 3; sys.stdout.buffer.write(b)' >"$tmp/bponly/boot_params"
for id in blocked presigned signhere wrongrel late bponly tampered trusted untrusted; do run "$id"; done
for id in blocked presigned signhere wrongrel late bponly tampered trusted untrusted; do
	rerandd_wait_up "$tmp/$id"
done

# ---- nothing signed: blocked with the reason ---------------------------------------------
wait_for 20 status_has blocked "stage error:"
sleep 4                         # several CheckInterval=1s evaluations
reason="the kernel is locked down (lockdown: integrity, Secure Boot: on) and there is no signed image of $KERNEL for release $REL: put one at $tmp/blocked/signed/$REL.img (made with 'rerand image --sign-key KEY --sign-cert CERT' on a build host), or set SignKey= and SignCert= in [Stage] (signing on this machine weakens lockdown); see docs/secure-boot.md"
echo "# blocked: $(st blocked | grep '^stage error:')"
check "no signed image: status gives the reason" status_has blocked "stage error:       $reason"
check "no signed image: not staged; json says locked down, Secure Boot on, integrity" \
	eval 'status_has blocked "staged:            no" && st blocked --json | python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(not (d[\"staged\"] is False and d[\"locked_down\"] is True and d[\"secure_boot\"]==\"on\" and d[\"lockdown\"]==\"integrity\"))"'
check "no signed image: the reason is logged once, not at every check ($(grep -c 'staging failed' "$tmp/blocked/log") lines)" \
	test "$(grep -cF "staging failed: $reason" "$tmp/blocked/log")" = 1
check "no signed image: kexec never ran, no unsigned image was built or tried" \
	eval 'test ! -e "$tmp/blocked/kexec.log" && test -z "$(ls "$tmp/blocked/state/images")"'
check "no signed image: status shows Secure Boot on, lockdown integrity" \
	status_has blocked "secure boot:       on, lockdown integrity (signed images only)"
check "no signed image: metrics say locked down, nothing signed staged" \
	eval 'grep -qx "rerand_locked_down 1" "$tmp/blocked/run/rerand.prom" && grep -qx "rerand_staged_image_signed 0" "$tmp/blocked/run/rerand.prom" && grep -qx "rerand_secure_boot_info{state=\"on\"} 1" "$tmp/blocked/run/rerand.prom"'

# a reload that gives it a key ends the block at once (not at the next retry)
printf '[Stage]\nSignKey=%s\nSignCert=%s\n' "$tmp/db.key" "$tmp/db.crt" >"$tmp/blocked/conf.d/key.conf"
kill -HUP "$(cat "$tmp/blocked/pid")"
check "blocked, then SignKey= by a reload: staged within 30 s, signed here" \
	eval 'wait_for 30 staged blocked && status_has blocked "staged image:      signed-here, signed by \"$SUBJECT\"" && ! status_has blocked "stage error:"'

# ---- a pre-signed image: staged byte for byte through kexec_file_load ------------------------
wait_for 30 staged presigned
check "pre-signed: staged, status names the source and the signer" \
	status_has presigned "staged image:      pre-signed, signed by \"$SUBJECT\""
check "pre-signed: kexec -s -l (kexec_file_load by itself)" \
	eval 'grep -qx -- -s "$tmp"/presigned/kexec-args.* && grep -qx -- -l "$tmp"/presigned/kexec-args.*'
check "pre-signed: the staged bytes are the signed file's, unchanged" cmp -s "$tmp/presigned.img" "$tmp/presigned/staged.img"
check "pre-signed: nothing built in the cache" test -z "$(ls "$tmp/presigned/state/images")"
check "pre-signed: metrics carry the signer" \
	grep -qxF "rerand_staged_image_info{source=\"pre-signed\",signer=\"$SUBJECT\"} 1" "$tmp/presigned/run/rerand.prom"
check "pre-signed: the log names the image and the signer" \
	grep -qF "pre-signed image $tmp/presigned/signed/$REL.img signed by \"$SUBJECT\"" "$tmp/presigned/log"
check "pre-signed: status json signer and image_source" \
	eval 'st presigned --json | python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(not (d[\"signer\"]==\"$SUBJECT\" and d[\"image_source\"]==\"pre-signed\"))"'
check "pre-signed: status json signature verified, text says so" \
	eval 'st presigned --json | python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(d[\"signature\"]!=\"verified\")" &&
	      status_has presigned "signed by \"$SUBJECT\" (signature verified against its own certificate only: no TrustCert=)"'

# ---- signing on the machine (SignKey=) -----------------------------------------------------------
wait_for 60 staged signhere
check "SignKey=: signed here, cached as <sha>.signed.img, staged with -s" \
	eval 'status_has signhere "staged image:      signed-here, signed by \"$SUBJECT\"" &&
	      ls "$tmp"/signhere/state/images/*.signed.img >/dev/null && grep -qx -- -s "$tmp"/signhere/kexec-args.*'
check "SignKey=: the staged bytes are the cached signed image's" \
	eval 'cmp -s "$tmp"/signhere/state/images/*.signed.img "$tmp/signhere/staged.img"'

# ---- SignKey= that others can read, or not root's: --check-config refuses it --------------------
# (the same check refuses it at staging: tests/kernel/test_secure_daemon.c)
cc() { "$RERANDD" --check-config --config "$tmp/keycheck.conf" --config-dir "$tmp/none.d" 2>&1; }
cp "$tmp/db.key" "$tmp/loose.key"
sed "s|^SignKey=.*|SignKey=$tmp/loose.key|" "$tmp/signhere/rerand.conf" >"$tmp/keycheck.conf"
chmod 644 "$tmp/loose.key"
out=$(cc); rc=$?
check "--check-config: a world-readable SignKey= is refused, naming the file and its mode (exit $rc): $out" \
	eval '[ $rc -ne 0 ] && grep -qF "$tmp/loose.key: signing key (SignKey=) has mode 0644, readable by everyone" <<<"$out" &&
	      ! grep -q "configuration OK" <<<"$out"'
chmod 640 "$tmp/loose.key"
out=$(cc); rc=$?
check "--check-config: a group-readable SignKey= is refused (exit $rc)" \
	eval '[ $rc -ne 0 ] && grep -qF "$tmp/loose.key: signing key (SignKey=) has mode 0640, readable by its group" <<<"$out"'
chmod 600 "$tmp/loose.key"
if [ "$(id -u)" = 0 ]; then
	chown 65534 "$tmp/loose.key"
	out=$(cc); rc=$?
	check "--check-config: a SignKey= not owned by root is refused (exit $rc)" \
		eval '[ $rc -ne 0 ] && grep -qF "$tmp/loose.key: signing key (SignKey=) is owned by uid 65534, not root" <<<"$out"'
	chown 0 "$tmp/loose.key"
	out=$(cc); rc=$?
	check "--check-config: root's SignKey= of mode 0600 passes (exit $rc)" \
		eval '[ $rc -eq 0 ] && grep -q "configuration OK" <<<"$out"'
	# its directory too (issue 39, point 9): whoever can write it can swap the key
	mkdir -m 0775 "$tmp/keydir"; cp -p "$tmp/loose.key" "$tmp/keydir/db.key"
	sed "s|^SignKey=.*|SignKey=$tmp/keydir/db.key|" "$tmp/signhere/rerand.conf" >"$tmp/keycheck.conf"
	out=$(cc); rc=$?
	check "--check-config: a SignKey= in a group-writable directory is refused, naming it (exit $rc)" \
		eval '[ $rc -ne 0 ] && grep -qF "$tmp/keydir/db.key: signing key (SignKey=): its directory $tmp/keydir has mode 0775, writable by its group: refused" <<<"$out"'
	chmod 0755 "$tmp/keydir"; chown 65534 "$tmp/keydir"
	out=$(cc); rc=$?
	check "--check-config: a SignKey= in a directory owned by nobody is refused (exit $rc)" \
		eval '[ $rc -ne 0 ] && grep -qF "$tmp/keydir/db.key: signing key (SignKey=): its directory $tmp/keydir is owned by uid 65534, not root: refused" <<<"$out"'
	chown 0 "$tmp/keydir"; chmod 0777 "$tmp/keydir"; ln -s "$tmp/keydir/db.key" "$tmp/db-link.key"
	sed "s|^SignKey=.*|SignKey=$tmp/db-link.key|" "$tmp/signhere/rerand.conf" >"$tmp/keycheck.conf"
	out=$(cc); rc=$?
	check "--check-config: a SignKey= symlink to a key in an everyone-writable directory is refused (exit $rc)" \
		eval '[ $rc -ne 0 ] && grep -qF "$tmp/db-link.key: signing key (SignKey=): its directory $tmp/keydir (where the key is) has mode 0777, writable by everyone: refused" <<<"$out"'
	chmod 0755 "$tmp/keydir"
	out=$(cc); rc=$?
	check "--check-config: ... and accepted once that directory is root's 0755 (exit $rc)" \
		eval '[ $rc -eq 0 ] && grep -q "configuration OK" <<<"$out"'
else
	nok "--check-config: SignKey= ownership: the test is not root (run it as root, as make check does)"
fi

# ---- TrustCert=: verified against what, and a signer nobody trusts ---------------------------
wait_for 20 staged trusted
check "TrustCert= the signer's certificate: staged, status says it chains to it: $(st trusted | grep '^staged image:')" \
	eval 'staged trusted && status_has trusted "pre-signed, signed by \"$SUBJECT\" (signature verified, chains to TrustCert='"'"'s \"$SUBJECT\")"'
check "TrustCert=: status json signature_trust trusted, trust_anchor; without it: own-certificate" \
	eval 'st trusted --json | python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(not (d[\"signature_trust\"]==\"trusted\" and d[\"trust_anchor\"]==\"$SUBJECT\"))" &&
	      st presigned --json | python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(not (d[\"signature_trust\"]==\"own-certificate\" and d[\"trust_anchor\"]==\"\"))"'
wait_for 20 status_has untrusted "stage error:"
check "TrustCert= another CA: refused before kexec, the reason names TrustCert=: $(st untrusted | grep '^stage error:' | cut -c1-200)..." \
	eval 'status_has untrusted "stage error:       $tmp/untrusted/signed/$REL.img: signed by \"$SUBJECT\", not trusted: the signer'"'"'s certificate does not chain to a certificate of $tmp/other-ca.crt" &&
	      status_has untrusted "staged:            no" && test ! -e "$tmp/untrusted/kexec.log"'

# ---- a pre-signed image of another release ----------------------------------------------------------
wait_for 20 status_has wrongrel "stage error:"
check "another release's image: refused, nothing staged: $(st wrongrel | grep '^stage error:' | cut -c1-160)..." \
	eval 'status_has wrongrel "stage error:       $tmp/wrongrel/signed/$REL.img: an image of release \"6.12.118+deb12-cloud-amd64\", not of $KERNEL'"'"'s $REL" &&
	      test ! -e "$tmp/wrongrel/kexec.log"'

# ---- a pre-signed image changed after signing: refused, its signer never shown ----------------
wait_for 20 status_has tampered "stage error:"
check "changed pre-signed image: refused, nothing staged, no signer: $(st tampered | grep '^stage error:' | cut -c1-160)..." \
	eval 'status_has tampered "stage error:       $tmp/tampered/signed/$REL.img: signature does not verify: digest mismatch" &&
	      status_has tampered "staged:            no" && test ! -e "$tmp/tampered/kexec.log" &&
	      ! { st tampered; st tampered --json; cat "$tmp/tampered/run/rerand.prom"; } | grep -qF "$SUBJECT"'

# ---- the signed image arrives after the kernel (shipped separately) -------------------------
wait_for 20 status_has late "stage error:"
cp "$tmp/presigned.img" "$tmp/late/$REL.img.part" && mv "$tmp/late/$REL.img.part" "$tmp/late/signed/$REL.img"
t0=$(date +%s%3N)
wait_for 20 staged late
t1=$(date +%s%3N)
check "a signed image dropped into SignedImageDirectory= is staged at once ($((t1 - t0)) ms), not at the 5-minute retry" \
	eval 'staged late && status_has late "staged image:      pre-signed, signed by \"$SUBJECT\"" && [ $((t1 - t0)) -lt 15000 ]'

wait_for 20 status_has bponly "stage error:"
check "no efivarfs: Secure Boot read from boot_params (on), so signed images only: $(st bponly | grep '^secure boot:')" \
	eval 'status_has bponly "secure boot:       on (per boot_params: no efivarfs), lockdown integrity (signed images only)" &&
	      st bponly --json | grep -q "\"secure_boot\":\"on\"" && test ! -e "$tmp/bponly/kexec.log"'

check "no instance ever asked for a reboot" eval '! ls "$tmp"/*/reboot-called >/dev/null 2>&1'
check "no 0x number in any status or log" eval '! { for i in blocked presigned signhere wrongrel late bponly tampered trusted untrusted; do st $i; st $i --json; cat "$tmp/$i/log"; done; } | grep -qi "0x"'
echo "1..$n"
