#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# rerandd's BlockerCommand in the e2e guest: no reboot before the agent has
# finished this boot's checks.
test -e /run/rerand-e2e/checked || { echo "e2e agent still checking"; exit 1; }
