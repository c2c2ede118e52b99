/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz rerand-fleetd's parsers of etcd's JSON gateway replies (fleetd/): the
 * slot holders of a range reply (fleet_etcd_parse_range) and the group's
 * failure records (fleet_etcd_parse_failures).  The network is etcd's to
 * write, so any reply must be refused or parsed into holders and records that
 * keep every bound the callers rely on.  Seeds: real replies of Debian's etcd
 * to the requests rerand-fleetd sends (capture-fleet-replies.sh). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"
#include "backend.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fleet_status st;
	static struct fleet_failure f[FLEET_FAILURES_MAX];
	char *body = malloc(size + 1);
	unsigned n;

	if (!body)
		return 0;
	memcpy(body, data, size);
	body[size] = 0;       /* the HTTP layer hands the parsers a C string */
	if (!fleet_etcd_parse_range(body, "/rerand/fleet/fuzz/", 3, &st, NULL)) {
		if (st.nr_holders > FLEET_MAX_SLOTS || st.nr_stray > st.nr_holders ||
		    st.max_concurrent != 3)
			abort();
		for (unsigned i = 0; i < st.nr_holders; i++) {
			const struct fleet_holder *h = &st.holders[i];
			if (!memchr(h->id, 0, sizeof(h->id)) || h->slot < -1 || h->slot > 1000000 ||
			    (i && st.holders[i - 1].slot > h->slot))
				abort();
		}
	}
	if (!fleet_etcd_parse_failures(body, "/rerand/fleet/fuzz/failures/", f, &n)) {
		if (n > FLEET_FAILURES_MAX)
			abort();
		for (unsigned i = 0; i < n; i++)
			if (!memchr(f[i].id, 0, sizeof(f[i].id)) || strchr(f[i].id, '/') ||
			    !f[i].id[0] || f[i].at <= 0 ||
			    (!fleet_cause_valid(f[i].cause) && strcmp(f[i].cause, "unknown")))
				abort();
	}
	free(body);
	return 0;
}
