#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The crash kernel's probe of the Debian kdump guest
# (tests/e2e/check-systemd-kdump.sh): rerand-e2e-crash-probe.service,
# WantedBy= and Before= kdump-tools-dump.service, the unit kdump-tools boots
# its crash kernel into (systemd.unit=kdump-tools-dump.service).  It acts
# only where /proc/vmcore exists, and leaves kdump-tools' own unit alone.
# Records in /var/lib/rerand-e2e/crash-probe (the next boot's agent reads
# it) and on the console (RRK-CRASH, time-stamped by the host):
#   vmcore=BYTES     the size of /proc/vmcore
#   text=moved|at-link|hidden|unreadable
#                    TEST ONLY: this kernel's _text from /proc/kallsyms
#                    against its unrandomized link address (0xffffffff80000000
#                    + CONFIG_PHYSICAL_START); the address itself is never
#                    written anywhere
#   verify_rc=N randomized=true|false crash=true|false weak=true|false
#                    `rerand verify --json` in the crash kernel (0 randomized,
#                    2 absent: no rerand stage ran)
set -u
D=/var/lib/rerand-e2e
[ -e /proc/vmcore ] || exit 0
out=$D/crash-probe
phys=$(sed -n 's/^CONFIG_PHYSICAL_START=//p' "/boot/config-$(uname -r)" 2>/dev/null)
link=$(printf '%016x' $((0xffffffff80000000 + ${phys:-0x1000000})))
pos=$(awk -v link="$link" '$3 == "_text" {
	if ($1 ~ /^0+$/) print "hidden"; else if ($1 == link) print "at-link"; else print "moved"
	found = 1; exit }
	END { if (!found) print "unreadable" }' /proc/kallsyms 2>/dev/null)
vj=$(timeout 120 rerand verify --json 2>/dev/null)
vrc=$?
field() { grep -oE "\"$1\": *(true|false)" <<<"$vj" | head -n 1 | sed 's/.*: *//'; }
{
	echo "vmcore=$(stat -c %s /proc/vmcore 2>/dev/null)"
	echo "text=${pos:-unreadable}"
	echo "verify_rc=$vrc"
	echo "randomized=$(field randomized)"
	echo "crash=$(field crash)"
	echo "weak=$(field weak)"
	echo "uptime=$(cut -d' ' -f1 /proc/uptime)"
	echo "boot_id=$(cat /proc/sys/kernel/random/boot_id)"
} >"$out.tmp" && mv "$out.tmp" "$out"
sync "$out" "$D" 2>/dev/null || sync
echo "RRK-CRASH $(tr '\n' ' ' <"$out")" >/dev/ttyS0
exit 0
