/* SPDX-License-Identifier: GPL-2.0-only */
/* rerand: build, inspect, stage and verify rerandomizing kernel images. */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <malloc.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "cli.h"
#include "jsonout.h"

#include "cmdtab.h"
#include "util.h"

#ifndef RERAND_VERSION
#error "RERAND_VERSION comes from the Makefile (debian/changelog's version)"
#endif

void cli_err(const char *fmt, ...)
{
	va_list ap;

	fputs("rerand: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_fd_arg(const char *opt, const char *arg, int min)
{
	char *end;
	long v = strtol(arg, &end, 10);

	if (*end || end == arg || v < min || v > 1023) {
		cli_err("--%s: '%s' is not an open file descriptor number (%d to 1023)", opt, arg, min);
		return -1;
	}
	return (int)v;
}

int cli_json_mode(const char *arg)
{
	if (!arg || !strcmp(arg, "short"))
		return CLI_JSON_SHORT;
	if (!strcmp(arg, "pretty"))
		return CLI_JSON_PRETTY;
	return -1;
}

void cli_json_print(struct json_object *o, int mode)
{
	puts(json_object_to_json_string_ext(o, mode == CLI_JSON_PRETTY ? RR_JSON_PRETTY_FLAGS
									 : RR_JSON_LINE_FLAGS));
	json_object_put(o);
}

void cli_json_reprint(const char *text, int mode)
{
	_cleanup_json_ struct json_object *o = NULL;

	if (mode == CLI_JSON_PRETTY)
		o = json_tokener_parse(text);
	if (!o) {
		fputs(text, stdout);
		return;
	}
	puts(json_object_to_json_string_ext(o, RR_JSON_PRETTY_FLAGS));
}

const struct cli_cmd *const cli_cmds[] = {
	&cli_image, &cli_cache_key, &cli_inspect, &cli_load, &cli_verify, &cli_status, &cli_now, &cli_due,
	&cli_hold, &cli_unhold, &cli_release, &cli_fleet, &cli_entropy, &cli_doctor, &cli_build,
	&cli_history,
};
const unsigned cli_nr_cmds = ARRAY_SIZE(cli_cmds);

/* The top-level help: each command's usage line and summary, from its table. */
static void usage(FILE *f)
{
	fputs("Usage: rerand COMMAND [OPTIONS]\n"
	      "       rerand help COMMAND | rerand COMMAND --help\n"
	      "\n"
	      "Keep the kernel at a fresh, secret base across kexec reboots.\n"
	      "\n"
	      "Commands:\n", f);
	for (unsigned i = 0; i < cli_nr_cmds; i++) {
		const struct cli_cmd *c = cli_cmds[i];
		fprintf(f, "  %s%s%s\n        ", c->name, *c->synopsis ? " " : "", c->synopsis);
		for (const char *p = c->summary; *p; p++)
			fputs(*p == '\n' ? "\n        " : (char[]){ *p, 0 }, f);
		fputc('\n', f);
	}
	fputs("\n"
	      "Options: -h, --help   this text;  -V, --version   the version.\n"
	      "Exit status: 0 success, 1 failure, 64 usage error; verify, inspect and due\n"
	      "have codes of their own (their --help).  See rerand(8).\n", f);
}

int main(int argc, char **argv)
{
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
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    (!strcmp(argv[1], "help") && argc == 2)) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("rerand %s\n", RERAND_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "--bash-completion") && argc == 2) {
		/* the build writes the installed completion file with this */
		cli_print_bash_completion(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "help") && argc == 3) {
		const struct cli_cmd *c = cli_find(argv[2]);
		if (c) {
			cli_print_help(c, stdout);
			return 0;
		}
		cli_err("help: unknown command '%s' (see rerand --help)", argv[2]);
		return EXIT_USAGE;
	}
	const struct cli_cmd *c = cli_find(argv[1]);
	if (c) {
		optind = 1;
		return c->fn(argc - 1, argv + 1);
	}
	cli_err("unknown command '%s' (see rerand --help)", argv[1]);
	return EXIT_USAGE;
}
