# SPDX-License-Identifier: GPL-2.0-only
# Sourced by the comeback tests (check-comeback.sh, the busybox guest, and
# check-systemd-comeback.sh, the Debian systemd guest): the real watchdog
# driver of the kernel under test.  Needs $kernel (its vmlinuz) and $kver.

# rrc_modules: the directory of watchdog.ko, i6300esb.ko, reed_solomon.ko and
# ramoops.ko of this very kernel, from its Debian package (apt-get download,
# checked against the archive's signed index), cached beside the kernels
# fetch-kernel.sh caches.  The package's vmlinuz must be the kernel under
# test byte for byte, else its modules would not load: ../shared holds the
# -unsigned package's vmlinuz, scripts/kernels.sh fetches the signed one, so
# both packages are tried and the one that matches is used.  From this
# machine's apt, else (a Debian 12 kernel on a newer host) from
# bookworm-security through scripts/suite-apt.sh, as kernels.sh fetches it;
# with RRS_SUITE another suite (trixie), from that suite and its -security.
rrc_modules() {
	local cache=${RERAND_KERNEL_CACHE:-${XDG_CACHE_HOME:-${HOME:-/var/tmp}/.cache}/rerand-e2e/kernels}
	local dir="$cache/modules-$kver" pkg tmp deb="" m src why="" mdir=lib/modules
	local mods="drivers/watchdog/watchdog drivers/watchdog/i6300esb lib/reed_solomon/reed_solomon fs/pstore/ramoops"
	if [ -s "$dir/SHA256SUMS" ] && (cd "$dir" && sha256sum --quiet -c SHA256SUMS >/dev/null 2>&1); then
		echo "$dir"; return 0
	fi
	mkdir -p "$cache" || return 1
	tmp=$(mktemp -d "$cache/mods.XXXXXX") || return 1
	local suites=bookworm-security
	case ${RRS_SUITE:-bookworm} in
	bookworm) ;;
	*) suites="$suites $RRS_SUITE $RRS_SUITE-security" ;;
	esac
	for src in "" $suites; do
		for pkg in "linux-image-$kver" "linux-image-$kver-unsigned"; do
			rrc_apt "$src" apt-cache show "$pkg" >/dev/null 2>&1 || continue
			rm -rf "$tmp/x" "$tmp"/*.deb
			(cd "$tmp" && rrc_apt "$src" apt-get download -q "$pkg" >/dev/null 2>"$tmp/apt.err") ||
				{ why="$pkg: $(tail -n1 "$tmp/apt.err")"; continue; }
			deb=$(ls "$tmp"/*.deb 2>/dev/null | head -n1)
			mkdir "$tmp/x"
			# Debian 12's packages ship /lib/modules, Debian 13's /usr/lib/modules
			mdir=lib/modules
			dpkg-deb -c "$deb" 2>/dev/null | grep -q " \./usr/lib/modules/$kver/" && mdir=usr/lib/modules
			dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp/x" "./boot/vmlinuz-$kver" \
				$(for m in $mods; do echo "./$mdir/$kver/kernel/$m.ko.xz"; done) 2>"$tmp/tar.err" ||
				{ why="$deb: $(tail -n1 "$tmp/tar.err")"; deb=""; continue; }
			cmp -s "$tmp/x/boot/vmlinuz-$kver" "$kernel" && break 2
			why="${why:+$why; }${deb##*/}: its vmlinuz-$kver differs from $kernel"
			deb=""
		done
	done
	if [ -z "$deb" ]; then
		echo "no package of linux-image-$kver(-unsigned) holds $kernel byte for byte (its modules would not load): ${why:-none to download}" >&2
		rm -rf "$tmp"; return 1
	fi
	mkdir "$tmp/out"
	for m in $mods; do
		xz -dc "$tmp/x/$mdir/$kver/kernel/$m.ko.xz" >"$tmp/out/${m##*/}.ko" || { rm -rf "$tmp"; return 1; }
	done
	(cd "$tmp/out" && sha256sum ./*.ko >SHA256SUMS)
	rm -rf "$dir" && mv "$tmp/out" "$dir" && rm -rf "$tmp"
	echo "$dir"
}

# rrc_apt SUITE CMD...: CMD with this machine's apt sources ("") or SUITE's
# archive (scripts/suite-apt.sh: a temporary sources list, the keyring check).
rrc_apt() {
	local suite=$1
	shift
	if [ -z "$suite" ]; then "$@"; else "$E2E_TOP/scripts/suite-apt.sh" "$suite" "$@"; fi
}
