/* SPDX-License-Identifier: GPL-2.0-only */
/* The kernel command-line options that constrain placement (mem=, memmap=,
 * hugepages, elfcorehdr=, nokaslr, rerand.debug, rerand.simd=), parsed without libc. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lz4dec.h"
#include "select.h"
#include "util.h"

/*
 * Deliberate differences from the decompressor (kaslr.c handle_mem_options),
 * each on the side of avoiding more, never less:
 *  - memmap=nn#0 (and $ ! with start 0) avoids [0, nn) like the running
 *    kernel does; the decompressor misreads it as a memory limit.
 *  - memmap=nn%ss-t+u (retype) avoids [ss, ss+nn): it may turn RAM into
 *    something else; the decompressor misreads it as a memory limit.
 *  - a fifth memmap region sets memmap_overflow even when it comes in a
 *    separate memmap= word (the decompressor silently drops it then); the
 *    stage then finds no safe place and resets, so `rerand load` refuses
 *    such a line first, quoting nr_memmap_seen.
 *  - mem=0 is ignored instead of ending the parse (which would drop any
 *    memmap= after it).
 *  - several mem=/memmap=nn limits: the smallest wins, as in the running
 *    kernel, where each one removes RAM above it.
 *  - default_hugepagesz=1G makes hugepages=N without a preceding
 *    hugepagesz= count as 1 GiB pages, as mm/hugetlb.c does.
 *  - several hugepages= counts for 1 GiB pages: the largest is kept.
 */

#define GIB (1ULL << 30)
#define MIB (1ULL << 20)

/* Like the kernel's isspace(), which also counts Latin-1 NBSP. */
static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
	       c == '\r' || (unsigned char)c == 0xa0;
}

static bool span_is(const char *p, const char *e, const char *lit)
{
	for (; *lit; lit++, p++)
		if (p >= e || *p != *lit)
			return false;
	return p == e;
}

static bool span_starts(const char *p, const char *e, const char *lit)
{
	for (; *lit; lit++, p++)
		if (p >= e || *p != *lit)
			return false;
	return true;
}

static int digit_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return 99;
}

/* simple_strtoull(p, &end, 0) bounded by e; saturates instead of wrapping
 * so a huge size avoids more rather than a random amount. */
static uint64_t parse_ull(const char *p, const char *e, const char **out)
{
	unsigned base = 10;
	uint64_t v = 0;
	int d;

	if (p < e && *p == '0') {
		base = 8;
		if (e - p >= 3 && (p[1] == 'x' || p[1] == 'X') && digit_value(p[2]) < 16) {
			base = 16;
			p += 2;
		}
	}
	for (; p < e && (d = digit_value(*p)) < (int)base; p++) {
		if (v > (UINT64_MAX - (uint64_t)d) / base)
			v = UINT64_MAX;
		else
			v = v * base + (uint64_t)d;
	}
	*out = p;
	return v;
}

/* memparse(): a number with an optional K M G T P E suffix. */
static uint64_t parse_mem(const char *p, const char *e, const char **out)
{
	static const char suffixes[] = "KMGTPE";
	const char *q;
	uint64_t v = parse_ull(p, e, &q);
	unsigned i, shift = 0;

	if (q > p && q < e) {
		for (i = 0; suffixes[i]; i++)
			if (*q == suffixes[i] || *q == suffixes[i] + ('a' - 'A'))
				shift = 10 * (i + 1);
		if (shift) {
			q++;
			v = v > (UINT64_MAX >> shift) ? UINT64_MAX : v << shift;
		}
	}
	*out = q;
	return v;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static void set_limit(struct rr_cmdline *c, uint64_t limit)
{
	if (limit && (!c->mem_limit || limit < c->mem_limit))
		c->mem_limit = limit;
}

static void parse_memmap(struct rr_cmdline *c, const char *p, const char *e)
{
	while (p < e) {
		const char *ie = p, *q;
		uint64_t size, start;

		while (ie < e && *ie != ',')
			ie++;
		/* exactmap and malformed items end this word, as in kaslr.c. */
		if (span_starts(p, ie, "exactmap"))
			return;
		size = parse_mem(p, ie, &q);
		if (q == p)
			return;
		if (q < ie && (*q == '#' || *q == '$' || *q == '!' || *q == '%')) {
			start = parse_mem(q + 1, ie, &q);
			if (size) {
				if (c->nr_memmap_seen < 0xffffffffu)
					c->nr_memmap_seen++;
				if (c->nr_memmap < RR_MAX_MEMMAP) {
					c->memmap[c->nr_memmap].start = start;
					c->memmap[c->nr_memmap].end = add_sat(start, size);
					c->nr_memmap++;
				} else {
					c->memmap_overflow = true;
				}
			}
		} else if (q < ie && *q == '@') {
			/* nn@ss adds usable RAM: nothing to keep clear. */
		} else {
			set_limit(c, size);
		}
		p = ie < e ? ie + 1 : ie;
	}
}

/* hugepages=N, or the per-node form hugepages=0:N,1:M (counts summed). */
static uint64_t parse_hugepages(const char *p, const char *e)
{
	uint64_t total = 0, v;
	const char *q;

	v = parse_ull(p, e, &q);
	if (q == e || *q != ':')
		return v;
	while (p < e) {
		parse_ull(p, e, &q);
		if (q == p || q >= e || *q != ':')
			break;
		p = q + 1;
		v = parse_ull(p, e, &q);
		if (q == p)
			break;
		total = add_sat(total, v);
		if (q >= e || *q != ',')
			break;
		p = q + 1;
	}
	return total;
}

static void note_hugepages(struct rr_cmdline *c, uint64_t n)
{
	unsigned v = n > 0xffffffffULL ? 0xffffffffu : (unsigned)n;

	if (v > c->hugepages_1g)
		c->hugepages_1g = v;
}

struct huge_state {
	bool seen_size;        /* a hugepagesz= came before */
	bool size_is_1g;       /* ...and it was 1 GiB */
	bool default_is_1g;    /* default_hugepagesz=1G */
	uint64_t for_default;  /* hugepages= meant for the default size */
};

static void parse_elfcorehdr(struct rr_cmdline *c, const char *p, const char *e)
{
	const char *q;
	uint64_t a = parse_mem(p, e, &q), size;

	if (q == p)
		return;
	if (q < e && *q == '@') {
		size = a;
		p = q + 1;
		a = parse_mem(p, e, &q);
		if (q == p)
			return;
	} else {
		size = 0;
	}
	/*
	 * Without a size we cannot know the header's extent.  kexec-tools and
	 * kexec_file build it as an ELF header, one 56-byte program header per
	 * memory range plus per-CPU note headers: tens of KiB even on big
	 * machines.  1 MiB (over 18,000 program headers) is a safe bound and
	 * costs at most one 2 MiB slot.
	 */
	if (size == 0)
		size = MIB;
	c->has_elfcorehdr = true;
	c->elfcorehdr.start = a;
	c->elfcorehdr.end = add_sat(a, size);
}

static bool value_false(const char *p, const char *e)
{
	return span_is(p, e, "0") || span_is(p, e, "n") || span_is(p, e, "N") ||
	       span_is(p, e, "no") || span_is(p, e, "off") || span_is(p, e, "false");
}

/* Returns false to stop the parse ("--": the rest belongs to init). */
static bool handle(struct rr_cmdline *c, struct huge_state *h,
		   const char *pp, const char *pe, const char *vp, const char *ve)
{
	const char *q;
	uint64_t v;

	if (!vp) {
		if (span_is(pp, pe, "--"))
			return false;
		if (span_is(pp, pe, "nokaslr"))
			c->nokaslr = true;
		else if (span_is(pp, pe, "rerand.debug"))
			c->debug = true;
		return true;
	}
	if (span_is(pp, pe, "rerand.debug")) {
		c->debug = !value_false(vp, ve);
	} else if (span_is(pp, pe, "mem")) {
		if (span_is(vp, ve, "nopentium"))
			return true;
		set_limit(c, parse_mem(vp, ve, &q));
	} else if (span_is(pp, pe, "memmap")) {
		parse_memmap(c, vp, ve);
	} else if (span_is(pp, pe, "hugepagesz")) {
		h->seen_size = true;
		h->size_is_1g = parse_mem(vp, ve, &q) == GIB;
	} else if (span_is(pp, pe, "default_hugepagesz")) {
		h->default_is_1g = parse_mem(vp, ve, &q) == GIB;
	} else if (span_is(pp, pe, "hugepages")) {
		v = parse_hugepages(vp, ve);
		if (h->seen_size) {
			if (h->size_is_1g)
				note_hugepages(c, v);
		} else if (v > h->for_default) {
			h->for_default = v;
		}
	} else if (span_is(pp, pe, "elfcorehdr")) {
		parse_elfcorehdr(c, vp, ve);
	} else if (span_is(pp, pe, "rerand.simd")) {
		/* A way around a CPU or hypervisor that mishandles vector state;
		 * an unknown value is ignored like any malformed value. */
		if (span_is(vp, ve, "none") || span_is(vp, ve, "sse2") || span_is(vp, ve, "avx2")) {
			c->has_simd_max = true;
			c->simd_max = span_is(vp, ve, "none") ? RR_SIMD_NONE :
				      span_is(vp, ve, "sse2") ? RR_SIMD_SSE2 : RR_SIMD_AVX2;
		}
	}
	return true;
}

void rr_cmdline_parse(const char *s, uint64_t len, struct rr_cmdline *ret)
{
	struct huge_state h = { 0 };
	uint64_t n = 0, i = 0;

	rr_memset(ret, 0, sizeof(*ret));
	if (!s)
		return;
	while (n < len && s[n])
		n++;

	/* Tokens split like the kernel's next_arg(): spaces end a word unless
	 * inside double quotes, and one pair of quotes around the value (or
	 * the whole word) is dropped.  There is no escape for a quote. */
	while (i < n) {
		uint64_t t, j, eq = 0, pe, vs = 0, ve = 0;
		bool quoted = false, in_quote = false, has_eq = false, stripped = false;

		while (i < n && is_space(s[i]))
			i++;
		if (i >= n)
			break;
		t = i;
		if (s[t] == '"') {
			t++;
			quoted = in_quote = true;
		}
		for (j = t; j < n; j++) {
			if (is_space(s[j]) && !in_quote)
				break;
			if (!has_eq && s[j] == '=' && j > t) {
				has_eq = true;
				eq = j;
			}
			if (s[j] == '"')
				in_quote = !in_quote;
		}
		pe = has_eq ? eq : j;
		if (has_eq) {
			vs = eq + 1;
			ve = j;
			if (vs < j && s[vs] == '"') {
				vs++;
				if (s[j - 1] == '"') {
					ve = j - 1;
					stripped = true;
				}
			}
		}
		if (quoted && !stripped && j > t && s[j - 1] == '"') {
			if (has_eq)
				ve = j - 1;
			else
				pe = j - 1;
		}
		if (has_eq && ve < vs)
			ve = vs;
		i = j < n ? j + 1 : j;

		if (!handle(ret, &h, s + t, s + pe, has_eq ? s + vs : NULL, s + ve))
			break;
	}
	if (h.default_is_1g)
		note_hugepages(ret, h.for_default);
}
