/* SPDX-License-Identifier: GPL-2.0-only */
/* The hook runner (daemon/reboot.c hooks_start, daemon/run.c job_start_hook)
 * on real directories and scripts (issue 39, point 9): what another user
 * could write is refused, before or between hooks, as a failed hook; what
 * root alone can change still runs, through what was checked. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rerandd.h"
#include "test.h"

static char top[64];

struct hooks_result {
	bool done;
	int r;
	char msg[1024];
};

static void hooks_done(int r, const char *msg, void *ud)
{
	struct hooks_result *res = ud;

	res->done = true;
	res->r = r;
	snprintf(res->msg, sizeof(res->msg), "%s", msg ? msg : "");
}

/* Run the hooks of dir as rerandd does: hooks_start's result, or done's
 * (res->r and res->msg either way: the reboot or confirmation fails on <0). */
static int run_hooks(const char *dir, struct hooks_result *res)
{
	struct rr_hooks *h = NULL;
	struct rr_err e = { 0 };
	sd_event *ev;
	sigset_t chld;
	int r;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	memset(res, 0, sizeof(*res));
	if ((r = sd_event_new(&ev)) < 0)
		return r;
	r = hooks_start(ev, dir, "post-boot", 10, hooks_done, res, &h, &e);
	if (r < 0) {
		res->r = r;
		snprintf(res->msg, sizeof(res->msg), "%s", e.msg);
	}
	while (r > 0 && !res->done && sd_event_run(ev, UINT64_MAX) >= 0)
		;
	sd_event_unref(ev);
	if (r > 0)
		r = res->r;
	printf("# %s: %d %s\n", dir, r, res->msg);
	return r;
}

static const char *path(const char *rel)
{
	static char buf[4][256];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", top, rel);
	return buf[i];
}

/* A hook that appends "$0 $(pwd)" to its name + ".ran" (in top) and exits with rc. */
static void hook(const char *rel, const char *ran, int rc, mode_t mode)
{
	FILE *f = fopen(path(rel), "w");

	if (!f)
		return;
	fprintf(f, "#!/bin/sh\necho \"$0 $(pwd)\" >>%s/%s.ran\nexit %d\n", top, ran, rc);
	fclose(f);
	chmod(path(rel), mode);
}

static bool ran(const char *name)
{
	char rel[64];

	snprintf(rel, sizeof(rel), "%s.ran", name);
	return access(path(rel), F_OK) == 0;
}

static bool ran_with(const char *name, const char *line)
{
	char rel[64], buf[512] = "";
	FILE *f;

	snprintf(rel, sizeof(rel), "%s.ran", name);
	f = fopen(path(rel), "r");
	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	if (strcmp(buf, line))
		printf("# %s ran with '%s', want '%s'\n", name, buf, line);
	return !strcmp(buf, line);
}

int main(void)
{
	struct hooks_result res;
	char want[512];
	int r;

	snprintf(top, sizeof(top), "/tmp/rerand-test-hooks-XXXXXX");
	if (!mkdtemp(top)) {
		perror("mkdtemp");
		return 1;
	}
	umask(022);

	/* no directory, an empty one: no hooks */
	T_OK(run_hooks(path("none"), &res) == 0, "hooks: a missing directory has no hooks");
	mkdir(path("a"), 0755);
	T_OK(run_hooks(path("a"), &res) == 0, "hooks: an empty directory has none");

	/* a good hook runs as ./NAME in its directory */
	hook("a/10-good", "a-good", 0, 0755);
	snprintf(want, sizeof(want), "./10-good %s", path("a"));
	T_OK(run_hooks(path("a"), &res) == 0 && ran_with("a-good", want),
	     "hooks: a root-owned 0755 hook runs, as ./NAME with its directory as working directory");

	/* a refused hook after a good one: the run fails, the refused one never ran */
	hook("a/20-gw", "a-gw", 0, 0775);
	r = run_hooks(path("a"), &res);
	T_OK(r == -EPERM && strstr(res.msg, path("a/20-gw")) &&
	     strstr(res.msg, "post-boot hook has mode 0775, writable by its group: refused") &&
	     !ran("a-gw"), "hooks: a group-writable hook after a good one fails the run, never runs");
	chmod(path("a/20-gw"), 0757);
	r = run_hooks(path("a"), &res);
	T_OK(r == -EPERM && strstr(res.msg, "mode 0757, writable by everyone") && !ran("a-gw"),
	     "hooks: an everyone-writable hook is refused");
	/* not executable: not a hook, as run-parts has it, whatever its mode */
	chmod(path("a/20-gw"), 0666);
	T_OK(run_hooks(path("a"), &res) == 0 && !ran("a-gw"),
	     "hooks: a non-executable file is not a hook (skipped, not refused)");
	unlink(path("a/20-gw"));

	/* the directory */
	chmod(path("a"), 0775);
	unlink(path("a-good.ran"));
	r = run_hooks(path("a"), &res);
	T_OK(r == -EPERM && strstr(res.msg, path("a")) &&
	     strstr(res.msg, "the post-boot hook directory has mode 0775, writable by its group: refused") &&
	     !ran("a-good"), "hooks: a group-writable directory is refused, none of its hooks run");
	chmod(path("a"), 0755);

	/* a symlink: judged and run by its target */
	mkdir(path("b"), 0755);
	mkdir(path("other"), 0755);
	hook("other/target", "b-link", 0, 0755);
	symlink(path("other/target"), path("b/10-link"));
	T_OK(run_hooks(path("b"), &res) == 0 && ran("b-link"),
	     "hooks: a symlink to a root-owned 0755 script runs it (through the target's fd)");
	chmod(path("other/target"), 0775);
	unlink(path("b-link.ran"));
	r = run_hooks(path("b"), &res);
	snprintf(want, sizeof(want), "%s (a symlink to %s): post-boot hook has mode 0775",
		 path("b/10-link"), path("other/target"));
	T_OK(r == -EPERM && strstr(res.msg, want) && !ran("b-link"),
	     "hooks: a symlink to a group-writable target is refused, naming both");
	/* a dangling symlink runs nothing */
	unlink(path("other/target"));
	T_OK(run_hooks(path("b"), &res) == 0, "hooks: a dangling symlink is no hook");

	/* a directory reached through a symlink is judged by what it points to */
	mkdir(path("c"), 0777);
	chmod(path("c"), 0777);
	hook("c/10-x", "c-x", 0, 0755);
	symlink(path("c"), path("c-link"));
	r = run_hooks(path("c-link"), &res);
	T_OK(r == -EPERM && strstr(res.msg, "directory has mode 0777, writable by everyone") && !ran("c-x"),
	     "hooks: a symlink to an everyone-writable directory is refused");

	/* another user's */
	if (geteuid() == 0) {
		hook("a/30-nobody", "a-nobody", 0, 0755);
		r = chown(path("a/30-nobody"), 65534, 0) ? -errno : run_hooks(path("a"), &res);
		T_OK(r == -EPERM && strstr(res.msg, "30-nobody: post-boot hook owned by uid 65534, not root: refused") &&
		     !ran("a-nobody"), "hooks: a hook owned by uid 65534 is refused");
		unlink(path("a/30-nobody"));
		r = chown(path("a"), 65534, 0) ? -errno : run_hooks(path("a"), &res);
		T_OK(r == -EPERM && strstr(res.msg, "post-boot hook directory is owned by uid 65534, not root"),
		     "hooks: a directory owned by uid 65534 is refused");
	} else {
		T_OK(1, "# SKIP hooks owned by another user: the test is not root");
		T_OK(1, "# SKIP a directory owned by another user: the test is not root");
	}

	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	if (system(cmd))
		printf("# could not remove %s\n", top);
	return t_done();
}
