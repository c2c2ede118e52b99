/* SPDX-License-Identifier: GPL-2.0-only */
/* The history of rerandomizing reboots (`rerand history [--json]`): one
 * line per reboot rerandd started (or counted as its own), in
 * StateDirectory/history (0700 with the rest of the state: root's only),
 * the newest HISTORY_MAX kept, oldest first.  Each line says when the
 * reboot went out, when the new kernel started, what triggered it, what the
 * new boot's record said, the result as the metrics count it, the
 * confirmation, and the cause a failure was given: words and times only,
 * never an address (the stage's record is not copied, only its verdict).
 *
 * The next boot writes the line (boot.c, once the attempt is settled);
 * the confirmation (confirm.c) fills in its end: confirmed, or failed with
 * the cause, in this boot or, for a boot that hung, in the next one.  The
 * file is rewritten whole, atomically (tmp + rename), at each change: it
 * is small and bounded. */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cleanup.h"
#include "image.h"
#include "jsonout.h"
#include "rerandd.h"
#include "history.h"

#define HISTORY_HEAD "# rerand history 1: one rerandomizing reboot a line, oldest first " \
		     "(rerand history); never an address\n"
#define WORD 24

struct hist {
	long long started, booted, settled;
	char trigger[WORD], verify[WORD], result[WORD], confirm[WORD], cause[WORD];
};

struct hist_file {
	struct hist e[HISTORY_MAX];
	unsigned n;
	unsigned bad;                   /* lines that could not be read */
};

/* A word as this file writes them: lower case, digits and '-' */
static bool word_ok(const char *w)
{
	if (!*w)
		return false;
	for (; *w; w++)
		if (!((*w >= 'a' && *w <= 'z') || (*w >= '0' && *w <= '9') || *w == '-'))
			return false;
	return true;
}

static bool parse_line(const char *l, struct hist *h)
{
	int used = -1;

	memset(h, 0, sizeof(*h));
	if (sscanf(l, "started=%lld booted=%lld settled=%lld trigger=%23s verify=%23s "
		   "result=%23s confirm=%23s cause=%23s%n", &h->started, &h->booted, &h->settled,
		   h->trigger, h->verify, h->result, h->confirm, h->cause, &used) != 8 || used < 0)
		return false;
	if (l[used] && l[used] != '\n')
		return false;
	return h->started > 0 && h->booted >= 0 && h->settled >= 0 && word_ok(h->trigger) &&
	       word_ok(h->verify) && word_ok(h->result) && word_ok(h->confirm) && word_ok(h->cause);
}

/* The file as it is; a missing one is empty.  -errno if it cannot be read. */
static int hist_load(const char *path, struct hist_file *f, struct rr_err *e)
{
	_cleanup_free_ char *text = NULL;
	int r;

	f->n = f->bad = 0;
	r = rr_read_text(path, 1u << 20, &text, e);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	for (char *l = text, *nl; l && *l; l = nl) {
		struct hist h;
		nl = strchr(l, '\n');
		if (nl)
			*nl++ = 0;
		if (*l == '#' || !*l)
			continue;
		if (!parse_line(l, &h)) {
			f->bad++;
			continue;
		}
		if (f->n == HISTORY_MAX) {
			memmove(f->e, f->e + 1, sizeof(f->e[0]) * (HISTORY_MAX - 1));
			f->n--;
		}
		f->e[f->n++] = h;
	}
	return 0;
}

static int hist_save(const char *path, const struct hist_file *f, struct rr_err *e)
{
	char buf[HISTORY_MAX * 192 + sizeof(HISTORY_HEAD)];
	size_t o = 0;
	int n = snprintf(buf, sizeof(buf), "%s", HISTORY_HEAD);

	o = (size_t)n;
	for (unsigned i = 0; i < f->n; i++) {
		const struct hist *h = &f->e[i];
		n = snprintf(buf + o, sizeof(buf) - o, "started=%lld booted=%lld settled=%lld "
			     "trigger=%s verify=%s result=%s confirm=%s cause=%s\n", h->started,
			     h->booted, h->settled, h->trigger, h->verify, h->result, h->confirm,
			     h->cause);
		if (n < 0 || (size_t)n >= sizeof(buf) - o)
			return rr_errf(e, ENOBUFS, "%s: history does not fit", path);
		o += (size_t)n;
	}
	return rr_write_file_atomic(path, (const uint8_t *)buf, o, e);
}

/* A rewrite keeps only the lines it could read: say so, once per rewrite. */
static void say_dropped(const char *path, const struct hist_file *f)
{
	if (f->bad)
		rr_log(RR_LOG_WARNING, "%s: %u line%s could not be read and %s dropped", path, f->bad,
		       f->bad == 1 ? "" : "s", f->bad == 1 ? "is" : "are");
}

static void hist_path(const struct daemon *d, char *out, size_t len)
{
	snprintf(out, len, "%s/" HISTORY_FILE, d->cfg.state_dir);
}

static void word(char *out, const char *w)
{
	snprintf(out, WORD, "%s", w && word_ok(w) ? w : "unknown");
}

void history_boot(struct daemon *d, enum rr_outcome out, time_t started, enum rr_reason why)
{
	static struct hist_file f;      /* 100 lines: not on the stack */
	char path[RR_PATH + 16];
	struct rr_err e;
	struct hist h = { 0 };

	if (out != RR_OUT_SUCCESS && out != RR_OUT_WEAK && out != RR_OUT_FAILURE)
		return;
	hist_path(d, path, sizeof(path));
	if (hist_load(path, &f, &e) < 0) {
		rr_log(RR_LOG_WARNING, "%s; this reboot is not added to the history", e.msg);
		return;
	}
	h.started = started > 0 ? (long long)started : (long long)d->boot_time;
	h.booted = (long long)d->boot_time;
	word(h.trigger, policy_reason_name(why));
	word(h.verify, state_verify_name(d->verify));
	word(h.result, out == RR_OUT_SUCCESS ? "success" : out == RR_OUT_WEAK ? "weak" : "failure");
	/* a randomized boot is good once confirmed (confirm.c); a failed one
	 * has nothing to confirm, and its cause may come next (count_failure) */
	word(h.confirm, out == RR_OUT_FAILURE ? "none" : "pending");
	word(h.cause, "none");
	if (f.n == HISTORY_MAX) {
		memmove(f.e, f.e + 1, sizeof(f.e[0]) * (HISTORY_MAX - 1));
		f.n--;
	}
	f.e[f.n++] = h;
	say_dropped(path, &f);
	if (hist_save(path, &f, &e) < 0)
		rr_log(RR_LOG_WARNING, "%s", e.msg);
}

/* The last line still waiting for its end: a confirmation pending, or a
 * failure without its cause yet.  NULL if there is none (a history that
 * began after that reboot: nothing to make up). */
static struct hist *open_entry(struct hist_file *f, bool for_cause)
{
	struct hist *h;

	if (!f->n)
		return NULL;
	h = &f->e[f->n - 1];
	if (!strcmp(h->confirm, "pending"))
		return h;
	if (for_cause && !strcmp(h->result, "failure") && !strcmp(h->cause, "none"))
		return h;
	return NULL;
}

static void settle(struct daemon *d, bool failed, enum rr_cause c, time_t now)
{
	static struct hist_file f;
	char path[RR_PATH + 16];
	struct rr_err e;
	struct hist *h;

	hist_path(d, path, sizeof(path));
	if (hist_load(path, &f, &e) < 0) {
		rr_log(RR_LOG_WARNING, "%s; the history is not updated", e.msg);
		return;
	}
	h = open_entry(&f, failed);
	if (!h)
		return;
	if (failed) {
		word(h->result, "failure");
		word(h->cause, wdog_cause_name(c));
		if (!strcmp(h->confirm, "pending"))
			word(h->confirm, "failed");
	} else {
		word(h->confirm, "confirmed");
	}
	h->settled = (long long)now;
	say_dropped(path, &f);
	if (hist_save(path, &f, &e) < 0)
		rr_log(RR_LOG_WARNING, "%s", e.msg);
}

void history_confirmed(struct daemon *d, time_t now)
{
	settle(d, false, RR_CAUSE_NONE, now);
}

void history_failed(struct daemon *d, enum rr_cause c, time_t now)
{
	settle(d, true, c, now);
}

/* ---- `rerand history [--json]` ------------------------------------------- */

static void utc(char *out, size_t len, long long t)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (t <= 0 || !gmtime_r(&tt, &tm) || !strftime(out, len, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(out, len, "-");
}

static void span(char *out, size_t len, long long s)
{
	if (s < 0)
		snprintf(out, len, "-");
	else if (s < 600)
		snprintf(out, len, "%llds", s);
	else if (s < 36000)
		snprintf(out, len, "%lldmin", (s + 30) / 60);
	else
		snprintf(out, len, "%lldh", (s + 1800) / 3600);
}

/* Seconds from the reboot's start to its end (confirmed or failed), -1
 * while open. */
static long long duration(const struct hist *h)
{
	return h->settled >= h->started && h->settled ? h->settled - h->started : -1;
}

static int format_text(const struct hist_file *f, const char *path, char *buf, size_t len)
{
	size_t o = 0;
	int n;

	if (!f->n)
		n = snprintf(buf, len, "no rerandomizing reboot on record yet (%s)\n", path);
	else
		n = snprintf(buf, len, "%-19s  %-13s  %-14s  %-7s  %-9s  %-15s  %8s  %8s\n",
			     "STARTED (UTC)", "TRIGGER", "BOOT", "RESULT", "CONFIRM", "CAUSE",
			     "DOWNTIME", "DURATION");
	if (n < 0 || (size_t)n >= len)
		return -ENOBUFS;
	o = (size_t)n;
	for (unsigned i = 0; i < f->n; i++) {
		const struct hist *h = &f->e[i];
		char when[32], down[24], dur[24];
		utc(when, sizeof(when), h->started);
		span(down, sizeof(down), h->booted >= h->started ? h->booted - h->started : -1);
		span(dur, sizeof(dur), duration(h));
		n = snprintf(buf + o, len - o, "%-19s  %-13s  %-14s  %-7s  %-9s  %-15s  %8s  %8s\n",
			     when, h->trigger, h->verify, h->result, h->confirm,
			     strcmp(h->cause, "none") ? h->cause : "-", down, dur);
		if (n < 0 || (size_t)n >= len - o)
			return -ENOBUFS;
		o += (size_t)n;
	}
	if (f->bad) {
		n = snprintf(buf + o, len - o, "%u line%s of %s could not be read (skipped)\n",
			     f->bad, f->bad == 1 ? "" : "s", path);
		if (n < 0 || (size_t)n >= len - o)
			return -ENOBUFS;
		o += (size_t)n;
	}
	return (int)o;
}

static int format_json(const struct hist_file *f, char *buf, size_t len)
{
	struct json_object *root = json_object_new_object(), *a = json_object_new_array();
	int n;

	for (unsigned i = 0; i < f->n; i++) {
		const struct hist *h = &f->e[i];
		struct json_object *o = json_object_new_object();
		long long dur = duration(h);
		json_object_object_add(o, "started", json_object_new_int64(h->started));
		json_object_object_add(o, "booted", json_object_new_int64(h->booted));
		json_object_object_add(o, "settled", h->settled ?
				       json_object_new_int64(h->settled) : NULL);
		json_object_object_add(o, "trigger", json_object_new_string(h->trigger));
		json_object_object_add(o, "verify", json_object_new_string(h->verify));
		json_object_object_add(o, "result", json_object_new_string(h->result));
		json_object_object_add(o, "confirm", json_object_new_string(h->confirm));
		json_object_object_add(o, "cause", strcmp(h->cause, "none") ?
				       json_object_new_string(h->cause) : NULL);
		json_object_object_add(o, "downtime_seconds", h->booted >= h->started ?
				       json_object_new_int64(h->booted - h->started) : NULL);
		json_object_object_add(o, "duration_seconds", dur >= 0 ?
				       json_object_new_int64(dur) : NULL);
		json_object_array_add(a, o);
	}
	json_object_object_add(root, "reboots", a);
	json_object_object_add(root, "max_entries", json_object_new_int(HISTORY_MAX));
	json_object_object_add(root, "skipped_lines", json_object_new_int((int)f->bad));
	n = snprintf(buf, len, "%s\n", json_object_to_json_string_ext(root, RR_JSON_LINE_FLAGS));
	json_object_put(root);
	return n < 0 || (size_t)n >= len ? -ENOBUFS : n;
}

int history_format(const struct daemon *d, bool json, char *buf, size_t len, struct rr_err *e)
{
	static struct hist_file f;
	char path[RR_PATH + 16];
	int r;

	hist_path(d, path, sizeof(path));
	r = hist_load(path, &f, e);
	if (r < 0)
		return r;
	r = json ? format_json(&f, buf, len) : format_text(&f, path, buf, len);
	if (r < 0)
		return rr_errf(e, -r, "%s: the history does not fit the answer", path);
	return r;
}

int history_reply(const struct daemon *d, bool json, int cfd)
{
	static char buf[HISTORY_MAX * 320 + 512];
	struct rr_err e;

	if (history_format(d, json, buf, sizeof(buf), &e) < 0) {
		snprintf(buf, sizeof(buf), "%s\n", e.msg);
		control_reply(cfd, false, buf);
		return 0;
	}
	control_reply(cfd, true, buf);
	return 0;
}
