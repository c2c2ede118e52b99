/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The ABI shared by the rerand tools and the purgatory stage: the image
 * header written by `rerand image`, and the status record the stage leaves
 * for the next kernel.  Fixed-width types only; this header is included by
 * freestanding code.
 */
#ifndef RERAND_ABI_H
#define RERAND_ABI_H

#include <stdint.h>
#include <stddef.h>

/* Kernel layout facts (see KERNEL-FACTS.md). */
#define RERAND_LOAD_PHYSICAL_ADDR 0x1000000ULL          /* link-time physical base */
#define RERAND_START_KERNEL_MAP   0xffffffff80000000ULL
#define RERAND_LINK_TEXT          (RERAND_START_KERNEL_MAP + RERAND_LOAD_PHYSICAL_ADDR)
#define RERAND_KERNEL_IMAGE_SIZE  0x40000000ULL          /* 1 GiB with KASLR */
#define RERAND_SLOT_ALIGN         0x200000ULL            /* 2 MiB */
#define RERAND_MIN_PHYS           0x1000000ULL           /* 16 MiB floor */
#define RERAND_MAX_PHYS_4LEVEL    (1ULL << 46)           /* 64 TiB */
#define RERAND_MAX_PHYS_5LEVEL    (1ULL << 52)           /* 4 PiB */

/* Boot protocol bits we read or set. */
#define RERAND_LOADED_HIGH        0x01
#define RERAND_KASLR_FLAG         0x02
#define RERAND_XLF_KERNEL_64      0x01
#define RERAND_XLF_CAN_BE_LOADED_ABOVE_4G 0x02
#define RERAND_XLF_EFI_KEXEC      0x10
#define RERAND_XLF_5LEVEL         0x20

/*
 * Protected-mode part of an image, offsets from its first byte (the address
 * the loader placed it at):
 *   0x000  32-bit entry stub (halts: the image is entered only in 64-bit mode)
 *   0x010  struct rerand_locator
 *   0x040  EFI stub, the PE entry point (written by `rerand image` into the
 *          stage's zero padding: prints one line, returns EFI_UNSUPPORTED)
 *   0x200  stage entry (64-bit, RSI = boot_params)
 *   ...    rest of the stage
 *   hdr    struct rerand_image_header (RERAND_HDR_ALIGN aligned)
 *   ...    segment payloads, then the relocation table, zero-padded to 512
 *   ...    (signed images) the Authenticode certificate table, < 64 KiB
 *   scratch (not in the file; inside init_size): page tables, status record
 */
#define RERAND_LOCATOR_OFFSET     0x10
#define RERAND_ENTRY64_OFFSET     0x200
#define RERAND_HDR_ALIGN          64
#define RERAND_LOCATOR_MAGIC      "RRLOCATE"

struct rerand_locator {
	char     magic[8];              /* RERAND_LOCATOR_MAGIC, no NUL */
	uint32_t header_offset;         /* from the protected-mode start */
	uint32_t stage_size;            /* bytes of stage code and data */
};

#define RERAND_IMAGE_MAGIC        "RERANDIH"
#define RERAND_IMAGE_VERSION      3          /* 2: stage_sha256; 3: the boot header passes on
						* the kernel's XLF_EFI_KEXEC (a cached v2 image is
						* rebuilt: the stage, and so the cache key, changed) */
#define RERAND_MAX_SEGMENTS       8
#define RERAND_SEED_SIZE          32

enum rerand_codec {
	RERAND_CODEC_NONE = 0,
	RERAND_CODEC_LZ4  = 1,          /* one LZ4 block per segment */
};

struct rerand_segment {
	uint64_t mem_offset;            /* p_paddr - link_paddr */
	uint64_t mem_size;              /* p_memsz */
	uint64_t file_size;             /* p_filesz: bytes produced by decoding */
	uint64_t data_offset;           /* stored bytes, from protected-mode start */
	uint64_t data_size;             /* stored (possibly compressed) size */
};

struct rerand_image_header {
	char     magic[8];              /* RERAND_IMAGE_MAGIC, no NUL */
	uint16_t version;               /* RERAND_IMAGE_VERSION */
	uint16_t header_size;           /* sizeof(struct rerand_image_header) */
	uint32_t flags;                 /* reserved, 0 */
	uint32_t codec;                 /* enum rerand_codec */
	uint32_t nr_segments;
	uint64_t mem_size;              /* in-memory size: PT_LOAD extent (_end - _text) */
	uint64_t entry_offset;          /* e_entry - link_paddr */
	uint64_t link_paddr;            /* lowest p_paddr (LOAD_PHYSICAL_ADDR) */
	uint32_t reloc_layout;          /* 2 or 3 lists in the original table */
	uint32_t nr_reloc64;
	uint32_t nr_inverse32;
	uint32_t nr_reloc32;
	uint64_t relocs_offset;         /* u32 entries: reloc64[], inverse32[], reloc32[] */
	uint64_t file_size;             /* bytes of the protected-mode part in the file */
	uint64_t scratch_offset;        /* 4 KiB aligned, inside init_size */
	uint64_t scratch_size;
	uint8_t  seed[RERAND_SEED_SIZE];/* zero on disk; filled by `rerand load` in memory */
	struct rerand_segment seg[RERAND_MAX_SEGMENTS];
	/* SHA-256 of the stage blob as built (build/stage.bin: locator and the
	 * EFI stub's bytes not yet filled in), so that caches and fleets can tell
	 * which stage an image carries. */
	uint8_t  stage_sha256[32];
};

_Static_assert(sizeof(struct rerand_locator) == 16, "locator size");
_Static_assert(sizeof(struct rerand_segment) == 40, "segment size");
_Static_assert(offsetof(struct rerand_image_header, seed) == 96, "seed offset");
_Static_assert(offsetof(struct rerand_image_header, stage_sha256) == 448, "stage hash offset");
_Static_assert(sizeof(struct rerand_image_header) == 480, "header size");

/*
 * The status record: a setup_data node the stage appends to the chain, shown
 * by the next kernel in /sys/kernel/boot_params/setup_data/N/{type,data}.
 * World-readable, so it must never hold an address or anything that reveals one.
 */
#define RERAND_SETUP_TYPE         0x52520001u   /* "RR", 1; bit 31 (INDIRECT) clear */
#define RERAND_STATUS_MAGIC       "RERANDST"
#define RERAND_STATUS_VERSION     2   /* 1: 64 bytes, ended with stage_cycles */

enum rerand_result {
	RERAND_RES_RANDOMIZED = 1,      /* both bases drawn from the full slot sets */
	RERAND_RES_NOKASLR    = 2,      /* nokaslr: default virtual base, lowest physical slot */
	RERAND_RES_NO_SLOT    = 3,      /* nothing fits the rules: lowest place that fits */
};

/* Entropy sources (bitmask), used and rejected. */
#define RERAND_SRC_SEED           0x01   /* image header seed from `rerand load` */
#define RERAND_SRC_RDSEED         0x02
#define RERAND_SRC_RDRAND         0x04
#define RERAND_SRC_RDTSC          0x08
#define RERAND_SRC_KERNEL_SEED    0x20   /* SETUP_RNG_SEED node(s) from the old kernel or kexec-tools */

/* Status flags. */
#define RERAND_ST_LA57            0x01   /* entered with 5-level paging */
#define RERAND_ST_EFI_MAP         0x02   /* memory map came from the EFI map */
#define RERAND_ST_DEBUG           0x04   /* rerand.debug was on the command line */
#define RERAND_ST_CRASH           0x08   /* elfcorehdr= present: a crash kernel boot */
#define RERAND_ST_WEAK            0x10   /* no source but RDTSC (or none at all) */

struct rerand_status {
	char     magic[8];              /* RERAND_STATUS_MAGIC */
	uint16_t version;
	uint16_t size;                  /* sizeof(struct rerand_status) */
	uint32_t result;                /* enum rerand_result */
	uint32_t flags;                 /* RERAND_ST_* */
	uint32_t sources_used;          /* RERAND_SRC_* mixed into the choice */
	uint32_t sources_rejected;      /* present but failing or stuck */
	uint32_t ram_ranges;            /* usable RAM ranges considered */
	uint32_t avoided_ranges;        /* ranges kept clear */
	uint32_t image_version;
	uint64_t phys_slots;            /* slot counts: sizes of the sets drawn from */
	uint64_t virt_slots;
	/* Version 1 had a uint64_t stage_cycles here: a timing signal about
	 * where the slot walk stopped, readable by anyone.  Dropped in 2. */
};

#define RERAND_STATUS_V1_SIZE     64
_Static_assert(sizeof(struct rerand_status) == 56, "status size");
_Static_assert(offsetof(struct rerand_status, virt_slots) == 48, "status layout");

/* Linux's setup_data node header. */
struct rerand_setup_data {
	uint64_t next;
	uint32_t type;
	uint32_t len;
};

#endif
