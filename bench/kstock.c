/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The stock kexec-time path, as the kernel's own decompressor does it:
 * arch/x86/boot/compressed/misc.c's decompressor (lib/decompress_unlz4.c,
 * unxz.c or unzstd.c), then parse_elf() moving the PT_LOAD segments into
 * place, then handle_relocations().  Only in `make bench`, never shipped.
 *
 * Provenance: nothing of the kernel is copied into this repository.
 * bench/kstock.sh builds this file against the kernel sources Debian ships
 * (linux-source-6.1 / linux-source-6.12, GPL-2.0, /usr/src/*.tar.xz) with the
 * flags of arch/x86/boot/compressed/Makefile (-O2 -mno-sse -mno-mmx
 * -ffreestanding -fno-jump-tables ...), with arch/x86/boot/compressed/string.c
 * (the decompressor's memcpy/memmove), and includes misc.c's parse_elf() and
 * handle_relocations() cut from that tree at build time (misc_parts.c).
 * What this file adds is only the frame misc.c's extract_kernel() gives them:
 * the heap, error(), and one call of each step.
 */
/* misc.c's own head, less pgtable.h and the generated voffset.h. */
#include "misc.h"
#include "error.h"
#include "../string.h"

/* What misc.c sets up before including a decompressor. */
#define STATIC		static
#define STATIC_RW_DATA
#define MALLOC_VISIBLE
#include <linux/decompress/mm.h>
memptr free_mem_ptr;
memptr free_mem_end_ptr;
#define memzero(s, n)	memset((s), 0, (n))
#define memmove		memmove
void *memmove(void *dest, const void *src, size_t n);

/* misc.c's error() prints and halts; here it ends the run with -1. */
static void *kstock_jmp[5];

void error(char *m)
{
	__builtin_longjmp(kstock_jmp, 1);
}

void __warn_printk(const char *fmt, ...);
void __warn_printk(const char *fmt, ...)
{
	__builtin_longjmp(kstock_jmp, 1);
}

/* No console: the guest's kexec has none either unless earlyprintk says so.
 * (error.c's warn() only prints; string.c's memcpy calls it on overlap.
 * Its argument became const in 6.x: kstock.sh passes error.h's type.) */
void warn(KSTOCK_WARN_ARG m)
{
}

void __putstr(const char *s)
{
}

void __puthex(unsigned long value)
{
}

#if defined(KSTOCK_LZ4)
#include "../../../../lib/decompress_unlz4.c"
#elif defined(KSTOCK_XZ)
#include "../../../../lib/decompress_unxz.c"
#elif defined(KSTOCK_ZSTD)
#include "../../../../lib/decompress_unzstd.c"
#else
#error "KSTOCK_LZ4, KSTOCK_XZ or KSTOCK_ZSTD"
#endif

/* misc.c takes these from the generated voffset.h; the driver passes the
 * span the relocation bounds check allows. */
static unsigned long kstock_span;
#define VO___bss_start	kstock_span
#define VO__text	0UL

#include "misc_parts.c"

/*
 * extract_kernel()'s three steps on one buffer: decode the payload into out
 * (buf_len bytes, room for the whole image), move the segments, relocate
 * for virt.  Returns 0, or -1 if any step called error().
 */
__attribute__((visibility("default")))
int kstock_run(unsigned char *in, long in_len, unsigned char *out, unsigned long out_len,
	       unsigned long virt, unsigned long span, void *heap, unsigned long heap_len);
int kstock_run(unsigned char *in, long in_len, unsigned char *out, unsigned long out_len,
	       unsigned long virt, unsigned long span, void *heap, unsigned long heap_len)
{
	if (__builtin_setjmp(kstock_jmp))
		return -1;
	free_mem_ptr = (memptr)heap;
	free_mem_end_ptr = (memptr)heap + heap_len;
	kstock_span = span;
	if (__decompress(in, in_len, NULL, NULL, out, out_len, NULL, error) < 0)
		return -1;
	parse_elf(out);
	handle_relocations(out, out_len, virt);
	return 0;
}
