#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0-only
# /init of the Secure Boot test guest (tests/e2e/lib-sb.sh).  The guest only
# reports; the host judges.
#
# Command-line keys: e2e.role=chain|first|crash, e2e.gen=N, e2e.target=T,
# e2e.loader=rerand|stock, e2e.base=0 (skip the stock kexec tries and the
# refusals in generation 0).
#   chain: report this generation (E2E-SB, E2E-GEN), stage the next one with
#     `rerand load` (or stock `kexec -s -l` of the signed kernel) and kexec;
#     generation 0 also tries stock kexec both ways and, after staging, the
#     images that must be refused (E2E-SB-BASE, E2E-SB-REFUSE).
#   first: stage a crash kernel with `rerand load --crash` (or `kexec -s -p`),
#     try one that must be refused, panic.  crash: report and power off.
# /sbin/kexec is a wrapper that logs the options of every call to
# /tmp/kexec.calls, so the host sees which syscall was picked and whether
# kexec ran at all.

/bin/busybox mkdir -p /proc /sys /dev /tmp
/bin/busybox mount -t devtmpfs devtmpfs /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1
export PATH=/bin:/sbin
mount -t proc proc /proc || { echo "E2E-FAIL cannot mount /proc"; poweroff -f; }
mount -t sysfs sysfs /sys
mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
echo 1 >/proc/sys/kernel/printk
echo 0 >/proc/sys/kernel/kptr_restrict

role=chain gen=0 target=0 loader=rerand base=1
for w in $(cat /proc/cmdline); do
	case "$w" in
	e2e.role=*) role=${w#e2e.role=} ;;
	e2e.gen=*) gen=${w#e2e.gen=} ;;
	e2e.target=*) target=${w#e2e.target=} ;;
	e2e.loader=*) loader=${w#e2e.loader=} ;;
	e2e.base=*) base=${w#e2e.base=} ;;
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
	echo "E2E-FAIL role=$role gen=$gen $*"
	finish
}

oneline() { echo "$*" | tr '\n' ' ' | sed 's/ *$//'; }

# calls: the kexec calls logged since the last one, then forget them.
calls() {
	if [ -s /tmp/kexec.calls ]; then
		tr '\n' ';' </tmp/kexec.calls | sed 's/;$//'
	else
		echo none
	fi
	rm -f /tmp/kexec.calls
}

# What this kernel says about Secure Boot: the lockdown level in force and
# the boot_params secure_boot byte at 0x1ec (3 = enabled) that kexec hands
# on from the first kernel's EFI stub.
lockdown=$(sed -n 's/.*\[\([a-z]*\)\].*/\1/p' /sys/kernel/security/lockdown 2>/dev/null)
bpsb=$(od -An -tu1 -j 492 -N 1 /sys/kernel/boot_params/data 2>/dev/null | tr -d ' \n')
echo
echo "E2E-SB role=$role gen=$gen lockdown=${lockdown:-none} bp_secure_boot=${bpsb:-?} loader=$loader"

text=$(sed -n '/ [Tt] _text$/{s/ .*//p;q}' /proc/kallsyms)
[ -n "$text" ] || fail "no _text in /proc/kallsyms"
code=$(grep ' : Kernel code$' /proc/iomem | sed 's/^ *//; s/ .*//')
[ -n "$code" ] || fail "no Kernel code in /proc/iomem"
ram=$(grep '^[0-9a-f]*-[0-9a-f]* : System RAM$' /proc/iomem | cut -d' ' -f1 |
	tr '\n' ',' | sed 's/,$//')
lf=$(od -An -tx1 -j 529 -N 1 /sys/kernel/boot_params/data | tr -d ' \n')
[ -n "$lf" ] || fail "cannot read loadflags"
# SETUP_RNG_SEED nodes handed to this kernel (kexec_file_load adds one).
rngseed=0
for t in /sys/kernel/boot_params/setup_data/*/type; do
	[ -r "$t" ] && [ "$(cat "$t")" = 0x9 ] && rngseed=$((rngseed + 1))
done
verify=none
if [ -x /bin/rerand ] && { [ "$gen" -gt 0 ] || [ "$role" = crash ]; }; then
	json=$(rerand verify --json 2>/tmp/verify.err)
	vrc=$?
	[ -n "$json" ] || json="(no output: $(head -c 200 /tmp/verify.err))"
	verify="rc=$vrc $(oneline "$json")"
fi

if [ "$role" = crash ]; then
	echo "E2E-CRASH text=$text code=0x$code loadflags=0x$lf rngseed=$rngseed verify=$verify"
	echo "E2E-DONE role=crash"
	finish
fi

# Stock kexec on a locked-down kernel: kexec_load must be refused, and
# kexec_file_load of the signed kernel must work (then it is unloaded).
if [ "$gen" = 0 ] && [ "$base" = 1 ]; then
	k=/boot/image
	[ -f /gen0/kernel.signed ] && k=/gen0/kernel.signed
	[ "$loader" = stock ] || [ -f /gen0/kernel.signed ] || k=
	if [ -n "$k" ]; then
		calls >/dev/null
		out=$(kexec -l $k --command-line=console=ttyS0 2>&1); rc=$?
		echo "E2E-SB-BASE what=kexec-l rc=$rc loaded=$(cat /sys/kernel/kexec_loaded) msg=$(oneline "$out")"
		kexec -s -u >/dev/null 2>&1
		out=$(kexec -s -l $k --command-line=console=ttyS0 2>&1); rc=$?
		echo "E2E-SB-BASE what=kexec-s-l rc=$rc loaded=$(cat /sys/kernel/kexec_loaded) msg=$(oneline "$out")"
		out=$(kexec -s -u 2>&1); rc=$?
		echo "E2E-SB-BASE what=kexec-s-u rc=$rc loaded=$(cat /sys/kernel/kexec_loaded) msg=$(oneline "$out")"
		calls >/dev/null
	fi
fi

if [ "$role" = first ]; then
	crash=$(grep ' : Crash kernel$' /proc/iomem | sed 's/^ *//; s/ .*//' | tr '\n' ',' | sed 's/,$//')
	echo "E2E-FIRST text=$text code=0x$code crash=${crash:-none}"
	[ -f /crash.cpio ] || fail "no /crash.cpio in the initramfs"
	cmd="console=ttyS0,115200 reset_devices nr_cpus=1 irqpoll nousb panic=-1 e2e.role=crash e2e.loader=$loader"
	if [ "$loader" = stock ]; then
		out=$(kexec -s -p /boot/image --initrd=/crash.cpio --command-line="$cmd" 2>&1)
	else
		out=$(rerand load --crash /boot/image --initrd /crash.cpio --append "$cmd" 2>&1)
	fi
	rc=$?
	echo "E2E-SB-LOAD gen=0 crash=1 rc=$rc loaded=$(cat /sys/kernel/kexec_crash_loaded) calls=$(calls) msg=$(oneline "$out")"
	if [ "$base" = 1 ] && [ -f /gen0/image.untrusted ]; then
		out=$(rerand load --crash /gen0/image.untrusted --initrd /crash.cpio --append "$cmd" 2>&1); rc=$?
		loaded=$(cat /sys/kernel/kexec_crash_loaded)
		echo "E2E-SB-REFUSE kind=crash-untrusted rc=$rc loaded=$loaded calls=$(calls) msg=$(oneline "$out")"
		if [ "$loaded" != 1 ]; then
			# Still panic into a crash kernel, so the bases are checked.
			out=$(rerand load --crash /boot/image --initrd /crash.cpio --append "$cmd" 2>&1)
			echo "E2E-SB-RELOAD rc=$? loaded=$(cat /sys/kernel/kexec_crash_loaded) msg=$(oneline "$out")"
		fi
	fi
	[ "$(cat /sys/kernel/kexec_crash_loaded)" = 1 ] || fail "no crash kernel loaded"
	echo "E2E-PANIC loader=$loader"
	sync
	echo c >/proc/sysrq-trigger
	fail "still running after echo c > /proc/sysrq-trigger"
fi

[ "$role" = chain ] || fail "unknown e2e.role '$role'"
echo "E2E-GEN gen=$gen text=$text code=0x$code loadflags=0x$lf ram=$ram rngseed=$rngseed verify=$verify"
if [ "$gen" -ge "$target" ]; then
	echo "E2E-DONE gen=$gen"
	finish
fi

# The initrd is freed after boot: rebuild the same one from /self.cpio (the
# files under /gen0 are only in generation 0's outer archive).
cd / || fail "cd /"
[ -f /self.cpio ] || fail "no /self.cpio"
echo self.cpio | cpio -o -H newc >/tmp/wrap.cpio 2>/dev/null || fail "cpio -o failed"
cat /self.cpio /tmp/wrap.cpio >/tmp/next.cpio || fail "cannot write /tmp/next.cpio"
rm -f /tmp/wrap.cpio
cmd=
for w in $(cat /proc/cmdline); do
	case "$w" in e2e.gen=*|initrd=*|BOOT_IMAGE=*) ;; *) cmd="$cmd $w" ;; esac
done
cmd="${cmd# } e2e.gen=$((gen + 1))"

if [ "$loader" = stock ]; then
	out=$(kexec -s -l /boot/image --initrd=/tmp/next.cpio --command-line="$cmd" 2>&1)
else
	out=$(rerand load /boot/image --initrd /tmp/next.cpio --append "$cmd" 2>&1)
fi
rc=$?
loaded=$(cat /sys/kernel/kexec_loaded)
echo "E2E-SB-LOAD gen=$gen rc=$rc loaded=$loaded calls=$(calls) msg=$(oneline "$out")"
[ "$rc" = 0 ] && [ "$loaded" = 1 ] || fail "staging generation $((gen + 1)) failed"

# Images that must be refused while the signed one stays staged.
for kind in unsigned untrusted; do
	[ "$gen" = 0 ] && [ -f /gen0/image.$kind ] || continue
	out=$(rerand load /gen0/image.$kind --initrd /tmp/next.cpio --append "$cmd" 2>&1); rc=$?
	echo "E2E-SB-REFUSE kind=$kind rc=$rc loaded=$(cat /sys/kernel/kexec_loaded) calls=$(calls) msg=$(oneline "$out")"
done
rm -f /tmp/next.cpio
sync
out=$(kexec -e 2>&1)
fail "kexec -e returned: $(oneline "$out")"
