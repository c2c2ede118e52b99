/* SPDX-License-Identifier: GPL-2.0-only */
/* Inside rerandd's children: spawn.c starts one, run.c runs it as a job. */
#ifndef RERAND_DAEMON_SPAWN_H
#define RERAND_DAEMON_SPAWN_H

#include <sys/types.h>

#include "rerandd.h"

/* Fork argv[0] in its own process group with a clean signal mask and the
 * given capabilities (or as the builder, the signer, or a checked hook),
 * its stdout and stderr on a pipe whose non-blocking read end is *ret_rd. */
int run_spawn(char *const argv[], enum rr_child_caps caps, const struct rr_builder *builder,
	      const struct rr_signer *signer, const struct rr_hook_exec *hook, pid_t *ret_pid,
	      int *ret_rd);

#endif
