#!/bin/bash
# rerand.conf(5) against rerandd's key table, both ways (issue 27, point 6):
# every key `rerandd --dump-config` prints (the table: every key of every
# section, [Window NAME] with a window configured) has an entry in
# docs/rerand.conf.5 under its section, and every entry there is a key the
# table has.  Then every duration key takes a time span, a bare number is
# seconds in each, --dump-config prints each as a time span, the old
# RetryBaseMSec=/RetryMaxMSec= keep their milliseconds with a warning, and
# `make install` puts the man page and the docs/*.md the man pages point at
# where they say (the .deb runs the same install, with dh_compress told to
# leave *.md alone).
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
# ---- etc/rerand.conf: every key with its default (issue 40, point 5) -------------------
# The shipped file says "every value below is the built-in default": each
# "#Key=value" line uncommented (the [Window] example aside) must set every
# key of the table (no "# default" left in the dump) to what rerandd would
# use without it (the same dump as an empty file's).
awk '/^#\[Window / { skip = 1; next } skip && /^#[A-Za-z]+=/ { next } { skip = 0 }
     { sub(/^#(\[|[A-Za-z]+=)/, substr($0, 2, 1) == "[" ? "[" : substr($0, 2, index($0, "=") - 1)); print }' \
	"$top/etc/rerand.conf" >"$tmp/etc-all.conf"
: >"$tmp/nothing.conf"
"$RERANDD" --dump-config --config "$tmp/etc-all.conf" --config-dir "$tmp/empty.d" >"$tmp/etc.dump" 2>"$tmp/etc.err"
rc=$?
"$RERANDD" --dump-config --config "$tmp/nothing.conf" --config-dir "$tmp/empty.d" >"$tmp/def.dump" 2>&1
unset_keys=$(grep -A1 -x '# default' "$tmp/etc.dump" | grep -E '^[A-Za-z]+=' | sed 's/=.*//' | tr '\n' ' ')
check "etc/rerand.conf, uncommented, is a valid configuration (exit $rc: $(head -c 300 "$tmp/etc.err"))" test "$rc" = 0
nkeys=$(grep -cE "^[A-Za-z]+=" "$tmp/def.dump")
check "etc/rerand.conf lists every key of the table, $nkeys outside [Window] (missing: ${unset_keys:-none})" \
	eval '[ -z "$unset_keys" ] && [ "$nkeys" -gt 90 ] && [ "$(grep -cE "^[A-Za-z]+=" "$tmp/etc.dump")" = "$nkeys" ]'
# RerandBinary= is the one default that follows the build: rerandd's is
# BINDIR/rerand as last built (another suite's `make install PREFIX=/usr`
# rebuilds it while this one runs), and `make install` writes BINDIR into
# the installed rerand.conf the same way: compared by its file name only.
differ=$(diff <(grep -E '^([A-Za-z]+=|\[)' "$tmp/def.dump" | sed 's|^RerandBinary=.*/|RerandBinary=|') \
	<(grep -E '^([A-Za-z]+=|\[)' "$tmp/etc.dump" | sed 's|^RerandBinary=.*/|RerandBinary=|') |
	grep '^>' | cut -c3- | tr '\n' ' ')
check "every value etc/rerand.conf lists is the built-in default (differ: ${differ:-none})" test -z "$differ"

# one grammar (issue 40, point 4): a bare number is seconds in every key, and
# --dump-config prints every duration as a time span that parses back the same
check "LockTTL=15min and LockTTL=900 both dump as LockTTL=15min" \
	eval 'fleet LockTTL=15min | grep -qx LockTTL=15min && fleet LockTTL=900 | grep -qx LockTTL=15min'
check "RetryBase=5s and 250ms take durations; a bare RetryBase=2 is 2 seconds" \
	eval 'fleet RetryBase=5s | grep -qx RetryBase=5s && fleet RetryBase=250ms | grep -qx RetryBase=250ms &&
	      fleet RetryBase=2 | grep -qx RetryBase=2s'
check "RetryMax=5min, DownTTL=1h, Timeout=10, BreakerWindowSec=172800 dump as time spans" \
	eval 'out=$(fleet RetryMax=5min DownTTL=1h Timeout=10 BreakerWindowSec=172800) &&
	      grep -qx RetryMax=5min <<<"$out" && grep -qx DownTTL=1h <<<"$out" &&
	      grep -qx Timeout=10s <<<"$out" && grep -qx BreakerWindowSec=2d <<<"$out"'
check "the old RetryBaseMSec=5000 is still 5000 ms (RetryBase=5s), with a deprecation warning naming file:line" \
	eval 'out=$(fleet RetryBaseMSec=5000 RetryMaxMSec=5s) && grep -qx RetryBase=5s <<<"$out" &&
	      grep -qx RetryMax=5s <<<"$out" &&
	      grep -qF "warning: $tmp/f.conf:2: RetryBaseMSec= is deprecated: use RetryBase=" <<<"$out" &&
	      grep -qF "warning: $tmp/f.conf:3: RetryMaxMSec= is deprecated" <<<"$out"'
check "a bad [Fleet] duration names the key and the file" \
	eval 'fleet RetryBase=5parsecs | grep -q "f.conf:2: RetryBase=5parsecs: want a duration"'
# every duration key of the dump, defaults and a file's values alike: a time
# span (digits and a unit) or 0; never a bare number, whose unit a reader must guess
printf '[Policy]\nMaxLayoutAge=172800\nMaxInhibitSec=7200\n[Comeback]\nConfirmTimeoutSec=300\n[Window w]\nStart=03:00\nLength=3600\n' >"$tmp/d.conf"
"$RERANDD" --dump-config --config "$tmp/d.conf" --config-dir "$tmp/empty.d" >"$tmp/ddump" 2>&1
durkeys='CheckInterval|RestageInterval|NewKernelSettle|MaxLayoutAge|Jitter|MinRebootInterval|MaxInhibitSec|BlockerTimeout|BackoffBase|BackoffMax|HotplugSettle|HookTimeout|PanicRebootSec|KexecWatchdogSec|ConfirmTimeoutSec|Length|LockTTL|DownTTL|Timeout|RetryBase|RetryMax|BreakerWindowSec'
bare=$(grep -E "^($durkeys)=" "$tmp/ddump" | grep -vE '=(([0-9]+(d|h|min|s|ms))( [0-9]+(d|h|min|s|ms))*|0|off|-1)$' | tr '\n' ' ')
ndur=$(grep -cE "^($durkeys)=" "$tmp/ddump")
check "--dump-config prints all $ndur durations as time spans (bare: ${bare:-none})" \
	eval '[ "$ndur" = 22 ] && [ -z "$bare" ] && grep -qx MaxLayoutAge=2d "$tmp/ddump" &&
	      grep -qx MaxInhibitSec=2h "$tmp/ddump" && grep -qx ConfirmTimeoutSec=5min "$tmp/ddump" &&
	      grep -qx Length=1h "$tmp/ddump"'
# ...and every K_DUR key of the table is in that list (a new one must be too)
ndurtab=$(grep -cE 'K_(DUR|PANIC|WDOG) *,' "$top/daemon/config_keys.c")
check "the duration keys checked are every K_DUR, K_PANIC and K_WDOG key of the table ($ndurtab) and [Fleet]'s 6" \
	test "$ndurtab" = $((22 - 7))

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
