/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The daemon guest's latency probe (tests/e2e/daemon-init.sh): rerandd's
 * own answer time on its control socket, without a client's fork and exec
 * (which under TCG costs more than the limit even when rerandd is idle).
 * Every 200 ms: connect to SOCK, send "status\n", read to EOF, until FILE
 * contains TEXT or MAX seconds pass.
 *
 * The guest is one TCG vCPU on a shared host: when the host does not run
 * it, every process in it stalls, rerandd and this probe alike, and no
 * design of rerandd's can answer sooner.  A meter thread wakes every 1 ms
 * and records how late it woke while a request was out; a late wake-up
 * means the whole guest stood still (the meter is nice 0 and does nothing,
 * so nothing in the guest keeps it off the CPU for long).  rerandd's own
 * share of a request is its time minus that stall.  Both are reported:
 * "samples=N worst_ms=W own_worst_ms=O stall_at_worst_ms=S failed=F".
 * Built static by tests/e2e/lib-daemon.sh; a test tool, not product code.
 */
#include <pthread.h>
#include <stdatomic.h>
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

/* The meter: the longest stall (ms) since `window` opened, clipped to it. */
static _Atomic long long window = -1, stall;

static void *meter(void *arg)
{
	struct timespec d = { 0, 1000000 };
	long long prev = now_ms(), t, w, gap;

	(void)arg;
	for (;;) {
		nanosleep(&d, NULL);
		t = now_ms();
		gap = t - prev - 1;
		prev = t;
		w = atomic_load(&window);
		if (w < 0)
			continue;
		if (gap > t - w)
			gap = t - w;
		if (gap > atomic_load(&stall))
			atomic_store(&stall, gap);
	}
	return NULL;
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
	long long end, worst = 0, own_worst = 0, stall_at_worst = 0, t, st;
	unsigned n = 0, failed = 0;
	pthread_t th;

	if (argc != 5) {
		fprintf(stderr, "usage: ctl-latency SOCK FILE TEXT MAX_SECONDS\n");
		return 2;
	}
	if (pthread_create(&th, NULL, meter, NULL)) {
		fprintf(stderr, "ctl-latency: cannot start the meter thread\n");
		return 1;
	}
	end = now_ms() + atoll(argv[4]) * 1000;
	while (!file_has(argv[2], argv[3]) && now_ms() < end) {
		atomic_store(&stall, 0);
		atomic_store(&window, now_ms());
		t = ask(argv[1]);
		atomic_store(&window, -1);
		st = atomic_load(&stall);
		n++;
		if (t < 0) {
			failed++;
		} else {
			if (t > worst) {
				worst = t;
				stall_at_worst = st;
			}
			if (t - st > own_worst)
				own_worst = t - st;
		}
		usleep(200000);
	}
	printf("samples=%u worst_ms=%lld own_worst_ms=%lld stall_at_worst_ms=%lld failed=%u\n",
	       n, worst, own_worst, stall_at_worst, failed);
	return 0;
}
