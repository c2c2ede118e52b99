/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The error every library call returns beside its negative errno: a message
 * that names the thing (a file, a section, a key) and the problem.  Library
 * code does not log; the program that called it prints e.msg once.  Its own
 * header because every layer uses it (the kernel and image readers, the
 * writer, rerandd, the CLI), not only the kernel readers.
 */
#ifndef RERAND_ERR_H
#define RERAND_ERR_H

#define RR_ERR_MAX 512

struct rr_err {
	char msg[RR_ERR_MAX];
};

/* Format "NAME: problem" into e (if non-NULL) and return -abs(err). */
int rr_errf(struct rr_err *e, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
