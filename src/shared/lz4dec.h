/* SPDX-License-Identifier: GPL-2.0-only */
/* LZ4 block decoder for the stage (hosted code decodes with liblz4; this
 * one exists because the stage is freestanding).  Built twice. */
#ifndef RERAND_LZ4DEC_H
#define RERAND_LZ4DEC_H

#include <stdint.h>

/* Decode one LZ4 block of src_len bytes into dst (capacity dst_cap).
 * Returns the number of bytes written, or -1 if the block is malformed or
 * would write past dst_cap or read past src_len. */
int64_t rr_lz4_decode_block(const uint8_t *src, uint64_t src_len, uint8_t *dst, uint64_t dst_cap);

#endif
