/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef RERAND_TESTS_FLEET_CONF_H
#define RERAND_TESTS_FLEET_CONF_H

#include "fleet.h"

/* The [Fleet] keys of path into c (after fleet_config_defaults): 0, or -1
 * with every bad line reported on stderr as PATH:LINE: why. */
int fleet_conf_load(const char *prog, const char *path, struct fleet_config *c);

#endif
