/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The daemon guest's latency probe (tests/e2e/daemon-init.sh): rerandd's
 * own answer time on its control socket, without a client's fork and exec
 * (which under TCG costs more than the limit even when rerandd is idle).
 * Every 200 ms: connect to SOCK, send "status\n", read to EOF, until FILE
 * contains TEXT or MAX seconds pass.  Prints "samples=N worst_ms=W failed=F".
 * Built static by tests/e2e/lib-daemon.sh; a test tool, not product code.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

static int file_has(const char *path, const char *text)
{
	static char buf[1 << 20];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return strstr(buf, text) != NULL;
}

/* One request: its time in ms, or -1 if it got no "ok" answer. */
static long long ask(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char buf[32768];
	size_t got = 0;
	long long t0 = now_ms();
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    write(fd, "status\n", 7) != 7) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	for (;;) {
		ssize_t n = read(fd, buf + got, sizeof(buf) - 1 - got);
		if (n <= 0 || (got += (size_t)n) == sizeof(buf) - 1)
			break;
	}
	close(fd);
	return got >= 3 && !memcmp(buf, "ok\n", 3) ? now_ms() - t0 : -1;
}

int main(int argc, char **argv)
{
	long long end, worst = 0, t;
	unsigned n = 0, failed = 0;

	if (argc != 5) {
		fprintf(stderr, "usage: ctl-latency SOCK FILE TEXT MAX_SECONDS\n");
		return 2;
	}
	end = now_ms() + atoll(argv[4]) * 1000;
	while (!file_has(argv[2], argv[3]) && now_ms() < end) {
		t = ask(argv[1]);
		n++;
		if (t < 0)
			failed++;
		else if (t > worst)
			worst = t;
		usleep(200000);
	}
	printf("samples=%u worst_ms=%lld failed=%u\n", n, worst, failed);
	return 0;
}
