#!/bin/bash
# A rerandomization never costs a node (issue 22, items 2, 5, 6), as rerandd
# runs: real build/rerandd and build/rerand on a real Debian kernel,
# kexec-tools REPLACED by a stand-in that only keeps a copy of the bytes it
# is handed (nothing is loaded on this machine), and a RebootCommand= that
# only records that it was called.
#   digest: the image rerandd built has its SHA-256 recorded; one flipped
#     byte in an LZ4 literal of a segment of the cached image is refused
#     before any load (the stand-in never sees it), named in the log, and
#     the image is rebuilt byte for byte; `rerand load --sha256` refuses a
#     flipped byte in a raw segment before kexec runs.
#   panic: the staged command line carries panic=10 and its mark, a reload
#     with PanicRebootSec=30 restages with panic=30, and a user's panic= wins.
#   held: a state file with a corrupt line keeps the operator's hold and the
#     stopped state; one whose hold line is unreadable is held; nothing is
#     loaded while held; `rerand now` reaches them (exit 0, rerandd's reply,
#     its log line) and reboots none.
#   full: a state directory on a full tmpfs: `rerand now` reaches rerandd
#     but does not reboot,
#     and `rerand status` says why.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/rerandd.sh"
rerandd_test comeback cleanup
mnt=$tmp/full/state
cleanup() {
	local p
	for p in "${rerandd_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 0.3
	mountpoint -q "$mnt" && umount "$mnt"
	rerandd_cleanup
}

rerandd_need_bins
rerandd_need_builder "rerandd builds as ImageUser= and the full-disk case mounts a tmpfs"
command -v python3 >/dev/null || bail "python3 is needed to find a segment's bytes in an image"
rerandd_kernel
chmod 0755 "$tmp"

rerandd_keeper_kexec "$tmp/fake-kexec"
rerandd_no_reboot "$tmp/no-reboot"

# flip IMAGE: one byte of the first segment's stored bytes flipped in place
# (LZ4: its first literal, which decodes as well as before; none: the middle
# of the segment).  Prints "OFFSET OLD NEW".
cat >"$tmp/flip.py" <<'EOF'
import struct, sys
path = sys.argv[1]
b = bytearray(open(path, 'rb').read())
loc = b.find(b'RRLOCATE')                      # struct rerand_locator, at pm + 0x10
pm = loc - 0x10
hdr = pm + struct.unpack_from('<I', b, loc + 8)[0]
assert b[hdr:hdr + 8] == b'RERANDIH', 'no image header'
codec, nseg = struct.unpack_from('<II', b, hdr + 16)
assert nseg >= 1
data_off, data_size = struct.unpack_from('<QQ', b, hdr + 128 + 24)   # seg[0]
p = pm + data_off
if codec == 1:                                 # LZ4 block: token, literal length, literals
    lit = b[p] >> 4
    q = p + 1
    if lit == 15:
        while True:
            lit += b[q]; q += 1
            if b[q - 1] != 255:
                break
    assert lit > 0, 'the first sequence has no literal'
    off = q
else:
    off = p + data_size // 2
old = b[off]
b[off] ^= 0x40
open(path, 'r+b').write(b)
print(off, old, b[off])
EOF

# inst ID [CMDLINE]: an instance staging $KERNEL from a /proc/cmdline fixture
inst() {
	local id=$1 hd=$tmp/$1
	rerandd_dirs "$hd" bin pre post
	cp "$tmp/fake-kexec" "$hd/bin/kexec"
	rerandd_fixtures "$hd" "${2:-BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro console=ttyS0}"
	rerandd_unlocked "$hd"
	mkfifo "$hd/uevents"
	rerandd_conf_local "$hd" "$hd/bin/kexec" "$hd/no-setup-data" <<EOF
Uevents=$hd/uevents
Lockdown=$hd/lockdown
SecureBoot=$hd/SecureBoot

[Stage]
Kernel=$KERNEL
Initrd=none

[Crash]
Mode=off

$(rerandd_policy MaxLayoutAge=30d MaxFailures=3)

$(rerandd_reboot_by "$tmp/no-reboot $hd")
EOF
}
st() { rerandd_status "$tmp/$1" 2>&1; }
status_has() { st "$1" | grep -qF -- "$2"; }
loads() { { wc -l <"$tmp/$1/kexec.log"; } 2>/dev/null || echo 0; }
last_append() { tail -1 "$tmp/$1/kexec.log" | grep -o -- '--append=.*'; }
# now ID: `rerand now` to that rerandd; its output in ID/now.out, status in ID/now.rc
now() {
	RERAND_CONTROL_SOCKET=$tmp/$1/run/control "$R" now >"$tmp/$1/now.out" 2>&1
	echo $? >"$tmp/$1/now.rc"
}
# now_reached ID REPLY: the request reached rerandd: `rerand now` exited 0
# with rerandd's REPLY, and rerandd's log has the request.
now_reached() {
	[ "$(cat "$tmp/$1/now.rc")" = 0 ] && grep -qxF -- "$2" "$tmp/$1/now.out" &&
		grep -qF "rerandomization requested over the control socket" "$tmp/$1/log"
}

# ---- digest and panic: rerandd builds, records, and refuses a flipped byte -----------------------
inst digest
rerandd_up "$tmp/digest"
rerandd_wait_staged 240 "$tmp/digest"
img=$(ls "$tmp"/digest/state/images/*.img)
rec=$img.sha256
good=$(sha256sum "$img" | cut -d' ' -f1)
cp "$img" "$tmp/good.img"
check "digest: the image built has its SHA-256 recorded beside it, in sha256sum's format" \
	bash -c "cd '$tmp/digest/state/images' && sha256sum --quiet -c '${rec##*/}'"
check "digest: the load was handed the image as built (byte for byte but the seed)" \
	test "$(cmp -l "$tmp/digest/loaded.0.img" "$img" | wc -l)" -le 32
check "panic: the staged command line carries panic=10 and its mark ($(last_append digest))" \
	test "$(last_append digest)" = "--append=watchdog.stop_on_reboot=0 root=/dev/vda1 ro console=ttyS0 panic=10 rerand.panic=10"

read -r off old new < <(python3 "$tmp/flip.py" "$img")
echo "# flipped byte $off of $img: $old -> $new (an LZ4 literal of segment 0)"
check "digest: the flip took, and the image still parses (no structural check can see it)" \
	bash -c "[ '$(sha256sum "$img" | cut -d' ' -f1)' != '$good' ] && '$R' inspect '$img' >/dev/null"
# reload DROPIN TEXT: a reload that changes what is staged; the next stage
# looks at the cache again.  Waits for that stage's load.
reload() {
	local before
	before=$(loads digest)
	printf "$2" >"$tmp/digest/conf.d/$1"
	kill -HUP "$(cat "$tmp/digest/pid")"
	wait_for 240 bash -c "[ \$(wc -l <'$tmp/digest/kexec.log') -gt $before ]" || true
}
# the same command line, but now from CommandLine=
reload 50-cmdline.conf '[Stage]\nCommandLine=root=/dev/vda1 ro console=ttyS0\n'
log=$tmp/digest/log
check "digest: the flipped image is refused before loading, the log names it and says why" \
	grep -qF "$img: its SHA-256 is" "$log"
check "digest: ... and says it is rebuilt" grep -qF "recorded when it was built: the file changed since (a flipped bit on disk, or tampering); not loaded: rebuilding it" "$log"
check "digest: the image was built again ($(grep -c "building $img" "$log") builds)" \
	test "$(grep -c "building $img" "$log")" = 2
check "digest: no load ever got the flipped byte ($(loads digest) loads)" \
	bash -c "for f in '$tmp'/digest/loaded.*.img; do [ \"\$(od -An -tu1 -j $off -N1 \"\$f\" | tr -d ' ')\" = $old ] || exit 1; done"
check "digest: the rebuilt image is the one first built, and matches its record" \
	bash -c "[ '$(sha256sum "$img" | cut -d' ' -f1)' = '$good' ] && cd '$tmp/digest/state/images' && sha256sum --quiet -c '${rec##*/}'"
check "digest: ... and loaded ($(loads digest) loads)" test "$(loads digest)" = 2
reload 50-panic.conf '[Comeback]\nPanicRebootSec=30\n'
check "panic: PanicRebootSec=30 after a reload: restaged with panic=30 ($(last_append digest))" \
	test "$(last_append digest)" = "--append=watchdog.stop_on_reboot=0 root=/dev/vda1 ro console=ttyS0 panic=30 rerand.panic=30"

# rerand load --sha256 itself: a raw segment (--codec none), a flipped byte
"$R" image "$KERNEL" --codec none -o "$tmp/raw.img" >/dev/null 2>&1 || bail "rerand image --codec none failed"
raw_sha=$(sha256sum "$tmp/raw.img" | cut -d' ' -f1)
read -r roff rold rnew < <(python3 "$tmp/flip.py" "$tmp/raw.img")
mkdir -p "$tmp/cli/bin"
cp "$tmp/fake-kexec" "$tmp/cli/bin/kexec"
export RERAND_LOCKDOWN_FILE=$tmp/digest/lockdown RERAND_SECUREBOOT_FILE=$tmp/digest/SecureBoot
out=$("$R" load "$tmp/raw.img" --append=x --kexec="$tmp/cli/bin/kexec" --sha256="$raw_sha" 2>&1); rc=$?
check "load --sha256: a flipped byte in a raw segment (offset $roff) is refused before kexec runs (exit $rc)" \
	bash -c "[ $rc -ne 0 ] && [ ! -e '$tmp/cli/kexec.log' ]"
check "load --sha256: the message names the file and the problem: $out" \
	grep -qF "$tmp/raw.img: its SHA-256 is" <<<"$out"
out=$("$R" load "$tmp/raw.img" --append=x --kexec="$tmp/cli/bin/kexec" 2>&1); rc=$?
check "load without --sha256 loads the same file (exit $rc): structure alone cannot tell" \
	bash -c "[ $rc -eq 0 ] && [ -e '$tmp/cli/kexec.log' ]"
unset RERAND_LOCKDOWN_FILE RERAND_SECUREBOOT_FILE

# ---- held: a damaged state file fails closed --------------------------------------------------
# state ID HOLD_LINE: a state file as rerandd writes it, 3 failures in a row
# (MaxFailures=3: stopped), a corrupt line in the middle, HOLD_LINE for hold=
state() {
	local hd=$tmp/$1
	{
		printf 'version=1\nboot_id=%s\nattempt=0\nattempt_boot_id=\nattempt_time=0\n' "$(cat "$hd/boot_id")"
		printf 'attempt_reason=none\nfailures=3\nsuccesses=4\ntotal_failures=3\nweak_boots=0\n'
		printf 'last_success=0\nlast_failure=0\nlast_reboot=0\nlast_verify=\001\377garbage\n'
		printf 'last_verify_time=0\njitter=0\n%s\ntrigger_oops=0\n' "$2"
		printf 'trigger_new_kernel=0\ntrigger_now=0\ntaint_handled=0\nstaged_sha256=\nstaged_time=0\n'
		printf 'fleet_held=0\nfleet_token=\nfleet_keep=0\nconfirm_pending=0\ncrash_boots=0\nlast_crash_boot=0\ncrash_boot_id=\nphase=idle\n'
	} >"$hd/state/state"
	# the image digest built, with its record: staged without a build
	cp "$img" "$img.sha256" "$hd/state/images/"
}
for id in held heldbad heldcut userpanic; do inst $id "BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro panic=5"; mkdir -p "$tmp/$id/state/images"; done
state held "hold=1"
state heldbad $'ho\377ld 0'
# heldcut: this version's file (version=2, ends with end=SHA256) cut cleanly
# after its boot_id line (issue 39): the hold, failures and attempt lines gone
state heldcut "hold=0"
printf 'version=2\nboot_id=%s\n' "$(cat "$tmp/heldcut/boot_id")" >"$tmp/heldcut/state/state"
cp "$img" "$img.sha256" "$tmp/userpanic/state/images/"
rerandd_up "$tmp/held" "$tmp/heldbad" "$tmp/heldcut" "$tmp/userpanic"
for id in held heldbad heldcut; do wait_for 60 status_has $id "staged:            no (an operator hold" || true; done
rerandd_wait_staged 60 "$tmp/userpanic"
# issue 38: a held machine has nothing of rerand's loaded
check "held: nothing built or loaded while held ($(loads held) kexec calls)" \
	eval 'status_has held "staged:            no (an operator hold is in place" && ! grep -q building "$tmp/held/log" && [ "$(loads held)" = 0 ]'
check "panic: a user's panic=5 wins, no panic= added ($(last_append userpanic))" \
	test "$(last_append userpanic)" = "--append=watchdog.stop_on_reboot=0 root=/dev/vda1 ro panic=5"
check "held: the log names the file and the bad line" \
	grep -qF "$tmp/held/state/state: damaged state file: 1 problem (the first, line 14: last_verify: a value that cannot be read" "$tmp/held/log"
check "held: a corrupt line keeps the operator's hold" status_has held "hold:              yes"
check "held: ... and the stopped state (3 failures in a row)" status_has held "failures in a row: 3 of 3  ALERT: stopped"
check "heldbad: the hold line unreadable: held for it (damaged-state)" \
	status_has heldbad "hold:              yes (damaged-state"
check "heldbad: the log says HELD" grep -qF "HELD: the hold, failure or attempt lines may be lost" "$tmp/heldbad/log"
check "heldcut: a file cut after boot_id is held, the file and the cut in the hold's text" \
	status_has heldcut "hold:              yes (damaged-state: the state file could not be read whole; check the journal, then \`rerand unhold\`): state file $tmp/heldcut/state/state damaged (cut short: no end= line)"
# 1000000 (STATE_FAILURES_LOST), one more for the confirmation assumed pending
# and counted failed (confirm.c)
heldcut_failures=$(st heldcut | sed -n 's/^failures in a row: \([0-9]*\) of 3  ALERT: stopped.*/\1/p')
check "heldcut: the failures in a row lost: counted past MaxFailures, stopped (${heldcut_failures:-none})" \
	test "${heldcut_failures:-0}" -ge 1000000
check "heldcut: logged once, the worst case named" \
	eval '[ "$(grep -c "state/state: damaged state file:" "$tmp/heldcut/log")" -eq 1 ] &&
	      grep -qF "taken at worst: failures 1000000 (stopped), attempt pending, last boot unconfirmed, fleet slot kept" "$tmp/heldcut/log"'
check "held: the damaged file is kept as state.corrupt, the state rewritten with the hold" \
	bash -c "grep -aq garbage '$tmp/held/state/state.corrupt' && grep -qx hold=1 '$tmp/held/state/state' &&
		 grep -qx hold_reason=operator '$tmp/held/state/state' && grep -qx failures=3 '$tmp/held/state/state'"
for id in held heldbad heldcut; do now $id; done
# The request must reach rerandd, or "reboots none" proves nothing.
for id in held heldbad heldcut; do
	check "$id: rerand now reached rerandd (exit $(cat "$tmp/$id/now.rc"), '$(head -1 "$tmp/$id/now.out")'; logged)" \
		now_reached $id "requested, but a hold is in place"
done
sleep 5
check "held, heldbad, heldcut: rerand now reboots none" \
	bash -c "[ ! -e '$tmp/held/reboot-called' ] && [ ! -e '$tmp/heldbad/reboot-called' ] &&
		 [ ! -e '$tmp/heldcut/reboot-called' ]"

# ---- full: no room for the state, no reboot ---------------------------------------------------
inst full
size=$(( ($(stat -c %s "$img") / 1048576 + 2) * 1024 ))k
mount -t tmpfs -o "size=$size,mode=0700" tmpfs "$mnt" || bail "cannot mount a tmpfs on $mnt"
mkdir -p "$mnt/images"
cp "$img" "$img.sha256" "$mnt/images/"
rerandd_up "$tmp/full"
rerandd_wait_staged 60 "$tmp/full"
dd if=/dev/zero of="$mnt/fill" bs=4k 2>/dev/null
echo "# $mnt: $(df -h --output=avail "$mnt" | tail -1 | tr -d ' ') free"
now full
check "full: rerand now reached rerandd (exit $(cat "$tmp/full/now.rc"), '$(head -1 "$tmp/full/now.out")'; logged)" \
	now_reached full requested
wait_for 20 grep -q "reboot cancelled" "$tmp/full/log" || true
sleep 3
check "full: rerand now does not reboot with the state directory full" test ! -e "$tmp/full/reboot-called"
check "full: the journal says the reboot was cancelled, and why" \
	grep -qE "reboot cancelled: the state file cannot be written \(.*No space left on device.*\), so the next boot could not be counted; not rebooting now" "$tmp/full/log"
check "full: rerand status shows it" eval 'st full | grep -q "^reboot error:      reboot cancelled: .*No space left on device"'
done_
