/* SPDX-License-Identifier: GPL-2.0-only */
/* rerand: build, inspect, stage and verify rerandomizing kernel images. */
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

#define RERAND_VERSION "0.1"

void cli_err(const char *fmt, ...)
{
	va_list ap;

	fputs("rerand: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void cli_json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", (unsigned char)*s);
		else
			putchar(*s);
	}
	putchar('"');
}

static void usage(FILE *f)
{
	fputs("Usage: rerand COMMAND [OPTIONS]\n"
	      "\n"
	      "Keep the kernel at a fresh, secret base across kexec reboots.\n"
	      "\n"
	      "Commands:\n"
	      "  image KERNEL -o IMAGE [--relocs FILE] [--codec lz4|none] [--lz4-level N]\n"
	      "        Turn a bzImage (any payload codec) or a vmlinux plus its relocation\n"
	      "        table into a rerandomizing image.\n"
	      "  inspect FILE [--json]\n"
	      "        Describe a kernel or an image.\n"
	      "  load IMAGE [--initrd FILE] [--append S | --reuse-cmdline] [--crash]\n"
	      "       [--file-syscall] [--kexec PATH] [--uki FILE] [--sha256 HEX]\n"
	      "        Stage IMAGE with kexec-tools (kexec_file_load and signed images only\n"
	      "        under lockdown), from a sealed memfd.\n"
	      "  verify [--json] [--setup-data DIR]\n"
	      "        Check that this boot was randomized (exit 0), was not (1), or\n"
	      "        has no rerand record (2).\n"
	      "  status [--json]\n"
	      "        Ask rerandd for the layout age, the next rerandomization and why,\n"
	      "        the last verification, entropy, failures and the staged image.\n"
	      "  now [--wait [--timeout SECONDS]] | hold | release\n"
	      "        Ask rerandd to rerandomize now (--wait: until the reboot is under\n"
	      "        way); block its reboots; lift the block.\n"
	      "  due\n"
	      "        Exit 0 when a rerandomization is due now, windows aside (kured's\n"
	      "        --reboot-sentinel-command), 1 when not, 3 when rerandd cannot say.\n"
	      "  fleet status [--json] | fleet release HOST\n"
	      "        Through rerandd: the fleet group's holders and free slots; free a\n"
	      "        stuck etcd slot of HOST.\n"
	      "  entropy [IMAGE | --kernel K] [--memmap SOURCE] [--cmdline S] [--json]\n"
	      "        Bits of placement on a memory map: rerand against the stock rule.\n"
	      "\n"
	      "Options: -h, --help   this text;  -V, --version   the version.\n"
	      "See rerand(1).\n", f);
}

int main(int argc, char **argv)
{
	static const struct { const char *name; int (*fn)(int, char **); } cmds[] = {
		{ "image", cmd_image }, { "inspect", cmd_inspect },
		{ "load", cmd_load }, { "verify", cmd_verify },
		{ "status", cmd_status }, { "now", cmd_now }, { "due", cmd_due },
		{ "hold", cmd_hold }, { "release", cmd_release },
		{ "entropy", cmd_entropy }, { "fleet", cmd_fleet },
	};

	/* Kernel-sized buffers (4 MiB and up) straight from mmap, zeroed by the
	 * kernel and open to huge pages (rr_mem_thp), never from a heap that
	 * glibc's sliding threshold grew after the first free: calloc() would
	 * clear those by hand, a page fault per 4 KiB.  The 1 MiB LZ4 chunk
	 * blocks stay in the heap, which keeps their pages for the next chunk. */
	mallopt(M_MMAP_THRESHOLD, 4 << 20);
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("rerand %s\n", RERAND_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	cli_err("unknown command '%s' (see rerand --help)", argv[1]);
	return EXIT_USAGE;
}
