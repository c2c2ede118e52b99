/* SPDX-License-Identifier: GPL-2.0-only */
/* `rerand status [--json]`, `now [--wait]`, `due`, `hold`, `unhold`, `fleet status [--json]`,
 * `fleet release HOST`: one line to rerandd's control socket, its answer to
 * stdout.  RERAND_CONTROL_SOCKET overrides the socket path (tests). */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <getopt.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"
#include "cli.h"
#include "cmdtab.h"
#include "ctl.h"
#include "jsonout.h"

/* --socket PATH, else RERAND_CONTROL_SOCKET, else rerandd's default. */
static const char *ctl_socket;

#define SOCKET_OPT { "socket", 0, required_argument, "PATH", 'S', \
		     "rerandd's control socket (default $RERAND_CONTROL_SOCKET or " \
		     RR_CTL_SOCKET ")", "@file" }

/* The socket is root's alone (rerandd checks the peer too): say so, not
 * just "Permission denied", to the admin who forgot sudo. */
static const char *perm_hint(int err)
{
	if ((err == EACCES || err == EPERM) && geteuid() != 0)
		return " (rerandd's control socket is root's only: run rerand as root, e.g. with sudo)";
	return "";
}

/* Send LINE, read the answer into BUF.  0: rerandd said ok, BUF holds the
 * rest of its answer; 1: it refused, BUF holds why; < 0: it could not be
 * reached (-errno; the error is said on stderr unless QUIET). */
static int ctl_ask(const char *line, char *buf, size_t size, bool quiet)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = ctl_socket ? ctl_socket : getenv(RR_CTL_SOCKET_ENV);
	size_t got = 0;
	_cleanup_close_ int fd = -1;
	int err;

	if (!path || !*path)
		path = RR_CTL_SOCKET;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		cli_err("%s: socket path too long", path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = errno;
		if (!quiet)
			cli_err("%s: cannot reach rerandd: %s%s", path, strerror(err), perm_hint(err));
		return -err;
	}
	if (send(fd, line, strlen(line), MSG_NOSIGNAL) != (ssize_t)strlen(line)) {
		err = errno;
		/* rerandd answers a peer it refuses (not root) before reading
		 * the request, and closes: its answer is still there to read */
		ssize_t n = err == EPIPE || err == ECONNRESET ? read(fd, buf, size - 1) : -1;
		if (n > 0) {
			buf[n] = 0;
			return 1;
		}
		if (!quiet)
			cli_err("%s: send failed: %s", path, strerror(err));
		return -err;
	}
	for (;;) {
		ssize_t n = read(fd, buf + got, size - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || (got += (size_t)n) == size - 1)
			break;
	}
	buf[got] = 0;
	if (!strncmp(buf, RR_CTL_OK, strlen(RR_CTL_OK))) {
		memmove(buf, buf + strlen(RR_CTL_OK), got - strlen(RR_CTL_OK) + 1);
		return 0;
	}
	if (!got)
		snprintf(buf, size, "no answer");
	return 1;
}

int cli_ctl_ask(const char *line, char *buf, size_t size)
{
	return ctl_ask(line, buf, size, true);
}

/* JSON: --json=pretty of status and fleet status re-prints rerandd's line */
static int ctl_json = CLI_JSON_NONE;

static int ctl(const char *line)
{
	char buf[32768];
	int r = ctl_ask(line, buf, sizeof(buf), false);

	if (r == 0) {
		cli_json_reprint(buf, ctl_json);
		return 0;
	}
	return cli_ctl_failed(r, buf, ctl_json);
}

int cli_ctl_failed(int r, const char *buf, int json)
{
	if (r > 0)
		cli_err("rerandd: %s%s", buf, strstr(buf, "root only") ? perm_hint(EPERM) : "");
	/* --json always prints one object: a tool reading standard output
	 * gets the reason, not an empty line (the exit status is still 1). */
	if (json != CLI_JSON_NONE) {
		struct json_object *o = json_object_new_object();
		char why[512];

		if (r > 0)
			snprintf(why, sizeof(why), "rerandd: %.480s", buf);
		else
			snprintf(why, sizeof(why), "cannot reach rerandd: %s", strerror(-r));
		why[strcspn(why, "\n")] = 0;     /* rerandd's answer ends its line */
		rr_json_add_str(o, "error", why);
		cli_json_print(o, json);
	}
	return EXIT_FAILURE_RR;
}

static const struct cli_opt status_opts[] = {
	{ "json", 0, optional_argument, "pretty|short", 'j',
	  "rerandd's status as one JSON object (short: one line; pretty: indented)",
	  "pretty short" },
	SOCKET_OPT,
	{ 0 }
};

const struct cli_cmd cli_status = {
	.name = "status", .synopsis = "", .fn = cmd_status, .opts = status_opts,
	.summary = "Ask rerandd for the layout age, the next rerandomization and why, the last\n"
		   "verification, entropy, failures and the staged image.",
};

static const struct cli_opt socket_only_opts[] = {
	SOCKET_OPT,
	{ 0 }
};

/* A command with no operands and no option but --socket; -1 to go on. */
static int no_operands(const struct cli_cmd *cmd, int argc, char **argv)
{
	int c;

	while ((c = cli_getopt(cmd, argc, argv)) != -1) {
		if (c == 'S') {
			ctl_socket = optarg;
			continue;
		}
		return c == CLI_HELP ? 0 : EXIT_USAGE;
	}
	if (optind != argc)
		return cli_usage_error(cmd, "takes no operands ('%s')", argv[optind]);
	return -1;
}

/* --json[=pretty|short] and --socket, the options of status and fleet;
 * -1 to go on, else the exit code. */
static int json_socket_opts(const struct cli_cmd *cmd, int argc, char **argv, bool *json)
{
	int c;

	while ((c = cli_getopt(cmd, argc, argv)) != -1) {
		if (c == 'S') {
			ctl_socket = optarg;
			continue;
		}
		if (c != 'j')
			return c == CLI_HELP ? 0 : EXIT_USAGE;
		*json = true;
		if ((ctl_json = cli_json_mode(optarg)) < 0)
			return cli_usage_error(cmd, "--json=%s: want pretty or short", optarg);
	}
	return -1;
}

int cmd_status(int argc, char **argv)
{
	bool json = false;
	int r = json_socket_opts(&cli_status, argc, argv, &json);

	if (r >= 0)
		return r;
	if (optind != argc)
		return cli_usage_error(&cli_status, "takes no operands ('%s')", argv[optind]);
	return ctl(json ? RR_CTLV_STATUS_JSON "\n" : RR_CTLV_STATUS "\n");
}

/* `rerand now --wait` gives up: the request is taken back, so that
 * nothing happens later by itself (kured, told the reboot failed,
 * uncordons the node and gives its lock back).  0 if the reboot was under
 * way after all, else EXIT_FAILURE_RR. */
static int now_withdraw(void)
{
	char buf[512];
	int r = ctl_ask(RR_CTLV_NOW_WITHDRAW "\n", buf, sizeof(buf), false);

	if (r == 0 && !strncmp(buf, "under way", 9)) {
		puts("rerandomizing reboot under way");
		return 0;
	}
	if (r > 0)
		cli_err("rerandd: %s", buf);
	else if (r == 0)
		cli_err("now: the request is withdrawn: nothing will reboot for it");
	return EXIT_FAILURE_RR;
}

/* `rerand now --wait`: request, then follow the sequence until the reboot
 * is under way (kured's --reboot-command).  0 only then: kured, told 0,
 * waits for the node to go down and does nothing else.  Fails at once on
 * a hold, a logind block inhibitor or the BlockerCommand=, and after
 * TIMEOUT seconds on anything else that keeps it from starting; failing,
 * it withdraws its request. */
static int now_wait(long timeout)
{
	char buf[512], phase[32], action[32], blocker[32], reason[32], hold[32];
	time_t end = time(NULL) + timeout;
	bool started = false;
	unsigned polls = 0;
	int r = ctl_ask(RR_CTLV_NOW "\n", buf, sizeof(buf), false);

	if (r > 0)
		cli_err("rerandd: %s", buf);
	if (r)
		return EXIT_FAILURE_RR;
	for (;; polls++) {
		r = ctl_ask(RR_CTLV_PHASE "\n", buf, sizeof(buf), started);
		if (r < 0 && started) {
			/* rerandd stopped answering once its sequence had begun:
			 * the machine is going down */
			puts("rerandomizing reboot under way");
			return 0;
		}
		if (r > 0)
			cli_err("rerandd: %s", buf);
		if (r)
			return r > 0 ? now_withdraw() : EXIT_FAILURE_RR;
		if (sscanf(buf, "%31s %31s %31s %31s %31s", phase, action, blocker, reason,
			   hold) != 5) {
			cli_err("rerandd: unexpected answer to phase: %s", buf);
			return now_withdraw();
		}
		if (!strcmp(phase, "reboot") || !strcmp(phase, "rebooting")) {
			puts("rerandomizing reboot under way");
			return 0;
		}
		if (strcmp(phase, "idle"))
			started = true;
		else if (!strcmp(hold, "held")) {
			cli_err("now: a hold is in place (rerand unhold lifts it)");
			return now_withdraw();
		} else if (polls && !strcmp(action, "blocked") &&
			   (!strcmp(blocker, "inhibitor") || !strcmp(blocker, "blocker-command"))) {
			/* from the second look on: the first may show the plan
			 * from before the request */
			cli_err("now: the reboot is blocked by %s (rerand status says why)", blocker);
			return now_withdraw();
		}
		if (time(NULL) >= end) {
			cli_err("now: the reboot did not start within %ld s (phase %s, next %s, "
				"blocked by %s; journalctl -u rerandd says why)", timeout, phase,
				action, blocker);
			return now_withdraw();
		}
		sleep(1);
	}
}

static const struct cli_opt now_opts[] = {
	{ "wait", 0, no_argument, NULL, 'w',
	  "return once the reboot is under way (exit 0); fail on a hold, a blocker or the timeout, withdrawing the request", NULL },
	{ "timeout", 0, required_argument, "SECONDS", 't',
	  "how long --wait waits for the reboot to start (default 600)", NULL },
	SOCKET_OPT,
	{ 0 }
};

const struct cli_cmd cli_now = {
	.name = "now", .synopsis = "", .fn = cmd_now, .opts = now_opts,
	.summary = "Ask rerandd to rerandomize now (kured's --reboot-command with --wait).",
};

int cmd_now(int argc, char **argv)
{
	bool wait = false;
	long timeout = 600;
	char *end;
	int c;

	while ((c = cli_getopt(&cli_now, argc, argv)) != -1) {
		switch (c) {
		case 'w':
			wait = true;
			break;
		case 't':
			timeout = strtol(optarg, &end, 10);
			if (*end || end == optarg || timeout <= 0 || timeout > 86400)
				return cli_usage_error(&cli_now, "--timeout '%s' is not a number of "
						       "seconds (1-86400)", optarg);
			break;
		case 'S':
			ctl_socket = optarg;
			break;
		case CLI_HELP:
			return 0;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind != argc)
		return cli_usage_error(&cli_now, "takes no operands ('%s')", argv[optind]);
	return wait ? now_wait(timeout) : ctl(RR_CTLV_NOW "\n");
}

/* `rerand due`: kured's --reboot-sentinel-command.  kured reboots on 0 and
 * warns on any code but 1, so an unreachable rerandd is not "not due".
 * kured runs it every minute (its metric) and at every --period. */
const struct cli_cmd cli_due = {
	.name = "due", .synopsis = "", .fn = cmd_due, .opts = socket_only_opts,
	.summary = "Say whether a rerandomization is due now and would go through\n"
		   "(kured's --reboot-sentinel-command).",
	.text = "Exit status:\n"
		"  0  due now, and nothing rerand knows of would refuse `rerand now --wait`\n"
		"  1  not due (a young layout, a hold, nothing staged, back-off, stopped after\n"
		"     MaxFailures, a closed window of rerandd's own, this boot not confirmed,\n"
		"     the fleet's breaker, a logind block inhibitor, the BlockerCommand=)\n"
		"  3  rerandd could not be asked\n"
		" 64  usage error\n",
};

#define DUE_PENDING_MAX 120        /* seconds: the blockers' answer, BlockerTimeout= 30 s by default */

int cmd_due(int argc, char **argv)
{
	char buf[512];
	time_t end = time(NULL) + DUE_PENDING_MAX;
	int r = no_operands(&cli_due, argc, argv);

	if (r >= 0)
		return r;
	for (;;) {
		r = ctl_ask(RR_CTLV_DUE "\n", buf, sizeof(buf), false);
		if (r > 0)
			cli_err("rerandd: %s", buf);
		if (r)
			return EXIT_DUE_ERROR;
		if (strncmp(buf, "pending", 7))
			break;
		if (time(NULL) >= end) {
			printf("not due: the blockers did not answer within %d s\n", DUE_PENDING_MAX);
			return EXIT_NOT_DUE;
		}
		usleep(200 * 1000);
	}
	fputs(buf, stdout);
	return strncmp(buf, "due", 3) ? EXIT_NOT_DUE : 0;
}

static const struct cli_opt hold_opts[] = {
	{ "reason", 0, required_argument, "TEXT", 'r',
	  "why: one line of 1 to 150 characters, shown by `rerand status` with the hold's time", NULL },
	SOCKET_OPT,
	{ 0 }
};

const struct cli_cmd cli_hold = {
	.name = "hold", .synopsis = "", .fn = cmd_hold, .opts = hold_opts,
	.summary = "Ask rerandd to block its reboots until `rerand unhold`.",
};

/* hold/unhold as apt-mark has them; "release" is the word of `fleet release
 * HOST` (free a slot), so lifting a hold no longer shares it (issue 40).
 * The old name still works and says so. */
const struct cli_cmd cli_unhold = {
	.name = "unhold", .synopsis = "", .fn = cmd_unhold, .opts = socket_only_opts,
	.summary = "Lift the block `rerand hold` put in place.",
};

const struct cli_cmd cli_release = {
	.name = "release", .synopsis = "", .fn = cmd_release, .opts = socket_only_opts,
	.summary = "The old name of `rerand unhold` (lifts a hold; kept for scripts).",
};

/* `rerand hold [--reason TEXT]`: the reason and the time are shown by
 * `rerand status`; the control line is "hold TEXT". */
int cmd_hold(int argc, char **argv)
{
	const char *reason = NULL;
	char line[200];
	int c;

	while ((c = cli_getopt(&cli_hold, argc, argv)) != -1) {
		if (c == 'S')
			ctl_socket = optarg;
		else if (c == 'r')
			reason = optarg;
		else
			return c == CLI_HELP ? 0 : EXIT_USAGE;
	}
	if (optind != argc)
		return cli_usage_error(&cli_hold, "takes no operands ('%s')", argv[optind]);
	if (!reason)
		return ctl(RR_CTLV_HOLD "\n");
	if (!*reason || strlen(reason) > 150 || strpbrk(reason, "\n\r"))
		return cli_usage_error(&cli_hold, "--reason wants one line of 1 to 150 characters");
	snprintf(line, sizeof(line), RR_CTLV_HOLD " %s\n", reason);
	return ctl(line);
}

int cmd_unhold(int argc, char **argv)
{
	int r = no_operands(&cli_unhold, argc, argv);
	return r >= 0 ? r : ctl(RR_CTLV_UNHOLD "\n");
}

int cmd_release(int argc, char **argv)
{
	int r = no_operands(&cli_release, argc, argv);

	if (r >= 0)
		return r;
	cli_err("`rerand release` is now `rerand unhold` (`fleet release HOST` frees a slot); "
		"lifting the hold");
	return ctl(RR_CTLV_UNHOLD "\n");
}

/* The fleet commands go through rerandd: it has the [Fleet] settings, the TLS
 * client certificate and the identity, so the CLI needs none of them. */
static const struct cli_opt fleet_opts[] = {
	{ "json", 0, optional_argument, "pretty|short", 'j',
	  "fleet status: as one JSON object (short: one line; pretty: indented)", "pretty short" },
	SOCKET_OPT,
	{ 0 }
};

const struct cli_cmd cli_fleet = {
	.name = "fleet", .synopsis = "status | release HOST | clear-breaker", .fn = cmd_fleet,
	.opts = fleet_opts, .operand_complete = "status release clear-breaker",
	.summary = "Through rerandd: the fleet group's holders and free slots; free a stuck\n"
		   "etcd slot of HOST; close the fleet's open circuit breaker.",
};

int cmd_fleet(int argc, char **argv)
{
	char line[300];
	bool json = false;
	int r = json_socket_opts(&cli_fleet, argc, argv, &json);

	if (r >= 0)
		return r;
	/* getopt moved the operands behind the options */
	char **ops = argv + optind;
	int n = argc - optind;
	if (n > 2)
		return cli_usage_error(&cli_fleet, "too many operands ('%s')", ops[2]);
	if (n == 0)
		return cli_usage_error(&cli_fleet, "status, release HOST or clear-breaker is missing");
	if (json && strcmp(ops[0], "status"))
		return cli_usage_error(&cli_fleet, "--json is for fleet status only");
	if (n == 1 && !strcmp(ops[0], "status"))
		return ctl(json ? RR_CTLV_FLEET_STATUS_JSON "\n" : RR_CTLV_FLEET_STATUS "\n");
	if (n == 1 && !strcmp(ops[0], "clear-breaker"))
		return ctl(RR_CTLV_FLEET_CLEAR_BREAKER "\n");
	if (!strcmp(ops[0], "release")) {
		if (n != 2)
			return cli_usage_error(&cli_fleet, n == 1 ? "release: the HOST is missing" :
					       "release: one HOST only");
		const char *h = ops[1];
		if (!*h || strlen(h) > 127 || strpbrk(h, " \t\n\r\"\\"))
			return cli_usage_error(&cli_fleet, "release: '%s' is not a host identity", h);
		snprintf(line, sizeof(line), RR_CTLV_FLEET_RELEASE " %s\n", h);
		return ctl(line);
	}
	if (strcmp(ops[0], "status") && strcmp(ops[0], "clear-breaker"))
		return cli_usage_error(&cli_fleet, "unknown fleet command '%s'", ops[0]);
	return cli_usage_error(&cli_fleet, "%s takes no operands ('%s')", ops[0], ops[1]);
}

/* `rerand build KERNEL`: the kernel hook's way to an image.  rerandd builds
 * it as it builds its own (the unprivileged builder under its seccomp filter
 * and reaper, a checked root-only copy, checked before signing); nothing of
 * KERNEL is parsed here.  Exit 0: the image is in rerandd's cache (its path
 * printed); 1: rerandd refused or the build failed (why on stderr); 3:
 * rerandd could not be asked (not running: it builds the image itself when it
 * stages that kernel). */
static const struct cli_opt build_opts[] = {
	SOCKET_OPT,
	{ 0 }
};

const struct cli_cmd cli_build = {
	.name = "build", .synopsis = "KERNEL", .fn = cmd_build, .opts = build_opts,
	.summary = "Ask rerandd to build, check and cache the image of KERNEL through its\n"
		   "sandboxed builder (the Debian kernel hook's way); exit 3 if rerandd is not running.",
};

int cmd_build(int argc, char **argv)
{
	/* realpath(3) writes up to PATH_MAX bytes: a smaller buffer is an
	 * overflow, which _FORTIFY_SOURCE (Debian's build flags) aborts on */
	char line[RR_CTL_LINE + 8], buf[4096], abs[PATH_MAX];
	int c, r;

	while ((c = cli_getopt(&cli_build, argc, argv)) != -1) {
		if (c == 'S') {
			ctl_socket = optarg;
			continue;
		}
		return c == CLI_HELP ? 0 : EXIT_USAGE;
	}
	if (optind != argc - 1)
		return cli_usage_error(&cli_build, optind == argc ? "KERNEL is missing" :
				       "one KERNEL only ('%s')", argv[optind + 1]);
	/* rerandd opens it in its own mount namespace: an absolute path */
	if (!realpath(argv[optind], abs) && errno != ENAMETOOLONG) {
		cli_err("%s: %s", argv[optind], strerror(errno));
		return EXIT_FAILURE_RR;
	}
	if (strlen(argv[optind]) >= sizeof(abs) - 1 || strlen(abs) + sizeof(RR_CTLV_BUILD " \n") > RR_CTL_LINE) {
		cli_err("%s: path too long for rerandd's control line", argv[optind]);
		return EXIT_FAILURE_RR;
	}
	snprintf(line, sizeof(line), RR_CTLV_BUILD " %s\n", abs);
	r = ctl_ask(line, buf, sizeof(buf), false);
	if (r < 0)
		return EXIT_DUE_ERROR;
	if (r > 0) {
		cli_err("rerandd: %s", buf);
		return EXIT_FAILURE_RR;
	}
	fputs(buf, stdout);
	return 0;
}
