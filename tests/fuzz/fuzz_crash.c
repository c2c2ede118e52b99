/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz the ELF core header reader of crash.c: the input is the memory at the
 * header's address; nothing may be read outside it, and every avoided range
 * added must be non-empty. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crash.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t *buf;
static size_t buf_len;
#define BASE 0x40000000ULL

static void *map(void *ctx, uint64_t phys, uint64_t len)
{
	(void)ctx;
	if (phys < BASE || len > buf_len || phys - BASE > buf_len - len)
		return NULL;
	return (void *)(buf + (phys - BASE));
}

static struct rr_memmap m;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	buf = data;
	buf_len = size;
	rr_memmap_init(&m);
	rr_memmap_add_ram(&m, BASE - (64ULL << 20), BASE + (64ULL << 20));
	int n = rr_crash_avoid(BASE, map, NULL, &m);
	if (n >= 0 && (unsigned)n < m.nr_avoid)
		abort();
	for (unsigned i = 0; i < m.nr_avoid; i++)
		if (m.avoid[i].end <= m.avoid[i].start)
			abort();
	return 0;
}
