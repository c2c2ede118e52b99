#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# rerandd's idle footprint, measured (issue 28): a real BUILD/rerandd with a
# real image staged, then left idle, and what it costs then.
#
# How it runs (nothing touches the host's kexec state or reboots it):
#  - every path in a temp dir (fixtures as tests/daemon/test-restage-daemon.sh
#    has them); a real Debian kernel copied into its Boot= and staged;
#  - kexec-tools REPLACED by a stand-in that answers --version and records
#    its arguments (nothing is loaded), RebootCommand= only records a call;
#  - CAP_SYS_BOOT dropped from the bounding set (setpriv), so even a mistake
#    cannot reboot this machine;
#  - systemd's side played as under rerandd.service: NOTIFY_SOCKET (a
#    datagram listener) and WATCHDOG_USEC from systemd/rerandd.service's
#    WatchdogSec= (WDOG_USEC= overrides), so the watchdog pings sd-event
#    sends are part of the idle cost;
#  - CheckInterval= left at the product's default (60 s) unless TICK= says;
#  - RuntimeDirectory= (the metrics file rewritten at every check) on tmpfs
#    (/dev/shm), as /run/rerand is under rerandd.service.
# "Idle" = the stand-in kexec was called (an image is staged), rerandd has
# no child, and its CPU time has not moved for 5 s (with TICK= set, no
# child for 5 s is enough).  Then: /proc/PID/status
# and smaps_rollup, the mappings by Rss (smaps, summed per file), and the
# CPU over WINDOW seconds, extrapolated linearly to a day.
# Older trees' config keys: a key rerandd calls unknown is dropped and the
# start retried, so the same script measures every commit.
#
# Usage: bench/rerandd-idle.sh [BUILD_DIR]   (default: build of this tree)
#   WINDOW=60 (s), KERNEL=vmlinuz to stage, TICK=CheckInterval (e.g. 1s),
#   KEEP=1 keeps the temp dir.  Run as root (ImageUser=nobody builds).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$top/build}" && pwd) || exit 1
RERANDD=$build/rerandd R=$build/rerand
WINDOW=${WINDOW:-60}
KERNEL=${KERNEL:-$top/../shared/kernels/vmlinuz-6.1.0-57-cloud-amd64}
die() { echo "rerandd-idle: $*" >&2; exit 1; }
for b in "$RERANDD" "$R"; do [ -x "$b" ] || die "$b is missing: make build/rerandd build/rerand"; done
[ -r "$KERNEL" ] || die "$KERNEL: no kernel to stage (KERNEL=)"
[ "$(id -u)" = 0 ] || die "run as root: rerandd builds its image as ImageUser=nobody"
command -v python3 >/dev/null || die "python3 is needed for the notify socket"

tmp=$(mktemp -d /tmp/rerandd-idle.XXXXXX)
chmod 0755 "$tmp"
rundir=$(mktemp -d /dev/shm/rerandd-idle-run.XXXXXX) || { rm -rf "$tmp"; exit 1; }
pid= lpid=
cleanup() {
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null
	[ -n "$lpid" ] && kill -TERM "$lpid" 2>/dev/null
	wait 2>/dev/null
	[ -n "${KEEP:-}" ] && echo "kept $tmp $rundir" >&2 || rm -rf "$tmp" "$rundir"
}
trap cleanup EXIT
hd=$tmp/h
mkdir -p "$hd"/{state,boot,conf.d,bin,pre,post}
chmod 0700 "$hd/state"
cat >"$hd/bin/kexec" <<'EOF'
#!/bin/sh
# STAND-IN for kexec-tools (bench/rerandd-idle.sh): records, loads nothing.
[ "$1" = --version ] && { echo "kexec-tools 2.0.25"; exit 0; }
printf '%s\n' "$*" >>"$(dirname "$(dirname "$0")")/kexec.log"
exit 0
EOF
printf '#!/bin/sh\necho REBOOT >>"$1/reboot-called"\nexit 1\n' >"$hd/bin/no-reboot"
chmod 0755 "$hd/bin/kexec" "$hd/bin/no-reboot"
KPATH=$hd/boot/vmlinuz-6.1.0-57-cloud-amd64
cp "$KERNEL" "$KPATH"
cat /proc/sys/kernel/random/uuid >"$hd/boot_id"
echo "btime $(date +%s)" >"$hd/stat"
echo 0 >"$hd/tainted"
echo "BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro console=ttyS0" >"$hd/cmdline"
printf '[none] integrity confidentiality\n' >"$hd/lockdown"
printf '\x06\x00\x00\x00\x00' >"$hd/SecureBoot"
mkfifo "$hd/uevents"
cat >"$hd/rerand.conf" <<EOF
[Daemon]
StateDirectory=$hd/state
RuntimeDirectory=$rundir
MetricsFile=$rundir/rerand.prom
RerandBinary=$R
KexecBinary=$hd/bin/kexec
ImageUser=nobody
${TICK:+CheckInterval=$TICK}

[Paths]
Boot=$hd/boot
ProcCmdline=$hd/cmdline
SetupData=$hd/no-setup-data
Kmsg=$hd/no-kmsg
Tainted=$hd/tainted
BootId=$hd/boot_id
ProcStat=$hd/stat
Watchdog=
WatchdogSysfs=$hd/no-watchdog
WatchdogStopOnReboot=
Pstore=$hd/no-pstore
BootParams=
PreRebootDirectory=$hd/pre
PostBootDirectory=$hd/post
KexecCrashSize=$hd/no-crash-size
KexecCrashLoaded=$hd/no-crash-loaded
ProcVmcore=$hd/no-vmcore
Uevents=$hd/uevents
Lockdown=$hd/lockdown
SecureBoot=$hd/SecureBoot
PackageLocks=$hd/lock-frontend $hd/lock

[Stage]
Kernel=$KPATH
Initrd=none

[Crash]
Mode=off

[Policy]
MaxLayoutAge=30d
Jitter=0
HonorInhibitors=no

[Reboot]
Method=command
RebootCommand=$hd/bin/no-reboot $hd
EOF

# systemd's notify socket, as under Type=notify with the unit's WatchdogSec=
wd=$(sed -n 's/^WatchdogSec=//p' "$top/systemd/rerandd.service")
WDOG_USEC=${WDOG_USEC:-$(systemd-analyze timespan "$wd" 2>/dev/null | awk '/μs:/ { print $2 }')}
[ -n "$WDOG_USEC" ] || die "cannot read WatchdogSec= ($wd) from systemd/rerandd.service: set WDOG_USEC="
python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as f:
    while True:
        f.write(s.recv(4096).decode(errors="replace").replace("\n", " ") + "\n")
' "$tmp/notify" "$tmp/notify.log" &
lpid=$!
for ((i = 0; i < 50; i++)); do [ -S "$tmp/notify" ] && break; sleep 0.1; done

# start; an older tree's unknown key is dropped and the start retried
for ((try = 0; try < 40; try++)); do
	: >"$hd/log"
	NOTIFY_SOCKET=$tmp/notify WATCHDOG_USEC=$WDOG_USEC \
		setpriv --bounding-set=-sys_boot -- sh -c 'export WATCHDOG_PID=$$; exec "$@"' sh \
		"$RERANDD" --config "$hd/rerand.conf" --config-dir "$hd/conf.d" >>"$hd/log" 2>&1 &
	pid=$!
	for ((i = 0; i < 30; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		[ -S "$rundir/control" ] && break
		sleep 0.1
	done
	kill -0 "$pid" 2>/dev/null && break
	wait "$pid" 2>/dev/null; pid=
	key=$(grep -oE 'unknown key [A-Za-z]+' "$hd/log" | head -1 | awk '{ print $3 }')
	[ -n "$key" ] || die "rerandd did not start: $(tail -3 "$hd/log")"
	echo "# this rerandd has no $key=: dropped" >&2
	sed -i "/^$key=/d" "$hd/rerand.conf"
done
[ -n "$pid" ] || die "rerandd did not start"

# idle: staged (kexec called), no child, CPU still for 5 s
cpu_ns() { local t s=0; for t in /proc/$pid/task/*/schedstat; do read -r t _ <"$t" && s=$((s + t)); done; echo $s; }
children() { cat /proc/$pid/task/*/children 2>/dev/null | tr -d ' \n'; }
t_end=$((SECONDS + 600)) still=0 last=
while :; do
	kill -0 "$pid" 2>/dev/null || die "rerandd exited: $(tail -3 "$hd/log")"
	[ $SECONDS -le $t_end ] || die "not idle within 600 s: $(tail -3 "$hd/log")"
	now=$(cpu_ns)
	# (a short TICK= moves the CPU every second: then no child is enough)
	if [ -s "$hd/kexec.log" ] && [ -z "$(children)" ] && { [ -n "${TICK:-}" ] || [ "$now" = "$last" ]; }; then
		still=$((still + 1))
		[ $still -ge 5 ] && break
	else
		still=0
	fi
	last=$now
	sleep 1
done
[ -e "$hd/reboot-called" ] && die "rerandd asked for a reboot: not idle"

echo "== rerandd idle: $RERANDD ($(cd "$build/.." && git describe --always --dirty 2>/dev/null))"
echo "staged: $(wc -l <"$hd/kexec.log") kexec call(s); $(RERAND_CONTROL_SOCKET=$rundir/control "$R" status 2>/dev/null | grep -m1 '^staged:' || echo 'status: n/a')"
echo "linked: $(ldd "$RERANDD" | awk '/=>/ { sub(/\.so.*/, "", $1); printf "%s ", $1 }')"
echo "-- /proc/PID/status"
grep -E '^(VmRSS|RssAnon|RssFile|RssShmem|VmHWM|VmData|VmStk|Threads):' /proc/$pid/status | tr -s ' \t' ' '
echo "-- /proc/PID/smaps_rollup"
grep -E '^(Rss|Pss|Private_Dirty|Anonymous):' /proc/$pid/smaps_rollup | tr -s ' \t' ' '
echo "-- top mappings by Rss (kB, summed per file; [anon] = unnamed anonymous)"
awk '/^[0-9a-f]+-[0-9a-f]+ / { n = ($6 == "" ? "[anon]" : $6); next }
     /^Rss:/ { rss[n] += $2 } /^Anonymous:/ { an[n] += $2 }
     END { for (k in rss) if (rss[k]) printf "%7d %7d  %s\n", rss[k], an[k], k }' /proc/$pid/smaps |
	sort -rn | head -${TOP:-12} | sed '1i\    Rss    Anon  mapping'

# CPU over the window: clock ticks (stat, all threads) and ns (schedstat)
hz=$(getconf CLK_TCK)
read -r -a s0 < <(sed 's/^.*) //' /proc/$pid/stat)
c0=$(cpu_ns) w0=$(awk '/^voluntary_ctxt_switches/ { print $2 }' /proc/$pid/status) n0=$(wc -l <"$tmp/notify.log")
sleep "$WINDOW"
read -r -a s1 < <(sed 's/^.*) //' /proc/$pid/stat)
c1=$(cpu_ns) w1=$(awk '/^voluntary_ctxt_switches/ { print $2 }' /proc/$pid/status) n1=$(wc -l <"$tmp/notify.log")
# fields after "(comm) ": utime is the 12th (index 11), stime 13th, cutime, cstime
ticks=$(( s1[11] + s1[12] - s0[11] - s0[12] )) cticks=$(( s1[13] + s1[14] - s0[13] - s0[14] ))
echo "-- CPU over ${WINDOW} s idle (CheckInterval=${TICK:-default}, WATCHDOG_USEC=$WDOG_USEC), extrapolated linearly x $((86400 / WINDOW)) to a day"
awk -v t="$ticks" -v ct="$cticks" -v hz="$hz" -v ns=$((c1 - c0)) -v w="$WINDOW" -v cs=$((w1 - w0)) -v nt=$((n1 - n0)) 'BEGIN {
	printf "utime+stime: %d ticks (%.2f s) -> %.1f s/day; children reaped: %d ticks\n", t, t / hz, t / hz * 86400 / w, ct
	printf "schedstat:   %.3f ms on CPU -> %.2f s/day\n", ns / 1e6, ns / 1e9 * 86400 / w
	printf "wakeups:     %d voluntary switches -> %d/day; %d sd_notify messages\n", cs, cs * 86400 / w, nt }'
echo "-- after the window"
grep -E '^(VmRSS|RssAnon|RssFile):' /proc/$pid/status | tr -s ' \t' ' ' | paste -sd ' '
