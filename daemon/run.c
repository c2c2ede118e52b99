/* SPDX-License-Identifier: GPL-2.0-only */
/* Running rerandd's children (rerand load, hooks, the blocker and reboot
 * commands) with a timeout, a clean signal mask and exactly the capabilities
 * each needs; their output reaches the journal through rr_log, a line each. */
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

#include "child.h"
#include "rerandd.h"

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

/* Pass on what the pipe holds. */
static void relay_read(int fd, struct relay *rl)
{
	char buf[1024];

	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		relay_bytes(rl, buf, (size_t)n);
	}
}

static int run_impl(char *const argv[], int64_t timeout_sec, enum rr_child_caps caps,
		    const struct rr_builder *builder, char *out, size_t out_len)
{
	struct relay rl = { .tail = out, .tail_len = out_len };
	struct timespec start, now;
	int status, pfd[2] = { -1, -1 };
	pid_t pid;

	rl.name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	if (out)
		out[0] = 0;
	if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int r = -errno;
		close(pfd[0]);
		close(pfd[1]);
		return r;
	}
	if (pid == 0) {
		sigset_t none;
		/* dup2 clears O_CLOEXEC on the copies; the child blocks as usual */
		int fl = fcntl(pfd[1], F_GETFL);

		setpgid(0, 0);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		fcntl(pfd[1], F_SETFL, fl & ~O_NONBLOCK);
		if (dup2(pfd[1], STDOUT_FILENO) < 0 || dup2(pfd[1], STDERR_FILENO) < 0)
			_exit(126);
		if (builder) {
			int r = caps_child_builder(builder);
			if (r < 0) {
				fprintf(stderr, "cannot become the image builder: %s\n", strerror(-r));
				_exit(126);
			}
		} else if ((caps == RR_CHILD_KEXEC_CAPS ? caps_child_kexec() : caps_child_none()) < 0)
			_exit(126);
		rr_child_exec(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w < 0 && errno != EINTR) {
			int r = -errno;
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
			relay_read(pfd[0], &rl);
			relay_flush(&rl);
			close(pfd[0]);
			return -ETIMEDOUT;
		}
		/* a full pipe would stall the child: drain it while waiting */
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		if (poll(&p, 1, 20) > 0)
			relay_read(pfd[0], &rl);
	}
	relay_read(pfd[0], &rl);
	relay_flush(&rl);
	close(pfd[0]);
	return rr_child_exit_code(status);
}

int run_argv(char *const argv[], int64_t timeout_sec, enum rr_child_caps caps)
{
	return run_impl(argv, timeout_sec, caps, NULL, NULL, 0);
}

int run_argv_capture(char *const argv[], int64_t timeout_sec, enum rr_child_caps caps,
		     char *out, size_t out_len)
{
	if (!out || out_len < 2)
		return -EINVAL;
	return run_impl(argv, timeout_sec, caps, NULL, out, out_len);
}

int run_builder(char *const argv[], int64_t timeout_sec, const struct rr_builder *b)
{
	return run_impl(argv, timeout_sec, RR_CHILD_NO_CAPS, b, NULL, 0);
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
