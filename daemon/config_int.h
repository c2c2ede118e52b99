/* SPDX-License-Identifier: GPL-2.0-only */
/* Inside rerandd's configuration, between config.c (one file's text) and
 * config_load.c (the defaults and the files in order); the rest of rerandd
 * uses rerandd_config.h. */
#ifndef RERAND_DAEMON_CONFIG_INT_H
#define RERAND_DAEMON_CONFIG_INT_H

#include "rerandd.h"

/* config_apply_text() that also records where each key was set (origins)
 * and keeps warnings apart (warns); either may be NULL. */
void config_apply_text_at(struct rr_config *c, const char *text, size_t len, const char *name,
			  struct rr_cfg_errs *errs, struct rr_cfg_origins *origins,
			  struct rr_cfg_errs *warns);

#endif
