/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz the status record parser (rr_status_parse, src/status.c) that
 * `rerand status`, `rerand verify` and rerandd run on the setup_data node the
 * stage left (world-readable in sysfs, written by whatever booted the
 * machine), and the printers that show what parsed, text and JSON.  The
 * valid-* seeds (records in the stage's layout, versions 1 and 2) must parse:
 * the replay runs them with RR_FUZZ_MUST_PARSE=1. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	struct rerand_status st;
	struct rr_err e;
	uint8_t *rec = malloc(size ? size : 1);

	if (!rec)
		return 0;
	memcpy(rec, data, size);
	if (!null)
		null = fopen("/dev/null", "we");
	if (rr_status_parse(rec, size, "fuzz", &st, &e) < 0) {
		if (getenv("RR_FUZZ_MUST_PARSE")) {
			fprintf(stderr, "fuzz_status: a seed that must parse is refused: %s\n", e.msg);
			abort();
		}
	} else {
		if (memcmp(st.magic, RERAND_STATUS_MAGIC, 8) || (st.version != 1 && st.version != 2) ||
		    st.result < RERAND_RES_RANDOMIZED || st.result > RERAND_RES_NO_SLOT ||
		    size < st.size)
			abort();
		if (null) {
			rr_status_print(null, &st, false);
			rr_status_print(null, &st, true);
		}
	}
	free(rec);
	return 0;
}
