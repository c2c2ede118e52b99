/* SPDX-License-Identifier: GPL-2.0-only */
/* systemd-style durations ("90s", "30min", "1d 12h"; a bare number is
 * seconds): shared by rerandd's configuration and the [Fleet] keys that
 * rerand-fleetd parses too. */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fleet.h"

int config_parse_duration(const char *s, int64_t *ret)
{
	static const struct { const char *u; int64_t mult; } units[] = {
		{ "seconds", 1 }, { "second", 1 }, { "sec", 1 }, { "s", 1 },
		{ "minutes", 60 }, { "minute", 60 }, { "min", 60 }, { "m", 60 },
		{ "hours", 3600 }, { "hour", 3600 }, { "hr", 3600 }, { "h", 3600 },
		{ "days", 86400 }, { "day", 86400 }, { "d", 86400 },
		{ "weeks", 604800 }, { "week", 604800 }, { "w", 604800 },
	};
	int64_t total = 0;
	bool any = false;

	while (*s) {
		char *end;
		size_t ul = 0;
		int64_t mult = 1;

		while (isspace((unsigned char)*s))
			s++;
		if (!*s)
			break;
		if (!isdigit((unsigned char)*s))
			return -EINVAL;
		errno = 0;
		unsigned long long v = strtoull(s, &end, 10);
		if (errno || v > (1ull << 40))
			return -ERANGE;
		s = end;
		while (isspace((unsigned char)*s))
			s++;
		while (isalpha((unsigned char)s[ul]))
			ul++;
		if (ul) {
			size_t i;
			for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
				if (strlen(units[i].u) == ul && !strncasecmp(s, units[i].u, ul))
					break;
			if (i == sizeof(units) / sizeof(units[0]))
				return -EINVAL;
			mult = units[i].mult;
			s += ul;
		}
		if ((int64_t)v > (INT64_C(1) << 40) / mult)
			return -ERANGE;
		total += (int64_t)v * mult;
		if (total > (INT64_C(1) << 40))
			return -ERANGE;
		any = true;
	}
	if (!any)
		return -EINVAL;
	*ret = total;
	return 0;
}
