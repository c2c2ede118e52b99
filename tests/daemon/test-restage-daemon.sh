#!/bin/bash
# One kernel, one hash (issue 24, point 5), as rerandd runs: real
# build/rerandd and build/rerand on real Debian kernels, kexec-tools
# REPLACED by a stand-in that only keeps a copy of the bytes it is handed
# (nothing is loaded on this machine), a RebootCommand= that only records
# that it was called, and [Paths] PackageLocks= on files of the test's own
# (dpkg's lock is SIMULATED by an fcntl lock this test holds, as dpkg takes
# it).  No port, no network.
#   wait: `rerand now` while "dpkg" holds its lock: the fresh stage before
#     the reboot waits and the journal says why; nothing is loaded and no
#     reboot is asked meanwhile.
#   upgrade: the staged kernel is replaced meanwhile (another real kernel
#     renamed over its path, as dpkg does); once the lock is free the
#     restage hashes the file again: the image loaded before the reboot is
#     the new kernel's, cached under the new kernel's hash.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/rerandd.sh"
rerandd_test restage cleanup
holder=
cleanup() {
	[ -n "$holder" ] && kill "$holder" 2>/dev/null
	rerandd_cleanup
}

rerandd_need_bins
rerandd_need_builder
command -v python3 >/dev/null || bail "python3 is needed to hold an fcntl lock as dpkg does"
rerandd_kernel
OLD=$KERNEL
NEW=$(ls "$kdir"/vmlinuz-6.1[2-9]*-cloud-amd64 2>/dev/null | tail -1)
[ -n "$NEW" ] || { skip "no second kernel (vmlinuz-6.1[2-9]*-cloud-amd64) in $kdir to upgrade to"; done_; }
new_rel=${NEW##*/vmlinuz-}
chmod 0755 "$tmp"

hd=$tmp/h
rerandd_dirs "$hd" bin pre post
rerandd_keeper_kexec "$hd/bin/kexec"
rerandd_no_reboot "$tmp/no-reboot"
KPATH=$hd/boot/vmlinuz-6.1.0-57-cloud-amd64
cp "$OLD" "$KPATH"
rerandd_fixtures "$hd" "BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro console=ttyS0"
rerandd_unlocked "$hd"
mkfifo "$hd/uevents"
rerandd_conf_local "$hd" "$hd/bin/kexec" "$hd/no-setup-data" <<EOF
Uevents=$hd/uevents
Lockdown=$hd/lockdown
SecureBoot=$hd/SecureBoot
PackageLocks=$hd/lock-frontend $hd/lock

[Stage]
Kernel=$KPATH
Initrd=none

[Crash]
Mode=off

$(rerandd_policy MaxLayoutAge=30d MaxFailures=3)

$(rerandd_reboot_by "$tmp/no-reboot $hd")
EOF
st() { rerandd_status "$hd" 2>&1; }
status_has() { st | grep -qF -- "$1"; }
loads() { { wc -l <"$hd/kexec.log"; } 2>/dev/null || echo 0; }
release_of() { "$R" inspect --json "$1" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["kernel_version"].split()[0])'; }
log=$hd/log

rerandd_up "$hd"
rerandd_wait_staged 240 "$hd"
old_sha=$(sha256sum "$KPATH" | cut -d' ' -f1)
check "staged $OLD's image under its hash ($(loads) load)" \
	bash -c "[ $(loads) = 1 ] && ls '$hd/state/images/' | grep -q '^$old_sha\..*\.img\$'"

# ---- wait: dpkg holds its lock (fcntl, as dpkg does; flock(1) would not be seen) ----
python3 -c '
import fcntl, sys, time
f = open(sys.argv[1], "w")
fcntl.lockf(f, fcntl.LOCK_EX)
open(sys.argv[2], "w").close()
time.sleep(900)' "$hd/lock-frontend" "$tmp/held" &
holder=$!
wait_for 10 test -e "$tmp/held" || bail "the lock holder did not take $hd/lock-frontend"
RERAND_CONTROL_SOCKET=$hd/run/control "$R" now >/dev/null 2>&1 || bail "rerand now failed"
check "wait: the journal says the reboot waits for the package manager, naming the lock" \
	wait_for 20 grep -qF "rerandomizing reboot: waiting while the package manager holds $hd/lock-frontend (at most 30 min)" "$log"
sleep 4
check "wait: nothing loaded and no reboot asked while the lock is held ($(loads) loads)" \
	bash -c "[ $(loads) = 1 ] && [ ! -e '$hd/reboot-called' ]"

# ---- upgrade: the kernel replaced meanwhile, by a rename over its path ----
cp "$NEW" "$KPATH.dpkg-new" && mv "$KPATH.dpkg-new" "$KPATH"
new_sha=$(sha256sum "$KPATH" | cut -d' ' -f1)
kill "$holder"; wait "$holder" 2>/dev/null; holder=
check "upgrade: once the lock is free the reboot goes on (its command is called)" \
	wait_for 300 test -e "$hd/reboot-called"
check "upgrade: the restage noticed the replaced kernel" \
	grep -qF "$KPATH changed since it was staged (sha256 ${old_sha:0:16}... now ${new_sha:0:16}...; a package upgrade?)" "$log"
img=$(ls "$hd/state/images/" | grep "^$new_sha\..*\.img\$" | head -1)
check "upgrade: an image is cached under the new kernel's hash ${new_sha:0:16} (${img:-none})" test -n "$img"
check "upgrade: ... and it is the new kernel's ($( [ -n "$img" ] && release_of "$hd/state/images/$img"))" \
	test "$( [ -n "$img" ] && release_of "$hd/state/images/$img")" = "$new_rel"
check "upgrade: every cached image is the kernel its hash names" bash -c "
	for f in '$hd'/state/images/*.img; do
		case \${f##*/} in
		$old_sha.*) [ \"\$('$R' inspect --json \"\$f\" | grep -o '\"kernel_version\":\"[^ ]*')\" = '\"kernel_version\":\"6.1.0-57-cloud-amd64' ] || exit 1 ;;
		$new_sha.*) [ \"\$('$R' inspect --json \"\$f\" | grep -o '\"kernel_version\":\"[^ ]*')\" = '\"kernel_version\":\"$new_rel' ] || exit 1 ;;
		*) exit 1 ;;
		esac
	done"
loaded_rel=$(release_of "$hd/loaded.1.img" 2>/dev/null)
check "upgrade: the image loaded before the reboot is the new kernel's ($(loads) loads, ${loaded_rel:-none})" \
	bash -c "[ $(loads) = 2 ] && [ '$loaded_rel' = '$new_rel' ] && [ -n '$img' ] &&
		[ \"\$(cmp -l '$hd/loaded.1.img' '$hd/state/images/$img' | wc -l)\" -le 32 ]"
done_
