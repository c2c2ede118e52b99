# SPDX-License-Identifier: GPL-2.0-only
# Sourced by the comeback tests (check-comeback.sh, the busybox guest, and
# check-systemd-comeback.sh, the Debian systemd guest): the real watchdog
# driver of the kernel under test.  Needs $kernel (its vmlinuz) and $kver.

# rrc_modules: the directory of watchdog.ko, i6300esb.ko, reed_solomon.ko and
# ramoops.ko of this very kernel, from its Debian package (apt-get download,
# checked against the archive's signed index), cached beside the kernels
# fetch-kernel.sh caches.  The package's vmlinuz must be the kernel under
# test byte for byte, else its modules would not load.
rrc_modules() {
	local cache=${RERAND_KERNEL_CACHE:-${XDG_CACHE_HOME:-${HOME:-/var/tmp}/.cache}/rerand-e2e/kernels}
	local dir="$cache/modules-$kver" pkg tmp deb m
	local mods="drivers/watchdog/watchdog drivers/watchdog/i6300esb lib/reed_solomon/reed_solomon fs/pstore/ramoops"
	if [ -s "$dir/SHA256SUMS" ] && (cd "$dir" && sha256sum --quiet -c SHA256SUMS >/dev/null 2>&1); then
		echo "$dir"; return 0
	fi
	mkdir -p "$cache" || return 1
	tmp=$(mktemp -d "$cache/mods.XXXXXX") || return 1
	for pkg in "linux-image-$kver-unsigned" "linux-image-$kver"; do
		apt-cache show "$pkg" >/dev/null 2>&1 || continue
		(cd "$tmp" && apt-get download -q "$pkg" >/dev/null 2>"$tmp/apt.err") && break
	done
	deb=$(ls "$tmp"/*.deb 2>/dev/null | head -n1)
	[ -n "$deb" ] || { echo "no package linux-image-$kver(-unsigned) to download: $(tail -n1 "$tmp/apt.err" 2>/dev/null)" >&2; rm -rf "$tmp"; return 1; }
	mkdir "$tmp/x"
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp/x" "./boot/vmlinuz-$kver" \
		$(for m in $mods; do echo "./lib/modules/$kver/kernel/$m.ko.xz"; done) 2>"$tmp/tar.err" ||
		{ echo "$deb: $(tail -n1 "$tmp/tar.err")" >&2; rm -rf "$tmp"; return 1; }
	if ! cmp -s "$tmp/x/boot/vmlinuz-$kver" "$kernel"; then
		echo "$deb: its vmlinuz-$kver differs from $kernel: its modules would not load" >&2
		rm -rf "$tmp"; return 1
	fi
	mkdir "$tmp/out"
	for m in $mods; do
		xz -dc "$tmp/x/lib/modules/$kver/kernel/$m.ko.xz" >"$tmp/out/${m##*/}.ko" || { rm -rf "$tmp"; return 1; }
	done
	(cd "$tmp/out" && sha256sum ./*.ko >SHA256SUMS)
	rm -rf "$dir" && mv "$tmp/out" "$dir" && rm -rf "$tmp"
	echo "$dir"
}
