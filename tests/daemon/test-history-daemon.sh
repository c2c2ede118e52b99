#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# `rerand history [--json]` and the textfile metrics (issue 40, point 6),
# against a real build/rerandd and build/rerand with fixtures: the /proc
# files, the stage's record (SetupData=) and the state file the boot before
# left are FIXTURES (files written here), as in test-lifecycle-daemon.sh;
# nothing is staged (Kernel= does not exist) and nothing reboots (the
# RebootCommand only records a call, which fails the test).  Two boots of
# one instance, rerandd restarted between them on the same state directory:
#   boot 1: the attempt the boot before recorded (layout-age, 800 s ago; the
#     kernel started 700 s ago) settles as a randomized boot, the post-boot
#     check confirms it: history says success, confirmed, downtime 100 s;
#   boot 2: an attempt (requested) whose boot has no stage record: a failure
#     with its cause (no-trace), in a history file that already held 99
#     lines and a line that cannot be read: bounded at 100, the oldest
#     dropped, the bad line counted.
# Never an address: no hex number in the history file or either output.
# Every --json output (and the error object without rerandd) matches
# docs/json/history.schema.json.
# The metrics: MetricsFile= in a directory that does not exist yet is said
# once in the journal (not a warning per write) and written once the
# directory appears; the file passes `promtool check metrics` (Debian's
# prometheus package; missing is a not ok); the layout's timestamp is the
# boot's start (the /proc/stat fixture's btime).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/rerandd.sh"
rerandd_test history

rerandd_need_bins
[ "$(id -u)" = 0 ] || bail "run as root: rerandd's control socket is root's only"
command -v python3 >/dev/null || bail "python3 is missing"
/usr/bin/python3 -c 'import jsonschema' 2>/dev/null ||
	bail "python3-jsonschema is missing (scripts/deps.sh check installs it)"
command -v promtool >/dev/null ||
	bail "promtool is missing: scripts/deps.sh check installs Debian's prometheus package"

hd=$tmp/h
rerandd_dirs "$hd" pre post
sock=$hd/run/control
hist() { RERAND_CONTROL_SOCKET=$sock "$R" history "$@"; }
prom=$hd/textfile/rerand.prom
prev=0123456789abcdef0123456789abcdef
now=$(date +%s)
# boot 1: the kernel started 700 s ago, rerand's stage randomized it
rerandd_fixtures "$hd" "BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro" 700
btime=$(sed -n 's/^btime //p' "$hd/stat")
rerandd_randomized_sd "$hd/sd"
printf '#!/bin/sh\nexit 0\n' >"$hd/post/10-check"
chmod 0755 "$hd/post/10-check"
# the state the boot before left (version 1: no end line to forge)
v1_state() { # BOOT_ID ATTEMPT_TIME REASON
	printf 'version=1\nboot_id=%s\nattempt=1\nattempt_boot_id=%s\nattempt_time=%s\n' "$1" "$1" "$2"
	printf 'attempt_reason=%s\nfailures=0\nsuccesses=0\ntotal_failures=0\nweak_boots=0\nhold=0\n' "$3"
	printf 'fleet_keep=0\nconfirm_pending=0\n'
	printf 'last_success=0\nlast_failure=0\nlast_reboot=%s\nphase=rebooting\n' "$2"
}
v1_state "$prev" "$((now - 800))" layout-age >"$hd/state/state"
rerandd_no_reboot "$hd/no-reboot"
rerandd_conf_local "$hd" /bin/false "$hd/sd" <<EOF

[Stage]
Kernel=$hd/no-such-kernel
Initrd=none

[Comeback]
ConfirmTimeoutSec=10min

$(rerandd_policy MaxLayoutAge=30d RebootOutsideWindows=yes)

$(rerandd_reboot_by "$hd/no-reboot $hd")

[Crash]
Mode=off
EOF
# the metrics in a directory that is not there yet (prometheus-node-exporter
# not installed)
printf '[Daemon]\nMetricsFile=%s\n' "$prom" >"$hd/conf.d/50-metrics.conf"
rerandd_up "$hd"

# ---- boot 1: a randomized boot, confirmed ------------------------------------------------
wait_for 30 grep -q 'rerandomized boot confirmed' "$hd/log" ||
	echo "# not confirmed: $(tail -n 3 "$hd/log" | tr '\n' '|')"
hist >"$tmp/h1.txt" 2>&1
rc=$?
sed 's/^/# /' "$tmp/h1.txt"
check "history: exit 0, a header and one line (exit $rc)" \
	eval '[ $rc = 0 ] && [ "$(wc -l <"$tmp/h1.txt")" = 2 ] && head -n1 "$tmp/h1.txt" | grep -q "^STARTED (UTC) .*TRIGGER .*RESULT .*CAUSE .*DURATION"'
check "history: the reboot's start, layout-age, randomized, success, confirmed, no cause, 100s down" \
	grep -qE "^$(date -u -d "@$((now - 800))" '+%Y-%m-%d %H:%M:%S') +layout-age +randomized +success +confirmed +- +100s +[0-9]+(s|min)\$" "$tmp/h1.txt"
hist --json >"$tmp/h1.json" 2>&1
check "history --json: one object, one reboot with every field, numbers as numbers" python3 -c "
import json, sys
j = json.load(open('$tmp/h1.json'))
r = j['reboots']
ok = (j['max_entries'] == 100 and j['skipped_lines'] == 0 and len(r) == 1 and
      r[0]['started'] == $((now - 800)) and r[0]['booted'] == $btime and
      r[0]['trigger'] == 'layout-age' and r[0]['verify'] == 'randomized' and
      r[0]['result'] == 'success' and r[0]['confirm'] == 'confirmed' and r[0]['cause'] is None and
      r[0]['downtime_seconds'] == 100 and r[0]['duration_seconds'] >= 800 and
      r[0]['settled'] >= $now)
sys.exit(0 if ok else 'unexpected: %r' % j)"
check "history file: in the state directory (0700), one line, rewritten by rename (no temporary left)" \
	eval '[ "$(stat -c %a "$hd/state")" = 700 ] && [ "$(grep -vc "^#" "$hd/state/history")" = 1 ] && ! ls "$hd/state" | grep -q "history\.tmp"'

# ---- the metrics ---------------------------------------------------------------------------
check "metrics directory absent: said once in the journal, as a notice" \
	eval '[ "$(grep -c "MetricsFile=$prom: no directory $hd/textfile" "$hd/log")" = 1 ] && grep -q "^<5>MetricsFile=$prom: no directory" "$hd/log"'
check "metrics directory absent: no warning about it" eval '! grep -q "^<4>.*$prom" "$hd/log"'
mkdir "$hd/textfile"
# a change of a value rewrites the file (else it waits up to 10 minutes)
RERAND_CONTROL_SOCKET=$sock "$R" hold >/dev/null 2>&1
RERAND_CONTROL_SOCKET=$sock "$R" unhold >/dev/null 2>&1
check "metrics directory made: the file is written (0644), and the journal says so" \
	eval 'wait_for 10 test -s "$prom" && [ "$(stat -c %a "$prom")" = 644 ] && grep -q "MetricsFile=$prom: written again" "$hd/log"'
check "metrics: rerand_layout_since_timestamp_seconds is the boot's start (btime $btime)" \
	eval 'v=$(sed -n "s/^rerand_layout_since_timestamp_seconds //p" "$prom"); [ -n "$v" ] && [ $((v - btime)) -ge -1 ] && [ $((v - btime)) -le 1 ]'
check "metrics: rerand_layout_max_age_seconds is MaxLayoutAge=30d" grep -qx 'rerand_layout_max_age_seconds 2592000' "$prom"
check "metrics: the deprecated rerand_layout_age_seconds is still written" grep -q '^rerand_layout_age_seconds [0-9]' "$prom"
# promtool's linter takes the _bits of rerand_entropy_bits (bits of
# entropy, not of data) for a unit it wants in bytes: that one lint is
# known and kept (renaming the metric would break dashboards); any other
# is a not ok
promtool check metrics <"$prom" >"$tmp/lint.out" 2>&1
rc=$?
sed 's/^/# promtool: /' "$tmp/lint.out"
check "promtool check metrics: rerandd's file parses, no lint but the known rerand_entropy_bits one (exit $rc)" \
	eval '[ $rc = 0 ] || { [ $rc = 3 ] && ! grep -v "^rerand_entropy_bits use base unit \"bytes\" instead of \"bits\"\$" "$tmp/lint.out" | grep -q .; }' 
check "metrics: no temporary file left beside it (node_exporter reads *.prom only)" \
	eval '[ "$(ls "$hd/textfile")" = rerand.prom ]'

# ---- boot 2: a failed boot, in a full history --------------------------------------------
kill -TERM "$(cat "$hd/pid")"
wait_for 10 eval '! kill -0 "$(cat "$hd/pid")" 2>/dev/null' || bail "rerandd did not stop"
b1=$(cat "$hd/boot_id")
# 99 lines from the past and one that cannot be read, before boot 1's line
{
	echo "# rerand history 1"
	for i in $(seq 1 99); do
		echo "started=$((1600000000 + i)) booted=$((1600000060 + i)) settled=$((1600000100 + i)) trigger=layout-age verify=randomized result=success confirm=confirmed cause=none"
	done
	echo "started=0x1 this line is not one"
	grep -v '^#' "$hd/state/history"
} >"$tmp/history" && mv "$tmp/history" "$hd/state/history"
now2=$(date +%s)
rerandd_fixtures "$hd" "BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro" 30
rm -rf "$hd/sd"
mkdir "$hd/sd"
v1_state "$b1" "$((now2 - 90))" requested >"$hd/state/state"
rerandd_up "$hd"
wait_for 10 grep -q 'rerandomizing reboot failed: cause' "$hd/log" || true
hist --json >"$tmp/h2.json" 2>&1
hist >"$tmp/h2.txt" 2>&1
tail -n 3 "$tmp/h2.txt" | sed 's/^/# /'
check "history --json: bounded at 100, the oldest dropped, boot 1's line kept" python3 -c "
import json, sys
j = json.load(open('$tmp/h2.json'))
r = j['reboots']
sys.exit(0 if (len(r) == 100 and r[0]['started'] == 1600000002 and j['skipped_lines'] == 0 and
               r[-2]['trigger'] == 'layout-age' and r[-2]['confirm'] == 'confirmed') else 'unexpected: %r' % ((r[:1], r[-2:], j['skipped_lines']),))"
check "the rewrite dropped the line it could not read, and the journal says so" \
	grep -q "^<4>$hd/state/history: 1 line could not be read and is dropped" "$hd/log"
check "history --json: boot 2 is a failure: requested, absent, cause no-trace, 60s down" python3 -c "
import json, sys
e = json.load(open('$tmp/h2.json'))['reboots'][-1]
sys.exit(0 if (e['trigger'] == 'requested' and e['verify'] == 'absent' and e['result'] == 'failure' and
               e['cause'] == 'no-trace' and e['confirm'] == 'none' and e['downtime_seconds'] == 60 and
               e['started'] == $((now2 - 90))) else 'unexpected: %r' % e)"
check "history: the table's last line says the same" \
	eval 'tail -n 1 "$tmp/h2.txt" | grep -qE " requested +absent +failure +none +no-trace +60s "'
check "history file: 100 lines again (the bad one and the oldest gone)" \
	test "$(grep -vc '^#' "$hd/state/history")" = 100
# a line damaged while rerandd runs: shown as skipped, not hidden
cp "$hd/state/history" "$tmp/history.good"
echo "started=12 booted=x" >>"$hd/state/history"
hist >"$tmp/h3.txt" 2>&1
hist --json >"$tmp/h3.json" 2>&1
check "a line that cannot be read: the table says so, --json counts it" \
	eval 'tail -n 1 "$tmp/h3.txt" | grep -q "^1 line of $hd/state/history could not be read (skipped)\$" &&
	      python3 -c "import json,sys; j=json.load(open(\"$tmp/h3.json\")); sys.exit(not (j[\"skipped_lines\"] == 1 and len(j[\"reboots\"]) == 100))"'
cp "$tmp/history.good" "$hd/state/history"
check "never an address: no hex number in the history file or in either output" \
	eval '! grep -qiE "0x[0-9a-f]|[0-9a-f]{12}" "$hd/state/history" "$tmp/h1.txt" "$tmp/h1.json" "$tmp/h2.txt" "$tmp/h2.json"'
check "no reboot was asked for" test ! -e "$hd/reboot-called"

# ---- the command itself -----------------------------------------------------------------
RERAND_CONTROL_SOCKET=$tmp/no-socket "$R" history >"$tmp/nosock.out" 2>&1
rc=$?
check "history without rerandd: exit 1, says it cannot reach it (exit $rc)" \
	eval '[ $rc = 1 ] && grep -q "^rerand: $tmp/no-socket: cannot reach rerandd: " "$tmp/nosock.out"'
hist extra >/dev/null 2>&1
rc=$?
check "history with an operand: a usage error, exit 64 (exit $rc)" test $rc = 64
hist --json=pretty >"$tmp/pretty.json" 2>&1
check "history --json=pretty: indented, the same object" python3 -c "
import json, sys
a, b = json.load(open('$tmp/pretty.json')), json.load(open('$tmp/h2.json'))
sys.exit(not (a == b and open('$tmp/pretty.json').read().count('\n') > 100))"
check "--socket PATH reaches rerandd as RERAND_CONTROL_SOCKET does" \
	eval 'env -u RERAND_CONTROL_SOCKET "$R" history --socket "$sock" --json | cmp -s - "$tmp/h2.json"'
RERAND_CONTROL_SOCKET=$tmp/no-socket "$R" history --json >"$tmp/nosock.json" 2>/dev/null
rc=$?
check "history --json without rerandd: exit 1, one object whose only member is error (exit $rc)" \
	eval '[ $rc = 1 ] && python3 -c "import json,sys; j=json.load(open(\"$tmp/nosock.json\")); sys.exit(not (list(j) == [\"error\"] and \"cannot reach rerandd\" in j[\"error\"]))"'
# every document above against docs/json/history.schema.json (Debian's
# python3-jsonschema, through the validator tests/cli/test-json-schema.sh uses)
/usr/bin/python3 "$top/tests/tools/json-validate.py" "$top/docs/json/history.schema.json" "$tmp"/h1.json \
	"$tmp"/h2.json "$tmp"/h3.json "$tmp/pretty.json" "$tmp/nosock.json" >"$tmp/schema.out" 2>&1
rc=$?
check "history --json: every output matches docs/json/history.schema.json (exit $rc: $(head -c 300 "$tmp/schema.out"))" \
	eval '[ $rc = 0 ] && grep -qx "ok 5" "$tmp/schema.out"'
done_
