/* SPDX-License-Identifier: GPL-2.0-only */
/* Tests of the kernel readers: the shared Debian kernels (cross-checked with
 * the independent reloc-oracle.py), every codec via its real CLI tool, the
 * vmlinux + relocs path, and the refusals a user would see. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernel.h"
#include "test.h"


static char tmpdir[] = "/tmp/rr-test-readers-XXXXXX";

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc(n ? (size_t)n : 1);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return buf;
}

static int spit(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	int ok;

	if (!f)
		return -1;
	ok = fwrite(buf, 1, len, f) == len;
	return fclose(f) == 0 && ok ? 0 : -1;
}

static const char *tpath(const char *leaf)
{
	static char p[8][512];
	static unsigned i;
	char *s = p[i++ % 8];

	snprintf(s, 512, "%s/%s", tmpdir, leaf);
	return s;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

/* Where the payload is, computed here from the boot protocol rather than
 * through rr_bzimage_parse, so that a parser bug cannot hide itself. */
static void payload_span(const uint8_t *bz, size_t *start, size_t *len)
{
	size_t sects = bz[0x1f1] ? bz[0x1f1] : 4;

	*start = (sects + 1) * 512 + get32(bz + 0x248);
	*len = get32(bz + 0x24c);
}

/* A copy of `orig` with its payload replaced by `pl` (payload_length patched). */
static uint8_t *splice_payload(const uint8_t *orig, size_t orig_len, const uint8_t *pl,
			       size_t pl_len, size_t *out_len)
{
	size_t start, len, n;
	uint8_t *out;

	payload_span(orig, &start, &len);
	n = start + pl_len + (orig_len - start - len);
	out = malloc(n);
	if (!out)
		return NULL;
	memcpy(out, orig, start);
	memcpy(out + start, pl, pl_len);
	memcpy(out + start + pl_len, orig + start + len, orig_len - start - len);
	put32(out + 0x24c, (uint32_t)pl_len);
	*out_len = n;
	return out;
}

/* Compressed bytes + the 4-byte size the kernel's build appends. */
static uint8_t *with_size(const uint8_t *c, size_t c_len, uint32_t size, size_t *out_len)
{
	uint8_t *out = malloc(c_len + 4);

	if (!out)
		return NULL;
	memcpy(out, c, c_len);
	put32(out + c_len, size);
	*out_len = c_len + 4;
	return out;
}

static bool msg_has(const struct rr_err *e, const char *a, const char *b)
{
	bool ok = strstr(e->msg, a) && (!b || strstr(e->msg, b));

	if (!ok)
		printf("#   message was: %s\n", e->msg);
	return ok;
}

static unsigned long long json_u64(const char *js, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	p = strstr(js, pat);
	return p ? strtoull(p + strlen(pat), NULL, 0) : ~0ull;
}

/* Start compressing ins[i] with each shell command line into outs[i], all
 * in parallel; tools_wait() waits for them. */
static FILE *tools_start(const char *const *cmds, const char *const *ins, const char *const *outs,
			 unsigned n)
{
	char sh[4096];
	size_t at = 0;

	for (unsigned i = 0; i < n; i++)
		at += (size_t)snprintf(sh + at, sizeof(sh) - at, "%s < '%s' > '%s' & ",
				       cmds[i], ins[i], outs[i]);
	snprintf(sh + at, sizeof(sh) - at, "wait");
	return popen(sh, "r");
}

static int tools_wait(FILE *job)
{
	return job ? pclose(job) : -1;
}

static int run_tools(const char *const *cmds, const char *const *outs, unsigned n,
		     const char *in_path)
{
	const char *ins[16];

	for (unsigned i = 0; i < n && i < 16; i++)
		ins[i] = in_path;
	return tools_wait(tools_start(cmds, ins, outs, n));
}

/* ---- synthetic inputs: run without the shared kernels ------------------ */

#define TINY_PADDR 0x1000000ull
#define TINY_VBASE 0xffffffff81000000ull

/* A tiny x86-64 vmlinux-like ELF: two PT_LOADs, a PROGBITS and a NOBITS
 * section, section headers last.  Returns its length (0x340). */
static size_t tiny_elf(uint8_t *b, unsigned char cls)
{
	memset(b, 0, 0x340);
	memcpy(b, "\x7f" "ELF", 4);
	b[4] = cls;
	b[5] = 1;           /* little-endian */
	b[6] = 1;
	put16(b + 16, 2);   /* ET_EXEC */
	put16(b + 18, 62);  /* EM_X86_64 */
	put32(b + 20, 1);
	put64(b + 24, TINY_PADDR + 0x10);
	put64(b + 32, 64);  /* e_phoff */
	put64(b + 40, 0x280);
	put16(b + 52, 64);
	put16(b + 54, 56);
	put16(b + 56, 2);
	put16(b + 58, 64);
	put16(b + 60, 3);
	/* PT_LOAD text: 0x100 bytes at 0x100, 0x200 in memory */
	uint8_t *ph = b + 64;
	put32(ph, 1); put32(ph + 4, 5);
	put64(ph + 8, 0x100); put64(ph + 16, TINY_VBASE); put64(ph + 24, TINY_PADDR);
	put64(ph + 32, 0x100); put64(ph + 40, 0x200); put64(ph + 48, 0x1000);
	/* PT_LOAD data+bss: 0x80 bytes at 0x200, 0x1000 in memory, 2 MiB up */
	ph += 56;
	put32(ph, 1); put32(ph + 4, 6);
	put64(ph + 8, 0x200); put64(ph + 16, TINY_VBASE + 0x200000); put64(ph + 24, TINY_PADDR + 0x200000);
	put64(ph + 32, 0x80); put64(ph + 40, 0x1000); put64(ph + 48, 0x1000);
	for (unsigned i = 0; i < 0x180; i++)
		b[0x100 + i] = (uint8_t)(i * 7 + 1);
	/* sections: NULL, .text PROGBITS [0x100, 0x200), .bss NOBITS at 0x1000 */
	uint8_t *sh = b + 0x280 + 64;
	put32(sh + 4, 1); put64(sh + 24, 0x100); put64(sh + 32, 0x100);
	sh += 64;
	put32(sh + 4, 8); put64(sh + 24, 0x1000); put64(sh + 32, 0x10000);
	return 0x340;
}

/* 3-list table for the tiny ELF: 2 reloc64, 1 inverse, 2 reloc32. */
static size_t tiny_relocs(uint8_t *t, unsigned layout, uint32_t r64_0)
{
	uint32_t w3[] = { 0, r64_0, 0x81000020, 0, 0x81000040, 0, 0x81000044, 0x812000fc };
	uint32_t w2[] = { 0, r64_0, 0x81000020, 0, 0x81000044, 0x812000fc };
	const uint32_t *w = layout == 3 ? w3 : w2;
	size_t n = layout == 3 ? 8 : 6;

	for (size_t i = 0; i < n; i++)
		put32(t + 4 * i, w[i]);
	return n * 4;
}

static void test_synthetic_elf_relocs(void)
{
	uint8_t elf[0x340], tab[64];
	struct rr_vmlinux v;
	struct rr_relocs rl;
	struct rr_err e = { "" };
	size_t n, tn;
	int r;

	n = tiny_elf(elf, 2);
	r = rr_elf_read(elf, n, "tiny", &v, &e);
	T_OK(r == 0, "tiny ELF is read (%s)", r ? e.msg : "ok");
	if (r == 0) {
		T_EQ_U64(v.nr_seg, 2, "tiny ELF: two PT_LOAD segments");
		T_EQ_U64(v.link_paddr, TINY_PADDR, "tiny ELF: link_paddr is the lowest p_paddr");
		T_EQ_U64(v.mem_size, 0x201000, "tiny ELF: mem_size spans both segments");
		T_EQ_U64(v.entry, TINY_PADDR + 0x10, "tiny ELF: entry");
		T_EQ_U64(v.elf_end, 0x340, "tiny ELF: elf_end = end of the section headers, NOBITS ignored");
	}
	r = rr_elf_read(elf, n - 1, "short.elf", &v, &e);
	T_OK(r < 0 && msg_has(&e, "short.elf", "outside the file"), "ELF cut by one byte is refused");

	n = tiny_elf(elf, 1);
	r = rr_elf_read(elf, n, "elf32", &v, &e);
	T_OK(r < 0 && msg_has(&e, "elf32", "32-bit kernel"), "ELFCLASS32 is a 32-bit kernel");

	n = tiny_elf(elf, 2);
	put64(elf + 24, TINY_PADDR + 0x100);     /* into bss, not file-backed text */
	r = rr_elf_read(elf, n, "entry", &v, &e);
	T_OK(r < 0 && msg_has(&e, "entry", "entry point"), "entry outside the loaded bytes is refused");

	n = tiny_elf(elf, 2);
	put64(elf + 64 + 56 + 24, TINY_PADDR + 0x100);  /* overlap the first segment */
	r = rr_elf_read(elf, n, "overlap", &v, &e);
	T_OK(r < 0 && msg_has(&e, "overlap", "overlap"), "overlapping segments are refused");

	n = tiny_elf(elf, 2);
	if (rr_elf_read(elf, n, "tiny", &v, &e) != 0)
		return;
	for (unsigned layout = 2; layout <= 3; layout++) {
		tn = tiny_relocs(tab, layout, 0x81000008);
		memset(&rl, 0, sizeof(rl));
		r = rr_relocs_parse(tab, tn, &v, "tab", &rl, &e);
		T_OK(r == 0 && rl.layout == layout && rl.nr_reloc64 == 2 &&
		     rl.nr_inverse32 == (layout == 3 ? 1u : 0u) && rl.nr_reloc32 == 2 &&
		     rl.reloc64[0] == 0x81000008 && rl.reloc32[1] == 0x812000fc,
		     "%u-list table parsed into its lists", layout);
		rr_relocs_free(&rl);
	}
	/* 0x812000fc + 8 runs past mem_size (0x201000)?  No: the last 4 bytes
	 * fit a 32-bit entry but a 64-bit one at 0x81200ffc would not. */
	tn = tiny_relocs(tab, 3, 0x81200ffc);
	r = rr_relocs_parse(tab, tn, &v, "edge", &rl, &e);
	T_OK(r < 0 && msg_has(&e, "edge", "relocation 0 (0x81200ffc") && msg_has(&e, "points outside the image", NULL),
	     "64-bit entry whose last bytes leave the image is refused");
	tn = tiny_relocs(tab, 3, 0x80ffffff);
	r = rr_relocs_parse(tab, tn, &v, "below", &rl, &e);
	T_OK(r < 0 && msg_has(&e, "below", "points outside the image"), "entry below the image is refused");
	tn = tiny_relocs(tab, 3, 0x01000008);  /* sign-extends to a positive address */
	r = rr_relocs_parse(tab, tn, &v, "positive", &rl, &e);
	T_OK(r < 0 && msg_has(&e, "positive", "points outside the image"), "entry without the sign bit is refused");
	memset(tab, 0, 32);
	r = rr_relocs_parse(tab, 32, &v, "zeros", &rl, &e);
	T_OK(r < 0 && msg_has(&e, "zeros", "no relocation table"), "all-zero table: no relocation table");
	r = rr_relocs_parse(tab, 0, &v, "empty", &rl, &e);
	T_OK(r < 0 && msg_has(&e, "empty", "CONFIG_RANDOMIZE_BASE"), "empty table: no relocation table");
	tn = tiny_relocs(tab, 3, 0x81000008);
	r = rr_relocs_parse(tab, tn - 2, &v, "odd", &rl, &e);
	T_OK(r < 0 && msg_has(&e, "odd", "32-bit words"), "table length not a multiple of 4 is refused");
	put32(tab + 8, 0);
	r = rr_relocs_parse(tab, tn, &v, "four", &rl, &e);
	T_OK(r < 0 && msg_has(&e, "four", "4 zero terminators"), "four terminators are refused");
}

static void test_not_a_kernel(void)
{
	struct rr_kernel k;
	struct rr_err e = { "" };
	const char *p = tpath("hello.txt");
	int r;

	spit(p, "hello, world\n", 13);
	r = rr_kernel_load(p, NULL, &k, &e);
	T_OK(r < 0 && msg_has(&e, p, "not a kernel: neither a bzImage, an ELF vmlinux nor a unified kernel image"),
	     "a text file is not a kernel");
	r = rr_kernel_load(tpath("missing"), NULL, &k, &e);
	T_OK(r == -ENOENT && msg_has(&e, "missing", "cannot open"), "a missing file is reported");
	r = rr_kernel_load(tmpdir, NULL, &k, &e);
	T_OK(r < 0 && msg_has(&e, tmpdir, "not a regular file"), "a directory is refused");
}

/* Every codec on a small buffer, through the real CLI tools. */
static const struct codec_tool {
	enum rr_kcodec codec;
	const char *cmd;
	const char *leaf;
	bool append_size;           /* gzip's ISIZE is the size field */
	const char *cmd_long;       /* the kernel build's options (RERAND_MODE=long) */
	bool slow;                  /* seconds per 50 MiB: a prefix only in short mode */
} tools[] = {
	{ RR_KC_GZIP,  "gzip -n -9 -c",          "p.gz",   false, NULL, true },
	{ RR_KC_BZIP2, "bzip2 -9 -c",            "p.bz2",  true,  NULL, true },
	{ RR_KC_LZMA,  "xz --format=lzma -1 -c", "p.lzma", true,  "xz --format=lzma -9 -c", true },
	{ RR_KC_XZ,    "xz --check=crc32 -1 -c", "p.xz",   true,
	  "xz --check=crc32 --x86 --lzma2=,dict=32MiB -c", true },
	{ RR_KC_LZO,   "lzop -9 -c",             "p.lzo",  true,  NULL, false },
	{ RR_KC_LZ4,   "lz4 -l -c",              "p.lz4",  true,  "lz4 -l -12 --favor-decSpeed -c", false },
	{ RR_KC_ZSTD,  "zstd -3 -c",             "p.zst",  true,  "zstd -22 --ultra -c", false },
};

/* In short mode the slow tools compress only this much of the payload. */
#define PREFIX_LEN ((size_t)6 << 20)
#define NR_TOOLS (sizeof(tools) / sizeof(tools[0]))

static void test_codecs_small(void)
{
	size_t n = 300000, clen, plen, olen;
	uint8_t *data = malloc(n), *c, *pl, *out;
	const char *cmds[NR_TOOLS], *outs[NR_TOOLS];
	struct rr_err e = { "" };
	int r;

	/* Compressible but not trivial: more than one lzo/lz4 block. */
	for (size_t i = 0; i < n; i++)
		data[i] = (uint8_t)((i % 251) ^ (i / 4096) ^ (i * 2654435761u >> 27));
	spit(tpath("small"), data, n);
	for (unsigned i = 0; i < NR_TOOLS; i++) {
		cmds[i] = tools[i].cmd;
		outs[i] = strdup(tpath(tools[i].leaf));
	}
	r = run_tools(cmds, outs, NR_TOOLS, tpath("small"));
	T_OK(r == 0, "CLI tools compressed a small buffer");
	for (unsigned i = 0; i < NR_TOOLS; i++) {
		const char *cn = rr_kcodec_name(tools[i].codec);

		c = slurp(outs[i], &clen);
		if (!c || clen < 8) {
			T_OK(0, "%s: tool output read", cn);
			continue;
		}
		T_OK(rr_kcodec_detect(c, clen) == tools[i].codec, "%s detected by magic", cn);
		pl = tools[i].append_size ? with_size(c, clen, (uint32_t)n, &plen) : c;
		if (!tools[i].append_size)
			plen = clen;
		r = rr_decompress(tools[i].codec, pl, plen, n, &out, &olen, "small", &e);
		T_OK(r == 0 && olen == n && memcmp(out, data, n) == 0, "%s: decoded identically (%s)",
		     cn, r ? e.msg : "ok");
		if (r == 0)
			free(out);
		r = rr_decompress(tools[i].codec, pl, plen, 0, &out, &olen, "small", &e);
		T_OK(r == 0 && olen == n && memcmp(out, data, n) == 0,
		     "%s: decoded identically with the size unknown (%s)", cn, r ? e.msg : "ok");
		if (r == 0)
			free(out);
		r = rr_decompress(tools[i].codec, pl, plen, n - 1, &out, &olen, "small", &e);
		T_OK(r < 0 && msg_has(&e, "small", cn), "%s: one byte more than the size field is refused",
		     cn);
		r = rr_decompress(tools[i].codec, pl, clen / 2, n, &out, &olen, "half", &e);
		T_OK(r < 0 && msg_has(&e, "half", "truncated"), "%s: stream cut in half is truncated", cn);
		r = rr_decompress(tools[i].codec, pl, plen, (size_t)2 << 30, &out, &olen, "huge", &e);
		T_OK(r == -EFBIG && msg_has(&e, "huge", "1 GiB"), "%s: a 2 GiB size field is refused", cn);
		if (pl != c)
			free(pl);
		free(c);
		free((void *)outs[i]);
	}
	free(data);
}

/* ---- the shared kernels ----------------------------------------------- */

/* The facts hold for the named builds; another build of the same series and
 * flavour (t_kernel_pick: a machine without ../shared fetches what Debian's
 * archive serves) has the same codec and layout, but its entry may move. */
static struct kspec {
	const char *file;
	const char *glob, *not;      /* the series and flavour, for a stand-in */
	enum rr_kcodec codec;
	unsigned layout;
	uint64_t entry_off;          /* e_entry - 0x1000000, as readelf shows */
	char use[256];               /* the file tested: file, a stand-in, or "" */
	int exact;
} kernels[] = {
	{ "vmlinuz-6.1.0-57-amd64", "vmlinuz-6.1.0-*-amd64", "cloud", RR_KC_XZ, 3, 0, "", 0 },
	{ "vmlinuz-6.1.0-57-cloud-amd64", "vmlinuz-6.1.0-*-cloud-amd64", NULL, RR_KC_LZ4, 3, 0, "", 0 },
	{ "vmlinuz-6.12.118+deb12-cloud-amd64", "vmlinuz-6.12.*-cloud-amd64", NULL, RR_KC_ZSTD, 3,
	  0xb53, "", 0 },                                                   /* readelf: 0x1000b53 */
	{ "vmlinuz-6.16.12+deb13-cloud-amd64", "vmlinuz-{6.1[5-9],[7-9]}.*-cloud-amd64", NULL, RR_KC_ZSTD, 2,
	  0x1ffd574 - 0x1000000, "", 0 },
};

static void pick_kernels(void)
{
	for (size_t i = 0; i < sizeof(kernels) / sizeof(kernels[0]); i++) {
		struct kspec *ks = &kernels[i];
		int r = t_kernel_pick(ks->file, ks->glob, ks->not, ks->use, sizeof(ks->use));

		ks->exact = r == 1;
		if (r < 0)
			ks->use[0] = '\0';
		else if (r == 0)
			printf("# %s is not here: %s stands in for it\n", ks->file, ks->use);
	}
}

static void kpath(char *buf, size_t n, const char *file)
{
	snprintf(buf, n, "%s/%s", t_kernels_dir(), file);
}

static void oracle_check(const struct rr_kernel *k, const char *file)
{
	char cmd[1024], js[1024] = "";
	const char *pp = tpath("oracle-payload"), *img = tpath("oracle-image");
	FILE *f;

	if (spit(pp, k->payload, k->payload_len) != 0) {
		T_OK(0, "%s: payload written for the oracle", file);
		return;
	}
	snprintf(cmd, sizeof(cmd), "python3 %s '%s' --virt 0x1000000 -o '%s'", t_oracle(), pp, img);
	f = popen(cmd, "r");
	if (!f || !fgets(js, sizeof(js), f))
		js[0] = '\0';
	if (f)
		pclose(f);
	T_OK(js[0] == '{', "%s: reloc-oracle.py ran", file);
	T_EQ_U64(json_u64(js, "lists"), k->relocs.layout, "%s: oracle agrees on the layout", file);
	T_EQ_U64(json_u64(js, "relocs64"), k->relocs.nr_reloc64, "%s: oracle agrees on relocs64", file);
	T_EQ_U64(json_u64(js, "inverse32"), k->relocs.nr_inverse32, "%s: oracle agrees on inverse32", file);
	T_EQ_U64(json_u64(js, "relocs32"), k->relocs.nr_reloc32, "%s: oracle agrees on relocs32", file);
	T_EQ_U64(json_u64(js, "image_size"), k->elf.mem_size, "%s: oracle agrees on the image size", file);
	T_EQ_U64(json_u64(js, "entry_offset"), k->elf.entry - k->elf.link_paddr,
		 "%s: oracle agrees on the entry offset", file);
	unlink(pp);
	unlink(img);
}

static void test_shared_kernel(const struct kspec *ks)
{
	char path[1024];
	struct rr_kernel k;
	struct rr_err e = { "" };
	uint8_t *file;
	size_t flen, start, len;
	double t0, t1;
	int r;

	if (!ks->use[0]) {
		T_OK(1, "%s # SKIP no kernel like it (%s) in %s", ks->file, ks->glob, t_kernels_dir());
		return;
	}
	const char *name = ks->use;
	kpath(path, sizeof(path), name);
	file = slurp(path, &flen);
	T_OK(file != NULL, "%s: readable", name);
	if (!file)
		return;
	payload_span(file, &start, &len);
	t0 = now_s();
	r = rr_kernel_load(path, NULL, &k, &e);
	t1 = now_s();
	T_OK(r == 0, "%s: loaded (%s)", name, r ? e.msg : "ok");
	if (r) {
		free(file);
		return;
	}
	printf("# %s: %s payload, %zu -> %zu bytes, loaded in %.2f s\n", name,
	       rr_kcodec_name(k.codec), (size_t)len, k.payload_len, t1 - t0);
	T_OK(k.is_bzimage && k.codec == ks->codec, "%s: codec is %s", name, rr_kcodec_name(ks->codec));
	T_EQ_U64(k.payload_len, get32(file + start + len - 4), "%s: decoded size equals the appended size",
		 name);
	T_EQ_U64(k.bz.payload_offset, start, "%s: payload offset", name);
	T_OK(strncmp(k.bz.kernel_version, name + 8, 4) == 0, "%s: version string \"%.40s\"",
	     name, k.bz.kernel_version);
	T_EQ_U64(k.elf.link_paddr, 0x1000000, "%s: link_paddr", name);
	if (ks->exact)
		T_EQ_U64(k.elf.entry - k.elf.link_paddr, ks->entry_off, "%s: entry offset", name);
	else
		printf("# %s: entry offset 0x%llx (a stand-in: not compared)\n", name,
		       (unsigned long long)(k.elf.entry - k.elf.link_paddr));
	T_OK(k.elf.nr_seg >= 2 && k.elf.mem_size > (16u << 20) && k.elf.mem_size < (1u << 30),
	     "%s: %u segments, mem_size %llu", name, k.elf.nr_seg, (unsigned long long)k.elf.mem_size);
	T_OK(k.elf.elf_end > 0 && k.elf.elf_end < k.payload_len && k.elf.elf_end % 4 == 0,
	     "%s: table starts at elf_end inside the payload", name);
	T_EQ_U64(k.relocs.layout, ks->layout, "%s: relocation layout", name);
	T_OK(k.relocs.nr_reloc64 > 0 && k.relocs.nr_reloc32 > 0 &&
	     (ks->layout == 2 ? k.relocs.nr_inverse32 == 0 : k.relocs.nr_inverse32 > 0),
	     "%s: %zu/%zu/%zu relocations", name, k.relocs.nr_reloc64, k.relocs.nr_inverse32,
	     k.relocs.nr_reloc32);
	T_OK(k.elf.percpu_zero_vaddr == (ks->layout == 3), "%s: per-CPU segment hint matches the layout",
	     name);
	oracle_check(&k, name);
	rr_kernel_free(&k);
	free(file);
}

/* Decode `pl` spliced into `orig` and compare with the expected payload. */
static void check_spliced(const uint8_t *orig, size_t orig_len, const uint8_t *pl, size_t pl_len,
			  enum rr_kcodec want, const struct rr_kernel *ref)
{
	const char *cn = rr_kcodec_name(want);
	struct rr_kernel k;
	struct rr_err e = { "" };
	size_t blen;
	uint8_t *bz = splice_payload(orig, orig_len, pl, pl_len, &blen);
	double t0 = now_s();
	int r = rr_kernel_load_mem(bz, blen, "spliced", NULL, 0, NULL, &k, &e);

	T_OK(r == 0, "%s bzImage loaded (%s, %.2f s)", cn, r ? e.msg : "ok", now_s() - t0);
	if (r == 0) {
		T_OK(k.codec == want, "%s bzImage: codec detected", cn);
		T_OK(k.payload_len == ref->payload_len &&
		     memcmp(k.payload, ref->payload, ref->payload_len) == 0,
		     "%s bzImage: decoded payload is identical", cn);
		T_OK(k.relocs.nr_reloc64 == ref->relocs.nr_reloc64 &&
		     k.relocs.nr_reloc32 == ref->relocs.nr_reloc32 &&
		     k.relocs.nr_inverse32 == ref->relocs.nr_inverse32,
		     "%s bzImage: same relocation lists", cn);
		rr_kernel_free(&k);
	}
	free(bz);
}

/* Load `pl` (uncompressed payload) as an lz4 bzImage built from `orig`,
 * expecting failure; returns the message. */
static int load_modified_payload(const uint8_t *orig, size_t orig_len, const uint8_t *pl,
				 size_t pl_len, const char *name, struct rr_err *e)
{
	const char *in = tpath("mod-payload"), *out = tpath("mod-payload.lz4");
	const char *cmd = "lz4 -l -1 -c";
	uint8_t *c, *sized, *bz;
	size_t clen, slen, blen;
	struct rr_kernel k;
	int r = -1;

	spit(in, pl, pl_len);
	if (run_tools(&cmd, &out, 1, in) != 0 || !(c = slurp(out, &clen)))
		return rr_errf(e, EIO, "lz4 tool failed");
	sized = with_size(c, clen, (uint32_t)pl_len, &slen);
	bz = splice_payload(orig, orig_len, sized, slen, &blen);
	r = rr_kernel_load_mem(bz, blen, name, NULL, 0, NULL, &k, e);
	if (r == 0) {
		rr_kernel_free(&k);
		r = 0;
	}
	free(bz);
	free(sized);
	free(c);
	return r;
}

static bool long_mode(void)
{
	const char *m = getenv("RERAND_MODE");

	return m && strcmp(m, "long") == 0;
}

static bool use_prefix(unsigned i)
{
	return tools[i].slow && !long_mode();
}

/* Recompress the reference payload with every codec's tool, in parallel. */
static FILE *start_recompression(const struct rr_kernel *ref, const char **outs)
{
	const char *cmds[NR_TOOLS], *ins[NR_TOOLS];

	if (spit(tpath("payload"), ref->payload, ref->payload_len) != 0 ||
	    spit(tpath("prefix"), ref->payload, PREFIX_LEN) != 0)
		return NULL;
	for (unsigned i = 0; i < NR_TOOLS; i++) {
		cmds[i] = long_mode() && tools[i].cmd_long ? tools[i].cmd_long : tools[i].cmd;
		ins[i] = strdup(tpath(use_prefix(i) ? "prefix" : "payload"));
		outs[i] = strdup(tpath(tools[i].leaf));
	}
	FILE *job = tools_start(cmds, ins, outs, NR_TOOLS);
	for (unsigned i = 0; i < NR_TOOLS; i++)
		free((void *)ins[i]);
	return job;
}

/* A slow codec's output for the payload prefix, spliced into a real
 * bzImage: the header parser and the decoder must give the prefix back. */
static void check_spliced_prefix(const uint8_t *orig, size_t orig_len, const uint8_t *pl,
				 size_t pl_len, enum rr_kcodec want, const struct rr_kernel *ref)
{
	const char *cn = rr_kcodec_name(want);
	struct rr_bzimage bz;
	struct rr_err e = { "" };
	size_t blen, olen = 0;
	uint8_t *bzbuf = splice_payload(orig, orig_len, pl, pl_len, &blen), *out = NULL;
	int r = rr_bzimage_parse(bzbuf, blen, "prefix", &bz, &e);

	if (r == 0)
		r = rr_decompress(rr_kcodec_detect(bzbuf + bz.payload_offset, bz.payload_length),
				  bzbuf + bz.payload_offset, bz.payload_length, bz.uncompressed_size,
				  &out, &olen, "prefix", &e);
	T_OK(r == 0 && olen == PREFIX_LEN && memcmp(out, ref->payload, PREFIX_LEN) == 0,
	     "%s bzImage (first %zu MiB of the payload): decoded identically (%s)", cn,
	     PREFIX_LEN >> 20, r ? e.msg : "ok");
	T_OK(rr_kcodec_detect(bzbuf + bz.payload_offset, bz.payload_length) == want,
	     "%s bzImage: codec detected", cn);
	free(out);
	free(bzbuf);
}

static void test_codecs_and_refusals(const struct rr_kernel *refp, const uint8_t *orig, size_t olen,
				     FILE *job, const char **outs, double t0)
{
	char xzpath[1024];
	const struct rr_kernel ref = *refp;
	struct rr_kernel k, v;
	struct rr_err e = { "" };
	uint8_t *xzk, *tmp, *mod;
	size_t xlen, start, len, tlen;
	int r;

	/* Every codec, through its CLI tool, spliced into a real bzImage. */
	r = tools_wait(job);
	T_OK(r == 0, "CLI tools compressed the %zu-byte payload (%.1f s%s)",
	     ref.payload_len, now_s() - t0, long_mode() ? "" : "; slow codecs: a prefix");
	for (unsigned i = 0; i < NR_TOOLS; i++) {
		uint8_t *c = slurp(outs[i], &tlen), *pl;
		size_t plen = 0;

		if (!c) {
			T_OK(0, "%s tool output read", rr_kcodec_name(tools[i].codec));
			continue;
		}
		size_t usize = use_prefix(i) ? PREFIX_LEN : ref.payload_len;

		pl = tools[i].append_size ? with_size(c, tlen, (uint32_t)usize, &plen) : c;
		if (!tools[i].append_size)
			plen = tlen;
		if (use_prefix(i))
			check_spliced_prefix(orig, olen, pl, plen, tools[i].codec, &ref);
		else
			check_spliced(orig, olen, pl, plen, tools[i].codec, &ref);
		if (pl != c)
			free(pl);
		free(c);
		unlink(outs[i]);
	}

	/* 32-bit kernel: XLF_KERNEL_64 cleared. */
	tmp = malloc(olen);
	memcpy(tmp, orig, olen);
	tmp[0x236] &= (uint8_t)~1u;
	r = rr_kernel_load_mem(tmp, olen, "k32", NULL, 0, NULL, &k, &e);
	T_OK(r < 0 && msg_has(&e, "k32", "32-bit kernel"), "bzImage without XLF_KERNEL_64 is refused");
	/* The file cut in the middle of its payload. */
	payload_span(orig, &start, &len);
	r = rr_kernel_load_mem(orig, start + len / 2, "cut", NULL, 0, NULL, &k, &e);
	T_OK(r < 0 && msg_has(&e, "cut", "truncated"), "a file cut inside its payload is refused");
	free(tmp);

	/* A payload whose ELF is ELFCLASS32. */
	mod = malloc(ref.payload_len);
	memcpy(mod, ref.payload, ref.payload_len);
	mod[4] = 1;
	r = load_modified_payload(orig, olen, mod, ref.payload_len, "elf32", &e);
	T_OK(r < 0 && msg_has(&e, "elf32", "32-bit kernel"), "an ELFCLASS32 payload is refused");
	/* No relocation table: only the ELF bytes. */
	r = load_modified_payload(orig, olen, ref.payload, ref.elf.elf_end, "norelocs", &e);
	T_OK(r < 0 && msg_has(&e, "norelocs", "no relocation table (kernel built without CONFIG_RANDOMIZE_BASE?)"),
	     "a payload without a relocation table is refused");
	/* A relocation patched to point past the image. */
	memcpy(mod, ref.payload, ref.payload_len);
	put32(mod + ref.elf.elf_end + 4 * 3, 0x81000000u + (uint32_t)ref.elf.mem_size);
	r = load_modified_payload(orig, olen, mod, ref.payload_len, "badreloc", &e);
	T_OK(r < 0 && msg_has(&e, "badreloc", "relocation 2 (0x") && msg_has(&e, "points outside the image", NULL),
	     "a relocation outside the image is refused");
	free(mod);

	/* vmlinux + relocs file: the same kernel as the bzImage path. */
	const char *vp = strdup(tpath("vmlinux")), *rp = strdup(tpath("vmlinux.relocs"));
	spit(vp, ref.payload, ref.elf.elf_end);
	spit(rp, ref.payload + ref.elf.elf_end, ref.payload_len - ref.elf.elf_end);
	r = rr_kernel_load(vp, NULL, &v, &e);
	T_OK(r < 0 && msg_has(&e, vp, "an uncompressed vmlinux needs --relocs FILE"),
	     "a vmlinux without --relocs is refused");
	r = rr_kernel_load(vp, rp, &v, &e);
	T_OK(r == 0, "vmlinux + relocs loaded (%s)", r ? e.msg : "ok");
	if (r == 0) {
		T_OK(!v.is_bzimage && v.codec == RR_KC_NONE, "vmlinux: no bzImage, no codec");
		T_OK(v.elf.nr_seg == ref.elf.nr_seg &&
		     memcmp(v.elf.seg, ref.elf.seg, sizeof(v.elf.seg[0]) * v.elf.nr_seg) == 0 &&
		     v.elf.entry == ref.elf.entry && v.elf.mem_size == ref.elf.mem_size,
		     "vmlinux: same segments, entry and size as the bzImage");
		T_OK(v.relocs.layout == ref.relocs.layout &&
		     v.relocs.nr_reloc64 == ref.relocs.nr_reloc64 &&
		     v.relocs.nr_inverse32 == ref.relocs.nr_inverse32 &&
		     v.relocs.nr_reloc32 == ref.relocs.nr_reloc32 &&
		     !memcmp(v.relocs.reloc64, ref.relocs.reloc64, 4 * ref.relocs.nr_reloc64) &&
		     !memcmp(v.relocs.inverse32, ref.relocs.inverse32, 4 * ref.relocs.nr_inverse32) &&
		     !memcmp(v.relocs.reloc32, ref.relocs.reloc32, 4 * ref.relocs.nr_reloc32),
		     "vmlinux: same relocation lists as the bzImage");
		rr_kernel_free(&v);
	}
	spit(rp, "", 0);
	r = rr_kernel_load(vp, rp, &v, &e);
	T_OK(r < 0 && msg_has(&e, rp, "no relocation table"), "vmlinux with an empty relocs file is refused");
	free((void *)vp);
	free((void *)rp);

	/* Truncated and corrupt xz payloads (xz carries a CRC). */
	kpath(xzpath, sizeof(xzpath), kernels[0].use);
	xzk = slurp(xzpath, &xlen);
	if (xzk) {
		uint8_t *pl, *bz;
		size_t plen, blen;

		payload_span(xzk, &start, &len);
		pl = with_size(xzk + start, len / 2, get32(xzk + start + len - 4), &plen);
		bz = splice_payload(xzk, xlen, pl, plen, &blen);
		r = rr_kernel_load_mem(bz, blen, "xzcut", NULL, 0, NULL, &k, &e);
		T_OK(r < 0 && msg_has(&e, "xzcut", "xz payload is truncated: decoded "),
		     "an xz payload cut in the middle is refused");
		free(bz);
		free(pl);
		tmp = malloc(xlen);
		memcpy(tmp, xzk, xlen);
		for (size_t i = 0; i < 16; i++)
			tmp[start + len / 2 + i] ^= 0x5a;
		r = rr_kernel_load_mem(tmp, xlen, "xzbad", NULL, 0, NULL, &k, &e);
		T_OK(r < 0 && msg_has(&e, "xzbad", "xz payload is corrupt: "),
		     "an xz payload with flipped bytes is refused");
		free(tmp);
		free(xzk);
	} else {
		T_OK(1, "truncated and corrupt xz payloads # SKIP no xz kernel (%s) in %s", kernels[0].glob,
		     t_kernels_dir());
	}
}


/* procfs files report size 0 in stat() (6.1's /proc/cmdline): the reader
 * must read to EOF.  Checked against the real /proc, and against stdio. */
static void test_read_procfs(void)
{
	static const char *const files[] = { "/proc/cmdline", "/proc/self/stat", "/proc/stat" };
	struct rr_err e = { "" };

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		uint8_t *buf = NULL;
		size_t len = 0, ref = 0;
		char tmp[8192];
		FILE *f = fopen(files[i], "re");
		size_t n;

		if (!f) {
			T_OK(0, "%s opens with stdio", files[i]);
			continue;
		}
		while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
			ref += n;
		fclose(f);
		int r = rr_read_file(files[i], 1u << 20, &buf, &len, &e);
		T_OK(r == 0 && len > 0, "rr_read_file reads %s to EOF: %zu bytes (stdio: %zu)",
		     files[i], len, ref);
		/* /proc/self/stat is another process's view each open: compare
		 * sizes only for the files that do not change between reads. */
		if (i == 0)
			T_EQ_U64(len, ref, "%s: same length as stdio", files[i]);
		free(buf);
	}
	uint8_t *buf = (uint8_t *)"x";
	size_t len = 7;
	int r = rr_read_file("/proc/cmdline", 4, &buf, &len, &e);
	T_OK(r == -EFBIG && strstr(e.msg, "/proc/cmdline") && len == 7,
	     "a procfs file over the limit is an error naming the file, outputs untouched (%s)", e.msg);
	/* /proc/stat reports size 0 on every kernel: the limit must hold while reading. */
	r = rr_read_file("/proc/stat", 16, &buf, &len, &e);
	T_OK(r == -EFBIG && strstr(e.msg, "/proc/stat") && len == 7,
	     "a size-0 procfs file past the limit is an error while reading (%s)", e.msg);
}

int main(void)
{
	char cmd[600];

	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_read_procfs();
	test_synthetic_elf_relocs();
	test_not_a_kernel();
	test_codecs_small();
	if (t_kernels_dir()) {
		char path[1024];
		const char *outs[NR_TOOLS] = { NULL };
		struct rr_kernel ref;
		struct rr_err e = { "" };
		uint8_t *orig;
		size_t olen;
		double t0 = now_s();
		FILE *job = NULL;

		/* The reference for the codec tests: the smallest payload. */
		pick_kernels();
		kpath(path, sizeof(path), kernels[1].use);
		orig = kernels[1].use[0] ? slurp(path, &olen) : NULL;
		bool have_ref = orig && rr_kernel_load(path, NULL, &ref, &e) == 0;
		T_OK(have_ref, "reference kernel %s loaded (%s)", path, have_ref ? "ok" : e.msg);
		/* Decode times are printed: measure them on a quiet machine,
		 * before the compressors start. */
		for (size_t i = 0; i < sizeof(kernels) / sizeof(kernels[0]); i++)
			test_shared_kernel(&kernels[i]);
		if (have_ref) {
			t0 = now_s();
			job = start_recompression(&ref, outs);
			test_codecs_and_refusals(&ref, orig, olen, job, outs, t0);
			rr_kernel_free(&ref);
		}
		for (unsigned i = 0; i < NR_TOOLS; i++)
			free((void *)outs[i]);
		free(orig);
	} else {
		printf("# RERAND_KERNELS is not set: shared-kernel checks skipped\n");
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", tmpdir);
	return t_done();
}
