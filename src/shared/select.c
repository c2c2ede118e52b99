/* SPDX-License-Identifier: GPL-2.0-only */
/* Memory-map bookkeeping and exact slot counting for the base selection.
 * Built into the stage and the hosted library: no allocation, no globals. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rerand/abi.h"
#include "select.h"
#include "util.h"

#define GIB (1ULL << 30)

void rr_memmap_init(struct rr_memmap *m)
{
	rr_memset(m, 0, sizeof(*m));
}

/* Insertion sort by start, then merge overlapping and touching ranges;
 * empty ranges disappear.  Returns the new count.  In place: the tables are
 * too big for the stage's stack. */
static unsigned ranges_normalize(struct rr_range *r, unsigned n)
{
	unsigned i, j, out;

	for (i = 1; i < n; i++) {
		struct rr_range x = r[i];
		for (j = i; j > 0 && (r[j - 1].start > x.start ||
				      (r[j - 1].start == x.start && r[j - 1].end > x.end)); j--)
			r[j] = r[j - 1];
		r[j] = x;
	}
	out = 0;
	for (i = 0; i < n; i++) {
		if (r[i].start >= r[i].end)
			continue;
		if (out > 0 && r[i].start <= r[out - 1].end) {
			if (r[i].end > r[out - 1].end)
				r[out - 1].end = r[i].end;
			continue;
		}
		r[out++] = r[i];
	}
	return out;
}

void rr_memmap_normalize(struct rr_memmap *m)
{
	if (m->nr_ram > RR_MAX_RAM)
		m->nr_ram = RR_MAX_RAM;
	if (m->nr_avoid > RR_MAX_AVOID)
		m->nr_avoid = RR_MAX_AVOID;
	m->nr_ram = ranges_normalize(m->ram, m->nr_ram);
	m->nr_avoid = ranges_normalize(m->avoid, m->nr_avoid);
}

void rr_memmap_add_ram(struct rr_memmap *m, uint64_t start, uint64_t end)
{
	if (start >= end)
		return;
	if (m->nr_ram >= RR_MAX_RAM) {
		/* Firmware maps often list many adjacent pieces: merge first. */
		m->nr_ram = ranges_normalize(m->ram, m->nr_ram > RR_MAX_RAM ? RR_MAX_RAM : m->nr_ram);
		if (m->nr_ram >= RR_MAX_RAM) {
			m->ram_dropped = true;
			return;
		}
	}
	m->ram[m->nr_ram].start = start;
	m->ram[m->nr_ram].end = end;
	m->nr_ram++;
}

void rr_memmap_add_avoid(struct rr_memmap *m, uint64_t start, uint64_t end)
{
	if (start >= end)
		return;
	if (m->nr_avoid >= RR_MAX_AVOID) {
		m->nr_avoid = ranges_normalize(m->avoid,
					       m->nr_avoid > RR_MAX_AVOID ? RR_MAX_AVOID : m->nr_avoid);
		if (m->nr_avoid >= RR_MAX_AVOID) {
			/* Forgetting a range could put the kernel on top of it. */
			m->overflow = true;
			return;
		}
	}
	m->avoid[m->nr_avoid].start = start;
	m->avoid[m->nr_avoid].end = end;
	m->nr_avoid++;
}

/*
 * Reserve the lowest `count` 1 GiB aligned gigabytes lying wholly in RAM, so
 * that hugetlbfs still finds its gigantic pages after the kernel is placed
 * (process_gb_huge_pages in kaslr.c).  The decompressor counts them per
 * e820 entry in table order, after cutting out avoided ranges, and needs
 * strictly more than 1 GiB after alignment; here merged RAM is walked in
 * address order and an exact gigabyte counts: the same or more reserved.
 */
static void avoid_gb_pages(struct rr_memmap *m, uint64_t count)
{
	unsigned i, n = m->nr_ram;

	for (i = 0; i < n && count > 0; i++) {
		uint64_t s = m->ram[i].start, e = m->ram[i].end, chunks, take;

		if (s > UINT64_MAX - (GIB - 1))
			break;
		s = RR_ALIGN_UP(s, GIB);
		e = RR_ALIGN_DOWN(e, GIB);
		if (e <= s)
			continue;
		chunks = (e - s) >> 30;
		take = chunks < count ? chunks : count;
		rr_memmap_add_avoid(m, s, s + (take << 30));
		count -= take;
	}
}

void rr_memmap_apply_cmdline(struct rr_memmap *m, const struct rr_cmdline *c)
{
	unsigned i, out;

	rr_memmap_normalize(m);
	if (c->mem_limit) {
		for (i = 0, out = 0; i < m->nr_ram; i++) {
			if (m->ram[i].start >= c->mem_limit)
				continue;
			m->ram[out] = m->ram[i];
			if (m->ram[out].end > c->mem_limit)
				m->ram[out].end = c->mem_limit;
			out++;
		}
		m->nr_ram = out;
	}
	for (i = 0; i < c->nr_memmap && i < RR_MAX_MEMMAP; i++)
		rr_memmap_add_avoid(m, c->memmap[i].start, c->memmap[i].end);
	if (c->memmap_overflow)
		m->overflow = true;
	if (c->has_elfcorehdr)
		rr_memmap_add_avoid(m, c->elfcorehdr.start, c->elfcorehdr.end);
	if (c->hugepages_1g)
		avoid_gb_pages(m, c->hugepages_1g);
}

/*
 * Walking a table in ascending (start, index) order without sorting it (the
 * slot functions must not modify a const map nor copy it to the stack).
 * A table already in start order, which is what rr_memmap_apply_cmdline
 * leaves and what firmware gives, is walked in index order: the same
 * sequence, in O(n).  Otherwise each step is a linear scan for the smallest
 * key above the previous one: O(n^2), for tables nobody normalized.
 */
struct sorted_iter {
	const struct rr_range *r;
	unsigned n;
	bool started;
	bool in_order;              /* starts never decrease: index order is the order */
	uint64_t key_start;
	unsigned key_idx;
};

static void sorted_init(struct sorted_iter *it)
{
	it->in_order = true;
	for (unsigned i = 1; i < it->n; i++)
		if (it->r[i].start < it->r[i - 1].start) {
			it->in_order = false;
			break;
		}
}

static bool sorted_next(struct sorted_iter *it, struct rr_range *out)
{
	unsigned i, best = 0;
	bool found = false;

	if (it->in_order) {
		/* Ties on start go by index in both walks: the next non-empty
		 * range after the previous index is the next key. */
		for (i = it->started ? it->key_idx + 1 : 0; i < it->n; i++)
			if (it->r[i].start < it->r[i].end) {
				best = i;
				found = true;
				break;
			}
	} else {
		for (i = 0; i < it->n; i++) {
			const struct rr_range *x = &it->r[i];

			if (x->start >= x->end)
				continue;
			if (it->started && (x->start < it->key_start ||
					    (x->start == it->key_start && i <= it->key_idx)))
				continue;
			if (!found || x->start < it->r[best].start) {
				best = i;
				found = true;
			}
		}
	}
	if (!found)
		return false;
	it->started = true;
	it->key_start = it->r[best].start;
	it->key_idx = best;
	*out = it->r[best];
	return true;
}

/* Merged RAM ranges in ascending order: a sorted walk with one lookahead. */
struct merged_iter {
	struct sorted_iter s;
	bool have_pending;
	struct rr_range pending;
};

static bool merged_next(struct merged_iter *it, struct rr_range *out)
{
	struct rr_range cur, nx;

	if (it->have_pending) {
		cur = it->pending;
		it->have_pending = false;
	} else if (!sorted_next(&it->s, &cur)) {
		return false;
	}
	while (sorted_next(&it->s, &nx)) {
		if (nx.start > cur.end) {
			it->pending = nx;
			it->have_pending = true;
			break;
		}
		if (nx.end > cur.end)
			cur.end = nx.end;
	}
	*out = cur;
	return true;
}

static unsigned ilog2_u64(uint64_t x)
{
	unsigned n = 0;

	while (x >>= 1)
		n++;
	return n;
}

/* Slots in a free interval [s, e): aligned a with s <= a and a + size <= e. */
static uint64_t interval_slots(uint64_t s, uint64_t e, uint64_t size, uint64_t align,
			       unsigned shift, uint64_t *first)
{
	uint64_t a, last;

	if (s > UINT64_MAX - (align - 1) || e < size)
		return 0;
	a = RR_ALIGN_UP(s, align);
	last = RR_ALIGN_DOWN(e - size, align);
	if (last < a)
		return 0;
	*first = a;
	return ((last - a) >> shift) + 1;
}

/*
 * The one sweep behind count and slot_at: merged RAM ranges clipped to
 * [min_addr, max_addr) minus the avoided ranges, in ascending order.  With
 * want_index set, stops at slot `index` and stores its address.
 */
static uint64_t slot_walk(const struct rr_memmap *m, const struct rr_select_params *p,
			  bool want_index, uint64_t index, uint64_t *ret_addr, bool *found)
{
	struct merged_iter ram = { .s = { .r = m->ram, .n = m->nr_ram } };
	struct sorted_iter av_it = { .r = m->avoid, .n = m->nr_avoid };
	struct rr_range r, av;
	uint64_t total = 0, align = p->align, size = p->size;
	unsigned shift;
	bool has_av;

	*found = false;
	if (m->overflow || size == 0 || align == 0 || (align & (align - 1)))
		return 0;
	if (ram.s.n > RR_MAX_RAM)
		ram.s.n = RR_MAX_RAM;
	if (av_it.n > RR_MAX_AVOID)
		av_it.n = RR_MAX_AVOID;
	shift = ilog2_u64(align);
	sorted_init(&ram.s);
	sorted_init(&av_it);
	has_av = sorted_next(&av_it, &av);

	while (merged_next(&ram, &r)) {
		uint64_t cur = r.start > p->min_addr ? r.start : p->min_addr;
		uint64_t end = r.end < p->max_addr ? r.end : p->max_addr;

		while (cur < end) {
			uint64_t fs = cur, fe, n, first = 0;

			/* Avoid ranges come in start order; those ending at or
			 * before cur can never matter again (cur only grows). */
			while (has_av && av.end <= cur)
				has_av = sorted_next(&av_it, &av);
			if (!has_av || av.start >= end) {
				fe = end;
				cur = end;
			} else if (av.start > cur) {
				fe = av.start;
				cur = av.end;
			} else {
				cur = av.end;
				continue;
			}
			n = interval_slots(fs, fe, size, align, shift, &first);
			if (want_index && index < n) {
				*ret_addr = first + (index << shift);
				*found = true;
				return total + index;
			}
			if (want_index)
				index -= n;
			total += n;
		}
	}
	return total;
}

uint64_t rr_phys_slot_count(const struct rr_memmap *m, const struct rr_select_params *p)
{
	bool found;

	return slot_walk(m, p, false, 0, NULL, &found);
}

int rr_phys_slot_at(const struct rr_memmap *m, const struct rr_select_params *p,
		    uint64_t index, uint64_t *ret_addr)
{
	uint64_t addr = 0;
	bool found;

	slot_walk(m, p, true, index, &addr, &found);
	if (!found)
		return -1;
	*ret_addr = addr;
	return 0;
}

/* Same rule as find_random_virt_addr(): the image must end below
 * KERNEL_IMAGE_SIZE and start at or above LOAD_PHYSICAL_ADDR. */
uint64_t rr_virt_slot_count(uint64_t size)
{
	uint64_t rounded;

	if (size > RERAND_KERNEL_IMAGE_SIZE)
		return 0;
	rounded = RR_ALIGN_UP(size, RERAND_SLOT_ALIGN);
	if (rounded + RERAND_LOAD_PHYSICAL_ADDR > RERAND_KERNEL_IMAGE_SIZE)
		return 0;
	return (RERAND_KERNEL_IMAGE_SIZE - rounded - RERAND_LOAD_PHYSICAL_ADDR) /
		RERAND_SLOT_ALIGN + 1;
}

uint64_t rr_virt_slot_at(uint64_t index)
{
	return RERAND_LOAD_PHYSICAL_ADDR + index * RERAND_SLOT_ALIGN;
}
