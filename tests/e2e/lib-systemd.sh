# SPDX-License-Identifier: GPL-2.0-only
# A real Debian 12 machine in a box: the guest builder behind check-systemd.sh
# and `make debian-vm`.  Sourced; builds on lib-daemon.sh (kernel choice, the
# address-leak search) and lib.sh (QEMU, TAP).
#
#   rrs_rootfs        debootstrap a minimal Debian 12 (systemd as PID 1,
#                     udev, dbus, kexec-tools and the libraries rerand links
#                     against) once; cached as a tarball keyed by its inputs.
#   rrs_disk          that root + `make install DESTDIR=` of this tree +
#                     the test services, as an ext4 image (mkfs.ext4 -d).
#                     RRS_INSTALL=deb: the package `make deb` built instead,
#                     which the agent installs with `dpkg -i` at boot 0, and
#                     a second Debian kernel package (RRS_KERNEL2_DEB) that it
#                     installs and then purges rerand at the last boot.
#   rrs_qemu          boot a cloud kernel (NVMe and ext4 built in) with
#                     root=/dev/nvme0n1 under TCG; no network.
#
# systemd-boot (check-systemd.sh uki, RRS_BOOT=uki): rrs_fill_uki makes an
# ESP disk ($RRS_ESP: systemd-bootx64.efi and a UKI of RRS_UKI_DEB's kernel
# built by tests/mkuki.sh from bookworm's stub) and puts that package's
# modules in the root (vfat, efivarfs and virtio_blk are modules in the
# cloud kernel); rrs_qemu boots OVMF from it (RRS_FW=ovmf-uki).
#
# Secure Boot (check-systemd-sb.sh): RRS_SB_IMAGE names a rerand image signed
# on this host (the build host); rrs_fill ships it as
# $RRS_SB_DIR/RELEASE.img with a drop-in setting SignedImageDirectory=, and
# RRS_FW=ovmf-sb makes rrs_qemu boot OVMF with the snakeoil keys enrolled
# (lib-sb.sh), so the guest is locked down.
#
# kdump (check-systemd-kdump.sh): RRS_KDUMP=1 adds kdump-tools and
# makedumpfile to the base root (its own cache key).
#
# Fleet (check-systemd-fleet.sh): RRS_FLEET=1 adds Debian's etcd-server and
# etcd-client to the base root (its own cache key), keeps the etcd.service
# the package ships enabled, and rrs_fill adds a [Fleet] drop-in (etcd on the
# guest's loopback, group e2e, one slot); the agent does the rest.
#
# Nothing here needs root inside the sandbox but debootstrap itself.

. "$(dirname "${BASH_SOURCE[0]}")/lib-daemon.sh"

RRS_SUITE=${RRS_SUITE:-bookworm}
RRS_MIRROR=${RRS_MIRROR:-http://deb.debian.org/debian}
# Survives `make clean` and fresh clones on the same machine: the base root
# only depends on the suite, the mirror and the package list.
RRS_CACHE=${RRS_CACHE:-${XDG_CACHE_HOME:-${HOME:-/var/tmp}/.cache}/rerand-e2e}
RRS_DISK_MIB=${RRS_DISK_MIB:-1536}
# The guest's own systemd stack plus what the tests use in the guest.
# libcurl4: rerand-fleetd (the fleet helper that `make install` also ships)
# links it; rerandd no longer loads it.  Names as bookworm (and this host's
# dpkg -S) spell them: rrs_suite_pkgs turns each into what RRS_SUITE's
# archive offers (trixie: libcurl4t64).
RRS_BASE_PKGS="systemd systemd-sysv udev dbus kexec-tools procps libcurl4"
# RRS_INSTALL=deb: the second kernel package's dependencies too (kmod and
# initramfs-tools: what a Debian kernel package needs to configure).
RRS_INSTALL=${RRS_INSTALL:-tree}
[ "$RRS_INSTALL" = deb ] && RRS_BASE_PKGS="$RRS_BASE_PKGS kmod initramfs-tools"
[ "${RRS_FLEET:-0}" = 1 ] && RRS_BASE_PKGS+=" etcd-server etcd-client"
# RRS_KDUMP=1 (check-systemd-kdump.sh): Debian's kdump-tools and makedumpfile
# (same names in bookworm and trixie), installed and enabled by debootstrap
# as apt would (debconf's default: USE_KDUMP=1).
[ "${RRS_KDUMP:-0}" = 1 ] && RRS_BASE_PKGS+=" kdump-tools makedumpfile"
# Bump when the way the base root is made changes (part of its cache key).
RRS_ROOTFS_VERSION=1
# Where the Secure Boot guest's pre-signed images live (not rerandd's default
# /var/lib/rerand/signed, so that the drop-in is what points rerandd there).
RRS_SB_DIR=${RRS_SB_DIR:-/usr/local/lib/rerand-e2e/signed}

# rrs_lib_pkgs BIN...: the Debian packages that hold the shared libraries
# BIN... link against (so the guest runs the very binaries `make` built).
rrs_lib_pkgs() {
	local lib real
	for lib in $(ldd "$@" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $1 !~ /:$/ { print $1 }' | sort -u); do
		real=$(readlink -f "$lib")
		dpkg -S "$real" 2>/dev/null || dpkg -S "$lib" 2>/dev/null ||
			dpkg -S "/usr$lib" 2>/dev/null || dpkg -S "${lib#/usr}" 2>/dev/null ||
			{ echo "e2e: no Debian package holds $lib" >&2; return 1; }
	done | cut -d: -f1 | sort -u | tr '\n' ' '
}

# rrs_suite_pkgs NAME...: each NAME as RRS_SUITE's archive offers it, one
# line "NAME CHOSEN" each: NAME itself when the suite has a package of that
# name, else the one package that provides it there (the 64-bit time_t
# renames: trixie's libcurl4t64 provides libcurl4).  Asks the suite's own
# signed index (scripts/suite-apt.sh), not this host's apt.  Fails naming
# the suite and the package when there is none or more than one.
rrs_suite_pkgs() {
	local p prov n
	for p in "$@"; do
		if "$E2E_TOP/scripts/suite-apt.sh" "$RRS_SUITE" apt-cache show --no-all-versions "$p" 2>/dev/null |
			grep -qx "Package: $p"; then
			echo "$p $p"; continue
		fi
		prov=$("$E2E_TOP/scripts/suite-apt.sh" "$RRS_SUITE" apt-cache showpkg "$p" 2>/dev/null |
			sed -n '/^Reverse Provides:/,$p' | sed '1d' | awk 'NF { print $1 }' | sort -u)
		n=$(grep -c . <<<"$prov")
		[ "$n" -eq 1 ] ||
			{ echo "e2e: $RRS_SUITE's archive has no package $p and ${n/#0/no} provider of it${prov:+: $(tr '\n' ' ' <<<"$prov")}" >&2; return 1; }
		echo "$p $prov"
	done
}

# rrs_rootfs: print the path of the cached base root tarball, building it
# with debootstrap when its inputs changed.  Needs root and the mirror.
# The key holds the names asked for; the names chosen for the suite are
# logged and kept beside the tarball (.pkgs).
rrs_rootfs() {
	local libpkgs pkgs key out tmp map
	libpkgs=$(rrs_lib_pkgs "$E2E_RERAND" "$RRD_RERANDD") || return 1
	pkgs=$(echo $RRS_BASE_PKGS $libpkgs | tr ' ' '\n' | sort -u | tr '\n' ',' | sed 's/,$//')
	key=$(printf '%s|%s|%s|%s' "$RRS_SUITE" "$RRS_MIRROR" "$pkgs" "$RRS_ROOTFS_VERSION" |
		sha256sum | cut -c1-16)
	out="$RRS_CACHE/rootfs-$RRS_SUITE-$key.tar"
	if [ -s "$out" ]; then
		touch "$out"
		[ -s "$out.pkgs" ] && echo "# $RRS_SUITE base root (cached): $(awk '$1 != $2 { printf "%s -> %s, ", $1, $2 }' "$out.pkgs")$(wc -l <"$out.pkgs") packages asked for" >&2
		echo "$out"; return 0
	fi
	command -v debootstrap >/dev/null || e2e_die "debootstrap is missing (scripts/deps.sh check)"
	[ "$(id -u)" -eq 0 ] || e2e_die "debootstrap needs root"
	mkdir -p "$RRS_CACHE" || return 1
	find "$RRS_CACHE" -maxdepth 1 -name 'rootfs-*.tar' -mtime +30 -delete 2>/dev/null
	map=$(rrs_suite_pkgs $(tr ',' ' ' <<<"$pkgs")) || e2e_die "cannot choose $RRS_SUITE's package names"
	echo "# $RRS_SUITE's names: $(awk '$1 != $2 { printf "%s -> %s, ", $1, $2 }' <<<"$map")the rest as asked: $(awk '$1 == $2 { printf "%s ", $1 }' <<<"$map")" >&2
	pkgs=$(awk '{ print $2 }' <<<"$map" | sort -u | tr '\n' ',' | sed 's/,$//')
	tmp=$(mktemp -d "$RRS_CACHE/debootstrap.XXXXXX") || return 1
	echo "# debootstrap $RRS_SUITE from $RRS_MIRROR into $tmp (cached in $out)" >&2
	# minbase: no "required"-priority extras; the listed packages pull
	# their dependencies.  Debconf defaults everywhere (no stdin).
	if ! DEBIAN_FRONTEND=noninteractive debootstrap --variant=minbase --include="$pkgs" \
		"$RRS_SUITE" "$tmp/root" "$RRS_MIRROR" >"$tmp.log" 2>&1; then
		tail -n 20 "$tmp.log" >&2
		e2e_die "debootstrap failed (log: $tmp.log)"
	fi
	# Nothing of the build host's mounts may stay behind.
	grep -q " $tmp/root" /proc/mounts && e2e_die "debootstrap left mounts under $tmp/root"
	rm -rf "$tmp/root/var/cache/apt/archives/"*.deb "$tmp/root/var/lib/apt/lists/"*_Packages
	tar -C "$tmp/root" --numeric-owner -cf "$out.tmp" . || e2e_die "cannot write $out"
	echo "$map" >"$out.pkgs"
	mv "$out.tmp" "$out" && rm -rf "$tmp" "$tmp.log"
	echo "$out"
}

# rrs_suite_deb SUITE: print the .deb built for SUITE in its pristine root (build/
# deb-SUITE/, scripts/deb-chroot.sh), running `make deb-chroot` first when it
# is missing or older than any source file.
rrs_suite_deb() {
	local suite=$1 deb d="$E2E_TOP/build/deb-$1"
	deb=$(ls -t "$d"/rerand_*_amd64.deb 2>/dev/null | head -n 1)
	if [ -z "$deb" ] || [ -n "$(cd "$E2E_TOP" && find Makefile debian src kexec daemon fleetd include systemd etc docs scripts/deb-chroot.sh \
		-newer "$deb" -type f -print -quit 2>/dev/null)" ]; then
		echo "# make deb-chroot SUITE=$suite (the $suite guest installs the package built for $suite)" >&2
		mkdir -p "$E2E_BUILD" || return 1
		make -s -C "$E2E_TOP" deb-chroot SUITE="$suite" >"$E2E_BUILD/deb-$suite.log" 2>&1 ||
			{ tail -n 20 "$E2E_BUILD/deb-$suite.log" >&2; echo "e2e: make deb-chroot SUITE=$suite failed (log: $E2E_BUILD/deb-$suite.log)" >&2; return 1; }
		deb=$(ls -t "$d"/rerand_*_amd64.deb 2>/dev/null | head -n 1)
	fi
	[ -s "$deb" ] || { echo "e2e: make deb-chroot SUITE=$suite wrote no rerand_*_amd64.deb in $d" >&2; return 1; }
	echo "$deb"
}

# rrs_deb: print the path of rerand_VERSION_amd64.deb at the top of the
# tree, running `make deb` first when it is missing or older than any source
# file (so one build serves every guest of a run).
rrs_deb() {
	local deb
	deb=$(ls -t "$E2E_TOP"/rerand_*_amd64.deb 2>/dev/null | head -n 1)
	if [ -z "$deb" ] || [ -n "$(cd "$E2E_TOP" && find Makefile debian src kexec daemon fleetd include systemd etc docs \
		-newer "$deb" -type f -print -quit 2>/dev/null)" ]; then
		echo "# make deb (the guest installs the package)" >&2
		mkdir -p "$E2E_BUILD" || return 1
		make -s -C "$E2E_TOP" deb >"$E2E_BUILD/deb.log" 2>&1 ||
			{ tail -n 20 "$E2E_BUILD/deb.log" >&2; echo "e2e: make deb failed (log: $E2E_BUILD/deb.log)" >&2; return 1; }
		deb=$(ls -t "$E2E_TOP"/rerand_*_amd64.deb 2>/dev/null | head -n 1)
	fi
	[ -s "$deb" ] || { echo "e2e: make deb wrote no rerand_*_amd64.deb in $E2E_TOP" >&2; return 1; }
	echo "$deb"
}

# rrs_kernel_deb PACKAGE [SUITE]: print the path of that Debian package of
# SUITE (default this host's; a kernel; prometheus-node-exporter too), kept in
# $RRS_CACHE/debs; fetched once with `apt-get download`, which checks it
# against the archive's signed index.
rrs_kernel_deb() {
	local pkg=$1 from=${2:-} dir="$RRS_CACHE/debs" f host
	host=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
	# the guest's suite when this host is another release (scripts/suite-apt.sh:
	# the same signed-index check, the machine's apt untouched)
	[ "$from" = "$host" ] && from=""
	[ -z "$from" ] || dir="$RRS_CACHE/debs-$from"
	f=$(ls "$dir/${pkg}_"*_amd64.deb 2>/dev/null | head -n 1)
	if [ -z "$f" ]; then
		mkdir -p "$dir" || return 1
		if [ -n "$from" ]; then
			(cd "$dir" && "$E2E_TOP/scripts/suite-apt.sh" "$from" apt-get download -q "$pkg" >&2)
		else
			(cd "$dir" && apt-get download -q "$pkg" >&2)
		fi || { echo "e2e: apt-get download $pkg${from:+ from $from} failed" >&2; return 1; }
		f=$(ls "$dir/${pkg}_"*_amd64.deb 2>/dev/null | head -n 1)
	fi
	[ -s "$f" ] && dpkg-deb -I "$f" >/dev/null ||
		{ echo "e2e: $dir: no usable $pkg package" >&2; return 1; }
	echo "$f"
}

# rrs_conf MODE: the drop-in for rerandd.  Only what a small test machine
# needs differently from the defaults: no initrd, short ticks, reboots
# outside windows, no jitter.  Tests (short, long): the layout age starts
# long (boot 0 shortens it with `systemctl reload`), and BlockerCommand holds
# every reboot until the agent has checked the boot.  vm: a 10-minute age.
rrs_conf() {
	local age=1d
	[ "$1" = vm ] && age=10min
	cat <<CONF
# rerandd drop-in of the Debian guest (tests/e2e/lib-systemd.sh, mode $1)
[Daemon]
CheckInterval=5s

CONF
	# RRS_CONFIRM_DEFAULT=1 (check-systemd-load.sh): rerandd's defaults,
	# ConfirmTimeoutSec=10min and KexecWatchdogSec=10min, are what is tested.
	[ "${RRS_CONFIRM_DEFAULT:-0}" = 1 ] || cat <<CONF
[Comeback]
# Under TCG on a loaded host a Debian boot reached boot-complete.target
# after more than the default 600 s (a trixie guest at load 24, before
# ConfirmTimeoutSec= counted from rerandd's start: rerandd failed its
# confirmed-to-be-good boot at 709 s).  No watchdog device here (the
# comeback guest has its own drop-in); KexecWatchdogSec= must cover it.
# check-systemd-load.sh runs the defaults under load.
# (Before [Policy]: the lines after it below are [Policy]'s.)
ConfirmTimeoutSec=40min
KexecWatchdogSec=40min

CONF
	cat <<CONF
[Stage]
CONF
	# (The UKI guest boots with the UKI's own initrd, which rerandd passes on.)
	[ "${RRS_BOOT:-}" = uki ] || echo "Initrd=none"
	# The second kernel package (RRS_INSTALL=deb): under TCG its initramfs
	# and the hook's image take minutes; rerandd must stage after the hook,
	# from its image (the agent checks it was not rebuilt).  A settle far
	# shorter than dpkg's run, so that only the wait on dpkg's lock keeps
	# rerandd from building the image itself (the agent checks it waited).
	[ "$RRS_INSTALL" = deb ] && echo "NewKernelSettle=10s"
	cat <<CONF

[Policy]
MaxLayoutAge=$age
Jitter=0
MinRebootInterval=0
RebootOutsideWindows=yes

CONF
	[ "$1" = vm ] && return 0
	cat <<'CONF'
BlockerCommand=/usr/local/libexec/rerand-e2e/ready
BlockerTimeout=10s
CONF
}

# rrs_disk KERNEL DISK MODE TARGET: the guest's root disk.  The cached base
# root, this tree installed by `make install DESTDIR=` (PREFIX /usr/local,
# units in /etc/systemd/system's view as the distro's), rerandd enabled, the
# writer and agent services, KERNEL as /boot/vmlinuz-VERSION, a persistent
# journal, a fixed machine id; then mkfs.ext4 -d.  MODE short|long|vm,
# TARGET the number of rerandomizing reboots the agent waits for.
rrs_disk() {
	local kernel=$1 disk=$2 mode=$3 target=$4 base d
	base=$(rrs_rootfs) || return 1
	d=$(mktemp -d "${disk}.root.XXXXXX") || return 1
	rrs_fill "$d" "$base" "$kernel" "$mode" "$target" || { rm -rf "$d"; return 1; }
	e2e_mkfs "$d" "$disk" "$RRS_DISK_MIB" rrroot
}

# rrs_fleet_tls ROOT: fresh certificates for the fleet guest, made here with
# openssl (test keys, one guest's life).  A CA; etcd's server certificate (SAN
# 127.0.0.1, and clientAuth too: etcd's gateway dials its own port with it);
# rerand-fleetd's client certificate, installed as docs/fleet.md says; and the
# agent's own for etcdctl.  etcd gets its files as credentials too
# (LoadCredential= in a drop-in, so they need no owner in the guest), and
# listens on https only, with --client-cert-auth.
rrs_fleet_tls() {
	local d=$1 t
	t=$(mktemp -d "$d.tls.XXXXXX") || return 1
	(
		cd "$t" || exit 1
		gen() { # NAME SUBJECT EXT...
			openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
				-keyout "$1.key" -out "$1.csr" -subj "$2" &&
			printf '%s\n' "${@:3}" >"$1.ext" &&
			openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial \
				-days 2 -out "$1.pem" -extfile "$1.ext"
		}
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-keyout ca.key -out ca.pem -days 2 -subj "/O=rerand-e2e/CN=rerand-e2e fleet CA" &&
		gen server "/O=rerand-e2e/CN=etcd.e2e" subjectAltName=IP:127.0.0.1,DNS:localhost \
			extendedKeyUsage=serverAuth,clientAuth &&
		gen client "/O=rerand-e2e/OU=fleet/CN=rerand-fleetd.e2e" extendedKeyUsage=clientAuth &&
		gen agent "/O=rerand-e2e/CN=e2e-agent" extendedKeyUsage=clientAuth
	) >"$t.log" 2>&1 || { cat "$t.log" >&2; rm -rf "$t" "$t.log"; echo "e2e: openssl could not make the fleet certificates" >&2; return 1; }
	rm -f "$t.log"
	install -d -m 0700 "$d/etc/rerand/fleet-tls" "$d/etc/rerand-e2e/etcd-tls" &&
	install -m 0600 "$t/ca.pem" "$d/etc/rerand/fleet-tls/ca.pem" &&
	install -m 0600 "$t/client.pem" "$d/etc/rerand/fleet-tls/client.pem" &&
	install -m 0600 "$t/client.key" "$d/etc/rerand/fleet-tls/client.key" &&
	install -m 0600 "$t/ca.pem" "$t/server.pem" "$t/server.key" "$d/etc/rerand-e2e/etcd-tls/" &&
	install -d -m 0700 "$d/var/lib/rerand-e2e/etcd-client" &&
	install -m 0600 "$t/ca.pem" "$t/agent.pem" "$t/agent.key" "$d/var/lib/rerand-e2e/etcd-client/" &&
	install -d "$d/etc/systemd/system/etcd.service.d" || { rm -rf "$t"; return 1; }
	# What the agent reports as the subject of the certificate rerand-fleetd
	# hands etcd (the guest has no openssl); it checks its copy is that file.
	openssl x509 -in "$t/client.pem" -noout -subject -nameopt RFC2253 |
		sed 's/^subject=//' >"$d/var/lib/rerand-e2e/fleet-client-subject"
	rm -rf "$t"
	cat >"$d/etc/systemd/system/etcd.service.d/50-e2e-tls.conf" <<'EOF'
# tests/e2e/lib-systemd.sh: etcd on https only, client certificates required.
# Debian's unit is Type=notify with the default 90 s to start: a TCG guest
# on a loaded host took longer (trixie's etcd 3.5.16, 5 Dec 2026: a start
# timed out and restarted every 92 s for 12 min), so the test allows more.
[Service]
TimeoutStartSec=20min
LoadCredential=etcd-tls:/etc/rerand-e2e/etcd-tls
Environment=ETCD_LISTEN_CLIENT_URLS=https://127.0.0.1:2379
Environment=ETCD_ADVERTISE_CLIENT_URLS=https://127.0.0.1:2379
Environment=ETCD_CERT_FILE=%d/etcd-tls_server.pem
Environment=ETCD_KEY_FILE=%d/etcd-tls_server.key
Environment=ETCD_TRUSTED_CA_FILE=%d/etcd-tls_ca.pem
Environment=ETCD_CLIENT_CERT_AUTH=true
EOF
}

# rrs_fleet_k8s ROOT: the example Kubernetes hooks (etc/examples/k8s) installed
# as docs/fleet.md says, run by rerandd under the shipped rerandd.service, so
# through systemd-run out of its sandbox.  No cluster here: kubectl is a
# stand-in that records each call with the network namespace and cgroup it ran
# in, and fails when it cannot write its record (as it would inside rerandd's
# read-only, network-less sandbox).
rrs_fleet_k8s() {
	local d=$1 k=$E2E_TOP/etc/examples/k8s
	install -d "$d/etc/rerand/pre-reboot.d" "$d/etc/rerand/post-boot.d" "$d/usr/local/bin" &&
	install -m 0755 "$k/pre-reboot.d/50-k8s-drain" "$d/etc/rerand/pre-reboot.d/" &&
	install -m 0644 "$k/lib-k8s.sh" "$d/etc/rerand/pre-reboot.d/" &&
	install -m 0755 "$k/post-boot.d/50-k8s-uncordon" "$d/etc/rerand/post-boot.d/" &&
	install -m 0644 "$k/lib-k8s.sh" "$d/etc/rerand/post-boot.d/" &&
	install -D -m 0644 "$k/rerand.conf.d/50-k8s-hooks.conf" "$d/etc/rerand/rerand.conf.d/50-k8s-hooks.conf" || return 1
	printf 'RERAND_K8S_NODE=e2e-node\nKUBECTL=/usr/local/bin/kubectl\nKUBECONFIG=/etc/rerand-e2e/kubeconfig\n' \
		>"$d/etc/rerand/k8s.env"
	# the hooks refuse to run without a readable kubeconfig (the stand-in
	# kubectl does not read it)
	install -d "$d/etc/rerand-e2e" &&
	printf 'apiVersion: v1\nkind: Config\n# STAND-IN (tests/e2e/lib-systemd.sh): no cluster\n' \
		>"$d/etc/rerand-e2e/kubeconfig" && chmod 0600 "$d/etc/rerand-e2e/kubeconfig" || return 1
	cat >"$d/usr/local/bin/kubectl" <<'EOF'
#!/bin/sh
# STAND-IN kubectl (tests/e2e/lib-systemd.sh): records its call, no cluster.
printf '%s|%s|%s|%s\n' "$*" "${KUBECONFIG:-}" "$(readlink /proc/self/ns/net)" \
	"$(sed -n 's/^0:://p' /proc/self/cgroup)" >>/var/lib/rerand-e2e/kubectl-calls || exit 1
EOF
	chmod 0755 "$d/usr/local/bin/kubectl"
}

# rrs_fill ROOT BASE KERNEL MODE TARGET: everything rrs_disk puts in ROOT.
rrs_fill() {
	local d=$1 base=$2 kernel=$3 mode=$4 target=$5 v libexec u
	v=$("$E2E_RERAND" inspect "$kernel" 2>/dev/null | sed -n 's/^ *\(kernel \)\{0,1\}version: *\([^ ]*\).*/\2/p' | head -n 1)
	[ -n "$v" ] || v=${kernel##*/vmlinuz-}
	tar -C "$d" --numeric-owner -xpf "$base" || return 1
	libexec="$d/usr/local/libexec/rerand-e2e"
	install -d "$libexec" "$d/var/lib/rerand-e2e" "$d/var/log/journal" || return 1
	if [ "$RRS_INSTALL" = deb ]; then
		rrs_fill_deb "$d" || return 1
	else
		make -s -C "$E2E_TOP" install DESTDIR="$d" UNITDIR=/lib/systemd/system >"$d.install.log" 2>&1 ||
			{ cat "$d.install.log" >&2; rm -f "$d.install.log"; return 1; }
		rm -f "$d.install.log"
	fi
	install -m 0755 "$E2E_DIR/debian/agent.sh" "$libexec/agent" &&
		{ [ -z "${RRS_XSTEPS:-}" ] || install -m 0644 "$E2E_DIR/debian/reboots.sh" "$libexec/reboots"; } &&
		install -m 0755 "$E2E_DIR/debian/writer.sh" "$libexec/writer" &&
		install -m 0755 "$E2E_DIR/debian/ready.sh" "$libexec/ready" &&
		install -m 0644 "$E2E_DIR/debian/rerand-e2e-writer.service" \
			"$E2E_DIR/debian/rerand-e2e-agent.service" "$d/etc/systemd/system/" || return 1
	for u in $([ "$RRS_INSTALL" = deb ] || echo rerandd) rerand-e2e-writer \
		$([ "$mode" = vm ] || echo rerand-e2e-agent); do
		systemctl --root="$d" enable "$u.service" >/dev/null 2>&1 ||
			{ echo "e2e: systemctl --root enable $u failed" >&2; return 1; }
	done
	# the textfile directory of Debian's prometheus-node-exporter, as its
	# package makes it (root:root 0755), so that rerandd writes its metrics
	# to MetricsFile='s default through the unit's ReadWritePaths= (a
	# STAND-IN for the package itself, where the guest does not install it:
	# the package guest with RRS_EXPORTER_DEB does, at boot 0)
	[ -n "${RRS_EXPORTER_DEB:-}" ] || install -d -m 0755 "$d/var/lib/prometheus/node-exporter" || return 1
	install -d "$d/etc/rerand/rerand.conf.d" || return 1
	rrs_conf "$mode" >"$d/etc/rerand/rerand.conf.d/50-e2e.conf"
	if [ "${RRS_FLEET:-0}" = 1 ]; then
		# Debian's etcd.service (etcd-server) on https://127.0.0.1:2379 with
		# client-certificate authentication; rerand-fleetd's CA, certificate
		# and key in /etc/rerand/fleet-tls/ as docs/fleet.md tells an admin.
		# LockTTL covers a kexec reboot and a boot under TCG on a loaded host.
		systemctl --root="$d" enable etcd.service >/dev/null 2>&1 ||
			{ echo "e2e: systemctl --root enable etcd failed (etcd-server in the root?)" >&2; return 1; }
		rrs_fleet_tls "$d" || return 1
		rrs_fleet_k8s "$d" || return 1
		printf '# tests/e2e/lib-systemd.sh: fleet mode against the guest'"'"'s own etcd
[Fleet]
Backend=etcd
Endpoints=https://127.0.0.1:2379
CACert=/etc/rerand/fleet-tls/ca.pem
Cert=/etc/rerand/fleet-tls/client.pem
Key=/etc/rerand/fleet-tls/client.key
Group=e2e
MaxConcurrent=1
LockTTL=30min
Timeout=5
RetryBase=2000ms
RetryMax=10000ms
' \
			>"$d/etc/rerand/rerand.conf.d/45-e2e-fleet.conf"
		echo etcd >"$d/var/lib/rerand-e2e/fleet"
		# The fleet client's own unit, as make install ships it.
		systemctl --root="$d" enable rerand-fleetd.socket >/dev/null 2>&1 ||
			{ echo "e2e: systemctl --root enable rerand-fleetd.socket failed" >&2; return 1; }
	fi
	echo "$target" >"$d/var/lib/rerand-e2e/target"
	# check-systemd-load.sh: the agent waits for each rerandomized boot's
	# confirmation and reports when rerandd started and boot-complete came.
	[ "${RRS_CONFIRM_DEFAULT:-0}" = 1 ] && : >"$d/var/lib/rerand-e2e/confirm-wait"
	# check-systemd.sh reboots: the administrator's reboot commands after
	# rerandd's reboots (debian/reboots.sh).
	[ -z "${RRS_XSTEPS:-}" ] || echo "$RRS_XSTEPS" >"$d/var/lib/rerand-e2e/xsteps"
	echo "$mode" >"$d/var/lib/rerand-e2e/mode"
	# 2.1 since rerandd.service's bounding set holds CAP_LINUX_IMMUTABLE
	# (permitted only, for the ioctl that lets rerandd delete systemd-boot's
	# LoaderEntryOneShot: docs/design.md, "Privileges of rerandd"): the
	# bookworm UKI guest scored 2.0 before, 2.1 with it.
	echo "${RRS_SECURITY_MAX:-2.1}" >"$d/var/lib/rerand-e2e/security-max"
	if [ -n "${RRS_SB_IMAGE:-}" ]; then
		# Shipped from the build host: the image only, never the key.
		install -D -m 0644 "$RRS_SB_IMAGE" "$d$RRS_SB_DIR/$v.img" || return 1
		printf '# tests/e2e/lib-systemd.sh: pre-signed images (Secure Boot guest)\n[Stage]\nSignedImageDirectory=%s\n' \
			"$RRS_SB_DIR" >"$d/etc/rerand/rerand.conf.d/40-e2e-signed.conf"
		printf '%s\n%s\n' "$RRS_SB_DIR/$v.img" "${RRS_SB_SIGNER:-}" >"$d/var/lib/rerand-e2e/secureboot"
	fi
	cp "$kernel" "$d/boot/vmlinuz-$v" || return 1
	echo "/dev/nvme0n1 / ext4 defaults 0 1" >"$d/etc/fstab"
	if [ "${RRS_BOOT:-}" = uki ]; then
		rrs_fill_uki "$d" || return 1
	fi
	echo rerand-e2e >"$d/etc/hostname"
	printf '127.0.0.1 localhost\n127.0.1.1 rerand-e2e\n' >"$d/etc/hosts"
	rm -f "$d/etc/machine-id"
	systemd-machine-id-setup --root="$d" >/dev/null 2>&1 || return 1
	# A root shell on the serial console for `make vm` (no network, no
	# password: a throwaway machine).
	install -d "$d/etc/systemd/system/serial-getty@ttyS0.service.d"
	printf '[Service]\nExecStart=\nExecStart=-/sbin/agetty -o "-p -f -- \\\\u" --keep-baud --autologin root 115200,57600,38400,9600 - $TERM\n' \
		>"$d/etc/systemd/system/serial-getty@ttyS0.service.d/autologin.conf"
}

# rrs_fill_deb ROOT: the packages the agent installs (tests/e2e/debian/
# agent.sh): rerand's, built on this host (RRS_DEB, else rrs_deb), and the
# second kernel's (RRS_KERNEL2_DEB, optional) with its version.  rerandd is
# not enabled here: the package's postinst does that in the guest.
# RRS_UPGRADE_DEB (check-systemd.sh upgrade): the package RRS_DEB is
# upgraded to, as rerand-new.deb.
rrs_fill_deb() {
	local d=$1 deb=${RRS_DEB:-} v2
	[ -n "$deb" ] || deb=$(rrs_deb) || return 1
	install -m 0644 "$deb" "$d/var/lib/rerand-e2e/rerand.deb" || return 1
	if [ -n "${RRS_EXPORTER_DEB:-}" ]; then
		install -m 0644 "$RRS_EXPORTER_DEB" "$d/var/lib/rerand-e2e/node-exporter.deb" || return 1
	fi
	if [ -n "${RRS_UPGRADE_DEB:-}" ]; then
		install -m 0644 "$RRS_UPGRADE_DEB" "$d/var/lib/rerand-e2e/rerand-new.deb" || return 1
	fi
	[ -n "${RRS_KERNEL2_DEB:-}" ] || return 0
	v2=$(dpkg-deb -f "$RRS_KERNEL2_DEB" Package | sed -n 's/^linux-image-//p')
	[ -n "$v2" ] || { echo "e2e: $RRS_KERNEL2_DEB: not a linux-image-VERSION package" >&2; return 1; }
	install -m 0644 "$RRS_KERNEL2_DEB" "$d/var/lib/rerand-e2e/kernel2.deb" || return 1
	# The kernel package's initramfs under TCG: only the modules
	# /etc/initramfs-tools/modules lists (none; the cloud kernel has NVMe
	# and ext4 built in), not "most" of them (minutes on a loaded host).
	install -d "$d/etc/initramfs-tools/conf.d" &&
		printf '# tests/e2e/lib-systemd.sh: a small initramfs under TCG\nMODULES=list\n' \
			>"$d/etc/initramfs-tools/conf.d/rerand-e2e.conf" || return 1
	echo "$v2" >"$d/var/lib/rerand-e2e/kernel2.version"
}

# rrs_fill_uki ROOT: the systemd-boot guest's parts.  The kernel package
# RRS_UKI_DEB is unpacked aside: its vmlinuz goes into a UKI (with a small
# initrd, so that the kexec'd boots show whether rerandd passed the UKI's
# on, and the root's os-release, which systemd-boot needs to list it), its
# modules into ROOT; the ESP (GPT, one FAT partition, written with mtools
# without mounting) goes to $RRS_ESP and is mounted at /boot/efi.
# $D/uki tells the agent the entry id and the UKI's path in the guest.
rrs_fill_uki() {
	local d=$1 x v id stub=/usr/lib/systemd/boot/efi/systemd-bootx64.efi img=$RRS_ESP
	x=$(mktemp -d "$img.x.XXXXXX") || return 1
	dpkg-deb -x "$RRS_UKI_DEB" "$x/pkg" || { rm -rf "$x"; return 1; }
	v=$(basename "$(ls "$x/pkg/boot"/vmlinuz-* | head -n 1)" | sed 's/^vmlinuz-//')
	[ -n "$v" ] && [ -d "$x/pkg/lib/modules/$v" ] ||
		{ echo "e2e: $RRS_UKI_DEB: no vmlinuz and modules" >&2; rm -rf "$x"; return 1; }
	# Into /usr/lib: the root is merged-/usr (its /lib is a link).
	mkdir -p "$d/usr/lib/modules" && cp -a "$x/pkg/lib/modules/$v" "$d/usr/lib/modules/" || return 1
	# The package ships no modules.dep (its postinst runs depmod): without
	# it the guest's modprobe finds nothing, not even virtio_blk for the ESP
	# (the first uki run ended in emergency mode: /dev/vda1 never came).
	depmod -b "$d" "$v" || { echo "e2e: depmod -b $d $v failed" >&2; rm -rf "$x"; return 1; }
	mkdir -p "$x/ird" && echo "rerand e2e: the UKI's initrd" >"$x/ird/rerand-e2e-uki" &&
		(cd "$x/ird" && find . | cpio -o -H newc --quiet >"$x/initrd.cpio") || return 1
	id=debian-$v.efi
	"$E2E_TOP/tests/mkuki.sh" -o "$x/$id" -k "$x/pkg/boot/vmlinuz-$v" -i "$x/initrd.cpio" \
		-r "$d/usr/lib/os-release" \
		-c "root=/dev/nvme0n1 rw console=ttyS0,115200 panic=-1 no_timer_check nvme_core.io_timeout=600 ${RRS_APPEND:-quiet}" || { rm -rf "$x"; return 1; }
	rm -f "$img"
	truncate -s 100M "$img" &&
		printf 'label: gpt\nstart=2048, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B, name="ESP"\n' |
			sfdisk -q "$img" >/dev/null &&
		mkfs.vfat -F 32 --offset=2048 -n ESP "$img" $(( (100 * 1024 - 1024 - 64) )) >/dev/null &&
		mmd -i "$img@@1M" ::/EFI ::/EFI/BOOT ::/EFI/Linux ::/loader &&
		mcopy -i "$img@@1M" "$stub" ::/EFI/BOOT/BOOTX64.EFI &&
		mcopy -i "$img@@1M" "$x/$id" "::/EFI/Linux/$id" &&
		printf 'timeout 0\n' >"$x/loader.conf" && mcopy -i "$img@@1M" "$x/loader.conf" ::/loader/loader.conf ||
		{ echo "e2e: cannot build the ESP $img" >&2; rm -rf "$x"; return 1; }
	rm -rf "$x"
	mkdir -p "$d/boot/efi"
	# (efivarfs is a module here: the mount loads it; PID 1 may have already.)
	printf '/dev/vda1 /boot/efi vfat umask=0077 0 2\nefivarfs /sys/firmware/efi/efivars efivarfs nofail 0 0\n' \
		>>"$d/etc/fstab"
	printf '%s\n%s\n' "$id" "/boot/efi/EFI/Linux/$id" >"$d/var/lib/rerand-e2e/uki"
}

# rrs_last_journal DIR: after a failed run, the guest's own account of its
# last boot (the persistent journal read off DIR/disk.img into DIR/journal):
# the boots it recorded, rerand's, the agent's and the kernel's lines and
# every warning or worse, and how it went down.  (A guest that rebooted
# through the firmware or powered off early says why only there: its
# console is quiet.)
rrs_last_journal() {
	local dir=$1
	rm -rf "$dir/journal"; mkdir -p "$dir/journal"
	debugfs -R "rdump /var/log/journal $dir/journal" "$dir/disk.img" >/dev/null 2>&1 || {
		echo "cannot read /var/log/journal off $dir/disk.img"; return 0; }
	echo "the guest's journal, its boots:"
	journalctl -D "$dir/journal/journal" --list-boots --no-pager 2>&1 | tail -n 4
	echo "the last boot's rerand, agent and kernel lines and every warning or worse (last 40):"
	journalctl -D "$dir/journal/journal" -b -o short-monotonic --no-pager \
		SYSLOG_IDENTIFIER=rerandd SYSLOG_IDENTIFIER=rerand-fleetd SYSLOG_IDENTIFIER=agent \
		SYSLOG_IDENTIFIER=kernel + PRIORITY=0 PRIORITY=1 PRIORITY=2 PRIORITY=3 PRIORITY=4 2>&1 |
		tail -n 40 | cut -c1-220
	echo "how it ended:"
	journalctl -D "$dir/journal/journal" -b -o short-monotonic --no-pager 2>&1 |
		grep -aE 'System is |(Reached|Stopped) target (reboot|poweroff|kexec|halt|emergency|rescue|multi-user)\.target|Shutting down' |
		tail -n 6 | cut -c1-220
}

# rrs_qemu KERNEL DISK LOG AGENTLOG TIMEOUT [interactive]: boot the disk
# (SeaBIOS, or with RRS_FW=ovmf-sb OVMF under Secure Boot; q35, TCG, NVMe
# root, no network).  ttyS0 (console) time-stamped
# to LOG, ttyS1 (the agent's lines) to AGENTLOG, QEMU's pid to LOG.pid
# while it runs (bench/downtime.sh stops a QEMU that hangs on at power-off).
# Interactive: the console on this terminal instead.
rrs_qemu() {
	local kernel=$1 disk=$2 log=$3 alog=$4 tmo=$5 inter=${6:-}
	local machine=q35 noreboot=-no-reboot
	# RRS_RESET=1: a firmware reboot boots the disk again (-kernel is
	# loaded anew on reset) instead of ending QEMU.
	[ "${RRS_RESET:-0}" = 1 ] && noreboot=""
	[ "${RRS_FW:-seabios}" = ovmf-sb ] && machine+=",smm=on"
	local args=(-accel "$E2E_ACCEL" -machine "$machine" -m "${RRS_MEM:-1}G" -smp "${RRS_SMP:-1}" -cpu max $noreboot
		-nographic -nic none
		-drive "file=$disk,if=none,id=root,format=raw,cache=writeback"
		-device "nvme,drive=root,serial=rrroot0")
	if [ "${RRS_FW:-seabios}" = ovmf-uki ]; then
		# OVMF boots systemd-boot from the ESP disk, which boots the UKI.
		cp /usr/share/OVMF/OVMF_VARS_4M.fd "$log.vars.fd" || return 1
		args+=(-drive "if=pflash,format=raw,unit=0,readonly=on,file=/usr/share/OVMF/OVMF_CODE_4M.fd"
			-drive "if=pflash,format=raw,unit=1,file=$log.vars.fd"
			-drive "file=$RRS_ESP,if=none,id=esp,format=raw"
			-device "virtio-blk-pci,drive=esp,bootindex=0")
	else
		# nvme_core.io_timeout: a TCG guest starved by a busy host (two
		# lanes of make check) timed its disk I/O out at the default 30 s,
		# aborted ext4's journal and froze systemd (SIGBUS)
		args+=(-kernel "$kernel"
			-append "root=/dev/nvme0n1 rw console=ttyS0,115200 panic=-1 no_timer_check nvme_core.io_timeout=600 ${RRS_APPEND:-quiet}")
	fi
	# RRS_QEMU_EXTRA: more devices, split on blanks (check-systemd-comeback.sh:
	# "-device i6300esb -action watchdog=reset").
	[ -z "${RRS_QEMU_EXTRA:-}" ] || args+=($RRS_QEMU_EXTRA)
	if [ "${RRS_FW:-seabios}" = ovmf-sb ]; then
		sb_fw_args "$log.vars.fd" || return 1
		args+=("${SB_FW_ARGS[@]}")
	fi
	if [ -n "$inter" ]; then
		exec qemu-system-x86_64 "${args[@]}" -serial mon:stdio -serial "file:$alog"
	fi
	echo "qemu-system-x86_64 ${args[*]}" >"$log.cmd"
	rm -f "$log.pid"
	timeout -k 5 "$tmo" qemu-system-x86_64 "${args[@]}" -monitor none -serial stdio -serial "file:$alog" \
		-pidfile "$log.pid" \
		</dev/null 2>"$log.stderr" | e2e_stamp >"$log"
	return "${PIPESTATUS[0]}"
}

# Helpers of the one-guest-per-case suites (check-systemd-comeback.sh,
# check-systemd-kdump.sh).
# rrs_enable_units ROOT UNIT...: the test's own units enabled in ROOT, the
# writer (check-systemd.sh's) disabled.
rrs_enable_units() {
	local d=$1 m
	shift
	systemctl --root="$d" disable rerand-e2e-writer.service >/dev/null 2>&1
	for m in "$@"; do
		systemctl --root="$d" enable "$m.service" >/dev/null 2>&1 ||
			{ echo "e2e: systemctl --root enable $m failed" >&2; return 1; }
	done
}
# rrs_t LINE: the host's time stamp of a serial line (e2e_stamp)
rrs_t() { cut -d' ' -f1 <<<"$1"; }
# rrs_secs T0 T1: whole seconds from T0 to T1
rrs_secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", b - a }'; }
# rrs_parallel JOBS FUNC KIND...: FUNC KIND for each KIND, JOBS at a time,
# then each one's output in the order given
rrs_parallel() {
	local jobs=$1 fn=$2 k out i=0 pids=() outs=()
	shift 2
	for k in "$@"; do
		out=$(mktemp)
		"$fn" "$k" >"$out" 2>&1 &
		pids+=($!) outs+=("$out")
		i=$((i + 1))
		if [ $((i % jobs)) -eq 0 ]; then wait "${pids[@]}"; pids=(); fi
	done
	wait
	for out in "${outs[@]}"; do cat "$out"; rm -f "$out"; done
}
