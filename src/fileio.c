/* SPDX-License-Identifier: GPL-2.0-only */
/* Whole-file reads and atomic writes for the tools. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image.h"
#include "kernel.h"

int rr_read_file(const char *path, size_t max, uint8_t **ret_buf, size_t *ret_len, struct rr_err *e)
{
	struct stat st;
	uint8_t *buf;
	size_t got = 0;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rr_errf(e, errno, "%s: cannot open: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0) {
		r = rr_errf(e, errno, "%s: cannot stat: %s", path, strerror(errno));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		r = rr_errf(e, EINVAL, "%s: not a regular file", path);
		goto out_close;
	}
	if ((uint64_t)st.st_size > max) {
		r = rr_errf(e, EFBIG, "%s: %lld bytes is larger than the %zu-byte limit", path,
			    (long long)st.st_size, max);
		goto out_close;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		r = rr_errf(e, ENOMEM, "%s: out of memory", path);
		goto out_close;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = rr_errf(e, errno, "%s: read error: %s", path, strerror(errno));
			free(buf);
			goto out_close;
		}
		if (n == 0) {
			r = rr_errf(e, EIO, "%s: file shrank while being read (%zu of %lld bytes)",
				    path, got, (long long)st.st_size);
			free(buf);
			goto out_close;
		}
		got += (size_t)n;
	}
	*ret_buf = buf;
	*ret_len = got;
	r = 0;
out_close:
	close(fd);
	return r;
}

int rr_write_file_atomic(const char *path, const uint8_t *buf, size_t len, struct rr_err *e)
{
	char tmp[PATH_MAX];
	size_t done = 0;
	int fd, r;

	if (snprintf(tmp, sizeof(tmp), "%s.tmpXXXXXX", path) >= (int)sizeof(tmp))
		return rr_errf(e, ENAMETOOLONG, "%s: path too long", path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return rr_errf(e, errno, "%s: cannot create a temporary file: %s", path, strerror(errno));
	while (done < len) {
		ssize_t n = write(fd, buf + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = errno;
			goto fail;
		}
		done += (size_t)n;
	}
	if (fchmod(fd, 0644) < 0 || fsync(fd) < 0) {
		r = errno;
		goto fail;
	}
	if (close(fd) < 0) {
		r = errno;
		fd = -1;
		goto fail;
	}
	if (rename(tmp, path) < 0) {
		r = errno;
		unlink(tmp);
		return rr_errf(e, r, "%s: cannot rename into place: %s", path, strerror(r));
	}
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return rr_errf(e, r, "%s: write failed: %s", path, strerror(r));
}
