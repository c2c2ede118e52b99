/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz rerand-fleetd's base64 (fleetd/fleet_b64.c), which decodes every key
 * and value etcd's gateway sends: decoding any text into a buffer of any size
 * stays inside it, and what decodes encodes back to text that decodes to the
 * same bytes; any bytes encode and decode back to themselves.  Seeds: the
 * base64 texts of real etcd replies (capture-fleet-replies.sh). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"
#include "backend.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *enc = malloc(size * 2 + 8);
	/* decoded output is at most 3/4 of the text; the first byte of the input
	 * picks a buffer that may be too small, to reach -ENOBUFS */
	size_t cap = size ? (size_t)data[0] % (size * 3 / 4 + 2) : 0;
	/* exact size: ASan sees a write one byte past it */
	uint8_t *out = malloc(cap ? cap : 1), *back = malloc(size + 1);
	size_t n, m;

	if (!text || !enc || !out || !back)
		goto done;
	memcpy(text, data, size);
	text[size] = 0;
	if (!fleet_b64_decode(text, out, cap, &n)) {
		if (n > cap || n > strlen(text) / 4 * 3)
			abort();
		if (fleet_b64_encode(out, n, enc, size * 2 + 8) < 0 ||
		    fleet_b64_decode(enc, back, size + 1, &m) || m != n || memcmp(back, out, n))
			abort();
	}
	/* raw bytes through both directions */
	if (fleet_b64_encode(data, size, enc, size * 2 + 8) != (int)((size + 2) / 3 * 4) ||
	    fleet_b64_decode(enc, back, size + 1, &m) || m != size || memcmp(back, data, size))
		abort();
done:
	free(text);
	free(enc);
	free(out);
	free(back);
	return 0;
}
