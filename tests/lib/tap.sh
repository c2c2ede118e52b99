# SPDX-License-Identifier: GPL-2.0-only
# TAP output for the cli tests: sourced once, at the top.  A test that knows
# its count says so first (plan N): scripts/run-check.sh then holds it to
# that count, so a case that returns early without a line cannot vanish.
# Without one, done_ and bail write the plan at the end (which still proves
# the test got there: numbered lines without a plan are a not ok).
n=0
declared=""
plan() { declared=$1; echo "1..$1"; }
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); echo "not ok $n - $*"; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else nok "$d"; fi; }
bail() { nok "$*"; [ -n "$declared" ] || echo "1..$n"; exit 1; }
skip() { n=$((n + 1)); echo "ok $n # SKIP $*"; }
# done_: the plan unless declared, and exit 0 (after a skip of what is
# left, or at the end); a declared plan the lines fall short of is a not ok
# here too, not only in run-check.sh
done_() {
	[ -n "$declared" ] || { echo "1..$n"; exit 0; }
	[ "$n" -eq "$declared" ] && exit 0
	echo "not ok $((n + 1)) - plan 1..$declared, but $n tests ran (a case returned without its line)"
	exit 1
}
