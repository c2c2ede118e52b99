/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd's reboot sequence as a state machine (docs/design.md draws it):
 *
 *   idle -> gate -> restage -> hooks -> confirm -> reboot -> rebooting
 *             \________\__________\________\_________\---> idle (unwound)
 *
 * Each phase is saved in the state file before its work starts, and every
 * step is an event: a fleet answer (coord), a job's completion (staging,
 * hooks) or a D-Bus reply (the reboot request).  Nothing here waits, so
 * the control socket and the watchdog are served throughout. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "rerandd.h"

#define REBOOT_GRACE 300           /* an accepted reboot that never came is a failure */

/* False when the state file could not be written: the step must not go on. */
static bool set_phase(struct daemon *d, enum rr_phase ph)
{
	if (d->st.phase == ph)
		return true;
	rr_log(RR_LOG_DEBUG, "reboot sequence: %s -> %s", state_phase_name(d->st.phase),
	       state_phase_name(ph));
	d->st.phase = ph;
	return daemon_save(d) == 0;
}

/* A reboot whose attempt is not on disk would come back as an unplanned
 * boot: not counted, so back-off and MaxFailures would never trip, and a
 * slot or a hold could be lost.  No reboot then, and say why. */
static void cancel_unsaved(struct daemon *d)
{
	snprintf(d->seq_error, sizeof(d->seq_error), "reboot cancelled: the state file cannot be "
		 "written (%.400s), so the next boot could not be counted", d->save_error);
	d->seq_cancelled_at = daemon_mono();
	seq_unwind(d, d->seq_error);
}

void seq_cancel(struct daemon *d)
{
	hooks_cancel(d->hooks);
	d->hooks = NULL;
	reboot_request_cancel(d->request);
	d->request = NULL;
}

void seq_unwind(struct daemon *d, const char *why)
{
	if (why)
		rr_log(RR_LOG_ERR, "%s; not rebooting now", why);
	seq_cancel(d);
	/* a reboot that did not go: the watchdog armed for it must not reset
	 * the machine that is still running */
	confirm_disarm(d);
	/* the slot (if any) goes back before the next try */
	coord_abort(&d->co);
	d->rebooting_since = 0;
	d->restage_at = d->restage_pkg_since = 0;
	set_phase(d, RR_PH_IDLE);
	daemon_evaluate_soon(d);
}

/* restage: a fresh seed just before the reboot (the staged one has sat in
 * memory since the last restage), from the kernel file hashed again.  Not
 * while dpkg or the kernel hook is at work, as a new kernel waits: a kernel
 * being replaced would be staged half-installed (its initramfs not yet
 * made).  The wait is kernels_new_wait's, at most 30 min for dpkg. */
static void step_restage(struct daemon *d, time_t mono)
{
	int64_t wait = kernels_new_wait(&d->cfg, NULL, mono, &d->restage_pkg_since,
					"rerandomizing reboot");

	if (wait > 0) {
		d->restage_at = mono + wait;
		return;
	}
	d->restage_at = 0;
	if (daemon_stage(d, d->staged ? &d->plan : NULL, false) < 0)
		seq_unwind(d, "the fresh stage could not start");
}

/* gate: at most MaxConcurrent hosts of the group past this point at once;
 * with the backend unreachable nobody is (fail closed). */
static void step_gate(struct daemon *d)
{
	int r = coord_gate(&d->co, &d->cfg, &d->st, d->out.reason);

	if (r == COORD_PENDING)
		return;                    /* coord wakes us */
	if (r != 1) {
		set_phase(d, RR_PH_IDLE);  /* not now: policy asks again */
		return;
	}
	rr_log(RR_LOG_NOTICE, "rerandomizing reboot (%s)", policy_reason_name(d->out.reason));
	if (!set_phase(d, RR_PH_RESTAGE)) {
		cancel_unsaved(d);
		return;
	}
	d->restage_pkg_since = 0;
	step_restage(d, daemon_mono());
}

static void step_confirm(struct daemon *d);

static void on_hooks(int r, const char *msg, void *ud)
{
	struct daemon *d = ud;

	d->hooks = NULL;
	if (r < 0) {
		seq_unwind(d, msg);
		return;
	}
	if (!set_phase(d, RR_PH_CONFIRM)) {
		cancel_unsaved(d);
		return;
	}
	step_confirm(d);
}

void seq_restaged(struct daemon *d, int r)
{
	struct rr_err e;

	/* another stage (`rerand stage`) while the fresh one waits for dpkg
	 * is not the fresh one */
	if (d->st.phase != RR_PH_RESTAGE || d->restage_at)
		return;
	if (r < 0) {
		seq_unwind(d, "the fresh stage failed");
		return;
	}
	if (!set_phase(d, RR_PH_HOOKS)) {
		cancel_unsaved(d);
		return;
	}
	daemon_publish(d);             /* hooks see this step's status and metrics */
	r = hooks_start(d->ev, d->cfg.pre_reboot_dir, "pre-reboot", d->cfg.hook_timeout, on_hooks, d, &d->hooks, &e);
	if (r < 0)
		seq_unwind(d, e.msg);
	else if (r == 0)
		on_hooks(0, "", d);        /* no hooks */
}

static void on_request(int r, const char *msg, void *ud)
{
	struct daemon *d = ud;

	d->request = NULL;
	if (r < 0) {
		rr_log(RR_LOG_ERR, "reboot failed: %s", msg);
		state_record_failed_reboot(&d->st, time(NULL));
		seq_unwind(d, NULL);
		return;
	}
	d->rebooting_since = daemon_mono();
	set_phase(d, RR_PH_REBOOTING);
	daemon_publish(d);
}

/* confirm: the slot must still be ours; then the attempt is written down
 * before the request goes out. */
static void step_confirm(struct daemon *d)
{
	struct rr_state before = d->st;
	struct rr_err e;
	int r = coord_confirm(&d->co);

	if (r == COORD_PENDING)
		return;
	if (r != 1) {
		seq_unwind(d, NULL);      /* coord said why */
		return;
	}
	state_record_attempt(&d->st, d->out.reason, time(NULL));
	oneshot_note_attempt(d);
	d->st.trig_now = false;
	/* armed last, after the hooks and the slot: from here the reboot goes */
	confirm_arm_for_kexec(d);
	/* saves: the attempt is on disk before we go, or we do not go */
	if (!set_phase(d, RR_PH_REBOOT)) {
		confirm_disarm(d);         /* no reboot: a healthy machine keeps running */
		d->st = before;            /* nothing was attempted; `rerand now` stays asked */
		cancel_unsaved(d);
		return;
	}
	d->seq_error[0] = 0;
	d->seq_cancelled_at = 0;
	daemon_publish(d);
	if (reboot_request_start(d->ev, &d->cfg, on_request, d, &d->request, &e) < 0)
		on_request(-1, e.msg, d);
}

void seq_begin(struct daemon *d)
{
	if (!set_phase(d, RR_PH_GATE)) {
		cancel_unsaved(d);
		return;
	}
	step_gate(d);
}

void seq_step(struct daemon *d, time_t now)
{
	time_t mono = daemon_mono();

	/* a hold stops a sequence that has not yet asked for the reboot */
	if (d->st.hold && d->st.phase < RR_PH_REBOOT && !d->request) {
		seq_unwind(d, "an operator hold was put in place");
		return;
	}
	switch (d->st.phase) {
	case RR_PH_GATE:
		step_gate(d);
		break;
	case RR_PH_CONFIRM:
		step_confirm(d);
		break;
	case RR_PH_RESTAGE:
		coord_keepalive(&d->co);
		if (d->restage_at && mono >= d->restage_at && !d->stage_job)
			step_restage(d, mono);
		break;
	case RR_PH_HOOKS:
	case RR_PH_REBOOT:
		/* a job or a D-Bus call runs; its completion moves on.  The
		 * slot's lease must outlive the wait. */
		coord_keepalive(&d->co);
		break;
	case RR_PH_REBOOTING:
		/* the lease must outlive the shutdown */
		coord_keepalive(&d->co);
		/* on CLOCK_BOOTTIME: a wall clock stepped forward while the
		 * machine shuts down must not end the grace early (issue 39) */
		if (mono - d->rebooting_since < REBOOT_GRACE)
			break;
		rr_log(RR_LOG_ERR, "the reboot was accepted but never happened");
		state_record_failed_reboot(&d->st, now);
		seq_unwind(d, NULL);
		break;
	case RR_PH_IDLE:
		break;
	}
}

void seq_resume(struct daemon *d, enum rr_resume how)
{
	/* coord_startup has already planned the release of whatever slot is
	 * ours; the sequence starts again from the gate when policy says so */
	if (how == RR_RESUME_UNWIND)
		rr_log(RR_LOG_WARNING, "rerandd restarted in the middle of a rerandomizing reboot: "
		       "unwound (the fleet slot, if any, is given back)");
}
