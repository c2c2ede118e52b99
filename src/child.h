/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Running a child program, the one way rerand does it: `rerand image`'s
 * sbsign (src/sign.c), `rerand load`'s kexec-tools (kexec/kexec_run.c) and
 * rerandd's jobs (daemon/run.c) all fork through rr_spawn, with their
 * output on a close-on-exec pipe, and reap through rr_child_wait.  What
 * differs (a process group, a clean signal mask, capabilities, a sandbox)
 * is an option or the caller's child_fn.  Library code: no logging.
 */
#ifndef RERAND_CHILD_H
#define RERAND_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"

struct rr_spawn_opts {
	/* argv[0] is a path or a name looked up in PATH.  NULL: no exec,
	 * the child runs child_fn and exits with what it returns. */
	char *const *argv;
	const char *name;             /* in errors; NULL: argv[0] */
	/* The child's stdout and/or stderr go to the pipe whose read end the
	 * parent gets; what is not piped (and stdin) is inherited. */
	bool pipe_stdout, pipe_stderr;
	bool null_stderr;             /* stderr to /dev/null instead */
	bool nonblock;                /* the parent's read end O_NONBLOCK */
	/* A process group of its own, set in the child and in the parent, so
	 * that no kill of the group can miss a child that has not run yet. */
	bool new_group;
	bool clean_sigmask;           /* the child starts with no signal blocked */
	/* Before "cannot run PROG: why", which a failed exec writes to the
	 * pipe (or stderr) before exiting 127; NULL: nothing. */
	const char *exec_fail_prefix;
	/*
	 * Run in the child once its fds are in place, before the exec: the
	 * caller's setsid, prctl, capabilities and sandbox.  out_fd is the
	 * pipe's write end.  A negative return ends the child with 126 (say
	 * why on stderr first); without argv the child exits with its return.
	 */
	int (*child_fn)(void *arg, int out_fd);
	void *child_arg;
};

/*
 * Fork (and exec) a child as O says.  0 with its pid in *ret_pid and the
 * pipe's read end (close-on-exec) in *ret_rd; or a negative errno, nothing
 * left open, and e saying "cannot create a pipe for NAME: why" or "cannot
 * fork for NAME: why".  The caller reaps the child.
 */
int rr_spawn(const struct rr_spawn_opts *o, pid_t *ret_pid, int *ret_rd, struct rr_err *e);

/* Read FD to its end (retrying EINTR), keeping the last TAIL_LEN - 1 bytes
 * NUL-terminated in TAIL: a child's verdict comes last.  Returns the number
 * of bytes kept.  TAIL_LEN must be at least 2. */
size_t rr_child_read_tail(int fd, char *tail, size_t tail_len);

/* Reap PID (retrying EINTR): 0 and its wait status in *status, or a
 * negative errno and e saying "waiting for NAME: why". */
int rr_child_wait(pid_t pid, const char *name, int *status, struct rr_err *e);

/* 0 if STATUS is an exit with 0; otherwise -EIO and e saying "NAME failed
 * (exit status N)" or "NAME failed (signal N)". */
int rr_child_status_err(int status, const char *name, struct rr_err *e);

/* execv() when PROG has a '/', else execvp(); returns only on failure,
 * with errno set. */
void rr_child_exec(const char *prog, char *const argv[]);

/* Append N bytes of P to TAIL (TAIL_LEN bytes, *USED of them in use),
 * keeping only the last TAIL_LEN - 1 bytes, NUL-terminated: a child's
 * verdict comes last.  TAIL_LEN must be at least 2. */
void rr_tail_append(char *tail, size_t tail_len, size_t *used, const char *p, size_t n);

/* A waitpid() status as a shell shows it: the exit code, or 128 + signal. */
int rr_child_exit_code(int status);

#endif
