/* SPDX-License-Identifier: GPL-2.0-only */
/* `rerand verify`: was this boot randomized?  Reads the stage's record. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "cli.h"
#include "status.h"

#define EXIT_NO_RECORD 2

int cmd_verify(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "setup-data", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *dir = RR_SETUP_DATA_SYSFS;
	struct rerand_status st;
	struct rr_err e;
	bool json = false;
	int c, r;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'd': dir = optarg; break;
		case 'h':
			puts("Usage: rerand verify [--json] [--setup-data DIR]\n"
			     "Exit status: 0 randomized, 1 not randomized, 2 no rerand record,\n"
			     "3 randomized from RDTSC alone (weak).");
			return 0;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		cli_err("verify: takes no arguments");
		return EXIT_USAGE;
	}
	r = rr_status_read(dir, &st, &e);
	if (r < 0) {
		if (json)
			printf("{\"randomized\":false,\"result\":\"%s\"}\n",
			       r == -ENOENT ? "absent" : "malformed");
		cli_err("%s", e.msg);
		return EXIT_NO_RECORD;
	}
	rr_status_print(stdout, &st, json);
	if (st.result != RERAND_RES_RANDOMIZED)
		return EXIT_NOT_RANDOMIZED;
	/* A base drawn from the TSC alone is guessable: a script that checks
	 * only the exit status must not take it for a verified boot. */
	return st.flags & RERAND_ST_WEAK ? EXIT_WEAK : 0;
}
