/* SPDX-License-Identifier: GPL-2.0-only */
/* The one logger of rerandd and rerand-fleetd (log.c): one line per message
 * on stderr with a "<N>" priority prefix, which journald (and any
 * syslog-style collector) understands.  Programs log; library code
 * (src/, src/common/'s parsers) returns errors and never calls it. */
#ifndef RERAND_LOG_H
#define RERAND_LOG_H

/* syslog's priorities, the numbers journald reads from the prefix */
enum { RR_LOG_ERR = 3, RR_LOG_WARNING = 4, RR_LOG_NOTICE = 5, RR_LOG_INFO = 6, RR_LOG_DEBUG = 7 };
/* Messages above it are dropped; RR_LOG_INFO unless -D (debug). */
extern int rr_log_level;
/* One event, one line: the message is escaped (rr_escape) before it is
 * written, so text from outside can neither split it nor forge a priority;
 * over 2047 bytes it is cut and ends in "...". */
void rr_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
