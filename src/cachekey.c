/* SPDX-License-Identifier: GPL-2.0-only */
/* The image cache key (cachekey.h).  SHA-256 from Nettle, not OpenSSL's
 * libcrypto: rerandd computes this key, and the first EVP digest wakes
 * OpenSSL 3's provider machinery, which then stays resident for the
 * daemon's life (about 2 MiB of its idle RSS, issue 28;
 * bench/rerandd-idle.sh). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nettle/sha2.h>

#include "cachekey.h"
#include "kernel.h"

static void to_hex(const unsigned char *md, char hex[65])
{
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

int rr_sha256_hex(const void *p, size_t n, char hex[65])
{
	struct sha256_ctx ctx;
	unsigned char md[SHA256_DIGEST_SIZE];

	sha256_init(&ctx);
	sha256_update(&ctx, n, p);
	sha256_digest(&ctx, sizeof(md), md);
	to_hex(md, hex);
	return 0;
}

/* Streamed: a kernel is tens of MiB and rerandd hashes it at every /boot
 * change.  pread from 0, so the fd's offset is neither used nor moved. */
int rr_sha256_fd_hex(int fd, const char *name, char hex[65], struct rr_err *e)
{
	unsigned char buf[65536], md[SHA256_DIGEST_SIZE];
	struct sha256_ctx ctx;
	off_t off = 0;

	sha256_init(&ctx);
	for (;;) {
		ssize_t n = pread(fd, buf, sizeof(buf), off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return rr_errf(e, errno, "%s: read failed: %s", name, strerror(errno));
		if (!n)
			break;
		off += n;
		sha256_update(&ctx, (size_t)n, buf);
	}
	sha256_digest(&ctx, sizeof(md), md);
	to_hex(md, hex);
	return 0;
}

int rr_cache_key_stage(const uint8_t *stage, size_t stage_len, char hex[65])
{
	return rr_sha256_hex(stage, stage_len, hex);
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

int rr_cache_key_fd(int fd, const char *name, const char *stage_sha, struct rr_cache_key *k,
		    struct rr_err *e)
{
	struct stat before, after;
	int r;

	memset(k, 0, sizeof(*k));
	if (!stage_sha || strlen(stage_sha) != 64)
		return rr_errf(e, EIO, "no hash of the built-in stage");
	if (fstat(fd, &before) < 0)
		return rr_errf(e, errno, "%s: cannot stat the kernel: %s", name, strerror(errno));
	if (!S_ISREG(before.st_mode))
		return rr_errf(e, EINVAL, "%s: %s, not a regular file: a kernel must be one", name,
			       rr_file_type_name(before.st_mode));
	r = rr_sha256_fd_hex(fd, name, k->kernel_sha, e);
	if (r < 0)
		return r;
	if (fstat(fd, &after) < 0)
		return rr_errf(e, errno, "%s: cannot stat the kernel: %s", name, strerror(errno));
	/* written to in place while it was read (not dpkg's way, which
	 * renames a new file over the path) */
	if (!same_file(&before, &after))
		return rr_errf(e, ESTALE, "%s: changed while it was hashed (a package upgrade?)",
			       name);
	memcpy(k->stage_sha, stage_sha, sizeof(k->stage_sha));
	snprintf(k->key, sizeof(k->key), "%s.%s", k->kernel_sha, k->stage_sha);
	return 0;
}

int rr_cache_image_name(const struct rr_cache_key *k, bool signed_here, char *out, size_t len)
{
	int n = snprintf(out, len, "%s%s", k->key, signed_here ? ".signed.img" : ".img");

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}
