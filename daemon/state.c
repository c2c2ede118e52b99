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
#include "status.h"

#define STATE_MAX (64u << 10)
#define RR_STR2(x) #x
#define RR_STR(x) RR_STR2(x)

void state_init(struct rr_state *s)
{
	memset(s, 0, sizeof(*s));
	s->jitter = -1;
}

static const char *verify_names[] = { "unknown", "randomized", "not-randomized", "absent",
				      "malformed", "weak" };
#define NR_VERIFY (sizeof(verify_names) / sizeof(verify_names[0]))

static const char *origin_names[] = { "first", "rerandd", "unplanned", "fallback" };

const char *state_origin_name(enum rr_boot_origin o)
{
	return (unsigned)o < sizeof(origin_names) / sizeof(origin_names[0]) ? origin_names[o]
									    : "first";
}

static const char *phase_names[] = { "idle", "gate", "restage", "hooks", "confirm", "reboot",
				     "rebooting" };

const char *state_hold_name(enum rr_hold_why h)
{
	return h == RR_HOLD_DAMAGED ? "damaged-state" : "operator";
}

const char *state_phase_name(enum rr_phase ph)
{
	return (unsigned)ph < sizeof(phase_names) / sizeof(phase_names[0]) ? phase_names[ph]
									  : "unknown";
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

const char *state_verify_name(enum rr_verify v)
{
	return (unsigned)v < NR_VERIFY ? verify_names[v] : "unknown";
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

/* The file's format.  Version 2 ends with end=SHA256, the SHA-256 of every
 * byte before that line (state_format, state_parse_damage): a file cut
 * anywhere, or with any line changed, deleted or repeated, no longer
 * matches.  Version 1 (rerand 0.1 before issue 39) had no end line. */
#define STATE_VERSION 2
#define STATE_END "end="

int state_format(const struct rr_state *s, char *buf, size_t len)
{
	char sha[65];
	int n = snprintf(buf, len,
		"version=" RR_STR(STATE_VERSION) "\n"
		"boot_id=%s\n"
		"attempt=%d\n"
		"attempt_boot_id=%s\n"
		"attempt_time=%lld\n"
		"attempt_reason=%s\n"
		"failures=%u\n"
		"successes=%" PRIu64 "\n"
		"total_failures=%" PRIu64 "\n"
		"weak_boots=%" PRIu64 "\n"
		"last_success=%lld\n"
		"last_failure=%lld\n"
		"last_reboot=%lld\n"
		"last_verify=%s\n"
		"last_verify_time=%lld\n"
		"jitter=%lld\n"
		"hold=%d\n"
		"hold_reason=%s\n"
		"hold_time=%lld\n"
		"hold_text=%s\n"
		"trigger_oops=%d\n"
		"trigger_new_kernel=%d\n"
		"trigger_now=%d\n"
		"taint_handled=%" PRIu64 "\n"
		"staged_sha256=%s\n"
		"staged_time=%lld\n"
		"fleet_held=%d\n"
		"fleet_token=%s\n"
		"fleet_report=%d\n"
		"fleet_keep=%d\n"
		"crash_boots=%" PRIu64 "\n"
		"last_crash_boot=%lld\n"
		"crash_boot_id=%s\n"
		"watchdog_armed=%d\n"
		"confirm_pending=%d\n"
		"confirm_boot_id=%s\n"
		"confirmed=%" PRIu64 "\n"
		"last_cause=%s\n"
		"last_cause_detail=%s\n"
		"last_cause_time=%lld\n"
		"phase=%s\n"
		"boot_origin=%s\n"
		"unplanned_boots=%" PRIu64 "\n"
		"fallback_boot_id=%s\n"
		"attempt_guessed=%d\n"
		"oneshot=%s\n"
		"oneshot_value=%s\n"
		"oneshot_note=%s\n"
		"oneshot_note_time=%lld\n",
		s->boot_id, s->attempt, s->attempt_boot_id, (long long)s->attempt_time,
		policy_reason_name(s->attempt_reason), s->failures, s->successes, s->total_failures,
		s->weak_boots,
		(long long)s->last_success, (long long)s->last_failure, (long long)s->last_reboot,
		state_verify_name(s->last_verify), (long long)s->last_verify_time,
		(long long)s->jitter, s->hold, state_hold_name(s->hold_why),
		(long long)s->hold_time, s->hold_text, s->trig_oops,
		s->trig_new_kernel, s->trig_now,
		s->taint_handled, s->staged_sha, (long long)s->staged_time, s->fleet_held,
		s->fleet_token, s->fleet_report, s->fleet_keep, s->crash_boots, (long long)s->last_crash_boot, s->crash_boot_id,
		s->watchdog_armed, s->confirm_pending, s->confirm_boot_id, s->confirmed,
		wdog_cause_name(s->last_cause), s->last_cause_detail, (long long)s->last_cause_time,
		state_phase_name(s->phase), state_origin_name(s->boot_origin), s->unplanned_boots,
		s->fallback_boot_id, s->attempt_guessed, oneshot_kind_name(s->oneshot),
		s->oneshot_value, s->oneshot_note, (long long)s->oneshot_note_time);
	if (n < 0 || (size_t)n >= len)
		return -ENOBUFS;
	for (unsigned c = RR_CAUSE_NONE + 1; c < RR_NR_CAUSES; c++) {
		char key[32];
		size_t i;
		/* a key is [a-z0-9_] like every other: check-failed -> check_failed */
		for (i = 0; wdog_cause_name(c)[i] && i < sizeof(key) - 1; i++)
			key[i] = wdog_cause_name(c)[i] == '-' ? '_' : wdog_cause_name(c)[i];
		key[i] = 0;
		int m = snprintf(buf + n, len - (size_t)n, "cause_%s=%" PRIu64 "\n", key,
				 s->causes[c]);
		if (m < 0 || (size_t)m >= len - (size_t)n)
			return -ENOBUFS;
		n += m;
	}
	/* last: what comes before it, hashed */
	rr_sha256_hex(buf, (size_t)n, sha);
	int m = snprintf(buf + n, len - (size_t)n, STATE_END "%s\n", sha);
	if (m < 0 || (size_t)m >= len - (size_t)n)
		return -ENOBUFS;
	return n + m;
}

static int num(const char *v, long long lo, long long hi, long long *ret)
{
	char *end;

	if (!*v || (!isdigit((unsigned char)*v) && *v != '-'))
		return -EINVAL;
	errno = 0;
	long long x = strtoll(v, &end, 10);
	if (errno || *end || x < lo || x > hi)
		return -EINVAL;
	*ret = x;
	return 0;
}

static int hexid(const char *v, char *dst, size_t cap)
{
	size_t n = strlen(v);

	if (n >= cap)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)v[i]) && v[i] != '-')
			return -EINVAL;
	memcpy(dst, v, n + 1);
	return 0;
}

/* The numeric keys: a field of the state and the values it takes. */
struct num_key {
	const char *name;
	size_t off, size;
	long long lo, hi;
};
#define NUM_KEY(name, field, lo, hi) \
	{ name, offsetof(struct rr_state, field), sizeof(((struct rr_state *)0)->field), lo, hi }
#define FLAG_KEY(name, field) NUM_KEY(name, field, 0, 1)
#define COUNT_KEY(name, field, max) NUM_KEY(name, field, 0, max)
#define TIME_KEY(name, field) NUM_KEY(name, field, 0, INT64_MAX)
static const struct num_key num_keys[] = {
	FLAG_KEY("attempt", attempt),
	FLAG_KEY("attempt_guessed", attempt_guessed),
	FLAG_KEY("hold", hold),
	FLAG_KEY("fleet_held", fleet_held),
	FLAG_KEY("fleet_report", fleet_report),
	FLAG_KEY("fleet_keep", fleet_keep),
	FLAG_KEY("watchdog_armed", watchdog_armed),
	FLAG_KEY("confirm_pending", confirm_pending),
	COUNT_KEY("confirmed", confirmed, INT64_MAX),
	TIME_KEY("last_cause_time", last_cause_time),
	TIME_KEY("oneshot_note_time", oneshot_note_time),
	FLAG_KEY("trigger_oops", trig_oops),
	FLAG_KEY("trigger_new_kernel", trig_new_kernel),
	FLAG_KEY("trigger_now", trig_now),
	COUNT_KEY("failures", failures, INT32_MAX),   /* STATE_FAILURES_LOST, counted on */
	COUNT_KEY("successes", successes, INT64_MAX),
	COUNT_KEY("total_failures", total_failures, INT64_MAX),
	COUNT_KEY("weak_boots", weak_boots, INT64_MAX),
	COUNT_KEY("taint_handled", taint_handled, INT64_MAX),
	COUNT_KEY("crash_boots", crash_boots, INT64_MAX),
	COUNT_KEY("unplanned_boots", unplanned_boots, INT64_MAX),
	NUM_KEY("jitter", jitter, -1, INT64_C(1) << 40),   /* -1: not drawn yet this boot */
	TIME_KEY("attempt_time", attempt_time),
	TIME_KEY("last_success", last_success),
	TIME_KEY("last_failure", last_failure),
	TIME_KEY("last_reboot", last_reboot),
	TIME_KEY("last_verify_time", last_verify_time),
	TIME_KEY("staged_time", staged_time),
	TIME_KEY("hold_time", hold_time),
	TIME_KEY("last_crash_boot", last_crash_boot),
};
#undef TIME_KEY
#undef COUNT_KEY
#undef FLAG_KEY

/* The fields are bool, unsigned, or 64-bit (uint64_t, int64_t, time_t); the
 * range was checked, so the value fits whichever it is. */
static int set_num(struct rr_state *s, const struct num_key *nk, const char *v)
{
	char *p = (char *)s + nk->off;
	long long x;

	if (num(v, nk->lo, nk->hi, &x) < 0)
		return -EINVAL;
	if (nk->size == sizeof(bool)) {
		bool b = x;
		memcpy(p, &b, sizeof(b));
	} else if (nk->size == sizeof(unsigned)) {
		unsigned u = (unsigned)x;
		memcpy(p, &u, sizeof(u));
	} else {
		int64_t i = x;
		memcpy(p, &i, sizeof(i));
	}
	return 0;
}

/* The boot ids and the staged kernel's hash: hex digits and dashes. */
struct hex_key {
	const char *name;
	size_t off, size;
};
#define HEX_KEY(name, field) \
	{ name, offsetof(struct rr_state, field), sizeof(((struct rr_state *)0)->field) }
static const struct hex_key hex_keys[] = {
	HEX_KEY("boot_id", boot_id),
	HEX_KEY("attempt_boot_id", attempt_boot_id),
	HEX_KEY("crash_boot_id", crash_boot_id),
	HEX_KEY("confirm_boot_id", confirm_boot_id),
	HEX_KEY("fallback_boot_id", fallback_boot_id),
	HEX_KEY("staged_sha256", staged_sha),
};
#undef HEX_KEY

/* Text rerandd wrote printable and on one line (redacted, for a cause). */
static int printable(const char *v, char *dst, size_t cap)
{
	if (strlen(v) >= cap)
		return -EINVAL;
	for (const char *q = v; *q; q++)
		if (!isprint((unsigned char)*q))
			return -EINVAL;
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}

static int set_last_cause(struct rr_state *s, const char *v)
{
	enum rr_cause c;

	if (wdog_cause_parse(v, &c) < 0)
		return -EINVAL;
	s->last_cause = c;
	return 0;
}

static int set_last_cause_detail(struct rr_state *s, const char *v)
{
	/* written redacted and printable by state_record_cause */
	return printable(v, s->last_cause_detail, sizeof(s->last_cause_detail));
}

static int set_hold_text(struct rr_state *s, const char *v)
{
	/* written by state_set_hold: printable, one line */
	return printable(v, s->hold_text, sizeof(s->hold_text));
}

static int set_fleet_token(struct rr_state *s, const char *v)
{
	/* etcd's "LEASEHEX:SLOT", or empty */
	if (strlen(v) >= sizeof(s->fleet_token) || strspn(v, "0123456789abcdef:") != strlen(v))
		return -EINVAL;
	memcpy(s->fleet_token, v, strlen(v) + 1);
	return 0;
}

static int set_attempt_reason(struct rr_state *s, const char *v)
{
	for (int r = RR_WHY_NONE; r <= RR_WHY_LAST; r++)
		if (!strcmp(v, policy_reason_name(r))) {
			s->attempt_reason = r;
			return 0;
		}
	return -EINVAL;
}

static int set_last_verify(struct rr_state *s, const char *v)
{
	for (unsigned r = 0; r < NR_VERIFY; r++)
		if (!strcmp(v, verify_names[r])) {
			s->last_verify = r;
			return 0;
		}
	return -EINVAL;
}

static int set_boot_origin(struct rr_state *s, const char *v)
{
	for (unsigned o = RR_BO_FIRST; o <= RR_BO_UNPLANNED; o++)
		if (!strcmp(v, origin_names[o])) {
			s->boot_origin = o;
			return 0;
		}
	return -EINVAL;
}

static int set_hold_reason(struct rr_state *s, const char *v)
{
	for (int h = RR_HOLD_OPERATOR; h <= RR_HOLD_DAMAGED; h++)
		if (!strcmp(v, state_hold_name(h))) {
			s->hold_why = h;
			return 0;
		}
	return -EINVAL;
}

static int set_phase(struct rr_state *s, const char *v)
{
	/* a phase a newer rerandd wrote: unwound as any unfinished one */
	s->phase = RR_PH_GATE;
	for (int ph = RR_PH_IDLE; ph <= RR_PH_REBOOTING; ph++)
		if (!strcmp(v, state_phase_name(ph)))
			s->phase = ph;
	return 0;
}

static int set_oneshot(struct rr_state *s, const char *v)
{
	return oneshot_kind_parse(v, &s->oneshot);
}

static int set_oneshot_value(struct rr_state *s, const char *v)
{
	/* recorded only when printable (oneshot_note_attempt) */
	return printable(v, s->oneshot_value, sizeof(s->oneshot_value));
}

static int set_oneshot_note(struct rr_state *s, const char *v)
{
	return printable(v, s->oneshot_note, sizeof(s->oneshot_note));
}

static const struct {
	const char *name;
	int (*set)(struct rr_state *s, const char *v);
} text_keys[] = {
	{ "last_cause", set_last_cause },
	{ "last_cause_detail", set_last_cause_detail },
	{ "hold_text", set_hold_text },
	{ "fleet_token", set_fleet_token },
	{ "attempt_reason", set_attempt_reason },
	{ "last_verify", set_last_verify },
	{ "boot_origin", set_boot_origin },
	{ "hold_reason", set_hold_reason },
	{ "phase", set_phase },
	{ "oneshot", set_oneshot },
	{ "oneshot_value", set_oneshot_value },
	{ "oneshot_note", set_oneshot_note },
};

/* cause_NAME=COUNT: the failures by cause. */
static int set_cause_count(struct rr_state *s, const char *k, const char *v)
{
	enum rr_cause c;
	char name[32];
	long long x;
	size_t i;

	/* keys are [a-z0-9_]: cause_check_failed for check-failed */
	for (i = 0; k[6 + i] && i < sizeof(name) - 1; i++)
		name[i] = k[6 + i] == '_' ? '-' : k[6 + i];
	name[i] = 0;
	if (wdog_cause_parse(name, &c) < 0 || c == RR_CAUSE_NONE)
		return 0;             /* a cause a newer rerandd knows */
	if (num(v, 0, INT64_MAX, &x) < 0)
		return -EINVAL;
	s->causes[c] = (uint64_t)x;
	return 0;
}

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static int set_key(struct rr_state *s, const char *k, const char *v, int *version)
{
	if (!strcmp(k, "version")) {
		if (strcmp(v, "1") && strcmp(v, RR_STR(STATE_VERSION)))
			return -EINVAL;
		*version = v[0] - '0';
		return 0;
	}
	if (!strncmp(k, "cause_", 6))
		return set_cause_count(s, k, v);
	for (size_t i = 0; i < ARRAY_LEN(hex_keys); i++)
		if (!strcmp(k, hex_keys[i].name))
			return hexid(v, (char *)s + hex_keys[i].off, hex_keys[i].size);
	for (size_t i = 0; i < ARRAY_LEN(text_keys); i++)
		if (!strcmp(k, text_keys[i].name))
			return text_keys[i].set(s, v);
	for (size_t i = 0; i < ARRAY_LEN(num_keys); i++)
		if (!strcmp(k, num_keys[i].name))
			return set_num(s, &num_keys[i], v);
	return 0;                         /* unknown key: from a newer rerandd */
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

int state_parse_damage(const char *text, size_t len, struct rr_state *s,
		       struct rr_state_damage *ret)
{
	struct rr_state_damage d = { 0 };
	const char *p = text, *end = text + len;
	unsigned seen[G_NR] = { 0 }, lineno = 0;
	bool end_seen = false;
	int version = 0;

	state_init(s);
	/* One bad line costs that line, not the file: every line is read on
	 * its own, and a line that cannot be read is skipped and counted. */
	while (p < end) {
		const char *start = p, *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char line[256], *eq;
		int g;

		lineno++;
		if (n >= sizeof(line) || memchr(p, 0, n)) {
			damaged(&d, lineno, "%s", n >= sizeof(line) ? "longer than 255 bytes"
								      : "a NUL byte");
			/* it may have been any key */
			doubt(&d, G_ALL, "%s", "a line that names no key");
			p += n + (nl ? 1 : 0);
			continue;
		}
		memcpy(line, p, n);
		line[n] = 0;
		p += n + (nl ? 1 : 0);
		if (!n)
			continue;
		eq = strchr(line, '=');
		if (!eq) {
			damaged(&d, lineno, "%s", "no '='");
			doubt(&d, G_ALL, "%s", "a line that names no key");
			continue;
		}
		*eq = 0;
		if (!strcmp(line, "end")) {
			/* the SHA-256 of every byte before this line, and the end */
			char sha[65];

			rr_sha256_hex(text, (size_t)(start - text), sha);
			end_seen = true;
			if (!nl || strcmp(eq + 1, sha)) {
				damaged(&d, lineno, "%s", "end: not the checksum of the lines before it");
				doubt(&d, G_ALL, "%s", "its end= checksum does not match");
			}
			if (p < end) {
				damaged(&d, lineno + 1, "%s", "bytes after the end= line");
				doubt(&d, G_ALL, "%s", "bytes after its end= line");
			}
			break;
		}
		g = guarded_index(line);
		/* a last line without '\n' was cut: its value may be too */
		if (!nl || set_key(s, line, eq + 1, &version) < 0) {
			damaged(&d, lineno, nl ? "%.60s: a value that cannot be read" :
				"%.60s: cut short (no newline at the end)", line);
			if (!nl)
				doubt(&d, G_ALL, "%s", "cut short in a line");
			else if (g >= 0)
				doubt(&d, G_BIT(g), "%.40s= unreadable", line);
			continue;
		}
		if (g >= 0 && seen[g]++) {
			damaged(&d, lineno, "%.60s: a second time", line);
			doubt(&d, G_BIT(g), "%.40s= twice", line);
		}
	}
	if (!version) {
		if (!d.bad)
			damaged(&d, lineno, "%s", "no version= line");
		doubt(&d, G_ALL, "%s", "no version= line");
	} else if (version == STATE_VERSION && !end_seen) {
		damaged(&d, lineno, "%s", "no end= line: cut short");
		doubt(&d, G_ALL, "%s", "cut short: no end= line");
	} else if (version != STATE_VERSION && end_seen) {
		damaged(&d, lineno, "%s", "an end= line in a version 1 file");
		doubt(&d, G_ALL, "%s", "an end= line in a version 1 file");
	}
	/* Version 1 (no end line) is read as before, but every guarded key
	 * must be there: rerandd 0.1 wrote each of them in every file. */
	for (int g = 0; g < G_NR; g++)
		if (!seen[g]) {
			if (!d.bad)
				damaged(&d, lineno, "no %s= line", guarded[g]);
			doubt(&d, G_BIT(g), "no %s= line", guarded[g]);
		}
	if (d.lost)
		fail_closed(s, &d);
	if (ret)
		*ret = d;
	return d.bad ? -EBADMSG : 0;
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
