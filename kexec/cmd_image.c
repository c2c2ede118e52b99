/* SPDX-License-Identifier: GPL-2.0-only */
/* `rerand image` and `rerand cache-key`, the name rerandd caches an image
 * under. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "cachekey.h"
#include "cleanup.h"
#include "cli.h"
#include "cmdtab.h"
#include "image.h"
#include "kernel.h"
#include "lz4par.h"
#include "select.h"
#include "sign.h"
#include "status.h"
#include "util.h"

#define MAX_KERNEL_FILE (512u << 20)

static const struct cli_opt image_opts[] = {
	{ "output", 'o', required_argument, "IMAGE", 'o',
	  "the image to write (atomically: a temporary file, then renamed); '-' is refused", "@file" },
	{ "relocs", 0, required_argument, "FILE", 'r',
	  "the relocation table (vmlinux.relocs) of a vmlinux KERNEL", "@file" },
	{ "codec", 0, required_argument, "lz4|none", 'c',
	  "how the image stores the kernel (default lz4)", "lz4 none" },
	{ "lz4-level", 0, required_argument, "N", 'l',
	  "LZ4 level: 0 fast (default) to 12 (HC, smallest)", "0 1 2 3 4 5 6 7 8 9 10 11 12" },
	{ "threads", 0, required_argument, "N", 'j',
	  "compression threads (default: the CPUs this process may use)", NULL },
	{ "sign-key", 0, required_argument, "KEY", 'K',
	  "sign the image with sbsign and this key (with --sign-cert)", "@file" },
	{ "sign-cert", 0, required_argument, "CERT", 'C',
	  "the certificate of --sign-key", "@file" },
	{ "sign-engine", 0, required_argument, "ENGINE", 'E',
	  "the OpenSSL engine that holds --sign-key (e.g. pkcs11)", NULL },
	{ "sign-addcert", 0, required_argument, "CERTS", 'A',
	  "intermediate certificates to add to the signature", "@file" },
	{ "kernel-fd", 0, required_argument, "N", 'k',
	  "read KERNEL from this open descriptor (rerandd's unprivileged builder)", NULL },
	{ "output-fd", 0, required_argument, "N", 'O',
	  "write the image to this open descriptor; IMAGE only names it", NULL },
	{ 0 }
};

const struct cli_cmd cli_image = {
	.name = "image", .synopsis = "KERNEL -o IMAGE", .fn = cmd_image, .opts = image_opts,
	.summary = "Turn a bzImage (any payload codec), a unified kernel image, or a vmlinux plus\n"
		   "its relocation table into a rerandomizing image.",
	.operand_complete = "@file",
};


struct image_input {
	const char *what;   /* "kernel", "--sign-key"... */
	const char *path;
	int fd;             /* >= 0: the input is this descriptor (--kernel-fd) */
	bool by_path;       /* another program opens it by path: must be a regular file */
};

/*
 * The output is renamed over its path (or written to --output-fd): if that
 * is an input, the input is gone (`rerand image K -o K` replaced a kernel in
 * /boot with a kexec-only image).  Same device and inode, so a hard link or
 * a symbolic link to an input is refused too.  Inputs that sbsign opens by
 * path are refused unless regular files: a FIFO would hang it.
 */
static int check_inputs(const char *out, int out_fd, const struct image_input *in, unsigned n)
{
	struct stat o, st;
	bool have_out;

	if (out_fd >= 0) {
		if (fstat(out_fd, &o) < 0) {
			cli_err("%s: --output-fd %d: %s", out, out_fd, strerror(errno));
			return -1;
		}
		have_out = true;
	} else {
		have_out = stat(out, &o) == 0;
	}
	for (unsigned i = 0; i < n; i++) {
		struct rr_err e;

		if (!in[i].path)
			continue;
		if (in[i].by_path && rr_check_input_file(in[i].path, in[i].what, &st, &e) < 0) {
			cli_err("%s", e.msg);
			return -1;
		}
		if (!in[i].by_path && (in[i].fd >= 0 ? fstat(in[i].fd, &st) : stat(in[i].path, &st)) < 0)
			continue;     /* reading it says what is wrong, with its name */
		if (have_out && st.st_dev == o.st_dev && st.st_ino == o.st_ino) {
			cli_err("%s: the output (%s) is the same file as the %s %s (device %u:%u, "
				"inode %llu): writing the image would replace it; refused, nothing "
				"was written", out, out_fd >= 0 ? "--output-fd" : "-o", in[i].what,
				in[i].path, major(st.st_dev),
				minor(st.st_dev), (unsigned long long)st.st_ino);
			return -1;
		}
	}
	return 0;
}

/* What the command line asked for. */
struct image_args {
	const char *kernel, *out, *relocs;
	int kernel_fd, out_fd;
	struct rr_image_opts o;
	struct rr_sign_opts so;
};

/* The options: -1 once they are all read, or the exit code. */
static int image_parse_opts(int argc, char **argv, struct image_args *a)
{
	char *end;
	long v;
	int c;

	while ((c = cli_getopt(&cli_image, argc, argv)) != -1) {
		switch (c) {
		case 'o': a->out = optarg; break;
		case 'r': a->relocs = optarg; break;
		case 'c':
			if (!strcmp(optarg, "lz4"))
				a->o.codec = RERAND_CODEC_LZ4;
			else if (!strcmp(optarg, "none"))
				a->o.codec = RERAND_CODEC_NONE;
			else {
				return cli_usage_error(&cli_image, "--codec: '%s' is not lz4 or none", optarg);
			}
			break;
		case 'l':
			v = strtol(optarg, &end, 10);
			if (*end || v < 0 || v > 12) {
				cli_err("--lz4-level: '%s' is not 0 (fast) to 12 (HC max)", optarg);
				return EXIT_USAGE;
			}
			a->o.lz4_level = (int)v;
			break;
		case 'j':
			v = strtol(optarg, &end, 10);
			if (*end || end == optarg || v < 1 || v > RR_LZ4PAR_MAX_THREADS) {
				cli_err("--threads: '%s' is not 1 to %d", optarg, RR_LZ4PAR_MAX_THREADS);
				return EXIT_USAGE;
			}
			a->o.threads = (unsigned)v;
			break;
		case 'k':
		case 'O': {
			int fd = cli_fd_arg(c == 'k' ? "kernel-fd" : "output-fd", optarg, 3);
			if (fd < 0)
				return EXIT_USAGE;
			*(c == 'k' ? &a->kernel_fd : &a->out_fd) = fd;
			break;
		}
		case 'K': a->so.key = optarg; break;
		case 'C': a->so.cert = optarg; break;
		case 'E': a->so.engine = optarg; break;
		case 'A': a->so.addcert = optarg; break;
		case CLI_HELP:
			return 0;
		default:
			return EXIT_USAGE;
		}
	}
	return -1;
}

/* The operands and the options together, then the files named: -1 when
 * they make sense, or the exit code. */
static int image_check_args(int argc, char **argv, struct image_args *a)
{
	const struct rr_sign_opts *so = &a->so;

	if (optind == argc)
		return cli_usage_error(&cli_image, "the KERNEL to read is missing");
	if (optind < argc - 1)
		return cli_usage_error(&cli_image, "one KERNEL only ('%s' is one too many)",
				       argv[optind + 1]);
	a->kernel = argv[optind];
	if (!a->out)
		return cli_usage_error(&cli_image, "-o IMAGE, the image to write, is missing");
	if (!strcmp(a->out, "-") && a->out_fd < 0)
		/* the image is written to a temporary file and renamed, or
		 * signed by sbsign into a file: never a file named "-" */
		return cli_usage_error(&cli_image, "-o -: the image is written to a file, not to "
				       "standard output; name the file");
	if (!so->key != !so->cert || ((so->engine || so->addcert) && !so->key)) {
		cli_err("image: --sign-key and --sign-cert go together (--sign-engine and "
			"--sign-addcert need both)");
		return EXIT_USAGE;
	}
	if (a->out_fd >= 0 && so->key) {
		/* rerandd's builder: it signs in a separate step, so the key
		 * never enters the process that parses kernel files. */
		cli_err("image: --output-fd writes an unsigned image; sign it in a separate step");
		return EXIT_USAGE;
	}
	if (a->kernel_fd >= 0 && a->relocs) {
		cli_err("image: --relocs takes a path, which --kernel-fd is for avoiding");
		return EXIT_USAGE;
	}
	/* A key on a token (engine, pkcs11: URI) is no file. */
	bool key_file = so->key && !so->engine && strncmp(so->key, "pkcs11:", 7);
	const struct image_input inputs[] = {
		{ "kernel", a->kernel, a->kernel_fd, false },
		{ "--relocs file", a->relocs, -1, false },
		{ "--sign-key", key_file ? so->key : NULL, -1, true },
		{ "--sign-cert", so->cert, -1, true },
		{ "--sign-addcert", so->addcert, -1, true },
	};
	if (check_inputs(a->out, a->out_fd, inputs, ARRAY_SIZE(inputs)) < 0)
		return EXIT_FAILURE_RR;
	return -1;
}

/* Read the kernel and build the image in memory. */
static int image_build(struct image_args *a, uint8_t **img, size_t *len, struct rr_err *e)
{
	struct rr_dec_hook hook = { .fn = rr_lz4par_decode_hook };
	struct rr_kernel k;
	int r;

	/* Compression starts on the other cores while the payload decodes. */
	if (a->o.codec == RERAND_CODEC_LZ4) {
		r = rr_lz4par_new(a->o.threads, a->o.lz4_level, &a->o.lz4par);
		if (r < 0)
			return rr_errf(e, r, "%s: out of memory for the LZ4 compressor", a->kernel);
		hook.arg = a->o.lz4par;
	}
	if (a->kernel_fd >= 0)
		r = rr_kernel_load_fd(a->kernel_fd, a->kernel, a->o.lz4par ? &hook : NULL, &k, e);
	else
		r = rr_kernel_load_hooked(a->kernel, a->relocs, a->o.lz4par ? &hook : NULL, &k, e);
	if (r < 0) {
		rr_lz4par_free(a->o.lz4par);
		return r;
	}
	r = rr_image_build(&k, rr_stage_blob, (size_t)(rr_stage_blob_end - rr_stage_blob), &a->o,
			   img, len, a->kernel, e);
	rr_lz4par_free(a->o.lz4par);
	rr_kernel_free(&k);
	return r;
}

int cmd_image(int argc, char **argv)
{
	struct image_args a = {
		.kernel_fd = -1, .out_fd = -1,
		.o = { .codec = RERAND_CODEC_LZ4, .threads = rr_lz4par_default_threads() },
		.so = { .sbsign = getenv("RERAND_SBSIGN") },
	};
	_cleanup_free_ uint8_t *img = NULL;
	struct rr_err e;
	size_t len;
	int r;

	r = image_parse_opts(argc, argv, &a);
	if (r < 0)
		r = image_check_args(argc, argv, &a);
	if (r >= 0)
		return r;
	r = image_build(&a, &img, &len, &e);
	if (r >= 0) {
		if (a.out_fd >= 0)
			r = rr_write_fd(a.out_fd, a.out, img, len, &e);
		else if (a.so.key)
			r = rr_sign_image_file(img, len, a.out, &a.so, &e);
		else
			r = rr_write_file_atomic(a.out, img, len, &e);
	}
	if (r < 0) {
		cli_err("%s", e.msg);
		return EXIT_FAILURE_RR;
	}
	return 0;
}

static const struct cli_opt cache_key_opts[] = {
	{ "kernel-fd", 0, required_argument, "N", 'k',
	  "read KERNEL from this open descriptor (the kernel hook, as the image user)", NULL },
	{ 0 }
};

const struct cli_cmd cli_cache_key = {
	.name = "cache-key", .synopsis = "KERNEL", .fn = cmd_cache_key, .opts = cache_key_opts,
	.summary = "Print the key rerandd caches KERNEL's image under: the SHA-256 of the file,\n"
		   "a dot, the SHA-256 of this rerand's stage (image KEY.img in its cache).",
	.operand_complete = "@file",
};

/* The Debian kernel hook names the image it builds with this, so that the
 * hook and rerandd (daemon/stage_plan.c) share src/cachekey.c's one key. */
int cmd_cache_key(int argc, char **argv)
{
	_cleanup_close_ int own = -1;
	struct rr_cache_key key;
	struct rr_err e;
	char stage_sha[65];
	int c, fd = -1;

	while ((c = cli_getopt(&cli_cache_key, argc, argv)) != -1) {
		switch (c) {
		case 'k':
			fd = cli_fd_arg("kernel-fd", optarg, 3);
			if (fd < 0)
				return EXIT_USAGE;
			break;
		case CLI_HELP:
			return 0;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind == argc)
		return cli_usage_error(&cli_cache_key, "the KERNEL to hash is missing");
	if (optind < argc - 1)
		return cli_usage_error(&cli_cache_key, "one KERNEL only ('%s' is one too many)",
				       argv[optind + 1]);
	if (fd < 0) {
		own = rr_open_input(argv[optind], "kernel", NULL, &e);
		if (own < 0) {
			cli_err("%s", e.msg);
			return EXIT_FAILURE_RR;
		}
		fd = own;
	}
	if (rr_cache_key_stage(rr_stage_blob, (size_t)(rr_stage_blob_end - rr_stage_blob),
			       stage_sha) < 0) {
		cli_err("cannot hash the built-in stage");
		return EXIT_FAILURE_RR;
	}
	if (rr_cache_key_fd(fd, argv[optind], stage_sha, &key, &e) < 0) {
		cli_err("%s", e.msg);
		return EXIT_FAILURE_RR;
	}
	printf("%s\n", key.key);
	return fflush(stdout) == 0 ? 0 : EXIT_FAILURE_RR;
}
