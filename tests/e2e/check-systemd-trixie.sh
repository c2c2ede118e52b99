#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# check-systemd.sh's Debian guest on Debian 13 (trixie): systemd 257,
# trixie's kexec-tools and its 6.12 cloud kernel from trixie's archive, and
# the package built for trixie (`make deb-chroot SUITE=trixie`) installed
# with `dpkg -i`; the base root's package names are the ones trixie's
# archive offers (libcurl4t64, ...).  Runnable alone on any Debian host as
# `RRS_SUITE=trixie tests/e2e/check-systemd.sh short`.
#   short (make check): one rerandomizing reboot, then `systemctl reboot`
#   with rerandd's image staged (systemd 257 kexecs it; one boot more) and
#   the kexec-tools syscall probe (tests/e2e/debian/reboots.sh): make check's
#   time budget holds a second Debian guest only this lean.
#   long (make check-long): two reboots and the watchdog, then the
#   "reboots" run: systemd 257's own reboot commands (systemctl reboot,
#   reboot, soft-reboot, systemctl kexec, SYSTEMCTL_SKIP_AUTO_KEXEC) against
#   rerandd (tests/e2e/debian/reboots.sh).
here=$(dirname "$0")
if [ "${1:-short}" = long ]; then
	RRS_SUITE=trixie "$here/check-systemd.sh" long
	exec env RRS_SUITE=trixie "$here/check-systemd.sh" reboots
fi
exec env RRS_SUITE=trixie "$here/check-systemd.sh" "$@"
