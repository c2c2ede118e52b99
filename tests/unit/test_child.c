/* SPDX-License-Identifier: GPL-2.0-only */
/* src/child.c, shared by sbsign's, `rerand load`'s and rerandd's child
 * runners: rr_spawn's pipe, exec failure and child_fn, the captured tail of
 * a child's output, the wait and its exit code and error. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "test.h"

static void test_tail(void)
{
	char t[8];
	size_t used = 0;

	memset(t, 'X', sizeof(t));
	rr_tail_append(t, sizeof(t), &used, "abc", 3);
	T_OK(used == 3 && !strcmp(t, "abc"), "tail: a short write is kept whole, NUL-terminated");
	rr_tail_append(t, sizeof(t), &used, "defg", 4);
	T_OK(used == 7 && !strcmp(t, "abcdefg"), "tail: filled to len - 1 exactly");
	rr_tail_append(t, sizeof(t), &used, "hi", 2);
	T_OK(used == 7 && !strcmp(t, "cdefghi"), "tail: the oldest bytes are dropped (got \"%s\")", t);
	rr_tail_append(t, sizeof(t), &used, "0123456789", 10);
	T_OK(used == 7 && !strcmp(t, "3456789"), "tail: one write longer than the buffer keeps its end (got \"%s\")", t);
	rr_tail_append(t, sizeof(t), &used, "", 0);
	T_OK(used == 7 && !strcmp(t, "3456789"), "tail: an empty write changes nothing");

	char two[2];
	used = 0;
	rr_tail_append(two, sizeof(two), &used, "xyz", 3);
	T_OK(used == 1 && !strcmp(two, "z"), "tail: a 2-byte buffer keeps the last byte");
}

/* The status of a real child: exit(CODE), or killed by SIG. */
static int child_status(int code, int sig)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		if (sig)
			raise(sig);
		_exit(code);
	}
	waitpid(pid, &status, 0);
	return status;
}

static void test_exit_code(void)
{
	T_OK(rr_child_exit_code(child_status(0, 0)) == 0, "exit 0 is 0");
	T_OK(rr_child_exit_code(child_status(3, 0)) == 3, "exit 3 is 3");
	T_OK(rr_child_exit_code(child_status(0, SIGKILL)) == 128 + SIGKILL, "SIGKILL is 137");
}

static void test_exec(void)
{
	char *const argv_path[] = { "/bin/sh", "-c", "exit 7", NULL };
	char *const argv_name[] = { "sh", "-c", "exit 5", NULL };
	char *const argv_missing[] = { "/nonexistent/rerand-no-such-program", NULL };
	int status;
	pid_t pid;

	pid = fork();
	if (pid == 0) {
		rr_child_exec(argv_path[0], argv_path);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	T_OK(rr_child_exit_code(status) == 7, "exec by path: /bin/sh ran (exit %d)", rr_child_exit_code(status));

	pid = fork();
	if (pid == 0) {
		rr_child_exec(argv_name[0], argv_name);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	T_OK(rr_child_exit_code(status) == 5, "exec by name: sh found in PATH (exit %d)", rr_child_exit_code(status));

	pid = fork();
	if (pid == 0) {
		rr_child_exec(argv_missing[0], argv_missing);
		_exit(errno == ENOENT ? 42 : 43);
	}
	waitpid(pid, &status, 0);
	T_OK(rr_child_exit_code(status) == 42, "exec of a missing program returns with ENOENT");
}

/* Spawn O, read the pipe into OUT, reap: the wait status. */
static int run(const struct rr_spawn_opts *o, char *out, size_t out_len)
{
	struct rr_err e = { "" };
	int rd = -1, status = -1;
	pid_t pid;

	if (rr_spawn(o, &pid, &rd, &e) < 0) {
		printf("# rr_spawn: %s\n", e.msg);
		return -1;
	}
	rr_child_read_tail(rd, out, out_len);
	close(rd);
	if (rr_child_wait(pid, "test child", &status, &e) < 0)
		printf("# rr_child_wait: %s\n", e.msg);
	return status;
}

static int write_fn(void *arg, int out_fd)
{
	(void)!write(out_fd, "from fn\n", 8);
	return *(int *)arg;
}

/* child_fn sees the pipe and the child's own group, and its stdout is not
 * the pipe unless asked. */
static int group_fn(void *arg, int out_fd)
{
	char msg[64];
	int n = snprintf(msg, sizeof(msg), "%d", getpgid(0) == getpid());

	(void)!write(out_fd, msg, (size_t)n);
	return 0;
}

static void test_spawn(void)
{
	char *const both[] = { "/bin/sh", "-c", "echo out; echo err >&2; exit 3", NULL };
	char *const missing[] = { "/nonexistent/rerand-no-such-program", NULL };
	struct rr_spawn_opts o = { .argv = both, .pipe_stdout = true, .pipe_stderr = true };
	struct rr_err e = { "" };
	char out[256];
	int status, ret, rd, fl;
	pid_t pid;

	status = run(&o, out, sizeof(out));
	T_OK(rr_child_exit_code(status) == 3 && !strcmp(out, "out\nerr\n"),
	     "spawn: stdout and stderr on the pipe, exit 3");
	T_OK(rr_child_status_err(status, "sh", &e) == -EIO && !strcmp(e.msg, "sh failed (exit status 3)"),
	     "status_err: \"%s\"", e.msg);

	o.pipe_stderr = false;
	o.null_stderr = true;
	status = run(&o, out, sizeof(out));
	T_OK(rr_child_exit_code(status) == 3 && !strcmp(out, "out\n"),
	     "spawn: stdout alone, stderr to /dev/null");

	o = (struct rr_spawn_opts){ .argv = missing, .pipe_stdout = true, .null_stderr = true,
				    .exec_fail_prefix = "rerand: " };
	status = run(&o, out, sizeof(out));
	T_OK(rr_child_exit_code(status) == 127 &&
	     !strcmp(out, "rerand: cannot run /nonexistent/rerand-no-such-program: No such file or directory\n"),
	     "spawn: a failed exec says why on the piped stdout, exit 127");

	ret = 5;
	o = (struct rr_spawn_opts){ .name = "fn", .child_fn = write_fn, .child_arg = &ret };
	status = run(&o, out, sizeof(out));
	T_OK(rr_child_exit_code(status) == 5 && !strcmp(out, "from fn\n"),
	     "spawn without argv: child_fn writes to out_fd, its return is the exit (got %d)",
	     rr_child_exit_code(status));
	ret = -1;
	status = run(&o, out, sizeof(out));
	T_OK(rr_child_exit_code(status) == 126, "spawn: a failing child_fn ends the child with 126");
	o.argv = both;
	status = run(&o, out, sizeof(out));
	T_OK(rr_child_exit_code(status) == 126 && !strcmp(out, "from fn\n"),
	     "spawn: a failing child_fn stops the exec");

	o = (struct rr_spawn_opts){ .name = "group", .new_group = true, .nonblock = true,
				    .child_fn = group_fn };
	T_OK(rr_spawn(&o, &pid, &rd, &e) == 0, "spawn: new group, non-blocking");
	fl = fcntl(rd, F_GETFL);
	T_OK(getpgid(pid) == pid, "spawn: the parent put the child in its own group");
	T_OK((fl & O_NONBLOCK) && (fcntl(rd, F_GETFD) & FD_CLOEXEC),
	     "spawn: the read end is non-blocking and close-on-exec");
	rr_child_wait(pid, "group", &status, &e);
	fcntl(rd, F_SETFL, fl & ~O_NONBLOCK);
	rr_child_read_tail(rd, out, sizeof(out));
	close(rd);
	T_OK(!strcmp(out, "1"), "spawn: the child is its own group's leader by the time child_fn runs (got \"%s\")", out);

	T_OK(rr_child_wait(pid, "group", &status, &e) == -ECHILD &&
	     !strcmp(e.msg, "waiting for group: No child processes"),
	     "wait: a reaped child is an error naming it (\"%s\")", e.msg);
	T_OK(rr_child_status_err(child_status(0, SIGKILL), "x", &e) == -EIO &&
	     !strcmp(e.msg, "x failed (signal 9)"), "status_err: \"%s\"", e.msg);
	T_OK(rr_child_status_err(child_status(0, 0), "x", &e) == 0, "status_err: exit 0 is no error");
}

int main(void)
{
	test_tail();
	test_exit_code();
	test_exec();
	test_spawn();
	return t_done();
}
