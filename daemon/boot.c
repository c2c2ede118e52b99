/* SPDX-License-Identifier: GPL-2.0-only */
/* What this boot is, once at start-up: the stage's record, the accounting of
 * a pending attempt, where a reboot sequence stopped, or a crash kernel's
 * boot (which rerandd only counts). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "cleanup.h"
#include "rerandd.h"
#include "image.h"
#include "status.h"
#include "history.h"

static void read_verify(struct daemon *d)
{
	struct rerand_status s;
	struct rr_err e;
	int r = rr_status_read(d->cfg.setup_data, &s, &e);

	d->entropy_bits = 0;
	d->entropy_grade = r == 0 ? rr_status_grade(s.sources_used) : "";
	d->have_status = r == 0;
	d->status_flags = r == 0 ? s.flags : 0;
	d->verify = state_verify_record(r, &s);
	if (r < 0 && r != -ENOENT)
		rr_log(RR_LOG_WARNING, "%s", e.msg);
	if (r == 0)
		d->entropy_bits = rr_bits(s.phys_slots) + rr_bits(s.virt_slots);
}

/* When this boot began: /proc/stat's btime (a fixture in tests), else the
 * boot-time clock. */
static time_t boot_started(const struct rr_config *c, time_t now)
{
	struct timespec bt;
	time_t t;

	if (*c->proc_stat && watch_read_btime(c->proc_stat, now, &t) == 0)
		return t;
	clock_gettime(CLOCK_BOOTTIME, &bt);
	return now - bt.tv_sec;
}

enum rr_outcome boot_first_look(struct daemon *d, enum rr_resume *resume)
{
	struct rr_err e;
	time_t now = time(NULL);
	enum rr_outcome out;

	if (state_load(d->state_path, &d->st, &e) < 0)
		rr_log(d->st.hold ? RR_LOG_ERR : RR_LOG_WARNING, "%s", e.msg);
	read_verify(d);
	/* where a sequence of this boot stopped: unwound */
	*resume = state_resume(&d->st, d->boot_id);
	/* the attempt's start and reason, for the history: settling clears it */
	time_t att_time = d->st.attempt_time;
	enum rr_reason att_why = d->st.attempt_reason;
	out = state_account_boot(&d->st, d->boot_id, d->verify, now);
	switch (out) {
	case RR_OUT_SUCCESS:
		rr_log(RR_LOG_NOTICE, "rerandomizing reboot verified: this boot is randomized (%.1f bits%s)",
		       d->entropy_bits, strcmp(d->entropy_grade, "seed") ? "" :
		       "; entropy grade seed: no RDRAND or RDSEED, only the staging seed and RDTSC");
		break;
	case RR_OUT_FAILURE:
		rr_log(RR_LOG_ERR, "rerandomizing reboot failed: this boot is %s (%u in a row)",
		       state_verify_name(d->verify), d->st.failures);
		break;
	case RR_OUT_WEAK:
		rr_log(RR_LOG_ERR, "rerandomizing reboot was weak: the stage drew the bases from the "
		       "TSC alone (no seed, no RDSEED or RDRAND); not verified, counted with the "
		       "failures (%u in a row)", d->st.failures);
		break;
	case RR_OUT_ABORTED:
		rr_log(RR_LOG_WARNING, "a planned reboot did not happen before rerandd restarted");
		break;
	case RR_OUT_UNPLANNED:
		/* systemd 256 and later turn `systemctl reboot` into a kexec of
		 * whatever is loaded, which is rerandd's staged image: such a
		 * boot is randomized without rerandd having asked for it.  It
		 * is not counted as rerandd's; the layout age starts again. */
		if (d->verify == RR_V_RANDOMIZED)
			rr_log(RR_LOG_NOTICE, "booted without rerandd into its staged image: this "
			       "boot is randomized (%.1f bits); a reboot rerandd did not plan, "
			       "not counted", d->entropy_bits);
		else
			rr_log(RR_LOG_NOTICE, "booted without rerandd: this boot is %s, not "
			       "rerand's; a reboot rerandd did not plan, not counted",
			       state_verify_name(d->verify));
		break;
	case RR_OUT_FALLBACK:
		/* said by confirm_first_look, which knows how that reboot went */
		break;
	default:
		break;
	}
	if (policy_stopped(&d->cfg, d->st.failures) && d->st.failures >= STATE_FAILURES_LOST)
		rr_log(RR_LOG_ERR, "ALERT: the failures in a row were lost with the damaged state "
		       "file, counted as %u; stopped until a verified boot or `rerand now`",
		       d->st.failures);
	else if (policy_stopped(&d->cfg, d->st.failures))
		rr_log(RR_LOG_ERR, "ALERT: %u rerandomizing reboots failed in a row; stopped until "
		       "a verified boot or `rerand now`", d->st.failures);
	if (d->st.jitter < 0) {
		uint64_t r = 0;
		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			r = (uint64_t)now * 0x9e3779b97f4a7c15ull;
		d->st.jitter = policy_jitter(d->cfg.jitter, r);
	}
	daemon_save(d);
	d->boot_time = boot_started(&d->cfg, now);
	d->born_mono = daemon_mono() - (time(NULL) - d->boot_time);
	history_boot(d, out, att_time, att_why);
	return out;
}

/* A crash kernel's boot (kdump): count it, and stay idle.  Staging from
 * here would load a kernel into a machine that is about to be reset after
 * the dump, and a reboot from here would lose the dump. */
bool boot_crash_check(struct daemon *d)
{
	struct rr_err e;
	struct stat st;
	_cleanup_free_ char *text = NULL;

	read_verify(d);
	if (rr_read_text(d->cfg.proc_cmdline, 1u << 16, &text, NULL) < 0)
		text = NULL;
	d->crash_boot = crash_boot_detect(d->have_status, d->status_flags,
					  stat(d->cfg.proc_vmcore, &st) == 0, text);
	if (!d->crash_boot)
		return false;
	if (state_load(d->state_path, &d->st, &e) < 0)
		rr_log(d->st.hold ? RR_LOG_ERR : RR_LOG_WARNING, "%s", e.msg);
	if (state_account_crash_boot(&d->st, d->boot_id, time(NULL)))
		daemon_save(d);
	d->cr.state = RR_CS_CRASH_BOOT;
	d->boot_time = boot_started(&d->cfg, time(NULL));
	d->born_mono = daemon_mono() - (time(NULL) - d->boot_time);
	rr_log(RR_LOG_NOTICE, "this is a crash kernel's boot (crash boot %llu): not a rerandomization; "
	       "rerandd stays idle (no staging, no reboots)", (unsigned long long)d->st.crash_boots);
	return true;
}

