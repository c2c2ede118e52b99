#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The package's watchdog set-up (issue 38, point 5): libexec/watchdog-setup
# (/usr/lib/rerand/watchdog-setup), the postinst that runs it, the postrm
# that removes its file on purge, and the option file the package ships
# (etc/modprobe.d/rerand.conf).  Nothing here touches this machine's
# watchdog, modules or /etc: the machine is a FIXTURE sysfs
# (RERAND_WDOG_SYS), /etc is a scratch root (DPKG_ROOT, as dpkg --root sets
# it), and modprobe is the real kmod in dry-run mode (-n) over a fixture
# module tree: Debian's own watchdog.ko and i6300esb.ko (the 6.12 cloud
# kernel's, fetched for the comeback guests into ~/.cache/rerand-e2e) with a
# real depmod index, so the alias lookup, the blacklist and the options kmod
# would pass are kmod's.  Without those two modules the cases that need
# them are skipped.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/tap.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ws=$top/libexec/watchdog-setup
marker="# Written by rerand's /usr/lib/rerand/watchdog-setup"

rel=6.12.118+deb12-cloud-amd64
mods=${RERAND_E2E_CACHE:-$HOME/.cache/rerand-e2e}/kernels/modules-$rel
fx=$tmp/modtree
mkdir -p "$fx/lib/modules/$rel/kernel/drivers/watchdog"
have_mods=0
if [ -f "$mods/i6300esb.ko" ] && [ -f "$mods/watchdog.ko" ] && command -v depmod >/dev/null; then
	cp "$mods/i6300esb.ko" "$mods/watchdog.ko" "$fx/lib/modules/$rel/kernel/drivers/watchdog/"
	depmod -b "$fx" "$rel" 2>/dev/null && have_mods=1
fi

# run CASE [ENV=VALUE...]: watchdog-setup against $tmp/CASE/{sys,root};
# the real modprobe in dry-run over the fixture tree, each call logged
run() {
	local c=$tmp/$1
	shift
	cat >"$c/modprobe" <<EOF
#!/bin/sh
echo "\$*" >>"$c/modprobe.log"
exec modprobe -n -d "$fx" -S "$rel" -C "$c/root/etc/modprobe.d" -C "$top/etc/modprobe.d" "\$@"
EOF
	chmod +x "$c/modprobe"
	env "$@" RERAND_WDOG_SYS="$c/sys" DPKG_ROOT="$c/root" RERAND_WDOG_MODPROBE="$c/modprobe" \
		sh "$ws" >"$c/out" 2>"$c/err"
	rc=$?
}
newcase() { rm -rf "${tmp:?}/$1"; mkdir -p "$tmp/$1/sys/class/watchdog" "$tmp/$1/sys/module" "$tmp/$1/root/etc/modprobe.d"; }
# the QEMU machine's i6300esb and ICH9 LPC bridge, by their modalias
pci() {
	local s=$tmp/$1/sys/bus/pci/devices
	mkdir -p "$s/0000:00:04.0" "$s/0000:00:1f.0"
	echo 'pci:v00008086d000025ABsv00001AF4sd00001100bc08sc80i00' >"$s/0000:00:04.0/modalias"
	echo 'pci:v00008086d00002918sv00001AF4sd00001100bc06sc01i00' >"$s/0000:00:1f.0/modalias"
}
conf() { echo "$tmp/$1/root/etc/modules-load.d/rerand-watchdog.conf"; }
loads() { grep -vE '^(-R|--show-depends|-c)( |$)' "$tmp/$1/modprobe.log" 2>/dev/null; }

# ---- the option file: what kmod passes to watchdog.ko ----------------------------------
if [ $have_mods = 1 ]; then
	got=$(modprobe -n -v -d "$fx" -S "$rel" -C "$top/etc/modprobe.d" i6300esb 2>&1)
	check "kmod loads watchdog.ko with stop_on_reboot=0 from etc/modprobe.d/rerand.conf ($(echo "$got" | head -1))" \
		grep -qE '^insmod .*/watchdog\.ko +stop_on_reboot=0 *$' <<<"$got"
	mkdir -p "$tmp/noopt"
	got=$(modprobe -n -v -d "$fx" -S "$rel" -C "$tmp/noopt" i6300esb 2>&1)
	check "control: without that file kmod passes watchdog.ko nothing" \
		bash -c '! grep -q stop_on_reboot <<<"$1" && grep -q "watchdog\.ko" <<<"$1"' _ "$got"
	mkdir -p "$tmp/mask"
	: >"$tmp/mask/rerand.conf"
	got=$(modprobe -n -v -d "$fx" -S "$rel" -C "$tmp/mask" -C "$top/etc/modprobe.d" i6300esb 2>&1)
	check "an empty /etc/modprobe.d/rerand.conf turns it off, as the file says" \
		bash -c '! grep -q stop_on_reboot <<<"$1"' _ "$got"
else
	skip "kmod's options for watchdog.ko: no $mods/{watchdog,i6300esb}.ko (the comeback guests fetch them)"
	skip "control without the option file: no fixture modules"
	skip "masking the option file: no fixture modules"
fi

# ---- a QEMU machine whose i6300esb is not loaded: found by its modalias ---------------------
if [ $have_mods = 1 ]; then
	newcase esb
	pci esb
	run esb
	echo "# esb: $(tr '\n' '|' <"$tmp/esb/out")"
	check "esb: exit 0 ($rc)" test "$rc" = 0
	check "esb: modules-load.d names i6300esb, under rerand's first line" \
		bash -c '[ "$(head -1 "$1")" = "$2" ] && [ "$(grep -v "^#" "$1")" = i6300esb ]' _ "$(conf esb)" "$marker"
	check "esb: it is loaded now (modprobe i6300esb)" test "$(loads esb)" = i6300esb
	check "esb: says so" grep -q "names i6300esb: loaded at every boot before rerandd starts" "$tmp/esb/out"
	cp "$(conf esb)" "$tmp/esb.before"
	touch -d '2001-01-01' "$(conf esb)"
	run esb
	check "esb: a second run leaves the file alone and says nothing about it" \
		bash -c 'cmp -s "$1" "$2" && [ "$(stat -c %Y "$1")" = "$(date -d 2001-01-01 +%s)" ] && ! grep -q names "$3"' \
		_ "$(conf esb)" "$tmp/esb.before" "$tmp/esb/out"

	newcase black
	pci black
	echo 'blacklist i6300esb' >"$tmp/black/root/etc/modprobe.d/no-wdt.conf"
	run black
	check "blacklisted: no file, nothing loaded, and it says why" \
		bash -c '[ ! -e "$1" ] && [ -z "$2" ] && grep -q "i6300esb (for 0000:00:04.0) is blacklisted" "$3"' \
		_ "$(conf black)" "$(loads black)" "$tmp/black/out"
else
	for w in "esb: found by modalias" "esb: loaded" "esb: said" "esb: exit" "esb: idempotent" "blacklisted"; do
		skip "$w: no fixture modules"
	done
fi

# ---- a machine whose iTCO_wdt is loaded, watchdog.ko loaded before the option ----------------
newcase itco
d=$tmp/itco/sys
mkdir -p "$d/devices/platform/iTCO_wdt/watchdog/watchdog0" "$d/bus/platform/drivers/iTCO_wdt" \
	"$d/module/iTCO_wdt" "$d/module/watchdog/parameters"
ln -s ../../module/iTCO_wdt "$d/bus/platform/drivers/iTCO_wdt/module"
ln -s ../../../bus/platform/drivers/iTCO_wdt "$d/devices/platform/iTCO_wdt/driver"
ln -s ../../devices/platform/iTCO_wdt/watchdog/watchdog0 "$d/class/watchdog/watchdog0"
ln -s ../../../iTCO_wdt "$d/devices/platform/iTCO_wdt/watchdog/watchdog0/device"
echo iTCO_wdt >"$d/devices/platform/iTCO_wdt/watchdog/watchdog0/identity"
echo -1 >"$d/module/watchdog/parameters/stop_on_reboot"
run itco
echo "# itco: $(tr '\n' '|' <"$tmp/itco/out")"
check "itco: the bound driver is named ($(grep -v '^#' "$(conf itco)" 2>/dev/null))" \
	test "$(grep -v '^#' "$(conf itco)" 2>/dev/null)" = iTCO_wdt
check "itco: already loaded: no modprobe" test -z "$(loads itco)"
check "itco: watchdog.ko loaded with -1: says the option applies from the next firmware boot" \
	grep -q "loaded with stop_on_reboot=-1, before rerand's option: until the next boot through the firmware" "$tmp/itco/out"

# an admin's own version stays
sed -i 1d "$(conf itco)"
cp "$(conf itco)" "$tmp/itco.admin"
run itco
check "itco: a file whose first line was changed is left as it is, and said" \
	bash -c 'cmp -s "$1" "$2" && grep -q "is not rerand.s" "$3"' _ "$(conf itco)" "$tmp/itco.admin" "$tmp/itco/out"

# ---- softdog only, then the hardware gone ------------------------------------------------------
newcase soft
mkdir -p "$tmp/soft/sys/devices/virtual/watchdog/watchdog0" "$tmp/soft/sys/module/softdog"
echo 'Software Watchdog' >"$tmp/soft/sys/devices/virtual/watchdog/watchdog0/identity"
ln -s ../../devices/virtual/watchdog/watchdog0 "$tmp/soft/sys/class/watchdog/watchdog0"
mkdir -p "$tmp/soft/root/etc/modules-load.d"
printf '%s\ni6300esb\n' "$marker" >"$(conf soft)"
run soft
check "softdog only: not a hardware watchdog; said" grep -q "no hardware watchdog found" "$tmp/soft/out"
check "softdog only: rerand's old file (a driver no longer there) is removed" \
	bash -c '[ ! -e "$1" ] && grep -q "no longer has" "$2"' _ "$(conf soft)" "$tmp/soft/out"

# ---- usage ---------------------------------------------------------------------------------------
sh "$ws" --help >"$tmp/help" 2>&1
check "--help: exit 0, the text" bash -c '[ $1 = 0 ] && grep -q "Usage: watchdog-setup" "$2"' _ $? "$tmp/help"
sh "$ws" bogus >/dev/null 2>&1
check "an operand: exit 64" test $? = 64

# ---- the maintainer scripts, in a scratch root ------------------------------------------------
# The postrm runs as it is: every path it removes must be under DPKG_ROOT,
# checked first so that a slip cannot reach this machine's /var or /etc.
check "postrm: every rm/rmdir is under \$root (DPKG_ROOT)" \
	bash -c '! grep -nE "^[^#]*\\<(rm|rmdir)\\>[^#]*[[:space:]]\"?/" "$1"' _ "$top/debian/rerand.postrm"
check "postinst: watchdog-setup is called under DPKG_ROOT" \
	grep -q '"${DPKG_ROOT:-}/usr/lib/rerand/watchdog-setup"' "$top/debian/rerand.postinst"

newcase pkg
r=$tmp/pkg/root
mkdir -p "$r/usr/lib/rerand" "$r/var/lib/rerand/images" "$r/etc/rerand/rerand.conf.d"
cp "$ws" "$r/usr/lib/rerand/watchdog-setup"
cp -a "$tmp/itco/sys/." "$tmp/pkg/sys/"
cat >"$tmp/pkg/modprobe" <<EOF
#!/bin/sh
exec modprobe -n -d "$fx" -S "$rel" -C "$r/etc/modprobe.d" "\$@"
EOF
chmod +x "$tmp/pkg/modprobe"
DPKG_ROOT=$r sh "$top/debian/rerand.postinst" configure >"$tmp/pkg/out" 2>&1
check "postinst configure, without a machine to look at (DPKG_ROOT only): nothing set up, said" \
	bash -c '[ ! -e "$1" ] && grep -q "installing into $2, not this machine: nothing set up" "$3"' \
	_ "$(conf pkg)" "$r" "$tmp/pkg/out"
DPKG_ROOT=$r RERAND_WDOG_SYS=$tmp/pkg/sys RERAND_WDOG_MODPROBE=$tmp/pkg/modprobe \
	sh "$top/debian/rerand.postinst" configure >"$tmp/pkg/out" 2>&1
check "postinst configure: exit 0, the file names iTCO_wdt" \
	bash -c '[ $1 = 0 ] && [ "$(head -1 "$2")" = "$3" ] && grep -qx iTCO_wdt "$2"' _ $? "$(conf pkg)" "$marker"
DPKG_ROOT=$r sh "$top/debian/rerand.postrm" remove
check "postrm remove: the file stays (configuration until purge)" test -f "$(conf pkg)"
echo keep >"$r/etc/modules-load.d/admin.conf"
DPKG_ROOT=$r sh "$top/debian/rerand.postrm" purge
check "postrm purge: exit 0, rerand's file and /var/lib/rerand gone, the admin's file kept" \
	bash -c '[ $1 = 0 ] && [ ! -e "$2" ] && [ ! -e "$3/var/lib/rerand" ] && [ -f "$3/etc/modules-load.d/admin.conf" ]' \
	_ $? "$(conf pkg)" "$r"
printf 'iTCO_wdt\n' >"$(conf pkg)"
DPKG_ROOT=$r sh "$top/debian/rerand.postrm" purge
check "postrm purge: a file the admin made their own (no first line of ours) stays" test -f "$(conf pkg)"

done_
