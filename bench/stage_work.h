/* SPDX-License-Identifier: GPL-2.0-only */
/* Interface between the stage-flags unit (stage_work.c) and the hosted driver. */
#ifndef RERAND_BENCH_STAGE_WORK_H
#define RERAND_BENCH_STAGE_WORK_H

#include <stdint.h>
#include "lz4dec.h"
#include "reloc.h"
#include "select.h"

#define BENCH_MAX_SEG 8

struct bench_seg {
	const uint8_t *data;     /* as stored in the image */
	uint64_t data_size;
	uint64_t mem_offset;
	uint64_t file_size;
};

struct bench_result {
	uint64_t phys_slots;
	uint64_t virt;           /* kept only so the host can check the result */
};

struct bench_work {
	unsigned codec;          /* RERAND_CODEC_* */
	enum rr_simd simd;       /* the decoder's copy width, as the stage picks it */
	unsigned nr_seg;
	struct bench_seg seg[BENCH_MAX_SEG];
	uint64_t mem_size;
	struct rr_reloc_lists relocs;
	uint8_t seed[32];
	struct bench_result *out;
};

/* Select bases on m, decode every segment into dest (mem_size bytes),
 * relocate.  Returns the number of relocations applied, or < 0. */
int64_t bench_stage_run(const struct bench_work *w, uint8_t *dest, struct rr_memmap *m);

#endif
