/* SPDX-License-Identifier: GPL-2.0-only */
/* systemd-style time spans ("90s", "30min", "1d 12h", "250ms"), the one
 * grammar of every duration key: rerandd's configuration and the [Fleet]
 * keys that rerand-fleetd parses too.  A bare number is seconds, everywhere
 * (as systemd's ...Sec= keys); --dump-config prints them back with
 * config_format_duration*(), which these parsers read to the same value. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fleet.h"
#include "util.h"

#define DUR_MAX_MS (INT64_C(1) << 40)         /* 34 years: far beyond any key's range */

int config_parse_duration_ms(const char *s, int64_t *ret)
{
	static const struct { const char *u; int64_t ms; } units[] = {
		{ "milliseconds", 1 }, { "millisecond", 1 }, { "msec", 1 }, { "ms", 1 },
		{ "seconds", 1000 }, { "second", 1000 }, { "sec", 1000 }, { "s", 1000 },
		{ "minutes", 60000 }, { "minute", 60000 }, { "min", 60000 }, { "m", 60000 },
		{ "hours", 3600000 }, { "hour", 3600000 }, { "hr", 3600000 }, { "h", 3600000 },
		{ "days", 86400000 }, { "day", 86400000 }, { "d", 86400000 },
		{ "weeks", 604800000 }, { "week", 604800000 }, { "w", 604800000 },
	};
	int64_t total = 0;
	bool any = false;

	while (*s) {
		char *end;
		size_t ul = 0;
		int64_t mult = 1000;                  /* a bare number: seconds */

		while (isspace((unsigned char)*s))
			s++;
		if (!*s)
			break;
		if (!isdigit((unsigned char)*s))
			return -EINVAL;
		errno = 0;
		unsigned long long v = strtoull(s, &end, 10);
		if (errno || v > (unsigned long long)DUR_MAX_MS)
			return -ERANGE;
		s = end;
		while (isspace((unsigned char)*s))
			s++;
		while (isalpha((unsigned char)s[ul]))
			ul++;
		if (ul) {
			size_t i;
			for (i = 0; i < ARRAY_SIZE(units); i++)
				if (strlen(units[i].u) == ul && !strncasecmp(s, units[i].u, ul))
					break;
			if (i == ARRAY_SIZE(units))
				return -EINVAL;
			mult = units[i].ms;
			s += ul;
		}
		if ((int64_t)v > DUR_MAX_MS / mult)
			return -ERANGE;
		total += (int64_t)v * mult;
		if (total > DUR_MAX_MS)
			return -ERANGE;
		any = true;
	}
	if (!any)
		return -EINVAL;
	*ret = total;
	return 0;
}

int config_parse_duration(const char *s, int64_t *ret)
{
	int64_t ms;
	int r = config_parse_duration_ms(s, &ms);

	if (r < 0)
		return r;
	if (ms % 1000)
		return -EINVAL;               /* these keys count whole seconds */
	*ret = ms / 1000;
	return 0;
}

const char *config_format_duration_ms(int64_t ms, char *out, size_t len)
{
	static const struct { const char *u; int64_t n; } parts[] = {
		{ "d", 86400000 }, { "h", 3600000 }, { "min", 60000 }, { "s", 1000 }, { "ms", 1 },
	};
	size_t o = 0;

	if (!len)
		return out;
	if (ms <= 0) {
		/* 0 is 0 in any unit; a negative value is no duration (never printed) */
		snprintf(out, len, "%" PRId64, ms);
		return out;
	}
	out[0] = 0;
	for (size_t i = 0; i < ARRAY_SIZE(parts) && o < len; i++)
		if (ms / parts[i].n) {
			o += (size_t)snprintf(out + o, len - o, "%s%" PRId64 "%s", o ? " " : "",
					      ms / parts[i].n, parts[i].u);
			ms %= parts[i].n;
		}
	return out;
}

const char *config_format_duration(int64_t s, char *out, size_t len)
{
	return config_format_duration_ms(s > DUR_MAX_MS / 1000 ? DUR_MAX_MS : s * 1000, out, len);
}
