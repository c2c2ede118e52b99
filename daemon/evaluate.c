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

static bool same_lock(const struct rr_inhibitor *a, const struct rr_inhibitor *b)
{
	return a->uid == b->uid && a->pid == b->pid && !strcmp(a->who, b->who) &&
	       !strcmp(a->why, b->why) && !strcmp(a->what, b->what) && !strcmp(a->mode, b->mode);
}

/* An inhibitor gone past: said once per change, to the journal with
 * RR_MSGID_INHIBITOR and who held it. */
static void inhibitor_said(struct daemon *d, int prio, const struct rr_inhibitor *l,
			   const char *kind, const char *msg)
{
	char f_uid[32], f_pid[32], f_who[96], f_why[160], f_reason[64];
	const char *fields[] = { f_uid, f_pid, f_who, f_why, f_reason };
	char key[sizeof(d->inh_said)];

	snprintf(key, sizeof(key), "%u %u %.60s %s %s", l->uid, l->pid, l->who, kind,
		 policy_reason_name(d->out.reason));
	if (!strcmp(key, d->inh_said))
		return;
	snprintf(d->inh_said, sizeof(d->inh_said), "%s", key);
	snprintf(f_uid, sizeof(f_uid), "RERAND_INHIBITOR_UID=%u", l->uid);
	snprintf(f_pid, sizeof(f_pid), "RERAND_INHIBITOR_PID=%u", l->pid);
	snprintf(f_who, sizeof(f_who), "RERAND_INHIBITOR_WHO=%s", l->who);
	snprintf(f_why, sizeof(f_why), "RERAND_INHIBITOR_WHY=%s", l->why);
	snprintf(f_reason, sizeof(f_reason), "RERAND_REASON=%s", policy_reason_name(d->out.reason));
	audit_log(prio, RR_MSGID_INHIBITOR, fields, 5, "%s rerandomization goes ahead despite the "
		  "logind inhibitor of uid %u pid %u, \"%s\" (%s, %s on %s, seen %llds ago): %s",
		  policy_reason_name(d->out.reason), l->uid, l->pid, l->who, l->why, l->mode,
		  l->what, (long long)(daemon_mono() - l->seen_mono), msg);
}

/* Which logind locks hold a due reboot back (issue 39): a lock taken by a
 * user other than root does not hold back `rerand now` or an oops, and no
 * lock holds one back longer than MaxInhibitSec=, counted on CLOCK_BOOTTIME
 * from the first look that found the due reboot held back.  The count
 * ends only at a look that finds nothing holding it back: a lock dropped
 * and taken again between two looks, or a window that closes meanwhile,
 * does not start it again. */
/* Which locks hold the reboot back before the bound: all, except a
 * non-root user's against `rerand now` or an oops.  Whether any does. */
static bool mark_blocking(const struct daemon *d, struct rr_inhibitors *list)
{
	bool urgent = d->out.reason == RR_WHY_NOW || d->out.reason == RR_WHY_OOPS;
	bool held = false;

	for (unsigned i = 0; i < list->n; i++) {
		list->l[i].blocks = !(urgent && list->l[i].uid != 0);
		held |= list->l[i].blocks;
	}
	return held;
}

static bool judge_inhibitors(struct rr_inhibitors *list, void *ud)
{
	struct daemon *d = ud;
	time_t mono = daemon_mono();
	bool held = mark_blocking(d, list), over;
	char msg[160];

	for (unsigned i = 0; i < list->n; i++) {
		struct rr_inhibitor *l = &list->l[i];
		l->seen_mono = mono;
		for (unsigned j = 0; j < d->inh.n; j++)
			if (same_lock(l, &d->inh.l[j]))
				l->seen_mono = d->inh.l[j].seen_mono;
	}
	if (held && !d->inh_since)
		d->inh_since = mono;
	over = held && mono - d->inh_since >= d->cfg.max_inhibit;
	for (unsigned i = 0; i < list->n; i++) {
		struct rr_inhibitor *l = &list->l[i];
		if (over && l->blocks) {
			snprintf(msg, sizeof(msg), "held back for %llds, MaxInhibitSec=%llds is over",
				 (long long)(mono - d->inh_since), (long long)d->cfg.max_inhibit);
			inhibitor_said(d, RR_LOG_WARNING, l, "over", msg);
			l->blocks = false;
		} else if (!l->blocks && !over) {
			inhibitor_said(d, RR_LOG_NOTICE, l, "not-root", "a lock of a user other than root does "
				       "not hold back `rerand now` or an oops");
		}
	}
	if (!held)
		d->inh_since = 0;
	d->inh = *list;
	return held && !over;
}

/* `rerand due`'s look at the same locks: what judge_inhibitors would say
 * now, without moving its count (the look of a due reboot keeps that). */
static bool judge_due(struct rr_inhibitors *list, void *ud)
{
	struct daemon *d = ud;
	bool held = mark_blocking(d, list);

	if (held && d->inh_since && daemon_mono() - d->inh_since >= d->cfg.max_inhibit)
		return false;
	return held;
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
	in->layout_born = daemon_layout_born(d, now);
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

static void on_due_blockers(int blocked, const char *why, void *ud)
{
	struct daemon *d = ud;

	d->due_blk = NULL;
	d->due_blk_at = time(NULL);
	d->due_blk_blocked = blocked > 0;
	snprintf(d->due_blk_why, sizeof(d->due_blk_why), "%s", why);
}

/* The blockers' verdict for `rerand due`: 1 blocked (why set), 0 not, -1
 * not known yet (a look started or running: the client asks again).  A
 * verdict is used for DUE_BLK_FRESH seconds: kured asks its sentinel from
 * two loops (every minute for its metric, every --period to decide), and
 * asks that come together get one run of the BlockerCommand=. */
#define DUE_BLK_FRESH 10
static int due_blockers(struct daemon *d, time_t now, const char **why)
{
	int r;

	if (!d->cfg.honor_inhibitors && !*d->cfg.blocker_cmd)
		return 0;
	if (d->due_blk_at && now >= d->due_blk_at && now - d->due_blk_at < DUE_BLK_FRESH) {
		*why = d->due_blk_why;
		return d->due_blk_blocked;
	}
	if (d->due_blk)
		return -1;
	r = blockers_start(d->ev, &d->cfg, judge_due, on_due_blockers, d, &d->due_blk);
	if (r > 0)
		return -1;
	/* nothing to ask (no logind, no command) or it could not start */
	on_due_blockers(r < 0, r < 0 ? "the blockers could not be asked" : "", d);
	*why = d->due_blk_why;
	return d->due_blk_blocked;
}

/* `rerand due`: "due REASON" when a rerandomization is due now and
 * `rerand now --wait` would go through at once (kured's
 * --reboot-sentinel-command), else "not due: WHY".  Everything that would
 * refuse or stall that reboot says "not due" here, so that kured does not
 * drain a node only to have its reboot command fail: a hold, MaxFailures,
 * nothing staged, a window of rerandd's own that is closed, this boot not
 * yet confirmed, the fleet's breaker, a logind block inhibitor, the
 * BlockerCommand=. */
void daemon_format_due(struct daemon *d, char *out, size_t size)
{
	struct rr_policy_in in;
	struct rr_policy_out o;
	time_t now = time(NULL);
	const char *why = "";
	char when[40];
	struct tm tm;
	int r;

	if (d->crash_boot) {
		snprintf(out, size, "not due: this is a crash kernel boot\n");
		return;
	}
	/* past the gate (the fleet's slot taken, or none wanted): under way.
	 * At the gate a sequence waits for a slot, which a tripped breaker
	 * never gives: not "under way" for kured, the checks below decide. */
	if (d->st.phase > RR_PH_GATE) {
		snprintf(out, size, "due: a rerandomizing reboot is under way (%s)\n",
			 state_phase_name(d->st.phase));
		return;
	}
	policy_inputs(d, now, &in);
	policy_due(&d->cfg, &in, &o);
	switch (o.action) {
	case RR_ACT_REBOOT:
		if (confirm_busy(d)) {
			snprintf(out, size, "not due: %s is due but this boot %s\n",
				 policy_reason_name(o.reason), d->cf.failing ?
				 "failed its confirmation" : "is not confirmed yet");
			break;
		}
		if (d->co.want && d->co.breaker_known && d->co.breaker_tripped) {
			snprintf(out, size, "not due: %s is due but blocked by fleet-breaker "
				 "(`rerand fleet clear-breaker` once the cause is dealt with)\n",
				 policy_reason_name(o.reason));
			break;
		}
		r = due_blockers(d, now, &why);
		if (r < 0)
			snprintf(out, size, "pending: %s is due; asking the blockers\n",
				 policy_reason_name(o.reason));
		else if (r > 0)
			snprintf(out, size, "not due: %s is due but %s\n",
				 policy_reason_name(o.reason), why);
		else
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
static void keep_staged(struct daemon *d, time_t mono)
{
	char why[sizeof(d->unstaged_why)];
	struct rr_boot_entry next;
	int changed, loader = 0;

	if (d->stage_job || d->unload_job)
		return;
	if (unstage_unwanted(d, why, sizeof(why))) {
		if ((d->staged || d->loaded_mark) &&
		    (!d->unload_failed_at || mono - d->unload_failed_at >= DAEMON_STAGE_RETRY))
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
		/* An admin's choice in the boot loader is no new kernel; with a
		 * /boot change still settling (a kernel package, whose update-grub
		 * made it the default) the kernel staged next is one. */
		if (!d->boot_changed)
			d->restage_not_new = true;
		if (!d->new_kernel_at)
			d->new_kernel_at = mono;
		return;
	}
	if ((changed = unstage_kernel_changed(d, why, sizeof(why))) > 0) {
		daemon_unstage(d, why);
		/* a removed kernel is no new one: what is staged next does not
		 * trigger a rerandomization by itself */
		d->restage_not_new = changed == RR_KERNEL_GONE;
		if (!d->new_kernel_at)
			d->new_kernel_at = mono;
		return;
	}
	if (d->new_kernel_at && mono >= d->new_kernel_at)
		daemon_stage_new_kernel(d);
	/* nothing staged while a kernel file change settles: the new-kernel
	 * path stages once it has (after the package manager), not this one */
	if (!d->stage_job &&
	    ((!d->staged && !d->boot_changed &&
	      (!d->stage_failed_at || mono - d->stage_failed_at >= DAEMON_STAGE_RETRY)) ||
	     (d->staged && mono - d->staged_mono >= d->cfg.restage_interval)))
		daemon_stage(d, d->staged ? &d->plan : NULL, false);
}

/* idle: keep an image staged and the crash kernel loaded, watch for
 * triggers; when policy says reboot and nothing blocks, start the sequence. */
static void evaluate_idle(struct daemon *d, time_t now, time_t mono)
{
	struct rr_policy_in in = { 0 };

	coord_service(&d->co, &d->cfg, &d->st);
	check_taint(d);
	keep_staged(d, mono);
	/* after a new kernel was staged: the crash kernel follows it */
	if (!d->stage_job && !d->cr.job && crash_due(&d->cfg, &d->cr, mono))
		crash_start(d->ev, &d->cfg, &d->cr, d->staged ? &d->plan : NULL, mono,
			    on_crash_loaded, d);

	policy_inputs(d, now, &in);
	policy_decide(&d->cfg, &in, &d->out);
	if (d->out.action != RR_ACT_REBOOT) {
		/* nothing due: no lock holds anything back (inh_since stays,
		 * for the next due look) */
		d->inh.n = d->inh.more = 0;
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
		if (blockers_start(d->ev, &d->cfg, judge_inhibitors, on_blockers, d,
				   &d->blockers) > 0)
			return;
		d->blk_blocked = false;
		d->blk_why[0] = 0;
	}
	d->blk_done = false;
	in.inhibited = d->blk_blocked && !strncmp(d->blk_why, "reboot blocked by a logind", 26);
	in.command_blocks = d->blk_blocked && !in.inhibited;
	/* Say so when the reason changes, not at every tick. */
	if (*d->blk_why && strcmp(d->blk_why, d->blocked_why) && in.inhibited)
		rr_log(RR_LOG_NOTICE, "%s; held back %llds so far, rerandd goes ahead anyway after "
		       "MaxInhibitSec=%llds", d->blk_why,
		       (long long)(d->inh_since ? daemon_mono() - d->inh_since : 0),
		       (long long)d->cfg.max_inhibit);
	else if (*d->blk_why && strcmp(d->blk_why, d->blocked_why))
		rr_log(RR_LOG_NOTICE, "%s", d->blk_why);
	snprintf(d->blocked_why, sizeof(d->blocked_why), "%s", d->blk_why);
	policy_decide(&d->cfg, &in, &d->out);
	/* the state could not be written the last time: not again at once
	 * (the hooks would drain the machine every time) */
	if (d->out.action == RR_ACT_REBOOT &&
	    (!d->seq_cancelled_at || mono - d->seq_cancelled_at >= SAVE_RETRY))
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
	time_t now = time(NULL), mono = daemon_mono();
	int64_t next_ms, fleet_ms, cap_ms, window_ms;

	if (d->st.phase == RR_PH_IDLE)
		evaluate_idle(d, now, mono);
	else
		seq_step(d, now);
	daemon_publish(d);
	next_ms = cap_ms = sleep_cap_ms(d, &window_ms);
	if (d->out.action == RR_ACT_WAIT)
		sooner(&next_ms, d->out.when, now);
	/* evaluate_idle's own deadlines: the retry after a failed staging,
	 * the periodic restage */
	if (!d->staged && d->stage_failed_at)
		sooner(&next_ms, d->stage_failed_at + DAEMON_STAGE_RETRY, mono);
	if (d->staged)
		sooner(&next_ms, d->staged_mono + d->cfg.restage_interval, mono);
	if (d->seq_cancelled_at)
		sooner(&next_ms, d->seq_cancelled_at + SAVE_RETRY, mono);
	/* held back by inhibitors: look again when MaxInhibitSec= is over */
	if (d->inh_since && d->inh.n)
		sooner(&next_ms, d->inh_since + d->cfg.max_inhibit, mono);
	if (d->new_kernel_at)
		sooner(&next_ms, d->new_kernel_at, mono);
	if (d->restage_at)
		sooner(&next_ms, d->restage_at, mono);
	time_t crash_at = d->cr.job ? 0 : crash_next(&d->cfg, &d->cr);
	if (crash_at && (crash_at <= mono || (int64_t)(crash_at - mono) * 1000 < next_ms))
		next_ms = crash_at <= mono ? 0 : (int64_t)(crash_at - mono) * 1000;
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
