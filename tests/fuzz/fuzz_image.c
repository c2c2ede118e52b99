/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz the image reader (rr_image_parse): any input must be refused or
 * accepted with every offset and size inside the buffer.  The replay in
 * `make check` runs the corpus's valid-* seeds (shrunk real images, see
 * shrink-image.py) with RR_FUZZ_MUST_PARSE=1: a seed the reader refuses then
 * aborts, so a format change cannot leave the fuzzer with nothing to parse. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rr_image im;
	struct rr_err e;

	if (rr_image_parse(data, size, "fuzz", &im, &e) < 0) {
		if (getenv("RR_FUZZ_MUST_PARSE")) {
			fprintf(stderr, "fuzz_image: a seed that must parse is refused: %s\n", e.msg);
			abort();
		}
		return 0;
	}
	const struct rerand_image_header *h = &im.hdr;
	/* A signed image's certificate table follows file_size. */
	size_t pm_len = size - im.pm_offset - im.cert_size;
	if (h->file_size != pm_len || (uint64_t)h->file_size + im.cert_size > h->scratch_offset)
		abort();
	for (unsigned i = 0; i < h->nr_segments; i++)
		if (h->seg[i].data_offset + h->seg[i].data_size > pm_len ||
		    h->seg[i].mem_offset + h->seg[i].mem_size > h->mem_size)
			abort();
	uint64_t nrel = (uint64_t)h->nr_reloc64 + h->nr_inverse32 + h->nr_reloc32;
	if (h->relocs_offset + nrel * 4 > pm_len)
		abort();
	/* Touch every byte the stage would read. */
	volatile uint8_t sink = 0;
	for (unsigned i = 0; i < h->nr_segments; i++)
		for (uint64_t j = 0; j < h->seg[i].data_size; j += 512)
			sink ^= data[im.pm_offset + h->seg[i].data_offset + j];
	(void)sink;
	return 0;
}
