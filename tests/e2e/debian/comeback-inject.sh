#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# The fault of the Debian comeback guest (tests/e2e/check-systemd-comeback.sh),
# run by rerand-e2e-inject.service before boot-complete.target, at every boot;
# it acts once: on the rerandomized boot after the agent armed it at boot 0.
#   check: a post-boot check that fails (stays installed: the host is sick)
#   block: never finishes, so boot-complete.target (RequiredBy=) never comes
#   hang:  the same, and it ignores its stop too (KillSignal=SIGCONT,
#          SendSIGKILL=no): even the reboot through the firmware hangs
#   good:  a post-boot check that passes
D=/var/lib/rerand-e2e
[ -e "$D/inject-armed" ] || exit 0
rerand verify >/dev/null 2>&1 || exit 0          # not the rerandomized boot
rm -f "$D/inject-armed" && sync
kind=$(cat "$D/kind")
echo "RRC-INJECT n=1 kind=$kind uptime=$(cut -d' ' -f1 /proc/uptime)" >/dev/ttyS0
mkdir -p /etc/rerand/post-boot.d
case "$kind" in
check)
	printf '#!/bin/sh\necho "rerand-e2e: 50-e2e-fail fails on purpose"\nexit 3\n' \
		>/etc/rerand/post-boot.d/50-e2e-fail
	chmod 0755 /etc/rerand/post-boot.d/50-e2e-fail
	;;
good)
	printf '#!/bin/sh\necho "rerand-e2e: 50-e2e-pass passes"\nexit 0\n' \
		>/etc/rerand/post-boot.d/50-e2e-pass
	chmod 0755 /etc/rerand/post-boot.d/50-e2e-pass
	;;
block | hang)
	exec sleep infinity
	;;
esac
sync
exit 0
