#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The observability pack (issue 40, point 6): the alert rules
# (etc/prometheus/rerand.rules.yml) checked and unit-tested by Debian's real
# promtool (package prometheus: `promtool check rules`, `promtool test
# rules` on etc/prometheus/rerand.rules.test.yml, whose series fire and do
# not fire each alert), and the Grafana dashboard (etc/grafana/*.json)
# read as JSON.  Every metric name the rules, their tests and the dashboard
# use must be one rerandd can write: a row of metrics.c's table (a quoted
# "rerand_..." name there) or a "# TYPE" line elsewhere in daemon/*.c (the
# fleet's lines from fleet_format.c and coord_ops.c).  Negative controls in the test itself: a planted typo is
# caught by the name check, and a broken threshold fails `promtool test
# rules`.  promtool missing is a not ok (scripts/deps.sh check installs it),
# never a skip.  The package's postrm (debian/rerand.postrm, run as it is
# in a scratch DPKG_ROOT) removes the metrics file from the exporter's
# directory on remove.  No daemon runs here: tests/daemon/test-history-daemon.sh
# runs `promtool check metrics` on a real rerandd's file.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/tap.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rules=$top/etc/prometheus/rerand.rules.yml
rtest=$top/etc/prometheus/rerand.rules.test.yml
dash=$top/etc/grafana/rerand-fleet.json
alerts="RerandLayoutTooOld RerandRerandomizationFailing RerandStopped RerandFleetBreakerOpen
RerandWeakBoot RerandCrashKernelNotLoaded RerandFleetSlotStuck RerandFleetLockError"

command -v promtool >/dev/null ||
	bail "promtool is missing: scripts/deps.sh check installs Debian's prometheus package"
command -v python3 >/dev/null || bail "python3 is missing"
python3 -c 'import yaml' 2>/dev/null || bail "python3-yaml is missing (scripts/deps.sh check)"

# names FILE...: every rerand_* metric name the files mention (comments and
# annotations too: a name that is written anywhere must exist)
names() { grep -ohE '\brerand_[a-z0-9_]+' "$@" | sort -u; }
# emitted: the names rerandd writes, from metrics.c's rows and the other
# files' "# TYPE" lines
emitted() {
	{ grep -ohE '"rerand_[a-z0-9_]+"' "$top"/daemon/metrics.c | tr -d '"'
	  grep -ohE '# TYPE rerand_[a-z0-9_]+ ' "$top"/daemon/*.c | awk '{print $3}'; } | sort -u
}
# unknown FILE...: the names in FILE... that rerandd never writes
unknown() { comm -23 <(names "$@") <(emitted); }

emitted >"$tmp/emitted"
check "rerandd's sources name metrics (names found: $(wc -l <"$tmp/emitted"))" \
	test "$(wc -l <"$tmp/emitted")" -ge 30
check "the layout's timestamp metric is one: rerand_layout_since_timestamp_seconds" \
	grep -qx rerand_layout_since_timestamp_seconds "$tmp/emitted"

# ---- the rules ------------------------------------------------------------------------
promtool check rules "$rules" >"$tmp/check.out" 2>&1
check "promtool check rules $(basename "$rules"): $(grep -o 'SUCCESS.*\|FAILED.*' "$tmp/check.out" | head -n1)" \
	grep -q 'SUCCESS: 8 rules found' "$tmp/check.out"
(cd "$(dirname "$rtest")" && promtool test rules "$(basename "$rtest")") >"$tmp/test.out" 2>&1
rc=$?
check "promtool test rules $(basename "$rtest"): SUCCESS (exit $rc)" \
	eval '[ $rc = 0 ] && grep -q SUCCESS "$tmp/test.out"'
[ $rc = 0 ] || sed 's/^/# /' "$tmp/test.out" | head -n 40
for a in $alerts; do
	check "rules: alert $a is defined" grep -qE "^ +- alert: $a\$" "$rules"
	# a case where it fires and one where it does not, in the promtool tests
	check "rules test: $a has a case that fires and one that does not" python3 -c "
import sys, yaml
t = yaml.safe_load(open('$rtest'))
cases = [c for g in t['tests'] for c in g.get('alert_rule_test', []) if c['alertname'] == '$a']
sys.exit(not (any(c.get('exp_alerts') for c in cases) and any(not c.get('exp_alerts') for c in cases)))"
done
check "rules: no alert beyond the tested ones" \
	test "$(grep -cE '^ +- alert: ' "$rules")" = "$(wc -w <<<"$alerts")"
unknown "$rules" "$rtest" >"$tmp/unknown"
check "rules and their tests: every metric is one rerandd writes$( [ -s "$tmp/unknown" ] && echo " (not: $(tr '\n' ' ' <"$tmp/unknown"))")" \
	test ! -s "$tmp/unknown"

# negative control: a threshold that no longer matches the series fails the tests
sed 's/expr: rerand_stopped == 1/expr: rerand_stopped == 2/' "$rules" >"$tmp/rerand.rules.yml"
sed "s|^  - rerand.rules.yml|  - $tmp/rerand.rules.yml|" "$rtest" >"$tmp/broken.test.yml"
check "negative control: a broken RerandStopped makes promtool test rules fail" \
	eval '! grep -q "rerand_stopped == 1" "$tmp/rerand.rules.yml" && ! promtool test rules "$tmp/broken.test.yml" >"$tmp/broken.out" 2>&1 && grep -q "alertname: RerandStopped" "$tmp/broken.out"'

# ---- the dashboard --------------------------------------------------------------------
check "dashboard $(basename "$dash"): valid JSON, with panels whose every query names a rerandd metric" \
	python3 -c "
import json, re, sys
d = json.load(open('$dash'))
panels = d['panels']
exprs = [t['expr'] for p in panels for t in p['targets']]
sys.exit(not (panels and d.get('title') and len(exprs) >= len(panels)
              and all(re.search(r'\brerand_[a-z0-9_]+', e) for e in exprs)))"
check "dashboard: the panels the issue asks for (layout age distribution, hosts due, failures by cause)" \
	python3 -c "
import json, sys
t = [p['title'] for p in json.load(open('$dash'))['panels']]
sys.exit(not all(x in t for x in ('Layout age distribution', 'Hosts due', 'Failures by cause')))"
check "dashboard: the age is computed at query time from rerand_layout_since_timestamp_seconds" \
	eval 'grep -q "time() - rerand_layout_since_timestamp_seconds" "$dash" && ! grep -q rerand_layout_age_seconds "$dash"'
unknown "$dash" >"$tmp/unknown"
check "dashboard: every metric is one rerandd writes$( [ -s "$tmp/unknown" ] && echo " (not: $(tr '\n' ' ' <"$tmp/unknown"))")" \
	test ! -s "$tmp/unknown"

# negative control: a typo planted in a copy is caught by the same check
sed 's/rerand_stopped/rerand_stoped/' "$dash" >"$tmp/typo.json"
unknown "$tmp/typo.json" >"$tmp/unknown"
check "negative control: a planted typo (rerand_stoped) is named as unknown" \
	grep -qx rerand_stoped "$tmp/unknown"

# ---- installed --------------------------------------------------------------------------
make -s -C "$top" -n install DESTDIR=/nonexistent >"$tmp/install.n" 2>&1
check "make install puts the rules, their tests and the dashboard under DOCDIR/examples" \
	eval 'grep -q "rerand.rules.yml etc/prometheus/rerand.rules.test.yml" "$tmp/install.n" &&
	      grep -q "etc/grafana/rerand-fleet.json .*/examples/grafana/" "$tmp/install.n"'

# ---- removal: the package's postrm takes the metrics file away -------------------------
r=$tmp/root
te=$r/var/lib/prometheus/node-exporter
mkdir -p "$te"
echo 'rerand_stopped 0' >"$te/rerand.prom"
echo 'rerand_stopped 0' >"$te/rerand.prom.tmpAb12Cd"
echo 'other_metric 1' >"$te/other.prom"
DPKG_ROOT=$r sh "$top/debian/rerand.postrm" remove
rc=$?
check "postrm remove (DPKG_ROOT): exit $rc, rerand.prom and a temporary one gone, another job's file kept" \
	eval '[ $rc = 0 ] && [ ! -e "$te/rerand.prom" ] && [ ! -e "$te/rerand.prom.tmpAb12Cd" ] && [ -f "$te/other.prom" ]'
rm -rf "$te"
DPKG_ROOT=$r sh "$top/debian/rerand.postrm" purge
rc=$?
check "postrm purge without the exporter's directory: exit $rc" test $rc = 0
done_
