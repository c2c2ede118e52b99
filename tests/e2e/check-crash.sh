#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Crash-kernel end-to-end check (issue 5), run by scripts/run-check.sh:
# boot a shared kernel with crashkernel=, stage the crash kernel with
# `rerand load --crash`, panic, check the crash kernel and /proc/vmcore.
# short: a covering set (3 min with 2 QEMUs on an idle 2-CPU host); long:
# every kernel (about 10 min per kernel).  TAP.
set -u
. "$(dirname "$0")/lib-crash.sh"

what=${1:-short}
case "$what" in short|long) ;; *) echo "usage: $0 short|long" >&2; exit 2 ;; esac
jobs=${E2E_JOBS:-2}

e2e_kernels "e2e crash" || exit 0
command -v qemu-system-x86_64 >/dev/null ||
	{ echo "not ok - e2e crash: qemu-system-x86_64 missing (scripts/deps.sh check)"; exit 0; }
e2e_mode_auto >/dev/null 2>&1 ||
	{ echo "not ok - e2e crash: $E2E_RERAND is not built"; exit 0; }

# E2E_CRASH_KERNELS=SUBSTRING keeps only the kernels whose name holds it.
mapfile -t kernels < <(ls "$RERAND_KERNELS"/vmlinuz-*${E2E_CRASH_KERNELS:-}* 2>/dev/null | LC_ALL=C sort)
[ ${#kernels[@]} -gt 0 ] || { echo "not ok - e2e crash: no vmlinuz-* in $RERAND_KERNELS"; exit 0; }
# kpick SUBSTRING: a kernel whose name holds SUBSTRING, else the first.
kpick() {
	local k
	for k in "${kernels[@]}"; do case "$k" in *"$1"*) echo "$k"; return ;; esac; done
	echo "${kernels[0]}"
}

HL="crashkernel=256M,high crashkernel=64M,low"
# Configurations: "name|kernel|fw|cpu|syscall|crashkernel=...|mem GiB|role|loader|panics"
# (role small: one boot, no panic; role first with 2 or more panics asserts
# that the bases differ, which needs 3 or more: crash_check_distinct).  The high/low form needs RAM above
# 4 GiB: q35 with 3 GiB keeps 2 GiB low and maps 1 GiB at 4 GiB.
configs=()
if [ "$what" = short ]; then
	# By role (scripts/kernels.sh pick): the 6.12 cloud, a two-list kernel
	# (6.15+; bookworm's archive has none: then the newest), the 6.1 generic.
	k12=$(e2e_pick cloud612 || kpick 6.12.)
	k16=$(e2e_pick twolists || e2e_pick newest || kpick 6.16.)
	k61=$(e2e_pick generic61 || kpick 6.1.0-)
	# The slowest (OVMF, 3 GiB to dump) first, for the parallel packing.
	# Every configuration that asserts "bases differ" runs at least 3
	# panics (crash_check_distinct allows one repeat); the 6.12 one gives
	# up its fourth to keep the run's length.
	configs+=("$(basename "$k16")-ovmf-qemu64-highlow|$k16|ovmf|qemu64|file|$HL|3|first|rerand|3")
	configs+=("$(basename "$k12")-seabios-max-256M|$k12|seabios|max|load|crashkernel=256M|1|first|rerand|3")
	configs+=("$(basename "$k61")-seabios-max-kexec-p|$k61|seabios|max|load|crashkernel=256M|1|first|kexec|1")
	configs+=("$(basename "$k61")-seabios-max-64M|$k61|seabios|max|load|crashkernel=64M|1|small|rerand|1")
else
	for k in "${kernels[@]}"; do
		b=$(basename "$k")
		configs+=("$b-seabios-max-256M|$k|seabios|max|load|crashkernel=256M|1|first|rerand|4")
		configs+=("$b-ovmf-qemu64-256M-file|$k|ovmf|qemu64|file|crashkernel=256M|1|first|rerand|4")
		configs+=("$b-seabios-qemu64-highlow|$k|seabios|qemu64|load|$HL|3|first|rerand|4")
		configs+=("$b-ovmf-max-highlow-file|$k|ovmf|max|file|$HL|3|first|rerand|4")
		configs+=("$b-seabios-max-kexec-p|$k|seabios|max|load|crashkernel=256M|1|first|kexec|3")
		configs+=("$b-ovmf-qemu64-kexec-s-p|$k|ovmf|qemu64|file|crashkernel=256M|1|first|kexec|3")
		configs+=("$b-seabios-max-64M|$k|seabios|max|load|crashkernel=64M|1|small|rerand|1")
	done
fi

# Images and initramfs first, one at a time, so parallel runs never race
# on the cache.
declare -A prepared=()
for c in "${configs[@]}"; do
	IFS='|' read -r _ k _ <<<"$c"
	[ -n "${prepared[$k]:-}" ] && continue
	prepared[$k]=1
	img=$(e2e_image rerand "$k") && crash_initrd "$img" >/dev/null ||
		echo "not ok - e2e crash: cannot prepare the guest for $(basename "$k")"
done

# One QEMU per panic (a fresh first boot each time), $jobs at a time.
runs=()
for c in "${configs[@]}"; do
	IFS='|' read -r name k fw cpu sc ck mem role loader n <<<"$c"
	for i in $(seq 1 "$n"); do runs+=("$name#$i|$k|$fw|$cpu|$sc|$ck|$mem|$role|$loader"); done
done
e2e_note "e2e crash: $what set, ${#configs[@]} configurations, ${#runs[@]} QEMU runs, $jobs at a time"

t0=$EPOCHSECONDS
running=0
for r in "${runs[@]}"; do
	IFS='|' read -r name k fw cpu sc ck mem role loader <<<"$r"
	e2e_note "start ${name/\#/ panic }: fw=$fw cpu=$cpu syscall=$sc loader=$loader mem=${mem}G $ck"
	crash_boot "${name/\#/-}" "$k" "$fw" "$cpu" "$sc" "$ck" "$mem" "$role" "$loader" >/dev/null &
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done
wait

for c in "${configs[@]}"; do
	IFS='|' read -r name k fw cpu sc ck mem role loader n <<<"$c"
	dirs=()
	for i in $(seq 1 "$n"); do
		d="$E2E_BUILD/runs/crash/$name-$i"
		dirs+=("$d")
		if [ ! -s "$d/rc" ]; then
			echo "not ok - $name-$i: the run left no result"
		elif [ "$role" = small ]; then
			crash_check_small "$name-$i" "$d"
		else
			crash_check_panic "$name-$i" "$d"
		fi
	done
	[ "$role" = first ] && [ "$n" -ge 2 ] && crash_check_distinct "$name" "$n" "${dirs[@]}"
done
e2e_note "e2e crash: ${#runs[@]} runs in $((EPOCHSECONDS - t0)) s"
exit 0
