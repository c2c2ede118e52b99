/* SPDX-License-Identifier: GPL-2.0-only */
/* The purgatory stage (build/stage.bin), linked in by src/stage_blob.S, its
 * own object (the Makefile's STAGE_BLOB, not in librerand.a): `rerand
 * image` and rerandd both build images with it, and key caches by its
 * SHA-256. */
#ifndef RERAND_STAGE_BLOB_H
#define RERAND_STAGE_BLOB_H

#include <stdint.h>

extern const uint8_t rr_stage_blob[];
extern const uint8_t rr_stage_blob_end[];

#endif
