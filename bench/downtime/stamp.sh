#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# stamp KIND: print "RRB t KIND N TSC MONO_NS" (bench/downtime/rrb-tsc) on
# the console, N the reboot the agent has started (/var/lib/rerand-bench/n).
#   stop:  ExecStop of rerand-bench-mark.service, which is ordered after
#          multi-user.target, so it is among the first units stopped once the
#          shutdown transaction starts: "shutdown begins";
#   final: systemd-shutdown's hook (/usr/lib/systemd/system-shutdown/), run
#          after every process is killed and the file systems are read-only,
#          right before the kexec (or reboot) system call.
# The TSC is read first, so the stamp costs the measurement nothing but the
# fork and exec of this script.  Kernel log at level 3 (the console prints it
# under "quiet"), and ttyS0 as well while there is a tty to write to.
L=/usr/local/libexec/rerand-bench
#   stop-rerandd, stopped-rerandd: ExecStop= and ExecStopPost= of rerandd's
#          unit (a drop-in of bench/downtime.sh's root in RAM).  Its device
#          policy lets nothing in its cgroup write the console or /dev/kmsg,
#          so these go to a file that "final" prints after its own stamp.
t=$("$L/rrb-tsc")
D=/var/lib/rerand-bench
n=$(cat "$D/n" 2>/dev/null || echo 0)
case "$1" in
*-rerandd)
	echo "RRB t $1 $n $t" >>"$D/stamps"
	exit 0 ;;
esac
echo "<3>RRB t $1 $n $t" >/dev/kmsg 2>/dev/null
[ "$1" = final ] || echo "RRB t $1 $n $t" >/dev/ttyS0 2>/dev/null
if [ "$1" = final ] && [ -s "$D/stamps" ]; then
	while read -r l; do echo "<3>$l" >/dev/kmsg; done <"$D/stamps" 2>/dev/null
fi
exit 0
