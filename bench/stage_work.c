/* SPDX-License-Identifier: GPL-2.0-only */
/* The stage's per-kexec work (select, decode, relocate) as one function, built
 * with the stage's own compiler flags so the host measures the stage's code. */
#include <rerand/abi.h>
#include "stage_work.h"
#include "lz4dec.h"
#include "reloc.h"
#include "rng.h"
#include "select.h"
#include "util.h"

/* Deterministic stand-ins for RDSEED/RDRAND/RDTSC: callgrind counts must
 * repeat, and the draw must not depend on the host's entropy. */
static uint64_t fake_state = 0x9e3779b97f4a7c15ULL;

static uint64_t fake_next(void)
{
	fake_state ^= fake_state << 13;
	fake_state ^= fake_state >> 7;
	fake_state ^= fake_state << 17;
	return fake_state;
}

static bool fake_rd(uint64_t *v)
{
	*v = fake_next();
	return true;
}

static uint64_t fake_tsc_now = 1000;

static uint64_t fake_tsc(void)
{
	fake_tsc_now += 977;
	return fake_tsc_now;
}

/* Like kexec/stage/stage.c decode_kernel(): each segment straight to its
 * place, LZ4 or stored (the stage copies stored segments with rr_copy_bulk). */
static int decode(const struct bench_work *w, uint8_t *dest)
{
	for (unsigned i = 0; i < w->nr_seg; i++) {
		const struct bench_seg *s = &w->seg[i];
		uint8_t *d = dest + s->mem_offset;

		if (w->codec == RERAND_CODEC_NONE)
			rr_copy_bulk(d, s->data, s->file_size);
		else if (rr_lz4_decode_block_simd(s->data, s->data_size, d, s->file_size, w->simd) !=
			 (int64_t)s->file_size)
			return -1;
	}
	return 0;
}

__attribute__((noinline)) int64_t bench_stage_run(const struct bench_work *w, uint8_t *dest,
						  struct rr_memmap *m)
{
	static const struct rr_entropy_ops ops = {
		.rdseed = fake_rd, .rdrand = fake_rd, .rdtsc = fake_tsc,
	};
	struct rr_select_params sp = {
		.size = RR_ALIGN_UP(w->mem_size, RERAND_SLOT_ALIGN),
		.min_addr = RERAND_MIN_PHYS,
		.max_addr = RERAND_MAX_PHYS_4LEVEL,
		.align = RERAND_SLOT_ALIGN,
	};
	struct rr_rng rng;
	uint64_t phys = 0, virt;

	/* Select: the same calls in the same order as stage_main(). */
	uint64_t np = rr_phys_slot_count(m, &sp);
	uint64_t nv = rr_virt_slot_count(w->mem_size);
	if (np == 0 || nv == 0)
		return -2;
	rr_rng_init(&rng, w->seed, &ops);
	if (rr_phys_slot_at(m, &sp, rr_rng_uniform(&rng, np), &phys) < 0)
		return -3;
	virt = rr_virt_slot_at(rr_rng_uniform(&rng, nv));
	rr_rng_wipe(&rng);
	/* The host has no RAM at `phys`: decode into dest instead.  A virtual
	 * offset equal to the link address would skip relocation; step off it. */
	if (virt == RERAND_LOAD_PHYSICAL_ADDR)
		virt = rr_virt_slot_at(1);
	w->out->phys_slots = np;
	w->out->virt = virt;

	if (decode(w, dest) < 0)
		return -4;
	return rr_relocate(dest, w->mem_size, &w->relocs, RERAND_LOAD_PHYSICAL_ADDR, virt);
}
