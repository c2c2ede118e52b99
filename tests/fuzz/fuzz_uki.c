/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz the UKI reader (rr_uki_parse, rr_uki_initrd, rr_uki_cmdline): any
 * input is refused, or accepted with every part inside the buffer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "uki.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rr_uki u;
	struct rr_err e;
	uint8_t *ird;
	size_t ilen;
	char cl[4096];

	(void)rr_uki_probe(data, size);
	if (rr_uki_parse(data, size, "fuzz", &u, &e) < 0)
		return 0;
	if (!u.part[RR_UKI_LINUX].present)
		abort();
	for (int i = 0; i < RR_UKI_NR_PARTS; i++)
		if (u.part[i].present && (u.part[i].offset > size || u.part[i].size > size - u.part[i].offset))
			abort();
	if (rr_uki_initrd(data, size, &u, &ird, &ilen, "fuzz", &e) == 0)
		free(ird);
	if (rr_uki_cmdline(data, size, &u, cl, sizeof(cl), "fuzz", &e) == 0 && strlen(cl) >= sizeof(cl))
		abort();
	return 0;
}
