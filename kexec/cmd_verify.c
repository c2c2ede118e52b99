/* SPDX-License-Identifier: GPL-2.0-only */
/* `rerand verify`: was this boot randomized?  Reads the stage's record. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cmdtab.h"
#include "jsonout.h"
#include "status.h"

static const struct cli_opt verify_opts[] = {
	CLI_JSON_OPT,
	{ "setup-data", 0, required_argument, "DIR", 'd',
	  "read the records from DIR, not " RR_SETUP_DATA_SYSFS, "@dir" },
	{ "require-hwrng", 0, no_argument, NULL, 'H',
	  "exit 6 unless RDRAND or RDSEED fed the choice (entropy grade hardware)", NULL },
	{ 0 }
};

const struct cli_cmd cli_verify = {
	.name = "verify", .synopsis = "", .fn = cmd_verify, .opts = verify_opts,
	.summary = "Check that this boot was randomized, from the stage's record; never prints the base.",
	.text = "Exit status:\n"
		"  0  randomized\n"
		"  1  a record is present and says not randomized (nokaslr, no slot)\n"
		"  2  no rerand record: this boot was not made by a rerand image\n"
		"  3  randomized, but from RDTSC alone (weak)\n"
		"  4  a record is present but malformed (its file and problem on stderr)\n"
		"  5  the setup_data directory cannot be read (--setup-data DIR missing)\n"
		"  6  --require-hwrng: randomized, but without RDRAND or RDSEED (grade seed)\n"
		" 64  usage error\n",
};

int cmd_verify(int argc, char **argv)
{
	const char *dir = RR_SETUP_DATA_SYSFS;
	struct rerand_status st;
	struct rr_err e;
	bool dir_given = false, want_hw = false;
	int json = CLI_JSON_NONE;
	int c, r;

	while ((c = cli_getopt(&cli_verify, argc, argv)) != -1) {
		switch (c) {
		case 'j':
			json = cli_json_mode(optarg);
			if (json < 0)
				return cli_usage_error(&cli_verify, "--json=%s: want pretty or short",
						       optarg);
			break;
		case 'd': dir = optarg; dir_given = true; break;
		case 'H': want_hw = true; break;
		case CLI_HELP: return 0;
		default: return EXIT_USAGE;
		}
	}
	if (optind != argc)
		return cli_usage_error(&cli_verify, "takes no operands ('%s')", argv[optind]);
	r = rr_status_read(dir, &st, &e);
	if (r < 0) {
		/* The kernel's own tree is absent where no setup_data was passed;
		 * a directory the user named that is not there is a mistake. */
		int rc = r == -ENOENT ? EXIT_NO_RECORD : r == -EINVAL || r == -EFBIG ? EXIT_BAD_RECORD
								   : EXIT_UNREADABLE;
		if (dir_given && r == -ENOENT && strstr(e.msg, "no setup_data in this boot")) {
			rr_errf(&e, ENOENT, "%s: no such directory (--setup-data)", dir);
			rc = EXIT_UNREADABLE;
		}
		if (json) {
			struct json_object *o = json_object_new_object();

			rr_json_add_bool(o, "randomized", false);
			rr_json_add_str(o, "result", rc == EXIT_NO_RECORD ? "absent" :
						     rc == EXIT_BAD_RECORD ? "malformed" : "unreadable");
			cli_json_print(o, json);
		}
		cli_err("%s", e.msg);
		return rc;
	}
	if (json)
		cli_json_print(rr_status_json(&st), json);
	else
		rr_status_print(stdout, &st, false);
	if (st.result != RERAND_RES_RANDOMIZED)
		return EXIT_NOT_RANDOMIZED;
	/* A base drawn from the TSC alone is guessable: a script that checks
	 * only the exit status must not take it for a verified boot. */
	if (st.flags & RERAND_ST_WEAK)
		return EXIT_WEAK;
	/* a seed read from the old kernel's memory, no CPU generator */
	return want_hw && strcmp(rr_status_grade(st.sources_used), "hardware") ? EXIT_NO_HWRNG : 0;
}
