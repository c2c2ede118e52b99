/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd's policy: windows across midnight and DST (Europe/Berlin and
 * America/New_York, 2026), jitter bounds, triggers, blockers, back-off. */
#include <stdint.h>
#include <time.h>

#include "rerandd.h"
#include "test.h"

static time_t utc(int y, int mo, int d, int h, int mi)
{
	struct tm tm = { .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h,
			 .tm_min = mi };
	return timegm(&tm);
}

static struct rr_window win(const char *tz, uint8_t days, int start_min, int64_t len)
{
	struct rr_window w = { .enabled = true, .days = days, .start_min = start_min,
			       .length = len };
	snprintf(w.tz, sizeof(w.tz), "%s", tz);
	return w;
}

#define SUN 0x01
#define FRI 0x20
#define SAT 0x40

static void test_wall_to_utc(void)
{
	/* Berlin: CET (+1) until 2026-03-29 01:00 UTC, then CEST (+2). */
	T_EQ_U64(policy_wall_to_utc("Europe/Berlin", 2026, 3, 28, 150), utc(2026, 3, 28, 1, 30),
		 "Berlin 02:30 the day before spring-forward is 01:30 UTC");
	T_EQ_U64(policy_wall_to_utc("Europe/Berlin", 2026, 3, 29, 150), utc(2026, 3, 29, 1, 0),
		 "Berlin 02:30 on spring-forward day does not exist: end of the gap, 01:00 UTC");
	T_EQ_U64(policy_wall_to_utc("Europe/Berlin", 2026, 3, 30, 150), utc(2026, 3, 30, 0, 30),
		 "Berlin 02:30 the day after spring-forward is 00:30 UTC");
	/* Fall back 2026-10-25 01:00 UTC: 02:00-03:00 happens twice. */
	T_EQ_U64(policy_wall_to_utc("Europe/Berlin", 2026, 10, 25, 150), utc(2026, 10, 25, 0, 30),
		 "Berlin 02:30 on fall-back day: its first pass (CEST), 00:30 UTC");
	T_EQ_U64(policy_wall_to_utc("Europe/Berlin", 2026, 10, 25, 180), utc(2026, 10, 25, 2, 0),
		 "Berlin 03:00 on fall-back day is 02:00 UTC (CET)");
	/* New York: spring forward 2026-03-08 07:00 UTC, fall back 2026-11-01 06:00 UTC. */
	T_EQ_U64(policy_wall_to_utc("America/New_York", 2026, 3, 8, 150), utc(2026, 3, 8, 7, 0),
		 "New York 02:30 on spring-forward day maps to 03:00 EDT = 07:00 UTC");
	T_EQ_U64(policy_wall_to_utc("America/New_York", 2026, 3, 8, 60), utc(2026, 3, 8, 6, 0),
		 "New York 01:00 on spring-forward day is EST, 06:00 UTC");
	T_EQ_U64(policy_wall_to_utc("America/New_York", 2026, 11, 1, 90), utc(2026, 11, 1, 5, 30),
		 "New York 01:30 on fall-back day: first pass (EDT), 05:30 UTC");
	T_EQ_U64(policy_wall_to_utc("America/New_York", 2026, 11, 2, 90), utc(2026, 11, 2, 6, 30),
		 "New York 01:30 the day after fall-back is EST, 06:30 UTC");
	T_EQ_U64(policy_wall_to_utc("UTC", 2026, 6, 1, 0), utc(2026, 6, 1, 0, 0), "UTC is UTC");
}

static void test_windows(void)
{
	struct rr_window w;
	time_t s, e;

	/* Friday 23:00 for 3 h, UTC: across midnight into Saturday.  2026-01-02 is a Friday. */
	w = win("UTC", FRI, 23 * 60, 3 * 3600);
	T_OK(policy_window_next(&w, utc(2026, 1, 3, 1, 0), &s, &e) == 0 &&
	     s == utc(2026, 1, 2, 23, 0) && e == utc(2026, 1, 3, 2, 0),
	     "Saturday 01:00 is inside Friday's 23:00+3h window");
	T_OK(policy_window_next(&w, utc(2026, 1, 3, 2, 0), &s, &e) == 0 &&
	     s == utc(2026, 1, 9, 23, 0),
	     "at the window's end (Sat 02:00) the next one is the following Friday");
	T_OK(policy_window_next(&w, utc(2026, 1, 2, 22, 59), &s, &e) == 0 &&
	     s == utc(2026, 1, 2, 23, 0), "a minute before the start: that start");
	T_OK(policy_window_next(&w, utc(2025, 12, 31, 12, 0), &s, &e) == 0 &&
	     s == utc(2026, 1, 2, 23, 0), "across a year boundary");

	/* Berlin, Sundays 01:00 for 4 h, across spring-forward (2026-03-29 is a Sunday). */
	w = win("Europe/Berlin", SUN, 60, 4 * 3600);
	T_OK(policy_window_next(&w, utc(2026, 3, 28, 12, 0), &s, &e) == 0 &&
	     s == utc(2026, 3, 29, 0, 0) && e - s == 4 * 3600,
	     "Berlin Sunday 01:00 CET on spring-forward day = 00:00 UTC, 4 real hours long");
	T_OK(policy_window_next(&w, utc(2026, 3, 29, 3, 59), &s, &e) == 0 &&
	     s == utc(2026, 3, 29, 0, 0), "03:59 UTC is still inside it (wall clock 05:59 CEST)");
	T_OK(policy_window_next(&w, utc(2026, 3, 29, 4, 0), &s, &e) == 0 &&
	     s == utc(2026, 4, 4, 23, 0), "the next Sunday 01:00 CEST is Saturday 23:00 UTC");

	/* New York daily 01:30 for 1 h across fall-back: starts at the first 01:30. */
	w = win("America/New_York", 0x7f, 90, 3600);
	T_OK(policy_window_next(&w, utc(2026, 11, 1, 0, 0), &s, &e) == 0 &&
	     s == utc(2026, 11, 1, 5, 30), "New York 01:30 on fall-back day opens at 05:30 UTC");
	T_OK(policy_window_next(&w, utc(2026, 11, 1, 6, 31), &s, &e) == 0 &&
	     s == utc(2026, 11, 2, 6, 30),
	     "the repeated 01:30 (06:30 UTC) is not a second window; next is Nov 2 06:30 UTC");
	/* New York daily 02:30 on spring-forward day: the wall time does not exist. */
	w = win("America/New_York", 0x7f, 150, 1800);
	T_OK(policy_window_next(&w, utc(2026, 3, 8, 6, 0), &s, &e) == 0 &&
	     s == utc(2026, 3, 8, 7, 0), "New York 02:30 window on spring-forward day opens at 03:00 EDT");

	/* Several windows: the earliest wins; inside one, t itself. */
	struct rr_config c;
	config_defaults(&c);
	c.win[0] = win("UTC", SAT, 10 * 60, 3600);
	c.win[1] = win("Europe/Berlin", 0x7f, 4 * 60, 3600);
	c.nr_win = 2;
	T_EQ_U64(policy_next_allowed(&c, utc(2026, 1, 5, 12, 0)), utc(2026, 1, 6, 3, 0),
		 "two windows: Berlin's daily 04:00 CET beats Saturday 10:00 UTC");
	T_EQ_U64(policy_next_allowed(&c, utc(2026, 1, 6, 3, 30)), utc(2026, 1, 6, 3, 30),
		 "inside a window the answer is now");
	c.win[1].enabled = false;
	T_EQ_U64(policy_next_allowed(&c, utc(2026, 1, 5, 12, 0)), utc(2026, 1, 10, 10, 0),
		 "a disabled window is ignored");
	c.nr_win = 0;
	T_EQ_U64(policy_next_allowed(&c, utc(2026, 1, 5, 12, 0)), 0, "no window: never");
}

static void test_jitter_backoff(void)
{
	uint64_t x = 0x123456789abcdefull, sum = 0;
	int64_t lo = INT64_MAX, hi = -1;
	int seen[4] = { 0 };
	const int N = 200000;

	T_EQ_U64(policy_jitter(3600, 0), 0, "jitter with zero bits is 0");
	T_EQ_U64(policy_jitter(3600, UINT64_MAX), 3600, "jitter with all-one bits is the maximum");
	T_EQ_U64(policy_jitter(0, UINT64_MAX), 0, "no jitter configured: 0");
	for (int i = 0; i < N; i++) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		int64_t j = policy_jitter(3600, x);
		lo = j < lo ? j : lo;
		hi = j > hi ? j : hi;
		sum += (uint64_t)j;
		seen[policy_jitter(3, x)]++;
	}
	T_OK(lo >= 0 && hi <= 3600, "200000 draws stay within [0, 3600] (saw %lld..%lld)",
	     (long long)lo, (long long)hi);
	T_OK(lo < 20 && hi > 3580, "and reach both ends");
	T_OK(sum / N > 1750 && sum / N < 1850, "mean %llu is near 1800", (unsigned long long)(sum / N));
	T_OK(seen[0] > N / 5 && seen[1] > N / 5 && seen[2] > N / 5 && seen[3] > N / 5,
	     "max 3: each of 0..3 drawn about a quarter of the time");

	struct rr_config c;
	config_defaults(&c);
	c.backoff = 1800;
	c.backoff_max = 86400;
	T_EQ_U64(policy_backoff(&c, 0), 0, "no failure, no back-off");
	T_EQ_U64(policy_backoff(&c, 1), 1800, "1 failure: the base");
	T_EQ_U64(policy_backoff(&c, 2), 3600, "2 failures: twice");
	T_EQ_U64(policy_backoff(&c, 4), 14400, "4 failures: 8 times");
	T_EQ_U64(policy_backoff(&c, 200), 86400, "many failures: capped at BackoffMax");
	c.max_failures = 3;
	T_OK(!policy_stopped(&c, 2) && policy_stopped(&c, 3) && policy_stopped(&c, 4),
	     "stopped from the 3rd consecutive failure on");
	c.max_failures = 0;
	T_OK(!policy_stopped(&c, 1000), "MaxFailures=0 never stops");
}

static void base(struct rr_config *c, struct rr_policy_in *in, time_t now)
{
	config_defaults(c);
	c->max_age = 86400;
	c->min_interval = 3600;
	c->backoff = 1800;
	c->max_failures = 3;
	c->win[0] = win("UTC", 0x7f, 2 * 60, 2 * 3600);     /* daily 02:00-04:00 UTC */
	c->nr_win = 1;
	memset(in, 0, sizeof(*in));
	in->now = now;
	in->layout_born = now - 2 * 86400;                   /* old layout: age is due */
	in->staged = true;
}

static void test_decide(void)
{
	struct rr_config c;
	struct rr_policy_in in;
	struct rr_policy_out o;
	time_t inside = utc(2026, 2, 10, 2, 30), outside = utc(2026, 2, 10, 12, 0);

	base(&c, &in, inside);
	policy_decide(&c, &in, &o);
	T_OK(o.action == RR_ACT_REBOOT && o.reason == RR_WHY_AGE, "old layout inside a window: reboot (age)");

	base(&c, &in, outside);
	policy_decide(&c, &in, &o);
	T_OK(o.action == RR_ACT_WAIT && o.reason == RR_WHY_AGE && o.when == utc(2026, 2, 11, 2, 0),
	     "old layout outside any window: wait for the next window");

	base(&c, &in, outside);
	in.layout_born = outside - 3600;
	in.jitter = 600;
	c.outside_windows = true;
	policy_decide(&c, &in, &o);
	T_OK(o.action == RR_ACT_WAIT && o.when == outside - 3600 + 86400 + 600,
	     "young layout, windows off: due at born + max age + jitter");

	base(&c, &in, outside);
	in.oops = true;
	c.on_oops = RR_WHEN_IMMEDIATE;
	policy_decide(&c, &in, &o);
	T_OK(o.action == RR_ACT_REBOOT && o.reason == RR_WHY_OOPS, "oops with OnOops=immediate: reboot outside the window");
	c.on_oops = RR_WHEN_WINDOW;
	policy_decide(&c, &in, &o);
	T_OK(o.action == RR_ACT_WAIT && o.reason == RR_WHY_OOPS && o.when == utc(2026, 2, 11, 2, 0),
	     "oops with OnOops=window: next window, reported as the oops (beats age on a tie)");
	c.on_oops = RR_WHEN_IGNORE;
	policy_decide(&c, &in, &o);
	T_OK(o.reason == RR_WHY_AGE, "OnOops=ignore: only age remains");

	base(&c, &in, outside);
	in.layout_born = outside;                 /* fresh layout */
	in.new_kernel = true;
	policy_decide(&c, &in, &o);
	T_OK(o.action == RR_ACT_WAIT && o.reason == RR_WHY_NEW_KERNEL && o.when == utc(2026, 2, 11, 2, 0),
	     "new kernel: the next window, before the age trigger");
	in.oops = true;
	policy_decide(&c, &in, &o);
	T_OK(o.reason == RR_WHY_OOPS, "oops and new kernel in the same window: oops is reported");

	base(&c, &in, outside);
	in.now_requested = true;
	policy_decide(&c, &in, &o);
	T_OK(o.action == RR_ACT_REBOOT && o.reason == RR_WHY_NOW, "`rerand now` ignores windows");
	in.last_reboot = outside - 60;
	in.failures = 2;
	in.last_failure = outside - 60;
	policy_decide(&c, &in, &o);
	T_OK(o.action == RR_ACT_REBOOT, "`rerand now` ignores the minimum interval and back-off");

	/* blockers, in precedence order */
	in.hold = true;
	in.inhibited = true;
	in.command_blocks = true;
	in.staged = false;
	policy_decide(&c, &in, &o);
	T_OK(o.action == RR_ACT_BLOCKED && o.blocker == RR_BLK_HOLD, "hold beats `now` and is reported first");
	in.hold = false;
	policy_decide(&c, &in, &o);
	T_OK(o.blocker == RR_BLK_NOT_STAGED, "then nothing staged");
	in.staged = true;
	policy_decide(&c, &in, &o);
	T_OK(o.blocker == RR_BLK_INHIBITOR, "then a logind inhibitor");
	in.inhibited = false;
	policy_decide(&c, &in, &o);
	T_OK(o.blocker == RR_BLK_COMMAND, "then the blocker command");
	in.command_blocks = false;
	policy_decide(&c, &in, &o);
	T_OK(o.action == RR_ACT_REBOOT, "no blocker left: reboot");

	base(&c, &in, inside);
	in.hold = true;
	in.layout_born = inside;                  /* nothing due */
	policy_decide(&c, &in, &o);
	T_OK(o.action == RR_ACT_WAIT, "a hold does not matter while nothing is due");

	/* minimum interval */
	base(&c, &in, outside);
	c.on_oops = RR_WHEN_IMMEDIATE;
	in.oops = true;
	in.last_reboot = outside - 600;
	policy_decide(&c, &in, &o);
	T_OK(o.action == RR_ACT_WAIT && o.when == outside - 600 + 3600,
	     "immediate oops still waits for MinRebootInterval");

	/* back-off after failures */
	base(&c, &in, inside);
	in.failures = 2;
	in.last_failure = inside - 100;
	policy_decide(&c, &in, &o);
	T_OK(o.action == RR_ACT_WAIT && o.when == inside - 100 + 3600,
	     "2 failures: age waits out the 1h back-off (still inside the window)");
	in.last_failure = inside - 3 * 3600;
	policy_decide(&c, &in, &o);
	T_OK(o.action == RR_ACT_REBOOT, "back-off over: reboot");
	in.failures = 3;
	policy_decide(&c, &in, &o);
	T_OK(o.action == RR_ACT_STOPPED && o.when == 0, "3 failures (MaxFailures=3): stopped");
	in.oops = true;
	c.on_oops = RR_WHEN_IMMEDIATE;
	policy_decide(&c, &in, &o);
	T_OK(o.action == RR_ACT_STOPPED, "stopped: an oops does not restart it");
	in.now_requested = true;
	policy_decide(&c, &in, &o);
	T_OK(o.action == RR_ACT_REBOOT && o.reason == RR_WHY_NOW, "stopped: `rerand now` still works");

	/* a weak boot (bases from the TSC alone): replaced at the next window,
	 * after the back-off its failure count asks for; never once stopped */
	base(&c, &in, outside);
	in.layout_born = outside - 60;                       /* young: age is not due */
	in.weak = true;
	in.failures = 1;
	in.last_failure = outside - 60;
	policy_decide(&c, &in, &o);
	T_OK(o.action == RR_ACT_WAIT && o.reason == RR_WHY_WEAK && o.when == utc(2026, 2, 11, 2, 0),
	     "weak boot: a new layout at the next window, reported as weak-boot");
	base(&c, &in, inside);
	in.layout_born = inside - 60;
	in.weak = true;
	in.failures = 2;
	in.last_failure = inside - 100;
	policy_decide(&c, &in, &o);
	T_OK(o.action == RR_ACT_WAIT && o.reason == RR_WHY_WEAK && o.when == inside - 100 + 3600,
	     "weak boot, 2 in a row: waits out the back-off");
	in.failures = 3;
	policy_decide(&c, &in, &o);
	T_OK(o.action == RR_ACT_STOPPED, "3 weak boots in a row (MaxFailures=3): stopped, no weak trigger");
	T_OK(!strcmp(policy_reason_name(RR_WHY_WEAK), "weak-boot"), "the reason's name");

	base(&c, &in, outside);
	c.nr_win = 0;
	policy_decide(&c, &in, &o);
	T_OK(o.action == RR_ACT_NONE, "no window and RebootOutsideWindows=no: nothing planned");
	c.outside_windows = true;
	policy_decide(&c, &in, &o);
	T_OK(o.action == RR_ACT_REBOOT, "RebootOutsideWindows=yes: any time");
}

static void test_watch(void)
{
	const char oops[] = "4,123,456789,-;Oops: general protection fault, probably for non-canonical address\n";
	const char warn[] = "4,124,456790,-;WARNING: CPU: 0 PID: 1 at kernel/foo.c:12 bar+0x1/0x2\n";
	const char bug[] = "0,125,456791,-;BUG: kernel NULL pointer dereference\n SUBSYSTEM=x\n";
	const char forged[] = "12,126,456792,-;Oops: forged by a user (facility 1)\n";
	const char plain[] = "6,127,456793,-;eth0: link up\n";
	uint64_t t;

	T_OK(watch_kmsg_classify(oops, sizeof(oops) - 1) == RR_KMSG_OOPS, "kernel Oops record");
	T_OK(watch_kmsg_classify(warn, sizeof(warn) - 1) == RR_KMSG_WARN, "kernel WARNING record");
	T_OK(watch_kmsg_classify(bug, sizeof(bug) - 1) == RR_KMSG_BUG, "kernel BUG record");
	T_OK(watch_kmsg_classify(forged, sizeof(forged) - 1) == RR_KMSG_NONE,
	     "an Oops text at user facility (written to /dev/kmsg by a process) is ignored");
	T_OK(watch_kmsg_classify(plain, sizeof(plain) - 1) == RR_KMSG_NONE, "an ordinary record");
	T_OK(watch_kmsg_classify("garbage", 7) == RR_KMSG_NONE, "garbage");
	T_OK(watch_parse_taint("640\n", 4, &t) == 0 && t == 640 && (t & RR_TAINT_WARN) && (t & RR_TAINT_DIE),
	     "taint 640 has DIE and WARN");
	T_OK(watch_parse_taint("12x\n", 4, &t) < 0 && watch_parse_taint("", 0, &t) < 0,
	     "bad taint text refused");
}

/* `rerand due` (kured's sentinel): windows are kured's unless the admin
 * configured rerandd's own; everything else is still rerand's. */
static void test_due(void)
{
	struct rr_config c;
	struct rr_policy_in in;
	struct rr_policy_out o;
	time_t outside = utc(2026, 2, 10, 12, 0);

	base(&c, &in, outside);
	c.nr_win = 0;
	policy_due(&c, &in, &o);
	T_OK(o.action == RR_ACT_REBOOT && o.reason == RR_WHY_AGE,
	     "old layout, no window of rerandd's: due (age) for an outside scheduler");
	policy_decide(&c, &in, &o);
	T_OK(o.action == RR_ACT_NONE, "... while rerandd alone would never reboot");

	base(&c, &in, outside);
	policy_due(&c, &in, &o);
	T_OK(o.action == RR_ACT_WAIT && o.reason == RR_WHY_AGE && o.when == utc(2026, 2, 11, 2, 0),
	     "old layout outside the admin's own window: not due before it opens");
	policy_decide(&c, &in, &o);
	T_OK(o.action == RR_ACT_WAIT, "... as rerandd itself waits for it");
	base(&c, &in, utc(2026, 2, 10, 2, 30));
	policy_due(&c, &in, &o);
	T_OK(o.action == RR_ACT_REBOOT, "... and due inside it");
	base(&c, &in, outside);
	c.outside_windows = true;
	policy_due(&c, &in, &o);
	T_OK(o.action == RR_ACT_REBOOT, "RebootOutsideWindows=yes: due outside the window");

	base(&c, &in, outside);
	c.nr_win = 0;
	in.layout_born = outside - 3600;
	policy_due(&c, &in, &o);
	T_OK(o.action == RR_ACT_WAIT && o.when == outside - 3600 + 86400,
	     "young layout: not due before born + max age");

	base(&c, &in, outside);
	c.nr_win = 0;
	in.hold = true;
	policy_due(&c, &in, &o);
	T_OK(o.action == RR_ACT_BLOCKED && o.blocker == RR_BLK_HOLD, "a hold: not due (blocked)");

	base(&c, &in, outside);
	c.nr_win = 0;
	in.staged = false;
	policy_due(&c, &in, &o);
	T_OK(o.action == RR_ACT_BLOCKED && o.blocker == RR_BLK_NOT_STAGED,
	     "nothing staged: not due (blocked)");

	base(&c, &in, outside);
	c.nr_win = 0;
	in.failures = c.max_failures;
	in.last_failure = outside - 60;
	policy_due(&c, &in, &o);
	T_OK(o.action == RR_ACT_STOPPED, "stopped after MaxFailures: not due");

	base(&c, &in, outside);
	c.nr_win = 0;
	in.failures = 1;
	in.last_failure = outside - 1;
	policy_due(&c, &in, &o);
	T_OK(o.action == RR_ACT_WAIT && o.when == outside - 1 + policy_backoff(&c, 1),
	     "after a failure: not due before the back-off ends");
}

int main(void)
{
	test_wall_to_utc();
	test_windows();
	test_jitter_backoff();
	test_decide();
	test_due();
	test_watch();
	return t_done();
}
