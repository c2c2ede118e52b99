/* SPDX-License-Identifier: GPL-2.0-only */
/* Getting out cleanly: pre-reboot hooks, blockers (logind inhibitors, the
 * blocker command), and the kexec reboot itself through logind, systemd, a
 * configured command, or reboot(2) when systemd is not PID 1. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/reboot.h>
#include <stdarg.h>
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

int reboot_run_hooks(const char *dir, int64_t timeout, struct rr_err *e)
{
	struct dirent **list;
	int n = scandir(dir, &list, hook_filter, alphasort), r = 0;

	if (n < 0)
		return errno == ENOENT ? 0 : rr_errf(e, errno, "%s: %s", dir, strerror(errno));
	for (int i = 0; i < n; i++) {
		char path[RR_PATH + 256];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, list[i]->d_name);
		if (r == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111)) {
			char *argv[] = { path, NULL };
			rr_log(RR_LOG_INFO, "running pre-reboot hook %s", path);
			int s = run_argv(argv, timeout, RR_CHILD_NO_CAPS);
			if (s == -ETIMEDOUT)
				r = rr_errf(e, ETIMEDOUT, "%s: pre-reboot hook killed after %llds", path,
					    (long long)timeout);
			else if (s != 0)
				r = rr_errf(e, s < 0 ? -s : ECANCELED,
					    "%s: pre-reboot hook failed (%s %d)", path,
					    s < 0 ? "error" : "status", s < 0 ? -s : s);
		}
		free(list[i]);
	}
	free(list);
	return r;
}

int reboot_inhibited(char *who, size_t len)
{
	sd_bus_error err = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	sd_bus *bus = NULL;
	const char *what, *w, *why, *mode;
	uint32_t uid, pid;
	int r, found = 0;

	if (sd_bus_open_system(&bus) < 0)
		return 0;                      /* no bus, no logind: nothing inhibits */
	r = sd_bus_call_method(bus, "org.freedesktop.login1", "/org/freedesktop/login1",
			       "org.freedesktop.login1.Manager", "ListInhibitors", &err, &reply, "");
	if (r < 0)
		goto out;
	if (sd_bus_message_enter_container(reply, 'a', "(ssssuu)") < 0)
		goto out;
	while (sd_bus_message_read(reply, "(ssssuu)", &what, &w, &why, &mode, &uid, &pid) > 0) {
		/* "what" is a ':'-separated list; only "block" stops a reboot
		 * ("delay" just postpones it and logind handles that itself). */
		char list[256], *save = NULL;
		snprintf(list, sizeof(list), "%s", what);
		if (strcmp(mode, "block"))
			continue;
		for (char *t = strtok_r(list, ":", &save); t; t = strtok_r(NULL, ":", &save))
			if (!strcmp(t, "shutdown")) {
				snprintf(who, len, "%s (%s)", w, why);
				found = 1;
			}
		if (found)
			break;
	}
out:
	sd_bus_error_free(&err);
	sd_bus_message_unref(reply);
	sd_bus_flush_close_unref(bus);
	return found;
}

int reboot_command_blocks(const struct rr_config *c, char *why, size_t len)
{
	struct rr_err e;
	int r;

	if (!*c->blocker_cmd)
		return 0;
	r = run_command(c->blocker_cmd, c->blocker_timeout, RR_CHILD_NO_CAPS, &e);
	if (r != 0)
		snprintf(why, len, "reboot blocked by BlockerCommand: %s", e.msg);
	return r != 0;
}

/* One method call on the system bus; `what` names it in the error. */
static int bus_call(struct rr_err *e, const char *what, const char *dest, const char *path,
		    const char *iface, const char *method, const char *types, ...)
{
	sd_bus_error err = SD_BUS_ERROR_NULL;
	sd_bus *bus = NULL;
	va_list ap;
	int r;

	r = sd_bus_open_system(&bus);
	if (r < 0)
		return rr_errf(e, r, "system bus: %s", strerror(-r));
	va_start(ap, types);
	r = sd_bus_call_methodv(bus, dest, path, iface, method, &err, NULL, types, ap);
	va_end(ap);
	if (r < 0)
		rr_errf(e, r, "%s: %s", what, err.message ? err.message : strerror(-r));
	sd_bus_error_free(&err);
	sd_bus_flush_close_unref(bus);
	return r < 0 ? r : 0;
}

static int via_logind(struct rr_err *e)
{
	return bus_call(e, "logind RebootWithFlags(kexec)", "org.freedesktop.login1",
			"/org/freedesktop/login1", "org.freedesktop.login1.Manager",
			"RebootWithFlags", "t", (uint64_t)RR_LOGIND_KEXEC_REBOOT);
}

static int via_systemd(struct rr_err *e)
{
	return bus_call(e, "systemd StartUnit(kexec.target)", "org.freedesktop.systemd1",
			"/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
			"StartUnit", "ss", "kexec.target", "replace-irreversibly");
}

static int via_syscall(struct rr_err *e)
{
	sync();
	reboot(LINUX_REBOOT_CMD_KEXEC);
	return rr_errf(e, errno, "reboot(LINUX_REBOOT_CMD_KEXEC): %s", strerror(errno));
}

int reboot_kexec(const struct rr_config *c, struct rr_err *e)
{
	enum rr_method m = c->method;
	int r;

	if (m == RR_RM_AUTO)
		m = *c->reboot_cmd ? RR_RM_COMMAND : sd_booted() > 0 ? RR_RM_LOGIND : RR_RM_SYSCALL;
	switch (m) {
	case RR_RM_COMMAND:
		r = run_command(c->reboot_cmd, 300, RR_CHILD_KEXEC_CAPS, e);
		if (r == 0)
			/* A command that "succeeds" and returns has only asked for
			 * the reboot: the caller waits for the end. */
			return 0;
		return r < 0 ? r : -EIO;
	case RR_RM_LOGIND:
		r = via_logind(e);
		if (r == 0)
			return 0;
		rr_log(RR_LOG_WARNING, "%s; trying kexec.target", e->msg);
		/* fall through */
	case RR_RM_SYSTEMD:
		return via_systemd(e);
	case RR_RM_SYSCALL:
	default:
		return via_syscall(e);
	}
}
