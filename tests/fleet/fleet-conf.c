/* SPDX-License-Identifier: GPL-2.0-only */
/* The [Fleet] section of a file for the fleet tests' simulated hosts
 * (tests/fleet/fleet-sim.c, bench/fleet-bench.c): one "Key=Value" a line,
 * through fleet_config_set() as rerandd's parser hands them; other sections
 * and comments ignored.  Each bad line is reported as FILE:LINE: why. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fleet-conf.h"

int fleet_conf_load(const char *prog, const char *path, struct fleet_config *c)
{
	char line[2048], err[256];
	bool in_fleet = false;
	int ln = 0, bad = 0;
	FILE *fp = fopen(path, "re");

	if (!fp) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), fp)) {
		char *eq, *k = line, *v, *e;
		ln++;
		line[strcspn(line, "\r\n")] = 0;
		while (*k == ' ' || *k == '\t')
			k++;
		if (!*k || *k == '#' || *k == ';')
			continue;
		if (*k == '[') {
			in_fleet = !strcmp(k, "[Fleet]");
			continue;
		}
		if (!in_fleet)
			continue;
		if (!(eq = strchr(k, '='))) {
			fprintf(stderr, "%s:%d: want Key=Value, got '%s'\n", path, ln, k);
			bad = 1;
			continue;
		}
		*eq = 0;
		v = eq + 1;
		for (e = eq; e > k && (e[-1] == ' ' || e[-1] == '\t'); e--)
			e[-1] = 0;
		while (*v == ' ' || *v == '\t')
			v++;
		if (fleet_config_set(c, k, v, err, sizeof(err)) < 0) {
			fprintf(stderr, "%s:%d: %s\n", path, ln, err);
			bad = 1;
		}
	}
	fclose(fp);
	return bad ? -1 : 0;
}
