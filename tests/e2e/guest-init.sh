#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0-only
# /init of the end-to-end test guest: reports where this kernel landed, then
# kexecs the next generation until the target is reached (tests/e2e/lib.sh).
#
# Command-line keys: e2e.gen=N (this generation), e2e.target=T (last one),
# e2e.mode=stock|rerand, e2e.syscall=load|file, e2e.loader=rerand|kexec,
# e2e.then.WORD (WORD goes on the next kernel's command line instead),
# e2e.slim=1 (a small initrd for the last generation)
# (rerand mode: stage the image with stock kexec instead of rerand load, so
# its header seed stays zero, as with a signed image).  Prints exactly one
# "E2E-GEN ..." line per generation (after a kexec in rerand mode, first an
# "E2E-ENTROPY gen=N JSON" line), "E2E-DONE" after the last, and
# "E2E-FAIL reason" on any error; it always ends with poweroff -f.

/bin/busybox mkdir -p /proc /sys /dev /tmp
/bin/busybox mount -t devtmpfs devtmpfs /dev 2>/dev/null
# The kernel could not open /dev/console if the archive had no node.
exec </dev/console >/dev/console 2>&1
export PATH=/bin:/sbin
mount -t proc proc /proc || { echo "E2E-FAIL cannot mount /proc"; poweroff -f; }
mount -t sysfs sysfs /sys
# Only emergencies on the console, so kernel messages cannot split our lines.
echo 1 >/proc/sys/kernel/printk
echo 0 >/proc/sys/kernel/kptr_restrict

gen=
target=
mode=stock
syscall=load
loader=rerand
slim=0
for w in $(cat /proc/cmdline); do
	case "$w" in
	e2e.gen=*) gen=${w#e2e.gen=} ;;
	e2e.target=*) target=${w#e2e.target=} ;;
	e2e.mode=*) mode=${w#e2e.mode=} ;;
	e2e.syscall=*) syscall=${w#e2e.syscall=} ;;
	e2e.loader=*) loader=${w#e2e.loader=} ;;
	e2e.slim=*) slim=${w#e2e.slim=} ;;
	esac
done

fail() {
	echo
	echo "E2E-FAIL gen=${gen:-?} $*"
	sync
	poweroff -f
	sleep 10
	exit 1
}

case "$gen" in ''|*[!0-9]*) fail "no e2e.gen=N on the command line" ;; esac
case "$target" in ''|*[!0-9]*) fail "no e2e.target=N on the command line" ;; esac

text=$(sed -n '/ [Tt] _text$/{s/ .*//p;q}' /proc/kallsyms)
[ -n "$text" ] || fail "no _text in /proc/kallsyms"
code=$(grep ' : Kernel code$' /proc/iomem | sed 's/^ *//; s/ .*//')
[ -n "$code" ] || fail "no Kernel code in /proc/iomem"
# System RAM as the kernel sees it, to check the physical base against.
ram=$(grep '^[0-9a-f]*-[0-9a-f]* : System RAM$' /proc/iomem | cut -d' ' -f1 |
	tr '\n' ',' | sed 's/,$//')
[ -f /sys/kernel/boot_params/data ] || fail "no /sys/kernel/boot_params/data"
# hdr.loadflags is byte 0x211 (529) of boot_params.
lf=$(od -An -tx1 -j 529 -N 1 /sys/kernel/boot_params/data | tr -d ' \n')
[ -n "$lf" ] || fail "cannot read loadflags"

# SETUP_RNG_SEED nodes handed to this kernel (kexec-tools >= 2.0.25 and
# kexec_file_load add one): the stage must then name kernel-seed.
rngseed=0
for t in /sys/kernel/boot_params/setup_data/*/type; do
	[ -r "$t" ] && [ "$(cat "$t")" = 0x9 ] && rngseed=$((rngseed + 1))
done

verify=none
if [ "$mode" = rerand ]; then
	# Its exit status is judged by the host: it is 1 after a stock boot.
	json=$(rerand verify --json 2>/tmp/verify.err)
	vrc=$?
	[ -n "$json" ] || json="(no output: $(head -c 200 /tmp/verify.err))"
	verify="rc=$vrc $(echo "$json" | tr '\n' ' ')"
	# An independent count of the same placement: `rerand entropy` (whose
	# counts the unit tests hold against a brute-force scan) on this
	# kernel's own firmware map and command line, for the host to compare
	# with the stage's slot counts in the status record.
	if [ "$gen" -gt 0 ]; then
		if [ -r /boot/image ]; then
			ent=$(rerand entropy /boot/image --memmap /sys/firmware/memmap \
				--cmdline "$(cat /proc/cmdline)" --json 2>&1 | tr '\n' ' ')
		else
			ent="none (no /boot/image in this generation's initrd)"
		fi
		echo
		echo "E2E-ENTROPY gen=$gen $ent"
	fi
fi

echo
echo "E2E-GEN gen=$gen text=$text code=0x$code loadflags=0x$lf ram=$ram rngseed=$rngseed verify=$verify"

if [ "$gen" -ge "$target" ]; then
	echo "E2E-DONE gen=$gen"
	sync
	poweroff -f
	sleep 10
	exit 0
fi

# The initrd memory is gone after boot: rebuild the same archive from the
# copy of the inner archive it carries (/self.cpio) plus a tiny archive
# re-adding that copy.
cd / || fail "cd /"
[ -f /self.cpio ] || fail "no /self.cpio"
echo self.cpio | cpio -o -H newc >/tmp/wrap.cpio 2>/dev/null || fail "cpio -o failed"
cat /self.cpio /tmp/wrap.cpio >/tmp/next.cpio || fail "cannot write /tmp/next.cpio"
rm -f /tmp/wrap.cpio

# Whether the CRNG was ready when staging: kexec_file_load adds its
# SETUP_RNG_SEED node only then (kexec-tools' getrandom() waits for it).
echo "E2E-CRNG gen=$gen ready=$(dmesg | grep -c 'crng init done')"

next=$((gen + 1))
# e2e.slim=1: the last generation gets only what it runs (/init, busybox,
# rerand and libraries), not the image and the copy it would not use: the
# no-slot run's kernel has no free piece of RAM as large as the 56 MiB
# initrd, which it must move below its mem= limit.
if [ "$slim" = 1 ] && [ "$next" -ge "$target" ]; then
	(cd / && find . -xdev ! -path ./self.cpio ! -path ./boot/image ! -path './tmp/*' |
		cpio -o -H newc) >/tmp/slim.cpio 2>/dev/null || fail "cpio -o of the slim initrd failed"
	mv /tmp/slim.cpio /tmp/next.cpio || fail "cannot write /tmp/next.cpio"
fi
cmd=
for w in $(cat /proc/cmdline); do
	case "$w" in
	e2e.gen=*|initrd=*|BOOT_IMAGE=*) ;;
	# e2e.then.X=Y becomes X=Y for the kexec'd kernel only (the no-slot
	# run's mem= and memmap=, which the firmware-booted one must not see).
	e2e.then.*) cmd="$cmd ${w#e2e.then.}" ;;
	*) cmd="$cmd $w" ;;
	esac
done
cmd="${cmd# } e2e.gen=$next"

if [ "$mode" = rerand ] && [ "$loader" = rerand ]; then
	flag=
	[ "$syscall" = file ] && flag=--file-syscall
	out=$(rerand load /boot/image --initrd /tmp/next.cpio --append "$cmd" $flag 2>&1) ||
		fail "rerand load: $(echo "$out" | tr '\n' ' ')"
else
	flag=
	[ "$syscall" = file ] && flag=-s
	out=$(kexec $flag -l /boot/image --initrd=/tmp/next.cpio --command-line="$cmd" 2>&1) ||
		fail "kexec $flag -l: $(echo "$out" | tr '\n' ' ')"
fi
rm -f /tmp/next.cpio
sync
out=$(kexec -e 2>&1)
fail "kexec -e returned: $(echo "$out" | tr '\n' ' ')"
