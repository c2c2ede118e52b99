/* SPDX-License-Identifier: GPL-2.0-only */
/* CPU access for the stage: TSC, CPUID feature bits, RDRAND/RDSEED, CR4. */
#include "stage.h"

uint64_t cpu_rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

bool cpu_la57(void)
{
	uint64_t cr4;
	__asm__ volatile("mov %%cr4, %0" : "=r"(cr4));
	return cr4 & (1ULL << 12);
}

static void cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
	__asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3])
			 : "a"(leaf), "c"(sub));
}

bool cpu_has_rdrand(void)
{
	uint32_t r[4];
	cpuid(1, 0, r);
	return r[2] & (1u << 30);
}

bool cpu_has_rdseed(void)
{
	uint32_t r[4];
	cpuid(0, 0, r);
	if (r[0] < 7)
		return false;
	cpuid(7, 0, r);
	return r[1] & (1u << 18);
}

bool cpu_rdrand(uint64_t *v)
{
	uint8_t ok;
	__asm__ volatile("rdrand %0; setc %1" : "=r"(*v), "=qm"(ok) : : "cc");
	return ok;
}

bool cpu_rdseed(uint64_t *v)
{
	uint8_t ok;
	__asm__ volatile("rdseed %0; setc %1" : "=r"(*v), "=qm"(ok) : : "cc");
	return ok;
}
