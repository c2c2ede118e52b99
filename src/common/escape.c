/* SPDX-License-Identifier: GPL-2.0-only */
/* Text from outside rerandd (lock servers, children, configuration files,
 * file names) made safe for one journal line, `rerand status` and a terminal:
 * control characters, C1 controls, bad UTF-8 and the backslash itself are
 * written as C escapes.  Every sink of such text goes through rr_escape(). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "escape.h"

/* Length of the well-formed UTF-8 sequence at p (not a C1 control), else 0. */
static size_t utf8_ok(const unsigned char *p, size_t n)
{
	uint32_t cp;
	size_t len;

	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		len = 2;
		cp = p[0] & 0x1f;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		len = 3;
		cp = p[0] & 0x0f;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		len = 4;
		cp = p[0] & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	/* overlong forms, surrogates, beyond U+10FFFF, and C1 controls (U+0080..U+009F:
	 * CSI is U+009B to some terminals) */
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp < 0xa0)
		return 0;
	return len;
}

size_t rr_escape(char *out, size_t outlen, const void *in, size_t inlen)
{
	const unsigned char *p = in;
	size_t o = 0;

	if (!outlen)
		return 0;
	for (size_t i = 0; i < inlen;) {
		char piece[8];
		size_t n = 0, u = 0;

		switch (p[i]) {
		case '\\': memcpy(piece, "\\\\", n = 2); break;
		case '\n': memcpy(piece, "\\n", n = 2); break;
		case '\r': memcpy(piece, "\\r", n = 2); break;
		case '\t': memcpy(piece, "\\t", n = 2); break;
		default:
			if (p[i] >= 0x20 && p[i] < 0x7f) {
				piece[0] = (char)p[i];
				n = 1;
			} else if (p[i] >= 0x80 && (u = utf8_ok(p + i, inlen - i))) {
				memcpy(piece, p + i, n = u);
			} else {
				n = (size_t)snprintf(piece, sizeof(piece), "\\x%02x", p[i]);
			}
		}
		if (o + n >= outlen)
			break;                 /* never half an escape or a character */
		memcpy(out + o, piece, n);
		o += n;
		i += u ? u : 1;
	}
	out[o] = 0;
	return o;
}

const char *rr_escape_str(char *out, size_t outlen, const char *in)
{
	rr_escape(out, outlen, in, in ? strlen(in) : 0);
	return out;
}
