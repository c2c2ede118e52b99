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
# Mode "unit" (`make check-unit`): short, without the kernels: for the
# hermetic tests of tests/unit, which never read them.
set -u
mode=${1:-short}
kind=$mode
[ "$mode" = unit ] && mode=short
only=${2:-}
wanted() { [ -z "$only" ] || [[ " $only " == *" $(basename "$1") "* ]]; }
wanted_san() { [ -z "$only" ] || [[ " $only " == *" san/$(basename "$1") "* ]]; }
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

# The kernels every suite uses: ../shared/kernels (checked against its
# SHA256SUMS) or, on a machine without it, Debian's kernel packages fetched
# once into ~/.cache/rerand-e2e (scripts/kernels.sh).  Without kernels the
# suites that need them fail, each with its own "not ok".
echo "# --- kernels"
if [ "$kind" = unit ]; then
	echo "# none: the hermetic unit tests read no kernel"
	kernels_dir=""
elif kernels_dir=$(scripts/kernels.sh); then
	echo "ok - kernels: $kernels_dir: $(cd "$kernels_dir" && ls vmlinuz-* | tr '\n' ' ')"
	pass=$((pass + 1))
else
	echo "not ok - kernels: none (scripts/kernels.sh failed)"
	fail=$((fail + 1)); failed_names+=("kernels")
	kernels_dir=""
fi
export RERAND_KERNELS="$kernels_dir"
export RERAND_MODE="$mode"

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

# run_suite N NAME CMD...: run CMD into $res/N.log, its counts into $res/N.rec
# ("ok notok skipped rc seconds"), then print the log whole.
run_suite() {
	local n=$1 name=$2; shift 2
	local log=$res/$n.log t0=$EPOCHSECONDS rc ok notok skipped
	"$@" >"$log" 2>&1
	rc=$?
	# TAP: the SKIP directive is case-insensitive; a "not ok" stays a
	# failure whatever its directive says.
	skipped=$(grep -ciE '^ok [^#]*#[[:space:]]*skip' "$log")
	ok=$(( $(grep -c '^ok ' "$log") - skipped ))
	notok=$(grep -c '^not ok ' "$log")
	echo "$ok $notok $skipped $rc $((EPOCHSECONDS - t0))" >"$res/$n.rec"
	{
		flock 8
		echo "# --- $name"
		cat "$log"
	} 8>>"$res/print.lock"
}

# The suite list, in order: "N|GROUP|NAME|CMD ARG" (GROUP empty: a job of
# its own).  The guests go first: they are the longest jobs.
suites=()
add() { suites+=("${#suites[@]}|$1|$2|$3"); }
for t in tests/e2e/check-*.sh; do
	[ -x "$t" ] && wanted "$t" || continue
	# a suite with nothing cheap enough for make check says so in its head
	[ "$mode" = short ] && grep -q '^# run-check: long only' "$t" && continue
	case $(basename "$t") in
	check-systemd*.sh | check-deb-chroot.sh) g=debian-guests ;;
	*) g="" ;;
	esac
	add "$g" "e2e $(basename "$t")" "$t $mode"
done
# The process tests, each named by its folder: the rerand CLI, rerandd,
# the fleet (rerandd with rerand-fleetd, etcd, FleetLock), the scripts.
for t in tests/cli/test-*.sh tests/daemon/test-*.sh tests/fleet/test-*.sh tests/scripts/test-*.sh; do
	[ -x "$t" ] && wanted "$t" || continue
	g=""
	grep -q 'port_free\|etcd' "$t" && g=loopback-ports
	add "$g" "$(basename "$(dirname "$t")") $(basename "$t")" "$t"
done
for t in $O/tests/test_*; do
	[ -x "$t" ] && wanted "$t" || continue
	add "" "unit $(basename "$t")" "$t"
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
	[ "$mode" = short ] && [[ "$san_long_only" == *" $n "* ]] && continue
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
	add "" "unit-san $n" "env ASAN_OPTIONS=$a UBSAN_OPTIONS=$san_ubsan RERAND_MODE=$m $t"
done
for f in $O/fuzz/fuzz_*; do
	[ -x "$f" ] && wanted "$f" || continue
	add "" "fuzz replay $(basename "$f")" "scripts/fuzz-replay.sh $f"
done

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
	local j line n s name cmd
	while :; do
		j=$({ flock 9; j=$(cat "$res/next"); echo $((j + 1)) >"$res/next"; echo "$j"; } 9>>"$res/next.lock")
		[ "$j" -lt "$njobs" ] || return 0
		line=$(sed -n "$((j + 1))p" "$jobs_file")
		for n in $line; do
			IFS='|' read -r _ _ name cmd <<<"${suites[$n]}"
			# shellcheck disable=SC2086 # CMD is a path and one argument
			run_suite "$n" "$name" $cmd
		done
	done
}
[ "$lanes" -gt 1 ] && echo "# $lanes lanes (RERAND_CHECK_JOBS), ${#suites[@]} suites in $njobs jobs"
pids=()
for ((l = 0; l < lanes; l++)); do lane & pids+=($!); done
wait "${pids[@]}"

for s in "${suites[@]}"; do
	IFS='|' read -r n _ name _ <<<"$s"
	if [ ! -s "$res/$n.rec" ]; then
		echo "not ok - $name did not run"
		fail=$((fail + 1)); failed_names+=("$name (did not run)")
		continue
	fi
	read -r ok notok skipped rc secs <"$res/$n.rec"
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
	if [ "$rc" -ne 0 ] && [ "$notok" -eq 0 ]; then
		echo "not ok - $name exited with status $rc"
		# a sanitizer build ends on its first error: ASan's summary, UBSan's line
		{ echo "not ok - $name exited with status $rc"
		  grep -m1 -E '^SUMMARY: .*Sanitizer|: runtime error: ' "$res/$n.log"; } | sed "s|^|$name: |" >>"$failures"
		fail=$((fail + 1)); failed_names+=("$name (exit $rc)")
	fi
	if [ "$ok" -eq 0 ] && [ "$notok" -eq 0 ] && [ "$skipped" -eq 0 ] && [ "$rc" -eq 0 ]; then
		echo "not ok - $name ran no test"
		fail=$((fail + 1)); failed_names+=("$name (no test)")
	fi
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
