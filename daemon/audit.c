/* SPDX-License-Identifier: GPL-2.0-only */
/* Events an auditor filters on (control commands, inhibitors overridden):
 * with a journal MESSAGE_ID= of their own and fields for who did what.
 * Under systemd (stderr is the journal: JOURNAL_STREAM names it) they go to
 * the journal natively, since a stream line cannot carry fields; anywhere
 * else they are the usual "<N>message" line on stderr. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>

#include "rerandd.h"

/* systemd's own test: JOURNAL_STREAM is "DEV:INO" of the stream stderr is
 * connected to, and stderr is still that stream (not redirected since). */
static bool stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void audit_log(int prio, const char *message_id, const char *const *fields, size_t nfields,
	       const char *fmt, ...)
{
	char msg[2048], safe[4 * sizeof(msg)], f_msg[sizeof(safe) + 16], f_id[64], f_prio[16];
	struct iovec iov[4 + RR_AUDIT_MAX_FIELDS];
	size_t n = 0;
	va_list ap;
	int len;

	if (prio > rr_log_level)
		return;
	va_start(ap, fmt);
	len = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (len < 0)
		return;
	if (!stderr_is_journal()) {
		rr_log(prio, "%s", msg);
		return;
	}
	/* the text from outside in it (a unit name, a hold's reason) escaped
	 * as rr_log escapes it: one line, no control characters */
	rr_escape(safe, sizeof(safe), msg, (size_t)len < sizeof(msg) ? (size_t)len : sizeof(msg) - 1);
	snprintf(f_msg, sizeof(f_msg), "MESSAGE=%s", safe);
	snprintf(f_id, sizeof(f_id), "MESSAGE_ID=%s", message_id);
	snprintf(f_prio, sizeof(f_prio), "PRIORITY=%d", prio);
	iov[n++] = (struct iovec){ f_msg, strlen(f_msg) };
	iov[n++] = (struct iovec){ f_id, strlen(f_id) };
	iov[n++] = (struct iovec){ f_prio, strlen(f_prio) };
	iov[n++] = (struct iovec){ (char *)"SYSLOG_IDENTIFIER=rerandd", 25 };
	for (size_t i = 0; i < nfields && i < RR_AUDIT_MAX_FIELDS; i++)
		iov[n++] = (struct iovec){ (char *)fields[i], strlen(fields[i]) };
	/* the journal gone (restarting): the line on stderr is not lost */
	if (sd_journal_sendv(iov, (int)n) < 0)
		rr_log(prio, "%s", msg);
}
