/* SPDX-License-Identifier: GPL-2.0-only */
/* A step of the wall clock for one process: the clock faults of the fleet chaos
 * test (tests/fleet/test-fleet-chaos.sh), LD_PRELOADed into each host's rerandd and
 * rerand-fleetd.  MOCKED, and only this: a real step (settimeofday, NTP) would
 * move the clock of this whole machine under every other test running on it.
 *
 * What a real step moves, this moves: CLOCK_REALTIME (and its _COARSE, _ALARM and
 * TAI relatives) as read through clock_gettime(), gettimeofday(), time() and
 * timespec_get().  What a real step leaves alone, this leaves alone:
 * CLOCK_MONOTONIC, CLOCK_BOOTTIME and every timer armed on them (timerfd, poll and
 * epoll timeouts).  That is why this is not libfaketime: libfaketime 0.9.10 also
 * moves absolute timerfd deadlines on CLOCK_MONOTONIC and CLOCK_BOOTTIME by its
 * offset, even with FAKETIME_DONT_FAKE_MONOTONIC=1 (a 1 s timer fires at once at
 * +300 s and not for 300 s at -300 s), which would spin or stall every sd-event
 * timer of rerandd as no real step does.
 * Not modelled: timers armed on CLOCK_REALTIME (neither program arms one) and the
 * times of files (a real step stamps new files with the stepped time).
 *
 * $RERAND_WALLSTEP_FILE holds the step in whole seconds ("+300", "-300", "0"),
 * read again at most once a second (on CLOCK_BOOTTIME).  Each time the process
 * reads the wall clock under a step it had not read under before, one line
 * "COMM PID STEP" is appended to $RERAND_WALLSTEP_FILE.seen: the test's evidence
 * that the step reached the process. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static _Atomic long long step_s;          /* the step in force */
static _Atomic long long next_read_ns;    /* CLOCK_BOOTTIME of the next look */
static _Atomic long long seen_s;          /* the last step reported as seen */

static int real_clock_gettime(clockid_t id, struct timespec *ts)
{
	static int (*fn)(clockid_t, struct timespec *);

	if (!fn)
		fn = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
	return fn ? fn(id, ts) : (int)syscall(SYS_clock_gettime, id, ts);
}

/* The file's step, re-read once a second; the last good one when it is
 * missing, empty (caught between the truncation and the write of an echo) or
 * malformed. */
static long long step_now(void)
{
	const char *path = getenv("RERAND_WALLSTEP_FILE");
	struct timespec bt;
	long long t, v;
	char buf[32], *end;
	ssize_t n;
	int fd;

	if (!path || real_clock_gettime(CLOCK_BOOTTIME, &bt) < 0)
		return atomic_load(&step_s);
	t = (long long)bt.tv_sec * 1000000000 + bt.tv_nsec;
	if (t < atomic_load(&next_read_ns))
		return atomic_load(&step_s);
	atomic_store(&next_read_ns, t + 1000000000);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return atomic_load(&step_s);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		buf[n] = 0;
		v = strtoll(buf, &end, 10);
		if (end != buf && (*end == '\n' || !*end))
			atomic_store(&step_s, v);
	}
	return atomic_load(&step_s);
}

static void report(long long s)
{
	const char *path = getenv("RERAND_WALLSTEP_FILE");
	char f[4096], line[128], comm[32] = "?";
	int fd, n;

	if (!path || atomic_exchange(&seen_s, s) == s)
		return;
	fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = (int)read(fd, comm, sizeof(comm) - 1);
		close(fd);
		comm[n > 0 ? n : 0] = 0;
		comm[strcspn(comm, "\n")] = 0;
	}
	snprintf(f, sizeof(f), "%s.seen", path);
	n = snprintf(line, sizeof(line), "%s %d %+lld\n", comm, (int)getpid(), s);
	fd = open(f, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, line, (size_t)n) < 0) {
			/* nothing to do: the report is evidence, not function */
		}
		close(fd);
	}
}

static int is_wall(clockid_t id)
{
	return id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE || id == CLOCK_REALTIME_ALARM ||
	       id == CLOCK_TAI;
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
	long long s;
	int r = real_clock_gettime(id, ts);

	if (r == 0 && is_wall(id)) {
		s = step_now();
		if (s) {
			ts->tv_sec += s;
			report(s);
		} else {
			atomic_store(&seen_s, 0);
		}
	}
	return r;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
	struct timespec ts;

	if (tz)
		memset(tz, 0, sizeof(struct timezone));
	if (clock_gettime(CLOCK_REALTIME, &ts) < 0)
		return -1;
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}

time_t time(time_t *t)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_REALTIME, &ts) < 0)
		return (time_t)-1;
	if (t)
		*t = ts.tv_sec;
	return ts.tv_sec;
}

int timespec_get(struct timespec *ts, int base)
{
	if (base != TIME_UTC || clock_gettime(CLOCK_REALTIME, ts) < 0)
		return 0;
	return base;
}
