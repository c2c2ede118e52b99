/* SPDX-License-Identifier: GPL-2.0-only */
/* The stage's LZ4 block decoder against liblz4's encoder (fast and HC), at
 * every copy width (8-byte, SSE2, AVX2), and its refusal of malformed
 * blocks; the widths must agree on every corrupted block too. */
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

/* Repeats at every short distance (1..40 bytes): the widths' fallbacks
 * for matches closer than a vector. */
static void fill_near(uint8_t *p, size_t n)
{
	size_t i = 0;
	while (i < n) {
		size_t len = 1 + next_rand() % 64, dist = 1 + next_rand() % 40;
		int lit = next_rand() % 3 == 0;
		for (size_t j = 0; j < len && i < n; j++, i++)
			p[i] = lit || i < dist ? (uint8_t)next_rand() : p[i - dist];
	}
}

static int roundtrip(const uint8_t *in, size_t n, int hc, enum rr_simd simd)
{
	int cap = LZ4_compressBound((int)n);
	char *c = malloc((size_t)cap);
	uint8_t *out = malloc(n + 64);
	int clen = hc ? LZ4_compress_HC((const char *)in, c, (int)n, cap, hc)
		      : LZ4_compress_default((const char *)in, c, (int)n, cap);
	int64_t got = rr_lz4_decode_block_simd((uint8_t *)c, (uint64_t)clen, out, n, simd);
	int ok = clen > 0 && got == (int64_t)n && memcmp(in, out, n) == 0;
	free(c);
	free(out);
	return ok;
}

/* Corrupt a valid block many ways: every width must return the same
 * result, and when it decodes, the same bytes (a width that accepted a
 * block another refuses, or wrote elsewhere, would show here). */
static void differential(uint8_t *buf)
{
	size_t n = 1 << 16;
	int cap = LZ4_compressBound((int)n), bad = 0, past = 0, decoded = 0, tried = 0;
	char *c = malloc((size_t)cap);
	uint8_t *m = malloc((size_t)cap), *out[3];

	fill_near(buf, n / 2);
	fill(buf + n / 2, n / 2);
	int clen = LZ4_compress_default((const char *)buf, c, (int)n, cap);
	for (int w = 0; w < 3; w++)
		out[w] = malloc(n + 64);
	for (int round = 0; round < 3000; round++) {
		memcpy(m, c, (size_t)clen);
		int flips = 1 + (int)(next_rand() % 4);
		for (int f = 0; f < flips; f++)
			m[next_rand() % (uint64_t)clen] ^= (uint8_t)(1 + next_rand() % 255);
		uint64_t mlen = (uint64_t)clen - (round % 5 == 0 ? next_rand() % 64 : 0);
		uint64_t ocap = n + (round % 3 == 0 ? 64 : 0) - (round % 7 == 0 ? next_rand() % 64 : 0);
		int64_t r[3];
		int levels = 0;
		for (int w = 0; w < 3; w++) {
			if (!t_simd_usable(w))
				continue;
			levels++;
			memset(out[w], 0x5a, n + 64);
			r[w] = rr_lz4_decode_block_simd(m, mlen, out[w], ocap, (enum rr_simd)w);
			if (r[w] != r[0] || (r[w] >= 0 && memcmp(out[w], out[0], (size_t)r[w]) != 0))
				bad++;
			for (uint64_t i = ocap; i < n + 64; i++)
				if (out[w][i] != 0x5a) {
					past++;
					break;
				}
			if (w == 0 && r[0] >= 0)
				decoded++;
		}
		tried += levels > 1;
	}
	T_OK(tried == 3000 && bad == 0,
	     "every copy width agrees on 3000 corrupted or truncated blocks (%d disagreements, %d decoded)",
	     bad, decoded);
	T_OK(past == 0, "no width writes past the output capacity on those blocks (%d did)", past);
	for (int w = 0; w < 3; w++)
		free(out[w]);
	free(m);
	free(c);
}

int main(void)
{
	size_t sizes[] = { 1, 15, 16, 17, 255, 4096, 65536, 1 << 20, 5 << 20 };
	uint8_t *buf = malloc(5 << 20);

	for (int simd = RR_SIMD_NONE; simd <= RR_SIMD_AVX2; simd++) {
		const char *w = t_simd_name(simd);
		if (!t_simd_usable(simd)) {
			T_OK(1, "%s copies # SKIP this CPU lacks them", w);
			continue;
		}
		fill(buf, 5 << 20);
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			T_OK(roundtrip(buf, sizes[i], 0, simd), "%s: lz4 fast round trip, %zu bytes", w, sizes[i]);
			T_OK(roundtrip(buf, sizes[i], 9, simd), "%s: lz4 HC-9 round trip, %zu bytes", w, sizes[i]);
		}
		fill_near(buf, 1 << 20);
		T_OK(roundtrip(buf, 1 << 20, 0, simd) && roundtrip(buf, 1 << 20, 9, simd) &&
		     roundtrip(buf, 4097, 0, simd) && roundtrip(buf, 100, 0, simd),
		     "%s: round trips of repeats at distances 1..40", w);
		memset(buf, 0xab, 1 << 20);
		T_OK(roundtrip(buf, 1 << 20, 0, simd), "%s: lz4 round trip of a 1 MiB run (overlapping matches)", w);
	}
	differential(buf);

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
