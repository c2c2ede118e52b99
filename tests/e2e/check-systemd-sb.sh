#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The Debian 12 systemd guest of check-systemd.sh under UEFI Secure Boot
# (issue 12): OVMF with Debian's snakeoil keys enrolled boots the 6.1 cloud
# kernel signed with sbsign, so the guest is locked down ([integrity]).  The
# disk holds a rerand image of the guest's release signed on this host (the
# build host) with `rerand image --sign-key/--sign-cert`; a drop-in points
# rerandd's SignedImageDirectory= at it and the guest holds no private key.
# rerandd, under its shipped unit, rerandomizes from that image on its own.
#   short (make check): one rerandomizing reboot.
#   long (make check-long): two, plus the watchdog.
# The checks are check-systemd.sh's, plus per boot: locked down, rerand
# verify with kernel-seed among the sources, the pre-signed image and its
# signer in rerand status; at the last boot, with the image removed, rerandd
# is blocked with the reason and does not retry in a loop.
# long also runs the Debian 13 guest (RRS_SUITE=trixie: systemd 257, trixie's
# 6.12 cloud kernel snakeoil-signed, an image signed for it), as make
# check-long's trixie variant; RRS_SUITE=trixie alone runs only that one.
if [ "${1:-short}" = long ] && [ -z "${RRS_SUITE:-}" ]; then
	RRS_SB=1 "$(dirname "$0")/check-systemd.sh" long
	# (Its short run outlasted the computed QEMU limit here at load 35-48:
	# 6.12 and systemd 257 boot slower under TCG than bookworm's 6.1.)
	exec env RRS_SB=1 RRS_SUITE=trixie RRS_TIMEOUT=${RRS_TIMEOUT:-3600} "$(dirname "$0")/check-systemd.sh" long
fi
exec env RRS_SB=1 "$(dirname "$0")/check-systemd.sh" "$@"
