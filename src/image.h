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

struct rr_image_opts {
	enum rerand_codec codec;
	int lz4_level;                      /* 0: LZ4 fast; >0: LZ4 HC level */
};

/* Build an image in memory from a loaded kernel and the stage blob. */
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
	char     kernel_version[128];
};

/* Is this a rerand image at all (locator present)?  Cheap check. */
int rr_image_probe(const uint8_t *buf, size_t len);
/* Parse and validate every offset and size in an image. */
int rr_image_parse(const uint8_t *buf, size_t len, const char *name,
		   struct rr_image *ret, struct rr_err *e);

/* Write buf to path atomically (temp file in the same directory, fsync,
 * rename); on error nothing is left behind. */
int rr_write_file_atomic(const char *path, const uint8_t *buf, size_t len, struct rr_err *e);

#endif
