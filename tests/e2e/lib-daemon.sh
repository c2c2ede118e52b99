# SPDX-License-Identifier: GPL-2.0-only
# Helpers of the rerandd end-to-end test (check-daemon.sh): the guest
# initramfs with rerandd, the persistent NVMe disk that carries /boot and
# /var/lib/rerand across kexecs, one QEMU run, and the address-leak search.
# Sourced; builds on lib.sh.

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

RRD_RERANDD=${RRD_RERANDD:-$E2E_TOP/build/rerandd}
# built by the Makefile (make e2e-test-helpers; make check does)
RRD_CTL_LATENCY=${RRD_CTL_LATENCY:-$E2E_TOP/build/tests/e2e/ctl-latency}
RRD_DISK_MIB=${RRD_DISK_MIB:-192}

# rrd_kernel: print the kernel to boot.  The guest needs the NVMe driver and
# ext4 built in (its state disk is an NVMe namespace: virtio-blk is a module
# in every shared kernel); among those, the smallest file boots fastest.
rrd_kernel() {
	if [ -n "${RRD_KERNEL:-}" ]; then echo "$RRD_KERNEL"; return 0; fi
	local k v cfg best="" bsize=0 size
	for k in "$RERAND_KERNELS"/vmlinuz-*; do
		[ -r "$k" ] || continue
		v=${k##*/vmlinuz-}
		cfg="$RERAND_KERNELS/config-$v"
		[ -r "$cfg" ] || continue
		grep -q '^CONFIG_BLK_DEV_NVME=y' "$cfg" && grep -q '^CONFIG_EXT4_FS=y' "$cfg" || continue
		size=$(stat -c %s "$k")
		if [ -z "$best" ] || [ "$size" -lt "$bsize" ]; then best=$k; bsize=$size; fi
	done
	[ -n "$best" ] || return 1
	echo "$best"
}

# rrd_preflight NAME TOOL...: the tools, build/rerand and build/rerandd, and a
# kernel (rrd_kernel, printed).  On a miss prints one "not ok" and fails.
rrd_preflight() {
	local name=$1 tool f; shift
	for tool in "$@"; do
		command -v "$tool" >/dev/null ||
			{ echo "not ok - $name: $tool missing (scripts/deps.sh check)"; return 1; }
	done
	for f in "$E2E_RERAND" "$RRD_RERANDD"; do
		[ -x "$f" ] || { echo "not ok - $name: $f not built"; return 1; }
	done
	rrd_kernel ||
		{ echo "not ok - $name: no kernel in ${RERAND_KERNELS:-?} with NVMe and ext4 built in"; return 1; }
}

# rrd_initrd: build (or reuse) the guest initramfs and print its path:
# static busybox, kexec-tools, rerand and rerandd with the libraries ldd
# names, /init.  Everything that must survive a kexec lives on the disk.
rrd_initrd() {
	local inputs=("$E2E_BUSYBOX" "$E2E_KEXEC" "$E2E_RERAND" "$RRD_RERANDD"
		"$E2E_DIR/daemon-init.sh" "$E2E_DIR/lib-daemon.sh" "$RRD_CTL_LATENCY")
	local f key=daemon
	[ -x "$RRD_CTL_LATENCY" ] || e2e_die "$RRD_CTL_LATENCY: not built (make e2e-test-helpers)"
	for f in "${inputs[@]}"; do
		[ -r "$f" ] || e2e_die "$f: missing (needed for the rerandd guest)"
		key="$key $(e2e_sha "$f")"
	done
	key=$(echo "$key" | sha256sum | cut -c1-16)
	local out="$E2E_CACHE/initrd-daemon-$key.cpio"
	if [ -s "$out" ] && [ -x "$out.rerand" ]; then touch "$out" "$out.rerand"; echo "$out"; return 0; fi
	find "$E2E_CACHE" -maxdepth 1 -type f -name 'initrd-daemon-*' -mtime +0 -delete 2>/dev/null
	if ldd "$E2E_BUSYBOX" >/dev/null 2>&1; then
		e2e_die "$E2E_BUSYBOX is not static: install busybox-static"
	fi
	mkdir -p "$E2E_CACHE"
	local tmp r a
	tmp=$(mktemp -d "$E2E_CACHE/rrdroot.XXXXXX") || return 1
	r="$tmp/root"
	mkdir -p "$r"/{bin,sbin,proc,sys,dev,tmp,boot,etc,run,persist,var/lib/rerand}
	install -m 0755 "$E2E_BUSYBOX" "$r/bin/busybox"
	for a in $("$E2E_BUSYBOX" --list); do
		[ "$a" = busybox ] || ln -s busybox "$r/bin/$a"
	done
	e2e_copy_bin "$E2E_KEXEC" "$r" /sbin/kexec || e2e_die "cannot copy $E2E_KEXEC"
	e2e_copy_bin "$E2E_RERAND" "$r" /bin/rerand || e2e_die "cannot copy $E2E_RERAND"
	e2e_copy_bin "$RRD_RERANDD" "$r" /sbin/rerandd || e2e_die "cannot copy $RRD_RERANDD"
	install -m 0755 "$E2E_DIR/daemon-init.sh" "$r/init"
	# the control socket's latency probe: static, the guest has no libc of its own for it
	install -m 0755 "$RRD_CTL_LATENCY" "$r/bin/ctl-latency"
	# The image builder's user (ImageUser=rerand), as systemd-sysusers
	# makes it from systemd/sysusers.d/rerand.conf on a real system.
	printf 'root:x:0:0:root:/:/bin/sh\nrerand:x:999:999:rerand image builder:/:/sbin/nologin\n' >"$r/etc/passwd"
	printf 'root:x:0:\nrerand:x:999:\n' >"$r/etc/group"
	mknod -m 0600 "$r/dev/console" c 5 1 2>/dev/null || true
	(cd "$r" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$tmp/initrd.cpio" ||
		e2e_die "cpio failed"
	# The very rerand that went in: the host rebuilds the guest's cached
	# image with it, even if build/ changed since.
	install -m 0755 "$E2E_RERAND" "$out.rerand" || e2e_die "cannot write $out.rerand"
	mv "$tmp/initrd.cpio" "$out" || e2e_die "cannot write $out"
	rm -rf "$tmp"
	echo "$out"
}

# rrd_conf SCENARIO: the rerandd configuration of a scenario.  Every path is
# the guest's real one; the stock layout (/boot/vmlinuz-VERSION with
# initrd.img-VERSION beside it) is found by rerandd itself.
rrd_conf() {
	local age=1h on_oops=immediate
	[ "$1" = auto ] && { age=1min; on_oops=ignore; }
	cat <<EOF
# rerandd configuration of the e2e guest, scenario $1 (tests/e2e/lib-daemon.sh)
[Daemon]
StateDirectory=/var/lib/rerand
RuntimeDirectory=/run/rerand
MetricsFile=/run/rerand/rerand.prom
RerandBinary=/bin/rerand
KexecBinary=/sbin/kexec
CheckInterval=2s

[Paths]
Boot=/boot
ProcCmdline=/proc/cmdline
SetupData=/sys/kernel/boot_params/setup_data
Kmsg=/dev/kmsg
Tainted=/proc/sys/kernel/tainted
BootId=/proc/sys/kernel/random/boot_id
PreRebootDirectory=/etc/rerand/pre-reboot.d

[Policy]
MaxLayoutAge=$age
Jitter=0
MinRebootInterval=0
RebootOutsideWindows=yes
OnOops=$on_oops
OnNewKernel=ignore
HonorInhibitors=no
BackoffBase=1h
BackoffMax=2h
MaxFailures=3

[Reboot]
Method=syscall
HookTimeout=20s
EOF
}

# rrd_disk SCENARIO KERNEL INITRD DISK TARGET: the guest's persistent disk (ext4,
# made on the host with mkfs.ext4 -d): /boot/vmlinuz-V and initrd.img-V,
# an empty /var/lib/rerand, /etc/rerand with the scenario's configuration,
# /test (the scenario name, the boots it should make, the boot counter) and /out (product output the
# guest saves for the leak search).
rrd_disk() {
	local scen=$1 kernel=$2 initrd=$3 disk=$4 target=$5 v d
	v=${kernel##*/vmlinuz-}
	d=$(mktemp -d "${disk}.root.XXXXXX") || return 1
	mkdir -p "$d/boot" "$d/var/lib/rerand" "$d/etc/rerand/rerand.conf.d" \
		"$d/etc/rerand/pre-reboot.d" "$d/test" "$d/out"
	chmod 0700 "$d/var/lib/rerand"
	cp "$kernel" "$d/boot/vmlinuz-$v" && cp "$initrd" "$d/boot/initrd.img-$v" || return 1
	rrd_conf "$scen" >"$d/etc/rerand/rerand.conf"
	echo "$scen" >"$d/test/scenario"
	echo "$target" >"$d/test/target"
	# A pre-reboot hook: the metrics as they were just before each reboot,
	# and the layout age at that moment (from /proc/stat's btime).
	cat >"$d/etc/rerand/pre-reboot.d/10-save-metrics" <<'EOF'
#!/bin/sh
n=$(cat /persist/test/boots)
cp /run/rerand/rerand.prom "/persist/out/metrics.$((n - 1)).pre-reboot.prom" 2>/dev/null
age=$(( $(date +%s) - $(sed -n 's/^btime //p' /proc/stat) ))
echo "RRD-HOOK boot=$((n - 1)) age=$age pre-reboot hook ran" >/dev/console
sync
exit 0
EOF
	chmod 0755 "$d/etc/rerand/pre-reboot.d/10-save-metrics"
	e2e_mkfs "$d" "$disk" "$RRD_DISK_MIB" rrstate
}

# e2e_mkfs DIR DISK MIB LABEL: an ext4 image of MIB MiB holding DIR (made on
# the host by mkfs.ext4 -d, no mount); DIR is removed either way.
# Inode tables zeroed here (sparse, instant) rather than by the guest's
# ext4lazyinit thread, which under TCG on a busy host hogs the one vCPU for
# minutes (soft lockups) and starves the boot under test.
e2e_mkfs() {
	local d=$1 disk=$2 mib=$3 label=$4
	rm -f "$disk"
	truncate -s "${mib}M" "$disk" &&
		mkfs.ext4 -q -F -L "$label" -E root_owner=0:0,lazy_itable_init=0,lazy_journal_init=0 -d "$d" "$disk" >/dev/null 2>"$disk.mkfs.err" ||
		{ cat "$disk.mkfs.err" >&2; rm -rf "$d" "$disk.mkfs.err"; return 1; }
	rm -rf "$d" "$disk.mkfs.err"
}

# rrd_extract DISK DIR: copy /out, /test and /var/lib/rerand from the disk
# image to DIR (debugfs reads ext4 without mounting it).
rrd_extract() {
	local disk=$1 dir=$2 p
	rm -rf "$dir"; mkdir -p "$dir/var/lib"
	for p in out test; do
		debugfs -R "rdump /$p $dir" "$disk" >/dev/null 2>&1 || return 1
	done
	debugfs -R "rdump /var/lib/rerand $dir/var/lib" "$disk" >/dev/null 2>&1 || return 1
	[ -d "$dir/out" ] && [ -d "$dir/var/lib/rerand" ]
}

# rrd_qemu KERNEL INITRD DISK APPEND LOG TIMEOUT: one guest (SeaBIOS, q35,
# TCG) with DISK as an NVMe namespace.  Serial console time-stamped to LOG.
rrd_qemu() {
	local kernel=$1 initrd=$2 disk=$3 append=$4 log=$5 tmo=$6 slow=${7:-}
	local args=(-accel "$E2E_ACCEL" -machine q35 -m "${RRD_MEM:-1}G" -smp 1 -cpu max
		-nographic -monitor none -serial stdio -no-reboot
		-drive "file=$disk,if=none,id=rrstate,format=raw,cache=writeback"
		-device "nvme,drive=rrstate,serial=rrstate0"
		-kernel "$kernel" -initrd "$initrd" -append "$append")
	# SLOW: a second NVMe disk (after the state disk, so it is nvme1) whose
	# writes QEMU throttles to RRD_SLOW_BPS: an image fsync'd to it takes
	# tens of seconds, which holds the "image being written" moment open.
	[ -n "$slow" ] && args+=(
		-drive "file=$slow,if=none,id=rrslow,format=raw,cache=writeback,throttling.bps-write=${RRD_SLOW_BPS:-1048576}"
		-device "nvme,drive=rrslow,serial=rrslow0")
	echo "qemu-system-x86_64 ${args[*]}" >"$log.cmd"
	timeout -k 5 "$tmo" qemu-system-x86_64 "${args[@]}" </dev/null 2>"$log.stderr" | e2e_stamp >"$log"
	return "${PIPESTATUS[0]}"
}

# rrd_addrs LOG: the secret values of every boot in LOG, one per line as
# "boot kind value-hex" (kind: text, phys, voff).
rrd_addrs() {
	sed -n 's/^[0-9.]* *RRD-BOOT n=\([0-9]*\) text=\([0-9a-fA-F]*\) code=\([0-9a-fA-F]*\)-.*/\1 \2 \3/p' "$1" |
	while read -r n text code; do
		echo "$n text $text"
		echo "$n phys $code"
		# The virtual KASLR offset gives the layout away just as well.
		printf '%s voff %x\n' "$n" $(( 16#$text - 16#ffffffff81000000 ))
	done
}

# rrd_needles KIND HEX: the strings that would betray the value: hex as the
# kernel prints it, without leading zeros, and in decimal (unsigned, and the
# magnitude of a negative signed value).  Case and 0x are covered by the
# case-insensitive substring search.  Values below 16 MiB are too short to
# search for reliably and are skipped (the bases are never that low).
rrd_needles() {
	local kind=$1 hex=$2 v s
	v=$((16#$hex))
	s=$(printf '%x' "$v")
	if [ "$kind" != text ] && [ "$v" -lt $((1 << 24)) ] && [ "$v" -ge 0 ]; then return 0; fi
	echo "$hex"
	[ "$s" = "$hex" ] || echo "$s"
	if [ "$v" -lt 0 ]; then
		# unsigned 64-bit decimal, the magnitude of the signed one, and
		# the low 32 bits
		printf '%u\n' "$v"
		echo "${v#-}"
		printf '%x\n' $((v & 0xffffffff))
	else
		echo "$v"
	fi
}

# rrd_leak_search ADDRS PATH...: every file under PATH... searched (as
# bytes, case-insensitively) for every needle of ADDRS (rrd_addrs output),
# as a whole number: not inside a longer run of hex digits, but with any
# 0x and leading zeros.  (A bare substring search flagged a virtual offset
# 0xb000000 inside the kernel's own "MMCONFIG at 0xb0000000" line.)
# Lines of the kernel's own memory map (its "[mem 0xSTART-0xEND]" resource
# ranges: e820, MMCONFIG, PCI windows) do not count: they print the
# machine's fixed ranges, whatever the base.  (A cold boot's KASLR put
# _text at 0xffffffffb0000000, whose low 32 bits are q35's MMCONFIG base,
# printed in every journal.)
# Prints one line per hit "FILE: kind of boot N (needle)"; returns 1 if
# something was found.
rrd_leak_search() {
	local addrs=$1; shift
	local n kind hex needle re f found=0
	while read -r n kind hex; do
		[ -n "$hex" ] || continue
		while read -r needle; do
			[ -n "$needle" ] || continue
			re="(^|[^0-9a-f])(0x)?0*$needle([^0-9a-f]|\$)"
			while IFS= read -r f; do
				grep -aiE -e "$re" "$f" |
					grep -aviE -e '\[mem 0x[0-9a-f]+-0x[0-9a-f]+' >/dev/null || continue
				echo "$f: $kind of boot $n ($needle)"
				found=1
			done < <(grep -rilaE -e "$re" "$@" 2>/dev/null)
		done < <(rrd_needles "$kind" "$hex")
	done <"$addrs"
	[ "$found" -eq 0 ]
}
