/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The image builder's reaper (reaper.c): the process rerandd forks for the
 * builder becomes a child subreaper, forks the real builder, and exits only
 * once it and everything it started are gone, so that nothing the builder
 * left behind (with setsid, a double fork) still holds its output when
 * rerandd copies it.  For use in a forked child, between fork and exit:
 * no malloc, no stdio.
 */
#ifndef RERAND_REAPER_H
#define RERAND_REAPER_H

#include <stdbool.h>
#include <sys/types.h>

/* Become a child subreaper, with SIGTERM and SIGCHLD blocked (reaper_wait
 * takes them with sigwaitinfo), before the fork of the builder: 0, or a
 * negative errno. */
int reaper_prepare(void);

/* In the forked builder, before exec: the signal mask reaper_prepare set
 * undone. */
void reaper_child_reset(void);

/* Wait for BUILDER (a child) to exit, or for a SIGTERM, which stops it;
 * then SIGKILL and reap every remaining descendant.  The status to _exit
 * with: the builder's exit status, or 128 + the signal that killed it, as
 * a shell reports it; 126 with a message on stderr if the descendants
 * could not be listed. */
int reaper_wait(pid_t builder);

/* SIGKILL and reap every child of the calling process, and each process
 * that reparents to it meanwhile, until it has none.  When BUILDER is among
 * them, its wait status goes to *status and *got is set.  0, or a negative
 * errno (the children cannot be listed, or they outlasted the round
 * bound). */
int reaper_sweep(pid_t builder, int *status, bool *got);

#endif
