/* SPDX-License-Identifier: GPL-2.0-only */
/* Usable RAM and the ranges to keep clear, read from boot_params, the EFI
 * memory map and the setup_data chain through a physical-map callback. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bootparams.h"
#include "util.h"

#define E820_ENTRY_SIZE   20
#define EFI_DESC_MIN      40          /* type, pad, phys, virt, pages, attr */
#define EFI_DESC_MAX      4096
#define EFI_MAP_MAX       (1u << 20)  /* 1 MiB: ~20,000 descriptors */
#define E820_EXT_MAX      1024        /* entries read from one E820_EXT node */
#define SETUP_HDR_SIZE    16
#define SETUP_INDIRECT_SIZE 24        /* u32 type, u32 reserved, u64 len, u64 addr */
#define IMA_DATA_SIZE     16          /* struct ima_setup_data: u64 addr, u64 size */
#define KHO_DATA_SIZE     32          /* struct kho_data: fdt addr/size, scratch addr/size */
#define KHO_SCRATCH_SIZE  16          /* struct kho_scratch: u64 addr, u64 size */

#define BP_EFI_SIGNATURE  (RR_BP_EFI_INFO + 0x00)
#define BP_EFI_DESC_SIZE  (RR_BP_EFI_INFO + 0x08)
#define BP_EFI_MEMMAP     (RR_BP_EFI_INFO + 0x10)
#define BP_EFI_MEMMAP_SZ  (RR_BP_EFI_INFO + 0x14)
#define BP_EFI_MEMMAP_HI  (RR_BP_EFI_INFO + 0x1c)

static uint64_t end_sat(uint64_t start, uint64_t len)
{
	return start > UINT64_MAX - len ? UINT64_MAX : start + len;
}

static void add_e820_entries(struct rr_memmap *m, const uint8_t *p, uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n; i++, p += E820_ENTRY_SIZE) {
		uint64_t addr = rr_get64(p), size = rr_get64(p + 8);

		if (rr_get32(p + 16) == RR_E820_RAM)
			rr_memmap_add_ram(m, addr, end_sat(addr, size));
	}
}

static uint64_t efi_desc_end(const uint8_t *d)
{
	uint64_t phys = rr_get64(d + 8), pages = rr_get64(d + 24);

	if (pages > (UINT64_MAX >> 12))
		return UINT64_MAX;
	return end_sat(phys, pages << 12);
}

/*
 * RAM from the EFI map when it describes conventional memory (after a kexec
 * it often holds only runtime regions: then e820 is the truth).  Like
 * process_efi_entries(): only EFI_CONVENTIONAL_MEMORY is known to be free,
 * and when the firmware mirrors some of it, only the mirror is used.
 * Returns true if the map was used.
 */
static bool parse_efi(const uint8_t *bp, rr_phys_map_fn map, void *ctx,
		      struct rr_memmap *m, struct rr_bootinfo *info)
{
	uint64_t pmap = rr_get32(bp + BP_EFI_MEMMAP) | (uint64_t)rr_get32(bp + BP_EFI_MEMMAP_HI) << 32;
	uint32_t size = rr_get32(bp + BP_EFI_MEMMAP_SZ), dsz = rr_get32(bp + BP_EFI_DESC_SIZE);
	bool have_conv = false, mirror = false;
	const uint8_t *d;
	uint32_t i, n;

	if (rr_memcmp(bp + BP_EFI_SIGNATURE, "EL64", 4) != 0 || size == 0)
		return false;
	/* The next kernel reads this map early: never overwrite it, even
	 * when it cannot be used here. */
	rr_memmap_add_avoid(m, pmap, end_sat(pmap, size));
	if (dsz < EFI_DESC_MIN || dsz > EFI_DESC_MAX || size > EFI_MAP_MAX)
		return false;
	n = size / dsz;
	d = map(ctx, pmap, (uint64_t)n * dsz);
	if (!d || n == 0)
		return false;

	for (i = 0; i < n; i++) {
		const uint8_t *e = d + (uint64_t)i * dsz;
		uint64_t attr = rr_get64(e + 32);

		if (rr_get32(e) != RR_EFI_CONVENTIONAL || (attr & RR_EFI_SPECIFIC_PURPOSE))
			continue;
		have_conv = true;
		if (attr & RR_EFI_MORE_RELIABLE)
			mirror = true;
	}
	if (!have_conv)
		return false;
	for (i = 0; i < n; i++) {
		const uint8_t *e = d + (uint64_t)i * dsz;
		uint64_t attr = rr_get64(e + 32);

		if (rr_get32(e) != RR_EFI_CONVENTIONAL || (attr & RR_EFI_SPECIFIC_PURPOSE))
			continue;
		if (mirror && !(attr & RR_EFI_MORE_RELIABLE))
			continue;
		rr_memmap_add_ram(m, rr_get64(e + 8), efi_desc_end(e));
	}
	info->efi_map_used = true;
	info->efi_mirror_only = mirror;
	return true;
}

static void parse_cmdline(const uint8_t *bp, rr_phys_map_fn map, void *ctx,
			  struct rr_memmap *m, struct rr_bootinfo *info)
{
	uint64_t ptr = rr_get32(bp + RR_BP_CMD_LINE_PTR) |
		       (uint64_t)rr_get32(bp + RR_BP_EXT_CMD_LINE_PTR) << 32;
	uint64_t avail = RR_CMDLINE_MAX, len = 0;
	const char *s;

	if (!ptr)
		return;
	info->cmdline_phys = ptr;
	/* Normally all of RR_CMDLINE_MAX maps; near the end of what can be
	 * reached, take the longest power-of-two piece that does. */
	for (s = NULL; avail && !(s = map(ctx, ptr, avail)); avail /= 2)
		;
	if (s) {
		while (len < avail && s[len])
			len++;
		info->cmdline = s;
		info->cmdline_len = len;
	}
	/* Without a NUL in sight the extent is unknown: keep the largest a
	 * command line may be clear. */
	rr_memmap_add_avoid(m, ptr, end_sat(ptr, s && len < avail ? len + 1 : RR_CMDLINE_MAX));
}

/* The target of a SETUP_INDIRECT node lies elsewhere and must be kept
 * clear too (the running kernel memblock-reserves it). */
static bool parse_indirect(uint64_t node, uint32_t len, rr_phys_map_fn map, void *ctx,
			   struct rr_memmap *m)
{
	const uint8_t *d;
	uint64_t addr, size;

	if (len < SETUP_INDIRECT_SIZE)
		return true;
	d = map(ctx, node + SETUP_HDR_SIZE, SETUP_INDIRECT_SIZE);
	if (!d)
		return false;
	size = rr_get64(d + 8);
	addr = rr_get64(d + 16);
	rr_memmap_add_avoid(m, addr, end_sat(addr, size));
	return true;
}

/* A SETUP_IMA node points at IMA's measurement list, carried over from the
 * old kernel: the new kernel reads it in setup_arch, so it is kept clear. */
static bool parse_ima(uint64_t node, uint32_t len, rr_phys_map_fn map, void *ctx,
		      struct rr_memmap *m)
{
	const uint8_t *d;
	uint64_t addr;

	if (len < IMA_DATA_SIZE)
		return true;
	d = map(ctx, node + SETUP_HDR_SIZE, IMA_DATA_SIZE);
	if (!d)
		return false;
	addr = rr_get64(d);
	rr_memmap_add_avoid(m, addr, end_sat(addr, rr_get64(d + 8)));
	return true;
}

/* SETUP_KEXEC_KHO (Kexec HandOver): its FDT and scratch table are kept
 * clear, and so is everything outside the scratch areas, where the memory
 * handed over lies (the kernel's process_kho_entries() likewise places the
 * kernel in scratch only).  An empty table confines nothing, as there. */
static bool parse_kho(uint64_t node, uint32_t len, rr_phys_map_fn map, void *ctx,
		      struct rr_memmap *m, struct rr_bootinfo *info)
{
	struct rr_range area[RR_MAX_KHO_SCRATCH];
	const uint8_t *d, *t;
	uint64_t fdt, tab, n, i, j, prev;

	if (len < KHO_DATA_SIZE)
		return false;
	d = map(ctx, node + SETUP_HDR_SIZE, KHO_DATA_SIZE);
	if (!d)
		return false;
	fdt = rr_get64(d);
	tab = rr_get64(d + 16);
	rr_memmap_add_avoid(m, fdt, end_sat(fdt, rr_get64(d + 8)));
	rr_memmap_add_avoid(m, tab, end_sat(tab, rr_get64(d + 24)));
	n = rr_get64(d + 24) / KHO_SCRATCH_SIZE;
	if (n == 0)
		return true;
	if (n > RR_MAX_KHO_SCRATCH)
		return false;
	t = map(ctx, tab, n * KHO_SCRATCH_SIZE);
	if (!t)
		return false;
	/* insertion sort by start: a few dozen areas at most */
	for (i = 0; i < n; i++) {
		struct rr_range r;

		r.start = rr_get64(t + i * KHO_SCRATCH_SIZE);
		r.end = end_sat(r.start, rr_get64(t + i * KHO_SCRATCH_SIZE + 8));
		for (j = i; j > 0 && area[j - 1].start > r.start; j--)
			area[j] = area[j - 1];
		area[j] = r;
	}
	for (i = 0, prev = 0; i < n; i++) {
		if (area[i].start > prev)
			rr_memmap_add_avoid(m, prev, area[i].start);
		if (area[i].end > prev)
			prev = area[i].end;
	}
	rr_memmap_add_avoid(m, prev, UINT64_MAX);
	info->kho = true;
	info->nr_kho_scratch += (unsigned)n;
	return true;
}

/* A SETUP_RNG_SEED node: remember where its bytes are, so the stage can mix
 * them and then give the next kernel a different seed in their place. */
static void take_seed(uint64_t node, uint32_t len, rr_phys_map_fn map, void *ctx,
		      struct rr_bootinfo *info)
{
	uint32_t take = len < RR_SEED_NODE_MAX ? len : RR_SEED_NODE_MAX;
	uint8_t *d;

	if (take == 0 || info->nr_seed >= RR_MAX_SEED_NODES) {
		info->seed_skipped++;
		return;
	}
	d = map(ctx, node + SETUP_HDR_SIZE, take);
	if (!d) {
		info->seed_skipped++;
		return;
	}
	info->seed[info->nr_seed].data = d;
	info->seed[info->nr_seed].len = take;
	info->nr_seed++;
}

/*
 * Walk the setup_data chain: every node is kept clear with its data
 * (whatever its type: a DTB, an unknown type), E820_EXT nodes add RAM
 * (unless the EFI map is the source), indirect targets, IMA's buffer and
 * KHO's FDT and scratch table are kept clear, KHO confines placement to
 * its scratch areas, RNG seed nodes are listed.
 * A chain we cannot read to its end may hide a node the kernel still
 * needs, so it also marks the map as overflowing: no physical
 * randomization rather than a guess.
 */
static void walk_setup_data(const uint8_t *bp, rr_phys_map_fn map, void *ctx,
			    struct rr_memmap *m, struct rr_bootinfo *info)
{
	uint64_t seen[RR_MAX_SETUP_NODES];
	uint64_t next = rr_get64(bp + RR_BP_SETUP_DATA);
	unsigned n = 0, i;

	while (next) {
		const uint8_t *h;
		uint64_t node = next;
		uint32_t type, len;

		for (i = 0; i < n; i++)
			if (seen[i] == node)
				break;
		if (i < n) {
			/* A loop: every node in it is already kept clear. */
			info->setup_overflow = true;
			break;
		}
		if (n >= RR_MAX_SETUP_NODES || node > UINT64_MAX - SETUP_HDR_SIZE) {
			info->setup_overflow = true;
			m->overflow = true;
			break;
		}
		h = map(ctx, node, SETUP_HDR_SIZE);
		if (!h) {
			info->setup_overflow = true;
			m->overflow = true;
			break;
		}
		seen[n++] = node;
		next = rr_get64(h);
		type = rr_get32(h + 8);
		len = rr_get32(h + 12);
		rr_memmap_add_avoid(m, node, end_sat(node, SETUP_HDR_SIZE + (uint64_t)len));
		info->nr_setup_nodes = n;
		info->setup_tail_phys = node;

		if (type == RR_SETUP_E820_EXT && !info->efi_map_used) {
			uint64_t cnt = len / E820_ENTRY_SIZE;
			const uint8_t *d;

			/* Dropping entries beyond the cap only loses RAM. */
			if (cnt > E820_EXT_MAX)
				cnt = E820_EXT_MAX;
			d = cnt ? map(ctx, node + SETUP_HDR_SIZE, cnt * E820_ENTRY_SIZE) : NULL;
			if (d)
				add_e820_entries(m, d, cnt);
		} else if (type == RR_SETUP_INDIRECT) {
			if (!parse_indirect(node, len, map, ctx, m))
				m->overflow = true;
		} else if (type == RR_SETUP_RNG_SEED) {
			take_seed(node, len, map, ctx, info);
		} else if (type == RR_SETUP_IMA) {
			if (!parse_ima(node, len, map, ctx, m))
				m->overflow = true;
		} else if (type == RR_SETUP_KEXEC_KHO) {
			if (!parse_kho(node, len, map, ctx, m, info))
				m->overflow = true;
		}
	}
}

int rr_bootparams_parse(uint64_t bp_phys, rr_phys_map_fn map, void *ctx,
			struct rr_memmap *m, struct rr_bootinfo *ret)
{
	const uint8_t *bp;
	uint64_t initrd, initrd_size;

	rr_memset(ret, 0, sizeof(*ret));
	bp = map(ctx, bp_phys, RR_BOOT_PARAMS_SIZE);
	if (!bp)
		return -1;
	rr_memmap_add_avoid(m, bp_phys, end_sat(bp_phys, RR_BOOT_PARAMS_SIZE));

	if (!parse_efi(bp, map, ctx, m, ret)) {
		uint64_t n = bp[RR_BP_E820_ENTRIES];

		if (n > RR_E820_MAX_ZEROPAGE)
			n = RR_E820_MAX_ZEROPAGE;
		add_e820_entries(m, bp + RR_BP_E820_TABLE, n);
	}

	initrd = rr_get32(bp + RR_BP_RAMDISK_IMAGE) |
		 (uint64_t)rr_get32(bp + RR_BP_EXT_RAMDISK_IMAGE) << 32;
	initrd_size = rr_get32(bp + RR_BP_RAMDISK_SIZE) |
		      (uint64_t)rr_get32(bp + RR_BP_EXT_RAMDISK_SIZE) << 32;
	if (initrd && initrd_size) {
		ret->initrd_start = initrd;
		ret->initrd_size = initrd_size;
		rr_memmap_add_avoid(m, initrd, end_sat(initrd, initrd_size));
	}

	parse_cmdline(bp, map, ctx, m, ret);
	walk_setup_data(bp, map, ctx, m, ret);
	return 0;
}
