/* SPDX-License-Identifier: GPL-2.0-only */
/* Avoid what the crash kernel's ELF core header points at (see crash.h). */
#include "crash.h"
#include "util.h"

#define PT_LOAD 1
#define PT_NOTE 4

static int overlaps_ram(const struct rr_memmap *m, uint64_t start, uint64_t end)
{
	for (unsigned i = 0; i < m->nr_ram; i++)
		if (start < m->ram[i].end && m->ram[i].start < end)
			return 1;
	return 0;
}

int rr_crash_avoid(uint64_t addr, rr_phys_map_fn map, void *ctx, struct rr_memmap *m)
{
	const uint8_t *eh = map(ctx, addr, 64);
	int added = 0;

	if (!eh || rr_memcmp(eh, "\177ELF", 4) || eh[4] != 2 /* ELFCLASS64 */ ||
	    eh[5] != 1 /* little endian */ || rr_get16(eh + 16) != 4 /* ET_CORE */)
		return -1;
	uint64_t phoff = rr_get64(eh + 0x20);
	uint16_t phentsize = rr_get16(eh + 0x36);
	uint16_t phnum = rr_get16(eh + 0x38);
	if (phentsize < 56 || phnum > RR_CRASH_MAX_PHDRS || phoff > (1u << 20))
		return -1;
	uint64_t extent = phoff + (uint64_t)phentsize * phnum;
	if (extent < 64)
		extent = 64;
	const uint8_t *ph = map(ctx, addr, extent);
	if (!ph)
		return -1;
	rr_memmap_add_avoid(m, addr, addr + extent);
	added++;
	for (unsigned i = 0; i < phnum; i++) {
		const uint8_t *p = ph + phoff + (uint64_t)i * phentsize;
		uint32_t type = rr_get32(p);
		uint64_t start = rr_get64(p + 24), size = rr_get64(p + 40);

		if ((type != PT_LOAD && type != PT_NOTE) || size == 0 || start + size < start)
			continue;
		if (overlaps_ram(m, start, start + size)) {
			rr_memmap_add_avoid(m, start, start + size);
			added++;
		}
	}
	return added;
}
