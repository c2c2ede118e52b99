/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Unified kernel image reader: the PE section table behind systemd-stub,
 * and the parts rerand takes from it (.linux to build the image from;
 * .ucode + .initrd and .cmdline for `rerand load`).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "pesig.h"
#include "uki.h"
#include "util.h"

#define SEC_VIRTUAL_SIZE   8
#define SEC_RAW_SIZE       16
#define SEC_RAW_POINTER    20

static const char *const part_names[RR_UKI_NR_PARTS] = {
	[RR_UKI_LINUX] = ".linux",
	[RR_UKI_INITRD] = ".initrd",
	[RR_UKI_UCODE] = ".ucode",
	[RR_UKI_CMDLINE] = ".cmdline",
	[RR_UKI_OSREL] = ".osrel",
	[RR_UKI_UNAME] = ".uname",
};

const char *rr_uki_part_name(enum rr_uki_part p)
{
	return p < RR_UKI_NR_PARTS ? part_names[p] : "?";
}

/* A PE section name is 8 bytes, NUL-padded (longer names would need the
 * COFF string table, which UKI sections never use). */
static int part_of(const uint8_t *hdr)
{
	for (int i = 0; i < RR_UKI_NR_PARTS; i++) {
		size_t n = strlen(part_names[i]), k = n;

		if (memcmp(hdr, part_names[i], n))
			continue;
		while (k < 8 && hdr[k] == 0)
			k++;
		if (k == 8)
			return i;
	}
	return -1;
}

bool rr_uki_probe(const uint8_t *buf, size_t len)
{
	struct rr_pe_info pi;

	if (len >= 0x206 && !memcmp(buf + 0x202, "HdrS", 4))
		return false;
	if (rr_pe_parse(buf, len, "", &pi, NULL) < 0)
		return false;
	for (unsigned i = 0; i < pi.nr_sections; i++)
		if (part_of(buf + pi.sections_offset + (size_t)i * RR_PE_SECTION_HDR_SIZE) == RR_UKI_LINUX)
			return true;
	return false;
}

struct range {
	uint64_t start, end;
	char name[9];
};

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

static void sec_name(const uint8_t *hdr, char out[9])
{
	for (int i = 0; i < 8; i++)
		out[i] = hdr[i] >= 0x20 && hdr[i] < 0x7f ? (char)hdr[i] : (hdr[i] ? '?' : 0);
	out[8] = 0;
}

int rr_uki_parse(const uint8_t *buf, size_t len, const char *name, struct rr_uki *ret,
		 struct rr_err *e)
{
	struct rr_pe_info pi;
	struct rr_uki u;
	_cleanup_free_ struct range *rg = NULL;
	unsigned nr = 0;
	int r;

	memset(&u, 0, sizeof(u));
	r = rr_pe_parse(buf, len, name, &pi, e);
	if (r < 0)
		return r;
	/* rr_pe_parse checked that the headers fit in SizeOfHeaders < len. */
	rg = calloc(pi.nr_sections ? pi.nr_sections : 1, sizeof(*rg));
	if (!rg)
		return rr_errf(e, ENOMEM, "%s: out of memory", name);
	for (unsigned i = 0; i < pi.nr_sections; i++) {
		const uint8_t *h = buf + pi.sections_offset + (size_t)i * RR_PE_SECTION_HDR_SIZE;
		uint64_t vsize = rr_get32(h + SEC_VIRTUAL_SIZE);
		uint64_t raw = rr_get32(h + SEC_RAW_SIZE), at = rr_get32(h + SEC_RAW_POINTER);
		int p = part_of(h);
		char sn[9];

		sec_name(h, sn);
		if (!raw)
			continue;          /* .bss-like: no file data */
		if (at > len || raw > len - at)
			return rr_errf(e, EBADMSG, "%s: PE section %s (%llu bytes at 0x%llx) runs past the "
				       "end of the file (%zu bytes): truncated?", name, sn,
				       (unsigned long long)raw, (unsigned long long)at, len);
		rg[nr].start = at;
		rg[nr].end = at + raw;
		memcpy(rg[nr].name, sn, sizeof(sn));
		nr++;
		if (p < 0)
			continue;
		if (u.part[p].present)
			return rr_errf(e, EBADMSG, "%s: the UKI has two %s sections", name, sn);
		/* The stub uses VirtualSize bytes; raw data is that, padded to the
		 * file alignment.  More virtual than raw would be zeros the PE
		 * loader adds: never right for a kernel, initrd or text. */
		if (vsize > raw)
			return rr_errf(e, EBADMSG, "%s: UKI section %s has VirtualSize %llu but only %llu "
				       "bytes in the file", name, sn, (unsigned long long)vsize,
				       (unsigned long long)raw);
		u.part[p].present = true;
		u.part[p].offset = at;
		u.part[p].size = vsize ? vsize : raw;
	}
	qsort(rg, nr, sizeof(*rg), cmp_range);
	for (unsigned i = 1; i < nr; i++)
		if (rg[i].start < rg[i - 1].end)
			return rr_errf(e, EBADMSG, "%s: PE sections %s and %s overlap in the file", name,
				       rg[i - 1].name, rg[i].name);
	if (nr && rg[0].start < pi.size_of_headers)
		return rr_errf(e, EBADMSG, "%s: PE section %s overlaps the headers", name, rg[0].name);
	if (!u.part[RR_UKI_LINUX].present)
		return rr_errf(e, ENOEXEC, "%s: PE file without a .linux section: not a unified kernel "
			       "image", name);
	u.nr_sections = pi.nr_sections;
	*ret = u;
	return 0;
}

int rr_uki_initrd(const uint8_t *buf, size_t len, const struct rr_uki *u, uint8_t **ret_buf,
		  size_t *ret_len, const char *name, struct rr_err *e)
{
	const struct rr_uki_section *uc = &u->part[RR_UKI_UCODE], *in = &u->part[RR_UKI_INITRD];
	size_t total = (uc->present ? uc->size : 0) + (in->present ? in->size : 0), o = 0;
	uint8_t *out;

	*ret_buf = NULL;
	*ret_len = 0;
	if (!total)
		return 0;
	out = malloc(total);
	if (!out)
		return rr_errf(e, ENOMEM, "%s: out of memory for a %zu-byte initrd", name, total);
	/* Ranges were checked against len by rr_uki_parse. */
	if (uc->present) {
		memcpy(out, buf + uc->offset, uc->size);
		o = uc->size;
	}
	if (in->present)
		memcpy(out + o, buf + in->offset, in->size);
	*ret_buf = out;
	*ret_len = total;
	return 0;
}

int rr_uki_cmdline(const uint8_t *buf, size_t len, const struct rr_uki *u, char *out,
		   size_t size, const char *name, struct rr_err *e)
{
	const struct rr_uki_section *c = &u->part[RR_UKI_CMDLINE];
	size_t n;

	if (!size)
		return rr_errf(e, ENOBUFS, "%s: command line buffer too small", name);
	out[0] = 0;
	if (!c->present)
		return 0;
	n = c->size;
	const uint8_t *nul = memchr(buf + c->offset, 0, n);
	if (nul)
		n = (size_t)(nul - (buf + c->offset));
	while (n && (buf[c->offset + n - 1] == '\n' || buf[c->offset + n - 1] == ' ' ||
		     buf[c->offset + n - 1] == '\t' || buf[c->offset + n - 1] == '\r'))
		n--;
	for (size_t i = 0; i < n; i++) {
		uint8_t ch = buf[c->offset + i];
		if ((ch < 0x20 && ch != '\t' && ch != '\n') || ch == 0x7f)
			return rr_errf(e, EBADMSG, "%s: the UKI's .cmdline has control character 0x%02x "
				       "at byte %zu", name, ch, i);
	}
	if (n >= size)
		return rr_errf(e, E2BIG, "%s: the UKI's .cmdline is %zu bytes, more than %zu", name,
			       n, size - 1);
	memcpy(out, buf + c->offset, n);
	out[n] = 0;
	return 0;
}
