/* SPDX-License-Identifier: GPL-2.0-only */
/* Running rerandd's children (rerand load, hooks, the blocker and reboot
 * commands) with a timeout, a clean signal mask and exactly the capabilities
 * each needs. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <wordexp.h>

#include "rerandd.h"

int run_argv(char *const argv[], int64_t timeout_sec, enum rr_child_caps caps)
{
	struct timespec start, now, nap = { 0, 20 * 1000 * 1000 };
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		sigset_t none;

		setpgid(0, 0);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if ((caps == RR_CHILD_KEXEC_CAPS ? caps_child_kexec() : caps_child_none()) < 0)
			_exit(126);
		if (strchr(argv[0], '/'))
			execv(argv[0], argv);
		else
			execvp(argv[0], argv);
		fprintf(stderr, "<3>cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w < 0 && errno != EINTR)
			return -errno;
		if (w == pid)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (timeout_sec > 0 && now.tv_sec - start.tv_sec >= timeout_sec) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			return -ETIMEDOUT;
		}
		nanosleep(&nap, NULL);
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int run_command(const char *cmdline, int64_t timeout_sec, enum rr_child_caps caps,
		struct rr_err *e)
{
	wordexp_t we;
	int r;

	/* Quotes and backslashes as in a shell, but no $(...), no variables. */
	r = wordexp(cmdline, &we, WRDE_NOCMD | WRDE_UNDEF);
	if (r != 0)
		return rr_errf(e, EINVAL, "%s: cannot split the command (quotes, $ or ` not allowed)",
			       cmdline);
	if (!we.we_wordc) {
		wordfree(&we);
		return rr_errf(e, EINVAL, "empty command");
	}
	r = run_argv(we.we_wordv, timeout_sec, caps);
	if (r == -ETIMEDOUT)
		rr_errf(e, ETIMEDOUT, "%s: killed after %llds", we.we_wordv[0], (long long)timeout_sec);
	else if (r < 0)
		rr_errf(e, -r, "%s: %s", we.we_wordv[0], strerror(-r));
	else if (r)
		rr_errf(e, 0, "%s: exit status %d", we.we_wordv[0], r);
	wordfree(&we);
	return r;
}
