#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# rerandd's BlockerCommand in the downtime guest: a reboot goes ahead only
# when the bench agent asked for one (so that a stock boot, which rerandd
# sees as not randomized, does not make it reboot on its own).
[ -e /run/rerand-bench/go ]
