#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Fetch a Debian cloud kernel for `make demo` when no test kernel is at hand:
# resolve linux-image-cloud-amd64 to its versioned package, download it with
# apt-get into build/kernel-cache, extract it, and print the vmlinuz path.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
meta=${1:-linux-image-cloud-amd64}
cache="$top/build/kernel-cache"
mkdir -p "$cache"

resolve() {
	apt-cache depends "$meta" 2>/dev/null |
		sed -n 's/^ *Depends: *\(linux-image-[0-9][^ ]*\).*/\1/p' | head -n1
}

pkg=$(resolve)
if [ -z "$pkg" ]; then
	echo "fetch-kernel: $meta unknown to apt-cache; running apt-get update" >&2
	apt-get update -qq >&2 || true
	pkg=$(resolve)
fi
[ -n "$pkg" ] || { echo "fetch-kernel: cannot resolve $meta to a kernel package" >&2; exit 1; }

dir="$cache/$pkg"
found=$(ls "$dir"/boot/vmlinuz-* 2>/dev/null | head -n1 || true)
if [ -z "$found" ]; then
	echo "fetch-kernel: downloading $pkg" >&2
	(cd "$cache" && rm -f "$pkg"_*.deb && apt-get download "$pkg" >&2) ||
		{ echo "fetch-kernel: apt-get download $pkg failed" >&2; exit 1; }
	deb=$(ls "$cache/$pkg"_*.deb | head -n1)
	rm -rf "$dir.tmp"
	dpkg-deb -x "$deb" "$dir.tmp" ||
		{ echo "fetch-kernel: $deb: dpkg-deb -x failed" >&2; exit 1; }
	# Only the kernel is wanted: drop the modules and the package.
	find "$dir.tmp" -mindepth 1 -maxdepth 1 ! -name boot -exec rm -rf {} +
	rm -f "$deb"
	rm -rf "$dir" && mv "$dir.tmp" "$dir"
	found=$(ls "$dir"/boot/vmlinuz-* 2>/dev/null | head -n1 || true)
	[ -n "$found" ] || { echo "fetch-kernel: $deb holds no boot/vmlinuz-*" >&2; exit 1; }
fi
echo "$found"
