/* SPDX-License-Identifier: GPL-2.0-only */
/* Byte helpers for code built both freestanding and hosted: no libc. */
#ifndef RERAND_UTIL_H
#define RERAND_UTIL_H

#include <stdint.h>

/* The number of elements of array a, the one way to say it everywhere; a
 * pointer instead of an array (a parameter declared a[]) does not compile:
 * the bit-field's width is then -1. */
#define ARRAY_SIZE(a)                                                                     \
	(sizeof(a) / sizeof((a)[0]) +                                                     \
	 0 * sizeof(struct {                                                              \
		 int rr_not_an_array : 1 - 2 * __builtin_types_compatible_p(__typeof__(a), \
									   __typeof__(&(a)[0])); \
	 }))

/* Non-overlapping copy, 8 bytes at a time (the stage copies whole kernel
 * segments with it when they are stored raw). */
static inline void rr_memcpy(void *d, const void *s, uint64_t n)
{
	uint8_t *dp = d;
	const uint8_t *sp = s;
	for (; n >= 8; n -= 8, dp += 8, sp += 8) {
		uint64_t v;
		__builtin_memcpy(&v, sp, 8);
		__builtin_memcpy(dp, &v, 8);
	}
	while (n--)
		*dp++ = *sp++;
}

/* Non-overlapping bulk copy of a whole stored segment: `rep movsb`, which
 * CPUs with fast strings (ERMS, every x86_64 of the last decade) run at
 * memcpy speed without SSE state.  Same code in the stage and in the hosted
 * benchmark, so the benchmark measures what the stage runs. */
static inline void rr_copy_bulk(void *d, const void *s, uint64_t n)
{
#if defined(__x86_64__)
	__asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
#else
	rr_memcpy(d, s, n);
#endif
}

static inline void rr_memset(void *d, int c, uint64_t n)
{
	uint8_t *dp = d;
	while (n--)
		*dp++ = (uint8_t)c;
}

static inline int rr_memcmp(const void *a, const void *b, uint64_t n)
{
	const uint8_t *x = a, *y = b;
	for (; n; n--, x++, y++)
		if (*x != *y)
			return *x < *y ? -1 : 1;
	return 0;
}

static inline uint16_t rr_get16(const void *p)
{
	const uint8_t *b = p;
	return (uint16_t)(b[0] | b[1] << 8);
}

static inline uint32_t rr_get32(const void *p)
{
	const uint8_t *b = p;
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static inline uint64_t rr_get64(const void *p)
{
	return (uint64_t)rr_get32(p) | (uint64_t)rr_get32((const uint8_t *)p + 4) << 32;
}

static inline void rr_put32(void *p, uint32_t v)
{
	uint8_t *b = p;
	b[0] = (uint8_t)v; b[1] = (uint8_t)(v >> 8); b[2] = (uint8_t)(v >> 16); b[3] = (uint8_t)(v >> 24);
}

static inline void rr_put64(void *p, uint64_t v)
{
	rr_put32(p, (uint32_t)v);
	rr_put32((uint8_t *)p + 4, (uint32_t)(v >> 32));
}

#define RR_ALIGN_UP(x, a)   (((x) + (a) - 1) & ~((uint64_t)(a) - 1))
#define RR_ALIGN_DOWN(x, a) ((x) & ~((uint64_t)(a) - 1))

#endif
