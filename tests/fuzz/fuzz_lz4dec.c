/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Differential fuzzing of the stage's LZ4 block decoder against liblz4:
 *  - any block liblz4's compressors (fast and HC) make from the input must
 *    decode with ours to the input, at every output capacity from exact up;
 *  - on arbitrary input, whenever both decoders accept, they agree on every
 *    byte (the acceptance sets differ at the edges: ours follows the block
 *    format's end rules and forbids offset 0, liblz4 has shortcut paths);
 *  - ours never touches memory outside its buffers (ASan).
 */
#include <lz4.h>
#include <lz4hc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lz4dec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void roundtrip(const uint8_t *data, size_t size, int hc)
{
	int cap = LZ4_compressBound((int)size);
	char *c = malloc((size_t)cap);
	uint8_t *out = malloc(size + 64);
	int n = hc ? LZ4_compress_HC((const char *)data, c, (int)size, cap, hc)
		   : LZ4_compress_default((const char *)data, c, (int)size, cap);

	if (n <= 0)
		abort();
	if (rr_lz4_decode_block((uint8_t *)c, (uint64_t)n, out, size) != (int64_t)size ||
	    memcmp(out, data, size))
		abort();
	if (rr_lz4_decode_block((uint8_t *)c, (uint64_t)n, out, size + 64) != (int64_t)size)
		abort();
	free(c);
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	/* The first two bytes choose the output capacity (up to 64 KiB). */
	size_t cap = (size_t)data[0] | (size_t)data[1] << 8;
	data += 2;
	size -= 2;

	uint8_t *mine = malloc(cap + 1), *ref = malloc(cap + 1);
	int64_t n = rr_lz4_decode_block(data, size, mine, cap);
	int m = size ? LZ4_decompress_safe((const char *)data, (char *)ref, (int)size, (int)cap) : -1;
	if (n >= 0 && m >= 0 && (n != m || memcmp(mine, ref, (size_t)n)))
		abort();
	/* Every copy width the stage may pick gives the same answer, and none
	 * writes past cap (ASan sees the malloc'd end). */
	__builtin_cpu_init();
	for (int w = RR_SIMD_SSE2; w <= RR_SIMD_AVX2; w++) {
		if (w == RR_SIMD_AVX2 && !__builtin_cpu_supports("avx2"))
			break;
		uint8_t *wide = malloc(cap + 1);
		int64_t nw = rr_lz4_decode_block_simd(data, size, wide, cap, (enum rr_simd)w);
		if (nw != n || (n >= 0 && memcmp(wide, mine, (size_t)n)))
			abort();
		free(wide);
	}
	free(mine);
	free(ref);

	if (size) {
		roundtrip(data, size, 0);
		roundtrip(data, size, 9);
	}
	return 0;
}
