/* SPDX-License-Identifier: GPL-2.0-only */
/* `rerand status` (the control socket's "status"): the view as text for a
 * person, one line per fact, in the order an operator asks about them:
 * this boot, what happens next and why, what holds it back, what is staged
 * and how it is signed, the crash kernel, the fleet.  It holds no address
 * (the base is secret).  The JSON form is status_json.c's. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "rerandd.h"

struct out { char *buf; size_t len, used; bool full; time_t now; };

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->full)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->used, o->len - o->used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->len - o->used)
		o->full = true;
	else
		o->used += (size_t)n;
}

/* Text from outside (paths, a server's words, a child's output): escaped, so
 * it can neither add a line to the status nor reach the terminal raw. */
static void put_ext(struct out *o, const char *s)
{
	char esc[4 * RR_ERR_MAX];

	put(o, "%s", rr_escape_str(esc, sizeof(esc), s));
}

/* As systemctl: "16s", "5min 3s", "2h 5min", "1d 2h 5min". */
static void put_age(struct out *o, int64_t s)
{
	if (s < 0)
		s = 0;
	if (s >= 86400)
		put(o, "%lldd %lldh %lldmin", (long long)(s / 86400), (long long)(s % 86400 / 3600),
		    (long long)(s % 3600 / 60));
	else if (s >= 3600)
		put(o, "%lldh %lldmin", (long long)(s / 3600), (long long)(s % 3600 / 60));
	else if (s >= 60)
		put(o, "%lldmin %llds", (long long)(s / 60), (long long)(s % 60));
	else
		put(o, "%llds", (long long)s);
}

/* Local time with its zone, as systemctl shows it: the daemon's TZ. */
static void put_abstime(struct out *o, time_t t)
{
	struct tm tm;
	char b[64];

	if (!t || !localtime_r(&t, &tm)) {
		put(o, "never");
		return;
	}
	strftime(b, sizeof(b), "%a %Y-%m-%d %H:%M:%S %Z", &tm);
	put(o, "%s", b);
}

/* "Sat 2026-12-05 13:20:00 UTC; 5min ago" or "...; in 2h 5min" */
static void put_time(struct out *o, time_t t)
{
	put_abstime(o, t);
	if (!t)
		return;
	if (t <= o->now) {
		put(o, "; ");
		put_age(o, o->now - t);
		put(o, " ago");
	} else {
		put(o, "; in ");
		put_age(o, t - o->now);
	}
}

/* Only a boot rerand made has an entropy figure. */
static bool has_entropy(const struct rr_view *v)
{
	return v->verify == RR_V_RANDOMIZED || v->verify == RR_V_WEAK;
}

static void put_this_boot(struct out *o, const struct rr_view *v)
{
	put(o, "this boot:         %s (", state_verify_name(v->verify));
	switch (v->verify) {
	case RR_V_RANDOMIZED:
		put(o, "verified ");
		break;
	case RR_V_WEAK:
		put(o, "randomized from the TSC alone: no seed, no RDSEED or RDRAND; not "
		    "verified; checked ");
		break;
	case RR_V_ABSENT:
		put(o, "not booted by rerand: no record of a randomization; checked ");
		break;
	case RR_V_NOT_RANDOMIZED:
		put(o, "rerand's record says the base was not randomized; checked ");
		break;
	case RR_V_MALFORMED:
		put(o, "rerand's record could not be read; checked ");
		break;
	default:
		put(o, "not checked yet)\n");
		return;
	}
	put_time(o, v->last_verify_time);
	put(o, ")\n");
}

static void put_crash_text(struct out *o, const struct rr_view *v)
{
	put(o, "crash kernel:      ");
	switch (v->crash_state) {
	case RR_CS_OFF:
		put(o, "off (Mode=off: left to other tools; one is %sloaded)",
		    v->crash_loaded ? "" : "not ");
		break;
	case RR_CS_NOT_RESERVED:
		put(o, "not reserved (no crashkernel= memory)");
		break;
	case RR_CS_OTHER_LOADER:
		put(o, "left to kdump-tools/kdumpctl (enabled; Mode=auto loads none over it): one "
		    "is %sloaded", v->crash_loaded ? "" : "not ");
		break;
	case RR_CS_PENDING:
		put(o, "pending (crash region %llu MiB)", (unsigned long long)(v->crash_reserved >> 20));
		break;
	case RR_CS_LOADED:
		put(o, "%s (kernel ", v->crash_loaded ? "loaded" : "unloaded by someone else");
		put_ext(o, v->crash_kernel);
		put(o, ", loaded ");
		put_time(o, v->crash_loaded_at);
		put(o, ", crash region %llu MiB)", (unsigned long long)(v->crash_reserved >> 20));
		break;
	case RR_CS_ERROR:
		put(o, "error: ");
		put_ext(o, v->crash_error);
		put(o, "; %s", v->crash_loaded ? "the crash kernel loaded before stays in place"
				    : "no crash kernel is loaded");
		break;
	default:
		put(o, "%s", crash_state_name(v->crash_state));
	}
	put(o, "\n");
	if (v->crash_loads || v->crash_failures)
		put(o, "crash loads:       %llu loaded, %llu failed\n",
		    (unsigned long long)v->crash_loads, (unsigned long long)v->crash_failures);
	if (v->crash_boots)
		put(o, "crash boots:       %llu\n", (unsigned long long)v->crash_boots);
}

static void put_secure_text(struct out *o, const struct rr_view *v)
{
	put(o, "secure boot:       %s%s, lockdown %s%s\n", v->secure_boot ? v->secure_boot : "unknown",
	    v->secure_boot_from_bp ? " (per boot_params: no efivarfs)" : "",
	    v->lockdown ? v->lockdown : "unknown", v->locked ? " (signed images only)" : "");
	if (!v->staged)
		return;
	put(o, "staged image:      %s, ", v->image_source ? v->image_source : "built");
	if (*v->signer) {
		/* a certificate subject: text from outside */
		put(o, "signed by \"");
		put_ext(o, v->signer);
		if (*v->anchor) {
			put(o, "\" (signature verified, chains to TrustCert='s \"");
			put_ext(o, v->anchor);
			put(o, "\")\n");
		} else {
			put(o, "\" (signature verified against its own certificate only: "
			    "no TrustCert=)\n");
		}
	} else if (!strcmp(v->signature, "bad")) {
		put(o, "signature does not verify (signer not shown)\n");
	} else {
		put(o, "unsigned\n");
	}
}

/* "next rerandomize:", what the policy plans. */
static void put_plan_text(struct out *o, const struct rr_view *v)
{
	put(o, "next rerandomize:  ");
	switch (v->plan.action) {
	case RR_ACT_WAIT:
		put_time(o, v->plan.when);
		put(o, " (%s)", policy_reason_name(v->plan.reason));
		break;
	case RR_ACT_REBOOT:
		put(o, "now (%s)", policy_reason_name(v->plan.reason));
		break;
	case RR_ACT_BLOCKED:
		put(o, "due (%s) but blocked: %s", policy_reason_name(v->plan.reason),
		    policy_blocker_name(v->plan.blocker));
		break;
	case RR_ACT_STOPPED:
		put(o, "never: stopped");
		break;
	default:
		if (v->no_window)
			put(o, "never by itself: no maintenance window is configured and "
			    "RebootOutsideWindows=no; add a [Window NAME] to rerand.conf (see "
			    "rerand.conf(5)); `rerand now` rerandomizes at once");
		else
			put(o, "not planned (no window will open)");
	}
}

/* "inhibitors:", the logind locks of the last look while a reboot was due,
 * each on a line of its own: who holds it, why, since when, and what
 * rerandd made of it; a line of their own after the plan's. */
static void put_inhibitors_text(struct out *o, const struct rr_view *v)
{
	if (!v->inhibitors.n)
		return;
	put(o, "\ninhibitors:        %u logind lock%s", v->inhibitors.n + v->inhibitors.more,
	    v->inhibitors.n + v->inhibitors.more == 1 ? "" : "s");
	if (v->inhibited_since) {
		put(o, "; the due rerandomization held back since ");
		put_time(o, v->inhibited_since);
		put(o, ", goes ahead anyway at ");
		put_abstime(o, v->inhibited_since + v->max_inhibit);
		put(o, " (MaxInhibitSec=");
		put_age(o, v->max_inhibit);
		put(o, ")");
	}
	for (unsigned i = 0; i < v->inhibitors.n; i++) {
		const struct rr_inhibitor *l = &v->inhibitors.l[i];
		put(o, "\n  uid %u pid %u: ", l->uid, l->pid);
		put_ext(o, l->who);
		put(o, " (");
		put_ext(o, l->why);
		put(o, "), ");
		put_ext(o, l->mode);
		put(o, " on ");
		put_ext(o, l->what);
		put(o, ", seen since ");
		put_time(o, l->seen);
		put(o, ": %s", l->blocks ? "holds it back" :
		    v->inhibited_since && v->inhibited_since + v->max_inhibit <= v->now ?
		    "overridden (MaxInhibitSec= is over)" : "ignored (not root's)");
	}
}

/* "hold:", since when and why, on a line of its own: it ends the plan's
 * line first, and leaves its own end to the caller. */
static void put_hold_text(struct out *o, const struct rr_view *v)
{
	put(o, "\nhold:              %s", v->hold ? "yes" : "no");
	if (v->hold && v->hold_reason && !strcmp(v->hold_reason, "damaged-state")) {
		put(o, " (damaged-state: the state file could not be read whole; check the "
		    "journal, then `rerand unhold`)");
	} else if (v->hold && v->hold_time) {
		put(o, ", since ");
		put_time(o, v->hold_time);
	}
	if (v->hold && *v->hold_text) {
		put(o, ": ");
		put_ext(o, v->hold_text);
	}
}

/* The fleet lines, when a backend is configured. */
static void put_fleet_text(struct out *o, const struct rr_view *v)
{
	if (!v->fleet_backend || !strcmp(v->fleet_backend, "none"))
		return;
	put(o, "fleet:             %s, group ", v->fleet_backend);
	put_ext(o, v->fleet_group);
	put(o, " as ");
	put_ext(o, v->fleet_id);
	put(o, ": %s", v->fleet_state);
	if (v->fleet_errors)
		put(o, " (%llu errors)", (unsigned long long)v->fleet_errors);
	put(o, "\n");
	if (*v->fleet_why) {
		put(o, "fleet wait:        ");
		put_ext(o, v->fleet_why);
		if (v->fleet_next_try) {
			put(o, "; next try ");
			put_time(o, v->fleet_next_try);
		}
		put(o, "\n");
	}
	put(o, "fleet breaker:     ");
	if (v->fleet_breaker && !strcmp(v->fleet_breaker, "tripped")) {
		put(o, "TRIPPED: ");
		put_ext(o, v->fleet_breaker_text);
		put(o, "; no host of the group takes a slot until `rerand fleet "
		    "clear-breaker`\n");
	} else if (v->fleet_breaker && !strcmp(v->fleet_breaker, "ok")) {
		put(o, "ok (");
		put_ext(o, v->fleet_breaker_text);
		put(o, ")\n");
	} else if (v->fleet_breaker && !strcmp(v->fleet_breaker, "etcd only")) {
		put(o, "none: the FleetLock protocol has no place for it (etcd only)\n");
	} else {
		put(o, "not read yet\n");
	}
}

/* What is staged, or why nothing is, and the last staging error. */
static void put_staged_text(struct out *o, const struct rr_view *v)
{
	put(o, "staged:            %s", v->staged ? "yes" : "no");
	if (v->staged) {
		put(o, " (kernel ");
		put_ext(o, v->kernel);
		put(o, ", sha256 %.16s, staged ", v->image_sha);
		put_time(o, v->staged_time);
		put(o, ")");
	} else if (*v->unstaged_why) {
		put(o, " (");
		put_ext(o, v->unstaged_why);
		put(o, ")");
	}
	put(o, "\n");
	if (*v->stage_error) {
		put(o, "stage error:       ");
		put_ext(o, v->stage_error);
		put(o, "\n");
	}
}

int control_format_text(const struct rr_view *v, char *buf, size_t len)
{
	struct out o = { buf, len, 0, false, v->now };

	put(&o, "rerandd:           version %s, up ", RR_VERSION);
	put_age(&o, v->started ? v->now - v->started : 0);
	put(&o, " (since ");
	put_abstime(&o, v->started);
	put(&o, ")\n");
	put(&o, "layout age:        ");
	put_age(&o, v->layout_age);
	if (v->crash_boot) {
		put(&o, "\nthis boot:         a crash kernel's (dump capture); rerandd idles: "
			"no staging, no reboots\n");
		put(&o, "crash boots:       %llu\n", (unsigned long long)v->crash_boots);
		return o.full ? -ENOBUFS : (int)o.used;
	}
	put(&o, "\n");
	put_this_boot(&o, v);
	put(&o, "booted by:         %s\n", v->boot_origin == RR_BO_RERANDD ?
		"rerandd's rerandomizing reboot (counted)" : v->boot_origin == RR_BO_UNPLANNED ?
		"a reboot rerandd did not plan (not counted: not a success, not a failure)" :
		v->boot_origin == RR_BO_FALLBACK ?
		"rerandd's reboot through the firmware after a failed rerandomized boot "
		"(counted with that failure)" :
		"a boot before rerandd's record (not counted)");
	if (has_entropy(v))
		put(&o, "entropy:           %.1f bits%s\n", v->entropy_bits,
		    v->verify == RR_V_WEAK ? " of slots, drawn from a guessable source" :
		    v->entropy_grade && !strcmp(v->entropy_grade, "seed") ?
		    " (grade seed: no RDRAND or RDSEED; the staging seed and RDTSC)" : "");
	put_plan_text(&o, v);
	put_inhibitors_text(&o, v);
	put_hold_text(&o, v);
	put(&o, "\n");
	if (*v->reboot_error) {
		put(&o, "reboot error:      ");
		put_ext(&o, v->reboot_error);
		put(&o, "\n");
	}
	put(&o, "failures in a row: %u of %u%s\n", v->failures, v->max_failures,
	    v->stopped ? "  ALERT: stopped rerandomizing" : "");
	put(&o, "reboots:           %llu verified, %llu failed, %llu weak; %llu not rerandd's\n",
	    (unsigned long long)v->successes, (unsigned long long)v->total_failures,
	    (unsigned long long)v->weak_boots, (unsigned long long)v->unplanned_boots);
	put_staged_text(&o, v);
	put(&o, "watchdog:          %s\n", v->watchdog ? v->watchdog : "absent");
	if (v->confirm && *v->confirm)
		put(&o, "confirmation:      %s\n", v->confirm);
	if (*v->oneshot_note) {
		put(&o, "one-shot entry:    ");
		put_ext(&o, v->oneshot_note);
		put(&o, " (");
		put_time(&o, v->oneshot_note_time);
		put(&o, ")\n");
	}
	if (v->last_cause != RR_CAUSE_NONE) {
		put(&o, "last failure:      %s (", wdog_cause_name(v->last_cause));
		put_ext(&o, v->last_cause_detail);
		put(&o, ", ");
		put_time(&o, v->last_cause_time);
		put(&o, ")\n");
	}
	put_secure_text(&o, v);
	put_crash_text(&o, v);
	put_fleet_text(&o, v);
	return o.full ? -ENOBUFS : (int)o.used;
}
