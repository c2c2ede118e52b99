/* SPDX-License-Identifier: GPL-2.0-only */
/* Statistical tests of the stage's base selection on hand-built machines
 * (boot_params blobs through rr_bootparams_parse) and captured QEMU maps:
 * exact slot sets against a naive scan, chi-square uniformity, invariants. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootparams.h"
#include "memmap_src.h"
#include "rerand/abi.h"
#include "rng.h"
#include "select.h"
#include "test.h"

#define KIB (1ULL << 10)
#define MIB (1ULL << 20)
#define GIB (1ULL << 30)

/* In-memory size of vmlinuz-6.1.0-57-cloud-amd64 (`rerand inspect`). */
#define KSIZE       48234496ULL
#define SLOT_SIZE   UP(KSIZE, RERAND_SLOT_ALIGN)
#define STAGE_SIZE  (24 * MIB)     /* the image kexec-tools loaded, plus scratch */
#define SMALL_INITRD (8 * MIB)
#define BP_PHYS     0x7000ULL
#define CMDLINE_PHYS 0x20000ULL
#define EFI_MAP_PHYS 0x30000ULL
#define EFI_DESC    48
#define NR_NODES    60             /* "many setup_data nodes": below RR_MAX_SETUP_NODES */
#define P_MIN       0.001
#define UP(x, a)    (((x) + (a) - 1) / (a) * (a))

/* ---- a fake machine ----------------------------------------------------- */

struct region { uint64_t phys, len; uint8_t *buf; };

struct machine {
	struct region r[NR_NODES + 8];
	int n;
	uint8_t *bp;
	struct rr_range ram[256];        /* what the test put in as usable */
	unsigned nr_ram;
	struct rr_range avoid[256];      /* what the test knows must stay clear */
	unsigned nr_avoid;
	uint64_t mem_limit;
	unsigned huge;
	char cmdline[512];
};

static uint8_t *backed(struct machine *mc, uint64_t phys, uint64_t len)
{
	struct region *r = &mc->r[mc->n++];

	r->phys = phys;
	r->len = len;
	r->buf = calloc(1, len);
	if (!r->buf)
		abort();
	return r->buf;
}

static void *fake_map(void *ctx, uint64_t phys, uint64_t len)
{
	struct machine *mc = ctx;

	for (int i = 0; i < mc->n; i++) {
		struct region *r = &mc->r[i];
		if (phys >= r->phys && phys - r->phys <= r->len && len <= r->len - (phys - r->phys))
			return r->buf + (phys - r->phys);
	}
	return NULL;
}

static void machine_free(struct machine *mc)
{
	for (int i = 0; i < mc->n; i++)
		free(mc->r[i].buf);
	memset(mc, 0, sizeof(*mc));
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static void want_avoid(struct machine *mc, uint64_t s, uint64_t len)
{
	mc->avoid[mc->nr_avoid].start = s;
	mc->avoid[mc->nr_avoid].end = s + len;
	mc->nr_avoid++;
}

static void e820(struct machine *mc, uint64_t addr, uint64_t size, uint32_t type)
{
	uint8_t n = mc->bp[RR_BP_E820_ENTRIES];
	uint8_t *e = mc->bp + RR_BP_E820_TABLE + 20 * n;

	put64(e, addr);
	put64(e + 8, size);
	put32(e + 16, type);
	mc->bp[RR_BP_E820_ENTRIES] = (uint8_t)(n + 1);
	if (type == RR_E820_RAM) {
		mc->ram[mc->nr_ram].start = addr;
		mc->ram[mc->nr_ram].end = addr + size;
		mc->nr_ram++;
	}
}

/* ---- the base machines ---------------------------------------------------- */

static void fill_1g(struct machine *mc)      /* SeaBIOS, q35, -m 1G */
{
	e820(mc, 0, 0x9fc00, 1);
	e820(mc, 0x9fc00, 0x400, 2);
	e820(mc, 0xf0000, 0x10000, 2);
	e820(mc, 0x100000, 0x3fedf000, 1);
	e820(mc, 0x3ffdf000, 0x21000, 2);
	e820(mc, 0xb0000000, 0x10000000, 2);
	e820(mc, 0xfffc0000, 0x40000, 2);
}

static void fill_3g(struct machine *mc)      /* 2 GiB below the PCI hole, 1 GiB above 4 GiB */
{
	e820(mc, 0, 0x9fc00, 1);
	e820(mc, 0x9fc00, 0x400, 2);
	e820(mc, 0xf0000, 0x10000, 2);
	e820(mc, 0x100000, 0x7fedf000, 1);
	e820(mc, 0x7ffdf000, 0x21000, 2);
	e820(mc, 0xb0000000, 0x10000000, 2);
	e820(mc, 0xfed1c000, 0x4000, 2);
	e820(mc, 0xfffc0000, 0x40000, 2);
	e820(mc, 0x100000000, GIB, 1);
}

/* A 64 GiB server: ACPI and firmware islands below 2 GiB, then above 4 GiB
 * RAM broken every 1.5 GiB by small reserved holes at odd offsets. */
static void fill_64g(struct machine *mc)
{
	uint64_t a = 0x100000000ULL, top = a + 62 * GIB;
	unsigned i = 0;

	e820(mc, 0, 0x9d000, 1);
	e820(mc, 0x9d000, 0x63000, 2);
	e820(mc, 0x100000, 0x5ef00000, 1);
	e820(mc, 0x5f000000, 0x200000, 4);
	e820(mc, 0x5f200000, 0xee00000, 1);
	e820(mc, 0x6e000000, 0x800000, 2);
	e820(mc, 0x6e800000, 0xb800000, 1);
	e820(mc, 0x7a000000, 0x6000000, 2);
	e820(mc, 0x80000000, 0x10000000, 1);
	e820(mc, 0xe0000000, 0x20000000, 2);
	while (a < top) {
		uint64_t len = 3 * GIB / 2 + (uint64_t)(i % 7) * 0x1234000;
		uint64_t hole = (uint64_t)(i % 5 + 1) * 3 * MIB + 0x5000;

		if (a + len > top)
			len = top - a;
		e820(mc, a, len, 1);
		if (a + len < top)
			e820(mc, a + len, hole, 2);
		a += len + hole;
		i++;
	}
}

/* What kexec-tools passes a crash kernel: the first 640 KiB and the
 * crashkernel= region as RAM, everything else reserved. */
static void fill_crash(struct machine *mc)
{
	e820(mc, 0, 0xa0000, 1);
	e820(mc, 0x100000, 0x24f00000, 2);
	e820(mc, 0x25000000, 0x10000000, 1);
	e820(mc, 0x35000000, 0x4afe0000, 2);
	e820(mc, 0x100000000, 3 * GIB, 2);
}

static void efi_desc(uint8_t *d, uint32_t type, uint64_t phys, uint64_t len, uint64_t attr)
{
	put32(d, type);
	put64(d + 8, phys);
	put64(d + 24, len >> 12);
	put64(d + 32, attr);
}

/* UEFI with address-range mirroring: only the mirrored conventional memory
 * may hold the kernel.  The e820 table (all RAM) must be ignored. */
static void fill_efi_mirror(struct machine *mc)
{
	static const struct { uint32_t type; uint64_t s, len, attr; } d[] = {
		{ RR_EFI_CONVENTIONAL, 0x100000, GIB - 0x100000, 0 },
		{ RR_EFI_CONVENTIONAL, GIB, GIB, RR_EFI_MORE_RELIABLE },
		{ 4 /* boot services data */, 2 * GIB, 4 * MIB, RR_EFI_MORE_RELIABLE },
		{ 5 /* runtime code */, 2 * GIB + 4 * MIB, 2 * MIB, RR_EFI_MORE_RELIABLE },
		{ RR_EFI_CONVENTIONAL, 4 * GIB, GIB, RR_EFI_MORE_RELIABLE },
		{ RR_EFI_CONVENTIONAL, 5 * GIB, 4 * GIB, 0 },
		{ RR_EFI_CONVENTIONAL, 9 * GIB, GIB, RR_EFI_MORE_RELIABLE | RR_EFI_SPECIFIC_PURPOSE },
	};
	unsigned n = sizeof(d) / sizeof(d[0]);
	uint8_t *map = backed(mc, EFI_MAP_PHYS, n * EFI_DESC);

	for (unsigned i = 0; i < n; i++) {
		efi_desc(map + i * EFI_DESC, d[i].type, d[i].s, d[i].len, d[i].attr);
		if (d[i].type == RR_EFI_CONVENTIONAL && (d[i].attr & RR_EFI_MORE_RELIABLE) &&
		    !(d[i].attr & RR_EFI_SPECIFIC_PURPOSE)) {
			mc->ram[mc->nr_ram].start = d[i].s;
			mc->ram[mc->nr_ram].end = d[i].s + d[i].len;
			mc->nr_ram++;
		}
	}
	memcpy(mc->bp + RR_BP_EFI_INFO, "EL64", 4);
	put32(mc->bp + RR_BP_EFI_INFO + 0x08, EFI_DESC);
	put32(mc->bp + RR_BP_EFI_INFO + 0x10, (uint32_t)EFI_MAP_PHYS);
	put32(mc->bp + RR_BP_EFI_INFO + 0x14, n * EFI_DESC);
	want_avoid(mc, EFI_MAP_PHYS, n * EFI_DESC);
	/* e820 says everything is RAM: a parser reading it would be wrong. */
	unsigned keep = mc->nr_ram;
	e820(mc, 0x100000, 10 * GIB, 1);
	mc->nr_ram = keep;
}

struct base {
	const char *name;
	void (*fill)(struct machine *);
	uint64_t stage, initrd;           /* where kexec-tools put the image and initrd */
	const char *extra;                /* always on the command line */
	struct rr_range extra_avoid;      /* what `extra` reserves */
	uint64_t mem_limit;               /* the mem= variant */
	char kind[2];                     /* the memmap= variant: '$', '!' or '#' */
	struct rr_range mm[2];
	unsigned huge;                    /* the hugepages variant */
	uint64_t big_initrd, big_initrd_size;
	uint64_t nodes_lo, nodes_hi;      /* the setup_data variant spreads nodes here */
};

static const struct base bases[] = {
	{ "1g", fill_1g, 0x3a000000, 0x3d000000, "", { 0, 0 }, 768 * MIB,
	  { '$', '!' }, { { 256 * MIB, 320 * MIB }, { 768 * MIB, 800 * MIB } },
	  2, 0x2c000000, 256 * MIB, 16 * MIB, 512 * MIB },
	{ "3g-pci-hole", fill_3g, 0x7a000000, 0x7c000000, "", { 0, 0 }, 4608 * MIB,
	  { '$', '!' }, { { GIB, GIB + 100 * MIB }, { 0x110000000, 0x120000000 } },
	  1, 0x60000000, 512 * MIB, 16 * MIB, 5 * GIB },
	{ "64g-holes", fill_64g, 0x78000000, 0x70000000, "", { 0, 0 }, 32 * GIB,
	  { '$', '$' }, { { 8 * GIB, 10 * GIB }, { 32 * GIB, 32 * GIB + 512 * MIB } },
	  8, 0x30000000, 752 * MIB, 16 * MIB, 66 * GIB },
	{ "crash", fill_crash, 0x33000000, 0x32000000, "elfcorehdr=0x34f00000 reset_devices",
	  { 0x34f00000, 0x35000000 }, 0x30000000,
	  { '$', '#' }, { { 0x28000000, 0x29000000 }, { 0x2e000000, 0x2e400000 } },
	  1, 0x2b000000, 96 * MIB, MIB, 4 * GIB },
	{ "efi-mirror", fill_efi_mirror, 0x78000000, 0x7c000000, "", { 0, 0 }, 4608 * MIB,
	  { '$', '#' }, { { 0x48000000, 0x58000000 }, { 0x110000000, 0x118000000 } },
	  1, 0x50000000, 512 * MIB, 16 * MIB, 10 * GIB },
};

enum variant { V_BASE, V_MEM, V_MEMMAP, V_HUGE, V_INITRD, V_SETUP, V_COUNT };
static const char *const variant_names[] = { "", "+mem=", "+memmap=", "+hugepages",
					     "+large-initrd", "+setup_data" };

/* Build the machine for (base, variant) and its expected RAM and avoid lists. */
static void build(struct machine *mc, const struct base *b, enum variant v)
{
	uint64_t initrd = b->initrd, initrd_size = SMALL_INITRD;
	size_t len;

	memset(mc, 0, sizeof(*mc));
	mc->bp = backed(mc, BP_PHYS, RR_BOOT_PARAMS_SIZE);
	want_avoid(mc, BP_PHYS, RR_BOOT_PARAMS_SIZE);
	b->fill(mc);
	want_avoid(mc, b->stage, STAGE_SIZE);

	snprintf(mc->cmdline, sizeof(mc->cmdline), "console=ttyS0 %s", b->extra);
	if (b->extra_avoid.end)
		want_avoid(mc, b->extra_avoid.start, b->extra_avoid.end - b->extra_avoid.start);
	len = strlen(mc->cmdline);
	switch (v) {
	case V_MEM:
		snprintf(mc->cmdline + len, sizeof(mc->cmdline) - len, " mem=%lluM",
			 (unsigned long long)(b->mem_limit / MIB));
		mc->mem_limit = b->mem_limit;
		break;
	case V_MEMMAP:
		for (int i = 0; i < 2; i++) {
			len = strlen(mc->cmdline);
			snprintf(mc->cmdline + len, sizeof(mc->cmdline) - len, " memmap=%lluK%c0x%llx",
				 (unsigned long long)((b->mm[i].end - b->mm[i].start) / KIB), b->kind[i],
				 (unsigned long long)b->mm[i].start);
			want_avoid(mc, b->mm[i].start, b->mm[i].end - b->mm[i].start);
		}
		break;
	case V_HUGE:
		snprintf(mc->cmdline + len, sizeof(mc->cmdline) - len,
			 " hugepagesz=1G hugepages=%u", b->huge);
		mc->huge = b->huge;
		break;
	case V_INITRD:
		initrd = b->big_initrd;
		initrd_size = b->big_initrd_size;
		break;
	case V_SETUP: {
		uint64_t step = (b->nodes_hi - b->nodes_lo) / NR_NODES, prev = 0;

		for (unsigned i = 0; i < NR_NODES; i++) {
			uint64_t at = b->nodes_lo + i * step + (i * 0x3000 % step);
			uint8_t *node = backed(mc, at, 4096);

			put32(node + 8, 0x7000 + i);
			put32(node + 12, 40 + i);
			want_avoid(mc, at, 16 + 40 + i);
			if (prev)
				put64(fake_map(mc, prev, 16), at);
			else
				put64(mc->bp + RR_BP_SETUP_DATA, at);
			prev = at;
		}
		break;
	}
	default:
		break;
	}
	put32(mc->bp + RR_BP_RAMDISK_IMAGE, (uint32_t)initrd);
	put32(mc->bp + RR_BP_RAMDISK_SIZE, (uint32_t)initrd_size);
	want_avoid(mc, initrd, initrd_size);
	memcpy(backed(mc, CMDLINE_PHYS, 4096), mc->cmdline, strlen(mc->cmdline) + 1);
	put32(mc->bp + RR_BP_CMD_LINE_PTR, (uint32_t)CMDLINE_PHYS);
	want_avoid(mc, CMDLINE_PHYS, strlen(mc->cmdline) + 1);
}

/* ---- the test's own view: expected RAM, independent of select.c --------- */

static int cmp_range(const void *a, const void *b)
{
	const struct rr_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* qsort + merge of touching ranges, clipped at limit (0: none). */
static unsigned merged_ram(const struct rr_range *in, unsigned n, uint64_t limit,
			   struct rr_range *out)
{
	unsigned k = 0;

	memcpy(out, in, n * sizeof(*in));
	qsort(out, n, sizeof(*out), cmp_range);
	for (unsigned i = 0; i < n; i++) {
		struct rr_range r = out[i];

		if (limit && r.end > limit)
			r.end = limit;
		if (r.start >= r.end)
			continue;
		if (k && r.start <= out[k - 1].end) {
			if (r.end > out[k - 1].end)
				out[k - 1].end = r.end;
		} else {
			out[k++] = r;
		}
	}
	return k;
}

struct expect {
	struct rr_range ram[256];
	unsigned nr_ram;
	struct rr_range avoid[300];
	unsigned nr_avoid;
};

static void expectations(const struct rr_range *ram, unsigned nr_ram, const struct rr_range *avoid,
			 unsigned nr_avoid, uint64_t mem_limit, unsigned huge, struct expect *x)
{
	x->nr_ram = merged_ram(ram, nr_ram, mem_limit, x->ram);
	memcpy(x->avoid, avoid, nr_avoid * sizeof(*avoid));
	x->nr_avoid = nr_avoid;
	/* hugepages: the lowest 1 GiB-aligned gigabytes wholly in RAM. */
	for (unsigned i = 0; i < x->nr_ram && huge; i++)
		for (uint64_t g = UP(x->ram[i].start, GIB);
		     huge && g + GIB <= x->ram[i].end; g += GIB, huge--) {
			x->avoid[x->nr_avoid].start = g;
			x->avoid[x->nr_avoid].end = g + GIB;
			x->nr_avoid++;
		}
}

static bool placement_ok(const struct expect *x, uint64_t a, uint64_t size)
{
	bool in_ram = false;

	if (a % RERAND_SLOT_ALIGN || a < RERAND_MIN_PHYS || a + size > RERAND_MAX_PHYS_4LEVEL)
		return false;
	for (unsigned i = 0; i < x->nr_ram; i++)
		in_ram |= x->ram[i].start <= a && a + size <= x->ram[i].end;
	if (!in_ram)
		return false;
	for (unsigned i = 0; i < x->nr_avoid; i++)
		if (x->avoid[i].start < a + size && a < x->avoid[i].end)
			return false;
	return true;
}

/* Every aligned address from 16 MiB to the end of RAM, tried one by one. */
static uint64_t naive_slots(const struct expect *x, uint64_t size, uint64_t **ret)
{
	uint64_t top = 0, n = 0, cap = 1024;
	uint64_t *v = malloc(cap * sizeof(*v));

	for (unsigned i = 0; i < x->nr_ram; i++)
		if (x->ram[i].end > top)
			top = x->ram[i].end;
	for (uint64_t a = RERAND_MIN_PHYS; a + size <= top; a += RERAND_SLOT_ALIGN) {
		if (!placement_ok(x, a, size))
			continue;
		if (n == cap)
			v = realloc(v, (cap *= 2) * sizeof(*v));
		v[n++] = a;
	}
	*ret = v;
	return n;
}

/* ---- chi-square ------------------------------------------------------------ */

/*
 * Survival function of the chi-square distribution, Q(df/2, x/2): the
 * regularized upper incomplete gamma function, by its power series when
 * x < a + 1 and by its continued fraction (modified Lentz) otherwise.  Both
 * converge in O(sqrt(a)) terms; lgamma keeps the prefactor finite for the
 * tens of thousands of degrees of freedom of a big machine.
 */
static double gamma_q(double a, double x)
{
	double lpre = -x + a * log(x) - lgamma(a);

	if (x <= 0)
		return 1.0;
	if (x < a + 1) {
		double term = 1.0 / a, sum = term;

		for (int n = 1; n < 100000; n++) {
			term *= x / (a + n);
			sum += term;
			if (term < sum * 1e-15)
				break;
		}
		return 1.0 - sum * exp(lpre);
	}
	double b = x + 1 - a, c = 1e300, d = 1 / b, h = d;

	for (int i = 1; i < 100000; i++) {
		double an = -i * (i - a), del;

		b += 2;
		d = an * d + b;
		if (fabs(d) < 1e-300)
			d = 1e-300;
		c = b + an / c;
		if (fabs(c) < 1e-300)
			c = 1e-300;
		d = 1 / d;
		del = d * c;
		h *= del;
		if (fabs(del - 1) < 1e-15)
			break;
	}
	return exp(lpre) * h;
}

static double chisq_p(double stat, double df)
{
	return gamma_q(df / 2, stat / 2);
}

/* Wilson-Hilferty: (X/df)^(1/3) is nearly normal; a cross-check only. */
static double chisq_p_wh(double stat, double df)
{
	double z = (cbrt(stat / df) - (1 - 2 / (9 * df))) / sqrt(2 / (9 * df));

	return 0.5 * erfc(z / sqrt(2));
}

static double chisq_stat(const uint64_t *counts, uint64_t k, uint64_t n)
{
	double e = (double)n / (double)k, s = 0;

	for (uint64_t i = 0; i < k; i++)
		s += ((double)counts[i] - e) * ((double)counts[i] - e) / e;
	return s;
}

/* ---- the seeded generator --------------------------------------------------- */

static uint64_t stub_x;

static uint64_t splitmix(void)
{
	uint64_t z = (stub_x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static bool stub_rd(uint64_t *v) { *v = splitmix(); return true; }
static uint64_t stub_tsc(void) { static uint64_t t; return t += 977; }

static void seeded(struct rr_rng *rng, unsigned id)
{
	uint8_t seed[RERAND_SEED_SIZE];
	struct rr_entropy_ops ops = { .rdseed = stub_rd, .rdrand = stub_rd, .rdtsc = stub_tsc };

	for (unsigned i = 0; i < sizeof(seed); i++)
		seed[i] = (uint8_t)(0xa5 ^ (i * 37) ^ id);
	stub_x = 0x5eed0000ULL + id;
	rr_rng_init(rng, seed, &ops);
}

/* ---- one map ---------------------------------------------------------------- */

static uint64_t draws;
static bool long_mode;

/* Draw like the stage, check every placement, test uniformity. */
static void run_map(const char *name, unsigned id, const struct rr_memmap *m, const struct expect *x)
{
	struct rr_select_params sp = {
		.size = SLOT_SIZE, .min_addr = RERAND_MIN_PHYS,
		.max_addr = RERAND_MAX_PHYS_4LEVEL, .align = RERAND_SLOT_ALIGN,
	};
	uint64_t k = rr_phys_slot_count(m, &sp), kv = rr_virt_slot_count(KSIZE);
	uint64_t *naive, nn = naive_slots(x, SLOT_SIZE, &naive);
	uint64_t *table, *pc, *vc, bad = 0, mismatch = 0, direct_bad = 0;
	struct rr_rng rng;

	T_EQ_U64(k, nn, "%s: rr_phys_slot_count = %llu, naive scan agrees", name,
		 (unsigned long long)k);
	{
		/* For the bits table in docs/entropy.md: the stock BIOS rule
		 * after a kexec counts the same way from 512 MiB up. */
		struct rr_select_params st = sp;
		uint64_t ks;

		st.min_addr = 512 * MIB;
		ks = rr_phys_slot_count(m, &st);
		printf("# bits %s: rerand phys %llu (%.1f) virt %llu (%.1f) total %.1f; "
		       "stock-bios phys %llu (%.1f) total %.1f\n", name, (unsigned long long)k,
		       k > 1 ? log2((double)k) : 0.0, (unsigned long long)kv, log2((double)kv),
		       (k > 1 ? log2((double)k) : 0.0) + log2((double)kv), (unsigned long long)ks,
		       ks > 1 ? log2((double)ks) : 0.0, (ks > 1 ? log2((double)ks) : 0.0) + log2((double)kv));
	}
	if (k != nn || k < 2) {
		T_OK(k >= 2, "%s: at least 2 physical slots to test", name);
		free(naive);
		return;
	}
	table = malloc(k * sizeof(*table));
	pc = calloc(k, sizeof(*pc));
	vc = calloc(kv, sizeof(*vc));
	for (uint64_t i = 0; i < k; i++)
		if (rr_phys_slot_at(m, &sp, i, &table[i]) < 0 || table[i] != naive[i])
			mismatch++;
	T_EQ_U64(mismatch, 0, "%s: rr_phys_slot_at(i) is the i-th naive slot for all %llu", name,
		 (unsigned long long)k);

	seeded(&rng, id);
	for (uint64_t d = 0; d < draws; d++) {
		uint64_t ip = rr_rng_uniform(&rng, k), iv = rr_rng_uniform(&rng, kv);
		uint64_t phys = table[ip], virt = rr_virt_slot_at(iv);

		/* The first draws also go through rr_phys_slot_at itself, as the
		 * stage calls it; the table only saves the quadratic walk. */
		if (d < 2000) {
			uint64_t a = 0;
			if (rr_phys_slot_at(m, &sp, ip, &a) < 0 || a != phys)
				direct_bad++;
		}
		pc[ip]++;
		vc[iv]++;
		if (!placement_ok(x, phys, SLOT_SIZE) || (phys - virt) % RERAND_SLOT_ALIGN ||
		    virt < RERAND_LOAD_PHYSICAL_ADDR || virt + SLOT_SIZE > RERAND_KERNEL_IMAGE_SIZE)
			bad++;
	}
	rr_rng_wipe(&rng);
	T_EQ_U64(bad + direct_bad, 0, "%s: %llu draws: no placement outside RAM, over an avoided "
		 "range, misaligned or with phys - virt not 2 MiB aligned", name,
		 (unsigned long long)draws);

	double sp_ = chisq_stat(pc, k, draws), pp = chisq_p(sp_, (double)(k - 1));
	double sv = chisq_stat(vc, kv, draws), pv = chisq_p(sv, (double)(kv - 1));
	T_OK(pp > P_MIN, "%s: physical chi2 = %.1f, df = %llu, p = %.4f (Wilson-Hilferty %.4f)",
	     name, sp_, (unsigned long long)(k - 1), pp, chisq_p_wh(sp_, (double)(k - 1)));
	T_OK(pv > P_MIN, "%s: virtual chi2 = %.1f, df = %llu, p = %.4f (Wilson-Hilferty %.4f)",
	     name, sv, (unsigned long long)(kv - 1), pv, chisq_p_wh(sv, (double)(kv - 1)));
	free(naive);
	free(table);
	free(pc);
	free(vc);
}

static void test_machine(const struct base *b, enum variant v, unsigned id)
{
	static struct machine mc;
	static struct rr_memmap m;
	static struct expect x;
	struct rr_bootinfo bi;
	struct rr_cmdline cl;
	char name[96];

	build(&mc, b, v);
	snprintf(name, sizeof(name), "%s%s", b->name, variant_names[v]);
	/* The stage's own sequence, step for step. */
	rr_memmap_init(&m);
	if (rr_bootparams_parse(BP_PHYS, fake_map, &mc, &m, &bi) < 0) {
		T_OK(0, "%s: boot_params parse", name);
		machine_free(&mc);
		return;
	}
	rr_cmdline_parse(bi.cmdline ? bi.cmdline : "", bi.cmdline ? bi.cmdline_len : 0, &cl);
	rr_memmap_add_avoid(&m, b->stage, b->stage + STAGE_SIZE);
	rr_memmap_apply_cmdline(&m, &cl);
	expectations(mc.ram, mc.nr_ram, mc.avoid, mc.nr_avoid, mc.mem_limit, mc.huge, &x);
	run_map(name, id, &m, &x);
	machine_free(&mc);
}

/* A captured QEMU map with a stage image and an initrd where kexec-tools
 * would put them (high, below 1 GiB so every capture has them in RAM). */
static void test_captured(const char *file, unsigned id)
{
	static struct rr_memmap m;
	static struct expect x;
	struct rr_range avoid[2] = { { 0x30000000, 0x30000000 + STAGE_SIZE },
				     { 0x38000000, 0x38000000 + SMALL_INITRD } };
	struct rr_msrc_info info;
	struct rr_cmdline cl;
	struct rr_err e;
	char path[256];

	snprintf(path, sizeof(path), "tests/data/maps/%s", file);
	rr_memmap_init(&m);
	if (rr_msrc_read(path, &m, &info, &e) < 0) {
		T_OK(0, "%s: read (%s)", file, e.msg);
		return;
	}
	/* The expected RAM is the fixture's as read; the selection is what
	 * is under test here (test_entropy checks the readers). */
	struct rr_range ram[256];
	unsigned nr = m.nr_ram;
	memcpy(ram, m.ram, nr * sizeof(ram[0]));
	rr_cmdline_parse("console=ttyS0", 13, &cl);
	for (int i = 0; i < 2; i++)
		rr_memmap_add_avoid(&m, avoid[i].start, avoid[i].end);
	rr_memmap_apply_cmdline(&m, &cl);
	expectations(ram, nr, avoid, 2, 0, 0, &x);
	run_map(file, id, &m, &x);
}

/* The detector itself: a modulo-biased draw must fail the same test. */
static void test_detector(void)
{
	uint64_t k = 200, counts[200] = { 0 };
	struct rr_rng rng;

	seeded(&rng, 999);
	for (uint64_t d = 0; d < 200000; d++)
		counts[(rr_rng_u64(&rng) & 0xff) % k]++;
	double s = chisq_stat(counts, k, 200000), p = chisq_p(s, (double)(k - 1));
	T_OK(p < 1e-6, "detector: (byte %% 200) bias gives chi2 = %.0f, p = %.2g", s, p);
	/* Known values: Q(df/2, x/2) for df = 10, x = 18.307 is 0.05; df = 1000,
	 * x = 1106.97 is 0.01 (standard tables). */
	T_OK(fabs(chisq_p(18.307, 10) - 0.05) < 1e-4 && fabs(chisq_p(1106.97, 1000) - 0.01) < 2e-4,
	     "chi-square survival function matches tables (%.5f, %.5f)", chisq_p(18.307, 10),
	     chisq_p(1106.97, 1000));
}

int main(void)
{
	static const char *const captured[] = {
		"qemu-seabios-1g.memmap", "qemu-seabios-3g.memmap", "qemu-seabios-6g.memmap",
		"qemu-ovmf-1g.memmap", "qemu-ovmf-3g.memmap", "qemu-ovmf-6g.memmap",
	};
	const char *mode = getenv("RERAND_MODE");
	unsigned id = 0;

	long_mode = mode && !strcmp(mode, "long");
	/* Every map in both modes: 10^6 draws take about half a second a
	 * map, so check-long buys power (10^7 draws), not coverage. */
	draws = long_mode ? 10000000 : 1000000;
	test_detector();
	for (unsigned b = 0; b < sizeof(bases) / sizeof(bases[0]); b++)
		for (int v = 0; v < V_COUNT; v++)
			test_machine(&bases[b], (enum variant)v, id++);
	for (unsigned i = 0; i < sizeof(captured) / sizeof(captured[0]); i++)
		test_captured(captured[i], 100 + i);
	return t_done();
}
