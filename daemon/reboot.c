/* SPDX-License-Identifier: GPL-2.0-only */
/* Getting out cleanly: the kexec reboot itself through logind, systemd, a
 * configured command, or reboot(2) when systemd is not PID 1, and the
 * reboot through the firmware; and the system bus they and the blockers
 * use.  rerandd runs each as events on its loop: children as jobs, D-Bus
 * calls asynchronous.  Before it: hooks.c (pre-reboot and post-boot
 * hooks) and blockers.c (logind inhibitors, BlockerCommand=). */
#include <errno.h>
#include <linux/reboot.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/reboot.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "rerandd.h"

/* logind's RebootWithFlags() flag (systemd's SD_LOGIND_KEXEC_REBOOT). */
#define RR_LOGIND_KEXEC_REBOOT (UINT64_C(1) << 1)

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
