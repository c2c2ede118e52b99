#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# End-to-end check run by scripts/run-check.sh: chained kexecs of the shared
# Debian kernels under QEMU TCG.  short: a covering set; long: every
# kernel x firmware x CPU x syscall; radar (tests/e2e/check-upstream.sh):
# each kernel of $RERAND_KERNELS on SeaBIOS with kexec_load and on OVMF with
# kexec_file, -cpu max.  Prints TAP lines.
set -u
. "$(dirname "$0")/lib.sh"

what=${1:-short}
case "$what" in short|long|radar) ;; *) echo "usage: $0 short|long|radar" >&2; exit 2 ;; esac
kexecs=${E2E_KEXECS:-5}
jobs=${E2E_JOBS:-2}

e2e_kernels "e2e core" || exit 0
command -v qemu-system-x86_64 >/dev/null ||
	{ echo "not ok - e2e core: qemu-system-x86_64 missing (scripts/deps.sh check)"; exit 0; }

mapfile -t kernels < <(ls "$RERAND_KERNELS"/vmlinuz-* 2>/dev/null | LC_ALL=C sort)
[ ${#kernels[@]} -gt 0 ] || { echo "not ok - e2e core: no vmlinuz-* in $RERAND_KERNELS"; exit 0; }
# E2E_FORCE_MODE=stock runs stock kexec by request; by default a missing
# build/rerand fails the suite instead of testing stock kexec in its place.
mode=${E2E_FORCE_MODE:-auto}
case "$mode" in
auto) mode=$(e2e_mode_auto 2>&1) || { echo "not ok - e2e core: $mode"; exit 0; } ;;
stock|rerand) ;;
*) echo "not ok - e2e core: E2E_FORCE_MODE=$mode: want stock or rerand"; exit 0 ;;
esac
e2e_note "e2e core: $what set, mode=$mode ($([ "$mode" = rerand ] && echo "rerand image + rerand load/verify" || echo "stock kexec of the original vmlinuz, as E2E_FORCE_MODE asked")), ${#kernels[@]} kernels, $kexecs kexecs per run, $jobs QEMU at a time"

# Runs: "kernel fw cpu syscall kexecs nokaslr [loader]".
runs=()
if [ "$what" = radar ]; then
	for k in "${kernels[@]}"; do
		runs+=("$k seabios max load $kexecs 0" "$k ovmf max file $kexecs 0")
	done
elif [ "$what" = short ]; then
	# An orthogonal array over (firmware, cpu, syscall): each value and each
	# pair of values appears once in every four kernels.
	# With fewer than four kernels (a fetched set has three) kernels repeat
	# so that every combination still runs.
	combos=("seabios max load" "seabios qemu64 file" "ovmf max file" "ovmf qemu64 load")
	nk=${#kernels[@]}
	for ((i = 0; i < (nk > 4 ? nk : 4); i++)); do
		runs+=("${kernels[$((i % nk))]} ${combos[$((i % 4))]} $kexecs 0")
	done
	runs+=("${kernels[$(( ${#kernels[@]} > 2 ? 2 : 0 ))]} seabios max load 1 1")
else
	for k in "${kernels[@]}"; do
		for fw in seabios ovmf; do
			for cpu in max qemu64; do
				for sc in load file; do
					runs+=("$k $fw $cpu $sc $kexecs 0")
				done
			done
		done
	done
	for k in "${kernels[@]}"; do runs+=("$k ovmf max file 1 1"); done
	# Staged by stock kexec, header seed zero (as a signed image is):
	# the kernel seed and the CPU must carry the choice.
	if [ "$mode" = rerand ]; then
		for k in "${kernels[@]}"; do runs+=("$k ovmf max file $kexecs 0 kexec"); done
	fi
fi

# The no-slot fallback (issue 24): one kexec onto a command line that leaves
# no place at or above 16 MiB (lib.sh, e2e_check_noslot).  Its figures are
# worked out for the 6.1 cloud kernel's size and the 1 GiB guest.
noslot_k=$(e2e_pick cloud61)
if [ "$what" = radar ]; then
	:       # the newest kernels only: the no-slot figures are the 6.1 kernel's
elif [ -n "$noslot_k" ] && [ "$mode" = rerand ]; then
	runs+=("$noslot_k seabios max load 1 noslot")
else
	echo "not ok - e2e core: no-slot run: needs the 6.1 cloud kernel (got '${noslot_k}') and rerand mode (got $mode)"
fi
# E2E_CORE_ONLY=noslot: that run alone (to try it without the others).
if [ "${E2E_CORE_ONLY:-}" = noslot ]; then
	runs=("${runs[@]: -1}")
	[[ "${runs[0]}" == *" noslot" ]] || runs=()
	kernels=("$noslot_k")
fi

# Build the images and initramfs first, one at a time, so parallel runs
# never race on the cache.
for k in "${kernels[@]}"; do
	img=$(e2e_image "$mode" "$k") && e2e_initrd "$mode" "$img" >/dev/null ||
		echo "not ok - e2e core: cannot prepare the guest for $(basename "$k")"
done

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
t0=$EPOCHSECONDS
running=0
for i in "${!runs[@]}"; do
	read -r k fw cpu sc n nok ldr <<<"${runs[$i]}"
	name="$(basename "$k" | sed 's/^vmlinuz-//')-$fw-$cpu-$sc"
	[ "$nok" = 1 ] && name+="-nokaslr"
	[ "$nok" = noslot ] && name+="-noslot"
	[ -n "$ldr" ] && name+="-by-$ldr"
	(
		# One kexec: the default limit (150 s) is tight on a loaded host.
		[ "$nok" = noslot ] && export E2E_TIMEOUT=${E2E_TIMEOUT:-600}
		E2E_LOADER=$ldr e2e_run "$name" "$k" "$fw" "$cpu" "$sc" "$n" "$mode" "$nok" >"$out/$i.out" 2>&1
		echo $? >"$out/$i.rc"
	) &
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done
wait

for i in "${!runs[@]}"; do
	cat "$out/$i.out"
	if ! grep -q '^\(not \)\?ok ' "$out/$i.out"; then
		echo "not ok - e2e run ${runs[$i]} printed no result (exit $(cat "$out/$i.rc" 2>/dev/null))"
	fi
done
e2e_note "e2e core: ${#runs[@]} runs in $((EPOCHSECONDS - t0)) s"
exit 0
