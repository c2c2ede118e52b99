/* SPDX-License-Identifier: GPL-2.0-only */
/* The kernel file rerandd hashes into its image cache key (src/cachekey.c
 * computes the key, with Nettle's SHA-256: it says why not libcrypto's) and
 * hands to the builder as that one file, and the record of each image it
 * builds (the image loaded is the image built). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachekey.h"
#include "image.h"
#include "kernel.h"
#include "rerandd.h"

int digest_file_hex(const char *path, char hex[65], struct rr_err *e)
{
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return rr_errf(e, errno, "%s: cannot open: %s", path, strerror(errno));
	r = rr_sha256_fd_hex(fd, path, hex, e);
	close(fd);
	return r;
}

/* ---- the kernel file: hashed and handed to the builder as one file -------- */

struct rr_kernel_id digest_kernel_id(const struct stat *st)
{
	return (struct rr_kernel_id){ .dev = (uint64_t)st->st_dev, .ino = (uint64_t)st->st_ino,
				      .size = (int64_t)st->st_size,
				      .mtime_sec = (int64_t)st->st_mtim.tv_sec,
				      .mtime_nsec = (int64_t)st->st_mtim.tv_nsec };
}

/* src/fileio.c's rr_open_input: a FIFO planted at the kernel's path does
 * not hang the helper, a device is not even opened, anything but a regular
 * file is refused. */
int digest_kernel_open(const char *path, struct rr_kernel_id *id, struct rr_err *e)
{
	struct stat st;
	int fd = rr_open_input(path, "kernel", &st, e);

	if (fd >= 0)
		*id = digest_kernel_id(&st);
	return fd;
}

int digest_kernel_key(int fd, const char *path, const struct rr_kernel_id *id,
		      const char *stage_sha, struct rr_cache_key *k, struct rr_err *e)
{
	struct rr_kernel_id after;
	struct stat st;
	int r = rr_cache_key_fd(fd, path, stage_sha, k, e);

	if (r < 0)
		return r;
	if (fstat(fd, &st) < 0)
		return rr_errf(e, errno, "%s: cannot stat the kernel: %s", path, strerror(errno));
	/* changed between the open and the hash: the key is not of the file
	 * whose identity the builder is held to */
	after = digest_kernel_id(&st);
	if (!digest_kernel_same(id, &after))
		return rr_errf(e, ESTALE, "%s: changed while it was hashed (a package upgrade?)",
			       path);
	return 0;
}

bool digest_kernel_same(const struct rr_kernel_id *a, const struct rr_kernel_id *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime_sec == b->mtime_sec && a->mtime_nsec == b->mtime_nsec;
}

int digest_kernel_reopen(const char *path, const struct rr_kernel_id *want, struct rr_err *e)
{
	struct rr_kernel_id got;
	int fd = digest_kernel_open(path, &got, e);

	if (fd < 0)
		return fd;
	if (!digest_kernel_same(want, &got)) {
		close(fd);
		return rr_errf(e, ESTALE, "%s: replaced while staging (a package upgrade?): the file "
			       "is not the one hashed for the image cache; staging again", path);
	}
	return fd;
}

int digest_kernel_unchanged(int fd, const char *path, const struct rr_kernel_id *want,
			    struct rr_err *e)
{
	struct stat st;
	struct rr_kernel_id got;

	if (fstat(fd, &st) < 0)
		return rr_errf(e, errno, "%s: cannot stat the kernel after the build: %s", path,
			       strerror(errno));
	got = digest_kernel_id(&st);
	if (!digest_kernel_same(want, &got))
		return rr_errf(e, ESTALE, "%s: changed while the image was built (a package "
			       "upgrade?): the image is not cached; staging again", path);
	return 0;
}

/* ---- the record of a built image: <image>.sha256 -------------------------- */

static int record_path(const char *image, char *out, size_t len, struct rr_err *e)
{
	if (snprintf(out, len, "%s.sha256", image) >= (int)len)
		return rr_errf(e, ENAMETOOLONG, "%s: path too long", image);
	return 0;
}

int digest_record_write(const char *image, const char hex[65], struct rr_err *e)
{
	char path[RR_PATH + 200], line[RR_PATH + 200];
	const char *base = strrchr(image, '/') ? strrchr(image, '/') + 1 : image;
	int n, r = record_path(image, path, sizeof(path), e);

	if (r < 0)
		return r;
	/* sha256sum's format: `cd images && sha256sum -c NAME.sha256` checks it too */
	n = snprintf(line, sizeof(line), "%s  %s\n", hex, base);
	if (n < 0 || (size_t)n >= sizeof(line))
		return rr_errf(e, ENAMETOOLONG, "%s: name too long", image);
	return rr_write_file_atomic(path, (const uint8_t *)line, (size_t)n, e);
}

int digest_record_read(const char *image, char hex[65], struct rr_err *e)
{
	char path[RR_PATH + 200], *text;
	const char *base = strrchr(image, '/') ? strrchr(image, '/') + 1 : image;
	size_t bl = strlen(base);
	int r = record_path(image, path, sizeof(path), e);

	if (r < 0)
		return r;
	r = rr_read_text(path, 4096, &text, e);
	if (r < 0)
		return r == -ENOENT ? rr_errf(e, ENOENT, "%s: no SHA-256 was recorded when it was "
					      "built (%s is missing)", image, path) : r;
	/* exactly "HEX  NAME\n", NAME this image's */
	r = 0;
	if (strlen(text) != 64 + 2 + bl + 1 || strspn(text, "0123456789abcdef") != 64 ||
	    memcmp(text + 64, "  ", 2) || memcmp(text + 66, base, bl) || text[66 + bl] != '\n')
		r = rr_errf(e, EBADMSG, "%s: not a SHA-256 record of %s (want \"HEX  %s\")", path,
			    image, base);
	else
		snprintf(hex, 65, "%.64s", text);
	free(text);
	return r;
}

int digest_image_check(const char *image, char hex[65], struct rr_err *e)
{
	char want[65], got[65];
	int r = digest_record_read(image, want, e);

	if (r < 0)
		return r;
	r = digest_file_hex(image, got, e);
	if (r < 0)
		return r;
	if (strcmp(want, got))
		return rr_errf(e, EBADMSG, "%s: its SHA-256 is %.16s..., not the %.16s... recorded "
			       "when it was built: the file changed since (a flipped bit on disk, or "
			       "tampering)", image, got, want);
	snprintf(hex, 65, "%s", got);
	return 0;
}
