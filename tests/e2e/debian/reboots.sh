# SPDX-License-Identifier: GPL-2.0-only
# Sourced by the Debian guest's agent (debian/agent.sh) in check-systemd.sh's
# "reboots" mode, after rerandd's own rerandomizing reboot(s): the reboot
# commands an administrator types, on a systemd that turns a reboot into a
# kexec whenever a kexec kernel is loaded (256 and later: trixie's 257).
# One step per boot, in this order; each boot checks what the step before
# it did (its name in $D/xstep), then runs the next:
#   systemctl-reboot  `systemctl reboot` with rerandd's image staged: must be
#                     a kexec into it, a randomized boot rerandd did not plan
#                     but recorded on the way down and verified as its own
#                     (RerandomizeOtherReboots=yes, issue 38)
#   reboot            plain `reboot`, the same
#   soft-reboot       `systemctl soft-reboot`: userspace restarts on the same
#                     kernel; rerandd must count nothing (no reboot, no failure)
#   kexec-default     `systemctl kexec` with nothing staged (rerandd stopped,
#                     its image unloaded): systemd loads the boot loader's
#                     default entry itself (here /run/boot-loader-entries/,
#                     which systemd reads as an ESP); that boot is not
#                     rerand's and rerandd must say so and count nothing
#   skip-auto-kexec   SYSTEMCTL_SKIP_AUTO_KEXEC=1 systemctl reboot with the
#                     image staged: a firmware reboot (QEMU runs without
#                     -no-reboot here), not rerand's either
# The steps to run are the host's ($D/xsteps: all five in long mode, only
# systemctl-reboot in trixie's short run).  After the last: kexec-tools'
# syscalls (x_probe), then power off.  Every step after rerandd's own
# reboots checks rerand status's boot_origin and unplanned_boots.
# Uses the agent's n, D, R, boot_id, btime, say, tap, jval, wait_for, prop.
XSTEPS=$(cat "$D/xsteps" 2>/dev/null)
XSTEPS=${XSTEPS:-systemctl-reboot reboot soft-reboot kexec-default skip-auto-kexec}

# x_probe: which syscall kexec-tools uses when told nothing (checked), and
# which one `rerand load` ends up with (reported only), counted from the
# kernel's syscall trace
# events (tracefs; the cloud kernel has CONFIG_FTRACE_SYSCALLS).  Only the
# counts leave the guest: the trace lines hold load addresses.  First a hold,
# a release and a stop of rerandd, each checked against kexec_loaded; rerandd
# stays stopped (its own staging would add calls) and nothing stays loaded.
x_probe() {
	local T=/sys/kernel/tracing img f l v kv kl=/sys/kernel/kexec_loaded
	# Issue 38: nothing of rerand's stays loaded while no rerandomization
	# is wanted, read from the real kernel: a hold unloads, a release
	# stages again, `systemctl stop` (no shutdown) unloads.
	wait_for 300 sh -c "[ \"\$(cat $kl)\" = 1 ]"
	rerand hold --reason "e2e: nothing loaded while held" >/dev/null 2>&1
	wait_for 60 sh -c "[ \"\$(cat $kl)\" = 0 ]"
	tap $? "rerand hold: rerandd unloads its image (kexec_loaded $(cat $kl))" \
		"$(rerand status 2>&1 | grep '^staged:')"
	rerand unhold >/dev/null 2>&1
	wait_for 300 sh -c "[ \"\$(cat $kl)\" = 1 ]"
	tap $? "rerand unhold: rerandd stages again (kexec_loaded $(cat $kl))"
	systemctl stop rerandd.service
	tap "$([ "$(cat $kl)" = 0 ]; echo $?)" \
		"systemctl stop rerandd: nothing of rerand's left loaded (kexec_loaded $(cat $kl))" \
		"$(journalctl -b -u rerandd.service -n 3 --no-pager 2>&1 | tr '\n' '|')"
	kv=$(kexec --version 2>&1 | head -n 1)
	say "RRS-INFO n=$n kexec --version: $kv"
	[ -r "$T/trace" ] || mount -t tracefs nodev "$T" 2>/dev/null
	if ! [ -d "$T/events/syscalls/sys_enter_kexec_file_load" ]; then
		tap 1 "kexec-tools probe: syscall trace events" "no $T/events/syscalls/sys_enter_kexec_file_load"
		return
	fi
	echo 1 >"$T/events/syscalls/sys_enter_kexec_file_load/enable"
	echo 1 >"$T/events/syscalls/sys_enter_kexec_load/enable"
	echo 1 >"$T/tracing_on"
	# x_count: "FILE LOAD", the calls since the last x_count.
	x_count() {
		local t
		t=$(cat "$T/trace")
		echo >"$T/trace"
		echo "$(grep -c 'sys_kexec_file_load(' <<<"$t") $(grep -c 'sys_kexec_load(' <<<"$t")"
	}
	kexec -s -u >/dev/null 2>&1
	x_count >/dev/null
	v=$(uname -r)
	kexec -l "/boot/vmlinuz-$v" --append="$(cat /proc/cmdline)" >"$R/probe-default.out" 2>&1
	read -r f l < <(x_count)
	say "RRS-INFO n=$n kexec -l (no syscall option): kexec_file_load calls $f, kexec_load calls $l, loaded $(cat /sys/kernel/kexec_loaded)"
	tap "$([ "$f" -ge 1 ] && [ "$l" = 0 ] && [ "$(cat /sys/kernel/kexec_loaded)" = 1 ]; echo $?)" \
		"$kv: \`kexec -l\` with no syscall option loads with kexec_file_load (kexec_file_load $f, kexec_load $l)" \
		"$(tr '\n' '|' <"$R/probe-default.out" | cut -c1-200)"
	kexec -s -u >/dev/null 2>&1
	x_count >/dev/null
	img=$(ls -t /var/lib/rerand/images/*.img 2>/dev/null | head -n 1)
	rerand load "$img" --append="$(cat /proc/cmdline)" >"$R/probe-rerand.out" 2>&1
	read -r f l < <(x_count)
	say "RRS-INFO n=$n rerand load (FileSyscall=no): kexec_file_load calls $f, kexec_load calls $l, loaded $(cat /sys/kernel/kexec_loaded)"
	kexec -s -u >/dev/null 2>&1
	echo 0 >"$T/events/syscalls/sys_enter_kexec_file_load/enable"
	echo 0 >"$T/events/syscalls/sys_enter_kexec_load/enable"
}

# x_next STEP: the step after STEP ("" after the last).
x_next() {
	local s prev=""
	for s in $XSTEPS; do
		[ "$prev" = "$1" ] && { echo "$s"; return; }
		prev=$s
	done
}

# x_check STEP: this boot, after STEP.
x_check() {
	local step=$1 prev js pj log succ0 fails unp0 unp want worigin
	prev=$(cat "$D/xprev-boot-id")
	succ0=$(cat "$D/xsuccesses")
	unp0=$(cat "$D/xunplanned")
	pj=$(journalctl -b -1 -o short-monotonic --no-pager 2>&1)
	[ "$step" = soft-reboot ] && pj=$(journalctl -b 0 -o short-monotonic --no-pager 2>&1)
	echo "$pj" >"$D/out/journal.x-$step.txt"
	wait_for 120 sh -c 'rerand status --json 2>/dev/null | grep -q "\"verify\":\""'
	js=$(rerand status --json 2>&1)
	echo "$js" >"$D/out/status.x-$step.json"
	log=$(journalctl -b -u rerandd -o cat --no-pager 2>&1)
	# (A soft-reboot keeps the boot: only rerandd's lines since then.)
	[ "$step" = soft-reboot ] && log=$(journalctl -u rerandd --since "$(cat "$D/xtime")" -o cat --no-pager 2>&1)
	# Failures in a row and in all: neither may move.
	fails=$(jval "$js" consecutive_failures)/$(jval "$js" failures_total)
	say "RRS-INFO n=$n after $step: boot_id=$boot_id verify=$(jval "$js" verify) successes=$(jval "$js" successes) failures=$fails boot_origin=$(jval "$js" boot_origin) unplanned_boots=$(jval "$js" unplanned_boots) kexec_loaded_before=$(cat "$D/xkexec-loaded" 2>/dev/null) now=$(cat /sys/kernel/kexec_loaded)"
	# rerand status says whose boot it is: a kexec into rerandd's image
	# (systemctl reboot, reboot) is rerandd's, counted as a rerandomization
	# (RerandomizeOtherReboots=yes, the default: issue 38); the others are
	# new boots rerandd did not plan; the soft-reboot keeps the boot.
	unp=$(jval "$js" unplanned_boots)
	want=$((unp0 + 1)) worigin=unplanned
	case $step in
	soft-reboot) want=$unp0 worigin=$(cat "$D/xorigin") ;;
	systemctl-reboot | reboot) want=$unp0 worigin=rerandd ;;
	esac
	tap "$([ "$(jval "$js" boot_origin)" = "$worigin" ] && [ "$unp" = "$want" ]; echo $?)" \
		"rerand status after \`$step\`: boot_origin $worigin, unplanned_boots $unp0 -> $want" \
		"boot_origin $(jval "$js" boot_origin), unplanned_boots $unp; $(rerand status 2>&1 | grep -E '^(booted by|reboots):' | tr '\n' '|')"
	case "$step" in
	systemctl-reboot | reboot)
		tap "$([ "$prev" != "$boot_id" ]; echo $?)" "after \`$step\`: a new boot id"
		grep -q 'System is rebooting with kexec' <<<"$pj" &&
			grep -Eq '(Starting|Finished) systemd-kexec\.service' <<<"$pj"
		tap $? "\`$step\` with an image staged went to kexec through logind (systemd turned the reboot into a kexec)" \
			"$(grep -E 'System is|kexec' <<<"$pj" | tail -n 3 | tr '\n' '|')"
		tap "$(! grep -q 'rerandd\[[0-9]*\]: rerandomizing reboot (' <<<"$pj"; echo $?)" \
			"rerandd did not decide that reboot (no 'rerandomizing reboot' line before it)"
		grep -q "rerandd\[[0-9]*\]: the system is rebooting by kexec into rerandd's image" <<<"$pj"
		tap $? "rerandd saw the shutdown's kexec into its image and recorded it as a rerandomization" \
			"$(grep 'rerandd\[' <<<"$pj" | tail -n 3 | tr '\n' '|')"
		vj=$(rerand verify --json 2>&1)
		echo "$vj" >"$D/out/verify.x-$step.json"
		tap "$([ "$(jval "$vj" randomized)" = true ] && [ "$(jval "$js" verify)" = randomized ]; echo $?)" \
			"after \`$step\` the kernel is rerandomized: rerand verify and rerandd's status say randomized" "$vj | $js"
		grep -q '^rerandomizing reboot verified: this boot is randomized' <<<"$log"
		tap $? "rerandd verified the boot as a rerandomization" "$(grep -iE 'boot|verif' <<<"$log" | head -n 3 | tr '\n' '|')"
		tap "$([ "$(jval "$js" successes)" = "$((succ0 + 1))" ] && [ "$fails" = 0/0 ]; echo $?)" \
			"rerandd counted it as a success, no failure (successes $succ0 -> $((succ0 + 1)), failures 0/0)" "$js"
		say "RRS-INFO n=$n xverified boot_id=$boot_id after=$step entropy_bits=$(jval "$js" entropy_bits)"
		;;
	soft-reboot)
		tap "$([ "$prev" = "$boot_id" ]; echo $?)" "after \`systemctl soft-reboot\`: the same boot id (the kernel stayed)"
		grep -q 'soft-reboot' <<<"$pj"
		tap $? "the journal shows the soft-reboot" "$(grep -i 'soft' <<<"$pj" | tail -n 2 | tr '\n' '|')"
		tap "$([ "$(prop ExecMainStartTimestampMonotonic)" -gt "$(cat "$D/xrerandd-start")" ]; echo $?)" \
			"rerandd was started again by the new userspace"
		tap "$([ "$(jval "$js" successes)" = "$succ0" ] && [ "$fails" = 0/0 ] && [ "$(jval "$js" verify)" = randomized ] &&
			! grep -Eq 'rerandomizing reboot (verified|failed|was weak)|booted without rerandd|did not happen' <<<"$log"; echo $?)" \
			"rerandd counted no reboot and no failure after the soft-reboot (successes $succ0, failures in a row/in all $fails, still randomized)" \
			"$js; $(grep -Ei 'boot|verif' <<<"$log" | head -n 3 | tr '\n' '|')"
		;;
	kexec-default)
		tap "$([ "$prev" != "$boot_id" ]; echo $?)" "after \`systemctl kexec\` with nothing staged: a new boot id"
		say "RRS-INFO n=$n systemctl kexec said: $(tr '\n' '|' <"$D/xkexec.out" | cut -c1-300)"
		grep -q 'System is rebooting with kexec' <<<"$pj"
		tap $? "systemd loaded the boot loader's default entry itself and kexec'd it" \
			"$(tr '\n' '|' <"$D/xkexec.out"); $(grep -E 'kexec' <<<"$pj" | tail -n 3 | tr '\n' '|')"
		tap "$([ "$(jval "$js" verify)" = absent ] && [ "$(jval "$js" randomized)" != true ]; echo $?)" \
			"that boot is not rerand's: rerand status says verify absent" "$js"
		grep -q '^booted without rerandd: this boot is absent, not rerand'"'"'s' <<<"$log"
		tap $? "rerandd says the boot is not rerand's" "$(grep -iE 'boot|verif' <<<"$log" | head -n 3 | tr '\n' '|')"
		tap "$([ "$(jval "$js" successes)" = "$succ0" ] && [ "$fails" = 0/0 ]; echo $?)" \
			"rerandd counted it neither as a success nor as a failure" "$js"
		;;
	skip-auto-kexec)
		tap "$([ "$prev" != "$boot_id" ]; echo $?)" "after SYSTEMCTL_SKIP_AUTO_KEXEC=1 systemctl reboot: a new boot id"
		tap "$(! grep -Eq 'System is rebooting with kexec|systemd-kexec\.service' <<<"$pj" &&
			grep -q 'System is rebooting' <<<"$pj"; echo $?)" \
			"with SYSTEMCTL_SKIP_AUTO_KEXEC=1 logind rebooted without kexec, the image staged all the same (kexec_loaded was $(cat "$D/xkexec-loaded"))" \
			"$(grep -E 'System is|kexec' <<<"$pj" | tail -n 3 | tr '\n' '|')"
		tap "$([ "$(jval "$js" verify)" = absent ] && [ "$(cat /proc/cmdline)" = "$(cat "$D/cmdline.0")" ]; echo $?)" \
			"a firmware boot (QEMU's command line again), not rerand's: verify absent" "$js; $(cat /proc/cmdline)"
		grep -q '^booted without rerandd: this boot is absent' <<<"$log" &&
			[ "$(jval "$js" successes)" = "$succ0" ] && [ "$fails" = 0/0 ]
		tap $? "rerandd says so and counts nothing" "$js; $(grep -iE 'boot|verif' <<<"$log" | head -n 2 | tr '\n' '|')"
		;;
	esac
}

# x_run STEP: run STEP from this boot.
x_run() {
	local step=$1 rc
	wait_for 300 sh -c 'rerand status --json 2>/dev/null | grep -q "\"staged\":true"'
	echo "$boot_id" >"$D/xprev-boot-id"
	jval "$(rerand status --json 2>&1)" successes >"$D/xsuccesses"
	jval "$(rerand status --json 2>&1)" unplanned_boots >"$D/xunplanned"
	jval "$(rerand status --json 2>&1)" boot_origin >"$D/xorigin"
	prop ExecMainStartTimestampMonotonic >"$D/xrerandd-start"
	echo "$step" >"$D/xstep"
	date '+%Y-%m-%d %H:%M:%S' >"$D/xtime"
	if [ "$step" = kexec-default ]; then
		# Nothing staged: rerandd stopped (it would stage again), its image
		# unloaded; the boot loader's entry as systemd reads it.
		systemctl stop rerandd.service
		kexec -u >"$D/xunload.out" 2>&1
		[ "$(cat /sys/kernel/kexec_loaded)" = 0 ] || kexec -s -u >>"$D/xunload.out" 2>&1
		tap "$([ "$(cat /sys/kernel/kexec_loaded)" = 0 ]; echo $?)" \
			"before \`systemctl kexec\`: rerandd stopped, nothing staged (kexec -u)" "$(tr '\n' '|' <"$D/xunload.out")"
		v=$(uname -r)
		mkdir -p /run/boot-loader-entries/loader/entries
		ln -sf "/boot/vmlinuz-$v" /run/boot-loader-entries/vmlinuz
		printf 'title Debian %s\nlinux /vmlinuz\noptions %s\n' "$v" "$(cat "$D/cmdline.0")" \
			>/run/boot-loader-entries/loader/entries/debian.conf
	fi
	cat /sys/kernel/kexec_loaded >"$D/xkexec-loaded"
	sync -f "$D"
	say "RRS-INFO n=$n running $step (kexec_loaded $(cat /sys/kernel/kexec_loaded))"
	case "$step" in
	systemctl-reboot) systemctl reboot ;;
	reboot) reboot ;;
	soft-reboot) systemctl soft-reboot ;;
	kexec-default) systemctl kexec >"$D/xkexec.out" 2>&1 ;;
	skip-auto-kexec) SYSTEMCTL_SKIP_AUTO_KEXEC=1 systemctl reboot ;;
	esac
	rc=$?
	sync -f "$D"
	tap "$rc" "\`$step\` accepted (exit $rc)" "$(cat "$D/xkexec.out" 2>/dev/null | tr '\n' '|')"
	if [ "$rc" -ne 0 ]; then
		# Nothing happened: say so and end the run here.
		[ "$step" = kexec-default ] && systemctl start rerandd.service
		say "RRS-DONE n=$n"
		systemctl poweroff
	fi
}

# x_main: called by the agent after its own checks when n >= target.
x_main() {
	local last next
	last=$(cat "$D/xstep" 2>/dev/null)
	if [ "$n" -eq "$target" ]; then
		# rerandd's own reboots are done: hold it from rebooting by itself.
		printf '[Policy]\nMaxLayoutAge=1d\n' >/etc/rerand/rerand.conf.d/99-e2e-hold.conf
		systemctl reload rerandd.service
		last=""
	else
		x_check "$last"
	fi
	next=$(x_next "$last")
	[ -n "$last" ] || next=${XSTEPS%% *}
	if [ -z "$next" ]; then
		x_probe
		journalctl -b -o export --no-pager >"$D/out/journal.boot$n.export" 2>/dev/null
		sync -f "$D"
		say "RRS-DONE n=$n"
		systemctl poweroff
		return
	fi
	journalctl -b -o export --no-pager >"$D/out/journal.boot$n.export" 2>/dev/null
	x_run "$next"
}
