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
# The guest's own stopwatch (bench/downtime/rrb-tsc, "TSC MONO_NS"), read
# first thing: "RRB t up N TSC MONO" is multi-user.target reached.
t_up=$(/usr/local/libexec/rerand-bench/rrb-tsc)
rm -f "$D/stamps"   # rerandd's stop stamps of the last shutdown (stamp.sh)
n=$(cat "$D/n" 2>/dev/null || echo 0)
plan=$(cat "$D/plan")                       # e.g. "s r r s ..."
read -r -a steps <<<"$plan"
kernel=$(cat "$D/kernel")
say "RRB up $n $(cat /proc/sys/kernel/random/boot_id)"
say "RRB t up $n $t_up"
# When PID 1 started (CLOCK_MONOTONIC, us): the kernel's boot ends there.
say "RRB t ustart $n $(systemctl show -p UserspaceTimestampMonotonic --value 2>/dev/null)"
# How the TSC ticks, as the kernel saw it (the host measures it too).
say "RRB tscinfo $n $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null) $(dmesg 2>/dev/null | grep -m 1 -o 'tsc: [A-Za-z ]*[0-9.]* MHz')"
# rerandd's stop at the last shutdown, from the previous boot's journal
# (CLOCK_MONOTONIC of that boot, the clock of its "RRB t stop"): PID 1's
# "Stopping rerandd.service" and "Stopped rerandd.service" lines.
# (The root in RAM has no previous boot's journal: rerandd's unit stamps its
# stop there, "RRB t stop-rerandd" and "stopped-rerandd".)
ram=0
[ -e "$D/ramroot" ] && ram=1
if [ "$n" -ge 1 ] && [ "$ram" = 0 ]; then
	rs=$(journalctl -b -1 -o short-monotonic _PID=1 --no-pager 2>/dev/null | awk '
		/Stopping rerandd\.service/ && a == "" { a = $2 }
		/Stopped rerandd\.service/ { b = $2 }
		END { gsub(/[][]/, "", a); gsub(/[][]/, "", b); print (a == "" ? "-" : a), (b == "" ? "-" : b) }')
	say "RRB rerandd-stop $n $rs"
fi
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
# The root in RAM (bench/downtime.sh): the next boot's initrd is the next
# step's number, as a small archive, then the root archive (zstd), which
# QEMU keeps in fw_cfg.  rerandd stages it (Initrd=) at `rerand now`; stock
# loads it below.
if [ "$ram" = 1 ]; then
	x=/run/rerand-bench
	mkdir -p "$x/nx$D" && echo $((n + 1)) >"$x/nx$D/n" &&
	{ (cd "$x/nx" && printf '%s\n' var var/lib "${D#/}" "${D#/}/n" |
		/usr/local/libexec/rerand-bench/busybox cpio -o -H newc) &&
		/usr/local/libexec/rerand-bench/rrb-fwcfg opt/rerand-bench/root; } >"$x/initrd.new" 2>/dev/null &&
	mv -f "$x/initrd.new" "$x/initrd" || { say "RRB fail $n next initrd"; exit 1; }
	rm -rf "$x/nx"
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
	if [ "$ram" = 1 ]; then
		kexec -l "$kernel" --initrd=/run/rerand-bench/initrd --reuse-cmdline
	else
		kexec -l "$kernel" --reuse-cmdline
	fi || { say "RRB fail $n kexec -l"; exit 1; }
	t=$(/usr/local/libexec/rerand-bench/rrb-tsc)
	say "RRB go $((n + 1)) s"
	say "RRB t go $((n + 1)) $t"
	systemctl kexec
	;;
r)
	touch /run/rerand-bench/go
	t=$(/usr/local/libexec/rerand-bench/rrb-tsc)
	say "RRB go $((n + 1)) r"
	say "RRB t go $((n + 1)) $t"
	rerand now || say "RRB fail $n rerand now"
	;;
esac
