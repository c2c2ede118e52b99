#!/bin/bash
# Rebuild the codec_xz, codec_lzma, codec_zstd and codec_bzip2 seeds with
# small windows: a 64 KiB dictionary (xz, lzma, zstd) and 100 kB blocks
# (bzip2).  A kernel's stream asks for an 8 to 64 MiB dictionary or 900 kB
# blocks, and the libraries allocate what the header asks for on every
# input (under ASan, a fresh mapping with its shadow each time): with such
# seeds the fuzzers ran at 5 (lzma), 26 (xz), 45 (bzip2) and 58 (zstd)
# inputs a second.  The decoders' code is the same for any window, so small
# seeds reach it as well; the fuzz build also lowers liblzma's memory limit
# (RR_LZMA_MEMLIMIT_MIB in the Makefile) so that a mutated header asking
# for more is refused cheaply instead of allocated.
# The plain texts are the ones the old seeds held: a 6000-byte text and the
# first 16 KiB of a vmlinux.  As a bzImage does, each stream is followed by
# the uncompressed size (32 bits, little endian).
# Usage: tests/fuzz/make-lzma-seeds.sh TEXT VMLINUX_HEAD
set -eu
text=$1 vml=$2
here=$(dirname "$0")/corpus
le32() { printf '%08x' "$1" | sed 's/\(..\)\(..\)\(..\)\(..\)/\\x\4\\x\3\\x\2\\x\1/'; }
seed() { # FORMAT XZ-OPTIONS PLAIN OUT
	case $1 in
	zstd) zstd -q -c $2 <"$3" ;;
	bzip2) bzip2 -c $2 <"$3" ;;
	*) xz -c --format="$1" $2 <"$3" ;;
	esac >"$4.tmp"
	{ cat "$4.tmp"; rm -f "$4.tmp"; printf "$(le32 "$(stat -c %s "$3")")"; } >"$4"
}
for fmt in xz lzma zstd bzip2; do
	d=$here/codec_$fmt
	case $fmt in
	xz) f=--lzma2=preset=6,dict=64KiB ;;
	lzma) f=--lzma1=preset=6,dict=64KiB ;;
	# from a pipe, as the kernel's build makes it: no content size
	zstd) f="-19 --zstd=wlog=16" ;;
	bzip2) f=-1 ;;
	esac
	seed "$fmt" "$f" "$text" "$d/text"
	seed "$fmt" "$f" "$vml" "$d/vmlinux"
	n=$(stat -c %s "$d/vmlinux")
	# corrupt: 8 bytes in the middle of the stream flipped
	python3 - "$d/vmlinux" "$d/corrupt" <<'P'
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
m = len(b) // 2
for i in range(m, m + 8):
    b[i] ^= 0x5a
open(sys.argv[2], 'wb').write(b)
P
	# truncated: the first half of the stream, then the whole size
	{ head -c $(( (n - 4) / 2 )) "$d/vmlinux"; tail -c 4 "$d/vmlinux"; } >"$d/truncated"
done
# The kernel's xz streams carry the x86 branch filter in front of LZMA2.
seed xz "--x86 --lzma2=preset=6,dict=64KiB" "$vml" "$here/codec_xz/bcj-vmlinux"
