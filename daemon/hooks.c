/* SPDX-License-Identifier: GPL-2.0-only */
/* Pre-reboot and post-boot hooks: the executables of a directory, one job
 * after another in name order, as run-parts would pick them, each checked
 * before it runs. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rerandd.h"

static int hook_filter(const struct dirent *de)
{
	/* run-parts rules: skip dot files and editor or package leftovers */
	const char *n = de->d_name;
	size_t l = strlen(n);
	return n[0] != '.' && n[l - 1] != '~' && !strstr(n, ".dpkg-") && !strstr(n, ".rpm");
}

/* ---- pre-reboot hooks, one job after another -----------------------------
 * A hook runs as root: one that another user could write, or put in a
 * directory another user could write, would be that user's code running as
 * root.  The directory and every hook that would run are checked on what
 * will run (an fd, not a path read again), and a refused one fails the
 * hooks as a failed hook does: the reboot is called off, the confirmation
 * fails.  Never skipped. */

struct rr_hooks {
	sd_event *ev;
	const char *kind;                 /* "pre-reboot" or "post-boot", for the log */
	struct dirent **list;
	int n, i;
	int dirfd;                        /* the directory as checked */
	char dir[RR_PATH], path[RR_PATH + 256];
	int64_t timeout;
	struct rr_job *job;
	rr_op_done_fn done;
	void *arg;
};

static void hooks_free(struct rr_hooks *h)
{
	for (int i = 0; i < h->n; i++)
		free(h->list[i]);
	free(h->list);
	if (h->dirfd >= 0)
		close(h->dirfd);
	free(h);
}

static void hooks_finish(struct rr_hooks *h, int r, const char *msg)
{
	rr_op_done_fn done = h->done;
	void *arg = h->arg;

	hooks_free(h);
	done(r, msg, arg);
}

static int hooks_next(struct rr_hooks *h, struct rr_err *e);

static void hook_done(int s, const char *out, void *ud)
{
	struct rr_hooks *h = ud;
	struct rr_err e;
	int r;

	h->job = NULL;
	if (s == -ETIMEDOUT) {
		r = rr_errf(&e, ETIMEDOUT, "%s: %s hook stopped after %llds", h->path, h->kind,
			    (long long)h->timeout);
	} else if (s != 0) {
		r = rr_errf(&e, s < 0 ? -s : ECANCELED, "%s: %s hook failed (%s %d)", h->path,
			    h->kind, s < 0 ? "error" : "status", s < 0 ? -s : s);
	} else {
		r = hooks_next(h, &e);
		if (r > 0)
			return;                    /* the next one runs */
	}
	hooks_finish(h, r, r < 0 ? e.msg : "");
}

/* Who may own what runs as root: root, or the user rerandd runs as (the same
 * in production; a test's rerandd otherwise). */
static bool trusted_owner(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

static const char *writable_by(mode_t m)
{
	return (m & S_IWOTH) ? "everyone" : "its group";
}

/* The directory: owned by root, writable by nobody else. */
static int hooks_check_dir(const struct rr_hooks *h, const struct stat *st, struct rr_err *e)
{
	if (!S_ISDIR(st->st_mode))
		return rr_errf(e, ENOTDIR, "%s: the %s hook directory is not a directory", h->dir,
			       h->kind);
	if (!trusted_owner(st->st_uid))
		return rr_errf(e, EPERM, "%s: the %s hook directory is owned by uid %u, not root: "
			       "refused, its owner could put any program there to run as root "
			       "(chown root it)", h->dir, h->kind, (unsigned)st->st_uid);
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return rr_errf(e, EPERM, "%s: the %s hook directory has mode %04o, writable by %s: "
			       "refused, anyone who can write it could add a hook that runs as "
			       "root (chmod go-w it)", h->dir, h->kind,
			       (unsigned)(st->st_mode & 07777), writable_by(st->st_mode));
	return 0;
}

/* One hook, on the fd of the file that would run (a symlink's target):
 * owned by root, writable by nobody else.  what: the path, and where a
 * symlink leads. */
static int hooks_check_file(const struct rr_hooks *h, const char *what, const struct stat *st,
			    struct rr_err *e)
{
	if (!trusted_owner(st->st_uid))
		return rr_errf(e, EPERM, "%s: %s hook owned by uid %u, not root: refused, its owner "
			       "could make it run anything as root (chown root it)", what, h->kind,
			       (unsigned)st->st_uid);
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return rr_errf(e, EPERM, "%s: %s hook has mode %04o, writable by %s: refused, "
			       "whoever can write it could make it run anything as root (chmod "
			       "go-w it)", what, h->kind, (unsigned)(st->st_mode & 07777),
			       writable_by(st->st_mode));
	return 0;
}

/* Start the next executable hook: 1 started, 0 none left, <0 error (a
 * refused hook too: it counts as a failed one). */
static int hooks_next(struct rr_hooks *h, struct rr_err *e)
{
	for (; h->i < h->n; h->i++) {
		const char *name = h->list[h->i]->d_name;
		struct stat lst, st;
		char what[sizeof(h->path) + RR_PATH + 32], target[RR_PATH];
		int fd, r;

		snprintf(h->path, sizeof(h->path), "%s/%s", h->dir, name);
		if (fstatat(h->dirfd, name, &lst, AT_SYMLINK_NOFOLLOW) < 0)
			continue;                  /* gone since the listing */
		/* O_PATH: no read permission needed, nothing opened for reading */
		fd = openat(h->dirfd, name, O_PATH | O_CLOEXEC);
		if (fd < 0) {
			if (S_ISLNK(lst.st_mode))
				continue;          /* a dangling symlink runs nothing */
			return rr_errf(e, errno, "%s: cannot open the %s hook: %s", h->path, h->kind,
				       strerror(errno));
		}
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111)) {
			close(fd);
			continue;                  /* not a program: not a hook (run-parts) */
		}
		snprintf(what, sizeof(what), "%s", h->path);
		if (S_ISLNK(lst.st_mode)) {
			ssize_t n = readlinkat(h->dirfd, name, target, sizeof(target) - 1);
			target[n > 0 ? n : 0] = 0;
			snprintf(what, sizeof(what), "%s (a symlink to %s)", h->path,
				 n > 0 ? target : "?");
		}
		r = hooks_check_file(h, what, &st, e);
		if (r < 0) {
			close(fd);
			h->i++;
			return r;
		}
		char *argv[] = { h->path, NULL };
		struct rr_hook_exec hx = { .dirfd = h->dirfd, .fd = fd, .name = name,
					   .direct = !S_ISLNK(lst.st_mode) };
		rr_log(RR_LOG_INFO, "running %s hook %s", h->kind, h->path);
		h->i++;
		r = job_start_hook(h->ev, argv, &hx, h->timeout, hook_done, h, &h->job);
		close(fd);                         /* the child has its copy */
		if (r < 0)
			return rr_errf(e, -r, "%s: cannot run the %s hook: %s", h->path, h->kind,
				       strerror(-r));
		return 1;
	}
	return 0;
}

int hooks_start(sd_event *ev, const char *dir, const char *kind, int64_t timeout,
		rr_op_done_fn done, void *arg, struct rr_hooks **ret, struct rr_err *e)
{
	struct rr_hooks *h = calloc(1, sizeof(*h));
	struct stat st;
	int r;

	if (!h)
		return rr_errf(e, ENOMEM, "out of memory");
	h->kind = kind;
	snprintf(h->dir, sizeof(h->dir), "%s", dir);
	/* the directory (a symlink followed) checked on the fd the hooks are
	 * then listed, opened and run from */
	h->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (h->dirfd < 0) {
		r = errno;
		hooks_free(h);
		return r == ENOENT ? 0 : rr_errf(e, r, "%s: %s", dir, strerror(r));
	}
	if (fstat(h->dirfd, &st) < 0) {
		r = rr_errf(e, errno, "%s: %s", dir, strerror(errno));
		hooks_free(h);
		return r;
	}
	if ((r = hooks_check_dir(h, &st, e)) < 0) {
		hooks_free(h);
		return r;
	}
	h->n = scandirat(h->dirfd, ".", &h->list, hook_filter, alphasort);
	if (h->n < 0) {
		r = errno;
		h->n = 0;
		hooks_free(h);
		return rr_errf(e, r, "%s: %s", dir, strerror(r));
	}
	h->ev = ev;
	h->timeout = timeout;
	h->done = done;
	h->arg = arg;
	r = hooks_next(h, e);
	if (r <= 0) {
		hooks_free(h);
		return r;
	}
	*ret = h;
	return 1;
}

void hooks_cancel(struct rr_hooks *h)
{
	if (!h)
		return;
	job_cancel(h->job);
	hooks_free(h);
}
