/* SPDX-License-Identifier: GPL-2.0-only */
/* rr_bootparams_parse over hand-built machines: e820 (+E820_EXT), EFI maps
 * (conventional, runtime-only, mirrored), setup_data chains, bad chains,
 * SETUP_RNG_SEED nodes, what the chain hands on (IMA's buffer, a DTB, KHO's
 * FDT, scratch table and scratch-only placement, unknown node types). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bootparams.h"
#include "rerand/abi.h"
#include "test.h"

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)

/* A fake machine: a few backed regions of "physical" memory. */
struct region { uint64_t phys, len; uint8_t *buf; };
struct machine { struct region r[8]; int n; int maps; };

static uint8_t *backed(struct machine *mc, uint64_t phys, uint64_t len)
{
	struct region *r = &mc->r[mc->n++];
	r->phys = phys;
	r->len = len;
	r->buf = calloc(1, len);
	return r->buf;
}

static void *fake_map(void *ctx, uint64_t phys, uint64_t len)
{
	struct machine *mc = ctx;

	mc->maps++;
	for (int i = 0; i < mc->n; i++) {
		struct region *r = &mc->r[i];
		if (phys >= r->phys && phys - r->phys <= r->len && len <= r->len - (phys - r->phys))
			return r->buf + (phys - r->phys);
	}
	return NULL;
}

static void machine_free(struct machine *mc)
{
	for (int i = 0; i < mc->n; i++)
		free(mc->r[i].buf);
	memset(mc, 0, sizeof(*mc));
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static void e820_add(uint8_t *bp, uint64_t addr, uint64_t size, uint32_t type)
{
	uint8_t n = bp[RR_BP_E820_ENTRIES];
	uint8_t *e = bp + RR_BP_E820_TABLE + 20 * n;
	put64(e, addr);
	put64(e + 8, size);
	put32(e + 16, type);
	bp[RR_BP_E820_ENTRIES] = (uint8_t)(n + 1);
}

/* SeaBIOS with -m 1G. */
static void seabios_1g(uint8_t *bp)
{
	e820_add(bp, 0, 0x9fc00, 1);
	e820_add(bp, 0x9fc00, 0x400, 2);
	e820_add(bp, 0xf0000, 0x10000, 2);
	e820_add(bp, 0x100000, 0x3fee0000, 1);
	e820_add(bp, 0x3ffe0000, 0x20000, 2);
	e820_add(bp, 0xfeffc000, 0x4000, 2);
	e820_add(bp, 0xfffc0000, 0x40000, 2);
}

static int has_ram(const struct rr_memmap *m, uint64_t s, uint64_t e)
{
	for (unsigned i = 0; i < m->nr_ram; i++)
		if (m->ram[i].start == s && m->ram[i].end == e)
			return 1;
	return 0;
}

static int avoids(const struct rr_memmap *m, uint64_t s, uint64_t e)
{
	for (unsigned i = 0; i < m->nr_avoid; i++)
		if (m->avoid[i].start <= s && e <= m->avoid[i].end)
			return 1;
	return 0;
}

#define BP_PHYS 0x8c000ULL

static struct rr_memmap *map_new(void)
{
	struct rr_memmap *m = malloc(sizeof(*m));
	rr_memmap_init(m);
	return m;
}

static void test_e820(void)
{
	struct machine mc = { 0 };
	struct rr_memmap *m = map_new();
	struct rr_bootinfo bi;
	int rc;
	uint8_t *bp = backed(&mc, BP_PHYS, 4096);
	uint8_t *cl = backed(&mc, 0x20000, 8192);
	const char *line = "console=ttyS0 nokaslr mem=768M";

	seabios_1g(bp);
	strcpy((char *)cl, line);
	put32(bp + RR_BP_CMD_LINE_PTR, 0x20000);
	put32(bp + RR_BP_RAMDISK_IMAGE, 0x3f000000);
	put32(bp + RR_BP_RAMDISK_SIZE, 0xd00000);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0, "e820: parse succeeds");
	T_OK(m->nr_ram == 2 && has_ram(m, 0, 0x9fc00) && has_ram(m, 0x100000, 0x3ffe0000),
	     "e820: exactly the two type-1 entries are RAM");
	T_OK(avoids(m, BP_PHYS, BP_PHYS + 4096), "e820: boot_params page avoided");
	T_OK(bi.cmdline && bi.cmdline_len == strlen(line) && bi.cmdline_phys == 0x20000 &&
	     memcmp(bi.cmdline, line, strlen(line)) == 0, "e820: command line found with its length");
	T_OK(avoids(m, 0x20000, 0x20000 + strlen(line) + 1) &&
	     !avoids(m, 0x20000 + strlen(line) + 1, 0x20000 + strlen(line) + 2),
	     "e820: command line and its NUL avoided, no more");
	T_OK(bi.initrd_start == 0x3f000000 && bi.initrd_size == 0xd00000 &&
	     avoids(m, 0x3f000000, 0x3fd00000), "e820: initrd avoided");
	T_OK(!bi.efi_map_used && bi.nr_setup_nodes == 0 && bi.setup_tail_phys == 0 && !bi.setup_overflow,
	     "e820: no EFI, no setup_data");

	/* The whole pipeline: slots for a 30 MiB kernel below mem=768M,
	 * clear of the initrd (which is above the limit anyway). */
	struct rr_cmdline c;
	rr_cmdline_parse(bi.cmdline, bi.cmdline_len, &c);
	T_OK(c.nokaslr && c.mem_limit == 768 * MIB, "e820: command line parsed from the fake machine");
	rr_memmap_apply_cmdline(m, &c);
	struct rr_select_params p = { 30 * MIB, RERAND_MIN_PHYS, RERAND_MAX_PHYS_4LEVEL, RERAND_SLOT_ALIGN };
	T_EQ_U64(rr_phys_slot_count(m, &p), (768 - 30 - 16) / 2 + 1, "e820: slot count after mem=768M");

	/* A 64-bit command line pointer and initrd. */
	rr_memmap_init(m);
	put32(bp + RR_BP_EXT_CMD_LINE_PTR, 1);
	put32(bp + RR_BP_EXT_RAMDISK_IMAGE, 2);
	put32(bp + RR_BP_EXT_RAMDISK_SIZE, 1);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && bi.cmdline == NULL &&
	     bi.cmdline_phys == 0x100020000ULL && avoids(m, 0x100020000ULL, 0x100020000ULL + RR_CMDLINE_MAX),
	     "e820: unmappable command line above 4G: its largest extent is avoided");
	T_OK(bi.initrd_start == 0x23f000000ULL && bi.initrd_size == 0x100d00000ULL &&
	     avoids(m, 0x23f000000ULL, 0x23f000000ULL + 0x100d00000ULL), "e820: initrd with ext fields");

	rc = rr_bootparams_parse(0x7000000, fake_map, &mc, m, &bi);
	T_OK(rc == -1, "e820: unmappable boot_params: -1");

	/* e820_entries beyond 128 is clamped, never read past the table. */
	rr_memmap_init(m);
	bp[RR_BP_E820_ENTRIES] = 255;
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && m->nr_ram == 2,
	     "e820: entries count clamped to 128");
	machine_free(&mc);
	free(m);
}

/* A command line running into the end of mappable memory. */
static void test_cmdline_edge(void)
{
	struct machine mc = { 0 };
	struct rr_memmap *m = map_new();
	struct rr_bootinfo bi;
	uint8_t *bp = backed(&mc, BP_PHYS, 4096);
	uint8_t *cl = backed(&mc, 0x30000, 4096);

	memset(cl, 'x', 4096);   /* no NUL at all */
	put32(bp + RR_BP_CMD_LINE_PTR, 0x30f00);
	rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(bi.cmdline && bi.cmdline_len == 0x100, "cmdline: unterminated line bounded by what maps");
	T_OK(avoids(m, 0x30f00, 0x30f00 + RR_CMDLINE_MAX), "cmdline: no NUL in sight: the largest extent is avoided");
	cl[0xffe] = 0;
	rr_memmap_init(m);
	rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(bi.cmdline && bi.cmdline_len == 0xfe && avoids(m, 0x30f00, 0x30fff) && !avoids(m, 0x30fff, 0x31000),
	     "cmdline: a line ending just before the end of memory is read whole");
	machine_free(&mc);
	free(m);
}

static void test_e820_ext(void)
{
	struct machine mc = { 0 };
	struct rr_memmap *m = map_new();
	struct rr_bootinfo bi;
	int rc;
	uint8_t *bp = backed(&mc, BP_PHYS, 4096);
	uint8_t *sd = backed(&mc, 0x60000, 4096);

	e820_add(bp, 0, 0x9fc00, 1);
	e820_add(bp, 0x100000, 0x7ff00000, 1);
	put64(bp + RR_BP_SETUP_DATA, 0x60000);
	put64(sd, 0);
	put32(sd + 8, RR_SETUP_E820_EXT);
	put32(sd + 12, 3 * 20);
	put64(sd + 16, 0x100000000ULL); put64(sd + 24, 2 * GIB); put32(sd + 32, 1);
	put64(sd + 36, 0x180000000ULL); put64(sd + 44, 1 * GIB); put32(sd + 52, 2);
	put64(sd + 56, 0x200000000ULL); put64(sd + 64, 1 * GIB); put32(sd + 72, 1);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0, "e820 ext: parse succeeds");
	T_OK(m->nr_ram == 4 && has_ram(m, 0x100000000ULL, 0x180000000ULL) &&
	     has_ram(m, 0x200000000ULL, 0x240000000ULL), "e820 ext: RAM entries from the node added");
	T_OK(avoids(m, 0x60000, 0x60000 + 16 + 60) && bi.nr_setup_nodes == 1 && bi.setup_tail_phys == 0x60000,
	     "e820 ext: the node avoided and recorded as tail");
	machine_free(&mc);
	free(m);
}

static void efi_desc(uint8_t *d, uint32_t type, uint64_t phys, uint64_t pages, uint64_t attr)
{
	put32(d, type);
	put64(d + 8, phys);
	put64(d + 16, 0);
	put64(d + 24, pages);
	put64(d + 32, attr);
}

#define EFI_MAP_PHYS 0x70000ULL
#define DSZ 48

static uint8_t *efi_machine(struct machine *mc, uint8_t **map_out, uint32_t ndesc)
{
	uint8_t *bp = backed(mc, BP_PHYS, 4096);
	*map_out = backed(mc, EFI_MAP_PHYS, 4096);
	seabios_1g(bp);
	memcpy(bp + RR_BP_EFI_INFO, "EL64", 4);
	put32(bp + RR_BP_EFI_INFO + 8, DSZ);
	put32(bp + RR_BP_EFI_INFO + 0x10, (uint32_t)EFI_MAP_PHYS);
	put32(bp + RR_BP_EFI_INFO + 0x14, ndesc * DSZ);
	return bp;
}

static void test_efi(void)
{
	struct machine mc = { 0 };
	struct rr_memmap *m = map_new();
	struct rr_bootinfo bi;
	int rc;
	uint8_t *map;
	uint8_t *bp = efi_machine(&mc, &map, 5);

	efi_desc(map + 0 * DSZ, 7, 0x100000, 0x800, 0xf);                    /* [1M, 9M) */
	efi_desc(map + 1 * DSZ, 4, 0x900000, 0x100, 0xf);                    /* boot data */
	efi_desc(map + 2 * DSZ, 7, 0x1000000, 0x10000, 0xf);                 /* [16M, 272M) */
	efi_desc(map + 3 * DSZ, 5, 0x20000000, 0x10, 0x800000000000000fULL); /* runtime code */
	efi_desc(map + 4 * DSZ, 7, 0x40000000, 0x1000, 0xf | RR_EFI_SPECIFIC_PURPOSE);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && bi.efi_map_used && !bi.efi_mirror_only,
	     "efi: conventional memory: the EFI map is used");
	T_OK(m->nr_ram == 2 && has_ram(m, 0x100000, 0x900000) && has_ram(m, 0x1000000, 0x11000000),
	     "efi: RAM is exactly the conventional, non-special-purpose descriptors");
	T_OK(avoids(m, EFI_MAP_PHYS, EFI_MAP_PHYS + 5 * DSZ), "efi: the EFI map itself is avoided");

	/* Only runtime memory (what kexec passes on): fall back to e820. */
	rr_memmap_init(m);
	efi_desc(map + 0 * DSZ, 5, 0x100000, 0x800, 0xf);
	efi_desc(map + 2 * DSZ, 6, 0x1000000, 0x10000, 0xf);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && !bi.efi_map_used &&
	     m->nr_ram == 2 && has_ram(m, 0x100000, 0x3ffe0000), "efi: runtime-only map falls back to e820");
	T_OK(avoids(m, EFI_MAP_PHYS, EFI_MAP_PHYS + 5 * DSZ), "efi: an unused EFI map is still avoided");

	/* Mirrored memory present: only mirrored conventional ranges. */
	rr_memmap_init(m);
	efi_desc(map + 0 * DSZ, 7, 0x100000, 0x800, 0xf);
	efi_desc(map + 2 * DSZ, 7, 0x1000000, 0x10000, 0xf | RR_EFI_MORE_RELIABLE);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && bi.efi_map_used &&
	     bi.efi_mirror_only && m->nr_ram == 1 && has_ram(m, 0x1000000, 0x11000000),
	     "efi: mirrored memory only");

	/* Wrong signature ("EL32"): e820 is the source. */
	rr_memmap_init(m);
	memcpy(bp + RR_BP_EFI_INFO, "EL32", 4);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && !bi.efi_map_used &&
	     has_ram(m, 0x100000, 0x3ffe0000), "efi: EL32 signature ignored");
	memcpy(bp + RR_BP_EFI_INFO, "EL64", 4);

	/* Descriptor size too small to hold a descriptor: not used. */
	rr_memmap_init(m);
	put32(bp + RR_BP_EFI_INFO + 8, 24);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && !bi.efi_map_used,
	     "efi: a descriptor size below 40 bytes is refused");

	/* Map above 4 GiB and unmappable: not used, still avoided. */
	rr_memmap_init(m);
	put32(bp + RR_BP_EFI_INFO + 8, DSZ);
	put32(bp + RR_BP_EFI_INFO + 0x1c, 1);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && !bi.efi_map_used &&
	     avoids(m, 0x100000000ULL + EFI_MAP_PHYS, 0x100000000ULL + EFI_MAP_PHYS + 5 * DSZ),
	     "efi: unmappable map above 4G avoided, e820 used");
	machine_free(&mc);
	free(m);
}

static void node(uint8_t *p, uint64_t next, uint32_t type, uint32_t len)
{
	put64(p, next);
	put32(p + 8, type);
	put32(p + 12, len);
}

#define SD 0x60000ULL

static void test_setup_data(void)
{
	struct machine mc = { 0 };
	struct rr_memmap *m = map_new();
	struct rr_bootinfo bi;
	int rc;
	uint8_t *bp = backed(&mc, BP_PHYS, 4096);
	uint8_t *sd = backed(&mc, SD, 0x10000);
	struct rr_select_params p = { 4 * MIB, RERAND_MIN_PHYS, RERAND_MAX_PHYS_4LEVEL, RERAND_SLOT_ALIGN };

	seabios_1g(bp);
	/* node A (RNG seed, 32 bytes) -> B (indirect) -> C (status-like) */
	put64(bp + RR_BP_SETUP_DATA, SD);
	node(sd, SD + 0x100, 9, 32);
	node(sd + 0x100, SD + 0x2000, RR_SETUP_INDIRECT, 24);
	put32(sd + 0x110, RR_SETUP_INDIRECT | 3);
	put64(sd + 0x118, 0x10000);
	put64(sd + 0x120, 0x5000000);
	node(sd + 0x2000, 0, RERAND_SETUP_TYPE, 64);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && bi.nr_setup_nodes == 3 &&
	     bi.setup_tail_phys == SD + 0x2000 && !bi.setup_overflow && !m->overflow,
	     "setup_data: three nodes walked, tail is the last");
	T_OK(avoids(m, SD, SD + 48) && avoids(m, SD + 0x100, SD + 0x100 + 40) &&
	     avoids(m, SD + 0x2000, SD + 0x2000 + 80), "setup_data: each node with its data avoided");
	T_OK(avoids(m, 0x5000000, 0x5010000), "setup_data: the SETUP_INDIRECT target avoided");
	uint64_t a;
	int hit = 0;
	for (uint64_t i = 0; rr_phys_slot_at(m, &p, i, &a) == 0; i++)
		if (a < 0x5010000 && a + p.size > 0x5000000)
			hit++;
	T_OK(hit == 0 && rr_phys_slot_count(m, &p) > 0, "setup_data: no slot overlaps the indirect target");

	/* A loop A -> B -> A. */
	rr_memmap_init(m);
	node(sd, SD + 0x100, 9, 32);
	node(sd + 0x100, SD, 9, 8);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && bi.setup_overflow &&
	     bi.nr_setup_nodes == 2 && bi.setup_tail_phys == SD + 0x100 && !m->overflow,
	     "setup_data: a loop is detected after its two nodes");

	/* A -> self. */
	rr_memmap_init(m);
	node(sd, SD, 9, 32);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && bi.setup_overflow &&
	     bi.nr_setup_nodes == 1, "setup_data: a self-loop is detected");

	/* A -> unmappable: an unknown node may need keeping clear. */
	rr_memmap_init(m);
	node(sd, 0x7000000, 9, 32);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && bi.setup_overflow &&
	     bi.nr_setup_nodes == 1 && m->overflow && rr_phys_slot_count(m, &p) == 0,
	     "setup_data: an unmappable node refuses physical randomization");

	/* A node straddling the end of mapped memory: header readable. */
	rr_memmap_init(m);
	node(sd, SD + 0x10000 - 16, 9, 0);
	node(sd + 0x10000 - 16, 0, RR_SETUP_E820_EXT, 4000);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && bi.nr_setup_nodes == 2 &&
	     avoids(m, SD + 0x10000 - 16, SD + 0x10000 + 4000) && !m->overflow,
	     "setup_data: an E820_EXT node whose data cannot be mapped only loses RAM");

	/* Indirect node whose data cannot be read: refuse. */
	rr_memmap_init(m);
	node(sd, SD + 0x10000 - 16, 9, 0);
	node(sd + 0x10000 - 16, 0, RR_SETUP_INDIRECT, 24);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && m->overflow,
	     "setup_data: unreadable SETUP_INDIRECT data refuses physical randomization");

	/* A chain longer than RR_MAX_SETUP_NODES. */
	rr_memmap_init(m);
	for (unsigned i = 0; i < RR_MAX_SETUP_NODES + 1; i++)
		node(sd + 0x100 * i, i == RR_MAX_SETUP_NODES ? 0 : SD + 0x100 * (i + 1), 9, 16);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && bi.setup_overflow &&
	     bi.nr_setup_nodes == RR_MAX_SETUP_NODES && m->overflow, "setup_data: 65 nodes overflow");
	rr_memmap_init(m);
	node(sd + 0x100 * (RR_MAX_SETUP_NODES - 1), 0, 9, 16);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && !bi.setup_overflow &&
	     bi.nr_setup_nodes == RR_MAX_SETUP_NODES && !m->overflow, "setup_data: exactly 64 nodes fit");
	machine_free(&mc);
	free(m);
}

/* SETUP_RNG_SEED (type 9) nodes are listed with writable data pointers;
 * malformed or surplus ones are counted, never read out of bounds. */
static void test_rng_seed_nodes(void)
{
	struct machine mc = { 0 };
	struct rr_memmap *m = map_new();
	struct rr_bootinfo bi;
	int rc;
	uint8_t *bp = backed(&mc, BP_PHYS, 4096);
	uint8_t *sd = backed(&mc, SD, 0x10000);

	seabios_1g(bp);
	/* Absent: an e820 machine with an unrelated node. */
	put64(bp + RR_BP_SETUP_DATA, SD);
	node(sd, 0, RR_SETUP_E820_EXT, 0);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && bi.nr_seed == 0 && bi.seed_skipped == 0, "rng seed: absent, none listed");

	/* Found: as kexec_file_load leaves it (32 bytes), before a status-like node. */
	rr_memmap_init(m);
	node(sd, SD + 0x100, RR_SETUP_RNG_SEED, 32);
	for (int i = 0; i < 32; i++)
		sd[16 + i] = (uint8_t)(0xa0 + i);
	node(sd + 0x100, 0, RERAND_SETUP_TYPE, 64);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && bi.nr_seed == 1 && bi.seed[0].data == sd + 16 && bi.seed[0].len == 32 &&
	     bi.seed_skipped == 0 && bi.nr_setup_nodes == 2, "rng seed: one 32-byte node found with its data");
	T_OK(avoids(m, SD, SD + 48), "rng seed: the node is kept clear like any node");

	/* Several (kexec-tools' and the kernel's), inside an indirect chain. */
	rr_memmap_init(m);
	node(sd, SD + 0x100, RR_SETUP_RNG_SEED, 32);
	node(sd + 0x100, SD + 0x200, RR_SETUP_INDIRECT, 24);
	put32(sd + 0x110, RR_SETUP_INDIRECT | RR_SETUP_RNG_SEED);
	put64(sd + 0x118, 32);
	put64(sd + 0x120, 0x5000000);
	node(sd + 0x200, 0, RR_SETUP_RNG_SEED, 64);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && bi.nr_seed == 2 && bi.seed[0].data == sd + 16 && bi.seed[1].data == sd + 0x210 &&
	     bi.seed[1].len == 64 && !m->overflow && avoids(m, 0x5000000, 0x5000020),
	     "rng seed: two direct nodes listed, the indirect one kept clear but not taken");

	/* Malformed lengths: 0 (as the kernel leaves a consumed one), longer
	 * than the cap, running past what maps. */
	rr_memmap_init(m);
	node(sd, SD + 0x100, RR_SETUP_RNG_SEED, 0);
	node(sd + 0x100, SD + 0x1000, RR_SETUP_RNG_SEED, 100000);
	node(sd + 0x1000, SD + 0x10000 - 32, RR_SETUP_RNG_SEED, 0xffffffffu);
	node(sd + 0x10000 - 32, 0, RR_SETUP_RNG_SEED, 200);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && bi.nr_setup_nodes == 4 && bi.nr_seed == 2 && bi.seed_skipped == 2,
	     "rng seed: len 0 and unmappable data skipped (taken %u, skipped %u)", bi.nr_seed, bi.seed_skipped);
	T_OK(bi.seed[0].data == sd + 0x110 && bi.seed[0].len == RR_SEED_NODE_MAX &&
	     bi.seed[1].data == sd + 0x1010 && bi.seed[1].len == RR_SEED_NODE_MAX,
	     "rng seed: an over-long node is taken up to %u bytes", RR_SEED_NODE_MAX);

	/* More nodes than RR_MAX_SEED_NODES: the rest are counted. */
	rr_memmap_init(m);
	for (unsigned i = 0; i < RR_MAX_SEED_NODES + 2; i++)
		node(sd + 0x100 * i, i == RR_MAX_SEED_NODES + 1 ? 0 : SD + 0x100 * (i + 1),
		     RR_SETUP_RNG_SEED, 32);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && bi.nr_seed == RR_MAX_SEED_NODES && bi.seed_skipped == 2 &&
	     bi.seed[RR_MAX_SEED_NODES - 1].data == sd + 0x100 * (RR_MAX_SEED_NODES - 1) + 16,
	     "rng seed: %u nodes taken, the other 2 counted", RR_MAX_SEED_NODES);
	machine_free(&mc);
	free(m);
}

/* Every slot of m lies inside one of the n areas; returns the slot count. */
static uint64_t slots_inside(const struct rr_memmap *m, const struct rr_select_params *p,
			     const struct rr_range *area, unsigned n, int *outside)
{
	uint64_t a, i;

	*outside = 0;
	for (i = 0; rr_phys_slot_at(m, p, i, &a) == 0; i++) {
		unsigned k;
		for (k = 0; k < n; k++)
			if (a >= area[k].start && a + p->size <= area[k].end)
				break;
		if (k == n)
			(*outside)++;
	}
	return i;
}

/* What a kexec hands on through setup_data (issue 42): IMA's measurement
 * list (SETUP_IMA points at it), a DTB (inline), Kexec HandOver (an FDT,
 * a scratch table, memory preserved outside the scratch areas), and node
 * types the stage does not know: all kept clear; with KHO, placement only
 * in scratch. */
static void test_handover(void)
{
	struct machine mc = { 0 };
	struct rr_memmap *m = map_new();
	struct rr_bootinfo bi;
	int rc, out;
	uint8_t *bp = backed(&mc, BP_PHYS, 4096);
	uint8_t *sd = backed(&mc, SD, 0x10000);
	struct rr_select_params p = { 4 * MIB, RERAND_MIN_PHYS, RERAND_MAX_PHYS_4LEVEL, RERAND_SLOT_ALIGN };
	uint64_t base, a, i;
	int hit;

	seabios_1g(bp);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	base = rr_phys_slot_count(m, &p);
	T_OK(rc == 0 && base > 100 && !bi.kho, "handover: the plain machine has %llu slots",
	     (unsigned long long)base);

	/* IMA -> DTB -> an unknown type */
	rr_memmap_init(m);
	put64(bp + RR_BP_SETUP_DATA, SD);
	node(sd, SD + 0x100, RR_SETUP_IMA, 16);
	put64(sd + 16, 0x6000000);
	put64(sd + 24, 0x30000);
	node(sd + 0x100, SD + 0x1000, RR_SETUP_DTB, 0x800);
	node(sd + 0x1000, 0, 0x77, 100);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && bi.nr_setup_nodes == 3 && !m->overflow && !bi.kho,
	     "handover: IMA, DTB and an unknown node walked");
	T_OK(avoids(m, 0x6000000, 0x6030000), "handover: the buffer SETUP_IMA points at is avoided");
	T_OK(avoids(m, SD + 0x100, SD + 0x100 + 16 + 0x800), "handover: the DTB (the node's data) is avoided");
	T_OK(avoids(m, SD + 0x1000, SD + 0x1000 + 16 + 100), "handover: a node of an unknown type is avoided whole");
	hit = 0;
	for (i = 0; rr_phys_slot_at(m, &p, i, &a) == 0; i++)
		if (a < 0x6030000 && a + p.size > 0x6000000)
			hit++;
	T_OK(hit == 0 && i > 0 && i < base, "handover: no slot overlaps IMA's buffer (%llu slots)",
	     (unsigned long long)i);

	/* IMA's pointer unreadable (node at the end of what maps): refuse */
	rr_memmap_init(m);
	node(sd, SD + 0x10000 - 16, 9, 0);
	node(sd + 0x10000 - 16, 0, RR_SETUP_IMA, 16);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && m->overflow && rr_phys_slot_count(m, &p) == 0,
	     "handover: an unreadable SETUP_IMA pointer refuses physical randomization");

	/* KHO: FDT at 112 MiB, scratch table at SD + 0x1000, two areas out of
	 * order: [256, 384) MiB and [32, 64) MiB */
	struct rr_range area[2] = { { 0x10000000, 0x18000000 }, { 0x2000000, 0x4000000 } };
	rr_memmap_init(m);
	node(sd, 0, RR_SETUP_KEXEC_KHO, 32);
	put64(sd + 16, 0x7000000);
	put64(sd + 24, 0x4000);
	put64(sd + 32, SD + 0x1000);
	put64(sd + 40, 2 * 16);
	put64(sd + 0x1000, area[0].start);
	put64(sd + 0x1008, area[0].end - area[0].start);
	put64(sd + 0x1010, area[1].start);
	put64(sd + 0x1018, area[1].end - area[1].start);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && bi.kho && bi.nr_kho_scratch == 2 && !m->overflow,
	     "handover: KHO node read, two scratch areas");
	T_OK(avoids(m, 0x7000000, 0x7004000) && avoids(m, SD + 0x1000, SD + 0x1020),
	     "handover: KHO's FDT and scratch table avoided");
	/* 4 MiB in 2 MiB steps: 15 slots in 32 MiB, 63 in 128 MiB */
	uint64_t n = slots_inside(m, &p, area, 2, &out);
	T_OK(n == 15 + 63 && out == 0, "handover: with KHO every slot lies in scratch (%llu slots, "
	     "%d outside; want 78, 0)", (unsigned long long)n, out);

	/* an area past the end of addresses is clipped, not wrapped */
	put64(sd + 0x1010, 0xffffffffffe00000ULL);
	put64(sd + 0x1018, 0x800000);
	rr_memmap_init(m);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	n = slots_inside(m, &p, area, 1, &out);
	T_OK(rc == 0 && bi.kho && n == 63 && out == 0,
	     "handover: a scratch area that wraps is clipped (%llu slots)", (unsigned long long)n);

	/* an empty scratch table confines nothing (the kernel falls back to
	 * the EFI map or e820 then) */
	put64(sd + 40, 0);
	rr_memmap_init(m);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && !bi.kho && !m->overflow && rr_phys_slot_count(m, &p) > 78,
	     "handover: KHO with no scratch area confines nothing");

	/* more areas than the stage takes: refuse */
	put64(sd + 40, (RR_MAX_KHO_SCRATCH + 1) * 16);
	rr_memmap_init(m);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && m->overflow && rr_phys_slot_count(m, &p) == 0,
	     "handover: %d scratch areas refuse physical randomization", RR_MAX_KHO_SCRATCH + 1);

	/* a scratch table that cannot be read: refuse */
	put64(sd + 32, 0x7100000);
	put64(sd + 40, 2 * 16);
	rr_memmap_init(m);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && m->overflow && rr_phys_slot_count(m, &p) == 0,
	     "handover: an unreadable KHO scratch table refuses physical randomization");

	/* a KHO node too short for its data: refuse */
	node(sd, 0, RR_SETUP_KEXEC_KHO, 24);
	rr_memmap_init(m);
	rc = rr_bootparams_parse(BP_PHYS, fake_map, &mc, m, &bi);
	T_OK(rc == 0 && m->overflow, "handover: a KHO node shorter than kho_data refuses");
	machine_free(&mc);
	free(m);
}

int main(void)
{
	test_e820();
	test_cmdline_edge();
	test_e820_ext();
	test_efi();
	test_setup_data();
	test_rng_seed_nodes();
	test_handover();
	return t_done();
}
