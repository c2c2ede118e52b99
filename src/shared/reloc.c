/* SPDX-License-Identifier: GPL-2.0-only */
/* Relocation of the kernel image for its virtual offset (see reloc.h). */
#include <rerand/abi.h>
#include "reloc.h"
#include "util.h"

uint64_t rr_reloc_offset(uint32_t entry, uint64_t link_paddr, uint64_t size, unsigned width)
{
	uint64_t va = (uint64_t)(int64_t)(int32_t)entry;
	uint64_t base = RERAND_START_KERNEL_MAP + link_paddr;
	uint64_t off = va - base;

	if (va < base || size < width || off > size - width)
		return UINT64_MAX;
	return off;
}

static int check_list(const uint32_t *l, uint64_t n, unsigned width, uint64_t link_paddr,
		      uint64_t size, uint64_t first, uint64_t *bad_index)
{
	for (uint64_t i = 0; i < n; i++) {
		if (rr_reloc_offset(l[i], link_paddr, size, width) == UINT64_MAX) {
			*bad_index = first + i;
			return -1;
		}
	}
	return 0;
}

int rr_reloc_check(const struct rr_reloc_lists *l, uint64_t link_paddr, uint64_t size,
		   uint64_t *bad_index)
{
	uint64_t dummy;

	if (!bad_index)
		bad_index = &dummy;
	if (check_list(l->reloc64, l->nr_reloc64, 8, link_paddr, size, 0, bad_index) < 0 ||
	    check_list(l->inverse32, l->nr_inverse32, 4, link_paddr, size,
		       l->nr_reloc64, bad_index) < 0 ||
	    check_list(l->reloc32, l->nr_reloc32, 4, link_paddr, size,
		       l->nr_reloc64 + l->nr_inverse32, bad_index) < 0)
		return -1;
	return 0;
}

int64_t rr_relocate(uint8_t *image, uint64_t size, const struct rr_reloc_lists *l,
		    uint64_t link_paddr, uint64_t virt_offset)
{
	uint64_t delta = virt_offset - link_paddr;
	uint64_t off;

	if (delta == 0)
		return 0;
	for (uint64_t i = 0; i < l->nr_reloc32; i++) {
		off = rr_reloc_offset(l->reloc32[i], link_paddr, size, 4);
		if (off == UINT64_MAX)
			return -1;
		rr_put32(image + off, rr_get32(image + off) + (uint32_t)delta);
	}
	for (uint64_t i = 0; i < l->nr_inverse32; i++) {
		off = rr_reloc_offset(l->inverse32[i], link_paddr, size, 4);
		if (off == UINT64_MAX)
			return -1;
		rr_put32(image + off, rr_get32(image + off) - (uint32_t)delta);
	}
	for (uint64_t i = 0; i < l->nr_reloc64; i++) {
		off = rr_reloc_offset(l->reloc64[i], link_paddr, size, 8);
		if (off == UINT64_MAX)
			return -1;
		rr_put64(image + off, rr_get64(image + off) + delta);
	}
	return (int64_t)(l->nr_reloc32 + l->nr_inverse32 + l->nr_reloc64);
}
