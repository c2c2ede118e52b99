#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The kernel radar's kernels: the newest cloud kernel of each Debian suite
# that has one, gathered in one directory for `make check-upstream`
# (tests/e2e/check-upstream.sh), which runs the core chain on each.
#
#   scripts/kernel-radar.sh        print the directory (vmlinuz-V, config-V,
#                                  SHA256SUMS, and RADAR: one line per
#                                  kernel, "FILE SUITE PACKAGE VERSION")
#
# Suites: $RERAND_RADAR_SUITES (default: unstable experimental testing
# stable-backports).  In each, the highest version of the versioned
# linux-image-V-cloud-amd64 packages (experimental has no meta-package)
# is fetched by scripts/fetch-kernel.sh through scripts/suite-apt.sh: the
# suite's InRelease checked against the archive keyring, each .deb against
# that signed index, the split packaging (linux-binary-V) handled there.
# A suite that has no cloud kernel, or cannot be reached, is reported on
# stderr and left out; none at all is an error.  Two suites serving the same
# build (testing and unstable often do) give one kernel, listed under both.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
suites=${RERAND_RADAR_SUITES:-unstable experimental testing stable-backports}
cache=${RERAND_KERNEL_CACHE:-${XDG_CACHE_HOME:-${HOME:-/var/tmp}/.cache}/rerand-e2e/kernels}
die() { echo "kernel-radar: $*" >&2; exit 1; }

# newest SUITE: the highest versioned cloud kernel package of SUITE
newest() {
	local s=$1
	"$top/scripts/suite-apt.sh" "$s" apt-cache pkgnames linux-image- 2>/dev/null |
		grep -E '^linux-image-[0-9][^ ]*-cloud-amd64$' |
		while read -r p; do
			v=$("$top/scripts/suite-apt.sh" "$s" apt-cache show --no-all-versions "$p" 2>/dev/null |
				sed -n 's/^Version: *//p' | head -n1)
			[ -n "$v" ] && echo "$v $p"
		done | sort -V | tail -n1 | cut -d' ' -f2
}

out="$cache/radar"
mkdir -p "$cache"
tmp=$(mktemp -d "$cache/radar.XXXXXX") || die "$cache: cannot make a directory"
err=$(mktemp) || die "cannot make a temporary file"
trap 'rm -rf "$tmp" "$err"' EXIT
chmod 0755 "$tmp"
n=0
for s in $suites; do
	if ! "$top/scripts/suite-apt.sh" "$s" apt-cache stats >/dev/null 2>"$err"; then
		echo "kernel-radar: $s: no checked package index ($(tail -n1 "$err")); left out" >&2
		continue
	fi
	pkg=$(newest "$s")
	if [ -z "$pkg" ]; then
		echo "kernel-radar: $s: no linux-image-*-cloud-amd64 package; left out" >&2
		continue
	fi
	if ! k=$(RERAND_SUITE=$s "$top/scripts/fetch-kernel.sh" "$pkg" 2>"$err"); then
		echo "kernel-radar: $s: $pkg: $(tail -n1 "$err"); left out" >&2
		continue
	fi
	d=$(dirname "$k")
	f=$(basename "$k")
	ver=$(cut -d' ' -f2 "$d/PACKAGE" | head -n1)
	echo "kernel-radar: $s: $pkg $ver" >&2
	if [ ! -e "$tmp/$f" ]; then
		ln -f "$k" "$tmp/$f" 2>/dev/null || cp "$k" "$tmp/$f" || die "cannot copy $k"
		c="$d/config-${f#vmlinuz-}"
		[ -e "$c" ] && { ln -f "$c" "$tmp/" 2>/dev/null || cp "$c" "$tmp/"; }
	fi
	echo "$f $s $pkg $ver" >>"$tmp/RADAR"
	n=$((n + 1))
done
[ "$n" -gt 0 ] || die "no suite of '$suites' gave a kernel"
(cd "$tmp" && sha256sum vmlinuz-* config-* >SHA256SUMS 2>/dev/null) || die "cannot write SHA256SUMS"
rm -rf "$out.old"
[ -e "$out" ] && mv "$out" "$out.old"
mv "$tmp" "$out" || die "cannot move the set to $out"
trap 'rm -f "$err"' EXIT
rm -rf "$out.old"
echo "$out"
