/* SPDX-License-Identifier: GPL-2.0-only */
/* `rerand entropy`: how many bits of placement a kernel gets on a memory map,
 * counted by the stage's own selection code, against the stock rule. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "bootparams.h"
#include "cleanup.h"
#include "cli.h"
#include "cmdtab.h"
#include "image.h"
#include "jsonout.h"
#include "kernel.h"
#include "memmap_src.h"
#include "select.h"
#include "status.h"
#include "util.h"

#define MAX_KERNEL_FILE   (512u << 20)
#define STOCK_KEXEC_MIN   (512ULL << 20)   /* choose_random_location: min(load, 512 MiB) */
#define MIB               (1ULL << 20)

static const char entropy_text[] =
"IMAGE is a rerand image or a kernel (its in-memory size is used); default\n"
"/boot/vmlinuz-$(uname -r).  --memmap SOURCE: " RR_MSRC_LIVE " (default), a saved\n"
"copy of that tree, a /proc/iomem copy (taken as root), or dmesg's e820 table.\n"
"--cmdline honours mem=, memmap=, hugepagesz=1G hugepages=N, elfcorehdr=, nokaslr.\n"
"\n"
"Assumptions: the map is static, so the figures are an upper bound.  At kexec\n"
"time the stage also keeps clear its own image, the initrd, boot_params, the\n"
"command line and every setup_data node, which no saved map can know; each\n"
"costs at most a few slots.  4-level paging (physical end below 64 TiB).\n"
"Stock rule after a kexec: the kernel is loaded high, so the decompressor's\n"
"physical minimum min(load address, 512 MiB) is 512 MiB; on UEFI kexec passes\n"
"only the EFI runtime map, the decompressor finds no conventional memory in it\n"
"and leaves the kernel where it was loaded (1 physical slot, 0 bits).\n";

static const struct cli_opt entropy_opts[] = {
	{ "kernel", 0, required_argument, "KERNEL", 'k', "a bzImage (any codec) instead of IMAGE",
	  "@file" },
	{ "size", 0, required_argument, "BYTES", 's',
	  "the in-memory size directly (as inspect prints it); K, M, G suffixes: KiB, MiB, GiB",
	  NULL },
	{ "memmap", 0, required_argument, "SOURCE", 'm', "the memory map to count on", "@file" },
	{ "cmdline", 0, required_argument, "CMDLINE", 'c',
	  "the next kernel's command line (default /proc/cmdline)", NULL },
	{ "firmware", 0, required_argument, "bios|uefi", 'f',
	  "the stock rule's firmware (default: detected from SOURCE or " RR_MSRC_EFI_DIR ")",
	  "bios uefi" },
	CLI_JSON_OPT,
	{ 0 }
};

const struct cli_cmd cli_entropy = {
	.name = "entropy", .synopsis = "[IMAGE | --kernel KERNEL | --size BYTES]", .fn = cmd_entropy,
	.opts = entropy_opts, .text = entropy_text, .operand_complete = "@file",
	.summary = "Count the placements a kernel can take on a memory map, with the stage's\n"
		   "selection code, against the stock decompressor's rule after a kexec.",
};

/* BYTES, or N with a K, M, G or T suffix (powers of 1024; "KiB" and "K"
 * alike): what docs/performance.md and people write. */
static int parse_size(const char *s, uint64_t *ret)
{
	static const char units[] = "KMGT";
	const char *u;
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || s[0] == '-' || v == 0)
		return -EINVAL;
	if (*end) {
		if (!(u = strchr(units, *end)) || !*end ||
		    (end[1] && strcmp(end + 1, "iB") && strcmp(end + 1, "B")))
			return -EINVAL;
		for (long i = 0; i <= u - units; i++) {
			if (v > UINT64_MAX / 1024)
				return -ERANGE;
			v *= 1024;
		}
	}
	*ret = v;
	return 0;
}

struct figures {
	uint64_t phys, virt;      /* slot counts */
	bool fixed_phys;          /* physical base not randomized (1 place) */
	bool fixed_virt;
};

static double bits_of(uint64_t n)
{
	return n > 1 ? log2((double)n) : 0.0;
}

static double phys_bits(const struct figures *f)
{
	return f->fixed_phys ? 0.0 : bits_of(f->phys);
}

static double virt_bits(const struct figures *f)
{
	return f->fixed_virt ? 0.0 : bits_of(f->virt);
}

/* What the stage does (kexec/stage/stage.c): the cmdline applied to the map,
 * slots from 16 MiB up, virtual offsets in [16 MiB, 1 GiB - size]. */
static void rerand_figures(const struct rr_memmap *map, const struct rr_cmdline *cl,
			   uint64_t mem_size, uint64_t min_addr, struct figures *ret)
{
	static struct rr_memmap m;   /* 6 KiB: not on the stack */
	struct rr_select_params sp = {
		.size = RR_ALIGN_UP(mem_size, RERAND_SLOT_ALIGN),
		.min_addr = min_addr,
		.max_addr = RERAND_MAX_PHYS_4LEVEL,
		.align = RERAND_SLOT_ALIGN,
	};

	m = *map;
	rr_memmap_apply_cmdline(&m, cl);
	ret->phys = rr_phys_slot_count(&m, &sp);
	ret->virt = rr_virt_slot_count(mem_size);
	/* nokaslr, or nothing fits: the lowest place that fits, one choice. */
	ret->fixed_phys = cl->nokaslr || ret->phys == 0;
	ret->fixed_virt = cl->nokaslr || ret->virt == 0;
}

static int read_cmdline(const char *path, char *buf, size_t cap, struct rr_err *e)
{
	_cleanup_free_ char *text = NULL;
	size_t n;
	int r = rr_read_text(path, cap - 1, &text, e);

	if (r < 0)
		return r;
	n = strlen(text);
	memcpy(buf, text, n + 1);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return 0;
}

/* In-memory size from an image header or a kernel's PT_LOAD extent. */
static int kernel_size(const char *path, bool must_be_kernel, uint64_t *ret, struct rr_err *e)
{
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len;
	int r;

	r = rr_read_file(path, MAX_KERNEL_FILE, &buf, &len, e);
	if (r < 0)
		return r;
	if (!must_be_kernel && rr_image_probe(buf, len)) {
		struct rr_image im;

		r = rr_image_parse(buf, len, path, &im, e);
		if (r == 0)
			*ret = im.hdr.mem_size;
	} else {
		struct rr_kernel k;

		r = rr_kernel_load_mem(buf, len, path, NULL, 0, NULL, &k, e);
		if (r == 0) {
			*ret = k.elf.mem_size;
			rr_kernel_free(&k);
		}
	}
	return r;
}

static bool is_dir(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Which stock rule applies.  A copy from another machine says nothing about
 * this one, so /sys/firmware/efi is consulted only for the live map. */
static enum rr_msrc_firmware detect_firmware(const char *src, const struct rr_msrc_info *info,
					     const char **how)
{
	char up[4200];

	if (!src) {
		*how = RR_MSRC_EFI_DIR;
		return is_dir(RR_MSRC_EFI_DIR) ? RR_FW_UEFI : RR_FW_BIOS;
	}
	if (info->firmware_hint != RR_FW_UNKNOWN) {
		*how = "an \"efi: EFI v\" line in the source";
		return info->firmware_hint;
	}
	if (info->format == RR_MSRC_SYSFS) {
		/* A copy of the whole /sys/firmware keeps efi/ beside memmap/. */
		snprintf(up, sizeof(up), "%s/../efi", src);
		if (is_dir(up)) {
			*how = "an efi/ directory beside the saved tree";
			return RR_FW_UEFI;
		}
	}
	*how = "assumed: the source shows no sign of EFI (use --firmware uefi)";
	return RR_FW_BIOS;
}

static struct json_object *json_fig(const struct figures *f)
{
	struct json_object *o = json_object_new_object();

	rr_json_add_u64(o, "phys_slots", f->phys);
	rr_json_add_u64(o, "virt_slots", f->virt);
	rr_json_add_bool(o, "phys_randomized", !f->fixed_phys);
	rr_json_add_bool(o, "virt_randomized", !f->fixed_virt);
	rr_json_add_fixed(o, "phys_bits", phys_bits(f), 2);
	rr_json_add_fixed(o, "virt_bits", virt_bits(f), 2);
	rr_json_add_fixed(o, "total_bits", phys_bits(f) + virt_bits(f), 2);
	return o;
}

static void text_fig(const char *name, const struct figures *f)
{
	char pc[32], vc[32];

	snprintf(pc, sizeof(pc), "%llu%s", (unsigned long long)f->phys, f->fixed_phys ? "*" : "");
	snprintf(vc, sizeof(vc), "%llu%s", (unsigned long long)f->virt, f->fixed_virt ? "*" : "");
	printf("  %-22s %12s %6.1f %12s %6.1f %7.1f\n", name, pc, phys_bits(f), vc, virt_bits(f),
	       phys_bits(f) + virt_bits(f));
}

/* The question asked, and the answer counted. */
struct entropy {
	const char *kpath, *src, *cmdline, *fw_how, *cmdline_from, *size_from;
	bool kpath_is_kernel;
	enum rr_msrc_firmware fw;
	int json;
	uint64_t mem_size;
	char cmdbuf[RR_CMDLINE_MAX + 1], defkernel[300];
	struct rr_msrc_info info;
	struct rr_cmdline cl;
	struct figures rr, stock;
};

/* -1 to go on, or the exit status (usage error, --help). */
static int entropy_parse(struct entropy *q, int argc, char **argv)
{
	int c;

	while ((c = cli_getopt(&cli_entropy, argc, argv)) != -1) {
		switch (c) {
		case 'k': q->kpath = optarg; q->kpath_is_kernel = true; break;
		case 'm': q->src = optarg; break;
		case 'c': q->cmdline = optarg; break;
		case 'j':
			q->json = cli_json_mode(optarg);
			if (q->json < 0)
				return cli_usage_error(&cli_entropy, "--json=%s: want pretty or short",
						       optarg);
			break;
		case 's':
			if (parse_size(optarg, &q->mem_size) < 0)
				return cli_usage_error(&cli_entropy, "--size: '%s' is not a positive "
						       "byte count (BYTES, or N with K, M or G)", optarg);
			break;
		case 'f':
			if (!strcmp(optarg, "bios"))
				q->fw = RR_FW_BIOS;
			else if (!strcmp(optarg, "uefi"))
				q->fw = RR_FW_UEFI;
			else {
				cli_err("--firmware: '%s' is not bios or uefi", optarg);
				return EXIT_USAGE;
			}
			break;
		case CLI_HELP:
			return 0;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind < argc - 1 || (optind == argc - 1 && (q->kpath || q->mem_size)) ||
	    (q->kpath && q->mem_size)) {
		return cli_usage_error(&cli_entropy, "one of IMAGE, --kernel KERNEL and --size BYTES, "
				       "not more");
	}
	if (optind == argc - 1)
		q->kpath = argv[optind];
	return -1;
}

/* The in-memory size: --size, or IMAGE's or --kernel's, or the running
 * kernel's file.  0, or -1 (reported). */
static int entropy_size(struct entropy *q)
{
	struct rr_err e;

	if (!q->kpath && !q->mem_size) {
		struct utsname u;

		if (uname(&u) < 0) {
			cli_err("entropy: uname: %s", strerror(errno));
			return -1;
		}
		snprintf(q->defkernel, sizeof(q->defkernel), "/boot/vmlinuz-%s", u.release);
		if (access(q->defkernel, R_OK) < 0) {
			cli_err("entropy: no kernel given and %s is not readable (%s): pass IMAGE, "
				"--kernel or --size", q->defkernel, strerror(errno));
			return -1;
		}
		q->kpath = q->defkernel;
	}
	if (q->kpath) {
		q->size_from = q->kpath;
		if (kernel_size(q->kpath, q->kpath_is_kernel, &q->mem_size, &e) < 0) {
			cli_err("%s", e.msg);
			return -1;
		}
	}
	return 0;
}

/* The map, the firmware and the command line read, and both rules counted
 * on them: 0, or -1 (reported). */
static int entropy_count(struct entropy *q)
{
	static struct rr_memmap map;
	struct rr_err e;

	rr_memmap_init(&map);
	if (rr_msrc_read(q->src, &map, &q->info, &e) < 0) {
		cli_err("%s", e.msg);
		return -1;
	}
	if (q->fw == RR_FW_UNKNOWN)
		q->fw = detect_firmware(q->src, &q->info, &q->fw_how);
	if (!q->cmdline) {
		q->cmdline_from = "/proc/cmdline";
		if (read_cmdline(q->cmdline_from, q->cmdbuf, sizeof(q->cmdbuf), &e) < 0) {
			cli_err("%s (pass --cmdline)", e.msg);
			return -1;
		}
		q->cmdline = q->cmdbuf;
	}
	rr_cmdline_parse(q->cmdline, strlen(q->cmdline), &q->cl);

	rerand_figures(&map, &q->cl, q->mem_size, RERAND_MIN_PHYS, &q->rr);
	/* The stock decompressor after a kexec: same avoid rules from the
	 * command line, but its floor is 512 MiB, and on UEFI it finds no
	 * conventional memory at all in the runtime-only EFI map. */
	rerand_figures(&map, &q->cl, q->mem_size, STOCK_KEXEC_MIN, &q->stock);
	if (q->fw == RR_FW_UEFI) {
		q->stock.phys = 1;
		q->stock.fixed_phys = true;
	}
	return 0;
}

static void entropy_print_json(const struct entropy *q)
{
	struct json_object *o = json_object_new_object(), *m = json_object_new_object();

	rr_json_add_str(m, "source", q->src ? q->src : RR_MSRC_LIVE);
	rr_json_add_str(m, "format", rr_msrc_format_name(q->info.format));
	rr_json_add_int(m, "entries", q->info.nr_entries);
	rr_json_add_int(m, "ram_entries", q->info.nr_ram);
	rr_json_add_u64(m, "ram_bytes", q->info.ram_bytes);
	rr_json_add(o, "memmap", m);
	rr_json_add_str(o, "firmware", q->fw == RR_FW_UEFI ? "uefi" : "bios");
	rr_json_add_str(o, "firmware_from", q->fw_how);
	rr_json_add_str(o, "kernel", q->size_from);
	rr_json_add_u64(o, "mem_size", q->mem_size);
	rr_json_add_u64(o, "slot_size", RR_ALIGN_UP(q->mem_size, RERAND_SLOT_ALIGN));
	rr_json_add_str(o, "cmdline_from", q->cmdline_from);
	rr_json_add_bool(o, "nokaslr", q->cl.nokaslr);
	rr_json_add(o, "rerand", json_fig(&q->rr));
	rr_json_add(o, "stock", json_fig(&q->stock));
	rr_json_add_str(o, "stock_rule", q->fw == RR_FW_UEFI ? "uefi-runtime-map" : "bios-min-512m");
	rr_json_add_hex(o, "stock_min_addr", STOCK_KEXEC_MIN);
	rr_json_add_bool(o, "upper_bound", true);
	cli_json_print(o, q->json);
}

static void entropy_print_text(const struct entropy *q)
{
	printf("memory map:   %s (%s), %u entries, %u usable, %.1f MiB\n",
	       q->src ? q->src : RR_MSRC_LIVE, rr_msrc_format_name(q->info.format),
	       q->info.nr_entries, q->info.nr_ram, q->info.ram_bytes / (double)MIB);
	printf("firmware:     %s (%s)\n", q->fw == RR_FW_UEFI ? "UEFI" : "BIOS", q->fw_how);
	printf("kernel:       %s: in-memory size %llu bytes (%.1f MiB), %llu MiB per slot\n",
	       q->size_from, (unsigned long long)q->mem_size, q->mem_size / (double)MIB,
	       (unsigned long long)(RR_ALIGN_UP(q->mem_size, RERAND_SLOT_ALIGN) / MIB));
	printf("command line: %s%s\n", q->cmdline_from, q->cl.nokaslr ? " (nokaslr)" : "");
	printf("\n  %-22s %12s %6s %12s %6s %7s\n", "", "phys slots", "bits", "virt slots", "bits",
	       "total");
	text_fig("rerand", &q->rr);
	text_fig("stock after kexec", &q->stock);
	printf("\nstock rule:   %s\n", q->fw == RR_FW_UEFI
	       ? "UEFI: kexec passes only the EFI runtime map; the decompressor finds no\n"
		 "              conventional memory and keeps the load address (1 physical slot)"
	       : "BIOS: physical minimum min(load address, 512 MiB) = 512 MiB after a kexec\n"
		 "              (kexec loads the kernel high)");
	printf("* = not randomized (nokaslr, or no slot fits: the lowest place that fits)\n");
	printf("These are upper bounds: at kexec time the stage also keeps clear its own\n"
	       "image, the initrd, boot_params and setup_data, which a static map cannot know.\n");
}

int cmd_entropy(int argc, char **argv)
{
	/* static: the command line buffer is 4 KiB and more */
	static struct entropy q;
	int r;

	q = (struct entropy){ .fw_how = "--firmware", .cmdline_from = "--cmdline",
			      .size_from = "--size", .fw = RR_FW_UNKNOWN, .json = CLI_JSON_NONE };
	r = entropy_parse(&q, argc, argv);
	if (r >= 0)
		return r;
	if (entropy_size(&q) < 0 || entropy_count(&q) < 0)
		return EXIT_FAILURE_RR;
	if (q.json)
		entropy_print_json(&q);
	else
		entropy_print_text(&q);
	return 0;
}
