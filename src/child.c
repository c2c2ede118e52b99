/* SPDX-License-Identifier: GPL-2.0-only */
/* Running a child program (see child.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"

/* The child's side of rr_spawn: never returns. */
static void __attribute__((noreturn)) spawn_child(const struct rr_spawn_opts *o, int pfd[2])
{
	int w = pfd[1];

	if (o->new_group)
		setpgid(0, 0);
	if (o->clean_sigmask) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
	}
	/* only the parent's end is non-blocking: a child writes and waits */
	if (o->nonblock)
		fcntl(w, F_SETFL, fcntl(w, F_GETFL) & ~O_NONBLOCK);
	close(pfd[0]);
	/* dup2 clears O_CLOEXEC on the copies, which the exec then keeps */
	if ((o->pipe_stdout && dup2(w, STDOUT_FILENO) < 0) ||
	    (o->pipe_stderr && dup2(w, STDERR_FILENO) < 0))
		_exit(126);
	if (o->null_stderr) {
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		if (null >= 0)
			dup2(null, STDERR_FILENO);
	}
	if (o->child_fn) {
		int r = o->child_fn(o->child_arg, w);

		if (r < 0)
			_exit(126);
		if (!o->argv)
			_exit(r);
	}
	if (!o->argv)
		_exit(0);
	rr_child_exec(o->argv[0], o->argv);
	/* on the pipe, where the caller reads the child's verdict */
	dprintf(o->pipe_stderr || !o->pipe_stdout ? STDERR_FILENO : STDOUT_FILENO,
		"%scannot run %s: %s\n", o->exec_fail_prefix ? o->exec_fail_prefix : "",
		o->argv[0], strerror(errno));
	_exit(127);
}

int rr_spawn(const struct rr_spawn_opts *o, pid_t *ret_pid, int *ret_rd, struct rr_err *e)
{
	const char *name = o->name ? o->name : o->argv ? o->argv[0] : "a child";
	int pfd[2];
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC | (o->nonblock ? O_NONBLOCK : 0)) < 0)
		return rr_errf(e, errno, "cannot create a pipe for %s: %s", name, strerror(errno));
	pid = fork();
	if (pid < 0) {
		int r = errno;

		close(pfd[0]);
		close(pfd[1]);
		return rr_errf(e, r, "cannot fork for %s: %s", name, strerror(r));
	}
	if (pid == 0)
		spawn_child(o, pfd);
	if (o->new_group)
		setpgid(pid, pid);
	close(pfd[1]);
	*ret_pid = pid;
	*ret_rd = pfd[0];
	return 0;
}

size_t rr_child_read_tail(int fd, char *tail, size_t tail_len)
{
	size_t used = 0;

	tail[0] = 0;
	for (;;) {
		char buf[1024];
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return used;
		rr_tail_append(tail, tail_len, &used, buf, (size_t)n);
	}
}

int rr_child_wait(pid_t pid, const char *name, int *status, struct rr_err *e)
{
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			return rr_errf(e, errno, "waiting for %s: %s", name, strerror(errno));
	return 0;
}

int rr_child_status_err(int status, const char *name, struct rr_err *e)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status))
		return rr_errf(e, EIO, "%s failed (exit status %d)", name, WEXITSTATUS(status));
	return rr_errf(e, EIO, "%s failed (signal %d)", name, WTERMSIG(status));
}

void rr_child_exec(const char *prog, char *const argv[])
{
	if (strchr(prog, '/'))
		execv(prog, argv);
	else
		execvp(prog, argv);
}

void rr_tail_append(char *tail, size_t tail_len, size_t *used, const char *p, size_t n)
{
	size_t cap = tail_len - 1;

	if (n >= cap) {
		memcpy(tail, p + n - cap, cap);
		*used = cap;
	} else {
		if (*used + n > cap) {
			size_t drop = *used + n - cap;
			memmove(tail, tail + drop, *used - drop);
			*used -= drop;
		}
		memcpy(tail + *used, p, n);
		*used += n;
	}
	tail[*used] = 0;
}

int rr_child_exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
