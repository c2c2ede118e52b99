#!/bin/bash
# `rerand load` under lockdown and the seed rule, on this host with a
# stand-in for kexec (nothing is ever staged here) and fixture lockdown and
# SecureBoot files (RERAND_LOCKDOWN_FILE, RERAND_SECUREBOOT_FILE):
# kexec_file_load chosen by itself, unsigned images refused before kexec
# runs, kexec's refusals turned into messages that say what to do, and
# signed or seeded-by-others images staged byte for byte.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
R=$top/build/rerand
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$top/tests/lib/tap.sh"

# The kernel by role, not by build (scripts/kernels.sh: RERAND_KERNELS,
# ../shared/kernels or Debian's packages): Debian 12's 6.1 cloud kernel,
# whatever its build number that day.  None is a failure, never a skip.
kernel=$("$top/scripts/kernels.sh" pick cloud61 2>"$tmp/kernels.err") ||
	bail "a 6.1 cloud kernel to read: scripts/kernels.sh pick cloud61: $(tail -n1 "$tmp/kernels.err")"
img=$tmp/k.img
"$R" image "$kernel" -o "$img" || bail "rerand image $kernel"
if "$R" inspect "$img" | grep -q 'signature: *signed'; then
	nok "a fresh image is unsigned"
fi

# Stand-in for kexec-tools: records its arguments and the image it was
# given, says what FAKE_KEXEC_STDERR says, exits FAKE_KEXEC_RC.
cat >"$tmp/fake-kexec" <<'EOS'
#!/bin/bash
if [ "$1" = --version ]; then echo "kexec-tools ${FAKE_KEXEC_VERSION:-2.0.25}"; exit 0; fi
out=$FAKE_KEXEC_DIR/call.$$
printf '%s\n' "$@" >"$out.args"
for a in "$@"; do case $a in /proc/self/fd/*) cat "$a" >"$out.image";; esac; done
# FAKE_KEXEC_L_EPERM: a locked-down kernel seen without securityfs, which
# refuses kexec_load (EPERM, as kexec-tools words it) and takes -s
if [ -n "${FAKE_KEXEC_L_EPERM:-}" ] && ! printf '%s\n' "$@" | grep -qx -- -s; then
	echo "kexec_load failed: Operation not permitted" >&2; exit 255
fi
# FAKE_KEXEC_NO_KCORE: kexec-tools in rerandd.service's sandbox, where
# /proc/kcore cannot be opened: kexec -p (kexec_load) stops before the
# system call, kexec -s -p does not read it
if [ -n "${FAKE_KEXEC_NO_KCORE:-}" ] && ! printf '%s\n' "$@" | grep -qx -- -s; then
	echo "Cannot open /proc/kcore: Permission denied" >&2
	echo "Cannot load /proc/self/fd/3" >&2; exit 255
fi
[ -n "${FAKE_KEXEC_STDERR:-}" ] && printf '%s\n' "$FAKE_KEXEC_STDERR" >&2
exit ${FAKE_KEXEC_RC:-0}
EOS
chmod +x "$tmp/fake-kexec"
export FAKE_KEXEC_DIR

# fixtures laid out as the kernel shows them
printf '[none] integrity confidentiality\n' >"$tmp/ld-none"
printf 'none [integrity] confidentiality\n' >"$tmp/ld-integrity"
printf 'none integrity [confidentiality]\n' >"$tmp/ld-conf"
printf 'none integrity confidentiality\n' >"$tmp/ld-bad"
printf '\x06\x00\x00\x00\x01' >"$tmp/sb-on"
printf '\x06\x00\x00\x00\x00' >"$tmp/sb-off"

# load NAME ENV... -- ARGS...: run rerand load with a fresh call directory
# $tmp/NAME; stderr in $tmp/NAME.err, exit status in $rc.
load() {
	local name=$1; shift
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	rm -rf "$tmp/$name"; mkdir -p "$tmp/$name"
	env FAKE_KEXEC_DIR="$tmp/$name" RERAND_LOCKDOWN_FILE="$tmp/ld-none" \
		RERAND_SECUREBOOT_FILE="$tmp/sb-off" RERAND_BOOT_PARAMS_FILE= "${envs[@]}" \
		"$R" load "$img" --kexec "$tmp/fake-kexec" --append "console=ttyS0" "$@" \
		>/dev/null 2>"$tmp/$name.err"
	rc=$?
}
calls() { ls "$tmp/$1"/*.args 2>/dev/null | wc -l; }
same_as_file() { cmp -s "$img" "$tmp/$1"/*.image; }
has_arg() { grep -qx -- "$2" "$tmp/$1"/*.args; }
err_has() { grep -qF -- "$2" "$tmp/$1.err"; }
seed_differs() { ! cmp -s "$img" "$tmp/$1"/*.image && [ "$(cmp -l "$img" "$tmp/$1"/*.image | wc -l)" -ge 16 ]; }

# --- the seed rule ---------------------------------------------------------------
load kt25 FAKE_KEXEC_VERSION=2.0.25 --
check "kexec_load with kexec-tools 2.0.25 (which adds SETUP_RNG_SEED): the image is staged byte for byte" \
	bash -c "[ $rc -eq 0 ] && $(declare -f same_as_file); tmp=$tmp; img=$img; same_as_file kt25"
load kt24 FAKE_KEXEC_VERSION=2.0.24 --
check "kexec_load with kexec-tools 2.0.24: rerand load writes the seed into the header in memory" \
	bash -c "[ $rc -eq 0 ] && $(declare -f seed_differs); tmp=$tmp; img=$img; seed_differs kt24"
load ktunknown FAKE_KEXEC_VERSION=unknown --
check "kexec_load, kexec-tools version unknown: seed written (assume the older)" \
	bash -c "[ $rc -eq 0 ] && $(declare -f seed_differs); tmp=$tmp; img=$img; seed_differs ktunknown"
rel=$(uname -r); maj=${rel%%.*}; min=${rel#*.}; min=${min%%.*}
if [ "$maj" -ge 6 ]; then
	load fsys --  --file-syscall
	check "kexec_file_load on Linux $rel (the kernel adds SETUP_RNG_SEED): staged byte for byte, with -s" \
		bash -c "[ $rc -eq 0 ] && $(declare -f same_as_file has_arg); tmp=$tmp; img=$img; same_as_file fsys && has_arg fsys -s"
else
	skip "kexec_file_load seed rule needs a Linux >= 6.0 host (this is $rel)"
fi

# --- no securityfs, no efivarfs (issue 27, point 9) -------------------------------
# boot_params as /sys/kernel/boot_params/data shows it: 4 KiB, secure_boot at 0x1ec
python3 -c "import sys; b=bytearray(4096); b[0x1ec]=3; sys.stdout.buffer.write(b)" >"$tmp/bp-sb-on"
python3 -c "import sys; b=bytearray(4096); sys.stdout.buffer.write(b)" >"$tmp/bp-unset"
echo 1073741824 >"$tmp/crash-size"
load bpsb RERAND_LOCKDOWN_FILE=/nonexistent/lockdown RERAND_SECUREBOOT_FILE=/nonexistent/efi/efivars/SecureBoot \
	RERAND_BOOT_PARAMS_FILE="$tmp/bp-sb-on" --
check "no securityfs nor efivarfs, boot_params says Secure Boot on: unsigned image refused before kexec (exit $rc): $(head -c 160 "$tmp/bpsb.err")" \
	bash -c "[ $rc -eq 1 ] && [ \$(ls '$tmp/bpsb' | wc -l) = 0 ] && grep -qF 'Secure Boot: on per boot_params' '$tmp/bpsb.err'"
load eperm RERAND_LOCKDOWN_FILE=/nonexistent/lockdown RERAND_SECUREBOOT_FILE=/nonexistent/efi/efivars/SecureBoot \
	RERAND_BOOT_PARAMS_FILE="$tmp/bp-unset" FAKE_KEXEC_L_EPERM=1 --
check "lockdown unknown, kexec_load refused with EPERM: retried with kexec_file_load and said so (exit $rc)" \
	bash -c "[ $rc -eq 0 ] && [ \$(ls '$tmp/eperm'/*.args | wc -l) = 2 ] && [ \$(grep -lx -- -s '$tmp/eperm'/*.args | wc -l) = 1 ] && \
		grep -q -- 'kexec_load was refused (Operation not permitted) and the lockdown state is unknown.*retrying with kexec_file_load (kexec -s)' '$tmp/eperm.err'"
load epermcrash RERAND_LOCKDOWN_FILE=/nonexistent/lockdown RERAND_SECUREBOOT_FILE=/nonexistent/efi/efivars/SecureBoot \
	RERAND_BOOT_PARAMS_FILE="$tmp/bp-unset" RERAND_KEXEC_CRASH_SIZE_FILE="$tmp/crash-size" FAKE_KEXEC_L_EPERM=1 -- --crash
check "the same for --crash: kexec -s -p after kexec -p was refused (exit $rc)" \
	bash -c "[ $rc -eq 0 ] && [ \$(ls '$tmp/epermcrash'/*.args | wc -l) = 2 ] && [ \$(grep -lx -- -p '$tmp/epermcrash'/*.args | wc -l) = 2 ] && \
		[ \$(grep -lx -- -s '$tmp/epermcrash'/*.args | wc -l) = 1 ]"
load nokcore RERAND_KEXEC_CRASH_SIZE_FILE="$tmp/crash-size" FAKE_KEXEC_NO_KCORE=1 -- --crash
check "--crash where kexec-tools cannot read /proc/kcore (rerandd.service): retried as kexec -s -p and said so (exit $rc)" \
	bash -c "[ $rc -eq 0 ] && [ \$(ls '$tmp/nokcore'/*.args | wc -l) = 2 ] && [ \$(grep -lx -- -s '$tmp/nokcore'/*.args | wc -l) = 1 ] && \
		grep -q 'cannot read /proc/kcore.*retrying with kexec_file_load (kexec -s -p)' '$tmp/nokcore.err'"
load nokcorel FAKE_KEXEC_NO_KCORE=1 --
check "the same failure without --crash: no retry, one call (exit $rc)" \
	bash -c "[ $rc -eq 1 ] && [ \$(ls '$tmp/nokcorel'/*.args | wc -l) = 1 ] && ! grep -q retrying '$tmp/nokcorel.err'"
load epermknown FAKE_KEXEC_L_EPERM=1 --
check "lockdown known ([none]) and kexec_load refused: no retry, one call (exit $rc)" \
	bash -c "[ $rc -eq 1 ] && [ \$(ls '$tmp/epermknown'/*.args | wc -l) = 1 ] && ! grep -q retrying '$tmp/epermknown.err'"

# --- lockdown detection -------------------------------------------------------
load none-sb RERAND_SECUREBOOT_FILE="$tmp/sb-on" --
check "lockdown [none] under Secure Boot: kexec_load as asked (-l, no -s)" \
	bash -c "[ $rc -eq 0 ] && $(declare -f has_arg); tmp=$tmp; has_arg none-sb -l && ! has_arg none-sb -s"

refusal="not signed, and the kernel is locked down (lockdown: integrity, Secure Boot: on), so kexec_file_load accepts only signed images. Sign it with 'rerand image --sign-key KEY --sign-cert CERT' and, if the certificate is not in db or MOK, enroll it with 'mokutil --import CERT' (then reboot and confirm in MokManager). Nothing was staged; any kernel staged before is unchanged"
load integ RERAND_LOCKDOWN_FILE="$tmp/ld-integrity" RERAND_SECUREBOOT_FILE="$tmp/sb-on" --
check "integrity + Secure Boot, unsigned image: refused before kexec runs (exit $rc, $(calls integ) kexec calls): $(cat "$tmp/integ.err")" \
	bash -c "[ $rc -eq 1 ] && [ $(calls integ) -eq 0 ] && grep -qF -- \"$img: $refusal\" '$tmp/integ.err'"
load integ-crash RERAND_LOCKDOWN_FILE="$tmp/ld-integrity" RERAND_SECUREBOOT_FILE="$tmp/sb-on" -- --crash
check "the same for a crash kernel (no kexec -p, so the loaded one is not dropped)" \
	bash -c "[ $rc -eq 1 ] && [ $(calls integ-crash) -eq 0 ] && grep -qF 'not signed, and the kernel is locked down' '$tmp/integ-crash.err'"
load conf RERAND_LOCKDOWN_FILE="$tmp/ld-conf" RERAND_SECUREBOOT_FILE=/nonexistent/efivars/SecureBoot --
check "confidentiality without EFI: refused, names the mode" \
	bash -c "[ $rc -eq 1 ] && [ $(calls conf) -eq 0 ] && grep -qF '(lockdown: confidentiality, Secure Boot: unsupported)' '$tmp/conf.err'"
load nold RERAND_LOCKDOWN_FILE="$tmp/absent" RERAND_SECUREBOOT_FILE="$tmp/sb-on" --
check "no lockdown file but Secure Boot on: treated as locked down" \
	bash -c "[ $rc -eq 1 ] && [ $(calls nold) -eq 0 ] && grep -qF '(lockdown: unknown, Secure Boot: on)' '$tmp/nold.err'"
load bad RERAND_LOCKDOWN_FILE="$tmp/ld-bad" --
check "a malformed lockdown file: refused, names the file: $(cat "$tmp/bad.err")" \
	bash -c "[ $rc -eq 1 ] && [ $(calls bad) -eq 0 ] && grep -qF '$tmp/ld-bad: no mode in brackets' '$tmp/bad.err' && grep -qF 'nothing was staged' '$tmp/bad.err'"

# --- kexec's refusals ----------------------------------------------------------
keyrej="kexec_file_load failed: $(python3 -c 'import os,errno; print(os.strerror(errno.EKEYREJECTED))')"
load rej FAKE_KEXEC_RC=255 FAKE_KEXEC_STDERR="$keyrej" -- --file-syscall
check "kexec_file_load refuses an unsigned image: the message quotes kexec and says to sign: $(tail -1 "$tmp/rej.err")" \
	bash -c "[ $rc -eq 1 ] && grep -qF -- \"$img: the kernel refused the image (kexec said \\\"$keyrej\\\"): it is not signed\" '$tmp/rej.err' && grep -qF 'any kernel staged before is unchanged' '$tmp/rej.err'"
check "kexec's own stderr is passed through" grep -qx -- "$keyrej" "$tmp/rej.err"
echo 1073741824 >"$tmp/crash_size"
load rejp RERAND_KEXEC_CRASH_SIZE_FILE="$tmp/crash_size" FAKE_KEXEC_RC=255 FAKE_KEXEC_STDERR="$keyrej" -- --file-syscall --crash
check "a refused crash kernel: says the loaded one is dropped" \
	bash -c "[ $rc -eq 1 ] && grep -qF 'the kernel drops the loaded crash kernel before it loads a new one: check /sys/kernel/kexec_crash_loaded' '$tmp/rejp.err'"
load other FAKE_KEXEC_RC=1 FAKE_KEXEC_STDERR="Could not find a free area of memory for the image" --
check "another kexec failure: exit status and kexec's last line: $(tail -1 "$tmp/other.err")" \
	bash -c "[ $rc -eq 1 ] && grep -qF -- \"$img: $tmp/fake-kexec -l failed (exit status 1): \\\"Could not find a free area of memory for the image\\\"; any kernel staged before is unchanged\" '$tmp/other.err'"

# --- signed images -------------------------------------------------------------
openssl req -x509 -newkey rsa:2048 -nodes -subj "/CN=rerand test db key/O=rerand tests" -days 30 \
	-keyout "$tmp/db.key" -out "$tmp/db.crt" 2>/dev/null
if "$R" image "$kernel" -o "$tmp/s.img" --sign-key "$tmp/db.key" \
	--sign-cert "$tmp/db.crt" 2>"$tmp/sign.err"; then
	img=$tmp/s.img
	load sig RERAND_LOCKDOWN_FILE="$tmp/ld-integrity" RERAND_SECUREBOOT_FILE="$tmp/sb-on" --
	if [ "$maj" -ge 6 ]; then
		check "integrity + Secure Boot, signed image: kexec -s -l by itself, staged byte for byte" \
			bash -c "[ $rc -eq 0 ] && $(declare -f same_as_file has_arg); tmp=$tmp; img=$img; same_as_file sig && has_arg sig -s && has_arg sig -l"
	else
		skip "signed image staged unchanged needs a Linux >= 6.0 host (this is $rel)"
	fi
	load sigp RERAND_LOCKDOWN_FILE="$tmp/ld-integrity" RERAND_SECUREBOOT_FILE="$tmp/sb-on" \
		RERAND_KEXEC_CRASH_SIZE_FILE="$tmp/crash_size" -- --crash
	check "integrity, signed crash kernel: kexec -s -p" \
		bash -c "[ $rc -eq 0 ] && $(declare -f has_arg); tmp=$tmp; has_arg sigp -s && has_arg sigp -p"
	load sigrej RERAND_LOCKDOWN_FILE="$tmp/ld-integrity" RERAND_SECUREBOOT_FILE="$tmp/sb-on" \
		FAKE_KEXEC_RC=255 FAKE_KEXEC_STDERR="$keyrej" --
	want="$img: the kernel refused the image's signature (kexec said \"$keyrej\"): it is signed by \"O=rerand tests,CN=rerand test db key\" (issuer \"O=rerand tests,CN=rerand test db key\"), a key in none of the keyrings kexec_file_load trusts: .secondary_trusted_keys, .machine (MOK) and .platform (UEFI db). Enroll the signing certificate with 'mokutil --import CERT', or sign with a key the kernel trusts; any kernel staged before is unchanged"
	check "a signature the kernel rejects: names the signer and the keyrings: $(tail -1 "$tmp/sigrej.err")" \
		grep -qF -- "$want" "$tmp/sigrej.err"
	badmsg="kexec_file_load failed: $(python3 -c 'import os,errno; print(os.strerror(errno.EBADMSG))')"
	load sigbad RERAND_LOCKDOWN_FILE="$tmp/ld-integrity" RERAND_SECUREBOOT_FILE="$tmp/sb-on" \
		FAKE_KEXEC_RC=255 FAKE_KEXEC_STDERR="$badmsg" --
	check "a malformed or changed signed file (EBADMSG): says so, names the signer: $(tail -1 "$tmp/sigbad.err")" \
		grep -qF -- "$img: the kernel could not use the image's signature (kexec said \"$badmsg\"): the signature or the PE header is malformed, or the file changed after it was signed by \"O=rerand tests,CN=rerand test db key\"" "$tmp/sigbad.err"
	# One byte changed after signing: the digest no longer matches, and the
	# locked-down kernel would refuse it, so it is refused before kexec.
	cp "$img" "$tmp/flip.img"
	printf '\x55' | dd of="$tmp/flip.img" bs=1 seek=$((0x400 + 0x4000)) conv=notrunc status=none
	img=$tmp/flip.img
	load sigflip RERAND_LOCKDOWN_FILE="$tmp/ld-integrity" RERAND_SECUREBOOT_FILE="$tmp/sb-on" --
	check "locked down, a byte changed after signing: refused before kexec, no signer named: $(tail -1 "$tmp/sigflip.err")" \
		bash -c "[ $rc -eq 1 ] && [ $(calls sigflip) -eq 0 ] &&
			 grep -qF -- '$img: signature does not verify: digest mismatch' '$tmp/sigflip.err' &&
			 ! grep -qF 'rerand test db key' '$tmp/sigflip.err'"
	load sigflipk FAKE_KEXEC_RC=255 FAKE_KEXEC_STDERR="$badmsg" -- --file-syscall
	check "not locked down, the kernel refuses the changed file: says it does not verify, no signer: $(tail -1 "$tmp/sigflipk.err")" \
		bash -c "[ $rc -eq 1 ] && grep -qF -- 'its signature does not verify: digest mismatch' '$tmp/sigflipk.err' &&
			 ! grep -qF 'rerand test db key' '$tmp/sigflipk.err'"
	img=$tmp/s.img
	load sigkt24 FAKE_KEXEC_VERSION=2.0.24 --
	check "signed image, kexec_load with kexec-tools 2.0.24 (no signature check there): seed written in memory" \
		bash -c "[ $rc -eq 0 ] && $(declare -f seed_differs); tmp=$tmp; img=$img; seed_differs sigkt24"
else
	nok "rerand image --sign-key: $(cat "$tmp/sign.err")"
fi

echo "1..$n"
