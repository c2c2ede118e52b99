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

/* The table patches a little-endian x86_64 image; whole loads and stores
 * (rr_get32() and friends stay out-of-line calls at the stage's -Os). */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "relocation assumes a little-endian host");

static inline __attribute__((always_inline)) uint32_t ld32(const uint8_t *p)
{
	uint32_t v;
	__builtin_memcpy(&v, p, 4);
	return v;
}

static inline __attribute__((always_inline)) void st32(uint8_t *p, uint32_t v)
{
	__builtin_memcpy(p, &v, 4);
}

static inline __attribute__((always_inline)) uint64_t ld64(const uint8_t *p)
{
	uint64_t v;
	__builtin_memcpy(&v, p, 8);
	return v;
}

static inline __attribute__((always_inline)) void st64(uint8_t *p, uint64_t v)
{
	__builtin_memcpy(p, &v, 8);
}

/*
 * One list, with rr_reloc_offset()'s test inlined and its constants hoisted:
 * the stage applies about 200,000 entries at every kexec, and a call per
 * entry cost 35 instructions of which the patch itself is four.  The tests
 * are the same as rr_reloc_offset()'s, so the same entries are refused.
 * kind: 0 adds the low 32 bits of delta, 1 subtracts them, 2 adds delta to
 * 64 bits (a constant in every instance, so each loop is straight code).
 */
static inline __attribute__((always_inline)) int apply(uint8_t *image, uint64_t size,
						       const uint32_t *l, uint64_t n,
						       uint64_t base, uint64_t delta,
						       const int kind)
{
	const unsigned width = kind == 2 ? 8 : 4;
	const uint64_t lim = size - width;

	if (n && size < width)
		return -1;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t va = (uint64_t)(int64_t)(int32_t)l[i];
		uint64_t off = va - base;
		uint8_t *p = image + off;

		if (va < base || off > lim)
			return -1;
		if (kind == 0)
			st32(p, ld32(p) + (uint32_t)delta);
		else if (kind == 1)
			st32(p, ld32(p) - (uint32_t)delta);
		else
			st64(p, ld64(p) + delta);
	}
	return 0;
}

int64_t rr_relocate(uint8_t *image, uint64_t size, const struct rr_reloc_lists *l,
		    uint64_t link_paddr, uint64_t virt_offset)
{
	uint64_t delta = virt_offset - link_paddr;
	uint64_t base = RERAND_START_KERNEL_MAP + link_paddr;

	if (delta == 0)
		return 0;
	if (apply(image, size, l->reloc32, l->nr_reloc32, base, delta, 0) < 0 ||
	    apply(image, size, l->inverse32, l->nr_inverse32, base, delta, 1) < 0 ||
	    apply(image, size, l->reloc64, l->nr_reloc64, base, delta, 2) < 0)
		return -1;
	return (int64_t)(l->nr_reloc32 + l->nr_inverse32 + l->nr_reloc64);
}
