/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd's decisions as pure functions: layout age with jitter, maintenance
 * windows in their own time zones, triggers, blockers and back-off. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rerandd.h"

/* ---- time zones ----------------------------------------------------------
 * The tz database is reached through TZ + tzset() + localtime_r(), the only
 * portable DST-correct interface.  TZ is switched only when the zone changes,
 * since each switch makes glibc reread the zone file; rerandd itself never
 * uses local time anywhere else. */

static char tz_current[80] = "\x01";   /* nothing set yet */

static void tz_use(const char *zone)
{
	if (!strcmp(tz_current, zone))
		return;
	if (!*zone)
		unsetenv("TZ");
	else if (!strcmp(zone, "UTC"))
		setenv("TZ", "UTC0", 1);
	else {
		char buf[80];
		strcpy(buf, ":");
		strncat(buf, zone, sizeof(buf) - 2);
		setenv("TZ", buf, 1);
	}
	tzset();
	strncpy(tz_current, zone, sizeof(tz_current) - 1);
	tz_current[sizeof(tz_current) - 1] = 0;
}

static long tz_gmtoff(time_t t)
{
	struct tm tm;

	if (!localtime_r(&t, &tm))
		return 0;
	return tm.tm_gmtoff;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's method). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int *y, int *m, int *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = (int)(yoe + era * 400 + (*m <= 2));
}

time_t policy_wall_to_utc(const char *zone, int y, int mon, int day, int minutes)
{
	int64_t wall = days_from_civil(y, mon, day) * 86400 + (int64_t)minutes * 60;
	time_t t1, t2, lo, hi;
	bool ok1, ok2;

	tz_use(zone);
	/* The offsets a day before and after bracket any single transition. */
	t1 = (time_t)(wall - tz_gmtoff((time_t)(wall - 86400)));
	t2 = (time_t)(wall - tz_gmtoff((time_t)(wall + 86400)));
	ok1 = t1 + tz_gmtoff(t1) == wall;
	ok2 = t2 + tz_gmtoff(t2) == wall;
	if (ok1 && ok2)
		return t1 < t2 ? t1 : t2;      /* repeated hour: its first pass */
	if (ok1)
		return t1;
	if (ok2)
		return t2;
	/* In a gap: the first instant whose wall clock reads >= wall. */
	lo = t1 < t2 ? t1 : t2;
	hi = t1 < t2 ? t2 : t1;
	while (lo < hi) {
		time_t mid = lo + (hi - lo) / 2;
		if (mid + tz_gmtoff(mid) >= wall)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

int policy_window_next(const struct rr_window *w, time_t t, time_t *ret_start, time_t *ret_end)
{
	time_t best_s = 0, best_e = 0;
	bool found = false;
	struct tm tm;
	int64_t today;

	if (!w->enabled || w->start_min < 0 || w->length <= 0 || !(w->days & 0x7f))
		return -EINVAL;
	tz_use(w->tz);
	if (!localtime_r(&t, &tm))
		return -EOVERFLOW;
	today = days_from_civil(tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
	/* Windows last at most 7 days, so one that contains t began within 8. */
	for (int64_t d = today - 8; d <= today + 8; d++) {
		int wday = (int)(((d % 7) + 7 + 4) % 7);      /* 1970-01-01 was a Thursday */
		int y, m, dd;

		if (!(w->days & (1u << wday)))
			continue;
		civil_from_days(d, &y, &m, &dd);
		time_t s = policy_wall_to_utc(w->tz, y, m, dd, w->start_min);
		time_t e = s + w->length;
		if (e <= t)
			continue;
		if (!found || s < best_s) {
			best_s = s;
			best_e = e;
			found = true;
		}
	}
	if (!found)
		return -ENOENT;
	*ret_start = best_s;
	*ret_end = best_e;
	return 0;
}

time_t policy_next_allowed(const struct rr_config *c, time_t t)
{
	time_t best = 0;

	for (unsigned i = 0; i < c->nr_win; i++) {
		time_t s, e;
		if (policy_window_next(&c->win[i], t, &s, &e) < 0)
			continue;
		if (s <= t)
			return t;
		if (!best || s < best)
			best = s;
	}
	return best;
}

int64_t policy_jitter(int64_t max, uint64_t random_bits)
{
	if (max <= 0)
		return 0;
	/* multiply-shift: uniform enough for 64 random bits, never above max */
	return (int64_t)(((unsigned __int128)random_bits * (uint64_t)(max + 1)) >> 64);
}

int64_t policy_backoff(const struct rr_config *c, unsigned failures)
{
	int64_t d = c->backoff;

	if (!failures || d <= 0)
		return 0;
	for (unsigned i = 1; i < failures && d < c->backoff_max; i++)
		d *= 2;
	return d < c->backoff_max ? d : c->backoff_max;
}

bool policy_stopped(const struct rr_config *c, unsigned failures)
{
	return c->max_failures && failures >= c->max_failures;
}

bool policy_never_reboots(const struct rr_config *c)
{
	if (c->outside_windows)
		return false;
	for (unsigned i = 0; i < c->nr_win; i++)
		if (c->win[i].enabled)
			return false;
	return true;
}

static time_t max_t(time_t a, time_t b)
{
	return a > b ? a : b;
}

/*
 * Precedence, in order:
 *  1. Stopped after MaxFailures consecutive failures: nothing automatic
 *     happens; only `rerand now` still plans a reboot.
 *  2. Among triggers the earliest planned time wins; on a tie the more
 *     urgent reason is reported (now > oops > weak boot > new kernel > age).
 *     - now: at once, ignoring windows, the minimum interval and back-off;
 *     - oops / new kernel: "immediate" at the earliest allowed time,
 *       "window" at the first window opening at or after it;
 *     - weak boot: at the first window opening at or after the earliest
 *       allowed time;
 *     - age: born + MaxLayoutAge + jitter, then into a window.
 *     The earliest allowed time is the latest of now, last reboot +
 *     MinRebootInterval and last failure + back-off.
 *  3. Blockers beat every trigger, `rerand now` included, once a reboot is
 *     due: hold, then nothing staged, then logind inhibitors, then the
 *     blocker command (the order in which they are cheap to check).
 */
static void decide(const struct rr_config *c, const struct rr_policy_in *in, bool windows,
		   struct rr_policy_out *out)
{
	struct { enum rr_reason why; time_t due; bool windowed; } cand[5];
	unsigned n = 0;
	bool stopped = policy_stopped(c, in->failures);
	time_t earliest = in->now;

	memset(out, 0, sizeof(*out));
	if (in->last_reboot)
		earliest = max_t(earliest, in->last_reboot + c->min_interval);
	if (in->failures && in->last_failure)
		earliest = max_t(earliest, in->last_failure + policy_backoff(c, in->failures));

	if (in->now_requested)
		cand[n++] = (typeof(cand[0])){ RR_WHY_NOW, in->now, false };
	if (!stopped) {
		if (in->oops && c->on_oops != RR_WHEN_IGNORE)
			cand[n++] = (typeof(cand[0])){ RR_WHY_OOPS, earliest,
						       c->on_oops == RR_WHEN_WINDOW };
		/* a layout drawn from the TSC alone is replaced at the next
		 * window; the weak boot counted as a failure, so back-off and
		 * MaxFailures hold back a machine that keeps booting weak */
		if (in->weak)
			cand[n++] = (typeof(cand[0])){ RR_WHY_WEAK, earliest, true };
		if (in->new_kernel && c->on_new_kernel != RR_WHEN_IGNORE)
			cand[n++] = (typeof(cand[0])){ RR_WHY_NEW_KERNEL, earliest,
						       c->on_new_kernel == RR_WHEN_WINDOW };
		cand[n++] = (typeof(cand[0])){ RR_WHY_AGE,
			max_t(in->layout_born + c->max_age + in->jitter, earliest), true };
	}

	for (unsigned i = 0; i < n; i++) {
		time_t when = cand[i].due;
		if (cand[i].windowed && windows)
			when = policy_next_allowed(c, when);
		if (!when)
			continue;                  /* no window will ever open */
		if (!out->when || when < out->when ||
		    (when == out->when && cand[i].why > out->reason)) {
			out->when = when;
			out->reason = cand[i].why;
		}
	}
	if (!out->when) {
		out->action = stopped ? RR_ACT_STOPPED : RR_ACT_NONE;
		return;
	}
	if (out->when > in->now) {
		out->action = RR_ACT_WAIT;
		return;
	}
	out->action = RR_ACT_BLOCKED;
	if (in->hold)
		out->blocker = RR_BLK_HOLD;
	else if (!in->staged)
		out->blocker = RR_BLK_NOT_STAGED;
	else if (in->inhibited)
		out->blocker = RR_BLK_INHIBITOR;
	else if (in->command_blocks)
		out->blocker = RR_BLK_COMMAND;
	else
		out->action = RR_ACT_REBOOT;
}

void policy_decide(const struct rr_config *c, const struct rr_policy_in *in,
		   struct rr_policy_out *out)
{
	decide(c, in, !c->outside_windows, out);
}

/* An outside scheduler (kured) keeps the windows, the drain and the
 * group's lock: what it asks is whether a trigger has come.  With no
 * [Window] of rerandd's (the setup docs/fleet.md describes) windows are the
 * scheduler's alone; windows an admin did configure still hold (both must
 * be open), unless RebootOutsideWindows=yes.  MinRebootInterval, back-off,
 * MaxFailures, a hold and a missing image always count: they are rerand's
 * own reasons not to reboot. */
void policy_due(const struct rr_config *c, const struct rr_policy_in *in,
		struct rr_policy_out *out)
{
	decide(c, in, !c->outside_windows && !policy_never_reboots(c), out);
}

const char *policy_reason_name(enum rr_reason r)
{
	switch (r) {
	case RR_WHY_AGE:        return "layout-age";
	case RR_WHY_NEW_KERNEL: return "new-kernel";
	case RR_WHY_WEAK:       return "weak-boot";
	case RR_WHY_OOPS:       return "kernel-oops";
	case RR_WHY_NOW:        return "requested";
	case RR_WHY_OTHER:      return "other-reboot";
	default:                return "none";
	}
}

const char *policy_blocker_name(enum rr_blocker b)
{
	switch (b) {
	case RR_BLK_HOLD:       return "hold";
	case RR_BLK_NOT_STAGED: return "nothing-staged";
	case RR_BLK_INHIBITOR:  return "inhibitor";
	case RR_BLK_COMMAND:    return "blocker-command";
	default:                return "none";
	}
}

const char *policy_action_name(enum rr_action a)
{
	switch (a) {
	case RR_ACT_WAIT:    return "wait";
	case RR_ACT_REBOOT:  return "reboot";
	case RR_ACT_BLOCKED: return "blocked";
	case RR_ACT_STOPPED: return "stopped";
	default:             return "none";
	}
}
