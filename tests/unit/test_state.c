/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd's state file (atomic writes, truncated or garbage files), boot
 * accounting, and the small pure helpers around it: command-line cleaning,
 * SHA-256, the control protocol and the status/metrics text. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachekey.h"
#include "cleanup.h"
#include "rerandd.h"
#include "status.h"
#include "test.h"

static char dir[256], path[300];

static unsigned count_files(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	unsigned n = 0;

	while (d && (de = readdir(d)))
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

static void put(const char *text, size_t len)
{
	FILE *f = fopen(path, "w");
	fwrite(text, 1, len, f);
	fclose(f);
}

/* The same state as rerandd 0.1 wrote it (version 1, before issue 39): no
 * end= line.  The length of out's text. */
static int v1_of(const char *v2, char *out, size_t cap)
{
	const char *end = strstr(v2, "\nend=");
	int n;

	if (strncmp(v2, "version=2\n", 10) || !end)
		return -1;
	n = snprintf(out, cap, "version=1\n%.*s", (int)(end + 1 - v2 - 10), v2 + 10);
	return n > 0 && (size_t)n < cap ? n : -1;
}

/* TEXT without the line of KEY (key=...), or with LINE after it. */
static int edit_line(const char *text, const char *key, const char *line, char *out, size_t cap)
{
	char pat[64];
	const char *at;
	int n;

	snprintf(pat, sizeof(pat), "\n%s=", key);
	at = strstr(text, pat);
	if (!at)
		return -1;
	at++;
	if (line)
		n = snprintf(out, cap, "%.*s%s\n%s", (int)(strchr(at, '\n') + 1 - text), text, line,
			     strchr(at, '\n') + 1);
	else
		n = snprintf(out, cap, "%.*s%s", (int)(at - text), text, strchr(at, '\n') + 1);
	return n > 0 && (size_t)n < cap ? n : -1;
}

static void test_file(void)
{
	struct rr_state a, b;
	struct rr_err e;
	char buf[4096], corrupt[320];
	struct stat st;
	int n;

	state_init(&a);
	snprintf(a.boot_id, sizeof(a.boot_id), "0a1b2c3d-0000-4000-8000-00000000abcd");
	a.failures = 2;
	a.successes = 17;
	a.total_failures = 5;
	a.last_reboot = 1767225600;
	a.hold = true;
	a.trig_oops = true;
	a.taint_handled = 512;
	a.jitter = 1234;
	a.last_verify = RR_V_RANDOMIZED;
	snprintf(a.staged_sha, sizeof(a.staged_sha), "%064d", 7);
	state_record_attempt(&a, RR_WHY_OOPS, 1767229200);

	T_OK(state_load(path, &b, &e) == 0 && b.failures == 0 && b.jitter == -1,
	     "no state file: defaults, jitter not drawn");
	T_OK(state_save(path, &a, &e) == 0, "save");
	T_OK(count_files() == 1, "atomic save leaves exactly one file (no temporary)");
	T_OK(stat(path, &st) == 0 && st.st_size > 100, "state file written");
	T_OK(state_load(path, &b, &e) == 0, "load it back");
	T_OK(b.failures == 2 && b.successes == 17 && b.total_failures == 5 && b.hold && b.trig_oops &&
	     !b.trig_now && b.taint_handled == 512 && b.jitter == 1234 && b.attempt &&
	     b.attempt_reason == RR_WHY_OOPS && b.attempt_time == 1767229200 &&
	     !strcmp(b.attempt_boot_id, a.boot_id) && !strcmp(b.staged_sha, a.staged_sha) &&
	     b.last_verify == RR_V_RANDOMIZED && b.last_reboot == 1767229200,
	     "every field round-trips");

	a.causes[RR_CAUSE_CHECK] = 3;
	a.causes[RR_CAUSE_NO_TRACE] = 1;
	n = state_format(&a, buf, sizeof(buf));
	T_OK(n > 0 && state_parse(buf, (size_t)n, &b) == 0, "format/parse agree");
	T_OK(b.causes[RR_CAUSE_CHECK] == 3 && b.causes[RR_CAUSE_NO_TRACE] == 1,
	     "the failure counts by cause round-trip");
	{
		/* every line key=value with a key of [a-z0-9_], as operators'
		 * scripts (and tests/e2e/daemon-init.sh) read the file */
		bool keys_ok = n > 0;
		for (const char *l = buf; keys_ok && *l; l = strchr(l, '\n') + 1) {
			size_t k = strspn(l, "abcdefghijklmnopqrstuvwxyz0123456789_");
			keys_ok = k > 0 && l[k] == '=' && strchr(l, '\n');
			if (!keys_ok)
				printf("# bad line: %.60s\n", l);
		}
		T_OK(keys_ok, "every line is key=value with a key of [a-z0-9_]");
	}
	T_OK(!strncmp(buf, "version=2\n", 10) && strstr(buf, "\nend=") &&
	     strlen(strstr(buf, "\nend=")) == 70, "version=2, and an end= line with a SHA-256 last");
	T_OK(state_parse(buf, (size_t)n - 5, &b) == -EBADMSG && b.failures == STATE_FAILURES_LOST &&
	     b.hold && b.successes == 17 && b.attempt,
	     "a file cut mid-line: damaged, everything before the cut kept, the guarded keys at "
	     "their worst (failures %u)", b.failures);
	T_OK(state_parse(buf + 10, (size_t)n - 10, &b) == -EBADMSG && b.hold &&
	     b.hold_why == RR_HOLD_OPERATOR, "a file without version= is damaged; its hold kept");
	{
		char v1[4096], ed[4200], ed2[4200];
		int m = v1_of(buf, v1, sizeof(v1));

		T_OK(m > 0 && state_parse(v1, (size_t)m, &b) == 0 && b.failures == 2 && b.hold &&
		     b.attempt, "a version 1 file (rerand 0.1, no end= line) still loads, clean");
		T_OK(edit_line(v1, "failures", "failures=-3", ed, sizeof(ed)) > 0 &&
		     edit_line(ed, "failures", NULL, ed2, sizeof(ed2)) > 0 &&
		     state_parse(ed2, strlen(ed2), &b) == -EBADMSG, "a negative count is refused");
		T_OK(edit_line(v1, "hold", "hold=2", ed, sizeof(ed)) > 0 &&
		     edit_line(ed, "hold", NULL, ed2, sizeof(ed2)) > 0 &&
		     state_parse(ed2, strlen(ed2), &b) == -EBADMSG && b.hold,
		     "a flag other than 0/1 is refused");
		T_OK(edit_line(v1, "failures", "future_key=x", ed, sizeof(ed)) > 0 &&
		     state_parse(ed, strlen(ed), &b) == 0 && b.failures == 2,
		     "unknown keys from a newer rerandd are skipped");
		T_OK(edit_line(v1, "boot_id", "boot_id=../../etc", ed, sizeof(ed)) > 0 &&
		     edit_line(ed, "boot_id", NULL, ed2, sizeof(ed2)) > 0 &&
		     state_parse(ed2, strlen(ed2), &b) == -EBADMSG, "a non-hex boot id is refused");
	}

	/* A garbage file on disk: nothing can be read, so it is held; the
	 * damaged bytes are kept beside it. */
	put("\x7f" "ELF\0\0garbage\n", 13);
	snprintf(corrupt, sizeof(corrupt), "%s.corrupt", path);
	T_OK(state_load(path, &b, &e) == -EBADMSG && b.failures == STATE_FAILURES_LOST && b.hold &&
	     b.hold_why == RR_HOLD_DAMAGED && strstr(e.msg, "damaged state file") &&
	     strstr(e.msg, "HELD"), "garbage state: -EBADMSG, held (damaged-state), a message: %s", e.msg);
	T_OK(strstr(b.hold_text, path) && strstr(b.hold_text, "damaged") &&
	     strstr(b.hold_text, "rerand unhold"), "the hold's text names the file: %s", b.hold_text);
	T_OK(access(corrupt, F_OK) == 0 && access(path, F_OK) == 0,
	     "a copy of the damaged file is kept, and the file itself stays until a save replaces it");
	put(buf, (size_t)n / 2);
	T_OK(state_load(path, &b, &e) == -EBADMSG && b.failures == STATE_FAILURES_LOST && b.hold &&
	     b.successes == 17, "a truncated state file keeps what was read, and holds");
	T_OK(state_save(path, &a, &e) == 0 && state_load(path, &b, &e) == 0 && b.failures == 2,
	     "and a new save works after it");
	unlink(corrupt);
}

/* One bad line costs that line: an operator's hold and the stopped state
 * survive it, and damage that may have cost them holds (issue 22, item 6). */
static void test_damage(void)
{
	struct rr_state a, b;
	struct rr_state_damage d;
	struct rr_config c;
	struct rr_err e;
	char buf[4096], bad[4200], *at;
	int n;

	config_defaults(&c);                    /* MaxFailures=3 */
	state_init(&a);
	snprintf(a.boot_id, sizeof(a.boot_id), "0a1b2c3d-0000-4000-8000-00000000abcd");
	a.hold = true;
	a.failures = 3;
	a.total_failures = 3;
	a.successes = 9;
	n = state_format(&a, bad, sizeof(bad));
	/* In a version 2 file any change fails the end= checksum: everything
	 * guarded is in doubt (test_sweep).  Line by line, as below, is how a
	 * version 1 file (no checksum) is read. */
	at = strstr(bad, "last_verify=");
	memcpy(at + 12, "\x01", 1);
	T_OK(state_parse_damage(bad, (size_t)n, &b, &d) == -EBADMSG && b.hold &&
	     b.hold_why == RR_HOLD_OPERATOR && b.failures == STATE_FAILURES_LOST && b.fleet_keep &&
	     b.successes == 9 && strstr(d.what, "end= checksum"),
	     "version 2, one byte of an unguarded line changed: the end= checksum fails, held, "
	     "guarded values at their worst (%s)", d.what);
	n = state_format(&a, bad, sizeof(bad));
	n = v1_of(bad, buf, sizeof(buf));

	/* a bad line in the middle: a garbled value of a key that is not guarded */
	at = strstr(buf, "last_verify=");
	snprintf(bad, sizeof(bad), "%.*slast_verify=\x01\x02garbage\n%s", (int)(at - buf), buf,
		 strchr(at, '\n') + 1);
	T_OK(state_parse_damage(bad, strlen(bad), &b, &d) == -EBADMSG && d.bad == 1 &&
	     d.first_line == 14 && strstr(d.first_why, "last_verify") && b.hold &&
	     b.hold_why == RR_HOLD_OPERATOR && b.failures == 3 && policy_stopped(&c, b.failures) &&
	     b.successes == 9 && !strcmp(b.boot_id, a.boot_id),
	     "a corrupt line: the operator's hold and the stopped state (3 failures) kept (%u bad, "
	     "line %u: %s)", d.bad, d.first_line, d.first_why);
	/* a line that names no key: it may have been the hold itself */
	a.hold = false;
	n = state_format(&a, bad, sizeof(bad));
	n = v1_of(bad, buf, sizeof(buf));
	at = strstr(buf, "hold=0\n");
	snprintf(bad, sizeof(bad), "%.*sh\xffld 0\n%s", (int)(at - buf), buf, at + 7);
	T_OK(state_parse_damage(bad, strlen(bad), &b, &d) == -EBADMSG && d.held && b.hold &&
	     b.hold_why == RR_HOLD_DAMAGED && b.failures == STATE_FAILURES_LOST &&
	     strstr(b.hold_text, "damaged") && b.fleet_keep,
	     "the hold line unreadable (names no key): held (damaged-state), everything guarded at "
	     "its worst: %s", b.hold_text);
	snprintf(bad, sizeof(bad), "%.*shold=yes\n%s", (int)(at - buf), buf, at + 7);
	T_OK(state_parse_damage(bad, strlen(bad), &b, &d) == -EBADMSG && b.hold &&
	     b.hold_why == RR_HOLD_DAMAGED && b.failures == 3 && !b.attempt && b.fleet_keep,
	     "hold= with a bad value: held, the failures kept, the slot kept");
	at = strstr(buf, "failures=3\n");
	snprintf(bad, sizeof(bad), "%.*sfailures=3x\n%s", (int)(at - buf), buf, at + 11);
	T_OK(state_parse_damage(bad, strlen(bad), &b, &d) == -EBADMSG && b.hold &&
	     b.hold_why == RR_HOLD_DAMAGED && b.failures == STATE_FAILURES_LOST,
	     "failures= unreadable (the stopped state unknown): held, counted as %u", b.failures);
	{
		char ed[4200], ed2[4200];

		T_OK(edit_line(buf, "fleet_keep", "fleet_keep=?", ed, sizeof(ed)) > 0 &&
		     edit_line(ed, "fleet_keep", NULL, ed2, sizeof(ed2)) > 0 &&
		     state_parse_damage(ed2, strlen(ed2), &b, &d) == -EBADMSG && b.hold &&
		     b.fleet_keep && b.failures == 3, "fleet_keep= unreadable: held, the slot kept");
		T_OK(edit_line(buf, "confirm_pending", NULL, ed, sizeof(ed)) > 0 &&
		     state_parse_damage(ed, strlen(ed), &b, &d) == -EBADMSG && b.hold &&
		     b.confirm_pending && !*b.confirm_boot_id && b.fleet_keep,
		     "confirm_pending= missing: held, a confirmation assumed pending, with no boot id "
		     "(counted failed, never run on a guess)");
		T_OK(edit_line(buf, "hold", "hold=0", ed, sizeof(ed)) > 0 &&
		     state_parse_damage(ed, strlen(ed), &b, &d) == -EBADMSG && b.hold &&
		     strstr(d.first_why, "hold: a second time"), "hold= twice: held (%s)", d.first_why);
	}
	at = strstr(buf, "last_verify=");
	snprintf(bad, sizeof(bad), "%.*slast_verify=bogus\n%s", (int)(at - buf), buf,
		 strchr(at, '\n') + 1);
	T_OK(state_parse_damage(bad, strlen(bad), &b, &d) == -EBADMSG && !b.hold && !d.held &&
	     b.failures == 3, "an unguarded key unreadable, the guarded ones intact: not held");
	T_OK(state_parse_damage("", 0, &b, &d) == -EBADMSG && b.hold,
	     "an empty state file (no version line): held");
	T_OK(state_parse_damage(buf, (size_t)n, &b, &d) == 0 && !b.hold && d.bad == 0,
	     "the clean file: no damage, no hold");
	/* the hold reason is saved, and a release (hold=0) is what clears it */
	a.hold = true;
	a.hold_why = RR_HOLD_DAMAGED;
	n = state_format(&a, buf, sizeof(buf));
	T_OK(strstr(buf, "\nhold=1\nhold_reason=damaged-state\n") &&
	     state_parse(buf, (size_t)n, &b) == 0 && b.hold && b.hold_why == RR_HOLD_DAMAGED,
	     "hold_reason=damaged-state is saved and read back");
	/* what rerand status shows of it, and of a reboot cancelled for a save */
	struct rr_view v = { .hold = true, .hold_reason = "damaged-state", .fleet_backend = "none" };
	snprintf(v.reboot_error, sizeof(v.reboot_error), "reboot cancelled: the state file cannot "
		 "be written (x: No space left on device), so the next boot could not be counted");
	T_OK(control_format_text(&v, buf, sizeof(buf)) > 0 &&
	     strstr(buf, "\nhold:              yes (damaged-state: the state file could not be read "
		    "whole; check the journal, then `rerand unhold`)\n") &&
	     strstr(buf, "\nreboot error:      reboot cancelled: the state file cannot be written"),
	     "rerand status: the hold's reason and the cancelled reboot");
	T_OK(t_json_r("status", control_format_json(&v, buf, sizeof(buf)), buf) > 0 &&
	     strstr(buf, "\"hold_reason\":\"damaged-state\",\"reboot_error\":\"reboot cancelled: "),
	     "rerand status --json: hold_reason and reboot_error");
	/* a file that cannot be read at all: held */
	snprintf(bad, sizeof(bad), "%s.dir", path);
	mkdir(bad, 0700);
	T_OK(state_load(bad, &b, &e) < 0 && b.hold && b.hold_why == RR_HOLD_DAMAGED &&
	     strstr(e.msg, "held"), "an unreadable state file (a directory): held: %s", e.msg);
	rmdir(bad);
}

/* A boot whose record says RERAND_ST_WEAK (bases from the TSC alone) is
 * counted and shown as weak, never as a verified success. */
static void test_weak(void)
{
	const char *b1 = "11111111-1111-4111-8111-111111111111";
	const char *b2 = "22222222-2222-4222-8222-222222222222";
	struct rerand_status rec = { .result = RERAND_RES_RANDOMIZED,
				     .flags = RERAND_ST_WEAK | RERAND_ST_LA57 };
	struct rr_config c;
	struct rr_state s, t;
	struct rr_view v;
	char buf[16384];

	T_OK(state_verify_record(0, &rec) == RR_V_WEAK, "a randomized record with RERAND_ST_WEAK is weak");
	rec.flags = RERAND_ST_LA57;
	T_OK(state_verify_record(0, &rec) == RR_V_RANDOMIZED, "without it, randomized");
	rec.result = RERAND_RES_NOKASLR;
	rec.flags = RERAND_ST_WEAK;
	T_OK(state_verify_record(0, &rec) == RR_V_NOT_RANDOMIZED &&
	     state_verify_record(-ENOENT, NULL) == RR_V_ABSENT &&
	     state_verify_record(-EINVAL, NULL) == RR_V_MALFORMED, "the other verdicts stay");

	config_defaults(&c);                    /* MaxFailures=3 */
	state_init(&s);
	state_account_boot(&s, b1, RR_V_ABSENT, 100);
	state_record_attempt(&s, RR_WHY_AGE, 200);
	T_OK(state_account_boot(&s, b2, RR_V_WEAK, 300) == RR_OUT_WEAK && s.successes == 0 &&
	     s.weak_boots == 1 && s.failures == 1 && s.total_failures == 0 && s.last_failure == 300 &&
	     s.last_verify == RR_V_WEAK, "a weak boot: not a success; weak 1, 1 in a row, not a failure");
	state_record_attempt(&s, RR_WHY_AGE, 400);
	state_account_boot(&s, b1, RR_V_WEAK, 500);
	state_record_attempt(&s, RR_WHY_AGE, 600);
	state_account_boot(&s, b2, RR_V_WEAK, 700);
	T_OK(s.failures == 3 && policy_stopped(&c, s.failures) && policy_backoff(&c, s.failures) > 0,
	     "three weak boots in a row stop rerandd (MaxFailures=3), with back-off before");
	T_OK(state_format(&s, buf, sizeof(buf)) > 0 && strstr(buf, "\nweak_boots=3\n") &&
	     strstr(buf, "\nlast_verify=weak\n") && state_parse(buf, strlen(buf), &t) == 0 &&
	     t.weak_boots == 3 && t.last_verify == RR_V_WEAK, "weak_boots and last_verify=weak persist");
	state_record_attempt(&s, RR_WHY_NOW, 800);
	T_OK(state_account_boot(&s, b1, RR_V_RANDOMIZED, 900) == RR_OUT_SUCCESS && s.failures == 0 &&
	     s.weak_boots == 3, "a verified boot afterwards resets the count in a row");

	memset(&v, 0, sizeof(v));
	v.verify = RR_V_WEAK;
	v.weak_boots = 3;
	v.successes = 1;
	v.fleet_backend = "none";
	T_OK(control_format_text(&v, buf, sizeof(buf)) > 0 &&
	     strstr(buf, "this boot:         weak (randomized from the TSC alone") &&
	     strstr(buf, "reboots:           1 verified, 0 failed, 3 weak"),
	     "rerand status: this boot weak, weak boots counted apart");
	T_OK(t_json_r("status", control_format_json(&v, buf, sizeof(buf)), buf) > 0 &&
	     strstr(buf, "\"verify\":\"weak\",\"randomized\":true,\"weak\":true") &&
	     strstr(buf, "\"weak_total\":3"),
	     "rerand status --json: randomized true, weak true (as rerand verify --json says)");
	T_OK(metrics_format(&v, buf, sizeof(buf)) > 0 && strstr(buf, "\nrerand_boot_randomized 0\n") &&
	     strstr(buf, "\nrerand_boot_weak 1\n") &&
	     strstr(buf, "\nrerand_reboots_total{result=\"weak\"} 3\n"),
	     "metrics: rerand_boot_randomized 0, rerand_boot_weak 1, reboots_total{result=weak}");
	v.verify = RR_V_RANDOMIZED;
	T_OK(metrics_format(&v, buf, sizeof(buf)) > 0 && strstr(buf, "\nrerand_boot_randomized 1\n") &&
	     strstr(buf, "\nrerand_boot_weak 0\n"), "metrics: a verified boot is randomized, not weak");
}

static void test_accounting(void)
{
	const char *b1 = "11111111-1111-4111-8111-111111111111";
	const char *b2 = "22222222-2222-4222-8222-222222222222";
	struct rr_state s;

	state_init(&s);
	T_OK(state_account_boot(&s, b1, RR_V_ABSENT, 100) == RR_OUT_SAME_BOOT && !strcmp(s.boot_id, b1),
	     "first start ever: nothing to account");
	s.jitter = 99;
	T_OK(state_account_boot(&s, b1, RR_V_ABSENT, 110) == RR_OUT_SAME_BOOT && s.jitter == 99,
	     "daemon restart in the same boot keeps the jitter");

	state_record_attempt(&s, RR_WHY_AGE, 200);
	s.trig_now = true;
	T_OK(state_account_boot(&s, b1, RR_V_ABSENT, 210) == RR_OUT_ABORTED && !s.attempt &&
	     s.failures == 0, "killed before the reboot went out: aborted, not a failure");

	state_record_attempt(&s, RR_WHY_AGE, 300);
	T_OK(state_account_boot(&s, b2, RR_V_RANDOMIZED, 400) == RR_OUT_SUCCESS && s.successes == 1 &&
	     s.failures == 0 && !s.attempt && s.jitter == -1 && !s.trig_now &&
	     !strcmp(s.boot_id, b2) && s.last_verify == RR_V_RANDOMIZED,
	     "new boot id + randomized record: success; triggers cleared, jitter redrawn");

	state_record_attempt(&s, RR_WHY_AGE, 500);
	T_OK(state_account_boot(&s, b1, RR_V_ABSENT, 600) == RR_OUT_FAILURE && s.failures == 1 &&
	     s.total_failures == 1 && s.last_failure == 600,
	     "new boot without our record (firmware reboot, failed kexec): failure");
	state_record_attempt(&s, RR_WHY_AGE, 700);
	T_OK(state_account_boot(&s, b2, RR_V_NOT_RANDOMIZED, 800) == RR_OUT_FAILURE && s.failures == 2,
	     "record says not randomized: failure, consecutive count grows");
	state_record_attempt(&s, RR_WHY_AGE, 900);
	T_OK(state_account_boot(&s, b1, RR_V_MALFORMED, 1000) == RR_OUT_FAILURE && s.failures == 3,
	     "malformed record: failure");
	state_record_attempt(&s, RR_WHY_NOW, 1100);
	T_OK(state_account_boot(&s, b2, RR_V_RANDOMIZED, 1200) == RR_OUT_SUCCESS && s.failures == 0 &&
	     s.total_failures == 3, "a verified boot resets the consecutive count");
	T_OK(state_account_boot(&s, b1, RR_V_RANDOMIZED, 1300) == RR_OUT_UNPLANNED && s.successes == 2,
	     "a reboot rerandd did not plan is noted but not counted");
	state_record_attempt(&s, RR_WHY_AGE, 1400);
	state_record_failed_reboot(&s, 1401);
	T_OK(!s.attempt && s.failures == 1 && s.last_failure == 1401, "a refused reboot call is a failure");
}

/* systemctl soft-reboot (systemd 254+) restarts userspace, rerandd with it,
 * on the same kernel: the boot id stays.  rerandd must take it as a restart
 * in the same boot, never as a reboot (no success, no failure, no unplanned
 * boot) and keep what belongs to the running kernel: its verdict, the time
 * the next image was staged and the jitter drawn for this boot. */
static void test_soft_reboot(void)
{
	const char *b1 = "11111111-1111-4111-8111-111111111111";
	const char *b2 = "22222222-2222-4222-8222-222222222222";
	struct rr_state s;

	state_init(&s);
	state_account_boot(&s, b1, RR_V_ABSENT, 100);
	state_record_attempt(&s, RR_WHY_AGE, 200);
	T_OK(state_account_boot(&s, b2, RR_V_RANDOMIZED, 300) == RR_OUT_SUCCESS && s.successes == 1,
	     "soft-reboot setup: a verified rerandomizing reboot into boot 2");
	s.staged_time = 350;
	s.jitter = 42;
	T_OK(state_resume(&s, b2) == RR_RESUME_NONE, "soft-reboot while idle: no sequence to unwind");
	T_OK(state_account_boot(&s, b2, RR_V_RANDOMIZED, 400) == RR_OUT_SAME_BOOT &&
	     s.successes == 1 && s.failures == 0 && s.total_failures == 0 && s.weak_boots == 0 &&
	     !strcmp(s.boot_id, b2) && s.last_verify == RR_V_RANDOMIZED && s.last_verify_time == 300 &&
	     s.staged_time == 350 && s.jitter == 42,
	     "soft-reboot (same boot id, same record): not a reboot, nothing counted, "
	     "the staged image's time and the jitter kept");
	/* A soft-reboot while rerandd was in its reboot sequence: the kexec it
	 * asked for did not happen (the kernel is the same). */
	s.phase = RR_PH_REBOOTING;
	state_record_attempt(&s, RR_WHY_AGE, 500);
	T_OK(state_resume(&s, b2) == RR_RESUME_UNWIND &&
	     state_account_boot(&s, b2, RR_V_RANDOMIZED, 600) == RR_OUT_ABORTED && !s.attempt &&
	     s.successes == 1 && s.failures == 0 && s.total_failures == 0,
	     "soft-reboot during a reboot sequence: the attempt dropped as aborted, not a failure");
}

/* Reboots rerandd did not ask for (systemd 256+ turns `systemctl reboot`
 * into a kexec of the staged image; SYSTEMCTL_SKIP_AUTO_KEXEC and a firmware
 * reboot; systemd's own kexec): said as such, counted apart, never a
 * success nor a failure; a soft-reboot (same boot id) changes nothing. */
static void test_unplanned(void)
{
	const char *b1 = "11111111-1111-4111-8111-111111111111";
	const char *b2 = "22222222-2222-4222-8222-222222222222";
	const char *b3 = "33333333-3333-4333-8333-333333333333";
	const char *b4 = "44444444-4444-4444-8444-444444444444";
	struct rr_state s, t;
	struct rr_view v;
	char buf[8192];

	state_init(&s);
	T_OK(state_account_boot(&s, b1, RR_V_ABSENT, 100) == RR_OUT_SAME_BOOT &&
	     s.boot_origin == RR_BO_FIRST && s.unplanned_boots == 0,
	     "the first boot rerandd sees: origin first, nothing counted");
	state_record_attempt(&s, RR_WHY_AGE, 200);
	T_OK(state_account_boot(&s, b2, RR_V_RANDOMIZED, 300) == RR_OUT_SUCCESS &&
	     s.boot_origin == RR_BO_RERANDD && s.unplanned_boots == 0,
	     "rerandd's own reboot: origin rerandd");
	T_OK(state_account_boot(&s, b3, RR_V_RANDOMIZED, 400) == RR_OUT_UNPLANNED &&
	     s.boot_origin == RR_BO_UNPLANNED && s.unplanned_boots == 1 && s.successes == 1 &&
	     s.failures == 0 && s.total_failures == 0 && s.weak_boots == 0,
	     "`systemctl reboot` into the staged image: unplanned 1, successes still 1, no failure");
	T_OK(state_account_boot(&s, b3, RR_V_RANDOMIZED, 500) == RR_OUT_SAME_BOOT &&
	     s.boot_origin == RR_BO_UNPLANNED && s.unplanned_boots == 1,
	     "a soft-reboot after it (same boot id): still unplanned, not counted again");
	T_OK(state_account_boot(&s, b4, RR_V_ABSENT, 600) == RR_OUT_UNPLANNED &&
	     s.unplanned_boots == 2 && s.successes == 1 && s.failures == 0 && s.total_failures == 0,
	     "a firmware reboot or systemd's own kexec (verify absent): unplanned 2, no failure");
	T_OK(state_format(&s, buf, sizeof(buf)) > 0 && strstr(buf, "\nboot_origin=unplanned\n") &&
	     strstr(buf, "\nunplanned_boots=2\n") && state_parse(buf, strlen(buf), &t) == 0 &&
	     t.boot_origin == RR_BO_UNPLANNED && t.unplanned_boots == 2,
	     "boot_origin and unplanned_boots persist (a restart in the same boot keeps them)");
	T_OK(state_parse("version=1\nhold=0\nfailures=0\nattempt=0\nattempt_boot_id=\nboot_origin=bogus\n",
			 strlen("version=1\nhold=0\nfailures=0\nattempt=0\nattempt_boot_id=\nboot_origin=bogus\n"),
			 &t) == -EBADMSG && t.boot_origin == RR_BO_FIRST,
	     "an unknown boot_origin is a bad line, read as first");

	memset(&v, 0, sizeof(v));
	v.verify = RR_V_ABSENT;
	v.successes = 1;
	v.boot_origin = RR_BO_UNPLANNED;
	v.unplanned_boots = 2;
	v.fleet_backend = "none";
	T_OK(control_format_text(&v, buf, sizeof(buf)) > 0 &&
	     strstr(buf, "\nbooted by:         a reboot rerandd did not plan (not counted: not a "
			 "success, not a failure)\n") &&
	     strstr(buf, "reboots:           1 verified, 0 failed, 0 weak; 2 not rerandd's\n"),
	     "rerand status says the boot is not rerandd's and counts it apart");
	T_OK(t_json_r("status", control_format_json(&v, buf, sizeof(buf)), buf) > 0 &&
	     strstr(buf, "\"boot_origin\":\"unplanned\",\"unplanned_boots\":2"),
	     "rerand status --json: boot_origin unplanned, unplanned_boots 2");
	T_OK(metrics_format(&v, buf, sizeof(buf)) > 0 &&
	     strstr(buf, "\nrerand_unplanned_boots_total 2\n") &&
	     strstr(buf, "\nrerand_reboots_total{result=\"success\"} 1\n"),
	     "metrics: rerand_unplanned_boots_total apart from rerand_reboots_total");
	v.boot_origin = RR_BO_RERANDD;
	T_OK(control_format_text(&v, buf, sizeof(buf)) > 0 &&
	     strstr(buf, "\nbooted by:         rerandd's rerandomizing reboot (counted)\n"),
	     "rerand status: rerandd's own reboot says so");
}

/* The firmware reboot rerandd asks for after a rerandomized boot failed its
 * confirmation (confirm.c sets fallback_boot_id): the next boot is that
 * reboot, counted with the failure, not "a reboot rerandd did not plan". */
static void test_fallback(void)
{
	const char *b1 = "11111111-1111-4111-8111-111111111111";
	const char *b2 = "22222222-2222-4222-8222-222222222222";
	const char *b3 = "33333333-3333-4333-8333-333333333333";
	const char *b4 = "44444444-4444-4444-8444-444444444444";
	struct rr_state s, t;
	struct rr_view v;
	char buf[8192];

	state_init(&s);
	state_account_boot(&s, b1, RR_V_ABSENT, 100);
	state_record_attempt(&s, RR_WHY_AGE, 200);
	state_account_boot(&s, b2, RR_V_RANDOMIZED, 300);
	/* b2 never confirmed: it records the cause and asks the firmware */
	s.failures++;
	s.total_failures++;
	snprintf(s.fallback_boot_id, sizeof(s.fallback_boot_id), "%s", b2);
	T_OK(state_format(&s, buf, sizeof(buf)) > 0 &&
	     strstr(buf, "\nfallback_boot_id=22222222-2222-4222-8222-222222222222\n") &&
	     state_parse(buf, strlen(buf), &t) == 0 && !strcmp(t.fallback_boot_id, b2),
	     "fallback_boot_id persists across the reboot");
	T_OK(state_account_boot(&t, b3, RR_V_ABSENT, 400) == RR_OUT_FALLBACK &&
	     t.boot_origin == RR_BO_FALLBACK && t.unplanned_boots == 0 && t.failures == 1 &&
	     t.total_failures == 1 && !t.fallback_boot_id[0],
	     "the next boot is rerandd's fallback: not unplanned, the failure not counted twice");
	T_OK(state_account_boot(&t, b3, RR_V_ABSENT, 450) == RR_OUT_SAME_BOOT &&
	     t.boot_origin == RR_BO_FALLBACK,
	     "a restart of rerandd in that boot keeps the origin");
	T_OK(state_account_boot(&t, b4, RR_V_ABSENT, 500) == RR_OUT_UNPLANNED &&
	     t.unplanned_boots == 1, "the boot after it, by someone else's reboot, is unplanned again");
	/* a fallback that never went out (the request failed): same boot, nothing */
	snprintf(t.fallback_boot_id, sizeof(t.fallback_boot_id), "%s", b4);
	T_OK(state_account_boot(&t, b4, RR_V_ABSENT, 550) == RR_OUT_SAME_BOOT,
	     "a fallback whose reboot did not happen: the same boot, nothing counted");

	memset(&v, 0, sizeof(v));
	v.verify = RR_V_ABSENT;
	v.boot_origin = RR_BO_FALLBACK;
	v.fleet_backend = "none";
	T_OK(control_format_text(&v, buf, sizeof(buf)) > 0 &&
	     strstr(buf, "\nbooted by:         rerandd's reboot through the firmware after a failed "
			 "rerandomized boot (counted with that failure)\n"),
	     "rerand status says the firmware boot was rerandd's fallback");
	T_OK(t_json_r("status", control_format_json(&v, buf, sizeof(buf)), buf) > 0 &&
	     strstr(buf, "\"boot_origin\":\"fallback\""), "rerand status --json: boot_origin fallback");
}

static void test_helpers(void)
{
	char out[256];
	struct rr_err e;
	char hex[65];

	T_OK(stage_clean_cmdline("BOOT_IMAGE=/vmlinuz-6.1 root=/dev/sda1 initrd=/initrd.img ro quiet\n",
				 out, sizeof(out), &e) == 0 && !strcmp(out, "root=/dev/sda1 ro quiet"),
	     "BOOT_IMAGE= and initrd= dropped: '%s'", out);
	T_OK(stage_clean_cmdline("console=ttyS0 nokaslr", out, sizeof(out), &e) == -EINVAL &&
	     strstr(e.msg, "nokaslr"), "nokaslr refused with an error");
	T_OK(stage_clean_cmdline("a foo=\"x nokaslr y\" -- nokaslr", out, sizeof(out), &e) == 0 &&
	     !strcmp(out, "a foo=\"x nokaslr y\" -- nokaslr"),
	     "nokaslr inside quotes or after -- is not the kernel's");
	T_OK(stage_clean_cmdline("abcdef ghijkl", out, 8, &e) == -E2BIG, "too long for the buffer");

	T_OK(rr_sha256_hex("abc", 3, hex) == 0 &&
	     !strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
	     "SHA-256(\"abc\") through Nettle (FIPS 180-4 example)");

	T_OK(control_parse("status\n", 7) == RR_CTL_STATUS && control_parse("status json", 11) == RR_CTL_STATUS_JSON &&
	     control_parse("now", 3) == RR_CTL_NOW && control_parse("hold\r\n", 6) == RR_CTL_HOLD &&
	     control_parse("release", 7) == RR_CTL_RELEASE && control_parse("reboot", 6) == RR_CTL_BAD &&
	     control_parse("now\0x", 5) == RR_CTL_BAD, "control protocol words");
	{
		/* the kernel hook's "build KERNEL": an absolute, printable path */
		static const char *const good[] = { "build /boot/vmlinuz-6.1.0-57-cloud-amd64",
						     "build /usr/lib/modules/6.12/vmlinuz\n" };
		static const char *const bad[] = { "build", "build ", "build vmlinuz", "build ./vmlinuz",
						    "build /boot/../etc/shadow", "build /boot/..",
						    "build /boot/a\tb", "build /boot/\x7f", "build  /boot/x" };
		char arg[RR_CTL_LINE];
		bool ok = true;
		for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
			ok &= control_parse_arg(good[i], strlen(good[i]), arg, sizeof(arg)) == RR_CTL_BUILD &&
			      arg[0] == '/' && !strchr(arg, '\n');
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			ok &= control_parse_arg(bad[i], strlen(bad[i]), arg, sizeof(arg)) == RR_CTL_BAD;
		T_OK(ok, "control \"build KERNEL\": absolute printable paths only, no \"..\"");
	}
	T_OK(control_parse("now withdraw\n", 13) == RR_CTL_NOW_WITHDRAW &&
	     control_parse("now withdrawn", 13) == RR_CTL_BAD && control_parse("now  withdraw", 13) == RR_CTL_BAD,
	     "control protocol: `rerand now --wait` withdrawing its request");

	struct rr_view v = { .layout_age = 90061, .verify = RR_V_RANDOMIZED, .entropy_bits = 23.4,
			     .failures = 1, .max_failures = 3, .staged = true, .successes = 4,
			     .plan = { RR_ACT_WAIT, RR_WHY_AGE, RR_BLK_NONE, 1767225600 },
			     .now = 1767225600 - 3600 };
	char body[16384];
	snprintf(v.kernel, sizeof(v.kernel), "/boot/vmlinuz-\"q\"");
	T_OK(t_json_r("status", control_format_json(&v, body, sizeof(body)), body) > 0 && strstr(body, "\"randomized\":true") &&
	     strstr(body, "\"next_reboot\":1767225600") && strstr(body, "\"reason\":\"layout-age\"") &&
	     strstr(body, "vmlinuz-\\\"q\\\""), "status JSON fields and string escaping");
	T_OK(control_format_text(&v, body, sizeof(body)) > 0 && strstr(body, "1d 1h 1min") &&
	     strstr(body, "Thu 2026-01-01 00:00:00 UTC; in 1h 0min (layout-age)"),
	     "status text: age and next reboot, local and relative (TZ=UTC)");
	T_OK(metrics_format(&v, body, sizeof(body)) > 0 && strstr(body, "\nrerand_layout_age_seconds 90061\n") &&
	     strstr(body, "\nrerand_boot_randomized 1\n") && strstr(body, "\nrerand_entropy_bits 23.4\n") &&
	     strstr(body, "\nrerand_consecutive_failures 1\n") &&
	     strstr(body, "\nrerand_next_reboot_timestamp_seconds 1767225600\n"),
	     "metrics in Prometheus text format");
	T_OK(control_format_text(&v, body, 40) == -ENOBUFS, "a short buffer is reported, not overrun");
}

/* A kill -9 inside state_save leaves state.tmpXXXXXX: removed at start-up,
 * and nothing else is. */
static void test_stale_temps(void)
{
	char tmp[400], other[400], keep[400];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmpAbC123", path);
	snprintf(other, sizeof(other), "%s/images.tmpXYZ", dir);
	snprintf(keep, sizeof(keep), "%s", path);
	if ((f = fopen(tmp, "w")))
		fclose(f);
	if ((f = fopen(other, "w")))
		fclose(f);
	if ((f = fopen(keep, "a")))
		fclose(f);
	state_remove_stale_temps(path);
	T_OK(access(tmp, F_OK) != 0, "a stale state temp file is removed at start-up");
	T_OK(access(other, F_OK) == 0 && access(keep, F_OK) == 0,
	     "other files and the state itself are left alone");
	unlink(other);
}

/* The reboot sequence's phase: saved, read back, old files readable, and
 * what a restart does with each phase. */
static void test_phase(void)
{
	static const char B1[] = "1111aaaa-0000-4000-8000-000000000001";
	static const char B2[] = "2222bbbb-0000-4000-8000-000000000002";
	struct rr_state a, b;
	char buf[4096];
	int n;

	state_init(&a);
	snprintf(a.boot_id, sizeof(a.boot_id), "%s", B1);
	a.phase = RR_PH_HOOKS;
	n = state_format(&a, buf, sizeof(buf));
	T_OK(n > 0 && strstr(buf, "\nphase=hooks\n") && state_parse(buf, (size_t)n, &b) == 0 &&
	     b.phase == RR_PH_HOOKS, "the phase is saved by name and read back");
	{
		char v1[4096], ed[4200], ed2[4200];
		T_OK(v1_of(buf, v1, sizeof(v1)) > 0 && edit_line(v1, "phase", NULL, ed, sizeof(ed)) > 0 &&
		     state_parse(ed, strlen(ed), &b) == 0 && b.phase == RR_PH_IDLE,
		     "a state file from before the phase existed reads as idle");
		T_OK(edit_line(v1, "phase", "phase=drain", ed, sizeof(ed)) > 0 &&
		     edit_line(ed, "phase", NULL, ed2, sizeof(ed2)) > 0 &&
		     state_parse(ed2, strlen(ed2), &b) == 0 && b.phase == RR_PH_GATE &&
		     state_resume(&b, B1) == RR_RESUME_UNWIND,
		     "an unknown phase (a newer rerandd's) is taken as unfinished, not as a corrupt file");
	}

	for (int ph = RR_PH_GATE; ph <= RR_PH_CONFIRM; ph++) {
		b = a;
		b.phase = ph;
		T_OK(state_resume(&b, B1) == RR_RESUME_UNWIND && b.phase == RR_PH_IDLE,
		     "restarted in %s (same boot): unwound to idle", state_phase_name(ph));
	}
	for (int ph = RR_PH_REBOOT; ph <= RR_PH_REBOOTING; ph++) {
		b = a;
		b.phase = ph;
		state_record_attempt(&b, RR_WHY_AGE, 1000);
		snprintf(b.attempt_boot_id, sizeof(b.attempt_boot_id), "%s", B1);
		T_OK(state_resume(&b, B1) == RR_RESUME_UNWIND && b.phase == RR_PH_IDLE &&
		     state_account_boot(&b, B1, RR_V_RANDOMIZED, 2000) == RR_OUT_ABORTED &&
		     !b.attempt && b.failures == 0 && b.successes == 0,
		     "restarted in %s (same boot): unwound, the attempt dropped as aborted, "
		     "nothing counted", state_phase_name(ph));
	}
	b = a;
	b.phase = RR_PH_REBOOTING;
	state_record_attempt(&b, RR_WHY_AGE, 1000);
	snprintf(b.attempt_boot_id, sizeof(b.attempt_boot_id), "%s", B1);
	T_OK(state_resume(&b, B2) == RR_RESUME_NONE && b.phase == RR_PH_IDLE &&
	     state_account_boot(&b, B2, RR_V_RANDOMIZED, 2000) == RR_OUT_SUCCESS && b.successes == 1,
	     "rebooting, then a new boot: idle, and the normal next-boot accounting (a success)");
	b = a;
	b.phase = RR_PH_IDLE;
	T_OK(state_resume(&b, B1) == RR_RESUME_NONE, "idle stays idle");
}

/* ---- the state sweep (issue 39, point 4) -------------------------------------
 * A real state file with every guarded field set, written by state_save, then
 * cut at every byte offset and each line garbled (junk value, a value of 0,
 * deleted, duplicated); each variant loaded by state_load from the disk.
 * Whatever the damage, loading must never give: a lost hold, fewer failures
 * than were written, a pending attempt or confirmation dropped (the next boot
 * must count it), or a fleet slot of a failed attempt given back
 * (fleet_keep cleared: coord_startup would release it). */
#define SWEEP_BOOT "0a1b2c3d-0000-4000-8000-00000000abcd"
#define SWEEP_PREV "99887766-0000-4000-8000-00000000abcd"

static void sweep_state(struct rr_state *a, bool hold)
{
	state_init(a);
	snprintf(a->boot_id, sizeof(a->boot_id), SWEEP_PREV);
	a->failures = 3;
	a->total_failures = 3;
	a->successes = 9;
	if (hold)
		state_set_hold(a, true, "kernel 6.9 under review", 1767225000);
	state_record_attempt(a, RR_WHY_AGE, 1767229200);
	a->fleet_held = true;
	snprintf(a->fleet_token, sizeof(a->fleet_token), "694d7f0a1b2c3d4e:1");
	a->fleet_keep = true;
	a->fleet_report = true;
	a->confirm_pending = true;
	snprintf(a->confirm_boot_id, sizeof(a->confirm_boot_id), SWEEP_PREV);
	state_record_cause(a, RR_CAUSE_CHECK, "post-boot.d/10-net failed", 1767229000);
}

/* What loading damaged bytes must still give; why it does not, in why. */
static bool sweep_safe(const struct rr_state *b, char *why, size_t cap)
{
	const char *w = !b->hold ? "the hold lost" : b->failures < 3 ? "failures below 3" :
		!b->attempt ? "the pending attempt dropped" :
		!b->confirm_pending ? "the pending confirmation dropped" :
		!b->fleet_keep ? "fleet_keep cleared (the slot would be released)" : NULL;

	if (w)
		snprintf(why, cap, "%s (failures %u)", w, b->failures);
	return !w;
}

/* Load BYTES (LEN) from the state path; 1 if the result is unsafe. */
static unsigned sweep_one(const char *bytes, size_t len, const char *what, unsigned *shown)
{
	struct rr_state b;
	struct rr_err e;
	char why[128];

	put(bytes, len);
	state_load(path, &b, &e);
	if (sweep_safe(&b, why, sizeof(why)))
		return 0;
	if ((*shown)++ < 4)
		printf("#   %s: %s\n", what, why);
	return 1;
}

/* Every line of TEXT garbled in turn: 4 variants a line. */
static unsigned sweep_lines(const char *text, size_t n, unsigned *variants, unsigned *shown,
			    bool flips)
{
	static char bad[8192];
	char what[96];
	unsigned fails = 0, line = 0;

	for (const char *l = text; l < text + n; line++) {
		const char *nl = memchr(l, '\n', (size_t)(text + n - l));
		const char *eq = memchr(l, '=', (size_t)(nl - l));
		size_t pre = (size_t)(l - text), ll = (size_t)(nl + 1 - l), k;

		if (!nl || !eq)
			break;
		k = (size_t)(eq + 1 - l);
		/* the value replaced by junk */
		int m = snprintf(bad, sizeof(bad), "%.*s%.*s\x01#junk?\n%s", (int)pre, text, (int)k, l,
				 nl + 1);
		snprintf(what, sizeof(what), "line %u (%.*s) junk", line + 1, (int)(k - 1), l);
		fails += sweep_one(bad, (size_t)m, what, shown);
		/* the value replaced by 0: a flipped bit, readable as a value */
		if (flips) {
			m = snprintf(bad, sizeof(bad), "%.*s%.*s0\n%s", (int)pre, text, (int)k, l, nl + 1);
			snprintf(what, sizeof(what), "line %u (%.*s) set to 0", line + 1, (int)(k - 1), l);
			fails += sweep_one(bad, (size_t)m, what, shown);
			++*variants;
		}
		/* deleted */
		m = snprintf(bad, sizeof(bad), "%.*s%s", (int)pre, text, nl + 1);
		snprintf(what, sizeof(what), "line %u (%.*s) deleted", line + 1, (int)(k - 1), l);
		fails += sweep_one(bad, (size_t)m, what, shown);
		/* duplicated */
		m = snprintf(bad, sizeof(bad), "%.*s%.*s%s", (int)(pre + ll), text, (int)ll, l, l);
		snprintf(what, sizeof(what), "line %u (%.*s) duplicated", line + 1, (int)(k - 1), l);
		fails += sweep_one(bad, (size_t)m, what, shown);
		*variants += 3;
		l = nl + 1;
	}
	return fails;
}

/* The example: a file cut cleanly after boot_id.  And a missing
 * file (a first start): fresh, not held. */
static void test_cut_after_boot_id(void)
{
	struct rr_state a, b;
	struct rr_err e;
	char buf[4096], v1[4096];
	int n, m;

	sweep_state(&a, true);
	n = state_format(&a, buf, sizeof(buf));
	m = v1_of(buf, v1, sizeof(v1));
	const char *cut = strchr(strstr(buf, "\nboot_id="), '\n');
	cut = strchr(cut + 1, '\n') + 1;
	put(buf, (size_t)(cut - buf));
	T_OK(n > 0 && state_load(path, &b, &e) == -EBADMSG && b.hold && b.failures >= 3 &&
	     b.attempt && b.fleet_keep && b.confirm_pending && strstr(e.msg, "no end= line"),
	     "version 2 cut cleanly after boot_id: held, worst case: %s", e.msg);
	cut = strchr(strstr(v1, "\nboot_id="), '\n');
	cut = strchr(cut + 1, '\n') + 1;
	put(v1, (size_t)(cut - v1));
	T_OK(m > 0 && state_load(path, &b, &e) == -EBADMSG && b.hold && b.failures >= 3 &&
	     b.attempt && b.fleet_keep && b.confirm_pending && strstr(e.msg, "no hold= line"),
	     "version 1 cut cleanly after boot_id: held, worst case: %s", e.msg);
	unlink(path);
	T_OK(state_load(path, &b, &e) == 0 && !b.hold && !b.failures && !b.attempt && !b.fleet_keep &&
	     !b.confirm_pending, "no state file (a first start): a fresh state, not held");

	/* an attempt the damage only assumed: never a success */
	put(buf, (size_t)n - 1);
	T_OK(state_load(path, &b, &e) == -EBADMSG && b.attempt && b.attempt_guessed == false,
	     "the attempt line read (attempt=1) is not a guess, even in doubt");
	a.attempt = false;
	a.attempt_boot_id[0] = 0;
	n = state_format(&a, buf, sizeof(buf));
	put(buf, (size_t)n - 1);
	T_OK(state_load(path, &b, &e) == -EBADMSG && b.attempt && b.attempt_guessed &&
	     !strcmp(b.attempt_boot_id, SWEEP_PREV), "attempt=0 in doubt: assumed pending, from the "
	     "file's boot");
	{
		struct rr_state c;
		char sv[4096];
		int k = state_format(&b, sv, sizeof(sv));
		T_OK(k > 0 && state_parse(sv, (size_t)k, &c) == 0 && c.attempt && c.attempt_guessed &&
		     c.hold && c.failures == STATE_FAILURES_LOST &&
		     c.fleet_keep, "saved and read back (a crash boot settles nothing): still assumed, "
		     "still held");
	}
	T_OK(state_account_boot(&b, SWEEP_BOOT, RR_V_RANDOMIZED, 2000000000) == RR_OUT_UNPLANNED &&
	     b.failures == STATE_FAILURES_LOST && !b.attempt,
	     "a randomized boot after an assumed attempt: not its success, still stopped");
	state_load(path, &b, &e);
	T_OK(state_account_boot(&b, SWEEP_BOOT, RR_V_ABSENT, 2000000000) == RR_OUT_FAILURE &&
	     b.failures == STATE_FAILURES_LOST + 1, "a boot without a record after it: a failure");
	state_load(path, &b, &e);
	T_OK(state_account_boot(&b, SWEEP_PREV, RR_V_RANDOMIZED, 2000000000) == RR_OUT_ABORTED,
	     "a restart in the file's own boot: the assumed attempt dropped as aborted");
	b.failures++;
	n = state_format(&b, buf, sizeof(buf));
	T_OK(state_parse(buf, (size_t)n, &b) == 0 && b.failures == STATE_FAILURES_LOST + 1,
	     "a count past STATE_FAILURES_LOST is saved and read back");
	unlink(path);
}

static void test_sweep(void)
{
	struct rr_state a;
	struct rr_err e;
	_cleanup_free_ uint8_t *text = NULL;
	size_t n;
	unsigned fails = 0, shown = 0, variants = 0;

	sweep_state(&a, true);
	T_OK(state_save(path, &a, &e) == 0 && rr_read_file(path, 1 << 16, &text, &n, &e) == 0,
	     "the sweep's state file is written (%zu bytes)", n);
	/* every byte offset: 0 (empty) up to one byte short of the whole file */
	for (size_t off = 0; off < n; off++) {
		char what[64];
		snprintf(what, sizeof(what), "cut at byte %zu of %zu", off, n);
		fails += sweep_one((const char *)text, off, what, &shown);
	}
	T_OK(fails == 0, "cut at each of %zu byte offsets: never a lost hold, failures below 3, an "
	     "attempt, a confirmation or a kept slot dropped (%u unsafe)", n, fails);
	fails = shown = 0;
	{
		/* sweep_lines reads it as a string: rr_read_file's bytes are not */
		static char whole[8192];
		snprintf(whole, sizeof(whole), "%.*s", (int)n, (const char *)text);
		fails = sweep_lines(whole, n, &variants, &shown, true);
	}
	T_OK(fails == 0, "each line garbled (junk, 0, deleted, duplicated; %u variants): never unsafe "
	     "(%u unsafe)", variants, fails);

	/* The same file as rerandd 0.1 wrote it (version 1, no checksum):
	 * cuts and garbles (not a readable 0: nothing can tell that one from
	 * the truth without a checksum) are as safe, the guarded keys being
	 * required. */
	{
		static char v1[8192];
		static char whole[8192];
		int m;

		snprintf(whole, sizeof(whole), "%.*s", (int)n, (const char *)text);
		m = v1_of(whole, v1, sizeof(v1));

		fails = shown = variants = 0;
		for (int off = 0; off < m; off++) {
			char what[64];
			snprintf(what, sizeof(what), "version 1, cut at byte %d of %d", off, m);
			fails += sweep_one(v1, (size_t)off, what, &shown);
		}
		fails += sweep_lines(v1, (size_t)m, &variants, &shown, false);
		T_OK(m > 0 && fails == 0, "version 1: cut at each of %d offsets and %u garbled lines: "
		     "never unsafe (%u unsafe)", m, variants, fails);
	}

	/* Without an operator's hold: every damaged variant of a version 2
	 * file holds by itself (damaged-state), the file named in the text. */
	{
		struct rr_state b;
		static char bad[8192];
		unsigned unheld = 0, total = 0;

		sweep_state(&a, false);
		free(text);
		text = NULL;
		T_OK(state_save(path, &a, &e) == 0 && rr_read_file(path, 1 << 16, &text, &n, &e) == 0 &&
		     state_load(path, &b, &e) == 0 && !b.hold, "unheld: the whole file loads unheld");
		for (size_t off = 0; off <= n; off++) {
			/* cut at off, or (off == n) the last byte of the checksum changed */
			memcpy(bad, text, n);
			if (off == n)
				bad[n - 2] = bad[n - 2] == '0' ? '1' : '0';
			put(bad, off == n ? n : off);
			total++;
			if (state_load(path, &b, &e) != -EBADMSG || !b.hold ||
			    b.hold_why != RR_HOLD_DAMAGED || !strstr(b.hold_text, path) ||
			    b.failures < 3 || !b.fleet_keep) {
				if (unheld++ < 4)
					printf("#   unheld: byte %zu: hold %d, %s\n", off, b.hold, b.hold_text);
			}
		}
		T_OK(unheld == 0, "unheld: each of %u damaged files is held (damaged-state) with the "
		     "file named (%u not)", total, unheld);
	}
}

int main(void)
{
	char cmd[300];

	/* the status shows local time: pin the zone */
	setenv("TZ", "UTC", 1);
	tzset();
	snprintf(dir, sizeof(dir), "/tmp/rerand-test-state-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/state", dir);
	test_file();
	test_damage();
	test_sweep();
	test_cut_after_boot_id();
	test_accounting();
	test_soft_reboot();
	test_unplanned();
	test_fallback();
	test_weak();
	test_helpers();
	test_stale_temps();
	test_phase();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
	return t_done();
}
