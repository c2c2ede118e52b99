/* SPDX-License-Identifier: GPL-2.0-only */
/* The Prometheus textfile-collector file: numbers about the layout and the
 * boots, never an address. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "image.h"
#include "rerandd.h"

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

static int format_secure(const struct rr_view *v, char *buf, size_t len)
{
	char signer[2 * sizeof(v->signer)];
	int n;

	label(signer, sizeof(signer), v->signer);
	n = snprintf(buf, len,
		"# HELP rerand_secure_boot_info The firmware's Secure Boot state (on, off, unsupported, unknown).\n"
		"# TYPE rerand_secure_boot_info gauge\n"
		"rerand_secure_boot_info{state=\"%s\"} 1\n"
		"# HELP rerand_lockdown_info The kernel's lockdown mode (none, integrity, confidentiality, unknown).\n"
		"# TYPE rerand_lockdown_info gauge\n"
		"rerand_lockdown_info{mode=\"%s\"} 1\n"
		"# HELP rerand_locked_down 1 if only signed images can be staged (kexec_file_load under lockdown).\n"
		"# TYPE rerand_locked_down gauge\n"
		"rerand_locked_down %d\n"
		"# HELP rerand_staged_image_signed 1 if the staged image carries a signature that verifies.\n"
		"# TYPE rerand_staged_image_signed gauge\n"
		"rerand_staged_image_signed %d\n",
		v->secure_boot ? v->secure_boot : "unknown", v->lockdown ? v->lockdown : "unknown",
		v->locked, v->staged && *v->signer);
	if (n < 0 || (size_t)n >= len)
		return -ENOBUFS;
	if (!v->staged)
		return n;
	int m = snprintf(buf + n, len - (size_t)n,
		"# HELP rerand_staged_image_info Where the staged image came from and who signed it.\n"
		"# TYPE rerand_staged_image_info gauge\n"
		"rerand_staged_image_info{source=\"%s\",signer=\"%s\"} 1\n",
		v->image_source ? v->image_source : "built", signer);
	if (m < 0 || (size_t)m >= len - (size_t)n)
		return -ENOBUFS;
	return n + m;
}

/* Who holds logind locks against the due reboot, since when, and the
 * bound: one series per lock, labelled with its holder (the holder's own
 * text, escaped and cut short). */
static int format_inhibitors(const struct rr_view *v, char *buf, size_t len)
{
	int n = snprintf(buf, len,
		"# HELP rerand_inhibited_since_timestamp_seconds Since when logind inhibitors hold a due rerandomization back, 0 if they do not.\n"
		"# TYPE rerand_inhibited_since_timestamp_seconds gauge\n"
		"rerand_inhibited_since_timestamp_seconds %lld\n"
		"# HELP rerand_inhibit_max_seconds MaxInhibitSec=: how long inhibitors may hold a due rerandomization back.\n"
		"# TYPE rerand_inhibit_max_seconds gauge\n"
		"rerand_inhibit_max_seconds %lld\n"
		"# HELP rerand_inhibitors Logind block locks on shutdown at the last look while a rerandomization was due.\n"
		"# TYPE rerand_inhibitors gauge\n"
		"rerand_inhibitors %u\n",
		(long long)v->inhibited_since, (long long)v->max_inhibit,
		v->inhibitors.n + v->inhibitors.more);
	if (n < 0 || (size_t)n >= len)
		return -ENOBUFS;
	if (!v->inhibitors.n)
		return n;
	int s = snprintf(buf + n, len - (size_t)n,
		"# HELP rerand_inhibitor_since_timestamp_seconds When rerandd first saw this logind lock; blocks=1 if it holds the due rerandomization back.\n"
		"# TYPE rerand_inhibitor_since_timestamp_seconds gauge\n");
	if (s < 0 || (size_t)s >= len - (size_t)n)
		return -ENOBUFS;
	n += s;
	for (unsigned i = 0; i < v->inhibitors.n; i++) {
		const struct rr_inhibitor *l = &v->inhibitors.l[i];
		char who[8 * sizeof(l->who)], why[8 * sizeof(l->why)], mode[8 * sizeof(l->mode)];
		char esc[4 * sizeof(l->why)];
		/* escaped first, as the status shows it: valid UTF-8, printable */
		label(who, sizeof(who), rr_escape_str(esc, sizeof(esc), l->who));
		label(why, sizeof(why), rr_escape_str(esc, sizeof(esc), l->why));
		label(mode, sizeof(mode), rr_escape_str(esc, sizeof(esc), l->mode));
		s = snprintf(buf + n, len - (size_t)n,
			     "rerand_inhibitor_since_timestamp_seconds{uid=\"%u\",pid=\"%u\",who=\"%s\","
			     "why=\"%s\",mode=\"%s\",blocks=\"%d\"} %lld\n", l->uid, l->pid, who, why,
			     mode, l->blocks, (long long)l->seen);
		if (s < 0 || (size_t)s >= len - (size_t)n)
			return -ENOBUFS;
		n += s;
	}
	return n;
}

int metrics_format(const struct rr_view *v, char *buf, size_t len)
{
	int n = snprintf(buf, len,
		"# HELP rerand_layout_since_timestamp_seconds When the running kernel's layout was chosen (this boot's start), in Unix seconds: the age is time() minus this.\n"
		"# TYPE rerand_layout_since_timestamp_seconds gauge\n"
		"rerand_layout_since_timestamp_seconds %lld\n"
		"# HELP rerand_layout_age_seconds Deprecated (use time() - rerand_layout_since_timestamp_seconds): the layout's age when this file was written, up to 10 minutes stale.\n"
		"# TYPE rerand_layout_age_seconds gauge\n"
		"rerand_layout_age_seconds %lld\n"
		"# HELP rerand_layout_max_age_seconds MaxLayoutAge=: the layout's age at which a rerandomization is due (before jitter and windows).\n"
		"# TYPE rerand_layout_max_age_seconds gauge\n"
		"rerand_layout_max_age_seconds %lld\n"
		"# HELP rerand_boot_randomized 1 if this boot was verified as randomized by rerand.\n"
		"# TYPE rerand_boot_randomized gauge\n"
		"rerand_boot_randomized %d\n"
		"# HELP rerand_boot_weak 1 if this boot was randomized from the TSC alone (no seed, no RDSEED or RDRAND): not verified.\n"
		"# TYPE rerand_boot_weak gauge\n"
		"rerand_boot_weak %d\n"
		"# HELP rerand_consecutive_failures Rerandomizing reboots that failed in a row.\n"
		"# TYPE rerand_consecutive_failures gauge\n"
		"rerand_consecutive_failures %u\n"
		"# HELP rerand_stopped 1 if rerandd stopped rerandomizing after too many failures.\n"
		"# TYPE rerand_stopped gauge\n"
		"rerand_stopped %d\n"
		"# HELP rerand_hold 1 while an operator hold blocks reboots.\n"
		"# TYPE rerand_hold gauge\n"
		"rerand_hold %d\n"
		"# HELP rerand_staged 1 if a rerandomizing image is staged for the next boot.\n"
		"# TYPE rerand_staged gauge\n"
		"rerand_staged %d\n"
		"# HELP rerand_next_reboot_timestamp_seconds Planned rerandomizing reboot, 0 if none.\n"
		"# TYPE rerand_next_reboot_timestamp_seconds gauge\n"
		"rerand_next_reboot_timestamp_seconds %lld\n"
		"# HELP rerand_reboots_total Rerandomizing reboots by result.\n"
		"# TYPE rerand_reboots_total counter\n"
		"rerand_reboots_total{result=\"success\"} %llu\n"
		"rerand_reboots_total{result=\"weak\"} %llu\n"
		"rerand_reboots_total{result=\"failure\"} %llu\n"
		"# HELP rerand_crash_kernel_loaded 1 if a crash (kdump) kernel is loaded.\n"
		"# TYPE rerand_crash_kernel_loaded gauge\n"
		"rerand_crash_kernel_loaded %d\n"
		"# HELP rerand_crash_kernel_error 1 if the last crash kernel load failed.\n"
		"# TYPE rerand_crash_kernel_error gauge\n"
		"rerand_crash_kernel_error %d\n"
		"# HELP rerand_crash_kernel_loads_total Crash kernel loads by result.\n"
		"# TYPE rerand_crash_kernel_loads_total counter\n"
		"rerand_crash_kernel_loads_total{result=\"success\"} %llu\n"
		"rerand_crash_kernel_loads_total{result=\"failure\"} %llu\n"
		"# HELP rerand_crash_boots_total Boots of a crash kernel (not rerandomizations).\n"
		"# TYPE rerand_crash_boots_total counter\n"
		"rerand_crash_boots_total %llu\n"
		"# HELP rerand_crash_boot 1 if this boot is a crash kernel's.\n"
		"# TYPE rerand_crash_boot gauge\n"
		"rerand_crash_boot %d\n",
		(long long)v->layout_born, (long long)v->layout_age, (long long)v->max_age,
		v->verify == RR_V_RANDOMIZED, v->verify == RR_V_WEAK,
		v->failures, v->stopped, v->hold, v->staged, (long long)v->plan.when,
		(unsigned long long)v->successes, (unsigned long long)v->weak_boots,
		(unsigned long long)v->total_failures,
		v->crash_loaded, v->crash_state == RR_CS_ERROR,
		(unsigned long long)v->crash_loads, (unsigned long long)v->crash_failures,
		(unsigned long long)v->crash_boots, v->crash_boot);
	if (n < 0 || (size_t)n >= len)
		return -ENOBUFS;
	/* no sample at all for a boot rerand did not make: 0 bits would read as
	 * a rerandomization that chose nothing */
	int s = 0;
	if (v->verify == RR_V_RANDOMIZED || v->verify == RR_V_WEAK)
		s = snprintf(buf + n, len - (size_t)n,
			"# HELP rerand_entropy_bits Bits of entropy in this boot's base choice (only for a boot rerand made).\n"
			"# TYPE rerand_entropy_bits gauge\n"
			"rerand_entropy_bits %.1f\n"
			"# HELP rerand_entropy_grade_info Where this boot's randomness came from: hardware (RDRAND or RDSEED), seed (the staging seed and RDTSC only), tsc-only (weak).\n"
			"# TYPE rerand_entropy_grade_info gauge\n"
			"rerand_entropy_grade_info{grade=\"%s\"} 1\n", v->entropy_bits,
			v->entropy_grade && *v->entropy_grade ? v->entropy_grade : "unknown");
	if (s < 0 || (size_t)s >= len - (size_t)n)
		return -ENOBUFS;
	n += s;
	s = snprintf(buf + n, len - (size_t)n,
		"# HELP rerand_build_info rerandd's version.\n"
		"# TYPE rerand_build_info gauge\n"
		"rerand_build_info{version=\"%s\"} 1\n"
		"# HELP rerand_last_success_timestamp_seconds When the last verified rerandomization booted, 0 if never.\n"
		"# TYPE rerand_last_success_timestamp_seconds gauge\n"
		"rerand_last_success_timestamp_seconds %lld\n"
		"# HELP rerand_hold_timestamp_seconds When the operator hold in place was put in place, 0 if none.\n"
		"# TYPE rerand_hold_timestamp_seconds gauge\n"
		"rerand_hold_timestamp_seconds %lld\n",
		RR_VERSION, (long long)v->last_success, (long long)(v->hold ? v->hold_time : 0));
	if (s < 0 || (size_t)s >= len - (size_t)n)
		return -ENOBUFS;
	n += s;
	s = format_secure(v, buf + n, len - (size_t)n);
	if (s < 0)
		return s;
	n += s;
	s = snprintf(buf + n, len - (size_t)n,
		"# HELP rerand_failures_by_cause_total Failed rerandomizing reboots by the cause the next boot named.\n"
		"# TYPE rerand_failures_by_cause_total counter\n");
	if (s < 0 || (size_t)s >= len - (size_t)n)
		return -ENOBUFS;
	n += s;
	for (unsigned c = RR_CAUSE_NONE + 1; c < RR_NR_CAUSES; c++) {
		s = snprintf(buf + n, len - (size_t)n, "rerand_failures_by_cause_total{cause=\"%s\"} %llu\n",
			     wdog_cause_name(c), (unsigned long long)v->causes[c]);
		if (s < 0 || (size_t)s >= len - (size_t)n)
			return -ENOBUFS;
		n += s;
	}
	s = snprintf(buf + n, len - (size_t)n,
		"# HELP rerand_unplanned_boots_total Boots after a reboot rerandd did not ask for (not rerandomizations, not failures).\n"
		"# TYPE rerand_unplanned_boots_total counter\n"
		"rerand_unplanned_boots_total %llu\n"
		"# HELP rerand_confirm_pending 1 while this rerandomized boot waits for its confirmation.\n"
		"# TYPE rerand_confirm_pending gauge\n"
		"rerand_confirm_pending %d\n"
		"# HELP rerand_confirmed_total Rerandomized boots confirmed (boot-complete.target and the post-boot checks).\n"
		"# TYPE rerand_confirmed_total counter\n"
		"rerand_confirmed_total %llu\n",
		(unsigned long long)v->unplanned_boots, v->confirm && !strcmp(v->confirm, "pending"),
		(unsigned long long)v->confirmed);
	if (s < 0 || (size_t)s >= len - (size_t)n)
		return -ENOBUFS;
	n += s;
	s = format_inhibitors(v, buf + n, len - (size_t)n);
	if (s < 0)
		return s;
	n += s;
	/* rerand_fleet_lock_state and rerand_fleet_errors_total, from fleet.c */
	int m = snprintf(buf + n, len - (size_t)n, "%s", v->fleet_metrics);
	if (m < 0 || (size_t)m >= len - (size_t)n)
		return -ENOBUFS;
	return n + m;
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
