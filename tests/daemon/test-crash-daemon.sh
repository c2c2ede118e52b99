#!/bin/bash
# rerandd's crash kernel, host side: real build/rerandd and build/rerand against
# fixtures.  kexec-tools is REPLACED by a stand-in script that only records its
# arguments (loading a crash kernel on this machine is forbidden), so what is
# tested is everything up to the kexec call: the region-size check of
# `rerand load --crash` (RERAND_KEXEC_CRASH_SIZE_FILE via [Paths] KexecCrashSize=),
# the command line, Mode=off, the status and metrics, crash-boot accounting, and
# the reload on a memory-hotplug uevent.  Uevents come from a FIFO ([Paths]
# Uevents=): the kernel's netlink uevent group cannot be written to without
# privileges, and faking hotplug on this machine is out of the question.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/rerandd.sh"
rerandd_test crashd

rerandd_need_bins
rerandd_pick_kernel
[ -r "$KERNEL" ] || bail "$KERNEL: a kernel to stage is needed"
# one image for every instance's cache: none of them builds
rerandd_prebuilt_image
head -c 65536 /dev/urandom >"$tmp/kdump-initrd.img"

# The stand-in for kexec-tools: never the real one.  It records its arguments and,
# for -p, says "loaded" in the instance's kexec_crash_loaded fixture as the kernel would.
cat >"$tmp/fake-kexec" <<'EOF'
#!/bin/sh
# STAND-IN for kexec-tools (test-crash-daemon.sh): records, loads nothing.
d=$(dirname "$(dirname "$0")")
for a in "$@"; do printf '%s\n' "$a"; done >"$d/kexec-args.$$"
printf '%s\n' "$*" >>"$d/kexec.log"
case " $* " in *" -p "*) echo 1 >"$d/crash_loaded" ;; esac
exit 0
EOF
chmod +x "$tmp/fake-kexec"
rerandd_no_reboot "$tmp/no-reboot"

# inst ID CRASH_SIZE [extra [Crash] lines]: an instance directory and its config
inst() {
	local id=$1 size=$2 extra=${3:-} hd=$tmp/$1
	rerandd_dirs "$hd" bin pre post
	cp "$tmp/fake-kexec" "$hd/bin/kexec"
	rerandd_seed_cache "$hd"
	# procfs-like fixtures: size 0 in stat(), as on Debian 12's 6.1
	rerandd_procfs_fixtures "$hd" "BOOT_IMAGE=/vmlinuz-6.1 root=/dev/vda1 ro crashkernel=256M console=ttyS0 hugepages=16 nr_cpus=8 quiet -- single"
	echo "$size" >"$hd/crash_size"
	echo 0 >"$hd/crash_loaded"
	mkfifo "$hd/uevents"
	rerandd_conf "$hd" "$hd/bin/kexec" "$hd/no-setup-data" <<EOF
PreRebootDirectory=$hd/pre
PostBootDirectory=$hd/post
KexecCrashSize=$hd/crash_size
KexecCrashLoaded=$hd/crash_loaded
ProcVmcore=$hd/no-vmcore
Uevents=$hd/uevents

[Stage]
Kernel=$KERNEL
Initrd=none
CommandLine=console=ttyS0 quiet

$(rerandd_policy MaxLayoutAge=30d)

$(rerandd_reboot_by "$tmp/no-reboot $hd")

[Crash]
HotplugSettle=1s
$extra
EOF
}
run() { rerandd_start "$tmp/$1"; }
st() { rerandd_status "$tmp/$1" ${2:-}; }
crash_loads() { grep -cE -- '(^| )-p( |$)' "$tmp/$1/kexec.log" 2>/dev/null || true; }
status_has() { st "$1" 2>/dev/null | grep -q -- "$2"; }

# ---- the fixtures are procfs files -----------------------------------------------------
inst probe 0
check "fixtures: /proc-like ProcCmdline= says size 0 in stat() but holds the command line" \
	eval 'test "$(procfs_size "$tmp/probe/cmdline")" = 0 && procfs_text "$tmp/probe/cmdline" | grep -q "root=/dev/vda1"'
check "fixtures: so do ProcStat= (btime), BootId= and Tainted=" \
	eval 'test "$(procfs_size "$tmp/probe/stat")$(procfs_size "$tmp/probe/boot_id")$(procfs_size "$tmp/probe/tainted")" = 000 &&
	      procfs_text "$tmp/probe/stat" | grep -q "^btime [0-9]"'

# ---- configuration ----------------------------------------------------------------
inst cfg 0 "CommandLine=root=/dev/vda1 nokaslr"
"$RERANDD" --check-config --config "$tmp/cfg/rerand.conf" --config-dir "$tmp/cfg/conf.d" 2>"$tmp/cfg/err"
check "config: [Crash] CommandLine= with nokaslr is refused" grep -q "CommandLine= has nokaslr" "$tmp/cfg/err"
printf '[Crash]\nMode=sometimes\n' >"$tmp/cfg/conf.d/bad.conf"
"$RERANDD" --check-config --config "$tmp/cfg/rerand.conf" --config-dir "$tmp/cfg/conf.d" 2>"$tmp/cfg/err"
check "config: Mode= other than auto/off is refused with file:line" grep -q "bad.conf:2: Mode=sometimes: want auto or off" "$tmp/cfg/err"

# ---- the instances, all at once ------------------------------------------------------
inst big $((512 << 20)) "Initrd=$tmp/kdump-initrd.img"
inst small $((16 << 20))
inst none 0
# this boot began 12345 s ago: the layout age must come from ProcStat='s btime
procfs_fixture "$tmp/none/stat" "btime $(($(date +%s) - 12345))"$'\n'
inst off $((512 << 20)) "Mode=off"
# kdump-tools enabled (its unit linked, as systemctl enable does), and enabled
# but turned off in its defaults file (USE_KDUMP=0)
inst kdump $((512 << 20))
inst kdumpoff $((512 << 20))
for id in kdump kdumpoff; do
	mkdir -p "$tmp/$id/systemd-wants"
	ln -s /lib/systemd/system/kdump-tools.service "$tmp/$id/systemd-wants/kdump-tools.service"
done
# Debian's own place: kdump-tools.service is WantedBy=basic.target, so
# systemctl enable links it in basic.target.wants, the sibling of
# CrashLoaderWants= (multi-user.target.wants by default)
inst kdumpbasic $((512 << 20))
mkdir -p "$tmp/kdumpbasic/basic.target.wants"
ln -s /lib/systemd/system/kdump-tools.service "$tmp/kdumpbasic/basic.target.wants/kdump-tools.service"
printf '# kdump-tools defaults\nUSE_KDUMP=1\n' >"$tmp/kdump/kdump-tools"
printf '# kdump-tools defaults\nUSE_KDUMP=0\n' >"$tmp/kdumpoff/kdump-tools"
inst crashboot $((512 << 20))
touch "$tmp/crashboot/no-vmcore"          # /proc/vmcore exists: this is a crash kernel
cat >"$tmp/crashboot/state/state" <<EOF
version=1
boot_id=0123abcd
attempt=1
attempt_boot_id=0123abcd
attempt_time=1000
attempt_reason=layout-age
failures=1
total_failures=1
successes=4
hold=0
fleet_keep=0
confirm_pending=0
EOF
for id in big small none off crashboot kdump kdumpoff kdumpbasic; do run "$id"; done
for id in big small none off crashboot kdump kdumpoff kdumpbasic; do
	rerandd_wait_up "$tmp/$id"
done

# ---- a reserved region: loaded with -p --------------------------------------------------
wait_for 30 status_has big "crash kernel:      loaded"
check "reserved: status says the crash kernel is loaded" status_has big "crash kernel:      loaded (kernel $KERNEL"
check "reserved: kexec was called once with -p" test "$(crash_loads big)" = 1
args=$(cat "$(grep -l -x -- -p "$tmp"/big/kexec-args.* | head -1)")
check "reserved: the crash kernel gets the [Crash] Initrd=" grep -qx -- "--initrd=$tmp/kdump-initrd.img" <<<"$args"
cl=$(grep -- '^--append=' <<<"$args")
echo "# crash command line: $cl"
check "reserved: command line is the running one minus BOOT_IMAGE=, crashkernel=, hugepages=, nr_cpus=8, plus kdump-tools' words and panic=10 (PanicRebootSec=), init's args last" \
	test "$cl" = "--append=root=/dev/vda1 ro console=ttyS0 quiet reset_devices systemd.unit=kdump-tools-dump.service nr_cpus=1 irqpoll nousb panic=10 rerand.panic=10 -- single"
check "reserved: the normal staging (-l) went on as before" grep -qE -- '(^| )-l( |$)' "$tmp/big/kexec.log"
check "cache: the image under <kernel sha256>.<stage sha256>.img was used, not rebuilt" \
	eval 'test "$(stat -c %i "$IMAGE")" = "$(stat -c %i "$tmp/big/state/images/$KSHA.$SSHA.img")" &&
	      [ "$(ls "$tmp/big/state/images"/*.img | wc -l)" = 1 ]'
check "reserved: metrics rerand_crash_kernel_loaded 1" grep -qx 'rerand_crash_kernel_loaded 1' "$tmp/big/run/rerand.prom"
check "reserved: status --json parses, crash.state loaded, loaded true, the region's size" \
	eval 'st big --json | python3 -c "import json,sys; c=json.load(sys.stdin)[\"crash\"]; sys.exit(not (c[\"state\"]==\"loaded\" and c[\"loaded\"] and c[\"reserved_bytes\"]==512<<20))"'
check "reserved: no 0x number anywhere in the status" eval '! { st big; st big --json; } | grep -qi "0x"'

# ---- hotplug: a block uevent does nothing, a memory one reloads ------------------------
printf 'add@/devices/virtual/block/loop9\0ACTION=add\0DEVPATH=/devices/virtual/block/loop9\0SUBSYSTEM=block\0SEQNUM=7\0\n' >"$tmp/big/uevents"
sleep 2.5
check "uevent: a block device event does not reload the crash kernel" test "$(crash_loads big)" = 1
t0=$(date +%s%3N)
printf 'online@/devices/system/memory/memory40\0ACTION=online\0DEVPATH=/devices/system/memory/memory40\0SUBSYSTEM=memory\0SEQNUM=8\0\n' >"$tmp/big/uevents"
wait_for 15 eval 'test "$(crash_loads big)" = 2'
t1=$(date +%s%3N)
check "uevent: memory online reloads the crash kernel after the 1 s settle ($((t1 - t0)) ms)" \
	eval 'test "$(crash_loads big)" = 2 && [ $((t1 - t0)) -ge 900 ]'
check "uevent: status counts 2 loads" eval 'wait_for 5 status_has big "crash loads:       2 loaded, 0 failed"'
printf 'add@/devices/system/cpu/cpu3\0ACTION=add\0DEVPATH=/devices/system/cpu/cpu3\0SUBSYSTEM=cpu\0SEQNUM=9\0\n' >"$tmp/big/uevents"
check "uevent: CPU add reloads it too" wait_for 15 eval 'test "$(crash_loads big)" = 3'

# ---- too small: refused with the size needed -----------------------------------------------
wait_for 30 status_has small "crash kernel:      error"
line=$(st small | grep '^crash kernel:')
echo "# $line"
check "too small: status shows the refusal with the size needed" \
	eval 'grep -Eq "error: .*the crash region is 16 MiB but the image needs at least [0-9]+ MiB" <<<"$line"'
check "too small: the log says it too" grep -Eq "crash kernel not loaded: .*needs at least [0-9]+ MiB" "$tmp/small/log"
check "too small: kexec was never called with -p" test "$(crash_loads small)" = 0
check "too small: metrics loaded 0, error 1" \
	eval 'grep -qx "rerand_crash_kernel_loaded 0" "$tmp/small/run/rerand.prom" && grep -qx "rerand_crash_kernel_error 1" "$tmp/small/run/rerand.prom"'
check "too small: the normal staging is not affected" eval 'st small | grep -q "^staged:            yes"'

# ---- nothing reserved; Mode=off ------------------------------------------------------------
check "not reserved: status says so" wait_for 10 status_has none "crash kernel:      not reserved"
age=$(st none --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["layout_age_seconds"])')
check "btime from a size-0 ProcStat=: layout age ${age}s is 12345 s and a little" eval '[ "$age" -ge 12345 ] && [ "$age" -lt 12645 ]'
# ---- kdump-tools enabled: Mode=auto leaves the crash kernel to it (issue 38) -----------
wait_for 30 status_has kdumpoff "crash kernel:      loaded"
check "kdump-tools enabled: status says the crash kernel is left to it" \
	status_has kdump "crash kernel:      left to kdump-tools/kdumpctl"
check "kdump-tools enabled: the journal names the unit" \
	grep -q 'kdump-tools.service is enabled: the crash kernel is left to it' "$tmp/kdump/log"
check "kdump-tools enabled: kexec -p never called ($(crash_loads kdump))" test "$(crash_loads kdump)" = 0
check "kdump-tools enabled: --json crash.state other-loader" \
	eval 'st kdump --json | python3 -c "import json,sys; sys.exit(json.load(sys.stdin)[\"crash\"][\"state\"] != \"other-loader\")"'
check "kdump-tools enabled in basic.target.wants (Debian's WantedBy=): left to it, kexec -p never called ($(crash_loads kdumpbasic))" \
	eval 'status_has kdumpbasic "crash kernel:      left to kdump-tools/kdumpctl" && test "$(crash_loads kdumpbasic)" = 0'
check "kdump-tools enabled but USE_KDUMP=0: rerandd loads its own ($(crash_loads kdumpoff) -p)" \
	test "$(crash_loads kdumpoff)" = 1

check "Mode=off: status says off" wait_for 10 status_has off "crash kernel:      off (Mode=off"
printf 'add@/devices/system/memory/memory41\0ACTION=add\0DEVPATH=/devices/system/memory/memory41\0SUBSYSTEM=memory\0SEQNUM=10\0\n' | tee "$tmp/none/uevents" >"$tmp/off/uevents"
sleep 2
check "not reserved and Mode=off: kexec -p never called, even after a memory uevent" \
	eval 'test "$(crash_loads none)" = 0 && test "$(crash_loads off)" = 0 && grep -qE -- "(^| )-l( |\$)" "$tmp/off/kexec.log"'

# ---- a crash kernel's boot -------------------------------------------------------------------
check "crash boot: status says it and that rerandd idles" wait_for 10 status_has crashboot "a crash kernel's (dump capture); rerandd idles"
check "crash boot: counted as crash boot 1, not as a success or failure; the attempt is left for the next boot" \
	eval 'grep -qx crash_boots=1 "$tmp/crashboot/state/state" && grep -qx failures=1 "$tmp/crashboot/state/state" &&
	      grep -qx successes=4 "$tmp/crashboot/state/state" && grep -qx attempt=1 "$tmp/crashboot/state/state"'
check "crash boot: no kexec call at all" test ! -e "$tmp/crashboot/kexec.log"
check "crash boot: the state file was read, not set aside as corrupt" test ! -e "$tmp/crashboot/state/state.corrupt"
check "crash boot: \`rerand now\` is refused" eval '! RERAND_CONTROL_SOCKET=$tmp/crashboot/run/control "$R" now 2>/dev/null'
check "crash boot: metrics say so" eval 'grep -qx "rerand_crash_boot 1" "$tmp/crashboot/run/rerand.prom" && grep -qx "rerand_crash_boots_total 1" "$tmp/crashboot/run/rerand.prom"'
kill -TERM "$(cat "$tmp/crashboot/pid")"; wait "$(cat "$tmp/crashboot/pid")" 2>/dev/null
check "crash boot: SIGTERM ends it cleanly" eval '! kill -0 $(cat "$tmp/crashboot/pid") 2>/dev/null'
run crashboot
wait_for 10 test -S "$tmp/crashboot/run/control" && sleep 0.3
check "crash boot: a restart in the same boot does not count it again" grep -qx crash_boots=1 "$tmp/crashboot/state/state"

check "no instance ever asked for a reboot" eval '! ls "$tmp"/*/reboot-called >/dev/null 2>&1'
echo "1..$n"
