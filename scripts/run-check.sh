#!/bin/bash
# The test driver behind `make check` (short) and `make check-long` (long).
# Each unit-test binary speaks TAP; each "ok"/"not ok" line counts as one
# test, an "ok ... # SKIP" line as a skip (never a pass).  Fuzz corpus
# replays and end-to-end runs count one test each.  A missing prerequisite
# (a tool, a kernel) is the suite's "not ok", never a skip.
# Ends with the line "N passed, N failed, N skipped" and exits non-zero on
# any failure.  ONLY (the second argument): the suites to run, by file name
# (`make check-comeback`: "test_wdog check-comeback.sh"), the sanitizer
# builds of the unit tests as san/NAME ("san/test_wdog"); all when empty.
# A name in ONLY that matches no suite fails the run before anything runs.
# No suite may vanish: a test script without its execute bit is a "not ok"
# naming it; a long-only suite (its head says "# run-check: long only") is a
# SKIP line in short mode; a suite that prints nothing is a "not ok".
# Plans: a suite's "1..N" lines (several add up: a wrapper that runs a suite
# twice) must match the test lines it printed, else one more "not ok" for
# the suite; numbered TAP ("ok 3 - ...") without a plan is a suite that
# ended before its last line (tests/lib/tap.sh and tests/unit/test.h end
# with the plan): "not ok".  The guest suites' unnumbered lines ("ok - ...")
# need no plan; the ones that declare one up front are held to it.
# Time limits: each suite runs in a session of its own (setsid) under a
# limit, RERAND_SUITE_TIMEOUT seconds (default 3600 in short mode, about 3.5
# times the slowest guest suite in a loaded run; 21600 in long mode), or its
# own from its head: "# run-check: timeout SECONDS" (short mode), "# run-check:
# long timeout SECONDS" (long mode).  A suite over its limit is a "not ok"
# naming the limit, and its whole session is killed (QEMU included, even
# under a `timeout` of the suite's own, which makes a process group of its
# own); an interrupted run kills the running suites' sessions the same way.
# Mode "unit" (`make check-unit`): short, without the kernels: for the
# hermetic tests of tests/unit, which never read them.
set -u
case "${1:-}" in
-h|--help)
	echo "usage: $0 [short|long|unit] [ONLY]    (see the head of this file)"
	exit 0 ;;
short|long|unit|'') ;;
*)
	echo "$0: unknown mode '$1': want short, long or unit (--help)" >&2
	exit 64 ;;
esac
mode=${1:-short}
kind=$mode
[ "$mode" = unit ] && mode=short
only=${2:-}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
O=build
pass=0
fail=0
skip=0
failed_names=()
skipped_names=()
# Every "not ok" line again at the end, with the diagnostic lines after it:
# a CI log is often read from its tail only.
failures=$(mktemp) first=$(mktemp)
timings=()
t_start=$EPOCHSECONDS

# Two lanes by default (RERAND_CHECK_JOBS, 1 for one after the other): the
# guests are single-vCPU QEMU TCG processes, so a 2-core machine runs two
# suites at once in about half the time.  Suites that share something run
# one after the other in one job: the Debian systemd guests and the
# deb-chroot check (`make deb`, `make deb-chroot`, the cached build roots),
# and the fleet tests that listen on fixed loopback ports (etcd, FleetLock).
# Each suite's output is printed whole when it ends; the totals, the
# failures and the timings are gathered in the order of the suite list.
lanes=${RERAND_CHECK_JOBS:-2}
[[ "$lanes" =~ ^[1-9][0-9]*$ ]] || { echo "run-check: RERAND_CHECK_JOBS=$lanes is not a positive number" >&2; exit 2; }
res=$(mktemp -d)
trap 'rm -rf "$failures" "$first" "$res"' EXIT

# kill_session PID: every process of the session PID leads (the suite, run
# by setsid, and all it started: QEMU under the suite's own `timeout` too,
# which sits in a process group of its own but not in a session of its
# own): TERM, then KILL what is left.  Never run-check's own session.  From
# /proc (field 6 of /proc/PID/stat, after the command in parentheses): no
# ps or pkill, which a minimal container may lack.
stat_of() { # PID: ST_PPID and ST_SID of PID
	local st
	read -r st <"/proc/$1/stat" 2>/dev/null || return 1
	# shellcheck disable=SC2086 # the fields, one a word
	set -- ${st##*) }
	ST_PPID=$2 ST_SID=$4
}
session_pids() { # " SID SID ": the processes of those sessions
	local f
	for f in /proc/[0-9]*; do
		stat_of "${f#/proc/}" && [[ "$1" == *" $ST_SID "* ]] && echo "${f#/proc/}"
	done
}
kill_session() {
	local s sids=" $1 " mine f
	stat_of $$ && mine=$ST_SID
	# (setsid forks when it would lead a process group: then its child
	# leads the session)
	for f in /proc/[0-9]*; do
		stat_of "${f#/proc/}" && [ "$ST_PPID" = "$1" ] && sids+="$ST_SID "
	done
	sids=" $(for s in $sids; do [ "$s" -gt 1 ] && [ "$s" != "$mine" ] && echo "$s"; done | sort -u | tr '\n' ' ')"
	[ -n "${sids// /}" ] || return 0
	# shellcheck disable=SC2046 # one pid a word
	kill -TERM $(session_pids "$sids") 2>/dev/null
	sleep 2
	# shellcheck disable=SC2046
	kill -KILL $(session_pids "$sids") 2>/dev/null
	return 0
}

# watchdog PID LIMIT FLAG FIFO: after LIMIT seconds (reads that time out
# on a FIFO nobody writes: no child process to leave behind when the
# watchdog itself is killed), FLAG, and PID's session killed.  Not once
# the FIFO is gone (the run ended, interrupted: PID may be another's now):
# it looks every 5 s, so a watchdog whose lane is gone (an interrupted run)
# or whose kill was lost ends by itself within 5 s of the FIFO's removal.
watchdog() {
	local end=$((EPOCHSECONDS + $2)) left
	while left=$((end - EPOCHSECONDS)); [ "$left" -gt 0 ]; do
		[ -p "$4" ] || return 0
		read -r -t "$((left < 5 ? left : 5))" <>"$4" && return 0
	done
	[ -p "$4" ] || return 0
	: >"$3"
	kill_session "$1"
}

# run_suite N NAME LIMIT CMD...: run CMD in a session of its own, for at
# most LIMIT seconds, into $res/N.log, its counts into $res/N.rec ("ok notok
# skipped rc seconds plans planned numbered timedout"), then print the log
# whole.  $res/live.PID marks a running suite (for the INT/TERM trap).
run_suite() {
	local n=$1 name=$2 limit=$3; shift 3
	local log=$res/$n.log t0=$EPOCHSECONDS rc ok notok skipped pid dog timedout=0
	local plans planned numbered
	setsid -w "$@" >"$log" 2>&1 &
	pid=$!
	: >"$res/live.$pid"
	mkfifo "$res/$n.fifo"
	watchdog "$pid" "$limit" "$res/$n.timedout" "$res/$n.fifo" &
	dog=$!
	wait "$pid"
	rc=$?
	# over the limit: the watchdog is killing the session (TERM, then
	# KILL): let it finish; else it is still waiting: end it
	# (SIGKILL: a TERM that lands before the forked watchdog has reset the
	# INT/TERM trap it inherited is lost, and the lane waited for the whole
	# limit; the watchdog has no child to leave behind)
	if [ -e "$res/$n.timedout" ]; then
		timedout=1
	else
		kill -KILL "$dog" 2>/dev/null
	fi
	wait "$dog" 2>/dev/null
	rm -f "$res/live.$pid" "$res/$n.fifo"
	# TAP: the SKIP directive is case-insensitive; a "not ok" stays a
	# failure whatever its directive says.
	skipped=$(grep -ciE '^ok [^#]*#[[:space:]]*skip' "$log")
	ok=$(( $(grep -c '^ok ' "$log") - skipped ))
	notok=$(grep -c '^not ok ' "$log")
	# The plans ("1..N", a directive after it allowed) and their sum; the
	# numbered test lines (tap.sh, test.h), which always end with a plan.
	plans=$(grep -cE '^1\.\.[0-9]+([[:space:]]|$)' "$log")
	planned=$(awk '/^1\.\.[0-9]+([[:space:]]|$)/ { sub(/^1\.\./, ""); s += $1 + 0 } END { print s + 0 }' "$log")
	numbered=$(grep -cE '^(not )?ok [0-9]+' "$log")
	echo "$ok $notok $skipped $rc $((EPOCHSECONDS - t0)) $plans $planned $numbered $timedout" >"$res/$n.rec"
	{
		flock 8
		echo "# --- $name"
		cat "$log"
	} 8>>"$res/print.lock"
}

# Lines printed before any suite runs (a script without its execute bit, a
# long-only suite in short mode, a name in ONLY that matches nothing): each
# counted at once.  fail_now NAME LINE / skip_now NAME LINE.
fail_now() {
	echo "$2"
	echo "$1: $2" >>"$failures"
	fail=$((fail + 1)); failed_names+=("$1")
}
skip_now() {
	echo "$2"
	skip=$((skip + 1)); skipped_names+=("$1 (1)")
}
# hit: the names in ONLY that matched something (a suite, or a line above).
declare -A hit=()
wanted() {
	[ -z "$only" ] && return 0
	[[ " $only " == *" $(basename "$1") "* ]] || return 1
	hit[$(basename "$1")]=1
}
wanted_san() {
	[ -z "$only" ] && return 0
	[[ " $only " == *" san/$(basename "$1") "* ]] || return 1
	hit[san/$(basename "$1")]=1
}
# script_ok T: a test script that is asked for and can run; one without its
# execute bit is a "not ok" naming it, never a suite that quietly vanished.
script_ok() {
	[ -e "$1" ] && wanted "$1" || return 1
	[ -x "$1" ] && return 0
	fail_now "$1 (not executable)" "not ok - $1 is not executable (chmod +x $1): it would not run"
	return 1
}
# limit_of T: the time limit of suite T in seconds: its own from its head
# ("# run-check: timeout N" in short mode, "# run-check: long timeout N" in
# long mode), else RERAND_SUITE_TIMEOUT, else 3600 (short) or 21600 (long).
default_limit=${RERAND_SUITE_TIMEOUT:-$([ "$mode" = long ] && echo 21600 || echo 3600)}
[[ "$default_limit" =~ ^[1-9][0-9]*$ ]] ||
	{ echo "run-check: RERAND_SUITE_TIMEOUT=$default_limit is not a positive number of seconds" >&2; exit 2; }
limit_of() {
	local l="" key="timeout"
	[ "$mode" = long ] && key="long timeout"
	case $1 in *.sh) l=$(head -n 40 "$1" | sed -n "s/^# run-check: $key \([1-9][0-9]*\)\$/\1/p" | head -n1) ;; esac
	echo "${l:-$default_limit}"
}

# The suite list, in order: "N|GROUP|NAME|LIMIT|CMD ARG" (GROUP empty: a job
# of its own).  The guests go first: they are the longest jobs.
echo "# --- suites"
suites=()
add() { suites+=("${#suites[@]}|$1|$2|$3|$4"); }
for t in tests/e2e/check-*.sh; do
	script_ok "$t" || continue
	# a suite with nothing cheap enough for make check says so in its head
	if [ "$mode" = short ] && grep -q '^# run-check: long only' "$t"; then
		skip_now "e2e $(basename "$t")" "ok - e2e $(basename "$t") # SKIP long only (its head: # run-check: long only; make check-long runs it)"
		continue
	fi
	case $(basename "$t") in
	check-systemd*.sh | check-deb-chroot.sh) g=debian-guests ;;
	*) g="" ;;
	esac
	add "$g" "e2e $(basename "$t")" "$(limit_of "$t")" "$t $mode"
done
# The process tests, each named by its folder: the rerand CLI, rerandd,
# the fleet (rerandd with rerand-fleetd, etcd, FleetLock), the scripts.
for t in tests/cli/test-*.sh tests/daemon/test-*.sh tests/fleet/test-*.sh tests/scripts/test-*.sh; do
	script_ok "$t" || continue
	g=""
	grep -q 'port_free\|etcd' "$t" && g=loopback-ports
	add "$g" "$(basename "$(dirname "$t")") $(basename "$t")" "$(limit_of "$t")" "$t"
done
for t in $O/tests/test_*; do
	[ -x "$t" ] && wanted "$t" || continue
	add "" "unit $(basename "$t")" "$default_limit" "$t"
done
# The unit tests again under ASan, LeakSanitizer and UBSan (build/san/tests,
# `make san-tests`): the first error ends the binary with a report on stderr
# (halt_on_error), which the suite shows as "exited with status 1".
san_asan=halt_on_error=1:detect_leaks=1
san_ubsan=halt_on_error=1:print_stacktrace=1
# Long only: test_uniform, a third of the set's CPU (35 s of 107 s user+sys
# under ASan, 12 s plain; nice 19 on this 2-core machine): 10^6 draws over
# every hand-built machine, arithmetic on tables, whose code (the stage's
# base selection) fuzz_select and fuzz_memmap replay under ASan anyway.
# The others, test_readers (25 s) and test_image (21 s) with every
# decompressor over the 130 MB of real kernels (RERAND_KERNELS) included,
# take about 72 s of CPU; their build (make san-tests) about 55 s.
san_long_only=" test_uniform "
for t in $O/san/tests/test_*; do
	[ -x "$t" ] && wanted_san "$t" || continue
	n=$(basename "$t")
	if [ "$mode" = short ] && [[ "$san_long_only" == *" $n "* ]]; then
		skip_now "unit-san $n" "ok - unit-san $n # SKIP long only (run-check.sh's san_long_only; make check-long runs it)"
		continue
	fi
	a=$san_asan m=$mode
	case $n in
	# its i386 probe (int $0x80) takes SIGSEGV on a kernel without ia32
	# emulation, which the test expects and counts as a skip: ASan's
	# SEGV report of that child would only be noise
	test_sandbox) a=$a:handle_segv=0 ;;
	# long mode buys statistical power (10^7 draws), not coverage: no
	# more for the sanitizers to see, and ten times the 98 s
	test_uniform) m=short ;;
	esac
	add "" "unit-san $n" "$default_limit" "env ASAN_OPTIONS=$a UBSAN_OPTIONS=$san_ubsan RERAND_MODE=$m $t"
done
for f in $O/fuzz/fuzz_*; do
	[ -x "$f" ] && wanted "$f" || continue
	add "" "fuzz replay $(basename "$f")" "$default_limit" "scripts/fuzz-replay.sh $f"
done

# Nothing may vanish from the run: a name in ONLY that matches nothing (a
# typo, a test not built) fails the run at once, before the kernels step
# and before any suite runs; so does an empty suite list.
unmatched=()
for w in $only; do [ -n "${hit[$w]:-}" ] || unmatched+=("$w"); done
if [ ${#unmatched[@]} -gt 0 ] || { [ ${#suites[@]} -eq 0 ] && [ "$fail" -eq 0 ] && [ "$skip" -eq 0 ]; }; then
	for w in "${unmatched[@]}"; do
		fail_now "ONLY $w" "not ok - ONLY names '$w', which matches no suite (tests/e2e/check-*.sh, tests/{cli,daemon,fleet,scripts}/test-*.sh, $O/tests/test_*, san/test_* for $O/san/tests, $O/fuzz/fuzz_*: built?)"
	done
	[ ${#suites[@]} -eq 0 ] && [ ${#unmatched[@]} -eq 0 ] &&
		fail_now "no suite" "not ok - no suite to run${only:+ for ONLY '$only'}"
	echo "run-check: ${unmatched[*]:+ONLY names no suite: ${unmatched[*]}; }nothing was run" >&2
	echo "$pass passed, $fail failed, $skip skipped"
	exit 1
fi

# The kernels every suite uses: ../shared/kernels (checked against its
# SHA256SUMS) or, on a machine without it, Debian's kernel packages fetched
# once into ~/.cache/rerand-e2e (scripts/kernels.sh).  Without kernels the
# suites that need them fail, each with its own "not ok".
echo "# --- kernels"
if [ "$kind" = unit ]; then
	echo "# none: the hermetic unit tests read no kernel"
	kernels_dir=""
elif kernels_dir=$(scripts/kernels.sh); then
	# a note, not a test: finding them proves nothing about the product
	echo "# kernels: $kernels_dir: $(cd "$kernels_dir" && ls vmlinuz-* | tr '\n' ' ')"
else
	echo "not ok - kernels: none (scripts/kernels.sh failed)"
	fail=$((fail + 1)); failed_names+=("kernels")
	kernels_dir=""
fi
export RERAND_KERNELS="$kernels_dir"
export RERAND_MODE="$mode"

# The jobs: one line each, the suite numbers it runs in order.  A group is
# one job; the groups go first (each is the longest job there is: the guest
# group alone is about half of the run), then every other suite in order.
jobs_file=$res/jobs
declare -A group_job=()
groups=()
singles=()
for s in "${suites[@]}"; do
	IFS='|' read -r n g _ _ <<<"$s"
	if [ -z "$g" ]; then
		singles+=("$n")
	elif [ -n "${group_job[$g]:-}" ]; then
		groups[${group_job[$g]}]+=" $n"
	else
		group_job[$g]=${#groups[@]}
		groups+=("$n")
	fi
done
printf '%s\n' "${groups[@]}" "${singles[@]}" | grep . >"$jobs_file"
njobs=$(wc -l <"$jobs_file")
echo 0 >"$res/next"

# lane: take the next job (under a lock) until none is left.
lane() {
	local j line n s name limit cmd
	while :; do
		j=$({ flock 9; j=$(cat "$res/next"); echo $((j + 1)) >"$res/next"; echo "$j"; } 9>>"$res/next.lock")
		[ "$j" -lt "$njobs" ] || return 0
		line=$(sed -n "$((j + 1))p" "$jobs_file")
		for n in $line; do
			IFS='|' read -r _ _ name limit cmd <<<"${suites[$n]}"
			# shellcheck disable=SC2086 # CMD is a path and one argument
			run_suite "$n" "$name" "$limit" $cmd
		done
	done
}
[ "$lanes" -gt 1 ] && echo "# $lanes lanes (RERAND_CHECK_JOBS), ${#suites[@]} suites in $njobs jobs"
pids=()
# Interrupted (Ctrl-C, a CI job cancelled): the lanes stop, and so does
# every suite still running, QEMU and all (each is a session of its own,
# out of the terminal's reach).
stop() {
	local f
	trap - INT TERM
	kill "${pids[@]}" 2>/dev/null
	for f in "$res"/live.*; do [ -e "$f" ] && kill_session "${f##*.}"; done
	echo "run-check: interrupted; the running suites were stopped" >&2
	exit 130
}
trap stop INT TERM
for ((l = 0; l < lanes; l++)); do lane & pids+=($!); done
wait "${pids[@]}"
trap - INT TERM

for s in "${suites[@]}"; do
	IFS='|' read -r n _ name limit _ <<<"$s"
	if [ ! -s "$res/$n.rec" ]; then
		echo "not ok - $name did not run"
		fail=$((fail + 1)); failed_names+=("$name (did not run)")
		continue
	fi
	read -r ok notok skipped rc secs plans planned numbered timedout <"$res/$n.rec"
	timings+=("$secs $name")
	[ "$notok" -eq 0 ] || grep -A4 '^not ok ' "$res/$n.log" | grep -E '^(not ok |#)' | cut -c1-240 |
		sed "s|^|$name: |" >>"$failures"
	# The first failure with all the context its suite gave (a guest's own
	# journal, say), printed last: CI shows only the tail of this output.
	[ "$notok" -eq 0 ] || [ -s "$first" ] ||
		awk '!n && /^not ok / { n = 1; print; next } n && /^#/ && n <= 45 { n++; print; next } n { exit }' \
			"$res/$n.log" | cut -c1-240 | sed "s|^|$name: |" >"$first"
	pass=$((pass + ok))
	fail=$((fail + notok))
	skip=$((skip + skipped))
	if [ "$notok" -gt 0 ]; then failed_names+=("$name"); fi
	if [ "$skipped" -gt 0 ]; then skipped_names+=("$name ($skipped)"); fi
	tests=$((ok + notok + skipped))
	# At most one more "not ok" per suite, the first that applies: over its
	# time limit (killed: its count and status say nothing more), a status,
	# a plan not met, numbered lines without a plan, nothing at all.
	if [ "$timedout" = 1 ]; then
		why="exceeded its time limit of $limit s (RERAND_SUITE_TIMEOUT, or its head's # run-check: timeout): killed with its whole session after $secs s"
		tag="timeout ${limit}s"
	elif [ "$rc" -ne 0 ] && [ "$notok" -eq 0 ]; then
		why="exited with status $rc"
		tag="exit $rc"
	elif [ "$plans" -gt 0 ] && [ "$planned" -ne "$tests" ]; then
		why="plan 1..$planned but $tests tests ran"
		tag="plan"
	elif [ "$plans" -eq 0 ] && [ "$numbered" -gt 0 ]; then
		why="printed $numbered numbered test lines and no plan (1..N): it ended before its last line"
		tag="no plan"
	elif [ "$tests" -eq 0 ] && [ "$rc" -eq 0 ]; then
		why="ran no test (printed no test line and no plan)"
		tag="no test"
	else
		continue
	fi
	echo "not ok - $name $why"
	# a sanitizer build ends on its first error: ASan's summary, UBSan's line
	{ echo "not ok - $name $why"
	  [ "$tag" = "exit $rc" ] && grep -m1 -E '^SUMMARY: .*Sanitizer|: runtime error: ' "$res/$n.log"; } |
		sed "s|^|$name: |" >>"$failures"
	fail=$((fail + 1)); failed_names+=("$name ($tag)")
done

if [ ${#skipped_names[@]} -gt 0 ]; then
	echo "# skipped:"
	printf '#   %s\n' "${skipped_names[@]}"
fi
# The slowest suites (seconds), for keeping `make check` inside its budget.
echo "# $((EPOCHSECONDS - t_start)) s in all, in $lanes lane(s)"
echo "# slowest suites (s):"
printf '%s\n' "${timings[@]}" | sort -rn | head -n 8 | sed 's/^/#   /'
if [ -s "$failures" ]; then
	echo "# every not ok, again (first 80 lines):"
	head -n 80 "$failures" | sed 's/^/#   /'
	# A full disk fails whole suites at once (a guest's disk image, a build).
	echo "# disk: $(df -h "$top" | awk 'NR == 2 { print $4 " free of " $2 " on " $6 }')"
fi
if [ -s "$first" ]; then
	echo "# the first not ok, with its context:"
	sed 's/^/#   /' "$first"
fi
if [ ${#failed_names[@]} -gt 0 ]; then
	echo "# failed:"
	printf '#   %s\n' "${failed_names[@]}"
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
