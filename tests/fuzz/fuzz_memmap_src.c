/* SPDX-License-Identifier: GPL-2.0-only */
/* Fuzz target: the memory-map text readers (/proc/iomem, dmesg e820, the
 * sysfs entry values).  The first byte picks the parser; on success the map
 * they filled must be consistent with what they report. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memmap_src.h"
#include "select.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct rr_memmap *m, const struct rr_msrc_info *info)
{
	uint64_t sum = 0;

	if (info->nr_ram == 0 || info->nr_ram > info->nr_entries)
		abort();
	if (!m->ram_dropped && m->nr_ram == 0)
		abort();
	for (unsigned i = 0; i < m->nr_ram; i++) {
		if (m->ram[i].start >= m->ram[i].end)
			abort();
		sum += m->ram[i].end - m->ram[i].start;
	}
	/* Merging only ever removes overlap: never more RAM than listed. */
	if (!m->ram_dropped && info->nr_ram == m->nr_ram && sum != info->ram_bytes)
		abort();
}

/* The three sysfs values, separated by NUL bytes in the input. */
static void fuzz_sysfs(const char *p, size_t n)
{
	const char *f[3];
	size_t l[3], at = 0;
	uint64_t s, e;
	bool ram;

	for (int i = 0; i < 3; i++) {
		const char *z = at < n ? memchr(p + at, 0, n - at) : NULL;

		f[i] = p + at;
		l[i] = z ? (size_t)(z - (p + at)) : n - at;
		at += l[i] + (z ? 1 : 0);
		if (at > n)
			at = n;
	}
	if (rr_msrc_sysfs_entry(f[0], l[0], f[1], l[1], f[2], l[2], "fuzz", &s, &e, &ram, NULL) == 0 &&
	    s >= e && !(s == UINT64_MAX && e == UINT64_MAX))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rr_memmap m;
	struct rr_msrc_info info;
	struct rr_err e;
	const char *text;
	size_t len;
	char *copy;
	int r;

	if (size < 1)
		return 0;
	/* An exact-size copy: ASan sees any read past the end. */
	len = size - 1;
	copy = malloc(len ? len : 1);
	if (!copy)
		return 0;
	memcpy(copy, data + 1, len);
	text = copy;
	rr_memmap_init(&m);
	switch (data[0] % 4) {
	case 0: r = rr_msrc_parse_text(text, len, "fuzz", &m, &info, &e); break;
	case 1: r = rr_msrc_parse_iomem(text, len, "fuzz", &m, &info, &e); break;
	case 2: r = rr_msrc_parse_e820(text, len, "fuzz", &m, &info, &e); break;
	default:
		fuzz_sysfs(text, len);
		free(copy);
		return 0;
	}
	if (r == 0)
		check(&m, &info);
	else if (r > 0 || e.msg[0] == 0 || strncmp(e.msg, "fuzz:", 5) != 0)
		abort();   /* every failure names the file */
	free(copy);
	return 0;
}
