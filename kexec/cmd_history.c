/* SPDX-License-Identifier: GPL-2.0-only */
/* `rerand history [--json]`: the past rerandomizing reboots as rerandd
 * keeps them (daemon/history.c: StateDirectory/history, the newest 100):
 * when each started, what triggered it, what the new boot's record said,
 * the result, its confirmation and a failure's cause, the downtime and the
 * duration.  Never an address.  Asked of rerandd over its control socket,
 * as `rerand status` is. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmdtab.h"
#include "ctl.h"

static const struct cli_opt history_opts[] = {
	{ "json", 0, optional_argument, "pretty|short", 'j',
	  "the history as one JSON object (short: one line; pretty: indented)", "pretty short" },
	{ "socket", 0, required_argument, "PATH", 'S',
	  "rerandd's control socket (default $RERAND_CONTROL_SOCKET or " RR_CTL_SOCKET ")",
	  "@file" },
	{ 0 }
};

const struct cli_cmd cli_history = {
	.name = "history", .synopsis = "", .fn = cmd_history, .opts = history_opts,
	.summary = "Ask rerandd for the past rerandomizing reboots: when, trigger, result,\n"
		   "confirmation, cause, downtime and duration (never an address).",
	.text = "Exit status: 0 the history was printed (perhaps empty), 1 rerandd could not be\n"
		"asked or could not read its history file, 64 usage error.\n",
};

int cmd_history(int argc, char **argv)
{
	static char buf[65536];
	int json = CLI_JSON_NONE, c, r;

	while ((c = cli_getopt(&cli_history, argc, argv)) != -1) {
		if (c == 'S') {
			/* cli_ctl_ask reads the socket from the environment */
			if (setenv(RR_CTL_SOCKET_ENV, optarg, 1) < 0) {
				cli_err("--socket: %m");
				return EXIT_FAILURE_RR;
			}
			continue;
		}
		if (c != 'j')
			return c == CLI_HELP ? 0 : EXIT_USAGE;
		if ((json = cli_json_mode(optarg)) < 0)
			return cli_usage_error(&cli_history, "--json=%s: want pretty or short", optarg);
	}
	if (optind != argc)
		return cli_usage_error(&cli_history, "takes no operands ('%s')", argv[optind]);
	r = cli_ctl_ask(json ? RR_CTLV_HISTORY_JSON "\n" : RR_CTLV_HISTORY "\n", buf, sizeof(buf));
	if (r == 0) {
		cli_json_reprint(buf, json);
		return 0;
	}
	if (r < 0) {
		const char *p = getenv(RR_CTL_SOCKET_ENV);
		cli_err("%s: cannot reach rerandd: %s", p && *p ? p : RR_CTL_SOCKET, strerror(-r));
	}
	/* as status --json: one object on stdout (docs/json/history.schema.json) */
	return cli_ctl_failed(r, buf, json);
}
