#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The Debian 12 systemd guest of check-systemd.sh in fleet mode (issue 14,
# part 4): Debian's etcd-server runs in the guest (etcd.service as the
# package ships it, 127.0.0.1:2379); rerandd and its fleet client
# rerand-fleetd run under the units `make install` ships (rerandd.service
# with PrivateNetwork=yes, rerand-fleetd.socket/.service) with a [Fleet]
# etcd drop-in.  At boot 0 rerandd takes the slot through rerand-fleetd and
# rerandomizes; at boot 1 it resumes the slot, verifies the boot and gives
# the slot back.  Checked from etcd's keys, leases and history (etcdctl),
# the journal and `rerand status`.
#   short (make check): one rerandomizing reboot.
#   long (make check-long): the same (fleet mode adds nothing per reboot).
# long also runs the Debian 13 guest against trixie's own etcd-server (3.5.16
# in its archive on 5 Dec 2026), as make check-long's trixie variant; RRS_SUITE=trixie alone
# runs only that one.
if [ "${1:-short}" = long ] && [ -z "${RRS_SUITE:-}" ]; then
	RRS_FLEET=1 "$(dirname "$0")/check-systemd.sh" long
	# (Its short run outlasted the computed QEMU limit here at load 35-48:
	# 6.12 and systemd 257 boot slower under TCG than bookworm's 6.1.)
	exec env RRS_FLEET=1 RRS_SUITE=trixie RRS_TIMEOUT=${RRS_TIMEOUT:-3600} "$(dirname "$0")/check-systemd.sh" long
fi
exec env RRS_FLEET=1 "$(dirname "$0")/check-systemd.sh" "$@"
