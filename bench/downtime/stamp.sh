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
t=$("$L/rrb-tsc")
n=$(cat /var/lib/rerand-bench/n 2>/dev/null || echo 0)
echo "<3>RRB t $1 $n $t" >/dev/kmsg 2>/dev/null
[ "$1" = final ] || echo "RRB t $1 $n $t" >/dev/ttyS0 2>/dev/null
exit 0
