#!/bin/bash
# A staged image only while a rerandomization is wanted (issue 38, point 1),
# as rerandd runs: real build/rerandd and build/rerand on a real Debian
# kernel, kexec-tools REPLACED by a stand-in that logs each call and loads
# nothing (no kexec on this machine), a RebootCommand= that only records
# that it was called.  What the real kernel does with `kexec -s -u` is
# checked in the Debian guests (tests/e2e/check-systemd.sh).
#   staged: the image is loaded and <state>/loaded holds this boot's id.
#   hold: `rerand hold` unloads it (`kexec -s -u`), status says why, the
#     marker goes; `rerand unhold` stages again.
#   removed: the staged kernel file deleted: unloaded at once (inotify),
#     status says the kernel is gone; put back: staged again.
#   stopped: MaxFailures= reached (a state file with 3 failures in a row):
#     nothing loaded, status says why; `rerand now` stages (and reboots).
#   stop: SIGTERM outside a shutdown (no systemd here: not "stopping")
#     unloads before rerandd exits; a restarted rerandd that finds the
#     marker of this boot while held unloads what an earlier one left.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/rerandd.sh"
rerandd_test lifecycle

rerandd_need_bins
rerandd_need_builder
rerandd_pick_kernel
chmod 0755 "$tmp"
rerandd_prebuilt_image

# inst ID: an instance whose [Stage] Kernel= is its own copy of $KERNEL
inst() {
	mkdir -p "$tmp/$1/boot"
	cp "$KERNEL" "$tmp/$1/boot/vmlinuz-test"
	rerandd_simple_inst "$tmp/$1" "$tmp/$1/boot/vmlinuz-test" MaxFailures=3
}
st() { rerandd_status "$tmp/$1" 2>&1; }
status_has() { st "$1" | grep -qF -- "$2"; }
# count ID GREP-ARGS...: lines of the instance's kexec.log that match
count() { local id=$1 n; shift; n=$(grep -c "$@" "$tmp/$id/kexec.log" 2>/dev/null); echo "${n:-0}"; }
loads() { count "$1" -- '--append='; }
unloads() { count "$1" -x -- '-s -u'; }
marked() { [ "$(cat "$tmp/$1/state/loaded" 2>/dev/null)" = "$(cat "$tmp/$1/boot_id")" ]; }
ctl() { local id=$1; shift; RERAND_CONTROL_SOCKET=$tmp/$id/run/control "$R" "$@"; }
# state_edit FILE SED-ARGS...: edit a state file as an operator's tool
# would, its end= checksum (the SHA-256 of every byte before that line)
# made again, so the file is whole, not damaged
state_edit() {
	local f=$1
	shift
	sed -i "$@" -e '/^end=/d' "$f"
	printf 'end=%s\n' "$(sha256sum <"$f" | cut -d' ' -f1)" >>"$f"
}

# ---- staged, hold, release ---------------------------------------------------------------
inst a
rerandd_up "$tmp/a"
rerandd_wait_staged 60 "$tmp/a"
check "staged: one load, no unload ($(loads a) loads, $(unloads a) unloads)" \
	bash -c "[ $(loads a) = 1 ] && [ $(unloads a) = 0 ]"
check "staged: <state>/loaded holds this boot's id and nothing else" \
	bash -c "marked() { [ \"\$(cat '$tmp/a/state/loaded')\" = \"\$(cat '$tmp/a/boot_id')\" ]; }; marked &&
		 [ \$(wc -l <'$tmp/a/state/loaded') = 1 ]"
out=$(ctl a hold --reason "change freeze" 2>&1)
check "hold: accepted ($out)" grep -q held <<<"$out"
wait_for 30 bash -c "[ \$(grep -cx -- '-s -u' '$tmp/a/kexec.log') -ge 1 ]" || true
check "hold: the image is unloaded with kexec -s -u ($(unloads a) unloads)" test "$(unloads a)" = 1
wait_for 10 status_has a "staged:            no (an operator hold" || true
check "hold: status says nothing is staged and why" status_has a "staged:            no (an operator hold is in place"
check "hold: --json says why (unstaged_why)" \
	bash -c "ctl() { RERAND_CONTROL_SOCKET='$tmp/a/run/control' '$R' \"\$@\"; }; ctl status --json |
		 python3 -c 'import json,sys; v=json.load(sys.stdin); sys.exit(not (v[\"staged\"] is False and \"hold\" in v[\"unstaged_why\"]))'"
check "hold: the journal says it" grep -q 'unloaded the staged image: an operator hold is in place' "$tmp/a/log"
check "hold: the marker is gone" test ! -e "$tmp/a/state/loaded"
sleep 3
check "hold: nothing is staged again while held ($(loads a) loads)" test "$(loads a)" = 1
ctl a release >/dev/null 2>&1
wait_for 60 rerandd_staged "$tmp/a" || true
check "release: staged again ($(loads a) loads), the marker back" \
	bash -c "[ $(loads a) = 2 ] && [ \"\$(cat '$tmp/a/state/loaded' 2>/dev/null)\" = \"\$(cat '$tmp/a/boot_id')\" ]"

# ---- removed: the staged kernel file goes away ---------------------------------------------
mv "$tmp/a/boot/vmlinuz-test" "$tmp/vmlinuz-away"
wait_for 30 bash -c "[ \$(grep -cx -- '-s -u' '$tmp/a/kexec.log') -ge 2 ]" || true
check "removed: unloaded at once ($(unloads a) unloads)" test "$(unloads a)" = 2
check "removed: the journal names the kernel" \
	grep -qF "unloaded the staged image: the staged kernel $tmp/a/boot/vmlinuz-test is gone" "$tmp/a/log"
wait_for 10 bash -c "! rerandd_status '$tmp/a' 2>/dev/null | grep -q '^staged: *yes'" 2>/dev/null || true
check "removed: status says nothing is staged" bash -c "! grep -q '^staged: *yes' <<<\"\$(RERAND_CONTROL_SOCKET='$tmp/a/run/control' '$R' status 2>&1)\""
check "removed: no new-kernel trigger from a removal" bash -c "! grep -q 'new-kernel' <<<\"\$(RERAND_CONTROL_SOCKET='$tmp/a/run/control' '$R' status 2>&1)\""
mv "$tmp/vmlinuz-away" "$tmp/a/boot/vmlinuz-test"
wait_for 60 rerandd_staged "$tmp/a" || true
check "removed: put back, staged again ($(loads a) loads)" \
	bash -c "[ $(loads a) = 3 ] && grep -q '^staged: *yes' <<<\"\$(RERAND_CONTROL_SOCKET='$tmp/a/run/control' '$R' status 2>&1)\""

# ---- stop: SIGTERM outside a shutdown unloads before the exit ------------------------------
before=$(unloads a)
kill -TERM "$(cat "$tmp/a/pid")"
wait_for 30 bash -c "! kill -0 $(cat "$tmp/a/pid") 2>/dev/null" || true
check "stop: rerandd exited" bash -c "! kill -0 $(cat "$tmp/a/pid") 2>/dev/null"
check "stop: it unloaded first ($before -> $(unloads a) unloads), the marker gone" \
	bash -c "[ $(unloads a) = $((before + 1)) ] && [ ! -e '$tmp/a/state/loaded' ]"
check "stop: the journal says why" grep -q 'unloaded the staged image: rerandd stopped while the system keeps running' "$tmp/a/log"

# ---- leftover: a killed rerandd's image, found by the next one while held -------------------
rerandd_up "$tmp/a"
rerandd_wait_staged 60 "$tmp/a"
ctl a hold >/dev/null 2>&1
wait_for 30 bash -c "[ ! -e '$tmp/a/state/loaded' ]" || true
ctl a release >/dev/null 2>&1
wait_for 60 rerandd_staged "$tmp/a" || true
kill -KILL "$(cat "$tmp/a/pid")"
wait_for 10 bash -c "! kill -0 $(cat "$tmp/a/pid") 2>/dev/null" || true
check "leftover: SIGKILL leaves the marker" marked a
# held on disk before the restart (the state file as a killed rerandd left it, hold=1)
state_edit "$tmp/a/state/state" -e 's/^hold=0$/hold=1/'
check "leftover: the edited state file is whole (end= made again)" grep -q '^end=' "$tmp/a/state/state"
before=$(unloads a)
rerandd_up "$tmp/a"
wait_for 30 bash -c "[ \$(grep -cx -- '-s -u' '$tmp/a/kexec.log') -gt $before ]" || true
check "leftover: the restarted rerandd, held, unloads what the killed one left" \
	bash -c "[ $(unloads a) = $((before + 1)) ] && [ ! -e '$tmp/a/state/loaded' ]"

# ---- stopped: MaxFailures= reached ---------------------------------------------------------
inst b
rerandd_up "$tmp/b"
rerandd_wait_staged 60 "$tmp/b"
kill -TERM "$(cat "$tmp/b/pid")"
wait_for 30 bash -c "! kill -0 $(cat "$tmp/b/pid") 2>/dev/null" || true
state_edit "$tmp/b/state/state" -e 's/^failures=.*/failures=3/' -e 's/^total_failures=.*/total_failures=3/'
before=$(loads b)
rerandd_up "$tmp/b"
wait_for 10 status_has b "staged:            no (stopped after 3 failed" || true
check "stopped: nothing staged, status says why" status_has b "staged:            no (stopped after 3 failed rerandomizations in a row (MaxFailures=3"
sleep 3
check "stopped: no load after the restart ($before -> $(loads b) loads)" test "$(loads b)" = "$before"
ctl b now >/dev/null 2>&1
wait_for 60 test -e "$tmp/b/reboot-called" || true
# the stage, then the sequence's fresh stage just before the reboot
check "stopped: rerand now stages again and asks for the reboot ($before -> $(loads b) loads)" \
	bash -c "[ $(loads b) -gt $before ] && [ -e '$tmp/b/reboot-called' ]"

# ---- slow start: ConfirmTimeoutSec= counts from rerandd's start ----------------------------
# A rerandomized boot (the stage's record in SetupData=, the attempt of the
# boot before in the state file) whose kernel started 700 s before rerandd,
# ConfirmTimeoutSec=10min, a post-boot check that takes 3 s: counted from
# the kernel's start the deadline had passed and a healthy boot failed.
hd=$tmp/slow
inst slow
rerandd_fixtures "$hd" "BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro console=ttyS0" 700
rerandd_randomized_sd "$hd/sd"
sed -i "s|^SetupData=.*|SetupData=$hd/sd|" "$hd/rerand.conf"
printf '\n[Comeback]\nConfirmTimeoutSec=10min\n' >>"$hd/rerand.conf"
printf '#!/bin/sh\nsleep 3\n' >"$hd/post/10-slow-check"
chmod 0755 "$hd/post/10-slow-check"
prev=0123456789abcdef0123456789abcdef
{
	printf 'version=1\nboot_id=%s\nattempt=1\nattempt_boot_id=%s\nattempt_time=%s\n' "$prev" "$prev" "$(($(date +%s) - 800))"
	printf 'attempt_reason=layout-age\nfailures=0\nsuccesses=0\ntotal_failures=0\nweak_boots=0\nhold=0\n'
	printf 'fleet_keep=0\nconfirm_pending=0\n'
	printf 'last_success=0\nlast_failure=0\nlast_reboot=%s\nphase=rebooting\n' "$(($(date +%s) - 800))"
} >"$hd/state/state"
rerandd_up "$hd"
wait_for 30 grep -q 'rerandomized boot: confirming within' "$hd/log" || true
line=$(grep -o 'rerandomized boot: confirming within [0-9]*s (rerandd started [0-9]*s into the boot)' "$hd/log")
echo "# slow: $line"
check "slow start: the deadline counts from rerandd's start (${line#*within })" \
	bash -c "n=\$(sed -n 's/.*within \([0-9]*\)s.*/\1/p' <<<'$line'); [ -n \"\$n\" ] && [ \"\$n\" -ge 400 ] && [ \"\$n\" -le 600 ]"
wait_for 30 grep -q 'confirmed' "$hd/log" || true
check "slow start: the healthy boot is confirmed, not failed" \
	bash -c "grep -q 'confirmed' '$hd/log' && ! grep -q 'never-confirmed\\|not confirmed within' '$hd/log'"

done_
