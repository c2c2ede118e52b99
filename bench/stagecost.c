/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Stage cost on the host: the stage's select + decode + relocate (built with
 * the stage's flags, bench/stage_work.c) against the stock kexec-time path
 * (the kernel's own decompressor, parse_elf() and handle_relocations(),
 * bench/kstock.c), the codec library decoding the stock payload alone
 * (rr_decompress, the stricter baseline) and a plain memcpy of the segments.
 * Output: TSV lines "wall NAME NS" (interleaved reps) or, under callgrind
 * with --callgrind, one dump per NAME (CALLGRIND_DUMP_STATS_AT).
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <valgrind/callgrind.h>

#include <rerand/abi.h>
#include "image.h"
#include "kernel.h"
#include "stage_work.h"

/* "stage" decodes with the widest copies this CPU has, as the stage would;
 * the last two fix the width to show what each one buys. */
#define NVARIANT 5
static const char *const variant_name[NVARIANT] = {
	"stage", "stage-none", "stage-hc", "stage-sse2", "stage-8byte",
};

/* bench/kstock.c, built by bench/kstock.sh for this kernel's series and
 * codec and linked per kernel; weak so that one generic binary can still
 * --extract-payload. */
__attribute__((weak)) int kstock_run(unsigned char *in, long in_len, unsigned char *out, unsigned long out_len,
	       unsigned long virt, unsigned long span, void *heap, unsigned long heap_len);
#define KSTOCK_HEAP (64u << 20)

struct ctx {
	struct rr_kernel k;
	const uint8_t *payload;         /* the stock compressed payload */
	size_t payload_len;
	uint8_t *img[NVARIANT];
	size_t img_len[NVARIANT];
	struct bench_work w[NVARIANT];
	struct bench_result res;
	uint8_t *dest, *ref;
	struct rr_memmap mm;
	uint64_t seg_bytes;
	enum rr_simd best;              /* widest copies this CPU runs */
	uint8_t *kbuf, *kheap;          /* the stock path's output and heap */
	size_t kbuf_len;
	uint64_t kvirt;                 /* its virtual base (link base: no relocation) */
};

static void die(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "stagecost: ");
	fprintf(stderr, fmt, a, b);
	fputc('\n', stderr);
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void make_variant(struct ctx *c, int v, const uint8_t *stage, size_t stage_len,
			 const char *name)
{
	struct rr_image_opts o = {
		.codec = v == 1 ? RERAND_CODEC_NONE : RERAND_CODEC_LZ4,
		.lz4_level = v == 2 ? 9 : 0,        /* 3, 4: default lz4, fixed width */
	};
	struct rr_image im;
	struct rr_err e = { "" };
	struct bench_work *w = &c->w[v];

	if (rr_image_build(&c->k, stage, stage_len, &o, &c->img[v], &c->img_len[v], name, &e) < 0 ||
	    rr_image_parse(c->img[v], c->img_len[v], name, &im, &e) < 0)
		die("%s%s", e.msg, "");
	const uint8_t *pm = c->img[v] + im.pm_offset;
	const struct rerand_image_header *h = &im.hdr;
	memset(w, 0, sizeof(*w));
	w->codec = h->codec;
	w->simd = v == 3 ? RR_SIMD_SSE2 : v == 4 ? RR_SIMD_NONE : c->best;
	w->nr_seg = h->nr_segments;
	if (w->nr_seg > BENCH_MAX_SEG)
		die("%s: %s segments", name, "too many");
	for (unsigned i = 0; i < w->nr_seg; i++) {
		w->seg[i].data = pm + h->seg[i].data_offset;
		w->seg[i].data_size = h->seg[i].data_size;
		w->seg[i].mem_offset = h->seg[i].mem_offset;
		w->seg[i].file_size = h->seg[i].file_size;
	}
	w->mem_size = h->mem_size;
	const uint32_t *tab = (const uint32_t *)(pm + h->relocs_offset);
	w->relocs.reloc64 = tab;
	w->relocs.nr_reloc64 = h->nr_reloc64;
	w->relocs.inverse32 = tab + h->nr_reloc64;
	w->relocs.nr_inverse32 = h->nr_inverse32;
	w->relocs.reloc32 = tab + h->nr_reloc64 + h->nr_inverse32;
	w->relocs.nr_reloc32 = h->nr_reloc32;
	memset(w->seed, 0x5a, sizeof(w->seed));
	w->out = &c->res;
}

/* A machine like the QEMU guest (2 GiB, q35 e820) with the loaded image,
 * the initrd and boot_params to avoid. */
static void make_memmap(struct rr_memmap *m)
{
	rr_memmap_init(m);
	rr_memmap_add_ram(m, 0x1000, 0x9fc00);
	rr_memmap_add_ram(m, 0x100000, 0x7ffdf000);
	rr_memmap_add_avoid(m, 0x7a000000, 0x7c000000);   /* loaded image + scratch */
	rr_memmap_add_avoid(m, 0x60000000, 0x66000000);   /* initrd */
	rr_memmap_add_avoid(m, 0x7ffd0000, 0x7ffd2000);   /* boot_params, cmdline */
}

static void copy_segments(const struct ctx *c, uint8_t *dst)
{
	const struct rr_vmlinux *v = &c->k.elf;
	for (unsigned i = 0; i < v->nr_seg; i++)
		memcpy(dst + (v->seg[i].paddr - v->link_paddr), c->k.payload + v->seg[i].offset,
		       v->seg[i].filesz);
}

static int64_t run_stage(struct ctx *c, int v)
{
	return bench_stage_run(&c->w[v], c->dest, &c->mm);
}

static void run_stock(struct ctx *c)
{
	uint8_t *out = NULL;
	size_t len = 0;
	struct rr_err e = { "" };

	if (rr_decompress(c->k.codec, c->payload, c->payload_len, c->k.bz.uncompressed_size,
			  &out, &len, "payload", &e) < 0)
		die("%s%s", e.msg, "");
	free(out);
}

static void run_kstock(struct ctx *c)
{
	if (kstock_run((unsigned char *)c->payload, (long)c->payload_len, c->kbuf,
		       c->k.bz.uncompressed_size, c->kvirt, c->k.elf.mem_size, c->kheap,
		       KSTOCK_HEAP) < 0)
		die("%s%s", "the kernel's decompressor path failed (error() called)", "");
}

/* The stock path did the whole job: its segments, where parse_elf() put
 * them, equal the reference relocated for the same virtual base. */
static void check_kstock(struct ctx *c, const char *name)
{
	const struct rr_vmlinux *v = &c->k.elf;
	struct rr_reloc_lists l = {
		c->k.relocs.reloc64, c->k.relocs.nr_reloc64, c->k.relocs.inverse32,
		c->k.relocs.nr_inverse32, c->k.relocs.reloc32, c->k.relocs.nr_reloc32,
	};

	memset(c->kbuf, 0, c->kbuf_len);
	run_kstock(c);
	memset(c->ref, 0, v->mem_size);
	copy_segments(c, c->ref);
	if (rr_relocate(c->ref, v->mem_size, &l, v->link_paddr, c->kvirt) < 0)
		die("%s: %s", name, "reference relocation failed");
	for (unsigned i = 0; i < v->nr_seg; i++) {
		uint64_t o = v->seg[i].paddr - v->link_paddr;
		if (memcmp(c->kbuf + o, c->ref + o, v->seg[i].filesz))
			die("%s: %s", name, "the kernel's decompressor path differs from the reference");
	}
}

/* The stage's result must equal the segments relocated for the same offset. */
static void check_variant(struct ctx *c, int v, const char *name)
{
	uint64_t mem = c->k.elf.mem_size;
	int64_t n;

	memset(c->dest, 0, mem);
	n = run_stage(c, v);
	if (n < 0)
		die("%s: the stage work failed for %s", name, variant_name[v]);
	memset(c->ref, 0, mem);
	copy_segments(c, c->ref);
	struct rr_reloc_lists l = {
		c->k.relocs.reloc64, c->k.relocs.nr_reloc64, c->k.relocs.inverse32,
		c->k.relocs.nr_inverse32, c->k.relocs.reloc32, c->k.relocs.nr_reloc32,
	};
	if (rr_relocate(c->ref, mem, &l, c->k.elf.link_paddr, c->res.virt) != n ||
	    memcmp(c->ref, c->dest, mem))
		die("%s: %s output differs from the relocated segments", name, variant_name[v]);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "reps", required_argument, NULL, 'r' },
		{ "stage-bin", required_argument, NULL, 's' },
		{ "callgrind", no_argument, NULL, 'c' },
		{ "extract-payload", required_argument, NULL, 'x' },
		{ NULL, 0, NULL, 0 },
	};
	const char *stage_path = "build/stage.bin";
	const char *extract = NULL;
	int reps = 7, callgrind = 0, o;
	static struct ctx c;
	struct rr_err e = { "" };
	uint8_t *file, *stage;
	size_t file_len, stage_len;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'r': reps = atoi(optarg); break;
		case 's': stage_path = optarg; break;
		case 'c': callgrind = 1; break;
		case 'x': extract = optarg; break;
		default: return 2;
		}
	}
	if (optind + 1 != argc || reps < 1) {
		fprintf(stderr, "usage: stagecost [--reps N] [--stage-bin F] [--callgrind] KERNEL\n");
		return 2;
	}
	const char *kpath = argv[optind];
	/* Keep large buffers in the heap and never give them back, so every
	 * rep after the first writes to memory that is already faulted in, for
	 * the library decoders (which malloc their output) as for the rest. */
	mallopt(M_MMAP_MAX, 0);
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	mallopt(M_TOP_PAD, 64 << 20);

	if (rr_read_file(kpath, 256u << 20, &file, &file_len, &e) < 0 ||
	    rr_read_file(stage_path, 1u << 20, &stage, &stage_len, &e) < 0 ||
	    rr_kernel_load(kpath, NULL, &c.k, &e) < 0)
		die("%s%s", e.msg, "");
	if (!c.k.is_bzimage)
		die("%s: %s", kpath, "not a bzImage (the stock payload is needed)");
	c.payload = file + c.k.bz.payload_offset;
	c.payload_len = c.k.bz.payload_length;
	if (extract) {
		/* The kernel's build appends the decoded size (4 bytes) to the
		 * codec's stream; the codec's own CLI wants the stream alone. */
		if (c.payload_len < 4 ||
		    rr_write_file_atomic(extract, c.payload, c.payload_len - 4, &e) < 0)
			die("%s%s", e.msg[0] ? e.msg : "payload too short", "");
		return 0;
	}
	__builtin_cpu_init();
	c.best = __builtin_cpu_supports("avx2") ? RR_SIMD_AVX2 :
		 __builtin_cpu_supports("sse2") ? RR_SIMD_SSE2 : RR_SIMD_NONE;
	for (int v = 0; v < NVARIANT; v++)
		make_variant(&c, v, stage, stage_len, kpath);
	c.dest = calloc(1, c.k.elf.mem_size);
	c.ref = calloc(1, c.k.elf.mem_size);
	if (!c.dest || !c.ref)
		die("%s: %s", kpath, "out of memory");
	make_memmap(&c.mm);
	for (unsigned i = 0; i < c.k.elf.nr_seg; i++)
		c.seg_bytes += c.k.elf.seg[i].filesz;

	for (int v = 0; v < NVARIANT; v++)
		check_variant(&c, v, kpath);
	if (!kstock_run)
		die("%s: %s", kpath, "this stagecost was linked without the kernel's decompressor (bench/kstock.sh)");
	/* Room as the decompressor has it: the decoded payload, and the image
	 * parse_elf() lays out in the same buffer. */
	c.kbuf_len = c.k.bz.uncompressed_size > c.k.elf.mem_size ? c.k.bz.uncompressed_size
								   : c.k.elf.mem_size;
	c.kbuf = calloc(1, c.kbuf_len + 4096);
	c.kheap = calloc(1, KSTOCK_HEAP);
	if (!c.kbuf || !c.kheap)
		die("%s: %s", kpath, "out of memory");
	/* The table layout the 6.1/6.12 handle_relocations() reads has three
	 * lists; 6.15+ kernels have two, which it cannot walk: there the stock
	 * side decodes and moves but does not relocate (less stock work). */
	c.kvirt = c.k.relocs.layout == 3 ? c.res.virt : c.k.elf.link_paddr;
	check_kstock(&c, kpath);
	printf("info\tcodec\t%s\n", rr_kcodec_name(c.k.codec));
	printf("info\tpayload_bytes\t%zu\n", c.payload_len);
	printf("info\tuncompressed_bytes\t%u\n", c.k.bz.uncompressed_size);
	printf("info\tmem_size\t%llu\n", (unsigned long long)c.k.elf.mem_size);
	printf("info\tsegment_bytes\t%llu\n", (unsigned long long)c.seg_bytes);
	printf("info\trelocs\t%zu\n",
	       c.k.relocs.nr_reloc64 + c.k.relocs.nr_inverse32 + c.k.relocs.nr_reloc32);
	printf("info\tphys_slots\t%llu\n", (unsigned long long)c.res.phys_slots);
	printf("info\tstage_simd\t%s\n", c.best == RR_SIMD_AVX2 ? "avx2" : c.best == RR_SIMD_SSE2 ? "sse2" : "8-byte");
	printf("info\tkstock_relocates\t%d\n", c.kvirt != c.k.elf.link_paddr);
	for (int v = 0; v < NVARIANT; v++)
		printf("info\timage_bytes_%s\t%zu\n", variant_name[v], c.img_len[v]);
	fflush(stdout);

	if (callgrind) {
		/* Run under valgrind --tool=callgrind --instr-atstart=no: each
		 * measured call alone is instrumented and dumped under its name. */
		for (int v = 0; v < NVARIANT; v++) {
			CALLGRIND_START_INSTRUMENTATION;
			CALLGRIND_ZERO_STATS;
			run_stage(&c, v);
			CALLGRIND_DUMP_STATS_AT(variant_name[v]);
			CALLGRIND_STOP_INSTRUMENTATION;
		}
		CALLGRIND_START_INSTRUMENTATION;
		CALLGRIND_ZERO_STATS;
		run_stock(&c);
		CALLGRIND_DUMP_STATS_AT("stock");
		CALLGRIND_ZERO_STATS;
		run_kstock(&c);
		CALLGRIND_DUMP_STATS_AT("kstock");
		CALLGRIND_ZERO_STATS;
		copy_segments(&c, c.dest);
		CALLGRIND_DUMP_STATS_AT("memcpy");
		CALLGRIND_STOP_INSTRUMENTATION;
		return 0;
	}

	/* Warm-up (faults every buffer in), then interleaved timed reps. */
	run_stock(&c);
	run_kstock(&c);
	copy_segments(&c, c.dest);
	for (int r = 0; r < reps; r++) {
		uint64_t t0, t1;
		for (int v = 0; v < NVARIANT; v++) {
			t0 = now_ns();
			run_stage(&c, v);
			t1 = now_ns();
			printf("wall\t%s\t%llu\n", variant_name[v], (unsigned long long)(t1 - t0));
		}
		t0 = now_ns();
		run_stock(&c);
		t1 = now_ns();
		printf("wall\tstock\t%llu\n", (unsigned long long)(t1 - t0));
		t0 = now_ns();
		run_kstock(&c);
		t1 = now_ns();
		printf("wall\tkstock\t%llu\n", (unsigned long long)(t1 - t0));
		t0 = now_ns();
		copy_segments(&c, c.dest);
		t1 = now_ns();
		printf("wall\tmemcpy\t%llu\n", (unsigned long long)(t1 - t0));
		fflush(stdout);
	}
	return 0;
}
