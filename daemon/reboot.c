/* SPDX-License-Identifier: GPL-2.0-only */
/* Getting out cleanly: pre-reboot hooks, blockers (logind inhibitors, the
 * blocker command), and the kexec reboot itself through logind, systemd, a
 * configured command, or reboot(2) when systemd is not PID 1.  rerandd runs
 * each as events on its loop: children as jobs, D-Bus calls asynchronous. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/reboot.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "rerandd.h"

/* logind's RebootWithFlags() flag (systemd's SD_LOGIND_KEXEC_REBOOT). */
#define RR_LOGIND_KEXEC_REBOOT (UINT64_C(1) << 1)

static int hook_filter(const struct dirent *de)
{
	/* run-parts rules: skip dot files and editor or package leftovers */
	const char *n = de->d_name;
	size_t l = strlen(n);
	return n[0] != '.' && n[l - 1] != '~' && !strstr(n, ".dpkg-") && !strstr(n, ".rpm");
}

/* ---- the system bus, attached to the loop --------------------------------- */

static sd_bus *sysbus;

/* The connection, opened on first use (and again after it broke); NULL
 * when there is no system bus: then nothing inhibits and logind is not
 * there to ask. */
static sd_bus *bus_get(sd_event *ev)
{
	if (sysbus && sd_bus_is_open(sysbus) > 0)
		return sysbus;
	sysbus = sd_bus_flush_close_unref(sysbus);
	if (sd_bus_open_system(&sysbus) < 0)
		return sysbus = NULL;
	if (sd_bus_attach_event(sysbus, ev, SD_EVENT_PRIORITY_NORMAL) < 0)
		sysbus = sd_bus_flush_close_unref(sysbus);
	return sysbus;
}

sd_bus *reboot_bus(sd_event *ev)
{
	return bus_get(ev);
}

void reboot_bus_close(void)
{
	sysbus = sd_bus_flush_close_unref(sysbus);
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

/* ---- blockers: a logind inhibitor, then BlockerCommand= ------------------- */

struct rr_blockers {
	sd_event *ev;
	sd_bus_slot *slot;
	struct rr_job *job;
	char cmd[RR_CMD];
	int64_t cmd_timeout;
	rr_inhibit_judge_fn judge;
	rr_op_done_fn done;           /* r: 1 blocked (msg says why), 0 not */
	void *arg;
};

static void blockers_finish(struct rr_blockers *b, int r, const char *why)
{
	rr_op_done_fn done = b->done;
	void *arg = b->arg;

	sd_bus_slot_unref(b->slot);
	free(b);
	done(r, why, arg);
}

static void blocker_cmd_done(int s, const char *msg, void *ud)
{
	struct rr_blockers *b = ud;
	char why[RR_ERR_MAX + 64];

	b->job = NULL;
	snprintf(why, sizeof(why), "reboot blocked by BlockerCommand: %s", msg);
	blockers_finish(b, s != 0, s != 0 ? why : "");
}

static int blockers_command(struct rr_blockers *b)
{
	struct rr_err e;
	char why[RR_ERR_MAX + 64];

	if (!*b->cmd)
		return 0;
	if (job_start_command(b->ev, b->cmd, b->cmd_timeout, RR_CHILD_NO_CAPS, blocker_cmd_done,
			      b, &b->job, &e) < 0) {
		/* a command that cannot run says no, as one that fails does */
		snprintf(why, sizeof(why), "reboot blocked by BlockerCommand: %s", e.msg);
		blockers_finish(b, 1, why);
		return 1;
	}
	return 1;
}

/* One lock of the reply: kept if it can block a reboot.  "delay" only
 * postpones one (logind sees to that itself) and "block-weak" (systemd 257)
 * does not apply to root; "what" is a ':'-separated list. */
static void inhibitor_add(struct rr_inhibitors *list, const char *what, const char *who,
			  const char *why, const char *mode, uint32_t uid, uint32_t pid)
{
	char words[256], *save = NULL;
	bool shutdown = false;
	struct rr_inhibitor *l;

	snprintf(words, sizeof(words), "%s", what);
	for (char *t = strtok_r(words, ":", &save); t; t = strtok_r(NULL, ":", &save))
		shutdown |= !strcmp(t, "shutdown");
	if (strcmp(mode, "block") || !shutdown)
		return;
	if (list->n == RR_MAX_INHIBITORS) {
		list->more++;
		return;
	}
	l = &list->l[list->n++];
	*l = (struct rr_inhibitor){ .uid = uid, .pid = pid, .blocks = true };
	snprintf(l->what, sizeof(l->what), "%s", what);
	snprintf(l->who, sizeof(l->who), "%s", who);
	snprintf(l->why, sizeof(l->why), "%s", why);
	snprintf(l->mode, sizeof(l->mode), "%s", mode);
}

static int on_inhibitors(sd_bus_message *reply, void *ud, sd_bus_error *ret_error)
{
	struct rr_blockers *b = ud;
	const char *what, *w, *why, *mode;
	uint32_t uid, pid;
	struct rr_inhibitors list = { 0 };
	char msg[512];
	bool blocked;

	b->slot = sd_bus_slot_unref(b->slot);
	/* an error reply (no logind): nothing inhibits */
	if (!sd_bus_message_is_method_error(reply, NULL) &&
	    sd_bus_message_enter_container(reply, 'a', "(ssssuu)") > 0)
		while (sd_bus_message_read(reply, "(ssssuu)", &what, &w, &why, &mode, &uid, &pid) > 0)
			inhibitor_add(&list, what, w, why, mode, uid, pid);
	blocked = b->judge ? b->judge(&list, b->arg) : list.n > 0;
	for (unsigned i = 0; blocked && i < list.n; i++) {
		const struct rr_inhibitor *l = &list.l[i];
		if (!l->blocks)
			continue;
		snprintf(msg, sizeof(msg), "reboot blocked by a logind inhibitor: %s (%s), uid %u "
			 "pid %u", l->who, l->why, l->uid, l->pid);
		blockers_finish(b, 1, msg);
		return 0;
	}
	if (!blockers_command(b))
		blockers_finish(b, 0, "");
	return 0;
}

int blockers_start(sd_event *ev, const struct rr_config *c, rr_inhibit_judge_fn judge,
		   rr_op_done_fn done, void *arg, struct rr_blockers **ret)
{
	struct rr_blockers *b = calloc(1, sizeof(*b));
	sd_bus *bus;

	if (!b)
		return -ENOMEM;
	b->ev = ev;
	snprintf(b->cmd, sizeof(b->cmd), "%s", c->blocker_cmd);
	b->cmd_timeout = c->blocker_timeout;
	b->judge = judge;
	b->done = done;
	b->arg = arg;
	*ret = b;
	if (c->honor_inhibitors && (bus = bus_get(ev)) &&
	    sd_bus_call_method_async(bus, &b->slot, "org.freedesktop.login1",
				     "/org/freedesktop/login1", "org.freedesktop.login1.Manager",
				     "ListInhibitors", on_inhibitors, b, "") >= 0)
		return 1;
	if (blockers_command(b))
		return 1;
	free(b);
	*ret = NULL;
	return 0;
}

void blockers_cancel(struct rr_blockers *b)
{
	if (!b)
		return;
	job_cancel(b->job);
	sd_bus_slot_unref(b->slot);
	free(b);
}

/* ---- the kexec reboot request ------------------------------------------- */

struct rr_request {
	sd_event *ev;
	sd_bus_slot *slot;
	struct rr_job *job;
	rr_op_done_fn done;
	void *arg;
	enum rr_method fw_method;     /* a reboot through the firmware: how */
	char fw_cmd[RR_CMD];
};

static void request_finish(struct rr_request *q, int r, const char *msg)
{
	rr_op_done_fn done = q->done;
	void *arg = q->arg;

	sd_bus_slot_unref(q->slot);
	free(q);
	done(r, msg, arg);
}

/* StartUnit's reply: the request is done, or failed with systemd's words. */
static int start_unit_reply(struct rr_request *q, sd_bus_message *reply, const char *unit)
{
	const sd_bus_error *err = sd_bus_message_get_error(reply);
	char msg[RR_ERR_MAX];

	q->slot = sd_bus_slot_unref(q->slot);
	if (!err) {
		request_finish(q, 0, "");
		return 0;
	}
	snprintf(msg, sizeof(msg), "systemd StartUnit(%s): %s", unit,
		 err->message ? err->message : err->name);
	request_finish(q, -EIO, msg);
	return 0;
}

static int on_systemd(sd_bus_message *reply, void *ud, sd_bus_error *ret_error)
{
	return start_unit_reply(ud, reply, "kexec.target");
}

static int via_systemd(struct rr_request *q, char *msg, size_t len)
{
	sd_bus *bus = bus_get(q->ev);
	int r;

	if (!bus) {
		snprintf(msg, len, "systemd StartUnit(kexec.target): no system bus");
		return -ENOTCONN;
	}
	r = sd_bus_call_method_async(bus, &q->slot, "org.freedesktop.systemd1",
				     "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
				     "StartUnit", on_systemd, q, "ss", "kexec.target",
				     "replace-irreversibly");
	if (r < 0)
		snprintf(msg, len, "systemd StartUnit(kexec.target): %s", strerror(-r));
	return r;
}

static int on_logind(sd_bus_message *reply, void *ud, sd_bus_error *ret_error)
{
	struct rr_request *q = ud;
	const sd_bus_error *err = sd_bus_message_get_error(reply);
	char msg[RR_ERR_MAX];

	q->slot = sd_bus_slot_unref(q->slot);
	if (!err) {
		request_finish(q, 0, "");
		return 0;
	}
	rr_log(RR_LOG_WARNING, "logind RebootWithFlags(kexec): %s; trying kexec.target",
	       err->message ? err->message : err->name);
	if (via_systemd(q, msg, sizeof(msg)) < 0)
		request_finish(q, -EIO, msg);
	return 0;
}

static void on_command(int s, const char *msg, void *ud)
{
	struct rr_request *q = ud;

	q->job = NULL;
	/* A command that "succeeds" and returns has only asked for the
	 * reboot: the caller waits for the end. */
	request_finish(q, s == 0 ? 0 : s < 0 ? s : -EIO, msg);
}

int reboot_request_start(sd_event *ev, const struct rr_config *c, rr_op_done_fn done, void *arg,
			 struct rr_request **ret, struct rr_err *e)
{
	struct rr_request *q = calloc(1, sizeof(*q));
	enum rr_method m = c->method;
	sd_bus *bus;
	int r;

	if (!q)
		return rr_errf(e, ENOMEM, "out of memory");
	q->ev = ev;
	q->done = done;
	q->arg = arg;
	if (m == RR_RM_AUTO)
		m = *c->reboot_cmd ? RR_RM_COMMAND : sd_booted() > 0 ? RR_RM_LOGIND : RR_RM_SYSCALL;
	switch (m) {
	case RR_RM_COMMAND:
		r = job_start_command(ev, c->reboot_cmd, 300, RR_CHILD_KEXEC_CAPS, on_command, q,
				      &q->job, e);
		break;
	case RR_RM_LOGIND:
		bus = bus_get(ev);
		r = bus ? sd_bus_call_method_async(bus, &q->slot, "org.freedesktop.login1",
						   "/org/freedesktop/login1",
						   "org.freedesktop.login1.Manager", "RebootWithFlags",
						   on_logind, q, "t", (uint64_t)RR_LOGIND_KEXEC_REBOOT)
			: -ENOTCONN;
		if (r >= 0)
			break;
		rr_log(RR_LOG_WARNING, "logind RebootWithFlags(kexec): %s; trying kexec.target",
		       strerror(-r));
		/* fall through */
	case RR_RM_SYSTEMD:
		r = via_systemd(q, e->msg, sizeof(e->msg));
		break;
	case RR_RM_SYSCALL:
	default:
		/* returns only on failure */
		sync();
		reboot(LINUX_REBOOT_CMD_KEXEC);
		r = rr_errf(e, errno, "reboot(LINUX_REBOOT_CMD_KEXEC): %s", strerror(errno));
	}
	if (r < 0) {
		sd_bus_slot_unref(q->slot);
		free(q);
		return r;
	}
	*ret = q;
	return 0;
}

static int on_reboot_target(sd_bus_message *reply, void *ud, sd_bus_error *ret_error)
{
	return start_unit_reply(ud, reply, "reboot.target");
}

/* After the unload: the reboot itself. */
static void firmware_go(struct rr_request *q)
{
	enum rr_method m = q->fw_method;
	struct rr_err e;
	sd_bus *bus;

	if (m == RR_RM_COMMAND) {
		if (job_start_command(q->ev, q->fw_cmd, 300, RR_CHILD_KEXEC_CAPS, on_command, q,
				      &q->job, &e) < 0)
			request_finish(q, -EIO, e.msg);
		return;
	}
	if (m != RR_RM_SYSCALL && (bus = bus_get(q->ev)) &&
	    sd_bus_call_method_async(bus, &q->slot, "org.freedesktop.systemd1",
				     "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
				     "StartUnit", on_reboot_target, q, "ss", "reboot.target",
				     "replace-irreversibly") >= 0)
		return;
	sync();
	reboot(LINUX_REBOOT_CMD_RESTART);
	rr_errf(&e, errno, "reboot(LINUX_REBOOT_CMD_RESTART): %s", strerror(errno));
	request_finish(q, -errno, e.msg);
}

static void on_unloaded(int s, const char *out, void *ud)
{
	struct rr_request *q = ud;

	q->job = NULL;
	/* a failed unload is said, and the reboot goes on: the boot loader's
	 * default comes back whatever is staged */
	if (s != 0)
		rr_log(RR_LOG_WARNING, "kexec -s -u: exit %d; rebooting anyway", s);
	firmware_go(q);
}

int reboot_firmware_start(sd_event *ev, const struct rr_config *c, rr_op_done_fn done,
			  void *arg, struct rr_request **ret, struct rr_err *e)
{
	struct rr_request *q;
	enum rr_method m = c->method;

	if (m == RR_RM_AUTO)
		m = *c->reboot_cmd ? RR_RM_COMMAND : sd_booted() > 0 ? RR_RM_SYSTEMD : RR_RM_SYSCALL;
	else if (m == RR_RM_LOGIND)
		m = RR_RM_SYSTEMD;
	/* RebootCommand= kexecs: a failed boot must not, so it is never used */
	if (m == RR_RM_COMMAND && !*c->firmware_reboot_cmd)
		return rr_errf(e, EINVAL, "Method=command without FirmwareRebootCommand=: "
			       "no way to reboot through the firmware");
	q = calloc(1, sizeof(*q));
	if (!q)
		return rr_errf(e, ENOMEM, "out of memory");
	q->ev = ev;
	q->done = done;
	q->arg = arg;
	q->fw_method = m;
	snprintf(q->fw_cmd, sizeof(q->fw_cmd), "%s", c->firmware_reboot_cmd);
	/* kexec_file_load's unload frees whatever is staged, however it was
	 * loaded, and is allowed under lockdown */
	char *argv[] = { (char *)c->kexec_bin, "-s", "-u", NULL };
	if (job_start(ev, argv, 60, RR_CHILD_KEXEC_CAPS, false, on_unloaded, q, &q->job) < 0) {
		rr_log(RR_LOG_WARNING, "%s: cannot run to unload the staged kernel", c->kexec_bin);
		firmware_go(q);
	}
	*ret = q;
	return 0;
}

void reboot_request_cancel(struct rr_request *q)
{
	if (!q)
		return;
	job_cancel(q->job);
	sd_bus_slot_unref(q->slot);
	free(q);
}
