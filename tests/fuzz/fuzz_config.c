/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz rerandd's configuration parser (libinih plus our line reader and
 * value parsers), the state-file parser and the control protocol. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rerandd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rr_cfg_errs errs;
	static struct rr_config c;
	struct rr_state s;

	memset(&errs, 0, sizeof(errs));
	config_defaults(&c);
	config_apply_text(&c, (const char *)data, size, "fuzz.conf", &errs);
	config_validate(&c, "fuzz.conf", &errs);
	for (unsigned i = 0; i < errs.n; i++)
		if (!memchr(errs.msg[i], 0, sizeof(errs.msg[i])))
			abort();
	for (unsigned i = 0; i < c.nr_win; i++)
		if (c.win[i].name[sizeof(c.win[i].name) - 1] || c.win[i].tz[sizeof(c.win[i].tz) - 1])
			abort();
	state_parse((const char *)data, size, &s);
	control_parse((const char *)data, size);
	return 0;
}
