/* SPDX-License-Identifier: GPL-2.0-only */
/* The crash-kernel avoid list: an ELF core header like kexec-tools builds,
 * read through a fake physical memory. */
#include <stdint.h>
#include <string.h>

#include "test.h"
#include "crash.h"
#include "util.h"

#define MEM_BASE 0x30000000ULL          /* a 256 MiB crash region */
#define MEM_SIZE (256ULL << 20)
#define HDR_ADDR (MEM_BASE + MEM_SIZE - 0x10000)

static uint8_t fake[0x10000];           /* backs [HDR_ADDR, HDR_ADDR + 64 KiB) */

static void *map(void *ctx, uint64_t phys, uint64_t len)
{
	(void)ctx;
	if (phys < HDR_ADDR || len > sizeof(fake) || phys - HDR_ADDR > sizeof(fake) - len)
		return NULL;
	return fake + (phys - HDR_ADDR);
}

static void phdr(unsigned i, uint32_t type, uint64_t paddr, uint64_t size)
{
	uint8_t *p = fake + 64 + i * 56;
	rr_put32(p, type);
	rr_put64(p + 24, paddr);
	rr_put64(p + 32, size);
	rr_put64(p + 40, size);
}

static void build(unsigned nload)
{
	memset(fake, 0, sizeof(fake));
	memcpy(fake, "\177ELF", 4);
	fake[4] = 2;
	fake[5] = 1;
	fake[16] = 4;                   /* ET_CORE */
	rr_put64(fake + 0x20, 64);      /* e_phoff */
	fake[0x36] = 56;                /* e_phentsize */
	fake[0x38] = (uint8_t)(nload + 2);
	phdr(0, 4, 0x7f000000, 0x1000);                 /* notes: old kernel's memory */
	phdr(1, 1, MEM_BASE + 0x100000, 0xa0000);       /* a backup region inside */
	for (unsigned i = 0; i < nload; i++)            /* the old kernel's RAM: outside */
		phdr(2 + i, 1, 0x100000000ULL + i * 0x10000000ULL, 0x8000000);
}

static int avoided(const struct rr_memmap *m, uint64_t s, uint64_t e)
{
	for (unsigned i = 0; i < m->nr_avoid; i++)
		if (m->avoid[i].start <= s && m->avoid[i].end >= e)
			return 1;
	return 0;
}

int main(void)
{
	struct rr_memmap m;

	build(20);
	rr_memmap_init(&m);
	rr_memmap_add_ram(&m, MEM_BASE, MEM_BASE + MEM_SIZE);
	int n = rr_crash_avoid(HDR_ADDR, map, NULL, &m);
	T_EQ_U64(n, 2, "header and the backup region inside the crash RAM are avoided, nothing else");
	T_OK(avoided(&m, HDR_ADDR, HDR_ADDR + 64 + 22 * 56), "the header with its program headers");
	T_OK(avoided(&m, MEM_BASE + 0x100000, MEM_BASE + 0x1a0000), "the backup region");

	struct rr_select_params p = { .size = 46ULL << 20, .min_addr = 16ULL << 20,
				      .max_addr = 1ULL << 46, .align = 2ULL << 20 };
	uint64_t count = rr_phys_slot_count(&m, &p), a;
	int clear = 1;
	for (uint64_t i = 0; i < count; i++) {
		rr_phys_slot_at(&m, &p, i, &a);
		if (a < MEM_BASE + 0x1a0000 && a + p.size > MEM_BASE + 0x100000)
			clear = 0;
		if (a + p.size > HDR_ADDR)
			clear = 0;
	}
	T_OK(count > 0 && clear, "all %llu slots in the crash region stay clear of both", (unsigned long long)count);

	rr_memmap_init(&m);
	rr_memmap_add_ram(&m, MEM_BASE, MEM_BASE + MEM_SIZE);
	fake[0] = 0;
	T_OK(rr_crash_avoid(HDR_ADDR, map, NULL, &m) < 0 && m.nr_avoid == 0, "not an ELF: refused, nothing added");
	build(20);
	fake[16] = 2;
	T_OK(rr_crash_avoid(HDR_ADDR, map, NULL, &m) < 0, "not ET_CORE: refused");
	build(20);
	rr_put64(fake + 0x20, 0xfff0);
	T_OK(rr_crash_avoid(HDR_ADDR, map, NULL, &m) < 0, "program headers past what can be mapped: refused");
	T_OK(rr_crash_avoid(HDR_ADDR + 0x20000, map, NULL, &m) < 0, "unmappable address: refused");
	return t_done();
}
