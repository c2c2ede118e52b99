/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The image builder's reaper (daemon/reaper.c), for real in forked
 * children of this test: a "reaper" child calls reaper_prepare, forks a
 * "builder" and exits with reaper_wait's status, as rerandd's spawn() does.
 * The builders leave processes behind the way a subverted one could (setsid
 * and a double fork, a fork loop); each leftover holds the write end of a
 * pipe, as a leftover would hold the builder's output: the pipe reading EOF
 * once the reaper has exited is the proof that none of them is left.
 * Then rerandd's own path: job_start_builder (as the test's user, no
 * switch) runs a shell builder that leaves `setsid sleep` holding fd 4,
 * rerandd's output descriptor, a pipe here: the job ends only once nothing
 * holds it, and job_cancel, too, leaves nothing holding it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "test.h"
#include "reaper.h"
#include "rerandd.h"

enum builder_kind { B_EXIT7, B_SIGSYS, B_DETACH, B_FORK_LOOP, B_IGNORE_TERM };

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

/* setsid, a double fork: a grandchild in a session of its own, holding
 * hold (the pipe's write end) and sleeping */
static void leave_detached(int hold)
{
	pid_t c = fork();

	if (c == 0) {
		setsid();
		if (fork() == 0) {
			(void)hold;
			sleep_ms(60000);
			_exit(0);
		}
		_exit(0);
	}
	if (c > 0)
		waitpid(c, NULL, 0);
}

static void builder(enum builder_kind k, int hold)
{
	switch (k) {
	case B_EXIT7:
		_exit(7);
	case B_SIGSYS:
		raise(SIGSYS);
		_exit(1);
	case B_DETACH:
		leave_detached(hold);
		_exit(0);
	case B_FORK_LOOP:
		/* a detached process that keeps forking sleepers */
		if (fork() == 0) {
			setsid();
			for (int i = 0; i < 2000; i++)
				if (fork() == 0) {
					sleep_ms(60000);
					_exit(0);
				}
			sleep_ms(60000);
			_exit(0);
		}
		sleep_ms(50);
		_exit(0);
	case B_IGNORE_TERM:
		signal(SIGTERM, SIG_IGN);
		leave_detached(hold);
		sleep_ms(60000);
		_exit(0);
	}
	_exit(1);
}

/* Fork a reaper running K; *hold_rd the read end of the pipe every
 * process of it holds the write end of.  The reaper's pid. */
static pid_t start(enum builder_kind k, int *hold_rd)
{
	int p[2];
	pid_t r;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	r = fork();
	if (r == 0) {
		pid_t b;

		close(p[0]);
		if (reaper_prepare() < 0)
			_exit(125);
		b = fork();
		if (b == 0) {
			reaper_child_reset();
			builder(k, p[1]);
		}
		/* the reaper holds nothing (rerandd's closes every fd) */
		close(p[1]);
		_exit(b < 0 ? 125 : reaper_wait(b));
	}
	close(p[1]);
	*hold_rd = p[0];
	return r;
}

/* The reaper's wait status within ms, or -1. */
static int finish(pid_t r, int ms)
{
	int pfd = pidfd_open(r, 0), st = -1;
	struct pollfd pl = { .fd = pfd, .events = POLLIN };

	if (pfd < 0 || poll(&pl, 1, ms) != 1) {
		kill(r, SIGKILL);
		waitpid(r, NULL, 0);
		if (pfd >= 0)
			close(pfd);
		return -1;
	}
	close(pfd);
	waitpid(r, &st, 0);
	return st;
}

/* Whether every holder of the pipe is gone within ms (EOF). */
static bool all_gone(int rd, int ms)
{
	struct pollfd pl = { .fd = rd, .events = POLLIN };
	char c;

	return poll(&pl, 1, ms) == 1 && read(rd, &c, 1) == 0;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct job_res {
	bool done;
	int status;
};

static void job_done(int status, const char *out, void *ud)
{
	struct job_res *res = ud;

	res->done = true;
	res->status = status;
}

/* A builder job running SCRIPT with fd 4 on a pipe: its read end. */
static int start_job(sd_event *ev, const char *script, struct job_res *res, struct rr_job **job)
{
	char *argv[] = { "/bin/sh", "-c", (char *)script, NULL };
	struct rr_builder b = { .switch_user = false };
	int p[2], r;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	b.kernel_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	b.out_fd = p[1];
	r = job_start_builder(ev, argv, 60, &b, job_done, res, job);
	/* the child has its copies, as daemon/stage_child.c closes rerandd's */
	close(b.kernel_fd);
	close(p[1]);
	if (r < 0) {
		close(p[0]);
		return -1;
	}
	return p[0];
}

static void jobs(void)
{
	struct job_res res = { 0 };
	struct rr_job *job = NULL;
	sd_event *ev = NULL;
	sigset_t chld;
	siginfo_t si;
	char c = 0;
	int rd;

	/* sd-event watches children only with SIGCHLD blocked, as in rerandd */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	if (sd_event_new(&ev) < 0) {
		T_OK(0, "sd_event_new");
		return;
	}
	/* it exits once the leftover's session is its own (field 6 of stat) */
	rd = start_job(ev,
		       "setsid sh -c 'exec sleep 60' </dev/null >/dev/null 2>&1 & p=$!; i=0; "
		       "while [ $i -lt 200 ]; do set -- $(cat /proc/$p/stat); [ \"$6\" = $p ] && exit 0; "
		       "sleep 0.05; i=$((i+1)); done; exit 3",
		       &res, &job);
	T_OK(rd >= 0, "job_start_builder starts a builder that leaves a process behind");
	for (double t0 = now(); rd >= 0 && !res.done && now() - t0 < 20;)
		sd_event_run(ev, 100000);
	T_OK(res.done && res.status == 0, "its job ends, status 0 (%d)", res.status);
	/* at once: the job ended only after its reaper, which waited for all */
	T_OK(rd >= 0 && all_gone(rd, 0), "when the job ends, nothing the builder started holds its output");
	if (rd >= 0)
		close(rd);

	/* The filter lets a builder signal its own process group (kill 0):
	 * the builder's session is its own, so that cannot reach the reaper,
	 * which still sweeps the leftover away. */
	res = (struct job_res){ 0 };
	rd = start_job(ev,
		       "setsid sh -c 'exec sleep 60' </dev/null >/dev/null 2>&1 & p=$!; i=0; "
		       "while [ $i -lt 200 ]; do set -- $(cat /proc/$p/stat); [ \"$6\" = $p ] && break; "
		       "sleep 0.05; i=$((i+1)); done; kill -KILL 0",
		       &res, &job);
	for (double t0 = now(); rd >= 0 && !res.done && now() - t0 < 20;)
		sd_event_run(ev, 100000);
	T_OK(res.done && res.status == 128 + SIGKILL, "a builder that kills its process group: status %d",
	     res.status);
	T_OK(rd >= 0 && all_gone(rd, 2000), "its kill 0 missed the reaper, which swept the leftover away");
	if (rd >= 0)
		close(rd);

	res = (struct job_res){ 0 };
	rd = start_job(ev, "setsid sh -c 'printf x >&4; exec sleep 60' </dev/null >/dev/null 2>&1 & exec sleep 60", &res,
		       &job);
	{
		struct pollfd pl = { .fd = rd, .events = POLLIN };
		T_OK(rd >= 0 && poll(&pl, 1, 10000) == 1 && read(rd, &c, 1) == 1 && c == 'x',
		     "a second builder is running, its leftover in a session of its own");
	}
	job_cancel(job);
	T_OK(rd >= 0 && all_gone(rd, 3000), "job_cancel: the builder and its setsid leftover are gone");
	/* the reaper itself reaped by the loop, not left a zombie */
	for (double t0 = now(); now() - t0 < 3;) {
		sd_event_run(ev, 100000);
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD)
			break;
	}
	T_OK(waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD,
	     "job_cancel: the reaper is reaped by the event loop");
	T_OK(!res.done, "job_cancel: no done callback");
	if (rd >= 0)
		close(rd);
	sd_event_unref(ev);
}

int main(void)
{
	int rd, st;
	pid_t r;
	double t0;

	r = start(B_EXIT7, &rd);
	st = finish(r, 10000);
	T_OK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 7,
	     "the reaper exits with the builder's exit status (7: %d)", st != -1 ? WEXITSTATUS(st) : -1);
	close(rd);

	r = start(B_SIGSYS, &rd);
	st = finish(r, 10000);
	T_OK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGSYS,
	     "a builder killed by SIGSYS: the reaper exits 128+31 (%d), as rerandd reports a killed child",
	     st != -1 ? WEXITSTATUS(st) : -1);
	close(rd);

	r = start(B_DETACH, &rd);
	st = finish(r, 10000);
	T_OK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "a builder that detached a process exits 0");
	T_OK(all_gone(rd, 2000), "its setsid, double-forked leftover is gone once the reaper has exited");
	close(rd);

	r = start(B_FORK_LOOP, &rd);
	st = finish(r, 20000);
	T_OK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	     "a leftover that keeps forking: the reaper still finishes (status %d)",
	     st != -1 ? WEXITSTATUS(st) : -1);
	T_OK(all_gone(rd, 2000), "none of its processes is left");
	close(rd);

	/* rerandd's timeout: SIGTERM to the group (here: the reaper; the
	 * builder ignores it) */
	r = start(B_IGNORE_TERM, &rd);
	sleep_ms(300);
	t0 = now();
	kill(r, SIGTERM);
	st = finish(r, 10000);
	T_OK(st != -1 && now() - t0 < 5, "SIGTERM: the reaper exits at once (%.2f s), builder and all",
	     now() - t0);
	T_OK(all_gone(rd, 2000), "SIGTERM: the builder ignoring it and its detached leftover are gone");
	close(rd);

	jobs();
	return t_done();
}
