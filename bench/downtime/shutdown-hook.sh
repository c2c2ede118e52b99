#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# systemd-shutdown runs this (from /usr/lib/systemd/system-shutdown/, with
# "kexec", "reboot" or "poweroff") right before its final system call: the
# downtime bench's last stamp in the old system.
exec /usr/local/libexec/rerand-bench/stamp final
