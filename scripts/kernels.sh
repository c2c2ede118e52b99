#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The kernels the test suites boot and read.
#
#   scripts/kernels.sh              print the kernel directory (vmlinuz-V and
#                                   config-V files, with a SHA256SUMS)
#   scripts/kernels.sh pick ROLE    print one kernel of that directory
#
# The directory is, in order: $RERAND_KERNELS when set; ../shared/kernels
# beside the tree (CI), checked against its SHA256SUMS; else Debian kernel
# packages fetched by fetch-kernel.sh ($RERAND_FETCH_KERNELS, default below)
# and gathered, hard-linked, in one directory of the cache with its own
# SHA256SUMS.  The default set is ../shared's on any host: Debian 12's 6.1
# cloud and generic kernels and its 6.12 cloud kernel (from this machine's
# apt sources on bookworm; elsewhere, e.g. on trixie, whose apt has none of
# them, from bookworm-security through scripts/suite-apt.sh: the only suite
# with the 6.12 one, and the newest 6.1 builds, as a bookworm host gets), and a kernel of 6.15 or later, which no bookworm suite
# serves: the cloud kernel of trixie-backports, Debian 13's own newer
# kernels, built for the release users run and moving more slowly than
# forky's or sid's.  Its version is whatever trixie-backports serves that
# day (old ones leave the archive); make check prints the kernel names and
# the set's PACKAGES file records each package, version and .deb hash.
#
# Roles, so that suites adapt to the versions they are given:
#   cloud61     Debian 12's default series, cloud flavour (lz4, NVMe and ext4
#               built in): what a stock Debian 12 cloud machine runs
#   generic61   Debian 12's default series, generic flavour (xz)
#   cloud612    the 6.12 cloud kernel bookworm also ships (zstd)
#   twolists    a kernel of 6.15 or later (two relocation lists): 7.x in
#               trixie-backports since late 2025
#   newest      the highest version present
# Exit 1, with a message naming the directory, when the role has no kernel.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "kernels: $*" >&2; exit 1; }

# Each entry is PACKAGE (this machine's apt) or SUITE:PACKAGE (that suite's
# archive, checked against the archive keyring: scripts/suite-apt.sh).
# (RERAND_HOST_SUITE: tests/scripts/test-kernels.sh plays a trixie host.)
host_suite=${RERAND_HOST_SUITE:-$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")}
bw=""
[ "$host_suite" = bookworm ] || bw=bookworm-security:
fetch_list=${RERAND_FETCH_KERNELS:-${bw}linux-image-cloud-amd64 ${bw}linux-image-amd64 ${bw}linux-image-6.12-cloud-amd64 trixie-backports:linux-image-cloud-amd64}

check_sums() { # DIR: its SHA256SUMS holds and names every vmlinuz-*
	local d=$1 k
	[ -s "$d/SHA256SUMS" ] || die "$d: no SHA256SUMS"
	(cd "$d" && sha256sum --quiet -c SHA256SUMS >&2) || die "$d: SHA256SUMS does not match"
	for k in "$d"/vmlinuz-*; do
		[ -e "$k" ] || die "$d: no vmlinuz-* kernel"
		grep -q " \*\?${k##*/}\$" "$d/SHA256SUMS" || die "$d: ${k##*/} is not in SHA256SUMS"
	done
}

kernels_dir() {
	if [ -n "${RERAND_KERNELS:-}" ]; then
		[ -d "$RERAND_KERNELS" ] || die "RERAND_KERNELS=$RERAND_KERNELS: not a directory"
		[ -s "$RERAND_KERNELS/SHA256SUMS" ] && check_sums "$RERAND_KERNELS"
		(cd "$RERAND_KERNELS" && pwd)
		return
	fi
	if [ -d "$top/../shared/kernels" ]; then
		local d
		d=$(cd "$top/../shared/kernels" && pwd)
		check_sums "$d"
		echo "$d"
		return
	fi
	local meta k pkgs=() cache set fsuite
	cache=${RERAND_KERNEL_CACHE:-${XDG_CACHE_HOME:-${HOME:-/var/tmp}/.cache}/rerand-e2e/kernels}
	echo "kernels: no ../shared/kernels beside $top: using Debian's packages ($fetch_list)" >&2
	for meta in $fetch_list; do
		fsuite=""
		[[ $meta != *:* ]] || { fsuite=${meta%%:*}; meta=${meta#*:}; }
		k=$(RERAND_KERNEL_CACHE=$cache RERAND_SUITE=$fsuite "$top/scripts/fetch-kernel.sh" "$meta") ||
			die "cannot fetch $meta${fsuite:+ of $fsuite}"
		pkgs+=("$(dirname "$k")")
	done
	set="$cache/set-$(printf '%s\n' "${pkgs[@]##*/}" | sha256sum | cut -c1-16)"
	# One writer of the set at a time (the fetches above took and released
	# the same lock one by one).
	exec 9>"$cache/.lock"
	flock 9
	if [ ! -s "$set/SHA256SUMS" ]; then
		rm -rf "$set.tmp" && mkdir -p "$set.tmp" || die "$set.tmp: cannot create"
		for k in "${pkgs[@]}"; do
			# Hard links: the same bytes, and stat sizes stay the files'.
			cp -l "$k"/vmlinuz-* "$k"/config-* "$set.tmp/" 2>/dev/null ||
				cp "$k"/vmlinuz-* "$k"/config-* "$set.tmp/" || die "$set.tmp: cannot copy $k"
			cat "$k/PACKAGE" >>"$set.tmp/PACKAGES"
		done
		(cd "$set.tmp" && sha256sum vmlinuz-* config-* >SHA256SUMS) &&
			rm -rf "$set" && mv "$set.tmp" "$set" || die "$set: cannot write"
	fi
	exec 9>&-
	check_sums "$set"
	echo "$set"
}

# version KERNEL: "MAJOR MINOR" of a vmlinuz-MAJOR.MINOR... file name.
version() { basename "$1" | sed -n 's/^vmlinuz-\([0-9]*\)\.\([0-9]*\).*/\1 \2/p'; }

pick() {
	local role=$1 dir k name ma mi best="" list=()
	dir=$(kernels_dir) || exit 1
	mapfile -t list < <(ls "$dir"/vmlinuz-* 2>/dev/null | sort -V)
	for k in "${list[@]}"; do
		name=${k##*/}
		read -r ma mi <<<"$(version "$k")"
		[ -n "$ma" ] || continue
		case "$role" in
		cloud61) [ "$ma.$mi" = 6.1 ] && [[ $name == *-cloud-amd64 ]] || continue ;;
		generic61) [ "$ma.$mi" = 6.1 ] && [[ $name == *-amd64 && $name != *-cloud-* && $name != *-rt-* ]] || continue ;;
		cloud612) [ "$ma.$mi" = 6.12 ] && [[ $name == *-cloud-amd64 ]] || continue ;;
		twolists) [ "$ma" -gt 6 ] || { [ "$ma" -eq 6 ] && [ "$mi" -ge 15 ]; } || continue ;;
		newest) ;;
		*) die "unknown role $role (cloud61 generic61 cloud612 twolists newest)" ;;
		esac
		best=$k           # sorted by version: the last match is the newest
	done
	[ -n "$best" ] || die "$dir: no $role kernel among: $(ls "$dir" | grep '^vmlinuz-' | tr '\n' ' ')"
	echo "$best"
}

case "${1:-}" in
"") kernels_dir ;;
pick) [ $# -eq 2 ] || die "usage: $0 [pick ROLE]"; pick "$2" ;;
*) die "usage: $0 [pick ROLE]" ;;
esac
