#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0-only
# /init of the crash-kernel test guest (tests/e2e/lib-crash.sh): the first
# kernel stages a crash kernel and panics; the crash kernel reports facts.
#
# e2e.role=first|crash|small (first: load a crash kernel with `rerand load
# --crash`, or `kexec -p` like kdump-tools when e2e.loader=kexec, then panic;
# crash: report where it landed and what /proc/vmcore holds; small: expect
# `rerand load --crash` to refuse).  The guest only reports: the host judges.
# Lines: E2E-FIRST, E2E-PANIC, E2E-CRASH, E2E-SMALL, E2E-DONE, E2E-FAIL.

/bin/busybox mkdir -p /proc /sys /dev /tmp
/bin/busybox mount -t devtmpfs devtmpfs /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1
export PATH=/bin:/sbin
mount -t proc proc /proc || { echo "E2E-FAIL cannot mount /proc"; poweroff -f; }
mount -t sysfs sysfs /sys
# Only emergencies on the console (the panic itself still shows).
echo 1 >/proc/sys/kernel/printk
echo 0 >/proc/sys/kernel/kptr_restrict

role= syscall=load loader=rerand debug=0 extra=
for w in $(cat /proc/cmdline); do
	case "$w" in
	e2e.role=*) role=${w#e2e.role=} ;;
	e2e.syscall=*) syscall=${w#e2e.syscall=} ;;
	e2e.loader=*) loader=${w#e2e.loader=} ;;
	e2e.debug=*) debug=${w#e2e.debug=} ;;
	e2e.append=*) extra=$(echo "${w#e2e.append=}" | tr , ' ') ;;
	esac
done

finish() {
	sync
	poweroff -f
	sleep 10
	exit 0
}

fail() {
	echo
	echo "E2E-FAIL role=${role:-?} $*"
	finish
}

# Where this kernel landed, as the harness of check-core reads it.
text=$(sed -n '/ [Tt] _text$/{s/ .*//p;q}' /proc/kallsyms)
[ -n "$text" ] || fail "no _text in /proc/kallsyms"
code=$(grep ' : Kernel code$' /proc/iomem | sed 's/^ *//; s/ .*//')
[ -n "$code" ] || fail "no Kernel code in /proc/iomem"
ram=$(grep '^[0-9a-f]*-[0-9a-f]* : System RAM$' /proc/iomem | cut -d' ' -f1 |
	tr '\n' ',' | sed 's/,$//')
lf=$(od -An -tx1 -j 529 -N 1 /sys/kernel/boot_params/data 2>/dev/null | tr -d ' \n')
[ -n "$lf" ] || fail "cannot read loadflags from /sys/kernel/boot_params/data"

# u64 OFFSET FILE: the little-endian 64-bit word at OFFSET, in decimal.
u64() { echo $((0x$(od -An -tx8 -j "$1" -N 8 "$2" | tr -d ' \n'))); }
u32() { echo $((0x$(od -An -tx4 -j "$1" -N 4 "$2" | tr -d ' \n'))); }
u16() { echo $((0x$(od -An -tx2 -j "$1" -N 2 "$2" | tr -d ' \n'))); }

if [ "$role" = first ] || [ "$role" = small ]; then
	crash=$(grep ' : Crash kernel$' /proc/iomem | sed 's/^ *//; s/ .*//' |
		tr '\n' ',' | sed 's/,$//')
	size=$(cat /sys/kernel/kexec_crash_size 2>/dev/null)
	echo
	echo "E2E-FIRST role=$role text=$text code=0x$code crash=${crash:-none} crash_size=${size:-?} ram=$ram"
	[ -f /crash.cpio ] || fail "no /crash.cpio in the initramfs"
	cmd="console=ttyS0,115200 reset_devices nr_cpus=1 irqpoll nousb panic=-1"
	cmd="$cmd e2e.role=crash e2e.crash=${crash:-none} e2e.loader=$loader"
	[ "$debug" = 1 ] && cmd="$cmd rerand.debug"
	[ -n "$extra" ] && cmd="$cmd $extra"

	if [ "$role" = small ]; then
		out=$(rerand load --crash /boot/image --initrd /crash.cpio --append "$cmd" 2>&1)
		rc=$?
		loaded=$(cat /sys/kernel/kexec_crash_loaded 2>/dev/null)
		echo "E2E-SMALL rc=$rc loaded=${loaded:-?} size=${size:-?} msg=$(echo "$out" | tr '\n' ' ')"
		echo "E2E-DONE role=small"
		finish
	fi

	if [ "$loader" = kexec ]; then
		# What kdump-tools' kdump-config does with KDUMP_KERNEL set.
		flag=
		[ "$syscall" = file ] && flag=-s
		out=$(kexec $flag -p /boot/image --initrd=/crash.cpio --command-line="$cmd" 2>&1) ||
			fail "kexec $flag -p: $(echo "$out" | tr '\n' ' ')"
	else
		flag=
		[ "$syscall" = file ] && flag=--file-syscall
		out=$(rerand load --crash /boot/image --initrd /crash.cpio --append "$cmd" $flag 2>&1) ||
			fail "rerand load --crash: $(echo "$out" | tr '\n' ' ')"
	fi
	loaded=$(cat /sys/kernel/kexec_crash_loaded 2>/dev/null)
	[ "$loaded" = 1 ] || fail "kexec_crash_loaded is '${loaded:-?}' after loading"
	echo "E2E-PANIC loader=$loader syscall=$syscall"
	sync
	echo c >/proc/sysrq-trigger
	fail "still running after echo c > /proc/sysrq-trigger"
fi

[ "$role" = crash ] || fail "unknown e2e.role '${role}'"

pass=$(sed -n 's/.* e2e\.crash=\([^ ]*\).*/\1/p' /proc/cmdline)
json=$(rerand verify --json 2>/tmp/verify.err)
vrc=$?
[ -n "$json" ] || json="(no output: $(head -c 200 /tmp/verify.err | tr '\n' ' '))"

v=/proc/vmcore
[ -e $v ] || { echo "E2E-CRASH text=$text code=0x$code loadflags=0x$lf ram=$ram passed=$pass vmcore=absent verify=rc=$vrc $json"; echo "E2E-DONE role=crash"; finish; }
vsize=$(stat -c %s $v)
# ELF header: ident, e_type, e_machine, e_phoff, e_phentsize, e_phnum.
ident=$(od -An -tx1 -N 16 $v | tr -d ' \n')
etype=$(u16 16 $v)
emach=$(u16 18 $v)
phoff=$(u64 32 $v)
phent=$(u16 54 $v)
phnum=$(u16 56 $v)
nload=0 nnote=0 loadsz=0 phend=0 noteoff=0 notesz=0
i=0
if [ "$phent" -ge 56 ] && [ "$phnum" -le 4096 ]; then
	while [ $i -lt "$phnum" ]; do
		p=$((phoff + i * phent))
		t=$(u32 $p $v)
		off=$(u64 $((p + 8)) $v)
		fsz=$(u64 $((p + 32)) $v)
		case $t in
		1) nload=$((nload + 1)); loadsz=$((loadsz + fsz)) ;;
		4) nnote=$((nnote + 1)); noteoff=$off; notesz=$fsz ;;
		esac
		[ $((off + fsz)) -gt $phend ] && phend=$((off + fsz))
		i=$((i + 1))
	done
fi
# The first kernel's VMCOREINFO note, to match against its _text.
koff=none
if [ "$notesz" -gt 0 ] && [ "$notesz" -le 1048576 ]; then
	koff=$(dd if=$v bs=4096 skip=$((noteoff / 4096)) count=$(((noteoff % 4096 + notesz) / 4096 + 1)) 2>/dev/null |
		strings -n 8 | sed -n 's/^KERNELOFFSET=//p' | head -n1)
	[ -n "$koff" ] || koff=missing
fi
echo
echo "E2E-CRASH text=$text code=0x$code loadflags=0x$lf ram=$ram passed=$pass vmcore=$vsize ident=$ident etype=$etype emach=$emach phent=$phent phnum=$phnum nload=$nload nnote=$nnote loadsz=$loadsz phend=$phend koff=$koff verify=rc=$vrc $(echo "$json" | tr '\n' ' ')"
# Read all of it twice: cat, as a dump tool would, for its exit status,
# and dd for the amount (busybox dd reports records, not bytes: 4 KiB
# records, so "N+0 records in" is N * 4096 bytes).  Straight to /dev/null:
# a pipe under TCG moves only a few MiB/s.
t0=$(date +%s)
cat $v >/dev/null
crc=$?
t1=$(date +%s)
dd if=$v of=/dev/null bs=4096 2>/tmp/dd.err
drc=$?
t2=$(date +%s)
recs=$(sed -n 's/^\([0-9]*+[0-9]*\) records in.*/\1/p' /tmp/dd.err | head -n1)
echo "E2E-READ cat_rc=$crc cat_secs=$((t1 - t0)) dd_rc=$drc dd_records=${recs:-none} dd_secs=$((t2 - t1))"
echo "E2E-DONE role=crash"
finish
