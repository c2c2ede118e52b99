/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * LZ4 block format decoder (lz4 Block_format.md), bounds-checked on every
 * read and write.  It runs over ~60 MiB at every rerandomizing kexec, so
 * copies go 8 bytes at a time ("wild" copies that may run up to 15 bytes
 * past a run, only where both buffers have that much room left; later
 * writes overwrite the excess).  No SSE: the stage is built without it.
 */
#include "lz4dec.h"

#define MIN_MATCH 4
#define WILD      16
#define MFLIMIT   12
#define LAST_LITERALS 5

static inline void copy8(uint8_t *d, const uint8_t *s)
{
	uint64_t v;
	__builtin_memcpy(&v, s, 8);
	__builtin_memcpy(d, &v, 8);
}

/* Copy n bytes 16 at a time; may write up to 15 bytes past d + n.  Each
 * 8-byte move reads only bytes written before it when s < d (s <= d - 8). */
static inline void wild_copy(uint8_t *d, const uint8_t *s, uint64_t n)
{
	uint8_t *e = d + n;
	do {
		copy8(d, s);
		copy8(d + 8, s + 8);
		d += 16;
		s += 16;
	} while (d < e);
}

/* Read a length continued by 255-valued bytes; no byte may be read at or
 * past limit.  The limits leave room for what must follow (see callers). */
static inline int read_len(const uint8_t **ip, const uint8_t *limit, uint64_t *len)
{
	uint8_t b;
	do {
		if (*ip >= limit)
			return -1;
		b = *(*ip)++;
		*len += b;
		if (*len > (1ULL << 40))
			return -1;
	} while (b == 255);
	return 0;
}

int64_t rr_lz4_decode_block(const uint8_t *src, uint64_t src_len, uint8_t *dst, uint64_t dst_cap)
{
	const uint8_t *ip = src, *iend = src + src_len;
	uint8_t *op = dst, *oend = dst + dst_cap;

	if (src_len == 0)
		return -1;
	for (;;) {
		/* Fast path for the common sequence, far from both ends: at most
		 * 14 literals and a match of at most 18 bytes at offset >= 8.
		 * Fixed-size moves; every check of the careful path below holds
		 * here by construction (31 input and 64 output bytes of room). */
		if (iend - ip >= 32 && oend - op >= 64 && (*ip >> 4) < 15 && (*ip & 15) < 15) {
			uint64_t lit = *ip >> 4;
			const uint8_t *p = ip + 1 + lit;
			uint8_t *o = op + lit;
			uint64_t off = (uint64_t)p[0] | (uint64_t)p[1] << 8;

			if (off >= 8 && off <= (uint64_t)(o - dst)) {
				const uint8_t *m = o - off;
				copy8(op, ip + 1);
				copy8(op + 8, ip + 9);
				copy8(o, m);
				copy8(o + 8, m + 8);
				copy8(o + 16, m + 16);
				op = o + (*ip & 15) + MIN_MATCH;
				ip = p + 2;
				continue;
			}
		}

		if (ip >= iend)
			return -1;
		uint8_t token = *ip++;
		uint64_t lit = token >> 4;

		/* A long literal run is followed by at least 15 literals. */
		if (lit == 15 && (iend - ip <= 15 || read_len(&ip, iend - 15, &lit) < 0))
			return -1;
		uint64_t in_room = (uint64_t)(iend - ip), out_room = (uint64_t)(oend - op);
		if (lit + MFLIMIT > out_room || lit + 2 + 1 + LAST_LITERALS > in_room) {
			/* Near either end: this must be the last sequence, whose
			 * literals end the block exactly (the format's end rules,
			 * enforced as liblz4 does). */
			if (lit != in_room || lit > out_room)
				return -1;
			for (uint64_t i = 0; i < lit; i++)
				op[i] = ip[i];
			op += lit;
			break;
		}
		if (lit) {
			if (in_room >= lit + WILD && out_room >= lit + WILD) {
				wild_copy(op, ip, lit);
			} else {
				for (uint64_t i = 0; i < lit; i++)
					op[i] = ip[i];
			}
		}
		op += lit;
		ip += lit;

		if (iend - ip < 2)
			return -1;
		uint64_t off = (uint64_t)ip[0] | (uint64_t)ip[1] << 8;
		ip += 2;
		if (off == 0 || off > (uint64_t)(op - dst))
			return -1;
		uint64_t mlen = token & 15;
		/* A match is followed by at least a token and 5 literals' worth
		 * of input; liblz4 reads match lengths no closer than 4 bytes to
		 * the end, and so do we, so that we never accept a block it refuses. */
		if (mlen == 15 && (iend - ip <= 4 || read_len(&ip, iend - 4, &mlen) < 0))
			return -1;
		mlen += MIN_MATCH;
		if (mlen + LAST_LITERALS > (uint64_t)(oend - op))
			return -1;              /* the last 5 bytes are always literals */

		const uint8_t *m = op - off;
		if ((uint64_t)(oend - op) < mlen + WILD) {
			for (uint64_t i = 0; i < mlen; i++)
				op[i] = m[i];
		} else if (off >= 8) {
			wild_copy(op, m, mlen);
		} else {
			/* Overlapping: the output repeats with period off, so also
			 * with any multiple of it; step is the first one >= 8. */
			uint64_t step = off * ((8 + off - 1) / off);
			uint64_t head = step < mlen ? step : mlen;
			for (uint64_t i = 0; i < head; i++)
				op[i] = m[i];
			if (mlen > head)
				wild_copy(op + head, op + head - step, mlen - head);
		}
		op += mlen;
	}
	return (int64_t)(op - dst);
}
