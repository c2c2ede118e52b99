/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Reading the live memory map and the regions to keep clear out of Linux's
 * boot_params (zero page): e820 (and SETUP_E820_EXT), the EFI memory map
 * when it holds conventional memory, the initrd, the command line and every
 * setup_data node.  Physical memory is reached only through a map callback,
 * so the stage can map pages on demand and hosted tests and fuzzers can feed
 * a fake machine.  Built twice; bounded reads everywhere.
 */
#ifndef RERAND_BOOTPARAMS_H
#define RERAND_BOOTPARAMS_H

#include <stdbool.h>
#include <stdint.h>
#include "rng.h"
#include "select.h"

#define RR_BOOT_PARAMS_SIZE   4096
#define RR_MAX_SETUP_NODES    64      /* more than this: stop walking, overflow */
#define RR_CMDLINE_MAX        4096
#define RR_MAX_SEED_NODES     4       /* SETUP_RNG_SEED nodes taken; more are left alone */
#define RR_SEED_NODE_MAX      256     /* bytes of one node taken (kexec gives 32) */

/* Boot_params offsets used (Documentation/arch/x86/zero-page.rst). */
#define RR_BP_EXT_RAMDISK_IMAGE 0x0c0
#define RR_BP_EXT_RAMDISK_SIZE  0x0c4
#define RR_BP_EXT_CMD_LINE_PTR  0x0c8
#define RR_BP_EFI_INFO          0x1c0
#define RR_BP_E820_ENTRIES      0x1e8
#define RR_BP_HDR               0x1f1
#define RR_BP_LOADFLAGS         0x211
#define RR_BP_RAMDISK_IMAGE     0x218
#define RR_BP_RAMDISK_SIZE      0x21c
#define RR_BP_CMD_LINE_PTR      0x228
#define RR_BP_CMDLINE_SIZE      0x238
#define RR_BP_SETUP_DATA        0x250
#define RR_BP_E820_TABLE        0x2d0
#define RR_E820_MAX_ZEROPAGE    128

#define RR_E820_RAM             1
#define RR_SETUP_E820_EXT       1
#define RR_SETUP_DTB            2     /* the DTB is the node's own data */
#define RR_SETUP_IMA            8     /* {u64 addr, u64 size}: IMA's measurement list */
#define RR_SETUP_RNG_SEED       9
#define RR_SETUP_KEXEC_KHO      10    /* {fdt_addr, fdt_size, scratch_addr, scratch_size} */
#define RR_MAX_KHO_SCRATCH      32    /* scratch areas taken; more: overflow */
#define RR_SETUP_INDIRECT       (1u << 31)
#define RR_EFI_CONVENTIONAL     7
#define RR_EFI_MORE_RELIABLE    0x10000ULL
#define RR_EFI_SPECIFIC_PURPOSE 0x40000ULL

/*
 * Return a pointer through which `len` bytes at physical address `phys` can
 * be read (and, for boot_params and setup_data, written), or NULL if that
 * range cannot be reached.  The pointer stays valid for the whole parse.
 */
typedef void *(*rr_phys_map_fn)(void *ctx, uint64_t phys, uint64_t len);

struct rr_bootinfo {
	uint64_t cmdline_phys;        /* 0 if none */
	uint64_t cmdline_len;         /* strnlen, bounded by RR_CMDLINE_MAX */
	const char *cmdline;          /* mapped pointer, or NULL */
	uint64_t initrd_start;
	uint64_t initrd_size;
	bool     efi_map_used;        /* RAM came from the EFI map */
	bool     efi_mirror_only;     /* ...and only mirrored ranges were taken */
	unsigned nr_setup_nodes;
	bool     setup_overflow;      /* chain longer than RR_MAX_SETUP_NODES or loops */
	uint64_t setup_tail_phys;     /* last node, where a new node is chained; 0: none */
	/* SETUP_RNG_SEED nodes: mapped (writable) data, len capped at
	 * RR_SEED_NODE_MAX.  Those with len 0, unmappable data, or beyond
	 * RR_MAX_SEED_NODES are counted in seed_skipped and not taken. */
	struct rr_seed_span seed[RR_MAX_SEED_NODES];
	unsigned nr_seed;
	unsigned seed_skipped;
	/* SETUP_KEXEC_KHO (Kexec HandOver, 6.16+): placement was confined to
	 * its scratch areas, as the kernel's own KASLR does */
	bool     kho;
	unsigned nr_kho_scratch;
};

/*
 * Parse boot_params at physical address bp_phys.  Adds usable RAM and every
 * range to avoid (boot_params itself, command line, initrd, setup_data nodes
 * of every type with their data, SETUP_INDIRECT targets, the buffer a
 * SETUP_IMA node points at, a SETUP_KEXEC_KHO node's FDT and scratch table,
 * the EFI memory map) to m.  With a SETUP_KEXEC_KHO node whose scratch table
 * lists areas, everything outside those areas is avoided too: the memory
 * KHO preserves lies there, and the kernel's KASLR draws from scratch only.
 * A pointer node whose data cannot be read, or a scratch table that cannot
 * be read or holds more than RR_MAX_KHO_SCRATCH areas, sets m->overflow.  Returns 0, or -1 if
 * boot_params itself cannot be mapped.  Never a bad read: an unmappable node
 * header, a chain longer than RR_MAX_SETUP_NODES or a loop ends the walk with
 * setup_overflow set.  Where a range the next kernel needs may then be
 * unknown (unmappable node or indirect data, too long a chain; not a loop,
 * whose nodes were all seen) m->overflow is set too, so no physical slot is
 * offered.  An E820_EXT payload or EFI map that cannot be mapped only loses
 * RAM.  A command line with no NUL within what maps is avoided for
 * RR_CMDLINE_MAX bytes; ret->cmdline may then be unterminated: use
 * cmdline_len.  Direct SETUP_RNG_SEED nodes are listed in ret->seed for the
 * caller to mix and overwrite (the kernel reads only direct ones).
 */
int rr_bootparams_parse(uint64_t bp_phys, rr_phys_map_fn map, void *ctx,
			struct rr_memmap *m, struct rr_bootinfo *ret);

#endif
