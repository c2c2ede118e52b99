/* SPDX-License-Identifier: GPL-2.0-only */
/* What may hold a due reboot back: logind's block inhibitors on shutdown
 * (judged by the caller: whose, for how long), then BlockerCommand=. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "rerandd.h"

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
	if (c->honor_inhibitors && (bus = reboot_bus(ev)) &&
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
