/* SPDX-License-Identifier: GPL-2.0-only */
/* The state file's keys: one table (fields[]) from which state_format
 * writes the file and state_set_key reads each line back, and the names the
 * file gives the state's enums.  What a damaged file loses, and the rest of
 * the state's life, is in state.c. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachekey.h"
#include "rerandd.h"
#include "state_int.h"
#include "util.h"

static const char *verify_names[] = { "unknown", "randomized", "not-randomized", "absent",
				      "malformed", "weak" };

static const char *origin_names[] = { "first", "rerandd", "unplanned", "fallback" };

const char *state_origin_name(enum rr_boot_origin o)
{
	return (unsigned)o < ARRAY_SIZE(origin_names) ? origin_names[o] : "first";
}

static const char *phase_names[] = { "idle", "gate", "restage", "hooks", "confirm", "reboot",
				     "rebooting" };

const char *state_hold_name(enum rr_hold_why h)
{
	return h == RR_HOLD_DAMAGED ? "damaged-state" : "operator";
}

const char *state_phase_name(enum rr_phase ph)
{
	return (unsigned)ph < ARRAY_SIZE(phase_names) ? phase_names[ph] : "unknown";
}

const char *state_verify_name(enum rr_verify v)
{
	return (unsigned)v < ARRAY_SIZE(verify_names) ? verify_names[v] : "unknown";
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

/* The fields are bool, unsigned, or 64-bit (uint64_t, int64_t, time_t); the
 * range was checked, so the value fits whichever it is. */
static int set_num(char *p, size_t size, long long lo, long long hi, const char *v)
{
	long long x;

	if (num(v, lo, hi, &x) < 0)
		return -EINVAL;
	if (size == sizeof(bool)) {
		bool b = x;
		memcpy(p, &b, sizeof(b));
	} else if (size == sizeof(unsigned)) {
		unsigned u = (unsigned)x;
		memcpy(p, &u, sizeof(u));
	} else {
		int64_t i = x;
		memcpy(p, &i, sizeof(i));
	}
	return 0;
}

/* The value of a numeric field, as it is written: signed 64-bit fields
 * (times, the jitter) as such, the rest as unsigned. */
static int put_num(char *dst, size_t cap, const char *p, size_t size, bool sgn)
{
	if (size == sizeof(bool)) {
		bool b;
		memcpy(&b, p, sizeof(b));
		return snprintf(dst, cap, "%d", b);
	}
	if (size == sizeof(unsigned)) {
		unsigned u;
		memcpy(&u, p, sizeof(u));
		return snprintf(dst, cap, "%u", u);
	}
	int64_t i;
	memcpy(&i, p, sizeof(i));
	return sgn ? snprintf(dst, cap, "%" PRId64, i) : snprintf(dst, cap, "%" PRIu64, (uint64_t)i);
}

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
	for (unsigned r = 0; r < ARRAY_SIZE(verify_names); r++)
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

static const char *get_oneshot(const struct rr_state *s)
{
	return oneshot_kind_name(s->oneshot);
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

static const char *get_attempt_reason(const struct rr_state *s)
{
	return policy_reason_name(s->attempt_reason);
}

static const char *get_last_verify(const struct rr_state *s)
{
	return state_verify_name(s->last_verify);
}

static const char *get_hold_reason(const struct rr_state *s)
{
	return state_hold_name(s->hold_why);
}

static const char *get_last_cause(const struct rr_state *s)
{
	return wdog_cause_name(s->last_cause);
}

static const char *get_phase(const struct rr_state *s)
{
	return state_phase_name(s->phase);
}

static const char *get_boot_origin(const struct rr_state *s)
{
	return state_origin_name(s->boot_origin);
}

/* Every key of the file, once, in the order it is written: the table both
 * state_format and set_key read, so a new key is one row (and its field).
 *  - hex: boot ids and the staged kernel's hash, hex digits and dashes;
 *  - num: a number in [lo, hi] in a bool, unsigned or 64-bit field;
 *  - text: a string field with its own check;
 *  - name: an enum written by name (get) and read back (set). */
enum field_kind { F_HEX, F_NUM, F_TEXT, F_NAME };
struct field {
	const char *name;
	enum field_kind kind;
	size_t off, size;
	long long lo, hi;
	bool sgn;                                         /* num: written signed */
	int (*set)(struct rr_state *s, const char *v);    /* text, name */
	const char *(*get)(const struct rr_state *s);     /* name */
};
#define AT(f) offsetof(struct rr_state, f), sizeof(((struct rr_state *)0)->f)
#define HEX(n, f)               { n, F_HEX, AT(f), 0, 0, false, NULL, NULL }
#define NUM(n, f, lo, hi, sgn)  { n, F_NUM, AT(f), lo, hi, sgn, NULL, NULL }
#define FLAG(n, f)              NUM(n, f, 0, 1, false)
#define COUNT(n, f, max)        NUM(n, f, 0, max, false)
#define TIME(n, f)              NUM(n, f, 0, INT64_MAX, true)
#define TEXT(n, f, set)         { n, F_TEXT, AT(f), 0, 0, false, set, NULL }
#define NAME(n, set, get)       { n, F_NAME, 0, 0, 0, 0, false, set, get }
static const struct field fields[] = {
	HEX("boot_id", boot_id),
	FLAG("attempt", attempt),
	HEX("attempt_boot_id", attempt_boot_id),
	TIME("attempt_time", attempt_time),
	NAME("attempt_reason", set_attempt_reason, get_attempt_reason),
	COUNT("failures", failures, INT32_MAX),   /* STATE_FAILURES_LOST, counted on */
	COUNT("successes", successes, INT64_MAX),
	COUNT("total_failures", total_failures, INT64_MAX),
	COUNT("weak_boots", weak_boots, INT64_MAX),
	TIME("last_success", last_success),
	TIME("last_failure", last_failure),
	TIME("last_reboot", last_reboot),
	NAME("last_verify", set_last_verify, get_last_verify),
	TIME("last_verify_time", last_verify_time),
	NUM("jitter", jitter, -1, INT64_C(1) << 40, true),   /* -1: not drawn yet this boot */
	FLAG("hold", hold),
	NAME("hold_reason", set_hold_reason, get_hold_reason),
	TIME("hold_time", hold_time),
	TEXT("hold_text", hold_text, set_hold_text),
	FLAG("trigger_oops", trig_oops),
	FLAG("trigger_new_kernel", trig_new_kernel),
	FLAG("trigger_now", trig_now),
	COUNT("taint_handled", taint_handled, INT64_MAX),
	HEX("staged_sha256", staged_sha),
	TIME("staged_time", staged_time),
	FLAG("fleet_held", fleet_held),
	TEXT("fleet_token", fleet_token, set_fleet_token),
	FLAG("fleet_report", fleet_report),
	FLAG("fleet_keep", fleet_keep),
	COUNT("crash_boots", crash_boots, INT64_MAX),
	TIME("last_crash_boot", last_crash_boot),
	HEX("crash_boot_id", crash_boot_id),
	FLAG("watchdog_armed", watchdog_armed),
	FLAG("confirm_pending", confirm_pending),
	HEX("confirm_boot_id", confirm_boot_id),
	COUNT("confirmed", confirmed, INT64_MAX),
	NAME("last_cause", set_last_cause, get_last_cause),
	TEXT("last_cause_detail", last_cause_detail, set_last_cause_detail),
	TIME("last_cause_time", last_cause_time),
	NAME("phase", set_phase, get_phase),
	NAME("boot_origin", set_boot_origin, get_boot_origin),
	COUNT("unplanned_boots", unplanned_boots, INT64_MAX),
	HEX("fallback_boot_id", fallback_boot_id),
	FLAG("attempt_guessed", attempt_guessed),
	NAME("oneshot", set_oneshot, get_oneshot),
	TEXT("oneshot_value", oneshot_value, set_oneshot_value),
	TEXT("oneshot_note", oneshot_note, set_oneshot_note),
	TIME("oneshot_note_time", oneshot_note_time),
};
#undef NAME
#undef TEXT
#undef TIME
#undef COUNT
#undef FLAG
#undef NUM
#undef HEX
#undef AT

/* A cause's key: cause_NAME with the name's dashes as underscores, [a-z0-9_]
 * like every other key (check-failed: cause_check_failed). */
static void cause_key(enum rr_cause c, char *key, size_t cap)
{
	const char *name = wdog_cause_name(c);
	size_t i = strlen("cause_");

	memcpy(key, "cause_", i);
	for (; *name && i < cap - 1; name++, i++)
		key[i] = *name == '-' ? '_' : *name;
	key[i] = 0;
}

/* cause_NAME=COUNT: the failures by cause. */
static int set_cause_count(struct rr_state *s, const char *k, const char *v)
{
	long long x;

	for (unsigned c = RR_CAUSE_NONE + 1; c < RR_NR_CAUSES; c++) {
		char key[40];

		cause_key(c, key, sizeof(key));
		if (strcmp(k, key))
			continue;
		if (num(v, 0, INT64_MAX, &x) < 0)
			return -EINVAL;
		s->causes[c] = (uint64_t)x;
		return 0;
	}
	return 0;             /* a cause a newer rerandd knows */
}

/* One field's value as the file has it (no newline). */
static int put_field(const struct rr_state *s, const struct field *f, char *dst, size_t cap)
{
	const char *p = (const char *)s + f->off;

	switch (f->kind) {
	case F_NUM:
		return put_num(dst, cap, p, f->size, f->sgn);
	case F_NAME:
		return snprintf(dst, cap, "%s", f->get(s));
	case F_HEX:
	case F_TEXT:
		break;
	}
	return snprintf(dst, cap, "%s", p);
}

static int append(char *buf, size_t len, int *n, const char *key, const char *val)
{
	int m = snprintf(buf + *n, len - (size_t)*n, "%s=%s\n", key, val);

	if (m < 0 || (size_t)m >= len - (size_t)*n)
		return -ENOBUFS;
	*n += m;
	return 0;
}

int state_format(const struct rr_state *s, char *buf, size_t len)
{
	char val[512], sha[65];
	int n = 0;

	if (!len)
		return -ENOBUFS;
	buf[0] = 0;
	if (append(buf, len, &n, "version", RR_STR(STATE_VERSION)) < 0)
		return -ENOBUFS;
	for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
		int m = put_field(s, &fields[i], val, sizeof(val));

		if (m < 0 || (size_t)m >= sizeof(val) ||
		    append(buf, len, &n, fields[i].name, val) < 0)
			return -ENOBUFS;
	}
	for (unsigned c = RR_CAUSE_NONE + 1; c < RR_NR_CAUSES; c++) {
		char key[40];

		cause_key(c, key, sizeof(key));
		snprintf(val, sizeof(val), "%" PRIu64, s->causes[c]);
		if (append(buf, len, &n, key, val) < 0)
			return -ENOBUFS;
	}
	/* last: what comes before it, hashed */
	rr_sha256_hex(buf, (size_t)n, sha);
	if (append(buf, len, &n, STATE_END, sha) < 0)
		return -ENOBUFS;
	return n;
}

int state_set_key(struct rr_state *s, const char *k, const char *v, int *version)
{
	if (!strcmp(k, "version")) {
		if (strcmp(v, "1") && strcmp(v, RR_STR(STATE_VERSION)))
			return -EINVAL;
		*version = v[0] - '0';
		return 0;
	}
	if (!strncmp(k, "cause_", 6))
		return set_cause_count(s, k, v);
	for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
		const struct field *f = &fields[i];
		char *p = (char *)s + f->off;

		if (strcmp(k, f->name))
			continue;
		switch (f->kind) {
		case F_HEX:
			return hexid(v, p, f->size);
		case F_NUM:
			return set_num(p, f->size, f->lo, f->hi, v);
		case F_TEXT:
		case F_NAME:
			break;
		}
		return f->set(s, v);
	}
	return 0;                         /* unknown key: from a newer rerandd */
}
