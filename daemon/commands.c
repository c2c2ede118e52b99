/* SPDX-License-Identifier: GPL-2.0-only */
/* What rerandd does with each command of its control socket (`rerand
 * status`, `now`, `hold`, `fleet ...`, the kernel hook's `build`):
 * control.c reads, authenticates and audits a command, this file acts on
 * it and answers. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "rerandd.h"
#include "history.h"
#include "status.h"

/* The kernel hook's build is over: its answer, on the connection kept. */
static void on_hook_built(int r, const struct rr_stage_plan *p, const char *msg, void *ud)
{
	struct daemon *d = ud;
	char body[RR_ERR_MAX + RR_PATH + 64];

	d->hook_job = NULL;
	if (r == 0) {
		rr_log(RR_LOG_INFO, "kernel hook: the image of %s is in the cache: %s", d->hook_kernel,
		       p->image);
		snprintf(body, sizeof(body), "%s\n", p->image);
	} else {
		rr_log(RR_LOG_NOTICE, "kernel hook: no image of %s: %s", d->hook_kernel, msg);
		snprintf(body, sizeof(body), "%s\n", *msg ? msg : "the build failed");
	}
	control_reply(d->hook_fd, r == 0, body);
	close(d->hook_fd);
	d->hook_fd = -1;
}

/* "build KERNEL": the kernel hook asks for KERNEL's image, which rerandd
 * builds as it builds its own (staging's pipeline, without the load).
 * 1: the connection is kept and answered by on_hook_built. */
static int hook_build(struct daemon *d, const char *kernel, int cfd)
{
	struct rr_stage_req req = { .kernel = kernel, .build_only = true };
	struct rr_err e;

	if (d->crash_boot) {
		control_reply(cfd, false, "this is a crash kernel boot: rerandd builds no images\n");
		return 0;
	}
	if (d->hook_job) {
		control_reply(cfd, false, "busy: building the image of another kernel for the kernel "
			      "hook\n");
		return 0;
	}
	snprintf(d->hook_kernel, sizeof(d->hook_kernel), "%s", kernel);
	rr_log(RR_LOG_INFO, "kernel hook: building the image of %s", kernel);
	if (stage_start(d->ev, &d->cfg, &req, on_hook_built, d, &d->hook_job, &e) < 0) {
		char body[RR_ERR_MAX + 2];
		rr_log(RR_LOG_NOTICE, "kernel hook: no image of %s: %s", kernel, e.msg);
		snprintf(body, sizeof(body), "%s\n", e.msg);
		control_reply(cfd, false, body);
		return 0;
	}
	d->hook_fd = cfd;
	return 1;
}

/* `rerand now`: a rerandomization wanted now (a hold still wins). */
static void ctl_now(struct daemon *d, int cfd)
{
	if (d->crash_boot) {
		control_reply(cfd, false, "this is a crash kernel boot: rerandd does not "
			      "rerandomize from it\n");
		return;
	}
	d->st.trig_now = true;
	daemon_save(d);
	rr_log(RR_LOG_NOTICE, "rerandomization requested over the control socket");
	control_reply(cfd, true, d->st.hold ? "requested, but a hold is in place\n"
					    : "requested\n");
	daemon_evaluate_soon(d);
}

/* `rerand now --wait` gave up (a hold, a blocker, its timeout): kured then
 * uncordons the node and gives its lock back, so nothing it asked for may
 * happen later by itself. */
static void ctl_withdraw(struct daemon *d, int cfd)
{
	if (d->st.phase >= RR_PH_REBOOT || d->request) {
		control_reply(cfd, true, "under way\n");
		return;
	}
	d->st.trig_now = false;
	if (d->st.phase != RR_PH_IDLE)
		seq_unwind(d, "`rerand now --wait` gave up");
	daemon_save(d);
	rr_log(RR_LOG_NOTICE, "`rerand now --wait` gave up: its request is withdrawn");
	control_reply(cfd, true, "withdrawn\n");
	daemon_evaluate_soon(d);
}

/* `rerand hold [TEXT]`, `rerand unhold`. */
static void ctl_hold(struct daemon *d, enum rr_ctl_cmd cmd, const char *arg, int cfd)
{
	state_set_hold(&d->st, cmd == RR_CTL_HOLD, arg, time(NULL));
	daemon_save(d);
	if (*d->st.hold_text)
		rr_log(RR_LOG_NOTICE, "operator hold: %s", d->st.hold_text);
	else
		rr_log(RR_LOG_NOTICE, "operator %s", d->st.hold ? "hold" : "release");
	control_reply(cfd, true, d->st.hold ? "held\n" : "released\n");
	daemon_evaluate_soon(d);
}

/* Every command of the control socket (control.c reads and checks it). */
int daemon_on_control(void *ud, enum rr_ctl_cmd cmd, const char *arg, int cfd)
{
	struct daemon *d = ud;
	struct rr_view v;
	char body[16384];

	switch (cmd) {
	case RR_CTL_STATUS:
	case RR_CTL_STATUS_JSON:
		daemon_fill_view(d, &v);
		if ((cmd == RR_CTL_STATUS ? control_format_text(&v, body, sizeof(body))
					  : control_format_json(&v, body, sizeof(body))) < 0)
			snprintf(body, sizeof(body), "status too long\n");
		control_reply(cfd, true, body);
		break;
	case RR_CTL_NOW:
		ctl_now(d, cfd);
		break;
	case RR_CTL_NOW_WITHDRAW:
		ctl_withdraw(d, cfd);
		break;
	case RR_CTL_DUE:
		daemon_format_due(d, body, sizeof(body));
		control_reply(cfd, true, body);
		break;
	case RR_CTL_PHASE:
		/* what `rerand now --wait` polls: the sequence's phase, the last
		 * plan, and the hold as it is now (the plan may predate it) */
		snprintf(body, sizeof(body), "%s %s %s %s %s\n", state_phase_name(d->st.phase),
			 policy_action_name(d->out.action), policy_blocker_name(d->out.blocker),
			 policy_reason_name(d->out.reason), d->st.hold ? "held" : "free");
		control_reply(cfd, true, body);
		break;
	case RR_CTL_HOLD:
	case RR_CTL_RELEASE:
		ctl_hold(d, cmd, arg, cfd);
		break;
	case RR_CTL_FLEET_STATUS:
	case RR_CTL_FLEET_STATUS_JSON:
		control_reply(cfd, coord_status(&d->co, cmd == RR_CTL_FLEET_STATUS_JSON, body,
						sizeof(body)) == 0, body);
		break;
	case RR_CTL_FLEET_RELEASE:
		control_reply(cfd, coord_release_host(&d->co, arg, body, sizeof(body)) == 0, body);
		daemon_evaluate_soon(d);
		break;
	case RR_CTL_FLEET_CLEAR_BREAKER:
		/* answered by coord once rerand-fleetd has done it */
		if (coord_clear_breaker(&d->co, cfd, body, sizeof(body)) == 0)
			return 1;          /* kept: coord answers and closes it */
		control_reply(cfd, false, body);
		break;
	case RR_CTL_BUILD:
		return hook_build(d, arg, cfd);
	case RR_CTL_HISTORY:
	case RR_CTL_HISTORY_JSON:
		return history_reply(d, cmd == RR_CTL_HISTORY_JSON, cfd);
	default:
		control_reply(cfd, false, "unknown command (status [json], now, due, phase, hold, release, "
			      "fleet status [json], fleet release HOST, fleet clear-breaker, "
			      "build KERNEL, history [json])\n");
	}
	return 0;
}
