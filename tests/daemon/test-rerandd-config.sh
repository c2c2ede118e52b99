#!/bin/bash
# rerandd's configuration checks (issue 27, point 4), against build/rerandd:
#  - --config naming a file that does not exist fails and names it;
#  - an unknown section is refused even when empty, with a "did you mean";
#  - an unknown key gets a "did you mean" from the key table (edit distance),
#    or the section it belongs in;
#  - "Key=24h # daily" is refused as a comment after a value;
#  - --dump-config prints the effective configuration, drop-ins applied, each
#    value under the file:line it came from, and its output parses back to
#    the same configuration;
#  - --version.
# Nothing runs as a daemon here: only --check-config and --dump-config.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/rerand-conf.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
RERANDD=$top/build/rerandd
. "$top/tests/lib/tap.sh"
[ -x "$RERANDD" ] || bail "$RERANDD is missing: make build/rerandd"
mkdir -p "$tmp/empty.d" "$tmp/conf.d"

chk() {  # chk FILE: --check-config on FILE alone; output in $tmp/out, status in $rc
	"$RERANDD" --check-config --config "$1" --config-dir "$tmp/empty.d" >"$tmp/out" 2>&1
	rc=$?
	echo "# $(tr '\n' '|' <"$tmp/out")"
}

chk "$tmp/missing.conf"
check "--config of a missing file fails (exit $rc) naming it" \
	eval '[ $rc -ne 0 ] && grep -q "$tmp/missing.conf: cannot open: No such file" "$tmp/out" && ! grep -q "configuration OK" "$tmp/out"'

printf '[Policy]\nMaxLayoutAge=24h\n\n[Polcy]\n' >"$tmp/sect.conf"
chk "$tmp/sect.conf"
check "an empty unknown section is refused, with a did-you-mean (exit $rc)" \
	eval '[ $rc -ne 0 ] && grep -qF "sect.conf:4: unknown section [Polcy] (did you mean [Policy]?)" "$tmp/out"'
printf '[Bogus]\nFoo=1\nBar=2\n' >"$tmp/bogus.conf"
chk "$tmp/bogus.conf"
check "an unknown section's keys are not reported one by one (exit $rc)" \
	eval '[ $rc -ne 0 ] && [ "$(grep -c "" "$tmp/out")" = 1 ] && grep -qF "bogus.conf:1: unknown section [Bogus]" "$tmp/out"'

printf '[Policy]\nMaxLayutAge=3h\n[Daemon]\nJitter=5min\n[Fleet]\nRetryBaseMsecs=5000\n[Window w]\nStrat=03:00\n' >"$tmp/keys.conf"
chk "$tmp/keys.conf"
check "an unknown key: did you mean the closest key of the section" \
	eval 'grep -qF "keys.conf:2: [Policy]: unknown key MaxLayutAge (did you mean MaxLayoutAge=?)" "$tmp/out"'
check "a key in the wrong section: says which section it belongs in" \
	eval 'grep -qF "keys.conf:4: [Daemon]: unknown key Jitter (Jitter= belongs in [Policy])" "$tmp/out"'
check "[Fleet] and [Window] keys get a did-you-mean too" \
	eval 'grep -qF "(did you mean RetryBaseMSec=, now RetryBase=?)" "$tmp/out" && grep -qF "keys.conf:8: [Window w]: unknown key Strat (did you mean Start=?)" "$tmp/out"'

# keys are case-sensitive in every section; a [Fleet] key in another case
# (rerand 0.1 took any) is still taken, with a warning naming its spelling
printf '[Fleet]\nmaxconcurrent=2\n' >"$tmp/case.conf"
chk "$tmp/case.conf"
check "a [Fleet] key in another case: taken, warned with its spelling (exit $rc)" \
	eval '[ $rc -eq 0 ] && grep -qF "case.conf:2: maxconcurrent= is spelled MaxConcurrent= (keys are case-sensitive" "$tmp/out"'
printf '[Policy]\nmaxlayoutage=2h\n' >"$tmp/case2.conf"
chk "$tmp/case2.conf"
check "a [Policy] key in another case is refused with its spelling (exit $rc)" \
	eval '[ $rc -ne 0 ] && grep -qF "unknown key maxlayoutage (did you mean MaxLayoutAge=?)" "$tmp/out"'

printf '[Policy]\nMaxLayoutAge=24h # daily\n[Fleet]\nGroup=web ; the web tier\n' >"$tmp/comment.conf"
chk "$tmp/comment.conf"
check "a comment after a value is named as such (exit $rc)" \
	eval '[ $rc -ne 0 ] && grep -qF "comment.conf:2: MaxLayoutAge=24h # daily: no comments after a value" "$tmp/out" &&
	      grep -qF "comment.conf:4: Group=web ; the web tier: no comments after a value" "$tmp/out"'
printf '[Policy]\nBlockerCommand=/bin/sh -c "exit 0" # free text\n' >"$tmp/str.conf"
chk "$tmp/str.conf"
check "a free-text key (a command) may hold a '#' (exit $rc)" eval '[ $rc -eq 0 ]'

# ---- lock server URLs (issue 39, point 6) ---------------------------------------------
# The host the plaintext rule judges must be the one curl connects to: in
# http://127.0.0.1:2379@etcd.example:2379 that is etcd.example, 127.0.0.1:2379
# being user info.
printf '[Fleet]\nBackend=etcd\nEndpoints=http://127.0.0.1:2379@etcd.example:2379\n' >"$tmp/userinfo.conf"
chk "$tmp/userinfo.conf"
check "Endpoints= with user info before the host is refused, naming file, line and key (exit $rc)" \
	eval '[ $rc -ne 0 ] && grep -qF "userinfo.conf:3: Endpoints=http://127.0.0.1:2379@etcd.example:2379: user info" "$tmp/out" &&
	      ! grep -q "configuration OK" "$tmp/out"'
printf '[Fleet]\nBackend=fleetlock\nURL=https://fleetlock.example/#frag\n' >"$tmp/frag.conf"
chk "$tmp/frag.conf"
check "URL= with a fragment is refused, naming file, line and key (exit $rc)" \
	eval '[ $rc -ne 0 ] && grep -qF "frag.conf:3: URL=https://fleetlock.example/#frag: a fragment" "$tmp/out"'
printf '[Fleet]\nBackend=etcd\nEndpoints=http://[::1]:2379 https://etcd.example:2379\n' >"$tmp/good-url.conf"
chk "$tmp/good-url.conf"
check "Endpoints= of [::1] over http and a host over https is accepted (exit $rc)" eval '[ $rc -eq 0 ]'

# ---- --dump-config -------------------------------------------------------------------
printf '[Policy]\nMaxLayoutAge=12h\nJitter=10min\n\n[Window nightly]\nDays=Mon..Fri\nStart=03:00\nLength=2h\n' >"$tmp/main.conf"
printf '[Policy]\nJitter=30min\n\n[Window nightly]\nLength=1h\n\n[Fleet]\nLockTTL=1200\n' >"$tmp/conf.d/50-site.conf"
"$RERANDD" --dump-config --config "$tmp/main.conf" --config-dir "$tmp/conf.d" >"$tmp/dump" 2>"$tmp/dump.err"
rc=$?
check "--dump-config succeeds (exit $rc)" eval '[ $rc -eq 0 ] && [ ! -s "$tmp/dump.err" ]'
# "# ORIGIN" then "Key=value"
origin_of() { grep -B1 -x "$1" "$tmp/dump" | head -1; }
check "a main-file value with its file:line" test "$(origin_of MaxLayoutAge=12h)" = "# $tmp/main.conf:2"
check "a drop-in's value wins, with the drop-in's file:line" \
	test "$(origin_of Jitter=30min)" = "# $tmp/conf.d/50-site.conf:2"
check "a window key from the drop-in, the others from the main file" \
	eval '[ "$(origin_of Length=1h)" = "# $tmp/conf.d/50-site.conf:5" ] && [ "$(origin_of Start=03:00)" = "# $tmp/main.conf:7" ]'
check "[Fleet] values are included (LockTTL=1200 as 20min)" test "$(origin_of LockTTL=20min)" = "# $tmp/conf.d/50-site.conf:8"
check "defaults are marked as such" test "$(origin_of MaxFailures=3)" = "# default"
check "every key of the table is printed, ControlSocket= filled in" \
	eval 'grep -qx "ControlSocket=/run/rerand/control" "$tmp/dump" && grep -qx "HelperSocket=.*" "$tmp/dump" && grep -qx "Pstore=/sys/fs/pstore" "$tmp/dump"'
"$RERANDD" --dump-config --config "$tmp/dump" --config-dir "$tmp/empty.d" >"$tmp/dump2" 2>&1
check "the dump parses back to the same configuration" \
	eval 'diff <(grep -v "^#" "$tmp/dump") <(grep -v "^#" "$tmp/dump2") >/dev/null'
"$RERANDD" --dump-config --config "$tmp/keys.conf" --config-dir "$tmp/empty.d" >"$tmp/out" 2>&1
rc=$?
check "--dump-config of a bad configuration fails with the errors (exit $rc)" \
	eval '[ $rc -ne 0 ] && grep -q "did you mean" "$tmp/out" && ! grep -q "^\[Daemon\]" "$tmp/out"'

# ---- the holes of issue 40, point 5 ------------------------------------------------------
# A missing main file is an error (78), the default one as one named with
# --config; --allow-missing-config (what rerandd.service passes) makes it a
# warning: the built-in defaults and the drop-ins.
if [ ! -e /etc/rerand/rerand.conf ]; then
	"$RERANDD" --check-config --config-dir "$tmp/empty.d" >"$tmp/out" 2>&1
	rc=$?
	check "no /etc/rerand/rerand.conf: --check-config fails (exit $rc) naming it, not \"configuration OK\"" \
		eval '[ $rc = 78 ] && grep -qF "/etc/rerand/rerand.conf: cannot open: No such file or directory (rerandd --allow-missing-config" "$tmp/out" &&
		      ! grep -q "configuration OK" "$tmp/out"'
else
	skip "this machine has an /etc/rerand/rerand.conf: its absence is tested with --config below"
fi
chk "$tmp/missing.conf"
check "a missing --config file: exit 78" test "$rc" = 78
mkdir -p "$tmp/ok.d" "$tmp/bad.d"
printf '[Window w]\nStart=03:00\nLength=1h\n' >"$tmp/ok.d/50-window.conf"
"$RERANDD" --check-config --allow-missing-config --config "$tmp/missing.conf" --config-dir "$tmp/ok.d" >"$tmp/out" 2>&1
rc=$?
echo "# $(tr '\n' '|' <"$tmp/out")"
check "--allow-missing-config: a missing main file is a warning naming it, the drop-ins read (exit $rc)" \
	eval '[ $rc = 0 ] && grep -qF "warning: $tmp/missing.conf: does not exist: the built-in defaults stand in for it" "$tmp/out" &&
	      grep -q "configuration OK" "$tmp/out" && ! grep -q "no maintenance window" "$tmp/out"'
printf '[Policy]\nMaxLayoutAge=soon\n' >"$tmp/bad.d/50-bad.conf"
"$RERANDD" --check-config --allow-missing-config --config "$tmp/missing.conf" --config-dir "$tmp/bad.d" >"$tmp/out" 2>&1
rc=$?
check "--allow-missing-config still fails a bad drop-in (exit $rc)" \
	eval '[ $rc = 78 ] && grep -qF "50-bad.conf:2: MaxLayoutAge=soon" "$tmp/out"'

# A check across keys names the file and line of each key: Jitter= in a
# drop-in against MaxLayoutAge= of the main file.
mkdir -p "$tmp/x.d"
printf '[Policy]\nMaxLayoutAge=1d\n' >"$tmp/x.conf"
printf '# site policy\n[Policy]\nJitter=2d\n\n[Fleet]\nBackend=etcd\nEndpoints=127.0.0.1:2379\nTimeout=10s\n' >"$tmp/x.d/50-site.conf"
printf '[Fleet]\nLockTTL=20s\n' >"$tmp/x.d/60-ttl.conf"
"$RERANDD" --check-config --config "$tmp/x.conf" --config-dir "$tmp/x.d" >"$tmp/out" 2>&1
rc=$?
echo "# $(tr '\n' '|' <"$tmp/out")"
check "Jitter= (drop-in) vs MaxLayoutAge= (main): led by the drop-in's line, each key's file:line (exit $rc)" \
	eval '[ $rc = 78 ] && grep -qxF "rerandd: $tmp/x.d/50-site.conf:3: Jitter=2d is longer than MaxLayoutAge=1d (Jitter= at $tmp/x.d/50-site.conf:3, MaxLayoutAge= at $tmp/x.conf:2)" "$tmp/out"'
check "[Fleet] LockTTL= vs Timeout=, in two drop-ins: each key's file:line" \
	grep -qF "rerandd: $tmp/x.d/60-ttl.conf:2: [Fleet] LockTTL= must be longer than 3 times Timeout= (LockTTL= at $tmp/x.d/60-ttl.conf:2, Timeout= at $tmp/x.d/50-site.conf:8)" "$tmp/out"
printf '[Policy]\nMaxLayoutAge=30s\nJitter=10s\n' >"$tmp/y.conf"
chk "$tmp/y.conf"
check "a check of one key is led by that key's file:line" \
	grep -qF "y.conf:2: MaxLayoutAge= is shorter than 1min" "$tmp/out"

# nokaslr in [Stage] CommandLine= is refused like [Crash]'s; after "--" it is init's
printf '[Stage]\nCommandLine=root=/dev/vda1 quiet nokaslr\n' >"$tmp/nk.conf"
chk "$tmp/nk.conf"
check "[Stage] CommandLine= with nokaslr is refused with its file:line (exit $rc)" \
	eval '[ $rc = 78 ] && grep -qF "nk.conf:2: [Stage] CommandLine= has nokaslr: a kernel booted with it is not randomized" "$tmp/out"'
printf '[Stage]\nCommandLine=root=/dev/vda1 quiet -- nokaslr\n[Window w]\nStart=03:00\nLength=1h\n' >"$tmp/nk2.conf"
chk "$tmp/nk2.conf"
check "nokaslr after -- (init's argument) is not the kernel's (exit $rc)" test "$rc" = 0

# Nothing will ever plan a reboot by itself: --check-config says so (valid, exit 0)
printf '[Policy]\nMaxLayoutAge=1d\n' >"$tmp/nowin.conf"
chk "$tmp/nowin.conf"
check "no window and RebootOutsideWindows=no: --check-config warns that nothing reboots by itself (exit $rc)" \
	eval '[ $rc = 0 ] && grep -q "warning: no maintenance window is configured and RebootOutsideWindows=no: rerandd keeps an image staged but never reboots by itself" "$tmp/out"'
printf '[Window w]\nStart=03:00\nLength=1h\nEnabled=no\n' >"$tmp/offwin.conf"
chk "$tmp/offwin.conf"
check "its only window disabled: the same warning" grep -q "warning: no maintenance window is configured" "$tmp/out"
printf '[Window w]\nStart=03:00\nLength=1h\n' >"$tmp/win.conf"
chk "$tmp/win.conf"
check "a window: no such warning" eval '[ $rc = 0 ] && ! grep -q "warning" "$tmp/out"'
printf '[Policy]\nRebootOutsideWindows=yes\n' >"$tmp/outside.conf"
chk "$tmp/outside.conf"
check "RebootOutsideWindows=yes: no such warning" eval '[ $rc = 0 ] && ! grep -q "warning" "$tmp/out"'

# SignKey= with sbsign as the builder's user: warned (the builder could read
# the key through /proc/PID/fd of sbsign); a user of its own: no warning
win='[Window w]\nStart=03:00\nLength=1h\n'
printf "[Stage]\nSignKey=pkcs11:token=t\nSignCert=/etc/hostname\n$win" >"$tmp/sk1.conf"
chk "$tmp/sk1.conf"
check "SignKey= and no CheckUser=: --check-config warns that the builder could read the key (exit $rc)" \
	eval '[ $rc = 0 ] && grep -q "warning: SignKey= is set and sbsign runs as the image builder.s user" "$tmp/out"'
printf "[Daemon]\nImageUser=nobody\nCheckUser=nobody\n[Stage]\nSignKey=pkcs11:token=t\nSignCert=/etc/hostname\n$win" >"$tmp/sk2.conf"
chk "$tmp/sk2.conf"
check "SignKey= with CheckUser= naming ImageUser='s user: the same warning" grep -q "warning: SignKey= is set" "$tmp/out"
printf "[Daemon]\nCheckUser=nobody\n[Stage]\nSignKey=pkcs11:token=t\nSignCert=/etc/hostname\n$win" >"$tmp/sk3.conf"
chk "$tmp/sk3.conf"
check "SignKey= with a CheckUser= of its own: no warning (exit $rc)" eval '[ $rc = 0 ] && ! grep -q "warning" "$tmp/out"'

v=$("$top/build/rerand" --version | sed -n 's/^rerand //p')
check "rerandd --version says rerand's version ($v)" test "$("$RERANDD" --version)" = "rerandd $v"
echo "1..$n"
