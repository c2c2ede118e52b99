/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The purgatory stage: runs after the old kernel is gone, chooses the
 * physical and virtual base against the live memory map, decodes the kernel
 * to its physical base, relocates it for its virtual base, leaves a status
 * record and enters it.  Addresses are never printed.
 */
#include <rerand/abi.h>
#include "stage.h"
#include "bootparams.h"
#include "crash.h"
#include "lz4dec.h"
#include "reloc.h"
#include "rng.h"
#include "select.h"
#include "util.h"

extern struct rerand_locator stage_locator;
extern char stage_entry32[];

/* Large state lives here, not on the 16 KiB stack. */
static struct rr_memmap memmap;
static struct pgtable pt;
static bool debug;

struct choice {
	uint64_t phys;
	uint64_t virt;
};

static void say(const char *s)
{
	if (debug)
		serial_puts(s);
}

static void say_count(const char *what, uint64_t v)
{
	if (!debug)
		return;
	serial_puts(what);
	serial_put_u64(v);
	serial_puts("\n");
}

static void *map_cb(void *ctx, uint64_t phys, uint64_t len)
{
	struct pgtable *p = ctx;

	if (len == 0 || phys + len < phys || pgtable_map(p, phys, phys + len) < 0)
		return 0;
	pgtable_activate(p);    /* flush: the new entries must be walked */
	return (void *)(uintptr_t)phys;
}

static const struct rerand_image_header *find_header(uint64_t pm)
{
	const struct rerand_locator *loc = &stage_locator;
	const struct rerand_image_header *h;

	if (rr_memcmp(loc->magic, RERAND_LOCATOR_MAGIC, 8) || loc->header_offset == 0 ||
	    loc->header_offset % RERAND_HDR_ALIGN)
		stage_fatal("image locator is not filled in (not written by rerand image?)");
	h = (const void *)(uintptr_t)(pm + loc->header_offset);
	if (rr_memcmp(h->magic, RERAND_IMAGE_MAGIC, 8) || h->version != RERAND_IMAGE_VERSION ||
	    h->header_size != sizeof(*h))
		stage_fatal("image header magic or version mismatch");
	if (h->nr_segments == 0 || h->nr_segments > RERAND_MAX_SEGMENTS ||
	    h->codec > RERAND_CODEC_LZ4 || h->scratch_offset < h->file_size ||
	    h->scratch_size < 4096 * 8 || h->mem_size == 0 ||
	    h->entry_offset >= h->mem_size || h->link_paddr != RERAND_LOAD_PHYSICAL_ADDR)
		stage_fatal("image header is inconsistent");
	for (unsigned i = 0; i < h->nr_segments; i++) {
		const struct rerand_segment *s = &h->seg[i];
		if (s->data_offset > h->file_size || s->data_size > h->file_size - s->data_offset ||
		    s->mem_offset > h->mem_size || s->file_size > h->mem_size - s->mem_offset ||
		    s->file_size > s->mem_size)
			stage_fatal("image segment table is inconsistent");
	}
	uint64_t rel = ((uint64_t)h->nr_reloc64 + h->nr_inverse32 + h->nr_reloc32) * 4;
	if (h->relocs_offset > h->file_size || rel > h->file_size - h->relocs_offset)
		stage_fatal("image relocation table is outside the image");
	return h;
}

static void decode_kernel(const struct rerand_image_header *h, uint64_t pm, uint64_t dest,
			  enum rr_simd simd)
{
	for (unsigned i = 0; i < h->nr_segments; i++) {
		const struct rerand_segment *s = &h->seg[i];
		const uint8_t *src = (const uint8_t *)(uintptr_t)(pm + s->data_offset);
		uint8_t *dst = (uint8_t *)(uintptr_t)(dest + s->mem_offset);

		if (h->codec == RERAND_CODEC_NONE) {
			if (s->data_size != s->file_size)
				stage_fatal("stored segment size mismatch");
			rr_copy_bulk(dst, src, s->file_size);
		} else if (rr_lz4_decode_block_simd(src, s->data_size, dst, s->file_size, simd) !=
			   (int64_t)s->file_size) {
			stage_fatal("kernel segment does not decode (corrupt image)");
		}
	}
}

static void append_status(uint64_t bp, const struct rr_bootinfo *bi, uint64_t node_phys,
			  const struct rerand_status *st)
{
	struct rerand_setup_data *node = (void *)(uintptr_t)node_phys;
	uint8_t *bpp = (uint8_t *)(uintptr_t)bp;

	rr_memset(node, 0, sizeof(*node) + sizeof(*st));
	node->type = RERAND_SETUP_TYPE;
	node->len = sizeof(*st);
	rr_memcpy(node + 1, st, sizeof(*st));
	if (bi->setup_tail_phys && !bi->setup_overflow) {
		struct rerand_setup_data *tail = (void *)(uintptr_t)bi->setup_tail_phys;
		tail->next = node_phys;
	} else {
		/* A chain we could not walk safely: put ours first instead. */
		node->next = rr_get64(bpp + RR_BP_SETUP_DATA);
		rr_put64(bpp + RR_BP_SETUP_DATA, node_phys);
	}
}

/*
 * Take the kernel's seed nodes into the key, then give the next kernel a
 * value derived under another domain in their place: its CRNG is still
 * seeded, but never with bytes that chose the base.
 */
static void init_rng(struct rr_rng *rng, const struct rerand_image_header *h,
		     const struct rr_bootinfo *bi)
{
	struct rr_entropy_ops ops = { .rdtsc = cpu_rdtsc };

	if (cpu_has_rdseed())
		ops.rdseed = cpu_rdseed;
	if (cpu_has_rdrand())
		ops.rdrand = cpu_rdrand;
	rr_rng_init_seeds(rng, h->seed, bi->seed, bi->nr_seed, &ops);
	rr_memzero_explicit((void *)h->seed, sizeof(h->seed));
	rr_rng_replace_seeds(rng, bi->seed, bi->nr_seed);
	say_count("rerand: stage: kernel seed nodes taken ", bi->nr_seed);
	if (bi->seed_skipped)
		say_count("rerand: stage: kernel seed nodes skipped ", bi->seed_skipped);
}

__attribute__((noreturn)) void stage_main(uint64_t bp);

__attribute__((noreturn)) void stage_main(uint64_t bp)
{
	uint64_t pm = (uint64_t)(uintptr_t)stage_entry32;
	const struct rerand_image_header *h = find_header(pm);
	uint64_t scratch = pm + h->scratch_offset;
	uint64_t image_end = scratch + h->scratch_size;
	bool la57 = cpu_la57();
	struct rr_bootinfo bi;
	struct rr_cmdline cl;
	struct rr_rng rng;
	struct rerand_status st;
	struct choice ch;

	/* Scratch: page 0 holds the status node; the rest is the table pool. */
	pgtable_init(&pt, (void *)(uintptr_t)(scratch + 4096), h->scratch_size - 4096, la57);
	if (pgtable_map(&pt, pm, image_end) < 0 || pgtable_map(&pt, bp, bp + 4096) < 0)
		stage_fatal("cannot map the image and boot_params");
	pgtable_activate(&pt);

	rr_memmap_init(&memmap);
	if (rr_bootparams_parse(bp, map_cb, &pt, &memmap, &bi) < 0)
		stage_fatal("cannot read boot_params");
	rr_cmdline_parse(bi.cmdline ? bi.cmdline : "", bi.cmdline ? bi.cmdline_len : 0, &cl);
	debug = cl.debug;
	stage_set_debug(debug);
	if (debug) {
		serial_init();
		serial_puts("rerand: stage " STAGE_VERSION ": entered, ");
		serial_puts(la57 ? "5-level paging, " : "4-level paging, ");
		serial_puts(bi.efi_map_used ? "EFI memory map\n" : "e820 memory map\n");
	}

	rr_memmap_add_avoid(&memmap, pm, image_end);
	rr_memmap_apply_cmdline(&memmap, &cl);
	if (cl.has_elfcorehdr && rr_crash_avoid(cl.elfcorehdr.start, map_cb, &pt, &memmap) < 0)
		say("rerand: stage: elfcorehdr unreadable: keeping the conservative extent\n");

	struct rr_select_params sp = {
		.size = RR_ALIGN_UP(h->mem_size, RERAND_SLOT_ALIGN),
		.min_addr = RERAND_MIN_PHYS,
		.max_addr = la57 ? RERAND_MAX_PHYS_5LEVEL : RERAND_MAX_PHYS_4LEVEL,
		.align = RERAND_SLOT_ALIGN,
	};
	uint64_t phys_slots = rr_phys_slot_count(&memmap, &sp);
	uint64_t virt_slots = rr_virt_slot_count(h->mem_size);
	say_count("rerand: stage: physical slots ", phys_slots);
	say_count("rerand: stage: virtual slots ", virt_slots);

	init_rng(&rng, h, &bi);

	rr_memset(&st, 0, sizeof(st));
	rr_memcpy(st.magic, RERAND_STATUS_MAGIC, 8);
	st.version = RERAND_STATUS_VERSION;
	st.size = sizeof(st);
	st.image_version = h->version;
	st.sources_used = rng.sources_used;
	st.sources_rejected = rng.sources_rejected;
	st.ram_ranges = memmap.nr_ram;
	st.avoided_ranges = memmap.nr_avoid;
	st.phys_slots = phys_slots;
	st.virt_slots = virt_slots;
	st.flags = (la57 ? RERAND_ST_LA57 : 0) | (bi.efi_map_used ? RERAND_ST_EFI_MAP : 0) |
		   (debug ? RERAND_ST_DEBUG : 0) | (cl.has_elfcorehdr ? RERAND_ST_CRASH : 0);
	if (rr_rng_weak(rng.sources_used))
		st.flags |= RERAND_ST_WEAK;

	if (cl.nokaslr || phys_slots == 0 || virt_slots == 0) {
		/* The lowest place that fits: relax the 16 MiB floor if we must. */
		ch.virt = RERAND_LOAD_PHYSICAL_ADDR;
		if (phys_slots == 0) {
			sp.min_addr = RERAND_SLOT_ALIGN;
			if (rr_phys_slot_count(&memmap, &sp) == 0)
				stage_fatal("no free RAM fits the kernel");
		}
		rr_phys_slot_at(&memmap, &sp, 0, &ch.phys);
		if (!cl.nokaslr && virt_slots)
			ch.virt = rr_virt_slot_at(rr_rng_uniform(&rng, virt_slots));
		st.result = cl.nokaslr ? RERAND_RES_NOKASLR : RERAND_RES_NO_SLOT;
		say(cl.nokaslr ? "rerand: stage: nokaslr: default virtual base, lowest slot\n"
			       : "rerand: stage: no slot fits: lowest place that fits\n");
	} else {
		rr_phys_slot_at(&memmap, &sp, rr_rng_uniform(&rng, phys_slots), &ch.phys);
		ch.virt = rr_virt_slot_at(rr_rng_uniform(&rng, virt_slots));
		st.result = RERAND_RES_RANDOMIZED;
	}
	rr_rng_wipe(&rng);

	if ((ch.phys - ch.virt) % RERAND_SLOT_ALIGN)
		stage_fatal("internal error: bases not congruent");
	if (pgtable_map(&pt, ch.phys, ch.phys + sp.size) < 0)
		stage_fatal("cannot map the kernel's destination");
	pgtable_activate(&pt);

	enum rr_simd simd = RR_SIMD_NONE;
	if (h->codec == RERAND_CODEC_LZ4) {
		simd = cpu_simd_enable(cl.has_simd_max ? (enum rr_simd)cl.simd_max : RR_SIMD_AVX2);
		say(simd == RR_SIMD_AVX2 ? "rerand: stage: decoding kernel (avx2 copies)\n" :
		    simd == RR_SIMD_SSE2 ? "rerand: stage: decoding kernel (sse2 copies)\n" :
					   "rerand: stage: decoding kernel (8-byte copies)\n");
	} else {
		say("rerand: stage: copying kernel\n");
	}
	decode_kernel(h, pm, ch.phys, simd);
	cpu_simd_disable();

	struct rr_reloc_lists rl;
	const uint32_t *tab = (const uint32_t *)(uintptr_t)(pm + h->relocs_offset);
	rl.reloc64 = tab;
	rl.nr_reloc64 = h->nr_reloc64;
	rl.inverse32 = tab + h->nr_reloc64;
	rl.nr_inverse32 = h->nr_inverse32;
	rl.reloc32 = tab + h->nr_reloc64 + h->nr_inverse32;
	rl.nr_reloc32 = h->nr_reloc32;
	if (rr_relocate((uint8_t *)(uintptr_t)ch.phys, h->mem_size, &rl, h->link_paddr, ch.virt) < 0)
		stage_fatal("relocation entry outside the kernel (corrupt image)");
	say("rerand: stage: relocated\n");

	/* Like the decompressor: KASLR_FLAG means "randomization is on", not
	 * "the base moved".  Virtual slot 0 is the default base and a fair draw;
	 * clearing the flag there would also turn off the kernel's own
	 * randomization of its memory regions for that boot. */
	uint8_t *bpp = (uint8_t *)(uintptr_t)bp;
	if (!cl.nokaslr)
		bpp[RR_BP_LOADFLAGS] |= RERAND_KASLR_FLAG;
	else
		bpp[RR_BP_LOADFLAGS] &= (uint8_t)~RERAND_KASLR_FLAG;

	uint64_t entry = ch.phys + h->entry_offset;
	rr_memzero_explicit(&ch, sizeof(ch));
	append_status(bp, &bi, scratch, &st);
	say("rerand: stage: entering kernel\n");
	stage_enter_kernel(entry, bp);
}
