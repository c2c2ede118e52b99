/* SPDX-License-Identifier: GPL-2.0-only */
/* `rerand status [--json]`, `now [--wait]`, `due`, `hold`, `release`, `fleet status [--json]`,
 * `fleet release HOST`: one line to rerandd's control socket, its answer to
 * stdout.  RERAND_CONTROL_SOCKET overrides the socket path (tests). */
#include <errno.h>
#include <stdbool.h>
#include <getopt.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli.h"

#define CONTROL_SOCKET "/run/rerand/control"

/* Send LINE, read the answer into BUF.  0: rerandd said ok, BUF holds the
 * rest of its answer; 1: it refused, BUF holds why; < 0: it could not be
 * reached (-errno; the error is said on stderr unless QUIET). */
static int ctl_ask(const char *line, char *buf, size_t size, bool quiet)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = getenv("RERAND_CONTROL_SOCKET");
	size_t got = 0;
	int fd, err;

	if (!path || !*path)
		path = CONTROL_SOCKET;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		cli_err("%s: socket path too long", path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = errno;
		if (!quiet)
			cli_err("%s: cannot reach rerandd: %s", path, strerror(err));
		if (fd >= 0)
			close(fd);
		return -err;
	}
	if (send(fd, line, strlen(line), MSG_NOSIGNAL) != (ssize_t)strlen(line)) {
		err = errno;
		/* rerandd answers a peer it refuses (not root) before reading
		 * the request, and closes: its answer is still there to read */
		ssize_t n = err == EPIPE || err == ECONNRESET ? read(fd, buf, size - 1) : -1;
		close(fd);
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
	close(fd);
	buf[got] = 0;
	if (!strncmp(buf, "ok\n", 3)) {
		memmove(buf, buf + 3, got - 2);
		return 0;
	}
	if (!got)
		snprintf(buf, size, "no answer");
	return 1;
}

static int ctl(const char *line)
{
	char buf[32768];
	int r = ctl_ask(line, buf, sizeof(buf), false);

	if (r == 0) {
		fputs(buf, stdout);
		return 0;
	}
	if (r > 0)
		cli_err("rerandd: %s", buf);
	return EXIT_FAILURE_RR;
}

static int no_args(int argc, char **argv, const char *usage)
{
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("Usage: %s\n", usage);
		return 0;
	}
	if (argc != 1) {
		cli_err("usage: %s", usage);
		return EXIT_USAGE;
	}
	return -1;
}

int cmd_status(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--json"))
		return ctl("status json\n");
	int r = no_args(argc, argv, "rerand status [--json]");
	return r >= 0 ? r : ctl("status\n");
}

/* `rerand now --wait`: request, then follow the sequence until the reboot
 * is under way (kured's --reboot-command).  Fails at once on a hold, and
 * after TIMEOUT seconds on anything else that keeps it from starting. */
static int now_wait(long timeout)
{
	char buf[512], phase[32], action[32], blocker[32], reason[32], hold[32];
	time_t end = time(NULL) + timeout;
	bool started = false;
	int r = ctl_ask("now\n", buf, sizeof(buf), false);

	if (r > 0)
		cli_err("rerandd: %s", buf);
	if (r)
		return EXIT_FAILURE_RR;
	for (;;) {
		r = ctl_ask("phase\n", buf, sizeof(buf), started);
		if (r < 0 && started) {
			/* rerandd stopped answering once its sequence had begun:
			 * the machine is going down */
			puts("rerandomizing reboot under way");
			return 0;
		}
		if (r > 0)
			cli_err("rerandd: %s", buf);
		if (r)
			return EXIT_FAILURE_RR;
		if (sscanf(buf, "%31s %31s %31s %31s %31s", phase, action, blocker, reason,
			   hold) != 5) {
			cli_err("rerandd: unexpected answer to phase: %s", buf);
			return EXIT_FAILURE_RR;
		}
		if (!strcmp(phase, "reboot") || !strcmp(phase, "rebooting")) {
			puts("rerandomizing reboot under way");
			return 0;
		}
		if (strcmp(phase, "idle"))
			started = true;
		else if (!strcmp(hold, "held")) {
			cli_err("now: a hold is in place (rerand release lifts it)");
			return EXIT_FAILURE_RR;
		}
		if (time(NULL) >= end) {
			cli_err("now: the reboot did not start within %ld s (phase %s, next %s, "
				"blocked by %s; journalctl -u rerandd says why)", timeout, phase,
				action, blocker);
			return EXIT_FAILURE_RR;
		}
		sleep(1);
	}
}

int cmd_now(int argc, char **argv)
{
	static const char usage[] = "rerand now [--wait [--timeout SECONDS]]";
	static const struct option opts[] = {
		{ "wait", no_argument, NULL, 'w' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	bool wait = false;
	long timeout = 600;
	char *end;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'w':
			wait = true;
			break;
		case 't':
			timeout = strtol(optarg, &end, 10);
			if (*end || end == optarg || timeout <= 0 || timeout > 86400) {
				cli_err("now: --timeout '%s' is not a number of seconds (1-86400)",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h':
			printf("Usage: %s\n"
			       "Ask rerandd to rerandomize now.  --wait: return once the reboot is\n"
			       "under way (exit 0), or fail when it is held or has not started within\n"
			       "--timeout seconds (default 600).\n", usage);
			return 0;
		default:
			cli_err("usage: %s", usage);
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		cli_err("usage: %s", usage);
		return EXIT_USAGE;
	}
	return wait ? now_wait(timeout) : ctl("now\n");
}

/* `rerand due`: kured's --reboot-sentinel-command.  kured reboots on 0 and
 * warns on any code but 1, so an unreachable rerandd is not "not due". */
int cmd_due(int argc, char **argv)
{
	char buf[512];
	int r = no_args(argc, argv, "rerand due");

	if (r >= 0)
		return r;
	r = ctl_ask("due\n", buf, sizeof(buf), false);
	if (r > 0)
		cli_err("rerandd: %s", buf);
	if (r)
		return EXIT_DUE_ERROR;
	fputs(buf, stdout);
	return strncmp(buf, "due", 3) ? EXIT_NOT_DUE : 0;
}

/* `rerand hold [--reason TEXT]`: the reason and the time are shown by
 * `rerand status`; the control line is "hold TEXT". */
int cmd_hold(int argc, char **argv)
{
	static const char usage[] = "rerand hold [--reason TEXT]";
	char line[200];
	const char *reason = NULL;

	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("Usage: %s\n  --reason TEXT  why, shown by `rerand status` with the "
		       "hold's time\n", usage);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "--reason"))
		reason = argv[2];
	else if (argc == 2 && !strncmp(argv[1], "--reason=", 9))
		reason = argv[1] + 9;
	else if (argc != 1) {
		cli_err("usage: %s", usage);
		return EXIT_USAGE;
	}
	if (!reason)
		return ctl("hold\n");
	if (!*reason || strlen(reason) > 150 || strpbrk(reason, "\n\r")) {
		cli_err("hold: --reason wants one line of 1 to 150 characters");
		return EXIT_USAGE;
	}
	snprintf(line, sizeof(line), "hold %s\n", reason);
	return ctl(line);
}

int cmd_release(int argc, char **argv)
{
	int r = no_args(argc, argv, "rerand release");
	return r >= 0 ? r : ctl("release\n");
}

/* The fleet commands go through rerandd: it has the [Fleet] settings, the TLS
 * client certificate and the identity, so the CLI needs none of them. */
int cmd_fleet(int argc, char **argv)
{
	static const char usage[] = "rerand fleet status [--json] | rerand fleet release HOST | "
		"rerand fleet clear-breaker";
	char line[300];

	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("Usage: %s\n", usage);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "status"))
		return ctl("fleet status\n");
	if (argc == 3 && !strcmp(argv[1], "status") && !strcmp(argv[2], "--json"))
		return ctl("fleet status json\n");
	if (argc == 2 && !strcmp(argv[1], "clear-breaker"))
		return ctl("fleet clear-breaker\n");
	if (argc == 3 && !strcmp(argv[1], "release")) {
		const char *h = argv[2];
		if (!*h || strlen(h) > 127 || strpbrk(h, " \t\n\r\"\\")) {
			cli_err("fleet release: '%s' is not a host identity", h);
			return EXIT_USAGE;
		}
		snprintf(line, sizeof(line), "fleet release %s\n", h);
		return ctl(line);
	}
	cli_err("usage: %s", usage);
	return EXIT_USAGE;
}
