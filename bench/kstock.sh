# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
# Sourced by scripts/bench.sh: builds the stock kexec-time path (bench/kstock.c)
# from the kernel sources Debian ships, with the decompressor's own flags.
# kstock_build KERNEL CODEC DIR prints the object to link into stagecost,
# or fails saying why.  Nothing here is shipped or installed.

# arch/x86/boot/compressed/Makefile's KBUILD_CFLAGS for x86_64 (6.1 and 6.12
# agree; kstock_flags_check compares them with the tree being used).
KSTOCK_CFLAGS="-m64 -O2 -std=gnu11 -fno-strict-aliasing -fPIE -fno-jump-tables -Wundef
 -DDISABLE_BRANCH_PROFILING -mcmodel=small -mno-red-zone -mno-mmx -mno-sse -ffreestanding
 -fshort-wchar -fno-stack-protector -Wno-address-of-packed-member -Wno-pointer-sign
 -fno-asynchronous-unwind-tables -D__DISABLE_EXPORTS"

# kstock_series KERNEL: the linux-source series whose decompressor the
# kernel's own bzImage carries (6.16 is not in bookworm: 6.12 stands in).
kstock_series() {
	case "$(basename "$1")" in
	vmlinuz-6.1.*) echo 6.1 ;;
	vmlinuz-6.1[2-9].*) echo 6.12 ;;
	*) return 1 ;;
	esac
}

kstock_flavour() {
	case "$(basename "$1")" in *-cloud-amd64) echo cloud-amd64 ;; *) echo amd64 ;; esac
}

# kstock_tree SERIES DIR: the parts of /usr/src/linux-source-SERIES.tar.xz
# the decompressor needs, unpacked once.
kstock_tree() {
	local series=$1 dir=$2 tar=/usr/src/linux-source-$1.tar.xz
	local t="$dir/linux-source-$series"
	[ -d "$t/lib" ] && { echo "$t"; return 0; }
	[ -r "$tar" ] || { echo "kstock: $tar missing (apt-get install linux-source-$series)" >&2; return 1; }
	mkdir -p "$dir"
	tar -xJf "$tar" -C "$dir" --wildcards "linux-source-$series/lib/*" "linux-source-$series/include/*" \
		"linux-source-$series/arch/x86/include/*" "linux-source-$series/arch/x86/boot/*" \
		"linux-source-$series/arch/x86/entry/syscalls/*" "linux-source-$series/scripts/syscallhdr.sh" ||
		{ echo "kstock: cannot unpack $tar" >&2; return 1; }
	echo "$t"
}

# kstock_gen SERIES FLAVOUR TREE GEN: what the kernel's build would have
# generated: autoconf.h from Debian's config for that flavour, the
# asm-generic wrappers of arch/x86/include/generated, and stand-ins for two
# headers the preboot decompressor includes but never uses (module.h's
# export macros, jiffies.h's time constants).
kstock_gen() {
	local series=$1 flavour=$2 tree=$3 gen=$4
	local cfg=/usr/src/linux-config-$series/config.amd64_none_$flavour.xz
	mkdir -p "$gen/generated" "$gen/linux" "$gen/asm"
	[ -r "$cfg" ] || { echo "kstock: $cfg missing (apt-get install linux-config-$series)" >&2; return 1; }
	xzcat "$cfg" | awk -F= '/^CONFIG_/ { n = $1; v = substr($0, length(n) + 2);
		if (v == "y") print "#define " n " 1"; else if (v == "m") print "#define " n "_MODULE 1";
		else print "#define " n " " v }' >"$gen/generated/autoconf.h"
	{
		echo "/* kstock: the decompressor converts no time; these only let jiffies.h compile */"
		for m in MSEC_TO_HZ_ADJ32 MSEC_TO_HZ_MUL32 MSEC_TO_HZ_SHR32 USEC_TO_HZ_ADJ32 \
			USEC_TO_HZ_MUL32 USEC_TO_HZ_SHR32 HZ_TO_MSEC_NUM HZ_TO_MSEC_DEN HZ_TO_USEC_NUM HZ_TO_USEC_DEN; do
			echo "#define $m 1"
		done
	} >"$gen/generated/timeconst.h"
	# kernel/bounds.c's output: only sizes of mm structures, none of which
	# the decompressor has; values as on x86_64 with Debian's NR_CPUS 8192.
	printf '%s\n' "/* kstock: stand-in for kernel/bounds.c's output (no effect on the decompressor) */" \
		'#define NR_PAGEFLAGS 23' '#define MAX_NR_ZONES 5' '#define NR_CPUS_BITS 13' \
		'#define SPINLOCK_SIZE 4' '#define LRU_GEN_WIDTH 0' '#define __LRU_REFS_WIDTH 0' >"$gen/generated/bounds.h"
	# 6.12's nospec-branch.h includes asm-offsets.h for inline functions the
	# decompressor never calls (the link check below would see a use).
	echo "/* kstock: empty stand-in for the generated asm-offsets.h */" >"$gen/generated/asm-offsets.h"
	printf '%s\n' "/* kstock: the preboot decompressor uses module.h only for these */" \
		'#define EXPORT_SYMBOL(x)' '#define EXPORT_SYMBOL_GPL(x)' \
		'#define MODULE_LICENSE(x)' '#define MODULE_DESCRIPTION(x)' >"$gen/linux/module.h"
	# arch/x86/entry/syscalls/Makefile's headers (asm/unistd.h wants them).
	local sc=$tree/arch/x86/entry/syscalls hdr=$tree/scripts/syscallhdr.sh
	sh "$hdr" --abis i386 --emit-nr "$sc/syscall_32.tbl" "$gen/asm/unistd_32.h" &&
		sh "$hdr" --abis common,64 --emit-nr "$sc/syscall_64.tbl" "$gen/asm/unistd_64.h" &&
		sh "$hdr" --abis common,x32 --emit-nr --offset __X32_SYSCALL_BIT "$sc/syscall_64.tbl" "$gen/asm/unistd_x32.h" &&
		sh "$hdr" --abis i386 --emit-nr --prefix ia32_ "$sc/syscall_32.tbl" "$gen/asm/unistd_32_ia32.h" &&
		sh "$hdr" --abis x32 --emit-nr --prefix x32_ "$sc/syscall_64.tbl" "$gen/asm/unistd_64_x32.h" ||
		{ echo "kstock: cannot generate the syscall headers from $sc" >&2; return 1; }
	# misc.c's parse_elf() and handle_relocations(), verbatim.
	awk '/^static size_t parse_elf\(/,/^}/; /^static void handle_relocations\(/,/^}/' \
		"$tree/arch/x86/boot/compressed/misc.c" >"$gen/misc_parts.c"
	grep -q '^static size_t parse_elf' "$gen/misc_parts.c" &&
		grep -q '^static void handle_relocations' "$gen/misc_parts.c" ||
		{ echo "kstock: $tree/arch/x86/boot/compressed/misc.c: parse_elf or handle_relocations not found" >&2; return 1; }
}

# kstock_cc TREE GEN SRC OBJ [FLAGS...]: compile with the decompressor's
# flags, adding asm-generic wrappers the tree would have generated.
kstock_cc() {
	local tree=$1 gen=$2 src=$3 obj=$4 out m
	shift 4
	for _ in $(seq 1 20); do
		# shellcheck disable=SC2086
		out=$(gcc $KSTOCK_CFLAGS "$@" -nostdinc -isystem "$(gcc -print-file-name=include)" -D__KERNEL__ -include "$tree/include/linux/kconfig.h" \
			-include "$tree/include/linux/hidden.h" -I"$gen" -I"$tree/arch/x86/include" \
			-I"$tree/arch/x86/include/uapi" -I"$tree/include" -I"$tree/include/uapi" \
			-iquote "$tree/arch/x86/boot/compressed" -iquote "$gen" -c -o "$obj" "$src" 2>&1) && return 0
		m=$(echo "$out" | grep -oE "fatal error: asm/[a-z0-9_]+\.h: No such" | head -1 | sed 's/.*asm\///; s/: No such//')
		[ -n "$m" ] && { [ -r "$tree/include/asm-generic/$m" ] || [ -r "$tree/include/uapi/asm-generic/$m" ]; } || break
		echo "#include <asm-generic/$m>" >"$gen/asm/$m"
	done
	echo "kstock: cannot build $src against $tree:" >&2
	echo "$out" | grep -E 'error' | head -5 >&2
	return 1
}

kstock_flags_check() {
	local mk=$1/arch/x86/boot/compressed/Makefile f
	for f in -O2 -mno-sse -mno-mmx -ffreestanding -fno-jump-tables -mno-red-zone -fno-stack-protector; do
		grep -q -- "KBUILD_CFLAGS.*$f" "$mk" || grep -q -- "cflags-\$(CONFIG_X86_64).*$f" "$mk" ||
			{ echo "kstock: $mk no longer sets $f: check KSTOCK_CFLAGS" >&2; return 1; }
	done
}

# kstock_build KERNEL CODEC DIR
kstock_build() {
	local kernel=$1 codec=$2 dir=$3 series flavour tree gen obj
	series=$(kstock_series "$kernel") || { echo "kstock: $(basename "$kernel"): no linux-source series for it" >&2; return 1; }
	flavour=$(kstock_flavour "$kernel")
	tree=$(kstock_tree "$series" "$dir/src") || return 1
	kstock_flags_check "$tree" || return 1
	gen="$dir/gen-$series-$flavour"
	obj="$dir/kstock-$series-$flavour-$codec.o"
	[ -s "$obj" ] && { echo "$obj"; return 0; }
	kstock_gen "$series" "$flavour" "$tree" "$gen" || return 1
	local up
	up=$(echo "$codec" | tr a-z A-Z)
	local warn_arg="char *"
	grep -q 'void warn(const char' "$tree/arch/x86/boot/compressed/error.h" && warn_arg="const char *"
	kstock_cc "$tree" "$gen" "$TOP/bench/kstock.c" "$dir/kstock-main-$series-$flavour-$codec.o" \
		"-DKSTOCK_$up" "-DKSTOCK_WARN_ARG=$warn_arg" || return 1
	kstock_cc "$tree" "$gen" "$tree/arch/x86/boot/compressed/string.c" "$dir/kstock-string-$series-$flavour.o" || return 1
	# One object whose only global symbol is kstock_run: the kernel's
	# memcpy, malloc and the rest (zstd marks its API visible) stay its own.
	ld -r -o "$obj.tmp" "$dir/kstock-main-$series-$flavour-$codec.o" "$dir/kstock-string-$series-$flavour.o" &&
		objcopy --keep-global-symbol=kstock_run "$obj.tmp" "$obj" && rm -f "$obj.tmp" ||
		{ echo "kstock: cannot link $obj" >&2; return 1; }
	if nm "$obj" | awk '$1 == "U" || $2 ~ /^[TDBR]$/ { print $NF }' | grep -v '^kstock_run$' | grep -q .; then
		echo "kstock: $obj exports or needs more than kstock_run:" >&2
		nm "$obj" | awk '$1 == "U" || $2 ~ /^[TDBR]$/' >&2
		return 1
	fi
	echo "$obj"
}
