#!/bin/bash
# rerand.conf(5) against rerandd's key table, both ways (issue 27, point 6):
# every key `rerandd --dump-config` prints (the table: every key of every
# section, [Window NAME] with a window configured) has an entry in
# docs/rerand.conf.5 under its section, and every entry there is a key the
# table has.  Then the time-valued [Fleet] keys take durations and keep their
# old bare-number units, and `make install` puts the man page and the
# docs/*.md the man pages point at where they say (the .deb runs the same
# install, with dh_compress told to leave *.md alone).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/rerand-confdoc.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
RERANDD=$top/build/rerandd
MAN=$top/docs/rerand.conf.5
. "$top/tests/lib/tap.sh"
[ -x "$RERANDD" ] || bail "$RERANDD is missing: make build/rerandd"
[ -f "$MAN" ] || bail "$MAN is missing"
mkdir -p "$tmp/empty.d"

printf '[Window w]\nStart=03:00\nLength=1h\n' >"$tmp/win.conf"
"$RERANDD" --dump-config --config "$tmp/win.conf" --config-dir "$tmp/empty.d" >"$tmp/dump" ||
	bail "rerandd --dump-config failed"
# "Section Key" lines; [Window w] is the man page's [Window NAME]
awk '/^\[/ { s = substr($0, 2, length($0) - 2); sub(/^Window .*/, "Window", s); next }
     /^[A-Za-z]+=/ { sub(/=.*/, ""); print s, $0 }' "$tmp/dump" | sort -u >"$tmp/table"
# the man page: ".SH [Section]" then ".BI Key= ..." entries
awk '/^\.SH \[/ { s = $0; sub(/^\.SH \[/, "", s); sub(/[] \\].*/, "", s); next }
     /^\.SH / { s = "" }
     s != "" && /^\.BI? [A-Za-z]+=/ { k = $2; sub(/=.*/, "", k); print s, k }' "$MAN" | sort -u >"$tmp/doc"
nt=$(wc -l <"$tmp/table"); nd=$(wc -l <"$tmp/doc")
echo "# $nt keys in the table, $nd documented"
check "the key table is not trivially small ($nt keys, every section)" \
	eval '[ "$nt" -gt 80 ] && [ "$(cut -d" " -f1 "$tmp/table" | sort -u | wc -l)" = 9 ]'
missing=$(comm -23 "$tmp/table" "$tmp/doc" | tr '\n' ',')
check "every key in the table is documented in rerand.conf(5) (missing: ${missing:-none})" test -z "$missing"
extra=$(comm -13 "$tmp/table" "$tmp/doc" | tr '\n' ',')
check "every key rerand.conf(5) documents is in the table (unknown: ${extra:-none})" test -z "$extra"
check "the man page renders without warnings (overlong paths aside)" \
	eval '! (man --warnings=w -l "$MAN" 2>&1 >/dev/null | grep -v "cannot adjust" | grep -q .)'

# ---- durations for every time-valued key, old bare numbers in their old unit ------------
fleet() {  # fleet KEY=VALUE...: the [Fleet] dump's lines for them
	printf '[Fleet]\n' >"$tmp/f.conf"
	printf '%s\n' "$@" >>"$tmp/f.conf"
	"$RERANDD" --dump-config --config "$tmp/f.conf" --config-dir "$tmp/empty.d" 2>&1
}
check "LockTTL=15min is 900 seconds, as LockTTL=900 is" \
	eval 'fleet LockTTL=15min | grep -qx LockTTL=900 && fleet LockTTL=900 | grep -qx LockTTL=900'
check "RetryBaseMSec=5s is 5000 ms, as RetryBaseMSec=5000 is; 250ms is 250" \
	eval 'fleet RetryBaseMSec=5s | grep -qx RetryBaseMSec=5000 && fleet RetryBaseMSec=5000 | grep -qx RetryBaseMSec=5000 &&
	      fleet RetryBaseMSec=250ms | grep -qx RetryBaseMSec=250'
check "RetryMaxMSec=5min, DownTTL=1h, Timeout=10s, BreakerWindowSec=2d take durations" \
	eval 'out=$(fleet RetryMaxMSec=5min DownTTL=1h Timeout=10s BreakerWindowSec=2d) &&
	      grep -qx RetryMaxMSec=300000 <<<"$out" && grep -qx DownTTL=3600 <<<"$out" &&
	      grep -qx Timeout=10 <<<"$out" && grep -qx BreakerWindowSec=172800 <<<"$out"'
check "a bad [Fleet] duration names the key and the file" \
	eval 'fleet RetryBaseMSec=5parsecs | grep -q "f.conf:2: RetryBaseMSec=5parsecs: want milliseconds"'

# ---- installed: the man page, and the docs the man pages point at --------------------------
if ! nice -n 19 make -C "$top" --no-print-directory install DESTDIR="$tmp/root" >"$tmp/install.log" 2>&1; then
	nok "make install DESTDIR=...: $(tail -2 "$tmp/install.log" | tr '\n' ' ')"
else
	man5=$(find "$tmp/root" -path '*/man5/rerand.conf.5' | head -1)
	check "make install puts rerand.conf(5) into man5" test -n "$man5"
	docdir=$(find "$tmp/root" -type d -path '*/share/doc/rerand' | head -1)
	bad=
	for m in "$top"/docs/rerandd.8 "$MAN"; do
		for d in $(grep -o '/usr/share/doc/rerand/[a-z-]*\.md' "$m" | sort -u); do
			[ -f "$docdir/${d##*/}" ] || bad+=" ${m##*/}:${d##*/}"
		done
		grep -q 'docs/[a-z-]*\.md' "$m" && bad+=" ${m##*/}:names-a-source-path"
	done
	check "every /usr/share/doc/rerand/*.md rerandd(8) and rerand.conf(5) name is installed${bad:+ (not:$bad)}" \
		eval '[ -n "$docdir" ] && [ -z "$bad" ] && [ -f "$docdir/operations.md" ]'
	check "the .deb keeps *.md uncompressed (debian/rules: dh_compress -X.md)" \
		grep -q 'dh_compress -X\.md' "$top/debian/rules"
fi
echo "1..$n"
