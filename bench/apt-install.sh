#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# `make bench`, apt part (issue 28, goal 4): what a user waits for because of
# rerand's kernel hook.  The image of a new kernel is built when the kernel
# package is installed (/etc/kernel/postinst.d/rerand), not at reboot, so the
# figure is `apt-get install ./linux-image-VERSION_...deb` with the hook
# against the same install with the hook moved aside, in alternating pairs
# (bench/apt/agent.sh), in one Debian 12 guest:
#   - the base root of tests/e2e/lib-systemd.sh (debootstrap, cached) plus
#     kmod, initramfs-tools and its Recommends busybox and zstd (what the
#     kernel package needs to configure, offline); docs, man pages and locales
#     stripped; this tree installed as debian/rules installs it (`make install
#     PREFIX=/usr`, in a build directory of its own, build/apt-usr) plus the
#     kernel hooks where debian/rerand.install puts them; rerandd not running
#     (its own work after the install is not what apt makes the user wait for);
#   - the root in RAM: the whole root is the initramfs (rdinit=/sbin/init), no
#     disk: disk I/O completes in host time and would make the clock below
#     depend on the host;
#   - QEMU TCG, 1 vCPU, -icount shift=0,sleep=off,align=off: the guest's clocks
#     advance with the instructions it executes (1 ns each), so the host's load
#     does not change what it measures.
# The kernel package: APT_KERNEL_PKG, default the linux-image-*-cloud-amd64 that
# this host's apt offers (its linux-image-cloud-amd64 depends on it), fetched
# once with `apt-get download` into ~/.cache/rerand-e2e/debs (rrs_kernel_deb).
# The guest boots another kernel (APT_GUEST_KERNEL, default the 6.12 cloud
# kernel in RERAND_KERNELS), so the package never replaces the running one.
# The initramfs is built as initramfs-tools is configured (MODULES=most, the
# package default) unless APT_INITRAMFS_MODULES says otherwise.
# Usage: [APT_DEADLINE=EPOCH] bench/apt-install.sh OUT_DIR [PAIRS]; writes
# OUT_DIR/data/apt.tsv and apt-*.txt, the guest's console in OUT_DIR/apt/.
set -u
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:?usage: bench/apt-install.sh OUT_DIR [PAIRS]}
PAIRS=${2:-5}
export RERAND_KERNELS=${RERAND_KERNELS:-$TOP/../shared/kernels}
export E2E_BUILD=$OUT/apt/e2e
# shellcheck source=../tests/e2e/lib-systemd.sh
. "$TOP/tests/e2e/lib-systemd.sh"
# What `apt-get install ./linux-image-*.deb` needs with no archive to fetch
# from: the kernel package's Depends (kmod, linux-base, initramfs-tools) and
# initramfs-tools' Recommends (busybox, zstd: bookworm compresses with zstd),
# which a normal install of it brings.
RRS_BASE_PKGS="$RRS_BASE_PKGS kmod initramfs-tools busybox zstd"
die() { echo "bench/apt-install.sh: $*" >&2; exit 1; }
[[ "$PAIRS" =~ ^[1-9][0-9]*$ ]] || die "PAIRS=$PAIRS: not a positive number"

dir=$OUT/apt
mkdir -p "$dir" "$OUT/data" || die "cannot create $dir"
rm -f "$OUT"/data/apt.tsv "$OUT"/data/apt-*.txt
tsc=$TOP/build/bench-guest/rrb-tsc
# (scripts/bench.sh empties its OUT, by default build/bench, where the
# Makefile builds it: build it again then.)
[ -x "$tsc" ] || make -s -C "$TOP" build/bench-guest/rrb-tsc >&2 || die "$tsc: cannot build it"
for t in qemu-system-x86_64 debootstrap cpio zstd systemctl dpkg-deb apt-get; do
	command -v "$t" >/dev/null || die "$t is missing (scripts/deps.sh bench)"
done

# The guest's kernel: a cloud kernel (virtio and the serial console built in)
# of another version than the package's.
gk=${APT_GUEST_KERNEL:-$(ls "$RERAND_KERNELS"/vmlinuz-6.12*-cloud-amd64 2>/dev/null | head -n 1)}
[ -r "$gk" ] || die "no guest kernel (APT_GUEST_KERNEL, or a vmlinuz-6.12*-cloud-amd64 in $RERAND_KERNELS)"
pkg=${APT_KERNEL_PKG:-$(apt-cache show --no-all-versions linux-image-cloud-amd64 2>/dev/null |
	sed -n 's/^Depends: .*\(linux-image-[0-9][^ ,]*-cloud-amd64\).*/\1/p' | head -n 1)}
[ -n "$pkg" ] || die "this host's apt offers no linux-image-cloud-amd64 (set APT_KERNEL_PKG)"
deb=$(rrs_kernel_deb "$pkg") || die "cannot fetch $pkg"
v=${pkg#linux-image-}
[ "$v" != "${gk##*/vmlinuz-}" ] || die "the guest would boot the very kernel $v it installs (APT_GUEST_KERNEL)"
modules=${APT_INITRAMFS_MODULES:-most}

# ---- the root ----------------------------------------------------------------
base=$(rrs_rootfs) || die "no base root (debootstrap)"
root=$(mktemp -d "$dir/root.XXXXXX") || die "mktemp"
trap 'rm -rf "$root"' EXIT
tar -C "$root" --numeric-owner -xpf "$base" || die "cannot unpack $base"
rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/* \
	"$root"/usr/share/info/* "$root"/var/cache/apt/*.bin
# This tree as its package installs it (debian/rules: PREFIX=/usr), built in
# a directory of its own so that build/ (PREFIX /usr/local) stays as it is.
nice -n 19 make -s -C "$TOP" O=build/apt-usr PREFIX=/usr UNITDIR=/lib/systemd/system \
	SYSUSERSDIR=/usr/lib/sysusers.d install DESTDIR="$root" >"$dir/install.log" 2>&1 ||
	{ tail -n 20 "$dir/install.log" >&2; die "make install failed (log: $dir/install.log)"; }
# ... and the kernel hooks where debian/rerand.install puts them.
while read -r src dst; do
	[ -n "$src" ] || continue
	install -D -m 0755 "$TOP/$src" "$root/$dst/$(basename "$src")" || die "cannot install $src"
done <"$TOP/debian/rerand.install"
[ -x "$root/etc/kernel/postinst.d/rerand" ] && [ -x "$root/usr/lib/rerand/kernel-hook" ] ||
	die "debian/rerand.install no longer puts the hook in /etc/kernel/postinst.d (bench/apt/agent.sh moves it aside)"
lx=$root/usr/local/libexec/rerand-apt
install -d "$lx" "$root/var/lib/rerand-apt" &&
	install -m 0755 "$TOP/bench/apt/agent.sh" "$lx/agent" &&
	install -m 0755 "$tsc" "$lx/rrb-tsc" &&
	install -m 0644 "$TOP/bench/apt/rerand-apt.service" "$root/etc/systemd/system/" &&
	install -m 0644 "$deb" "$root/var/lib/rerand-apt/" ||
	die "cannot install the bench agent"
systemctl --root="$root" enable rerand-apt.service >/dev/null 2>&1 || die "cannot enable rerand-apt.service"
# Nothing else of the system's schedule during the runs (apt's and dpkg's
# daily timers would take the dpkg lock or the CPU at random).
for u in apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer; do
	systemctl --root="$root" mask "$u" >/dev/null 2>&1
done
basename "$deb" >"$root/var/lib/rerand-apt/deb"
echo "$v" >"$root/var/lib/rerand-apt/version"
echo "$PAIRS" >"$root/var/lib/rerand-apt/pairs"
if [ "$modules" != most ]; then
	install -d "$root/etc/initramfs-tools/conf.d" &&
		printf '# bench/apt-install.sh\nMODULES=%s\n' "$modules" >"$root/etc/initramfs-tools/conf.d/rerand-apt.conf" ||
		die "cannot configure initramfs-tools"
fi
: >"$root/etc/fstab"
echo rerand-apt >"$root/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 rerand-apt\n' >"$root/etc/hosts"
rm -f "$root/etc/machine-id"
systemd-machine-id-setup --root="$root" >/dev/null 2>&1 || die "systemd-machine-id-setup failed"
du -sm "$root" | cut -f1 >"$OUT/data/apt-root-mib.txt"
# The root as the initramfs, owners as they are (not -R 0:0: the root has
# other users' files).
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) | zstd -q -T0 -3 >"$dir/root.cpio.zst" ||
	die "cannot pack the root"
rm -rf "$root"
trap - EXIT

# ---- the guest -----------------------------------------------------------------
log=$dir/serial.log
tmo=${APT_TIMEOUT:-$((1200 + 900 * 2 * PAIRS))}
if [ -n "${APT_DEADLINE:-}" ]; then
	left=$((APT_DEADLINE - EPOCHSECONDS))
	[ "$left" -ge 300 ] || die "APT_DEADLINE leaves ${left}s: too little for one pair"
	[ "$left" -ge "$tmo" ] || { tmo=$left; echo "$(date -u -d "@$APT_DEADLINE" +%H:%M)" >"$OUT/data/apt-deadline.txt"; }
fi
args=(-accel tcg -machine q35 -m "${APT_MEM:-3}G" -smp 1 -cpu max -no-reboot -nographic -nic none
	-icount shift=0,sleep=off,align=off
	-kernel "$gk" -initrd "$dir/root.cpio.zst"
	-append "rdinit=/sbin/init console=ttyS0,115200 panic=-1 no_timer_check quiet")
printf '%s\n' "$(basename "$gk")" "$(basename "$deb")" "$PAIRS" "$modules" "qemu-system-x86_64 ${args[*]}" \
	>"$OUT/data/apt-setup.txt"
echo "bench/apt-install.sh: guest $(basename "$gk"), installs $(basename "$deb"), $PAIRS pairs, MODULES=$modules, timeout ${tmo}s"
t0=$EPOCHSECONDS
rc=0
# The console time-stamped by the host (e2e_stamp): how long each step took
# in host wall time, beside the guest's virtual clock.  APT_NICE: QEMU's
# niceness, 0 by default: `make bench` runs this beside its other guests,
# and at 10 it got a sixth of a CPU there (an install took half an hour).
timeout -k 5 "$tmo" nice -n "${APT_NICE:-0}" qemu-system-x86_64 "${args[@]}" -monitor none -serial stdio \
	</dev/null 2>"$dir/qemu.stderr" | e2e_stamp >"$log"
rc=${PIPESTATUS[0]}
echo "$((EPOCHSECONDS - t0)) $rc" >"$OUT/data/apt-wall.txt"
rm -f "$dir/root.cpio.zst"

# ---- the figures -------------------------------------------------------------------
# "RRA go N MODE", "RRA t N PAIR MODE RC TSC0 MONO0 TSC1 MONO1" and "RRA check
# N MODE ok ...", each twice (kernel log and tty): the first of each N
# counts; the host's stamp of "go" and "t" is the install's host wall time.
awk '
	{ i = index($0, "RRA ") } i == 0 { next }
	{ h = $1; $0 = substr($0, i) }
	$2 == "go" && !(("g", $3) in seen) { seen["g", $3]; g[$3] = h }
	$2 == "t" && NF == 10 && !(("t", $3) in seen) { seen["t", $3]; t[$3] = $0; th[$3] = h }
	$2 == "check" && $5 == "ok" && !(("c", $3) in seen) { seen["c", $3]; c[$3] = $0 }
	$2 == "fail" && !fl { fl = $0 }
	$2 == "done" { done = 1 }
	END {
		for (n = 1; (n in t); n++) {
			split(t[n], a, " ")
			split((n in c) ? c[n] : "", b, " ")
			img = "-"; ird = "-"
			for (j = 6; j in b; j++) {
				if (b[j] ~ /^image_bytes=/) img = substr(b[j], 13)
				if (b[j] ~ /^initrd_bytes=/) ird = substr(b[j], 14)
			}
			# n, pair, mode, apt rc, checked, virtual seconds, image and
			# initrd bytes, host wall seconds
			printf "%d\t%d\t%s\t%d\t%s\t%.3f\t%s\t%s\t%.0f\n", n, a[4], a[5], a[6],
				(n in c) ? "ok" : "no", (a[10] - a[8]) / 1e9, img, ird,
				(n in g) ? th[n] - g[n] : -1
		}
		if (fl != "") print fl > "/dev/stderr"
		exit done ? 0 : 3
	}' "$log" >"$OUT/data/apt.tsv" 2>"$OUT/data/apt-fail.txt"
prc=$?
[ -s "$OUT/data/apt-fail.txt" ] || rm -f "$OUT/data/apt-fail.txt"
cat "$OUT/data/apt.tsv"
echo "bench/apt-install.sh: QEMU exit $rc after $(cut -d' ' -f1 "$OUT/data/apt-wall.txt") s (host wall time)"
[ "$prc" = 0 ] || die "the guest did not finish its plan: $(cat "$OUT/data/apt-fail.txt" 2>/dev/null || echo "no RRA done (timeout $tmo s or a crash; $log)")"
