/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The image builder's reaper.  A process the builder leaves running in a
 * session of its own (setsid) is out of the process group that rerandd
 * signals, and could keep the builder's output open; as a child subreaper
 * (PR_SET_CHILD_SUBREAPER) this process inherits every such orphan, however
 * it detached, and kills them all before it exits.  rerandd acts on the
 * build only once this process has exited, so by then nothing but rerandd
 * holds the output.
 *
 * It runs as ImageUser= without capabilities, in the forked child, between
 * fork and _exit: raw system calls only, no malloc and no stdio (rerandd's
 * heap and stdio locks may be in any state in a fork).  Its children are
 * listed from /proc/thread-self/children (CONFIG_PROC_CHILDREN, set in
 * Debian's kernels), which also shows zombies; ProtectProc=invisible hides
 * other users' processes, not its own.
 *
 * What it cannot do: survive a SIGKILL.  rerandd's timeout and job_cancel
 * send it SIGTERM, which it takes as "kill everything now"; if it is
 * SIGKILLed anyway (rerandd exiting mid-build: PR_SET_PDEATHSIG), the
 * builder dies with it (its own PDEATHSIG) but a descendant that left the
 * process group reparents upwards and lives on, in rerandd.service's
 * cgroup, until the unit stops.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "reaper.h"

/* Each round kills every child listed and reaps at least one; a killed
 * process cannot fork any more, so the tree shrinks.  The bound is for a
 * tree larger than any the builder has a reason to make. */
#define REAPER_MAX_ROUNDS 65536
#define CHILDREN_PATH "/proc/thread-self/children"

static void say(const char *s)
{
	(void)!write(STDERR_FILENO, s, strlen(s));
}

static void say_errno(const char *what, int err)
{
	char num[16], *p = num + sizeof(num);

	*--p = 0;
	do
		*--p = (char)('0' + err % 10);
	while ((err /= 10) && p > num);
	say("image builder reaper: ");
	say(what);
	say(": errno ");
	say(p);
	say("\n");
}

int reaper_prepare(void)
{
	sigset_t set;

	/* SIGCHLD must queue for sigwaitinfo, not be discarded or auto-reap */
	signal(SIGCHLD, SIG_DFL);
	/* a cancelled job closed the pipe's read end: a message must not
	 * kill the reaper before its sweep is done */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		return -errno;
	return 0;
}

void reaper_child_reset(void)
{
	sigset_t none;

	signal(SIGPIPE, SIG_DFL);      /* an ignored signal would survive the exec */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/* SIGKILL each pid listed in the children file: the number listed, or a
 * negative errno. */
static int kill_listed(void)
{
	char buf[512];
	long pid = 0;
	bool in = false;
	_cleanup_close_ int fd = -1;
	int n = 0;

	fd = open(CHILDREN_PATH, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t got = read(fd, buf, sizeof(buf));
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		/* "pid pid ... " split across reads: a number ends at a
		 * non-digit, or at the end of the file */
		for (ssize_t i = 0; i <= got; i++) {
			if (i < got && buf[i] >= '0' && buf[i] <= '9') {
				pid = pid * 10 + (buf[i] - '0');
				in = true;
				continue;
			}
			if (i == got && got > 0)
				break;    /* maybe mid-number: the next read goes on */
			if (in && pid > 0) {
				kill((pid_t)pid, SIGKILL);
				n++;
			}
			pid = 0;
			in = false;
		}
		if (got == 0)
			break;
	}
	return n;
}

int reaper_sweep(pid_t builder, int *status, bool *got)
{
	for (int round = 0; round < REAPER_MAX_ROUNDS; round++) {
		int st, n = kill_listed();
		pid_t p;

		if (n < 0)
			return n;
		/* Block for one (every child listed is dying, and with none
		 * listed there is no descendant left to reparent here), then
		 * take whatever else is already gone. */
		p = waitpid(-1, &st, __WALL);
		for (;;) {
			if (p < 0 && errno == EINTR) {
				p = waitpid(-1, &st, __WALL);
				continue;
			}
			if (p < 0)
				return errno == ECHILD ? 0 : -errno;
			if (p == 0)
				break;
			if (p == builder) {
				*status = st;
				*got = true;
			}
			p = waitpid(-1, &st, WNOHANG | __WALL);
		}
	}
	return -EBUSY;
}

int reaper_wait(pid_t builder)
{
	sigset_t set;
	int st = 0, r;
	bool got = false;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	while (!got) {
		siginfo_t si;
		pid_t p;

		/* reap what is gone first: SIGCHLD may have come before the
		 * mask, or stand for several children */
		while ((p = waitpid(-1, &st, WNOHANG | __WALL)) > 0)
			if (p == builder) {
				got = true;
				break;
			}
		if (got || (p < 0 && errno != EINTR))
			break;
		if (sigwaitinfo(&set, &si) < 0)
			continue;
		/* rerandd's timeout: the builder and everything it started
		 * go now, before a SIGKILL could leave any of them behind */
		if (si.si_signo == SIGTERM)
			break;
	}
	r = reaper_sweep(builder, &st, &got);
	if (r < 0) {
		say_errno(r == -EBUSY ? "the builder's processes keep multiplying"
				      : CHILDREN_PATH ": cannot list the builder's leftover processes",
			  -r);
		return 126;
	}
	if (!got)
		return 128 + SIGTERM;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}
