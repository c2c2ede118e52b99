/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd's persistent state: a small key=value file under the state dir,
 * written atomically (write, fsync, rename, fsync dir), and the accounting
 * of each reboot attempt once the next boot looks at it. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cachekey.h"
#include "cleanup.h"
#include "image.h"
#include "rerandd.h"
#include "state_int.h"
#include "status.h"

#define STATE_MAX (64u << 10)

void state_init(struct rr_state *s)
{
	memset(s, 0, sizeof(*s));
	s->jitter = -1;
}

enum rr_resume state_resume(struct rr_state *s, const char *boot_id)
{
	enum rr_phase ph = s->phase;

	s->phase = RR_PH_IDLE;
	/* another boot: the attempt (if any) is settled by state_account_boot */
	if (strcmp(s->boot_id, boot_id) || ph == RR_PH_IDLE)
		return RR_RESUME_NONE;
	/* The same boot: the sequence stopped half-way, even in reboot or
	 * rebooting (the request, if it went out, was not carried out while
	 * rerandd lived).  state_account_boot drops a recorded attempt as
	 * aborted, and coord_startup gives the slot back. */
	return RR_RESUME_UNWIND;
}

enum rr_verify state_verify_record(int r, const struct rerand_status *s)
{
	if (r == -ENOENT)
		return RR_V_ABSENT;
	if (r < 0)
		return RR_V_MALFORMED;
	if (s->result != RERAND_RES_RANDOMIZED)
		return RR_V_NOT_RANDOMIZED;
	return s->flags & RERAND_ST_WEAK ? RR_V_WEAK : RR_V_RANDOMIZED;
}

/* The guarded keys: those whose loss could let through a reboot that must
 * not happen, or give back the fleet slot of a failed attempt.  The hold;
 * the failures in a row (past MaxFailures: stopped); a pending attempt and
 * the boot it left (which the next boot must count, or MaxFailures never
 * trips); the boot the file speaks of (same boot or not); fleet_keep (the
 * slot of a failed attempt, never released: coord_startup); a rerandomized
 * boot still to be confirmed (confirm_first_look counts it failed if it
 * never was).  Every file rerandd writes has each of them once; a file
 * without one of them, with one twice or unreadable, is in doubt. */
enum { G_VERSION, G_BOOT_ID, G_HOLD, G_FAILURES, G_ATTEMPT, G_ATTEMPT_BOOT_ID, G_FLEET_KEEP,
       G_CONFIRM_PENDING, G_NR };
static const char *const guarded[G_NR] = { "version", "boot_id", "hold", "failures", "attempt",
					   "attempt_boot_id", "fleet_keep", "confirm_pending" };
#define G_BIT(g) (1u << (g))
#define G_ALL (G_BIT(G_NR) - 1)

static int guarded_index(const char *k)
{
	for (int i = 0; i < G_NR; i++)
		if (!strcmp(k, guarded[i]))
			return i;
	return -1;
}

static void damaged(struct rr_state_damage *d, unsigned line, const char *fmt, const char *arg)
{
	if (!d->bad++) {
		d->first_line = line;
		snprintf(d->first_why, sizeof(d->first_why), fmt, arg);
	}
}

/* The guarded keys in LOST can no longer be trusted; the first such doubt
 * is told (what). */
static void doubt(struct rr_state_damage *d, unsigned lost, const char *fmt, const char *arg)
{
	if (!d->lost)
		snprintf(d->what, sizeof(d->what), fmt, arg);
	d->lost |= lost;
}

/* Any doubt: held, and each guarded value in doubt taken as the worst the
 * design allows, never as the harmless one.
 *  - hold: on (damaged-state, the reason in its text), unless the file
 *    said an operator's hold, which stays with the operator's words;
 *  - failures: at least STATE_FAILURES_LOST, past any MaxFailures: stopped
 *    until a verified boot or `rerand now`, after the release;
 *  - attempt: pending, from the boot the file names (a restart in that
 *    boot drops it as aborted; the next boot counts it, as a failure unless
 *    verified, and a guessed one never as a success: state_account_boot);
 *  - confirm_pending: pending, without its boot id, so that the next start
 *    counts the boot failed (confirm_first_look) instead of confirming it,
 *    and never runs a confirmation (or its firmware reboot) on a guess;
 *  - fleet_keep: on, whichever key was lost: a slot that may be a failed
 *    attempt's is never released (coord_startup); it runs out with its
 *    lease or an operator frees it. */
static void fail_closed(struct rr_state *s, struct rr_state_damage *d)
{
	if (!(s->hold && s->hold_why == RR_HOLD_OPERATOR)) {
		s->hold = true;
		s->hold_why = RR_HOLD_DAMAGED;
		s->hold_time = 0;
		snprintf(s->hold_text, sizeof(s->hold_text), "state file damaged (%.60s): held until "
			 "an operator checks it and runs `rerand unhold`", d->what);
		d->held = true;
	}
	if ((d->lost & G_BIT(G_FAILURES)) && s->failures < STATE_FAILURES_LOST)
		s->failures = STATE_FAILURES_LOST;
	if (d->lost & (G_BIT(G_ATTEMPT) | G_BIT(G_ATTEMPT_BOOT_ID))) {
		s->attempt_guessed = !s->attempt;
		s->attempt = true;
		if (!*s->attempt_boot_id)
			memcpy(s->attempt_boot_id, s->boot_id, sizeof(s->attempt_boot_id));
	}
	if (d->lost & G_BIT(G_CONFIRM_PENDING))
		s->confirm_pending = true;
	if (s->confirm_pending)
		s->confirm_boot_id[0] = 0;
	s->fleet_keep = true;
}

/* Reading a file line by line: where it is, and what it has shown. */
struct parse {
	const char *text, *p, *end;
	struct rr_state *s;
	struct rr_state_damage d;
	unsigned seen[G_NR], lineno;
	bool end_seen;
	int version;
};

/* end=SHA256: the SHA-256 of every byte before this line (which starts at
 * start), and the end of the file. */
static void parse_end(struct parse *x, const char *start, const char *sha_read, bool nl)
{
	char sha[65];

	rr_sha256_hex(x->text, (size_t)(start - x->text), sha);
	x->end_seen = true;
	if (!nl || strcmp(sha_read, sha)) {
		damaged(&x->d, x->lineno, "%s", "end: not the checksum of the lines before it");
		doubt(&x->d, G_ALL, "%s", "its end= checksum does not match");
	}
	if (x->p < x->end) {
		damaged(&x->d, x->lineno + 1, "%s", "bytes after the end= line");
		doubt(&x->d, G_ALL, "%s", "bytes after its end= line");
	}
}

/* One line, KEY=VALUE.  One bad line costs that line, not the file: a line
 * that cannot be read is skipped and counted.  false after the end line. */
static bool parse_line(struct parse *x)
{
	const char *start = x->p, *nl = memchr(x->p, '\n', (size_t)(x->end - x->p));
	size_t n = nl ? (size_t)(nl - x->p) : (size_t)(x->end - x->p);
	char line[256], *eq;
	int g;

	x->lineno++;
	x->p += n + (nl ? 1 : 0);
	if (n >= sizeof(line) || memchr(start, 0, n)) {
		damaged(&x->d, x->lineno, "%s", n >= sizeof(line) ? "longer than 255 bytes"
								   : "a NUL byte");
		/* it may have been any key */
		doubt(&x->d, G_ALL, "%s", "a line that names no key");
		return true;
	}
	memcpy(line, start, n);
	line[n] = 0;
	if (!n)
		return true;
	if (!(eq = strchr(line, '='))) {
		damaged(&x->d, x->lineno, "%s", "no '='");
		doubt(&x->d, G_ALL, "%s", "a line that names no key");
		return true;
	}
	*eq = 0;
	if (!strcmp(line, STATE_END)) {
		parse_end(x, start, eq + 1, nl);
		return false;
	}
	g = guarded_index(line);
	/* a last line without '\n' was cut: its value may be too */
	if (!nl || state_set_key(x->s, line, eq + 1, &x->version) < 0) {
		damaged(&x->d, x->lineno, nl ? "%.60s: a value that cannot be read" :
			"%.60s: cut short (no newline at the end)", line);
		if (!nl)
			doubt(&x->d, G_ALL, "%s", "cut short in a line");
		else if (g >= 0)
			doubt(&x->d, G_BIT(g), "%.40s= unreadable", line);
		return true;
	}
	if (g >= 0 && x->seen[g]++) {
		damaged(&x->d, x->lineno, "%.60s: a second time", line);
		doubt(&x->d, G_BIT(g), "%.40s= twice", line);
	}
	return true;
}

/* What the whole file must have: a version, an end line in version 2 (and
 * none in version 1), every guarded key. */
static void parse_finish(struct parse *x)
{
	if (!x->version) {
		if (!x->d.bad)
			damaged(&x->d, x->lineno, "%s", "no version= line");
		doubt(&x->d, G_ALL, "%s", "no version= line");
	} else if (x->version == STATE_VERSION && !x->end_seen) {
		damaged(&x->d, x->lineno, "%s", "no end= line: cut short");
		doubt(&x->d, G_ALL, "%s", "cut short: no end= line");
	} else if (x->version != STATE_VERSION && x->end_seen) {
		damaged(&x->d, x->lineno, "%s", "an end= line in a version 1 file");
		doubt(&x->d, G_ALL, "%s", "an end= line in a version 1 file");
	}
	/* Version 1 (no end line) is read as before, but every guarded key
	 * must be there: rerandd 0.1 wrote each of them in every file. */
	for (int g = 0; g < G_NR; g++)
		if (!x->seen[g]) {
			if (!x->d.bad)
				damaged(&x->d, x->lineno, "no %s= line", guarded[g]);
			doubt(&x->d, G_BIT(g), "no %s= line", guarded[g]);
		}
}

int state_parse_damage(const char *text, size_t len, struct rr_state *s,
		       struct rr_state_damage *ret)
{
	struct parse x = { .text = text, .p = text, .end = text + len, .s = s };

	state_init(s);
	while (x.p < x.end && parse_line(&x))
		;
	parse_finish(&x);
	if (x.d.lost)
		fail_closed(s, &x.d);
	if (ret)
		*ret = x.d;
	return x.d.bad ? -EBADMSG : 0;
}

int state_parse(const char *text, size_t len, struct rr_state *s)
{
	return state_parse_damage(text, len, s, NULL);
}

/* What fail_closed assumed, for the log: "" when it assumed nothing. */
static void worst_said(const struct rr_state_damage *d, const struct rr_state *s, char *out,
		       size_t cap)
{
	snprintf(out, cap, "; taken at worst: %s%s%sfleet slot kept",
		 d->lost & G_BIT(G_FAILURES) ? "failures " RR_STR(STATE_FAILURES_LOST) " (stopped), " : "",
		 d->lost & (G_BIT(G_ATTEMPT) | G_BIT(G_ATTEMPT_BOOT_ID)) ? "attempt pending, " : "",
		 s->confirm_pending ? "last boot unconfirmed, " : "");
}

/* Fail closed: the defaults, held, when the file is there but cannot be read. */
static void hold_unread(struct rr_state *s, const char *path, int err)
{
	struct rr_state_damage d = { .lost = G_ALL };

	state_init(s);
	snprintf(d.what, sizeof(d.what), "cannot be read: %s", strerror(err));
	fail_closed(s, &d);
	snprintf(s->hold_text, sizeof(s->hold_text), "state file %s %.60s: held until an operator "
		 "checks it and runs `rerand unhold`", path, d.what);
}

int state_load(const char *path, struct rr_state *s, struct rr_err *e)
{
	_cleanup_free_ uint8_t *buf = NULL;
	struct rr_state_damage d;
	char aside[PATH_MAX], worst[400] = "";
	size_t len;
	int r;

	state_init(s);
	r = rr_read_file(path, STATE_MAX, &buf, &len, e);
	/* none: the first start, a fresh state, not held */
	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		hold_unread(s, path, -r);
		return rr_errf(e, -r, "%s: cannot read the state file (%s): held until an operator "
			       "checks it and runs `rerand unhold`", path, strerror(-r));
	}
	r = state_parse_damage((const char *)buf, len, s, &d);
	if (r == 0)
		return 0;
	if (d.held)
		snprintf(s->hold_text, sizeof(s->hold_text), "state file %s damaged (%.60s): held "
			 "until an operator checks it and runs `rerand unhold`", path, d.what);
	if (d.lost)
		worst_said(&d, s, worst, sizeof(worst));
	/* A hard link keeps the damaged bytes for a look, costs no space, and
	 * leaves the file itself in place until a save replaces it: a save that
	 * fails (a full disk) must not leave the next start with nothing. */
	snprintf(aside, sizeof(aside), "%s.corrupt", path);
	unlink(aside);
	if (link(path, aside) < 0)
		snprintf(aside, sizeof(aside), "(no copy: %s)", strerror(errno));
	return rr_errf(e, EBADMSG, "%s: damaged state file: %u problem%s (the first, line %u: "
		       "%s; a copy is in %s); kept the rest%s%s%s", path, d.bad, d.bad == 1 ? "" : "s",
		       d.first_line, d.first_why, aside,
		       d.lost ? "; HELD: the hold, failure or attempt lines may be lost: no reboot "
		       "until `rerand unhold`" : "", worst,
		       d.lost ? "" : "; the guarded keys are intact: not held");
}

void state_remove_stale_temps(const char *path)
{
	char dir[PATH_MAX], base[PATH_MAX], prefix[PATH_MAX + 8];
	struct dirent *de;
	DIR *dp;

	snprintf(dir, sizeof(dir), "%s", path);
	snprintf(base, sizeof(base), "%s", path);
	snprintf(prefix, sizeof(prefix), "%s.tmp", basename(base));
	dp = opendir(dirname(dir));
	if (!dp)
		return;
	while ((de = readdir(dp)))
		if (!strncmp(de->d_name, prefix, strlen(prefix)))
			unlinkat(dirfd(dp), de->d_name, 0);
	closedir(dp);
}

int state_save(const char *path, const struct rr_state *s, struct rr_err *e)
{
	char buf[4096], dir[PATH_MAX];
	int n = state_format(s, buf, sizeof(buf)), r;
	_cleanup_close_ int dfd = -1;

	if (n < 0)
		return rr_errf(e, -n, "%s: state does not fit", path);
	r = rr_write_file_atomic(path, (const uint8_t *)buf, (size_t)n, e);
	if (r < 0)
		return r;
	/* The rename is durable only once the directory is on disk too. */
	snprintf(dir, sizeof(dir), "%s", path);
	dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0)
		fsync(dfd);
	return 0;
}

enum rr_outcome state_account_boot(struct rr_state *s, const char *boot_id,
				   enum rr_verify verify, time_t now)
{
	enum rr_outcome out = RR_OUT_SAME_BOOT;
	bool new_boot = strcmp(s->boot_id, boot_id) != 0;

	if (s->attempt) {
		if (!strcmp(s->attempt_boot_id, boot_id)) {
			/* Still the boot that planned it: the daemon died before
			 * the reboot went out.  Nothing was rebooted, nothing failed. */
			out = RR_OUT_ABORTED;
		} else if (verify == RR_V_RANDOMIZED && s->attempt_guessed) {
			/* an attempt a damaged state file only assumed (fail_closed):
			 * a randomized boot is not its success, and does not end
			 * the stopped state; a boot rerandd may not have planned */
			out = RR_OUT_UNPLANNED;
			s->unplanned_boots++;
		} else if (verify == RR_V_RANDOMIZED) {
			out = RR_OUT_SUCCESS;
			s->failures = 0;
			s->successes++;
			s->last_success = now;
		} else if (verify == RR_V_WEAK) {
			/* randomized from the TSC alone: not a success, and not
			 * the same thing as a boot that was not randomized */
			out = RR_OUT_WEAK;
			s->failures++;
			s->weak_boots++;
			s->last_failure = now;
		} else {
			out = RR_OUT_FAILURE;
			s->failures++;
			s->total_failures++;
			s->last_failure = now;
		}
		s->attempt = false;
		s->attempt_guessed = false;
		s->attempt_boot_id[0] = 0;
	} else if (new_boot && s->boot_id[0] && !strcmp(s->fallback_boot_id, s->boot_id)) {
		/* the firmware reboot the failed boot asked for (confirm.c): its
		 * failure is counted already */
		out = RR_OUT_FALLBACK;
	} else if (new_boot && s->boot_id[0]) {
		out = RR_OUT_UNPLANNED;
		s->unplanned_boots++;
	}
	if (new_boot)
		s->fallback_boot_id[0] = 0;
	if (out == RR_OUT_UNPLANNED)
		s->boot_origin = RR_BO_UNPLANNED;
	else if (out == RR_OUT_FALLBACK)
		s->boot_origin = RR_BO_FALLBACK;
	else if (out == RR_OUT_SUCCESS || out == RR_OUT_FAILURE || out == RR_OUT_WEAK)
		s->boot_origin = RR_BO_RERANDD;
	else if (new_boot)
		s->boot_origin = RR_BO_FIRST;
	if (new_boot) {
		s->phase = RR_PH_IDLE;
		s->trig_oops = s->trig_new_kernel = s->trig_now = false;
		s->taint_handled = 0;
		s->staged_time = 0;
		s->jitter = -1;                 /* draw again for this boot */
		snprintf(s->boot_id, sizeof(s->boot_id), "%s", boot_id);
	}
	if (new_boot || out != RR_OUT_SAME_BOOT) {
		s->last_verify = verify;
		s->last_verify_time = now;
	}
	return out;
}

bool state_account_crash_boot(struct rr_state *s, const char *boot_id, time_t now)
{
	/* Nothing else moves: the crash kernel was not planned, and whether
	 * the kernel it replaced was randomized is for the next normal boot,
	 * which settles a pending attempt against its own record. */
	if (!strcmp(s->crash_boot_id, boot_id))
		return false;               /* rerandd restarted in the same crash boot */
	snprintf(s->crash_boot_id, sizeof(s->crash_boot_id), "%s", boot_id);
	s->crash_boots++;
	s->last_crash_boot = now;
	return true;
}

void state_record_attempt(struct rr_state *s, enum rr_reason why, time_t now)
{
	s->attempt = true;
	snprintf(s->attempt_boot_id, sizeof(s->attempt_boot_id), "%s", s->boot_id);
	s->attempt_time = now;
	s->attempt_reason = why;
	s->last_reboot = now;
}

void state_record_cause(struct rr_state *s, enum rr_cause c, const char *detail, time_t now)
{
	if ((unsigned)c >= RR_NR_CAUSES)
		c = RR_CAUSE_NO_TRACE;
	s->last_cause = c;
	snprintf(s->last_cause_detail, sizeof(s->last_cause_detail), "%s", detail ? detail : "");
	wdog_redact(s->last_cause_detail);
	s->last_cause_time = now;
	s->causes[c]++;
	/* told to the group (fleet mode) once the helper can be asked */
	s->fleet_report = true;
}

void state_set_hold(struct rr_state *s, bool hold, const char *text, time_t now)
{
	size_t i = 0;

	s->hold = hold;
	s->hold_why = RR_HOLD_OPERATOR;
	s->hold_time = hold ? now : 0;
	/* one printable line: it goes into the state file and the status */
	for (; hold && text && text[i] && i < sizeof(s->hold_text) - 1; i++)
		s->hold_text[i] = isprint((unsigned char)text[i]) ? text[i] : '?';
	s->hold_text[i] = 0;
}

void state_record_failed_reboot(struct rr_state *s, time_t now)
{
	/* no reboot: a one-shot choice written down for it stays untouched */
	s->oneshot = RR_OS_NONE;
	s->oneshot_value[0] = 0;
	s->attempt = false;
	s->attempt_boot_id[0] = 0;
	s->failures++;
	s->total_failures++;
	s->last_failure = now;
}
