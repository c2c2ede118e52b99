#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# One end-to-end run: boot KERNEL under QEMU TCG and chain kexecs in the
# guest, then print a table and TAP lines.  See tests/e2e/README.md.
set -u
. "$(dirname "$0")/lib.sh"

usage() {
	cat <<EOF
usage: $0 --kernel PATH [--fw seabios|ovmf] [--cpu max|qemu64] [--syscall load|file]
          [--kexecs N] [--mode auto|stock|rerand] [--mem GIB] [--nokaslr] [--name NAME]
Environment: E2E_TIMEOUT (seconds), E2E_APPEND (extra kernel arguments),
E2E_MACHINE (q35 or pc), E2E_LOADER=kexec (rerand mode: stage the image with
stock kexec -l / -s -l, header seed zero, as a signed image would be).
EOF
	exit 2
}

kernel="" fw=seabios cpu=max syscall=load gens=5 mode=auto mem=${E2E_MEM:-1} nokaslr=0 name=""
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) kernel=$2; shift ;;
	--fw) fw=$2; shift ;;
	--cpu) cpu=$2; shift ;;
	--syscall) syscall=$2; shift ;;
	--kexecs) gens=$2; shift ;;
	--mode) mode=$2; shift ;;
	--mem) mem=$2; shift ;;
	--nokaslr) nokaslr=1 ;;
	--name) name=$2; shift ;;
	-h|--help) usage ;;
	*) echo "run.sh: unknown argument $1" >&2; usage ;;
	esac
	shift
done
[ -n "$kernel" ] || usage
case "$fw" in seabios|ovmf) ;; *) usage ;; esac
case "$syscall" in load|file) ;; *) usage ;; esac
case "$mode" in auto) mode=$(e2e_mode_auto) || exit 1 ;; stock|rerand) ;; *) usage ;; esac
case "$gens" in ''|*[!0-9]*) usage ;; esac
[ -n "$name" ] || name="$(basename "$kernel" | sed 's/^vmlinuz-//')-$fw-$cpu-$syscall"
[ "$nokaslr" = 1 ] && case "$name" in *nokaslr*) ;; *) name+="-nokaslr" ;; esac

e2e_run "$name" "$kernel" "$fw" "$cpu" "$syscall" "$gens" "$mode" "$nokaslr" "$mem"
