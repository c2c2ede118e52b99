/* SPDX-License-Identifier: GPL-2.0-only */
/* `rerand inspect`: what a kernel or rerand image holds, and who signed it. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmdtab.h"
#include "image.h"
#include "kernel.h"
#include "pesig.h"
#include "select.h"
#include "status.h"
#include "uki.h"

#define MAX_KERNEL_FILE (512u << 20)

/* Closes the JSON object the kernel or image printer opened.  The signer is
 * named only when the signature verifies: a name read from a signature that
 * does not is whatever whoever changed the file wanted it to be. */
static void print_sig(const struct rr_pe_sig *sig, bool json)
{
	const char *more = sig->nr_signatures > 1 ? ", and more signatures the kernel will not "
						    "accept" : "";

	if (json) {
		printf(",\"pe\":%s,\"signed\":%s,\"signatures\":%u,\"signature\":\"%s\"",
		       sig->is_pe ? "true" : "false", sig->is_signed ? "true" : "false",
		       sig->nr_signatures, rr_pe_sig_state(sig));
		if (sig->verified) {
			printf(",\"signature_digest\":\"%s\",\"signer_subject\":", sig->digest);
			cli_json_str(sig->subject);
			printf(",\"signer_issuer\":");
			cli_json_str(sig->issuer);
		} else if (sig->is_signed) {
			printf(",\"signature_error\":");
			cli_json_str(sig->why);
		}
		printf("}\n");
		return;
	}
	if (sig->verified)
		printf("  signature:      signed by \"%s\" (issuer \"%s\"), verifies with its own "
		       "certificate (%s; trust is the kernel's keyrings')%s\n", sig->subject,
		       sig->issuer, sig->digest, more);
	else if (sig->is_signed)
		printf("  signature:      signature does not verify: %s; signer not shown%s\n",
		       sig->why, more);
	else
		printf("  signature:      none (%s)\n", sig->is_pe ? "unsigned PE image" :
		       "not a PE image");
}

static bool is_bzimage_or_elf(const uint8_t *buf, size_t len)
{
	return (len >= 0x206 && !memcmp(buf + 0x202, "HdrS", 4)) ||
	       (len >= 4 && !memcmp(buf, "\177ELF", 4));
}

static void print_kernel(const char *path, const struct rr_kernel *k, bool json)
{
	const struct rr_vmlinux *v = &k->elf;
	uint64_t vs = rr_virt_slot_count(v->mem_size);
	char vb[16];

	rr_bits_text(vs, vb, sizeof(vb));
	if (json) {
		printf("{\"file\":");
		cli_json_str(path);
		printf(",\"type\":\"%s\",\"codec\":\"%s\",\"file_size\":\"0x%zx\",",
		       k->is_bzimage ? "bzImage" : "vmlinux", rr_kcodec_name(k->codec), k->file_size);
		if (k->is_bzimage) {
			printf("\"protocol\":\"%u.%02u\",\"xloadflags\":%u,\"payload_size\":\"0x%llx\","
			       "\"kernel_version\":", k->bz.version >> 8, k->bz.version & 0xff,
			       k->bz.xloadflags, (unsigned long long)k->bz.payload_length);
			cli_json_str(k->bz.kernel_version);
			putchar(',');
		}
		/* addresses and 64-bit sizes as "0x..." strings: a JSON number
		 * past 2^53 loses digits in jq and JavaScript */
		printf("\"decoded_size\":\"0x%zx\",\"mem_size\":\"0x%llx\",\"entry_offset\":\"0x%llx\","
		       "\"nr_segments\":%u,\"segments\":[", k->payload_len,
		       (unsigned long long)v->mem_size, (unsigned long long)(v->entry - v->link_paddr),
		       v->nr_seg);
		for (unsigned i = 0; i < v->nr_seg; i++)
			printf("%s{\"offset\":\"0x%llx\",\"filesz\":\"0x%llx\",\"memsz\":\"0x%llx\","
			       "\"paddr\":\"0x%llx\",\"vaddr\":\"0x%llx\"}", i ? "," : "",
			       (unsigned long long)(v->seg[i].paddr - v->link_paddr),
			       (unsigned long long)v->seg[i].filesz, (unsigned long long)v->seg[i].memsz,
			       (unsigned long long)v->seg[i].paddr, (unsigned long long)v->seg[i].vaddr);
		printf("],\"reloc_layout\":%u,\"relocs64\":%zu,\"inverse32\":%zu,\"relocs32\":%zu,"
		       "\"virt_slots\":%llu,\"virt_bits\":%s", k->relocs.layout,
		       k->relocs.nr_reloc64, k->relocs.nr_inverse32, k->relocs.nr_reloc32,
		       (unsigned long long)vs, vb);
		return;
	}
	printf("%s: %s kernel\n", path, k->is_bzimage ? "bzImage" : "vmlinux");
	if (k->is_bzimage) {
		printf("  version:        %s\n", k->bz.kernel_version[0] ? k->bz.kernel_version : "(none)");
		printf("  boot protocol:  %u.%02u, xloadflags 0x%x (%s 5-level paging)\n",
		       k->bz.version >> 8, k->bz.version & 0xff, k->bz.xloadflags,
		       k->bz.xloadflags & RERAND_XLF_5LEVEL ? "supports" : "no");
		printf("  payload:        %s, %llu bytes -> %zu bytes\n", rr_kcodec_name(k->codec),
		       (unsigned long long)k->bz.payload_length, k->payload_len);
	}
	printf("  in-memory size: %llu bytes (%.1f MiB)\n", (unsigned long long)v->mem_size,
	       v->mem_size / 1048576.0);
	printf("  entry:          link base + 0x%llx\n", (unsigned long long)(v->entry - v->link_paddr));
	printf("  segments:       %u\n", v->nr_seg);
	for (unsigned i = 0; i < v->nr_seg; i++)
		printf("    paddr 0x%08llx vaddr 0x%016llx filesz %10llu memsz %10llu\n",
		       (unsigned long long)v->seg[i].paddr, (unsigned long long)v->seg[i].vaddr,
		       (unsigned long long)v->seg[i].filesz, (unsigned long long)v->seg[i].memsz);
	printf("  relocations:    %u lists: %zu 64-bit, %zu inverse 32-bit, %zu 32-bit\n",
	       k->relocs.layout, k->relocs.nr_reloc64, k->relocs.nr_inverse32, k->relocs.nr_reloc32);
	printf("  virtual slots:  %llu (%s bits)\n", (unsigned long long)vs, vb);
}

static void print_image(const char *path, size_t len, const struct rr_image *im, bool json)
{
	const struct rerand_image_header *h = &im->hdr;
	uint64_t vs = rr_virt_slot_count(h->mem_size), stored = 0, decoded = 0;
	char vb[16], stage_hex[65];

	for (unsigned i = 0; i < h->nr_segments; i++) {
		stored += h->seg[i].data_size;
		decoded += h->seg[i].file_size;
	}
	rr_bits_text(vs, vb, sizeof(vb));
	for (unsigned i = 0; i < 32; i++)
		snprintf(stage_hex + 2 * i, 3, "%02x", h->stage_sha256[i]);
	if (json) {
		printf("{\"file\":");
		cli_json_str(path);
		printf(",\"type\":\"rerand-image\",\"stage_sha256\":\"%s\","
		       "\"xlf_5level\":%s,\"signature_size\":%u,", stage_hex,
		       im->xloadflags & RERAND_XLF_5LEVEL ? "true" : "false", im->cert_size);
		printf("\"image_version\":%u,\"kernel_version\":", h->version);
		cli_json_str(im->kernel_version);
		printf(",\"protocol\":\"%u.%02u\",\"xloadflags\":%u,"
		       "\"file_size\":\"0x%zx\",\"init_size\":%u,\"kernel_alignment\":%u,\"codec\":\"%s\","
		       "\"stored_size\":\"0x%llx\",\"decoded_size\":\"0x%llx\",\"mem_size\":\"0x%llx\","
		       "\"entry_offset\":\"0x%llx\",\"nr_segments\":%u,\"reloc_layout\":%u,\"relocs64\":%u,"
		       "\"inverse32\":%u,\"relocs32\":%u,\"virt_slots\":%llu,\"virt_bits\":%s",
		       im->protocol >> 8, im->protocol & 0xff,
		       im->xloadflags, len, im->init_size, im->kernel_alignment,
		       h->codec == RERAND_CODEC_LZ4 ? "lz4" : "none", (unsigned long long)stored,
		       (unsigned long long)decoded, (unsigned long long)h->mem_size,
		       (unsigned long long)h->entry_offset, h->nr_segments, h->reloc_layout,
		       h->nr_reloc64, h->nr_inverse32, h->nr_reloc32, (unsigned long long)vs, vb);
		/* the same array as a kernel's, less the link addresses */
		printf(",\"segments\":[");
		for (unsigned i = 0; i < h->nr_segments; i++)
			printf("%s{\"offset\":\"0x%llx\",\"filesz\":\"0x%llx\",\"memsz\":\"0x%llx\","
			       "\"stored_size\":\"0x%llx\"}", i ? "," : "",
			       (unsigned long long)h->seg[i].mem_offset,
			       (unsigned long long)h->seg[i].file_size,
			       (unsigned long long)h->seg[i].mem_size,
			       (unsigned long long)h->seg[i].data_size);
		printf("]");
		return;
	}
	printf("%s: rerand image, format %u%s\n", path, h->version,
	       im->cert_size ? ", with a signature appended" : "");
	printf("  kernel version: %s\n", im->kernel_version[0] ? im->kernel_version : "(none)");
	printf("  boot protocol:  %u.%02u, xloadflags 0x%x (%s), init_size %u, alignment %u\n",
	       im->protocol >> 8, im->protocol & 0xff, im->xloadflags,
	       im->xloadflags & RERAND_XLF_5LEVEL ? "64-bit, above 4G, 5-level paging" :
	       "64-bit, above 4G, no 5-level paging", im->init_size, im->kernel_alignment);
	printf("  stage:          SHA-256 %s\n", stage_hex);
	printf("  segments:       %u, %s, %llu bytes stored -> %llu bytes\n", h->nr_segments,
	       h->codec == RERAND_CODEC_LZ4 ? "lz4" : "uncompressed", (unsigned long long)stored,
	       (unsigned long long)decoded);
	printf("  in-memory size: %llu bytes (%.1f MiB)\n", (unsigned long long)h->mem_size,
	       h->mem_size / 1048576.0);
	printf("  entry:          link base + 0x%llx\n", (unsigned long long)h->entry_offset);
	printf("  relocations:    %u lists: %u 64-bit, %u inverse 32-bit, %u 32-bit\n",
	       h->reloc_layout, h->nr_reloc64, h->nr_inverse32, h->nr_reloc32);
	printf("  virtual slots:  %llu (%s bits)\n", (unsigned long long)vs, vb);
}

/* A unified kernel image: its parts, the kernel in .linux, the command
 * line.  Opens the JSON object print_sig() closes. */
static int print_uki(const char *path, const uint8_t *buf, size_t len, bool json,
		     struct rr_err *e)
{
	struct rr_uki u;
	struct rr_bzimage bz;
	char cmdline[4096], sub[4200];
	int r;

	r = rr_uki_parse(buf, len, path, &u, e);
	if (r < 0)
		return r;
	snprintf(sub, sizeof(sub), "%s (.linux)", path);
	r = rr_bzimage_parse(buf + u.part[RR_UKI_LINUX].offset, u.part[RR_UKI_LINUX].size, sub,
			     &bz, e);
	if (r == 0)
		r = rr_uki_cmdline(buf, len, &u, cmdline, sizeof(cmdline), path, e);
	if (r < 0)
		return r;
	if (json) {
		printf("{\"file\":");
		cli_json_str(path);
		printf(",\"type\":\"uki\",\"kernel_version\":");
		cli_json_str(bz.kernel_version);
		printf(",\"sections\":{");
		for (int i = 0, n = 0; i < RR_UKI_NR_PARTS; i++)
			if (u.part[i].present)
				printf("%s\"%s\":\"0x%llx\"", n++ ? "," : "", rr_uki_part_name(i),
				       (unsigned long long)u.part[i].size);
		printf("}");
		if (u.part[RR_UKI_CMDLINE].present) {
			printf(",\"cmdline\":");
			cli_json_str(cmdline);
		}
		return 0;
	}
	printf("%s: unified kernel image, %u PE sections\n", path, u.nr_sections);
	printf("  kernel version: %s\n", bz.kernel_version[0] ? bz.kernel_version : "(none)");
	for (int i = 0; i < RR_UKI_NR_PARTS; i++)
		if (u.part[i].present)
			printf("  %-15s %llu bytes%s\n", rr_uki_part_name(i),
			       (unsigned long long)u.part[i].size,
			       i == RR_UKI_UCODE ? " (loaded before .initrd)" : "");
	if (u.part[RR_UKI_CMDLINE].present)
		printf("  command line:   %s\n", cmdline);
	return 0;
}

static const struct cli_opt inspect_opts[] = {
	CLI_JSON_OPT,
	{ "relocs", 0, required_argument, "FILE", 'r',
	  "the relocation table (vmlinux.relocs) of a vmlinux FILE", "@file" },
	{ "input-fd", 0, required_argument, "N", 'i',
	  "read FILE from this open descriptor; FILE only names it", NULL },
	{ 0 }
};

const struct cli_cmd cli_inspect = {
	.name = "inspect", .synopsis = "FILE", .fn = cmd_inspect, .opts = inspect_opts,
	.summary = "Describe a kernel, a unified kernel image or a rerand image, and who signed it.",
	.text = "Exit status:\n"
		"  0  FILE described\n"
		"  1  FILE cannot be read, or is malformed (the problem on stderr)\n"
		"  2  FILE is a PE file but no kernel, UKI or rerand image (its signature is shown)\n"
		" 64  usage error\n",
	.operand_complete = "@file",
};

int cmd_inspect(int argc, char **argv)
{
	const char *relocs = NULL;
	struct rr_pe_sig sig;
	int in_fd = -1;
	int json = CLI_JSON_NONE;
	struct cli_json_capture cap;
	struct rr_err e;
	uint8_t *buf;
	size_t len;
	int c, r, rc = 0;

	while ((c = cli_getopt(&cli_inspect, argc, argv)) != -1) {
		switch (c) {
		case 'j':
			json = cli_json_mode(optarg);
			if (json < 0)
				return cli_usage_error(&cli_inspect, "--json=%s: want pretty or short",
						       optarg);
			break;
		case 'r': relocs = optarg; break;
		case 'i': {
			/* an open file: what a caller that dropped its privileges
			 * hands over, FILE then only names it */
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || v < 0 || v > 1023) {
				cli_err("--input-fd: '%s' is not an open file descriptor number "
					"(0 to 1023)", optarg);
				return EXIT_USAGE;
			}
			in_fd = (int)v;
			break;
		}
		case CLI_HELP:
			return 0;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind == argc)
		return cli_usage_error(&cli_inspect, "the FILE to describe is missing");
	if (optind < argc - 1)
		return cli_usage_error(&cli_inspect, "one FILE only ('%s' is one too many)",
				       argv[optind + 1]);
	const char *path = argv[optind];
	if ((in_fd >= 0 ? rr_read_fd(in_fd, path, MAX_KERNEL_FILE, &buf, &len, &e)
			: rr_read_file(path, MAX_KERNEL_FILE, &buf, &len, &e)) < 0) {
		cli_err("%s", e.msg);
		return EXIT_FAILURE_RR;
	}
	cli_json_begin(&cap, json);
	if (rr_image_probe(buf, len)) {
		struct rr_image im;
		r = rr_image_parse(buf, len, path, &im, &e);
		if (r == 0)
			r = rr_pe_sig_read(buf, len, path, &sig, &e);
		if (r == 0) {
			print_image(path, len, &im, json);
			print_sig(&sig, json);
		}
	} else if (rr_uki_probe(buf, len)) {
		r = rr_pe_sig_read(buf, len, path, &sig, &e);
		if (r == 0)
			r = print_uki(path, buf, len, json, &e);
		if (r == 0)
			print_sig(&sig, json);
	} else if (!is_bzimage_or_elf(buf, len) && len >= 2 && buf[0] == 'M' && buf[1] == 'Z') {
		/* Any other PE file (a boot loader, a unified kernel image): only
		 * who signed it. */
		r = rr_pe_sig_read(buf, len, path, &sig, &e);
		if (r == 0 && !sig.is_pe)
			r = rr_errf(&e, ENOEXEC, "%s: neither a kernel nor a PE file (\"MZ\" without "
				    "a PE header)", path);
		if (r == 0 && json) {
			printf("{\"file\":");
			cli_json_str(path);
			printf(",\"type\":\"pe\"");
		} else if (r == 0) {
			printf("%s: PE image, neither a kernel nor a rerand image\n", path);
		}
		/* described, but not what inspect is for: a script that takes
		 * exit 0 for "a kernel" must not take a boot loader for one */
		rc = EXIT_NOT_KERNEL;
		if (r == 0)
			print_sig(&sig, json);
	} else {
		struct rr_kernel k;
		bool k_loaded;
		uint8_t *rbuf = NULL;
		size_t rlen = 0;
		r = relocs ? rr_read_file(relocs, MAX_KERNEL_FILE, &rbuf, &rlen, &e) : 0;
		if (r == 0)
			r = rr_kernel_load_mem(buf, len, path, rbuf, rlen, relocs, &k, &e);
		k_loaded = r == 0;
		if (r == 0)
			r = rr_pe_sig_read(buf, len, path, &sig, &e);
		if (r == 0)
			print_kernel(path, &k, json);
		if (r == 0)
			print_sig(&sig, json);
		if (k_loaded)
			rr_kernel_free(&k);
		free(rbuf);
	}
	free(buf);
	/* nothing was printed on an error: the capture is empty, and so is
	 * stdout (no "null") */
	if (r < 0 && cap.saved) {
		fclose(stdout);
		stdout = cap.saved;
		free(cap.buf);
	} else {
		cli_json_end(&cap);
	}
	if (r < 0) {
		cli_err("%s", e.msg);
		return EXIT_FAILURE_RR;
	}
	return rc;
}
