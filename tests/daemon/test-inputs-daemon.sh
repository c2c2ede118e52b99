#!/bin/bash
# A command line the stage cannot boot, as rerandd stages it (issue 24,
# point 4): real build/rerandd and build/rerand on a real Debian kernel,
# kexec-tools REPLACED by a stand-in that records any call (nothing is loaded
# on this machine), a RebootCommand= that only records that it was called.
# No port, no network.  The command line (ProcCmdline=) has 5 memmap=
# regions: `rerand load` refuses it before kexec runs, and rerandd's status
# shows that refusal as the staging error; nothing is loaded.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/rerandd.sh"
rerandd_test inputs

rerandd_need_bins
rerandd_need_builder
rerandd_kernel
chmod 0755 "$tmp"

hd=$tmp/h
rerandd_dirs "$hd" bin
cat >"$hd/bin/kexec" <<'EOF'
#!/bin/sh
# STAND-IN for kexec-tools (test-inputs-daemon.sh): records the call, loads nothing.
[ "$1" = --version ] && { echo "kexec-tools 2.0.25"; exit 0; }
printf '%s\n' "$*" >>"$(dirname "$(dirname "$0")")/kexec.log"
exit 0
EOF
chmod 0755 "$hd/bin/kexec"
rerandd_no_reboot "$tmp/no-reboot"
cp "$KERNEL" "$hd/boot/vmlinuz-6.1.0-57-cloud-amd64"
rerandd_fixtures "$hd" 'BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro memmap=1M$0x40000000 memmap=1M$0x50000000 memmap=1M$0x60000000,1M$0x70000000 memmap=1M$0x80000000'
rerandd_unlocked "$hd"
rerandd_conf "$hd" "$hd/bin/kexec" "$hd/no-setup-data" <<EOF
KexecCrashSize=$hd/no-crash-size
KexecCrashLoaded=$hd/no-crash-loaded
ProcVmcore=$hd/no-vmcore
Lockdown=$hd/lockdown
SecureBoot=$hd/SecureBoot

[Stage]
Kernel=$hd/boot/vmlinuz-6.1.0-57-cloud-amd64
Initrd=none

[Crash]
Mode=off

$(rerandd_policy)

$(rerandd_reboot_by "$tmp/no-reboot $hd")
EOF
stage_error() {
	rerandd_status "$hd" --json 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin).get("stage_error", ""))' 2>/dev/null
}
err_has() { stage_error | grep -qF -- "$1"; }

rerandd_up "$hd"
check "rerandd's status: staging failed with rerand load's reason" \
	wait_for 240 err_has "the command line (--append) has 5 memmap= regions: the stage honours at most 4"
check "nothing was loaded, no reboot asked" bash -c "[ ! -e '$hd/kexec.log' ] && [ ! -e '$hd/reboot-called' ]"
echo "# stage_error: $(stage_error)"
done_
