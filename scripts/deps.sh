#!/bin/bash
# Install the Debian packages that `make check` (check), `make demo` (demo),
# `make vm` (vm), `make bench` (bench) or `make deb` (deb)
# need and that are missing, and say so.  Needs root for apt-get when
# anything is missing; does nothing when everything is there.
#   scripts/deps.sh [--names] check|demo|vm|bench|deb|deb-chroot
# --names: print the package names this machine's apt resolves the list to,
# one a line, and fail naming any it does not offer; installs nothing.
#
# Debian 12 (bookworm) and 13 (trixie) name some packages differently, so a
# list entry may be:
#   a|b     the first of a, b that is installed or that apt offers, in that
#           order, as apt-get build-dep takes alternatives (the t64 library
#           names: trixie's libfoo1t64|libfoo1; systemd-dev|systemd, the
#           systemd.pc trixie has in systemd-dev, bookworm in systemd);
#   name?   only if apt offers it, saying so when it does not;
#   @clang-rt   clang's runtime (the fuzzers' libFuzzer and sanitizers):
#           libclang-rt-N-dev for the N of the clang that is installed, else
#           of the clang apt would install (bookworm 14, trixie 19).
# The choices are printed, one line.
set -eu
names_only=0
if [ "${1:-}" = --names ]; then names_only=1; shift; fi
what=${1:-check}

# libssl-dev: signed images' checks (libcrypto); nettle-dev: rerandd's SHA-256
# (Nettle: hashing through OpenSSL 3 would keep its providers resident)
build_pkgs="gcc make pkg-config binutils libelf-dev liblzma-dev libzstd-dev liblz4-dev
zlib1g-dev libbz2-dev liblzo2-dev libsystemd-dev libcap-dev libseccomp-dev libinih-dev libcurl4-openssl-dev
libjson-c-dev libssl-dev nettle-dev"
run_pkgs="qemu-system-x86 ovmf seabios kexec-tools busybox-static cpio xz-utils zstd lz4
bzip2 gzip lzop python3 coreutils util-linux"
# prometheus: promtool, for tests/scripts/test-prometheus-pack.sh (the alert
# rules' `promtool check rules` and `promtool test rules`, and `promtool check
# metrics` on rerandd's textfile); python3-yaml: the same test reads the
# rules' test file.
# kubectl: tests/daemon/test-kured.sh reads the example Kubernetes manifests
# with it (offline).  trixie packages it as kubectl (1.32; kubernetes-client
# is a transitional package there), bookworm only as kubernetes-client (1.20),
# which ships /usr/bin/kubectl too; a kubectl package already installed
# (another vendor's) is kept: both cannot be installed at once.
# python3-jsonschema: tests/cli/test-json-schema.sh holds every --json
# output to docs/json/ with Debian's validator.
# grub-common: GRUB's own grub-editenv, which rerandd runs to clear
# next_entry (tests/daemon/test-bootnext-daemon.sh, tests/unit/test_bootnext.c).
test_pkgs="prometheus python3-yaml clang @clang-rt etcd-server etcd-client openssl curl iproute2 gnuplot-nox bash-completion
sbsigntool osslsigncode pesign softhsm2 libengine-pkcs11-openssl piuparts dbus-daemon systemd kubectl|kubernetes-client
python3-jsonschema grub-common"
# The Debian guest (tests/e2e/lib-systemd.sh, make vm): debootstrap, an ext4
# image made from a directory, systemctl --root for enabling units; kmod's
# depmod -b for the modules put into the root (the UKI guest, the comeback
# guest's watchdog driver).
vm_pkgs="debootstrap e2fsprogs systemd ca-certificates kmod"
demo_pkgs="ca-certificates"
# linux-config-*: Debian's kernel configs (autoconf.h for the kernel's
# decompressor path, bench/kstock.sh), only a Recommends of linux-source-*.
# trixie has no 6.1 (bench/kstock.sh then says which series it cannot build).
bench_pkgs="valgrind gnuplot-nox time linux-source-6.1? linux-source-6.12 linux-config-6.1?
linux-config-6.12 etcd-server etcd-client curl iproute2"
# `make deb`: debhelper (dh, compat 13), dpkg-buildpackage, lintian, and
# the rest of debian/control's Build-Depends: systemd.pc (systemd-dev on
# trixie, systemd on bookworm), the tools the unit tests run.
deb_pkgs="debhelper dpkg-dev lintian systemd-dev|systemd bzip2 xz-utils lzop lz4 zstd"
# `make deb-chroot` (scripts/deb-chroot.sh): debootstrap, unshare and setpriv
# (util-linux), ip (the build's loopback), dpkg-parsechangelog.
chroot_pkgs="debootstrap util-linux iproute2 dpkg-dev debian-archive-keyring"
# Test unified kernel images are built from systemd-boot's stub (tests/kernel,
# tests/e2e/check-uki.sh).
# The systemd-boot guest (check-systemd.sh, RRS_BOOT=uki): a GPT disk with
# an ESP made without mounting (sfdisk, mkfs.vfat, mtools).
uki_pkgs="systemd-boot-efi fdisk dosfstools mtools"

case "$what" in
# check: make check builds the package (the trixie guest installs it) and
# check-deb-chroot.sh runs the unit tests with only Build-Depends' programs,
# so the package build's tools too: on a fresh host (6 Dec 2026) without
# debhelper that suite failed.
check) want="$build_pkgs $run_pkgs $test_pkgs $vm_pkgs $uki_pkgs $deb_pkgs" ;;
deb)   want="$build_pkgs $deb_pkgs" ;;
deb-chroot) want="$chroot_pkgs" ;;
vm)    want="$build_pkgs $run_pkgs $vm_pkgs" ;;
demo)  want="$build_pkgs $run_pkgs $demo_pkgs" ;;
# (the downtime and apt guests are Debian roots: debootstrap, systemctl --root)
bench) want="$build_pkgs $run_pkgs $vm_pkgs $bench_pkgs" ;;
*) echo "usage: $0 [--names] check|demo|vm|bench|deb|deb-chroot" >&2; exit 2 ;;
esac

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'
}
# candidate NAME: the version apt would install of NAME (a real package, not
# only a virtual one), or nothing.  Only NAME's own block: apt-cache takes a
# name it does not know for a regular expression (linux-source-6.1 would
# find linux-source-6.12).
candidate() {
	apt-cache policy "$1" 2>/dev/null | awk -v p="$1:" '
		$0 == p { f = 1; next } /^[^ ]/ { f = 0 }
		f && /^  Candidate: [^(]/ { print $2; exit }'
}
offered() {
	[ -n "$(candidate "$1")" ]
}
# version_major PKG: the upstream major of PKG's installed version, else of
# its candidate (1:14.0-55.7~deb12u1 -> 14).
version_major() {
	local v
	if installed "$1"; then
		v=$(dpkg-query -W -f='${Version}' "$1")
	else
		v=$(candidate "$1")
	fi
	v=${v#*:}
	echo "${v%%[!0-9]*}"
}

chosen=()
unresolved=()
# resolve ENTRY: the package name ENTRY stands for here, on stdout; nothing
# for an optional entry apt does not offer; fails for an unresolvable one.
# Runs in a subshell: resolve_all notes the choice.
resolve() {
	local e=$1 alt n
	case "$e" in
	@clang-rt)
		n=$(version_major clang)
		[ -n "$n" ] || return 1
		e="libclang-rt-$n-dev"
		installed "$e" || offered "$e" || return 1
		echo "$e" ;;
	*'|'*)
		for alt in ${e//|/ }; do
			if installed "$alt" || offered "$alt"; then echo "$alt"; return 0; fi
		done
		return 1 ;;
	*'?')
		e=${e%'?'}
		if installed "$e" || offered "$e"; then echo "$e"; fi ;;
	*)
		echo "$e" ;;
	esac
}

# resolve_all: $want's entries to names in $pkgs, unresolvable ones in
# unresolved.  Called in this shell (not a subshell) to keep chosen.
resolve_all() {
	local e n
	pkgs=()
	chosen=()
	unresolved=()
	for e in $want; do
		if n=$(resolve "$e"); then
			[ -n "$n" ] && pkgs+=("$n")
			case "$e" in
			@clang-rt) chosen+=("$n (clang $(version_major clang)$(installed clang || echo ', to install'))") ;;
			*'|'*) chosen+=("$n (of $e)") ;;
			*'?') [ -n "$n" ] || chosen+=("no ${e%'?'} (not offered)") ;;
			esac
		else
			unresolved+=("$e")
		fi
	done
}

resolve_all
# An apt that has never been updated offers nothing: update once, as root.
if [ ${#unresolved[@]} -gt 0 ] && [ "$(id -u)" -eq 0 ] && [ "$names_only" -eq 0 ]; then
	apt-get update -qq
	resolve_all
fi
if [ ${#chosen[@]} -gt 0 ]; then
	echo "deps: chose ${chosen[*]}" | sed 's/) /), /g' >&2
fi
if [ ${#unresolved[@]} -gt 0 ]; then
	echo "deps: this machine's apt offers no package for: ${unresolved[*]} (apt-get update?)" >&2
	exit 1
fi
if [ "$names_only" -eq 1 ]; then
	bad=()
	for p in "${pkgs[@]}"; do
		installed "$p" || offered "$p" || bad+=("$p")
	done
	printf '%s\n' "${pkgs[@]}"
	[ ${#bad[@]} -eq 0 ] || { echo "deps: apt offers none of: ${bad[*]}" >&2; exit 1; }
	exit 0
fi

missing=()
for p in "${pkgs[@]}"; do
	installed "$p" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing missing Debian packages: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
	echo "deps: not root: run as root, or install them with: apt-get install ${missing[*]}" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps: installed ${#missing[@]} packages"
