#!/bin/bash
# rerandd's control socket and what it reports, against a real build/rerandd
# with fixtures (the /proc ones are procfs files, tests/lib/procfs-fixture.sh):
#  - SO_PEERCRED: a peer that is not uid 0 is refused even when the socket's
#    mode lets it connect, and its command has no effect; root is served;
#  - SIGHUP with an unchanged configuration logs no "take effect on restart";
#  - a weak boot (the stage's record says RERAND_ST_WEAK: bases from the TSC
#    alone) is counted and shown as weak, not as a verified rerandomization.
# Nothing is staged (Kernel= does not exist) and nothing reboots (the
# RebootCommand only records a call, which fails the test).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/rerandd.sh"
rerandd_test ctl

rerandd_need_bins
[ "$(id -u)" = 0 ] || bail "run as root: the test compares a root peer with an unprivileged one"
command -v setpriv >/dev/null || bail "setpriv (util-linux) is missing"
NOBODY=$(id -u nobody) || bail "no user nobody"

hd=$tmp/h
rerandd_dirs "$hd" pre post sd/0
old_boot=0123abcd-0000-4000-8000-00000000abcd
rerandd_procfs_fixtures "$hd" "BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro"
# the stage's record of this boot: randomized, but weak (no seed, RDTSC only)
echo 0x52520001 >"$hd/sd/0/type"
python3 -c "import struct,sys; sys.stdout.buffer.write(b'RERANDST'+struct.pack('<HHIIIIIIIQQQ',1,64,1,0x10,0x08,0x06,3,5,1,480,470,0))" >"$hd/sd/0/data"
"$R" verify --setup-data "$hd/sd" 2>/dev/null | grep -q "weak" || bail "the weak setup_data fixture does not read as weak"
# rerandd rebooted the machine from the boot before
cat >"$hd/state/state" <<EOF
version=1
boot_id=$old_boot
attempt=1
attempt_boot_id=$old_boot
attempt_time=1000
attempt_reason=layout-age
failures=0
hold=0
fleet_keep=0
confirm_pending=0
EOF
rerandd_no_reboot "$hd/no-reboot"
rerandd_conf_local "$hd" /bin/false "$hd/sd" <<EOF

[Stage]
Kernel=$hd/no-such-kernel
Initrd=none

$(rerandd_policy MaxLayoutAge=30d RebootOutsideWindows=yes BackoffBase=30min)

$(rerandd_reboot_by "$hd/no-reboot $hd")

[Crash]
Mode=off
EOF
rerandd_up "$hd"
sock=$hd/run/control
st() { RERAND_CONTROL_SOCKET=$sock "$@"; }

# ---- SO_PEERCRED ---------------------------------------------------------------------
check "root is served" eval 'st "$R" status >"$tmp/root.out" 2>&1 && grep -q "^layout age:" "$tmp/root.out"'
check "the socket is created 0600" test "$(stat -c %a "$sock")" = 600
# nobody needs to reach the socket and run the client
chmod 755 "$tmp" "$hd" "$hd/run"
cp "$R" "$tmp/rerand" && chmod 755 "$tmp/rerand"
as_nobody() { setpriv --reuid="$NOBODY" --regid="$(id -g nobody)" --clear-groups env RERAND_CONTROL_SOCKET="$sock" "$@"; }
as_nobody "$tmp/rerand" status >"$tmp/nobody0.out" 2>&1
rc=$?
check "nobody, socket 0600: cannot even connect (exit $rc: $(head -1 "$tmp/nobody0.out"))" \
	eval '[ $rc -ne 0 ] && grep -q "Permission denied" "$tmp/nobody0.out"'
# now let the file mode allow it: what remains is rerandd's own check of the peer
chmod 666 "$sock"
as_nobody "$tmp/rerand" status >"$tmp/nobody1.out" 2>&1
rc=$?
echo "# nobody: $(head -1 "$tmp/nobody1.out")"
check "nobody, socket 0666: connected, refused by SO_PEERCRED (exit $rc)" \
	eval '[ $rc -ne 0 ] && grep -q "permission denied: root only" "$tmp/nobody1.out" && ! grep -q "^layout age:" "$tmp/nobody1.out"'
as_nobody "$tmp/rerand" hold >"$tmp/nobody2.out" 2>&1
rc=$?
sleep 0.3
check "nobody's \`rerand hold\` is refused and has no effect (exit $rc, state hold=0)" \
	eval '[ $rc -ne 0 ] && grep -q "root only" "$tmp/nobody2.out" && grep -qx hold=0 "$hd/state/state"'
setpriv --reuid="$NOBODY" --regid=0 --groups=0 env RERAND_CONTROL_SOCKET="$sock" "$tmp/rerand" hold >"$tmp/gid0.out" 2>&1
rc=$?
check "uid nobody with gid 0 and group root is refused too (exit $rc)" \
	eval '[ $rc -ne 0 ] && grep -q "root only" "$tmp/gid0.out" && grep -qx hold=0 "$hd/state/state"'
check "root's \`rerand hold\` takes effect (so the refusals above are real)" \
	eval 'st "$R" hold >/dev/null 2>&1 && wait_for 5 grep -qx hold=1 "$hd/state/state"'
check "root's \`rerand unhold\` lifts it" \
	eval 'st "$R" unhold >/dev/null 2>&1 && wait_for 5 grep -qx hold=0 "$hd/state/state"'
# ---- a hold with a reason: its time and reason in the status and the state file -------------
st "$R" hold --reason "db migration, ask ops" >/dev/null 2>&1
check "rerand hold --reason: status shows since when and why" \
	eval 'st "$R" status | grep -qE "^hold:              yes, since [A-Z][a-z]{2} [0-9-]{10} [0-9:]{8} [A-Z]+; [0-9]+s ago: db migration, ask ops$"'
check "rerand hold --reason: kept in the state file" \
	eval 'grep -qx "hold_text=db migration, ask ops" "$hd/state/state" && grep -qE "^hold_time=[1-9][0-9]+$" "$hd/state/state"'
check "rerand status: rerandd's version and uptime on the first line" \
	eval 'st "$R" status | head -1 | grep -qE "^rerandd:           version [0-9.]+, up [0-9]+(s|min [0-9]+s) \(since "'
# the old name still lifts a hold, and says it is the old name
st "$R" release >/dev/null 2>"$tmp/release.err"
check "\`rerand release\` (the old name) lifts the hold and names \`rerand unhold\`" \
	eval 'wait_for 5 grep -qx hold=0 "$hd/state/state" && grep -q "is now .rerand unhold." "$tmp/release.err"'
check "rerandd still serves root after the refusals" eval 'st "$R" status | grep -q "^hold:              no"'

# ---- a weak boot -------------------------------------------------------------------------
check "status: this boot is weak, not verified" \
	eval 'st "$R" status | grep -q "^this boot:         weak (randomized from the TSC alone"'
check "status: counted as weak, not as verified or failed" \
	eval 'st "$R" status | grep -q "^reboots:           0 verified, 0 failed, 1 weak"'
check "status: it counts towards failures in a row" eval 'st "$R" status | grep -q "^failures in a row: 1 of 3"'
check "policy: a new layout is planned for the weak boot, after the 30 min back-off" \
	eval 'st "$R" status --json | python3 -c "import json,sys,time; j=json.load(sys.stdin); sys.exit(not (j[\"reason\"]==\"weak-boot\" and j[\"action\"]==\"wait\" and 1700 < j[\"next_reboot\"] - time.time() <= 1800))"'
check "status --json: verify weak, randomized true (as verify --json), weak true, weak_total 1, successes 0" \
	eval 'st "$R" status --json | python3 -c "import json,sys; j=json.load(sys.stdin); sys.exit(not (j[\"verify\"]==\"weak\" and j[\"randomized\"] is True and j[\"weak\"] is True and j[\"weak_total\"]==1 and j[\"successes\"]==0 and j[\"consecutive_failures\"]==1))"'
st "$R" status --json >"$tmp/status.json"
check "status --json: every key (nested too) is in rerandd(8)'s STATUS JSON schema" \
	python3 -c "
import json, re, sys
j = json.load(open('$tmp/status.json'))
man = open('$top/docs/rerandd.8').read()
sec = man[man.index('.SH STATUS JSON'):]
sec = sec[:sec.index('.SH ', 4)]
words = set(re.findall(r'[a-z0-9_]+', sec))
keys = set(j) | set(j['crash']) | set(j['fleet'])
missing = sorted(k for k in keys if k not in words)
sys.exit('not in the man page: %s' % missing if missing else 0)"
m=$hd/run/rerand.prom
check "metrics: rerand_boot_randomized 0, rerand_boot_weak 1, reboots_total{result=weak} 1, success 0" \
	eval 'wait_for 5 grep -qx "rerand_boot_weak 1" "$m" && grep -qx "rerand_boot_randomized 0" "$m" &&
	      grep -qx "rerand_reboots_total{result=\"weak\"} 1" "$m" && grep -qx "rerand_reboots_total{result=\"success\"} 0" "$m"'
check "state: weak_boots=1, failures=1, successes=0, last_verify=weak" \
	eval 'grep -qx weak_boots=1 "$hd/state/state" && grep -qx failures=1 "$hd/state/state" &&
	      grep -qx successes=0 "$hd/state/state" && grep -qx last_verify=weak "$hd/state/state"'
check "journal: one error line says the reboot was weak" \
	eval '[ "$(grep -c "^<3>rerandomizing reboot was weak: " "$hd/log")" = 1 ]'
check "journal: every line of rerandd's output is one <N>-prefixed event" \
	eval '! grep -qv "^<[0-7]>" "$hd/log"'
# ---- SIGHUP: a reload that changes nothing says nothing about a restart ---------------------
pid=$(cat "$hd/pid")
kill -HUP "$pid"
check "SIGHUP with nothing changed: reloaded, no \"take effect on restart\" warning" \
	eval 'wait_for 10 grep -q "configuration reloaded" "$hd/log" && ! grep -q "take effect on restart" "$hd/log"'
# the warning still comes when a fixed setting does change (so the check above can fail)
printf '[Paths]\nKmsg=%s/other-kmsg\n' "$hd" >"$hd/conf.d/90-kmsg.conf"
kill -HUP "$pid"
check "SIGHUP with Kmsg= changed: warned that it takes effect on restart" \
	eval 'wait_for 10 grep -q "\\[Paths\\] Kmsg= changes take effect on restart" "$hd/log"'
rm -f "$hd/conf.d/90-kmsg.conf"
# ---- no window and RebootOutsideWindows=no (the default install): said once ------------------
check "with RebootOutsideWindows=yes there is no no-window notice" \
	eval '! grep -q "no maintenance window is configured" "$hd/log"'
printf '[Policy]\nRebootOutsideWindows=no\n' >"$hd/conf.d/90-nowin.conf"
kill -HUP "$pid"
check "a reload to no window: one notice in the journal says what to configure" \
	eval 'wait_for 10 grep -q "^<5>no maintenance window is configured and RebootOutsideWindows=no: .*\[Window NAME\]" "$hd/log"'
check "status: next rerandomize says it never happens by itself" \
	eval 'st "$R" status | grep -q "^next rerandomize:  never by itself: no maintenance window is configured"'
kill -HUP "$pid"
sleep 1
check "another reload with no window: still one notice, not one per reload" \
	test "$(grep -c "no maintenance window is configured" "$hd/log")" = 1
rm -f "$hd/conf.d/90-nowin.conf"
kill -HUP "$pid"
check "RebootOutsideWindows=yes again: the status plans a reboot again" \
	eval 'wait_for 10 eval "st \"\$R\" status | grep -q \"^next rerandomize:  [A-Z][a-z][a-z] \""'
check "rerandd never asked for a reboot" test ! -e "$hd/reboot-called"
echo "1..$n"
