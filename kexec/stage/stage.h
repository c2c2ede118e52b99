/* SPDX-License-Identifier: GPL-2.0-only */
/* Internal interfaces of the purgatory stage (freestanding only). */
#ifndef RERAND_STAGE_H
#define RERAND_STAGE_H

#include <stdbool.h>
#include <stdint.h>
#include "lz4dec.h"

#define STAGE_VERSION "2"   /* 2: kernel seed, reset on failure, record v2 */

/* Port I/O for the UART (serial.c) and the reset paths (reset.c). */
static inline void outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint8_t inb(uint16_t port)
{
	uint8_t v;
	__asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

/* serial.c: COM1, polled; never blocks forever. */
void serial_init(void);
void serial_puts(const char *s);
void serial_put_u64(uint64_t v);     /* decimal: counts only, never addresses */

/* reset.c: print "rerand: stage: MSG (resetting)" on COM1 (unless
 * rerand.debug is known to be off) and reset the machine through the
 * keyboard controller, port 0xCF9, then a triple fault.  Never returns. */
__attribute__((noreturn)) void stage_fatal(const char *msg);
/* Called once the command line is read: rerand.debug on or off. */
void stage_set_debug(bool on);

/* pgtable.c: identity page tables built from a pool of zeroed pages. */
struct pgtable {
	uint64_t *pool;        /* 4 KiB pages */
	unsigned  used;
	unsigned  total;
	unsigned  levels;      /* 4 or 5, following CR4.LA57 */
	uint64_t *root;
};

void pgtable_init(struct pgtable *pt, void *pool, uint64_t pool_bytes, bool la57);
/* Identity-map [start, end) with 2 MiB pages; -1 when the pool runs out
 * or the range is beyond the paging depth. */
int pgtable_map(struct pgtable *pt, uint64_t start, uint64_t end);
void pgtable_activate(const struct pgtable *pt);

/* cpu.c */
uint64_t cpu_rdtsc(void);
bool cpu_la57(void);
bool cpu_has_rdrand(void);
bool cpu_has_rdseed(void);
bool cpu_rdrand(uint64_t *v);
bool cpu_rdseed(uint64_t *v);
/* Turn on SSE2, and AVX2 (CPUID, then XGETBV confirms), when present and
 * not above max, for the decoder's copies; returns the level now usable.
 * cpu_simd_disable() zeroes the vector registers and restores CR0, CR4 and
 * XCR0 as kexec left them: call it before entering the kernel. */
enum rr_simd cpu_simd_enable(enum rr_simd max);
void cpu_simd_disable(void);

/* head.S */
__attribute__((noreturn)) void stage_enter_kernel(uint64_t entry, uint64_t boot_params);

#endif
