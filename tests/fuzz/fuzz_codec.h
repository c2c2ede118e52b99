/* SPDX-License-Identifier: GPL-2.0-only */
/* Shared body of the per-codec fuzzers: rr_decompress with the size unknown,
 * then bounded by a size field taken from the input, as in a bzImage. */
#ifndef RERAND_FUZZ_CODEC_H
#define RERAND_FUZZ_CODEC_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernel.h"

/* Keeps the bounded call cheap; the unknown-size call is bounded by the
 * library's own 1 GiB limit. */
#define FUZZ_EXPECTED_MAX ((size_t)4 << 20)

static void fuzz_codec_check_err(int r, const struct rr_err *e)
{
	/* Every refusal must say which file it is about. */
	if (r < 0 && strncmp(e->msg, "fuzz: ", 6) != 0)
		__builtin_trap();
}

static int fuzz_codec_one(enum rr_kcodec c, const uint8_t *data, size_t size)
{
	struct rr_err e = { "" };
	uint8_t *out = NULL;
	size_t len = 0, expected;
	int r;

	r = rr_decompress(c, data, size, 0, &out, &len, "fuzz", &e);
	fuzz_codec_check_err(r, &e);
	if (r == 0)
		free(out);

	if (size < 4)
		return 0;
	expected = (size_t)(data[size - 4] | data[size - 3] << 8 | data[size - 2] << 16 |
			    (uint32_t)data[size - 1] << 24) % FUZZ_EXPECTED_MAX;
	if (!expected)
		return 0;
	r = rr_decompress(c, data, size, expected, &out, &len, "fuzz", &e);
	fuzz_codec_check_err(r, &e);
	if (r == 0) {
		if (len != expected)
			__builtin_trap();
		free(out);
	}
	return 0;
}

#define FUZZ_CODEC_TARGET(codec)                                              \
	int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);         \
	int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)          \
	{                                                                     \
		return fuzz_codec_one(codec, data, size);                     \
	}

#endif
