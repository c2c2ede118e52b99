# SPDX-License-Identifier: GPL-2.0-only
# TAP output for the cli tests: sourced once, at the top.
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); echo "not ok $n - $*"; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else nok "$d"; fi; }
bail() { nok "$*"; echo "1..$n"; exit 1; }
skip() { n=$((n + 1)); echo "ok $n # SKIP $*"; }
# done_: the plan, and exit 0 (after a skip of what is left, or at the end)
done_() { echo "1..$n"; exit 0; }
