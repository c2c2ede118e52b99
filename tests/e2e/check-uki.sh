#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# A chain of rerandomizing kexecs whose image is built from a unified kernel
# image: the shared 6.1 cloud kernel wrapped with bookworm's systemd-boot
# stub by objcopy (tests/mkuki.sh, with .cmdline, .osrel, .ucode and .initrd
# sections), then `rerand image UKI`.  The guest stages that image with
# `rerand load` and checks every generation as check-core does.  The UKI's
# own .initrd cannot be the harness initramfs (which carries the image), so
# the guest passes --initrd/--append itself; `rerand load --uki` is tested
# in tests/cli/test-uki.sh.  One run in short and long.
# long (make check-long) adds the Debian 13 variant: trixie's 6.12 cloud
# kernel (from trixie's archive, scripts/fetch-kernel.sh) made a UKI by
# trixie's own `ukify build` (systemd-ukify 257, its python3-pefile and
# systemd-boot-efi stub), as trixie users build UKIs: this host's ukify on a
# trixie host, else those three packages fetched from trixie's archive with
# scripts/suite-apt.sh (checked against the archive keyring) and run with
# this host's python3.  RRS_SUITE=trixie runs that variant alone.
set -u
. "$(dirname "$0")/lib.sh"
what=${1:-short}
case "$what" in short|long) ;; *) echo "usage: $0 short|long" >&2; exit 2 ;; esac
kexecs=${E2E_KEXECS:-5}
STUB=/usr/lib/systemd/boot/efi/linuxx64.efi.stub

if [ -z "${RERAND_KERNELS:-}" ] || [ ! -d "$RERAND_KERNELS" ]; then
	echo "ok - e2e uki # SKIP RERAND_KERNELS not set: no kernel to wrap"
	exit 0
fi
[ -r "$STUB" ] || { echo "not ok - e2e uki: $STUB missing (scripts/deps.sh check: systemd-boot-efi)"; exit 0; }
[ -x "$E2E_RERAND" ] || { echo "not ok - e2e uki: $E2E_RERAND not built"; exit 0; }
command -v qemu-system-x86_64 >/dev/null ||
	{ echo "not ok - e2e uki: qemu-system-x86_64 missing (scripts/deps.sh check)"; exit 0; }

bookworm_uki() {
	kernel=$RERAND_KERNELS/vmlinuz-6.1.0-57-cloud-amd64
	ukidir=$E2E_BUILD/uki
	rm -rf "$ukidir"
	mkdir -p "$ukidir/ird"
	echo "e2e-uki" > "$ukidir/ird/marker"
	(cd "$ukidir/ird" && echo marker | cpio -o -H newc -R 0:0 --quiet) > "$ukidir/initrd.cpio"
	printf 'ucode' > "$ukidir/ucode"
	"$E2E_TOP/tests/mkuki.sh" -o "$ukidir/kernel.efi" -k "$kernel" -i "$ukidir/initrd.cpio" \
		-u "$ukidir/ucode" -c "console=ttyS0,115200 quiet" -r /etc/os-release ||
		{ echo "not ok - e2e uki: tests/mkuki.sh failed"; return 0; }
	type=$("$E2E_RERAND" inspect --json "$ukidir/kernel.efi" |
		python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["type"], len(d["sections"]))')
	if [ "$type" = "uki 5" ]; then
		echo "ok - e2e uki: $(basename "$kernel") wrapped in a UKI with 5 parts (rerand inspect: $type)"
	else
		echo "not ok - e2e uki: rerand inspect says '$type', not a UKI with 5 parts"
		return 0
	fi

	# The harness builds its image with e2e_image: here from the UKI.
	e2e_image() {
		local out=$ukidir/uki.img
		"$E2E_RERAND" image "$ukidir/kernel.efi" -o "$out" >&2 ||
			e2e_die "$E2E_RERAND image $ukidir/kernel.efi failed"
		echo "$out"
	}

	e2e_note "e2e uki: $kexecs kexecs of an image built from $ukidir/kernel.efi"
	e2e_run uki-chain "$kernel" seabios max load "$kexecs" rerand
}

# trixie_ukify: print the ukify command (words) trixie users run, and the
# stub after a tab; this host's when it is trixie, else trixie's packages
# unpacked in the cache.
trixie_ukify() {
	local host d deb
	host=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
	if [ "$host" = trixie ] && command -v ukify >/dev/null; then
		printf '%s\t%s\n' "$(command -v ukify)" "$STUB"
		return 0
	fi
	d=$E2E_BUILD/cache/ukify-trixie
	if [ ! -x "$d/root/usr/lib/systemd/ukify" ]; then
		rm -rf "$d" && mkdir -p "$d/debs" || return 1
		(cd "$d/debs" && "$E2E_TOP/scripts/suite-apt.sh" trixie apt-get download -q \
			systemd-ukify python3-pefile systemd-boot-efi >"$d/download.log" 2>&1) ||
			{ tail -n 3 "$d/download.log" >&2; return 1; }
		for deb in "$d"/debs/*.deb; do dpkg-deb -x "$deb" "$d/root" || return 1; done
	fi
	printf 'env PYTHONPATH=%s /usr/bin/python3 %s\t%s\n' "$d/root/usr/lib/python3/dist-packages" \
		"$d/root/usr/lib/systemd/ukify" "$d/root/usr/lib/systemd/boot/efi/linuxx64.efi.stub"
}

# trixie_uki: the Debian 13 variant (see the header).
trixie_uki() {
	local t name=e2e-uki-trixie cmd stub ver secs
	kernel=$(RERAND_SUITE=trixie "$E2E_TOP/scripts/fetch-kernel.sh" linux-image-cloud-amd64 2>"$E2E_BUILD/fetch-trixie-uki.err") ||
		{ echo "not ok - $name: no trixie cloud kernel: $(tail -n 1 "$E2E_BUILD/fetch-trixie-uki.err")"; return 0; }
	t=$(trixie_ukify) || { echo "not ok - $name: cannot get trixie's ukify (systemd-ukify, python3-pefile, systemd-boot-efi)"; return 0; }
	cmd=${t%%$'\t'*} stub=${t#*$'\t'}
	ver=$($cmd --version 2>&1)
	ukidir=$E2E_BUILD/uki-trixie
	rm -rf "$ukidir"
	mkdir -p "$ukidir/ird"
	echo "e2e-uki" >"$ukidir/ird/marker"
	(cd "$ukidir/ird" && echo marker | cpio -o -H newc -R 0:0 --quiet) >"$ukidir/initrd.cpio"
	printf 'ucode' >"$ukidir/ucode"
	# As trixie's kernel-install 60-ukify plugin calls it: build, the kernel,
	# its initrd and microcode, the command line and the os-release.
	if ! $cmd build --linux="$kernel" --initrd="$ukidir/initrd.cpio" --microcode="$ukidir/ucode" \
		--cmdline="console=ttyS0,115200 quiet" --os-release=@/etc/os-release --stub="$stub" \
		--output="$ukidir/kernel.efi" >"$ukidir/ukify.log" 2>&1; then
		sed 's/^/# /' "$ukidir/ukify.log" | tail -n 5
		echo "not ok - $name: $ver build failed"
		return 0
	fi
	# ukify adds .uname to mkuki.sh's five parts; .linux must be the kernel.
	secs=$("$E2E_RERAND" inspect --json "$ukidir/kernel.efi" | python3 -c '
import json, sys
d = json.load(sys.stdin)
s = d["sections"]
print(d["type"], " ".join(sorted(s)), int(s.get(".linux", "0x0"), 16))')
	local want=".cmdline .initrd .linux .osrel .ucode .uname $(stat -c %s "$kernel")"
	if [ "$secs" = "uki $want" ]; then
		echo "ok - $name: $(basename "$kernel") made a UKI by $ver: ${secs% *}"
	else
		echo "not ok - $name: rerand inspect says '$secs', want 'uki $want'"
		return 0
	fi
	e2e_note "$name: $kexecs kexecs of an image built from $ukidir/kernel.efi"
	# (The harness's 90 + 60 s per kexec ran out at load 48 here with the
	# third generation still booting: 6.12 boots slower than 6.1 under TCG.)
	E2E_TIMEOUT=${E2E_TIMEOUT:-$((90 + 180 * kexecs))} \
		e2e_run uki-chain-trixie "$kernel" seabios max load "$kexecs" rerand
}

[ "${RRS_SUITE:-bookworm}" = trixie ] || bookworm_uki
{ [ "$what" = long ] || [ "${RRS_SUITE:-}" = trixie ]; } && trixie_uki
exit 0
