/* SPDX-License-Identifier: GPL-2.0-only */
/* LZ4 block format decoder (lz4 Block_format.md), bounds-checked on every
 * read and write.  Copies go 8 bytes at a time where the buffers allow it,
 * because this runs over ~60 MiB at every rerandomizing kexec. */
#include "lz4dec.h"

#define MIN_MATCH 4
#define LAST_LITERALS 5

static inline void copy8(uint8_t *d, const uint8_t *s)
{
	uint64_t v;
	__builtin_memcpy(&v, s, 8);
	__builtin_memcpy(d, &v, 8);
}

/* Read a length continued by 255-valued bytes. */
static inline int read_len(const uint8_t **ip, const uint8_t *iend, uint64_t *len)
{
	uint8_t b;
	do {
		if (*ip >= iend)
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
		uint8_t token = *ip++;
		uint64_t lit = token >> 4;

		if (lit == 15 && read_len(&ip, iend, &lit) < 0)
			return -1;
		if (lit > (uint64_t)(iend - ip) || lit > (uint64_t)(oend - op))
			return -1;
		if (lit <= 16 && (uint64_t)(iend - ip) >= 16 && (uint64_t)(oend - op) >= 16) {
			copy8(op, ip);
			copy8(op + 8, ip + 8);
		} else {
			uint64_t i = 0;
			for (; i + 8 <= lit; i += 8)
				copy8(op + i, ip + i);
			for (; i < lit; i++)
				op[i] = ip[i];
		}
		op += lit;
		ip += lit;
		if (ip == iend)
			break;                  /* the last sequence has no match */

		if (iend - ip < 2)
			return -1;
		uint64_t off = (uint64_t)ip[0] | (uint64_t)ip[1] << 8;
		ip += 2;
		if (off == 0 || off > (uint64_t)(op - dst))
			return -1;
		uint64_t mlen = token & 15;
		if (mlen == 15 && read_len(&ip, iend, &mlen) < 0)
			return -1;
		mlen += MIN_MATCH;
		if (mlen > (uint64_t)(oend - op))
			return -1;
		if (ip >= iend)
			return -1;              /* a block must end with literals */

		const uint8_t *m = op - off;
		if (off >= 8 && (uint64_t)(oend - op) >= mlen + 8) {
			uint64_t i = 0;
			for (; i < mlen; i += 8)
				copy8(op + i, m + i);
		} else {
			for (uint64_t i = 0; i < mlen; i++)
				op[i] = m[i];
		}
		op += mlen;
	}
	return (int64_t)(op - dst);
}
