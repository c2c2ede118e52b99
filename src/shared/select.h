/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Base selection: which 2 MiB physical slots and which virtual offsets a
 * kernel of a given in-memory size may take, and a uniform draw among them.
 * Built twice: into the purgatory stage and into the hosted tools and tests.
 * No allocation, no globals, no I/O.
 */
#ifndef RERAND_SELECT_H
#define RERAND_SELECT_H

#include <stdbool.h>
#include <stdint.h>

/* RAM ranges: a 1000-hole machine (EFI maps of large servers, e820 with
 * SETUP_E820_EXT) fits whole; 32 KiB of the stage's bss. */
#define RR_MAX_RAM    2048
#define RR_MAX_AVOID  128
#define RR_MAX_MEMMAP 4           /* like the decompressor's MAX_MEMMAP_REGIONS */

struct rr_range {
	uint64_t start;           /* inclusive */
	uint64_t end;             /* exclusive */
};

/* What the kernel command line says about placement. */
struct rr_cmdline {
	bool     nokaslr;
	bool     debug;                     /* rerand.debug: progress on COM1 */
	uint64_t mem_limit;                 /* mem= and memmap=nn; 0 = none */
	struct rr_range memmap[RR_MAX_MEMMAP]; /* memmap=nn[#$!]ss regions to avoid */
	unsigned nr_memmap;
	unsigned nr_memmap_seen;            /* every memmap= avoid region, kept or not: what
					     * `rerand load` quotes when it refuses an overflow */
	bool     memmap_overflow;           /* more than RR_MAX_MEMMAP avoid regions: an avoided
					     * region is unknown, so no place is known safe and the
					     * stage resets the machine (rr_memmap_apply_cmdline sets
					     * overflow, rr_phys_slot_count then finds nothing) */
	unsigned hugepages_1g;              /* hugepagesz=1G hugepages=N */
	bool     has_elfcorehdr;
	struct rr_range elfcorehdr;         /* elfcorehdr=[size@]addr */
	bool     has_simd_max;              /* rerand.simd=none|sse2|avx2: the widest */
	unsigned simd_max;                  /* vector moves the stage may use (RR_SIMD_*) */
};

/* Parse a NUL-terminated or len-bounded command line. Never fails: unknown
 * words are ignored, malformed values are ignored as the kernel would. */
void rr_cmdline_parse(const char *s, uint64_t len, struct rr_cmdline *ret);

struct rr_memmap {
	struct rr_range ram[RR_MAX_RAM];     /* usable RAM, any order, may overlap */
	unsigned nr_ram;
	struct rr_range avoid[RR_MAX_AVOID]; /* keep clear, any order, may overlap */
	unsigned nr_avoid;
	bool     overflow;                   /* an avoided range is unknown (avoid table full,
					      * memmap overflow, unreadable setup_data):
					      * rr_phys_slot_count() is then 0 */
	bool     ram_dropped;                /* RAM table full even after merging: some RAM
					      * was left out (safe: less RAM, never more) */
};

void rr_memmap_init(struct rr_memmap *m);
/* Add a range; empty ranges are ignored.  A full table is first sorted and
 * merged in place.  RAM overflow then drops the range and sets ram_dropped
 * (the stage uses less RAM, never more); avoid overflow sets overflow and
 * the selection refuses to randomize (it never ignores an avoided range). */
void rr_memmap_add_ram(struct rr_memmap *m, uint64_t start, uint64_t end);
void rr_memmap_add_avoid(struct rr_memmap *m, uint64_t start, uint64_t end);
/* Sort and merge both tables in place (touching ranges merge).  Optional:
 * the slot functions accept unsorted, overlapping tables. */
void rr_memmap_normalize(struct rr_memmap *m);

/*
 * Apply the command line to a memory map: clip RAM at mem_limit, avoid the
 * memmap= regions and elfcorehdr, and reserve the first hugepages_1g 1 GiB
 * aligned 1 GiB chunks lying wholly in (merged, clipped) RAM, in ascending
 * address order.  memmap_overflow sets m->overflow.  Sorts and merges both
 * tables (rr_memmap_normalize) first.
 */
void rr_memmap_apply_cmdline(struct rr_memmap *m, const struct rr_cmdline *c);

struct rr_select_params {
	uint64_t size;        /* in-memory size of the kernel, bytes */
	uint64_t min_addr;    /* RERAND_MIN_PHYS normally */
	uint64_t max_addr;    /* exclusive upper bound for the end of the kernel */
	uint64_t align;       /* RERAND_SLOT_ALIGN */
};

/* Number of physical slots: aligned addresses a >= min_addr with
 * [a, a + size) inside one merged RAM range, clear of every avoided range,
 * and a + size <= max_addr.  Exact, no sampling.  0 when m->overflow is set,
 * when size is 0, or when align is not a power of two.  O(n) in the table
 * sizes when each table is in start order (rr_memmap_normalize or
 * rr_memmap_apply_cmdline leave them so), O(n^2) otherwise; never in the
 * number of slots.  No scratch memory: m is only read. */
uint64_t rr_phys_slot_count(const struct rr_memmap *m, const struct rr_select_params *p);

/* The index-th slot in ascending address order; -1 if index >= count. */
int rr_phys_slot_at(const struct rr_memmap *m, const struct rr_select_params *p,
		    uint64_t index, uint64_t *ret_addr);

/* Virtual offsets: 2 MiB steps in [16 MiB, 1 GiB - round_up(size, 2 MiB)]. */
uint64_t rr_virt_slot_count(uint64_t size);
uint64_t rr_virt_slot_at(uint64_t index);

#endif
