# SPDX-License-Identifier: GPL-2.0-only
# Crash-kernel end-to-end functions (issue 5): build the two-role guest
# initramfs, boot a kernel with crashkernel=, panic it, check what the crash
# kernel reports.  Sourced; builds on lib.sh.

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Default virtual base (LOAD_PHYSICAL_ADDR 16 MiB): KERNELOFFSET is relative to it.
CRASH_TEXT_BASE=0xffffffff81000000

# crash_root DIR WITH_KEXEC: populate DIR with busybox, rerand (and kexec)
# plus their libraries and /init = crash-init.sh.
crash_root() {
	local r=$1 with_kexec=$2 a
	mkdir -p "$r"/{bin,sbin,proc,sys,dev,tmp,boot,etc}
	install -m 0755 "$E2E_BUSYBOX" "$r/bin/busybox"
	for a in $("$E2E_BUSYBOX" --list); do
		[ "$a" = busybox ] || ln -s busybox "$r/bin/$a"
	done
	e2e_copy_bin "$E2E_RERAND" "$r" /bin/rerand || return 1
	if [ "$with_kexec" = 1 ]; then
		e2e_copy_bin "$E2E_KEXEC" "$r" /sbin/kexec || return 1
	fi
	install -m 0755 "$E2E_DIR/crash-init.sh" "$r/init"
	mknod -m 0600 "$r/dev/console" c 5 1 2>/dev/null || true
}

crash_cpio() { (cd "$1" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet); }

# crash_initrd IMAGE: build (or reuse) the first kernel's initramfs and print
# its path.  It holds /boot/image and /crash.cpio, the crash kernel's
# smaller initramfs (no kexec, no image): the first kernel's initrd memory is
# freed after boot, and the crash region is small.
crash_initrd() {
	local image=$1 f key=crash
	[ "$(e2e_mode_auto)" = rerand ] || e2e_die "crash tests need $E2E_RERAND"
	for f in "$E2E_BUSYBOX" "$E2E_KEXEC" "$E2E_RERAND" "$E2E_DIR/crash-init.sh" \
		"$E2E_DIR/lib-crash.sh" "$image"; do
		[ -r "$f" ] || e2e_die "$f: missing (needed for the crash guest initramfs)"
		key="$key $(e2e_sha "$f")"
	done
	key=$(echo "$key" | sha256sum | cut -c1-16)
	local out="$E2E_CACHE/crash-initrd-$key.cpio"
	if [ -s "$out" ]; then touch "$out"; echo "$out"; return 0; fi
	find "$E2E_CACHE" -maxdepth 1 -type f -name 'crash-initrd-*' -mtime +0 -delete 2>/dev/null
	ldd "$E2E_BUSYBOX" >/dev/null 2>&1 && e2e_die "$E2E_BUSYBOX is not static: install busybox-static"
	mkdir -p "$E2E_CACHE"
	local tmp
	tmp=$(mktemp -d "$E2E_CACHE/croot.XXXXXX") || return 1
	crash_root "$tmp/crash" 0 || { rm -rf "$tmp"; e2e_die "cannot build the crash root"; }
	crash_root "$tmp/first" 1 || { rm -rf "$tmp"; e2e_die "cannot build the first root"; }
	cp "$image" "$tmp/first/boot/image"
	crash_cpio "$tmp/crash" >"$tmp/first/crash.cpio" || { rm -rf "$tmp"; e2e_die "cpio failed"; }
	crash_cpio "$tmp/first" >"$tmp/initrd.cpio" && mv "$tmp/initrd.cpio" "$out" ||
		{ rm -rf "$tmp"; e2e_die "cannot write $out"; }
	rm -rf "$tmp"
	echo "$out"
}

# crash_boot NAME KERNEL FW CPU SYSCALL CRASHKERNEL MEM ROLE LOADER: one QEMU
# run (first boot, panic, crash kernel) logged to $E2E_BUILD/runs/crash/NAME.
# Prints the run directory; QEMU's status is in DIR/rc, seconds in DIR/secs.
crash_boot() {
	local name=$1 kernel=$2 fw=$3 cpu=$4 sc=$5 ck=$6 mem=$7 role=$8 loader=$9
	local image initrd dir
	image=$(e2e_image rerand "$kernel") || return 1
	initrd=$(crash_initrd "$image") || return 1
	dir="$E2E_BUILD/runs/crash/$name"
	rm -rf "$dir"
	mkdir -p "$dir"
	local append="console=ttyS0,115200 panic=-1 no_timer_check $ck e2e.role=$role e2e.syscall=$sc e2e.loader=$loader"
	[ "${E2E_CRASH_DEBUG:-0}" = 1 ] && append+=" e2e.debug=1"
	local t0=$EPOCHSECONDS rc=0
	e2e_qemu "$kernel" "$initrd" "$append" "$dir/serial.log" "$fw" "$cpu" "$mem" \
		"${E2E_CRASH_TIMEOUT:-300}" "${E2E_MACHINE:-q35}" || rc=$?
	echo "$rc" >"$dir/rc"
	echo $((EPOCHSECONDS - t0)) >"$dir/secs"
	echo "$dir"
}

# crash_field LINE KEY: the value of KEY=VALUE in LINE (first match).
crash_field() {
	local w
	for w in $1; do
		case "$w" in "$2"=*) echo "${w#"$2"=}"; return 0 ;; esac
	done
	return 1
}

# crash_line LOG TAG: the guest line starting with TAG, without time stamp.
crash_line() { grep -o "$2 .*" "$1" | head -n1; }

# crash_in_ranges START END RANGES: is [START, END] (hex) inside one of the
# comma-separated hex ranges?
crash_in_ranges() {
	local s e r lo hi
	s=$(e2e_hex2dec "$1"); e=$(e2e_hex2dec "$2")
	for r in ${3//,/ }; do
		lo=$(e2e_hex2dec "${r%-*}"); hi=$(e2e_hex2dec "${r#*-}")
		[ "$s" -ge "$lo" ] && [ "$e" -le "$hi" ] && return 0
	done
	return 1
}

# crash_bytes RANGES: total bytes of comma-separated hex START-END ranges.
crash_bytes() {
	local r t=0
	for r in ${1//,/ }; do
		t=$((t + $(e2e_hex2dec "${r#*-}") - $(e2e_hex2dec "${r%-*}") + 1))
	done
	echo "$t"
}

# crash_why_dead LOG RC: why a run ended without E2E-DONE.
crash_why_dead() {
	local log=$1 rc=$2
	if grep -q 'E2E-FAIL' "$log"; then
		grep -o 'E2E-FAIL.*' "$log" | head -n1
	elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		echo "timeout (hang)$(grep -q 'E2E-PANIC' "$log" && echo ' after the panic')"
	elif grep -q 'rerand: stage:.*halted' "$log"; then
		grep -o 'rerand: stage:.*halted.*' "$log" | head -n1
	else
		echo "QEMU exited ($rc) without E2E-DONE$(grep -q 'E2E-PANIC' "$log" && echo ' after the panic (triple fault or crash-kernel panic?)')"
	fi
}

# crash_check_panic NAME DIR: TAP lines for one panic run; writes DIR/row
# ("text code_start phys_slots") when the crash kernel reported.
crash_check_panic() {
	local name=$1 dir=$2 log=$2/serial.log rc secs
	rc=$(cat "$dir/rc"); secs=$(cat "$dir/secs")
	local first crash why=""
	first=$(crash_line "$log" E2E-FIRST)
	crash=$(crash_line "$log" E2E-CRASH)
	if [ -z "$first" ] || [ -z "$crash" ]; then
		why=$(crash_why_dead "$log" "$rc")
	fi
	e2e_tap "$([ -z "$why" ]; echo $?)" "$name: panic, crash kernel booted and reported (${secs} s)" "$why"
	if [ -n "$why" ]; then
		e2e_note "$name: serial log: $log"
		grep -E 'Kernel panic|BUG:|Oops|rerand: stage|E2E-' "$log" | tail -n 6 | cut -c1-300 | sed 's/^/#   /'
		return 0
	fi

	local region ftext text code cs ce lf passed ver
	region=$(crash_field "$first" crash)
	ftext=$(crash_field "$first" text)
	text=$(crash_field "$crash" text)
	code=$(crash_field "$crash" code); cs=${code%-*}; ce=0x${code#*-}
	lf=$(crash_field "$crash" loadflags)
	passed=$(crash_field "$crash" passed)
	ver=${crash#* verify=}

	# Inside the crash region the first kernel reserved, 2 MiB aligned.
	local bad=""
	[ "$region" != none ] || bad+=" no Crash kernel line in the first kernel's /proc/iomem"
	[ "$passed" = "$region" ] || bad+=" e2e.crash=$passed differs from $region"
	crash_in_ranges "$cs" "$ce" "$region" || bad+=" Kernel code $code outside $region"
	[ $(( $(e2e_hex2dec "$text") & 0x1fffff )) -eq 0 ] || bad+=" _text $text misaligned"
	[ $(( $(e2e_hex2dec "$cs") & 0x1fffff )) -eq 0 ] || bad+=" code $cs misaligned"
	e2e_tap "$([ -z "$bad" ]; echo $?)" "$name: crash kernel's Kernel code inside the crash region, bases 2 MiB aligned" "${bad# }"

	bad=""
	[ $(( $(e2e_hex2dec "$lf") & 0x02 )) -ne 0 ] || bad+=" KASLR_FLAG clear (loadflags $lf)"
	case "$ver" in "rc=0 "*) ;; *) bad+=" verify ${ver%% *}" ;; esac
	grep -Eq '"randomized":true' <<<"$ver" || bad+=" not randomized"
	grep -Eq '"crash":true' <<<"$ver" || bad+=" status crash=false"
	# rerand load --crash gives every load a fresh seed: kexec-tools >= 2.0.25
	# (kexec_load) or the kernel >= 6.0 (kexec_file_load) adds a
	# SETUP_RNG_SEED node (kernel-seed), else rerand load writes one into the
	# header (seed); docs/secure-boot.md, "The seed".
	local loader srcs
	loader=$(crash_field "$(crash_line "$log" E2E-PANIC)" loader)
	srcs=$(grep -o '"sources":"[^"]*"' <<<"$ver" | cut -d'"' -f4)
	if [ "$loader" = rerand ]; then
		case "+$srcs+" in *+seed+*|*+kernel-seed+*) ;; *) bad+=" sources '$srcs' without a per-load seed (seed or kernel-seed)" ;; esac
	fi
	# (_text at the default base is no failure: virtual slot 0 is a fair
	# draw; the kernel still expects KASLR_FLAG, as the decompressor sets it.)
	e2e_tap "$([ -z "$bad" ]; echo $?)" "$name: KASLR_FLAG set, rerand verify randomized with crash=true${loader:+ (loader $loader, sources $srcs)}" "${bad# }"

	# /proc/vmcore: an ELF64 little-endian core for x86-64 whose segments
	# end where the file ends, carrying the first kernel's VMCOREINFO.
	local vsize ident koff want
	vsize=$(crash_field "$crash" vmcore)
	ident=$(crash_field "$crash" ident)
	koff=$(crash_field "$crash" koff)
	bad=""
	if [ "$vsize" = absent ]; then
		bad=" /proc/vmcore absent"
	else
		[ "${ident:0:14}" = 7f454c46020101 ] || bad+=" ident $ident"
		[ "$(crash_field "$crash" etype)" = 4 ] || bad+=" e_type $(crash_field "$crash" etype)"
		[ "$(crash_field "$crash" emach)" = 62 ] || bad+=" e_machine $(crash_field "$crash" emach)"
		[ "$(crash_field "$crash" phent)" = 56 ] || bad+=" e_phentsize $(crash_field "$crash" phent)"
		[ "$(crash_field "$crash" nload)" -ge 1 ] || bad+=" no PT_LOAD"
		[ "$(crash_field "$crash" nnote)" -ge 1 ] || bad+=" no PT_NOTE"
		[ "$(crash_field "$crash" phend)" = "$vsize" ] || bad+=" segments end at $(crash_field "$crash" phend), file size $vsize"
		want=$(printf '%x' $(( $(e2e_hex2dec "$ftext") - CRASH_TEXT_BASE )))
		[ "$koff" = "$want" ] || bad+=" VMCOREINFO KERNELOFFSET=$koff, first kernel's _text gives $want"
	fi
	e2e_tap "$([ -z "$bad" ]; echo $?)" "$name: /proc/vmcore ELF headers parse, VMCOREINFO matches the first kernel" "${bad# }"

	# Reading it all: cat exits 0, dd read exactly the file size (4 KiB
	# records), which must cover the first kernel's RAM outside the crash
	# region (within 1%).
	local rd full part cbytes ram_b crash_b expect lo hi
	rd=$(crash_line "$log" E2E-READ)
	full=$(crash_field "$rd" dd_records); part=${full#*+}; full=${full%+*}
	cbytes=$(( ${full:-0} * 4096 ))
	ram_b=$(crash_bytes "$(crash_field "$first" ram)")
	crash_b=$(crash_bytes "$region")
	expect=$((ram_b - crash_b)); lo=$((expect - expect / 100)); hi=$((ram_b + (1 << 20)))
	bad=""
	if [ "$vsize" = absent ]; then
		bad=" /proc/vmcore absent"
	elif [ -z "$rd" ]; then
		bad=" no E2E-READ line: $(crash_why_dead "$log" "$rc")"
	else
		[ "$(crash_field "$rd" cat_rc)" = 0 ] || bad+=" cat exit $(crash_field "$rd" cat_rc)"
		[ "$(crash_field "$rd" dd_rc)" = 0 ] || bad+=" dd exit $(crash_field "$rd" dd_rc)"
		case "$part" in
		0) [ "$cbytes" = "$vsize" ] || bad+=" dd read $cbytes bytes of $vsize" ;;
		1) [ $((vsize - cbytes)) -gt 0 ] && [ $((vsize - cbytes)) -lt 4096 ] ||
			bad+=" dd read ${full}+1 records of $vsize bytes" ;;
		*) bad+=" dd records '$(crash_field "$rd" dd_records)'" ;;
		esac
		[ "$vsize" -ge "$lo" ] && [ "$vsize" -le "$hi" ] || bad+=" size $vsize, RAM outside the crash region $expect"
	fi
	e2e_tap "$([ -z "$bad" ]; echo $?)" "$name: whole /proc/vmcore read ($((vsize >> 20)) MiB: cat $(crash_field "$rd" cat_secs) s, dd $(crash_field "$rd" dd_secs) s)" "${bad# }"

	local slots
	slots=$(grep -o '"phys_slots":[0-9]*' <<<"$ver" | cut -d: -f2)
	e2e_note "$name: first _text=$ftext crash region=$region crash _text=$text code=$cs phys_slots=${slots:-?} virt_slots=$(grep -o '"virt_slots":[0-9]*' <<<"$ver" | cut -d: -f2) sources=$(grep -o '"sources":"[^"]*"' <<<"$ver" | cut -d'"' -f4)"
	echo "$text $cs ${slots:-?}" >"$dir/row"
}

# crash_check_distinct CONFIG WANT DIR...: at most one repeat of the crash
# kernel's virtual and physical base across the panics of one configuration.
# One chance repeat is allowed, so at least 3 panics are needed for the
# check to be able to fail (with 2, a fixed base is one repeat and passes;
# with 3 it is two): a configuration with fewer is a failure of the
# configuration list, never a pass.
crash_check_distinct() {
	local config=$1 want=$2; shift 2
	local rows="" d
	for d in "$@"; do [ -s "$d/row" ] && rows+="$(cat "$d/row")"$'\n'; done
	rows=${rows%$'\n'}
	local n=0 vrep=0 prep=0
	if [ -n "$rows" ]; then
		n=$(wc -l <<<"$rows")
		vrep=$((n - $(cut -d' ' -f1 <<<"$rows" | sort -u | wc -l)))
		prep=$((n - $(cut -d' ' -f2 <<<"$rows" | sort -u | wc -l)))
	fi
	e2e_note "$config: crash kernel bases over $n panics: $(cut -d' ' -f1,2 <<<"$rows" | tr ' \n' '/ ')"
	local why=""
	[ "$n" -ge "$want" ] || why="only $n of $want panics reported"
	[ "$want" -ge 3 ] || why="$want panics configured: at least 3 are needed for one allowed repeat to leave the check able to fail"
	e2e_tap "$([ -z "$why" ] && [ "$vrep" -le 1 ] && [ "$prep" -le 1 ]; echo $?)" \
		"$config: crash kernel bases differ across $n panics (virtual repeats $vrep, physical repeats $prep, allowed 1 each)" "$why"
}

# crash_check_small NAME DIR: `rerand load --crash` refused a region smaller
# than the image needs, said how much it needs, and loaded nothing.
crash_check_small() {
	local name=$1 dir=$2 log=$2/serial.log line
	line=$(crash_line "$log" E2E-SMALL)
	if [ -z "$line" ]; then
		e2e_tap 1 "$name: rerand load --crash refuses a too-small crash region" "$(crash_why_dead "$log" "$(cat "$dir/rc")")"
		return 0
	fi
	local rc loaded size msg have need bad=""
	rc=$(crash_field "$line" rc); loaded=$(crash_field "$line" loaded); size=$(crash_field "$line" size)
	msg=${line#* msg=}
	have=$(sed -n 's/.*crash region is \([0-9]*\) MiB.*/\1/p' <<<"$msg")
	need=$(sed -n 's/.*needs at least \([0-9]*\) MiB.*/\1/p' <<<"$msg")
	[ "$rc" != 0 ] || bad+=" exit status 0"
	[ "$loaded" = 0 ] || bad+=" kexec_crash_loaded=$loaded"
	grep -q '/boot/image' <<<"$msg" || bad+=" message does not name the image"
	[ -n "$have" ] && [ "$have" = $((size >> 20)) ] || bad+=" region '$have' MiB, kexec_crash_size $size"
	[ -n "$need" ] && [ "$need" -gt $((size >> 20)) ] || bad+=" needed size '$need' MiB not above the region"
	e2e_note "$name: $msg"
	e2e_tap "$([ -z "$bad" ]; echo $?)" "$name: rerand load --crash refuses a $((size >> 20)) MiB crash region and names the size needed (${need:-?} MiB)" "${bad# }"
}
