/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz target: the bzImage setup-header parser and codec detection. */
#include <stdint.h>
#include <string.h>

#include "kernel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rr_bzimage bz;
	struct rr_err e = { "" };
	int r;

	r = rr_bzimage_parse(data, size, "fuzz", &bz, &e);
	if (r < 0) {
		if (strncmp(e.msg, "fuzz: ", 6) != 0)
			__builtin_trap();
		return 0;
	}
	/* What the parser accepts must be safe for its callers to use. */
	if (bz.payload_offset > size || bz.payload_length > size - bz.payload_offset ||
	    bz.payload_length < 4 || bz.pm_offset > bz.payload_offset ||
	    memchr(bz.kernel_version, 0, sizeof(bz.kernel_version)) == NULL ||
	    !(bz.xloadflags & 1))
		__builtin_trap();
	(void)rr_kcodec_name(rr_kcodec_detect(data + bz.payload_offset, bz.payload_length));
	return 0;
}
