#!/bin/bash
# Install the Debian packages that `make check` (check), `make demo` (demo),
# `make vm` (vm), `make bench` (bench) or `make deb` (deb)
# need and that are missing, and say so.  Needs root for apt-get when
# anything is missing; does nothing when everything is there.
set -eu
what=${1:-check}

# libssl-dev: rerandd's SHA-256 comes from libcrypto
build_pkgs="gcc make pkg-config binutils libelf-dev liblzma-dev libzstd-dev liblz4-dev
zlib1g-dev libbz2-dev liblzo2-dev libsystemd-dev libcap-dev libinih-dev libcurl4-openssl-dev
libjson-c-dev libssl-dev"
run_pkgs="qemu-system-x86 ovmf seabios kexec-tools busybox-static cpio xz-utils zstd lz4
bzip2 gzip lzop python3 coreutils util-linux"
test_pkgs="clang libclang-rt-14-dev etcd-server etcd-client openssl curl iproute2 gnuplot-nox
sbsigntool osslsigncode pesign softhsm2 libengine-pkcs11-openssl"
# The Debian guest (tests/e2e/lib-systemd.sh, make vm): debootstrap, an ext4
# image made from a directory, systemctl --root for enabling units.
vm_pkgs="debootstrap e2fsprogs systemd ca-certificates"
demo_pkgs="ca-certificates"
# linux-config-*: Debian's kernel configs (autoconf.h for the kernel's
# decompressor path, bench/kstock.sh), only a Recommends of linux-source-*.
bench_pkgs="valgrind gnuplot-nox time linux-source-6.1 linux-source-6.12 linux-config-6.1
linux-config-6.12"
# `make deb`: debhelper (dh, compat 13), dpkg-buildpackage, lintian.
deb_pkgs="debhelper dpkg-dev lintian"
# Test unified kernel images are built from systemd-boot's stub (tests/unit,
# tests/e2e/check-uki.sh).
# The systemd-boot guest (check-systemd.sh, RRS_BOOT=uki): a GPT disk with
# an ESP made without mounting (sfdisk, mkfs.vfat, mtools).
uki_pkgs="systemd-boot-efi fdisk dosfstools mtools"

case "$what" in
check) want="$build_pkgs $run_pkgs $test_pkgs $vm_pkgs $uki_pkgs" ;;
deb)   want="$build_pkgs $deb_pkgs" ;;
vm)    want="$build_pkgs $run_pkgs $vm_pkgs" ;;
demo)  want="$build_pkgs $run_pkgs $demo_pkgs" ;;
bench) want="$build_pkgs $run_pkgs $bench_pkgs" ;;
*) echo "usage: $0 check|demo|vm|bench|deb" >&2; exit 2 ;;
esac

missing=()
for p in $want; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
		missing+=("$p")
	fi
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
