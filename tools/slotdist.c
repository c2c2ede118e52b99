/* SPDX-License-Identifier: GPL-2.0-only */
/* slotdist: draw bases as the stage does on a saved memory map and print how
 * often each physical slot and virtual offset came up (for the histogram in
 * docs/entropy.md).  Prints slot indices and positions in MiB, nothing more. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memmap_src.h"
#include "rerand/abi.h"
#include "rng.h"
#include "select.h"

#define MIB (1ULL << 20)

static uint64_t stub_x;

/* Deterministic stand-ins for RDSEED/RDRAND/RDTSC: the run is reproducible
 * and goes through rr_rng_init exactly as the stage does. */
static bool stub_rd(uint64_t *v)
{
	uint64_t z = (stub_x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	*v = z ^ (z >> 31);
	return true;
}

static uint64_t stub_tsc(void)
{
	static uint64_t t;

	return t += 977;
}

int main(int argc, char **argv)
{
	static struct rr_memmap m;
	struct rr_select_params sp = {
		.min_addr = RERAND_MIN_PHYS, .max_addr = RERAND_MAX_PHYS_4LEVEL,
		.align = RERAND_SLOT_ALIGN,
	};
	struct rr_entropy_ops ops = { .rdseed = stub_rd, .rdrand = stub_rd, .rdtsc = stub_tsc };
	uint8_t seed[RERAND_SEED_SIZE];
	struct rr_msrc_info info;
	struct rr_cmdline cl;
	struct rr_rng rng;
	struct rr_err e;
	uint64_t draws, size, k, kv, *pc, *vc, *addr;

	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: slotdist MAP [DRAWS [KERNEL_MEM_SIZE]]\n");
		return 2;
	}
	draws = argc > 2 ? strtoull(argv[2], NULL, 0) : 1000000;
	size = argc > 3 ? strtoull(argv[3], NULL, 0) : 48234496;
	rr_memmap_init(&m);
	if (rr_msrc_read(argv[1], &m, &info, &e) < 0) {
		fprintf(stderr, "slotdist: %s\n", e.msg);
		return 1;
	}
	/* Where kexec-tools put the image and the initrd in test_uniform. */
	rr_memmap_add_avoid(&m, 0x30000000, 0x30000000 + 24 * MIB);
	rr_memmap_add_avoid(&m, 0x38000000, 0x38000000 + 8 * MIB);
	rr_cmdline_parse("console=ttyS0", 13, &cl);
	rr_memmap_apply_cmdline(&m, &cl);
	sp.size = (size + RERAND_SLOT_ALIGN - 1) & ~(RERAND_SLOT_ALIGN - 1);
	k = rr_phys_slot_count(&m, &sp);
	kv = rr_virt_slot_count(size);
	if (k == 0 || kv == 0) {
		fprintf(stderr, "slotdist: %s: no slot fits\n", argv[1]);
		return 1;
	}
	pc = calloc(k, sizeof(*pc));
	vc = calloc(kv, sizeof(*vc));
	addr = calloc(k, sizeof(*addr));
	if (!pc || !vc || !addr)
		return 1;
	for (uint64_t i = 0; i < k; i++)
		rr_phys_slot_at(&m, &sp, i, &addr[i]);
	memset(seed, 0x5a, sizeof(seed));
	stub_x = 42;
	rr_rng_init(&rng, seed, &ops);
	for (uint64_t d = 0; d < draws; d++) {
		pc[rr_rng_uniform(&rng, k)]++;
		vc[rr_rng_uniform(&rng, kv)]++;
	}
	rr_rng_wipe(&rng);

	printf("# slotdist %s: %llu draws, %llu physical slots, %llu virtual slots, "
	       "slot size %llu MiB\n", argv[1], (unsigned long long)draws, (unsigned long long)k,
	       (unsigned long long)kv, (unsigned long long)(sp.size / MIB));
	printf("# physical: index start_mib count expected\n");
	for (uint64_t i = 0; i < k; i++)
		printf("%llu %llu %llu %.2f\n", (unsigned long long)i,
		       (unsigned long long)(addr[i] / MIB), (unsigned long long)pc[i],
		       (double)draws / (double)k);
	printf("\n\n# virtual: index offset_mib count expected\n");
	for (uint64_t i = 0; i < kv; i++)
		printf("%llu %llu %llu %.2f\n", (unsigned long long)i,
		       (unsigned long long)(rr_virt_slot_at(i) / MIB), (unsigned long long)vc[i],
		       (double)draws / (double)kv);
	free(pc);
	free(vc);
	free(addr);
	return 0;
}
