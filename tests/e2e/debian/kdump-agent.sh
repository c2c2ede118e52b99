#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The agent of the Debian kdump guest (tests/e2e/check-systemd-kdump.sh;
# rerand-e2e-kdump.service, after rerandd and kdump-tools), at every normal
# boot (the crash kernel boots kdump-tools-dump.service alone, and
# kdump-probe.sh there).  TAP on the second serial port (/dev/ttyS1), which
# the host collects; time marks on the console (/dev/ttyS0), which the host
# time-stamps:
#   RRK n=P ok - NAME | RRK n=P not ok - NAME (why)   P: 0 before the crash, 1 after
#   RRK-INFO n=P ...  (the host prints them as # lines)
#   RRK-BOOT n=P, RRK-PANIC n=0, RRK-DONE n=P          (console)
# Phase 0 (QEMU's first boot, kdump-tools has loaded its crash kernel):
#   dpkg -i the rerand package; rerandd must leave the crash kernel to
#   kdump-tools (status, --json, journal; kdump-tools' kernel still loaded);
#   rerand doctor (and --json): its crash line, its watchdog lines, its exit
#   status (kind "watchdog" ends here: QEMU's i6300esb and its driver).  Kind "rerand": a rerand image as kdump-tools' KDUMP_KERNEL with
#   rerandd's [Crash] Mode=off, reloaded by kdump-config.  A marker into the
#   kernel log, then `echo c > /proc/sysrq-trigger`.
# Phase 1 (the firmware's boot after kdump-tools rebooted the crash kernel):
#   the dump under /var/crash: there, non-trivial, a makedumpfile file whose
#   kernel log (makedumpfile --dump-dmesg) holds phase 0's marker; the crash
#   kernel's probe (kind stock: not rerand's; kind rerand: rerand verify
#   randomized, crash, and _text away from the link address).  Powers off.
set -u
D=/var/lib/rerand-e2e
exec 3>/dev/ttyS1 || exec 3>/dev/console
exec 4>/dev/ttyS0 || exec 4>/dev/console
n=$(cat "$D/phase" 2>/dev/null || echo 0)
kind=$(cat "$D/kind")
wdog=$(cat "$D/watchdog" 2>/dev/null || echo none)
mkdir -p "$D/out"
say() { echo "$*" >&3; echo "$*"; }
con() { echo "$*" >&4; }
info() { say "RRK-INFO n=$n $*"; }
tap() { # tap STATUS NAME [WHY]
	if [ "$1" -eq 0 ]; then say "RRK n=$n ok - $2"; else say "RRK n=$n not ok - $2${3:+ ($3)}"; fi
}
wait_for() { # wait_for SECONDS CMD...: until CMD succeeds
	local end=$((SECONDS + $1)); shift
	until "$@"; do [ $SECONDS -lt $end ] || return 1; sleep 2; done
}
bye() {
	say "RRK-DONE n=$n"
	con "RRK-DONE n=$n"
	sync
	systemctl poweroff
	sleep 600
}
# the crash object of rerandd's status --json (flat, no nested objects)
crash_json() { timeout 60 rerand status --json 2>/dev/null | grep -o '"crash":{[^}]*}'; }
crash_state() { crash_json | grep -o '"state":"[^"]*"' | cut -d'"' -f4; }
settled() { case "$(crash_state)" in other-loader|loaded|off|error|not-reserved) return 0 ;; esac; return 1; }

con "RRK-BOOT n=$n kind=$kind"
info "boot n=$n kind=$kind kernel $(uname -r), $(awk '/MemTotal/ { print int($2 / 1024) " MiB" }' /proc/meminfo), crash region $(($(cat /sys/kernel/kexec_crash_size) >> 20)) MiB, crash kernel loaded $(cat /sys/kernel/kexec_crash_loaded)"

if [ "$n" -eq 0 ]; then
	# ---- kdump-tools as debootstrap installed it --------------------------------
	st=$(systemctl show -P ActiveState kdump-tools.service)
	en=$(systemctl is-enabled kdump-tools.service 2>&1)
	tap "$([ "$st" = active ] && [ "$en" = enabled ]; echo $?)" \
		"kdump-tools.service enabled and active (it loaded its crash kernel at boot)" "$en, $st"
	[ "$st" = active ] || journalctl -b -u kdump-tools -o cat --no-pager 2>&1 | tail -n 8 |
		cut -c1-200 | sed "s/^/RRK-INFO n=$n kdump-tools: /" >&3
	info "kdump-tools' enable link: $(ls /etc/systemd/system/*.wants/kdump-tools.service 2>&1 | tr '\n' ' ')"
	info "kdump-config status: $(kdump-config status 2>&1 | grep -i 'current state' | tr -s ' ')"
	tap "$(grep -q '/var/lib/kdump/vmlinuz' /var/crash/kexec_cmd 2>/dev/null && [ "$(cat /sys/kernel/kexec_crash_loaded)" = 1 ]; echo $?)" \
		"before rerand: kdump-tools' own kernel (/var/lib/kdump/vmlinuz) is loaded (kexec_crash_loaded 1)" \
		"$(cat /var/crash/kexec_cmd 2>&1 | cut -c1-200)"
	[ -r /var/crash/kexec_cmd ] && info "kdump-tools' kexec command: $(sed 's/--command-line="[^"]*"/--command-line=.../' /var/crash/kexec_cmd)"
	loaded_by_kdump=$(stat -c %Y /var/crash/kexec_cmd 2>/dev/null)

	# ---- the package ---------------------------------------------------------------
	out=$(DEBIAN_FRONTEND=noninteractive dpkg -i "$D/rerand.deb" 2>&1)
	rc=$?
	echo "$out" >"$D/out/dpkg-install.log"
	tap "$rc" "dpkg -i rerand.deb: exit $rc" "$(tail -n 4 <<<"$out" | tr '\n' '|')"
	wait_for 300 sh -c '[ "$(systemctl show -P ActiveState rerandd.service)" = active ]'
	tap $? "rerandd.service active after dpkg -i" "$(systemctl show -P ActiveState rerandd.service)"
	# rerandd decides about the crash kernel at start (a load would wait for
	# its image build: minutes under TCG)
	wait_for 1200 settled
	tap $? "rerandd settled its crash kernel state within 20 min" "state '$(crash_state)'"
	# and does not change its mind over the next seconds
	sleep 20
	cj=$(crash_json)
	info "rerand status --json crash: $(cut -c1-300 <<<"$cj")"
	line=$(rerand status 2>&1 | grep '^crash kernel:')
	info "rerand status: $line"
	grep -q '^crash kernel: *left to kdump-tools' <<<"$line"
	tap $? "rerand status: crash kernel: left to kdump-tools" "$line"
	grep -q '"state":"other-loader"' <<<"$cj" && grep -q '"ours":false' <<<"$cj" && grep -q '"loaded":true' <<<"$cj"
	tap $? "rerand status --json: crash state other-loader, a crash kernel loaded, not ours" "$cj"
	jl=$(journalctl -b -u rerandd -o cat --no-pager 2>/dev/null)
	grep -q 'kdump-tools.service is enabled: the crash kernel is left to it' <<<"$jl"
	tap $? "rerandd's journal: kdump-tools.service is enabled: the crash kernel is left to it"
	! grep -q 'crash kernel loaded:' <<<"$jl"
	tap $? "rerandd's journal: no crash kernel loaded by rerandd" "$(grep 'crash kernel loaded:' <<<"$jl" | head -n 1 | cut -c1-160)"
	grep -E 'crash|kdump' <<<"$jl" | head -n 5 | cut -c1-200 | sed "s/^/RRK-INFO n=$n rerandd: /" >&3
	# kdump-tools' kernel stays: nobody ran kexec -p since kdump-tools did
	# (rerand load --crash would have; its command file is kdump-tools' own)
	tap "$([ "$(cat /sys/kernel/kexec_crash_loaded)" = 1 ] && [ "$(stat -c %Y /var/crash/kexec_cmd 2>/dev/null)" = "$loaded_by_kdump" ]; echo $?)" \
		"after rerand: a crash kernel is still loaded, last by kdump-tools"

	# ---- rerand doctor -------------------------------------------------------------
	timeout 600 rerand doctor >"$D/out/doctor.txt" 2>&1
	drc=$?
	timeout 600 rerand doctor --json >"$D/out/doctor.json" 2>&1
	jrc=$?
	sed "s/^/RRK-INFO n=$n doctor | /" "$D/out/doctor.txt" | cut -c1-260 >&3
	grep -qE '^info +crash +crash region [0-9]+ MiB; kdump-tools is enabled: rerandd leaves the crash kernel to it' "$D/out/doctor.txt"
	tap $? "rerand doctor: the crash line says kdump-tools owns the crash kernel" "$(grep -E '^[a-z]+ +crash ' "$D/out/doctor.txt")"
	grep -qE '"check": *"crash", *"result": *"info", *"message": *"crash region [0-9]+ MiB; kdump-tools is enabled: rerandd leaves' "$D/out/doctor.json"
	tap $? "rerand doctor --json: check crash, result info, kdump-tools is enabled" "$(grep -oE '"check": *"crash"[^}]*' "$D/out/doctor.json" | cut -c1-200)"
	fails=$(grep -c '^fail ' "$D/out/doctor.txt")
	top=$(grep -oE '^\{ *"result": *"[a-z]+"' "$D/out/doctor.json" | grep -oE '(ok|warn|fail)"$' | tr -d '"')
	tap "$({ [ "$fails" -gt 0 ] && [ "$drc" = 1 ] && [ "$jrc" = 1 ] && [ "$top" = fail ]; } ||
		{ [ "$fails" -eq 0 ] && [ "$drc" = 0 ] && [ "$jrc" = 0 ] && [ "$top" != fail ] && [ -n "$top" ]; }; echo $?)" \
		"rerand doctor: exit status as documented (1 with a fail, else 0): $drc, --json $jrc, $fails fail lines, result $top"
	if [ "$wdog" = i6300esb ]; then
		grep -qE '^ok +watchdog +/dev/watchdog0: .*i6300' "$D/out/doctor.txt"
		tap $? "rerand doctor with QEMU's i6300esb: ok watchdog /dev/watchdog0 (i6300esb)" "$(grep -E '^[a-z]+ +watchdog ' "$D/out/doctor.txt")"
		grep -qE '^[a-z]+ +watchdog-boot ' "$D/out/doctor.txt" && grep -qE '^[a-z]+ +watchdog-kexec ' "$D/out/doctor.txt"
		tap $? "rerand doctor with a watchdog: its boot and kexec lines are there"
	else
		grep -qE '^warn +watchdog +no /dev/watchdog0' "$D/out/doctor.txt" &&
			! grep -qE '^[a-z]+ +watchdog-(boot|kexec) ' "$D/out/doctor.txt"
		tap $? "rerand doctor without a watchdog device: warn watchdog no /dev/watchdog0, no boot or kexec line" "$(grep -E '^[a-z]+ +watchdog' "$D/out/doctor.txt" | tr '\n' '|')"
	fi

	# kind watchdog: doctor's watchdog lines were what it is for
	[ "$kind" = watchdog ] && bye

	# ---- kind rerand: a rerand image as kdump-tools' crash kernel (docs/kdump.md) --
	if [ "$kind" = rerand ]; then
		t0=$SECONDS
		out=$(rerand image "/boot/vmlinuz-$(uname -r)" -o /var/lib/rerand/kdump.img 2>&1)
		tap $? "rerand image of the running kernel for kdump-tools ($((SECONDS - t0)) s)" "$(tail -n 2 <<<"$out" | tr '\n' '|')"
		printf '# tests/e2e/check-systemd-kdump.sh: kdump-tools loads rerand'"'"'s image\n[Crash]\nMode=off\n' \
			>/etc/rerand/rerand.conf.d/60-e2e-kdump.conf
		systemctl reload rerandd
		off() { rerand status 2>/dev/null | grep -q "^crash kernel: *off (Mode=off"; }
		wait_for 180 off
		tap $? "rerandd after systemctl reload with [Crash] Mode=off: crash kernel off, left to other tools" "$(rerand status 2>&1 | grep '^crash kernel:')"
		off || { systemctl restart rerandd; wait_for 300 off; }
		# (check-systemd-kdump.sh plant-rerand: $D/plant-kernel names another)
		kk=$(cat "$D/plant-kernel" 2>/dev/null || echo /var/lib/rerand/kdump.img)
		sed -i "s|^#* *KDUMP_KERNEL=.*|KDUMP_KERNEL=$kk|" /etc/default/kdump-tools
		grep -q "^KDUMP_KERNEL=$kk" /etc/default/kdump-tools || echo "KDUMP_KERNEL=$kk" >>/etc/default/kdump-tools
		out=$( { kdump-config unload && kdump-config load; } 2>&1)
		rc=$?
		echo "$out" >"$D/out/kdump-config-load.log"
		grep -q ' /var/lib/rerand/kdump.img$' /var/crash/kexec_cmd 2>/dev/null && grep -q -- '-p ' /var/crash/kexec_cmd
		tap "$([ $rc = 0 ] && [ "$(cat /sys/kernel/kexec_crash_loaded)" = 1 ] && grep -q ' /var/lib/rerand/kdump.img$' /var/crash/kexec_cmd; echo $?)" \
			"kdump-config load with KDUMP_KERNEL=/var/lib/rerand/kdump.img: exit $rc, loaded, kexec -p of the image" \
			"$(tail -n 3 <<<"$out" | tr '\n' '|')"
		info "kdump-tools' kexec command: $(sed 's/--command-line="[^"]*"/--command-line=.../' /var/crash/kexec_cmd 2>&1)"
	fi

	# ---- the crash ---------------------------------------------------------------------
	marker="rerand-e2e-kdump-marker-$(cat /proc/sys/kernel/random/uuid)"
	echo "$marker" >"$D/marker"
	cat /proc/sys/kernel/random/boot_id >"$D/boot0-id"
	echo 1 >"$D/phase"
	echo "<6>$marker" >/dev/kmsg
	sync
	con "RRK-PANIC n=0"
	say "RRK-PANIC n=0"
	sleep 1
	echo c >/proc/sysrq-trigger
	sleep 600
	tap 1 "the kernel did not panic on sysrq c"
	bye
fi

if [ "$n" -ge 2 ]; then
	tap 1 "no boot beyond the one after the crash" "phase $n"
	bye
fi

# ---- phase 1: after the crash ----------------------------------------------------------
echo 2 >"$D/phase"
sync
marker=$(cat "$D/marker")
dir=$(ls -d /var/crash/2*/ 2>/dev/null | tail -n 1)
dump=$(ls "$dir"dump.* 2>/dev/null | head -n 1)
info "/var/crash: $(ls -l /var/crash/ /var/crash/2*/ 2>&1 | grep -v '^total' | awk '{ print $5, $NF }' | tr '\n' ' ')"
tap "$([ -n "$dump" ] && [ -f "$dump" ]; echo $?)" "kdump-tools' service in the crash kernel wrote a dump under /var/crash (${dump:-none})"
size=$(stat -c %s "$dump" 2>/dev/null || echo 0)
info "dump size $size bytes ($((size >> 20)) MiB) of $(($(awk '/MemTotal/ { print $2 }' /proc/meminfo) >> 10)) MiB RAM"
# what makedumpfile said in the crash kernel (the boot before this one;
# kdump-tools-dump.service's journal): its version and any warning about
# the kernel it dumped
journalctl -b -1 -u kdump-tools-dump.service -o cat --no-pager 2>&1 |
	grep -iE 'makedumpfile|version|not supported|incomplete|warning|error|fail|excluding|copying|saved' | head -n 12 |
	cut -c1-220 | sed "s/^/RRK-INFO n=$n crash kernel's kdump-tools-dump: /" >&3
info "makedumpfile here: $(makedumpfile -v 2>&1 | head -n 1)"
tap "$([ "$size" -ge $((1 << 20)) ]; echo $?)" "the dump is non-trivial ($size bytes, want at least 1 MiB)"
head -c 12 "$dump" 2>/dev/null | grep -q '^makedumpfile'
tap $? "the dump is makedumpfile's (flattened: its header says makedumpfile)" "$(head -c 16 "$dump" 2>/dev/null | od -c | head -n 1)"
# makedumpfile's own reading of it: rearranged, then its kernel log
rm -f /var/tmp/rerand-e2e.kdump
makedumpfile -R /var/tmp/rerand-e2e.kdump <"$dump" >"$D/out/makedumpfile-R.log" 2>&1
rc=$?
head -c 8 /var/tmp/rerand-e2e.kdump 2>/dev/null | grep -q '^KDUMP'
tap "$([ $rc = 0 ] && head -c 8 /var/tmp/rerand-e2e.kdump 2>/dev/null | grep -q '^KDUMP'; echo $?)" \
	"makedumpfile -R rearranges it into a kdump-compressed file (exit $rc, signature KDUMP)" "$(tail -n 2 "$D/out/makedumpfile-R.log" | tr '\n' '|')"
makedumpfile --dump-dmesg /var/tmp/rerand-e2e.kdump "$D/out/dump-dmesg.txt" >"$D/out/dump-dmesg.log" 2>&1
rc=$?
grep -q "$marker" "$D/out/dump-dmesg.txt" 2>/dev/null && grep -q 'sysrq: Trigger a crash' "$D/out/dump-dmesg.txt"
tap "$([ $rc = 0 ] && grep -q "$marker" "$D/out/dump-dmesg.txt" && grep -q 'sysrq: Trigger a crash' "$D/out/dump-dmesg.txt"; echo $?)" \
	"makedumpfile --dump-dmesg of the dump: the first kernel's log, with its marker and the sysrq crash" \
	"exit $rc; $(tail -n 2 "$D/out/dump-dmesg.log" | tr '\n' '|')"
# (only these two lines, without any hex number: the log's oops has addresses)
info "the dump's kernel log: $(grep -a -E 'sysrq: Trigger a crash|Kernel panic - not syncing' "$D/out/dump-dmesg.txt" 2>/dev/null |
	head -n 2 | sed 's/0x[0-9a-f]*//g; s/[0-9a-f]\{8,\}//g' | cut -c1-120 | tr '\n' '|')"
rm -f /var/tmp/rerand-e2e.kdump
kd=$(ls "$dir"dmesg.* 2>/dev/null | head -n 1)
grep -q "$marker" "$kd" 2>/dev/null
tap $? "kdump-tools' own dmesg file (${kd:-none}) holds the first kernel's marker"
[ "$(cat /proc/sys/kernel/random/boot_id)" != "$(cat "$D/boot0-id")" ]
tap $? "this is a new boot (not the one that crashed)"

# the crash kernel's own report (kdump-probe.sh)
p=$D/crash-probe
pv() { sed -n "s/^$1=//p" "$p" 2>/dev/null; }
info "crash kernel probe: $(tr '\n' ' ' <"$p" 2>/dev/null | sed 's/boot_id=[^ ]*//')"
tap "$([ -s "$p" ] && [ "$(pv vmcore)" -gt 0 ] 2>/dev/null; echo $?)" "the crash kernel ran its probe before kdump-tools' dump (/proc/vmcore $(pv vmcore) bytes)"
if [ "$kind" = rerand ]; then
	tap "$([ "$(pv verify_rc)" = 0 ] && [ "$(pv randomized)" = true ] && [ "$(pv crash)" = true ]; echo $?)" \
		"rerand verify in the crash kernel: randomized, crash true (exit 0)" \
		"rc $(pv verify_rc) randomized $(pv randomized) crash $(pv crash) weak $(pv weak)"
	tap "$([ "$(pv text)" = moved ]; echo $?)" \
		"the crash kernel's _text is not its link address (/proc/kallsyms, test only)" "$(pv text)"
else
	tap "$([ "$(pv verify_rc)" = 2 ]; echo $?)" \
		"the crash kernel was kdump-tools' stock kernel: rerand verify there says absent (exit 2)" \
		"rc $(pv verify_rc) randomized $(pv randomized) crash $(pv crash)"
	info "stock crash kernel's _text: $(pv text) (the stock kernel's own KASLR)"
fi
# after the dump, kdump-tools loaded its crash kernel again; rerandd still leaves it
wait_for 600 settled
cj=$(crash_json)
if [ "$kind" = rerand ]; then
	grep -q '"state":"off"' <<<"$cj"
	tap $? "after the dump: rerandd's crash state off ([Crash] Mode=off)" "$cj"
else
	grep -q '"state":"other-loader"' <<<"$cj"
	tap $? "after the dump: rerandd's crash state other-loader again" "$cj"
fi
[ "$(cat /sys/kernel/kexec_crash_loaded)" = 1 ]
tap $? "after the dump: a crash kernel is loaded again (kdump-tools at boot)"
bye
