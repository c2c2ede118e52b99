/* SPDX-License-Identifier: GPL-2.0-only */
/* The fleet's group-wide breaker, its pure part: which failure records count,
 * when they trip the breaker, and how they are summed up for the operator.
 * Shared by rerand-fleetd (which reads and writes the records in etcd) and
 * the unit tests; no I/O here. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"

/* a clock this far ahead of ours still counts: NTP skew between hosts */
#define SKEW_SEC 300

bool fleet_cause_valid(const char *cause)
{
	size_t n = strlen(cause);

	if (!n || n >= FLEET_CAUSE_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((cause[i] >= 'a' && cause[i] <= 'z') || (cause[i] >= '0' && cause[i] <= '9') ||
		      cause[i] == '-'))
			return false;
	return true;
}

int fleet_failure_key_parse(const char *rel, struct fleet_failure *f)
{
	const char *slash = strrchr(rel, '/');
	char *end;
	long long t;

	memset(f, 0, sizeof(*f));
	if (!slash || slash == rel || (size_t)(slash - rel) >= sizeof(f->id) || !slash[1])
		return -EINVAL;
	errno = 0;
	t = strtoll(slash + 1, &end, 10);
	if (errno || *end || t <= 0)
		return -EINVAL;
	memcpy(f->id, rel, (size_t)(slash - rel));
	f->id[slash - rel] = 0;
	if (strchr(f->id, '/'))
		return -EINVAL;
	f->at = t;
	return 0;
}

static bool counts(const struct fleet_failure *f, int64_t now, int64_t window)
{
	return f->at > now - window && f->at <= now + SKEW_SEC;
}

unsigned fleet_breaker_count(const struct fleet_failure *f, unsigned n, int64_t now,
			     int64_t window)
{
	unsigned c = 0;

	for (unsigned i = 0; i < n; i++)
		c += counts(&f[i], now, window);
	return c;
}

bool fleet_breaker_trips(unsigned count, unsigned threshold)
{
	return threshold && count >= threshold;
}

static int newest_first(const void *a, const void *b)
{
	const struct fleet_failure *x = a, *y = b;

	return (x->at < y->at) - (x->at > y->at);
}

int fleet_breaker_summary(const struct fleet_failure *f, unsigned n, int64_t now,
			  int64_t window, char *buf, size_t len)
{
	struct fleet_failure sorted[FLEET_FAILURES_MAX];
	unsigned m = 0, shown = 0, total;
	size_t o;
	int k;

	for (unsigned i = 0; i < n && m < FLEET_FAILURES_MAX; i++)
		if (counts(&f[i], now, window))
			sorted[m++] = f[i];
	qsort(sorted, m, sizeof(sorted[0]), newest_first);
	total = m;
	k = snprintf(buf, len, "%u failure%s in the last %" PRId64 " s", total,
		     total == 1 ? "" : "s", window);
	if (k < 0 || (size_t)k >= len)
		return -ENOBUFS;
	o = (size_t)k;
	for (unsigned i = 0; i < m; i++) {
		char item[FLEET_ID_MAX + FLEET_CAUSE_MAX + 8];
		/* room for this item and a "+N more" tail after it */
		snprintf(item, sizeof(item), "%s%.127s (%.31s)", i ? ", " : ": ", sorted[i].id,
			 sorted[i].cause);
		if (o + strlen(item) + 16 >= len)
			break;
		memcpy(buf + o, item, strlen(item) + 1);
		o += strlen(item);
		shown++;
	}
	if (shown < total) {
		k = snprintf(buf + o, len - o, "%s+%u more", shown ? ", " : ": ", total - shown);
		if (k < 0 || (size_t)k >= len - o)
			return -ENOBUFS;
		o += (size_t)k;
	}
	return (int)o;
}
