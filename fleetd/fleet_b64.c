/* SPDX-License-Identifier: GPL-2.0-only */
/* Base64 (RFC 4648, with padding) for etcd's JSON gateway, which carries keys
 * and values as bytes. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "backend.h"

static const char b64_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int fleet_b64_encode(const void *in, size_t n, char *out, size_t outlen)
{
	const uint8_t *p = in;
	size_t o = 0;

	if (outlen < (n + 2) / 3 * 4 + 1)
		return -ENOBUFS;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		out[o++] = b64_alphabet[(v >> 18) & 63];
		out[o++] = b64_alphabet[(v >> 12) & 63];
		out[o++] = i + 1 < n ? b64_alphabet[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? b64_alphabet[v & 63] : '=';
	}
	out[o] = 0;
	return (int)o;
}

static int b64_val(char c)
{
	const char *p = c ? strchr(b64_alphabet, c) : NULL;
	return p ? (int)(p - b64_alphabet) : -1;
}

int fleet_b64_decode(const char *in, void *out, size_t outlen, size_t *ret_n)
{
	size_t len = strlen(in), o = 0;
	uint8_t *q = out;

	if (len % 4)
		return -EINVAL;
	for (size_t i = 0; i < len; i += 4) {
		int a = b64_val(in[i]), b = b64_val(in[i + 1]);
		int c = in[i + 2] == '=' ? -2 : b64_val(in[i + 2]);
		int d = in[i + 3] == '=' ? -2 : b64_val(in[i + 3]);
		bool last = i + 4 == len;

		if (a < 0 || b < 0 || c == -1 || d == -1 || (c == -2 && d != -2) ||
		    ((c == -2 || d == -2) && !last))
			return -EINVAL;
		uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)(c < 0 ? 0 : c) << 6 |
			     (uint32_t)(d < 0 ? 0 : d);
		int nb = c < 0 ? 1 : d < 0 ? 2 : 3;
		if (o + (size_t)nb > outlen)
			return -ENOBUFS;
		q[o++] = (uint8_t)(v >> 16);
		if (nb > 1)
			q[o++] = (uint8_t)(v >> 8);
		if (nb > 2)
			q[o++] = (uint8_t)v;
	}
	if (o < outlen)
		q[o] = 0;
	*ret_n = o;
	return 0;
}
