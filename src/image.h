/* SPDX-License-Identifier: GPL-2.0-only */
/* Writing and reading rerand images (bzImage-format files holding the stage,
 * the header, the kernel's segments and its relocation table). */
#ifndef RERAND_IMAGE_H
#define RERAND_IMAGE_H

#include <stddef.h>
#include <stdint.h>
#include <rerand/abi.h>
#include "kernel.h"

#define RR_IMAGE_SETUP_SECTS   1          /* setup part: 2 sectors */
#define RR_IMAGE_PM_OFFSET     ((RR_IMAGE_SETUP_SECTS + 1) * 512)
#define RR_IMAGE_PT_PAGES      64         /* page-table pool of the stage */
#define RR_IMAGE_SCRATCH_SIZE  (4096 + RR_IMAGE_PT_PAGES * 4096)
#define RR_IMAGE_ALIGNMENT     0x1000     /* what the stage really needs */
#define RR_IMAGE_PROTOCOL      0x020f
/* PE/COFF view of the same file: the setup part is SizeOfHeaders, one
 * section holds the protected-mode part, padded to the file alignment. */
#define RR_IMAGE_FILE_ALIGN    0x200
#define RR_IMAGE_SECTION_ALIGN 0x1000
#define RR_IMAGE_PE_DATA_DIRS  16
#define RR_IMAGE_EFI_STUB_OFFSET 0x40     /* in the protected-mode part */
/* kexec_file_load copies the file from the protected-mode part to its end,
 * appended signature included, into PAGE_ALIGN(init_size): this much room
 * is kept between the file and the stage's scratch area. */
#define RR_IMAGE_SIG_ROOM      (64u << 10)

struct rr_lz4par;

struct rr_image_opts {
	enum rerand_codec codec;
	int lz4_level;                      /* 0: LZ4 fast; >0: LZ4 HC level */
	/* LZ4 compression threads, the caller's included (0 or 1: the caller
	 * only); the bytes do not depend on it. */
	unsigned threads;
	/* A compressor that already saw the payload decode (rr_lz4par_decode_hook),
	 * NULL for one of `threads` threads here; its level must be lz4_level. */
	struct rr_lz4par *lz4par;
};

/* The EFI stub's bytes (src/efistub.S). */
extern const uint8_t rr_efi_stub[];
extern const uint8_t rr_efi_stub_end[];

/* SHA-256 of a stage blob, as recorded in the image header. */
int rr_stage_sha256(const uint8_t *stage, size_t len, uint8_t out[32]);

/* Build an image in memory from a loaded kernel and the stage blob.  The
 * output depends only on the kernel, the stage and the options (no time
 * stamp, no randomness): the same inputs give the same bytes. */
int rr_image_build(const struct rr_kernel *k, const uint8_t *stage, size_t stage_len,
		   const struct rr_image_opts *o, uint8_t **ret_buf, size_t *ret_len,
		   const char *name, struct rr_err *e);

/* A parsed image: pointers into the caller's buffer. */
struct rr_image {
	uint64_t pm_offset;
	uint64_t header_file_offset;        /* file offset of the header */
	struct rerand_image_header hdr;     /* copy */
	uint16_t protocol;
	uint16_t xloadflags;
	uint32_t init_size;
	uint32_t kernel_alignment;
	uint32_t cert_size;                 /* appended certificate table, 0 if unsigned */
	char     kernel_version[128];
};

/* Is this a rerand image at all (locator present)?  Cheap check. */
int rr_image_probe(const uint8_t *buf, size_t len);
/* Parse and validate every offset and size in an image.  A signed image is
 * the written file plus exactly the certificate table its PE header points
 * to; anything else past header.file_size is refused. */
int rr_image_parse(const uint8_t *buf, size_t len, const char *name,
		   struct rr_image *ret, struct rr_err *e);

/* Write buf to path atomically (temp file in the same directory, fsync,
 * rename); on error nothing is left behind. */
int rr_write_file_atomic(const char *path, const uint8_t *buf, size_t len, struct rr_err *e);
/* Write buf to an open fd and fsync it; path names it in messages.  For a
 * caller that made the file and renames it after (rerandd's builder child). */
int rr_write_fd(int fd, const char *path, const uint8_t *buf, size_t len, struct rr_err *e);

#endif
