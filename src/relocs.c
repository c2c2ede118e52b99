/* SPDX-License-Identifier: GPL-2.0-only */
/* The x86-64 relocation table (arch/x86/tools/relocs.c output) in both of its
 * layouts, with every entry checked to patch bytes inside the image. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kernel.h"
#include "util.h"

#define START_KERNEL_MAP 0xffffffff80000000ull

static const char *const list_name[3] = { "64-bit", "inverse 32-bit", "32-bit" };

/* Offset in the image of the bytes an entry patches, or false if any of
 * them falls outside [0, mem_size). */
static bool reloc_in_image(uint32_t entry, unsigned width, const struct rr_vmlinux *k)
{
	uint64_t va = (uint64_t)(int64_t)(int32_t)entry;
	uint64_t off = va - (START_KERNEL_MAP + k->link_paddr);

	return off < k->mem_size && k->mem_size - off >= width;
}

void rr_relocs_free(struct rr_relocs *r)
{
	if (!r)
		return;
	free(r->reloc64);
	free(r->inverse32);
	free(r->reloc32);
	memset(r, 0, sizeof(*r));
}

static uint32_t *copy_words(const uint8_t *tab, size_t first, size_t n)
{
	uint32_t *w = malloc(n ? n * sizeof(*w) : 1);

	if (!w)
		return NULL;
	for (size_t i = 0; i < n; i++)
		w[i] = rr_get32(tab + (first + i) * 4);
	return w;
}

int rr_relocs_parse(const uint8_t *tab, size_t len, const struct rr_vmlinux *k,
		    const char *name, struct rr_relocs *ret, struct rr_err *e)
{
	size_t nwords = len / 4, zero_at[3], nzero = 0, first[3], count[3], idx = 0;
	struct rr_relocs r;
	bool any = false;

	if (len % 4)
		return rr_errf(e, EINVAL, "%s: relocation table is %zu bytes, not a whole number "
			       "of 32-bit words", name, len);
	for (size_t i = 0; i < nwords; i++) {
		if (rr_get32(tab + i * 4) != 0) {
			any = true;
			continue;
		}
		if (nzero < 3)
			zero_at[nzero] = i;
		nzero++;
	}
	if (!any)
		return rr_errf(e, ENOENT, "%s: no relocation table (kernel built without "
			       "CONFIG_RANDOMIZE_BASE?)", name);
	if (nzero != 2 && nzero != 3)
		return rr_errf(e, EINVAL, "%s: relocation table has %zu zero terminators, "
			       "expected 2 or 3", name, nzero);
	/* The table ends at the end of the buffer, so it must start with the
	 * 64-bit list's terminator. */
	if (zero_at[0] != 0)
		return rr_errf(e, EINVAL, "%s: relocation table does not start with a zero word "
			       "(it does not end where the buffer ends?)", name);

	memset(&r, 0, sizeof(r));
	r.layout = (unsigned)nzero;
	first[0] = 1;
	count[0] = zero_at[1] - 1;
	if (nzero == 3) {
		first[1] = zero_at[1] + 1;
		count[1] = zero_at[2] - first[1];
		first[2] = zero_at[2] + 1;
	} else {
		first[1] = 0;
		count[1] = 0;
		first[2] = zero_at[1] + 1;
	}
	count[2] = nwords - first[2];

	for (unsigned l = 0; l < 3; l++)
		for (size_t i = 0; i < count[l]; i++, idx++) {
			uint32_t w = rr_get32(tab + (first[l] + i) * 4);

			if (!reloc_in_image(w, l == 0 ? 8 : 4, k))
				return rr_errf(e, ERANGE, "%s: relocation %zu (0x%08x, %s list) points "
					       "outside the image", name, idx, w, list_name[l]);
		}

	r.reloc64 = copy_words(tab, first[0], count[0]);
	r.inverse32 = copy_words(tab, first[1], count[1]);
	r.reloc32 = copy_words(tab, first[2], count[2]);
	if (!r.reloc64 || !r.inverse32 || !r.reloc32) {
		rr_relocs_free(&r);
		return rr_errf(e, ENOMEM, "%s: out of memory for the relocation table", name);
	}
	r.nr_reloc64 = count[0];
	r.nr_inverse32 = count[1];
	r.nr_reloc32 = count[2];
	*ret = r;
	return 0;
}
