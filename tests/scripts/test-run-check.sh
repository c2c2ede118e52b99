#!/bin/bash
# scripts/run-check.sh counts what it is told: a TAP "# SKIP" is a skip, not
# a pass; a "not ok" stays a failure whatever its directive; a suite that
# exits non-zero or prints nothing fails; every not ok comes again near the
# end with its diagnostics and the free disk; the slowest suites are
# listed; the closing line carries all three.  Nothing vanishes: a plan
# not met, numbered lines without a plan, a script without its execute bit,
# a name in ONLY that matches nothing, an empty suite list and a suite over
# its time limit (killed, with what it started) each fail; a long-only
# suite is a SKIP line in short mode; finding the kernels is no test.
# Run on a made-up tree (fake unit binaries and scripts, no kernels needed).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); echo "not ok $n - $*"; }

# tree NAME: a tree holding run-check.sh, kernels.sh and a kernel directory.
tree() {
	local t=$tmp/$1
	mkdir -p "$t/scripts" "$t/build/tests" "$t/tests/cli" "$t/k"
	cp "$top/scripts/run-check.sh" "$top/scripts/kernels.sh" "$t/scripts/"
	: >"$t/k/vmlinuz-6.1.0-1-cloud-amd64"
	echo "$t"
}
unit() { # TREE NAME BODY
	printf '#!/bin/sh\n%s\n' "$3" >"$1/build/tests/$2" && chmod +x "$1/build/tests/$2"
}
# run TREE: the closing line, and run-check's exit status appended.
run() { (cd "$1" && RERAND_KERNELS="$1/k" scripts/run-check.sh short >"$1/out" 2>&1; echo "rc=$?" >>"$1/out"); tail -n 2 "$1/out" | tr '\n' ' '; }

t=$(tree skips)
unit "$t" test_a 'echo "ok 1 - a"; echo "ok 2 - b # SKIP no x"; echo "ok 3 - c # skip lower case"; echo "1..3"'
got=$(run "$t")
# 1 pass: test_a's one; the kernels found are a comment, not a test.
[ "$got" = "1 passed, 0 failed, 2 skipped rc=0 " ] && ok "skips counted as skipped: $got" || nok "skips: got '$got'"
grep -q '^#   unit test_a (2)$' "$t/out" && ok "the skipping suite is named" || nok "no '# skipped:' list naming test_a"
grep -q '^# kernels: .*vmlinuz-6.1.0-1-cloud-amd64' "$t/out" && ! grep -q '^ok .*kernels' "$t/out" &&
	ok "the kernels found are a comment line, not a passed test" || nok "kernels line: $(grep kernels "$t/out" | tr '\n' ' ')"

t=$(tree fails)
unit "$t" test_a 'echo "not ok 1 - a # SKIP not ok is still a failure"; echo "1..1"'
unit "$t" test_b 'exit 3'
unit "$t" test_c 'echo "ok 1 - c # SKIP all skipped"; echo "1..1"'
got=$(run "$t")
[ "$got" = "0 passed, 2 failed, 1 skipped rc=1 " ] && ok "a skipped not-ok line and a silent exit 3 fail, exit 1: $got" ||
	nok "fails: got '$got'"

t=$(tree repeat)
unit "$t" test_a 'echo "not ok 1 - early failure"; echo "#   why: the early reason"; i=0; while [ $i -lt 200 ]; do i=$((i+1)); echo "ok $((i+1)) - filler $i"; done; echo "1..201"'
got=$(run "$t")
# The tail a CI log shows: the failure and its reason come again near the end.
if tail -n 8 "$t/out" | grep -q '^#   unit test_a: not ok 1 - early failure$' &&
	tail -n 8 "$t/out" | grep -q '^#   unit test_a: #   why: the early reason$'; then
	ok "a not ok and its diagnostic line are repeated near the end: $got"
else
	nok "the not ok is not repeated near the end"; tail -n 8 "$t/out" | sed 's/^/#   /'
fi

grep -A8 '^# slowest suites (s):$' "$t/out" | grep -qE '^#   [0-9]+ unit test_a$' &&
	ok "each suite's seconds are listed under '# slowest suites'" || nok "no '# slowest suites' line for test_a"
grep -qE '^# disk: .* free of .* on /' "$t/out" && ok "a failed run says how much disk is free" || nok "no '# disk:' line"

t=$(tree nokernels)
rm -rf "$t/k"
unit "$t" test_a 'echo "ok 1 - a"; echo "1..1"'
got=$(run "$t")
case "$got" in
"1 passed, 1 failed, 0 skipped rc=1 ") ok "no kernel directory is a failure, not a skip: $got" ;;
*) nok "no kernels: got '$got'"; sed 's/^/#   /' "$t/out" ;;
esac
# Lanes: two suites with nothing in common run at the same time (each waits
# for the other's mark; one after the other, the first gives up); two cli
# tests that listen on fixed loopback ports ("port_free") never overlap.
t=$(tree lanes)
unit "$t" test_a "touch $t/a; i=0; while [ ! -e $t/b ] && [ \$i -lt 50 ]; do sleep 0.1; i=\$((i+1)); done; [ -e $t/b ] && echo 'ok 1 - a saw b' || echo 'not ok 1 - a ran alone'; echo 1..1"
unit "$t" test_b "touch $t/b; i=0; while [ ! -e $t/a ] && [ \$i -lt 50 ]; do sleep 0.1; i=\$((i+1)); done; [ -e $t/a ] && echo 'ok 1 - b saw a' || echo 'not ok 1 - b ran alone'; echo 1..1"
for c in p q; do
	printf '#!/bin/sh\n# port_free\necho start-%s >>%s/order; sleep 1; echo end-%s >>%s/order; echo "ok 1 - %s"; echo 1..1\n' \
		"$c" "$t" "$c" "$t" "$c" >"$t/tests/cli/test-$c.sh"
	chmod +x "$t/tests/cli/test-$c.sh"
done
got=$(run "$t")
order=$(tr '\n' ' ' <"$t/order")
if [ "$got" = "4 passed, 0 failed, 0 skipped rc=0 " ] && [ "$order" = "start-p end-p start-q end-q " ]; then
	ok "two lanes: independent suites overlap, port users take turns: $got"
else
	nok "two lanes: got '$got', port users ran '$order'"; sed 's/^/#   /' "$t/out"
fi
rm -f "$t/a" "$t/b" "$t/order"
got=$( (cd "$t" && RERAND_CHECK_JOBS=1 RERAND_KERNELS="$t/k" scripts/run-check.sh short 2>&1; echo "rc=$?") | tail -n 2 | tr '\n' ' ')
[ "$got" = "3 passed, 1 failed, 0 skipped rc=1 " ] && ok "RERAND_CHECK_JOBS=1 runs one suite at a time (the first of the waiting pair gives up): $got" ||
	nok "one lane: got '$got'"

# Mode "unit" (make check-unit): the sanitizer builds it is given, and no
# kernel step: with no kernel directory at all it still passes, and never
# runs kernels.sh (here a stub that fails and says it ran: no download).
t=$(tree unitmode)
rm -rf "$t/k"
printf '#!/bin/sh\ntouch "$0.ran"; exit 1\n' >"$t/scripts/kernels.sh"
mkdir -p "$t/build/san/tests"
printf '#!/bin/sh\necho "ok 1 - a"; echo "1..1"\n' >"$t/build/san/tests/test_a" && chmod +x "$t/build/san/tests/test_a"
unit "$t" test_b 'echo "not ok 1 - b: not asked for"'
got=$( (cd "$t" && scripts/run-check.sh unit "san/test_a" 2>&1; echo "rc=$?") | tail -n 2 | tr '\n' ' ')
[ "$got" = "1 passed, 0 failed, 0 skipped rc=0 " ] && [ ! -e "$t/scripts/kernels.sh.ran" ] && ok "mode unit: the named sanitizer build only, no kernels needed: $got" ||
	nok "mode unit: got '$got'"

# script TREE PATH BODY: a test script (executable) in the tree.
script() {
	mkdir -p "$(dirname "$1/$2")"
	printf '#!/bin/sh\n%s\n' "$3" >"$1/$2" && chmod +x "$1/$2"
}

# Plans: one not met (a case that returned before printing anything),
# numbered lines that stop before the plan (an exit 0 on the way), an
# unnumbered suite that declares its plan up front and meets it, a wrapper
# that runs a suite twice (two plans add up), and a suite that prints
# nothing at all and exits 0.
t=$(tree plans)
unit "$t" test_a 'echo "ok 1 - a"; echo "ok 2 - b"; echo "1..3"'
unit "$t" test_b 'echo "ok 1 - a"; echo "ok 2 - b"; exit 0'
unit "$t" test_c 'echo "1..2"; echo "ok - c1"; echo "ok - c2"'
unit "$t" test_d 'echo "1..1"; echo "ok - d1"; echo "1..2"; echo "ok - d2"; echo "ok - d3"'
unit "$t" test_e 'exit 0'
got=$(run "$t")
if [ "$got" = "9 passed, 3 failed, 0 skipped rc=1 " ] &&
	grep -q '^not ok - unit test_a plan 1\.\.3 but 2 tests ran$' "$t/out" &&
	grep -q '^not ok - unit test_b printed 2 numbered test lines and no plan' "$t/out" &&
	grep -q '^not ok - unit test_e ran no test' "$t/out" &&
	! grep -q '^not ok - unit test_[cd]' "$t/out"; then
	ok "a plan not met, numbered lines without a plan, a silent suite fail; met plans (one up front, two added up) pass: $got"
else
	nok "plans: got '$got'"; grep -E '^not ok|passed' "$t/out" | sed 's/^/#   /'
fi

# A test script that lost its execute bit is a not ok naming it, in every
# folder run-check searches; the others still run.
t=$(tree noexec)
unit "$t" test_a 'echo "ok 1 - a"; echo "1..1"'
script "$t" tests/cli/test-x.sh 'echo "ok 1 - x"; echo "1..1"'
script "$t" tests/e2e/check-y.sh 'echo "ok - y"'
script "$t" tests/daemon/test-z.sh 'echo "ok 1 - z"; echo "1..1"'
chmod -x "$t/tests/cli/test-x.sh" "$t/tests/e2e/check-y.sh"
got=$(run "$t")
if [ "$got" = "2 passed, 2 failed, 0 skipped rc=1 " ] &&
	grep -q '^not ok - tests/cli/test-x.sh is not executable (chmod +x tests/cli/test-x.sh)' "$t/out" &&
	grep -q '^not ok - tests/e2e/check-y.sh is not executable' "$t/out"; then
	ok "scripts without the execute bit are a not ok each, named: $got"
else
	nok "no execute bit: got '$got'"; grep -E '^not ok|passed' "$t/out" | sed 's/^/#   /'
fi

# ONLY: a name that matches nothing fails the run before anything runs
# (kernels.sh included: here a stub that says it ran); so does a typo next
# to a real name; and a tree with no suite at all fails too.
t=$(tree only)
printf '#!/bin/sh\ntouch "$0.ran"; echo "%s/k"\n' "$t" >"$t/scripts/kernels.sh"
unit "$t" test_a "touch $t/a.ran; echo 'ok 1 - a'; echo 1..1"
got=$( (cd "$t" && scripts/run-check.sh short "test_nope" >"$t/out" 2>&1; echo "rc=$?") | tr '\n' ' ')
if [ "$got" = "rc=1 " ] && grep -q "^not ok - ONLY names 'test_nope', which matches no suite" "$t/out" &&
	tail -n1 "$t/out" | grep -q '^0 passed, 1 failed, 0 skipped$' && [ ! -e "$t/a.ran" ] && [ ! -e "$t/scripts/kernels.sh.ran" ]; then
	ok "ONLY matching nothing: not ok, exit 1, nothing run: $(tail -n1 "$t/out")"
else
	nok "ONLY unmatched: $got"; sed 's/^/#   /' "$t/out"
fi
got=$( (cd "$t" && scripts/run-check.sh short "test_a test_nope" >"$t/out" 2>&1; echo "rc=$?") | tr '\n' ' ')
[ "$got" = "rc=1 " ] && grep -q "^not ok - ONLY names 'test_nope'" "$t/out" && [ ! -e "$t/a.ran" ] &&
	ok "ONLY with one name that matches nothing: exit 1 before test_a runs" || { nok "ONLY partly unmatched: $got"; sed 's/^/#   /' "$t/out"; }
got=$( (cd "$t" && scripts/run-check.sh short "test_a" >"$t/out" 2>&1; echo "rc=$?") | tail -n 2 | tr '\n' ' ')
[ "$got" = "rc=0 " ] && [ -e "$t/a.ran" ] && tail -n1 "$t/out" | grep -q '^1 passed, 0 failed, 0 skipped$' &&
	ok "ONLY naming a real suite runs it: $(tail -n1 "$t/out")" || { nok "ONLY test_a: $got"; sed 's/^/#   /' "$t/out"; }
t=$(tree empty)
got=$( (cd "$t" && RERAND_KERNELS="$t/k" scripts/run-check.sh short >"$t/out" 2>&1; echo "rc=$?") | tr '\n' ' ')
[ "$got" = "rc=1 " ] && grep -q '^not ok - no suite to run' "$t/out" &&
	ok "no suite at all: not ok, exit 1: $(tail -n1 "$t/out")" || { nok "empty tree: $got"; sed 's/^/#   /' "$t/out"; }

# Long-only suites are a SKIP line in short mode, and are not run.
t=$(tree longonly)
script "$t" tests/e2e/check-l.sh "# run-check: long only
touch $t/l.ran; echo 'ok - l'"
unit "$t" test_a 'echo "ok 1 - a"; echo "1..1"'
got=$(run "$t")
[ "$got" = "1 passed, 0 failed, 1 skipped rc=0 " ] && [ ! -e "$t/l.ran" ] &&
	grep -q '^ok - e2e check-l.sh # SKIP long only' "$t/out" &&
	ok "a long-only suite is a SKIP line in short mode, not run: $got" || { nok "long only: got '$got'"; sed 's/^/#   /' "$t/out"; }

# Time limits: RERAND_SUITE_TIMEOUT=3 ends a suite that hangs, with what it
# started under a `timeout` of its own (a process group of its own, as the
# guest suites run QEMU); a suite's own "# run-check: timeout N" in its
# head wins; a suite within its limit passes.
t=$(tree timeouts)
unit "$t" test_a "timeout 300 sh -c 'echo \$\$ >$t/child.pid; exec sleep 300' & sleep 300; echo 'ok 1 - never'; echo 1..1"
script "$t" tests/cli/test-own.sh "# run-check: timeout 1
sleep 30; echo 'ok 1 - never'; echo 1..1"
unit "$t" test_b 'sleep 1; echo "ok 1 - b"; echo "1..1"'
t0=$EPOCHSECONDS
got=$( (cd "$t" && RERAND_SUITE_TIMEOUT=3 RERAND_KERNELS="$t/k" scripts/run-check.sh short >"$t/out" 2>&1; echo "rc=$?") | tr '\n' ' ')
secs=$((EPOCHSECONDS - t0))
sleep 1
cpid=$(cat "$t/child.pid" 2>/dev/null)
if [ "$got" = "rc=1 " ] && tail -n1 "$t/out" | grep -q '^1 passed, 2 failed, 0 skipped$' &&
	grep -q '^not ok - unit test_a exceeded its time limit of 3 s' "$t/out" &&
	grep -q '^not ok - cli test-own.sh exceeded its time limit of 1 s' "$t/out" &&
	[ -n "$cpid" ] && ! kill -0 "$cpid" 2>/dev/null && [ "$secs" -lt 30 ]; then
	ok "over its time limit (3 s by RERAND_SUITE_TIMEOUT, 1 s by its head): not ok, killed with its child ($cpid) in ${secs} s: $(tail -n1 "$t/out")"
else
	nok "timeouts: $got in $secs s, child ${cpid:-none} $(kill -0 "$cpid" 2>/dev/null && echo alive)"; grep -E '^not ok|passed' "$t/out" | sed 's/^/#   /'
	[ -n "$cpid" ] && kill "$cpid" 2>/dev/null
fi
# Interrupted (TERM, as a cancelled CI job sends; Ctrl-C's INT takes the
# same path): the running suites' sessions are killed too, not left behind.
t=$(tree interrupted)
unit "$t" test_a "timeout 300 sh -c 'echo \$\$ >$t/child.pid; exec sleep 300' & sleep 300; echo 'ok 1 - never'; echo 1..1"
(cd "$t" && exec env RERAND_KERNELS="$t/k" scripts/run-check.sh short >"$t/out" 2>&1) &
rpid=$!
i=0; while [ ! -s "$t/child.pid" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
kill -TERM "$rpid"
wait "$rpid"; rc=$?
sleep 1
cpid=$(cat "$t/child.pid" 2>/dev/null)
if [ "$rc" = 130 ] && [ -n "$cpid" ] && ! kill -0 "$cpid" 2>/dev/null && grep -q 'interrupted; the running suites were stopped' "$t/out"; then
	ok "run-check stopped by TERM: exit 130, the running suite's child ($cpid) killed"
else
	nok "interrupted: rc $rc, child ${cpid:-none} $(kill -0 "$cpid" 2>/dev/null && echo alive)"; sed 's/^/#   /' "$t/out"
	[ -n "$cpid" ] && kill "$cpid" 2>/dev/null
fi
got=$( (cd "$t" && RERAND_SUITE_TIMEOUT=x scripts/run-check.sh short 2>&1; echo "rc=$?") | tail -n 2 | tr '\n' ' ')
case "$got" in *"RERAND_SUITE_TIMEOUT=x is not a positive number"*"rc=2 ") ok "RERAND_SUITE_TIMEOUT=x: refused, exit 2" ;; *) nok "RERAND_SUITE_TIMEOUT=x: $got" ;; esac
echo "1..$n"
