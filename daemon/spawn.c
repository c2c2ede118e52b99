/* SPDX-License-Identifier: GPL-2.0-only */
/* Starting one of rerandd's children: what it does between the fork and the
 * exec (its privileges, the parent-death signal, a hook exec'd through the
 * fd that was checked, the builder's reaper and seccomp filter).  The jobs
 * that run them on the event loop are run.c's. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "child.h"
#include "reaper.h"
#include "rerandd.h"
#include "sandbox.h"
#include "spawn.h"

/* What an exec'd child does before the exec (rr_spawn's child_fn). */
struct spawn_setup {
	enum rr_child_caps caps;
	const struct rr_builder *builder;
	const struct rr_signer *signer;    /* sbsign (SignKey=) */
	const struct rr_hook_exec *hook;   /* a hook: exec'd here, through its fds */
	char *const *argv;
	pid_t parent;
};

extern char **environ;

/* A hook, exec'd as it was checked (hooks.c): never by its path again,
 * which someone else might swap between the check and the exec.  A file
 * right in the directory runs as ./NAME with the directory (the fd that was
 * checked) as its working directory, so that a script still finds its
 * neighbours through $0; one reached through a symlink runs through the
 * O_PATH fd of its target (a script then sees $0 as /dev/fd/N).  Returns
 * only on failure. */
static int exec_hook(const struct rr_hook_exec *hx, char *const argv[])
{
	struct stat a, b;
	char rel[RR_PATH];

	if (fchdir(hx->dirfd) < 0) {
		fprintf(stderr, "cannot enter the hook directory: %s\n", strerror(errno));
		return -1;
	}
	if (hx->direct) {
		/* the entry is still the file checked (only root can change it) */
		if (fstat(hx->fd, &a) < 0 || fstatat(AT_FDCWD, hx->name, &b, AT_SYMLINK_NOFOLLOW) < 0 ||
		    a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
			fprintf(stderr, "%s: changed between its check and its exec: not run\n",
				argv[0]);
			return -1;
		}
		snprintf(rel, sizeof(rel), "./%s", hx->name);
		execve(rel, argv, environ);
	} else {
		/* a script's interpreter opens /dev/fd/N: the fd must survive the exec */
		if (fcntl(hx->fd, F_SETFD, 0) < 0)
			return -1;
		syscall(SYS_execveat, hx->fd, "", argv, environ, AT_EMPTY_PATH);
	}
	fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
	return -1;
}

/* The child's privileges: the builder's or the signer's user, or the
 * capabilities it is given.  *pidns: whether the builder has a PID
 * namespace of its own (0) or why not. */
static int spawn_drop(const struct spawn_setup *s, int *pidns)
{
	int r;

	if (s->builder) {
		if ((r = caps_child_builder(s->builder, pidns)) < 0) {
			fprintf(stderr, "cannot become the image builder: %s\n", strerror(-r));
			return -1;
		}
	} else if (s->signer) {
		if ((r = caps_child_signer(s->signer)) < 0) {
			fprintf(stderr, "cannot become CheckUser= to run sbsign: %s\n", strerror(-r));
			return -1;
		}
	} else if (((s->caps & ~RR_CHILD_NICE) == RR_CHILD_KEXEC_CAPS ? caps_child_kexec()
								       : caps_child_none()) < 0)
		return -1;
	return 0;
}

/* This process stays as the builder's reaper (reaper.c): it exits, and
 * rerandd goes on, only once the builder and all it started are gone.
 * Returns in the builder, ready for its exec. */
static int spawn_builder(const struct spawn_setup *s, int pidns)
{
	pid_t reaper = getpid(), b;
	int r = reaper_prepare();

	(void)prctl(PR_SET_NAME, "rerandd-reaper", 0, 0, 0);

	if (r < 0) {
		fprintf(stderr, "cannot become the image builder's reaper: %s\n", strerror(-r));
		return -1;
	}
	if (pidns < 0 && s->builder->switch_user)
		fprintf(stderr, "image builder: no PID namespace of its own (%s): its "
			"leftovers are left to the reaper's sweep alone\n", strerror(-pidns));
	b = fork();
	if (b < 0) {
		fprintf(stderr, "cannot fork the image builder: %s\n", strerror(errno));
		return -1;
	}
	if (b > 0) {
		/* Nothing of rerandd's for a process running as ImageUser=:
		 * not the builder's files (it is not to hold the output), not
		 * the daemon's. */
		(void)close_range(3, ~0U, 0);
		_exit(reaper_wait(b));
	}
	reaper_child_reset();
	/* A session of its own: the filter's kill(0, ...) then reaches the
	 * builder's group only, never the reaper, and setpgid() cannot join
	 * the reaper's group.  In its own PID namespace it is pid 1 and its
	 * parent, outside, shows as 0. */
	if (setsid() < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 ||
	    getppid() != (pidns == 0 ? 0 : reaper))
		return -1;
	/* Last before exec: the builder's seccomp allow-list, which the exec
	 * keeps (the calls above are not on it). */
	r = sandbox_builder();
	if (r < 0) {
		fprintf(stderr, "cannot load the image builder's seccomp filter: %s\n",
			strerror(-r));
		return -1;
	}
	return 0;
}

static int spawn_setup(void *arg, int out_fd)
{
	const struct spawn_setup *s = arg;
	int pidns = -ENOSYS;

	if (s->caps & RR_CHILD_NICE)
		(void)!nice(10);
	if (spawn_drop(s, &pidns) < 0)
		return -1;
	/* A child outlives no rerandd: a restart unwinds what it was for
	 * (after the capability change, which would clear it). */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != s->parent)
		return -1;
	if (s->hook)
		return exec_hook(s->hook, s->argv);
	if (s->signer) {
		/* last before exec, as for the builder: the parsing half's
		 * filter, which sbsign then runs under from its first call */
		int r = sandbox_signer();
		if (r < 0) {
			fprintf(stderr, "cannot load sbsign's seccomp filter: %s\n", strerror(-r));
			return -1;
		}
	}
	return s->builder ? spawn_builder(s, pidns) : 0;
}

/* Fork argv[0] in its own process group with a clean signal mask and the
 * given capabilities, its stdout and stderr on a pipe whose non-blocking
 * read end is *ret_rd. */
int run_spawn(char *const argv[], enum rr_child_caps caps, const struct rr_builder *builder,
	      const struct rr_signer *signer, const struct rr_hook_exec *hook, pid_t *ret_pid,
	      int *ret_rd)
{
	struct spawn_setup setup = { .caps = caps, .builder = builder, .signer = signer, .hook = hook,
				     .argv = argv, .parent = getpid() };
	struct rr_spawn_opts so = {
		.argv = argv, .pipe_stdout = true, .pipe_stderr = true, .nonblock = true,
		.new_group = true, .clean_sigmask = true,
		.child_fn = spawn_setup, .child_arg = &setup,
	};

	return rr_spawn(&so, ret_pid, ret_rd, NULL);
}
