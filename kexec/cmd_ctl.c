/* SPDX-License-Identifier: GPL-2.0-only */
/* `rerand status [--json]`, `now`, `hold`, `release`, `fleet status [--json]`,
 * `fleet release HOST`: one line to rerandd's control socket, its answer to
 * stdout.  RERAND_CONTROL_SOCKET overrides the socket path (tests). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli.h"

#define CONTROL_SOCKET "/run/rerand/control"

static int ctl(const char *line)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = getenv("RERAND_CONTROL_SOCKET");
	char buf[32768];
	size_t got = 0;
	int fd;

	if (!path || !*path)
		path = CONTROL_SOCKET;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		cli_err("%s: socket path too long", path);
		return EXIT_FAILURE_RR;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		cli_err("%s: cannot reach rerandd: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return EXIT_FAILURE_RR;
	}
	if (send(fd, line, strlen(line), MSG_NOSIGNAL) != (ssize_t)strlen(line)) {
		int err = errno;
		/* rerandd answers a peer it refuses (not root) before reading
		 * the request, and closes: its answer is still there to read */
		ssize_t n = err == EPIPE || err == ECONNRESET ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (n > 0) {
			buf[n] = 0;
			cli_err("rerandd: %s", buf);
		} else {
			cli_err("%s: send failed: %s", path, strerror(err));
		}
		close(fd);
		return EXIT_FAILURE_RR;
	}
	for (;;) {
		ssize_t n = read(fd, buf + got, sizeof(buf) - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || (got += (size_t)n) == sizeof(buf) - 1)
			break;
	}
	close(fd);
	buf[got] = 0;
	if (!strncmp(buf, "ok\n", 3)) {
		fputs(buf + 3, stdout);
		return 0;
	}
	cli_err("rerandd: %s", got ? buf : "no answer");
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

int cmd_now(int argc, char **argv)
{
	int r = no_args(argc, argv, "rerand now");
	return r >= 0 ? r : ctl("now\n");
}

int cmd_hold(int argc, char **argv)
{
	int r = no_args(argc, argv, "rerand hold");
	return r >= 0 ? r : ctl("hold\n");
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
	static const char usage[] = "rerand fleet status [--json] | rerand fleet release HOST";
	char line[300];

	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("Usage: %s\n", usage);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "status"))
		return ctl("fleet status\n");
	if (argc == 3 && !strcmp(argv[1], "status") && !strcmp(argv[2], "--json"))
		return ctl("fleet status json\n");
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
