/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz target: the command-line parser, bounded by length and by NUL alike,
 * and its effect on a fixed memory map (it may only take slots away). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rerand/abi.h"
#include "select.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same(const struct rr_cmdline *a, const struct rr_cmdline *b)
{
	unsigned i;

	if (a->nokaslr != b->nokaslr || a->debug != b->debug || a->mem_limit != b->mem_limit ||
	    a->nr_memmap != b->nr_memmap || a->memmap_overflow != b->memmap_overflow ||
	    a->hugepages_1g != b->hugepages_1g || a->has_elfcorehdr != b->has_elfcorehdr)
		return 0;
	if (a->has_elfcorehdr && (a->elfcorehdr.start != b->elfcorehdr.start ||
				  a->elfcorehdr.end != b->elfcorehdr.end))
		return 0;
	for (i = 0; i < a->nr_memmap && i < RR_MAX_MEMMAP; i++)
		if (a->memmap[i].start != b->memmap[i].start || a->memmap[i].end != b->memmap[i].end)
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rr_memmap m;
	struct rr_cmdline c, d;
	struct rr_select_params p = { 30ULL << 20, RERAND_MIN_PHYS, RERAND_MAX_PHYS_4LEVEL, RERAND_SLOT_ALIGN };
	char *exact = malloc(size ? size : 1), *term = malloc(size + 1);
	uint64_t before, after;
	unsigned i;

	/* exact: no terminator, so any read past len is an ASan report */
	memcpy(exact, data, size);
	memcpy(term, data, size);
	term[size] = 0;
	rr_cmdline_parse(exact, size, &c);
	rr_cmdline_parse(term, UINT64_MAX, &d);
	if (!same(&c, &d))
		__builtin_trap();
	if (c.nr_memmap > RR_MAX_MEMMAP || (c.nr_memmap < RR_MAX_MEMMAP && c.memmap_overflow))
		__builtin_trap();
	for (i = 0; i < c.nr_memmap; i++)
		if (c.memmap[i].start > c.memmap[i].end)
			__builtin_trap();
	if (c.has_elfcorehdr && c.elfcorehdr.start >= c.elfcorehdr.end &&
	    c.elfcorehdr.start != UINT64_MAX)
		__builtin_trap();

	/* A 3 GiB q35-like machine. */
	rr_memmap_init(&m);
	rr_memmap_add_ram(&m, 0, 0x9fc00);
	rr_memmap_add_ram(&m, 0x100000, 0x7ffe0000);
	rr_memmap_add_ram(&m, 0x100000000ULL, 0x140000000ULL);
	rr_memmap_add_avoid(&m, 0x3f000000, 0x3fd00000);
	before = rr_phys_slot_count(&m, &p);
	rr_memmap_apply_cmdline(&m, &c);
	after = rr_phys_slot_count(&m, &p);
	if (after > before || (c.memmap_overflow && after))
		__builtin_trap();
	if (c.mem_limit && after) {
		uint64_t a;
		if (rr_phys_slot_at(&m, &p, after - 1, &a) != 0 || a + p.size > c.mem_limit)
			__builtin_trap();
	}
	free(exact);
	free(term);
	return 0;
}
