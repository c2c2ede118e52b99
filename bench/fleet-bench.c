/* SPDX-License-Identifier: GPL-2.0-only */
/* `make bench-fleet` and tests/fleet/test-fleet-bench.sh: N simulated hosts in
 * one process, each with its own fleet client (libfleetd: rerand-fleetd's own
 * client, its own curl handle and TCP connection), driven the way rerandd drives
 * its helper (daemon/coord.c): all due at once, acquire with back-off (a refusal
 * followed by a breaker read), the slot moved to its down lease before the
 * "reboot" (fleet_down, the helper's "down" verb), a new client after the boot
 * that resumes the token and reads the breaker, the confirmation with
 * keepalives, the release.  Only the reboot is simulated: a sleep of the
 * downtime, then a new client.  One process with a thread per host, because a
 * rerandd and a rerand-fleetd per host (two processes, about 8 MiB between
 * them, and each a process for the 2-core machine to schedule) would make
 * 1,000 hosts measure the machine rather than the fleet.
 *
 * Events go to -o as "<unix ms> HOST EVENT [detail]" lines (the chaos test's
 * history format: REBOOT = the host goes down, BOOT = it is up again), with
 * DUE, ACQUIRED (attempts=N), RELEASED, DONE or GAVE_UP.  --idle S: no host is
 * due; each reads the breaker every BREAKER_POLL_MS / scale (rerandd's idle
 * poll, daemon/coord.h) for S seconds.  Exit 0 when every host completed, 1
 * when one did not (deadline), 2 on bad usage or configuration. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "fleetd.h"
#include "fleet-conf.h"
#include "rerandd.h"    /* daemon/coord.h: BREAKER_POLL_MS, rerandd's idle breaker poll */

struct opts {
	const char *conf, *out;
	unsigned n;
	int64_t down_ms, confirm_ms, drain_ms, deadline_s, idle_s, scale;
	long plant_extra, plant_hold;     /* host index, -1 none */
};

struct host {
	unsigned idx;
	char name[32];
	struct fleet_config cfg;
	pthread_t th;
	int done;                         /* 1 complete, -1 gave up */
};

static struct opts o = { .down_ms = 2000, .confirm_ms = 1000, .deadline_s = 600, .scale = 100,
			 .plant_extra = -1, .plant_hold = -1 };
static int out_fd = -1;
static atomic_bool stop;
static pthread_barrier_t start_bar;
static atomic_uint ready;           /* hosts at the start line */
static int64_t t_due_ms;

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* sleeps, cut short (in 100 ms steps) when the run is stopped */
static void sleep_ms(int64_t ms)
{
	while (ms > 0 && !atomic_load(&stop)) {
		int64_t s = ms < 100 ? ms : 100;
		struct timespec ts = { s / 1000, (s % 1000) * 1000000 };
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
		ms -= s;
	}
}

static uint64_t rnd64(void)
{
	uint64_t v = 0;
	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint64_t)mono_ms() * 6364136223846793005ull;
	return v;
}

static void ev(const struct host *h, const char *event, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void ev(const struct host *h, const char *event, const char *fmt, ...)
{
	char line[1024];
	int n;
	va_list ap;

	n = snprintf(line, sizeof(line), "%" PRId64 " %s %s ", now_ms(), h->name, event);
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	/* O_APPEND: one write a line, whole, whatever the other threads do */
	if (write(out_fd, line, (size_t)n) != n)
		perror("fleet-bench: events");
}

static struct fleet *client(struct host *h)
{
	char err[512];
	struct fleet *f;

	if (fleet_open(&h->cfg, &f, err, sizeof(err))) {
		fprintf(stderr, "fleet-bench: %s: %s\n", h->name, err);
		return NULL;
	}
	return f;
}

static void *idle_host(void *arg)
{
	struct host *h = arg;
	struct fleet *f = client(h);
	int64_t period = BREAKER_POLL_MS / o.scale, end;

	atomic_fetch_add(&ready, 1);
	pthread_barrier_wait(&start_bar);
	if (!f) {
		h->done = -1;
		return NULL;
	}
	end = mono_ms() + o.idle_s * 1000;
	/* each host's poll falls anywhere in the period, as hosts started at
	 * different times would */
	sleep_ms((int64_t)(rnd64() % (uint64_t)period));
	while (mono_ms() < end && !atomic_load(&stop)) {
		if (fleet_breaker(f) < 0)
			ev(h, "ERROR", "breaker: %s", fleet_last_error(f));
		sleep_ms(period);
	}
	fleet_close(f);
	h->done = 1;
	return NULL;
}

static void *rollout_host(void *arg)
{
	struct host *h = arg;
	struct fleet *f = client(h);
	char tok[FLEET_TOKEN_MAX];
	unsigned attempts = 0;
	int64_t keep_ms = h->cfg.lock_ttl * 1000 / 3;
	int r;

	/* rerandd's start: the start-up release, then the breaker (coord.c) */
	if (f && fleet_release(f) < 0)
		ev(h, "ERROR", "start-up release: %s", fleet_last_error(f));
	if (f && fleet_breaker(f) < 0)
		ev(h, "ERROR", "breaker: %s", fleet_last_error(f));
	atomic_fetch_add(&ready, 1);
	pthread_barrier_wait(&start_bar);
	if (!f)
		goto fail;
	for (;;) {
		for (;;) {
			if (atomic_load(&stop))
				goto fail;
			r = fleet_acquire(f);
			attempts++;
			if (r == 1)
				break;
			/* coord.c acquire_reply: a refusal makes rerandd read the breaker */
			if (r == 0 && fleet_breaker(f) < 0)
				ev(h, "ERROR", "breaker: %s", fleet_last_error(f));
			if (r < 0)
				ev(h, "ERROR", "acquire: %s", fleet_last_error(f));
			sleep_ms(fleet_next_delay_ms(f, rnd64()));
		}
		ev(h, "ACQUIRED", "attempts=%u", attempts);
		sleep_ms(o.drain_ms);
		/* coord's CO_CONFIRM: the helper's "down" */
		r = fleet_down(f);
		if (r == 1)
			break;
		ev(h, "ABORT", "down=%d %s", r, fleet_last_error(f));
		fleet_release(f);
		sleep_ms(fleet_next_delay_ms(f, rnd64()));
	}
	fleet_token(f, tok, sizeof(tok));
	fleet_close(f);
	ev(h, "REBOOT", "token=%s", tok);
	sleep_ms(o.down_ms);
	ev(h, "BOOT", "-");
	/* a new boot: a new helper, handed the settings and the persisted token */
	f = client(h);
	if (!f)
		goto fail;
	r = fleet_resume(f, tok);
	if (r != 1)
		ev(h, "ERROR", "resume=%d %s", r, fleet_last_error(f));
	if (fleet_breaker(f) < 0)
		ev(h, "ERROR", "breaker: %s", fleet_last_error(f));
	/* the confirmation (boot-complete, post-boot hooks), keepalives every LockTTL/3 */
	for (int64_t t0 = mono_ms(), last = t0; mono_ms() - t0 < o.confirm_ms;) {
		int64_t left = o.confirm_ms - (mono_ms() - t0);
		sleep_ms(left < 100 ? left : 100);
		if (mono_ms() - last >= keep_ms) {
			last = mono_ms();
			fleet_refresh(f);
		}
	}
	if (h->idx == (unsigned long)o.plant_hold) {
		/* planted defect: this host never gives its slot back */
		ev(h, "PLANT", "holding its slot until the run ends");
		while (!atomic_load(&stop)) {
			sleep_ms(keep_ms);
			fleet_refresh(f);
		}
		fleet_close(f);
		goto fail;
	}
	while ((r = fleet_release(f)) < 0) {
		ev(h, "ERROR", "release: %s", fleet_last_error(f));
		if (atomic_load(&stop)) {
			fleet_close(f);
			goto fail;
		}
		sleep_ms(fleet_next_delay_ms(f, rnd64()));
	}
	ev(h, "RELEASED", "-");
	fleet_close(f);
	h->done = 1;
	return NULL;
fail:
	ev(h, "GAVE_UP", "%s", f ? "stopped" : "no client");
	h->done = -1;
	return NULL;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: fleet-bench -c CONFIG -n HOSTS -o EVENTS [--down MS] [--confirm MS] [--drain MS]\n"
		"                   [--deadline S] [--idle S] [--scale X] [--plant-extra-slot I]\n"
		"                   [--plant-hold I]\n");
	exit(2);
}

static int64_t num(const char *opt, const char *v, int64_t lo, int64_t hi)
{
	char *end;
	long long x;

	errno = 0;
	x = strtoll(v, &end, 10);
	if (errno || end == v || *end || x < lo || x > hi) {
		fprintf(stderr, "fleet-bench: %s %s: want a whole number from %" PRId64 " to %" PRId64 "\n",
			opt, v, lo, hi);
		exit(2);
	}
	return x;
}

int main(int argc, char **argv)
{
	struct fleet_config base;
	struct host *hosts;
	pthread_attr_t attr;
	struct rlimit rl;
	int64_t end;
	unsigned complete = 0;
	char err[256], v[32];

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *x = i + 1 < argc ? argv[i + 1] : NULL;
		if (!x)
			usage();
		i++;
		if (!strcmp(a, "-c")) o.conf = x;
		else if (!strcmp(a, "-o")) o.out = x;
		else if (!strcmp(a, "-n")) o.n = (unsigned)num(a, x, 1, 100000);
		else if (!strcmp(a, "--down")) o.down_ms = num(a, x, 0, 86400000);
		else if (!strcmp(a, "--confirm")) o.confirm_ms = num(a, x, 0, 86400000);
		else if (!strcmp(a, "--drain")) o.drain_ms = num(a, x, 0, 86400000);
		else if (!strcmp(a, "--deadline")) o.deadline_s = num(a, x, 1, 86400);
		else if (!strcmp(a, "--idle")) o.idle_s = num(a, x, 1, 86400);
		else if (!strcmp(a, "--scale")) o.scale = num(a, x, 1, 100000);
		else if (!strcmp(a, "--plant-extra-slot")) o.plant_extra = (long)num(a, x, 0, 100000);
		else if (!strcmp(a, "--plant-hold")) o.plant_hold = (long)num(a, x, 0, 100000);
		else usage();
	}
	if (!o.conf || !o.out || !o.n)
		usage();
	fleet_config_defaults(&base);
	if (fleet_conf_load("fleet-bench", o.conf, &base))
		return 2;
	if (base.backend != FLEET_BACKEND_ETCD) {
		fprintf(stderr, "fleet-bench: %s: want [Fleet] Backend=etcd\n", o.conf);
		return 2;
	}
	if (fleet_config_validate(&base, err, sizeof(err))) {
		fprintf(stderr, "fleet-bench: %s: %s\n", o.conf, err);
		return 2;
	}
	/* a TCP connection per host, to etcd and back */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < 2 * (rlim_t)o.n + 64) {
		fprintf(stderr, "fleet-bench: %u hosts need %u file descriptors; the limit is %llu\n",
			o.n, 2 * o.n + 64, (unsigned long long)rl.rlim_cur);
		return 2;
	}
	out_fd = open(o.out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (out_fd < 0) {
		fprintf(stderr, "fleet-bench: %s: %s\n", o.out, strerror(errno));
		return 2;
	}
	hosts = calloc(o.n, sizeof(*hosts));
	if (!hosts)
		return 2;
	for (unsigned i = 0; i < o.n; i++) {
		struct host *h = &hosts[i];
		h->idx = i;
		snprintf(h->name, sizeof(h->name), "h%05u", i);
		h->cfg = base;
		if (fleet_config_set(&h->cfg, "ID", h->name, err, sizeof(err))) {
			fprintf(stderr, "fleet-bench: ID=%s: %s\n", h->name, err);
			return 2;
		}
		if (i == (unsigned long)o.plant_extra) {
			/* planted defect: one host configured with K+1 */
			snprintf(v, sizeof(v), "%u", base.max_concurrent + 1);
			if (fleet_config_set(&h->cfg, "MaxConcurrent", v, err, sizeof(err))) {
				fprintf(stderr, "fleet-bench: --plant-extra-slot: %s\n", err);
				return 2;
			}
		}
	}
	/* libcurl's global init is not thread-safe: the first client is opened here */
	{
		struct fleet *f = client(&hosts[0]);
		if (!f)
			return 2;
		fleet_close(f);
	}
	pthread_barrier_init(&start_bar, NULL, o.n + 1);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 1 << 20);
	for (unsigned i = 0; i < o.n; i++)
		if (pthread_create(&hosts[i].th, &attr, o.idle_s ? idle_host : rollout_host, &hosts[i])) {
			fprintf(stderr, "fleet-bench: cannot start host %u of %u\n", i, o.n);
			return 2;
		}
	/* every host at the start line (its start-up release done): all due now */
	while (atomic_load(&ready) < o.n)
		usleep(10000);
	t_due_ms = now_ms();
	pthread_barrier_wait(&start_bar);
	{
		char line[128];
		int n = snprintf(line, sizeof(line), "%" PRId64 " - DUE hosts=%u K=%u down_ms=%" PRId64
				 " confirm_ms=%" PRId64 " %s\n", t_due_ms, o.n, base.max_concurrent,
				 o.down_ms, o.confirm_ms, o.idle_s ? "idle" : "rollout");
		if (write(out_fd, line, (size_t)n) != n)
			perror("fleet-bench: events");
	}
	end = mono_ms() + (o.idle_s ? o.idle_s + 30 : o.deadline_s) * 1000;
	for (;;) {
		unsigned d = 0;
		for (unsigned i = 0; i < o.n; i++)
			d += hosts[i].done != 0;
		if (d == o.n)
			break;
		if (mono_ms() > end) {
			atomic_store(&stop, true);
			fprintf(stderr, "fleet-bench: deadline: %u of %u hosts not done; stopping them\n",
				o.n - d, o.n);
			break;
		}
		usleep(100000);
	}
	for (unsigned i = 0; i < o.n; i++) {
		pthread_join(hosts[i].th, NULL);
		complete += hosts[i].done == 1;
	}
	printf("fleet-bench: %u of %u hosts %s in %.1f s\n", complete, o.n,
	       o.idle_s ? "idled" : "completed", (now_ms() - t_due_ms) / 1000.0);
	close(out_fd);
	free(hosts);
	return complete == o.n ? 0 : 1;
}
