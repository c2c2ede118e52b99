#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# `make bench-fleet` (and a part of `make bench`), issue 43 point 1: the fleet
# at scale on a real 3-member etcd cluster (Debian's etcd-server on
# 127.0.0.1:2481-2486, data in a temp dir, killed at the end).  For each N of
# BENCH_FLEET_NS and K of 1, 10 and 5 % of N: all N simulated hosts
# (build/bench/fleet-bench: rerand-fleetd's client library, one thread and one
# connection a host, driven as rerandd drives its helper; only the reboot is
# simulated) due at once, rolled out with at most K at a time; the history
# checked by the chaos test's checker; etcd's own /metrics before and after.
# Then the same N idle (rerandd's 5-minute breaker read), and real
# rerand-fleetd processes idle (RSS, CPU).  Time is scaled down by
# BENCH_FLEET_SCALE (100): a 2 s downtime and 1 s confirmation stand for
# 200 s and 100 s, the back-off (RetryBase=5s, RetryMax=5min) and the breaker
# poll (5 min) are divided alike, so request counts per reboot and per idle
# host are what a real fleet would see and request rates are SCALE times a
# real fleet's.  Writes OUT/fleet.md (BENCH_FLEET_OUT, default build/bench-fleet)
# and the section "Fleet at scale" of docs/performance.md.
#   BENCH_FLEET_NS="10 100 1000"   the fleet sizes
#   BENCH_FLEET_DOWN_MS=2000 BENCH_FLEET_CONFIRM_MS=1000 BENCH_FLEET_SCALE=100
#   BENCH_FLEET_MAX_S=600          a rollout whose ideal is longer is not run (said so)
#   BENCH_FLEET_IDLE_S=60          the idle window per N (scaled: 100 min at SCALE=100)
#   BENCH_FLEET_FLEETD=3 BENCH_FLEET_FLEETD_S=120   real rerand-fleetd processes idle, window
#   BENCH_FLEET_APPEND=1           keep OUT's earlier runs (add N = 1,000 later)
set -u
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top" || exit 2

OUT=${BENCH_FLEET_OUT:-$top/build/bench-fleet}
NS=${BENCH_FLEET_NS:-10 100 1000}
FB_DOWN_MS=${BENCH_FLEET_DOWN_MS:-2000}
FB_CONFIRM_MS=${BENCH_FLEET_CONFIRM_MS:-1000}
FB_SCALE=${BENCH_FLEET_SCALE:-100}
MAX_S=${BENCH_FLEET_MAX_S:-600}
IDLE_S=${BENCH_FLEET_IDLE_S:-60}
FLEETD_N=${BENCH_FLEET_FLEETD:-3}
FLEETD_S=${BENCH_FLEET_FLEETD_S:-120}
FLEETD=$top/build/rerand-fleetd
DOCS=${BENCH_FLEET_DOCS:-$top/docs}

die() { echo "bench-fleet: $*" >&2; exit 1; }
note() { echo "bench-fleet: $(date +%T) $*"; }
num() { [[ "$2" =~ ^[1-9][0-9]*$ ]] || die "$1=$2: want a positive whole number"; }
num BENCH_FLEET_DOWN_MS "$FB_DOWN_MS"; num BENCH_FLEET_CONFIRM_MS "$FB_CONFIRM_MS"
num BENCH_FLEET_SCALE "$FB_SCALE"; num BENCH_FLEET_MAX_S "$MAX_S"; num BENCH_FLEET_IDLE_S "$IDLE_S"
num BENCH_FLEET_FLEETD_S "$FLEETD_S"
[[ "$FLEETD_N" =~ ^[0-9]+$ ]] || die "BENCH_FLEET_FLEETD=$FLEETD_N: want a whole number"
for n in $NS; do num "BENCH_FLEET_NS (an entry)" "$n"; done
for t in etcd etcdctl curl python3 ss; do
	command -v "$t" >/dev/null || die "$t is missing (apt-get install etcd-server etcd-client curl python3 iproute2)"
done
[ -x "$top/build/bench/fleet-bench" ] && [ -x "$FLEETD" ] || die "build first: make all build/bench/fleet-bench"

fb_tmp=$(mktemp -d /tmp/rerand-bench-fleet.XXXXXX)
FLEETD_PIDS=()
cleanup() {
	local p
	for p in "${FLEETD_PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	fb_cluster_stop
	rm -rf "$fb_tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
# shellcheck source=fleet-lib.sh
. "$top/bench/fleet-lib.sh"

# BENCH_FLEET_APPEND=1 keeps OUT's earlier runs (another N later, on a
# quieter machine): the runs of this one replace those of the same N and K.
if [ "${BENCH_FLEET_APPEND:-0}" = 1 ] && [ -s "$OUT/params" ]; then
	sed -i '/^load_end=/d; /^end=/d' "$OUT/params"
	echo "appended=$(date -u +%FT%TZ) NS=$NS load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/params"
else
	rm -rf "$OUT"
	mkdir -p "$OUT/runs"
	{
		echo "scale=$FB_SCALE"
		echo "down_ms=$FB_DOWN_MS"
		echo "confirm_ms=$FB_CONFIRM_MS"
		echo "max_s=$MAX_S"
		echo "idle_s=$IDLE_S"
		echo "nproc=$(nproc)"
		echo "mem_kib=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)"
		echo "etcd=$(etcd --version | sed -n 's/^etcd Version: //p')"
		echo "load_start=$(cut -d' ' -f1-3 /proc/loadavg)"
		echo "start=$(date -u +%FT%TZ)"
	} >"$OUT/params"
fi
note "3-member etcd on 127.0.0.1:2481-2486 ($(etcd --version | head -n1))"
fb_cluster_start 2481 || die "cannot start the etcd cluster"
mkdir -p "$OUT/runs/quiet"
fb_metrics "$OUT/runs/quiet" before
sleep 10
fb_metrics "$OUT/runs/quiet" after

cycle_ms=$((FB_DOWN_MS + FB_CONFIRM_MS))
for n in $NS; do
	ks=()
	for k in 1 10 $(((n * 5 + 99) / 100)); do
		[ "$k" -le "$n" ] && [ "$k" -le 64 ] || continue
		[[ " ${ks[*]} " == *" $k "* ]] || ks+=("$k")
	done
	for k in "${ks[@]}"; do
		d=$OUT/runs/$n-$k
		rounds=$(((n + k - 1) / k))
		ideal_s=$((rounds * cycle_ms / 1000))
		if [ "$ideal_s" -gt "$MAX_S" ]; then
			mkdir -p "$d"
			echo "ideal rollout ${ideal_s} s > BENCH_FLEET_MAX_S=$MAX_S s" >"$d/skipped"
			note "N=$n K=$k: not run (ideal ${ideal_s} s > BENCH_FLEET_MAX_S=$MAX_S)"
			continue
		fi
		note "N=$n K=$k: ideal $rounds rounds x $cycle_ms ms = ${ideal_s} s (load $(cut -d' ' -f1 /proc/loadavg))"
		rm -rf "$d"
		fb_rollout "$d" "$n" "$k" "r$n-$k" --deadline $((ideal_s * 3 + 120))
		note "N=$n K=$k: $(tail -n1 "$d/bench.out"); checker: $(grep -E '^max_down=|^VIOLATION' "$d/check" | head -n3 | tr '\n' ' ')"
	done
	note "N=$n idle for ${IDLE_S} s (each host reads the breaker every $((300 / FB_SCALE)) s: 5 min / $FB_SCALE)"
	rm -rf "$OUT/runs/idle-$n"
	fb_idle "$OUT/runs/idle-$n" "$n" "$IDLE_S" || note "N=$n idle: $(tail -n1 "$OUT/runs/idle-$n/bench.out")"
done

# rerand-fleetd's own idle cost: real helpers, each talked to as rerandd does
if [ "$FLEETD_N" -gt 0 ]; then
	note "rerand-fleetd idle: $FLEETD_N helper(s), ${FLEETD_S} s window"
	rm -rf "$OUT/fleetd"
	mkdir -p "$OUT/fleetd"
	fb_conf "$fb_tmp/fleetd.conf" fleetd-idle 1
	for ((i = 0; i < FLEETD_N; i++)); do
		"$FLEETD" --socket "$fb_tmp/fleetd-$i.sock" 2>"$OUT/fleetd/fleetd-$i.log" &
		FLEETD_PIDS+=($!)
	done
	asks=()
	for ((i = 0; i < FLEETD_N; i++)); do
		for _ in $(seq 100); do [ -S "$fb_tmp/fleetd-$i.sock" ] && break; sleep 0.1; done
		python3 "$top/bench/fleetd-idle.py" "${FLEETD_PIDS[$i]}" "$fb_tmp/fleetd-$i.sock" "$FLEETD_S" 20 \
			Backend=etcd Group=fleetd-idle "Endpoints=$FB_EP" MaxConcurrent=1 LockTTL=15 DownTTL=30 \
			"ID=$(printf 'fleetd%02d' "$i")" >"$OUT/fleetd/idle-$i" 2>&1 &
		asks+=($!)
	done
	wait "${asks[@]}"
	grep -h '' "$OUT/fleetd/idle-0" | tr '\n' ' '; echo
fi
echo "load_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/params"
echo "end=$(date -u +%FT%TZ)" >>"$OUT/params"
fb_cluster_stop

note "report: $OUT/fleet.md, $DOCS/performance.md"
python3 "$top/bench/report_fleet.py" "$OUT" "$DOCS" || die "report failed"
bad=$(grep -l . "$OUT"/runs/*/check-rc 2>/dev/null | while read -r f; do [ "$(cat "$f")" = 0 ] || echo "$f"; done)
[ -z "$bad" ] || die "the checker found a violation: $bad"
note "done"
