/* SPDX-License-Identifier: GPL-2.0-only */
/* Decoding a bzImage payload with each codec's own library.  The output is
 * bounded (the size the kernel appended, never more than 1 GiB) and every
 * failure names the codec and the library's reason. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <bzlib.h>
#include <lz4.h>
#include <lzma.h>
#include <zlib.h>
/* ZSTD_d_stableOutBuffer: an experimental parameter in zstd 1.5, which the
 * shared library takes like any other; a library that refuses it is used
 * without (dec_zstd). */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#include <zstd_errors.h>

#include "codec_int.h"
#include "kernel.h"
#include "util.h"

/* Far above any real vmlinux (tens of MiB) and below the kernel's 1 GiB
 * virtual window, so a lying size field cannot make us allocate more. */
#define RR_DECOMPRESS_MAX   ((size_t)1 << 30)
/* liblzma may allocate the dictionary the stream asks for.  The fuzzers
 * build with a lower limit (see the Makefile): they would otherwise spend
 * their time allocating and clearing what mutated headers ask for. */
#ifndef RR_LZMA_MEMLIMIT_MIB
#define RR_LZMA_MEMLIMIT_MIB 256
#endif
#define RR_LZMA_MEMLIMIT    ((uint64_t)RR_LZMA_MEMLIMIT_MIB << 20)
#define RR_STR_(x)          #x
#define RR_STR(x)           RR_STR_(x)
#define LZ4_LEGACY_MAGIC    0x184c2102u
#define LZ4_LEGACY_CHUNK    ((size_t)8 << 20)

const char *rr_kcodec_name(enum rr_kcodec c)
{
	switch (c) {
	case RR_KC_NONE:  return "uncompressed";
	case RR_KC_GZIP:  return "gzip";
	case RR_KC_BZIP2: return "bzip2";
	case RR_KC_LZMA:  return "lzma";
	case RR_KC_XZ:    return "xz";
	case RR_KC_LZO:   return "lzo";
	case RR_KC_LZ4:   return "lz4";
	case RR_KC_ZSTD:  return "zstd";
	default:          return "unknown";
	}
}

static bool has_magic(const uint8_t *p, size_t len, const char *m, size_t mlen)
{
	return len >= mlen && memcmp(p, m, mlen) == 0;
}

enum rr_kcodec rr_kcodec_detect(const uint8_t *p, size_t len)
{
	if (!p)
		return RR_KC_UNKNOWN;
	if (has_magic(p, len, "\x1f\x8b", 2))
		return RR_KC_GZIP;
	if (has_magic(p, len, "BZh", 3))
		return RR_KC_BZIP2;
	if (has_magic(p, len, "\x5d\x00\x00", 3))
		return RR_KC_LZMA;
	if (has_magic(p, len, "\xfd\x37\x7a\x58\x5a\x00", 6))
		return RR_KC_XZ;
	if (has_magic(p, len, "\x89\x4c\x5a\x4f", 4))
		return RR_KC_LZO;
	if (has_magic(p, len, "\x02\x21\x4c\x18", 4))
		return RR_KC_LZ4;
	if (has_magic(p, len, "\x28\xb5\x2f\xfd", 4))
		return RR_KC_ZSTD;
	if (has_magic(p, len, "\x7f" "ELF", 4))
		return RR_KC_NONE;
	return RR_KC_UNKNOWN;
}


static int ob_init(struct outbuf *o, size_t want, size_t in_len)
{
	size_t cap;

	if (want)
		cap = want + 1;
	else if (in_len > RR_DECOMPRESS_MAX / 4)
		cap = RR_DECOMPRESS_MAX;
	else
		cap = in_len * 4 < 65536 ? 65536 : in_len * 4;
	o->p = malloc(cap);
	if (!o->p)
		return -ENOMEM;
	rr_mem_thp(o->p, cap);
	o->len = 0;
	o->cap = cap;
	o->want = want;
	return 0;
}

/* Make at least `need` bytes free; DEC_OVER once the bound is reached. */
enum dec_status ob_reserve(struct outbuf *o, size_t need)
{
	size_t ncap;
	uint8_t *np;

	/* Called before every decoder step: the right place to say how far
	 * the previous steps got. */
	if (o->hook && o->len > o->told) {
		o->hook->fn(o->hook->arg, o->p, o->len, o->want);
		o->told = o->len;
	}
	if (o->cap - o->len >= need)
		return DEC_OK;
	if (o->want || o->cap >= RR_DECOMPRESS_MAX + 1)
		return DEC_OVER;
	ncap = o->cap;
	while (ncap - o->len < need && ncap <= RR_DECOMPRESS_MAX)
		ncap = ncap > RR_DECOMPRESS_MAX / 2 ? RR_DECOMPRESS_MAX + 1 : ncap * 2;
	if (ncap - o->len < need)
		return DEC_OVER;
	np = realloc(o->p, ncap);
	if (!np)
		return DEC_NOMEM;
	o->p = np;
	rr_mem_thp(np + o->len, ncap - o->len);
	o->cap = ncap;
	return DEC_OK;
}

/* Room for one decoder step: all of it, or with a hook a step's worth, so
 * that the hook hears of progress while the decoder runs. */
static size_t ob_room(const struct outbuf *o)
{
	size_t room = o->cap - o->len;

	return o->hook && room > RR_DEC_HOOK_STEP ? RR_DEC_HOOK_STEP : room;
}

static unsigned clamp_uint(size_t n)
{
	return n > UINT_MAX ? UINT_MAX : (unsigned)n;
}

static enum dec_status dec_gzip(struct dec *d)
{
	z_stream zs;
	enum dec_status st = DEC_OK;

	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
		return DEC_NOMEM;
	for (;;) {
		unsigned in_avail, out_avail;
		int r;

		st = ob_reserve(&d->o, 1);
		if (st)
			break;
		in_avail = clamp_uint(d->in_len - d->pos);
		out_avail = clamp_uint(ob_room(&d->o));
		zs.next_in = (Bytef *)(d->in + d->pos);
		zs.avail_in = in_avail;
		zs.next_out = d->o.p + d->o.len;
		zs.avail_out = out_avail;
		r = inflate(&zs, Z_NO_FLUSH);
		d->pos += in_avail - zs.avail_in;
		d->o.len += out_avail - zs.avail_out;
		if (r == Z_STREAM_END)
			break;
		if (r == Z_MEM_ERROR) {
			st = DEC_NOMEM;
			break;
		}
		if (r != Z_OK && r != Z_BUF_ERROR) {
			d->why = zs.msg ? zs.msg : "invalid deflate data";
			st = DEC_CORRUPT;
			break;
		}
		if (in_avail == zs.avail_in && out_avail == zs.avail_out) {
			st = d->pos == d->in_len ? DEC_TRUNC : DEC_CORRUPT;
			d->why = "decoder made no progress";
			break;
		}
	}
	inflateEnd(&zs);
	return st;
}

static enum dec_status dec_bzip2(struct dec *d)
{
	bz_stream bs;
	enum dec_status st = DEC_OK;

	memset(&bs, 0, sizeof(bs));
	if (BZ2_bzDecompressInit(&bs, 0, 0) != BZ_OK)
		return DEC_NOMEM;
	for (;;) {
		unsigned in_avail, out_avail;
		int r;

		st = ob_reserve(&d->o, 1);
		if (st)
			break;
		in_avail = clamp_uint(d->in_len - d->pos);
		out_avail = clamp_uint(ob_room(&d->o));
		bs.next_in = (char *)(d->in + d->pos);
		bs.avail_in = in_avail;
		bs.next_out = (char *)(d->o.p + d->o.len);
		bs.avail_out = out_avail;
		r = BZ2_bzDecompress(&bs);
		d->pos += in_avail - bs.avail_in;
		d->o.len += out_avail - bs.avail_out;
		if (r == BZ_STREAM_END)
			break;
		if (r == BZ_MEM_ERROR) {
			st = DEC_NOMEM;
			break;
		}
		if (r != BZ_OK) {
			d->why = r == BZ_DATA_ERROR_MAGIC ? "bad bzip2 stream magic" :
				 r == BZ_DATA_ERROR ? "data integrity error (bad CRC or invalid block)" :
				 "libbz2 error";
			st = DEC_CORRUPT;
			break;
		}
		if (in_avail == bs.avail_in && out_avail == bs.avail_out) {
			st = d->pos == d->in_len ? DEC_TRUNC : DEC_CORRUPT;
			d->why = "decoder made no progress";
			break;
		}
	}
	BZ2_bzDecompressEnd(&bs);
	return st;
}

static const char *lzma_reason(lzma_ret r)
{
	switch (r) {
	case LZMA_FORMAT_ERROR:   return "not in the expected format";
	case LZMA_OPTIONS_ERROR:  return "unsupported compression options";
	case LZMA_DATA_ERROR:     return "compressed data is corrupt";
	case LZMA_MEMLIMIT_ERROR: return "stream needs more than " RR_STR(RR_LZMA_MEMLIMIT_MIB) " MiB of memory to decode";
	case LZMA_UNSUPPORTED_CHECK: return "unsupported integrity check";
	default:                  return "liblzma error";
	}
}

/* xz (.xz container) and lzma (the old "lzma alone" format) share liblzma. */
static enum dec_status dec_liblzma(struct dec *d, bool xz)
{
	lzma_stream ls = LZMA_STREAM_INIT;
	enum dec_status st = DEC_OK;
	lzma_ret r;

	/* No LZMA_CONCATENATED: stop at the end of the stream, because the
	 * kernel's size field follows it. */
	r = xz ? lzma_stream_decoder(&ls, RR_LZMA_MEMLIMIT, 0)
	       : lzma_alone_decoder(&ls, RR_LZMA_MEMLIMIT);
	if (r != LZMA_OK)
		return DEC_NOMEM;
	for (;;) {
		size_t in_avail, out_avail;

		st = ob_reserve(&d->o, 1);
		if (st)
			break;
		in_avail = d->in_len - d->pos;
		out_avail = ob_room(&d->o);
		ls.next_in = d->in + d->pos;
		ls.avail_in = in_avail;
		ls.next_out = d->o.p + d->o.len;
		ls.avail_out = out_avail;
		r = lzma_code(&ls, in_avail ? LZMA_RUN : LZMA_FINISH);
		d->pos += in_avail - ls.avail_in;
		d->o.len += out_avail - ls.avail_out;
		if (r == LZMA_STREAM_END)
			break;
		if (r == LZMA_MEM_ERROR) {
			st = DEC_NOMEM;
			break;
		}
		if (r == LZMA_BUF_ERROR || (r == LZMA_OK && in_avail == ls.avail_in &&
					    out_avail == ls.avail_out && d->pos == d->in_len)) {
			st = d->pos == d->in_len ? DEC_TRUNC : DEC_CORRUPT;
			d->why = "decoder made no progress";
			break;
		}
		if (r != LZMA_OK) {
			d->why = lzma_reason(r);
			st = DEC_CORRUPT;
			break;
		}
	}
	lzma_end(&ls);
	return st;
}

static bool zstd_frame_follows(const uint8_t *p, size_t left)
{
	uint32_t m;

	if (left < 4)
		return false;
	m = rr_get32(p);
	return m == ZSTD_MAGICNUMBER || (m & ZSTD_MAGIC_SKIPPABLE_MASK) == ZSTD_MAGIC_SKIPPABLE_START;
}

/*
 * With the size known, the output buffer never moves, and zstd may decode
 * straight into it (ZSTD_d_stableOutBuffer) instead of into a window buffer
 * of its own that it then copies out: a kernel's 128 MiB window costs one
 * page fault per 4 KiB it fills and a second pass over the output.  The
 * stable buffer must keep its size from call to call, so a hook hears of
 * progress by the input being handed over a step at a time instead.
 */
#define ZSTD_IN_STEP (RR_DEC_HOOK_STEP / 4)

static enum dec_status dec_zstd(struct dec *d)
{
	ZSTD_DCtx *dc = ZSTD_createDCtx();
	enum dec_status st = DEC_OK;
	bool stable = false;

	if (!dc)
		return DEC_NOMEM;
	if (d->o.want)
		stable = !ZSTD_isError(ZSTD_DCtx_setParameter(dc, ZSTD_d_stableOutBuffer, 1));
	for (;;) {
		ZSTD_inBuffer ib = { d->in, d->in_len, d->pos };
		ZSTD_outBuffer ob;
		size_t r, in0, out0;

		st = ob_reserve(&d->o, 1);
		if (st)
			break;
		ob.dst = d->o.p;
		ob.size = stable ? d->o.cap : d->o.len + ob_room(&d->o);
		ob.pos = d->o.len;
		if (stable && d->o.hook && d->in_len - d->pos > ZSTD_IN_STEP)
			ib.size = d->pos + ZSTD_IN_STEP;
		in0 = ib.pos;
		out0 = ob.pos;
		r = ZSTD_decompressStream(dc, &ob, &ib);
		d->pos = ib.pos;
		d->o.len = ob.pos;
		if (ZSTD_isError(r)) {
			d->why = ZSTD_getErrorName(r);
			if (ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation)
				st = DEC_NOMEM;
			else if (stable && ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall)
				st = DEC_OVER;  /* more than the size field said */
			else
				st = DEC_CORRUPT;
			break;
		}
		if (r == 0) {
			/* A frame ended: more frames may follow, the size field may not. */
			if (!zstd_frame_follows(d->in + d->pos, d->in_len - d->pos))
				break;
			continue;
		}
		if (ib.pos == in0 && ob.pos == out0) {
			st = d->pos == d->in_len ? DEC_TRUNC : DEC_CORRUPT;
			d->why = "decoder made no progress";
			break;
		}
	}
	ZSTD_freeDCtx(dc);
	return st;
}

/* The lz4 "legacy" frame the kernel uses: magic, then chunks of
 * [u32 LE compressed size][data], each at most 8 MiB decoded.  The format has
 * no end marker, so the 4-byte size field the kernel appends is recognised as
 * a final word with nothing after it. */
static enum dec_status dec_lz4(struct dec *d)
{
	const size_t bound = (size_t)LZ4_compressBound((int)LZ4_LEGACY_CHUNK);
	uint8_t *scratch;
	enum dec_status st;

	d->pos = 4;
	while (d->pos < d->in_len) {
		size_t left, csize, room;
		int n;

		if (d->o.want && d->o.len == d->o.want)
			break;
		left = d->in_len - d->pos;
		if (left < 4)
			return d->o.len ? DEC_OK : DEC_TRUNC;
		csize = rr_get32(d->in + d->pos);
		d->pos += 4;
		left -= 4;
		if (csize == LZ4_LEGACY_MAGIC)
			continue;
		if (left == 0 && d->o.len)
			break;
		if (csize == 0 || csize > bound) {
			d->why = "chunk size is larger than any lz4 legacy chunk";
			return DEC_CORRUPT;
		}
		if (csize > left)
			return DEC_TRUNC;
		st = ob_reserve(&d->o, d->o.want ? 1 : LZ4_LEGACY_CHUNK);
		if (st)
			return st;
		room = d->o.cap - d->o.len;
		if (room > LZ4_LEGACY_CHUNK)
			room = LZ4_LEGACY_CHUNK;
		n = LZ4_decompress_safe((const char *)d->in + d->pos, (char *)d->o.p + d->o.len,
					(int)csize, (int)room);
		if (n < 0 && room < LZ4_LEGACY_CHUNK) {
			/* Too little room left for what was expected: find out
			 * whether the chunk is bad or just bigger than promised. */
			scratch = malloc(LZ4_LEGACY_CHUNK);
			if (!scratch)
				return DEC_NOMEM;
			n = LZ4_decompress_safe((const char *)d->in + d->pos, (char *)scratch,
						(int)csize, (int)LZ4_LEGACY_CHUNK);
			free(scratch);
			if (n >= 0)
				return DEC_OVER;
		}
		if (n < 0) {
			d->why = "LZ4_decompress_safe rejected a chunk";
			return DEC_CORRUPT;
		}
		d->pos += csize;
		d->o.len += (size_t)n;
	}
	if (d->o.want && d->o.len < d->o.want)
		return DEC_TRUNC;
	return DEC_OK;
}


static enum dec_status dec_none(struct dec *d)
{
	size_t n = d->o.want ? d->o.want : d->in_len;
	enum dec_status st;

	if (d->in_len < n)
		return DEC_TRUNC;
	st = ob_reserve(&d->o, n);
	if (st)
		return st;
	memcpy(d->o.p, d->in, n);
	d->o.len = n;
	d->pos = n;
	return DEC_OK;
}

int rr_decompress(enum rr_kcodec c, const uint8_t *in, size_t in_len, size_t expected,
		  uint8_t **ret_out, size_t *ret_len, const char *name, struct rr_err *e)
{
	return rr_decompress_hooked(c, in, in_len, expected, NULL, ret_out, ret_len, name, e);
}

int rr_decompress_hooked(enum rr_kcodec c, const uint8_t *in, size_t in_len, size_t expected,
			 const struct rr_dec_hook *hook, uint8_t **ret_out, size_t *ret_len,
			 const char *name, struct rr_err *e)
{
	const char *cn = rr_kcodec_name(c);
	struct dec d = { .in = in, .in_len = in_len };
	enum dec_status st;
	int r;

	if ((unsigned)c >= RR_KC_UNKNOWN)
		return rr_errf(e, ENOTSUP, "%s: payload compression is not one the kernel supports", name);
	if (!in || in_len == 0)
		return rr_errf(e, EINVAL, "%s: %s payload is empty", name, cn);
	if (expected > RR_DECOMPRESS_MAX)
		return rr_errf(e, EFBIG, "%s: %s payload claims %zu bytes uncompressed, more than "
			       "the 1 GiB limit", name, cn, expected);
	r = ob_init(&d.o, expected, in_len);
	if (r < 0)
		return rr_errf(e, r, "%s: out of memory for the %s payload", name, cn);
	if (expected && hook && hook->fn)
		d.o.hook = hook;

	switch (c) {
	case RR_KC_GZIP:  st = dec_gzip(&d); break;
	case RR_KC_BZIP2: st = dec_bzip2(&d); break;
	case RR_KC_LZMA:  st = dec_liblzma(&d, false); break;
	case RR_KC_XZ:    st = dec_liblzma(&d, true); break;
	case RR_KC_LZO:   st = dec_lzo(&d); break;
	case RR_KC_LZ4:   st = dec_lz4(&d); break;
	case RR_KC_ZSTD:  st = dec_zstd(&d); break;
	default:          st = dec_none(&d); break;
	}
	if (st == DEC_OK && expected && d.o.len > expected)
		st = DEC_OVER;

	switch (st) {
	case DEC_OK:
		break;
	case DEC_TRUNC:
		if (expected)
			r = rr_errf(e, EINVAL, "%s: %s payload is truncated: decoded %zu of %zu bytes",
				    name, cn, d.o.len, expected);
		else
			r = rr_errf(e, EINVAL, "%s: %s payload is truncated after %zu decoded bytes",
				    name, cn, d.o.len);
		goto fail;
	case DEC_CORRUPT:
		r = rr_errf(e, EINVAL, "%s: %s payload is corrupt: %s", name, cn,
			    d.why ? d.why : "invalid data");
		goto fail;
	case DEC_OVER:
		if (expected)
			r = rr_errf(e, EFBIG, "%s: %s payload decodes to more than the %zu bytes "
				    "its size field says", name, cn, expected);
		else
			r = rr_errf(e, EFBIG, "%s: %s payload decodes to more than the 1 GiB limit",
				    name, cn);
		goto fail;
	case DEC_NOMEM:
		r = rr_errf(e, ENOMEM, "%s: out of memory decoding the %s payload", name, cn);
		goto fail;
	}
	if (expected && d.o.len != expected) {
		r = rr_errf(e, EINVAL, "%s: %s payload decodes to %zu bytes, but its size field says %zu",
			    name, cn, d.o.len, expected);
		goto fail;
	}
	if (d.o.hook)
		hook->fn(hook->arg, d.o.p, d.o.len, d.o.len);
	*ret_out = d.o.p;
	*ret_len = d.o.len;
	return 0;
fail:
	if (d.o.hook)
		hook->fn(hook->arg, d.o.p, 0, 0);
	free(d.o.p);
	return r;
}
