/* SPDX-License-Identifier: GPL-2.0-only */
/* Property target for the base selection: random maps and command lines
 * from the input; every slot and every draw must respect the invariants,
 * and the count must match a naive scan. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rerand/abi.h"
#include "rng.h"
#include "select.h"

#define MIB (1ULL << 20)
#define NAIVE_MAX_TOP (64ULL << 30)   /* naive scan only below 64 GiB: fast enough */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct in { const uint8_t *p; size_t n; };

static uint64_t take(struct in *in, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes && in->n; i++, in->p++, in->n--)
		v |= (uint64_t)in->p[0] << (8 * i);
	return v;
}

/* Placement invariants against the map the selection used (sorted and
 * merged by rr_memmap_apply_cmdline). */
static int slot_ok(const struct rr_memmap *m, const struct rr_select_params *p, uint64_t a)
{
	int in_ram = 0;

	if (a % p->align || a < p->min_addr || a > UINT64_MAX - p->size || a + p->size > p->max_addr)
		return 0;
	for (unsigned i = 0; i < m->nr_ram; i++)
		in_ram |= m->ram[i].start <= a && a + p->size <= m->ram[i].end;
	if (!in_ram)
		return 0;
	for (unsigned i = 0; i < m->nr_avoid; i++)
		if (m->avoid[i].start < a + p->size && a < m->avoid[i].end)
			return 0;
	return 1;
}

static uint64_t stub_v;
static bool stub_rd(uint64_t *v) { *v = (stub_v = stub_v * 6364136223846793005ULL + 1442695040888963407ULL); return true; }
static uint64_t stub_tsc(void) { static uint64_t t; return ++t; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rr_memmap m;
	struct in in = { data, size };
	struct rr_select_params sp;
	struct rr_cmdline cl;
	struct rr_rng rng;
	uint8_t seed[RERAND_SEED_SIZE] = { 1 };
	struct rr_entropy_ops ops = { .rdseed = stub_rd, .rdrand = stub_rd, .rdtsc = stub_tsc };
	unsigned nr_ram, nr_avoid, cmd_len;
	uint64_t mem_size, count, vcount, top = 0;

	rr_memmap_init(&m);
	nr_ram = (unsigned)take(&in, 1) % 48;
	nr_avoid = (unsigned)take(&in, 1) % 48;
	/* 1 KiB .. 256 MiB kernels, in 4 KiB steps with a byte of noise. */
	mem_size = (take(&in, 2) % 65536 + 1) * 4096 - take(&in, 1);
	/* Addresses in 64 KiB units up to 64 GiB, lengths up to 8 GiB:
	 * dense enough that slots appear and collide with avoided ranges. */
	for (unsigned i = 0; i < nr_ram; i++) {
		uint64_t s = take(&in, 3) << 12 | take(&in, 1) << 4;
		uint64_t l = take(&in, 3) << 9;
		rr_memmap_add_ram(&m, s, s + l);
	}
	for (unsigned i = 0; i < nr_avoid; i++) {
		uint64_t s = take(&in, 3) << 12 | take(&in, 1);
		uint64_t l = take(&in, 2) << 8;
		rr_memmap_add_avoid(&m, s, s + l);
	}
	cmd_len = (unsigned)take(&in, 1);
	if (cmd_len > in.n)
		cmd_len = (unsigned)in.n;
	rr_cmdline_parse((const char *)in.p, cmd_len, &cl);
	in.p += cmd_len;
	in.n -= cmd_len;
	rr_memmap_apply_cmdline(&m, &cl);

	sp.size = (mem_size + RERAND_SLOT_ALIGN - 1) & ~(RERAND_SLOT_ALIGN - 1);
	sp.min_addr = take(&in, 1) & 1 ? 512 * MIB : RERAND_MIN_PHYS;
	sp.max_addr = RERAND_MAX_PHYS_4LEVEL;
	sp.align = RERAND_SLOT_ALIGN;
	count = rr_phys_slot_count(&m, &sp);
	vcount = rr_virt_slot_count(mem_size);
	if (vcount == 0 || vcount > 504)
		abort();

	for (unsigned i = 0; i < m.nr_ram; i++)
		if (m.ram[i].end > top)
			top = m.ram[i].end;
	if (m.overflow) {
		if (count != 0)
			abort();
	} else if (top <= NAIVE_MAX_TOP) {
		uint64_t naive = 0;

		for (uint64_t a = sp.min_addr; a + sp.size <= top; a += sp.align)
			naive += (uint64_t)slot_ok(&m, &sp, a);
		if (naive != count)
			abort();
	}
	/* The first, the last and some slots between, and one past the end. */
	for (uint64_t k = 0; k < count && k < 64; k++) {
		uint64_t idx = k < 2 ? (k ? count - 1 : 0) : take(&in, 4) % count, a;

		if (rr_phys_slot_at(&m, &sp, idx, &a) < 0 || !slot_ok(&m, &sp, a))
			abort();
	}
	{
		uint64_t a;
		if (rr_phys_slot_at(&m, &sp, count, &a) == 0)
			abort();
	}
	/* Draws as the stage makes them. */
	stub_v = take(&in, 8);
	rr_rng_init(&rng, seed, &ops);
	for (unsigned d = 0; d < 32 && count; d++) {
		uint64_t ip = rr_rng_uniform(&rng, count), iv = rr_rng_uniform(&rng, vcount), a;
		uint64_t v = rr_virt_slot_at(iv);

		if (ip >= count || iv >= vcount || rr_phys_slot_at(&m, &sp, ip, &a) < 0 ||
		    !slot_ok(&m, &sp, a) || (a - v) % RERAND_SLOT_ALIGN ||
		    v < RERAND_LOAD_PHYSICAL_ADDR || v + sp.size > RERAND_KERNEL_IMAGE_SIZE)
			abort();
	}
	rr_rng_wipe(&rng);
	return 0;
}
