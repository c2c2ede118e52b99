/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz the reply parser rerandd runs on what rerand-fleetd sends
 * (src/common/fleet_proto.c), and the request parser the helper runs: no crash,
 * no overrun, and what parses has no control byte in its text and formats
 * back into a line that parses to the same reply. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int has_ctl(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fleet_reply p, p2;
	static struct fleet_request q;
	static char line[FLEET_LINE_MAX];
	int n;

	if (!fleet_proto_parse_reply((const char *)data, size, &p)) {
		if (has_ctl(p.id) || has_ctl(p.token) || has_ctl(p.msg) || p.rc > 1 ||
		    p.st.nr_holders > FLEET_MAX_SLOTS)
			abort();
		for (unsigned i = 0; i < p.st.nr_holders; i++)
			if (has_ctl(p.st.holders[i].id))
				abort();
		n = fleet_proto_format_reply(&p, line, sizeof(line));
		if (n > 0 && (fleet_proto_parse_reply(line, (size_t)n - 1, &p2) ||
			      p2.seq != p.seq || p2.rc != p.rc || strcmp(p2.msg, p.msg) ||
			      p2.st.nr_holders != p.st.nr_holders))
			abort();
	}
	if (!fleet_proto_parse_request((const char *)data, size, &q))
		for (unsigned i = 0; i < q.nr_args; i++)
			if (has_ctl(q.args[i]))
				abort();
	return 0;
}
