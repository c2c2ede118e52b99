# SPDX-License-Identifier: GPL-2.0-only
# Secure Boot end-to-end functions (issue 12): sign with Debian's snakeoil
# kit, build the guest initramfs for sb-init.sh, boot OVMF with Secure Boot
# on, and judge what the guest reports.  Sourced; builds on lib.sh and
# lib-crash.sh.

. "$(dirname "${BASH_SOURCE[0]}")/lib-crash.sh"

# The key pair whose certificate the snakeoil variables hold in PK, KEK and db.
SB_KEY_ENC=${SB_KEY_ENC:-/usr/share/ovmf/PkKek-1-snakeoil.key}
SB_CERT=${SB_CERT:-/usr/share/ovmf/PkKek-1-snakeoil.pem}
SB_KEY_PASS=snakeoil
# A throwaway signer that is in no keyring of the guest.
SB_UNTRUSTED_CN="rerand e2e untrusted signer"

# sb_preflight: print what is missing for these tests, if anything.
sb_preflight() {
	local f miss=""
	for f in sbsign sbattach sbverify openssl qemu-system-x86_64 cpio; do
		command -v "$f" >/dev/null || miss+=" $f"
	done
	for f in "$E2E_OVMF_SB_CODE" "$E2E_OVMF_SB_VARS" "$SB_KEY_ENC" "$SB_CERT"; do
		[ -r "$f" ] || miss+=" $f"
	done
	[ -z "$miss" ] || echo "missing:$miss (scripts/deps.sh: ovmf, sbsigntool)"
}

# sb_with_key FUNC ARGS...: run FUNC with SB_KEYFILE naming the snakeoil
# key decrypted to a private temporary file, removed afterwards.
sb_with_key() {
	local d rc=0
	d=$(mktemp -d) || return 1
	if ! openssl rsa -passin "pass:$SB_KEY_PASS" -in "$SB_KEY_ENC" -out "$d/key.pem" 2>"$d/err"; then
		echo "e2e: $SB_KEY_ENC: cannot decrypt: $(head -n1 "$d/err")" >&2
		rm -rf "$d"
		return 1
	fi
	SB_KEYFILE=$d/key.pem "$@" || rc=$?
	rm -rf "$d"
	return "$rc"
}

_sb_sbsign() { sbsign --key "$SB_KEYFILE" --cert "$SB_CERT" --output "$2" "$1" >/dev/null; }

# sb_cache_key FILE...: 16 hex digits naming the cached product of FILEs.
sb_cache_key() {
	local f k=""
	for f in "$@"; do k+=" $(e2e_sha "$f")"; done
	echo "$k" | sha256sum | cut -c1-16
}

# sb_signed_kernel KERNEL: print the path of KERNEL signed with the snakeoil
# key (cached).  A Debian-signed kernel loses its signature first: OVMF and
# kexec_file look at the first certificate only.
sb_signed_kernel() {
	local kernel=$1 out tmp
	out="$E2E_CACHE/sb-kernel-$(sb_cache_key "$kernel" "$SB_CERT")"
	[ -s "$out" ] && { touch "$out"; echo "$out"; return 0; }
	mkdir -p "$E2E_CACHE"
	tmp="$out.$BASHPID.tmp"
	cp "$kernel" "$tmp" && chmod u+w "$tmp" || return 1
	if sbverify --list "$tmp" 2>/dev/null | grep -q '^signature '; then
		sbattach --remove "$tmp" >/dev/null || { rm -f "$tmp"; e2e_die "$kernel: sbattach --remove failed"; }
	fi
	sb_with_key _sb_sbsign "$tmp" "$tmp.signed" || { rm -f "$tmp" "$tmp.signed"; e2e_die "$kernel: sbsign failed"; }
	rm -f "$tmp"
	sbverify --cert "$SB_CERT" "$tmp.signed" >/dev/null 2>&1 ||
		{ rm -f "$tmp.signed"; e2e_die "$kernel: sbverify rejects the kernel just signed"; }
	mv "$tmp.signed" "$out"
	echo "$out"
}

# sb_unsigned_kernel KERNEL: KERNEL without any signature (cached).
sb_unsigned_kernel() {
	local kernel=$1 out tmp
	out="$E2E_CACHE/sb-unsigned-$(sb_cache_key "$kernel")"
	[ -s "$out" ] && { touch "$out"; echo "$out"; return 0; }
	mkdir -p "$E2E_CACHE"
	tmp="$out.$BASHPID.tmp"
	cp "$kernel" "$tmp" && chmod u+w "$tmp" || return 1
	if sbverify --list "$tmp" 2>/dev/null | grep -q '^signature '; then
		sbattach --remove "$tmp" >/dev/null || { rm -f "$tmp"; return 1; }
	fi
	mv "$tmp" "$out"
	echo "$out"
}

# sb_untrusted: create (once) a self-signed key pair that no keyring of the
# guest holds; sets SB_UNTRUSTED_KEY and SB_UNTRUSTED_CERT.
sb_untrusted() {
	SB_UNTRUSTED_KEY="$E2E_CACHE/sb-untrusted.key"
	SB_UNTRUSTED_CERT="$E2E_CACHE/sb-untrusted.pem"
	[ -s "$SB_UNTRUSTED_KEY" ] && [ -s "$SB_UNTRUSTED_CERT" ] && return 0
	mkdir -p "$E2E_CACHE"
	(umask 077 && openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 3650 \
		-subj "/CN=$SB_UNTRUSTED_CN" -keyout "$SB_UNTRUSTED_KEY.tmp" \
		-out "$SB_UNTRUSTED_CERT.tmp" 2>/dev/null) ||
		e2e_die "openssl req -x509 failed"
	mv "$SB_UNTRUSTED_KEY.tmp" "$SB_UNTRUSTED_KEY"
	mv "$SB_UNTRUSTED_CERT.tmp" "$SB_UNTRUSTED_CERT"
}

# sb_can_sign: does this rerand sign images (issue 12 part 3)?
sb_can_sign() { "$E2E_RERAND" image --help 2>&1 | grep -q -- '--sign-key'; }

_sb_rerand_sign() { # KERNEL OUT KEY CERT
	"$E2E_RERAND" image "$1" -o "$2" --sign-key "$3" --sign-cert "$4" >&2
}
_sb_rerand_sign_snakeoil() { _sb_rerand_sign "$1" "$2" "$SB_KEYFILE" "$SB_CERT"; }

# sb_images KERNEL: build (or reuse) the three rerand images of KERNEL and
# set SB_IMG_SIGNED (snakeoil), SB_IMG_UNSIGNED and SB_IMG_UNTRUSTED (the
# throwaway key).  Returns 1 with SB_WAITING set when rerand cannot sign.
sb_images() {
	local kernel=$1 key tmp
	SB_WAITING=""
	[ -x "$E2E_RERAND" ] || { SB_WAITING="$E2E_RERAND is not built"; return 1; }
	SB_IMG_UNSIGNED=$(e2e_image rerand "$kernel") || return 1
	if ! sb_can_sign; then
		SB_WAITING="rerand image has no --sign-key/--sign-cert yet (issue 12 part 3, branch sb-image)"
		return 1
	fi
	sb_untrusted
	key=$(sb_cache_key "$kernel" "$E2E_RERAND" "$SB_CERT")
	SB_IMG_SIGNED="$E2E_CACHE/sb-image-$key"
	if [ ! -s "$SB_IMG_SIGNED" ]; then
		tmp="$SB_IMG_SIGNED.$BASHPID.tmp"
		sb_with_key _sb_rerand_sign_snakeoil "$kernel" "$tmp" && mv "$tmp" "$SB_IMG_SIGNED" ||
			{ rm -f "$tmp"; SB_WAITING="rerand image --sign-key with the snakeoil key failed"; return 1; }
	fi
	key=$(sb_cache_key "$kernel" "$E2E_RERAND" "$SB_UNTRUSTED_CERT")
	SB_IMG_UNTRUSTED="$E2E_CACHE/sb-image-$key"
	if [ ! -s "$SB_IMG_UNTRUSTED" ]; then
		tmp="$SB_IMG_UNTRUSTED.$BASHPID.tmp"
		_sb_rerand_sign "$kernel" "$tmp" "$SB_UNTRUSTED_KEY" "$SB_UNTRUSTED_CERT" &&
			mv "$tmp" "$SB_IMG_UNTRUSTED" ||
			{ rm -f "$tmp"; SB_WAITING="rerand image --sign-key with a throwaway key failed"; return 1; }
	fi
	touch "$SB_IMG_SIGNED" "$SB_IMG_UNTRUSTED"
}

# sb_root DIR: busybox, rerand (when built), /init = sb-init.sh, and
# /sbin/kexec as a wrapper logging the options of each call before running
# the real one (/sbin/kexec.real), as "kexec,-s,-l,--initrd,...".
sb_root() {
	local r=$1 a
	mkdir -p "$r"/{bin,sbin,proc,sys,dev,tmp,boot,etc}
	install -m 0755 "$E2E_BUSYBOX" "$r/bin/busybox"
	for a in $("$E2E_BUSYBOX" --list); do
		[ "$a" = busybox ] || ln -s busybox "$r/bin/$a"
	done
	e2e_copy_bin "$E2E_KEXEC" "$r" /sbin/kexec.real || return 1
	cat >"$r/sbin/kexec" <<'EOF'
#!/bin/sh
f=
for a in "$@"; do case "$a" in -*) f="$f,${a%%=*}" ;; esac; done
echo "kexec${f}" >>/tmp/kexec.calls
exec /sbin/kexec.real "$@"
EOF
	chmod 0755 "$r/sbin/kexec"
	if [ -x "$E2E_RERAND" ]; then
		e2e_copy_bin "$E2E_RERAND" "$r" /bin/rerand || return 1
	fi
	install -m 0755 "$E2E_DIR/sb-init.sh" "$r/init"
	mknod -m 0600 "$r/dev/console" c 5 1 2>/dev/null || true
}

# sb_initrd KIND IMAGE [NAME=FILE...]: build (or reuse) an initramfs and
# print its path.  KIND chain: an inner archive (sb_root, /boot/image) plus
# an outer one holding /self.cpio (a copy of the inner, for the next
# generation) and NAME=FILE as /gen0/NAME (generation 0 only).  KIND crash:
# sb_root, /boot/image, /crash.cpio (the crash kernel's sb_root) and
# /gen0/NAME.
sb_initrd() {
	local kind=$1 image=$2; shift 2
	local inputs=("$E2E_BUSYBOX" "$E2E_KEXEC" "$E2E_DIR/sb-init.sh" "$E2E_DIR/lib-sb.sh" "$image")
	[ -x "$E2E_RERAND" ] && inputs+=("$E2E_RERAND")
	local nf f names=""
	for nf in "$@"; do inputs+=("${nf#*=}"); names+=" ${nf%%=*}"; done
	for f in "${inputs[@]}"; do
		[ -r "$f" ] || e2e_die "$f: missing (needed for the Secure Boot guest initramfs)"
	done
	local out
	out="$E2E_CACHE/sb-initrd-$kind-$(echo "$names" | sha256sum | cut -c1-8)-$(sb_cache_key "${inputs[@]}").cpio"
	[ -s "$out" ] && { touch "$out"; echo "$out"; return 0; }
	find "$E2E_CACHE" -maxdepth 1 -type f -name 'sb-*' -mtime +0 -delete 2>/dev/null
	ldd "$E2E_BUSYBOX" >/dev/null 2>&1 && e2e_die "$E2E_BUSYBOX is not static: install busybox-static"
	mkdir -p "$E2E_CACHE"
	local tmp
	tmp=$(mktemp -d "$E2E_CACHE/sbroot.XXXXXX") || return 1
	sb_root "$tmp/in" || { rm -rf "$tmp"; e2e_die "cannot build the Secure Boot guest root"; }
	cp "$image" "$tmp/in/boot/image"
	mkdir -p "$tmp/out/gen0"
	for nf in "$@"; do cp "${nf#*=}" "$tmp/out/gen0/${nf%%=*}"; done
	if [ "$kind" = crash ]; then
		sb_root "$tmp/crash" || { rm -rf "$tmp"; e2e_die "cannot build the crash root"; }
		crash_cpio "$tmp/crash" >"$tmp/in/crash.cpio" || { rm -rf "$tmp"; e2e_die "cpio failed"; }
		cp -r "$tmp/out/gen0" "$tmp/in/gen0"
		crash_cpio "$tmp/in" >"$tmp/initrd.cpio" || { rm -rf "$tmp"; e2e_die "cpio failed"; }
	else
		crash_cpio "$tmp/in" >"$tmp/out/self.cpio" || { rm -rf "$tmp"; e2e_die "cpio failed"; }
		cp "$tmp/out/self.cpio" "$tmp/initrd.cpio"
		crash_cpio "$tmp/out" >>"$tmp/initrd.cpio" || { rm -rf "$tmp"; e2e_die "cpio failed"; }
	fi
	mv "$tmp/initrd.cpio" "$out" || e2e_die "cannot write $out"
	rm -rf "$tmp"
	echo "$out"
}


# sb_fw_boot EFI LOG: put EFI on an ESP (a read-only vvfat disk) as
# EFI/BOOT/BOOTX64.EFI and let the Secure Boot firmware's boot manager try
# it; stop QEMU once the outcome is on the serial console.  (-kernel is no
# test of the firmware: OVMF falls back to its legacy loader for a -kernel
# image that fails verification.)
sb_fw_boot() {
	local efi=$1 log=$2 esp pid
	esp=$(mktemp -d) || return 1
	mkdir -p "$esp/EFI/BOOT" && cp "$efi" "$esp/EFI/BOOT/BOOTX64.EFI" || { rm -rf "$esp"; return 1; }
	cp "$E2E_OVMF_SB_VARS" "$log.vars.fd" || { rm -rf "$esp"; return 1; }
	: >"$log"
	timeout -k 5 "${SB_FW_TIMEOUT:-120}" qemu-system-x86_64 -accel "$E2E_ACCEL" \
		-machine q35,smm=on -global driver=cfi.pflash01,property=secure,value=on \
		-drive "if=pflash,format=raw,unit=0,readonly=on,file=$E2E_OVMF_SB_CODE" \
		-drive "if=pflash,format=raw,unit=1,file=$log.vars.fd" \
		-m 1G -smp 1 -cpu max -nographic -monitor none -serial "file:$log" -no-reboot \
		-net none -drive "file=fat:$esp,format=raw,if=virtio,readonly=on" </dev/null 2>"$log.stderr" &
	pid=$!
	for _ in $(seq 1 "${SB_FW_TIMEOUT:-120}"); do
		grep -aqE 'EFI stub: |No bootable option' "$log" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 1
	done
	sleep 1
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	rm -rf "$esp" "$log.vars.fd"
	return 0
}

# sb_fw_clean LOG: the firmware's lines, without escape sequences.
sb_fw_clean() { sed 's/\x1b\[[0-9;=]*[a-zA-Z]//g; s/\r//g' "$1" | grep -a -E 'BdsDxe|EFI stub'; }

# sb_check_fw NAME SIGNED UNSIGNED DIR: the firmware starts the signed
# kernel from the ESP and refuses the unsigned one.
sb_check_fw() {
	local name=$1 signed=$2 unsigned=$3 dir=$4 t0
	mkdir -p "$dir"
	t0=$EPOCHSECONDS
	sb_fw_boot "$signed" "$dir/signed.log"
	sb_fw_boot "$unsigned" "$dir/unsigned.log"
	sb_fw_judge "$name" "$dir" "$((EPOCHSECONDS - t0))"
}

# sb_fw_judge NAME DIR SECS: TAP lines for DIR/signed.log, DIR/unsigned.log.
sb_fw_judge() {
	local name=$1 dir=$2 secs=$3 s u bad=""
	s=$(sb_fw_clean "$dir/signed.log")
	u=$(sb_fw_clean "$dir/unsigned.log")
	grep -qE '^BdsDxe: starting Boot[0-9A-F]+ "UEFI Misc Device"' <<<"$s" || bad+=" signed: no 'BdsDxe: starting' for the ESP"
	grep -q 'EFI stub: UEFI Secure Boot is enabled' <<<"$s" || bad+=" signed: no 'EFI stub: UEFI Secure Boot is enabled'"
	e2e_tap "$([ -z "$bad" ]; echo $?)" "$name: Secure Boot firmware starts the snakeoil-signed kernel from the ESP" "${bad# }"
	bad=""
	grep -qE '^BdsDxe: failed to load Boot[0-9A-F]+ "UEFI Misc Device".*: Access Denied' <<<"$u" ||
		bad+=" no 'failed to load ... Access Denied' for the ESP"
	grep -q 'EFI stub' <<<"$u" && bad+=" the unsigned kernel's EFI stub ran"
	e2e_tap "$([ -z "$bad" ]; echo $?)" "$name: Secure Boot firmware refuses the unsigned kernel ($secs s for both)" "${bad# }"
	e2e_note "$name: signed:   $(grep -m1 -E 'Misc Device|EFI stub' <<<"$s" | cut -c1-110)"
	e2e_note "$name: unsigned: $(grep -m1 'Misc Device.*:' <<<"$u" | sed 's/ from .*)://' | cut -c1-110)"
}

# sb_fw_args VARS: set SB_FW_ARGS to QEMU's Secure Boot firmware arguments,
# with VARS a fresh private copy of the snakeoil variables (the machine
# needs smm=on as well).
sb_fw_args() {
	cp "$E2E_OVMF_SB_VARS" "$1" || return 1
	SB_FW_ARGS=(-global driver=cfi.pflash01,property=secure,value=on
		-drive "if=pflash,format=raw,unit=0,readonly=on,file=$E2E_OVMF_SB_CODE"
		-drive "if=pflash,format=raw,unit=1,file=$1")
}

# sb_qemu KERNEL INITRD APPEND LOG MEM TIMEOUT: boot KERNEL (signed) under
# the Secure Boot firmware, -cpu max.
sb_qemu() { e2e_qemu "$1" "$2" "$3" "$4" ovmf-sb max "$5" "$6" q35; }

# sb_lines LOG PREFIX: the guest's lines starting with PREFIX, without time stamps.
sb_lines() { grep -a -o "$2.*" "$1"; }

# sb_field LINE KEY: like crash_field, but the value of msg= runs to the end.
sb_field() {
	case "$2" in
	msg) case "$1" in *" msg="*) echo "${1#* msg=}" ;; *) return 1 ;; esac ;;
	*) crash_field "${1%% msg=*}" "$2" ;;
	esac
}

# sb_calls_file CALLS OP: the kexec calls a load made (kexec,-s,-l,...;...)
# were all kexec_file_load (-s) with OP (-l or -p), and there was one.
sb_calls_file() {
	local c
	[ "$1" != none ] && [ -n "$1" ] || return 1
	for c in ${1//;/ }; do
		case ",$c," in *,-s,*) ;; *) return 1 ;; esac
		case ",$c," in *,"$2",*) ;; *) return 1 ;; esac
	done
}

# sb_check_lockdown NAME LOG ROLE N: generations 0..N of ROLE report a
# lockdown level and the boot_params Secure Boot state "enabled" (3).
sb_check_lockdown() {
	local name=$1 log=$2 role=$3 n=$4 g line bad="" ld levels=""
	for g in $(seq 0 "$n"); do
		line=$(sb_lines "$log" "E2E-SB role=$role gen=$g " | head -n1)
		if [ -z "$line" ]; then bad+=" gen$g:no-report"; continue; fi
		ld=$(sb_field "$line" lockdown)
		levels+=" $ld"
		case "$ld" in integrity|confidentiality) ;; *) bad+=" gen$g:lockdown=$ld" ;; esac
		[ "$(sb_field "$line" bp_secure_boot)" = 3 ] || bad+=" gen$g:bp_secure_boot=$(sb_field "$line" bp_secure_boot)"
	done
	e2e_tap "$([ -z "$bad" ]; echo $?)" "$name: locked down in every boot ($(echo $levels | tr ' ' '\n' | sort | uniq -c | awk '{printf "%s%s x%s", (NR > 1 ? ", " : ""), $2, $1}'))" "${bad# }"
}

# sb_check_base NAME LOG: generation 0's stock kexec: kexec_load refused,
# kexec_file_load of the signed kernel loads (and unloads).
sb_check_base() {
	local name=$1 log=$2 l s u bad=""
	l=$(sb_lines "$log" 'E2E-SB-BASE what=kexec-l ' | head -n1)
	s=$(sb_lines "$log" 'E2E-SB-BASE what=kexec-s-l ' | head -n1)
	u=$(sb_lines "$log" 'E2E-SB-BASE what=kexec-s-u ' | head -n1)
	if [ -z "$l" ] || [ -z "$s" ]; then
		e2e_tap 1 "$name: stock kexec under lockdown" "generation 0 reported no stock kexec attempt"
		return 0
	fi
	[ "$(sb_field "$l" rc)" != 0 ] || bad+=" kexec -l exited 0"
	[ "$(sb_field "$l" loaded)" = 0 ] || bad+=" kexec_loaded=$(sb_field "$l" loaded) after kexec -l"
	e2e_tap "$([ -z "$bad" ]; echo $?)" "$name: stock kexec -l (kexec_load) refused under lockdown" "${bad# }"
	e2e_note "$name: kexec -l said: $(sb_field "$l" msg | sed 's/ entry *=.*//' | cut -c1-160)"
	bad=""
	[ "$(sb_field "$s" rc)" = 0 ] || bad+=" kexec -s -l exited $(sb_field "$s" rc): $(sb_field "$s" msg | cut -c1-160)"
	[ "$(sb_field "$s" loaded)" = 1 ] || bad+=" kexec_loaded=$(sb_field "$s" loaded)"
	[ "$(sb_field "$u" loaded)" = 0 ] || bad+=" still loaded after kexec -s -u"
	e2e_tap "$([ -z "$bad" ]; echo $?)" "$name: stock kexec -s -l (kexec_file_load) of the signed kernel loads under lockdown" "${bad# }"
}

# sb_sources VERIFY: the "sources" of a rerand verify --json text.
sb_sources() { grep -o '"sources" *: *"[^"]*"' <<<"$1" | cut -d'"' -f4; }

# sb_check_chain NAME LOG QRC GENS LOADER MEM: a kexec chain under Secure
# Boot: lib.sh's checks (every generation, alignment, distinct bases,
# KASLR_FLAG and rerand verify), then lockdown in every generation, how each
# generation was staged, the kernel seed among the sources, the table, and
# the stock baseline of generation 0.
sb_check_chain() {
	local name=$1 log=$2 qrc=$3 gens=$4 loader=$5 mem=$6 mode=stock rows
	[ "$loader" = rerand ] && mode=rerand
	# -cpu max: lib.sh then also checks the sources against the CPU, with
	# kernel-seed exactly when a SETUP_RNG_SEED node came, and "weak".  A
	# signed image is staged unchanged, its header seed zero, as under
	# E2E_LOADER=kexec: "seed" must not be named.
	E2E_RUN_MEM=$mem E2E_RUN_CPU=max E2E_LOADER=kexec e2e_check "$name" "$log" "$qrc" "$gens" "$mode" 0
	sb_check_lockdown "$name" "$log" chain "$gens"
	sb_check_base "$name" "$log"
	sb_check_staging "$name" "$log" "$gens" "$loader"
	rows=$(e2e_parse "$log")
	[ "$loader" = rerand ] && sb_check_kseed "$name" "$rows"
	sb_table "$name" "$log" "$rows"
}

# sb_check_staging NAME LOG GENS LOADER: every generation before the last
# staged the next with kexec_file_load (-s) only, and it is loaded.
sb_check_staging() {
	local name=$1 log=$2 gens=$3 loader=$4
	local g line calls bad="" seen=""
	for g in $(seq 0 $((gens - 1))); do
		line=$(sb_lines "$log" "E2E-SB-LOAD gen=$g " | head -n1)
		[ -n "$line" ] || { bad+=" gen$g:no-load-report"; continue; }
		calls=$(sb_field "$line" calls)
		[ "$(sb_field "$line" rc)" = 0 ] || bad+=" gen$g:rc=$(sb_field "$line" rc)($(sb_field "$line" msg | cut -c1-120))"
		[ "$(sb_field "$line" loaded)" = 1 ] || bad+=" gen$g:kexec_loaded=$(sb_field "$line" loaded)"
		sb_calls_file "$calls" -l || bad+=" gen$g:calls=$calls"
		seen=$calls
	done
	local who="stock kexec -s -l"
	[ "$loader" = rerand ] && who="rerand load (no --file-syscall) picked kexec_file_load"
	e2e_tap "$([ -z "$bad" ]; echo $?)" "$name: $who in every generation (kexec ran: ${seen:-nothing})" "${bad# }"
}

# sb_check_kseed NAME ROWS: kernel-seed among the sources after every kexec
# (ROWS from e2e_parse).
sb_check_kseed() {
	local name=$1 rows=$2 bad=""
	local gen secs text cs ce lf ram ver src
	while IFS=$'\t' read -r gen secs text cs ce lf ram ver; do
		[ -n "$gen" ] && [ "$gen" -gt 0 ] || continue
		src=$(sb_sources "$ver")
		case "+$src+" in *+kernel-seed+*) ;; *) bad+=" gen$gen:${src:-none}" ;; esac
	done <<<"$rows"
	[ -n "$rows" ] || bad=" no generation reported"
	e2e_tap "$([ -z "$bad" ]; echo $?)" "$name: the kernel's SETUP_RNG_SEED (kernel-seed) among the sources after every kexec" "${bad# }"
}

# sb_table NAME LOG ROWS: generation, lockdown, verify, sources, distinct.
sb_table() {
	local name=$1 log=$2 rows=$3
	local gen secs text cs ce lf ram ver ld v d seenv="" seenp="" k
	printf '# %s: %-3s %-10s %-22s %-34s %s\n' "$name" gen lockdown verify sources distinct
	while IFS=$'\t' read -r gen secs text cs ce lf ram ver; do
		[ -n "$gen" ] || continue
		ld=$(sb_field "$(sb_lines "$log" "E2E-SB role=chain gen=$gen " | head -n1)" lockdown)
		case "$ver" in
		none) v="(firmware boot)" ;;
		"rc=0 "*) v="rc=0"; grep -Eq '"randomized" *: *true' <<<"$ver" && v+=" randomized" ;;
		*) v="rc=${ver%% *}"; v=${v#rc=rc=}; v="rc=$v" ;;
		esac
		d=""
		for k in $seenv; do [ "${k#*:}" = "$text" ] && { d+="virtual as gen${k%%:*} "; break; }; done
		for k in $seenp; do [ "${k#*:}" = "$cs" ] && { d+="physical as gen${k%%:*}"; break; }; done
		seenv+=" $gen:$text"; seenp+=" $gen:$cs"
		printf '# %s: %-3s %-10s %-22s %-34s %s\n' "$name" "$gen" "${ld:-?}" "$v" "$(sb_sources "$ver" | sed 's/^$/-/')" "${d:+no: }${d:-yes}"
	done <<<"$rows"
}

# sb_check_refusals NAME LOG: generation 0 tried the unsigned and the
# throwaway-signed image after staging the signed one.
sb_check_refusals() {
	local name=$1 log=$2 u t bad="" msg next=""
	# The chain goes on: generation 1 booted what stayed staged.
	sb_lines "$log" 'E2E-GEN gen=1 ' | grep -q 'verify=rc=0 ' || next=" generation 1 did not boot and verify"
	u=$(sb_lines "$log" 'E2E-SB-REFUSE kind=unsigned ' | head -n1)
	t=$(sb_lines "$log" 'E2E-SB-REFUSE kind=untrusted ' | head -n1)
	if [ -z "$u" ]; then
		bad=" generation 0 did not try the unsigned image"
	else
		msg=$(sb_field "$u" msg)
		e2e_note "$name: unsigned image: exit $(sb_field "$u" rc), kexec ran: $(sb_field "$u" calls), kexec_loaded=$(sb_field "$u" loaded); message:"
		e2e_note "  $msg"
		[ "$(sb_field "$u" rc)" != 0 ] || bad+=" exit status 0"
		[ "$(sb_field "$u" calls)" = none ] || bad+=" kexec ran ($(sb_field "$u" calls))"
		[ "$(sb_field "$u" loaded)" = 1 ] || bad+=" the staged image is gone (kexec_loaded=$(sb_field "$u" loaded))"
		grep -q '/gen0/image.unsigned' <<<"$msg" || bad+=" message does not name the file"
		grep -qi 'lockdown\|locked down' <<<"$msg" || bad+=" message does not name lockdown"
		grep -q 'mokutil --import' <<<"$msg" && grep -qi 'sign' <<<"$msg" ||
			bad+=" message does not give the fix (sign; mokutil --import)"
	fi
	bad+=$next
	e2e_tap "$([ -z "$bad" ]; echo $?)" "$name: an unsigned image is refused under lockdown before kexec runs, naming lockdown and the fix; the signed one stays staged" "${bad# }"
	bad=""
	if [ -z "$t" ]; then
		bad=" generation 0 did not try the image signed by the throwaway key"
	else
		msg=$(sb_field "$t" msg)
		e2e_note "$name: image signed by a key not in db: exit $(sb_field "$t" rc), kexec ran: $(sb_field "$t" calls), kexec_loaded=$(sb_field "$t" loaded); message:"
		e2e_note "  $msg"
		[ "$(sb_field "$t" rc)" != 0 ] || bad+=" exit status 0"
		[ "$(sb_field "$t" loaded)" = 1 ] || bad+=" the staged image is gone (kexec_loaded=$(sb_field "$t" loaded))"
		grep -q "$SB_UNTRUSTED_CN" <<<"$msg" || bad+=" message does not name the signer '$SB_UNTRUSTED_CN'"
		grep -qi 'keyring\|\.platform\|secondary_trusted' <<<"$msg" || bad+=" message does not name the keyrings"
	fi
	bad+=$next
	e2e_tap "$([ -z "$bad" ]; echo $?)" "$name: an image signed by a key not in db is refused, naming the signer and the keyrings; the signed one stays staged" "${bad# }"
}

# sb_crash_boot NAME KERNEL INITRD LOADER DIR BASE: one QEMU run: first boot
# with crashkernel=256M, stage, panic, crash kernel; BASE 1 adds the stock
# kexec tries and the refusal before the panic.  QEMU's status in DIR/rc.
sb_crash_boot() {
	local name=$1 kernel=$2 initrd=$3 loader=$4 dir=$5 base=$6 rc=0 t0=$EPOCHSECONDS
	rm -rf "$dir"
	mkdir -p "$dir"
	e2e_note "$name: $(basename "$kernel") under Secure Boot, crashkernel=256M, loader $loader"
	sb_qemu "$kernel" "$initrd" "console=ttyS0,115200 panic=-1 no_timer_check crashkernel=256M e2e.role=first e2e.loader=$loader e2e.base=$base" \
		"$dir/serial.log" 1 "${E2E_CRASH_TIMEOUT:-300}" || rc=$?
	echo "$rc" >"$dir/rc"
	echo $((EPOCHSECONDS - t0)) >"$dir/secs"
}

# sb_check_crash NAME DIR LOADER: the crash kernel under Secure Boot; writes
# DIR/row ("text code_start slots", for crash_check_distinct).
sb_check_crash() {
	local name=$1 dir=$2 loader=$3 log=$2/serial.log
	local first crash load why="" bad=""
	first=$(sb_lines "$log" "E2E-FIRST " | head -n1)
	crash=$(sb_lines "$log" "E2E-CRASH " | head -n1)
	load=$(sb_lines "$log" 'E2E-SB-LOAD gen=0 crash=1 ' | head -n1)
	[ -n "$first" ] && [ -n "$crash" ] || why=$(crash_why_dead "$log" "$(cat "$dir/rc")")
	e2e_tap "$([ -z "$why" ]; echo $?)" "$name: panic, crash kernel booted and reported ($(cat "$dir/secs") s)" "$why"
	if [ -n "$why" ]; then
		e2e_note "$name: serial log: $log"
		grep -aE 'Kernel panic|BUG:|Oops|rerand|E2E-' "$log" | tail -n 6 | cut -c1-300 | sed 's/^/#   /'
	fi
	sb_lines "$log" 'E2E-SB-BASE ' | grep -q . && sb_check_base "$name" "$log"
	[ -n "$load" ] || { e2e_tap 1 "$name: crash kernel staged" "no E2E-SB-LOAD line"; return 0; }
	local calls
	calls=$(sb_field "$load" calls)
	[ "$(sb_field "$load" rc)" = 0 ] || bad+=" exit $(sb_field "$load" rc): $(sb_field "$load" msg | cut -c1-160)"
	[ "$(sb_field "$load" loaded)" = 1 ] || bad+=" kexec_crash_loaded=$(sb_field "$load" loaded)"
	sb_calls_file "$calls" -p || bad+=" kexec calls: $calls"
	local who="kexec -s -p"
	[ "$loader" = rerand ] && who="rerand load --crash picked kexec -s -p by itself"
	e2e_tap "$([ -z "$bad" ]; echo $?)" "$name: $who and the crash kernel is loaded" "${bad# }"

	local r
	r=$(sb_lines "$log" 'E2E-SB-REFUSE kind=crash-untrusted ' | head -n1)
	if [ -n "$r" ]; then
		# kexec_file_load frees the loaded crash kernel before it checks
		# the new one (kernel/kexec_file.c), so after a signature the
		# kernel rejects it is gone: then the message must say so.
		local rl msg
		rl=$(sb_field "$r" loaded); msg=$(sb_field "$r" msg)
		bad=""
		[ "$(sb_field "$r" rc)" != 0 ] || bad+=" exit status 0"
		grep -q "$SB_UNTRUSTED_CN" <<<"$msg" || bad+=" message does not name the signer"
		grep -qi 'keyring\|\.platform\|secondary_trusted' <<<"$msg" || bad+=" message does not name the keyrings"
		[ "$rl" = 1 ] || grep -q 'kexec_crash_loaded' <<<"$msg" ||
			bad+=" the crash kernel is gone (kexec_crash_loaded=$rl) and the message does not say so"
		e2e_note "$name: crash image signed by a key not in db: exit $(sb_field "$r" rc), kexec ran: $(sb_field "$r" calls), kexec_crash_loaded=$rl; message:"
		e2e_note "  $msg"
		e2e_tap "$([ -z "$bad" ]; echo $?)" "$name: a crash image signed by a key not in db is refused, naming the signer and the keyrings (crash kernel afterwards: $([ "$rl" = 1 ] && echo "still loaded" || echo "dropped by the kernel, as the message says"))" "${bad# }"
	fi
	[ -n "$crash" ] || return 0

	sb_lines "$log" "E2E-SB role=first gen=0 " >"$dir/sb.first"
	sb_lines "$log" "E2E-SB role=crash gen=0 " >"$dir/sb.crash"
	bad=""
	local f ld
	for f in first crash; do
		ld=$(sb_field "$(head -n1 "$dir/sb.$f")" lockdown)
		case "$ld" in integrity|confidentiality) ;; *) bad+=" $f kernel: lockdown=${ld:-no-report}" ;; esac
	done
	e2e_tap "$([ -z "$bad" ]; echo $?)" "$name: the first and the crash kernel are locked down" "${bad# }"

	local region text code cs ce lf ver src
	region=$(crash_field "$first" crash)
	text=$(crash_field "$crash" text)
	code=$(crash_field "$crash" code); cs=${code%-*}; ce=0x${code#*-}
	lf=$(crash_field "$crash" loadflags)
	ver=${crash#* verify=}
	src=$(sb_sources "$ver")
	bad=""
	[ "$region" != none ] || bad+=" no Crash kernel region"
	crash_in_ranges "$cs" "$ce" "$region" || bad+=" Kernel code $code outside $region"
	[ $(( $(e2e_hex2dec "$cs") & 0x1fffff )) -eq 0 ] || bad+=" code $cs misaligned"
	[ $(( $(e2e_hex2dec "$lf") & 0x02 )) -ne 0 ] || bad+=" KASLR_FLAG clear"
	if [ "$loader" = rerand ]; then
		case "$ver" in "rc=0 "*) ;; *) bad+=" verify ${ver%% *}" ;; esac
		grep -Eq '"randomized" *: *true' <<<"$ver" || bad+=" not randomized"
		grep -Eq '"crash" *: *true' <<<"$ver" || bad+=" status crash=false"
		case "+$src+" in *+kernel-seed+*) ;; *) bad+=" sources '${src:-none}' without kernel-seed" ;; esac
	fi
	e2e_tap "$([ -z "$bad" ]; echo $?)" "$name: crash kernel inside the crash region$([ "$loader" = rerand ] && echo ", rerand verify randomized with crash=true and kernel-seed")" "${bad# }"
	# The region itself moves with the first kernel's placement: the
	# offset inside it shows whether the crash kernel was placed anew.
	local off="?"
	[ "$region" != none ] && off=$(printf '0x%x' $(( $(e2e_hex2dec "$cs") - $(e2e_hex2dec "${region%%-*}") )))
	e2e_note "$name: crash region=$region crash kernel _text=$text physical=$cs (region +$off) sources=${src:--} verify=${ver:0:60}"
	echo "$text $cs $(grep -o '"phys_slots" *: *[0-9]*' <<<"$ver" | grep -o '[0-9]*$') $off" >"$dir/row"
}

# sb_check_crash_distinct NAME LOADER DIR...: the crash kernel is placed
# anew at every panic: its offsets inside the crash region differ.  The
# region moves with the first kernel, so the offset is what tells: stock
# kexec -s -p lands at one offset every time.  The physical bases are only
# reported: in two different regions the same address is two different
# offsets, and in the same region a repeated address is a repeated offset.
# One chance repeat is allowed (about 90 slots: 1 in 90 for any pair), so
# at least 3 panics are needed for the check to be able to fail; with 3,
# a fixed offset gives 2 repeats.  Stock kexec is only reported.
sb_check_crash_distinct() {
	local name=$1 loader=$2; shift 2
	local d rows="" n=0 prep orep vrep
	for d in "$@"; do [ -s "$d/row" ] && rows+="$(cat "$d/row")"$'\n'; done
	rows=${rows%$'\n'}
	[ -n "$rows" ] && n=$(wc -l <<<"$rows")
	vrep=$((n - $(cut -d' ' -f1 <<<"$rows" | sed '/^$/d' | sort -u | wc -l)))
	prep=$((n - $(cut -d' ' -f2 <<<"$rows" | sed '/^$/d' | sort -u | wc -l)))
	orep=$((n - $(cut -d' ' -f4 <<<"$rows" | sed '/^$/d' | sort -u | wc -l)))
	e2e_note "$name: crash kernel virtual/physical/offset in the region over $n panics: $(cut -d' ' -f1,2,4 <<<"$rows" | tr ' \n' '/ ')"
	if [ "$loader" = stock ]; then
		e2e_note "$name: stock kexec -s -p: repeats: physical $prep, offset $orep, virtual $vrep (not asserted)"
		return 0
	fi
	local why=""
	[ $# -ge 3 ] || why="$# panics: at least 3 are needed"
	[ "$n" -ge $# ] || why="only $n of $# panics reported"
	e2e_tap "$([ -z "$why" ] && [ "$orep" -le 1 ]; echo $?)" \
		"$name: crash kernel placed anew at each of $n panics: offsets in the crash region distinct (repeats $orep, allowed 1; physical repeats $prep and virtual $vrep, not asserted)" "$why"
}
