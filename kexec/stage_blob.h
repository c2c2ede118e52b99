/* SPDX-License-Identifier: GPL-2.0-only */
/* The purgatory stage, linked in by kexec/stage_blob.S: `rerand image` and
 * rerandd both build images with it, and key caches by its SHA-256. */
#ifndef RERAND_STAGE_BLOB_H
#define RERAND_STAGE_BLOB_H

#include <stdint.h>

extern const uint8_t rr_stage_blob[];
extern const uint8_t rr_stage_blob_end[];

#endif
