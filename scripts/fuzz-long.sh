#!/bin/bash
# `make fuzz-long`: a campaign that means something, one target after the
# other.  Each target first runs for FUZZ_PROBE_SECONDS (default 20) to
# measure its speed; a target at 10^4 executions a second or more then runs
# FUZZ_LONG_RUNS executions (default 10^7), a slower one (the codecs over
# whole kernels) FUZZ_SLOW_RUNS (default 10^5).  New inputs grow in
# build/fuzz-long/NAME.  At the end the committed corpus
# (tests/fuzz/corpus/NAME) becomes its named seeds (valid-*, hand-made: kept
# as they are) plus the minimal set of inputs, old or new, that libFuzzer's
# -merge=1 needs to reach every feature of the union, and its floor in
# tests/fuzz/floors rises to 90% of the edges it then reaches; review and
# commit both.
# One line per target goes to stdout and to build/fuzz-long/summary.txt:
# executions, speed, edges before and after, corpus size before and after.
# FUZZ_LONG_MAX_SECONDS (default 7200) bounds any one target's run.  A
# target that fails is reported and the campaign goes on; the exit is then 1.
set -eu
runs_fast=${FUZZ_LONG_RUNS:-10000000}
runs_slow=${FUZZ_SLOW_RUNS:-100000}
probe=${FUZZ_PROBE_SECONDS:-20}
maxs=${FUZZ_LONG_MAX_SECONDS:-7200}
out=build/fuzz-long
mkdir -p "$out"
summary=$out/summary.txt
failed=0
echo "# make fuzz-long $(date -u +%FT%TZ), $(git rev-parse --short HEAD 2>/dev/null || echo '?')" >>"$summary"

# edges INPUTS...: the edges libFuzzer reports for a replay of INPUTS
edges() { "$bin" -runs=0 "$@" 2>&1 | sed -n 's/.*INITED cov: \([0-9]*\).*/\1/p' | tail -n 1; }
# stat NAME LOG: a -print_final_stats=1 figure
stat() { sed -n "s/^stat::$1: *\([0-9]*\).*/\1/p" "$2" | tail -n 1; }

for bin in "$@"; do
	name=$(basename "$bin")
	corpus=tests/fuzz/corpus/${name#fuzz_}
	work=$out/${name#fuzz_}
	log=$out/${name#fuzz_}.log
	mkdir -p "$work" "$corpus"
	n0=$(find "$corpus" -type f | wc -l)
	e0=$(edges "$corpus")
	if ! "$bin" -max_total_time="$probe" -print_final_stats=1 -artifact_prefix="$out/$name-" "$work" "$corpus" >"$log.probe" 2>&1; then
		tail -n 30 "$log.probe"
		echo "$name: FAILED in its probe run (log $log.probe)" | tee -a "$summary" >&2
		failed=1
		continue
	fi
	speed=$(stat average_exec_per_sec "$log.probe")
	runs=$runs_fast
	[ "${speed:-0}" -ge 10000 ] || runs=$runs_slow
	echo "fuzz-long: $name: ${speed:-?}/s in the probe: $runs executions (corpus $corpus, $n0 inputs, ${e0:-?} edges)"
	t0=$EPOCHREALTIME
	if ! "$bin" -runs="$runs" -max_total_time="$maxs" -print_final_stats=1 -artifact_prefix="$out/$name-" "$work" "$corpus" >"$log" 2>&1; then
		tail -n 30 "$log"
		echo "$name: FAILED (log $log; the input is in $out)" | tee -a "$summary" >&2
		failed=1
		continue
	fi
	done_runs=$(stat number_of_executed_units "$log")
	speed=$(awk -v n="${done_runs:-0}" -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", n / (b - a) }')
	# The minimal set over the old corpus and the new inputs; the seeds with
	# names of their own stay (libFuzzer names its inputs by their SHA-1).
	merged=$out/${name#fuzz_}.merged
	rm -rf "$merged"; mkdir -p "$merged"
	"$bin" -merge=1 "$merged" "$corpus" "$work" >"$log.merge" 2>&1 ||
		{ tail -n 20 "$log.merge"; echo "fuzz-long: $name: the merge failed (log $log.merge)" >&2; exit 1; }
	find "$corpus" -type f -regextype posix-extended ! -regex '.*/[0-9a-f]{40}' -exec sha1sum {} + |
		while read -r sum _; do rm -f "$merged/$sum"; done
	find "$corpus" -type f -regextype posix-extended -regex '.*/[0-9a-f]{40}' -delete
	cp "$merged"/* "$corpus/" 2>/dev/null || true
	n1=$(find "$corpus" -type f | wc -l)
	e1=$(edges "$corpus")
	# The replay's floor (tests/fuzz/floors) follows the corpus up: 90% of
	# the edges it now reaches, never down.
	floor=$(awk -v t="$name" '$1 == t { print $2 }' tests/fuzz/floors)
	nf=$(( ${e1:-0} * 9 / 10 ))
	if [ -n "$floor" ] && [ "$nf" -gt "$floor" ]; then
		sed -i "s/^$name $floor\$/$name $nf/" tests/fuzz/floors
	fi
	line="$name: $done_runs executions at ${speed:-?}/s; edges ${e0:-?} -> ${e1:-?}; corpus $n0 -> $n1 inputs"
	[ "${done_runs:-0}" -ge "$runs" ] || line+=" (stopped by FUZZ_LONG_MAX_SECONDS=$maxs before $runs)"
	echo "fuzz-long: $line"
	echo "$line" >>"$summary"
done
exit "$failed"
