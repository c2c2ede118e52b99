/* SPDX-License-Identifier: GPL-2.0-only */
/* src/fileio.c's one way to make a path in a fixed buffer (rr_pathf,
 * rr_path_join): a path that does not fit is -ENAMETOOLONG and an empty
 * buffer, never a shortened path.  Hermetic: no file is touched. */
#include <errno.h>
#include <string.h>

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

int main(void)
{
	test_path();
	return t_done();
}
