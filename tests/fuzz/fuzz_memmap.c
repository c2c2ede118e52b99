/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz target: boot_params parsing over a fake machine built from the input
 * (4096 bytes of boot_params, the rest a blob at FUZZ_BLOB_PHYS), then the
 * command line, the slot count and slot_at, with their invariants checked;
 * SETUP_RNG_SEED nodes mixed and overwritten as the stage does. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bootparams.h"
#include "rerand/abi.h"
#include "rng.h"
#include "select.h"

#define FUZZ_BP_PHYS   0x1000ULL
#define FUZZ_BLOB_PHYS 0x100000ULL

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fake {
	uint8_t *bp;                 /* exactly 4096 bytes */
	uint8_t *blob;               /* exactly blob_len bytes: ASan sees overreads */
	uint64_t blob_len;
};

static void *fake_map(void *ctx, uint64_t phys, uint64_t len)
{
	struct fake *f = ctx;

	if (phys >= FUZZ_BP_PHYS && phys - FUZZ_BP_PHYS <= RR_BOOT_PARAMS_SIZE &&
	    len <= RR_BOOT_PARAMS_SIZE - (phys - FUZZ_BP_PHYS))
		return f->bp + (phys - FUZZ_BP_PHYS);
	if (phys >= FUZZ_BLOB_PHYS && phys - FUZZ_BLOB_PHYS <= f->blob_len &&
	    len <= f->blob_len - (phys - FUZZ_BLOB_PHYS))
		return f->blob ? f->blob + (phys - FUZZ_BLOB_PHYS) : NULL;
	return NULL;
}

static int slot_valid(const struct rr_memmap *m, const struct rr_select_params *p, uint64_t a)
{
	unsigned i;
	int in_ram = 0;

	if (a % p->align || a < p->min_addr || a > UINT64_MAX - p->size || a + p->size > p->max_addr)
		return 0;
	/* after rr_memmap_apply_cmdline RAM is sorted and merged */
	for (i = 0; i < m->nr_ram; i++)
		if (m->ram[i].start <= a && a + p->size <= m->ram[i].end)
			in_ram = 1;
	if (!in_ram)
		return 0;
	for (i = 0; i < m->nr_avoid; i++)
		if (m->avoid[i].start < m->avoid[i].end && m->avoid[i].start < a + p->size &&
		    a < m->avoid[i].end)
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rr_memmap m, norm;
	struct rr_bootinfo bi;
	struct rr_cmdline c;
	struct fake f;
	struct rr_select_params p;
	uint64_t count, prev = 0, a, i;
	unsigned k;

	f.bp = calloc(1, RR_BOOT_PARAMS_SIZE);
	memcpy(f.bp, data, size < RR_BOOT_PARAMS_SIZE ? size : RR_BOOT_PARAMS_SIZE);
	f.blob_len = size > RR_BOOT_PARAMS_SIZE ? size - RR_BOOT_PARAMS_SIZE : 0;
	f.blob = f.blob_len ? malloc(f.blob_len) : NULL;
	if (f.blob)
		memcpy(f.blob, data + RR_BOOT_PARAMS_SIZE, f.blob_len);

	rr_memmap_init(&m);
	if (rr_bootparams_parse(FUZZ_BP_PHYS, fake_map, &f, &m, &bi) != 0)
		__builtin_trap();
	if (m.nr_ram > RR_MAX_RAM || m.nr_avoid > RR_MAX_AVOID || bi.cmdline_len > RR_CMDLINE_MAX ||
	    bi.nr_setup_nodes > RR_MAX_SETUP_NODES || (bi.nr_setup_nodes == 0) != (bi.setup_tail_phys == 0) ||
	    (bi.efi_mirror_only && !bi.efi_map_used))
		__builtin_trap();
	/* Seed nodes: in bounds (ASan checks the reads and the writes), and
	 * every byte taken is replaced. */
	if (bi.nr_seed > RR_MAX_SEED_NODES || bi.nr_seed + bi.seed_skipped > bi.nr_setup_nodes)
		__builtin_trap();
	if (bi.nr_seed) {
		static uint8_t before[RR_MAX_SEED_NODES][RR_SEED_NODE_MAX];
		struct rr_rng rng;

		for (k = 0; k < bi.nr_seed; k++) {
			if (!bi.seed[k].data || bi.seed[k].len == 0 || bi.seed[k].len > RR_SEED_NODE_MAX)
				__builtin_trap();
			memcpy(before[k], bi.seed[k].data, bi.seed[k].len);
		}
		rr_rng_init_seeds(&rng, NULL, bi.seed, bi.nr_seed, NULL);
		if (!(rng.sources_used & RERAND_SRC_KERNEL_SEED) == !(rng.sources_rejected & RERAND_SRC_KERNEL_SEED))
			__builtin_trap();
		rr_rng_replace_seeds(&rng, bi.seed, bi.nr_seed);
		/* Overlapping nodes may rewrite each other: check only the last,
		 * and only when it is at least 8 bytes (a chance match of fewer
		 * is not a bug). */
		k = bi.nr_seed - 1;
		if (bi.seed[k].len >= 8) {
			uint8_t want[RR_SEED_NODE_MAX];
			rr_rng_derive(&rng, k, want, bi.seed[k].len);
			if (memcmp(want, bi.seed[k].data, bi.seed[k].len) ||
			    memcmp(before[k], bi.seed[k].data, bi.seed[k].len) == 0)
				__builtin_trap();
		}
	}

	/* boot_params itself is always kept clear */
	for (k = 0; k < m.nr_avoid; k++)
		if (m.avoid[k].start <= FUZZ_BP_PHYS && FUZZ_BP_PHYS + 4096 <= m.avoid[k].end)
			break;
	if (k == m.nr_avoid && !m.overflow)
		__builtin_trap();

	/* Kernel size and placement rules from otherwise unused bytes of the
	 * zero page (screen_info), so the fuzzer explores them too. */
	p.size = (uint64_t)(f.bp[0] | f.bp[1] << 8 | f.bp[2] << 16) << 8;
	if (p.size == 0)
		p.size = 30ULL << 20;
	p.min_addr = f.bp[3] & 1 ? ((uint64_t)f.bp[4] << 20) | f.bp[5] : RERAND_MIN_PHYS;
	p.max_addr = f.bp[3] & 2 ? (uint64_t)(f.bp[6] | f.bp[7] << 8) << 22 : RERAND_MAX_PHYS_4LEVEL;
	if (f.bp[3] & 4)
		p.max_addr = UINT64_MAX;
	p.align = f.bp[3] & 8 ? 4096 : RERAND_SLOT_ALIGN;

	/* The sweep over raw, unsorted, overlapping tables must agree with the
	 * same tables sorted and merged. */
	norm = m;
	rr_memmap_normalize(&norm);
	if (rr_phys_slot_count(&m, &p) != rr_phys_slot_count(&norm, &p))
		__builtin_trap();

	rr_cmdline_parse(bi.cmdline, bi.cmdline_len, &c);
	rr_memmap_apply_cmdline(&m, &c);
	for (k = 0; k < m.nr_ram; k++) {
		if (m.ram[k].start >= m.ram[k].end || (k && m.ram[k].start <= m.ram[k - 1].end) ||
		    (c.mem_limit && m.ram[k].end > c.mem_limit))
			__builtin_trap();
	}

	count = rr_phys_slot_count(&m, &p);
	if (m.overflow && count)
		__builtin_trap();
	/* A normalized copy must give the same answer as the raw tables. */
	norm = m;
	rr_memmap_normalize(&norm);
	if (rr_phys_slot_count(&norm, &p) != count)
		__builtin_trap();
	if (rr_phys_slot_at(&m, &p, count, &a) != -1)
		__builtin_trap();
	for (i = 0; i < count && i < 32; i++) {
		if (rr_phys_slot_at(&m, &p, i, &a) != 0 || !slot_valid(&m, &p, a) || (i && a <= prev))
			__builtin_trap();
		/* nothing valid is skipped between neighbours (short gaps) */
		if (i && (a - prev) / p.align <= 64)
			for (uint64_t b = prev + p.align; b < a; b += p.align)
				if (slot_valid(&m, &p, b))
					__builtin_trap();
		prev = a;
	}
	if (count) {
		uint64_t idx[3] = { count - 1, count / 2, (count * 7) / 11 };
		for (k = 0; k < 3; k++) {
			uint64_t b;
			if (rr_phys_slot_at(&m, &p, idx[k], &a) != 0 || !slot_valid(&m, &p, a) ||
			    rr_phys_slot_at(&norm, &p, idx[k], &b) != 0 || a != b)
				__builtin_trap();
		}
	}

	uint64_t vc = rr_virt_slot_count(p.size);
	if (vc && (rr_virt_slot_at(vc - 1) + ((p.size + RERAND_SLOT_ALIGN - 1) & ~(RERAND_SLOT_ALIGN - 1)) >
		   RERAND_KERNEL_IMAGE_SIZE))
		__builtin_trap();

	free(f.bp);
	free(f.blob);
	return 0;
}
