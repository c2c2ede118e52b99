#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# rerandd's idle cost: run build/rerandd against a fixture directory (every
# path redirected, kexec replaced by /bin/true, reboots only logged, and
# CAP_SYS_BOOT removed from its bounding set so it cannot reboot the host
# even by mistake), sample RSS and CPU time every 5 s for SECS seconds.
# Usage: bench/idle.sh RERANDD DIR SECS KERNEL.  Writes DIR/samples (TSV:
# t_secs rss_kib cpu_ticks) and DIR/summary.
set -u
# No name under build/ may end in ".d": the Makefile includes every such path.
rerandd=$1 dir=$2 secs=$3 kernel=$4
fx="$dir/fixture"
mkdir -p "$fx"/{state,run,boot,setup_data,prereboot-hooks,dropins}
cp "$kernel" "$fx/boot/vmlinuz-bench"
echo "console=ttyS0 root=/dev/vda" >"$fx/cmdline"
: >"$fx/kmsg"
echo 0 >"$fx/tainted"
cat /proc/sys/kernel/random/uuid >"$fx/boot_id"
cat >"$fx/log-reboot.sh" <<EOF
#!/bin/sh
# Only logs: rerandd must never reboot the benchmark host.
echo "reboot requested \$(date +%s)" >>"$fx/reboot-requests"
exit 1
EOF
chmod 0755 "$fx/log-reboot.sh"
cat >"$fx/rerand.conf" <<EOF
[Daemon]
StateDirectory=$fx/state
RuntimeDirectory=$fx/run
MetricsFile=$fx/run/rerand.prom
RerandBinary=$(dirname "$rerandd")/rerand
KexecBinary=/bin/true
CheckInterval=60s
[Paths]
Boot=$fx/boot
ProcCmdline=$fx/cmdline
SetupData=$fx/setup_data
Kmsg=$fx/kmsg
Tainted=$fx/tainted
BootId=$fx/boot_id
PreRebootDirectory=$fx/prereboot-hooks
Watchdog=
WatchdogSysfs=
Pstore=
[Stage]
Kernel=$fx/boot/vmlinuz-bench
Initrd=none
CommandLine=console=ttyS0 root=/dev/vda
[Policy]
RebootOutsideWindows=no
[Reboot]
Method=command
RebootCommand=$fx/log-reboot.sh
EOF

# Double-check before running: the reboot method only logs, kexec is true.
grep -qx "Method=command" "$fx/rerand.conf" && grep -qx "KexecBinary=/bin/true" "$fx/rerand.conf" &&
	grep -qx "RebootCommand=$fx/log-reboot.sh" "$fx/rerand.conf" || { echo "idle: unsafe config" >&2; exit 1; }
args=(--config "$fx/rerand.conf" --config-dir "$fx/dropins")
"$rerandd" --check-config "${args[@]}" >"$dir/check-config" 2>&1 ||
	{ echo "idle: rerandd --check-config failed:" >&2; cat "$dir/check-config" >&2; exit 1; }

setpriv --bounding-set=-sys_boot -- "$rerandd" "${args[@]}" >"$dir/rerandd.log" 2>&1 &
pid=$!
hz=$(getconf CLK_TCK)
echo -e "# hz=$hz\tpid=$pid" >"$dir/samples"
t0=$EPOCHREALTIME
for ((i = 0; i * 5 <= secs; i++)); do
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "idle: rerandd exited early" >>"$dir/summary"
		break
	fi
	rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
	ticks=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
	echo -e "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')\t$rss\t$ticks" >>"$dir/samples"
	sleep 5
done
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
[ -e "$fx/reboot-requests" ] && echo "reboot_requests $(wc -l <"$fx/reboot-requests")" >>"$dir/summary"
echo "done" >>"$dir/summary"
