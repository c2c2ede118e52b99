/* SPDX-License-Identifier: GPL-2.0-only */
/* The Prometheus textfile-collector file: numbers about the layout and the
 * boots, never an address. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "image.h"
#include "rerandd.h"
#include "util.h"

/* A label value: backslash, double quote and newline escaped. */
static void label(char *out, size_t len, const char *s)
{
	size_t o = 0;

	for (; *s && o + 3 < len; s++) {
		if (*s == '\\' || *s == '"') {
			out[o++] = '\\';
			out[o++] = *s;
		} else if (*s == '\n') {
			out[o++] = '\\';
			out[o++] = 'n';
		} else {
			out[o++] = *s;
		}
	}
	out[o] = 0;
}

/* The file as it is written: an append that remembers running out of room. */
struct out {
	char *buf;
	size_t len;
	size_t n;
	bool full;
};

static void __attribute__((format(printf, 2, 3))) outf(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int m;

	if (o->full)
		return;
	va_start(ap, fmt);
	m = vsnprintf(o->buf + o->n, o->len - o->n, fmt, ap);
	va_end(ap);
	if (m < 0 || (size_t)m >= o->len - o->n)
		o->full = true;
	else
		o->n += (size_t)m;
}

/* The samples of a metric with labels or a value that is not an integer. */
typedef void (*samples_fn)(const struct rr_view *v, struct out *o, const char *name);

static void reboots(const struct rr_view *v, struct out *o, const char *name)
{
	outf(o, "%s{result=\"success\"} %llu\n", name, (unsigned long long)v->successes);
	outf(o, "%s{result=\"weak\"} %llu\n", name, (unsigned long long)v->weak_boots);
	outf(o, "%s{result=\"failure\"} %llu\n", name, (unsigned long long)v->total_failures);
}

static void crash_loads(const struct rr_view *v, struct out *o, const char *name)
{
	outf(o, "%s{result=\"success\"} %llu\n", name, (unsigned long long)v->crash_loads);
	outf(o, "%s{result=\"failure\"} %llu\n", name, (unsigned long long)v->crash_failures);
}

static void entropy_bits(const struct rr_view *v, struct out *o, const char *name)
{
	outf(o, "%s %.1f\n", name, v->entropy_bits);
}

static void entropy_grade(const struct rr_view *v, struct out *o, const char *name)
{
	outf(o, "%s{grade=\"%s\"} 1\n", name,
	     v->entropy_grade && *v->entropy_grade ? v->entropy_grade : "unknown");
}

static void build_info(const struct rr_view *v, struct out *o, const char *name)
{
	outf(o, "%s{version=\"%s\"} 1\n", name, RR_VERSION);
}

static void secure_boot(const struct rr_view *v, struct out *o, const char *name)
{
	outf(o, "%s{state=\"%s\"} 1\n", name, v->secure_boot ? v->secure_boot : "unknown");
}

static void lockdown(const struct rr_view *v, struct out *o, const char *name)
{
	outf(o, "%s{mode=\"%s\"} 1\n", name, v->lockdown ? v->lockdown : "unknown");
}

static void image_info(const struct rr_view *v, struct out *o, const char *name)
{
	char signer[2 * sizeof(v->signer)];

	label(signer, sizeof(signer), v->signer);
	outf(o, "%s{source=\"%s\",signer=\"%s\"} 1\n", name,
	     v->image_source ? v->image_source : "built", signer);
}

static void causes(const struct rr_view *v, struct out *o, const char *name)
{
	for (unsigned c = RR_CAUSE_NONE + 1; c < RR_NR_CAUSES; c++)
		outf(o, "%s{cause=\"%s\"} %llu\n", name, wdog_cause_name(c),
		     (unsigned long long)v->causes[c]);
}

/* One series per logind lock, labelled with its holder (the holder's own
 * text, escaped as the status shows it, and cut short). */
static void inhibitors(const struct rr_view *v, struct out *o, const char *name)
{
	for (unsigned i = 0; i < v->inhibitors.n; i++) {
		const struct rr_inhibitor *l = &v->inhibitors.l[i];
		char who[8 * sizeof(l->who)], why[8 * sizeof(l->why)], mode[8 * sizeof(l->mode)];
		char esc[4 * sizeof(l->why)];

		label(who, sizeof(who), rr_escape_str(esc, sizeof(esc), l->who));
		label(why, sizeof(why), rr_escape_str(esc, sizeof(esc), l->why));
		label(mode, sizeof(mode), rr_escape_str(esc, sizeof(esc), l->mode));
		outf(o, "%s{uid=\"%u\",pid=\"%u\",who=\"%s\",why=\"%s\",mode=\"%s\",blocks=\"%d\"} "
		     "%lld\n", name, l->uid, l->pid, who, why, mode, l->blocks, (long long)l->seen);
	}
}

/* When a metric has samples: a boot rerand did not make has no entropy at
 * all (0 bits would read as a rerandomization that chose nothing). */
static bool made_by_rerand(const struct rr_view *v)
{
	return v->verify == RR_V_RANDOMIZED || v->verify == RR_V_WEAK;
}

static bool staged(const struct rr_view *v)
{
	return v->staged;
}

static bool inhibited(const struct rr_view *v)
{
	return v->inhibitors.n;
}

/* The value of a metric that is one integer. */
#define VALUE(fn, expr) \
	static long long fn(const struct rr_view *v) { return (long long)(expr); }
VALUE(layout_since, v->layout_born)
VALUE(layout_age, v->layout_age)
VALUE(max_age, v->max_age)
VALUE(randomized, v->verify == RR_V_RANDOMIZED)
VALUE(weak, v->verify == RR_V_WEAK)
VALUE(failures, v->failures)
VALUE(stopped, v->stopped)
VALUE(hold, v->hold)
VALUE(is_staged, v->staged)
VALUE(next_reboot, v->plan.when)
VALUE(crash_loaded, v->crash_loaded)
VALUE(crash_error, v->crash_state == RR_CS_ERROR)
VALUE(crash_boots, v->crash_boots)
VALUE(crash_boot, v->crash_boot)
VALUE(last_success, v->last_success)
VALUE(hold_since, v->hold ? v->hold_time : 0)
VALUE(locked, v->locked)
VALUE(signed_image, v->staged && *v->signer)
VALUE(unplanned, v->unplanned_boots)
VALUE(confirm_pending, v->confirm && !strcmp(v->confirm, "pending"))
VALUE(confirmed, v->confirmed)
VALUE(inhibited_since, v->inhibited_since)
VALUE(max_inhibit, v->max_inhibit)
VALUE(nr_inhibitors, v->inhibitors.n + v->inhibitors.more)
#undef VALUE

/* Every metric rerandd writes, in the order of the file: its name, type and
 * help; one integer (value) or the samples it has (samples); when (NULL:
 * always).  A new metric is one row here. */
static const struct metric {
	const char *name, *type, *help;
	long long (*value)(const struct rr_view *v);
	samples_fn samples;
	bool (*when)(const struct rr_view *v);
} metrics[] = {
#define G(name, fn, help)          { name, "gauge", help, fn, NULL, NULL }
#define C(name, fn, help)          { name, "counter", help, fn, NULL, NULL }
#define S(name, type, fn, help)    { name, type, help, NULL, fn, NULL }
	G("rerand_layout_since_timestamp_seconds", layout_since, "When the running kernel's layout was chosen (this boot's start), in Unix seconds: the age is time() minus this."),
	G("rerand_layout_age_seconds", layout_age, "Deprecated (use time() - rerand_layout_since_timestamp_seconds): the layout's age when this file was written, up to 10 minutes stale."),
	G("rerand_layout_max_age_seconds", max_age, "MaxLayoutAge=: the layout's age at which a rerandomization is due (before jitter and windows)."),
	G("rerand_boot_randomized", randomized, "1 if this boot was verified as randomized by rerand."),
	G("rerand_boot_weak", weak, "1 if this boot was randomized from the TSC alone (no seed, no RDSEED or RDRAND): not verified."),
	G("rerand_consecutive_failures", failures, "Rerandomizing reboots that failed in a row."),
	G("rerand_stopped", stopped, "1 if rerandd stopped rerandomizing after too many failures."),
	G("rerand_hold", hold, "1 while an operator hold blocks reboots."),
	G("rerand_staged", is_staged, "1 if a rerandomizing image is staged for the next boot."),
	G("rerand_next_reboot_timestamp_seconds", next_reboot, "Planned rerandomizing reboot, 0 if none."),
	S("rerand_reboots_total", "counter", reboots, "Rerandomizing reboots by result."),
	G("rerand_crash_kernel_loaded", crash_loaded, "1 if a crash (kdump) kernel is loaded."),
	G("rerand_crash_kernel_error", crash_error, "1 if the last crash kernel load failed."),
	S("rerand_crash_kernel_loads_total", "counter", crash_loads, "Crash kernel loads by result."),
	C("rerand_crash_boots_total", crash_boots, "Boots of a crash kernel (not rerandomizations)."),
	G("rerand_crash_boot", crash_boot, "1 if this boot is a crash kernel's."),
	{ "rerand_entropy_bits", "gauge", "Bits of entropy in this boot's base choice (only for a boot rerand made).", NULL, entropy_bits, made_by_rerand },
	{ "rerand_entropy_grade_info", "gauge", "Where this boot's randomness came from: hardware (RDRAND or RDSEED), seed (the staging seed and RDTSC only), tsc-only (weak).", NULL, entropy_grade, made_by_rerand },
	S("rerand_build_info", "gauge", build_info, "rerandd's version."),
	G("rerand_last_success_timestamp_seconds", last_success, "When the last verified rerandomization booted, 0 if never."),
	G("rerand_hold_timestamp_seconds", hold_since, "When the operator hold in place was put in place, 0 if none."),
	S("rerand_secure_boot_info", "gauge", secure_boot, "The firmware's Secure Boot state (on, off, unsupported, unknown)."),
	S("rerand_lockdown_info", "gauge", lockdown, "The kernel's lockdown mode (none, integrity, confidentiality, unknown)."),
	G("rerand_locked_down", locked, "1 if only signed images can be staged (kexec_file_load under lockdown)."),
	G("rerand_staged_image_signed", signed_image, "1 if the staged image carries a signature that verifies."),
	{ "rerand_staged_image_info", "gauge", "Where the staged image came from and who signed it.", NULL, image_info, staged },
	S("rerand_failures_by_cause_total", "counter", causes, "Failed rerandomizing reboots by the cause the next boot named."),
	C("rerand_unplanned_boots_total", unplanned, "Boots after a reboot rerandd did not ask for (not rerandomizations, not failures)."),
	G("rerand_confirm_pending", confirm_pending, "1 while this rerandomized boot waits for its confirmation."),
	C("rerand_confirmed_total", confirmed, "Rerandomized boots confirmed (boot-complete.target and the post-boot checks)."),
	G("rerand_inhibited_since_timestamp_seconds", inhibited_since, "Since when logind inhibitors hold a due rerandomization back, 0 if they do not."),
	G("rerand_inhibit_max_seconds", max_inhibit, "MaxInhibitSec=: how long inhibitors may hold a due rerandomization back."),
	G("rerand_inhibitors", nr_inhibitors, "Logind block locks on shutdown at the last look while a rerandomization was due."),
	{ "rerand_inhibitor_since_timestamp_seconds", "gauge", "When rerandd first saw this logind lock; blocks=1 if it holds the due rerandomization back.", NULL, inhibitors, inhibited },
#undef S
#undef C
#undef G
};

int metrics_format(const struct rr_view *v, char *buf, size_t len)
{
	struct out o = { .buf = buf, .len = len };

	if (!len)
		return -ENOBUFS;
	buf[0] = 0;
	for (size_t i = 0; i < ARRAY_SIZE(metrics); i++) {
		const struct metric *m = &metrics[i];

		if (m->when && !m->when(v))
			continue;
		outf(&o, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name, m->type);
		if (m->value)
			outf(&o, "%s %lld\n", m->name, m->value(v));
		else
			m->samples(v, &o, m->name);
	}
	/* rerand_fleet_lock_state and rerand_fleet_errors_total, from fleet.c */
	outf(&o, "%s", v->fleet_metrics);
	return o.full ? -ENOBUFS : (int)o.n;
}

/* Said once, not at each write: a missing directory (the default is
 * prometheus-node-exporter's, absent until that package is installed) is
 * not an error of rerandd's; nor is one made read-only by the unit's
 * ProtectSystem=strict because it appeared after rerandd started. */
static int metrics_dir_state;   /* 0 fine, else the errno already said */

static int metrics_dir_problem(const char *path, int err)
{
	char dir[RR_PATH];
	const char *slash = strrchr(path, '/');

	if (err != ENOENT && err != EROFS)
		return 0;
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
	if (!*dir)
		snprintf(dir, sizeof(dir), "/");
	if (metrics_dir_state != err)
		rr_log(RR_LOG_NOTICE, err == ENOENT ?
		       "MetricsFile=%s: no directory %s (prometheus-node-exporter not installed?): "
		       "no metrics written until it exists" :
		       "MetricsFile=%s: %s is read-only to rerandd (made after rerandd started? "
		       "restart rerandd so that its unit's ReadWritePaths= takes it in): no metrics "
		       "written", path, dir);
	metrics_dir_state = err;
	return 1;
}

int metrics_write(const char *path, const struct rr_view *v, struct rr_err *e)
{
	char buf[32768];
	int n, r;

	if (!*path)
		return 0;
	n = metrics_format(v, buf, sizeof(buf));
	if (n < 0)
		return rr_errf(e, -n, "%s: metrics do not fit", path);
	/* node_exporter must never read half a file: a temporary file
	 * (PATH.tmpXXXXXX, which its *.prom glob skips) renamed into place */
	r = rr_write_file_atomic(path, (const uint8_t *)buf, (size_t)n, e);
	if (r < 0 && metrics_dir_problem(path, -r))
		return 0;
	if (r == 0 && metrics_dir_state) {
		rr_log(RR_LOG_NOTICE, "MetricsFile=%s: written again", path);
		metrics_dir_state = 0;
	}
	return r;
}
