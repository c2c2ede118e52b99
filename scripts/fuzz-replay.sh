#!/bin/bash
# Replay a fuzz target's committed corpus once (no mutation): one TAP line.
# It fails when the target crashes on a seed, when a seed named valid-* is
# refused (the target aborts on it with RR_FUZZ_MUST_PARSE=1: fuzz_image's
# seeds all stopped parsing once when the image format changed, and nothing
# noticed), or when the edges the corpus reaches fall below the target's
# floor in tests/fuzz/floors (a corpus gone stale fuzzes nothing).
set -u
bin=$1
name=$(basename "$bin")
corpus=tests/fuzz/corpus/${name#fuzz_}
n=$(find "$corpus" -type f 2>/dev/null | wc -l)
if [ "$n" -eq 0 ]; then
	echo "not ok - $name: no corpus in $corpus"
	exit 0
fi
if ! out=$("$bin" -runs=0 "$corpus" 2>&1); then
	echo "$out" | tail -40
	echo "not ok - $name crashed on its corpus"
	exit 0
fi
valid=("$corpus"/valid-*)
if [ -e "${valid[0]}" ] && ! vout=$(RR_FUZZ_MUST_PARSE=1 "$bin" "${valid[@]}" 2>&1); then
	echo "$vout" | grep -v '^ *#\|^INFO\|^Running\|^Executed' | tail -20 | sed 's/^/# /'
	echo "not ok - $name: a valid-* seed of $corpus is refused"
	exit 0
fi
cov=$(sed -n 's/.*INITED cov: \([0-9]*\).*/\1/p' <<<"$out" | tail -1)
floor=$(awk -v t="$name" '$1 == t { print $2 }' tests/fuzz/floors 2>/dev/null)
if [ -n "$floor" ] && [ "${cov:-0}" -lt "$floor" ]; then
	echo "not ok - $name: its corpus reaches ${cov:-no} edges, below the floor of $floor (tests/fuzz/floors)"
	exit 0
fi
echo "ok - $name replayed $n corpus inputs, ${cov:-?} edges${floor:+ (floor $floor)}"
