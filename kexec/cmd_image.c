/* SPDX-License-Identifier: GPL-2.0-only */
/* `rerand image` and `rerand inspect`. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "image.h"
#include "kernel.h"
#include "lz4par.h"
#include "select.h"
#include "sign.h"
#include "status.h"

#define MAX_KERNEL_FILE (512u << 20)

int cmd_image(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "relocs", required_argument, NULL, 'r' },
		{ "codec", required_argument, NULL, 'c' },
		{ "lz4-level", required_argument, NULL, 'l' },
		{ "threads", required_argument, NULL, 'j' },
		{ "sign-key", required_argument, NULL, 'K' },
		{ "sign-cert", required_argument, NULL, 'C' },
		{ "sign-engine", required_argument, NULL, 'E' },
		{ "sign-addcert", required_argument, NULL, 'A' },
		{ "kernel-fd", required_argument, NULL, 'k' },
		{ "output-fd", required_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *out = NULL, *relocs = NULL;
	int kernel_fd = -1, out_fd = -1;
	struct rr_image_opts o = { .codec = RERAND_CODEC_LZ4,
				   .threads = rr_lz4par_default_threads() };
	struct rr_dec_hook hook = { .fn = rr_lz4par_decode_hook };
	struct rr_sign_opts so = { .sbsign = getenv("RERAND_SBSIGN") };
	struct rr_kernel k;
	struct rr_err e;
	uint8_t *img;
	size_t len;
	int c, r;

	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'r': relocs = optarg; break;
		case 'c':
			if (!strcmp(optarg, "lz4"))
				o.codec = RERAND_CODEC_LZ4;
			else if (!strcmp(optarg, "none"))
				o.codec = RERAND_CODEC_NONE;
			else {
				cli_err("--codec: '%s' is not lz4 or none", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'l': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || v < 0 || v > 12) {
				cli_err("--lz4-level: '%s' is not 0 (fast) to 12 (HC max)", optarg);
				return EXIT_USAGE;
			}
			o.lz4_level = (int)v;
			break;
		}
		case 'j': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || end == optarg || v < 1 || v > RR_LZ4PAR_MAX_THREADS) {
				cli_err("--threads: '%s' is not 1 to %d", optarg, RR_LZ4PAR_MAX_THREADS);
				return EXIT_USAGE;
			}
			o.threads = (unsigned)v;
			break;
		}
		case 'k':
		case 'O': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || v < 3 || v > 1023) {
				cli_err("--%s: '%s' is not an open file descriptor number (3 to 1023)",
					c == 'k' ? "kernel-fd" : "output-fd", optarg);
				return EXIT_USAGE;
			}
			*(c == 'k' ? &kernel_fd : &out_fd) = (int)v;
			break;
		}
		case 'K': so.key = optarg; break;
		case 'C': so.cert = optarg; break;
		case 'E': so.engine = optarg; break;
		case 'A': so.addcert = optarg; break;
		case 'h':
			puts("Usage: rerand image KERNEL -o IMAGE [--relocs FILE] [--codec lz4|none] [--lz4-level N]\n"
			     "                    [--threads N]\n"
			     "                    [--sign-key KEY --sign-cert CERT [--sign-engine ENGINE]\n"
			     "                     [--sign-addcert CERTS]]\n"
			     "                    [--kernel-fd N] [--output-fd N]");
			return 0;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1 || !out) {
		cli_err("image: usage: rerand image KERNEL -o IMAGE [--relocs FILE] [--codec lz4|none] "
			"[--sign-key KEY --sign-cert CERT]");
		return EXIT_USAGE;
	}
	if (!so.key != !so.cert || ((so.engine || so.addcert) && !so.key)) {
		cli_err("image: --sign-key and --sign-cert go together (--sign-engine and "
			"--sign-addcert need both)");
		return EXIT_USAGE;
	}
	if (out_fd >= 0 && so.key) {
		/* rerandd's builder: it signs in a separate step, so the key
		 * never enters the process that parses kernel files. */
		cli_err("image: --output-fd writes an unsigned image; sign it in a separate step");
		return EXIT_USAGE;
	}
	if (kernel_fd >= 0 && relocs) {
		cli_err("image: --relocs takes a path, which --kernel-fd is for avoiding");
		return EXIT_USAGE;
	}
	/* Compression starts on the other cores while the payload decodes. */
	if (o.codec == RERAND_CODEC_LZ4) {
		r = rr_lz4par_new(o.threads, o.lz4_level, &o.lz4par);
		if (r < 0) {
			cli_err("%s: out of memory for the LZ4 compressor", argv[optind]);
			return EXIT_FAILURE_RR;
		}
		hook.arg = o.lz4par;
	}
	if (kernel_fd >= 0)
		r = rr_kernel_load_fd(kernel_fd, argv[optind], o.lz4par ? &hook : NULL, &k, &e);
	else
		r = rr_kernel_load_hooked(argv[optind], relocs, o.lz4par ? &hook : NULL, &k, &e);
	if (r < 0) {
		rr_lz4par_free(o.lz4par);
		cli_err("%s", e.msg);
		return EXIT_FAILURE_RR;
	}
	r = rr_image_build(&k, rr_stage_blob, (size_t)(rr_stage_blob_end - rr_stage_blob), &o,
			   &img, &len, argv[optind], &e);
	rr_lz4par_free(o.lz4par);
	rr_kernel_free(&k);
	if (r < 0) {
		cli_err("%s", e.msg);
		return EXIT_FAILURE_RR;
	}
	if (out_fd >= 0)
		r = rr_write_fd(out_fd, out, img, len, &e);
	else if (so.key)
		r = rr_sign_image_file(img, len, out, &so, &e);
	else
		r = rr_write_file_atomic(out, img, len, &e);
	free(img);
	if (r < 0) {
		cli_err("%s", e.msg);
		return EXIT_FAILURE_RR;
	}
	return 0;
}
