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
exec 3>/dev/ttyS0
n=$(cat "$D/n" 2>/dev/null || echo 0)
plan=$(cat "$D/plan")                       # e.g. "s r r s ..."
read -r -a steps <<<"$plan"
kernel=$(cat "$D/kernel")
echo "RRB up $n $(cat /proc/sys/kernel/random/boot_id)" >&3
# After the marker, so that it costs the measurement nothing: was this boot
# randomized (rerand verify exits 0) or stock (1)?
rerand verify >/dev/null 2>&1
echo "RRB verify $n rc=$?" >&3

if [ "$n" -ge "${#steps[@]}" ]; then
	echo "RRB done $n" >&3
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
	echo "RRB note $n rerandd has nothing staged after 300 s" >&3
sleep "$(cat "$D/settle")"

mode=${steps[$n]}
echo $((n + 1)) >"$D/n.tmp" && mv "$D/n.tmp" "$D/n" && sync
case "$mode" in
s)
	kexec -l "$kernel" --reuse-cmdline || { echo "RRB fail $n kexec -l" >&3; exit 1; }
	echo "RRB go $((n + 1)) s" >&3
	systemctl kexec
	;;
r)
	touch /run/rerand-bench/go
	echo "RRB go $((n + 1)) r" >&3
	rerand now || echo "RRB fail $n rerand now" >&3
	;;
esac
