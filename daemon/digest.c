/* SPDX-License-Identifier: GPL-2.0-only */
/* SHA-256 for rerandd's image cache key (the kernel file and the stage it
 * carries), from OpenSSL's libcrypto. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "rerandd.h"

static void to_hex(const unsigned char *md, char hex[65])
{
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

int digest_hex(const void *p, size_t n, char hex[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;

	if (!EVP_Digest(p, n, md, &len, EVP_sha256(), NULL) || len != 32)
		return -EIO;
	to_hex(md, hex);
	return 0;
}

/* Streamed: a kernel is tens of MiB and is hashed at every /boot change. */
int digest_file_hex(const char *path, char hex[65], struct rr_err *e)
{
	unsigned char buf[65536], md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	EVP_MD_CTX *ctx;
	int fd, r = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rr_errf(e, errno, "%s: cannot open: %s", path, strerror(errno));
	ctx = EVP_MD_CTX_new();
	if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		r = rr_errf(e, ENOMEM, "%s: cannot start SHA-256 (libcrypto)", path);
		goto out;
	}
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = rr_errf(e, errno, "%s: read failed: %s", path, strerror(errno));
			goto out;
		}
		if (!n)
			break;
		if (!EVP_DigestUpdate(ctx, buf, (size_t)n)) {
			r = rr_errf(e, EIO, "%s: SHA-256 failed (libcrypto)", path);
			goto out;
		}
	}
	if (!EVP_DigestFinal_ex(ctx, md, &len) || len != 32) {
		r = rr_errf(e, EIO, "%s: SHA-256 failed (libcrypto)", path);
		goto out;
	}
	to_hex(md, hex);
out:
	EVP_MD_CTX_free(ctx);
	close(fd);
	return r;
}
