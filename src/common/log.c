/* SPDX-License-Identifier: GPL-2.0-only */
/* Logging for rerandd and rerand-fleetd: one line per message on stderr with a
 * "<N>" priority prefix, which journald (and any syslog-style collector)
 * understands.  The message is escaped as a whole, so text from outside (a
 * server's error, a child's output, a file name) can neither split it nor
 * forge a priority. */
#include <stdarg.h>
#include <stdio.h>

#include "escape.h"
#include "log.h"

int rr_log_level = RR_LOG_INFO;

void rr_log(int prio, const char *fmt, ...)
{
	char msg[2048], line[4 * sizeof(msg)];
	va_list ap;
	int n;

	if (prio > rr_log_level)
		return;
	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	rr_escape(line, sizeof(line), msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
	fprintf(stderr, "<%d>%s%s\n", prio, line, (size_t)n >= sizeof(msg) ? "..." : "");
	fflush(stderr);
}
