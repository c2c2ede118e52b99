#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The stage fails safe: a guest stages a rerand image whose first LZ4 segment
# is corrupted, with stock `kexec -l` (bypassing rerand load's checks), and
# kexecs it.  The stage must print its reason on COM1 (rerand.debug) and
# reset the machine; QEMU runs WITHOUT -no-reboot, so the firmware boots the
# original kernel again, whose init sees the mark it left on a small NVMe
# disk, runs `rerand verify` (no record: exit 2) and powers off.  A stage
# that halted would leave the guest silent until the timeout: not ok.
# short: SeaBIOS; long: also SeaBIOS without an i8042 (port 0xCF9 resets)
# and OVMF.  Prints TAP lines, with the plan first: 6 per run (run-check.sh
# holds the suite to it, so a run that stops early cannot drop a case).
set -u
. "$(dirname "$0")/lib.sh"

what=${1:-short}
case "$what" in short|long) ;; *) echo "usage: $0 short|long" >&2; exit 2 ;; esac

if [ -z "${RERAND_KERNELS:-}" ] || [ ! -d "$RERAND_KERNELS" ]; then
	echo "ok - e2e failsafe # SKIP no test kernels (RERAND_KERNELS)"
	exit 0
fi
# The plan: run's six lines for each run below (every early return prints
# one not ok instead, which the plan then also counts short).
runs=1
[ "$what" = long ] && runs=3
echo "1..$((6 * runs))"
command -v qemu-system-x86_64 >/dev/null ||
	{ echo "not ok - e2e failsafe: qemu-system-x86_64 missing (scripts/deps.sh check)"; exit 0; }
[ -x "$E2E_RERAND" ] || { echo "not ok - e2e failsafe: $E2E_RERAND is not built (make all)"; exit 0; }
# The marker disk is NVMe: the cloud kernels have it built in.
kernel=${RRF_KERNEL:-}
if [ -z "$kernel" ]; then
	for k in "$RERAND_KERNELS"/vmlinuz-6.12*cloud* "$RERAND_KERNELS"/vmlinuz-*cloud*; do
		[ -r "$k" ] && { kernel=$k; break; }
	done
fi
[ -n "$kernel" ] && [ -r "$kernel" ] ||
	{ echo "not ok - e2e failsafe: no cloud kernel in $RERAND_KERNELS (NVMe must be built in)"; exit 0; }

# corrupt IN OUT: copy the image with its first segment overwritten by 0xff
# bytes (an LZ4 literal length that runs past the block: the decode fails
# for sure, where flipping a few bytes might only change literals).
corrupt() {
	python3 - "$1" "$2" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
sects = b[0x1f1] or 4
pm = (sects + 1) * 512
if b[pm + 0x10:pm + 0x18] != b"RRLOCATE":
    sys.exit("%s: no rerand locator at +0x10 of the protected-mode part" % sys.argv[1])
hdr = pm + struct.unpack_from("<I", b, pm + 0x18)[0]
if b[hdr:hdr + 8] != b"RERANDIH":
    sys.exit("%s: no rerand image header" % sys.argv[1])
codec, nseg = struct.unpack_from("<II", b, hdr + 16)
if codec != 1 or nseg < 1:
    sys.exit("%s: codec %d: want LZ4 segments" % (sys.argv[1], codec))
off, size = struct.unpack_from("<QQ", b, hdr + 128 + 24)
b[pm + off:pm + off + size] = b"\xff" * size
open(sys.argv[2], "wb").write(b)
print("segment 0: %d bytes overwritten" % size)
PY
}

# run NAME FIRMWARE MACHINE RESET: one guest, two boots; RESET is what the
# stage's reset line must name (the first way that works on that machine).
run() {
	local name=$1 fw=$2 machine=$3 want_reset=$4
	local dir="$E2E_BUILD/runs/failsafe-$name" image bad initrd
	mkdir -p "$dir"
	image=$(e2e_image rerand "$kernel") || { echo "not ok - failsafe $name: rerand image failed"; return; }
	bad="$dir/corrupt.img"
	local what
	what=$(corrupt "$image" "$bad" 2>&1) || { echo "not ok - failsafe $name: cannot corrupt the image: $what"; return; }
	e2e_note "failsafe $name: $(basename "$kernel"), fw=$fw, machine $machine, $what"
	initrd=$(E2E_INIT="$E2E_DIR/failsafe-init.sh" e2e_initrd rerand "$bad") ||
		{ echo "not ok - failsafe $name: cannot build the initramfs"; return; }
	rm -f "$dir/marker.img" && truncate -s 1M "$dir/marker.img" ||
		{ echo "not ok - failsafe $name: cannot make the marker disk $dir/marker.img"; return; }

	local log="$dir/serial.log" tmo=${E2E_FAILSAFE_TIMEOUT:-420}
	# No -no-reboot: the reset must bring the firmware back.
	local args=(-accel "$E2E_ACCEL" -machine "$machine" -m 1G -smp 1 -cpu max -nographic -monitor none
		-serial stdio -kernel "$kernel" -initrd "$initrd"
		-append "console=ttyS0,115200 panic=-1 no_timer_check"
		-drive "if=none,id=mark,format=raw,file=$dir/marker.img"
		-device "nvme,serial=rrfailsafe,drive=mark")
	if [ "$fw" = ovmf ]; then
		cp "$E2E_OVMF_VARS" "$dir/vars.fd" ||
			{ echo "not ok - failsafe $name: cannot copy $E2E_OVMF_VARS"; return; }
		args+=(-drive "if=pflash,format=raw,readonly=on,file=$E2E_OVMF_CODE"
			-drive "if=pflash,format=raw,file=$dir/vars.fd")
	fi
	echo "qemu-system-x86_64 ${args[*]}" >"$log.cmd"
	local t0=$EPOCHSECONDS rc
	timeout -k 5 "$tmo" qemu-system-x86_64 "${args[@]}" </dev/null 2>"$log.stderr" | e2e_stamp >"$log"
	rc=${PIPESTATUS[0]}
	e2e_note "failsafe $name: QEMU exit $rc after $((EPOCHSECONDS - t0)) s (timeout $tmo s); log $log"

	local fail
	fail=$(grep -o 'FAILSAFE-FAIL.*' "$log" | head -n1)
	e2e_tap "$(grep -q 'FAILSAFE-KEXEC' "$log" && [ -z "$fail" ]; echo $?)" \
		"failsafe $name: first boot staged the corrupted image with stock kexec -l and ran kexec -e" "${fail:-no FAILSAFE-KEXEC}"
	local reason='rerand: stage: kernel segment does not decode (corrupt image) (resetting)'
	e2e_tap "$(grep -qF "$reason" "$log"; echo $?)" "failsafe $name: the stage printed its reason: '$reason'"
	local how
	how=$(grep -o 'rerand: stage: reset [a-z0-9 ]*' "$log" | tail -n1)
	e2e_tap "$([ "$how" = "rerand: stage: reset $want_reset" ]; echo $?)" \
		"failsafe $name: the last reset tried was '$want_reset'" "${how:-no reset line}"
	# The second boot must come after the stage's reason, and the original
	# kernel must have booted twice.
	local banners second
	banners=$(grep -c 'Linux version' "$log")
	second=$(awk -v r="$reason" 'index($0, r) { seen = 1 } seen && / FAILSAFE-BOOT n=2/ { print; exit }' "$log")
	e2e_tap "$([ -n "$second" ] && [ "$banners" -eq 2 ]; echo $?)" \
		"failsafe $name: the machine reset and booted again (kernel banners: $banners, want 2)" \
		"$([ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && echo "timeout: the guest never came back" || echo "QEMU exit $rc")"
	local v
	v=$(grep -o 'FAILSAFE-VERIFY rc=[0-9]*.*' "$log" | head -n1)
	e2e_tap "$(grep -Eq 'FAILSAFE-VERIFY rc=2 .*(no rerand status record|no setup_data in this boot)' <<<"$v"; echo $?)" \
		"failsafe $name: the second boot has no status record (rerand verify exits 2)" "${v:-no FAILSAFE-VERIFY}"
	e2e_tap "$([ "$rc" -eq 0 ] && grep -q 'FAILSAFE-DONE' "$log"; echo $?)" \
		"failsafe $name: the guest powered off by itself (QEMU exit $rc)"
	if [ -n "$second" ]; then
		local t1 t2
		t1=$(grep -F "$reason" "$log" | head -n1 | cut -d' ' -f1)
		t2=$(cut -d' ' -f1 <<<"$second")
		e2e_note "failsafe $name: $(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.1f", b - a }') s from the stage's reason to the second boot's init"
	fi
}

run seabios seabios q35 "through the keyboard controller"
if [ "$what" = long ]; then
	# Without an i8042 the keyboard pulse does nothing: port 0xCF9 must.
	run seabios-no-i8042 seabios q35,i8042=off "through port 0xcf9"
	run ovmf ovmf q35 "through the keyboard controller"
fi
exit 0
