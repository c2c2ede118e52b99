/* SPDX-License-Identifier: GPL-2.0-only */
/* Text from outside (a lock server's error, a child's output, a config value)
 * reaches the journal, `rerand status` and the fleet status escaped: one
 * event per journal line, no terminal controls, valid UTF-8. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rerandd.h"
#include "test.h"

static bool clean(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return false;
	return true;
}

static bool clean_but_newlines(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if ((*p < 0x20 && *p != '\n') || *p == 0x7f)
			return false;
	return true;
}

static bool ascii(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p >= 0x7f)
			return false;
	return true;
}

static void test_escape(void)
{
	char out[4096], in[256];
	size_t n;

	rr_escape_str(out, sizeof(out), "HTTP 423: locked\nholder: other");
	T_OK(!strcmp(out, "HTTP 423: locked\\nholder: other"), "a newline becomes \\n: %s", out);
	rr_escape_str(out, sizeof(out), "\x1b[31mred\x1b[0m\r\t\\");
	T_OK(!strcmp(out, "\\x1b[31mred\\x1b[0m\\r\\t\\\\"), "ESC, CR, TAB and the backslash: %s", out);
	/* NUL-free binary: every byte value 1..255 once */
	for (int i = 1; i < 256; i++)
		in[i - 1] = (char)i;
	n = rr_escape(out, sizeof(out), in, 255);
	/* 94 printable as they are, '\\' and \t \n \r as two, 28 other controls, DEL
	 * and 128 lone high bytes as \xNN */
	T_OK(n == 94 + 2 + 3 * 2 + 28 * 4 + 4 + 128 * 4 && n == strlen(out) && ascii(out),
	     "binary 1..255: printable ASCII only, %zu bytes (want 730)", n);
	T_OK(strstr(out, "\\x01\\x02") && strstr(out, "\\x7f\\x80") && strstr(out, "\\xff"),
	     "binary: each byte as \\xNN");
	n = rr_escape(out, sizeof(out), "a\0b", 3);
	T_OK(n == 6 && !strcmp(out, "a\\x00b"), "an embedded NUL is shown, not a cut: %s", out);

	rr_escape_str(out, sizeof(out), "Zürich — ✓ \xf0\x9f\x98\x80");
	T_OK(!strcmp(out, "Zürich — ✓ \xf0\x9f\x98\x80"), "valid UTF-8 passes unchanged");
	rr_escape_str(out, sizeof(out), "\xc2\x9b" "2J");
	T_OK(!strcmp(out, "\\xc2\\x9b2J"), "C1 CSI (U+009B) is escaped: %s", out);
	rr_escape_str(out, sizeof(out), "\xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80 \xe2\x82");
	T_OK(clean(out) && ascii(out), "overlong, surrogate, beyond U+10FFFF, truncated: escaped: %s", out);

	rr_escape_str(out, 6, "ab\ncd");
	T_OK(!strcmp(out, "ab\\nc"), "truncation keeps whole escapes: %s", out);
	rr_escape_str(out, 4, "a\x1b");
	T_OK(!strcmp(out, "a"), "an escape that does not fit is left out, not cut: %s", out);
	rr_escape_str(out, 3, "\xe2\x9c\x93x");
	T_OK(!strcmp(out, ""), "a character that does not fit is left out, not cut");
	rr_escape_str(out, sizeof(out), NULL);
	T_OK(!strcmp(out, ""), "NULL is the empty string");
}

/* What rr_log and children write to stderr during fn(), in out. */
static void capture_stderr(void (*fn)(void), char *out, size_t len)
{
	int p[2], saved = dup(STDERR_FILENO);
	ssize_t n, got = 0;

	fflush(stderr);
	if (pipe(p) < 0)
		return;
	dup2(p[1], STDERR_FILENO);
	close(p[1]);
	fn();
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	while ((n = read(p[0], out + got, len - 1 - (size_t)got)) > 0)
		got += n;
	out[got] = 0;
	close(p[0]);
}

static void log_remote(void)
{
	/* a FleetLock error value as a server might send it */
	rr_log(RR_LOG_ERR, "fleet: %s", "fleetlock: http://x/v1/pre-reboot: HTTP 423: "
	       "lock_held: held by\n<0>forged emergency\x1b[2J");
}

/* A job on a loop of its own, as rerandd runs its children: its status,
 * and with capture its output in out. */
struct job_result {
	bool done;
	int status;
	char out[4096];
};

static void job_done(int status, const char *out, void *ud)
{
	struct job_result *res = ud;

	res->done = true;
	res->status = status;
	snprintf(res->out, sizeof(res->out), "%s", out ? out : "");
}

static int run_job(char *const argv[], bool capture, struct job_result *res)
{
	struct rr_job *job;
	sd_event *ev;
	int r;

	sigset_t chld;

	/* sd-event watches children only with SIGCHLD blocked, as rerandd has it */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	memset(res, 0, sizeof(*res));
	if ((r = sd_event_new(&ev)) < 0)
		return r;
	r = job_start(ev, argv, 10, RR_CHILD_NO_CAPS, capture, job_done, res, &job);
	while (r >= 0 && !res->done)
		r = sd_event_run(ev, UINT64_MAX);
	sd_event_unref(ev);
	return r < 0 ? r : res->status;
}

static void run_child(void)
{
	char *argv[] = { "/bin/sh", "-c", "printf '<0>forged\\n\\033[31mred\\r\\n'; "
			 "printf 'x\\n' >&2", NULL };
	struct job_result res;

	run_job(argv, false, &res);
}

static unsigned lines(const char *s)
{
	unsigned n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void test_sinks(void)
{
	char got[8192];
	struct rr_view v;
	char st[8192];

	capture_stderr(log_remote, got, sizeof(got));
	T_OK(!strcmp(got, "<3>fleet: fleetlock: http://x/v1/pre-reboot: HTTP 423: lock_held: held "
		     "by\\n<0>forged emergency\\x1b[2J\n"),
	     "rr_log: a server's error value is one journal line, no forged priority, no ESC");
	capture_stderr(run_child, got, sizeof(got));
	T_OK(!strcmp(got, "<6>sh: <0>forged\n<6>sh: \\x1b[31mred\\r\n<6>sh: x\n"),
	     "a child's stdout and stderr: a journal line each under its name, escaped");
	if (lines(got) != 3)
		printf("# got: %s\n", got);
	char *argv[] = { "/bin/sh", "-c", "printf 'rerand: no\\033[2J\\n' >&2; exit 3", NULL };
	struct job_result res;
	T_OK(run_job(argv, true, &res) == 3 && !strcmp(res.out, "rerand: no\x1b[2J\n"),
	     "a captured job: the raw output for the caller (who logs it through rr_log)");

	memset(&v, 0, sizeof(v));
	v.fleet_backend = "fleetlock";
	v.fleet_state = "error";
	v.staged = true;
	v.crash_state = RR_CS_ERROR;
	snprintf(v.stage_error, sizeof(v.stage_error), "clean");
	int n0 = control_format_text(&v, st, sizeof(st));
	unsigned l0 = n0 > 0 ? lines(st) : 0;
	snprintf(v.stage_error, sizeof(v.stage_error), "rerand: bad\nfake: line\x1b[2J");
	snprintf(v.kernel, sizeof(v.kernel), "/boot/vmlinuz-\n\x1b]0;x\a");
	snprintf(v.crash_error, sizeof(v.crash_error), "kexec said\nno");
	snprintf(v.fleet_why, sizeof(v.fleet_why), "HTTP 500: oops\n\x1b[1Aup");
	int n1 = control_format_text(&v, st, sizeof(st));
	T_OK(n0 > 0 && n1 > 0 && clean_but_newlines(st) && lines(st) == l0 + 1 /* the fleet wait line */,
	     "rerand status text: outside text adds no line and no control character");
	T_OK(strstr(st, "stage error:       rerand: bad\\nfake: line\\x1b[2J\n") &&
	     strstr(st, "fleet wait:        HTTP 500: oops\\n\\x1b[1Aup"),
	     "rerand status text: shown escaped");
	T_OK(t_json_r("status", control_format_json(&v, st, sizeof(st)), st) > 0 && !strchr(st, '\x1b') &&
	     strstr(st, "\"stage_error\":\"rerand: bad\\\\nfake: line\\\\x1b[2J\""),
	     "rerand status --json: the same escaped text, JSON-quoted");

	struct fleet_status fs = { .max_concurrent = 2, .nr_holders = 1 };
	snprintf(fs.holders[0].id, sizeof(fs.holders[0].id), "evil\n  slot 1: forged\x1b[2J");
	T_OK(fleet_status_format_text(&fs, "g", st, sizeof(st)) > 0 && lines(st) == 2 &&
	     !strchr(st, '\x1b'), "fleet status: a holder id from etcd adds no line: %s", st);

	/* FleetLock's fleet status --json: what this host knows, the URL
	 * escaped as the text shows it, then JSON-quoted */
	struct rr_coord *co = calloc(1, sizeof(*co));
	struct json_object *j, *url;
	co->want = co->opened = true;
	co->cfg.backend = FLEET_BACKEND_FLEETLOCK;
	co->fstate = FLEET_ST_IDLE;
	snprintf(co->cfg.group, sizeof(co->cfg.group), "workers");
	snprintf(co->id, sizeof(co->id), "host-1");
	snprintf(co->cfg.url, sizeof(co->cfg.url), "https://lock.example:8443/v1");
	T_OK(coord_status(co, true, st, sizeof(st)) == 0 &&
	     !strcmp(st, "{\"group\":\"workers\",\"backend\":\"fleetlock\",\"url\":"
			 "\"https://lock.example:8443/v1\",\"holders\":null,"
			 "\"self\":{\"id\":\"host-1\",\"state\":\"idle\"}}\n"),
	     "fleet status --json (FleetLock): one line, '/' unescaped: %s", st);
	snprintf(co->cfg.url, sizeof(co->cfg.url), "http://h/\"q\"\\\x1b");
	j = coord_status(co, true, st, sizeof(st)) == 0 ? json_tokener_parse(st) : NULL;
	T_OK(j && json_object_object_get_ex(j, "url", &url) &&
	     !strcmp(json_object_get_string(url), "http://h/\"q\"\\\\\\x1b"),
	     "fleet status --json (FleetLock): a URL with '\"', '\\' and ESC is valid JSON, "
	     "its value the escaped text: %s", st);
	json_object_put(j);
	free(co);
}

/* rerandd's staging helpers (rerandd-plan, rerandd-check) parse what the
 * unprivileged builder wrote: they must hold no capability while they do.
 * The helper reports its own name and capability lines from /proc. */
static int caps_fn(void *arg, int fd)
{
	char buf[4096], out[512] = "";
	FILE *f = fopen("/proc/self/status", "re");

	(void)arg;
	while (f && fgets(buf, sizeof(buf), f))
		if (!strncmp(buf, "Name:", 5) || !strncmp(buf, "CapInh:", 7) || !strncmp(buf, "CapPrm:", 7) ||
		    !strncmp(buf, "CapEff:", 7) || !strncmp(buf, "CapAmb:", 7) ||
		    !strncmp(buf, "NoNewPrivs:", 11))
			strncat(out, buf, sizeof(out) - strlen(out) - 1);
	if (f)
		fclose(f);
	return write(fd, out, strlen(out)) < 0 ? -errno : 0;
}

struct raw_result {
	bool done;
	int status;
	char out[512];
};

static void raw_done(int status, const void *buf, size_t len, void *ud)
{
	struct raw_result *res = ud;

	res->done = true;
	res->status = status;
	snprintf(res->out, sizeof(res->out), "%.*s", (int)len, (const char *)buf);
}

static void test_fn_caps(void)
{
	struct raw_result res = { 0 };
	struct rr_job *job;
	sd_event *ev;
	int r;

	if (geteuid() != 0) {
		T_OK(1, "# SKIP not root: a helper's capabilities drop from root's");
		return;
	}
	if ((r = sd_event_new(&ev)) < 0) {
		T_OK(0, "sd_event_new: %s", strerror(-r));
		return;
	}
	r = job_start_fn(ev, "rerandd-check", caps_fn, NULL, 10, raw_done, &res, &job);
	while (r >= 0 && !res.done)
		r = sd_event_run(ev, UINT64_MAX);
	sd_event_unref(ev);
	T_OK(r >= 0 && res.status == 0 &&
	     !strcmp(res.out, "Name:\trerandd-check\n"
			      "CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\n"
			      "CapEff:\t0000000000000000\nCapAmb:\t0000000000000000\n"
			      "NoNewPrivs:\t1\n"),
	     "a staging helper (job_start_fn), named for its job, parses with no capability and no_new_privs%s%s",
	     res.status ? "" : ": ", res.status ? "" : res.out);
}

int main(void)
{
	test_escape();
	test_sinks();
	test_fn_caps();
	return t_done();
}
