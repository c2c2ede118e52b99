/* SPDX-License-Identifier: GPL-2.0-only */
/* Inside the payload decoders: the output buffer and one decoder's state,
 * shared by codec.c (every codec but one) and codec_lzo.c (lzop's format). */
#ifndef RERAND_CODEC_INT_H
#define RERAND_CODEC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel.h"

/* The output buffer.  With a known size it is allocated once, one byte
 * larger than expected so that a stream that decodes to more shows up as an
 * overflow instead of a decoder stalling for room. */
struct outbuf {
	uint8_t *p;
	size_t len, cap;
	size_t want;            /* expected size, 0 if unknown */
	const struct rr_dec_hook *hook; /* only with want != 0 */
	size_t told;            /* what the hook was last told */
};

/* What went wrong inside a decoder, turned into a message by the caller. */
enum dec_status { DEC_OK = 0, DEC_TRUNC, DEC_CORRUPT, DEC_OVER, DEC_NOMEM };

struct dec {
	const uint8_t *in;
	size_t in_len, pos;
	struct outbuf o;
	const char *why;        /* library's reason for DEC_CORRUPT */
};

/* Make at least `need` bytes free; DEC_OVER once the bound is reached. */
enum dec_status ob_reserve(struct outbuf *o, size_t need);
/* codec_lzo.c */
enum dec_status dec_lzo(struct dec *d);

#endif
