#!/bin/bash
# The test driver behind `make check` (short) and `make check-long` (long).
# Each unit-test binary speaks TAP; each "ok"/"not ok" line counts as one
# test, an "ok ... # SKIP" line as a skip (never a pass).  Fuzz corpus
# replays and end-to-end runs count one test each.  A missing prerequisite
# (a tool, a kernel) is the suite's "not ok", never a skip.
# Ends with the line "N passed, N failed, N skipped" and exits non-zero on
# any failure.  ONLY (the second argument): the suites to run, by file name
# (`make check-comeback`: "test_wdog check-comeback.sh"); all when empty.
set -u
mode=${1:-short}
only=${2:-}
wanted() { [ -z "$only" ] || [[ " $only " == *" $(basename "$1") "* ]]; }
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
failures=$(mktemp)
timings=()
trap 'rm -f "$failures"' EXIT

# The kernels every suite uses: ../shared/kernels (checked against its
# SHA256SUMS) or, on a machine without it, Debian's kernel packages fetched
# once into ~/.cache/rerand-e2e (scripts/kernels.sh).  Without kernels the
# suites that need them fail, each with its own "not ok".
echo "# --- kernels"
if kernels_dir=$(scripts/kernels.sh); then
	echo "ok - kernels: $kernels_dir: $(cd "$kernels_dir" && ls vmlinuz-* | tr '\n' ' ')"
	pass=$((pass + 1))
else
	echo "not ok - kernels: none (scripts/kernels.sh failed)"
	fail=$((fail + 1)); failed_names+=("kernels")
	kernels_dir=""
fi
export RERAND_KERNELS="$kernels_dir"
export RERAND_MODE="$mode"

# count_tap NAME CMD...: run CMD, echo its output, count its TAP lines.
count_tap() {
	local name=$1; shift
	local log t0=$EPOCHSECONDS
	log=$(mktemp)
	echo "# --- $name"
	"$@" >"$log" 2>&1
	local rc=$?
	cat "$log"
	timings+=("$((EPOCHSECONDS - t0)) $name")
	local ok notok skipped
	# TAP: the SKIP directive is case-insensitive; a "not ok" stays a
	# failure whatever its directive says.
	skipped=$(grep -ciE '^ok [^#]*#[[:space:]]*skip' "$log")
	ok=$(( $(grep -c '^ok ' "$log") - skipped ))
	notok=$(grep -c '^not ok ' "$log")
	[ "$notok" -eq 0 ] || grep -A4 '^not ok ' "$log" | grep -E '^(not ok |#)' | cut -c1-240 |
		sed "s|^|$name: |" >>"$failures"
	rm -f "$log"
	pass=$((pass + ok))
	fail=$((fail + notok))
	skip=$((skip + skipped))
	if [ "$notok" -gt 0 ]; then failed_names+=("$name"); fi
	if [ "$skipped" -gt 0 ]; then skipped_names+=("$name ($skipped)"); fi
	if [ "$rc" -ne 0 ] && [ "$notok" -eq 0 ]; then
		echo "not ok - $name exited with status $rc"
		fail=$((fail + 1)); failed_names+=("$name (exit $rc)")
	fi
	if [ "$ok" -eq 0 ] && [ "$notok" -eq 0 ] && [ "$skipped" -eq 0 ] && [ "$rc" -eq 0 ]; then
		echo "not ok - $name ran no test"
		fail=$((fail + 1)); failed_names+=("$name (no test)")
	fi
}

for t in $O/tests/test_*; do
	[ -x "$t" ] && wanted "$t" || continue
	count_tap "unit $(basename "$t")" "$t"
done

for t in tests/cli/test-*.sh; do
	[ -x "$t" ] && wanted "$t" || continue
	count_tap "cli $(basename "$t")" "$t"
done

for f in $O/fuzz/fuzz_*; do
	[ -x "$f" ] && wanted "$f" || continue
	count_tap "fuzz replay $(basename "$f")" scripts/fuzz-replay.sh "$f"
done

for t in tests/e2e/check-*.sh; do
	[ -x "$t" ] && wanted "$t" || continue
	count_tap "e2e $(basename "$t")" "$t" "$mode"
done

if [ ${#skipped_names[@]} -gt 0 ]; then
	echo "# skipped:"
	printf '#   %s\n' "${skipped_names[@]}"
fi
# The slowest suites (seconds), for keeping `make check` inside its budget.
echo "# slowest suites (s):"
printf '%s\n' "${timings[@]}" | sort -rn | head -n 8 | sed 's/^/#   /'
if [ -s "$failures" ]; then
	echo "# every not ok, again (first 80 lines):"
	head -n 80 "$failures" | sed 's/^/#   /'
	# A full disk fails whole suites at once (a guest's disk image, a build).
	echo "# disk: $(df -h "$top" | awk 'NR == 2 { print $4 " free of " $2 " on " $6 }')"
fi
if [ ${#failed_names[@]} -gt 0 ]; then
	echo "# failed:"
	printf '#   %s\n' "${failed_names[@]}"
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
