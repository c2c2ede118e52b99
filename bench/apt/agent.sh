#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# `apt install` of a kernel package with rerand's kernel hook and without it,
# the guest's side (bench/apt-install.sh): run once by rerand-apt.service
# after multi-user.target.  PAIRS pairs, the order flipped every pair:
#   hook: /etc/kernel/postinst.d/rerand in place (as the package puts it), so
#         the kernel package's postinst builds the rerand image;
#   bare: that file moved aside, everything else the same.
# Each run is `apt-get install ./linux-image-VERSION_...deb` from the local
# file, stamped with rrb-tsc right before and right after; then a check that
# the hook did (hook) or did not (bare) build the image, then `apt-get purge`
# so that every install starts from the same state.  Markers go to the
# console ("RRA ..."), the host parses them; at the end the guest powers off.
# Bench only: nothing here is product.
set -u
D=/var/lib/rerand-apt
X=/usr/local/libexec/rerand-apt
# As bench/downtime/agent.sh: through the kernel log at level 3 (printed
# under "quiet") and straight to the console, opened afresh each time
# (a getty may vhangup() the tty).
say() {
	echo "<3>$*" >/dev/kmsg 2>/dev/null
	echo "$*" >/dev/ttyS0 2>/dev/null || { sleep 0.2; echo "$*" >/dev/ttyS0 2>/dev/null; }
}
fail() {
	say "RRA fail $*"
	sync
	systemctl poweroff
	exit 1
}
# A log's last lines on the console, one marker each.
show() {
	local l
	tail -n "${2:-15}" "$1" 2>/dev/null | while IFS= read -r l; do say "RRA log $l"; done
}

v=$(cat "$D/version")
pkg=linux-image-$v
deb=$D/$(cat "$D/deb")
pairs=$(cat "$D/pairs")
hook=/etc/kernel/postinst.d/rerand
off=$D/hook-off
images=/var/lib/rerand/images
index=/var/lib/rerand/kernels
export DEBIAN_FRONTEND=noninteractive
mkdir -p "$off"

say "RRA up $(uname -r) pairs=$pairs package=$pkg nproc=$(nproc) mem_kib=$(awk '/^MemTotal/ { print $2 }' /proc/meminfo)"
say "RRA clock $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
# What the package's postinst does first: the user the hook builds images as.
systemd-sysusers >/dev/null 2>&1 || say "RRA note systemd-sysusers failed"
id rerand >/dev/null 2>&1 || fail 0 "no user rerand: the hook would build nothing"
[ -x /usr/bin/rerand ] || fail 0 "/usr/bin/rerand missing: the hook would build nothing"
[ -x "$hook" ] || fail 0 "$hook missing"

nimg() { find "$images" -maxdepth 1 -name '*.img' 2>/dev/null | wc -l; }
hook_set() { # on|off
	if [ "$1" = on ]; then
		[ -e "$off/rerand" ] && mv "$off/rerand" "$hook"
		[ -x "$hook" ] || fail "$n" "cannot put the hook back"
	else
		[ -e "$hook" ] && mv "$hook" "$off/rerand"
		[ ! -e "$hook" ] || fail "$n" "cannot move the hook aside"
	fi
}
# The same starting point for every install: the package absent, no image.
clean() {
	local st
	st=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null)
	[ -z "$st" ] || [ "$st" = not-installed ] || [ "$st" = config-files ] ||
		fail "$n" "$pkg is $st before the install"
	[ ! -e "/boot/vmlinuz-$v" ] && [ ! -e "/boot/initrd.img-$v" ] && [ ! -d "/lib/modules/$v" ] ||
		fail "$n" "files of $v left before the install"
	[ "$(nimg)" = 0 ] && [ ! -e "$index/$v" ] || fail "$n" "a rerand image or index entry left before the install"
}

n=0
for ((p = 1; p <= pairs; p++)); do
	if ((p % 2)); then order="hook bare"; else order="bare hook"; fi
	for m in $order; do
		n=$((n + 1))
		clean
		if [ "$m" = hook ]; then hook_set on; else hook_set off; fi
		say "RRA go $n $m"
		sync
		t0=$("$X/rrb-tsc")
		# (No --no-download: bookworm's apt 2.6 then fails on the local file,
		# "Internal Error, Pathname to install is not absolute".  The guest
		# has no network and no package lists: nothing can be downloaded.)
		apt-get install -y -q --no-install-recommends "$deb" >"$D/install.$n.log" 2>&1
		rc=$?
		t1=$("$X/rrb-tsc")
		say "RRA t $n $p $m $rc $t0 $t1"
		[ "$rc" = 0 ] || { show "$D/install.$n.log"; fail "$n" "apt-get install exited $rc"; }
		# Did the hook do what the measurement says it did?
		if [ "$m" = hook ]; then
			key=$(rerand cache-key "/boot/vmlinuz-$v") || fail "$n" "rerand cache-key failed"
			img=$images/$key.img
			[ -s "$img" ] || { show "$D/install.$n.log"; fail "$n" "hooked install: no image $img"; }
			(cd "$images" && sha256sum --status -c "$key.img.sha256") ||
				fail "$n" "hooked install: the image does not match its .sha256"
			[ "$(cat "$index/$v" 2>/dev/null)" = "${key%%.*}" ] || fail "$n" "hooked install: no index entry for $v"
			[ "$(nimg)" = 1 ] || fail "$n" "hooked install: $(nimg) images"
			detail="image_bytes=$(stat -c %s "$img")"
		else
			[ "$(nimg)" = 0 ] && [ ! -e "$index/$v" ] || fail "$n" "unhooked install: an image was built"
			detail="image_bytes=0"
		fi
		grep -q 'rerand:' "$D/install.$n.log" && { show "$D/install.$n.log"; fail "$n" "the hook warned"; }
		say "RRA check $n $m ok $detail initrd_bytes=$(stat -c %s "/boot/initrd.img-$v" 2>/dev/null || echo 0) modules_kib=$(du -sk "/lib/modules/$v" | cut -f1)"
		# The next install starts from scratch; the package's postrm hooks
		# (initramfs-tools', rerand's) remove the initrd and the image.
		hook_set on
		apt-get purge -y -q "$pkg" >"$D/purge.$n.log" 2>&1 || { show "$D/purge.$n.log"; fail "$n" "apt-get purge failed"; }
		[ "$(nimg)" = 0 ] || fail "$n" "the purge left a rerand image"
	done
done
say "RRA done $n"
sync
systemctl poweroff
