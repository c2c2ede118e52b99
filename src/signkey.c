/* SPDX-License-Identifier: GPL-2.0-only */
/* Is a signing key file fit to sign with (SignKey=)?  The image builder runs
 * as an unprivileged user: a key its group or everyone may read is a key the
 * builder (or anything else on the machine) can copy, and a key not owned by
 * root is one its owner can replace.  Both are refused, not signed with. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "sign.h"

int rr_sign_key_check(const char *key, struct rr_err *e)
{
	struct stat st;

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
	return 0;
}
