/* SPDX-License-Identifier: GPL-2.0-only */
/* Logging for rerandd: one line per message on stderr with a "<N>" priority
 * prefix, which journald (and any syslog-style collector) understands. */
#include <stdarg.h>
#include <stdio.h>

#include "rerandd.h"

int rr_log_level = RR_LOG_INFO;

void rr_log(int prio, const char *fmt, ...)
{
	va_list ap;

	if (prio > rr_log_level)
		return;
	fprintf(stderr, "<%d>", prio);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
}
