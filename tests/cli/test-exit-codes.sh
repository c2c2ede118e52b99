#!/bin/bash
# One set of exit codes across rerand, rerandd and rerand-fleetd (issue 40,
# point 3), following sysexits(3) as rerand always did:
#   0  success          1  failure (named on stderr or in the journal)
#  64  EX_USAGE: an unknown option, an operand where none is taken, options
#      that exclude each other, a required option missing
#  78  EX_CONFIG: the configuration has errors (rerandd only: the others read none)
# Each row below runs the built program the way an operator or a unit would
# and checks its code; then each man page's EXIT STATUS section must list
# every code its program's rows exit with.  Nothing runs as a daemon: rerandd
# fails on its configuration before it opens anything, rerand-fleetd before
# it listens.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/rerand-exit.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$top/tests/lib/tap.sh"
for p in rerand rerandd rerand-fleetd; do
	[ -x "$top/build/$p" ] || bail "build/$p is missing: make all"
done
mkdir -p "$tmp/empty.d"
printf '[Policy]\nMaxLayoutAge=1d\n' >"$tmp/good.conf"
printf '[Policy]\nMaxLayoutAge=soon\n' >"$tmp/bad.conf"
unset LISTEN_FDS LISTEN_PID LISTEN_FDNAMES
declare -A used      # program -> the codes its rows exit with

row() {  # row PROGRAM WANT DESCRIPTION -- ARGS...: run build/PROGRAM ARGS, want exit WANT
	local prog=$1 want=$2 what=$3 rc
	shift 4
	"$top/build/$prog" "$@" >"$tmp/out" 2>&1 </dev/null
	rc=$?
	used[$prog]+=" $want"
	check "$prog: $what exits $want (seen $rc: $(head -c 160 "$tmp/out" | tr '\n' '|'))" test "$rc" = "$want"
}

row rerand 0 "--help" -- --help
row rerand 0 "--version" -- --version
row rerand 64 "no command" --
row rerand 64 "an unknown option" -- --bogus
row rerand 64 "an unknown command" -- frobnicate
row rerand 64 "an unknown option of a command" -- status --bogus
row rerand 64 "an operand a command does not take" -- status extra
row rerand 1 "a rerandd it cannot reach" -- status --socket "$tmp/no-such-socket"

row rerandd 0 "--help" -- --help
row rerandd 0 "--version" -- --version
row rerandd 64 "an unknown option" -- --bogus
row rerandd 64 "an operand" -- --check-config extra
row rerandd 64 "--check-config with --dump-config" -- --check-config --dump-config
row rerandd 0 "--check-config of a good configuration" -- \
	--check-config --config "$tmp/good.conf" --config-dir "$tmp/empty.d"
row rerandd 78 "--check-config of a bad value (bad config)" -- \
	--check-config --config "$tmp/bad.conf" --config-dir "$tmp/empty.d"
row rerandd 78 "--dump-config of a bad value" -- \
	--dump-config --config "$tmp/bad.conf" --config-dir "$tmp/empty.d"
row rerandd 78 "--check-config of a --config that does not exist" -- \
	--check-config --config "$tmp/none.conf" --config-dir "$tmp/empty.d"
row rerandd 78 "started on a bad configuration (before it opens anything)" -- \
	--config "$tmp/bad.conf" --config-dir "$tmp/empty.d"
# a good configuration that cannot be written out: rerandd's failure, not the file's
"$top/build/rerandd" --dump-config --config "$tmp/good.conf" --config-dir "$tmp/empty.d" \
	>&- 2>"$tmp/out"
rc=$?
used[rerandd]+=" 1"
check "rerandd: --dump-config with stdout closed exits 1 (seen $rc)" test "$rc" = 1

row rerand-fleetd 0 "--help" -- --help
row rerand-fleetd 0 "--version" -- --version
row rerand-fleetd 64 "an unknown option" -- --bogus
row rerand-fleetd 64 "an operand" -- extra
row rerand-fleetd 64 "neither socket activation nor --socket" --
row rerand-fleetd 1 "a --socket it cannot listen on" -- --socket "$tmp/no/such/dir/fleet.sock"

# ---- the man pages: EXIT STATUS lists every code its program exits with ----------
for prog in rerand rerandd rerand-fleetd; do
	man=$top/docs/$prog.8
	# the .B/.TP codes between ".SH EXIT STATUS" and the next .SH
	codes=" $(awk '/^\.SH EXIT STATUS/ { on = 1; next } /^\.SH / { on = 0 }
		       on && /^\.B [0-9]+$/ { print $2 }' "$man" | sort -un | tr '\n' ' ')"
	missing=
	for c in $(tr ' ' '\n' <<<"${used[$prog]}" | sort -un); do
		[[ "$codes" == *" $c "* ]] || missing+=" $c"
	done
	want=$(tr ' ' '\n' <<<"${used[$prog]}" | sort -un | tr '\n' ' ')
	check "$prog(8) EXIT STATUS lists the codes $want(has:$codes; missing:${missing:- none})" \
		test -z "$missing"
done
grep -q 'sysexits' "$top/docs/rerandd.8" && grep -q 'sysexits' "$top/docs/rerand-fleetd.8" &&
	grep -q 'sysexits' "$top/docs/rerand.8"
check "each man page says the codes follow sysexits(3)" test $? = 0
done_
