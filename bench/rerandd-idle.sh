#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# rerandd's idle footprint, measured (issue 28): a real BUILD/rerandd with a
# real image staged, then left idle, and what it costs then.  `make bench`
# runs it (scripts/bench.sh, OUT=build/bench/idle) for the goals "idle RSS
# <= 4 MiB" and "idle CPU <= 1 s a day"; it also runs by hand.
#
# How it runs (nothing touches the host's kexec state or reboots it):
#  - every path in a temp dir (the fixtures of tests/lib/rerandd.sh, as the
#    daemon tests have them); a real Debian kernel copied into its Boot=
#    and staged;
#  - kexec-tools REPLACED by a stand-in that keeps what it is handed and
#    records its arguments (nothing is loaded), RebootCommand= only records
#    a call;
#  - CAP_SYS_BOOT dropped from the bounding set (setpriv), so even a mistake
#    cannot reboot this machine;
#  - systemd's side played as under rerandd.service: NOTIFY_SOCKET (a
#    datagram listener) and WATCHDOG_USEC from systemd/rerandd.service's
#    WatchdogSec= (WDOG_USEC= overrides), so the watchdog pings sd-event
#    sends are part of the idle cost;
#  - CheckInterval= left at the product's default unless TICK= says;
#  - Kmsg= a FIFO nobody writes to: watched as /dev/kmsg is on a host (a
#    quiet kernel log; without a watched kmsg rerandd looks every minute);
#  - RuntimeDirectory= (the metrics file rewritten at every check) on tmpfs
#    (/dev/shm), as /run/rerand is under rerandd.service.
# "Idle" = the stand-in kexec was called (an image is staged), rerandd has
# no child, and its CPU time has not moved for 5 s (with TICK= set, no
# child for 5 s is enough).  Then: /proc/PID/status and smaps_rollup, the
# mappings by Rss (smaps, summed per file), and over WINDOW seconds VmRSS
# and the CPU every SAMPLE seconds; the CPU (schedstat, ns: 10 ms clock
# ticks are too coarse at this level) extrapolated linearly to a day.
# Older trees' config keys: a key rerandd calls unknown is dropped and the
# start retried, so the same script measures every commit.
#
# Usage: bench/rerandd-idle.sh [BUILD_DIR]   (default: build of this tree)
#   WINDOW=60 (s), SAMPLE=5 (s), KERNEL=vmlinuz to stage,
#   TICK=CheckInterval (e.g. 1s), KEEP=1 keeps the temp dir,
#   OUT=DIR: also machine-readable results for bench/report.py:
#   DIR/result (TSV key, value) and DIR/samples (TSV t_s, rss_kib, cpu_ns).
#   Run as root (ImageUser=nobody builds).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$top/build}" && pwd) || exit 1
RERANDD=$build/rerandd R=$build/rerand
WINDOW=${WINDOW:-60} SAMPLE=${SAMPLE:-5}
KERNEL=${KERNEL:-${RERAND_KERNELS:-$top/../shared/kernels}/vmlinuz-6.1.0-57-cloud-amd64}
OUT=${OUT:-}
die() {
	echo "rerandd-idle: $*" >&2
	[ -z "$OUT" ] || printf 'error\t%s\n' "$*" >>"$OUT/result"
	exit 1
}
if [ -n "$OUT" ]; then
	mkdir -p "$OUT" && : >"$OUT/result" && : >"$OUT/samples" || exit 1
fi
for b in "$RERANDD" "$R"; do [ -x "$b" ] || die "$b is missing: make build/rerandd build/rerand"; done
[ -r "$KERNEL" ] || die "$KERNEL: no kernel to stage (KERNEL=)"
[ "$(id -u)" = 0 ] || die "run as root: rerandd builds its image as ImageUser=nobody"
id nobody >/dev/null 2>&1 || die "no user nobody to build the image as"
command -v python3 >/dev/null || die "python3 is needed for the notify socket"
command -v setpriv >/dev/null || die "setpriv (util-linux) is needed to drop CAP_SYS_BOOT"

# shellcheck source=../tests/lib/rerandd.sh
. "$top/tests/lib/rerandd.sh"
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
rerandd_dirs "$hd" bin pre post
rerandd_keeper_kexec "$hd/bin/kexec"
rerandd_no_reboot "$hd/bin/no-reboot"
KPATH=$hd/boot/$(basename "$KERNEL")
cp "$KERNEL" "$KPATH"
rerandd_fixtures "$hd" "BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro console=ttyS0"
rerandd_unlocked "$hd"
mkfifo "$hd/uevents" "$hd/kmsg"
rerandd_conf_local "$hd" "$hd/bin/kexec" "$hd/no-setup-data" <<EOF
Uevents=$hd/uevents
Lockdown=$hd/lockdown
SecureBoot=$hd/SecureBoot
PackageLocks=$hd/lock-frontend $hd/lock

[Stage]
Kernel=$KPATH
Initrd=none

[Crash]
Mode=off

$(rerandd_policy MaxLayoutAge=30d)

$(rerandd_reboot_by "$hd/bin/no-reboot $hd")
EOF
# What the tests' instance has that the product does not: their 1 s check,
# a missing kmsg, the run directory on disk.
sed -i -e '/^CheckInterval=/d' -e "s|^Kmsg=.*|Kmsg=$hd/kmsg|" \
	-e "s|^RuntimeDirectory=.*|RuntimeDirectory=$rundir|" \
	-e "s|^MetricsFile=.*|MetricsFile=$rundir/rerand.prom|" "$hd/rerand.conf"
[ -z "${TICK:-}" ] || sed -i "/^\[Daemon\]/a CheckInterval=$TICK" "$hd/rerand.conf"
# Double-check before running: nothing here can load a kernel or reboot.
grep -qx "KexecBinary=$hd/bin/kexec" "$hd/rerand.conf" && grep -qx "Method=command" "$hd/rerand.conf" &&
	grep -qx "RebootCommand=$hd/bin/no-reboot $hd" "$hd/rerand.conf" || die "unsafe config"
# The interval in effect (an older rerandd has no --dump-config)
tick=$("$RERANDD" --dump-config --config "$hd/rerand.conf" --config-dir "$hd/conf.d" 2>/dev/null |
	sed -n 's/^CheckInterval=//p')
tick=${tick:-${TICK:-default}}

# systemd's notify socket, as under Type=notify with the unit's WatchdogSec=
wd=$(sed -n 's/^WatchdogSec=//p' "$top/systemd/rerandd.service")
usec() { systemd-analyze timespan "$1" 2>/dev/null | awk '/μs:/ { print $2 }'; }
WDOG_USEC=${WDOG_USEC:-$(usec "$wd")}
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
t_start=$EPOCHREALTIME
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
rss_kib() { awk '/^VmRSS:/ { print $2 }' /proc/$pid/status; }
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
t_idle=$EPOCHREALTIME startup_ns=$(cpu_ns)

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

# The window: VmRSS and the CPU every SAMPLE s; clock ticks (stat, all
# threads) and ns (schedstat) over the whole of it.
hz=$(getconf CLK_TCK)
samples=${OUT:-$tmp}/samples
echo -e "# t_s\trss_kib\tcpu_ns (schedstat, since the start of the window)" >"$samples"
read -r -a s0 < <(sed 's/^.*) //' /proc/$pid/stat)
c0=$(cpu_ns) w0=$(awk '/^voluntary_ctxt_switches/ { print $2 }' /proc/$pid/status) n0=$(wc -l <"$tmp/notify.log")
t0=$EPOCHREALTIME
echo -e "0.0\t$(rss_kib)\t0" >>"$samples"
elapsed() { awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
while :; do
	left=$(awk -v e="$(elapsed)" -v w="$WINDOW" -v s="$SAMPLE" 'BEGIN { l = w - e; print (l > s ? s : l > 0 ? l : 0) }')
	[ "$left" = 0 ] && break
	sleep "$left"
	kill -0 "$pid" 2>/dev/null || die "rerandd exited during the window: $(tail -3 "$hd/log")"
	echo -e "$(elapsed)\t$(rss_kib)\t$(($(cpu_ns) - c0))" >>"$samples"
done
read -r -a s1 < <(sed 's/^.*) //' /proc/$pid/stat)
c1=$(cpu_ns) w1=$(awk '/^voluntary_ctxt_switches/ { print $2 }' /proc/$pid/status) n1=$(wc -l <"$tmp/notify.log")
span=$(elapsed)
[ -e "$hd/reboot-called" ] && die "rerandd asked for a reboot during the window: not idle"
[ -z "$(children)" ] || die "rerandd had a child at the end of the window: not idle"
# fields after "(comm) ": utime is the 12th (index 11), stime 13th, cutime, cstime
ticks=$(( s1[11] + s1[12] - s0[11] - s0[12] )) cticks=$(( s1[13] + s1[14] - s0[13] - s0[14] ))
echo "-- CPU over $span s idle (CheckInterval=$tick, WATCHDOG_USEC=$WDOG_USEC), extrapolated linearly x $(awk -v s="$span" 'BEGIN { printf "%.0f", 86400 / s }') to a day"
awk -v t="$ticks" -v ct="$cticks" -v hz="$hz" -v ns=$((c1 - c0)) -v w="$span" -v cs=$((w1 - w0)) -v nt=$((n1 - n0)) 'BEGIN {
	printf "utime+stime: %d ticks (%.2f s) -> %.1f s/day; children reaped: %d ticks\n", t, t / hz, t / hz * 86400 / w, ct
	printf "schedstat:   %.3f ms on CPU -> %.2f s/day\n", ns / 1e6, ns / 1e9 * 86400 / w
	printf "wakeups:     %d voluntary switches -> %.0f/day; %d sd_notify messages\n", cs, cs * 86400 / w, nt }'
echo "-- after the window"
grep -E '^(VmRSS|RssAnon|RssFile):' /proc/$pid/status | tr -s ' \t' ' ' | paste -sd ' '

[ -n "$OUT" ] || exit 0
# The longest idle sleep: CheckInterval=, or half WatchdogSec= if shorter
# (evaluate.c, sleep_cap_ms); a window shorter than it may hold no wakeup.
tick_usec=$(usec "$tick")
{
	printf 'rerandd\t%s\n' "$(cd "$build/.." && git describe --always --dirty 2>/dev/null)"
	printf 'kernel\t%s\n' "$(basename "$KERNEL")"
	printf 'kexec_calls\t%s\n' "$(wc -l <"$hd/kexec.log")"
	printf 'startup_s\t%s\n' "$(awk -v a="$t_start" -v b="$t_idle" 'BEGIN { printf "%.1f", b - a }')"
	printf 'startup_cpu_ns\t%s\n' "$startup_ns"
	printf 'window_s\t%s\n' "$span"
	printf 'sample_s\t%s\n' "$SAMPLE"
	printf 'cpu_ns\t%s\n' $((c1 - c0))
	printf 'cpu_s_per_day\t%s\n' "$(awk -v ns=$((c1 - c0)) -v w="$span" 'BEGIN { printf "%.3f", ns / 1e9 * 86400 / w }')"
	printf 'ticks\t%s\n' "$ticks"
	printf 'hz\t%s\n' "$hz"
	printf 'children_ticks\t%s\n' "$cticks"
	printf 'wakeups\t%s\n' $((w1 - w0))
	printf 'notify_msgs\t%s\n' $((n1 - n0))
	printf 'watchdog_sec\t%s\n' "$wd"
	printf 'watchdog_usec\t%s\n' "$WDOG_USEC"
	printf 'check_interval\t%s\n' "$tick"
	printf 'tick_set\t%s\n' "${TICK:+1}"
	[ -z "$tick_usec" ] ||
		printf 'sleep_s\t%s\n' $(( (tick_usec < WDOG_USEC / 2 ? tick_usec : WDOG_USEC / 2) / 1000000 ))
	grep -E '^(VmRSS|RssAnon|RssFile|VmHWM):' /proc/$pid/status | awk '{ sub(":", "", $1); print $1 "_kib\t" $2 }'
	printf 'done\t1\n'
} >>"$OUT/result"
