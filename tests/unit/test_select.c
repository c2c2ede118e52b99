/* SPDX-License-Identifier: GPL-2.0-only */
/* Slot counting and lookup checked against a naive scan of every aligned
 * address, on realistic and random memory maps; command-line application. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rerand/abi.h"
#include "select.h"
#include "test.h"

#define KIB (1ULL << 10)
#define MIB (1ULL << 20)
#define GIB (1ULL << 30)

static struct rr_memmap *new_map(void)
{
	struct rr_memmap *m = malloc(sizeof(*m));

	if (!m)
		abort();
	rr_memmap_init(m);
	return m;
}

/* [a, b) covered by the union of RAM ranges, found by hopping from range
 * to range: independent of the sweep in select.c. */
static int naive_covered(const struct rr_memmap *m, uint64_t a, uint64_t b)
{
	uint64_t x = a;

	while (x < b) {
		uint64_t best = x;
		for (unsigned i = 0; i < m->nr_ram; i++)
			if (m->ram[i].start <= x && x < m->ram[i].end && m->ram[i].end > best)
				best = m->ram[i].end;
		if (best == x)
			return 0;
		x = best;
	}
	return 1;
}

static int naive_ok(const struct rr_memmap *m, const struct rr_select_params *p, uint64_t a)
{
	if (a % p->align || a < p->min_addr || a > UINT64_MAX - p->size || a + p->size > p->max_addr)
		return 0;
	if (!naive_covered(m, a, a + p->size))
		return 0;
	for (unsigned i = 0; i < m->nr_avoid; i++) {
		const struct rr_range *v = &m->avoid[i];
		if (v->start < v->end && v->start < a + p->size && a < v->end)
			return 0;
	}
	return 1;
}

/* Scan every aligned address in [lo, hi] (hi inclusive, so windows can end
 * at the top of the address space) and compare with count and slot_at.
 * Returns the naive count; all RAM must lie inside the window. */
static uint64_t cross_check(const char *name, const struct rr_memmap *m,
			    const struct rr_select_params *p, uint64_t lo, uint64_t hi)
{
	uint64_t count = rr_phys_slot_count(m, p), idx = 0, addr;
	int mismatch = 0;

	for (uint64_t a = lo;; a += p->align) {
		if (naive_ok(m, p, a)) {
			if (rr_phys_slot_at(m, p, idx, &addr) != 0 || addr != a) {
				if (!mismatch)
					printf("# %s: slot %llu: naive %#llx\n", name,
					       (unsigned long long)idx, (unsigned long long)a);
				mismatch++;
			}
			idx++;
		}
		if (a > hi - p->align || a > UINT64_MAX - p->align)
			break;
	}
	T_EQ_U64(count, idx, "%s: slot count matches the naive scan", name);
	T_OK(mismatch == 0, "%s: every slot_at matches the naive scan in order", name);
	T_OK(rr_phys_slot_at(m, p, count, &addr) == -1, "%s: slot_at(count) is -1", name);
	return idx;
}

static struct rr_select_params params(uint64_t size)
{
	struct rr_select_params p = {
		.size = size, .min_addr = RERAND_MIN_PHYS,
		.max_addr = RERAND_MAX_PHYS_4LEVEL, .align = RERAND_SLOT_ALIGN,
	};
	return p;
}

/* SeaBIOS e820 for `-m 1G` on the pc machine. */
static void qemu_1g(struct rr_memmap *m)
{
	rr_memmap_add_ram(m, 0, 0x9fc00);
	rr_memmap_add_ram(m, 0x100000, 0x3ffe0000);
}

static void test_qemu_1g(void)
{
	struct rr_memmap *m = new_map();
	struct rr_select_params p = params(30 * MIB);

	qemu_1g(m);
	rr_memmap_add_avoid(m, 0x8c000, 0x8d000);            /* boot_params */
	rr_memmap_add_avoid(m, 0x20000, 0x20800);            /* cmdline */
	rr_memmap_add_avoid(m, 0x3f000000, 0x3fd00000);      /* initrd */
	uint64_t n = cross_check("qemu 1G", m, &p, 0, 2 * GIB);
	/* By hand: [16M, 1008M) holds starts 16M..978M step 2M; the piece
	 * above the initrd is 3 MiB long, too short. */
	T_EQ_U64(n, 482, "qemu 1G: 482 slots for a 30 MiB kernel");
	uint64_t a = 0;
	T_OK(rr_phys_slot_at(m, &p, 0, &a) == 0 && a == 16 * MIB, "qemu 1G: first slot is 16 MiB");
	T_OK(rr_phys_slot_at(m, &p, 481, &a) == 0 && a == 978 * MIB, "qemu 1G: last slot is 978 MiB");
	for (uint64_t sz = 1; sz <= 80 * MIB; sz += 7 * MIB + 12345) {
		p.size = sz;
		cross_check("qemu 1G varying size", m, &p, 0, 2 * GIB);
	}
	free(m);
}

/* q35 with 3 GiB: 2 GiB below the PCI hole, the rest above 4 GiB. */
static void test_qemu_3g(void)
{
	struct rr_memmap *m = new_map();
	struct rr_select_params p = params(46 * MIB);

	rr_memmap_add_ram(m, 0, 0x9fc00);
	rr_memmap_add_ram(m, 0x100000, 0x7ffe0000);
	rr_memmap_add_ram(m, 0x100000000ULL, 0x140000000ULL);
	rr_memmap_add_avoid(m, 0x7f000000, 0x7fd00000);
	uint64_t n = cross_check("qemu 3G", m, &p, 0, 8 * GIB);
	/* By hand: below, [16M, 2032M) up to the initrd holds starts
	 * 16M..1986M -> 986 slots (the 13 MiB above the initrd is too short);
	 * above, [4G, 5G) holds offsets 0..978M -> 490 slots. */
	T_EQ_U64(n, 986 + 490, "qemu 3G: slots below and above the PCI hole");
	p.max_addr = 4 * GIB;
	T_EQ_U64(cross_check("qemu 3G below 4G", m, &p, 0, 8 * GIB), 986,
		 "qemu 3G: max_addr 4G keeps only the low part");
	free(m);
}

/* 64 GiB with holes every few GiB, split e820 entries that touch, and a
 * sprinkle of avoided ranges. */
static void test_64g(void)
{
	struct rr_memmap *m = new_map();
	struct rr_select_params p = params(60 * MIB);
	uint64_t a = 0;

	srand(7);
	qemu_1g(m);
	for (a = 4 * GIB; a < 64 * GIB;) {
		uint64_t len = (uint64_t)(rand() % 3000 + 1) * MIB + (uint64_t)(rand() % 4096) * 4096;
		rr_memmap_add_ram(m, a, a + len);
		/* sometimes a touching piece, sometimes a hole */
		a += len + (rand() % 2 ? 0 : (uint64_t)(rand() % 300) * MIB + 4096);
	}
	for (int i = 0; i < 40; i++) {
		uint64_t s = (uint64_t)rand() * 4096 % (64 * GIB);
		rr_memmap_add_avoid(m, s, s + (uint64_t)(rand() % 100000) * 4096);
	}
	cross_check("64G many holes", m, &p, 0, 70 * GIB);
	p.size = 2 * MIB;
	cross_check("64G many holes, 2 MiB kernel", m, &p, 0, 70 * GIB);
	free(m);
}

/* A kdump kernel sees only its crashkernel= reservation (plus low 640K). */
static void test_crash(void)
{
	struct rr_memmap *m = new_map();
	struct rr_select_params p = params(46 * MIB);

	rr_memmap_add_ram(m, 0x1000, 0x9f000);
	rr_memmap_add_ram(m, 0x6f000000, 0x7f000000);
	rr_memmap_add_avoid(m, 0x7eff0000, 0x7f000000);      /* elfcorehdr */
	uint64_t n = cross_check("crash 256M", m, &p, 0, 4 * GIB);
	/* [0x6f000000, 0x7eff0000): starts 0x6f000000 .. 0x7e800000 - 46M */
	T_EQ_U64(n, (0x7ee00000ULL - 46 * MIB - 0x6f000000ULL) / (2 * MIB) + 1,
		 "crash 256M: slots below the core header");
	free(m);
}

static void test_avoid_shapes(void)
{
	struct rr_memmap *m = new_map();
	struct rr_select_params p = params(8 * MIB);

	rr_memmap_add_ram(m, 0, 4 * GIB);
	/* unsorted, overlapping, nested, touching, duplicated, unaligned */
	rr_memmap_add_avoid(m, 3 * GIB, 3 * GIB + 5 * MIB);
	rr_memmap_add_avoid(m, 100 * MIB, 200 * MIB);
	rr_memmap_add_avoid(m, 150 * MIB, 250 * MIB + 1);
	rr_memmap_add_avoid(m, 120 * MIB, 130 * MIB);
	rr_memmap_add_avoid(m, 250 * MIB + 1, 260 * MIB);
	rr_memmap_add_avoid(m, 3 * GIB, 3 * GIB + 5 * MIB);
	rr_memmap_add_avoid(m, 40 * MIB + 4095, 40 * MIB + 4096);
	rr_memmap_add_avoid(m, 2 * GIB - 1, 2 * GIB);
	rr_memmap_add_avoid(m, 2 * GIB, 2 * GIB + 1);
	rr_memmap_add_avoid(m, 0, 17 * MIB);
	rr_memmap_add_avoid(m, 5 * GIB, 6 * GIB);            /* outside RAM */
	cross_check("avoid shapes", m, &p, 0, 8 * GIB);

	/* A slot may end exactly where an avoided range begins and start
	 * exactly where one ends. */
	struct rr_memmap *t = new_map();
	rr_memmap_add_ram(t, 0, 1 * GIB);
	rr_memmap_add_avoid(t, 0, 32 * MIB);
	rr_memmap_add_avoid(t, 40 * MIB, 1 * GIB);
	T_EQ_U64(rr_phys_slot_count(t, &p), 1, "touching: exactly one 8 MiB slot in [32M, 40M)");
	uint64_t a = 0;
	T_OK(rr_phys_slot_at(t, &p, 0, &a) == 0 && a == 32 * MIB, "touching: the slot is at 32 MiB");
	rr_memmap_add_avoid(t, 40 * MIB - 1, 40 * MIB);
	T_EQ_U64(rr_phys_slot_count(t, &p), 0, "touching: one byte more avoided leaves no slot");

	/* Split RAM entries that touch form one range; a gap of one byte
	 * does not. */
	rr_memmap_init(t);
	rr_memmap_add_ram(t, 20 * MIB, 26 * MIB);
	rr_memmap_add_ram(t, 16 * MIB, 20 * MIB);
	T_EQ_U64(rr_phys_slot_count(t, &p), 2, "merged RAM: 8 MiB slots at 16M and 18M span two touching entries");
	rr_memmap_init(t);
	rr_memmap_add_ram(t, 16 * MIB, 20 * MIB);
	rr_memmap_add_ram(t, 20 * MIB + 1, 26 * MIB);
	T_EQ_U64(rr_phys_slot_count(t, &p), 0, "merged RAM: a one-byte gap splits the range");
	free(t);
	free(m);
}

static void test_edges(void)
{
	struct rr_memmap *m = new_map();
	struct rr_select_params p = params(4 * MIB);

	rr_memmap_add_ram(m, 0, 1 * GIB);
	p.min_addr = 17 * MIB + 1;
	T_OK(rr_phys_slot_at(m, &p, 0, &(uint64_t){0}) == 0, "edges: a slot exists");
	uint64_t a = 0;
	rr_phys_slot_at(m, &p, 0, &a);
	T_EQ_U64(a, 18 * MIB, "edges: unaligned min_addr rounds up to the next slot");
	cross_check("edges: unaligned min", m, &p, 0, 2 * GIB);
	p.min_addr = 16 * MIB;
	p.max_addr = 100 * MIB;
	cross_check("edges: max_addr", m, &p, 0, 2 * GIB);
	T_OK(rr_phys_slot_at(m, &p, rr_phys_slot_count(m, &p) - 1, &a) == 0 && a + p.size == 100 * MIB,
	     "edges: the last slot ends exactly at max_addr");
	p.max_addr = 100 * MIB - 1;
	T_OK(rr_phys_slot_at(m, &p, rr_phys_slot_count(m, &p) - 1, &a) == 0 && a + p.size == 98 * MIB,
	     "edges: max_addr one byte lower drops that slot");
	p.max_addr = 10 * MIB;
	T_EQ_U64(rr_phys_slot_count(m, &p), 0, "edges: max below min gives no slot");
	p.max_addr = RERAND_MAX_PHYS_4LEVEL;
	p.size = 1 * GIB;
	T_EQ_U64(rr_phys_slot_count(m, &p), 0, "edges: kernel larger than RAM above min: no slot");
	p.size = 0;
	T_EQ_U64(rr_phys_slot_count(m, &p), 0, "edges: size 0 gives no slot");
	p.size = 4 * MIB;
	p.align = 3 * MIB;
	T_EQ_U64(rr_phys_slot_count(m, &p), 0, "edges: a non-power-of-two alignment gives no slot");
	p.align = 4096;
	p.max_addr = 40 * MIB;
	cross_check("edges: 4 KiB alignment", m, &p, 15 * MIB, 40 * MIB + 4096);
	free(m);
}

/* Ranges touching 2^64: no overflow in rounding or in a + size. */
static void test_top(void)
{
	struct rr_memmap *m = new_map();
	struct rr_select_params p = params(6 * MIB);
	const uint64_t top = UINT64_MAX;

	p.max_addr = UINT64_MAX;
	rr_memmap_add_ram(m, top - 1 * GIB + 1, top);
	rr_memmap_add_ram(m, top - 4 * GIB + 12345, top - 3 * GIB);
	rr_memmap_add_avoid(m, top - 512 * MIB, top - 500 * MIB);
	rr_memmap_add_avoid(m, top - 10, top);
	uint64_t n = cross_check("top of address space", m, &p, top - 8 * GIB + 1, top);
	T_OK(n > 0, "top of address space: slots exist");
	p.min_addr = top - 3 * MIB;
	T_EQ_U64(rr_phys_slot_count(m, &p), 0, "top: min_addr within the last slot rounds past 2^64 safely");
	p.min_addr = top - 1 * MIB;
	T_EQ_U64(rr_phys_slot_count(m, &p), 0, "top: a free piece above the last aligned address: rounding must not wrap");
	p.min_addr = UINT64_MAX;
	T_EQ_U64(rr_phys_slot_count(m, &p), 0, "top: min_addr 2^64-1 gives no slot");
	p.min_addr = 0;
	p.size = UINT64_MAX;
	T_EQ_U64(rr_phys_slot_count(m, &p), 0, "top: size 2^64-1 gives no slot");
	free(m);
}

/* Every slot_at against the naive scan of [0, 6 GiB); bad counts mismatches. */
static int check_all_slots(const struct rr_memmap *m, const struct rr_select_params *p)
{
	uint64_t count = rr_phys_slot_count(m, p), idx = 0, addr;
	int bad = 0;

	for (uint64_t a = 0; a < 6 * GIB; a += p->align) {
		if (!naive_ok(m, p, a))
			continue;
		if (rr_phys_slot_at(m, p, idx, &addr) != 0 || addr != a)
			bad++;
		idx++;
	}
	if (idx != count || rr_phys_slot_at(m, p, count, &addr) != -1)
		bad++;
	return bad;
}

/* Stable insertion sort by start only: overlaps, nesting, duplicates and
 * ties stay, so the in-order walk (not the merge) is what gets tested. */
static void sort_by_start(struct rr_range *r, unsigned n)
{
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i; j > 0 && r[j - 1].start > r[j].start; j--) {
			struct rr_range t = r[j];
			r[j] = r[j - 1];
			r[j - 1] = t;
		}
}

static void test_random_maps(void)
{
	struct rr_memmap *m = new_map();
	int bad = 0, bad_sorted = 0, bad_norm = 0, in_order = 0;
	unsigned seed = 12345;

	for (int it = 0; it < 300; it++) {
		struct rr_select_params p = params((uint64_t)(rand_r(&seed) % 64 + 1) * MIB +
						   (uint64_t)(rand_r(&seed) % 3) * 4096);
		rr_memmap_init(m);
		int nr = rand_r(&seed) % 20 + 1, na = rand_r(&seed) % 30;
		for (int i = 0; i < nr; i++) {
			uint64_t s = (uint64_t)(rand_r(&seed) % 4096) * MIB + (uint64_t)(rand_r(&seed) % 512) * 4096;
			rr_memmap_add_ram(m, s, s + (uint64_t)(rand_r(&seed) % 1024 + 1) * MIB);
		}
		for (int i = 0; i < na; i++) {
			uint64_t s = (uint64_t)(rand_r(&seed) % 5000) * MIB + (uint64_t)(rand_r(&seed) % 512) * 4096;
			rr_memmap_add_avoid(m, s, s + (uint64_t)(rand_r(&seed) % 64) * MIB + 1);
		}
		p.min_addr = (uint64_t)(rand_r(&seed) % 64) * MIB + (rand_r(&seed) % 2 ? 4096 : 0);
		p.max_addr = rand_r(&seed) % 4 ? 8 * GIB : (uint64_t)(rand_r(&seed) % 5000) * MIB;
		/* As given (mostly out of order: the scanning walk). */
		uint64_t count = rr_phys_slot_count(m, &p);
		bad += check_all_slots(m, &p);
		/* In start order but unmerged, with an emptied range now and
		 * then: the in-order walk, same answers. */
		sort_by_start(m->ram, m->nr_ram);
		sort_by_start(m->avoid, m->nr_avoid);
		if (it % 3 == 0 && m->nr_avoid > 1)
			m->avoid[rand_r(&seed) % m->nr_avoid].end = 0;  /* empty: ignored by both */
		if (rr_phys_slot_count(m, &p) != count && !(it % 3 == 0 && m->nr_avoid > 1))
			bad_sorted++;
		bad_sorted += check_all_slots(m, &p);
		in_order += m->nr_ram > 1 || m->nr_avoid > 1;
		/* Normalized: merged too. */
		rr_memmap_normalize(m);
		bad_norm += check_all_slots(m, &p);
	}
	T_OK(bad == 0, "300 random maps as given: count and every slot_at agree with the naive scan");
	T_OK(bad_sorted == 0 && in_order > 200,
	     "the same %d maps in start order, unmerged, some with an empty range: same answers", in_order);
	T_OK(bad_norm == 0, "the same maps normalized: count and every slot_at agree with the naive scan");
	free(m);
}

static void test_tables(void)
{
	struct rr_memmap *m = new_map();
	struct rr_select_params p = params(2 * MIB);

	for (unsigned i = 0; i < 3 * RR_MAX_RAM; i++)
		rr_memmap_add_ram(m, 16 * MIB + i * 4096, 16 * MIB + (i + 1) * 4096);
	T_OK(!m->ram_dropped && !m->overflow, "tables: %u touching RAM pieces fit after merging",
	     3 * RR_MAX_RAM);
	/* 3 * RR_MAX_RAM pages from 16 MiB up: one range, whole 2 MiB slots in it. */
	T_EQ_U64(rr_phys_slot_count(m, &p), (3ULL * RR_MAX_RAM * 4096) / (2 * MIB),
		 "tables: merged pieces give one 2 MiB slot per 2 MiB of their %u KiB", 3 * RR_MAX_RAM * 4);
	rr_memmap_init(m);
	for (unsigned i = 0; i < RR_MAX_RAM + 5; i++)
		rr_memmap_add_ram(m, (uint64_t)i * 64 * MIB, (uint64_t)i * 64 * MIB + 32 * MIB);
	T_OK(m->ram_dropped && !m->overflow && m->nr_ram == RR_MAX_RAM,
	     "tables: disjoint RAM beyond the table is dropped without refusing");
	for (unsigned i = 0; i < RR_MAX_AVOID; i++)
		rr_memmap_add_avoid(m, (uint64_t)i * 8 * GIB, (uint64_t)i * 8 * GIB + 1);
	T_OK(!m->overflow && rr_phys_slot_count(m, &p) > 0, "tables: a full avoid table still counts");
	rr_memmap_add_avoid(m, 1 * GIB, 1 * GIB + 1);
	T_OK(m->overflow, "tables: one more disjoint avoid range sets overflow");
	uint64_t a;
	T_EQ_U64(rr_phys_slot_count(m, &p), 0, "tables: overflow means no physical slot");
	T_OK(rr_phys_slot_at(m, &p, 0, &a) == -1, "tables: overflow: slot_at fails");
	free(m);
}

static void test_apply(void)
{
	struct rr_memmap *m = new_map();
	struct rr_select_params p = params(30 * MIB);
	struct rr_cmdline c;
	const char *cl;
	uint64_t a;

	/* mem= clips RAM */
	cl = "console=ttyS0 mem=512M";
	rr_cmdline_parse(cl, strlen(cl), &c);
	qemu_1g(m);
	rr_memmap_apply_cmdline(m, &c);
	T_EQ_U64(rr_phys_slot_count(m, &p), (512 - 30 - 16) / 2 + 1, "apply: mem=512M clips RAM");
	cross_check("apply mem=512M", m, &p, 0, 2 * GIB);

	/* memmap= avoid */
	rr_memmap_init(m);
	cl = "memmap=100M$200M memmap=1M!0x30000000";
	rr_cmdline_parse(cl, strlen(cl), &c);
	qemu_1g(m);
	rr_memmap_apply_cmdline(m, &c);
	cross_check("apply memmap", m, &p, 0, 2 * GIB);
	int hit = 0;
	for (uint64_t i = 0; rr_phys_slot_at(m, &p, i, &a) == 0; i++)
		if ((a < 300 * MIB && a + p.size > 200 * MIB) ||
		    (a < 0x30100000ULL && a + p.size > 0x30000000ULL))
			hit++;
	T_OK(hit == 0, "apply: no slot overlaps a memmap= region");

	/* five memmap regions: refuse */
	rr_memmap_init(m);
	cl = "memmap=1M$100M,1M$200M,1M$300M,1M$400M,1M$500M";
	rr_cmdline_parse(cl, strlen(cl), &c);
	qemu_1g(m);
	rr_memmap_apply_cmdline(m, &c);
	T_EQ_U64(rr_phys_slot_count(m, &p), 0, "apply: five memmap regions refuse physical randomization");

	/* hugepages on 3G q35 + 4G above: lowest two whole gigabytes */
	rr_memmap_init(m);
	cl = "hugepagesz=1G hugepages=2";
	rr_cmdline_parse(cl, strlen(cl), &c);
	rr_memmap_add_ram(m, 0x100000, 0x7ffe0000);
	rr_memmap_add_ram(m, 0x100000000ULL, 0x200000000ULL);
	rr_memmap_apply_cmdline(m, &c);
	cross_check("apply hugepages", m, &p, 0, 16 * GIB);
	/* [1M, 2G-128K): only [1G, 2G) is not whole; so the chunks are
	 * [4G, 5G) and [5G, 6G). */
	struct rr_memmap *ref = new_map();
	rr_memmap_add_ram(ref, 0x100000, 0x7ffe0000);
	rr_memmap_add_ram(ref, 0x100000000ULL, 0x200000000ULL);
	rr_memmap_add_avoid(ref, 4 * GIB, 6 * GIB);
	T_EQ_U64(rr_phys_slot_count(m, &p), rr_phys_slot_count(ref, &p),
		 "apply: hugepages=2 reserves [4G, 6G) (first whole 1 GiB chunks)");
	free(ref);

	/* elfcorehdr without size avoids 1 MiB */
	rr_memmap_init(m);
	cl = "elfcorehdr=0x20000000";
	rr_cmdline_parse(cl, strlen(cl), &c);
	qemu_1g(m);
	rr_memmap_apply_cmdline(m, &c);
	cross_check("apply elfcorehdr", m, &p, 0, 2 * GIB);
	hit = 0;
	for (uint64_t i = 0; rr_phys_slot_at(m, &p, i, &a) == 0; i++)
		if (a < 0x20100000ULL && a + p.size > 0x20000000ULL)
			hit++;
	T_OK(hit == 0, "apply: no slot overlaps the core header");
	free(m);
}

static void test_virt(void)
{
	T_EQ_U64(rr_virt_slot_count(30 * MIB), 490, "virt: 30 MiB -> 490 slots");
	T_EQ_U64(rr_virt_slot_count(46 * MIB), 482, "virt: 46 MiB -> 482 slots");
	T_EQ_U64(rr_virt_slot_count(60 * MIB), 475, "virt: 60 MiB -> 475 slots");
	T_EQ_U64(rr_virt_slot_count(31 * MIB), 489, "virt: 31 MiB rounds up to 32 MiB");
	T_EQ_U64(rr_virt_slot_count(1008 * MIB), 1, "virt: 1008 MiB leaves one slot");
	T_EQ_U64(rr_virt_slot_count(1008 * MIB + 1), 0, "virt: just over 1008 MiB leaves none");
	T_EQ_U64(rr_virt_slot_count(UINT64_MAX), 0, "virt: huge size leaves none");
	T_EQ_U64(rr_virt_slot_at(0), 16 * MIB, "virt: first offset 16 MiB");
	uint64_t n = rr_virt_slot_count(46 * MIB);
	T_OK(rr_virt_slot_at(n - 1) + 46 * MIB <= GIB && rr_virt_slot_at(n) + 46 * MIB > GIB,
	     "virt: the last offset is the highest that fits below 1 GiB");
}

int main(void)
{
	test_qemu_1g();
	test_qemu_3g();
	test_64g();
	test_crash();
	test_avoid_shapes();
	test_edges();
	test_top();
	test_random_maps();
	test_tables();
	test_apply();
	test_virt();
	return t_done();
}
