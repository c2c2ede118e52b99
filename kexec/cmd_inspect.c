/* SPDX-License-Identifier: GPL-2.0-only */
/* `rerand inspect`: what a kernel or rerand image holds, and who signed it. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "cli.h"
#include "cmdtab.h"
#include "image.h"
#include "jsonout.h"
#include "kernel.h"
#include "pesig.h"
#include "select.h"
#include "status.h"
#include "uki.h"

#define MAX_KERNEL_FILE (512u << 20)

/* Last in the description, in JSON too (into O, or as text if O is NULL).
 * The signer is named only when the signature verifies: a name read from a
 * signature that does not is whatever whoever changed the file wanted it to
 * be. */
static void print_sig(const struct rr_pe_sig *sig, struct json_object *o)
{
	const char *more = sig->nr_signatures > 1 ? ", and more signatures the kernel will not "
						    "accept" : "";

	if (o) {
		rr_json_add_bool(o, "pe", sig->is_pe);
		rr_json_add_bool(o, "signed", sig->is_signed);
		rr_json_add_int(o, "signatures", sig->nr_signatures);
		rr_json_add_str(o, "signature", rr_pe_sig_state(sig));
		if (sig->verified) {
			rr_json_add_str(o, "signature_digest", sig->digest);
			rr_json_add_str(o, "signer_subject", sig->subject);
			rr_json_add_str(o, "signer_issuer", sig->issuer);
			/* what "verified" was measured against */
			rr_json_add_str(o, "signature_trust", !sig->trust_checked ? "own-certificate" :
					sig->trusted ? "trusted" : "untrusted");
			if (sig->trusted)
				rr_json_add_str(o, "trust_anchor", sig->anchor);
			else if (sig->trust_checked)
				rr_json_add_str(o, "trust_error", sig->trust_why);
		} else if (sig->is_signed) {
			rr_json_add_str(o, "signature_error", sig->why);
		}
		return;
	}
	if (sig->trusted)
		printf("  signature:      signed by \"%s\" (issuer \"%s\", %s), verified against "
		       "the trusted certificate \"%s\"%s\n", sig->subject, sig->issuer, sig->digest,
		       sig->anchor, more);
	else if (sig->trust_checked)
		printf("  signature:      signed by \"%s\" (issuer \"%s\", %s), intact but NOT "
		       "trusted: %s%s\n", sig->subject, sig->issuer, sig->digest, sig->trust_why, more);
	else if (sig->verified)
		printf("  signature:      signed by \"%s\" (issuer \"%s\"), verified against its own "
		       "certificate only (%s; no --trust-cert: whether the signer is trusted is "
		       "the kernel's keyrings' decision)%s\n", sig->subject, sig->issuer, sig->digest,
		       more);
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

static void print_kernel(const char *path, const struct rr_kernel *k, struct json_object *o)
{
	const struct rr_vmlinux *v = &k->elf;
	uint64_t vs = rr_virt_slot_count(v->mem_size);
	char vb[16];

	rr_bits_text(vs, vb, sizeof(vb));
	if (o) {
		struct json_object *segs = json_object_new_array();
		char proto[16];

		rr_json_add_str(o, "file", path);
		rr_json_add_str(o, "type", k->is_bzimage ? "bzImage" : "vmlinux");
		rr_json_add_str(o, "codec", rr_kcodec_name(k->codec));
		rr_json_add_u64(o, "file_size", k->file_size);
		if (k->is_bzimage) {
			snprintf(proto, sizeof(proto), "%u.%02u", k->bz.version >> 8,
				 k->bz.version & 0xff);
			rr_json_add_str(o, "protocol", proto);
			rr_json_add_int(o, "xloadflags", k->bz.xloadflags);
			rr_json_add_u64(o, "payload_size", k->bz.payload_length);
			rr_json_add_str(o, "kernel_version", k->bz.kernel_version);
		}
		rr_json_add_u64(o, "decoded_size", k->payload_len);
		rr_json_add_u64(o, "mem_size", v->mem_size);
		rr_json_add_hex(o, "entry_offset", v->entry - v->link_paddr);
		rr_json_add_int(o, "nr_segments", v->nr_seg);
		for (unsigned i = 0; i < v->nr_seg; i++) {
			struct json_object *g = json_object_new_object();

			rr_json_add_hex(g, "offset", v->seg[i].paddr - v->link_paddr);
			rr_json_add_u64(g, "filesz", v->seg[i].filesz);
			rr_json_add_u64(g, "memsz", v->seg[i].memsz);
			rr_json_add_hex(g, "paddr", v->seg[i].paddr);
			rr_json_add_hex(g, "vaddr", v->seg[i].vaddr);
			json_object_array_add(segs, g);
		}
		rr_json_add(o, "segments", segs);
		rr_json_add_int(o, "reloc_layout", k->relocs.layout);
		rr_json_add_u64(o, "relocs64", k->relocs.nr_reloc64);
		rr_json_add_u64(o, "inverse32", k->relocs.nr_inverse32);
		rr_json_add_u64(o, "relocs32", k->relocs.nr_reloc32);
		rr_json_add_u64(o, "virt_slots", vs);
		rr_json_add_num_text(o, "virt_bits", vs > 1 ? log2((double)vs) : 0.0, vb);
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

static void print_image(const char *path, size_t len, const struct rr_image *im,
			struct json_object *o)
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
	if (o) {
		struct json_object *segs = json_object_new_array();
		char proto[16];

		rr_json_add_str(o, "file", path);
		rr_json_add_str(o, "type", "rerand-image");
		rr_json_add_str(o, "stage_sha256", stage_hex);
		rr_json_add_bool(o, "xlf_5level", im->xloadflags & RERAND_XLF_5LEVEL);
		rr_json_add_int(o, "signature_size", im->cert_size);
		rr_json_add_int(o, "image_version", h->version);
		rr_json_add_str(o, "kernel_version", im->kernel_version);
		snprintf(proto, sizeof(proto), "%u.%02u", im->protocol >> 8, im->protocol & 0xff);
		rr_json_add_str(o, "protocol", proto);
		rr_json_add_int(o, "xloadflags", im->xloadflags);
		rr_json_add_u64(o, "file_size", len);
		rr_json_add_int(o, "init_size", im->init_size);
		rr_json_add_int(o, "kernel_alignment", im->kernel_alignment);
		rr_json_add_str(o, "codec", h->codec == RERAND_CODEC_LZ4 ? "lz4" : "none");
		rr_json_add_u64(o, "stored_size", stored);
		rr_json_add_u64(o, "decoded_size", decoded);
		rr_json_add_u64(o, "mem_size", h->mem_size);
		rr_json_add_hex(o, "entry_offset", h->entry_offset);
		rr_json_add_int(o, "nr_segments", h->nr_segments);
		rr_json_add_int(o, "reloc_layout", h->reloc_layout);
		rr_json_add_int(o, "relocs64", h->nr_reloc64);
		rr_json_add_int(o, "inverse32", h->nr_inverse32);
		rr_json_add_int(o, "relocs32", h->nr_reloc32);
		rr_json_add_u64(o, "virt_slots", vs);
		rr_json_add_num_text(o, "virt_bits", vs > 1 ? log2((double)vs) : 0.0, vb);
		/* the same array as a kernel's, less the link addresses */
		for (unsigned i = 0; i < h->nr_segments; i++) {
			struct json_object *g = json_object_new_object();

			rr_json_add_hex(g, "offset", h->seg[i].mem_offset);
			rr_json_add_u64(g, "filesz", h->seg[i].file_size);
			rr_json_add_u64(g, "memsz", h->seg[i].mem_size);
			rr_json_add_u64(g, "stored_size", h->seg[i].data_size);
			json_object_array_add(segs, g);
		}
		rr_json_add(o, "segments", segs);
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
 * line. */
static int print_uki(const char *path, const uint8_t *buf, size_t len, struct json_object *o,
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
	if (o) {
		struct json_object *parts = json_object_new_object();

		rr_json_add_str(o, "file", path);
		rr_json_add_str(o, "type", "uki");
		rr_json_add_str(o, "kernel_version", bz.kernel_version);
		for (int i = 0; i < RR_UKI_NR_PARTS; i++)
			if (u.part[i].present)
				rr_json_add_u64(parts, rr_uki_part_name(i), u.part[i].size);
		rr_json_add(o, "sections", parts);
		if (u.part[RR_UKI_CMDLINE].present)
			rr_json_add_str(o, "cmdline", cmdline);
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
	{ "trust-cert", 0, required_argument, "CERTS", 't',
	  "check the signer against these certificates (PEM, or one DER: db, MOK, a CA)",
	  "@file" },
	{ 0 }
};

const struct cli_cmd cli_inspect = {
	.name = "inspect", .synopsis = "FILE", .fn = cmd_inspect, .opts = inspect_opts,
	.summary = "Describe a kernel, a unified kernel image or a rerand image, and who signed it.",
	.text = "Exit status:\n"
		"  0  FILE described\n"
		"  1  FILE cannot be read, or is malformed (the problem on stderr)\n"
		"  2  FILE is a PE file but no kernel, UKI or rerand image (its signature is shown)\n"
		"  3  with --trust-cert: FILE is described, but its signature is missing, does not\n"
		"     verify, or its signer does not chain to any of CERTS\n"
		" 64  usage error\n",
	.operand_complete = "@file",
};

/* What is described: FILE's bytes, and what to check its signer against. */
struct inspect_in {
	const char *path, *relocs, *trust_path;
	const uint8_t *buf, *trust;
	size_t len, trust_len;
};

static int read_sig(const struct inspect_in *in, struct rr_pe_sig *sig, struct rr_err *e)
{
	return rr_pe_sig_read_trust(in->buf, in->len, in->path, in->trust, in->trust_len,
				    in->trust_path, sig, e);
}

static int describe_image(const struct inspect_in *in, struct json_object *o,
			  struct rr_pe_sig *sig, struct rr_err *e)
{
	struct rr_image im;
	int r = rr_image_parse(in->buf, in->len, in->path, &im, e);

	if (r == 0)
		r = read_sig(in, sig, e);
	if (r == 0) {
		print_image(in->path, in->len, &im, o);
		print_sig(sig, o);
	}
	return r;
}

static int describe_uki(const struct inspect_in *in, struct json_object *o,
			struct rr_pe_sig *sig, struct rr_err *e)
{
	int r = read_sig(in, sig, e);

	if (r == 0)
		r = print_uki(in->path, in->buf, in->len, o, e);
	if (r == 0)
		print_sig(sig, o);
	return r;
}

/* Any other PE file (a boot loader, a unified kernel image): only who
 * signed it. */
static int describe_pe(const struct inspect_in *in, struct json_object *o,
		       struct rr_pe_sig *sig, struct rr_err *e)
{
	int r = read_sig(in, sig, e);

	if (r == 0 && !sig->is_pe)
		r = rr_errf(e, ENOEXEC, "%s: neither a kernel nor a PE file (\"MZ\" without "
			    "a PE header)", in->path);
	if (r == 0 && o) {
		rr_json_add_str(o, "file", in->path);
		rr_json_add_str(o, "type", "pe");
	} else if (r == 0) {
		printf("%s: PE image, neither a kernel nor a rerand image\n", in->path);
	}
	if (r == 0)
		print_sig(sig, o);
	return r;
}

static int describe_kernel(const struct inspect_in *in, struct json_object *o,
			   struct rr_pe_sig *sig, struct rr_err *e)
{
	struct rr_kernel k;
	bool k_loaded;
	_cleanup_free_ uint8_t *rbuf = NULL;
	size_t rlen = 0;
	int r = in->relocs ? rr_read_file(in->relocs, MAX_KERNEL_FILE, &rbuf, &rlen, e) : 0;

	if (r == 0)
		r = rr_kernel_load_mem(in->buf, in->len, in->path, rbuf, rlen, in->relocs, &k, e);
	k_loaded = r == 0;
	if (r == 0)
		r = read_sig(in, sig, e);
	if (r == 0)
		print_kernel(in->path, &k, o);
	if (r == 0)
		print_sig(sig, o);
	if (k_loaded)
		rr_kernel_free(&k);
	return r;
}

/* The options: 0 to go on, else the exit status (help, usage). */
static int inspect_options(int argc, char **argv, struct inspect_in *in, int *in_fd, int *json,
			   int *rc)
{
	int c;

	while ((c = cli_getopt(&cli_inspect, argc, argv)) != -1) {
		switch (c) {
		case 'j':
			*json = cli_json_mode(optarg);
			if (*json < 0) {
				*rc = cli_usage_error(&cli_inspect, "--json=%s: want pretty or short",
						      optarg);
				return 1;
			}
			break;
		case 'r': in->relocs = optarg; break;
		case 't': in->trust_path = optarg; break;
		case 'i':
			/* an open file: what a caller that dropped its privileges
			 * hands over, FILE then only names it */
			*in_fd = cli_fd_arg("input-fd", optarg, 0);
			if (*in_fd < 0) {
				*rc = EXIT_USAGE;
				return 1;
			}
			break;
		case CLI_HELP:
			*rc = 0;
			return 1;
		default:
			*rc = EXIT_USAGE;
			return 1;
		}
	}
	if (optind == argc)
		*rc = cli_usage_error(&cli_inspect, "the FILE to describe is missing");
	else if (optind < argc - 1)
		*rc = cli_usage_error(&cli_inspect, "one FILE only ('%s' is one too many)",
				      argv[optind + 1]);
	else
		return 0;
	return 1;
}

int cmd_inspect(int argc, char **argv)
{
	struct inspect_in in = { 0 };
	_cleanup_free_ uint8_t *trust = NULL, *buf = NULL;
	struct rr_pe_sig sig;
	int in_fd = -1, json = CLI_JSON_NONE, r, rc = 0;
	_cleanup_json_ struct json_object *o = NULL;
	struct rr_err e;

	if (inspect_options(argc, argv, &in, &in_fd, &json, &rc))
		return rc;
	in.path = argv[optind];
	if (in.trust_path && rr_read_file(in.trust_path, 4u << 20, &trust, &in.trust_len, &e) < 0) {
		cli_err("%s", e.msg);
		return EXIT_FAILURE_RR;
	}
	in.trust = trust;
	if ((in_fd >= 0 ? rr_read_fd(in_fd, in.path, MAX_KERNEL_FILE, &buf, &in.len, &e)
			: rr_read_file(in.path, MAX_KERNEL_FILE, &buf, &in.len, &e)) < 0) {
		cli_err("%s", e.msg);
		return EXIT_FAILURE_RR;
	}
	in.buf = buf;
	/* the description, in JSON: printed only when all of it was read */
	if (json && !(o = json_object_new_object())) {
		cli_err("out of memory");
		return EXIT_FAILURE_RR;
	}
	if (rr_image_probe(buf, in.len))
		r = describe_image(&in, o, &sig, &e);
	else if (rr_uki_probe(buf, in.len))
		r = describe_uki(&in, o, &sig, &e);
	else if (!is_bzimage_or_elf(buf, in.len) && in.len >= 2 && buf[0] == 'M' && buf[1] == 'Z') {
		r = describe_pe(&in, o, &sig, &e);
		/* described, but not what inspect is for: a script that takes
		 * exit 0 for "a kernel" must not take a boot loader for one */
		rc = EXIT_NOT_KERNEL;
	} else
		r = describe_kernel(&in, o, &sig, &e);
	if (r == 0 && o)
		cli_json_print(TAKE_PTR(o), json);
	if (r < 0) {
		cli_err("%s", e.msg);
		return EXIT_FAILURE_RR;
	}
	if (in.trust_path && rc == 0 && !sig.trusted)
		return EXIT_UNTRUSTED;
	return rc;
}
