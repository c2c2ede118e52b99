#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Whole-reboot downtime, the guest's side (bench/downtime.sh): run by
# rerand-bench.service once multi-user.target is reached, at every boot of
# the Debian systemd guest.  It prints "RRB up N" on the console (the host
# time-stamps every console line), waits until the machine has settled and
# rerandd has an image staged, then starts reboot N+1 of the plan right
# after printing "RRB go N+1 MODE":
#   s (stock): `kexec -l` of the same kernel with this boot's command line
#       beforehand, then `systemctl kexec`;
#   r (rerand): `rerand now`, after which rerandd decides, checks its
#       blockers and reboots through its staged image.
# The host's downtime is the time from "go" to the next "up".  After the
# last step it powers the machine off.  Bench only: nothing here is product.
set -u
D=/var/lib/rerand-bench
mkdir -p /run/rerand-bench
# Every marker goes out twice: through the kernel log at level 3, which the
# kernel's console prints even under "quiet" and which no tty hangup can stop,
# and straight to the console, opened afresh each time: serial-getty
# (Type=idle) may start after this agent and vhangup() the tty, after which an
# fd opened before it gets only EIO.  The make bench of 4 Dec 2026 lost both
# markers of 4 of its 20 reboots when the agent wrote to the tty alone.  The
# host keeps the first copy of each (bench/downtime-parse.sh).
say() {
	echo "<3>$*" >/dev/kmsg 2>/dev/null
	echo "$*" >/dev/ttyS0 2>/dev/null || { sleep 0.2; echo "$*" >/dev/ttyS0 2>/dev/null; }
}
n=$(cat "$D/n" 2>/dev/null || echo 0)
plan=$(cat "$D/plan")                       # e.g. "s r r s ..."
read -r -a steps <<<"$plan"
kernel=$(cat "$D/kernel")
say "RRB up $n $(cat /proc/sys/kernel/random/boot_id)"
# After the marker, so that it costs the measurement nothing: was this boot
# randomized (rerand verify exits 0) or stock (2: no rerand record)?
rerand verify >/dev/null 2>&1
say "RRB verify $n rc=$?"

if [ "$n" -ge "${#steps[@]}" ]; then
	say "RRB done $n"
	sync
	systemctl poweroff
	exit 0
fi
# Settle: the same services up in both modes, rerandd's next image staged
# (it stages after every boot: `rerand status` says so).
for _ in $(seq 1 150); do
	rerand status 2>/dev/null | grep -qi '^ *staged: *yes' && break
	sleep 2
done
rerand status 2>/dev/null | grep -qi '^ *staged: *yes' ||
	say "RRB note $n rerandd has nothing staged after 300 s"
sleep "$(cat "$D/settle")"

mode=${steps[$n]}
echo $((n + 1)) >"$D/n.tmp" && mv "$D/n.tmp" "$D/n" && sync
case "$mode" in
s)
	kexec -l "$kernel" --reuse-cmdline || { say "RRB fail $n kexec -l"; exit 1; }
	say "RRB go $((n + 1)) s"
	systemctl kexec
	;;
r)
	touch /run/rerand-bench/go
	say "RRB go $((n + 1)) r"
	rerand now || say "RRB fail $n rerand now"
	;;
esac
