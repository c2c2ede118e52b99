#!/bin/bash
# `make deb-chroot SUITE=bookworm|trixie`: build the package the way a
# Debian build daemon does, in a pristine root of SUITE that holds only
# build-essential and debian/control's Build-Depends, tests included
# (dh_auto_test), then check the result with SUITE's own lintian --pedantic.
#
#   scripts/deb-chroot.sh [SUITE]      (default: the host's release)
#
# Output, kept stable for other scripts (the trixie systemd guest installs
# this .deb): build/deb-SUITE/rerand_VERSION_amd64.deb, with the .buildinfo
# and .changes, build.log (dpkg-buildpackage's whole output), lintian.txt and
# deps-names.txt (scripts/deps.sh's lists as SUITE's apt resolves them).
#
# The base root (debootstrap --variant=buildd) is cached as a tarball in
# ~/.cache/rerand-e2e keyed by suite, mirror and RRC_ROOT_VERSION; each run
# unpacks it afresh, so nothing of an earlier build leaks into the next.
# Needs root (debootstrap, chroot) and the mirror (RRS_MIRROR, as the e2e
# guests use).  The chroot runs in its own mount namespace with a private
# /proc, a tmpfs /dev/shm, a read-only sysfs and a devpts instance of its own
# (all vanish with the namespace, whatever happens), never the host's /dev
# (debootstrap made the device nodes), and without CAP_SYS_BOOT and
# CAP_SYS_MODULE in its bounding set: nothing in it can load a kernel on this
# host.  The build itself runs as an unprivileged user without network
# (a loopback only), as on the buildds.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

die() { echo "deb-chroot: $*" >&2; exit 1; }

host_suite() {
	(. /etc/os-release && echo "${VERSION_CODENAME:-}")
}
suite=${1:-${SUITE:-}}
[ -n "$suite" ] || suite=$(host_suite)
[ -n "$suite" ] || die "no SUITE given and /etc/os-release names no VERSION_CODENAME"
case "$suite" in
*[!a-z0-9-]*) die "SUITE '$suite': not a Debian suite name" ;;
esac
[ -e "/usr/share/debootstrap/scripts/$suite" ] ||
	die "SUITE '$suite': debootstrap on this host does not know it (/usr/share/debootstrap/scripts/$suite missing)"
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap and chroot)"
for t in debootstrap unshare setpriv chroot ip; do
	command -v "$t" >/dev/null || die "$t is missing (scripts/deps.sh deb)"
done

mirror=${RRS_MIRROR:-http://deb.debian.org/debian}
security_mirror=${RRC_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
cache=${RRS_CACHE:-${XDG_CACHE_HOME:-${HOME:-/var/tmp}/.cache}/rerand-e2e}
# Bump when the way the base root is made changes (part of its cache key).
RRC_ROOT_VERSION=1
out="$top/build/deb-$suite"
version=$(dpkg-parsechangelog -S Version) || die "debian/changelog: cannot read its version"

# build_root: print the cached base root tarball of $suite, making it with
# debootstrap when its inputs changed.
build_root() {
	local key tar tmp
	key=$(printf '%s|%s|buildd|%s' "$suite" "$mirror" "$RRC_ROOT_VERSION" | sha256sum | cut -c1-16)
	tar="$cache/buildroot-$suite-$key.tar"
	if [ -s "$tar" ]; then touch "$tar"; echo "$tar"; return 0; fi
	mkdir -p "$cache"
	find "$cache" -maxdepth 1 -name 'buildroot-*.tar' -mtime +30 -delete 2>/dev/null || true
	tmp=$(mktemp -d "$cache/debootstrap.XXXXXX")
	echo "deb-chroot: debootstrap --variant=buildd $suite from $mirror (cached in $tar)" >&2
	if ! DEBIAN_FRONTEND=noninteractive debootstrap --variant=buildd "$suite" "$tmp/root" \
		"$mirror" >"$tmp.log" 2>&1; then
		tail -n 20 "$tmp.log" >&2
		die "debootstrap of $suite failed (log: $tmp.log)"
	fi
	if grep -q " $tmp/root" /proc/mounts; then
		die "debootstrap left mounts under $tmp/root"
	fi
	rm -rf "$tmp/root/var/cache/apt/archives/"*.deb "$tmp/root/var/lib/apt/lists/"*_Packages
	tar -C "$tmp/root" --numeric-owner -cf "$tar.tmp" . || die "cannot write $tar"
	mv "$tar.tmp" "$tar"
	rm -rf "$tmp" "$tmp.log"
	echo "$tar"
}

tarball=$(build_root)
work=$(mktemp -d "${TMPDIR:-/var/tmp}/rerand-deb-$suite.XXXXXX")
root="$work/root"

# Every mount is made inside the chroot's own mount namespace (unshare -m),
# so none can outlive it; this is the belt to that: never remove a tree
# that still has something mounted in it.
cleanup() {
	local m
	for m in $(awk -v r="$root/" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r); do
		umount -l "$m" 2>/dev/null || true
	done
	if awk -v r="$root/" 'index($2, r) == 1 { f = 1 } END { exit !f }' /proc/mounts; then
		echo "deb-chroot: mounts remain under $root: left in place" >&2
		return
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$root"
tar -C "$root" --numeric-owner -xf "$tarball"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
# A copy of the tree as it is (tracked and new files, not build/ or .git).
mkdir -p "$root/build/rerand-$version"
if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git -C "$top" ls-files -z -c -o --exclude-standard |
		(cd "$top" && xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh) |
		tar -C "$top" --null -T - -cf - | tar -C "$root/build/rerand-$version" -xf -
else
	tar -C "$top" -c --exclude=./build --exclude=./.git --exclude='./*.deb' . |
		tar -C "$root/build/rerand-$version" -xf -
fi

# in_root [--net] [--user] CMD: CMD in the chroot, in a mount namespace of
# its own with /proc, /dev/shm, a read-only /sys (the unit tests read real
# sysfs files, as on a buildd; read-only: no kexec_crash_size writes) and a
# devpts of its own (apt's log); no CAP_SYS_BOOT/CAP_SYS_MODULE; without
# --net in a network namespace of its own with only the loopback up.
in_root() {
	local net=(--net) user=()
	while :; do
		case "$1" in
		--net) net=(); shift ;;
		--user) user=(setpriv --reuid=rrbuild --regid=rrbuild --init-groups --reset-env); shift ;;
		*) break ;;
		esac
	done
	unshare --mount --propagation private --pid --fork "${net[@]}" -- \
		/bin/sh -c 'set -e; mount -t proc proc "$0/proc"; mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$0/dev/shm"
			mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$0/sys"
			mkdir -p "$0/dev/pts"; mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$0/dev/pts"
			[ -z "$1" ] || ip link set lo up
			shift; exec setpriv --bounding-set -sys_boot,-sys_module chroot "$0" "$@"' \
		"$root" "${net[*]}" "${user[@]}" "$@"
}

echo "deb-chroot: $suite: the Build-Depends of rerand $version (apt-get build-dep, no Recommends)"
in_root --net /bin/sh -c 'export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq && apt-get build-dep -y -qq --no-install-recommends "$0" >/dev/null' \
	"/build/rerand-$version" || die "$suite: installing the Build-Depends failed"
# The builder: an unprivileged user, written in by hand (useradd is in
# passwd, which a buildd root need not hold).
echo 'rrbuild:x:2000:2000:rerand build:/build:/bin/sh' >>"$root/etc/passwd"
echo 'rrbuild:x:2000:' >>"$root/etc/group"
chroot "$root" chown -R 2000:2000 /build

mkdir -p "$out"
rm -f "$out"/rerand_* "$out/build.log" "$out/lintian.txt" "$out/lintian-overrides.txt" "$out/deps-names.txt"
echo "deb-chroot: $suite: dpkg-buildpackage -b (log: $out/build.log)"
rc=0
in_root --user /bin/sh -c 'cd "$0" && exec env HOME=/build PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	dpkg-buildpackage -b -us -uc' "/build/rerand-$version" >"$out/build.log" 2>&1 || rc=$?
grep -E '^dh_auto_test: ' "$out/build.log" || true
if [ "$rc" -ne 0 ]; then
	tail -n 40 "$out/build.log" >&2
	die "$suite: dpkg-buildpackage failed (exit $rc; log: $out/build.log)"
fi
cp "$root/build/rerand_${version}_amd64.deb" "$root/build/rerand_${version}_amd64.buildinfo" \
	"$root/build/rerand_${version}_amd64.changes" "$out/"

# The release's own lintian, installed only now: the build saw none of it.
echo "deb-chroot: $suite: lintian --pedantic (its own, $out/lintian.txt)"
in_root --net /bin/sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends lintian >/dev/null' ||
	die "$suite: installing lintian failed"
# Two runs: the verdict without --show-overrides (bookworm's lintian 2.116
# counts a shown override by its tag's severity, so an overridden warning
# failed --fail-on warning with nothing but I:, N: and O: lines in its
# output), then the overrides shown, for the record.
lrc=0
in_root --user /bin/sh -c 'cd /build && env HOME=/build lintian --version && exec env HOME=/build \
	lintian --pedantic --display-info --fail-on error,warning "$0"' \
	"rerand_${version}_amd64.changes" >"$out/lintian.txt" 2>&1 || lrc=$?
in_root --user /bin/sh -c 'cd /build && exec env HOME=/build \
	lintian --pedantic --display-info --show-overrides --fail-on none "$0" | grep "^[ON]: "' \
	"rerand_${version}_amd64.changes" >"$out/lintian-overrides.txt" 2>&1
cat "$out/lintian.txt" "$out/lintian-overrides.txt"
[ "$lrc" -eq 0 ] || die "$suite: lintian reports errors or warnings (exit $lrc)"

# scripts/deps.sh names packages by what apt offers: every list of it must
# resolve in this release's root (nothing installed for it), with the
# sources a Debian installation has (bookworm's linux-source-6.12 is in
# bookworm-security only).
{
	echo "deb $mirror $suite-updates main"
	echo "deb $security_mirror $suite-security main"
} >"$root/etc/apt/sources.list.d/rerand-deps-check.list"
in_root --net /bin/sh -c 'apt-get update -qq' || die "$suite: apt-get update with $suite-updates and -security failed"
: >"$out/deps-names.txt"
for w in check deb vm demo bench deb-chroot; do
	echo "== scripts/deps.sh --names $w" >>"$out/deps-names.txt"
	chroot "$root" /bin/bash "/build/rerand-$version/scripts/deps.sh" --names "$w" >>"$out/deps-names.txt" 2>&1 ||
		{ cat "$out/deps-names.txt" >&2; die "$suite: scripts/deps.sh --names $w does not resolve here"; }
done
grep '^deps: chose' "$out/deps-names.txt" | sort -u
echo "deb-chroot: $suite: ok: $out/rerand_${version}_amd64.deb"
