#!/bin/bash
# `make fuzz`: run every fuzz target for FUZZ_SECONDS (default 60) each,
# growing its corpus in a scratch copy; new inputs are not committed here.
set -eu
secs=${FUZZ_SECONDS:-60}
for bin in "$@"; do
	name=$(basename "$bin")
	corpus=tests/fuzz/corpus/${name#fuzz_}
	work=build/fuzz-work/${name#fuzz_}
	mkdir -p "$work"
	echo "fuzz: $name for ${secs}s (corpus $corpus, new inputs in $work)"
	"$bin" -max_total_time="$secs" -print_final_stats=1 "$work" "$corpus"
done
