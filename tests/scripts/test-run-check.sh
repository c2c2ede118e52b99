#!/bin/bash
# scripts/run-check.sh counts what it is told: a TAP "# SKIP" is a skip, not
# a pass; a "not ok" stays a failure whatever its directive; a suite that
# exits non-zero or prints nothing fails; every not ok comes again near the
# end with its diagnostics and the free disk; the slowest suites are
# listed; the closing line carries all three.
# Run on a made-up tree (fake unit binaries, no kernels needed).
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
# 2 passes: test_a's one and the kernels line.
[ "$got" = "2 passed, 0 failed, 2 skipped rc=0 " ] && ok "skips counted as skipped: $got" || nok "skips: got '$got'"
grep -q '^#   unit test_a (2)$' "$t/out" && ok "the skipping suite is named" || nok "no '# skipped:' list naming test_a"

t=$(tree fails)
unit "$t" test_a 'echo "not ok 1 - a # SKIP not ok is still a failure"; echo "1..1"'
unit "$t" test_b 'exit 3'
unit "$t" test_c 'echo "ok 1 - c # SKIP all skipped"; echo "1..1"'
got=$(run "$t")
[ "$got" = "1 passed, 2 failed, 1 skipped rc=1 " ] && ok "a skipped not-ok line and a silent exit 3 fail, exit 1: $got" ||
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
unit "$t" test_a 'echo "ok 1 - a"'
got=$(run "$t")
case "$got" in
"1 passed, 1 failed, 0 skipped rc=1 ") ok "no kernel directory is a failure, not a skip: $got" ;;
*) nok "no kernels: got '$got'"; sed 's/^/#   /' "$t/out" ;;
esac
# Lanes: two suites with nothing in common run at the same time (each waits
# for the other's mark; one after the other, the first gives up); two cli
# tests that listen on fixed loopback ports ("port_free") never overlap.
t=$(tree lanes)
unit "$t" test_a "touch $t/a; i=0; while [ ! -e $t/b ] && [ \$i -lt 50 ]; do sleep 0.1; i=\$((i+1)); done; [ -e $t/b ] && echo 'ok 1 - a saw b' || echo 'not ok 1 - a ran alone'"
unit "$t" test_b "touch $t/b; i=0; while [ ! -e $t/a ] && [ \$i -lt 50 ]; do sleep 0.1; i=\$((i+1)); done; [ -e $t/a ] && echo 'ok 1 - b saw a' || echo 'not ok 1 - b ran alone'"
for c in p q; do
	printf '#!/bin/sh\n# port_free\necho start-%s >>%s/order; sleep 1; echo end-%s >>%s/order; echo "ok 1 - %s"\n' \
		"$c" "$t" "$c" "$t" "$c" >"$t/tests/cli/test-$c.sh"
	chmod +x "$t/tests/cli/test-$c.sh"
done
got=$(run "$t")
order=$(tr '\n' ' ' <"$t/order")
if [ "$got" = "5 passed, 0 failed, 0 skipped rc=0 " ] && [ "$order" = "start-p end-p start-q end-q " ]; then
	ok "two lanes: independent suites overlap, port users take turns: $got"
else
	nok "two lanes: got '$got', port users ran '$order'"; sed 's/^/#   /' "$t/out"
fi
rm -f "$t/a" "$t/b" "$t/order"
got=$( (cd "$t" && RERAND_CHECK_JOBS=1 RERAND_KERNELS="$t/k" scripts/run-check.sh short 2>&1; echo "rc=$?") | tail -n 2 | tr '\n' ' ')
[ "$got" = "4 passed, 1 failed, 0 skipped rc=1 " ] && ok "RERAND_CHECK_JOBS=1 runs one suite at a time (the first of the waiting pair gives up): $got" ||
	nok "one lane: got '$got'"

# Mode "unit" (make check-unit): the sanitizer builds it is given, and no
# kernel step: with no kernel directory at all it still passes, and never
# runs kernels.sh (here a stub that fails and says it ran: no download).
t=$(tree unitmode)
rm -rf "$t/k"
printf '#!/bin/sh\ntouch "$0.ran"; exit 1\n' >"$t/scripts/kernels.sh"
mkdir -p "$t/build/san/tests"
printf '#!/bin/sh\necho "ok 1 - a"\n' >"$t/build/san/tests/test_a" && chmod +x "$t/build/san/tests/test_a"
unit "$t" test_b 'echo "not ok 1 - b: not asked for"'
got=$( (cd "$t" && scripts/run-check.sh unit "san/test_a" 2>&1; echo "rc=$?") | tail -n 2 | tr '\n' ' ')
[ "$got" = "1 passed, 0 failed, 0 skipped rc=0 " ] && [ ! -e "$t/scripts/kernels.sh.ran" ] && ok "mode unit: the named sanitizer build only, no kernels needed: $got" ||
	nok "mode unit: got '$got'"
echo "1..$n"
