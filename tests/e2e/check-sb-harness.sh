#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Self-test of the Secure Boot checker (lib-sb.sh) on made-up serial logs,
# no QEMU: a clean log must pass, and each defect must turn its TAP line
# into "not ok".
set -u
. "$(dirname "$0")/lib-sb.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
RAM="00001000-0009efff,00100000-3e3a5fff"
SRC=kernel-seed+rdrand+rdtsc
UNSIGNED_MSG="rerand: /gen0/image.unsigned: not signed, and the kernel is locked down (lockdown: integrity), so kexec_file_load accepts only signed images. Sign it with 'rerand image --sign-key KEY --sign-cert CERT' and enroll it with 'mokutil --import CERT'"
UNTRUSTED_MSG="rerand: /gen0/image.untrusted: the kernel refused the image's signature: it is signed by \"CN=$SB_UNTRUSTED_CN\", a key in none of the keyrings kexec_file_load trusts: .secondary_trusted_keys, .machine (MOK) and .platform (UEFI db)"

# chain_log [SED-EXPR]: a clean 5-kexec rerand chain, edited by SED-EXPR.
chain_log() {
	local g v p
	{
		echo "1000.0 E2E-HOST-START"
		# the firmware's map, as the firmware-booted kernel prints it (lib.sh)
		echo "1000.1 [    0.000000] BIOS-e820: [mem 0x0000000000000000-0x000000000009ffff] usable"
		echo "1000.1 [    0.000000] BIOS-e820: [mem 0x0000000000100000-0x000000003e3a5fff] usable"
		for g in 0 1 2 3 4 5; do
			v=$(printf 'ffffffff%x' $((0x81000000 + (g + 1) * 0x4200000)))
			p=$((0x2000000 + g * 0x1400000))
			echo "10$g.1 E2E-SB role=chain gen=$g lockdown=integrity bp_secure_boot=3 loader=rerand"
			if [ "$g" = 0 ]; then
				echo "100.2 E2E-SB-BASE what=kexec-l rc=255 loaded=0 msg=kexec_load failed: Permission denied"
				echo "100.3 E2E-SB-BASE what=kexec-s-l rc=0 loaded=1 msg="
				echo "100.4 E2E-SB-BASE what=kexec-s-u rc=0 loaded=0 msg="
			fi
			local ver=none
			[ "$g" -gt 0 ] && ver="rc=0 {\"randomized\":true,\"result\":\"randomized\",\"sources\":\"$SRC\",\"weak\":false,\"entropy_grade\":\"hardware\",\"crash\":false}"
			printf '10%s.5 E2E-GEN gen=%s text=%s code=0x%x-%x loadflags=0x%s ram=%s rngseed=%s verify=%s\n' \
				"$g" "$g" "$v" "$p" $((p + 0xfffff)) "$([ "$g" = 0 ] && echo 83 || echo 02)" "$RAM" \
				"$([ "$g" = 0 ] && echo 0 || echo 1)" "$ver"
			[ "$g" -lt 5 ] && echo "10$g.6 E2E-SB-LOAD gen=$g rc=0 loaded=1 calls=kexec,-s,-l,--initrd,--append msg="
			if [ "$g" = 0 ]; then
				echo "100.7 E2E-SB-REFUSE kind=unsigned rc=1 loaded=1 calls=none msg=$UNSIGNED_MSG"
				echo "100.8 E2E-SB-REFUSE kind=untrusted rc=1 loaded=1 calls=kexec,-s,-l,--initrd,--append msg=$UNTRUSTED_MSG"
			fi
		done
		echo "106.0 E2E-DONE gen=5"
		echo "106.1 E2E-HOST-END"
	} | sed "${1:-}"
}

# crash_dir DIR PHYS [SED-EXPR]: a clean crash run whose crash kernel sits
# at PHYS, in DIR (serial.log, rc, secs).
crash_dir() {
	local d=$1 p=$2
	mkdir -p "$d"
	echo 0 >"$d/rc"; echo 90 >"$d/secs"
	{
		echo "1000.0 E2E-HOST-START"
		echo "1001.0 E2E-SB role=first gen=0 lockdown=integrity bp_secure_boot=3 loader=rerand"
		echo "1001.1 E2E-SB-BASE what=kexec-l rc=255 loaded=0 msg=kexec_load failed: Permission denied"
		echo "1001.2 E2E-SB-BASE what=kexec-s-l rc=0 loaded=1 msg="
		echo "1001.3 E2E-SB-BASE what=kexec-s-u rc=0 loaded=0 msg="
		echo "1001.4 E2E-FIRST text=ffffffff95400000 code=0x20a00000-219fffff crash=10000000-1fffffff"
		echo "1001.5 E2E-SB-LOAD gen=0 crash=1 rc=0 loaded=1 calls=kexec,-s,-p,--initrd,--append msg="
		echo "1001.6 E2E-SB-REFUSE kind=crash-untrusted rc=1 loaded=0 calls=kexec,-s,-p msg=$UNTRUSTED_MSG; check /sys/kernel/kexec_crash_loaded"
		echo "1001.7 E2E-PANIC loader=rerand"
		echo "1002.0 E2E-SB role=crash gen=0 lockdown=integrity bp_secure_boot=3 loader=rerand"
		printf '1002.1 E2E-CRASH text=ffffffffb2400000 code=0x%x-%x loadflags=0x02 verify=rc=0 {"randomized":true,"sources":"%s","crash":true,"phys_slots":100}\n' \
			"$p" $((p + 0xffffff)) "$SRC"
		echo "1002.2 E2E-DONE role=crash"
		echo "1002.3 E2E-HOST-END"
	} | sed "${3:-}" >"$d/serial.log"
}

n=0
# expect WANT PATTERN CMD...: the TAP line of CMD's output matching PATTERN
# is WANT (ok or not-ok); a clean run (PATTERN "") must have no not ok.
expect() {
	local want=$1 pat=$2; shift 2
	local out line
	n=$((n + 1))
	out=$("$@" 2>&1)
	if [ -z "$pat" ]; then
		if grep -q '^not ok' <<<"$out" || ! grep -q '^ok' <<<"$out"; then
			echo "not ok $n - clean input passes: $*"
			grep '^not ok' <<<"$out" | sed 's/^/#   /'
		else
			echo "ok $n - clean input passes: $(grep -c '^ok' <<<"$out") checks of $1"
		fi
		return
	fi
	line=$(grep -E '^(not )?ok ' <<<"$out" | grep -E -- "$pat" | head -n1)
	case "$want:$line" in
	ok:"ok "*|not-ok:"not ok "*) echo "ok $n - $want: ${line:0:150}" ;;
	*) echo "not ok $n - want $want for /$pat/, got: ${line:-no such line}" ;;
	esac
}

# The whole chain judge for the clean log and the lib.sh checks; one part
# for each other defect (fewer forks: this runs in make check).
judge_chain() { chain_log "$1" >"$tmp/chain.log"; sb_check_chain t "$tmp/chain.log" 0 5 rerand 1; sb_check_refusals t "$tmp/chain.log"; }
j_lock() { chain_log "$1" >"$tmp/chain.log"; sb_check_lockdown t "$tmp/chain.log" chain 5; }
j_base() { chain_log "$1" >"$tmp/chain.log"; sb_check_base t "$tmp/chain.log"; }
j_stage() { chain_log "$1" >"$tmp/chain.log"; sb_check_staging t "$tmp/chain.log" 5 rerand; }
j_kseed() { chain_log "$1" >"$tmp/chain.log"; sb_check_kseed t "$(e2e_parse "$tmp/chain.log")"; }
j_refuse() { chain_log "$1" >"$tmp/chain.log"; sb_check_refusals t "$tmp/chain.log"; }

expect ok "" judge_chain ""
expect not-ok 'locked down in every boot' j_lock '/gen=3 /s/lockdown=integrity/lockdown=none/'
expect not-ok 'locked down in every boot' j_lock '/role=chain gen=2 /s/bp_secure_boot=3/bp_secure_boot=2/'
expect not-ok 'locked down in every boot' j_lock '/E2E-SB role=chain gen=4 /d'
expect not-ok 'kexec -l \(kexec_load\) refused' j_base '/what=kexec-l /s/rc=255 loaded=0/rc=0 loaded=1/'
expect not-ok 'kexec -s -l \(kexec_file_load\) of the signed' j_base '/what=kexec-s-l /s/rc=0/rc=1/'
expect not-ok 'picked kexec_file_load' j_stage '/E2E-SB-LOAD gen=2 /s/calls=kexec,-s,-l/calls=kexec,-l/'
expect not-ok 'picked kexec_file_load' j_stage '/E2E-SB-LOAD gen=1 /s/calls=kexec,-s,-l,--initrd,--append/calls=kexec,-s,-l;kexec,-l/'
expect not-ok 'picked kexec_file_load' j_stage '/E2E-SB-LOAD gen=3 /d'
expect not-ok 'kernel-seed\) among' j_kseed '/E2E-GEN gen=4 /s/kernel-seed+//'
expect not-ok 'entropy sources of -cpu max' judge_chain '/E2E-GEN gen=4 /s/kernel-seed+//'
expect not-ok 'entropy sources of -cpu max' judge_chain '/E2E-GEN gen=2 /s/"sources":"/"sources":"seed+/'
expect not-ok 'entropy sources of -cpu max' judge_chain '/E2E-GEN gen=3 /s/"weak":false/"weak":true/'
expect not-ok 'entropy sources of -cpu max' judge_chain '/E2E-GEN gen=2 /s/"entropy_grade":"hardware"/"entropy_grade":"seed"/'
expect not-ok 'physical bases distinct' judge_chain '/E2E-GEN gen=[123] /s/code=0x[0-9a-f]*-[0-9a-f]*/code=0x3400000-34fffff/'
expect not-ok 'randomized after every kexec' judge_chain '/E2E-GEN gen=2 /s/"randomized":true/"randomized":false/'
expect not-ok 'unsigned image is refused' j_refuse '/kind=unsigned/s/calls=none/calls=kexec,-s,-l/'
expect not-ok 'unsigned image is refused' j_refuse '/kind=unsigned/s/loaded=1/loaded=0/'
expect not-ok 'unsigned image is refused' j_refuse '/kind=unsigned/s/rc=1/rc=0/'
expect not-ok 'unsigned image is refused' j_refuse '/kind=unsigned/s/mokutil --import//'
expect not-ok 'unsigned image is refused' j_refuse '/kind=unsigned/s/locked down (lockdown: integrity)/refused/'
expect not-ok 'unsigned image is refused' j_refuse '/kind=unsigned/d'
expect not-ok 'unsigned image is refused' j_refuse '/E2E-GEN gen=1 /s/verify=rc=0/verify=rc=1/'
expect not-ok 'key not in db is refused' j_refuse '/kind=untrusted/s/rerand e2e untrusted signer/someone/'
expect not-ok 'key not in db is refused' j_refuse '/kind=untrusted/s/keyrings.*$/no trust/'
expect not-ok 'key not in db is refused' j_refuse '/kind=untrusted/s/loaded=1/loaded=0/'
expect not-ok 'all 6 generations' judge_chain '/E2E-DONE/d'

judge_crash() { crash_dir "$tmp/c1" 0x12000000 "$1"; sb_check_crash t "$tmp/c1" rerand; }
expect ok "" judge_crash ""
expect not-ok 'crash kernel booted' judge_crash '/E2E-CRASH/d'
expect not-ok 'picked kexec -s -p' judge_crash '/E2E-SB-LOAD/s/kexec,-s,-p/kexec,-p/'
expect not-ok 'picked kexec -s -p' judge_crash '/E2E-SB-LOAD/s/loaded=1/loaded=0/'
expect not-ok 'crash image signed by a key not in db' judge_crash '/crash-untrusted/s/; check .*$//'
expect ok 'crash image signed by a key not in db' judge_crash '/crash-untrusted/s/loaded=0/loaded=1/; /crash-untrusted/s/; check .*$//'
expect not-ok 'crash kernel are locked down' judge_crash '/role=crash /s/lockdown=integrity/lockdown=none/'
expect not-ok 'crash kernel are locked down' judge_crash '/role=first /s/lockdown=integrity/lockdown=none/'
expect not-ok 'inside the crash region' judge_crash '/E2E-CRASH/s/"crash":true/"crash":false/'
expect not-ok 'inside the crash region' judge_crash '/E2E-CRASH/s/kernel-seed+//'
expect not-ok 'inside the crash region' judge_crash '/E2E-CRASH/s/verify=rc=0/verify=rc=1/'
expect not-ok 'inside the crash region' judge_crash '/E2E-CRASH/s/loadflags=0x02/loadflags=0x00/'
expect not-ok 'inside the crash region' judge_crash '/E2E-FIRST/s/crash=10000000-1fffffff/crash=30000000-3fffffff/'
expect not-ok 'kexec -l \(kexec_load\) refused' judge_crash '/what=kexec-l /s/rc=255/rc=0/'

judge_distinct() { # PHYS2 PHYS3 [SED-EXPR for run 2]
	crash_dir "$tmp/d1" 0x12000000; sb_check_crash t "$tmp/d1" rerand >/dev/null
	crash_dir "$tmp/d2" "$1" "${3:-}"; sb_check_crash t "$tmp/d2" rerand >/dev/null
	crash_dir "$tmp/d3" "$2"; sb_check_crash t "$tmp/d3" rerand >/dev/null
	sb_check_crash_distinct t rerand "$tmp/d1" "$tmp/d2" "$tmp/d3"
}
expect ok 'offsets in the crash region distinct' judge_distinct 0x1d400000 0x1a000000
# One chance repeat is allowed.
expect ok 'offsets in the crash region distinct' judge_distinct 0x12000000 0x1a000000
expect not-ok 'offsets in the crash region distinct' judge_distinct 0x12000000 0x12000000
# The region moved by 32 MiB and the crash kernel with it: the same offset
# three times.
expect not-ok 'offsets in the crash region distinct' judge_distinct 0x14000000 0x12000000 '/E2E-FIRST/s/crash=10000000-1fffffff/crash=12000000-21ffffff/'
# The same address in a region 32 MiB lower is another offset (seen in a
# make check run: 0x1d400000 at +0x1400000 and at +0x5400000).
expect ok 'offsets in the crash region distinct' judge_distinct 0x12000000 0x1a000000 '/E2E-FIRST/s/crash=10000000-1fffffff/crash=0e000000-1dffffff/'
expect ok 'offsets in the crash region distinct' judge_distinct 0x12000000 0x12000000 '/E2E-FIRST/s/crash=10000000-1fffffff/crash=0e000000-1dffffff/'
judge_distinct_missing() { rm -f "$tmp/d2/row"; sb_check_crash_distinct t rerand "$tmp/d1" "$tmp/d2" "$tmp/d3"; }
expect not-ok 'offsets in the crash region distinct' judge_distinct_missing
judge_distinct_two() { sb_check_crash_distinct t rerand "$tmp/d1" "$tmp/d3"; }
expect not-ok 'offsets in the crash region distinct' judge_distinct_two

judge_fw() {
	mkdir -p "$tmp/fw"
	printf '\033[2JBdsDxe: loading Boot0002 "UEFI Misc Device" from PciRoot(0x0)/Pci(0x2,0x0)\r\nBdsDxe: starting Boot0002 "UEFI Misc Device" from PciRoot(0x0)/Pci(0x2,0x0)\r\nEFI stub: UEFI Secure Boot is enabled.\r\n' |
		sed "${1:-}" >"$tmp/fw/signed.log"
	printf 'BdsDxe: loading Boot0002 "UEFI Misc Device" from PciRoot(0x0)/Pci(0x2,0x0)\r\nBdsDxe: failed to load Boot0002 "UEFI Misc Device" from PciRoot(0x0)/Pci(0x2,0x0): Access Denied\r\nBdsDxe: No bootable option or device was found.\r\n' |
		sed "${2:-}" >"$tmp/fw/unsigned.log"
	sb_fw_judge t "$tmp/fw" 1
}
expect ok "" judge_fw
expect not-ok 'starts the snakeoil-signed' judge_fw '/EFI stub/d'
expect not-ok 'starts the snakeoil-signed' judge_fw 's/starting Boot0002/failed to load Boot0002/'
expect not-ok 'refuses the unsigned' judge_fw '' 's/Access Denied/Not Found/'
expect not-ok 'refuses the unsigned' judge_fw '' '$a EFI stub: UEFI Secure Boot is enabled.'
echo "1..$n"
