#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# End-to-end check of rerandd in a QEMU TCG guest (busybox init, no systemd),
# run by scripts/run-check.sh.  "auto": rerandd alone rerandomizes the guest
# by layout age, boot after boot; "events": kill -9 while staging, a WARN
# taint held then released, a stock boot counted as a failure, kill -9 after
# the attempt and in a hook.  Both runs end with the address-leak search.
# Prints TAP lines.
set -u
. "$(dirname "$0")/lib-daemon.sh"

what=${1:-short}
case "$what" in short|long) ;; *) echo "usage: $0 short|long" >&2; exit 2 ;; esac

e2e_kernels "e2e rerandd" || exit 0
kernel=$(rrd_preflight "e2e rerandd" qemu-system-x86_64 mkfs.ext4 debugfs cpio) ||
	{ echo "$kernel"; exit 0; }

# ---- log parsing -----------------------------------------------------------

# jget LOG BOOT TAG KEY: a scalar of the RRD-JSON line of that boot and tag.
jget() {
	grep -a "RRD-JSON n=$2 tag=$3 " "$1" | tail -n 1 |
		grep -o "\"$4\":\(\"[^\"]*\"\|[^,}]*\)" | head -n 1 | sed 's/^[^:]*://; s/"//g'
}
# boot_field LOG BOOT FIELD: a key=value of the RRD-BOOT line.
boot_field() {
	grep -a "RRD-BOOT n=$2 " "$1" | head -n 1 | grep -o " $3=[^ ]*" | head -n 1 | sed 's/^[^=]*=//'
}
boot_time() { grep -a "RRD-BOOT n=$2 " "$1" | head -n 1 | cut -d' ' -f1; }
tap() { e2e_tap "$@"; }

# expect_json NAME LOG BOOT TAG KEY=VALUE...: one TAP line.
expect_json() {
	local name=$1 log=$2 b=$3 tag=$4 kv got bad=""
	shift 4
	for kv in "$@"; do
		got=$(jget "$log" "$b" "$tag" "${kv%%=*}")
		[ "$got" = "${kv#*=}" ] || bad+=" ${kv%%=*}=${got:-missing}(want ${kv#*=})"
	done
	tap "$([ -z "$bad" ]; echo $?)" "$name" "boot $b status '$tag':$bad"
}

# run_guest NAME SCENARIO TARGET: prepare the disk, boot, extract the disk.
run_guest() {
	local name=$1 scen=$2 tgt=$3 dir="$E2E_BUILD/runs/$1" initrd rc=0 t0=$EPOCHSECONDS
	mkdir -p "$dir"
	initrd=$(rrd_initrd) || return 1
	local err
	err=$(rrd_disk "$scen" "$kernel" "$initrd" "$dir/disk.img" "$tgt" 2>&1) || {
		echo "not ok - $name: cannot make the disk"
		printf '%s\n' "$err" | tail -n 3 | sed 's/^/#   /'
		echo "#   $(df -h "$dir" | awk 'NR == 2 { print $4 " free on " $6 }')"
		return 1
	}
	local tmo=${RRD_TIMEOUT:-$((240 + 150 * tgt))}
	e2e_note "$name: $(basename "$kernel") scenario=$scen boots=$tgt timeout=${tmo}s"
	local slow=""
	if [ "$scen" = events ]; then
		slow="$dir/slow.img"
		rm -f "$slow"
		truncate -s 96M "$slow" && mkfs.ext4 -q -F -L rrslow -E lazy_itable_init=0,lazy_journal_init=0 "$slow" >/dev/null ||
			{ echo "not ok - $name: cannot make the slow disk"; return 1; }
	fi
	rrd_qemu "$kernel" "$initrd" "$dir/disk.img" "console=ttyS0,115200 panic=-1 no_timer_check quiet" \
		"$dir/serial.log" "$tmo" "$slow" || rc=$?
	rm -f "$slow"
	echo "$rc" >"$dir/qemu.rc"
	echo "$initrd" >"$dir/initrd.path"
	e2e_note "$name: QEMU exit $rc after $((EPOCHSECONDS - t0)) s"
	rrd_extract "$dir/disk.img" "$dir/files" || echo "not ok - $name: cannot read the disk back"
	return 0
}

# common_checks NAME LOG LAST: boots 0..LAST reported, RRD-DONE, no failure;
# every RRD-CHECK line of the guest.
common_checks() {
	local name=$1 log=$2 last=$3 dir=$4 why="" got want
	got=$(grep -ao 'RRD-BOOT n=[0-9]*' "$log" | sed 's/.*=//' | tr '\n' ' ')
	want=$(seq 0 "$last" | tr '\n' ' ')
	if grep -aq 'RRD-FAIL' "$log"; then
		why=$(grep -ao 'RRD-FAIL.*' "$log" | head -n 1)
	elif ! grep -aq 'RRD-DONE' "$log"; then
		why="no RRD-DONE (QEMU exit $(cat "$dir/qemu.rc"); a hang or a panic?) after boots: ${got:-none}"
	elif [ "$got" != "$want" ]; then
		why="boots reported: $got, want: $want"
	fi
	tap "$([ -z "$why" ]; echo $?)" "$name: boots 0..$last came up and the guest finished" "$why"
	[ -z "$why" ] || { e2e_note "$name: serial log $log"; grep -aE 'Kernel panic|BUG:|RRD-FAIL|RRD-BOOT' "$log" | tail -n 6 | cut -c1-200 | sed 's/^/#   /'; }
	local line
	while IFS= read -r line; do
		case "$line" in
		*" ok") tap 0 "$name: guest check ${line#*RRD-CHECK }" ;;
		*) tap 1 "$name: guest check $(echo "${line#*RRD-CHECK }" | cut -d' ' -f1)" "${line#*RRD-CHECK }" ;;
		esac
	done < <(grep -ao 'RRD-CHECK .*' "$log")
	grep -aoE 'RRD-(LATENCY|NOTE) .*' "$log" | tr -d '\r' |
		sed -e "s/^RRD-LATENCY/$name: rerand status during the stage:/" -e "s/^RRD-NOTE/$name:/" |
		while IFS= read -r line; do e2e_note "$line"; done
}

# randomized_boots NAME LOG FIRST LAST: every boot FIRST..LAST verified by
# `rerand verify` (exit 0, "randomized": true) with KASLR_FLAG set.
randomized_boots() {
	local name=$1 log=$2 bad="" b v lf
	for b in $(seq "$3" "$4"); do
		v=$(grep -a "RRD-BOOT n=$b " "$log" | head -n 1 | sed 's/.* verify=//')
		lf=$(boot_field "$log" "$b" loadflags)
		case "$v" in "rc=0 "*'"randomized":true'*) ;; *) bad+=" boot$b:verify(${v:0:40})" ;; esac
		[ -n "$lf" ] && [ $(( lf & 0x02 )) -ne 0 ] || bad+=" boot$b:KASLR_FLAG"
	done
	tap "$([ -z "$bad" ]; echo $?)" "$name: boots $3..$4 verified randomized by the stage" "${bad# }"
}

# distinct NAME LOG: at most one repeated virtual and physical base.
distinct() {
	local name=$1 log=$2 rows vrep prep
	rows=$(grep -ao 'RRD-BOOT n=[0-9]* text=[0-9a-f]* code=[0-9a-f]*' "$2")
	vrep=$(( $(wc -l <<<"$rows") - $(grep -o 'text=[0-9a-f]*' <<<"$rows" | sort -u | wc -l) ))
	prep=$(( $(wc -l <<<"$rows") - $(grep -o 'code=[0-9a-f]*' <<<"$rows" | sort -u | wc -l) ))
	tap "$([ "$vrep" -le 1 ] && [ "$prep" -le 1 ]; echo $?)" \
		"$name: bases distinct across boots (virtual repeats $vrep, physical $prep, allowed 1 each)"
}

# leak_check NAME DIR: the address-leak search over the product output of a
# run (rerandd's stderr, status text and JSON, verify, metrics, the state
# directory).  The cached image must be the host's own `rerand image` of the
# kernel, byte for byte: built from public input only, it cannot hold a
# guest address, and is left out of the text search.
leak_check() {
	local name=$1 dir=$2 addrs="$2/addrs.txt" f n hits img ref
	rrd_addrs "$dir/serial.log" >"$addrs"
	n=$(grep -c ' text ' "$addrs")
	local files=()
	# dmesg.N.txt: the kernel's own log of each boot (daemon-init.sh), kept
	# for reading slow boots; it is the kernel's output, not rerand's.
	while IFS= read -r f; do files+=("$f"); done < <(find "$dir/files" -type f ! -path '*/images/*' \
		! -name 'dmesg.*.txt' | sort)
	img=$(find "$dir/files/var/lib/rerand/images" -type f -name "*.img" 2>/dev/null | head -n 1)
	if [ -n "$img" ]; then
		local rr
		rr="$(cat "$dir/initrd.path" 2>/dev/null).rerand"
		ref=$("$rr" image "$kernel" -o "$dir/host-image.img" >/dev/null 2>&1 && e2e_sha "$dir/host-image.img")
		if [ -n "$ref" ] && [ "$(e2e_sha "$img")" = "$ref" ]; then
			tap 0 "$name: cached image $(basename "$img") is byte-identical to the host's rerand image"
		else
			# Not reproducible here: search its bytes like the rest.
			e2e_note "$name: cached image differs from the host's build (or none made): searched as bytes"
			files+=("$img")
		fi
		rm -f "$dir/host-image.img"
	fi
	hits=$(rrd_leak_search "$addrs" "${files[@]}") 
	tap "$([ "$n" -gt 0 ] && [ ${#files[@]} -gt 5 ] && [ -z "$hits" ]; echo $?)" \
		"$name: no _text, physical base or KASLR offset of $n boots in ${#files[@]} product files" \
		"$(head -n 3 <<<"$hits" | tr '\n' ';')"
	[ -z "$hits" ] || sed 's/^/#   leak: /' <<<"$hits" | head -n 20
}

# leak_selfcheck DIR: the search must catch an address planted in a copy of
# a clean product file, in every form (hex with and without 0x, upper case,
# without leading zeros, decimal); the clean copy must pass.  The text
# offset is searched only where rrd_needles gives it a needle (not below
# 16 MiB: shorter numbers match too much), so the boot planted is one whose
# offset has one, and that form is left out when no boot's has (seen: a last
# boot at +0x800000).
leak_selfcheck() {
	local dir=$1 addrs="$1/addrs.txt" s="$1/leak-selftest" miss="" text code b form
	local vb vo voff="" forms
	b=$(awk '$2 == "text" { print $1; exit }' "$addrs")
	while read -r vb _ vo; do
		[ -n "$(rrd_needles voff "$vo")" ] && { b=$vb; voff=$vo; }
	done < <(grep ' voff ' "$addrs")
	text=$(awk -v b="$b" '$1 == b && $2 == "text" { print $3 }' "$addrs")
	code=$(awk -v b="$b" '$1 == b && $2 == "phys" { print $3 }' "$addrs")
	[ -n "$text" ] && [ -n "$code" ] || { tap 1 "leak search self-check" "no addresses in $addrs"; return; }
	rm -rf "$s"; mkdir -p "$s"
	local src
	src=$(find "$dir/files/out" -name 'status.*.json' | head -n 1)
	cp "$src" "$s/clean"
	rrd_leak_search "$addrs" "$s" >/dev/null || miss+=" clean-copy-flagged"
	forms=("0x$text" "${text^^}" "$(printf '%u' $((16#$text)))" "$code" "0x$(printf '%X' $((16#$code)))" "$((16#$code))")
	[ -n "$voff" ] && forms+=("$(printf '%x' $((16#$voff)))")
	for form in "${forms[@]}"; do
		rm -f "$s/planted"
		{ head -c 40 "$src"; printf 'base=%s\n' "$form"; tail -c +41 "$src"; } >"$s/planted"
		rrd_leak_search "$addrs" "$s" >/dev/null && miss+=" $form"
	done
	rm -rf "$s"
	tap "$([ -z "$miss" ]; echo $?)" "leak search self-check: an address planted in ${#forms[@]} forms is caught, the clean copy passes" "missed:$miss"
}

# reboot_gaps LOG FIRST LAST: host seconds between boots, for the report.
reboot_gaps() {
	local b t p="" out=""
	for b in $(seq "$2" "$3"); do
		t=$(boot_time "$1" "$b")
		[ -n "$t" ] || continue
		[ -n "$p" ] && out+=" $(awk -v a="$p" -v b="$t" 'BEGIN { printf "%.0f", b - a }')s"
		p=$t
	done
	echo "${out# }"
}

# ---- the runs ------------------------------------------------------------

check_auto() {
	local name=$1 tgt=$2 dir="$E2E_BUILD/runs/$1" log b bad=""
	log="$dir/serial.log"
	common_checks "$name" "$log" "$tgt" "$dir"
	randomized_boots "$name" "$log" 1 "$tgt"
	distinct "$name" "$log"
	# Each reboot was rerandd's own, by layout age, after the hooks ran.
	for b in $(seq 0 $((tgt - 1))); do
		grep -q 'rerandomizing reboot (layout-age)' "$dir/files/out/rerandd.$b.run.log" 2>/dev/null ||
			bad+=" boot$b:no-layout-age-reboot-logged"
		grep -aq "RRD-HOOK boot=$b " "$log" || bad+=" boot$b:hook-not-run"
	done
	for b in $(seq 1 "$tgt"); do
		grep -q 'rerandomizing reboot verified' "$dir/files/out/rerandd.$b.run.log" 2>/dev/null ||
			bad+=" boot$b:not-verified-in-log"
	done
	tap "$([ -z "$bad" ]; echo $?)" "$name: $tgt unattended reboots by layout age, each verified by the next boot's rerandd" "${bad# }"
	# Counted, boot after boot, in `rerand status --json` and the text form.
	bad=""
	for b in $(seq 0 "$tgt"); do
		[ "$(jget "$log" "$b" start successes)" = "$b" ] || bad+=" boot$b:successes=$(jget "$log" "$b" start successes)"
		[ "$(jget "$log" "$b" start failures_total)" = 0 ] || bad+=" boot$b:failures_total=$(jget "$log" "$b" start failures_total)"
	done
	tap "$([ -z "$bad" ]; echo $?)" "$name: rerand status --json counts one more verified reboot per boot" "${bad# }"
	expect_json "$name: final status: randomized, $tgt verified, 0 failed, staged" "$log" "$tgt" start \
		verify=randomized randomized=true successes="$tgt" failures_total=0 consecutive_failures=0 \
		stopped=false staged=true reason=layout-age action=wait
	grep -aq "RRD-STATUS n=$tgt tag=start | reboots: *$tgt verified, 0 failed" "$log"
	tap $? "$name: rerand status (text) says '$tgt verified, 0 failed'"
	local m="$dir/files/out/metrics.$tgt.start.prom"
	grep -q '^rerand_reboots_total{result="success"} '"$tgt"'$' "$m" 2>/dev/null &&
		grep -q '^rerand_boot_randomized 1$' "$m" && grep -q '^rerand_consecutive_failures 0$' "$m"
	tap $? "$name: metrics file: $tgt successes, boot randomized, 0 consecutive failures"
	# The age at which each reboot went out (the pre-reboot hook measures
	# it against /proc/stat's btime): MaxLayoutAge=1min, Jitter=0.
	local ages="" a
	for b in $(seq 0 $((tgt - 1))); do
		a=$(grep -ao "RRD-HOOK boot=$b age=[0-9]*" "$log" | head -n 1 | sed 's/.*age=//')
		ages+=" ${a:-?}"
	done
	bad=$(for a in $ages; do [ "$a" != "?" ] && [ "$a" -ge 60 ] && [ "$a" -le 150 ] || echo "$a"; done)
	tap "$([ -z "$bad" ]; echo $?)" "$name: layout age at each reboot within [60 s, 150 s] (MaxLayoutAge=1min):$ages s"
	e2e_note "$name: seconds between boots (host clock): $(reboot_gaps "$log" 0 "$tgt")"
	e2e_note "$name: final rerand status:"
	grep -a "RRD-STATUS n=$tgt tag=start" "$log" | sed 's/^[0-9.]* RRD-STATUS n=[0-9]* tag=start | /#     /'
	leak_check "$name" "$dir"
}

check_events() {
	local name=$1 dir="$E2E_BUILD/runs/$1" log bad="" t
	log="$dir/serial.log"
	common_checks "$name" "$log" 2 "$dir"
	# kill -9 moments: the guest's RRD-CHECK state-* lines say the state
	# was sound after each; here, that the moments were really hit.
	local k
	for k in first-state-write rerand-load after-attempt in-hook; do
		grep -aq "RRD-KILL boot=[0-9] tag=$k hit=yes" "$log"
		tap $? "$name: kill -9 at the moment '$k' happened"
	done
	# The image went to a disk whose writes QEMU throttles: the moment is
	# held open, and the guest saw the partial temporary file and no image
	# at the kill, and the temporary file still there after it.
	grep -aq 'RRD-KILL boot=0 tag=image-write hit=yes' "$log" &&
		grep -aq 'RRD-KILLSEEN boot=0 tag=image-write tmp=yes final=no' "$log"
	tap $? "$name: kill -9 while the image was being written (temporary file present, no image)" \
		"$(grep -ao 'RRD-KILL\(SEEN\)\? boot=0 tag=image-write.*' "$log" | tr '\n' ' ')"
	e2e_note "$name: kills: $(grep -ao 'RRD-KILL boot=[0-9] tag=[^ ]* hit=[a-z]*\( after=[0-9]*ms\)\?' "$log" | sed 's/RRD-KILL boot=//' | tr '\n' ' ')"
	expect_json "$name: staged after the kills" "$log" 0 start staged=true successes=0 failures_total=0
	# A forged WARN/Oops line from userspace must not count.
	t=$(jget "$log" 0 fake-kmsg reason)
	tap "$([ -n "$t" ] && [ "$t" != kernel-oops ]; echo $?)" "$name: a WARNING/Oops written to /dev/kmsg by userspace is no trigger" "reason=$t"
	expect_json "$name: WARN taint with a hold: due (kernel-oops) but blocked by the hold" "$log" 0 held \
		action=blocked reason=kernel-oops blocker=hold hold=true
	expect_json "$name: still held 10 s later, no reboot" "$log" 0 held-later \
		action=blocked reason=kernel-oops blocker=hold
	grep -q 'rerandomizing reboot (kernel-oops)' "$dir/files/out/rerandd.0.run.log" 2>/dev/null
	tap $? "$name: after rerand unhold, rerandd rebooted for the WARN taint"
	local tr tb
	tr=$(grep -a 'RRD-RELEASED boot=0' "$log" | cut -d' ' -f1)
	tb=$(boot_time "$log" 1)
	if [ -n "$tr" ] && [ -n "$tb" ]; then
		e2e_note "$name: release to next boot: $(awk -v a="$tr" -v b="$tb" 'BEGIN { printf "%.0f", b - a }') s"
	fi
	randomized_boots "$name" "$log" 1 1
	expect_json "$name: boot 1 counted the taint reboot as verified" "$log" 1 start \
		verify=randomized successes=1 failures_total=0 consecutive_failures=0
	grep -aq 'RRD-STOCK' "$log"
	tap $? "$name: boot 1's reboot command kexec'd the stock vmlinuz"
	local v2
	v2=$(grep -a 'RRD-BOOT n=2 ' "$log" | sed 's/.* verify=//')
	case "$v2" in "rc=2 "*) t=0 ;; *) t=1 ;; esac
	tap "$t" "$name: boot 2 has no status record (rerand verify exit 2)" "${v2:0:60}"
	expect_json "$name: the stock boot counted as a failure" "$log" 2 start \
		verify=absent randomized=false successes=1 failures_total=1 consecutive_failures=1 stopped=false
	grep -q 'rerandomizing reboot failed' "$dir/files/out/rerandd.2.attempt.log" 2>/dev/null
	tap $? "$name: rerandd logged the failed rerandomizing reboot"
	grep -aq 'RRD-STATE boot=2 tag=after-attempt .*attempt=1 ' "$log"
	tap $? "$name: kill -9 after the attempt: the attempt is on disk"
	grep -q 'did not happen' "$dir/files/out/rerandd.2.hook.log" 2>/dev/null
	tap $? "$name: the restarted rerandd dropped the attempt of the same boot (not counted)"
	expect_json "$name: after both kills: counters unchanged, the 'now' survived (blocked by the blocker command)" \
		"$log" 2 final successes=1 failures_total=1 consecutive_failures=1 action=blocked \
		reason=requested blocker=blocker-command
	local tmps
	tmps=$(find "$dir/files/var/lib/rerand" -name '*.tmp*' | wc -l)
	e2e_note "$name: temporary files left in the state directory after the kills: $tmps"
	leak_check "$name" "$dir"
}

# RRD_SCENARIOS picks (default both); E2E_JOBS=1 boots one guest at a time.
runs=()
for s in ${RRD_SCENARIOS:-auto events}; do
	case "$s" in
	auto) runs+=("auto auto-$what $([ "$what" = long ] && echo 6 || echo 3)") ;;
	events) runs+=("events events-$what 2") ;;
	*) echo "not ok - e2e rerandd: RRD_SCENARIOS: unknown scenario $s (auto, events)"; exit 0 ;;
	esac
done
jobs=${E2E_JOBS:-2}

# Build the shared initramfs once before the parallel runs.
rrd_initrd >/dev/null || { echo "not ok - e2e rerandd: cannot build the guest initramfs"; exit 0; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
t0=$EPOCHSECONDS
running=0
for r in "${runs[@]}"; do
	read -r scen nm tgt <<<"$r"
	( run_guest "rerandd-$nm" "$scen" "$tgt" >"$out/$nm.run" 2>&1 ) &
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done
wait
for r in "${runs[@]}"; do
	read -r scen nm tgt <<<"$r"
	cat "$out/$nm.run"
	if [ "$scen" = auto ]; then check_auto "rerandd-$nm" "$tgt"; else check_events "rerandd-$nm"; fi
done
case " ${runs[*]} " in *" auto auto-"*) leak_selfcheck "$E2E_BUILD/runs/rerandd-auto-$what" ;; esac
e2e_note "e2e rerandd: ${#runs[@]} runs in $((EPOCHSECONDS - t0)) s"
exit 0
