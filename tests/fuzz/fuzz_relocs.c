/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz target: the relocation-table parser, against a fake 64 MiB image. */
#include <stdint.h>
#include <string.h>

#include "kernel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int in_image(uint32_t entry, unsigned width, const struct rr_vmlinux *k)
{
	int64_t va = (int32_t)entry;
	int64_t lo = (int64_t)(0xffffffff80000000ull + k->link_paddr);

	return va >= lo && va + width <= lo + (int64_t)k->mem_size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rr_vmlinux k;
	struct rr_relocs r;
	struct rr_err e = { "" };

	memset(&k, 0, sizeof(k));
	k.link_paddr = 0x1000000;
	k.mem_size = 64u << 20;
	if (rr_relocs_parse(data, size, &k, "fuzz", &r, &e) < 0) {
		if (strncmp(e.msg, "fuzz: ", 6) != 0)
			__builtin_trap();
		return 0;
	}
	/* Re-check what was accepted, independently of the parser. */
	if ((r.layout != 2 && r.layout != 3) || (r.layout == 2 && r.nr_inverse32) ||
	    (r.nr_reloc64 + r.nr_inverse32 + r.nr_reloc32 + r.layout) * 4 != size)
		__builtin_trap();
	for (size_t i = 0; i < r.nr_reloc64; i++)
		if (!r.reloc64[i] || !in_image(r.reloc64[i], 8, &k))
			__builtin_trap();
	for (size_t i = 0; i < r.nr_inverse32; i++)
		if (!r.inverse32[i] || !in_image(r.inverse32[i], 4, &k))
			__builtin_trap();
	for (size_t i = 0; i < r.nr_reloc32; i++)
		if (!r.reloc32[i] || !in_image(r.reloc32[i], 4, &k))
			__builtin_trap();
	rr_relocs_free(&r);
	return 0;
}
