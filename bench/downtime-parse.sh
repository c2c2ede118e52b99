#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# `make bench`, downtime part: turn the serial log of bench/downtime.sh's
# guest into OUT/data/downtime.tsv ("downtime STEP MODE SECONDS", one line
# per reboot with both markers) and say what is missing:
#   OUT/data/downtime-cut   "MEASURED PLANNED HH:MM REACHED": the deadline
#                           stopped the guest during reboot REACHED;
#   OUT/data/downtime-lost  "STEP..." : reboots the guest made whose "go" or
#                           "up" marker never reached the console;
#   OUT/data/downtime-clockstep  one STEP a line: reboots during which the
#                           host's clock went back (not measured);
#   OUT/data/downtime-stamps.tsv the guest's own TSC stamps (below).
# Exits non-zero when the guest failed (no "RRB done" and no deadline) or
# when not one whole pair was measured.
# Usage: bench/downtime-parse.sh OUT_DIR (after bench/downtime.sh's QEMU run).
set -u
OUT=${1:?usage: bench/downtime-parse.sh OUT_DIR}
dir=$OUT/downtime
log=$dir/serial.log
die() { echo "bench/downtime-parse.sh: $*" >&2; exit 1; }
[ -r "$log" ] && [ -r "$dir/plan" ] || die "$dir: no serial.log or plan"
read -r -a plan <"$dir/plan"
rc=$(cat "$dir/qemu-rc" 2>/dev/null || echo "?")
rm -f "$OUT/data/downtime-cut" "$OUT/data/downtime-lost" "$OUT/data/downtime-clockstep"

# Host stamps: "EPOCH RRB go N MODE" and "EPOCH RRB up N BOOT_ID".
# (A marker may share its line with other console output: match it anywhere.)
# The kernel-log copy of "up" carries the new kernel's clock, "[ SECONDS]":
# the fifth column, the time from the new kernel's start to multi-user.target
# (-1 when only the tty copy arrived).  Downtime minus it is the old system's
# shutdown, kexec, purgatory, the stage or the stock decompressor.
# The host stamps are wall-clock time (bash's EPOCHREALTIME): a reboot during
# which the host's clock went back (a stamp below the one before it; seen on
# 4 Dec 2026, 152 s back) is not measured, and counts as lost.  A step
# forward cannot be told from a slow boot here.
awk '$1 ~ /^[0-9]+\.[0-9]+$/ { if (prev != "" && $1 + 0 < prev + 0) back[++nb] = NR; prev = $1 }
     match($0, /RRB (go|up) [0-9]+ [^ ]+/) {
	split(substr($0, RSTART, RLENGTH), f, " ")
	# The agent sends each marker twice (kernel log and tty): keep the first.
	if (f[2] == "go") { if (!(f[3] in go)) { go[f[3]] = $1; goL[f[3]] = NR; mode[f[3]] = f[4] } }
	else {
		if (!(f[3] in up)) { up[f[3]] = $1; upL[f[3]] = NR }
		if (!(f[3] in ut) && match($0, /\[ *[0-9]+\.[0-9]+\] RRB up/)) {
			s = substr($0, RSTART + 1); sub(/\].*/, "", s); ut[f[3]] = s + 0 } } }
     END { for (n in go) if (n in up) {
		bad = 0
		for (i = 1; i <= nb; i++) if (back[i] > goL[n] && back[i] <= upL[n]) bad = 1
		if (bad) { print n > stepf; continue }
		printf "downtime\t%d\t%s\t%.3f\t%.3f\n", n, mode[n], up[n] - go[n], (n in ut) ? ut[n] : -1 } }' \
	stepf="$OUT/data/downtime-clockstep" "$log" | sort -n -k2 >"$OUT/data/downtime.tsv"
# The guest's own stamps (bench/downtime/stamp.sh, agent.sh), for
# bench/report_downtime.py's split, whatever the clock (data/downtime-clock):
#   "t KIND N TSC MONO_NS"  KIND go, stop, final (the old system's), up;
#                           stop-rerandd, stopped-rerandd: rerandd's unit's
#                           ExecStop= and ExecStopPost= (the root in RAM);
#   "ustart N US"           PID 1's start, CLOCK_MONOTONIC in us;
#   "rerandd-stop N A B"    PID 1's "Stopping"/"Stopped rerandd.service" at
#                           the shutdown of reboot N (the old boot's seconds);
#   "tscinfo N ..."         the clocksource and the kernel's TSC line.
# Each comes twice (kernel log and tty) but for "final": keep the first.
cp "$dir/clock" "$OUT/data/downtime-clock" 2>/dev/null || echo wall >"$OUT/data/downtime-clock"
grep -aoE 'RRB (t (go|up|stop|final|stop-rerandd|stopped-rerandd) [0-9]+ [0-9]+ [0-9]+|t ustart [0-9]+ [0-9]+|rerandd-stop [0-9]+ [-0-9.]+ [-0-9.]+|tscinfo [0-9]+ .*)' "$log" |
	tr -d '\r' | awk '{ $1 = ""; sub(/^ /, ""); if ($1 == "t") { $1 = ""; sub(/^ /, "") }
		k = $1 " " $2; if (!(k in seen)) { seen[k] = 1; print } }' |
	tr ' ' '\t' >"$OUT/data/downtime-stamps.tsv"
got=$(grep -c . "$OUT/data/downtime.tsv")
grep -a 'RRB \(note\|fail\)' "$log" | sed 's/^/# /'

# The last step the guest reached: "done N", else the highest marker seen.
last=$(grep -ao 'RRB \(go\|up\|done\) [0-9]*' "$log" | awk '{print $3}' | sort -n | tail -n 1)
last=${last:-0}
done_=0
grep -aq 'RRB done' "$log" && done_=1
lost=()
# Without "done", the last step seen was still running when QEMU stopped.
upto=$last
[ "$done_" = 1 ] || upto=$((last - 1))
for ((n = 1; n <= upto && n <= ${#plan[@]}; n++)); do
	grep -q "^downtime	$n	" "$OUT/data/downtime.tsv" ||
		grep -qx "$n" "$OUT/data/downtime-clockstep" 2>/dev/null || lost+=("$n")
done
[ ${#lost[@]} -eq 0 ] || echo "${lost[*]}" >"$OUT/data/downtime-lost"
[ -s "$OUT/data/downtime-clockstep" ] &&
	echo "bench/downtime-parse.sh: reboot(s) $(tr '\n' ' ' <"$OUT/data/downtime-clockstep")during which the host clock went back: not measured"
if [ "$done_" = 0 ]; then
	# Not finished: only a deadline may explain it (QEMU's timeout: 124).
	[ -s "$dir/deadline" ] && [ "$rc" = 124 ] ||
		die "the guest did not finish its plan ($got of ${#plan[@]} reboots measured, QEMU exit $rc; $log)"
	printf '%d\t%d\t%s\t%d\n' "$got" "${#plan[@]}" "$(cat "$dir/deadline")" "$last" >"$OUT/data/downtime-cut"
	echo "bench/downtime-parse.sh: the deadline stopped the guest: $got of ${#plan[@]} reboots measured"
fi
[ ${#lost[@]} -eq 0 ] ||
	echo "bench/downtime-parse.sh: reboot(s) ${lost[*]} made without both markers on the console: not measured"
# One whole pair at least (steps 2i-1 and 2i).
pairs=$(awk -F'\t' '{s[$2] = 1; if ($2 > m) m = $2} END { n = 0; for (i = 1; 2 * i - 1 <= m; i++)
	if ((2 * i) in s && (2 * i - 1) in s) n++; print n }' "$OUT/data/downtime.tsv")
[ "$pairs" -ge 1 ] || die "no whole stock/rerand pair measured ($log)"
echo "bench/downtime-parse.sh: $got of ${#plan[@]} reboots, $pairs whole pairs measured: $OUT/data/downtime.tsv"
