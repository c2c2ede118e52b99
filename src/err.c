/* SPDX-License-Identifier: GPL-2.0-only */
/* The one error formatter of the library: "NAME: problem" plus errno. */
#include <stdarg.h>
#include <stdio.h>
#include <errno.h>

#include "err.h"

int rr_errf(struct rr_err *e, int err, const char *fmt, ...)
{
	if (e) {
		va_list ap;

		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
		va_end(ap);
	}
	if (err < 0)
		err = -err;
	/* A caller that forgot the errno must still report failure. */
	return err ? -err : -EINVAL;
}
