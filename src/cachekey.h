/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The image cache key, in one place for every program that names a cached
 * image: rerandd (daemon/stage_plan.c) and `rerand cache-key`, which the
 * Debian kernel hook asks.  An image is cached as
 * <state>/images/KEY.img (KEY.signed.img when rerandd signed it), where KEY
 * is the SHA-256 of the kernel file, a dot, and the SHA-256 of the stage the
 * image carries: a kernel replaced without the hook, or a rerand upgrade (a
 * new stage), can never be matched with a stale image.  SHA-256 from
 * Nettle (cachekey.c says why not libcrypto): no libelf and no compressor,
 * so the readers' programs link it.
 */
#ifndef RERAND_CACHEKEY_H
#define RERAND_CACHEKEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* SHA-256 of n bytes as 64 lowercase hex digits; 0 (Nettle cannot fail). */
int rr_sha256_hex(const void *p, size_t n, char hex[65]);
/* The same of an open file, read with pread from offset 0 (the offset is
 * neither used nor moved: the fd can go on to the builder); name for
 * messages. */
int rr_sha256_fd_hex(int fd, const char *name, char hex[65], struct rr_err *e);

#define RR_CACHE_KEY_LEN (64 + 1 + 64)

struct rr_cache_key {
	char kernel_sha[65];                 /* the kernel file's SHA-256 */
	char stage_sha[65];                  /* the stage's SHA-256 */
	char key[RR_CACHE_KEY_LEN + 1];      /* kernel_sha "." stage_sha */
};

/* The stage's half of the key: the SHA-256 of the stage's bytes as linked
 * into the program (the image records the same in its header). */
int rr_cache_key_stage(const uint8_t *stage, size_t stage_len, char hex[65]);
/* The key of the image of the kernel open as fd (a regular file, name for
 * messages) carrying the stage whose rr_cache_key_stage is stage_sha (a
 * program hashes its stage once, not at every key).  -EINVAL for anything
 * but a regular file, -ESTALE if the file changed while it was hashed: a
 * hash of no one content keys nothing. */
int rr_cache_key_fd(int fd, const char *name, const char *stage_sha, struct rr_cache_key *k,
		    struct rr_err *e);
/* The image's file name in the cache: KEY.img, or KEY.signed.img for an
 * image signed where it was cached.  -ENAMETOOLONG if len is too short. */
int rr_cache_image_name(const struct rr_cache_key *k, bool signed_here, char *out, size_t len);

#endif
