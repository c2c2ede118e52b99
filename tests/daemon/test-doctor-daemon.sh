#!/bin/bash
# rerand doctor (issue 38, point 6) against a real build/rerandd instance
# (kexec-tools REPLACED by the keeper stand-in: nothing is loaded here) and
# FIXTURE machines: RERAND_DOCTOR_ROOT prefixes every file doctor reads
# (/sys, /proc/cmdline, /boot/config-RELEASE, /dev/watchdog0, /etc), since
# this host's own are not what is tested.  What a real Debian guest says is
# in tests/e2e (trixie's x_probe).
#   good: kexec, KASLR, a watchdog kept running, a crash region, rerandd
#     staged with a window: exit 0, no fail line.
#   bad: no kexec, nokaslr, no watchdog, lockdown with nothing signed,
#     no window: each a fail or warn line with its fix, exit 1.
#   kdump-tools enabled: the crash line says rerandd leaves it alone.
#   no rerandd: a fail line naming it, exit 1; --json parses, with result.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/rerandd.sh"
rerandd_test doctor

rerandd_need_bins
rerandd_need_builder
rerandd_pick_kernel
chmod 0755 "$tmp"
rerandd_prebuilt_image

# machine DIR [good|bad]: a fixture root
machine() {
	local m=$1
	mkdir -p "$m/sys/kernel/security" "$m/sys/module/watchdog/parameters" "$m/proc" "$m/boot" \
		"$m/dev" "$m/etc/systemd/system/multi-user.target.wants"
	echo systemd 257 >"$m/systemd-version"
	if [ "$2" = good ]; then
		echo 0 >"$m/sys/kernel/kexec_loaded"
		printf 'CONFIG_RELOCATABLE=y\nCONFIG_RANDOMIZE_BASE=y\nCONFIG_KEXEC_FILE=y\n' >"$m/boot/config-6.12.0-test"
		echo '[none] integrity confidentiality' >"$m/sys/kernel/security/lockdown"
		: >"$m/dev/watchdog0"
		echo 0 >"$m/sys/module/watchdog/parameters/stop_on_reboot"
		echo 268435456 >"$m/sys/kernel/kexec_crash_size"
		echo 'BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro crashkernel=256M' >"$m/proc/cmdline"
	else
		printf 'CONFIG_RELOCATABLE=y\n# CONFIG_RANDOMIZE_BASE is not set\n' >"$m/boot/config-6.12.0-test"
		echo 'none [integrity] confidentiality' >"$m/sys/kernel/security/lockdown"
		echo 0 >"$m/sys/kernel/kexec_crash_size"
		echo 'BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro nokaslr' >"$m/proc/cmdline"
	fi
}
# inst ID [POLICY...]: a rerandd instance that stages $KERNEL from its cache
inst() { local id=$1; shift; rerandd_simple_inst "$tmp/$id" "$KERNEL" "$@"; }
# doc ID ROOT ARGS...: rerand doctor against instance ID and fixture ROOT
doc() {
	local id=$1 root=$2
	shift 2
	RERAND_CONTROL_SOCKET=$tmp/$id/run/control RERAND_DOCTOR_ROOT=$root RERAND_DOCTOR_RELEASE=6.12.0-test \
		"$R" doctor "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}
has() { grep -qE "$1" "$tmp/out"; }

machine "$tmp/m-good" good
machine "$tmp/m-bad" bad
inst windowed RebootOutsideWindows=yes
inst nowindow
rerandd_up "$tmp/windowed" "$tmp/nowindow"
rerandd_wait_staged 60 "$tmp/windowed"
rerandd_wait_staged 60 "$tmp/nowindow"

# ---- good --------------------------------------------------------------------------------
doc windowed "$tmp/m-good"
echo "# good: $(tr '\n' '|' <"$tmp/out")"
check "good: exit 0 ($rc)" test "$rc" = 0
check "good: no fail and no warn line" bash -c "! grep -qE '^(fail|warn) ' '$tmp/out'"
check "good: kexec, kexec_file, randomize_base ok" \
	bash -c "grep -q '^ok    kexec ' '$tmp/out' && grep -q '^ok    kexec_file ' '$tmp/out' && grep -q '^ok    randomize_base ' '$tmp/out'"
check "good: the watchdog kept running across a kexec" has '^ok    watchdog +/dev/watchdog0 present, kept running'
check "good: the crash region (256 MiB) and rerandd's crash kernel" has '^ok    crash +crash region 256 MiB: rerandd loads'
check "good: rerandd running and staged" bash -c "grep -q '^ok    rerandd ' '$tmp/out' && grep -q '^ok    staged ' '$tmp/out'"
check "good: systemd 257's auto-kexec said" has '^info  auto-kexec +systemd 257: every reboot kexecs'
check "good: the last line says ok" bash -c "tail -1 '$tmp/out' | grep -qx 'doctor: ok'"

# ---- bad ---------------------------------------------------------------------------------
doc nowindow "$tmp/m-bad"
echo "# bad: $(tr '\n' '|' <"$tmp/out")"
check "bad: exit 1 ($rc)" test "$rc" = 1
check "bad: no kexec is a fail with its fix" \
	bash -c "grep -q '^fail  kexec  .*this kernel has no kexec' '$tmp/out' && grep -q 'fix: boot a kernel built with CONFIG_KEXEC' '$tmp/out'"
check "bad: no RANDOMIZE_BASE is a fail" has '^fail  randomize_base '
check "bad: nokaslr on this boot is a warning" has '^warn  nokaslr '
check "bad: no watchdog is a warning with the driver fix" \
	bash -c "grep -q '^warn  watchdog  *no /dev/watchdog0' '$tmp/out' && grep -q 'fix: load the machine.s watchdog driver' '$tmp/out'"
check "bad: lockdown with an unsigned image staged is a fail naming SignKey=" \
	bash -c "grep -q '^fail  lockdown  *lockdown integrity: only signed images load' '$tmp/out' && grep -q 'SignKey=' '$tmp/out'"
check "bad: no window is a warning" has '^warn  window +no maintenance window'
check "bad: no crash region is said" has '^info  crash +no crashkernel='
check "bad: the last line says FAIL" bash -c "tail -1 '$tmp/out' | grep -q '^doctor: FAIL'"

# ---- kdump-tools enabled -----------------------------------------------------------------
ln -s /lib/systemd/system/kdump-tools.service "$tmp/m-good/etc/systemd/system/multi-user.target.wants/kdump-tools.service"
doc windowed "$tmp/m-good"
check "kdump-tools: the crash line says the crash kernel is left to it" \
	has '^info  crash +crash region 256 MiB; kdump-tools is enabled: rerandd leaves'

# ---- no rerandd, and --json ----------------------------------------------------------------
doc gone "$tmp/m-good"
check "no rerandd: a fail line naming it, exit 1 ($rc)" \
	bash -c "[ $rc = 1 ] && grep -q '^fail  rerandd  *rerandd cannot be asked' '$tmp/out'"
doc gone "$tmp/m-good" --json
check "--json: one object, result fail, every check with result and message" \
	python3 -c "
import json,sys
o=json.load(open('$tmp/out'))
ok=o['result']=='fail' and len(o['checks'])>=8 and all(set(c)=={'check','result','message','fix'} and c['result'] in ('ok','info','warn','fail') for c in o['checks'])
sys.exit(not ok)"
doc windowed "$tmp/m-good" --json
check "--json: result ok for the good machine" \
	python3 -c "import json,sys; sys.exit(json.load(open('$tmp/out'))['result']!='ok')"
doc windowed "$tmp/m-good" --bogus
check "a bad option: exit 64 ($rc)" test "$rc" = 64
for m in good bad; do doc windowed "$tmp/m-$m"; cat "$tmp/out"; done >"$tmp/all"
check "no address-like number (0x...) in any output" bash -c "! grep -qi '0x[0-9a-f]' '$tmp/all'"

done_
