#!/bin/bash
# rerandd checks its staging helper's plan (issue 39 point 2): real
# build/rerandd code on a real Debian kernel's prebuilt image, with ONE part
# MOCKED: the plan helper lies.  build/liar/rerandd is rerandd with
# daemon/stage_job.c built with RERAND_TEST_LYING_HELPER (Makefile; never
# installed): its plan helper reads <instance>/lie and, as a subverted
# helper could, names another image ("image PATH") or adds to the command
# line ("cmdline WORDS").  kexec-tools is REPLACED by a stand-in that only
# keeps what it is handed (nothing is loaded on this machine).
#   outside: the helper names a valid image outside rerandd's cache (a copy
#     of the real one): refused with the journal saying so, nothing loaded.
#   cmdline: the helper adds init=/bin/sh: refused, nothing loaded.
#   later: staged honestly first; then the helper lies and a reload makes
#     rerandd stage again: refused, and the image loaded before is the only
#     one ever loaded (never unloaded, nothing else loaded).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/rerandd.sh"
rerandd_test planguard
RERANDD=$top/build/liar/rerandd
[ -x "$RERANDD" ] || bail "$RERANDD is missing: make daemon-liar"
rerandd_need_bins
rerandd_need_builder
rerandd_kernel
rerandd_prebuilt_image
chmod 0755 "$tmp"

inst() {
	rerandd_simple_inst "$tmp/$1" "$KERNEL"
	[ -n "${2:-}" ] && printf '%s\n' "$2" >"$tmp/$1/lie"
	return 0
}
mkdir -p "$tmp/outside"
cp "$IMAGE" "$tmp/outside/$KEY.img"
inst outside "image $tmp/outside/$KEY.img"
inst cmdline "cmdline init=/bin/sh"
inst later
st() { rerandd_status "$tmp/$1" 2>&1; }
status_has() { st "$1" | grep -qF -- "$2"; }
loads() { { wc -l <"$tmp/$1/kexec.log"; } 2>/dev/null || echo 0; }
rerandd_up "$tmp/outside" "$tmp/cmdline" "$tmp/later"

wait_for 60 status_has outside "stage error:" || true
check "outside: the image outside the cache is refused, the journal says where ($(grep -o 'the staging helper.s plan.*' "$tmp/outside/log" | head -1 | cut -c1-160))" \
	grep -q "the staging helper's plan has the image \"$tmp/outside/$KEY.img\", but rerandd's own is \"$tmp/outside/state/images/$KEY.img\": refused, nothing staged" "$tmp/outside/log"
check "outside: the status says so" eval 'st outside | grep -q "stage error: .*refused, nothing staged"'
check "outside: nothing loaded ($(loads outside) loads)" test "$(loads outside)" = 0

wait_for 60 status_has cmdline "stage error:" || true
check "cmdline: another command line is refused, the journal names both" \
	grep -q "the staging helper's plan has the command line \".* init=/bin/sh\", but rerandd's own is \"[^\"]*\": refused, nothing staged" "$tmp/cmdline/log"
check "cmdline: nothing loaded ($(loads cmdline) loads)" test "$(loads cmdline)" = 0
check "cmdline: nothing staged" eval '! rerandd_staged "$tmp/cmdline"'

wait_for 60 rerandd_staged "$tmp/later" || true
check "later: staged honestly first ($(loads later) load)" eval 'rerandd_staged "$tmp/later" && [ "$(loads later)" = 1 ]'
first=$(cat "$tmp/later/kexec.log" 2>/dev/null)
printf 'cmdline init=/bin/sh\n' >"$tmp/later/lie"
printf '[Stage]\nCommandLine=root=/dev/vda1 ro console=ttyS0 quiet\n' >"$tmp/later/conf.d/50-cmdline.conf"
kill -HUP "$(cat "$tmp/later/pid")"
wait_for 60 grep -q "the staging helper's plan has the command line" "$tmp/later/log" || true
check "later: the lying restage is refused" \
	grep -q "the staging helper's plan has the command line \"[^\"]*quiet [^\"]* init=/bin/sh\", but rerandd's own is \"[^\"]*quiet [^\"]*[0-9]\": refused, nothing staged" "$tmp/later/log"
sleep 1
check "later: the image loaded before is still the only load, never unloaded ($(loads later) load)" \
	eval '[ "$(loads later)" = 1 ] && [ "$(cat "$tmp/later/kexec.log")" = "$first" ]'
check "later: no load ever had init=/bin/sh" eval '! grep -q "init=/bin/sh" "$tmp/later/kexec.log"'
done_
