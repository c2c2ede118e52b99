#!/bin/bash
# Build a unified kernel image from bookworm's systemd-boot stub with objcopy,
# the way systemd documented it before ukify: each part a new PE section at
# a VMA of its own, after the stub's.
#   tests/mkuki.sh -o OUT -k KERNEL [-i INITRD] [-u UCODE] [-c CMDLINE] [-r OSREL]
set -eu
stub=${UKI_STUB:-/usr/lib/systemd/boot/efi/linuxx64.efi.stub}
out= kernel= initrd= ucode= cmdline= osrel=
while getopts o:k:i:u:c:r: opt; do
	case $opt in
	o) out=$OPTARG ;; k) kernel=$OPTARG ;; i) initrd=$OPTARG ;; u) ucode=$OPTARG ;;
	c) cmdline=$OPTARG ;; r) osrel=$OPTARG ;;
	*) echo "usage: $0 -o OUT -k KERNEL [-i INITRD] [-u UCODE] [-c CMDLINE] [-r OSREL]" >&2; exit 2 ;;
	esac
done
[ -n "$out" ] && [ -n "$kernel" ] || { echo "mkuki: -o and -k are needed" >&2; exit 2; }
[ -r "$stub" ] || { echo "mkuki: $stub: missing (apt-get install systemd-boot-efi)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# VMAs: after the stub's last section, each part 2 MiB aligned past the
# previous one's end, so the sections never overlap in memory.
vma=0
while read -r idx _ size at _; do
	case $idx in *[!0-9]*|"") continue ;; esac
	[ $((0x$at + 0x$size)) -gt $vma ] && vma=$((0x$at + 0x$size))
done < <(objdump -h "$stub")
args=()
add() {
	local sec=$1 file=$2 size
	size=$(stat -c %s "$file")
	vma=$(( (vma + 0x1fffff) & ~0x1fffff ))
	args+=(--add-section "$sec=$file" --change-section-vma "$sec=$(printf 0x%x $vma)")
	vma=$((vma + size))
}
if [ -n "$osrel" ]; then add .osrel "$osrel"; fi
if [ -n "$cmdline" ]; then printf '%s' "$cmdline" > "$tmp/cmdline"; add .cmdline "$tmp/cmdline"; fi
add .linux "$kernel"
if [ -n "$ucode" ]; then add .ucode "$ucode"; fi
if [ -n "$initrd" ]; then add .initrd "$initrd"; fi
objcopy "${args[@]}" "$stub" "$out.tmp"
mv -f "$out.tmp" "$out"
