/* SPDX-License-Identifier: GPL-2.0-only */
/* Running rerandd's children (rerand load, hooks, the blocker and reboot
 * commands) with a timeout, a clean signal mask and exactly the capabilities
 * each needs. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <wordexp.h>

#include "rerandd.h"

/* Append what the pipe holds to out, keeping its last cap - 1 bytes. */
static void capture_read(int fd, char *out, size_t cap, size_t *used)
{
	char buf[1024];

	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		if ((size_t)n >= cap - 1) {
			memcpy(out, buf + (size_t)n - (cap - 1), cap - 1);
			*used = cap - 1;
		} else {
			if (*used + (size_t)n > cap - 1) {
				size_t drop = *used + (size_t)n - (cap - 1);
				memmove(out, out + drop, *used - drop);
				*used -= drop;
			}
			memcpy(out + *used, buf, (size_t)n);
			*used += (size_t)n;
		}
		out[*used] = 0;
	}
}

static int run_impl(char *const argv[], int64_t timeout_sec, enum rr_child_caps caps,
		    char *out, size_t out_len)
{
	struct timespec start, now;
	size_t used = 0;
	int status, pfd[2] = { -1, -1 };
	pid_t pid;

	if (out && out_len) {
		out[0] = 0;
		if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK) < 0)
			return -errno;
	}
	pid = fork();
	if (pid < 0) {
		int r = -errno;
		if (pfd[0] >= 0) {
			close(pfd[0]);
			close(pfd[1]);
		}
		return r;
	}
	if (pid == 0) {
		sigset_t none;

		setpgid(0, 0);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (pfd[1] >= 0) {
			/* dup2 clears O_CLOEXEC on the copy; the child blocks as usual */
			int fl = fcntl(pfd[1], F_GETFL);
			fcntl(pfd[1], F_SETFL, fl & ~O_NONBLOCK);
			if (dup2(pfd[1], STDERR_FILENO) < 0)
				_exit(126);
		}
		if ((caps == RR_CHILD_KEXEC_CAPS ? caps_child_kexec() : caps_child_none()) < 0)
			_exit(126);
		if (strchr(argv[0], '/'))
			execv(argv[0], argv);
		else
			execvp(argv[0], argv);
		fprintf(stderr, "<3>cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (pfd[1] >= 0)
		close(pfd[1]);
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w < 0 && errno != EINTR) {
			int r = -errno;
			if (pfd[0] >= 0)
				close(pfd[0]);
			return r;
		}
		if (w == pid)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (timeout_sec > 0 && now.tv_sec - start.tv_sec >= timeout_sec) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			if (pfd[0] >= 0)
				close(pfd[0]);
			return -ETIMEDOUT;
		}
		if (pfd[0] >= 0) {
			/* a full pipe would stall the child: drain it while waiting */
			struct pollfd p = { .fd = pfd[0], .events = POLLIN };
			if (poll(&p, 1, 20) > 0)
				capture_read(pfd[0], out, out_len, &used);
		} else {
			struct timespec nap = { 0, 20 * 1000 * 1000 };
			nanosleep(&nap, NULL);
		}
	}
	if (pfd[0] >= 0) {
		capture_read(pfd[0], out, out_len, &used);
		close(pfd[0]);
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int run_argv(char *const argv[], int64_t timeout_sec, enum rr_child_caps caps)
{
	return run_impl(argv, timeout_sec, caps, NULL, 0);
}

int run_argv_capture(char *const argv[], int64_t timeout_sec, enum rr_child_caps caps,
		     char *out, size_t out_len)
{
	if (!out || out_len < 2)
		return -EINVAL;
	return run_impl(argv, timeout_sec, caps, out, out_len);
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
