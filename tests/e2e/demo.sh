#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# `make demo`: boot a Debian kernel in a throwaway QEMU guest, rerandomize it
# with a chain of kexecs and show where each generation landed.
set -u
. "$(dirname "$0")/lib.sh"

kernel="" kexecs=5 fw=seabios cpu=max syscall=load mode=auto mem=${E2E_MEM:-1}
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) kernel=$2; shift ;;
	--kexecs) kexecs=$2; shift ;;
	--fw) fw=$2; shift ;;
	--cpu) cpu=$2; shift ;;
	--syscall) syscall=$2; shift ;;
	--mode) mode=$2; shift ;;
	--mem) mem=$2; shift ;;
	*) echo "usage: $0 [--kernel PATH] [--kexecs N] [--fw seabios|ovmf] [--cpu max|qemu64]" \
		"[--syscall load|file] [--mode auto|stock|rerand] [--mem GIB]" >&2; exit 2 ;;
	esac
	shift
done
if [ "$mode" = auto ]; then mode=$(e2e_mode_auto) || exit 1; fi

if [ -z "$kernel" ]; then
	shared="$E2E_TOP/../shared/kernels"
	if [ -d "$shared" ]; then
		# Prefer a fast-booting cloud kernel (zstd), else any.
		kernel=$( (ls "$shared"/vmlinuz-*6.12*cloud*; ls "$shared"/vmlinuz-*) 2>/dev/null | head -n1)
	fi
	if [ -z "$kernel" ]; then
		kernel=$("$E2E_TOP/scripts/fetch-kernel.sh") || { echo "demo: no kernel" >&2; exit 1; }
	fi
fi
[ -r "$kernel" ] || { echo "demo: $kernel: cannot read the kernel" >&2; exit 1; }

echo "demo: kernel $kernel"
echo "demo: $kexecs kexecs in a QEMU TCG guest (fw=$fw cpu=$cpu ${mem}G), mode=$mode"
[ "$mode" = stock ] && echo "demo: stock kexec (--mode stock), for comparison: no rerand in the guest"
echo "demo: the bases shown are those of the throwaway guest's kernels"
image=$(e2e_image "$mode" "$kernel") || exit 1
initrd=$(e2e_initrd "$mode" "$image") || exit 1
dir="$E2E_BUILD/runs/demo"
mkdir -p "$dir"
append="console=ttyS0,115200 panic=-1 no_timer_check e2e.gen=0 e2e.target=$kexecs e2e.mode=$mode e2e.syscall=$syscall"
rc=0
e2e_qemu "$kernel" "$initrd" "$append" "$dir/serial.log" "$fw" "$cpu" "$mem" \
	"${E2E_TIMEOUT:-$((90 + 60 * kexecs))}" || rc=$?

rows=$(e2e_parse "$dir/serial.log")
printf '\n%-4s %-18s %-14s %-6s %-14s %s\n' gen "virtual base" "physical base" KASLR verify seconds
while IFS=$'\t' read -r gen secs text cs ce lf ram ver; do
	[ -n "$gen" ] || continue
	kaslr=no
	[ $(( $(e2e_hex2dec "$lf") & 2 )) -ne 0 ] && kaslr=yes
	res=-
	if [ "$ver" != none ]; then
		res=$(sed -n 's/.*"result" *: *"\{0,1\}\([^",}]*\).*/\1/p' <<<"$ver")
		[ -n "$res" ] || res="(${ver%% *})"
	fi
	[ "$gen" = 0 ] && res="$res (boot)"
	printf '%-4s %-18s %-14s %-6s %-14s %s\n' "$gen" "$text" "$cs" "$kaslr" "$res" "$secs"
done <<<"$rows"

n=$(grep -c . <<<"$rows")
echo
echo "demo: $n generations, $(cut -f3 <<<"$rows" | sort -u | grep -c .) distinct virtual and" \
	"$(cut -f4 <<<"$rows" | sort -u | grep -c .) distinct physical bases"
if ! grep -q E2E-DONE "$dir/serial.log" || [ "$n" -ne $((kexecs + 1)) ]; then
	echo "demo: FAILED (QEMU exit $rc): $(grep -o 'E2E-FAIL.*' "$dir/serial.log" | head -n1)" >&2
	echo "demo: serial log: $dir/serial.log" >&2
	exit 1
fi
