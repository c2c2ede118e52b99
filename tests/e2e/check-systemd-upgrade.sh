#!/bin/bash
# run-check: long only
# SPDX-License-Identifier: GPL-2.0-only
# The upgrade path in the Debian guests (issue 38, point 8): the package of
# an earlier commit (scripts/old-deb.sh; RRS_OLD_COMMIT, by default the last
# 0.1) installed, rerandd rebooting into its image, then an admin's
# conffile edit and hold, and `dpkg -i` of this tree's package over it:
# config, state and hold kept, rerandd restarted as the new binary, nothing
# loaded while held, the new rerandd's image staged on release and booted
# (check-systemd.sh upgrade, tests/e2e/debian/agent.sh).  Debian 13 then
# Debian 12; RRS_SUITES picks.  Three boots and two dpkg runs under TCG per
# release: long only.
here=$(dirname "$0")
for s in ${RRS_SUITES:-trixie bookworm}; do
	RRS_SUITE=$s "$here/check-systemd.sh" upgrade
done
exit 0
