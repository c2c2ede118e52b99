/* SPDX-License-Identifier: GPL-2.0-only */
/* What `rerand status` (text and JSON) and the metrics file say about a
 * boot, a hold and rerandd itself (issue 27, point 7): no entropy figure for
 * a boot rerand did not make, local and relative times, the hold's time and
 * reason (kept in the state file, an old file without them still read),
 * rerandd's version and uptime, and the Prometheus names. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "cleanup.h"
#include "jsonout.h"
#include "rerandd.h"
#include "status.h"
#include "test.h"

#define T0 1796428800                       /* Sat 2026-12-05 00:00:00 UTC */

static void test_absent_boot(void)
{
	struct rr_view v = { .now = T0, .verify = RR_V_ABSENT, .entropy_bits = 0.0,
			     .last_verify_time = T0 - 300, .fleet_backend = "none" };
	static char body[16384];

	T_OK(control_format_text(&v, body, sizeof(body)) > 0 &&
	     strstr(body, "\nthis boot:         absent (not booted by rerand: no record of a "
		    "randomization; checked Fri 2026-12-04 23:55:00 UTC; 5min 0s ago)\n") &&
	     !strstr(body, "(verified") && !strstr(body, "entropy:"),
	     "text: a boot rerand did not make says so, with no entropy line");
	T_OK(t_json_r("status", control_format_json(&v, body, sizeof(body)), body) > 0 && strstr(body, "\"entropy_bits\":null"),
	     "JSON: entropy_bits is null for it");
	T_OK(metrics_format(&v, body, sizeof(body)) > 0 && !strstr(body, "rerand_entropy_bits"),
	     "metrics: no rerand_entropy_bits sample for it");
	v.verify = RR_V_RANDOMIZED;
	v.entropy_bits = 23.4;
	T_OK(control_format_text(&v, body, sizeof(body)) > 0 &&
	     strstr(body, "\nentropy:           23.4 bits\n") &&
	     strstr(body, "(verified Fri 2026-12-04 23:55:00 UTC; 5min 0s ago)"),
	     "text: a randomized boot has its entropy and verification time");
	T_OK(metrics_format(&v, body, sizeof(body)) > 0 && strstr(body, "\nrerand_entropy_bits 23.4\n"),
	     "metrics: and its rerand_entropy_bits");
	T_OK(t_json_r("status", control_format_json(&v, body, sizeof(body)), body) > 0 && strstr(body, "\"entropy_bits\":23.4"),
	     "JSON: and its entropy_bits");
}

/* Issue 39 point 10: a boot whose stage had no RDRAND or RDSEED is graded
 * "seed", not passed off as the hardware-fed kind. */
static void test_grade(void)
{
	struct rr_view v = { .now = T0, .verify = RR_V_RANDOMIZED, .entropy_bits = 28.0,
			     .entropy_grade = "seed", .fleet_backend = "none" };
	static char body[16384];
	struct rerand_status st = { .result = RERAND_RES_RANDOMIZED };

	T_OK(!strcmp(rr_status_grade(RERAND_SRC_SEED | RERAND_SRC_RDTSC), "seed") &&
	     !strcmp(rr_status_grade(RERAND_SRC_KERNEL_SEED | RERAND_SRC_RDTSC), "seed") &&
	     !strcmp(rr_status_grade(RERAND_SRC_SEED | RERAND_SRC_RDRAND | RERAND_SRC_RDTSC),
		     "hardware") &&
	     !strcmp(rr_status_grade(RERAND_SRC_RDSEED), "hardware") &&
	     !strcmp(rr_status_grade(RERAND_SRC_RDTSC), "tsc-only") &&
	     !strcmp(rr_status_grade(0), "tsc-only"),
	     "grade: hardware with RDRAND or RDSEED, seed with a seed alone, tsc-only without");
	T_OK(control_format_text(&v, body, sizeof(body)) > 0 &&
	     strstr(body, "\nentropy:           28.0 bits (grade seed: no RDRAND or RDSEED; the "
		    "staging seed and RDTSC)\n"),
	     "status text: a seed-grade boot says it had no RDRAND or RDSEED");
	T_OK(t_json_r("status", control_format_json(&v, body, sizeof(body)), body) > 0 &&
	     strstr(body, "\"entropy_grade\":\"seed\""), "status JSON: entropy_grade seed");
	T_OK(metrics_format(&v, body, sizeof(body)) > 0 &&
	     strstr(body, "\nrerand_entropy_grade_info{grade=\"seed\"} 1\n"),
	     "metrics: rerand_entropy_grade_info{grade=\"seed\"}");
	v.entropy_grade = "hardware";
	T_OK(control_format_text(&v, body, sizeof(body)) > 0 &&
	     strstr(body, "\nentropy:           28.0 bits\n") &&
	     metrics_format(&v, body, sizeof(body)) > 0 &&
	     strstr(body, "\nrerand_entropy_grade_info{grade=\"hardware\"} 1\n"),
	     "a hardware-grade boot: no remark, grade hardware in the metrics");
	st.sources_used = RERAND_SRC_SEED | RERAND_SRC_RDTSC;
	_cleanup_json_ struct json_object *j = rr_status_json(&st);
	struct json_object *g = NULL;
	T_OK(j && json_object_object_get_ex(j, "entropy_grade", &g) &&
	     !strcmp(json_object_get_string(g), "seed"),
	     "rerand verify --json: entropy_grade seed for seed+rdtsc");
}

static void test_times(void)
{
	struct rr_view v = { .now = T0 + 16, .layout_age = 16, .verify = RR_V_RANDOMIZED,
			     .started = T0 - 7200 - 300, .fleet_backend = "none",
			     .plan = { RR_ACT_WAIT, RR_WHY_AGE, RR_BLK_NONE, T0 + 3 * 3600 } };
	static char body[16384];

	T_OK(control_format_text(&v, body, sizeof(body)) > 0 &&
	     strstr(body, "\nlayout age:        16s\n"),
	     "an age under a minute is \"16s\", not \"0min 16s\"");
	T_OK(strstr(body, "\nnext rerandomize:  Sat 2026-12-05 03:00:00 UTC; in 2h 59min (layout-age)\n") != NULL,
	     "a planned time is local with its zone, and relative");
	setenv("TZ", "Europe/Berlin", 1);
	tzset();
	T_OK(control_format_text(&v, body, sizeof(body)) > 0 &&
	     strstr(body, "Sat 2026-12-05 04:00:00 CET; in 2h 59min (layout-age)"),
	     "in the daemon's time zone (TZ=Europe/Berlin: CET)");
	setenv("TZ", "UTC", 1);
	tzset();
	T_OK(control_format_text(&v, body, sizeof(body)) > 0 &&
	     strncmp(body, "rerandd:           version " RR_VERSION ", up 2h 5min (since Fri "
		     "2026-12-04 21:55:00 UTC)\n", 60) == 0,
	     "the first line: rerandd's version and uptime");
	T_OK(t_json_r("status", control_format_json(&v, body, sizeof(body)), body) > 0 &&
	     strstr(body, "\"daemon_version\":\"" RR_VERSION "\",\"daemon_started\":1796421300,"
		    "\"uptime_seconds\":7516"), "JSON: daemon_version, daemon_started, uptime_seconds");
}

static void test_hold(void)
{
	struct rr_state a, b;
	char buf[8192];
	int n;

	state_init(&a);
	state_set_hold(&a, true, "db migration\x01 until 18:00", T0 - 600);
	T_OK(a.hold && a.hold_why == RR_HOLD_OPERATOR && a.hold_time == T0 - 600 &&
	     !strcmp(a.hold_text, "db migration? until 18:00"),
	     "a hold keeps its time and a printable reason");
	n = state_format(&a, buf, sizeof(buf));
	T_OK(n > 0 && strstr(buf, "\nhold_time=1796428200\nhold_text=db migration? until 18:00\n") &&
	     state_parse(buf, (size_t)n, &b) == 0 && b.hold && b.hold_time == a.hold_time &&
	     !strcmp(b.hold_text, a.hold_text), "both are saved in the state file and read back");
	static const char old[] = "version=1\nboot_id=abcd\nattempt=0\nattempt_boot_id=\nhold=1\n"
				  "hold_reason=operator\nfailures=0\nfleet_keep=0\nconfirm_pending=0\n";
	T_OK(state_parse(old, sizeof(old) - 1, &b) == 0 && b.hold && b.hold_time == 0 &&
	     !*b.hold_text, "an older state file without them still parses (hold, time unknown)");

	struct rr_view v = { .now = T0, .verify = RR_V_RANDOMIZED, .hold = true,
			     .hold_reason = "operator", .hold_time = a.hold_time, .fleet_backend = "none" };
	static char body[16384];
	snprintf(v.hold_text, sizeof(v.hold_text), "%s", a.hold_text);
	T_OK(control_format_text(&v, body, sizeof(body)) > 0 &&
	     strstr(body, "\nhold:              yes, since Fri 2026-12-04 23:50:00 UTC; 10min 0s ago: "
		    "db migration? until 18:00\n"), "status: the hold's time and reason");
	T_OK(t_json_r("status", control_format_json(&v, body, sizeof(body)), body) > 0 &&
	     strstr(body, "\"hold_since\":1796428200,\"hold_text\":\"db migration? until 18:00\""),
	     "JSON: hold_since and hold_text");
	T_OK(metrics_format(&v, body, sizeof(body)) > 0 &&
	     strstr(body, "\nrerand_hold_timestamp_seconds 1796428200\n"), "metrics: the hold's time");
	state_set_hold(&a, false, "", T0);
	T_OK(!a.hold && !a.hold_time && !*a.hold_text, "a release clears them");

	char arg[RR_CTL_LINE];
	T_OK(control_parse_arg("hold db migration\n", 18, arg, sizeof(arg)) == RR_CTL_HOLD &&
	     !strcmp(arg, "db migration"), "control: \"hold TEXT\" is a hold with a reason");
	T_OK(control_parse_arg("hold\n", 5, arg, sizeof(arg)) == RR_CTL_HOLD && !*arg,
	     "control: a bare \"hold\" has none");
}

static void test_metrics_names(void)
{
	struct rr_view v = { .now = T0, .verify = RR_V_RANDOMIZED, .last_success = T0 - 86400,
			     .fleet_backend = "etcd" };
	static char body[16384];

	fleet_metrics_text("etcd", "web", FLEET_ST_HELD, 2, v.fleet_metrics, sizeof(v.fleet_metrics));
	T_OK(metrics_format(&v, body, sizeof(body)) > 0 &&
	     strstr(body, "\nrerand_build_info{version=\"" RR_VERSION "\"} 1\n") &&
	     strstr(body, "\nrerand_last_success_timestamp_seconds 1796342400\n"),
	     "rerand_build_info and rerand_last_success_timestamp_seconds");
	T_OK(strstr(body, "\nrerand_fleet_lock_state{backend=\"etcd\",group=\"web\",state=\"held\"} 1\n") &&
	     strstr(body, "\nrerand_fleet_lock_state{backend=\"etcd\",group=\"web\",state=\"idle\"} 0\n") &&
	     strstr(body, "\nrerand_fleet_lock_state{backend=\"etcd\",group=\"web\",state=\"error\"} 0\n") &&
	     strstr(body, "\nrerand_fleet_errors_total{backend=\"etcd\"} 2\n"),
	     "the fleet lock state as labels, one series per state");
	int per_state = 0;
	for (const char *p = body; (p = strstr(p, "\nrerand_fleet_lock_state{")); p++)
		per_state++;
	T_OK(per_state == 5, "five series: disabled, idle, waiting, held, error (%d)", per_state);
}

/* The default install: no window, RebootOutsideWindows=no (issue 27, point 3). */
static void test_no_window(void)
{
	struct rr_config c;
	struct rr_cfg_errs e = { 0 };
	static const char win[] = "[Window w]\nStart=03:00\nLength=1h\n";
	static const char off[] = "[Window w]\nEnabled=no\n";
	static const char outside[] = "[Policy]\nRebootOutsideWindows=yes\n";

	config_defaults(&c);
	T_OK(policy_never_reboots(&c), "the defaults never reboot by themselves");
	config_apply_text(&c, win, sizeof(win) - 1, "t.conf", &e);
	T_OK(e.n == 0 && !policy_never_reboots(&c), "a window: reboots are planned");
	config_apply_text(&c, off, sizeof(off) - 1, "t.conf", &e);
	T_OK(e.n == 0 && policy_never_reboots(&c), "its only window disabled: never again");
	config_apply_text(&c, outside, sizeof(outside) - 1, "t.conf", &e);
	T_OK(e.n == 0 && !policy_never_reboots(&c), "RebootOutsideWindows=yes: planned");

	struct rr_view v = { .now = T0, .verify = RR_V_RANDOMIZED, .no_window = true,
			     .fleet_backend = "none" };
	static char body[16384];
	T_OK(control_format_text(&v, body, sizeof(body)) > 0 &&
	     strstr(body, "\nnext rerandomize:  never by itself: no maintenance window is configured "
		    "and RebootOutsideWindows=no; add a [Window NAME] to rerand.conf (see "
		    "rerand.conf(5)); `rerand now` rerandomizes at once\n"),
	     "status says nothing reboots, and what to configure");
	T_OK(t_json_r("status", control_format_json(&v, body, sizeof(body)), body) > 0 && strstr(body, "\"no_window\":true"),
	     "JSON: no_window true");
}

/* Point 2: the status JSON's vocabulary is verify --json's; json-c builds it. */
static void test_json(void)
{
	struct rr_view v = { .now = T0, .verify = RR_V_WEAK, .entropy_bits = 9.0,
			     .crash_reserved = 0xfffffffffffff000ull, .fleet_backend = "none" };
	static char body[16384];
	struct json_object *j = NULL, *x;

	snprintf(v.kernel, sizeof(v.kernel), "/boot/vmlinuz-\"q\"\\\x01/x");
	T_OK(t_json_r("status", control_format_json(&v, body, sizeof(body)), body) > 0 &&
	     (j = json_tokener_parse(body)) != NULL, "the status is JSON a parser accepts");
	T_OK(j && json_object_object_get_ex(j, "randomized", &x) && json_object_get_boolean(x) &&
	     json_object_object_get_ex(j, "weak", &x) && json_object_get_boolean(x),
	     "a weak boot: randomized true, weak true (verify --json's meaning)");
	T_OK(j && json_object_object_get_ex(j, "result", &x) &&
	     !strcmp(json_object_get_string(x), "weak") &&
	     json_object_object_get_ex(j, "verify", &x) && !strcmp(json_object_get_string(x), "weak"),
	     "a weak boot: result \"weak\", the word rerand verify --json uses (and verify, its old name)");
	T_OK(j && json_object_object_get_ex(j, "crash", &x) &&
	     json_object_object_get_ex(x, "reserved_bytes", &x) &&
	     json_object_get_uint64(x) == 0xfffffffffffff000ull,
	     "a 64-bit count is written whole (json-c's uint64, not a double)");
	T_OK(j && json_object_object_get_ex(j, "kernel", &x) &&
	     !strcmp(json_object_get_string(x), "/boot/vmlinuz-\"q\"\\\\\\x01/x"),
	     "text from outside: escaped as the text status shows it, then as JSON");
	T_OK(strchr(body, '\n') == body + strlen(body) - 1, "one line, newline-terminated");
	json_object_put(j);
	v.verify = RR_V_NOT_RANDOMIZED;
	j = NULL;
	T_OK(t_json_r("status", control_format_json(&v, body, sizeof(body)), body) > 0 && (j = json_tokener_parse(body)) &&
	     json_object_object_get_ex(j, "randomized", &x) && !json_object_get_boolean(x) &&
	     json_object_object_get_ex(j, "entropy_bits", &x) && x == NULL,
	     "a boot the stage did not randomize: randomized false, entropy_bits null");
	json_object_put(j);
}

/* A logind lock's holder writes its own who and why (issue 39, point 3):
 * whatever it puts there stays one metrics sample, one status line, valid
 * JSON; nothing lets it add a series or a line. */
static void test_inhibitor_text(void)
{
	struct rr_view v = { .now = T0, .inhibited_since = T0 - 600, .max_inhibit = 4 * 3600 };
	static char body[32768];
	struct json_object *j = NULL, *a;
	struct rr_inhibitor *l = &v.inhibitors.l[0];
	int n = 0;

	v.inhibitors.n = 1;
	*l = (struct rr_inhibitor){ .uid = 1000, .pid = 4242, .seen = T0 - 600, .blocks = true };
	snprintf(l->who, sizeof(l->who), "x\"} 1\nrerand_hold 1\n#\xff");
	snprintf(l->why, sizeof(l->why), "a\\b\nnext rerandomize:  never");
	snprintf(l->mode, sizeof(l->mode), "block");
	snprintf(l->what, sizeof(l->what), "shutdown");
	T_OK(metrics_format(&v, body, sizeof(body)) > 0, "metrics with a hostile lock holder");
	T_OK(!strstr(body, "\nrerand_hold 1\n") && strstr(body, "\nrerand_inhibitors 1\n") &&
	     strstr(body, "\nrerand_inhibited_since_timestamp_seconds 1796428200\n") &&
	     strstr(body, "\nrerand_inhibit_max_seconds 14400\n"),
	     "metrics: no series of the holder's making; since, the bound, the count");
	for (const char *p = body; (p = strstr(p, "\nrerand_inhibitor_since_timestamp_seconds{")); p++)
		n++;
	T_OK(n == 1 && strstr(body, "{uid=\"1000\",pid=\"4242\",who=\"x\\\"} 1\\\\nrerand_hold 1") &&
	     strstr(body, ",blocks=\"1\"} 1796428200\n"),
	     "metrics: one series for the lock, its labels escaped (%d)", n);
	T_OK(control_format_text(&v, body, sizeof(body)) > 0 &&
	     strstr(body, "\n  uid 1000 pid 4242: x\"} 1\\nrerand_hold 1\\n#\\xff (a\\\\b\\nnext "
		    "rerandomize:  never), block on shutdown, seen since Fri 2026-12-04 23:50:00 UTC; "
		    "10min 0s ago: holds it back") &&
	     strstr(body, "\ninhibitors:        1 logind lock; the due rerandomization held back since "
		    "Fri 2026-12-04 23:50:00 UTC; 10min 0s ago, goes ahead anyway at Sat 2026-12-05 "
		    "03:50:00 UTC (MaxInhibitSec=4h 0min)"),
	     "status: the lock on one line, escaped; since when and the bound");
	T_OK(t_json_r("status", control_format_json(&v, body, sizeof(body)), body) > 0 && (j = json_tokener_parse(body)) &&
	     json_object_object_get_ex(j, "inhibitors", &a) && json_object_array_length(a) == 1 &&
	     json_object_get_int64(json_object_object_get(json_object_array_get_idx(a, 0), "since")) ==
	     T0 - 600 && json_object_get_int64(json_object_object_get(j, "inhibited_since")) == T0 - 600,
	     "status --json: parses; the lock's since and inhibited_since");
	json_object_put(j);
}

/* rr_bits (no libm in rerandd) against libm's log2: slot counts of every
 * size, powers of two exact. */
static void test_bits(void)
{
	static const uint64_t ns[] = { 1, 2, 3, 5, 7, 255, 256, 257, 511, 1000, 4095, 65537,
				       1ull << 20, 3ull << 30, 123456789012ull, ~0ull };
	double worst = 0;

	T_OK(rr_bits(0) == 0, "rr_bits(0) is 0");
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		double d = fabs(rr_bits(ns[i]) - log2((double)ns[i]));
		if (d > worst)
			worst = d;
	}
	T_OK(worst < 1e-12, "rr_bits matches log2 within 1e-12 (worst %.3g)", worst);
	T_OK(rr_bits(1ull << 40) == 40 && rr_bits(512) == 9, "rr_bits of a power of two is exact");
}

int main(void)
{
	setenv("TZ", "UTC", 1);
	tzset();
	test_absent_boot();
	test_grade();
	test_times();
	test_hold();
	test_metrics_names();
	test_no_window();
	test_json();
	test_inhibitor_text();
	test_bits();
	return t_done();
}
