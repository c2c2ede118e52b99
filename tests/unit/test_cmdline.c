/* SPDX-License-Identifier: GPL-2.0-only */
/* rr_cmdline_parse: mem=, memmap=, hugepages, elfcorehdr=, nokaslr,
 * rerand.debug, next_arg()-style quoting, "--", and length bounds. */
#include <stdint.h>
#include <string.h>

#include "lz4dec.h"
#include "select.h"
#include "test.h"

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)

static struct rr_cmdline parse(const char *s)
{
	struct rr_cmdline c;

	memset(&c, 0xa5, sizeof(c));     /* the parser must clear everything */
	rr_cmdline_parse(s, strlen(s), &c);
	return c;
}

static void test_flags(void)
{
	struct rr_cmdline c;

	c = parse("root=/dev/sda1 nokaslr quiet");
	T_OK(c.nokaslr && !c.debug && !c.mem_limit && !c.nr_memmap && !c.has_elfcorehdr,
	     "flags: nokaslr alone, everything else clear");
	c = parse("nokaslrx nokasl xnokaslr nokaslr=1");
	T_OK(!c.nokaslr, "flags: only the bare word nokaslr counts");
	c = parse("rerand.debug");
	T_OK(c.debug, "flags: rerand.debug");
	c = parse("rerand.debug=1");
	T_OK(c.debug, "flags: rerand.debug=1");
	c = parse("rerand.debug=0");
	T_OK(!c.debug, "flags: rerand.debug=0 is off");
	c = parse("root=/dev/vda");
	T_OK(!c.has_simd_max, "flags: no rerand.simd, no limit on the copy width");
	c = parse("rerand.simd=sse2");
	T_OK(c.has_simd_max && c.simd_max == RR_SIMD_SSE2, "flags: rerand.simd=sse2");
	c = parse("rerand.simd=avx2 rerand.simd=none");
	T_OK(c.has_simd_max && c.simd_max == RR_SIMD_NONE, "flags: rerand.simd=none, the last one wins");
	c = parse("rerand.simd=avx512 rerand.simd rerand.simd=");
	T_OK(!c.has_simd_max, "flags: unknown or empty rerand.simd values are ignored");
	c = parse("\tnokaslr\n");
	T_OK(c.nokaslr, "flags: tabs and newlines separate words");
	c = parse("quiet -- nokaslr rerand.debug");
	T_OK(!c.nokaslr && !c.debug, "flags: words after -- belong to init");
	c = parse("");
	T_OK(!c.nokaslr && !c.mem_limit, "flags: empty line");
	struct rr_cmdline z;
	memset(&z, 0x5a, sizeof(z));
	rr_cmdline_parse(NULL, 100, &z);
	T_OK(!z.nokaslr && !z.nr_memmap && !z.memmap_overflow, "flags: NULL line gives a cleared result");
}

static void test_mem(void)
{
	struct rr_cmdline c;

	c = parse("mem=512M");
	T_EQ_U64(c.mem_limit, 512 * MIB, "mem=512M");
	c = parse("mem=0x20000000");
	T_EQ_U64(c.mem_limit, 512 * MIB, "mem=0x20000000 (hex)");
	c = parse("mem=010k");
	T_EQ_U64(c.mem_limit, 8 * 1024, "mem=010k (octal, lower-case suffix)");
	c = parse("mem=2g mem=768M");
	T_EQ_U64(c.mem_limit, 768 * MIB, "two mem=: the smaller wins");
	c = parse("mem=768M mem=2G");
	T_EQ_U64(c.mem_limit, 768 * MIB, "two mem=: the smaller wins in either order");
	c = parse("mem=nopentium");
	T_EQ_U64(c.mem_limit, 0, "mem=nopentium is not a limit");
	c = parse("mem=0 mem=junk memmap=1M$2G");
	T_OK(c.mem_limit == 0 && c.nr_memmap == 1, "mem=0 and mem=junk are ignored, parsing goes on");
	c = parse("mem=1T");
	T_EQ_U64(c.mem_limit, 1ULL << 40, "mem=1T");
	c = parse("mem=99999999999999999999999");
	T_EQ_U64(c.mem_limit, UINT64_MAX, "mem= overflowing saturates");
	c = parse("mem=16E");
	T_EQ_U64(c.mem_limit, UINT64_MAX, "mem=16E (2^64) saturates");
	c = parse("memmap=3G");
	T_EQ_U64(c.mem_limit, 3 * GIB, "memmap=nn alone is a limit");
	c = parse("mem=1G -- mem=512M");
	T_EQ_U64(c.mem_limit, GIB, "mem= after -- is ignored");
}

static void test_memmap(void)
{
	struct rr_cmdline c;

	c = parse("memmap=64M$0x10000000");
	T_OK(c.nr_memmap == 1 && c.memmap[0].start == 0x10000000 && c.memmap[0].end == 0x10000000 + 64 * MIB,
	     "memmap=64M$0x10000000");
	c = parse("memmap=64M#256M memmap=1G!4G");
	T_OK(c.nr_memmap == 2 && c.memmap[0].start == 256 * MIB && c.memmap[1].start == 4 * GIB &&
	     c.memmap[1].end == 5 * GIB, "memmap # and ! in two words");
	c = parse("memmap=4M@16M memmap=exactmap");
	T_OK(c.nr_memmap == 0 && c.mem_limit == 0 && !c.memmap_overflow, "memmap @ and exactmap are ignored");
	c = parse("memmap=exactmap,64M$1G");
	T_OK(c.nr_memmap == 0, "memmap=exactmap ends its word as in kaslr.c");
	c = parse("memmap=1M$100M,junk,1M$200M");
	T_OK(c.nr_memmap == 1 && c.memmap[0].start == 100 * MIB, "a malformed item ends the word");
	c = parse("memmap=2M%0x30000000-1+12");
	T_OK(c.nr_memmap == 1 && c.memmap[0].start == 0x30000000 && c.memmap[0].end == 0x30200000,
	     "memmap %% (retype) is kept clear");
	c = parse("memmap=64M$0");
	T_OK(c.nr_memmap == 1 && c.memmap[0].start == 0 && c.memmap[0].end == 64 * MIB && c.mem_limit == 0,
	     "memmap=64M$0 avoids [0, 64M), not a limit");
	c = parse("memmap=1M$1G,1M$2G,1M$3G,1M$4G");
	T_OK(c.nr_memmap == 4 && c.nr_memmap_seen == 4 && !c.memmap_overflow, "four memmap regions fit");
	c = parse("memmap=1M$1G,1M$2G,1M$3G,1M$4G,1M$5G");
	T_OK(c.nr_memmap == 4 && c.memmap_overflow, "a fifth region in the same word overflows");
	c = parse("memmap=1M$1G,1M$2G memmap=1M$3G memmap=1M$4G memmap=1M$5G");
	T_OK(c.memmap_overflow && c.nr_memmap == 4 && c.nr_memmap_seen == 5,
	     "a fifth region in another word overflows too, and is counted");
	c = parse("memmap=1M$1G memmap=1M$2G memmap=1M@3G memmap=0$4G memmap=1M$5G memmap=1M$6G "
		  "memmap=1M$7G memmap=1M$8G memmap=1M$9G");
	T_OK(c.memmap_overflow && c.nr_memmap == 4 && c.nr_memmap_seen == 7,
	     "nr_memmap_seen counts every avoided region past the fourth, not @ or empty ones");
	c = parse("memmap=1M$1G,1M$2G,1M$3G,1M$4G memmap=8G");
	T_OK(!c.memmap_overflow && c.mem_limit == 8 * GIB, "a limit after four regions is no overflow");
	c = parse("memmap=0$1G");
	T_OK(c.nr_memmap == 0 && !c.memmap_overflow, "an empty region is not recorded");
	c = parse("memmap=16E$1G");
	T_OK(c.nr_memmap == 1 && c.memmap[0].end == UINT64_MAX, "region end saturates at 2^64-1");
}

static void test_huge(void)
{
	struct rr_cmdline c;

	c = parse("hugepagesz=1G hugepages=4");
	T_EQ_U64(c.hugepages_1g, 4, "hugepagesz=1G hugepages=4");
	c = parse("hugepagesz=1024M hugepages=3");
	T_EQ_U64(c.hugepages_1g, 3, "hugepagesz=1024M counts as 1G");
	c = parse("hugepages=4 hugepagesz=1G");
	T_EQ_U64(c.hugepages_1g, 0, "hugepages before hugepagesz=1G does not count");
	c = parse("hugepagesz=2M hugepages=100");
	T_EQ_U64(c.hugepages_1g, 0, "2 MiB pages are not reserved");
	c = parse("hugepagesz=1G hugepages=4 hugepagesz=2M hugepages=512");
	T_EQ_U64(c.hugepages_1g, 4, "mixed sizes keep the 1G count");
	c = parse("hugepagesz=1G hugepages=0:2,1:3");
	T_EQ_U64(c.hugepages_1g, 5, "per-node counts are summed");
	c = parse("default_hugepagesz=1G hugepages=5");
	T_EQ_U64(c.hugepages_1g, 5, "default_hugepagesz=1G applies to a bare hugepages=");
	c = parse("hugepages=6 default_hugepagesz=1G");
	T_EQ_U64(c.hugepages_1g, 6, "...in either order");
	c = parse("default_hugepagesz=2M hugepages=6");
	T_EQ_U64(c.hugepages_1g, 0, "default 2M pages are not reserved");
	c = parse("hugepagesz=1G hugepages=0x10");
	T_EQ_U64(c.hugepages_1g, 16, "hugepages count in hex");
}

static void test_elfcorehdr(void)
{
	struct rr_cmdline c;

	c = parse("elfcorehdr=0x1000000");
	T_OK(c.has_elfcorehdr && c.elfcorehdr.start == 16 * MIB && c.elfcorehdr.end == 17 * MIB,
	     "elfcorehdr=addr avoids a conservative 1 MiB");
	c = parse("elfcorehdr=64K@0x2000000");
	T_OK(c.has_elfcorehdr && c.elfcorehdr.start == 32 * MIB && c.elfcorehdr.end == 32 * MIB + 65536,
	     "elfcorehdr=size@addr");
	c = parse("elfcorehdr=876M");
	T_OK(c.has_elfcorehdr && c.elfcorehdr.start == 876 * MIB, "elfcorehdr with a suffix");
	c = parse("elfcorehdr=junk elfcorehdr=12@");
	T_OK(!c.has_elfcorehdr, "malformed elfcorehdr is ignored");
}

static void test_quotes(void)
{
	struct rr_cmdline c;

	c = parse("foo=\"bar memmap=1M$2G nokaslr\" mem=1G");
	T_OK(c.nr_memmap == 0 && !c.nokaslr && c.mem_limit == GIB, "words inside a quoted value are not options");
	c = parse("memmap=\"64M$0x40000000\"");
	T_OK(c.nr_memmap == 1 && c.memmap[0].start == 0x40000000, "quotes around a value are dropped");
	c = parse("\"memmap=64M$0x40000000\" nokaslr");
	T_OK(c.nr_memmap == 1 && c.memmap[0].end == 0x44000000 && c.nokaslr, "a quoted whole word is parsed");
	c = parse("\"nokaslr\"");
	T_OK(c.nokaslr, "a quoted bare word");
	c = parse("mem=\"512M");
	T_EQ_U64(c.mem_limit, 512 * MIB, "an unterminated quote on a value");
	c = parse("a=\" b=\" nokaslr");
	T_OK(c.nokaslr, "a quote in a value ends at the next quote");
	c = parse("\" \" \"\" = =\" mem=1G");
	T_EQ_U64(c.mem_limit, 0, "stray quotes swallow the rest as one word");
}

static void test_bounds(void)
{
	struct rr_cmdline c;
	const char s[] = "mem=1G\0nokaslr";

	rr_cmdline_parse(s, sizeof(s), &c);
	T_OK(c.mem_limit == GIB && !c.nokaslr, "a NUL ends the line before len");
	rr_cmdline_parse("nokaslr", 5, &c);
	T_OK(!c.nokaslr, "len cuts a word short");
	rr_cmdline_parse("mem=1G", 5, &c);
	T_EQ_U64(c.mem_limit, 1, "len cuts a value short (mem=1)");
	rr_cmdline_parse("mem=1G", 0, &c);
	T_EQ_U64(c.mem_limit, 0, "len 0 parses nothing");
}

int main(void)
{
	test_flags();
	test_mem();
	test_memmap();
	test_huge();
	test_elfcorehdr();
	test_quotes();
	test_bounds();
	return t_done();
}
