/* SPDX-License-Identifier: GPL-2.0-only */
/* What `rerand status` and the metrics show: a snapshot of the daemon's state
 * (struct rr_view) that the formatters in control.c and metrics.c read. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "rerandd.h"

void daemon_fill_view(struct daemon *d, struct rr_view *v)
{
	memset(v, 0, sizeof(*v));
	v->now = time(NULL);
	v->layout_age = daemon_mono() - d->born_mono;
	v->layout_born = daemon_layout_born(d, v->now);
	v->max_age = d->cfg.max_age;
	v->verify = d->verify;
	v->entropy_bits = d->entropy_bits;
	v->entropy_grade = d->entropy_grade ? d->entropy_grade : "";
	v->failures = d->st.failures;
	v->max_failures = d->cfg.max_failures;
	v->stopped = policy_stopped(&d->cfg, d->st.failures);
	v->hold = d->st.hold;
	v->hold_reason = d->st.hold ? state_hold_name(d->st.hold_why) : "";
	v->hold_time = d->st.hold ? d->st.hold_time : 0;
	snprintf(v->hold_text, sizeof(v->hold_text), "%s", d->st.hold ? d->st.hold_text : "");
	v->started = d->started;
	v->no_window = policy_never_reboots(&d->cfg);
	snprintf(v->reboot_error, sizeof(v->reboot_error), "%s", d->seq_error);
	v->staged = d->staged;
	v->plan = d->out;
	v->successes = d->st.successes;
	v->total_failures = d->st.total_failures;
	v->weak_boots = d->st.weak_boots;
	v->boot_origin = d->st.boot_origin;
	v->unplanned_boots = d->st.unplanned_boots;
	v->last_success = d->st.last_success;
	v->last_failure = d->st.last_failure;
	v->last_verify_time = d->st.last_verify_time;
	v->staged_time = d->st.staged_time;
	snprintf(v->kernel, sizeof(v->kernel), "%s", d->plan.kernel);
	snprintf(v->image_sha, sizeof(v->image_sha), "%s", d->plan.sha);
	snprintf(v->stage_error, sizeof(v->stage_error), "%s", d->stage_error);
	snprintf(v->unstaged_why, sizeof(v->unstaged_why), "%s", d->unstaged_why);
	stage_view_secure(&d->cfg, d->staged ? &d->plan : NULL, v);
	coord_view(&d->co, v);
	v->crash_mode = d->cfg.crash_mode == RR_CRASH_OFF ? "off" : "auto";
	v->crash_state = d->cr.state;
	v->crash_loaded = d->cr.loaded;
	v->crash_ours = d->cr.ours;
	v->crash_reserved = d->cr.reserved;
	v->crash_loads = d->cr.loads;
	v->crash_failures = d->cr.failures;
	v->crash_loaded_at = d->cr.loaded_at ? daemon_mono_to_wall(d->cr.loaded_at) : 0;
	snprintf(v->crash_kernel, sizeof(v->crash_kernel), "%s", d->cr.kernel);
	snprintf(v->crash_error, sizeof(v->crash_error), "%s", d->cr.error);
	v->crash_boot = d->crash_boot;
	v->crash_boots = d->st.crash_boots;
	v->confirm = d->cf.failing ? "failed" : d->st.confirm_pending ? "pending" : "";
	v->watchdog = d->cfg.kexec_watchdog == RR_WDOG_OFF ? "off" :
		      !wdog_present(&d->cfg) ? "absent" :
		      d->cf.wd_fd >= 0 && d->cf.feed ? "fed until this boot is confirmed" :
		      d->cf.wd_fd >= 0 ? "running, no longer fed" : "armed before each kexec";
	v->confirmed = d->st.confirmed;
	v->last_cause = d->st.last_cause;
	snprintf(v->last_cause_detail, sizeof(v->last_cause_detail), "%s", d->st.last_cause_detail);
	v->last_cause_time = d->st.last_cause_time;
	snprintf(v->oneshot_note, sizeof(v->oneshot_note), "%s", d->st.oneshot_note);
	v->oneshot_note_time = d->st.oneshot_note_time;
	memcpy(v->causes, d->st.causes, sizeof(v->causes));
	/* on the wall clock for display */
	v->inhibitors = d->inh;
	for (unsigned i = 0; i < v->inhibitors.n; i++)
		v->inhibitors.l[i].seen = daemon_mono_to_wall(v->inhibitors.l[i].seen_mono);
	v->inhibited_since = d->inh_since && d->inh.n ? daemon_mono_to_wall(d->inh_since) : 0;
	v->max_inhibit = d->cfg.max_inhibit;
}
