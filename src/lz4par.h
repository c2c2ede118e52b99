/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Parallel LZ4 compression of an image's segments.  Each segment is cut into
 * RR_LZ4PAR_CHUNK-byte chunks that liblz4 compresses independently, on
 * worker threads and while the payload is still being decoded; the chunks'
 * blocks are then joined into the one LZ4 block per segment that the image
 * format and the stage expect.  Chunk boundaries depend only on the
 * segment, never on the thread count, so the image's bytes do not either.
 */
#ifndef RERAND_LZ4PAR_H
#define RERAND_LZ4PAR_H

#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"

/* Part of the image format's reproducibility: changing it changes the bytes
 * of every image (not their meaning). */
#define RR_LZ4PAR_CHUNK ((size_t)1 << 20)
#define RR_LZ4PAR_MAX_THREADS 64

struct rr_lz4par;

/* threads: how many threads compress in all, the caller's included (it
 * helps once it waits for a block); 0 or 1 compresses in the caller only.
 * level: 0 LZ4 fast, > 0 LZ4 HC at that level. */
int rr_lz4par_new(unsigned threads, int level, struct rr_lz4par **ret);
/* Stops and joins the workers; queued work is dropped. */
void rr_lz4par_free(struct rr_lz4par *p);
RR_DEFINE_CLEANUP_FUNC(struct rr_lz4par *, rr_lz4par_free)

/* The decoder's progress hook (struct rr_dec_hook in kernel.h): buf[0, len)
 * of a payload of `total` bytes is final.  The first call that holds the
 * ELF program headers queues every PT_LOAD's bytes; later calls release the
 * chunks that are now decoded to the workers. */
void rr_lz4par_decode_hook(void *p, const uint8_t *buf, size_t len, size_t total);

/* The single LZ4 block of base[off, off + len) into dst (cap bytes): waits
 * for the chunks queued by the hook, compresses whatever was not queued.
 * -ENOSPC if cap is short, -EIO if liblz4 fails. */
int rr_lz4par_block(struct rr_lz4par *p, const uint8_t *base, size_t off, size_t len,
		    uint8_t *dst, size_t cap, size_t *ret_len);

/* How many chunks the decode hook queued, and how many of those were
 * compressed before the decoder finished (the overlap won). */
void rr_lz4par_stats(struct rr_lz4par *p, size_t *ret_hooked, size_t *ret_early);

/* Room a block of len bytes may need (the chunks' bounds, summed). */
size_t rr_lz4par_bound(size_t len);

/* Threads for "all cores": the CPUs this process may run on, at most
 * RR_LZ4PAR_MAX_THREADS. */
unsigned rr_lz4par_default_threads(void);

#endif
