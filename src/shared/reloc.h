/* SPDX-License-Identifier: GPL-2.0-only */
/* Applying an x86_64 kernel relocation table for a virtual offset.  The one
 * implementation: built into the stage and into hosted tests. */
#ifndef RERAND_RELOC_H
#define RERAND_RELOC_H

#include <stdint.h>

struct rr_reloc_lists {
	const uint32_t *reloc64;   uint64_t nr_reloc64;
	const uint32_t *inverse32; uint64_t nr_inverse32;
	const uint32_t *reloc32;   uint64_t nr_reloc32;
};

/* Offset into the image of a table entry (the low 32 bits of a link-time
 * virtual address), or UINT64_MAX if it cannot lie in an image of `size`
 * bytes with `width` bytes to patch. */
uint64_t rr_reloc_offset(uint32_t entry, uint64_t link_paddr, uint64_t size, unsigned width);

/* Check every entry lies inside the image; 0 or -1 (and *bad_index). */
int rr_reloc_check(const struct rr_reloc_lists *l, uint64_t link_paddr, uint64_t size,
		   uint64_t *bad_index);

/* Patch `image` (the kernel laid out from link_paddr, `size` bytes) so it
 * runs at virtual offset virt_offset (_text = START_KERNEL_MAP + virt_offset).
 * Only the virtual delta is applied: the physical placement needs none.
 * Returns the number of entries applied, or -1 if an entry is out of bounds
 * (the image may then be partly patched). */
int64_t rr_relocate(uint8_t *image, uint64_t size, const struct rr_reloc_lists *l,
		    uint64_t link_paddr, uint64_t virt_offset);

#endif
