/* SPDX-License-Identifier: GPL-2.0-only */
/* Running rerandd's children (rerand image and load, hooks, the blocker and
 * reboot commands) with a timeout, a clean signal mask and exactly the
 * capabilities each needs; their output reaches the journal through rr_log,
 * a line each.  rerandd itself runs them as jobs on its sd-event loop (a
 * pidfd, the pipe and a timer each), so the loop never waits for a child. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <wordexp.h>

#include <systemd/sd-event.h>

#include "child.h"
#include "rerandd.h"
#include "spawn.h"

/* A child's output on its way to the journal: split into lines, each logged
 * (escaped) by rr_log under the child's name, so a child can neither forge
 * a priority prefix nor write terminal controls into the journal. */
struct relay {
	const char *name;
	char line[1024];
	size_t n;
	char *tail;                   /* run_argv_capture: the last tail_len - 1 bytes */
	size_t tail_len, tail_used;
};

static void relay_flush(struct relay *rl)
{
	size_t nl = strlen(rl->name);

	if (!rl->n)
		return;
	/* "rerand: ..." from rerand is not "rerand: rerand: ..." */
	if (rl->n > nl + 1 && !memcmp(rl->line, rl->name, nl) && rl->line[nl] == ':')
		rr_log(RR_LOG_INFO, "%.*s", (int)rl->n, rl->line);
	else
		rr_log(RR_LOG_INFO, "%s: %.*s", rl->name, (int)rl->n, rl->line);
	rl->n = 0;
}

static void relay_bytes(struct relay *rl, const char *p, size_t n)
{
	if (rl->tail) {
		rr_tail_append(rl->tail, rl->tail_len, &rl->tail_used, p, n);
		return;                   /* the caller logs what it captured */
	}
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\n') {
			relay_flush(rl);
			continue;
		}
		if (rl->n == sizeof(rl->line))
			relay_flush(rl);
		rl->line[rl->n++] = p[i];
	}
}

static const char *base_name(const char *path)
{
	return strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
}

/* ---- jobs: the same children, on the event loop ---------------------------- */

#define JOB_KILL_GRACE_USEC (5ull * 1000000)    /* SIGTERM, then SIGKILL */
#define JOB_TAIL_MAX 4096
#define JOB_RAW_MAX (64u << 10)

struct rr_job {
	sd_event_source *child, *io, *timer;
	pid_t pid;
	/* a function job: what the child wrote, for raw_done */
	uint8_t *raw;
	size_t raw_len;
	rr_job_raw_fn raw_done;
	bool term_sent;              /* the timeout passed: SIGTERM went out */
	bool reaper;                 /* pid is the image builder's reaper */
	int64_t timeout_sec;
	struct relay rl;
	char name[64];
	rr_job_done_fn done;
	void *arg;
};

static void job_free(struct rr_job *j)
{
	/* the child source owns the pidfd and closes it; the io source the pipe */
	sd_event_source_disable_unref(j->child);
	sd_event_source_disable_unref(j->io);
	sd_event_source_disable_unref(j->timer);
	free(j->rl.tail);
	free(j->raw);
	free(j);
}

static void job_drain(struct rr_job *j)
{
	char buf[1024];

	if (!j->io)
		return;
	for (;;) {
		ssize_t n = read(sd_event_source_get_io_fd(j->io), buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)                           /* every writer is gone */
			j->io = sd_event_source_disable_unref(j->io);
		if (n <= 0)
			return;
		if (!j->raw_done) {
			relay_bytes(&j->rl, buf, (size_t)n);
			continue;
		}
		/* a function job's result: whole, or cut (and then refused) */
		n = (ssize_t)(n > (ssize_t)(JOB_RAW_MAX - j->raw_len) ? JOB_RAW_MAX - j->raw_len : (size_t)n);
		memcpy(j->raw + j->raw_len, buf, (size_t)n);
		j->raw_len += (size_t)n;
	}
}

static int job_on_output(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	job_drain(ud);
	return 0;
}

static int job_on_timeout(sd_event_source *s, uint64_t usec, void *ud)
{
	struct rr_job *j = ud;

	if (!j->term_sent) {
		rr_log(RR_LOG_WARNING, "%s: still running after %llds: stopping it", j->name,
		       (long long)j->timeout_sec);
		j->term_sent = true;
		kill(-j->pid, SIGTERM);
		sd_event_source_set_time(s, usec + JOB_KILL_GRACE_USEC);
		sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
		return 0;
	}
	rr_log(RR_LOG_WARNING, "%s: ignored SIGTERM: killing it", j->name);
	kill(-j->pid, SIGKILL);
	return 0;
}

static int job_on_exit(sd_event_source *s, const siginfo_t *si, void *ud)
{
	struct rr_job *j = ud;
	int r;

	if (si->si_code == CLD_EXITED)
		r = si->si_status & 0xff;
	else
		r = 128 + si->si_status;
	if (j->term_sent)
		r = -ETIMEDOUT;
	/* Whatever the child left in the pipe comes before its verdict; a
	 * grandchild keeping the pipe open does not hold the job up. */
	job_drain(j);
	relay_flush(&j->rl);
	/* A leftover of the group must not outlive its job (a hook's sleep). */
	kill(-j->pid, SIGKILL);
	rr_job_done_fn done = j->done;
	rr_job_raw_fn raw_done = j->raw_done;
	void *arg = j->arg;
	char *tail = j->rl.tail;
	uint8_t *raw = j->raw;
	size_t raw_len = j->raw_len;
	j->rl.tail = NULL;
	j->raw = NULL;
	job_free(j);
	if (raw_done)
		raw_done(r, raw, raw_len, arg);
	else
		done(r, tail ? tail : "", arg);
	free(tail);
	free(raw);
	return 0;
}

/* Watch j's child (j->pid, its output on rd) on ev: a pidfd, the pipe and the
 * timeout.  On failure the child is killed and j freed. */
static int job_watch(sd_event *ev, struct rr_job *j, int rd, struct rr_job **ret)
{
	int r, pidfd = pidfd_open(j->pid, 0);

	if (pidfd < 0) {
		r = -errno;
		kill(-j->pid, SIGKILL);
		close(rd);
		/* no pidfd (kernel < 5.3): reap it here, it was killed */
		while (waitpid(j->pid, NULL, 0) < 0 && errno == EINTR)
			;
		job_free(j);
		return r;
	}
	if ((r = sd_event_add_child_pidfd(ev, &j->child, pidfd, WEXITED, job_on_exit, j)) < 0) {
		close(pidfd);
		close(rd);
		kill(-j->pid, SIGKILL);
		job_free(j);
		return r;
	}
	sd_event_source_set_child_pidfd_own(j->child, true);
	if ((r = sd_event_add_io(ev, &j->io, rd, EPOLLIN, job_on_output, j)) < 0) {
		close(rd);
		goto fail;
	}
	sd_event_source_set_io_fd_own(j->io, true);
	if (j->timeout_sec > 0) {
		uint64_t now;
		sd_event_now(ev, CLOCK_MONOTONIC, &now);
		r = sd_event_add_time(ev, &j->timer, CLOCK_MONOTONIC,
				      now + (uint64_t)j->timeout_sec * 1000000, 0, job_on_timeout, j);
		if (r < 0)
			goto fail;
	}
	if (ret)
		*ret = j;
	return 0;
fail:
	kill(-j->pid, SIGKILL);
	/* the child source reaps it once it dies: keep it, drop the callback */
	sd_event_source_set_child_process_own(j->child, true);
	job_free(j);
	return r;
}

static int job_spawn(sd_event *ev, char *const argv[], int64_t timeout_sec, enum rr_child_caps caps,
		     const struct rr_builder *builder, const struct rr_signer *signer,
		     const struct rr_hook_exec *hook, bool capture,
		     rr_job_done_fn done, void *arg, struct rr_job **ret)
{
	struct rr_job *j = calloc(1, sizeof(*j));
	int r, rd = -1;

	if (!j)
		return -ENOMEM;
	snprintf(j->name, sizeof(j->name), "%s", base_name(argv[0]));
	j->rl.name = j->name;
	j->done = done;
	j->arg = arg;
	j->timeout_sec = timeout_sec;
	if (capture) {
		j->rl.tail = calloc(1, JOB_TAIL_MAX);
		j->rl.tail_len = JOB_TAIL_MAX;
		if (!j->rl.tail) {
			free(j);
			return -ENOMEM;
		}
	}
	if ((r = run_spawn(argv, caps, builder, signer, hook, &j->pid, &rd)) < 0) {
		job_free(j);
		return r;
	}
	j->reaper = builder != NULL;
	return job_watch(ev, j, rd, ret);
}

int job_start(sd_event *ev, char *const argv[], int64_t timeout_sec, enum rr_child_caps caps,
	      bool capture, rr_job_done_fn done, void *arg, struct rr_job **ret)
{
	return job_spawn(ev, argv, timeout_sec, caps, NULL, NULL, NULL, capture, done, arg, ret);
}

int job_start_hook(sd_event *ev, char *const argv[], const struct rr_hook_exec *hook,
		   int64_t timeout_sec, rr_job_done_fn done, void *arg, struct rr_job **ret)
{
	return job_spawn(ev, argv, timeout_sec, RR_CHILD_NO_CAPS, NULL, NULL, hook, false, done, arg,
			 ret);
}

int job_start_builder(sd_event *ev, char *const argv[], int64_t timeout_sec,
		      const struct rr_builder *b, rr_job_done_fn done, void *arg,
		      struct rr_job **ret)
{
	return job_spawn(ev, argv, timeout_sec, RR_CHILD_NICE, b, NULL, NULL, false, done, arg, ret);
}

int job_start_signer(sd_event *ev, char *const argv[], int64_t timeout_sec,
		     const struct rr_signer *s, rr_job_done_fn done, void *arg,
		     struct rr_job **ret)
{
	return job_spawn(ev, argv, timeout_sec, RR_CHILD_NICE, NULL, s, NULL, true, done, arg, ret);
}

/* What a function job's child runs (rr_spawn's child_fn, no exec). */
struct fn_setup {
	const char *name;
	int (*pre)(void *arg);
	int (*fn)(void *arg, int out_fd);
	void *fn_arg;
	pid_t parent;
};

static int fn_child(void *arg, int out_fd)
{
	const struct fn_setup *s = arg;

	/* rerandd's own code, without its loop: background work, so the
	 * loop and `rerand status` come first on a busy CPU */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != s->parent)
		return -1;
	/* ps and /proc name it for what it does (rerandd-check, ...) */
	(void)prctl(PR_SET_NAME, s->name, 0, 0, 0);
	(void)!nice(10);
	/* What it forks while it still may switch users (the parsing half of
	 * a staging helper, as CheckUser=: stage_parse.c) */
	if (s->pre && s->pre(s->fn_arg) < 0)
		return -1;
	/* It handles what the unprivileged builder wrote (its parsing half
	 * parses): with no capability at all, and no exec that could give
	 * one back.  Root's own files (the state directory, /boot) stay its
	 * own. */
	if (caps_child_none() < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	return s->fn(s->fn_arg, out_fd) < 0 ? 1 : 0;
}

int job_start_fn(sd_event *ev, const char *name, int (*fn)(void *arg, int out_fd), void *fn_arg,
		 int64_t timeout_sec, rr_job_raw_fn done, void *arg, struct rr_job **ret)
{
	return job_start_fn_pre(ev, name, NULL, fn, fn_arg, timeout_sec, done, arg, ret);
}

int job_start_fn_pre(sd_event *ev, const char *name, int (*pre)(void *arg),
		     int (*fn)(void *arg, int out_fd), void *fn_arg, int64_t timeout_sec,
		     rr_job_raw_fn done, void *arg, struct rr_job **ret)
{
	struct rr_job *j = calloc(1, sizeof(*j));
	struct fn_setup setup = { .name = name, .pre = pre, .fn = fn, .fn_arg = fn_arg,
				  .parent = getpid() };
	struct rr_spawn_opts so = {
		.name = name, .nonblock = true, .new_group = true, .clean_sigmask = true,
		.child_fn = fn_child, .child_arg = &setup,
	};
	int r, rd;

	if (!j || !(j->raw = malloc(JOB_RAW_MAX))) {
		free(j);
		return -ENOMEM;
	}
	snprintf(j->name, sizeof(j->name), "%s", name);
	j->rl.name = j->name;
	j->raw_done = done;
	j->arg = arg;
	j->timeout_sec = timeout_sec;
	r = rr_spawn(&so, &j->pid, &rd, NULL);
	if (r < 0) {
		job_free(j);
		return r;
	}
	return job_watch(ev, j, rd, ret);
}

static int reaper_gone(sd_event_source *s, const siginfo_t *si, void *ud)
{
	/* reaped by sd-event; the loop's reference, the only one, goes */
	sd_event_source_disable_unref(s);
	return 0;
}

/* A builder's reaper on SIGTERM kills the builder and everything it
 * started, in the group or not, and exits at once (reaper.c); a SIGKILL,
 * which freeing a process-owning child source sends, would leave it no time
 * to.  So: SIGTERM, and a floating source of its own that only reaps it. */
static bool reaper_cancel(struct rr_job *j)
{
	sd_event *ev = sd_event_source_get_event(j->child);
	sd_event_source *s = NULL;
	int pidfd = pidfd_open(j->pid, 0);

	if (pidfd < 0)
		return false;
	/* the job's own source goes first: one child source per process */
	j->child = sd_event_source_disable_unref(j->child);
	if (sd_event_add_child_pidfd(ev, &s, pidfd, WEXITED, reaper_gone, NULL) < 0) {
		close(pidfd);
		/* nothing would reap it: as any job, then */
		kill(-j->pid, SIGKILL);
		while (waitpid(j->pid, NULL, 0) < 0 && errno == EINTR)
			;
		return true;
	}
	sd_event_source_set_child_pidfd_own(s, true);
	sd_event_source_set_floating(s, true);
	sd_event_source_unref(s);
	kill(j->pid, SIGTERM);
	return true;
}

void job_cancel(struct rr_job *j)
{
	if (!j)
		return;
	if (!j->reaper || !reaper_cancel(j)) {
		kill(-j->pid, SIGKILL);
		sd_event_source_set_child_process_own(j->child, true);
	}
	job_free(j);
}

/* run_command's split, for a job. */
struct cmd_job {
	wordexp_t we;
	int64_t timeout_sec;
	rr_job_done_fn done;
	void *arg;
};

static void cmd_job_done(int status, const char *out, void *ud)
{
	struct cmd_job *cj = ud;
	rr_job_done_fn done = cj->done;
	void *arg = cj->arg;
	char msg[RR_ERR_MAX] = "";

	if (status == -ETIMEDOUT)
		snprintf(msg, sizeof(msg), "%s: killed after %llds", cj->we.we_wordv[0],
			 (long long)cj->timeout_sec);
	else if (status < 0)
		snprintf(msg, sizeof(msg), "%s: %s", cj->we.we_wordv[0], strerror(-status));
	else if (status)
		snprintf(msg, sizeof(msg), "%s: exit status %d", cj->we.we_wordv[0], status);
	wordfree(&cj->we);
	free(cj);
	done(status, msg, arg);
}

int job_start_command(sd_event *ev, const char *cmdline, int64_t timeout_sec,
		      enum rr_child_caps caps, rr_job_done_fn done, void *arg, struct rr_job **ret,
		      struct rr_err *e)
{
	struct cmd_job *cj = calloc(1, sizeof(*cj));
	int r;

	if (!cj)
		return rr_errf(e, ENOMEM, "out of memory");
	if (wordexp(cmdline, &cj->we, WRDE_NOCMD | WRDE_UNDEF) != 0) {
		free(cj);
		return rr_errf(e, EINVAL, "%s: cannot split the command (quotes, $ or ` not allowed)",
			       cmdline);
	}
	if (!cj->we.we_wordc) {
		wordfree(&cj->we);
		free(cj);
		return rr_errf(e, EINVAL, "empty command");
	}
	cj->timeout_sec = timeout_sec;
	cj->done = done;
	cj->arg = arg;
	r = job_start(ev, cj->we.we_wordv, timeout_sec, caps, false, cmd_job_done, cj, ret);
	if (r < 0) {
		rr_errf(e, -r, "%s: %s", cj->we.we_wordv[0], strerror(-r));
		wordfree(&cj->we);
		free(cj);
	}
	return r;
}
