/* SPDX-License-Identifier: GPL-2.0-only */
/* src/fileio.c's one way to make a path in a fixed buffer (rr_pathf,
 * rr_path_join): a path that does not fit is -ENAMETOOLONG and an empty
 * buffer, never a shortened path.  And its reader of a file in a folder
 * (rr_read_file_at, rr_read_text_at: rerandd's install id and kernel
 * index): the whole file, a symbolic link or a FIFO refused without
 * hanging, a file over the limit refused.  Hermetic: files in a folder of
 * its own under TMPDIR. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"

#include "kernel.h"
#include "test.h"

static void test_path(void)
{
	char buf[16], big[64];
	int r;

	r = rr_path_join(buf, sizeof(buf), "/var/lib", "x");
	T_OK(r == 0 && !strcmp(buf, "/var/lib/x"), "rr_path_join: dir/name (%d, %s)", r, buf);
	/* 15 characters and the NUL: exactly fits */
	r = rr_path_join(buf, sizeof(buf), "/var/lib", "abcdef");
	T_OK(r == 0 && !strcmp(buf, "/var/lib/abcdef"), "rr_path_join: a path that exactly fits (%d, %s)",
	     r, buf);
	r = rr_path_join(buf, sizeof(buf), "/var/lib", "abcdefg");
	T_OK(r == -ENAMETOOLONG && buf[0] == 0,
	     "rr_path_join: one byte too long is -ENAMETOOLONG and an empty buffer (%d, \"%s\")", r, buf);
	r = rr_pathf(buf, sizeof(buf), "%s.%sXXXXXX", "/a/b.img", "tmp");
	T_OK(r == -ENAMETOOLONG && buf[0] == 0,
	     "rr_pathf: a temporary name too long is refused, not shortened (%d, \"%s\")", r, buf);
	r = rr_pathf(big, sizeof(big), "%.*sinitrd.img-%s", 6, "/boot/vmlinuz-6.1", "6.1");
	T_OK(r == 0 && !strcmp(big, "/boot/initrd.img-6.1"), "rr_pathf: as printf (%d, %s)", r, big);
	r = rr_pathf(buf, 0, "%s", "x");
	T_OK(r == -ENAMETOOLONG, "rr_pathf: a buffer of 0 bytes holds no path (%d)", r);
}

static void test_read_at(void)
{
	char dir[] = "/tmp/rerand-test-fileio-XXXXXX";
	_cleanup_close_ int dfd = -1;
	struct rr_err e = { "" };
	uint8_t *buf = NULL;
	char *text = NULL;
	size_t len = 0;
	int r, fd;

	if (!mkdtemp(dir) || (dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		T_OK(0, "setup: a folder of its own: %s", strerror(errno));
		return;
	}
	fd = openat(dfd, "id", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	T_OK(fd >= 0 && write(fd, "0123456789abcdef\nmore", 21) == 21 && close(fd) == 0,
	     "setup: a file of 21 bytes");
	r = rr_read_text_at(dfd, "id", 4096, &text, &e);
	T_OK(r == 0 && !strcmp(text, "0123456789abcdef\nmore"), "rr_read_text_at: the whole file, as text (%d %s)",
	     r, e.msg);
	free(text);
	r = rr_read_file_at(dfd, "id", 20, &buf, &len, &e);
	T_OK(r == -EFBIG && strstr(e.msg, "id: "), "rr_read_file_at: one byte over the limit is refused: %s",
	     e.msg);
	T_OK(symlinkat("id", dfd, "link") == 0, "setup: a symbolic link to it");
	r = rr_read_file_at(dfd, "link", 4096, &buf, &len, &e);
	T_OK(r == -ELOOP && strstr(e.msg, "link: a symbolic link"),
	     "rr_read_file_at: a symbolic link is not followed: %s", e.msg);
	T_OK(mkfifoat(dfd, "fifo", 0600) == 0, "setup: a FIFO");
	r = rr_read_file_at(dfd, "fifo", 4096, &buf, &len, &e);
	T_OK(r == -EINVAL && strstr(e.msg, "a FIFO"), "rr_read_file_at: a FIFO is refused without hanging: %s",
	     e.msg);
	r = rr_read_file_at(dfd, "none", 4096, &buf, &len, &e);
	T_OK(r == -ENOENT, "rr_read_file_at: a missing file is -ENOENT: %s", e.msg);
	unlinkat(dfd, "id", 0);
	unlinkat(dfd, "link", 0);
	unlinkat(dfd, "fifo", 0);
	rmdir(dir);
}

int main(void)
{
	test_path();
	test_read_at();
	return t_done();
}
