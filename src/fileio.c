/* SPDX-License-Identifier: GPL-2.0-only */
/* Whole-file reads and atomic writes for the tools. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "image.h"
#include "kernel.h"

#define THP_SIZE ((uintptr_t)2 << 20)

void rr_mem_thp(void *p, size_t len)
{
	uintptr_t a = ((uintptr_t)p + THP_SIZE - 1) & ~(THP_SIZE - 1);
	uintptr_t end = ((uintptr_t)p + len) & ~(THP_SIZE - 1);

	/* Smaller buffers come from the heap, which may share their pages. */
	if (!p || len < 4 * THP_SIZE || end <= a)
		return;
	(void)madvise((void *)a, end - a, MADV_HUGEPAGE);
}

/*
 * Reads to EOF, never by st_size: procfs and sysfs files report size 0 in
 * stat() (6.1's /proc/cmdline and /proc/stat), and a file may grow while it
 * is read.  More than max bytes is an error, not a truncation.
 */
int rr_read_file(const char *path, size_t max, uint8_t **ret_buf, size_t *ret_len, struct rr_err *e)
{
	/* Not opened at all unless it is a regular file: opening a device can
	 * act (/dev/watchdog arms the watchdog, a tape rewinds), and a FIFO
	 * blocks until a writer comes (`rerand inspect FIFO` hung).  The open
	 * keeps O_NONBLOCK for a FIFO swapped in after the stat, which
	 * rr_read_fd refuses after its fstat.  Regular files ignore the flag,
	 * but it is cleared anyway for the read. */
	struct stat st;
	_cleanup_close_ int fd = -1;

	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return rr_errf(e, EINVAL, "%s: %s, not a regular file: refused", path,
			       rr_file_type_name(st.st_mode));
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		int r = errno;

		/* A socket cannot be opened (ENXIO): say what it is instead. */
		if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
			return rr_errf(e, EINVAL, "%s: %s, not a regular file: refused", path,
				       rr_file_type_name(st.st_mode));
		return rr_errf(e, r, "%s: cannot open: %s", path, strerror(r));
	}
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && fcntl(fd, F_SETFL, O_RDONLY) < 0)
		return rr_errf(e, errno, "%s: cannot clear O_NONBLOCK: %s", path, strerror(errno));
	return rr_read_fd(TAKE_FD(fd), path, max, ret_buf, ret_len, e);
}

const char *rr_file_type_name(unsigned mode)
{
	return S_ISFIFO(mode) ? "a FIFO" : S_ISSOCK(mode) ? "a socket" :
	       S_ISCHR(mode) ? "a character device" : S_ISBLK(mode) ? "a block device" :
	       S_ISDIR(mode) ? "a directory" : S_ISLNK(mode) ? "a symbolic link" : "not a regular file";
}

int rr_check_input_file(const char *path, const char *what, struct stat *ret, struct rr_err *e)
{
	struct stat st;

	/* stat, not open: a FIFO or a device must not be opened at all. */
	if (stat(path, &st) < 0)
		return rr_errf(e, errno, "%s: cannot read the %s: %s", path, what, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return rr_errf(e, EINVAL, "%s: the %s is %s, not a regular file: refused", path, what,
			       rr_file_type_name(st.st_mode));
	if (ret)
		*ret = st;
	return 0;
}

int rr_open_input(const char *path, const char *what, struct stat *ret, struct rr_err *e)
{
	struct stat st;
	_cleanup_close_ int fd = -1;
	int r;

	/* stat first: a device is not even opened (opening /dev/watchdog
	 * arms it); O_NONBLOCK: a FIFO swapped in after the stat does not
	 * hang the open, and the fstat refuses it. */
	r = rr_check_input_file(path, what, NULL, e);
	if (r < 0)
		return r;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return rr_errf(e, errno, "%s: cannot open the %s: %s", path, what, strerror(errno));
	if (fstat(fd, &st) < 0)
		return rr_errf(e, errno, "%s: cannot stat the %s: %s", path, what, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return rr_errf(e, EINVAL, "%s: the %s is %s, not a regular file: refused", path, what,
			       rr_file_type_name(st.st_mode));
	if (fcntl(fd, F_SETFL, O_RDONLY) < 0)
		return rr_errf(e, errno, "%s: cannot clear O_NONBLOCK: %s", path, strerror(errno));
	if (ret)
		*ret = st;
	return TAKE_FD(fd);
}

int rr_read_fd(int fd, const char *path, size_t max, uint8_t **ret_buf, size_t *ret_len,
	       struct rr_err *e)
{
	_cleanup_close_ int owned = fd;         /* ours to close, whatever happens */
	_cleanup_free_ uint8_t *buf = NULL;
	struct stat st;
	size_t got = 0, cap;

	if (fstat(fd, &st) < 0)
		return rr_errf(e, errno, "%s: cannot stat: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return rr_errf(e, EINVAL, "%s: %s, not a regular file: refused", path,
			       rr_file_type_name(st.st_mode));
	if ((uint64_t)st.st_size > max)
		return rr_errf(e, EFBIG, "%s: %lld bytes is larger than the %zu-byte limit", path,
			       (long long)st.st_size, max);
	/* st_size is a hint (0 on procfs); one byte more detects EOF or growth. */
	cap = (size_t)st.st_size + 1;
	if (cap < 4096)
		cap = 4096;
	if (cap > max + 1)
		cap = max + 1;
	for (;;) {
		ssize_t n;

		if (got == cap) {
			/* got <= max here: larger reads fail below. */
			size_t ncap = cap > (max + 1) / 2 ? max + 1 : cap * 2;
			uint8_t *nb = realloc(buf, ncap);

			if (!nb)
				return rr_errf(e, ENOMEM, "%s: out of memory", path);
			buf = nb;
			rr_mem_thp(buf + got, ncap - got);
			cap = ncap;
		}
		if (!buf) {
			buf = malloc(cap);
			if (!buf)
				return rr_errf(e, ENOMEM, "%s: out of memory", path);
			rr_mem_thp(buf, cap);
		}
		n = read(fd, buf + got, cap - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return rr_errf(e, errno, "%s: read error: %s", path, strerror(errno));
		if (n == 0)
			break;
		got += (size_t)n;
		if (got > max)
			return rr_errf(e, EFBIG, "%s: larger than the %zu-byte limit", path, max);
	}
	*ret_buf = TAKE_PTR(buf);
	*ret_len = got;
	return 0;
}

int rr_read_file_at(int dfd, const char *name, size_t max, uint8_t **ret_buf, size_t *ret_len,
		    struct rr_err *e)
{
	struct stat st;
	_cleanup_close_ int fd = -1;

	/* as rr_read_file: a device is not even opened, and O_NONBLOCK keeps
	 * a FIFO swapped in after the stat from hanging the open */
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
		return rr_errf(e, S_ISLNK(st.st_mode) ? ELOOP : EINVAL, "%s: %s, not a regular "
			       "file: refused", name, rr_file_type_name(st.st_mode));
	fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0)
		return rr_errf(e, errno, "%s: cannot open: %s", name, strerror(errno));
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && fcntl(fd, F_SETFL, O_RDONLY) < 0)
		return rr_errf(e, errno, "%s: cannot clear O_NONBLOCK: %s", name, strerror(errno));
	return rr_read_fd(TAKE_FD(fd), name, max, ret_buf, ret_len, e);
}

/* buf of len bytes as a NUL-terminated string, in place (buf is taken) */
static int text_of(uint8_t *buf, size_t len, const char *path, char **ret, struct rr_err *e)
{
	char *text = realloc(buf, len + 1);
	if (!text) {
		free(buf);
		return rr_errf(e, ENOMEM, "%s: out of memory", path);
	}
	text[len] = 0;
	*ret = text;
	return 0;
}

int rr_read_text(const char *path, size_t max, char **ret, struct rr_err *e)
{
	uint8_t *buf;
	size_t len;
	int r;

	r = rr_read_file(path, max, &buf, &len, e);
	return r < 0 ? r : text_of(buf, len, path, ret, e);
}

int rr_read_text_at(int dfd, const char *name, size_t max, char **ret, struct rr_err *e)
{
	uint8_t *buf;
	size_t len;
	int r;

	r = rr_read_file_at(dfd, name, max, &buf, &len, e);
	return r < 0 ? r : text_of(buf, len, name, ret, e);
}

int rr_write_fd(int fd, const char *path, const uint8_t *buf, size_t len, struct rr_err *e)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, buf + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return rr_errf(e, errno, "%s: write failed: %s", path, strerror(errno));
		done += (size_t)n;
	}
	if (fsync(fd) < 0)
		return rr_errf(e, errno, "%s: fsync failed: %s", path, strerror(errno));
	return 0;
}

int rr_write_file_atomic(const char *path, const uint8_t *buf, size_t len, struct rr_err *e)
{
	char tmp[PATH_MAX];
	_cleanup_unlink_ char *made = NULL;     /* the temporary file, until renamed */
	_cleanup_close_ int fd = -1;
	int r;

	if (rr_pathf(tmp, sizeof(tmp), "%s.tmpXXXXXX", path) < 0)
		return rr_errf(e, ENAMETOOLONG, "%s: path too long", path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return rr_errf(e, errno, "%s: cannot create a temporary file: %s", path, strerror(errno));
	made = tmp;
	if (fchmod(fd, 0644) < 0)
		return rr_errf(e, errno, "%s: write failed: %s", path, strerror(errno));
	r = rr_write_fd(fd, path, buf, len, e);
	if (r < 0)
		return r;
	if (close(TAKE_FD(fd)) < 0)
		return rr_errf(e, errno, "%s: write failed: %s", path, strerror(errno));
	if (rename(tmp, path) < 0)
		return rr_errf(e, errno, "%s: cannot rename into place: %s", path, strerror(errno));
	made = NULL;
	return 0;
}

int rr_pathf(char *out, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out, len, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < len)
		return 0;
	/* never a shortened path: a prefix of it may name another file */
	if (len)
		*out = 0;
	return n < 0 ? -EINVAL : -ENAMETOOLONG;
}

int rr_path_join(char *out, size_t len, const char *dir, const char *name)
{
	return rr_pathf(out, len, "%s/%s", dir, name);
}
