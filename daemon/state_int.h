/* SPDX-License-Identifier: GPL-2.0-only */
/* Inside rerandd's state file, shared by state.c (loading, saving, what a
 * damaged file loses) and state_keys.c (the keys); the rest of rerandd uses
 * rerandd.h. */
#ifndef RERAND_DAEMON_STATE_INT_H
#define RERAND_DAEMON_STATE_INT_H

#include "rerandd.h"

#define RR_STR2(x) #x
#define RR_STR(x) RR_STR2(x)

/* The file's format.  Version 2 ends with end=SHA256, the SHA-256 of every
 * byte before that line (state_format, state_parse_damage): a file cut
 * anywhere, or with any line changed, deleted or repeated, no longer
 * matches.  Version 1 (rerand 0.1 before issue 39) had no end line. */
#define STATE_VERSION 2
#define STATE_END "end"       /* the last line: end=SHA256 */

/* One line KEY=VALUE into *s: 0 (an unknown key, from a newer rerandd,
 * included), -EINVAL for a value the key does not take.  version= sets
 * *version. */
int state_set_key(struct rr_state *s, const char *k, const char *v, int *version);

#endif
