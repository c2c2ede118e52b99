#!/bin/bash
# The package of an earlier commit, for the upgrade tests (issue 38, point
# 8): tests/e2e/check-systemd.sh upgrade installs it in a Debian guest and
# upgrades it to this tree's package; tests/e2e/check-piuparts.sh hands it to
# piuparts as the version to upgrade from.
#
#   scripts/old-deb.sh [COMMIT [SUITE]]     prints the path of the .deb
#
# COMMIT (default $RRS_OLD_COMMIT, else the fixed one below) is exported
# with `git archive` (its tree as it was, nothing of this work tree) and
# built by that commit's own `scripts/deb-chroot.sh SUITE`: in a pristine
# debootstrap root of SUITE (default: this host's release) with only
# build-essential and its Build-Depends, as Debian's builders do.  The
# result is cached in ~/.cache/rerand-e2e/debs/rerand-COMMIT12-SUITE/ keyed
# by the commit and the suite: a commit's package never changes.  Needs
# root (deb-chroot.sh), git and the mirror (RRS_MIRROR).
# RRS_OLD_HOW=make-deb: that commit's `make deb` on this host instead (no
# pristine root; only for this host's own release), cached apart
# (rerand-COMMIT12-SUITE-makedeb).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "old-deb: $*" >&2; exit 1; }

# The last commit at version 0.1: the parent of "0.2: a changelog entry"
# (e193cd6).  Fixed, so that the cache key and what is tested do not move
# with the branch.
default_commit=49acc33580af41d8a1fea1b1b90983845a5deed8
commit=${1:-${RRS_OLD_COMMIT:-$default_commit}}
suite=${2:-${SUITE:-}}
[ -n "$suite" ] || suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$suite" ] || die "no SUITE given and /etc/os-release names no VERSION_CODENAME"
case "$suite" in *[!a-z0-9-]*) die "SUITE '$suite': not a Debian suite name" ;; esac
full=$(git -C "$top" rev-parse --verify --quiet "$commit^{commit}") ||
	die "$commit: not a commit of $top (a shallow clone? git fetch --unshallow)"
git -C "$top" cat-file -e "$full:scripts/deb-chroot.sh" 2>/dev/null ||
	die "$commit: has no scripts/deb-chroot.sh to build its package with"

how=${RRS_OLD_HOW:-deb-chroot}
case "$how" in
deb-chroot) tag="" ;;
make-deb)
	tag=-makedeb
	[ "$suite" = "$(. /etc/os-release && echo "${VERSION_CODENAME:-}")" ] ||
		die "RRS_OLD_HOW=make-deb builds for this host's release only, not $suite" ;;
*) die "RRS_OLD_HOW=$how: deb-chroot or make-deb" ;;
esac
cache=${RRS_CACHE:-${XDG_CACHE_HOME:-${HOME:-/var/tmp}/.cache}/rerand-e2e}
out="$cache/debs/rerand-${full:0:12}-$suite$tag"
deb=$(ls "$out"/rerand_*_amd64.deb 2>/dev/null | head -n 1)
if [ -n "$deb" ] && dpkg-deb -I "$deb" >/dev/null 2>&1; then
	echo "$deb"
	exit 0
fi

work=$(mktemp -d "${TMPDIR:-/var/tmp}/rerand-old-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src"
git -C "$top" archive --format=tar "$full" | tar -x -C "$work/src" ||
	die "git archive $full failed"
echo "old-deb: building rerand at ${full:0:12} ($(git -C "$top" show -s --format=%s "$full" | cut -c1-60)) for $suite ($how)" >&2
if [ "$how" = make-deb ]; then
	build() { make -C "$work/src" deb; }
	where="$work/src"
else
	build() { (cd "$work/src" && RRS_MIRROR=${RRS_MIRROR:-http://deb.debian.org/debian} bash scripts/deb-chroot.sh "$suite"); }
	where="$work/src/build/deb-$suite"
fi
if ! build >"$work/build.log" 2>&1; then
	tail -n 20 "$work/build.log" >&2
	mkdir -p "$cache/debs" && cp "$work/build.log" "$cache/debs/rerand-${full:0:12}-$suite$tag.failed.log"
	die "$commit: its $how for $suite failed (log: $cache/debs/rerand-${full:0:12}-$suite$tag.failed.log)"
fi
built=$(ls "$where"/rerand_*_amd64.deb 2>/dev/null | head -n 1)
[ -n "$built" ] || die "$commit: its $how for $suite left no rerand_*_amd64.deb"
mkdir -p "$out.tmp"
cp "$built" "$work/build.log" "$out.tmp/"
rm -rf "$out" && mv "$out.tmp" "$out"
echo "$out/$(basename "$built")"
