/* SPDX-License-Identifier: GPL-2.0-only */
/* LZ4 block decoder for the stage (hosted code decodes with liblz4; this
 * one exists because the stage is freestanding).  Built twice. */
#ifndef RERAND_LZ4DEC_H
#define RERAND_LZ4DEC_H

#include <stdint.h>

/* The widest vector registers a decode may use.  The caller vouches that the
 * CPU has them and that they are enabled: the stage turns them on itself
 * (kexec leaves CR4.OSFXSR and OSXSAVE clear), hosted code has the OS's. */
enum rr_simd {
	RR_SIMD_NONE = 0,      /* general-purpose registers, 8-byte moves */
	RR_SIMD_SSE2 = 1,      /* 16-byte moves (xmm) */
	RR_SIMD_AVX2 = 2,      /* 32-byte moves (ymm); leaves the upper halves zeroed */
};

/* Decode one LZ4 block of src_len bytes into dst (capacity dst_cap).
 * Returns the number of bytes written, or -1 if the block is malformed or
 * would write past dst_cap or read past src_len.  Every simd level accepts
 * and refuses the same blocks and writes the same bytes. */
int64_t rr_lz4_decode_block_simd(const uint8_t *src, uint64_t src_len, uint8_t *dst,
				 uint64_t dst_cap, enum rr_simd simd);

/* The same with general-purpose registers only (RR_SIMD_NONE). */
int64_t rr_lz4_decode_block(const uint8_t *src, uint64_t src_len, uint8_t *dst, uint64_t dst_cap);

#endif
