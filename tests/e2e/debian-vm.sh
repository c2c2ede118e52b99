#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# `make vm`: try rerand on a throwaway Debian 12 machine.  Builds the same
# disk as the systemd end-to-end test (debootstrap once, then `make install
# DESTDIR=`, rerandd enabled, layout age 10 min), boots it under QEMU TCG with
# the serial console on this terminal and a root shell.  Ctrl-A X quits.
#   debian-vm.sh [--kernel VMLINUZ] [--keep]
# --keep boots the disk of the last run again instead of a fresh one.
set -u
. "$(dirname "$0")/lib-systemd.sh"

kernel="" keep=0
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) kernel=${2:?--kernel needs a path}; shift 2 ;;
	--keep) keep=1; shift ;;
	-h|--help) sed -n '3,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "debian-vm: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
if [ -z "$kernel" ]; then
	if [ -d "$E2E_TOP/../shared/kernels" ]; then
		RERAND_KERNELS=$(cd "$E2E_TOP/../shared/kernels" && pwd)
		kernel=$(rrd_kernel)
	fi
	# Debian 12's cloud kernel has NVMe and ext4 built in.
	[ -n "$kernel" ] || kernel=$("$E2E_TOP/scripts/fetch-kernel.sh" linux-image-cloud-amd64) ||
		e2e_die "no kernel: give KERNEL=/path/to/vmlinuz"
fi
[ -r "$kernel" ] || e2e_die "$kernel: cannot read the kernel"
"$E2E_RERAND" inspect "$kernel" >/dev/null || e2e_die "$kernel: rerand cannot use this kernel"

dir="$E2E_TOP/build/vm"
mkdir -p "$dir"
if [ "$keep" = 0 ] || [ ! -s "$dir/disk.img" ]; then
	echo "vm: building the Debian 12 disk (the first time debootstrap takes a few minutes)"
	rrs_disk "$kernel" "$dir/disk.img" vm 0 || e2e_die "cannot build the disk"
fi
cat <<MSG
vm: booting $(basename "$kernel") from $dir/disk.img under QEMU TCG (no network).
vm: you get a root shell on this console.  Try:
      systemctl status rerandd        journalctl -u rerandd -f
      rerand status                   rerand now     (rerandomize at once)
    rerandd rerandomizes by itself when the layout is 10 minutes old
    (/etc/rerand/rerand.conf.d/50-e2e.conf).  Ctrl-A X quits QEMU.
MSG
rrs_qemu "$kernel" "$dir/disk.img" "$dir/serial.log" "$dir/ttyS1.log" 0 interactive
