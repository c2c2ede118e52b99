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
	install -m 0644 "$TOP/bench/downtime/rerand-bench.service" "$root/etc/systemd/system/" ||
	die "cannot install the bench agent"
systemctl --root="$root" enable rerand-bench.service >/dev/null 2>&1 || die "cannot enable rerand-bench"
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
echo "bench/downtime.sh: $(basename "$kernel"), ${#plan[@]} reboots (${plan[*]}), timeout ${tmo}s"
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
