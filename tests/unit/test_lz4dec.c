/* SPDX-License-Identifier: GPL-2.0-only */
/* The stage's LZ4 block decoder against liblz4's encoder (fast and HC), and
 * its refusal of malformed blocks. */
#include <lz4.h>
#include <lz4hc.h>
#include <stdint.h>

#include "test.h"
#include "lz4dec.h"

static uint64_t xs = 88172645463325252ULL;
static uint64_t next_rand(void)
{
	xs ^= xs << 13;
	xs ^= xs >> 7;
	xs ^= xs << 17;
	return xs;
}

/* Data with runs, repeats at many distances and random stretches. */
static void fill(uint8_t *p, size_t n)
{
	size_t i = 0;
	while (i < n) {
		size_t len = 1 + next_rand() % 300;
		int kind = (int)(next_rand() % 4);
		for (size_t j = 0; j < len && i < n; j++, i++) {
			if (kind == 0)
				p[i] = 0;
			else if (kind == 1 && i > 70000)
				p[i] = p[i - 1 - next_rand() % 65535 % (i - 1)];
			else if (kind == 2 && i >= 3)
				p[i] = p[i - 3];
			else
				p[i] = (uint8_t)next_rand();
		}
	}
}

static int roundtrip(const uint8_t *in, size_t n, int hc)
{
	int cap = LZ4_compressBound((int)n);
	char *c = malloc((size_t)cap);
	uint8_t *out = malloc(n + 64);
	int clen = hc ? LZ4_compress_HC((const char *)in, c, (int)n, cap, hc)
		      : LZ4_compress_default((const char *)in, c, (int)n, cap);
	int64_t got = rr_lz4_decode_block((uint8_t *)c, (uint64_t)clen, out, n);
	int ok = clen > 0 && got == (int64_t)n && memcmp(in, out, n) == 0;
	free(c);
	free(out);
	return ok;
}

int main(void)
{
	size_t sizes[] = { 1, 15, 16, 17, 255, 4096, 65536, 1 << 20, 5 << 20 };
	uint8_t *buf = malloc(5 << 20);

	fill(buf, 5 << 20);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		T_OK(roundtrip(buf, sizes[i], 0), "lz4 fast round trip, %zu bytes", sizes[i]);
		T_OK(roundtrip(buf, sizes[i], 9), "lz4 HC-9 round trip, %zu bytes", sizes[i]);
	}
	memset(buf, 0xab, 1 << 20);
	T_OK(roundtrip(buf, 1 << 20, 0), "lz4 round trip of a 1 MiB run (overlapping matches)");

	/* Malformed blocks must fail, never overrun. */
	fill(buf, 1 << 16);
	int cap = LZ4_compressBound(1 << 16);
	char *c = malloc((size_t)cap);
	int clen = LZ4_compress_default((const char *)buf, c, 1 << 16, cap);
	uint8_t *out = malloc(1 << 16);
	T_OK(rr_lz4_decode_block((uint8_t *)c, (uint64_t)clen, out, (1 << 16) - 1) < 0,
	     "output one byte too small is refused");
	T_OK(rr_lz4_decode_block((uint8_t *)c, (uint64_t)clen - 7, out, 1 << 16) != (1 << 16),
	     "truncated block does not decode to full size");
	T_OK(rr_lz4_decode_block((uint8_t *)c, 0, out, 1 << 16) < 0, "empty block refused");
	uint8_t bad_off[] = { 0x10, 'a', 0x00, 0x00, 0x50, 'b', 'c', 'd', 'e', 'f' };
	T_OK(rr_lz4_decode_block(bad_off, sizeof(bad_off), out, 64) < 0, "zero match offset refused");
	uint8_t far_off[] = { 0x10, 'a', 0x09, 0x00, 0x50, 'b', 'c', 'd', 'e', 'f' };
	T_OK(rr_lz4_decode_block(far_off, sizeof(far_off), out, 64) < 0,
	     "match offset before the output start refused");
	uint8_t long_lit[] = { 0xf0, 0xff, 0xff, 0xff };
	T_OK(rr_lz4_decode_block(long_lit, sizeof(long_lit), out, 1 << 16) < 0,
	     "literal run past the input refused");
	free(c);
	free(out);
	free(buf);
	return t_done();
}
