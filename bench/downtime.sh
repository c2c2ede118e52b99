#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# `make bench`, downtime part (issue 15, part 3): whole-reboot downtime in
# the Debian systemd guest of tests/e2e/lib-systemd.sh, stock against
# rerand, in alternating pairs within one guest (QEMU TCG, one guest).
#   stock:  `kexec -l` beforehand, then "go" and `systemctl kexec`;
#   rerand: "go", then `rerand now`: rerandd decides, checks its blockers
#           and reboots through the image it keeps staged.
# Downtime = host time stamp of the new boot's "RRB up" line, printed once
# multi-user.target is reached (rerand-bench.service), minus that of "go".
# Both modes run the same services (rerandd, the e2e writer, getty).
# The clock (DOWNTIME_CLOCK):
#   wall (default): no -icount (the guest's TSC is the host's);
#   icount: QEMU runs with -icount shift=DOWNTIME_SHIFT (0: one
#       instruction a virtual ns),sleep=DOWNTIME_SLEEP,align=off: the guest's
#       clocks, its TSC among them, advance with the instructions it
#       executes, so the host's load (which only delays them) does not
#       change what the guest measures of its CPU work.  sleep=on (default):
#       while the guest idles, waiting for a timer or for disk I/O, its clock
#       follows the host's.  sleep=off skips idle time instead, but disk I/O
#       completes in host time, so the guest's clock jumps to its next timer
#       whenever it idles before an I/O is done: on 6 Dec 2026 one
#       `mount -o remount,ro` during the shutdown took 58 virtual s.
#       Not the default yet: on 6 Dec 2026, under "quiet", the kernel that
#       the first `systemctl kexec` started printed nothing for 4 and 8 min
#       (sleep=off and sleep=on) where the first boot took 2 and 6 min; with
#       "loglevel=7 earlyprintk=serial,ttyS0,115200" (RRS_APPEND) it came up.
#       Probably not icount's doing: the same disk on the wall clock showed
#       "soft lockup ... [init:1]" of up to 77 s after its kexec, systemd at
#       the new kernel's 411 s (findings): the icount runs were likely cut in it.
# Either way the guest stamps its own TSC (bench/downtime/stamp.sh, agent.sh)
# at "go", shutdown begins, systemd-shutdown's last hook, and multi-user.target,
# and bench/downtime-parse.sh splits each reboot with them; the host's time
# stamps of "go" and "up" give the wall-clock table as before.
# Usage: [DOWNTIME_DEADLINE=EPOCH] bench/downtime.sh OUT_DIR PAIRS [KERNEL]; writes
# OUT_DIR/data/downtime.tsv (step, mode, seconds) and the guest's logs in
# OUT_DIR/downtime/.  Never run by `make check`.
set -u
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:?usage: bench/downtime.sh OUT_DIR PAIRS [KERNEL]}
PAIRS=${2:?usage: bench/downtime.sh OUT_DIR PAIRS [KERNEL]}
export RERAND_KERNELS=${RERAND_KERNELS:-$TOP/../shared/kernels}
[ -n "${3:-}" ] && export RRD_KERNEL=$3
export E2E_BUILD=$OUT/downtime/e2e
# shellcheck source=../tests/e2e/lib-systemd.sh
. "$TOP/tests/e2e/lib-systemd.sh"
die() { echo "bench/downtime.sh: $*" >&2; exit 1; }

dir=$OUT/downtime
mkdir -p "$dir" "$OUT/data" || die "cannot create $dir"
clock=${DOWNTIME_CLOCK:-wall}
case "$clock" in
icount)
	shift_=${DOWNTIME_SHIFT:-0}
	[[ "$shift_" =~ ^[0-9]+$ ]] && [ "$shift_" -le 10 ] ||
		die "DOWNTIME_SHIFT=$shift_: not a fixed shift 0..10 (shift=auto is not deterministic)"
	sleep_=${DOWNTIME_SLEEP:-on}
	case "$sleep_" in on | off) ;; *) die "DOWNTIME_SLEEP=$sleep_: neither on nor off" ;; esac
	export RRS_QEMU_EXTRA="${RRS_QEMU_EXTRA:+$RRS_QEMU_EXTRA }-icount shift=$shift_,sleep=$sleep_,align=off"
	echo "icount $shift_ $sleep_" >"$dir/clock" ;;
wall) echo "wall" >"$dir/clock" ;;
*) die "DOWNTIME_CLOCK=$clock: neither icount nor wall" ;;
esac
tsc=$TOP/build/bench/rrb-tsc
[ -x "$tsc" ] || die "$tsc: not built (make build/bench/rrb-tsc)"
kernel=$(rrd_preflight downtime qemu-system-x86_64 mkfs.ext4 debootstrap systemctl) ||
	die "${kernel:-preflight failed}"
v=$("$E2E_RERAND" inspect "$kernel" 2>/dev/null | sed -n 's/^ *\(kernel \)\{0,1\}version: *\([^ ]*\).*/\2/p' | head -n 1)
[ -n "$v" ] || v=${kernel##*/vmlinuz-}

# The plan: pairs in alternating order (s r, r s, ...).
plan=()
for ((i = 0; i < PAIRS; i++)); do
	if ((i % 2)); then plan+=(r s); else plan+=(s r); fi
done

# The disk: the `make vm` guest (rrs_fill mode vm: rerandd, the writer, a
# getty) plus the bench agent, and a drop-in that keeps rerandd from
# rebooting unless the agent asked (its blocker command) and from aging out.
base=$(rrs_rootfs) || die "no base root (debootstrap)"
root=$(mktemp -d "$dir/root.XXXXXX") || die "mktemp"
trap 'rm -rf "$root"' EXIT
rrs_fill "$root" "$base" "$kernel" vm 0 || die "cannot fill the guest root"
lx="$root/usr/local/libexec/rerand-bench"
install -d "$lx" "$root/var/lib/rerand-bench" &&
	install -m 0755 "$TOP/bench/downtime/agent.sh" "$lx/agent" &&
	install -m 0755 "$TOP/bench/downtime/gate.sh" "$lx/gate" &&
	install -m 0755 "$tsc" "$lx/rrb-tsc" &&
	install -m 0755 "$TOP/bench/downtime/stamp.sh" "$lx/stamp" &&
	install -d "$root/usr/lib/systemd/system-shutdown" &&
	install -m 0755 "$TOP/bench/downtime/shutdown-hook.sh" "$root/usr/lib/systemd/system-shutdown/rerand-bench" &&
	install -m 0644 "$TOP/bench/downtime/rerand-bench.service" \
		"$TOP/bench/downtime/rerand-bench-mark.service" "$root/etc/systemd/system/" ||
	die "cannot install the bench agent"
systemctl --root="$root" enable rerand-bench.service rerand-bench-mark.service >/dev/null 2>&1 ||
	die "cannot enable rerand-bench"
printf '# bench/downtime.sh\n[Policy]\nMaxLayoutAge=30d\nBlockerCommand=/usr/local/libexec/rerand-bench/gate\nBlockerTimeout=10s\n' \
	>"$root/etc/rerand/rerand.conf.d/60-bench.conf"
echo "${plan[*]}" >"$root/var/lib/rerand-bench/plan"
echo "/boot/vmlinuz-$v" >"$root/var/lib/rerand-bench/kernel"
echo "${DOWNTIME_SETTLE:-20}" >"$root/var/lib/rerand-bench/settle"
e2e_mkfs "$root" "$dir/disk.img" "$RRS_DISK_MIB" rrroot || die "cannot make the disk image"
rm -rf "$root"

log=$dir/serial.log
tmo=${DOWNTIME_TIMEOUT:-$((900 + 420 * ${#plan[@]}))}
# DOWNTIME_DEADLINE (epoch seconds): stop the guest then at the latest; the
# pairs completed before it are what is measured, and data/downtime-cut says
# so (bench/downtime-parse.sh).
cut=0
if [ -n "${DOWNTIME_DEADLINE:-}" ]; then
	left=$((DOWNTIME_DEADLINE - EPOCHSECONDS))
	[ "$left" -ge 120 ] || die "DOWNTIME_DEADLINE leaves ${left}s: too little for one boot"
	if [ "$left" -lt "$tmo" ]; then tmo=$left; cut=1; fi
fi
echo "bench/downtime.sh: $(basename "$kernel"), ${#plan[@]} reboots (${plan[*]}), clock $(cat "$dir/clock"), timeout ${tmo}s"
# The agent ends with "RRB done" and `systemctl poweroff`, after which QEMU
# exits.  Once (4 Dec 2026) it kept running after the guest's "reboot: Power
# down" until it was stopped by hand, which would hold `make bench` until the
# timeout above (hours).  So QEMU gets DOWNTIME_GRACE seconds (120) after
# "RRB done" to exit, then SIGTERM; data/downtime-stopped says so.  Every
# reboot is measured by then.
grace=${DOWNTIME_GRACE:-120}
rm -f "$OUT/data/downtime-stopped"
stop_after_done() {
	local pid sp=
	# Its sleeps end with it, so none is left holding make's output open.
	trap '[ -n "$sp" ] && kill "$sp" 2>/dev/null; exit 0' TERM
	until grep -aq 'RRB done' "$log" 2>/dev/null; do sleep 5 & sp=$!; wait "$sp"; done
	sleep "$grace" & sp=$!
	wait "$sp"
	pid=$(cat "$log.pid" 2>/dev/null) || return 0
	[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = qemu-system-x86 ] || return 0
	echo "bench/downtime.sh: QEMU still running ${grace}s after the guest's 'RRB done': stopping it" >&2
	echo "$grace" >"$OUT/data/downtime-stopped"
	kill -TERM "$pid"
}
stop_after_done &
watcher=$!
rc=0
rrs_qemu "$kernel" "$dir/disk.img" "$log" "$dir/ttyS1.log" "$tmo" || rc=$?
kill "$watcher" 2>/dev/null
wait "$watcher" 2>/dev/null
echo "$rc" >"$dir/qemu-rc"

[ "$cut" = 1 ] && date -u -d "@$DOWNTIME_DEADLINE" +%H:%M >"$dir/deadline"
echo "${plan[*]}" >"$dir/plan"
"$TOP/bench/downtime-parse.sh" "$OUT"
