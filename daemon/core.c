/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd's core services: save the state, publish the status, stage an
 * image, ask for an evaluation.  The reboot sequence, the boot
 * confirmation and the evaluation build on these; nothing here calls back
 * into them except through d->on_restaged, so the files do not form a
 * call cycle and this one can live in libdaemon.a. */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <time.h>

#include "rerandd.h"

int daemon_save(struct daemon *d)
{
	struct rr_err e;
	int r = state_save(d->state_path, &d->st, &e);

	if (r < 0) {
		rr_log(RR_LOG_ERR, "%s", e.msg);
		snprintf(d->save_error, sizeof(d->save_error), "%s", e.msg);
	}
	return r;
}

time_t daemon_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ts.tv_sec + 1;
}

time_t daemon_mono_to_wall(time_t mono)
{
	struct timespec w, b;
	int64_t off;

	/* the offset between the clocks in ns, stable between two calls
	 * (unlike the difference of two whole-second readings) */
	clock_gettime(CLOCK_REALTIME, &w);
	clock_gettime(CLOCK_BOOTTIME, &b);
	off = ((int64_t)w.tv_sec - b.tv_sec) * 1000000000 + (w.tv_nsec - b.tv_nsec);
	return (time_t)((((int64_t)mono - 1) * 1000000000 + off) / 1000000000);
}

/* The layout's birth on the wall clock, for the policy's planned times:
 * through the clocks' offset read to the nanosecond, so that two looks a
 * moment apart plan the same second (now minus a whole-second age wobbled
 * by one: the Debian 12 guest saw next_reboot move by 1 s across a reload). */
time_t daemon_layout_born(const struct daemon *d, time_t now)
{
	(void)now;
	return daemon_mono_to_wall(d->born_mono);
}

static void set_stage_error(struct daemon *d, const char *msg)
{
	if (strcmp(d->stage_error, msg))
		rr_log(RR_LOG_ERR, "staging failed: %s", msg);
	snprintf(d->stage_error, sizeof(d->stage_error), "%s", msg);
}

static void on_staged(int r, const struct rr_stage_plan *p, const char *msg, void *ud)
{
	struct daemon *d = ud;
	bool new_kernel = d->stage_new_kernel, stale = d->stage_stale;

	d->stage_job = NULL;
	d->stage_new_kernel = d->stage_stale = false;
	if (r == 1) {
		/* a /boot change, but the staged kernel is still the newest */
	} else if (r < 0) {
		d->stage_failed_at = daemon_mono();
		/* the kernel file was replaced between its hash and its build (an
		 * upgrade): planned again in 5 s, not after the back-off */
		if (r == -ESTALE)
			d->stage_failed_at -= DAEMON_STAGE_RETRY - 5;
		set_stage_error(d, msg);
	} else {
		if (new_kernel)
			rr_log(RR_LOG_NOTICE, "new kernel %s (sha256 %.16s)", p->kernel, p->sha);
		d->plan = *p;
		d->staged = !stale;        /* a reload meanwhile: stage its settings next */
		d->stage_error[0] = 0;
		d->stage_failed_at = 0;
		snprintf(d->st.staged_sha, sizeof(d->st.staged_sha), "%s", p->sha);
		d->st.staged_time = time(NULL);     /* for display */
		d->staged_mono = daemon_mono();      /* for RestageInterval= */
		d->st.trig_new_kernel |= new_kernel;
		stage_prune(&d->cfg, p->sha, d->cr.sha);
		unstage_mark_loaded(d);    /* loaded, even when a reload made it stale */
		daemon_save(d);
		if (*p->signer)
			rr_log(RR_LOG_INFO, "staged %s (kernel sha256 %.16s), %s image %s signed by "
			       "\"%s\"", p->kernel, p->sha, stage_source_name(p->source), p->image,
			       p->signer);
		else
			rr_log(RR_LOG_INFO, "staged %s (kernel sha256 %.16s)", p->kernel, p->sha);
	}
	if (d->on_restaged)
		d->on_restaged(d, stale ? -ESTALE : r < 0 ? r : 0);
	daemon_evaluate_soon(d);
	/* a staging's buffers are freed by now: give their pages back rather
	 * than keep them resident while idle (issue 28) */
	malloc_trim(0);
}

int daemon_stage(struct daemon *d, const struct rr_stage_plan *given, bool new_kernel)
{
	struct rr_stage_req req = { .plan = given };
	struct rr_err e;
	int r;

	if (d->stage_job)
		return -EBUSY;
	if ((r = stage_start(d->ev, &d->cfg, &req, on_staged, d, &d->stage_job, &e)) < 0) {
		d->stage_failed_at = daemon_mono();
		set_stage_error(d, e.msg);
		return r;
	}
	d->stage_new_kernel = new_kernel;
	return 0;
}

/* A kernel appeared in /boot: stage the newest (or Kernel=) unless its hash
 * is the staged one; the helper plans it. */
void daemon_stage_new_kernel(struct daemon *d)
{
	char newest[RR_PATH];
	struct rr_stage_req req = { .unless_sha = d->st.staged_sha };
	struct rr_err e;
	int64_t wait;

	d->new_kernel_at = 0;
	/* The package's hook is building the new kernel's image, or dpkg has
	 * yet to run it: stage from its image once it is there rather than
	 * build a second one meanwhile. */
	wait = kernels_new_wait(&d->cfg, NULL, daemon_mono(), &d->pkg_wait_since, "new kernel");
	if (wait > 0) {
		d->new_kernel_at = daemon_mono() + wait;
		return;
	}
	d->boot_changed = false;
	/* The boot loader's next entry when rerandd can read the boot loader
	 * (stage_plan finds it again), the newest file in /boot when not; none
	 * when what it boots next is no kernel rerand can stage. */
	if (!*d->cfg.kernel) {
		struct rr_boot_entry be;
		int b = bootnext_find(&d->cfg, &be, &e);

		if (b < 0) {
			daemon_loader_refuses(d, e.msg);
			return;
		}
		if (b == 0) {
			if (stage_newest_kernel(d->cfg.boot_dir, newest, sizeof(newest)) < 0)
				return;
			req.kernel = newest;
		}
	}
	if (stage_start(d->ev, &d->cfg, &req, on_staged, d, &d->stage_job, &e) < 0) {
		set_stage_error(d, e.msg);
		return;
	}
	/* after a removal, the kernel staged instead is not new */
	d->stage_new_kernel = !d->restage_not_new;
	d->restage_not_new = false;
}

/* The metrics file, rewritten only when a value other than the layout's age
 * changed, or when the age written is METRICS_AGE_REFRESH old: at every
 * tick it was a create, write, fsync and rename for one changed number
 * (issue 28: idle CPU).  rerand_layout_age_seconds is thus up to that
 * stale, which alerting on "much above MaxLayoutAge" does not notice. */
#define METRICS_AGE_REFRESH 600

static void publish_metrics(struct daemon *d, const struct rr_view *v)
{
	char buf[32768];
	struct rr_view z = *v;
	struct rr_err e;
	int n;

	if (!*d->cfg.metrics_file)
		return;
	z.layout_age = 0;
	n = metrics_format(&z, buf, sizeof(buf));
	if (n >= 0 && d->metrics_at && v->now - d->metrics_at < METRICS_AGE_REFRESH &&
	    v->now >= d->metrics_at && (size_t)n == d->metrics_last_len &&
	    !memcmp(buf, d->metrics_last, (size_t)n))
		return;
	if (metrics_write(d->cfg.metrics_file, v, &e) < 0) {
		rr_log(RR_LOG_WARNING, "%s", e.msg);
		d->metrics_at = 0;
		return;
	}
	free(d->metrics_last);
	d->metrics_last = n >= 0 ? malloc((size_t)n + 1) : NULL;
	d->metrics_last_len = d->metrics_last ? (size_t)n : 0;
	if (d->metrics_last)
		memcpy(d->metrics_last, buf, (size_t)n);
	d->metrics_at = d->metrics_last ? v->now : 0;
}

void daemon_publish(struct daemon *d)
{
	struct rr_view v;
	char status[sizeof(d->status_last)];

	crash_refresh(&d->cfg, &d->cr);
	daemon_fill_view(d, &v);
	publish_metrics(d, &v);
	if (d->crash_boot)
		snprintf(status, sizeof(status), "STATUS=crash kernel boot: idle");
	else
		snprintf(status, sizeof(status), "STATUS=%s; next: %s (%s)%s",
			 state_verify_name(v.verify), policy_action_name(v.plan.action),
			 policy_reason_name(v.plan.reason),
			 v.stopped ? "; STOPPED after repeated failures" : "");
	/* systemd keeps the last one: say it again only when it changed */
	if (strcmp(status, d->status_last) && sd_notify(0, status) >= 0)
		snprintf(d->status_last, sizeof(d->status_last), "%s", status);
}

void daemon_evaluate_soon(struct daemon *d)
{
	uint64_t usec;

	if (!d->timer)
		return;                    /* a crash boot: nothing to evaluate */
	sd_event_now(d->ev, CLOCK_MONOTONIC, &usec);
	sd_event_source_set_time(d->timer, usec);
	sd_event_source_set_enabled(d->timer, SD_EVENT_ONESHOT);
}
