/* SPDX-License-Identifier: GPL-2.0-only */
/* src/child.c, shared by `rerand load`'s kexec runner and rerandd's child
 * runner: the captured tail of a child's output and its exit code. */
#include <errno.h>
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

int main(void)
{
	test_tail();
	test_exit_code();
	test_exec();
	return t_done();
}
