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
#   the watchdog's driver: built in (modules.builtin, no initstate), a
#     loaded module, a module not loaded, no driver link: only the first
#     is called built in.
#   the watchdog (issue 38, point 5): its driver named in modules-load.d or
#     not, rerandd without it, softdog, and stop_on_reboot: 0, set by
#     the package's option (etc/modprobe.d/rerand.conf, read by the real
#     modprobe --showconfig) for the next load, masked, or a built-in core.
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
		echo live >"$m/sys/module/watchdog/initstate"
		# as sysfs links them: the device's driver, the driver's module;
		# a loaded module has initstate (modules.builtin does not name it)
		mkdir -p "$m/sys/class/watchdog/watchdog0/device" "$m/etc/modules-load.d" \
			"$m/sys/bus/pci/drivers/i6300ESB timer" "$m/sys/module/i6300esb" "$m/lib/modules/6.12.0-test"
		echo 'i6300ESB timer' >"$m/sys/class/watchdog/watchdog0/identity"
		ln -s "../../../../bus/pci/drivers/i6300ESB timer" "$m/sys/class/watchdog/watchdog0/device/driver"
		ln -s ../../../../module/i6300esb "$m/sys/bus/pci/drivers/i6300ESB timer/module"
		echo live >"$m/sys/module/i6300esb/initstate"
		printf 'kernel/drivers/watchdog/watchdog.ko\nkernel/drivers/tty/serial/8250/8250.ko\n' \
			>"$m/lib/modules/6.12.0-test/modules.builtin"
		printf '# Written by rerand\ni6300esb\n' >"$m/etc/modules-load.d/rerand-watchdog.conf"
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
# the windowed instance sees a watchdog device (a plain file: it is armed
# only before a reboot, which this test never asks for); nowindow has none
mkdir -p "$tmp/windowed/conf.d"
: >"$tmp/windowed/fake-watchdog"
printf '[Paths]\nWatchdog=%s\n' "$tmp/windowed/fake-watchdog" >"$tmp/windowed/conf.d/50-watchdog.conf"
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
check "good: the watchdog, its identity and driver, a loaded module" \
	has '^ok    watchdog +/dev/watchdog0: i6300ESB timer \(i6300esb, a loaded module\)$'
check "good: its driver loaded at boot by modules-load.d" \
	has '^ok    watchdog-boot +i6300esb is loaded at boot by /etc/modules-load.d/rerand-watchdog.conf, before rerandd starts'
check "good: the watchdog kept counting across a kexec" has '^ok    watchdog-kexec +this kernel keeps it counting across a kexec'
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
	bash -c "grep -q '^warn  watchdog  *no /dev/watchdog0' '$tmp/out' && grep -q 'fix: /usr/lib/rerand/watchdog-setup finds and loads' '$tmp/out'"
check "bad: no watchdog: no line about its boot or kexec" bash -c "! grep -qE '^[a-z]+ +watchdog-(boot|kexec) ' '$tmp/out'"
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
# where Debian's package links it (WantedBy=basic.target)
mkdir -p "$tmp/m-good/etc/systemd/system/basic.target.wants"
mv "$tmp/m-good/etc/systemd/system/multi-user.target.wants/kdump-tools.service" \
	"$tmp/m-good/etc/systemd/system/basic.target.wants/kdump-tools.service"
doc windowed "$tmp/m-good"
check "kdump-tools in basic.target.wants (Debian's WantedBy=): the crash line says it is left to it" \
	has '^info  crash +crash region 256 MiB; kdump-tools is enabled: rerandd leaves'
mv "$tmp/m-good/etc/systemd/system/basic.target.wants/kdump-tools.service" \
	"$tmp/m-good/etc/systemd/system/multi-user.target.wants/kdump-tools.service"

# ---- the watchdog ----------------------------------------------------------------------------
# wd NAME: a copy of the good machine to vary; wdline CHECK: its line and fix
wd() { rm -rf "$tmp/m-$1"; cp -a "$tmp/m-good" "$tmp/m-$1"; echo "$tmp/m-$1"; }
wdline() { grep -A1 -E "^[a-z]+ +$1 " "$tmp/out" | tr '\n' ' '; }
m=$(wd late)
rm "$m/etc/modules-load.d/rerand-watchdog.conf"
echo 'loop' >"$m/etc/modules-load.d/other.conf"
doc windowed "$m"
echo "# late: $(wdline watchdog-boot)"
check "driver not in modules-load.d: a warning naming it, the fix watchdog-setup; exit 0 ($rc)" \
	bash -c '[ $1 = 0 ] && grep -qE "^warn  watchdog-boot +i6300esb is not named in modules-load.d" "$2" && grep -q "fix: /usr/lib/rerand/watchdog-setup" "$2"' _ $rc "$tmp/out"
echo 'i6300esb # the watchdog' >"$m/etc/modules"
doc windowed "$m"
check "named in Debian's /etc/modules (a comment after it): ok" \
	has '^ok    watchdog-boot +i6300esb is loaded at boot by /etc/modules,'
printf 'i6300esbx\n' >"$m/etc/modules"
doc windowed "$m"
check "i6300esbx is another module: warn" has '^warn  watchdog-boot +i6300esb is not named'
ln -sfn ../../../../module/iTCO_wdt "$m/sys/bus/pci/drivers/i6300ESB timer/module"
mkdir -p "$m/sys/module/iTCO_wdt" && echo live >"$m/sys/module/iTCO_wdt/initstate"
printf 'iTCO-wdt\n' >"$m/etc/modules"
doc windowed "$m"
check "iTCO-wdt names iTCO_wdt (- and _ alike, as kmod)" has '^ok    watchdog-boot +iTCO_wdt is loaded at boot by /etc/modules,'

doc nowindow "$tmp/m-good"
echo "# rerandd without it: $(wdline watchdog-boot)"
check "rerandd without /dev/watchdog0 while the machine has it: restart rerandd" \
	bash -c 'grep -qE "^warn  watchdog-boot +rerandd has no /dev/watchdog0: its driver was loaded after rerandd started" "$1" && grep -q "fix: systemctl restart rerandd" "$1"' _ "$tmp/out"

# how the driver is there (the kernel links a driver to /sys/module/NAME
# built in or not: initstate and modules.builtin tell them apart)
m=$(wd builtin-drv)
rm -rf "$m/sys/module/i6300esb/initstate" "$m/etc/modules-load.d/rerand-watchdog.conf"
mkdir -p "$m/sys/module/i6300esb/parameters"
echo kernel/drivers/watchdog/i6300esb.ko >>"$m/lib/modules/6.12.0-test/modules.builtin"
doc windowed "$m"
echo "# built-in driver: $(wdline watchdog) $(wdline watchdog-boot)"
check "a driver in modules.builtin, no initstate: built into the kernel, there before rerandd" \
	bash -c 'grep -qE "^ok    watchdog +/dev/watchdog0: i6300ESB timer \(i6300esb, built into the kernel\)$" "$1" &&
		grep -qE "^ok    watchdog-boot +its driver is built in" "$1"' _ "$tmp/out"
m=$(wd loaded-drv)
rm "$m/etc/modules-load.d/rerand-watchdog.conf"
doc windowed "$m"
echo "# loaded module: $(wdline watchdog) $(wdline watchdog-boot)"
check "a loaded module (initstate live, not in modules.builtin): a loaded module, never built in" \
	bash -c 'grep -qE "^ok    watchdog +/dev/watchdog0: i6300ESB timer \(i6300esb, a loaded module\)$" "$1" &&
		grep -qE "^warn  watchdog-boot +i6300esb is not named in modules-load.d" "$1" && ! grep -qE "^[a-z]+ +watchdog.*built in" "$1"' _ "$tmp/out"
m=$(wd gone-drv)
rm -rf "$m/sys/module/i6300esb"
doc windowed "$m"
echo "# module not loaded: $(wdline watchdog)"
check "its module not loaded (no /sys/module/i6300esb, not in modules.builtin): warn with modprobe, never built in" \
	bash -c 'grep -qE "^warn  watchdog +/dev/watchdog0: i6300ESB timer: its driver is the module i6300esb, which is not loaded" "$1" &&
		grep -q "fix: modprobe i6300esb, or /usr/lib/rerand/watchdog-setup" "$1" && ! grep -qE "^[a-z]+ +watchdog.*built in" "$1"' _ "$tmp/out"
m=$(wd nodrv)
rm -rf "$m/sys/class/watchdog/watchdog0/device"
echo 'i6300ESB timer' >"$m/sys/class/watchdog/watchdog0/identity"
doc windowed "$m"
echo "# no driver link: $(wdline watchdog) $(wdline watchdog-boot)"
check "no driver link: its driver not known, and not called built in" \
	bash -c 'grep -qE "^ok    watchdog +/dev/watchdog0: i6300ESB timer \(its driver not known" "$1" &&
		grep -qE "^warn  watchdog-boot +its driver.s module is not known" "$1" && ! grep -qE "^[a-z]+ +watchdog.*built in" "$1"' _ "$tmp/out"

m=$(wd soft)
rm -rf "$m/sys/class/watchdog/watchdog0/device"
echo 'Software Watchdog' >"$m/sys/class/watchdog/watchdog0/identity"
doc windowed "$m"
check "softdog: a warning that it survives no kexec, nothing more about it" \
	bash -c 'grep -qE "^warn  watchdog +/dev/watchdog0 is softdog: .*neither survives a kexec" "$1" && ! grep -qE "^[a-z]+ +watchdog-(boot|kexec) " "$1"' _ "$tmp/out"

m=$(wd nextboot)
echo -1 >"$m/sys/module/watchdog/parameters/stop_on_reboot"
mkdir -p "$m/usr/lib/modprobe.d"
cp "$top/etc/modprobe.d/rerand.conf" "$m/usr/lib/modprobe.d/rerand.conf"
doc windowed "$m"
echo "# next boot: $(wdline watchdog-kexec)"
check "stop_on_reboot -1, the package's option in place: applies from the next firmware boot" \
	bash -c 'grep -qE "^warn  watchdog-kexec +this boot.s watchdog core was loaded before the option" "$1" && grep -q "fix: nothing to do: the next boot through the firmware applies it" "$1"' _ "$tmp/out"
mkdir -p "$m/etc/modprobe.d"
: >"$m/etc/modprobe.d/rerand.conf"
doc windowed "$m"
echo "# masked: $(wdline watchdog-kexec)"
check "the option masked by an empty /etc/modprobe.d/rerand.conf: nothing sets it, the fix says so" \
	bash -c 'grep -qE "^warn  watchdog-kexec +this kernel stops it at every reboot and kexec \(stop_on_reboot -1\), and nothing sets" "$1" && grep -q "masked by an /etc/modprobe.d/rerand.conf" "$1"' _ "$tmp/out"
echo 'options watchdog handle_boot=1 stop_on_reboot=0' >"$m/etc/modprobe.d/local.conf"
doc windowed "$m"
check "an admin's own options line with stop_on_reboot=0 counts" has '^warn  watchdog-kexec +this boot.s watchdog core was loaded before the option'

m=$(wd builtin)
echo -1 >"$m/sys/module/watchdog/parameters/stop_on_reboot"
rm "$m/sys/module/watchdog/initstate"
doc windowed "$m"
echo "# built in: $(wdline watchdog-kexec)"
check "a built-in watchdog core: the command line is the fix (grub.d, /etc/kernel/cmdline)" \
	bash -c 'grep -qE "^warn  watchdog-kexec .*its watchdog core is built in" "$1" && grep -q "/etc/default/grub.d/rerand.cfg, then update-grub" "$1" && grep -q "/etc/kernel/cmdline" "$1"' _ "$tmp/out"
rm -rf "$m/sys/module/watchdog"
sed -i 's/$/ watchdog.stop_on_reboot=0/' "$m/proc/cmdline"
doc windowed "$m"
check "no watchdog.ko parameters, the word on the command line: ok" has '^ok    watchdog-kexec +booted with watchdog.stop_on_reboot=0'

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
