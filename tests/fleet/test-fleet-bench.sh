#!/bin/bash
# The fleet bench's small version (issue 43 point 1; `make bench-fleet` is the
# full one, bench/fleet.sh): a real 3-member etcd cluster (Debian's
# etcd-server, 127.0.0.1:2471-2476, data in a temp dir) and 50 simulated
# hosts, all due at once, MaxConcurrent=5, each running rerand-fleetd's own
# client code (build/bench/fleet-bench: libfleetd, a thread and a connection
# a host, driven as rerandd drives its helper).  SIMULATED: only the reboot
# (4 s down, 2 s confirmation: bench/fleet-lib.sh, time scaled down 100x like
# the back-off).  Checks: every host completes; the chaos test's checker
# (tests/fleet/chaos-check.py) finds no violation in the history (never more
# than K hosts down, every down host named by a slot key, no key left); the
# rollout takes at most 1.2x the ideal ceil(N/K) x (down + confirm).
#
# RERAND_FLEET_BENCH_PLANT=extra-slot (one host configured with K+1) or
# =hold (one host never gives its slot back) plants a defect: the test must
# fail.  About 80 s on 2 cores.
# run-check: timeout 300
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/tap.sh"
fb_tmp=$(mktemp -d /tmp/rerand-fleet-bench.XXXXXX)
N=50 K=5 LIMIT=1.2
FB_DOWN_MS=4000 FB_CONFIRM_MS=2000 FB_SCALE=100
cleanup() { exec 2>/dev/null; fb_cluster_stop; [ -n "${KEEP:-}" ] || rm -rf "$fb_tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
. "$top/bench/fleet-lib.sh"

fails=0
must() { local d=$1; shift; if "$@"; then ok "$d"; else nok "$d"; fails=$((fails + 1)); fi; }
plan 4
[ -x "$FB_BENCH" ] || bail "$FB_BENCH is missing: make build/bench/fleet-bench"
for t in etcd etcdctl curl python3 ss; do
	command -v "$t" >/dev/null || bail "$t is missing (Debian: etcd-server etcd-client curl python3 iproute2)"
done
plant=()
case "${RERAND_FLEET_BENCH_PLANT:-}" in
'') ;;
extra-slot) plant=(--plant-extra-slot 0); echo "# PLANTED: host h00000 has MaxConcurrent=$((K + 1))" ;;
hold) plant=(--plant-hold 0); echo "# PLANTED: host h00000 never gives its slot back" ;;
*) bail "RERAND_FLEET_BENCH_PLANT=$RERAND_FLEET_BENCH_PLANT: want extra-slot or hold" ;;
esac
fb_cluster_start 2471 || bail "cannot start the etcd cluster on 127.0.0.1:2471-2476"
ok "3-member etcd cluster on $FB_EP"

ideal_ms=$(( (N + K - 1) / K * (FB_DOWN_MS + FB_CONFIRM_MS) ))
d=$fb_tmp/run
# the deadline: the limit and a margin, so a slot that is never given back
# ends the run rather than the suite's time limit
fb_rollout "$d" "$N" "$K" bench --deadline $((ideal_ms * 2 / 1000 + 30)) "${plant[@]}"
rc=$?
sed 's/^/# /' "$d/bench.out"
must "all $N hosts rerandomized and confirmed (fleet-bench exit $rc)" [ "$rc" = 0 ]
grep -vE '^(heal_ms|faults)' "$d/check" | sed 's/^/# checker: /'
must "the chaos checker finds no violation: at most K=$K down at once, every down host holds a slot, none left" \
	[ "$(cat "$d/check-rc")" = 0 ]
python3 "$top/bench/report_fleet.py" --run "$d" "$K" >"$d/figures" || bail "bench/report_fleet.py --run failed"
sed 's/^/# /' "$d/figures" | grep -E 'rollout_s|ideal_s|ratio|max_down|obs_max|max_round|handover|req_per_host'
ratio=$(python3 -c 'import sys; print("%.3f" % float(sys.argv[1]))' "$(sed -n 's/^ratio=//p' "$d/figures")")
must "rollout ${ratio}x the ideal ${ideal_ms} ms, at most ${LIMIT}x" \
	python3 -c 'import sys; r = float(sys.argv[1]); sys.exit(0 if r == r and r <= float(sys.argv[2]) else 1)' \
	"${ratio:-nan}" "$LIMIT"
# a failed check fails the script too, not only its TAP line
[ "$fails" -eq 0 ] && done_
exit 1
