/* SPDX-License-Identifier: GPL-2.0-only */
/* The line protocol between rerandd and rerand-fleetd (see fleet.h).  Both
 * sides parse what the other sends as untrusted: every field is bounded,
 * every number range-checked, and a line out of shape is refused whole. */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"
#include "util.h"

static const char *const verbs[] = {
	[FLEET_V_OPEN] = "open", [FLEET_V_ACQUIRE] = "acquire", [FLEET_V_REFRESH] = "refresh",
	[FLEET_V_RELEASE] = "release", [FLEET_V_RESUME] = "resume", [FLEET_V_STATUS] = "status",
	[FLEET_V_RELEASE_HOST] = "release-host", [FLEET_V_DOWN] = "down",
	[FLEET_V_FAILED] = "failed", [FLEET_V_BREAKER] = "breaker",
	[FLEET_V_CLEAR_BREAKER] = "clear-breaker",
};

const char *fleet_verb_name(enum fleet_verb v)
{
	return (unsigned)v < ARRAY_SIZE(verbs) && verbs[v] ? verbs[v] : "?";
}

/* ---- fields ------------------------------------------------------------------ */

static int plain(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == ':' || c == '/' || c == ',' || c == '=' || c == '+' ||
	       c == '@';
}

struct out {
	char *buf;
	size_t len, o;
	bool full;
};

static void put_raw(struct out *w, const char *s)
{
	size_t n = strlen(s);

	if (w->full || w->o + n >= w->len) {
		w->full = true;
		return;
	}
	memcpy(w->buf + w->o, s, n);
	w->o += n;
	w->buf[w->o] = 0;
}

/* One field, with the space before it unless it is the first. */
static void put_field(struct out *w, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	char e[4];

	if (w->o)
		put_raw(w, " ");
	if (!*s) {
		put_raw(w, "-");
		return;
	}
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (plain(*p)) {
			e[0] = (char)*p;
			e[1] = 0;
		} else {
			e[0] = '%';
			e[1] = hex[*p >> 4];
			e[2] = hex[*p & 15];
			e[3] = 0;
		}
		put_raw(w, e);
	}
}

static void put_num(struct out *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put_num(struct out *w, const char *fmt, ...)
{
	char num[32];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(num, sizeof(num), fmt, ap);
	va_end(ap);
	put_field(w, num);
}

static int finish(struct out *w)
{
	put_raw(w, "\n");
	return w->full ? -ENOBUFS : (int)w->o;
}

struct in {
	const char *p, *end;
};

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* The next field, decoded into out (NUL-terminated; a NUL byte is refused).
 * -ENOENT at the end of the line, -EBADMSG when out of shape. */
static int get_field(struct in *r, char *out, size_t len)
{
	const char *b = r->p;
	size_t o = 0;

	if (r->p >= r->end)
		return -ENOENT;
	if (*r->p == ' ' || !len)
		return -EBADMSG;           /* an empty field: "-" is the empty string */
	while (r->p < r->end && *r->p != ' ') {
		unsigned char c = (unsigned char)*r->p;
		int h, l;

		if (c == '%') {
			if (r->end - r->p < 3 || (h = hexval(r->p[1])) < 0 || (l = hexval(r->p[2])) < 0 ||
			    0)
				return -EBADMSG;
			c = (unsigned char)(h << 4 | l);
			r->p += 3;
		} else if (plain(c) || c == '-') {
			r->p++;
		} else {
			return -EBADMSG;       /* control bytes, spaces in a row, 8-bit bytes */
		}
		/* decoded control bytes too: the text may reach a log line or a terminal */
		if (c < 0x20 || c == 0x7f || o + 1 >= len)
			return -EBADMSG;
		out[o++] = (char)c;
	}
	out[o] = 0;
	if (o == 1 && *b == '-')
		out[0] = 0;                    /* the empty string */
	if (r->p < r->end) {
		r->p++;                        /* the one space */
		if (r->p == r->end)
			return -EBADMSG;       /* a trailing space */
	}
	return 0;
}

static int get_i64(struct in *r, int64_t lo, int64_t hi, int64_t *ret)
{
	char buf[24], *end;
	long long v;

	if (get_field(r, buf, sizeof(buf)) < 0 || !*buf)
		return -EBADMSG;
	if (!(buf[0] == '-' && buf[1] >= '0' && buf[1] <= '9') && !(buf[0] >= '0' && buf[0] <= '9'))
		return -EBADMSG;
	errno = 0;
	v = strtoll(buf, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -EBADMSG;
	*ret = v;
	return 0;
}

static int get_u64(struct in *r, uint64_t *ret)
{
	char buf[24], *end;
	unsigned long long v;

	if (get_field(r, buf, sizeof(buf)) < 0 || !(buf[0] >= '0' && buf[0] <= '9'))
		return -EBADMSG;
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (errno || *end)
		return -EBADMSG;
	*ret = v;
	return 0;
}

static int start(struct in *r, const char *line, size_t len, char tag)
{
	char t[2];

	r->p = line;
	r->end = line + len;
	if (!len || len >= FLEET_LINE_MAX || memchr(line, 0, len))
		return -EBADMSG;
	if (get_field(r, t, sizeof(t)) < 0 || t[0] != tag)
		return -EBADMSG;
	return 0;
}

/* ---- requests ---------------------------------------------------------------- */

int fleet_proto_format_request(const struct fleet_request *q, char *buf, size_t len)
{
	struct out w = { buf, len, 0, false };

	if (len)
		buf[0] = 0;
	put_field(&w, "Q");
	put_num(&w, "%" PRIu32, q->seq);
	put_field(&w, fleet_verb_name(q->verb));
	for (unsigned i = 0; i < q->nr_args && i < FLEET_ARGS_MAX; i++)
		put_field(&w, q->args[i]);
	return finish(&w);
}

int fleet_proto_parse_request(const char *line, size_t len, struct fleet_request *q)
{
	char verb[16];
	struct in r;
	int64_t seq;
	unsigned want_lo, want_hi;

	memset(q, 0, sizeof(*q));
	if (start(&r, line, len, 'Q') < 0 || get_i64(&r, 0, UINT32_MAX, &seq) < 0 ||
	    get_field(&r, verb, sizeof(verb)) < 0)
		return -EBADMSG;
	q->seq = (uint32_t)seq;
	for (unsigned v = 1; v < ARRAY_SIZE(verbs); v++)
		if (verbs[v] && !strcmp(verb, verbs[v]))
			q->verb = (enum fleet_verb)v;
	switch (q->verb) {
	case FLEET_V_NONE: return -EBADMSG;
	case FLEET_V_OPEN: want_lo = 1; want_hi = FLEET_ARGS_MAX; break;
	case FLEET_V_RESUME: case FLEET_V_RELEASE_HOST: want_lo = want_hi = 1; break;
	case FLEET_V_FAILED: want_lo = want_hi = 2; break;
	default: want_lo = want_hi = 0; break;
	}
	for (;;) {
		int k;
		if (q->nr_args >= FLEET_ARGS_MAX) {
			if (r.p < r.end)
				return -EBADMSG;
			break;
		}
		k = get_field(&r, q->args[q->nr_args], sizeof(q->args[0]));
		if (k == -ENOENT)
			break;
		if (k < 0)
			return -EBADMSG;
		q->nr_args++;
	}
	if (q->nr_args < want_lo || q->nr_args > want_hi)
		return -EBADMSG;
	return 0;
}

/* ---- replies ----------------------------------------------------------------- */

int fleet_proto_format_reply(const struct fleet_reply *p, char *buf, size_t len)
{
	struct out w = { buf, len, 0, false };

	if (len)
		buf[0] = 0;
	put_field(&w, "R");
	put_num(&w, "%" PRIu32, p->seq);
	put_num(&w, "%d", p->rc);
	put_num(&w, "%d", (int)p->state);
	put_num(&w, "%" PRIu64, p->errors);
	put_field(&w, p->id);
	put_field(&w, p->token);
	put_field(&w, p->msg);
	if (p->has_status) {
		put_num(&w, "%u", p->st.max_concurrent);
		put_num(&w, "%u", p->st.nr_holders);
		for (unsigned i = 0; i < p->st.nr_holders && i < FLEET_MAX_SLOTS; i++) {
			const struct fleet_holder *h = &p->st.holders[i];
			put_num(&w, "%d", h->slot);
			put_num(&w, "%" PRId64, h->lease);
			put_num(&w, "%" PRId64, h->ttl);
			put_num(&w, "%" PRId64, h->mod_revision);
			put_field(&w, h->id);
		}
	}
	return finish(&w);
}

int fleet_proto_parse_reply(const char *line, size_t len, struct fleet_reply *p)
{
	struct in r;
	int64_t v;
	int k;

	memset(p, 0, sizeof(*p));
	if (start(&r, line, len, 'R') < 0 || get_i64(&r, 0, UINT32_MAX, &v) < 0)
		return -EBADMSG;
	p->seq = (uint32_t)v;
	/* 1, 0 or an errno */
	if (get_i64(&r, -4095, 1, &v) < 0)
		return -EBADMSG;
	p->rc = (int)v;
	if (get_i64(&r, 0, FLEET_ST_MAX, &v) < 0)
		return -EBADMSG;
	p->state = (enum fleet_state)v;
	if (get_u64(&r, &p->errors) < 0 ||
	    get_field(&r, p->id, sizeof(p->id)) < 0 ||
	    get_field(&r, p->token, sizeof(p->token)) < 0 ||
	    get_field(&r, p->msg, sizeof(p->msg)) < 0)
		return -EBADMSG;
	k = r.p < r.end;
	if (!k)
		return 0;
	p->has_status = true;
	if (get_i64(&r, 1, FLEET_MAX_SLOTS, &v) < 0)
		return -EBADMSG;
	p->st.max_concurrent = (unsigned)v;
	if (get_i64(&r, 0, FLEET_MAX_SLOTS, &v) < 0)
		return -EBADMSG;
	p->st.nr_holders = (unsigned)v;
	for (unsigned i = 0; i < p->st.nr_holders; i++) {
		struct fleet_holder *h = &p->st.holders[i];
		if (get_i64(&r, -1, 1000000, &v) < 0)
			return -EBADMSG;
		h->slot = (int)v;
		if (get_i64(&r, INT64_MIN, INT64_MAX, &h->lease) < 0 ||
		    get_i64(&r, -1, INT64_MAX, &h->ttl) < 0 ||
		    get_i64(&r, INT64_MIN, INT64_MAX, &h->mod_revision) < 0 ||
		    get_field(&r, h->id, sizeof(h->id)) < 0)
			return -EBADMSG;
		if (h->slot >= (int)p->st.max_concurrent)
			p->st.nr_stray++;
	}
	if (r.p < r.end)
		return -EBADMSG;
	return 0;
}

/* ---- pure helpers: identities, back-off, spread, state names -------------- */

size_t fleet_holder_machine_len(const char *holder)
{
	const char *s = strchr(holder, FLEET_ID_SEP);

	return s ? (size_t)(s - holder) : strlen(holder);
}

int64_t fleet_backoff_ms(unsigned attempt, int64_t base_ms, int64_t cap_ms, uint64_t rnd)
{
	int64_t d = base_ms > 0 ? base_ms : 1;
	int64_t half;

	if (cap_ms < d)
		cap_ms = d;
	for (unsigned i = 0; i < attempt && d < cap_ms; i++)
		d = d > cap_ms / 2 ? cap_ms : d * 2;
	if (d > cap_ms)
		d = cap_ms;
	half = d / 2;
	return half + (int64_t)(rnd % (uint64_t)(d - half + 1));
}

int64_t fleet_spread_start(int64_t now, int64_t start, int64_t end, uint64_t rnd)
{
	int64_t from = now > start ? now : start;
	int64_t span;

	if (end <= from)
		return 0;
	span = (end - from) / 2;
	if (span <= 0)
		return from;
	return from + (int64_t)(rnd % (uint64_t)span);
}

const char *fleet_state_name(enum fleet_state s)
{
	switch (s) {
	case FLEET_ST_DISABLED: return "disabled";
	case FLEET_ST_IDLE: return "idle";
	case FLEET_ST_WAITING: return "waiting";
	case FLEET_ST_HELD: return "held";
	case FLEET_ST_ERROR: return "error";
	}
	return "?";
}
