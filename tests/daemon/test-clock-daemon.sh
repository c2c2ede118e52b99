#!/bin/bash
# rerandd's durations on CLOCK_BOOTTIME, not the wall clock (issue 39, point
# 8): a rerandomizing reboot was accepted and the machine is going down
# (phase "rebooting", whose grace is 300 s before the reboot is declared
# failed and the fleet slot given back); the wall clock is stepped +300 s,
# then -300 s, as NTP or an operator's `date -s` may do during a slow
# shutdown.  The sequence must not be declared failed early, and the
# layout's age must not move with the wall clock.
#
# MOCKED, and only this: the wall clock, for rerandd alone, by
# tests/fleet/wallstep.c (LD_PRELOAD): stepping the real one would move the
# clock of this whole machine under every other test; wallstep moves
# CLOCK_REALTIME (time(), clock_gettime, gettimeofday) and leaves
# CLOCK_MONOTONIC, CLOCK_BOOTTIME and every sd-event timer alone, as a real
# step does.  kexec-tools is the recording stand-in of tests/lib/rerandd.sh
# (no kexec on this machine), and the RebootCommand= records its call and
# returns 0 like a `systemctl kexec` that was accepted: nothing reboots.
# Everything else is real: build/rerandd, build/rerand, a Debian kernel.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/rerandd.sh"
rerandd_test clock

WALLSTEP=$top/build/tests/fleet/wallstep.so
rerandd_need_bins "$WALLSTEP"
rerandd_need_builder
rerandd_pick_kernel
chmod 0755 "$tmp"
rerandd_prebuilt_image

hd=$tmp/h
mkdir -p "$hd/boot"
cp "$KERNEL" "$hd/boot/vmlinuz-test"
rerandd_simple_inst "$hd" "$hd/boot/vmlinuz-test"
# the reboot is accepted (exit 0) and never comes: rerandd waits its grace
printf '#!/bin/sh\necho REBOOT >>"$1/reboot-called"\nexit 0\n' >"$hd/no-reboot"
echo "+0" >"$hd/wallstep"
env LD_PRELOAD="$WALLSTEP" RERAND_WALLSTEP_FILE="$hd/wallstep" \
	"$RERANDD" --config "$hd/rerand.conf" --config-dir "$hd/conf.d" >>"$hd/log" 2>&1 &
rerandd_pids+=($!)
rerandd_wait_up "$hd"
rerandd_wait_staged 120 "$hd"
phase() { sed -n 's/^phase=//p' "$hd/state/state"; }
age() { rerandd_status "$hd" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["layout_age_seconds"])'; }
failed() { grep -q "the reboot was accepted but never happened" "$hd/log"; }

RERAND_CONTROL_SOCKET=$hd/run/control "$R" now >/dev/null || bail "rerand now failed"
wait_for 60 sh -c "[ -e '$hd/reboot-called' ] && grep -qx phase=rebooting '$hd/state/state'" ||
	bail "no accepted reboot within 60 s (phase $(phase)): $(tail -3 "$hd/log")"
age0=$(age)
check "the reboot was asked for once and rerandd waits for it (phase rebooting)" \
	eval '[ "$(grep -c REBOOT "$hd/reboot-called")" = 1 ] && [ "$(phase)" = rebooting ]'

# step STEP: the wall clock stepped by STEP for rerandd (read within 1 s),
# then 6 s of rerandd's 1 s evaluations under it
step() {
	echo "$1" >"$hd/wallstep"
	wait_for 10 grep -q "^rerandd [0-9]* $1\$" "$hd/wallstep.seen" || return 1
	sleep 6
}
step +300 || bail "rerandd never read the wall clock under the +300 s step (wallstep.seen: $(tr '\n' ' ' <"$hd/wallstep.seen"))"
check "wall clock +300 s during the shutdown grace: not declared failed (phase $(phase))" \
	eval '! failed && [ "$(phase)" = rebooting ]'
a=$(age)
check "wall clock +300 s: the layout's age did not jump ($age0 s before, $a s after)" \
	eval '[ "$a" -ge "$age0" ] && [ "$a" -lt $((age0 + 60)) ]'
step -300 || bail "rerandd never read the wall clock under the -300 s step"
check "wall clock -300 s: not declared failed either (phase $(phase))" \
	eval '! failed && [ "$(phase)" = rebooting ]'
a=$(age)
check "wall clock -300 s: the layout's age did not go back ($age0 s before, $a s after)" \
	eval '[ "$a" -ge "$age0" ] && [ "$a" -lt $((age0 + 60)) ]'
echo "+0" >"$hd/wallstep"
check "the reboot was asked for once only, and the slot-less sequence is still waiting" \
	eval '[ "$(grep -c REBOOT "$hd/reboot-called")" = 1 ] && [ "$(phase)" = rebooting ]'
done_
