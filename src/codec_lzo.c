/* SPDX-License-Identifier: GPL-2.0-only */
/* An LZO-compressed bzImage payload: lzop's file format (its header, then
 * blocks with their checksums), each block decoded by liblzo2. */
#include <string.h>

#include <lzo1x.h>

#include "codec_int.h"

#define LZOP_BLOCK_MAX  ((size_t)256 << 10)
#define LZOP_ADLER32_D  0x0001u
#define LZOP_ADLER32_C  0x0002u
#define LZOP_EXTRA      0x0040u
#define LZOP_CRC32_D    0x0100u
#define LZOP_CRC32_C    0x0200u
#define LZOP_FILTER     0x0800u
#define LZOP_H_CRC32    0x1000u

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Take n bytes from the input, or NULL when it ends first. */
static const uint8_t *take(struct dec *d, size_t n)
{
	const uint8_t *p;

	if (d->in_len - d->pos < n)
		return NULL;
	p = d->in + d->pos;
	d->pos += n;
	return p;
}

static bool lzop_sum_ok(uint32_t flags, uint32_t want_adler, uint32_t want_crc,
			const uint8_t *p, size_t n, uint32_t adler_flag, uint32_t crc_flag)
{
	if ((flags & adler_flag) && lzo_adler32(1, p, (lzo_uint)n) != want_adler)
		return false;
	if ((flags & crc_flag) && lzo_crc32(0, p, (lzo_uint)n) != want_crc)
		return false;
	return true;
}

/* lzop's file header, up to the first block: its flags, or a status. */
static enum dec_status lzop_header(struct dec *d, uint32_t *ret)
{
	const uint8_t *p, *hdr;
	uint16_t version;
	uint32_t flags;
	unsigned method;
	size_t hdr_start;

	if (!take(d, 9))
		return DEC_TRUNC;
	hdr_start = d->pos;
	if (!(p = take(d, 4)))
		return DEC_TRUNC;
	version = (uint16_t)(p[0] << 8 | p[1]);
	/* Older lzop wrote a shorter header that the kernel cannot read either. */
	if (version < 0x0940) {
		d->why = "lzop header version is too old";
		return DEC_CORRUPT;
	}
	if (!(p = take(d, 2 + 1 + 1 + 4)))
		return DEC_TRUNC;
	method = p[2];
	flags = get_be32(p + 4);
	if (method < 1 || method > 3) {
		d->why = "not an LZO1X method";
		return DEC_CORRUPT;
	}
	if ((flags & LZOP_FILTER) && !take(d, 4))
		return DEC_TRUNC;
	if (!(p = take(d, 4 + 4 + 4 + 1)))        /* mode, mtime low/high, name length */
		return DEC_TRUNC;
	if (!take(d, p[12]))
		return DEC_TRUNC;
	hdr = d->in + hdr_start;
	if (!(p = take(d, 4)))
		return DEC_TRUNC;
	if (!lzop_sum_ok(flags & LZOP_H_CRC32 ? LZOP_CRC32_D : LZOP_ADLER32_D, get_be32(p),
			 get_be32(p), hdr, (size_t)(p - hdr), LZOP_ADLER32_D, LZOP_CRC32_D)) {
		d->why = "lzop header checksum mismatch";
		return DEC_CORRUPT;
	}
	if (flags & LZOP_EXTRA) {
		if (!(p = take(d, 4)))
			return DEC_TRUNC;
		if (!take(d, get_be32(p)) || !take(d, 4))
			return DEC_TRUNC;
	}
	*ret = flags;
	return DEC_OK;
}

/* A block's header: its sizes and the checksums the flags ask for. */
struct lzop_block {
	uint32_t dst_len, src_len, sum_d_adler, sum_d_crc, sum_c_adler, sum_c_crc;
};

static enum dec_status lzop_block_header(struct dec *d, uint32_t flags, struct lzop_block *b)
{
	const uint8_t *p;

	memset(b, 0, sizeof(*b));
	if (!(p = take(d, 4)))
		return DEC_TRUNC;
	b->dst_len = get_be32(p);
	if (b->dst_len == 0)
		return DEC_OK;
	if (b->dst_len > LZOP_BLOCK_MAX) {
		d->why = "block is larger than 256 KiB";
		return DEC_CORRUPT;
	}
	if (!(p = take(d, 4)))
		return DEC_TRUNC;
	b->src_len = get_be32(p);
	if ((flags & LZOP_ADLER32_D) && (p = take(d, 4)))
		b->sum_d_adler = get_be32(p);
	if ((flags & LZOP_CRC32_D) && (p = take(d, 4)))
		b->sum_d_crc = get_be32(p);
	if (b->src_len < b->dst_len && (flags & LZOP_ADLER32_C) && (p = take(d, 4)))
		b->sum_c_adler = get_be32(p);
	if (b->src_len < b->dst_len && (flags & LZOP_CRC32_C) && (p = take(d, 4)))
		b->sum_c_crc = get_be32(p);
	if (!p)
		return DEC_TRUNC;
	if (b->src_len == 0 || b->src_len > b->dst_len) {
		d->why = "block sizes are inconsistent";
		return DEC_CORRUPT;
	}
	return DEC_OK;
}

/* One block's data into the output, its checksums checked. */
static enum dec_status lzop_block_data(struct dec *d, uint32_t flags, const struct lzop_block *b)
{
	const uint8_t *src;
	uint8_t *dst;
	enum dec_status st;

	if (!(src = take(d, b->src_len)))
		return DEC_TRUNC;
	st = ob_reserve(&d->o, b->dst_len);
	if (st)
		return st;
	dst = d->o.p + d->o.len;
	if (b->src_len == b->dst_len) {
		/* lzop stores incompressible blocks as they are. */
		memcpy(dst, src, b->src_len);
	} else {
		lzo_uint out = b->dst_len;
		int r;

		if (!lzop_sum_ok(flags, b->sum_c_adler, b->sum_c_crc, src, b->src_len,
				 LZOP_ADLER32_C, LZOP_CRC32_C)) {
			d->why = "compressed block checksum mismatch";
			return DEC_CORRUPT;
		}
		r = lzo1x_decompress_safe(src, b->src_len, dst, &out, NULL);
		if (r != LZO_E_OK || out != b->dst_len) {
			d->why = r == LZO_E_OK ? "block decoded to the wrong size"
					       : "lzo1x_decompress_safe rejected a block";
			return DEC_CORRUPT;
		}
	}
	if (!lzop_sum_ok(flags, b->sum_d_adler, b->sum_d_crc, dst, b->dst_len,
			 LZOP_ADLER32_D, LZOP_CRC32_D)) {
		d->why = "block checksum mismatch";
		return DEC_CORRUPT;
	}
	d->o.len += b->dst_len;
	return DEC_OK;
}

/* lzop's file format, as the kernel's build writes it (lzop -9) and
 * lib/decompress_unlzo.c reads it; blocks are decoded by liblzo2. */
enum dec_status dec_lzo(struct dec *d)
{
	struct lzop_block b;
	enum dec_status st;
	uint32_t flags;

	if (lzo_init() != LZO_E_OK) {
		d->why = "liblzo2 failed to initialise";
		return DEC_CORRUPT;
	}
	if ((st = lzop_header(d, &flags)))
		return st;
	for (;;) {
		if ((st = lzop_block_header(d, flags, &b)))
			return st;
		if (!b.dst_len)
			return DEC_OK;
		if ((st = lzop_block_data(d, flags, &b)))
			return st;
	}
}
