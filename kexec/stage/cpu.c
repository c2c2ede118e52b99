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

/*
 * Vector registers for the decoder's copies.  kexec hands over with CR4 down
 * to PAE (and LA57), so SSE instructions would fault (#UD) until the stage
 * turns on what it uses; it puts every bit back before the kernel runs.
 * The kernel sets CR0 and CR4 itself in startup_64, but restoring costs
 * nothing and keeps the hand-over the one kexec made.
 */
#define CR0_MP      (1ULL << 1)
#define CR0_EM      (1ULL << 2)
#define CR0_TS      (1ULL << 3)
#define CR4_OSFXSR  (1ULL << 9)
#define CR4_OSXMMEXCPT (1ULL << 10)
#define CR4_OSXSAVE (1ULL << 18)
#define XCR0_AVX    0x7ULL       /* x87 | SSE | AVX state */

static struct {
	enum rr_simd level;
	uint64_t cr0, cr4, xcr0;
} simd;

static uint64_t read_cr0(void)
{
	uint64_t v;
	__asm__ volatile("mov %%cr0, %0" : "=r"(v));
	return v;
}

static uint64_t read_cr4(void)
{
	uint64_t v;
	__asm__ volatile("mov %%cr4, %0" : "=r"(v));
	return v;
}

static void write_cr0(uint64_t v)
{
	__asm__ volatile("mov %0, %%cr0" : : "r"(v) : "memory");
}

static void write_cr4(uint64_t v)
{
	__asm__ volatile("mov %0, %%cr4" : : "r"(v) : "memory");
}

static uint64_t xgetbv0(void)
{
	uint32_t lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return (uint64_t)hi << 32 | lo;
}

static void xsetbv0(uint64_t v)
{
	__asm__ volatile("xsetbv" : : "a"((uint32_t)v), "d"((uint32_t)(v >> 32)), "c"(0) : "memory");
}

enum rr_simd cpu_simd_enable(enum rr_simd max)
{
	uint32_t r1[4], r7[4] = { 0 }, rd[4] = { 0 }, r0[4];

	simd.level = RR_SIMD_NONE;
	if (max == RR_SIMD_NONE)
		return RR_SIMD_NONE;
	cpuid(0, 0, r0);
	cpuid(1, 0, r1);
	if (!(r1[3] & (1u << 24)) || !(r1[3] & (1u << 26)))     /* FXSR, SSE2 */
		return RR_SIMD_NONE;
	simd.cr0 = read_cr0();
	simd.cr4 = read_cr4();
	write_cr0((simd.cr0 & ~(CR0_EM | CR0_TS)) | CR0_MP);
	write_cr4(simd.cr4 | CR4_OSFXSR | CR4_OSXMMEXCPT);
	simd.level = RR_SIMD_SSE2;

	if (max < RR_SIMD_AVX2 || r0[0] < 0xd)
		return simd.level;
	cpuid(7, 0, r7);
	cpuid(0xd, 0, rd);
	/* XSAVE, AVX; AVX2; and XCR0 able to hold the AVX state. */
	if (!(r1[2] & (1u << 26)) || !(r1[2] & (1u << 28)) || !(r7[1] & (1u << 5)) ||
	    (rd[0] & XCR0_AVX) != XCR0_AVX)
		return simd.level;
	write_cr4(simd.cr4 | CR4_OSFXSR | CR4_OSXMMEXCPT | CR4_OSXSAVE);
	simd.xcr0 = xgetbv0();
	xsetbv0(simd.xcr0 | XCR0_AVX);
	cpuid(1, 0, r1);
	/* Believe it only when the CPU reports it back: OSXSAVE as set, and
	 * XCR0 holding the AVX state. */
	if (!(r1[2] & (1u << 27)) || (xgetbv0() & XCR0_AVX) != XCR0_AVX) {
		xsetbv0(simd.xcr0);
		write_cr4(simd.cr4 | CR4_OSFXSR | CR4_OSXMMEXCPT);
		return simd.level;
	}
	simd.level = RR_SIMD_AVX2;
	return simd.level;
}

/*
 * Zero what the copies left in vector registers (kernel bytes, no secret,
 * but nothing of the stage should reach the kernel) and put CR0, CR4 and
 * XCR0 back.  No clobbers are declared: this file, like the whole stage,
 * is built -mgeneral-regs-only, so the compiler holds nothing there.
 */
void cpu_simd_disable(void)
{
	if (simd.level == RR_SIMD_AVX2) {
		__asm__ volatile("vzeroall" ::: "memory");
		xsetbv0(simd.xcr0);
	} else if (simd.level == RR_SIMD_SSE2) {
		__asm__ volatile(
			"pxor %%xmm0, %%xmm0\n\tpxor %%xmm1, %%xmm1\n\t"
			"pxor %%xmm2, %%xmm2\n\tpxor %%xmm3, %%xmm3\n\t"
			"pxor %%xmm4, %%xmm4\n\tpxor %%xmm5, %%xmm5\n\t"
			"pxor %%xmm6, %%xmm6\n\tpxor %%xmm7, %%xmm7\n\t"
			"pxor %%xmm8, %%xmm8\n\tpxor %%xmm9, %%xmm9\n\t"
			"pxor %%xmm10, %%xmm10\n\tpxor %%xmm11, %%xmm11\n\t"
			"pxor %%xmm12, %%xmm12\n\tpxor %%xmm13, %%xmm13\n\t"
			"pxor %%xmm14, %%xmm14\n\tpxor %%xmm15, %%xmm15" ::: "memory");
	}
	if (simd.level != RR_SIMD_NONE) {
		write_cr4(simd.cr4);
		write_cr0(simd.cr0);
	}
	simd.level = RR_SIMD_NONE;
}
