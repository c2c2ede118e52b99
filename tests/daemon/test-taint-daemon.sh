#!/bin/bash
# Without /dev/kmsg, rerandd sees an oops only in the taint bits, which it
# reads when it looks at the policy (issue 28 review).  Idle, rerandd now
# sleeps up to CheckInterval= (5min by default) when nothing is due, so
# without a watched kmsg it must still look every minute, as it did when the
# default was 60 s.  Real build/rerandd and build/rerand on a real Debian
# kernel; kexec-tools REPLACED by a stand-in that only keeps a copy of what
# it is handed (nothing is loaded on this machine), a RebootCommand= that
# only records that it was called, and [Paths] Kmsg= a path that does not
# exist.  CheckInterval=1h: before the fix, rerandd idled an hour before it
# read the taint file again.  No port, no network.  About 1 to 2 minutes.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/rerandd.sh"
rerandd_test taint

rerandd_need_bins
rerandd_need_builder
rerandd_kernel

hd=$tmp/h
rerandd_dirs "$hd" bin pre post
rerandd_keeper_kexec "$hd/bin/kexec"
rerandd_no_reboot "$tmp/no-reboot"
cp "$KERNEL" "$hd/boot/vmlinuz-6.1.0-57-cloud-amd64"
rerandd_fixtures "$hd" "BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro console=ttyS0"
rerandd_unlocked "$hd"
rerandd_conf_local "$hd" "$hd/bin/kexec" "$hd/no-setup-data" <<EOF
Lockdown=$hd/lockdown
SecureBoot=$hd/SecureBoot

[Stage]
Kernel=$hd/boot/vmlinuz-6.1.0-57-cloud-amd64
Initrd=none

[Crash]
Mode=off

$(rerandd_policy MaxLayoutAge=30d OnOops=immediate)

$(rerandd_reboot_by "$tmp/no-reboot $hd")
EOF
printf '[Daemon]\nCheckInterval=1h\n' >"$hd/conf.d/50-tick.conf"
log=$hd/log

rerandd_up "$hd"
rerandd_wait_staged 240 "$hd"
check "no kmsg: rerandd says oopses are seen through taint bits only" \
	grep -q "no-kmsg: .*oopses are seen through taint bits only" "$log"
# Idle now, staged, nothing due for 30 days: the taint bit of an oops.
sleep 2
t0=$SECONDS
echo 128 >"$hd/tainted"
if wait_for 90 grep -q "kernel taint shows a new oops" "$log"; then
	check "an oops in the taint bits is seen within 90 s with CheckInterval=1h (after $((SECONDS - t0)) s)" true
else
	check "an oops in the taint bits is seen within 90 s with CheckInterval=1h (not in 90 s)" false
fi
done_
