#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# A rerandomization never costs a node: rerandd in a QEMU TCG guest (busybox
# init, the rerandd guest of check-daemon.sh) with a real i6300esb watchdog
# (the kernel's own watchdog.ko and i6300esb.ko) and -watchdog-action
# reset, WITHOUT -no-reboot.  rerandd arms the watchdog before its kexec
# (KexecWatchdogSec=180s); the rerandomized kernel then fails:
#   hang  (short, long): PID 1 spins before the driver loads, nothing feeds
#         the watchdog: it resets the machine, the firmware boots the
#         original kernel, rerandd names the cause "watchdog";
#   panic (long): sysrq c with no crash kernel; panic=10 reboots, the
#         firmware boots, rerandd names "panic" from ramoops (memmap=);
#   check (long): the new boot's post-boot check fails: its rerandd
#         (feeding the watchdog meanwhile) unloads the staged kernel and
#         reboots through the firmware; "check-failed" names the hook.
# Boot 0's command line carries watchdog.stop_on_reboot=0 (the kernel would
# stop the watchdog at the kexec otherwise) and, for the panic, panic=10
# (RRC_PANIC_ARG: rerandd's own PanicRebootSec= makes it redundant; set
# RRC_PANIC_ARG= to test that).  RRC_OLD_CONFIG=1 leaves [Comeback] out,
# for an older rerandd: the hang then never comes back (not ok).
# Prints TAP lines, with the plan first (run-check.sh holds the suite to it:
# a run that stops early cannot drop a case): 11 lines for a hang or a
# panic, 13 for a check (rrc_plan).
set -u
. "$(dirname "$0")/lib-daemon.sh"
. "$(dirname "$0")/lib-comeback.sh"

what=${1:-short}
case "$what" in short|long) ;; *) echo "usage: $0 short|long" >&2; exit 2 ;; esac
# RRC_KINDS: a subset, for a run by hand
kinds=${RRC_KINDS:-$([ "$what" = long ] && echo "hang panic check" || echo hang)}

# rrc_plan KIND: the TAP lines run KIND prints when it gets to the end: 10
# for every kind, the boot status line but for a panic, the check's two
# lines, the panic's pstore line.  An early return prints one not ok.
rrc_plan() {
	case $1 in
	hang) echo 11 ;;
	panic) echo 11 ;;
	check) echo 13 ;;
	*) echo 1 ;;   # run says not ok for a kind it does not know
	esac
}
plan=0
for k in $kinds; do plan=$((plan + $(rrc_plan "$k"))); done
echo "1..$plan"

e2e_kernels "e2e comeback" || exit 0
for tool in qemu-system-x86_64 mkfs.ext4 debugfs cpio xz apt-get dpkg-deb; do
	command -v "$tool" >/dev/null ||
		{ echo "not ok - e2e comeback: $tool missing (scripts/deps.sh check)"; exit 0; }
done
for f in "$E2E_RERAND" "$RRD_RERANDD"; do
	[ -x "$f" ] || { echo "not ok - e2e comeback: $f not built"; exit 0; }
done
# The 6.12 cloud kernel: NVMe and ext4 built in, watchdog core and i6300esb
# as modules (the 6.1 cloud kernel has no i6300esb at all).
kernel=${RRC_KERNEL:-$(e2e_pick cloud612)}
[ -n "$kernel" ] && [ -r "$kernel" ] ||
	{ echo "not ok - e2e comeback: no 6.12 cloud kernel in $RERAND_KERNELS (RRC_KERNEL)"; exit 0; }
kver=${kernel##*/vmlinuz-}
# 180 s: under TCG on a loaded machine (load 40 on 2 cores seen) the kexec,
# the stage and the kernel up to init took over 60 s, and a 60 s watchdog
# reset a healthy boot
WD_SEC=${RRC_WATCHDOG_SEC:-180}
PANIC_ARG=${RRC_PANIC_ARG-panic=10}

# rrc_initrd MODS OUT: the rerandd guest's initramfs with a second archive
# laid over it: /init (comeback-init.sh) and /lib/comeback/*.ko.
rrc_initrd() {
	local mods=$1 out=$2 base tmp
	base=$(rrd_initrd) || return 1
	tmp=$(mktemp -d) || return 1
	mkdir -p -m 0755 "$tmp/lib/comeback"
	install -m 0755 "$E2E_DIR/comeback-init.sh" "$tmp/init"
	install -m 0644 "$mods"/*.ko "$tmp/lib/comeback/" || return 1
	# no "." entry: mktemp's 0700 would become the mode of / and lock the
	# image builder (ImageUser=rerand) out of /bin
	(cd "$tmp" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$tmp.over" || return 1
	cat "$base" "$tmp.over" >"$out"
	rm -rf "$tmp" "$tmp.over"
}

rrc_conf() {
	cat <<EOF
# rerandd configuration of the comeback guest (tests/e2e/check-comeback.sh)
[Daemon]
StateDirectory=/var/lib/rerand
RuntimeDirectory=/run/rerand
MetricsFile=/run/rerand/rerand.prom
RerandBinary=/bin/rerand
KexecBinary=/sbin/kexec
CheckInterval=2s

[Policy]
MaxLayoutAge=1h
Jitter=0
MinRebootInterval=0
RebootOutsideWindows=yes
OnNewKernel=ignore
HonorInhibitors=no
BackoffBase=1h
BackoffMax=2h

[Crash]
Mode=off

[Reboot]
Method=syscall
EOF
	[ "${RRC_OLD_CONFIG:-0}" = 1 ] && return 0
	cat <<EOF

[Comeback]
KexecWatchdogSec=${WD_SEC}s
ConfirmTimeoutSec=${WD_SEC}s
EOF
}

# run KIND: one guest, three boots; TAP lines.
run() {
	local kind=$1 dir="$E2E_BUILD/runs/comeback-$1" v=$kver d initrd mods err
	case $kind in
	hang | panic | check) ;;
	*) echo "not ok - comeback $kind: no such kind (RRC_KINDS: hang, panic, check)"; return ;;
	esac
	# panic and check (long) wait for a boot that must not be cut short
	# (the check's own, the panic's delay): more room under load (a panic
	# run at load 57 had the kexec'd kernel short of init 93 s after the
	# kexec, and the 180 s watchdog, armed before the restage, reset it)
	local WD_SEC=$WD_SEC
	[ "$kind" != hang ] && WD_SEC=${RRC_WATCHDOG_SEC:-300}
	mkdir -p "$dir"
	mods=$(rrc_modules 2>"$dir/modules.err") ||
		{ echo "not ok - comeback $kind: the kernel's modules: $(cat "$dir/modules.err")"; return; }
	rrc_initrd "$mods" "$dir/initrd.cpio" ||
		{ echo "not ok - comeback $kind: cannot build the initramfs"; return; }
	d=$(mktemp -d "$dir/root.XXXXXX")
	mkdir -p "$d/boot" "$d/var/lib/rerand" "$d/etc/rerand/rerand.conf.d" "$d/test" "$d/out"
	chmod 0700 "$d/var/lib/rerand"
	cp "$kernel" "$d/boot/vmlinuz-$v" && cp "$dir/initrd.cpio" "$d/boot/initrd.img-$v" ||
		{ echo "not ok - comeback $kind: cannot copy the kernel and the initramfs into $d/boot"; return; }
	rrc_conf >"$d/etc/rerand/rerand.conf"
	echo "$kind" >"$d/test/scenario"
	err=$(e2e_mkfs "$d" "$dir/disk.img" 256 rrstate 2>&1) ||
		{ echo "not ok - comeback $kind: cannot make the disk: $err"; return; }

	local append="console=ttyS0,115200 no_timer_check quiet watchdog.stop_on_reboot=0"
	if [ "$kind" = panic ]; then
		# ramoops in RAM the firmware leaves alone, kept out of the
		# kernel's hands by memmap= (both kernels, and the stage, honour it)
		append+=" $PANIC_ARG memmap=1M\$0x30000000 ramoops.mem_address=0x30000000 ramoops.mem_size=0x100000"
	fi
	local log="$dir/serial.log" tmo=${RRC_TIMEOUT:-1500}
	local args=(-accel "$E2E_ACCEL" -machine q35 -m 1G -smp 1 -cpu max -nographic -monitor none
		-serial stdio -device i6300esb -action watchdog=reset
		-drive "file=$dir/disk.img,if=none,id=rrstate,format=raw,cache=writeback"
		-device "nvme,drive=rrstate,serial=rrstate0"
		-kernel "$kernel" -initrd "$dir/initrd.cpio" -append "$append")
	echo "qemu-system-x86_64 ${args[*]}" >"$log.cmd"
	e2e_note "comeback $kind: $(basename "$kernel"), KexecWatchdogSec=${WD_SEC}s, timeout ${tmo}s${RRC_OLD_CONFIG:+, old config}"
	local t0=$EPOCHSECONDS rc
	timeout -k 5 "$tmo" qemu-system-x86_64 "${args[@]}" </dev/null 2>"$log.stderr" | e2e_stamp >"$log"
	rc=${PIPESTATUS[0]}
	e2e_note "comeback $kind: QEMU exit $rc after $((EPOCHSECONDS - t0)) s; log $log"
	rrd_extract "$dir/disk.img" "$dir/files" || echo "# comeback $kind: cannot read the disk back"

	local f fails
	fails=$(grep -a -o 'RRC-FAIL.*' "$log" | head -n1)
	e2e_tap "$([ -z "$fails" ]; echo $?)" "comeback $kind: the guest reported no failure" "$fails"
	grep -aq 'armed for '"$WD_SEC"'s across the kexec' "$dir"/files/out/rerandd.0.log 2>/dev/null
	e2e_tap $? "comeback $kind: boot 0's rerandd armed /dev/watchdog0 for ${WD_SEC}s before its kexec"
	grep -aq 'RRC-BOOT n=1 verify=rc=0' "$log" && grep -aq "RRC-INJECT n=1 kind=$kind" "$log"
	e2e_tap $? "comeback $kind: boot 1 was the rerandomized kernel (rerand verify 0) and the $kind was injected"
	local back t_inj t_back secs fwboots
	back=$(grep -a 'RRC-BOOT n=2 ' "$log" | head -n1)
	# SeaBIOS's last line before the -kernel boot: once per firmware boot
	fwboots=$(grep -ac 'Booting from ROM' "$log")
	e2e_tap "$(grep -q 'verify=rc=2' <<<"$back" && [ "$fwboots" -eq 2 ]; echo $?)" \
		"comeback $kind: the machine came back by itself through the firmware (firmware boots: $fwboots, want 2)" \
		"${back:-no boot 2$([ "$rc" -eq 124 ] && echo ": QEMU timed out, the node stayed down")}"
	t_inj=$(grep -a 'RRC-INJECT n=1' "$log" | head -n1 | cut -d' ' -f1)
	t_back=$(cut -d' ' -f1 <<<"$back")
	local limit=$((WD_SEC + 180))
	[ "$kind" = panic ] && limit=180
	if [ -n "$t_inj" ] && [ -n "$t_back" ]; then
		secs=$(awk -v a="$t_inj" -v b="$t_back" 'BEGIN { printf "%.0f", b - a }')
		local fw
		fw=$(awk -v a="$t_inj" 'index($0, "Booting from ROM") && $1 > a { printf "%.0f", $1 - a; exit }' "$log")
		e2e_note "comeback $kind: RRC-COMEBACK $secs s from the injection to boot 2's init (${fw:-?} s to the firmware's boot)"
		e2e_tap "$([ "$secs" -le "$limit" ]; echo $?)" "comeback $kind: back in $secs s (limit $limit s)"
	else
		e2e_tap 1 "comeback $kind: back within the limit" "no injection or no boot 2 in the log"
	fi
	local wd want_bs=32
	[ "$kind" = check ] && want_bs=0
	wd=$(grep -a 'RRC-WATCHDOG boot=2 ' "$log" | head -n1)
	if [ "$kind" = panic ]; then
		# panic=N and the watchdog race (under TCG the panic's delay runs
		# slow): either reset may come first; the cause is the panic anyway
		e2e_note "comeback panic: boot 2's boot status: $(grep -o 'bootstatus=[0-9]*' <<<"$wd") (32: the watchdog reset first, 0: panic= did)"
	else
		e2e_tap "$(grep -q "bootstatus=$want_bs " <<<"$wd"; echo $?)" \
			"comeback $kind: boot 2's i6300esb boot status is $want_bs ($([ $want_bs = 32 ] && echo "WDIOF_CARDRESET: the watchdog reset it" || echo "not the watchdog: a reboot"))" "${wd:-no RRC-WATCHDOG line}"
	fi
	local json cause detail want=watchdog
	[ "$kind" = panic ] && want=panic
	[ "$kind" = check ] && want=check-failed
	json=$(grep -a 'RRC-JSON n=2 ' "$log" | tail -n1)
	cause=$(grep -o '"last_cause":"[^"]*"' <<<"$json" | cut -d'"' -f4)
	detail=$(grep -o '"last_cause_detail":"[^"]*"' <<<"$json" | cut -d'"' -f4)
	e2e_note "comeback $kind: rerand status: last_cause=$cause ($detail)"
	e2e_tap "$([ "$cause" = "$want" ]; echo $?)" "comeback $kind: rerand status names the cause '$want'" "got '${cause:-none}': $detail"
	if [ "$kind" = check ]; then
		e2e_tap "$(grep -q '50-fail: post-boot hook failed (status 3)' <<<"$detail"; echo $?)" \
			"comeback check: the cause names the check that failed" "$detail"
		grep -aq 'rebooting through the firmware (the staged kernel unloaded first)' \
			"$dir"/files/out/rerandd.1.log 2>/dev/null
		e2e_tap $? "comeback check: boot 1's rerandd unloaded the staged kernel and rebooted through the firmware"
	fi
	if [ "$kind" = panic ]; then
		e2e_tap "$(grep -q 'Kernel panic - not syncing: sysrq triggered crash' <<<"$detail"; echo $?)" \
			"comeback panic: the cause carries the panic line from pstore" "$detail"
	fi
	grep -aq "RRC-METRIC n=2 | rerand_failures_by_cause_total{cause=\"$want\"} 1" "$log"
	e2e_tap $? "comeback $kind: the metric rerand_failures_by_cause_total{cause=\"$want\"} is 1"
	grep -aq 'RRC-METRIC n=2 | rerand_consecutive_failures 1' "$log"
	e2e_tap $? "comeback $kind: counted as a failure (back-off, MaxFailures)"
	cat "$dir"/files/out/rerandd.[12].log 2>/dev/null | grep -aq "rerandomizing reboot failed: cause $want"
	e2e_tap $? "comeback $kind: the journal line names the cause"
	e2e_tap "$([ "$rc" -eq 0 ] && grep -aq 'RRC-DONE boot=2' "$log"; echo $?)" \
		"comeback $kind: the guest powered off by itself (QEMU exit $rc)"
}

for k in $kinds; do run "$k"; done
exit 0
