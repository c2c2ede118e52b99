/* SPDX-License-Identifier: GPL-2.0-only */
/* A simulated rerandd host for the fleet tests: it uses the fleet API the way the
 * daemon does (acquire, drain with keepalives, persist the token, "reboot", resume,
 * verify, release).  Only the reboot is simulated: the process exits with 100 and
 * its runner restarts it (a new boot id) after a pause.  Events go to a shared log
 * as "<unix ms> <id> <EVENT> [detail]" lines, one write each. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "fleetd.h"
#include "fleet-conf.h"
#include "fleet_format.h"

static int log_fd = -1;
static char host_id[FLEET_ID_MAX] = "?";

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int64_t ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static uint64_t rnd64(void)
{
	uint64_t v = 0;
	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint64_t)now_ms() * 6364136223846793005ull;
	return v;
}

static void ev(const char *event, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ev(const char *event, const char *fmt, ...)
{
	char line[1024];
	int n;
	va_list ap;

	n = snprintf(line, sizeof(line), "%" PRId64 " %s %s ", now_ms(), host_id, event);
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (log_fd >= 0 && write(log_fd, line, (size_t)n) != n)
		perror("fleet-sim: log");
	fwrite(line, 1, (size_t)n, stderr);
}

struct sim_state { char phase[32]; char token[FLEET_TOKEN_MAX]; unsigned boots; };

static void state_read(const char *dir, struct sim_state *s)
{
	char path[1024], line[256];
	FILE *fp;

	memset(s, 0, sizeof(*s));
	snprintf(s->phase, sizeof(s->phase), "idle");
	snprintf(path, sizeof(path), "%s/state", dir);
	fp = fopen(path, "re");
	if (!fp)
		return;
	while (fgets(line, sizeof(line), fp)) {
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "phase=", 6))
			snprintf(s->phase, sizeof(s->phase), "%.31s", line + 6);
		else if (!strncmp(line, "token=", 6))
			snprintf(s->token, sizeof(s->token), "%.63s", line + 6);
		else if (!strncmp(line, "boots=", 6))
			s->boots = (unsigned)strtoul(line + 6, NULL, 10);
	}
	fclose(fp);
}

/* write, fsync, rename: a kill -9 leaves the old or the new state */
static int state_write(const char *dir, const struct sim_state *s)
{
	char path[1024], tmp[1040];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/state", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fp = fopen(tmp, "we");
	if (!fp)
		return -errno;
	fprintf(fp, "phase=%s\ntoken=%s\nboots=%u\n", s->phase, s->token, s->boots);
	if (fflush(fp) || fsync(fileno(fp))) {
		fclose(fp);
		return -EIO;
	}
	fclose(fp);
	return rename(tmp, path) ? -errno : 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: fleet-sim -c CONFIG [-i ID] [-s STATEDIR] [-l LOG] [-d DRAIN_MS] [-v VERIFY_MS]\n"
		"                 [-t DEADLINE_S] CMD\n"
		"       fleet-sim acquire-body KEY VALUE FROM TO REV\n"
		"CMD: boot | acquire | release | refresh TOKEN | status [--json] | release-host HOST |\n"
		"     metrics | identity | ops OP...\n"
		"OP (one process, in order; one line each, \"OP RESULT TOKEN|ERROR\"): acquire |\n"
		"     refresh | down | release | resume:TOKEN | wait:PATH (up to 60 s) | touch:PATH\n");
	exit(2);
}

/* One simulated boot: settle a reboot in progress, else wait for a slot, drain,
 * and "reboot".  Exit 0 when this host's rerandomization is complete, 100 to be
 * rebooted, 3 when the deadline passed without a slot. */
static int sim_boot(struct fleet *f, const struct fleet_config *c, const char *dir,
		    int64_t drain_ms, int64_t verify_ms, int64_t deadline_s)
{
	struct sim_state s;
	char token[FLEET_TOKEN_MAX];
	int64_t end = now_ms() + deadline_s * 1000;
	int64_t keep_ms = c->lock_ttl * 1000 / 3;
	int r;

	state_read(dir, &s);
	s.boots++;
	state_write(dir, &s);
	ev("BOOT", "boot=%u boot_id=%016" PRIx64 " phase=%s", s.boots, rnd64(), s.phase);
	if (!strcmp(s.phase, "done")) {
		ev("COMPLETE", "already");
		return 0;
	}
	if (!strcmp(s.phase, "rebooting")) {
		r = fleet_resume(f, s.token);
		ev("RESUMED", "held=%d %s", r, r == 1 ? "" : fleet_last_error(f));
		/* verification and health hooks run while the slot keeps others out */
		for (int64_t t = 0; t < verify_ms; t += 200) {
			sleep_ms(verify_ms - t < 200 ? verify_ms - t : 200);
			if (r == 1 && t + 200 >= keep_ms)
				fleet_refresh(f);
		}
		ev("VERIFIED", "boot=%u", s.boots);
		/* from here on this host no longer counts itself as a holder */
		ev("RELEASING", "%s", "steady");
		while ((r = fleet_release(f)) < 0) {
			ev("RELEASE_ERROR", "%s", fleet_last_error(f));
			if (now_ms() > end)
				return 3;
			sleep_ms(fleet_next_delay_ms(f, rnd64()));
		}
		ev("RELEASED", "%s", "ok");
		snprintf(s.phase, sizeof(s.phase), "done");
		s.token[0] = 0;
		state_write(dir, &s);
		ev("COMPLETE", "boots=%u", s.boots);
		return 0;
	}
	for (;;) {
		if (now_ms() > end) {
			ev("GAVE_UP", "%s", fleet_last_error(f));
			return 3;
		}
		r = fleet_acquire(f);
		if (r != 1) {
			int64_t d = fleet_next_delay_ms(f, rnd64());
			ev(r == 0 ? "WAIT" : "ERROR", "retry_ms=%" PRId64 " %s", d, fleet_last_error(f));
			sleep_ms(d);
			continue;
		}
		fleet_token(f, token, sizeof(token));
		ev("ACQUIRED", "token=%s", token);
		snprintf(s.phase, sizeof(s.phase), "draining");
		snprintf(s.token, sizeof(s.token), "%s", token);
		state_write(dir, &s);
		/* drain (pre-reboot hooks), keeping the lease alive */
		int64_t t0 = now_ms(), last = t0;
		while (now_ms() - t0 < drain_ms) {
			sleep_ms(100);
			if (now_ms() - last >= keep_ms) {
				last = now_ms();
				if (fleet_refresh(f) != 1)
					break;
			}
		}
		/* the last word before the reboot: anything but "held" means do not reboot */
		r = fleet_refresh(f);
		if (r != 1) {
			ev("ABORT", "refresh=%d %s", r, fleet_last_error(f));
			snprintf(s.phase, sizeof(s.phase), "idle");
			s.token[0] = 0;
			state_write(dir, &s);
			sleep_ms(fleet_next_delay_ms(f, rnd64()));
			continue;
		}
		snprintf(s.phase, sizeof(s.phase), "rebooting");
		state_write(dir, &s);
		ev("REBOOT", "token=%s", token);
		return 100;
	}
}

/* ops: a sequence of fleet calls in one process, as rerand-fleetd makes them
 * for rerandd, so a test can hold a slot in one "host" while another acts. */
static int sim_ops(struct fleet *f, char **ops, int n)
{
	char tok[FLEET_TOKEN_MAX];

	for (int i = 0; i < n; i++) {
		const char *op = ops[i], *arg = strchr(op, ':');
		int r;

		if (!strncmp(op, "wait:", 5)) {
			for (int t = 0; t < 600 && access(arg + 1, F_OK); t++)
				sleep_ms(100);
			printf("wait %s\n", access(arg + 1, F_OK) ? "timed-out" : "done");
			fflush(stdout);
			continue;
		}
		if (!strncmp(op, "touch:", 6)) {
			int fd = open(arg + 1, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
			if (fd >= 0)
				close(fd);
			printf("touch %s\n", fd >= 0 ? "done" : "failed");
			fflush(stdout);
			continue;
		}
		if (!strcmp(op, "acquire"))
			r = fleet_acquire(f);
		else if (!strcmp(op, "refresh"))
			r = fleet_refresh(f);
		else if (!strcmp(op, "down"))
			r = fleet_down(f);
		else if (!strcmp(op, "release"))
			r = fleet_release(f) < 0 ? -1 : 0;
		else if (!strncmp(op, "resume:", 7))
			r = fleet_resume(f, arg + 1);
		else
			usage();
		fleet_token(f, tok, sizeof(tok));
		printf("%.*s %s %s\n", (int)(arg ? arg - op : (long)strlen(op)), op,
		       r == 1 ? "held" : r == 0 && !strcmp(op, "release") ? "released" :
		       r == 0 ? "lost" : "error", r == 1 ? tok : fleet_last_error(f));
		fflush(stdout);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *conf = NULL, *dir = ".", *logp = NULL, *id = NULL;
	int64_t drain_ms = 1000, verify_ms = 500, deadline_s = 120;
	struct fleet_config c;
	struct fleet *f;
	char err[512], buf[16384];
	int opt, r, rc;

	while ((opt = getopt(argc, argv, "+c:i:s:l:d:v:t:")) != -1) {
		switch (opt) {
		case 'c': conf = optarg; break;
		case 'i': id = optarg; break;
		case 's': dir = optarg; break;
		case 'l': logp = optarg; break;
		case 'd': drain_ms = strtoll(optarg, NULL, 10); break;
		case 'v': verify_ms = strtoll(optarg, NULL, 10); break;
		case 't': deadline_s = strtoll(optarg, NULL, 10); break;
		default: usage();
		}
	}
	/* the etcd acquire txn as rerand-fleetd builds it (no lease), for a test
	 * that sends it to etcd itself at a revision of its choosing */
	if (optind + 6 == argc && !strcmp(argv[optind], "acquire-body")) {
		char **a = argv + optind + 1;
		r = fleet_etcd_acquire_body(a[0], a[1], 0, a[2], a[3], strtoll(a[4], NULL, 10),
					    buf, sizeof(buf));
		if (r < 0) {
			fprintf(stderr, "fleet-sim: acquire-body: %s\n", strerror(-r));
			return 2;
		}
		puts(buf);
		return 0;
	}
	if (!conf || optind >= argc)
		usage();
	fleet_config_defaults(&c);
	if (fleet_conf_load("fleet-sim", conf, &c))
		return 2;
	if (id && fleet_config_set(&c, "ID", id, err, sizeof(err))) {
		fprintf(stderr, "fleet-sim: %s\n", err);
		return 2;
	}
	r = fleet_open(&c, &f, err, sizeof(err));
	if (r) {
		fprintf(stderr, "fleet-sim: %s\n", err);
		return 2;
	}
	snprintf(host_id, sizeof(host_id), "%s", fleet_identity(f));
	if (logp) {
		log_fd = open(logp, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (log_fd < 0) {
			fprintf(stderr, "fleet-sim: %s: %s\n", logp, strerror(errno));
			return 2;
		}
	}

	const char *cmd = argv[optind];
	rc = 0;
	if (!strcmp(cmd, "boot")) {
		rc = sim_boot(f, &c, dir, drain_ms, verify_ms, deadline_s);
	} else if (!strcmp(cmd, "acquire")) {
		r = fleet_acquire(f);
		fleet_token(f, buf, sizeof(buf));
		printf("%s %s\n", r == 1 ? "held" : r == 0 ? "refused" : "error",
		       r == 1 ? buf : fleet_last_error(f));
		rc = r == 1 ? 0 : r == 0 ? 1 : 2;
	} else if (!strcmp(cmd, "release")) {
		r = fleet_release(f);
		printf("%s %s\n", r == 0 ? "released" : "error", r ? fleet_last_error(f) : "");
		rc = r ? 2 : 0;
	} else if (!strcmp(cmd, "refresh") && optind + 1 < argc) {
		r = fleet_resume(f, argv[optind + 1]);
		printf("%s %s\n", r == 1 ? "held" : r == 0 ? "lost" : "error",
		       r == 1 ? "" : fleet_last_error(f));
		rc = r == 1 ? 0 : r == 0 ? 1 : 2;
	} else if (!strcmp(cmd, "status")) {
		struct fleet_status st;
		bool json = optind + 1 < argc && !strcmp(argv[optind + 1], "--json");
		r = fleet_status(f, &st);
		if (r == 0)
			r = json ? fleet_status_format_json(&st, c.group, buf, sizeof(buf)) :
				   fleet_status_format_text(&st, c.group, buf, sizeof(buf));
		if (r < 0) {
			fprintf(stderr, "fleet-sim: status: %s\n", fleet_last_error(f));
			rc = 2;
		} else {
			fputs(buf, stdout);
		}
	} else if (!strcmp(cmd, "release-host") && optind + 1 < argc) {
		r = fleet_release_host(f, argv[optind + 1]);
		if (r < 0) {
			fprintf(stderr, "fleet-sim: release-host: %s\n", fleet_last_error(f));
			rc = 2;
		} else {
			printf("freed %d\n", r);
		}
	} else if (!strcmp(cmd, "metrics")) {
		r = fleet_acquire(f);
		fleet_metrics_text(fleet_backend_name(c.backend), c.group, fleet_state(f),
				   fleet_errors(f), buf, sizeof(buf));
		fputs(buf, stdout);
		if (r == 1)
			fleet_release(f);
	} else if (!strcmp(cmd, "ops") && optind + 1 < argc) {
		rc = sim_ops(f, argv + optind + 1, argc - optind - 1);
	} else if (!strcmp(cmd, "identity")) {
		printf("%s\n", fleet_identity(f));
	} else {
		usage();
	}
	fleet_close(f);
	return rc;
}
