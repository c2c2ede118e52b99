#!/bin/bash
# Replay a fuzz target's committed corpus once (no mutation): one TAP line.
set -u
bin=$1
name=$(basename "$bin")
corpus=tests/fuzz/corpus/${name#fuzz_}
n=$(find "$corpus" -type f 2>/dev/null | wc -l)
if [ "$n" -eq 0 ]; then
	echo "not ok - $name: no corpus in $corpus"
	exit 0
fi
if out=$("$bin" -runs=0 "$corpus" 2>&1); then
	echo "ok - $name replayed $n corpus inputs"
else
	echo "$out" | tail -40
	echo "not ok - $name crashed on its corpus"
fi
