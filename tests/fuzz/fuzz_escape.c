/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz rr_escape (src/common/escape.c), which every piece of outside text goes
 * through on its way to the journal and `rerand status`: the output must fit
 * its buffer, hold no control character, and be valid UTF-8. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rerandd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Well-formed UTF-8 without C0, DEL or C1 controls. */
static int clean_utf8(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned c = s[i], len, cp;

		if (c < 0x20 || c == 0x7f)
			return 0;
		if (c < 0x80) {
			i++;
			continue;
		}
		len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
		if (!len || i + len > n)
			return 0;
		cp = c & (0x7f >> len);
		for (unsigned k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if (cp < 0xa0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ||
		    (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000))
			return 0;
		i += len;
	}
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* the first byte picks the output size, so truncation is fuzzed too */
	size_t outlen = size ? (size_t)data[0] * 4 + 1 : 1;
	char *out = malloc(outlen);
	size_t n;

	if (!out)
		return 0;
	n = rr_escape(out, outlen, size ? data + 1 : data, size ? size - 1 : 0);
	if (n >= outlen || out[n] != 0 || strlen(out) != n || !clean_utf8((unsigned char *)out, n))
		abort();
	free(out);
	return 0;
}
