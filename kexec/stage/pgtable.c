/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The stage's own identity page tables: 2 MiB pages for exactly the ranges
 * it touches, 4- or 5-level to match the CR4.LA57 it was entered with (long
 * mode cannot change paging depth without leaving it).
 */
#include "stage.h"
#include "util.h"

#define PTE_P   0x001ULL
#define PTE_W   0x002ULL
#define PTE_PS  0x080ULL
#define PAGE_2M 0x200000ULL
#define ADDR_MASK 0x000ffffffffff000ULL

void pgtable_init(struct pgtable *pt, void *pool, uint64_t pool_bytes, bool la57)
{
	pt->pool = pool;
	pt->used = 0;
	pt->total = (unsigned)(pool_bytes / 4096);
	pt->levels = la57 ? 5 : 4;
	pt->root = 0;
}

static uint64_t *alloc_page(struct pgtable *pt)
{
	uint64_t *p;

	if (pt->used >= pt->total)
		return 0;
	p = pt->pool + (uint64_t)pt->used++ * 512;
	rr_memset(p, 0, 4096);
	return p;
}

static int map_2m(struct pgtable *pt, uint64_t addr)
{
	uint64_t *table = pt->root;

	for (unsigned level = pt->levels; level > 2; level--) {
		unsigned shift = 12 + 9 * (level - 1);
		uint64_t *e = &table[(addr >> shift) & 511];

		if (!(*e & PTE_P)) {
			uint64_t *next = alloc_page(pt);
			if (!next)
				return -1;
			*e = (uint64_t)(uintptr_t)next | PTE_P | PTE_W;
		} else if (*e & PTE_PS) {
			return 0;       /* never made by us above level 2 */
		}
		table = (uint64_t *)(uintptr_t)(*e & ADDR_MASK);
	}
	table[(addr >> 21) & 511] = (addr & ~(PAGE_2M - 1)) | PTE_P | PTE_W | PTE_PS;
	return 0;
}

int pgtable_map(struct pgtable *pt, uint64_t start, uint64_t end)
{
	uint64_t limit = pt->levels == 5 ? 1ULL << 56 : 1ULL << 47;

	if (end <= start)
		return 0;
	if (end > limit)
		return -1;
	if (!pt->root && !(pt->root = alloc_page(pt)))
		return -1;
	for (uint64_t a = RR_ALIGN_DOWN(start, PAGE_2M); a < end; a += PAGE_2M)
		if (map_2m(pt, a) < 0)
			return -1;
	return 0;
}

void pgtable_activate(const struct pgtable *pt)
{
	__asm__ volatile("mov %0, %%cr3" : : "r"((uint64_t)(uintptr_t)pt->root) : "memory");
}
