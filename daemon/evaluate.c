/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd's evaluation, run by the loop's timer: in idle, keep an image
 * staged and the crash kernel loaded and ask policy whether to reboot;
 * in a sequence, its next step.  Also `rerand due`, which asks policy the
 * same question. */
#include <stdio.h>
#include <string.h>
#include <systemd/sd-event.h>
#include <time.h>

#include "rerandd.h"

#define SAVE_RETRY 60              /* seconds after a reboot cancelled for an unwritable state */

static void check_taint(struct daemon *d)
{
	uint64_t t, fresh;

	if (watch_read_taint(d->cfg.tainted, &t) < 0)
		return;
	fresh = t & (RR_TAINT_DIE | RR_TAINT_WARN) & ~d->st.taint_handled;
	if (!fresh)
		return;
	d->st.taint_handled |= fresh;
	d->st.trig_oops = true;
	rr_log(RR_LOG_WARNING, "kernel taint shows a new %s: the layout may have leaked",
	       fresh & RR_TAINT_DIE ? "oops (TAINT_DIE)" : "warning (TAINT_WARN)");
	daemon_save(d);
}

static void on_blockers(int blocked, const char *why, void *ud)
{
	struct daemon *d = ud;

	d->blockers = NULL;
	d->blk_done = true;
	d->blk_blocked = blocked > 0;
	snprintf(d->blk_why, sizeof(d->blk_why), "%s", why);
	daemon_evaluate_soon(d);
}

static void on_crash_loaded(void *ud)
{
	daemon_evaluate_soon(ud);
}

/* What policy decides on, from this boot's state (blockers aside). */
static void policy_inputs(const struct daemon *d, time_t now, struct rr_policy_in *in)
{
	memset(in, 0, sizeof(*in));
	in->now = now;
	in->layout_born = d->boot_time;
	in->jitter = d->st.jitter > 0 ? d->st.jitter : 0;
	in->last_reboot = d->st.last_reboot;
	in->last_failure = d->st.last_failure;
	in->failures = d->st.failures;
	in->oops = d->st.trig_oops;
	in->new_kernel = d->st.trig_new_kernel;
	in->now_requested = d->st.trig_now;
	in->weak = d->verify == RR_V_WEAK;
	in->hold = d->st.hold;
	in->staged = d->staged;
}

/* `rerand due`: "due REASON" when a rerandomization is due now with every
 * window open (kured's --reboot-sentinel-command), else "not due: WHY". */
void daemon_format_due(const struct daemon *d, char *out, size_t size)
{
	struct rr_policy_in in;
	struct rr_policy_out o;
	time_t now = time(NULL);
	char when[40];
	struct tm tm;

	if (d->crash_boot) {
		snprintf(out, size, "not due: this is a crash kernel boot\n");
		return;
	}
	if (d->st.phase != RR_PH_IDLE) {
		snprintf(out, size, "due: a rerandomizing reboot is under way (%s)\n",
			 state_phase_name(d->st.phase));
		return;
	}
	policy_inputs(d, now, &in);
	policy_due(&d->cfg, &in, &o);
	switch (o.action) {
	case RR_ACT_REBOOT:
		snprintf(out, size, "due: %s\n", policy_reason_name(o.reason));
		break;
	case RR_ACT_BLOCKED:
		snprintf(out, size, "not due: %s is due but blocked by %s\n",
			 policy_reason_name(o.reason), policy_blocker_name(o.blocker));
		break;
	case RR_ACT_WAIT:
		gmtime_r(&o.when, &tm);
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		snprintf(out, size, "not due: %s at %s\n", policy_reason_name(o.reason), when);
		break;
	case RR_ACT_STOPPED:
		snprintf(out, size, "not due: stopped after %u failures in a row (MaxFailures=%u); "
			 "`rerand now` still rerandomizes\n", d->st.failures, d->cfg.max_failures);
		break;
	default:
		snprintf(out, size, "not due: nothing planned\n");
	}
}

/* An image staged while a rerandomization is wanted, none while not
 * (unstage.c says when); a staged kernel file that changed is unloaded at
 * once and the new-kernel path stages what /boot holds now. */
static void keep_staged(struct daemon *d, time_t now)
{
	char why[sizeof(d->unstaged_why)];
	struct rr_boot_entry next;
	int changed, loader = 0;

	if (d->stage_job || d->unload_job)
		return;
	if (unstage_unwanted(d, why, sizeof(why))) {
		if ((d->staged || d->loaded_mark) &&
		    (!d->unload_failed_at || now - d->unload_failed_at >= DAEMON_STAGE_RETRY))
			daemon_unstage(d, why);
		else if (!d->staged)
			snprintf(d->unstaged_why, sizeof(d->unstaged_why), "%s", why);
		d->unstaged_by_policy = true;
		return;
	}
	/* what the boot loader boots next (bootnext.c): none rerand can
	 * stage, or another kernel than the staged one */
	if (!*d->cfg.kernel) {
		struct rr_err e;

		if ((loader = bootnext_find(&d->cfg, &next, &e)) < 0) {
			daemon_loader_refuses(d, e.msg);
			return;
		}
	}
	if (d->unstaged_by_policy) {
		d->unstaged_by_policy = false;
		d->unstaged_why[0] = 0;
	}
	if (loader == 1 && d->staged && strcmp(next.kernel, d->plan.kernel)) {
		snprintf(why, sizeof(why), "the boot loader boots %.120s next, not the staged %.80s",
			 next.id, d->plan.kernel);
		daemon_unstage(d, why);
		d->restage_not_new = true;
		if (!d->new_kernel_at)
			d->new_kernel_at = now;
		return;
	}
	if ((changed = unstage_kernel_changed(d, why, sizeof(why))) > 0) {
		daemon_unstage(d, why);
		/* a removed kernel is no new one: what is staged next does not
		 * trigger a rerandomization by itself */
		d->restage_not_new = changed == RR_KERNEL_GONE;
		if (!d->new_kernel_at)
			d->new_kernel_at = now;
		return;
	}
	if (d->new_kernel_at && now >= d->new_kernel_at)
		daemon_stage_new_kernel(d);
	if (!d->stage_job &&
	    ((!d->staged && (!d->stage_failed_at || now - d->stage_failed_at >= DAEMON_STAGE_RETRY)) ||
	     (d->staged && now - d->st.staged_time >= d->cfg.restage_interval)))
		daemon_stage(d, d->staged ? &d->plan : NULL, false);
}

/* idle: keep an image staged and the crash kernel loaded, watch for
 * triggers; when policy says reboot and nothing blocks, start the sequence. */
static void evaluate_idle(struct daemon *d, time_t now)
{
	struct rr_policy_in in = { 0 };

	coord_service(&d->co, &d->cfg, &d->st);
	check_taint(d);
	keep_staged(d, now);
	/* after a new kernel was staged: the crash kernel follows it */
	if (!d->stage_job && !d->cr.job && crash_due(&d->cfg, &d->cr, now))
		crash_start(d->ev, &d->cfg, &d->cr, d->staged ? &d->plan : NULL, now,
			    on_crash_loaded, d);

	policy_inputs(d, now, &in);
	policy_decide(&d->cfg, &in, &d->out);
	if (d->out.action != RR_ACT_REBOOT) {
		d->blk_done = false;
		blockers_cancel(d->blockers);
		d->blockers = NULL;
		coord_not_due(&d->co);
		return;
	}
	/* Not before this boot is confirmed; never after it failed. */
	if (confirm_busy(d))
		return;
	/* Staging and the crash load finish first: one kexec load at a time. */
	if (d->stage_job || d->cr.job || d->blockers)
		return;
	/* The expensive blockers are asked only when a reboot is due, and
	 * their answer is used once: the next due evaluation asks again. */
	if (!d->blk_done) {
		if (blockers_start(d->ev, &d->cfg, on_blockers, d, &d->blockers) > 0)
			return;
		d->blk_blocked = false;
		d->blk_why[0] = 0;
	}
	d->blk_done = false;
	in.inhibited = d->blk_blocked && !strncmp(d->blk_why, "reboot blocked by a logind", 26);
	in.command_blocks = d->blk_blocked && !in.inhibited;
	/* Say so when the reason changes, not at every tick. */
	if (*d->blk_why && strcmp(d->blk_why, d->blocked_why))
		rr_log(RR_LOG_NOTICE, "%s", d->blk_why);
	snprintf(d->blocked_why, sizeof(d->blocked_why), "%s", d->blk_why);
	policy_decide(&d->cfg, &in, &d->out);
	/* the state could not be written the last time: not again at once
	 * (the hooks would drain the machine every time) */
	if (d->out.action == RR_ACT_REBOOT &&
	    (!d->seq_cancelled_at || now - d->seq_cancelled_at >= SAVE_RETRY))
		seq_begin(d);
}

#define BUSY_TICK_MS 60000   /* longest sleep while something is under way */

/* The longest sleep before the next look, when nothing computed is due
 * sooner.  Idle, every wakeup costs (issue 28: 1.7 ms of CPU each on a
 * loaded host, bench/rerandd-idle.sh), so rerandd sleeps CheckInterval=
 * and, under systemd's watchdog, no longer than the ping: sd-event pings
 * at some point between a half and three quarters of WatchdogSec= after
 * the last ping, chosen by the same rule (sleep_between: the latest
 * minute mark, perturbed per boot) as a timer given that window, so the
 * look gets the same window (*window_ms) and one wakeup carries both;
 * a look that comes first pings, and the watchdog's timer starts again.
 * While a sequence, a boot confirmation or a job is under way, or a due
 * reboot waits for what blocks it, or /dev/kmsg cannot be watched, it
 * looks at least every minute, as it always did. */
static int64_t sleep_cap_ms(const struct daemon *d, int64_t *window_ms)
{
	int64_t cap = d->cfg.tick * 1000;

	*window_ms = 0;
	/* Without /dev/kmsg, an oops is seen only when a look reads the taint
	 * bits (check_taint): as often as before CheckInterval= grew. */
	if (d->st.phase != RR_PH_IDLE || confirm_busy(d) || d->stage_job || d->cr.job ||
	    d->blockers || d->out.action == RR_ACT_REBOOT || d->out.action == RR_ACT_BLOCKED ||
	    d->kmsg_fd < 0)
		return cap < BUSY_TICK_MS ? cap : BUSY_TICK_MS;
	if (d->wd_half_ms && d->wd_half_ms <= cap) {
		/* CheckInterval= still bounds the window's end */
		*window_ms = d->wd_half_ms / 2;
		if (d->wd_half_ms + *window_ms > cap)
			*window_ms = cap - d->wd_half_ms;
		return d->wd_half_ms;
	}
	return cap;
}

static void sooner(int64_t *next_ms, time_t at, time_t now)
{
	if (at > now && (int64_t)(at - now) * 1000 < *next_ms)
		*next_ms = (int64_t)(at - now) * 1000;
}

void daemon_evaluate(struct daemon *d)
{
	time_t now = time(NULL);
	int64_t next_ms, fleet_ms, cap_ms, window_ms;

	if (d->st.phase == RR_PH_IDLE)
		evaluate_idle(d, now);
	else
		seq_step(d, now);
	daemon_publish(d);
	next_ms = cap_ms = sleep_cap_ms(d, &window_ms);
	if (d->out.action == RR_ACT_WAIT)
		sooner(&next_ms, d->out.when, now);
	/* evaluate_idle's own deadlines: the retry after a failed staging,
	 * the periodic restage */
	if (!d->staged && d->stage_failed_at)
		sooner(&next_ms, d->stage_failed_at + DAEMON_STAGE_RETRY, now);
	if (d->staged)
		sooner(&next_ms, d->st.staged_time + d->cfg.restage_interval, now);
	if (d->seq_cancelled_at)
		sooner(&next_ms, d->seq_cancelled_at + SAVE_RETRY, now);
	if (d->new_kernel_at > now && (int64_t)(d->new_kernel_at - now) * 1000 < next_ms)
		next_ms = (int64_t)(d->new_kernel_at - now) * 1000;
	if (d->restage_at > now && (int64_t)(d->restage_at - now) * 1000 < next_ms)
		next_ms = (int64_t)(d->restage_at - now) * 1000;
	time_t crash_at = d->cr.job ? 0 : crash_next(&d->cfg, &d->cr);
	if (crash_at && (crash_at <= now || (int64_t)(crash_at - now) * 1000 < next_ms))
		next_ms = crash_at <= now ? 0 : (int64_t)(crash_at - now) * 1000;
	/* retries, the spread start and keepalives are in milliseconds */
	fleet_ms = coord_next_ms(&d->co);
	if (fleet_ms) {
		fleet_ms -= coord_now_ms();
		if (fleet_ms < next_ms)
			next_ms = fleet_ms;
	}
	/* a running job's completion re-evaluates; nothing to poll for meanwhile */
	if (next_ms < 10)
		next_ms = (d->stage_job || d->cr.job) ? 1000 : 10;
	uint64_t usec;
	sd_event_now(d->ev, CLOCK_MONOTONIC, &usec);
	/* the watchdog's window when nothing sooner is due, else sd-event's
	 * default accuracy */
	sd_event_source_set_time_accuracy(d->timer, next_ms == cap_ms ? (uint64_t)window_ms * 1000ull : 0);
	sd_event_source_set_time(d->timer, usec + (uint64_t)next_ms * 1000ull);
	sd_event_source_set_enabled(d->timer, SD_EVENT_ONESHOT);
}
