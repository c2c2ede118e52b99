/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz rerandd's configuration parser (libinih plus our line reader and
 * value parsers), the state-file parser (line by line, failing closed), the
 * panic= editing of a command line and the control protocol. */
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
	struct rr_state_damage d;
	static char line[RR_CMD], out[RR_CMD];
	struct rr_err e;

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
	/* damage that may have cost the hold holds; the reason is a string */
	if (state_parse_damage((const char *)data, size, &s, &d) == 0 ? d.bad != 0 : !d.bad)
		abort();
	if ((d.held && !s.hold) || !memchr(d.first_why, 0, sizeof(d.first_why)) ||
	    !memchr(d.what, 0, sizeof(d.what)))
		abort();
	/* any doubt about a guarded key: held, and a fleet slot never released */
	if (d.lost && (!s.hold || !s.fleet_keep))
		abort();
	size_t n = size < sizeof(line) - 1 ? size : sizeof(line) - 1;
	memcpy(line, data, n);
	line[n] = 0;
	if (panic_cmdline(line, 10, out, sizeof(out), &e) == 0 && strlen(out) >= sizeof(out))
		abort();
	control_parse((const char *)data, size);
	return 0;
}
