/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * LZ4 block format decoder (lz4 Block_format.md), bounds-checked on every
 * read and write.  It runs over ~60 MiB at every rerandomizing kexec, so
 * copies are "wild": whole moves that may run up to WILD - 1 bytes past a
 * run, only where both buffers have that much room left (later writes
 * overwrite the excess).
 *
 * One body, instantiated three times by move width: 8 bytes in general
 * registers (the stage is built -mgeneral-regs-only), 16 (SSE2) and 32
 * (AVX2).  The vector instances carry a target attribute so that only they
 * touch vector registers; the caller picks one by what the CPU has and has
 * enabled.  All three take the same decisions on the same input: only the
 * size of the moves differs.
 */
#include "lz4dec.h"

#define MIN_MATCH 4
#define MFLIMIT   12
#define LAST_LITERALS 5
#define WILD_MAX  32

typedef uint64_t v16 __attribute__((vector_size(16), aligned(1)));
typedef uint64_t v32 __attribute__((vector_size(32), aligned(1)));

#define INLINE static inline __attribute__((always_inline))

INLINE void copy8(uint8_t *d, const uint8_t *s)
{
	uint64_t v;
	__builtin_memcpy(&v, s, 8);
	__builtin_memcpy(d, &v, 8);
}

/* Only reached from the vector instances (w >= 16 is a constant there). */
INLINE void copy16(uint8_t *d, const uint8_t *s)
{
	v16 v;
	__builtin_memcpy(&v, s, 16);
	__builtin_memcpy(d, &v, 16);
}

INLINE void copy32(uint8_t *d, const uint8_t *s)
{
	v32 v;
	__builtin_memcpy(&v, s, 32);
	__builtin_memcpy(d, &v, 32);
}

/* Bytes moved per wild-copy step, and so the most a wild copy overruns
 * (plus one): 16 for the 8-byte instance (two moves a step), else w. */
#define STEP(w) ((w) == 8 ? 16u : (unsigned)(w))

/* Copy n bytes STEP(w) at a time; may write up to STEP(w) - 1 bytes past
 * d + n.  When s < d, every move reads only bytes already final if
 * d - s >= w (for w = 8: each 8-byte move follows the one it reads). */
INLINE void wild_copy(uint8_t *d, const uint8_t *s, uint64_t n, const unsigned w)
{
	uint8_t *e = d + n;
	do {
		if (w == 32) {
			copy32(d, s);
		} else if (w == 16) {
			copy16(d, s);
		} else {
			copy8(d, s);
			copy8(d + 8, s + 8);
		}
		d += STEP(w);
		s += STEP(w);
	} while (d < e);
}

/* Read a length continued by 255-valued bytes; no byte may be read at or
 * past limit.  The limits leave room for what must follow (see callers). */
INLINE int read_len(const uint8_t **ip, const uint8_t *limit, uint64_t *len)
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

INLINE int64_t decode(const uint8_t *src, uint64_t src_len, uint8_t *dst, uint64_t dst_cap,
		      const unsigned w)
{
	const uint8_t *ip = src, *iend = src + src_len;
	uint8_t *op = dst, *oend = dst + dst_cap;
	const uint64_t wild = STEP(w);
	/* The fast path's room test as one comparison per buffer: the last
	 * positions with 32 input and 64 output bytes left (0: never, on a
	 * buffer smaller than that; src and dst are never null here). */
	const uintptr_t ilim = src_len >= 32 ? (uintptr_t)iend - 32 : 0;
	const uintptr_t olim = dst_cap >= 64 ? (uintptr_t)oend - 64 : 0;

	if (src_len == 0)
		return -1;
	for (;;) {
		/* Fast path for the common sequence, far from both ends: at most
		 * 14 literals and a match of at most 18 bytes at offset >= 8.
		 * Fixed-size moves; every check of the careful path below holds
		 * here by construction (31 input and 64 output bytes of room:
		 * the match's moves end at most 14 + 32 bytes past op). */
		if ((uintptr_t)ip <= ilim && (uintptr_t)op <= olim && (*ip & 0xf0) != 0xf0 &&
		    (*ip & 0x0f) != 0x0f) {
			uint64_t lit = *ip >> 4;
			const uint8_t *p = ip + 1 + lit;
			uint8_t *o = op + lit;
			uint64_t off = (uint64_t)p[0] | (uint64_t)p[1] << 8;

			if (off >= 8 && off <= (uint64_t)(o - dst)) {
				const uint8_t *m = o - off;
				if (w >= 16) {
					copy16(op, ip + 1);
				} else {
					copy8(op, ip + 1);
					copy8(op + 8, ip + 9);
				}
				if (w == 32 && off >= 32) {
					copy32(o, m);
				} else if (w >= 16 && off >= 16) {
					copy16(o, m);
					copy16(o + 16, m + 16);
				} else {
					copy8(o, m);
					copy8(o + 8, m + 8);
					copy8(o + 16, m + 16);
				}
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
			if (in_room >= lit + wild && out_room >= lit + wild) {
				wild_copy(op, ip, lit, w);
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

		/* Wild moves for all but what ends within `wild` of the output's
		 * end, byte by byte there (at most wild bytes: the last 5 are
		 * literals).  A long match that runs up to the end of a segment
		 * (zero padding) would otherwise go byte by byte: 40% of the
		 * decode's instructions on a 6.1 kernel before this. */
		const uint8_t *m = op - off;
		uint64_t room = (uint64_t)(oend - op), bulk = mlen;
		if (room < mlen + wild)
			bulk = room > wild ? room - wild : 0;
		if (bulk == 0) {
			/* nothing to move wide */
		} else if (off >= w) {
			wild_copy(op, m, bulk, w);
		} else if (off >= 8) {
			wild_copy(op, m, bulk, 8);      /* overruns less: STEP(8) <= wild */
		} else {
			/* Overlapping: the output repeats with period off, so also
			 * with any multiple of it; step is the first one >= 8. */
			uint64_t step = off * ((8 + off - 1) / off);
			uint64_t head = step < bulk ? step : bulk;
			for (uint64_t i = 0; i < head; i++)
				op[i] = m[i];
			if (bulk > head)
				wild_copy(op + head, op + head - step, bulk - head, 8);
		}
		/* In order, so each byte reads one already final (i - off < i),
		 * and over whatever the wild moves left past bulk. */
		for (uint64_t i = bulk; i < mlen; i++)
			op[i] = m[i];
		op += mlen;
	}
	return (int64_t)(op - dst);
}

_Static_assert(STEP(8) <= WILD_MAX && STEP(16) <= WILD_MAX && STEP(32) <= WILD_MAX,
	       "a wild copy overruns more than any margin allows");

int64_t rr_lz4_decode_block(const uint8_t *src, uint64_t src_len, uint8_t *dst, uint64_t dst_cap)
{
	return decode(src, src_len, dst, dst_cap, 8);
}

__attribute__((target("sse2")))
static int64_t decode_sse2(const uint8_t *src, uint64_t src_len, uint8_t *dst, uint64_t dst_cap)
{
	return decode(src, src_len, dst, dst_cap, 16);
}

__attribute__((target("avx2")))
static int64_t decode_avx2(const uint8_t *src, uint64_t src_len, uint8_t *dst, uint64_t dst_cap)
{
	int64_t r = decode(src, src_len, dst, dst_cap, 32);
	/* GCC inserts this itself only when vector registers are allowed
	 * globally; without it, later SSE code pays the AVX-SSE transition. */
	__builtin_ia32_vzeroupper();
	return r;
}

int64_t rr_lz4_decode_block_simd(const uint8_t *src, uint64_t src_len, uint8_t *dst,
				 uint64_t dst_cap, enum rr_simd simd)
{
	if (simd == RR_SIMD_AVX2)
		return decode_avx2(src, src_len, dst, dst_cap);
	if (simd == RR_SIMD_SSE2)
		return decode_sse2(src, src_len, dst, dst_cap);
	return rr_lz4_decode_block(src, src_len, dst, dst_cap);
}
