/* SPDX-License-Identifier: GPL-2.0-only */
/* Text from outside (a kernel, a server, a file) made safe for the journal,
 * `rerand status` and terminals: one header for rerandd and rerand-fleetd,
 * which both link src/common/escape.c (libcommon.a). */
#ifndef RERAND_ESCAPE_H
#define RERAND_ESCAPE_H

#include <stddef.h>

/* in[0..inlen) with control characters, C1 controls, bad UTF-8 and '\' as C
 * escapes (\n, \t, \r, \\, \xNN) into out, NUL-terminated, truncated
 * between characters.  Returns the length written. */
size_t rr_escape(char *out, size_t outlen, const void *in, size_t inlen);
/* The same for a string (NULL = ""); returns out. */
const char *rr_escape_str(char *out, size_t outlen, const char *in);

#endif
