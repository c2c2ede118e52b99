#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# A service with data to lose (rerand-e2e-writer.service).  "run" appends a
# numbered record to /var/lib/rerand-e2e/data five times a second and never
# fsyncs: only a clean shutdown (systemd's stop jobs, then its final sync and
# unmount before the kexec) gets the last ones to the disk.  "stop"
# (ExecStop) writes and fsyncs a marker naming the last record.
set -u
D=/var/lib/rerand-e2e
boot=$(cat /proc/sys/kernel/random/boot_id)
case "${1:-}" in
run)
	seq=0
	while :; do
		seq=$((seq + 1))
		echo "$boot $seq" >>"$D/data"
		echo "$seq" >/run/rerand-e2e-writer.seq
		sleep 0.2
	done
	;;
stop)
	seq=$(cat /run/rerand-e2e-writer.seq 2>/dev/null || echo 0)
	echo "$boot $seq" >"$D/marker.$boot.tmp"
	sync "$D/marker.$boot.tmp"
	mv "$D/marker.$boot.tmp" "$D/marker.$boot"
	sync "$D"
	echo "rerand-e2e writer: stop marker written at record $seq"
	;;
*)
	echo "usage: $0 run|stop" >&2
	exit 2
	;;
esac
