# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash disable=SC2154 # $top and $fb_tmp: set by the script that sources this
# The fleet bench's parts (issue 43), shared by bench/fleet.sh (`make
# bench-fleet`) and tests/fleet/test-fleet-bench.sh (its small version in
# `make check`): a real 3-member etcd cluster on loopback (Debian's
# etcd-server, data in a temp dir), one rollout of N simulated hosts
# (build/bench/fleet-bench: rerand-fleetd's client library, a thread a host,
# only the reboot simulated), the group's history as the chaos test writes it
# (events from the hosts' side, tests/fleet/observer.py's etcd watch), and
# etcd's own /metrics before and after.  Sourced; expects $top and $fb_tmp.

export ETCDCTL_API=3
FB_BENCH=${FB_BENCH:-$top/build/bench/fleet-bench}

fb_now_ms() { date +%s%3N; }

# fb_cluster_start CLIENT_PORT0: members e1..e3 on 127.0.0.1, client ports
# PORT0, PORT0+2, PORT0+4, peer ports one above each; sets FB_EP.  Fails
# (with the member's log) when a port is taken or the cluster is not healthy
# within 60 s.
fb_cluster_start() {
	local p0=$1 m cp cl="" tok="rerand-fleet-bench-$$-$RANDOM"
	FB_EP=""
	for m in 1 2 3; do
		cp=$((p0 + 2 * (m - 1)))
		if ss -Htln "sport = :$cp or sport = :$((cp + 1))" 2>/dev/null | grep -q .; then
			echo "fleet bench: 127.0.0.1:$cp or :$((cp + 1)) is taken (another run?)" >&2
			return 1
		fi
		cl+="${cl:+,}e$m=http://127.0.0.1:$((cp + 1))"
		FB_EP+="${FB_EP:+,}127.0.0.1:$cp"
	done
	for m in 1 2 3; do
		cp=$((p0 + 2 * (m - 1)))
		etcd --name "e$m" --data-dir "$fb_tmp/etcd-e$m" \
			--listen-client-urls "http://127.0.0.1:$cp" --advertise-client-urls "http://127.0.0.1:$cp" \
			--listen-peer-urls "http://127.0.0.1:$((cp + 1))" \
			--initial-advertise-peer-urls "http://127.0.0.1:$((cp + 1))" \
			--initial-cluster "$cl" --initial-cluster-state new --initial-cluster-token "$tok" \
			>>"$fb_tmp/etcd-e$m.log" 2>&1 &
		echo $! >"$fb_tmp/etcd-e$m.pid"
	done
	local until=$((EPOCHSECONDS + 60))
	while [ "$EPOCHSECONDS" -le "$until" ]; do
		etcdctl --endpoints="$FB_EP" --dial-timeout=1s --command-timeout=2s endpoint health \
			>/dev/null 2>&1 && return 0
		sleep 0.3
	done
	echo "fleet bench: the etcd cluster on $FB_EP is not healthy after 60 s; e1's log:" >&2
	tail -n 5 "$fb_tmp/etcd-e1.log" >&2
	return 1
}

# fb_cluster_stop: every member this run started, by its pid
fb_cluster_stop() {
	local f pid
	for f in "$fb_tmp"/etcd-e*.pid; do
		[ -e "$f" ] || continue
		pid=$(cat "$f")
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		rm -f "$f"
	done
}

# fb_metrics DIR TAG: every member's /metrics into DIR/metrics-TAG-eN, the time in DIR/t-TAG
fb_metrics() {
	local ep i=0
	fb_now_ms >"$1/t-$2"
	for ep in ${FB_EP//,/ }; do
		i=$((i + 1))
		curl -s --max-time 5 "http://$ep/metrics" >"$1/metrics-$2-e$i" ||
			echo "fleet bench: no /metrics from $ep" >&2
	done
}

# fb_conf FILE GROUP K: the hosts' [Fleet] settings.  The back-off is
# rerandd's default (RetryBase=5s, RetryMax=5min) divided by $FB_SCALE, as
# the reboot's times are; LockTTL=/DownTTL= cannot be scaled down (etcd's
# leases are seconds) and outlast the scaled reboot by far.
fb_conf() {
	printf '[Fleet]\nBackend=etcd\nGroup=%s\nEndpoints=%s\nMaxConcurrent=%s\nLockTTL=15\nDownTTL=30\nTimeout=5\nRetryBase=%sms\nRetryMax=%sms\n' \
		"$2" "$FB_EP" "$3" $((5000 / FB_SCALE)) $((300000 / FB_SCALE)) >"$1"
}

# fb_sampler DIR: every 2 s, the leases alive (etcdctl lease list) and etcd's
# watchers (the members' gauges summed) into DIR/samples, until DIR/stop-sampler
fb_sampler() {
	local d=$1 n w ep
	while [ ! -e "$d/stop-sampler" ]; do
		n=$(etcdctl --endpoints="$FB_EP" --dial-timeout=1s --command-timeout=3s lease list 2>/dev/null |
			grep -c '^[0-9a-f]\+$')
		w=$(for ep in ${FB_EP//,/ }; do curl -s --max-time 2 "http://$ep/metrics"; done |
			awk '/^etcd_debugging_mvcc_watcher_total / { s += $2; n++ } END { if (n) print s }')
		echo "$(fb_now_ms) leases=${n:-?} watchers=${w:-?}" >>"$d/samples"
		sleep 2
	done
}

# fb_rollout DIR N K GROUP [fleet-bench options...]: one rollout into DIR
# (conf, events, obs, metrics-{before,after}-eN, samples, check, bench.out,
# rc).  The observer watches the group from before the hosts start; the
# checker (tests/fleet/chaos-check.py, unchanged) reads the history after.
# Returns fleet-bench's exit status.
fb_rollout() {
	local d=$1 n=$2 k=$3 g=$4 i ids obs smp rc final
	shift 4
	mkdir -p "$d"
	fb_conf "$d/conf" "$g" "$k"
	: >"$d/events"
	python3 "$top/tests/fleet/observer.py" "$FB_EP" "/rerand/fleet/$g/" "$d/obs" 2>"$d/observer.err" &
	obs=$!
	sleep 1
	rm -f "$d/stop-sampler"
	fb_sampler "$d" &
	smp=$!
	fb_metrics "$d" before
	echo "$(fb_now_ms) $(cut -d' ' -f1-3 /proc/loadavg)" >"$d/load-before"
	"$FB_BENCH" -c "$d/conf" -n "$n" -o "$d/events" --scale "$FB_SCALE" \
		--down "$FB_DOWN_MS" --confirm "$FB_CONFIRM_MS" "$@" >"$d/bench.out" 2>&1
	rc=$?
	echo "$(fb_now_ms) $(cut -d' ' -f1-3 /proc/loadavg)" >"$d/load-after"
	fb_metrics "$d" after
	touch "$d/stop-sampler"
	wait "$smp"
	sleep 2      # the watch's last events
	kill "$obs" 2>/dev/null
	wait "$obs" 2>/dev/null
	final=$(etcdctl --endpoints="$FB_EP" --dial-timeout=1s --command-timeout=5s get --prefix \
		"/rerand/fleet/$g/slot/" --keys-only 2>/dev/null | grep -c .)
	ids=""
	for ((i = 0; i < n; i++)); do ids+="${ids:+,}$(printf 'h%05u=h%05u' "$i" "$i")"; done
	: >"$d/faults"
	python3 "$top/tests/fleet/chaos-check.py" --events "$d/events" --obs "$d/obs" --faults "$d/faults" \
		--k "$k" --heal 0 --final-keys "$final" --ids "$ids" >"$d/check" 2>&1
	echo "$?" >"$d/check-rc"
	echo "$rc" >"$d/rc"
	return "$rc"
}

# fb_idle DIR N SECONDS: N hosts idle (nothing due; rerandd's breaker poll,
# scaled), etcd's /metrics before and after
fb_idle() {
	local d=$1 n=$2 s=$3 rc
	mkdir -p "$d"
	fb_conf "$d/conf" idle 1
	: >"$d/events"
	fb_metrics "$d" before
	"$FB_BENCH" -c "$d/conf" -n "$n" -o "$d/events" --scale "$FB_SCALE" --idle "$s" \
		>"$d/bench.out" 2>&1
	rc=$?
	fb_metrics "$d" after
	echo "$rc" >"$d/rc"
	return "$rc"
}
