#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Fetch one Debian kernel package and print the path of its vmlinuz (its
# config-VERSION beside it), for `make demo`, `make vm` and, through
# scripts/kernels.sh, `make check` on a machine without ../shared.
#
#   scripts/fetch-kernel.sh [PACKAGE]     (default linux-image-cloud-amd64)
#
# PACKAGE is a meta-package (resolved with apt-cache to the versioned
# linux-image-* it depends on) or a versioned package.  `apt-get download`
# checks the .deb against the archive's signed index (Release signature ->
# Packages hash), dpkg-deb extracts ./boot only.  Newer kernel packages (7.x
# in trixie-backports, forky) are split: linux-image-V is empty and depends
# on linux-binary-V (./usr/lib/modules/V/vmlinuz) and linux-base-V (its
# config beside it), both fetched the same checked way, at the same version.  Cached, keyed by package and
# version, in $RERAND_KERNEL_CACHE (default ~/.cache/rerand-e2e/kernels), so
# that `make clean` and fresh clones on the same machine reuse it; a cached
# copy is checked against the SHA256SUMS written when it was extracted.
# RERAND_SUITE=SUITE (e.g. trixie): from that suite's archive instead of the
# machine's apt sources, through scripts/suite-apt.sh (a temporary sources
# list checked against the archive keyring; the same signed-index check).
set -eu
meta=${1:-linux-image-cloud-amd64}
cache=${RERAND_KERNEL_CACHE:-${XDG_CACHE_HOME:-${HOME:-/var/tmp}/.cache}/rerand-e2e/kernels}
suite=${RERAND_SUITE:-}
top=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "fetch-kernel: $*" >&2; exit 1; }
apt_cache() {
	if [ -n "$suite" ]; then "$top/scripts/suite-apt.sh" "$suite" apt-cache "$@"; else apt-cache "$@"; fi
}
apt_get() {
	if [ -n "$suite" ]; then "$top/scripts/suite-apt.sh" "$suite" apt-get "$@"; else apt-get "$@"; fi
}

# A meta-package (linux-image-cloud-amd64, linux-image-6.12-cloud-amd64)
# depends on the versioned package; a versioned one depends on none.
resolve() {
	local dep
	dep=$(apt_cache depends "$meta" 2>/dev/null |
		sed -n 's/^ *Depends: *\(linux-image-[0-9][^ ]*\).*/\1/p' | head -n1)
	if [ -n "$dep" ]; then
		echo "$dep"
	elif apt_cache show --no-all-versions "$meta" 2>/dev/null | grep -qx "Package: $meta"; then
		echo "$meta"
	fi
}

# The suite's index first, so that its errors (an unknown suite, an
# InRelease the keyring does not verify) are the ones shown.
[ -z "$suite" ] || "$top/scripts/suite-apt.sh" "$suite" apt-cache stats >/dev/null ||
	die "no checked package index of $suite (scripts/suite-apt.sh)"
pkg=$(resolve)
if [ -z "$pkg" ] && [ -z "$suite" ]; then
	echo "fetch-kernel: $meta unknown to apt-cache; running apt-get update" >&2
	apt-get update -qq >&2 || true
	pkg=$(resolve)
fi
[ -n "$pkg" ] || die "cannot resolve $meta${suite:+ of $suite} to a kernel package (apt-cache policy $meta)"
ver=$(apt_cache show --no-all-versions "$pkg" 2>/dev/null | sed -n 's/^Version: *//p' | head -n1)
[ -n "$ver" ] || die "$pkg: apt-cache shows no candidate version"

mkdir -p "$cache"
dir="$cache/${pkg}_${ver//:/%3a}"
# One fetch at a time per cache, whoever runs it (parallel suites, clones).
exec 9>"$cache/.lock"
flock 9

if [ -s "$dir/SHA256SUMS" ] && (cd "$dir" && sha256sum --quiet -c SHA256SUMS >/dev/null 2>&1); then
	ls "$dir"/vmlinuz-* | head -n1
	exit 0
fi
[ -e "$dir" ] && echo "fetch-kernel: $dir: cached copy incomplete or changed: fetching again" >&2

tmp=$(mktemp -d "$cache/fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# download PKG...: each at version $ver into $tmp/debs, each checked to be
# the package and version asked for.
download() {
	local p deb got
	mkdir -p "$tmp/debs"
	echo "fetch-kernel: downloading $* $ver${suite:+ from $suite} (apt-get download, checked against the archive's signed hashes)" >&2
	(cd "$tmp/debs" && apt_get download -q "${@/%/=$ver}" >&2 2>"$tmp/apt.err") ||
		{ cat "$tmp/apt.err" >&2; die "apt-get download $*=$ver failed"; }
	for p in "$@"; do
		deb=$(ls "$tmp/debs/${p}_"*.deb 2>/dev/null | head -n1)
		[ -n "$deb" ] || die "apt-get download $p=$ver left no .deb"
		got=$(dpkg-deb -f "$deb" Package Version | tr '\n' ' ')
		[ "$got" = "Package: $p Version: $ver " ] || die "$deb: holds '$got', want $p $ver"
	done
}
kver=${pkg#linux-image-}
download "$pkg"
deb=$(ls "$tmp/debs/${pkg}_"*.deb)
mkdir "$tmp/x" "$tmp/out"
if dpkg-deb -c "$deb" | grep " \./boot/vmlinuz-" >/dev/null; then
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp/x" --wildcards './boot/vmlinuz-*' './boot/config-*' ||
		die "$deb: cannot extract ./boot/vmlinuz-* and ./boot/config-*"
	mv "$tmp"/x/boot/vmlinuz-* "$tmp"/x/boot/config-* "$tmp/out/" || die "$deb: no vmlinuz or config in ./boot"
else
	# The split packaging: the two packages of the same version it names.
	deps=$(dpkg-deb -f "$deb" Depends)
	for p in "linux-binary-$kver" "linux-base-$kver"; do
		grep -q "\(^\|, \)$p (= $ver)" <<<"$deps" ||
			die "$deb: no ./boot/vmlinuz-$kver, and it does not depend on $p (= $ver): $deps"
	done
	download "linux-binary-$kver" "linux-base-$kver"
	m=./usr/lib/modules/$kver
	dpkg-deb --fsys-tarfile "$tmp/debs/linux-binary-${kver}_"*.deb | tar -x -C "$tmp/x" "$m/vmlinuz" ||
		die "linux-binary-$kver $ver: cannot extract $m/vmlinuz"
	dpkg-deb --fsys-tarfile "$tmp/debs/linux-base-${kver}_"*.deb | tar -x -C "$tmp/x" "$m/config" ||
		die "linux-base-$kver $ver: cannot extract $m/config"
	mv "$tmp/x/$m/vmlinuz" "$tmp/out/vmlinuz-$kver" && mv "$tmp/x/$m/config" "$tmp/out/config-$kver" ||
		die "$tmp/out: cannot move vmlinuz-$kver and config-$kver"
fi
(cd "$tmp/out" && sha256sum vmlinuz-* config-* >SHA256SUMS)
for deb in "$tmp"/debs/*.deb; do
	printf '%s %s %s\n' "$(dpkg-deb -f "$deb" Package)" "$ver" "$(sha256sum "$deb" | cut -c1-64)"
done >"$tmp/out/PACKAGE"
rm -rf "$dir" && mv "$tmp/out" "$dir"
ls "$dir"/vmlinuz-* | head -n1
