/* SPDX-License-Identifier: GPL-2.0-only */
/* The parallel LZ4 writer (src/lz4par.c): every joined block decodes with
 * liblz4 to exactly its input, and the bytes are the same for 1 and N
 * threads, with and without the decode overlap, on synthetic edge cases and
 * on real kernels. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <lz4.h>

#include "image.h"
#include "kernel.h"
#include "lz4par.h"
#include "test.h"

static uint8_t fake_stage[0x400];

/* Compress src[0, len) with `threads` threads and `level`; malloc'd block. */
static uint8_t *block(const uint8_t *src, size_t len, unsigned threads, int level,
		      size_t *ret_len)
{
	struct rr_lz4par *p;
	size_t cap = rr_lz4par_bound(len);
	uint8_t *out = malloc(cap);

	if (!out || rr_lz4par_new(threads, level, &p) < 0) {
		free(out);
		return NULL;
	}
	if (rr_lz4par_block(p, src, 0, len, out, cap, ret_len) < 0) {
		free(out);
		out = NULL;
	}
	rr_lz4par_free(p);
	return out;
}

static bool decodes_to(const uint8_t *blk, size_t blen, const uint8_t *want, size_t len)
{
	uint8_t *got = malloc(len + 1);
	int n;
	bool ok;

	if (!got)
		return false;
	n = LZ4_decompress_safe((const char *)blk, (char *)got, (int)blen, (int)len + 1);
	ok = n == (int)len && !memcmp(got, want, len);
	free(got);
	return ok;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint8_t rnd8(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint8_t)rng;
}

enum fill { F_RANDOM, F_ZERO, F_TEXT, F_MIXED, F_STRIPES };
static const char *fill_name[] = { "random", "zeros", "text", "mixed", "stripes" };

static void fill(uint8_t *b, size_t len, enum fill f)
{
	static const char words[] = "the quick brown fox jumps over the lazy kernel ";

	for (size_t i = 0; i < len; i++) {
		switch (f) {
		case F_RANDOM: b[i] = rnd8(); break;
		case F_ZERO:   b[i] = 0; break;
		case F_TEXT:   b[i] = (uint8_t)words[(i * 7 + i / 97) % (sizeof(words) - 1)]; break;
		/* Whole chunks of noise between compressible ones: literals-only
		 * chunks in the middle of a block, carried across boundaries. */
		case F_MIXED:
			b[i] = (i / (RR_LZ4PAR_CHUNK / 2)) % 3 == 1 ? rnd8() : (uint8_t)(i % 251 < 200 ? 'a' : i);
			break;
		/* Whole literals-only chunks between chunks with matches. */
		case F_STRIPES:
			b[i] = (i / RR_LZ4PAR_CHUNK) % 2 ? rnd8() : (uint8_t)words[i % 11];
			break;
		}
	}
}

static void synthetic(void)
{
	const size_t C = RR_LZ4PAR_CHUNK;
	const size_t lens[] = { 0, 1, 12, 13, 100, C - 1, C, C + 1, C + 5, C + 13, 3 * C + 7,
				5 * C / 2 };

	for (int f = F_RANDOM; f <= F_STRIPES; f++)
		for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			size_t len = lens[i], l1 = 0, l3 = 0;
			uint8_t *src = malloc(len ? len : 1), *b1, *b3;

			fill(src, len, (enum fill)f);
			b1 = block(src, len, 1, 0, &l1);
			b3 = block(src, len, 3, 0, &l3);
			T_OK(b1 && decodes_to(b1, l1, src, len) && l1 <= rr_lz4par_bound(len),
			     "%s %zu bytes: the joined block (%zu bytes) decodes with liblz4 to the input",
			     fill_name[f], len, l1);
			T_OK(b1 && b3 && l1 == l3 && !memcmp(b1, b3, l1),
			     "%s %zu bytes: 1 and 3 threads give the same bytes", fill_name[f], len);
			free(b1);
			free(b3);
			free(src);
		}

	/* LZ4 HC through the same joins. */
	size_t len = 3 * C + 7, lh = 0;
	uint8_t *src = malloc(len), *bh;
	fill(src, len, F_MIXED);
	bh = block(src, len, 2, 9, &lh);
	T_OK(bh && decodes_to(bh, lh, src, len), "LZ4 HC 9, mixed %zu bytes: decodes to the input", len);
	free(bh);

	/* Too little room is an error, never a short block. */
	struct rr_lz4par *p;
	uint8_t small[64];
	size_t got = 0;
	fill(src, len, F_RANDOM);
	T_OK(rr_lz4par_new(2, 0, &p) == 0 &&
	     rr_lz4par_block(p, src, 0, len, small, sizeof(small), &got) == -ENOSPC,
	     "random %zu bytes into 64 bytes of room: -ENOSPC", len);
	rr_lz4par_free(p);

	/* The decoder fails half-way: the hook is told, the pool lets go of
	 * that buffer (a hang here fails the run), and still serves others. */
	uint8_t *other = malloc(len), *dst = malloc(rr_lz4par_bound(len));
	fill(other, len, F_TEXT);
	T_OK(rr_lz4par_new(3, 0, &p) == 0, "pool for the cancel path");
	rr_lz4par_decode_hook(p, src, C, len);      /* not an ELF: nothing queued */
	rr_lz4par_decode_hook(p, src, 0, 0);
	T_OK(rr_lz4par_block(p, other, 0, len, dst, rr_lz4par_bound(len), &got) == 0 &&
	     decodes_to(dst, got, other, len),
	     "after a cancelled decode the pool still compresses another buffer right");
	rr_lz4par_free(p);
	free(other);
	free(dst);
	free(src);
}

/* The same image three ways: 1 thread; 4 threads; 3 threads fed by the
 * decoder's hook as `rerand image` does. */
static void one_kernel(const char *dir, const char *name)
{
	char path[1024];
	struct rr_kernel k1, k3;
	struct rr_err e;
	struct rr_image_opts o1 = { .codec = RERAND_CODEC_LZ4, .threads = 1 };
	struct rr_image_opts o4 = { .codec = RERAND_CODEC_LZ4, .threads = 4 };
	struct rr_image_opts o3 = { .codec = RERAND_CODEC_LZ4 };
	struct rr_dec_hook hook = { .fn = rr_lz4par_decode_hook };
	uint8_t *i1 = NULL, *i4 = NULL, *i3 = NULL;
	size_t n1 = 0, n4 = 0, n3 = 0;
	struct rr_image im;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (rr_kernel_load(path, NULL, &k1, &e) < 0) {
		T_OK(0, "%s loads: %s", name, e.msg);
		return;
	}
	T_OK(rr_image_build(&k1, fake_stage, sizeof(fake_stage), &o1, &i1, &n1, name, &e) == 0 &&
	     rr_image_build(&k1, fake_stage, sizeof(fake_stage), &o4, &i4, &n4, name, &e) == 0,
	     "%s: images built with 1 and 4 threads", name);
	T_OK(i1 && i4 && n1 == n4 && !memcmp(i1, i4, n1),
	     "%s: 1 and 4 threads: the same %zu bytes", name, n1);

	T_OK(rr_lz4par_new(3, 0, &o3.lz4par) == 0, "%s: a 3-thread compressor", name);
	hook.arg = o3.lz4par;
	if (rr_kernel_load_hooked(path, NULL, &hook, &k3, &e) < 0) {
		T_OK(0, "%s loads with the decode hook: %s", name, e.msg);
	} else {
		T_OK(rr_image_build(&k3, fake_stage, sizeof(fake_stage), &o3, &i3, &n3, name, &e) == 0 &&
		     n3 == n1 && !memcmp(i1, i3, n1),
		     "%s: compressed during the decode (3 threads): the same bytes", name);
		rr_kernel_free(&k3);
	}
	size_t hooked = 0, early = 0, want = 0;
	rr_lz4par_stats(o3.lz4par, &hooked, &early);
	for (unsigned s = 0; s < k1.elf.nr_seg; s++)
		want += (k1.elf.seg[s].filesz + RR_LZ4PAR_CHUNK - 1) / RR_LZ4PAR_CHUNK;
	T_OK(hooked == want, "%s: the decode hook queued all %zu chunks from the ELF header "
	     "(%zu compressed before the decoder finished)", name, want, early);
	rr_lz4par_free(o3.lz4par);

	/* Every segment's one block decodes with liblz4 to the kernel's bytes. */
	bool all = i1 && rr_image_parse(i1, n1, name, &im, &e) == 0;
	for (unsigned s = 0; all && s < im.hdr.nr_segments; s++) {
		const struct rerand_segment *sg = &im.hdr.seg[s];
		all = decodes_to(i1 + im.pm_offset + sg->data_offset, sg->data_size,
				 k1.payload + k1.elf.seg[s].offset, sg->file_size);
	}
	T_OK(all, "%s: every segment's block decodes with liblz4 to the segment", name);
	free(i1);
	free(i4);
	free(i3);
	rr_kernel_free(&k1);
}

/* NAME or a kernel of its series (t_kernel_pick); bookworm serves all of
 * these, so a missing one is a failure. */
static void one_series(const char *dir, const char *name, const char *pat, const char *not)
{
	char file[256];
	int r = t_kernel_pick(name, pat, not, file, sizeof(file));

	if (r < 0) {
		T_OK(0, "%s: a kernel like it (%s) in %s", name, pat, dir);
		return;
	}
	if (r == 0)
		printf("# %s is not here: %s stands in for it\n", name, file);
	one_kernel(dir, file);
}

int main(void)
{
	const char *dir = t_kernels_dir();

	memcpy(fake_stage + RERAND_LOCATOR_OFFSET, RERAND_LOCATOR_MAGIC, 8);
	synthetic();
	if (!dir) {
		printf("# RERAND_KERNELS not set: the real-kernel checks need the shared kernels\n");
		T_OK(1, "# SKIP no shared kernels");
		return t_done();
	}
	/* lz4 (8 MiB decoder steps), zstd and xz (1 MiB steps with the hook). */
	one_series(dir, "vmlinuz-6.1.0-57-cloud-amd64", "vmlinuz-6.1.0-*-cloud-amd64", NULL);
	one_series(dir, "vmlinuz-6.12.118+deb12-cloud-amd64", "vmlinuz-6.12.*-cloud-amd64", NULL);
	if (getenv("RERAND_MODE") && !strcmp(getenv("RERAND_MODE"), "long"))
		one_series(dir, "vmlinuz-6.1.0-57-amd64", "vmlinuz-6.1.0-*-amd64", "cloud");
	return t_done();
}
