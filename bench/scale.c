/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `make bench`, scale part: the stage's placement work (src/shared/, the
 * hosted build) on synthetic machines of 1 GiB to 12 TiB of RAM with 10 to
 * 1000 holes and 60 setup_data nodes, to show its cost follows the number
 * of regions and not the number of slots.  Each machine is a fake physical
 * memory the way the stage sees it through its map callback: boot_params
 * with 128 e820 entries, the rest in a SETUP_E820_EXT node as kexec-tools
 * passes them, the command line, an initrd and the nodes.  Timed, in the
 * stage's order: parse boot_params, the command line, avoid the image,
 * apply the command line, count the slots, find the last slot (the longest
 * walk slot_at can make).  Also writes the map as a dmesg e820 table for
 * `rerand entropy --memmap` (bench/scale.sh times that command).
 *
 * Output, one line per machine (TSV): scale SIZE_GIB HOLES nr_ram nr_avoid
 * slots ram_dropped reps median_ns min_ns p99_ns parse_ns count_ns at_ns (medians;
 * p99 rather than max: a loaded machine preempts a few reps for milliseconds)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bootparams.h"
#include "rerand/abi.h"
#include "select.h"
#include "util.h"

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)

#define BP_PHYS     0x10000ULL          /* boot_params */
#define ARENA_PHYS  0x20000ULL          /* command line, setup_data nodes */
#define ARENA_SIZE  (1u << 20)
#define NODES       60
#define NODE_STRIDE 4096                /* one page each: 60 separate ranges */
#define HOLE        (2 * MIB)
#define KERNEL_SIZE (64 * MIB)          /* a distro kernel's in-memory size, rounded */
#define IMAGE_SIZE  (20 * MIB)          /* the rerand image the stage runs from */

struct machine {
	uint8_t bp[RR_BOOT_PARAMS_SIZE];
	uint8_t arena[ARENA_SIZE];
	uint64_t image_at;
};

static void *machine_map(void *ctx, uint64_t phys, uint64_t len)
{
	struct machine *m = ctx;

	if (phys >= BP_PHYS && phys - BP_PHYS <= sizeof(m->bp) && len <= sizeof(m->bp) - (phys - BP_PHYS))
		return m->bp + (phys - BP_PHYS);
	if (phys >= ARENA_PHYS && phys - ARENA_PHYS <= ARENA_SIZE &&
	    len <= ARENA_SIZE - (phys - ARENA_PHYS))
		return m->arena + (phys - ARENA_PHYS);
	return NULL;
}

static void put_e820(uint8_t *p, uint64_t start, uint64_t size)
{
	rr_put64(p, start);
	rr_put64(p + 8, size);
	rr_put32(p + 16, RR_E820_RAM);
}

/* RAM of `size` bytes from 1 MiB up, cut by `holes` 2 MiB holes into equal
 * pieces (4 KiB aligned); the e820 file gets the same table. */
static int machine_build(struct machine *m, uint64_t size, unsigned holes, FILE *e820)
{
	uint64_t piece = RR_ALIGN_DOWN(size / (holes + 1), 4096), at = 1 * MIB;
	uint64_t node = ARENA_PHYS + 4096, prev = 0;
	unsigned n = holes + 1, in_zp = n < RR_E820_MAX_ZEROPAGE ? n : RR_E820_MAX_ZEROPAGE;
	static const char cmdline[] = "console=ttyS0,115200 quiet";
	uint8_t *ext;

	memset(m, 0, sizeof(*m));
	memcpy(m->arena, cmdline, sizeof(cmdline));
	rr_put32(m->bp + RR_BP_CMD_LINE_PTR, (uint32_t)ARENA_PHYS);
	rr_put32(m->bp + RR_BP_CMDLINE_SIZE, 2048);
	m->bp[RR_BP_E820_ENTRIES] = (uint8_t)in_zp;
	/* An initrd of 64 MiB in the middle of RAM, the image above it. */
	rr_put32(m->bp + RR_BP_RAMDISK_IMAGE, (uint32_t)(512 * MIB));
	rr_put32(m->bp + RR_BP_RAMDISK_SIZE, (uint32_t)(64 * MIB));
	m->image_at = RR_ALIGN_DOWN(size / 2, 4096);

	ext = n > in_zp ? m->arena + (node - ARENA_PHYS) + NODES * NODE_STRIDE : NULL;
	if (ext && (size_t)(ext - m->arena) + 16 + (n - in_zp) * 20 > ARENA_SIZE)
		return -E2BIG;
	for (unsigned i = 0; i < n; i++, at += piece + HOLE) {
		uint8_t *p = i < in_zp ? m->bp + RR_BP_E820_TABLE + i * 20 : ext + 16 + (i - in_zp) * 20;

		put_e820(p, at, piece);
		if (e820)
			fprintf(e820, "[    0.000000] BIOS-e820: [mem 0x%016llx-0x%016llx] usable\n",
				(unsigned long long)at, (unsigned long long)(at + piece - 1));
	}
	/* 60 nodes of an unknown type: each one kept clear by the stage. */
	for (unsigned i = 0; i < NODES; i++, node += NODE_STRIDE) {
		uint8_t *h = m->arena + (node - ARENA_PHYS);

		rr_put32(h + 8, 0x100 + i);
		rr_put32(h + 12, 48);
		if (prev)
			rr_put64(m->arena + (prev - ARENA_PHYS), node);
		else
			rr_put64(m->bp + RR_BP_SETUP_DATA, node);
		prev = node;
	}
	if (ext) {
		uint64_t ext_phys = ARENA_PHYS + (uint64_t)(ext - m->arena);

		rr_put32(ext + 8, RR_SETUP_E820_EXT);
		rr_put32(ext + 12, (n - in_zp) * 20);
		rr_put64(m->arena + (prev - ARENA_PHYS), ext_phys);
	}
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct run {
	uint64_t slots, last;
	unsigned nr_ram, nr_avoid;
	bool dropped;
};

/* The stage's placement work, as kexec/stage/stage.c does it. */
static uint64_t select_once(struct machine *mc, struct rr_memmap *mm, struct run *r,
			    uint64_t t[3])
{
	struct rr_bootinfo bi;
	struct rr_cmdline cl;
	struct rr_select_params sp = {
		.size = KERNEL_SIZE, .min_addr = RERAND_MIN_PHYS,
		.max_addr = RERAND_MAX_PHYS_4LEVEL, .align = RERAND_SLOT_ALIGN,
	};
	uint64_t t0 = now_ns(), t1, t2, t3;

	rr_memmap_init(mm);
	if (rr_bootparams_parse(BP_PHYS, machine_map, mc, mm, &bi) < 0)
		return 0;
	rr_cmdline_parse(bi.cmdline ? bi.cmdline : "", bi.cmdline ? bi.cmdline_len : 0, &cl);
	rr_memmap_add_avoid(mm, mc->image_at, mc->image_at + IMAGE_SIZE);
	rr_memmap_apply_cmdline(mm, &cl);
	t1 = now_ns();
	r->slots = rr_phys_slot_count(mm, &sp);
	t2 = now_ns();
	r->last = 0;
	if (r->slots)
		rr_phys_slot_at(mm, &sp, r->slots - 1, &r->last);
	t3 = now_ns();
	r->nr_ram = mm->nr_ram;
	r->nr_avoid = mm->nr_avoid;
	r->dropped = mm->ram_dropped;
	t[0] = t1 - t0;
	t[1] = t2 - t1;
	t[2] = t3 - t2;
	return t3 - t0;
}

int main(int argc, char **argv)
{
	static const uint64_t sizes_gib[] = { 1, 64, 1024, 12 * 1024 };
	static const unsigned holes[] = { 10, 100, 1000 };
	const char *e820_dir = argc > 1 ? argv[1] : NULL;
	unsigned max_reps = argc > 2 ? (unsigned)atoi(argv[2]) : 2000;
	struct machine *mc = malloc(sizeof(*mc));
	struct rr_memmap *mm = malloc(sizeof(*mm));
	uint64_t *tot = calloc(max_reps, 8), *tp = calloc(max_reps, 8), *tc = calloc(max_reps, 8),
		 *ta = calloc(max_reps, 8);

	if (!mc || !mm || !tot || !tp || !tc || !ta || max_reps < 1)
		return 2;
	for (size_t s = 0; s < sizeof(sizes_gib) / sizeof(sizes_gib[0]); s++)
		for (size_t h = 0; h < sizeof(holes) / sizeof(holes[0]); h++) {
			char path[4096];
			FILE *f = NULL;
			struct run r;
			uint64_t t[3], start;
			unsigned reps;

			if (e820_dir) {
				snprintf(path, sizeof(path), "%s/e820-%llu-%u.txt", e820_dir,
					 (unsigned long long)sizes_gib[s], holes[h]);
				f = fopen(path, "w");
				if (!f) {
					fprintf(stderr, "scale: %s: %s\n", path, strerror(errno));
					return 1;
				}
			}
			if (machine_build(mc, sizes_gib[s] * GIB, holes[h], f) < 0) {
				fprintf(stderr, "scale: %llu GiB, %u holes: does not fit the arena\n",
					(unsigned long long)sizes_gib[s], holes[h]);
				return 1;
			}
			if (f && fclose(f)) {
				fprintf(stderr, "scale: %s: write failed\n", path);
				return 1;
			}
			select_once(mc, mm, &r, t);     /* warm-up */
			start = now_ns();
			for (reps = 0; reps < max_reps && (reps < 21 || now_ns() - start < 300000000ull);
			     reps++) {
				tot[reps] = select_once(mc, mm, &r, t);
				tp[reps] = t[0];
				tc[reps] = t[1];
				ta[reps] = t[2];
			}
			qsort(tot, reps, 8, cmp_u64);
			qsort(tp, reps, 8, cmp_u64);
			qsort(tc, reps, 8, cmp_u64);
			qsort(ta, reps, 8, cmp_u64);
			printf("scale\t%llu\t%u\t%u\t%u\t%llu\t%d\t%u\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\n",
			       (unsigned long long)sizes_gib[s], holes[h], r.nr_ram, r.nr_avoid,
			       (unsigned long long)r.slots, r.dropped, reps,
			       (unsigned long long)tot[reps / 2], (unsigned long long)tot[0],
			       (unsigned long long)tot[reps * 99 / 100], (unsigned long long)tp[reps / 2],
			       (unsigned long long)tc[reps / 2], (unsigned long long)ta[reps / 2]);
			fflush(stdout);
		}
	free(tot); free(tp); free(tc); free(ta);
	free(mc);
	free(mm);
	return 0;
}
