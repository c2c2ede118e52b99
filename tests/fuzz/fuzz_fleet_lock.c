/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz rerand-fleetd's FleetLock reply parser (fleet_lock_parse_error,
 * fleetd/fleet_lock.c): a refusal body {"kind":..,"value":..} from a server
 * on the network.  Refused, or both strings non-empty and cut to the
 * caller's buffers.  Seeds: real replies of the FleetLock test server the
 * fleet tests run (capture-fleet-replies.sh). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"
#include "backend.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *body = malloc(size + 1);
	/* exact-size heap buffers: ASan sees a write one byte past either */
	char *kind = malloc(16), *value = malloc(40);

	if (!body || !kind || !value)
		goto out;
	memcpy(body, data, size);
	body[size] = 0;
	if (!fleet_lock_parse_error(body, kind, 16, value, 40) &&
	    (!kind[0] || !value[0] || !memchr(kind, 0, 16) || !memchr(value, 0, 40)))
		abort();
out:
	free(body);
	free(kind);
	free(value);
	return 0;
}
