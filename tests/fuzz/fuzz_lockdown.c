/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz target: the lockdown and SecureBoot parsers and the scan of
 * kexec-tools' stderr, on exact-length copies (no terminator to lean on,
 * except for the stderr scan, whose contract is a C string). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lockdown.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *exact = malloc(size ? size : 1);
	char *text = malloc(size + 1);
	enum rr_lockdown l;
	enum rr_secureboot s;
	struct rr_err e;
	size_t n;
	int v[3], k[2];

	memcpy(exact, data, size);
	if (rr_lockdown_parse((const char *)exact, size, "fuzz", &l, &e) == 0 &&
	    l != RR_LD_NONE && l != RR_LD_INTEGRITY && l != RR_LD_CONFIDENTIALITY)
		abort();
	if (rr_secureboot_parse(exact, size, "fuzz", &s, &e) == 0 && size != 5)
		abort();
	memcpy(text, data, size);
	text[size] = 0;
	const char *line = rr_kexec_sig_refusal(text, &n);
	if (line && (line < text || line + n > text + strlen(text)))
		abort();
	line = rr_last_line(text, &n);
	if (line && (line < text || line + n > text + strlen(text) || !n))
		abort();
	(void)rr_parse_kexec_version(text, v);
	(void)rr_parse_release(text, k);
	free(exact);
	free(text);
	return 0;
}
