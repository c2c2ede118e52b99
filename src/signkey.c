/* SPDX-License-Identifier: GPL-2.0-only */
/* Is a signing key file fit to sign with (SignKey=)?  The image builder runs
 * as an unprivileged user: a key its group or everyone may read is a key the
 * builder (or anything else on the machine) can copy, and a key not owned by
 * root is one its owner can replace.  Both are refused, not signed with.
 * So is a key in a directory another user owns or may write (issue 39,
 * point 9): whoever can write the directory can put another key (or a
 * symlink to one) in its place.  Both the directory named and, for a
 * symlink, its target's are checked. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sign.h"

static int check_dir(const char *key, const char *path, const char *via, struct rr_err *e)
{
	char buf[PATH_MAX];
	const char *dir;
	struct stat st;

	snprintf(buf, sizeof(buf), "%s", path);
	dir = dirname(buf);
	if (stat(dir, &st) < 0)
		return rr_errf(e, errno, "%s: signing key (SignKey=): its directory %s%s: %s", key,
			       dir, via, strerror(errno));
	if (st.st_uid != 0)
		return rr_errf(e, EPERM, "%s: signing key (SignKey=): its directory %s%s is owned by "
			       "uid %u, not root: refused, its owner could replace the key (chown "
			       "root it)", key, dir, via, (unsigned)st.st_uid);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return rr_errf(e, EPERM, "%s: signing key (SignKey=): its directory %s%s has mode "
			       "%04o, writable by %s: refused, whoever can write it could replace "
			       "the key (chmod go-w it)", key, dir, via,
			       (unsigned)(st.st_mode & 07777),
			       (st.st_mode & S_IWOTH) ? "everyone" : "its group");
	return 0;
}

int rr_sign_key_check(const char *key, struct rr_err *e)
{
	char real[PATH_MAX];
	struct stat st;
	int r;

	if (!strncmp(key, "pkcs11:", 7))
		return 0;             /* a key on a token: no file to judge */
	if (stat(key, &st) < 0)
		return rr_errf(e, errno, "%s: signing key (SignKey=): %s", key, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return rr_errf(e, EINVAL, "%s: signing key (SignKey=) is not a regular file", key);
	if (st.st_uid != 0)
		return rr_errf(e, EPERM, "%s: signing key (SignKey=) is owned by uid %u, not root: "
			       "refused (chown root it)", key, (unsigned)st.st_uid);
	if (st.st_mode & (S_IRGRP | S_IROTH))
		return rr_errf(e, EPERM, "%s: signing key (SignKey=) has mode %04o, readable by %s: "
			       "refused, the image builder's user could read it (chmod 600 it)",
			       key, (unsigned)(st.st_mode & 07777),
			       (st.st_mode & S_IROTH) ? "everyone" : "its group");
	if ((r = check_dir(key, key, "", e)) < 0)
		return r;
	if (!realpath(key, real))
		return rr_errf(e, errno, "%s: signing key (SignKey=): %s", key, strerror(errno));
	if (strcmp(real, key) && (r = check_dir(key, real, " (where the key is)", e)) < 0)
		return r;
	return 0;
}
