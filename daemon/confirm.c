/* SPDX-License-Identifier: GPL-2.0-only */
/* A rerandomizing reboot costs no node: the hardware watchdog is armed
 * before the kexec; the new boot is good only once confirmed (systemd's
 * boot-complete.target when systemd is PID 1, then the post-boot checks)
 * within ConfirmTimeoutSec=, and rerandd feeds the watchdog until then.  A
 * boot that fails its checks or is never confirmed goes back through the
 * firmware (kexec unloaded), and the next boot names the cause: the
 * watchdog's boot status, a panic in pstore, or what this boot recorded. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "rerandd.h"
#include "history.h"

#define BOOT_COMPLETE_POLL_SEC 2

/* ---- before the kexec ----------------------------------------------------- */

void confirm_arm_for_kexec(struct daemon *d)
{
	struct rr_err e;
	int fd, stops;

	d->st.watchdog_armed = false;
	if (!wdog_present(&d->cfg))
		return;
	stops = wdog_stops_on_reboot(&d->cfg);
	if (stops == 1)
		rr_log(RR_LOG_WARNING, "%s: this kernel stops the watchdog at the kexec (it was "
		       "booted without watchdog.stop_on_reboot=0): only the shutdown is covered",
		       d->cfg.watchdog_dev);
	if (wdog_open(&d->cfg, d->cfg.kexec_watchdog, &fd, &e) < 0) {
		rr_log(RR_LOG_WARNING, "%s; rebooting without a watchdog across the kexec", e.msg);
		return;
	}
	wdog_leave_running(fd);
	d->st.watchdog_armed = true;
	rr_log(RR_LOG_NOTICE, "%s armed for %llds across the kexec", d->cfg.watchdog_dev,
	       (long long)d->cfg.kexec_watchdog);
}

/* The reboot did not go (its request failed, it never came, or its attempt
 * could not be saved): stop the watchdog armed for it, with the magic close. */
void confirm_disarm(struct daemon *d)
{
	struct rr_err e;
	int fd, r = -1;

	if (!d->st.watchdog_armed)
		return;
	d->st.watchdog_armed = false;
	if (wdog_open(&d->cfg, d->cfg.kexec_watchdog, &fd, &e) == 0 && (r = wdog_stop(fd)) < 0)
		rr_errf(&e, -r, "%s: the magic close failed: %s", d->cfg.watchdog_dev, strerror(-r));
	if (r < 0) {
		rr_log(RR_LOG_ERR, "the reboot did not happen, and the watchdog armed for it could "
		       "not be stopped (%s): it will reset this machine", e.msg);
		return;
	}
	rr_log(RR_LOG_NOTICE, "the reboot did not happen: %s stopped again", d->cfg.watchdog_dev);
}

/* ---- the next boot: what happened to the last one ------------------------ */

static void count_failure(struct daemon *d, enum rr_cause c, const char *detail, time_t now)
{
	state_record_cause(&d->st, c, detail, now);
	history_failed(d, c, now);
	/* the slot taken for this attempt stays in the group (coord.c) */
	if (d->st.fleet_held)
		d->st.fleet_keep = true;
	rr_log(RR_LOG_ERR, "rerandomizing reboot failed: cause %s: %s", wdog_cause_name(c),
	       d->st.last_cause_detail);
}

void confirm_first_look(struct daemon *d, enum rr_outcome out)
{
	time_t now = time(NULL);
	bool wd_reset = false;
	char panic[160], detail[220];
	int pan;

	if (wdog_bootstatus(&d->cfg, &wd_reset) < 0)
		wd_reset = false;
	pan = wdog_pstore_panic(d->cfg.pstore_dir, panic, sizeof(panic));
	if (d->st.confirm_pending && strcmp(d->st.confirm_boot_id, d->boot_id)) {
		/* The rerandomized boot reached rerandd, and neither confirmed nor
		 * named its own failure: it hung, panicked or was reset. */
		enum rr_cause c = wdog_cause(true, wd_reset, pan);
		snprintf(detail, sizeof(detail), "%s",
			 c == RR_CAUSE_PANIC ? panic :
			 c == RR_CAUSE_WATCHDOG ? "the watchdog reset the machine before the "
						  "rerandomized boot was confirmed" :
			 "the rerandomized boot was never confirmed and left no trace");
		d->st.failures++;
		d->st.total_failures++;
		d->st.last_failure = now;
		count_failure(d, c, detail, now);
		d->st.confirm_pending = false;
	} else if (out == RR_OUT_FAILURE && d->verify == RR_V_ABSENT) {
		/* no stage record: the firmware booted this kernel (or a kexec
		 * that was not rerand's) */
		enum rr_cause c = wdog_cause(false, wd_reset, pan);
		snprintf(detail, sizeof(detail), "%s",
			 c == RR_CAUSE_PANIC ? panic :
			 c == RR_CAUSE_WATCHDOG ? "the watchdog reset the machine: the new kernel "
						  "hung before rerandd started" :
			 "no trace: a stage reset (its reason goes to the serial port only), a "
			 "reset that cleared the watchdog status, or a kernel rerand did not stage");
		count_failure(d, c, detail, now);
	} else if (out == RR_OUT_FALLBACK && (wd_reset || pan > 0)) {
		/* The failed boot's own reboot through the firmware did not end
		 * cleanly: its shutdown hung until the watchdog reset the machine,
		 * or it panicked.  Not a second failure; told with the first. */
		size_t l = strlen(d->st.last_cause_detail);
		snprintf(d->st.last_cause_detail + l, sizeof(d->st.last_cause_detail) - l, "%s",
			 wd_reset ? "; then its reboot through the firmware hung and the watchdog "
				    "reset the machine" : "; then its reboot through the firmware panicked");
		rr_log(RR_LOG_ERR, "back through the firmware after the failed rerandomized boot "
		       "(cause %s), but not cleanly: %s", wdog_cause_name(d->st.last_cause),
		       wd_reset ? "its reboot hung and the watchdog reset the machine" : panic);
	} else if (out == RR_OUT_FALLBACK) {
		rr_log(RR_LOG_NOTICE, "back through the firmware after the failed rerandomized boot "
		       "(cause %s)", wdog_cause_name(d->st.last_cause));
	}
	/* a one-shot choice written down for the reboot: taken by the boot
	 * loader if this boot came through the firmware, or never used */
	if (out == RR_OUT_ABORTED)
		oneshot_forget(d, "the reboot did not happen");
	else if (out != RR_OUT_SAME_BOOT && out != RR_OUT_SUCCESS && out != RR_OUT_WEAK)
		oneshot_forget(d, "this boot was not the rerandomized kexec into it (the boot "
			       "loader takes the choice as it boots it)");
	if (out == RR_OUT_SUCCESS || out == RR_OUT_WEAK) {
		d->st.confirm_pending = true;
		snprintf(d->st.confirm_boot_id, sizeof(d->st.confirm_boot_id), "%s", d->boot_id);
	}
	d->st.watchdog_armed = false;
	daemon_save(d);
}

/* ---- the rerandomized boot: confirmation ---------------------------------- */

static void feed_cancel(struct daemon *d)
{
	d->cf.feed = sd_event_source_disable_unref(d->cf.feed);
}

static void confirm_stop_jobs(struct daemon *d)
{
	hooks_cancel(d->cf.hooks);
	d->cf.hooks = NULL;
	d->cf.slot = sd_bus_slot_unref(d->cf.slot);
	d->cf.poll = sd_event_source_disable_unref(d->cf.poll);
	d->cf.deadline = sd_event_source_disable_unref(d->cf.deadline);
}

static void on_firmware(int r, const char *msg, void *ud)
{
	struct daemon *d = ud;

	d->cf.request = NULL;
	if (r < 0) {
		rr_log(RR_LOG_ERR, "the reboot through the firmware failed: %s%s", msg,
		       d->cf.wd_fd >= 0 ? "; the watchdog, no longer fed, will reset the machine" : "");
		if (d->cf.wd_fd < 0)
			coord_confirm_stranded(&d->co);
	}
}

static void confirm_fail(struct daemon *d, enum rr_cause c, const char *detail)
{
	time_t now = time(NULL);
	struct rr_err e;

	confirm_stop_jobs(d);
	d->st.confirm_pending = false;
	d->st.failures++;
	d->st.total_failures++;
	d->st.last_failure = now;
	count_failure(d, c, detail, now);
	/* the next boot is this reboot, not one rerandd did not plan */
	snprintf(d->st.fallback_boot_id, sizeof(d->st.fallback_boot_id), "%s", d->boot_id);
	/* the boot loader takes it at that reboot, as it would have without rerand */
	oneshot_forget(d, "the rerandomized boot into it failed; the reboot through the "
		       "firmware boots it");
	daemon_save(d);
	coord_confirmed(&d->co, false);
	d->cf.failing = true;
	daemon_publish(d);
	/* fed no more: if the reboot below hangs, the watchdog resets the machine */
	feed_cancel(d);
	stage_cancel(d->stage_job);
	d->stage_job = NULL;
	d->staged = false;
	rr_log(RR_LOG_ERR, "rebooting through the firmware (the staged kernel unloaded first)");
	if (reboot_firmware_start(d->ev, &d->cfg, on_firmware, d, &d->cf.request, &e) < 0)
		on_firmware(-1, e.msg, d);
}

static void confirm_done(struct daemon *d)
{
	time_t now = time(NULL);

	confirm_stop_jobs(d);
	feed_cancel(d);
	/* The machine had the watchdog stopped (else PID 1 would hold it and we
	 * could not have opened it): stopped again, with the magic close. */
	if (d->cf.wd_fd >= 0 && wdog_stop(d->cf.wd_fd) < 0)
		rr_log(RR_LOG_WARNING, "%s: the magic close failed: the watchdog may still run",
		       d->cfg.watchdog_dev);
	d->cf.wd_fd = -1;
	d->st.confirm_pending = false;
	d->st.confirmed++;
	daemon_save(d);
	history_confirmed(d, now);
	/* the boot loader's one-shot choice it was staged from is used up */
	oneshot_after_confirm(d);
	/* only now may the fleet slot go back */
	coord_confirmed(&d->co, true);
	rr_log(RR_LOG_NOTICE, "rerandomized boot confirmed %llds after it began%s",
	       (long long)(now - d->boot_time),
	       d->cf.had_wd ? "; the watchdog is handed back (stopped)" : "");
	daemon_evaluate_soon(d);
}

static void on_checks(int r, const char *msg, void *ud)
{
	struct daemon *d = ud;
	char why[RR_ERR_MAX + 32];

	d->cf.hooks = NULL;
	if (r < 0) {
		snprintf(why, sizeof(why), "%s", msg);
		confirm_fail(d, RR_CAUSE_CHECK, why);
		return;
	}
	confirm_done(d);
}

static void run_checks(struct daemon *d)
{
	struct rr_err e;
	int r;

	d->cf.stage = "post-boot checks";
	r = hooks_start(d->ev, d->cfg.post_boot_dir, "post-boot", d->cfg.hook_timeout, on_checks,
			d, &d->cf.hooks, &e);
	if (r < 0)
		confirm_fail(d, RR_CAUSE_CHECK, e.msg);
	else if (r == 0)
		confirm_done(d);
}

static void poll_boot_complete(struct daemon *d);

static int on_poll(sd_event_source *s, uint64_t usec, void *ud)
{
	struct daemon *d = ud;

	d->cf.poll = sd_event_source_disable_unref(d->cf.poll);
	poll_boot_complete(d);
	return 0;
}

static void poll_later(struct daemon *d)
{
	if (sd_event_add_time_relative(d->ev, &d->cf.poll, CLOCK_MONOTONIC,
				       BOOT_COMPLETE_POLL_SEC * 1000000ull, 0, on_poll, d) < 0)
		d->cf.poll = NULL;
}

static int on_active_state(sd_bus_message *m, void *ud, sd_bus_error *ret_error)
{
	struct daemon *d = ud;
	const char *state = NULL;

	d->cf.slot = sd_bus_slot_unref(d->cf.slot);
	if (!sd_bus_message_is_method_error(m, NULL) &&
	    sd_bus_message_enter_container(m, 'v', "s") > 0 &&
	    sd_bus_message_read(m, "s", &state) > 0 && !strcmp(state, "active")) {
		rr_log(RR_LOG_INFO, "boot-complete.target reached");
		run_checks(d);
		return 0;
	}
	poll_later(d);
	return 0;
}

static void poll_boot_complete(struct daemon *d)
{
	sd_bus *bus = reboot_bus(d->ev);

	if (!bus || sd_bus_call_method_async(bus, &d->cf.slot, "org.freedesktop.systemd1",
					     "/org/freedesktop/systemd1/unit/boot_2dcomplete_2etarget",
					     "org.freedesktop.DBus.Properties", "Get",
					     on_active_state, d, "ss", "org.freedesktop.systemd1.Unit",
					     "ActiveState") < 0)
		poll_later(d);             /* the bus may come later in the boot */
}

static int on_feed(sd_event_source *s, uint64_t usec, void *ud)
{
	struct daemon *d = ud;

	int r = d->cf.wd_fd >= 0 ? wdog_feed(d->cf.wd_fd) : 0;

	if (r < 0)
		rr_log(RR_LOG_WARNING, "%s: cannot feed the watchdog: %s", d->cfg.watchdog_dev,
		       strerror(-r));
	sd_event_source_set_time_relative(s, (uint64_t)d->cf.feed_sec * 1000000ull);
	return 0;
}

static int on_deadline(sd_event_source *s, uint64_t usec, void *ud)
{
	struct daemon *d = ud;
	char why[200];

	d->cf.deadline = sd_event_source_disable_unref(d->cf.deadline);
	snprintf(why, sizeof(why), "not confirmed within ConfirmTimeoutSec=%llds (waiting for %s)",
		 (long long)d->cfg.confirm_timeout, d->cf.stage);
	confirm_fail(d, RR_CAUSE_UNCONFIRMED, why);
	return 0;
}

void confirm_init(struct daemon *d)
{
	memset(&d->cf, 0, sizeof(d->cf));
	d->cf.wd_fd = -1;
}

/* ConfirmTimeoutSec= counts from rerandd's start in this boot, not from
 * the kernel's (issue 38): a healthy machine slow to reach rerandd (426-444 s
 * in the project's loaded guest) is not failed for it; until then the
 * watchdog armed before the kexec covers a hang.  A rerandd restarted in a
 * loop cannot postpone the verdict past twice the timeout from the boot's
 * start. */
static time_t confirm_until(const struct daemon *d)
{
	time_t from = d->started > d->boot_time ? d->started : d->boot_time;
	time_t until = from + d->cfg.confirm_timeout;

	if (until > d->boot_time + 2 * d->cfg.confirm_timeout)
		until = d->boot_time + 2 * d->cfg.confirm_timeout;
	return until;
}

void confirm_start(struct daemon *d)
{
	struct rr_err e;
	time_t now = time(NULL), until = confirm_until(d);

	if (!d->st.confirm_pending) {
		/* confirmed, but stopped before the one-shot choice was cleared */
		if (d->st.oneshot != RR_OS_NONE && !d->st.attempt &&
		    d->st.boot_origin == RR_BO_RERANDD)
			oneshot_after_confirm(d);
		return;
	}
	if (wdog_present(&d->cfg)) {
		if (wdog_open(&d->cfg, d->cfg.kexec_watchdog, &d->cf.wd_fd, &e) < 0) {
			rr_log(RR_LOG_WARNING, "%s; confirming without the watchdog", e.msg);
			d->cf.wd_fd = -1;
		} else {
			d->cf.had_wd = true;
			d->cf.feed_sec = d->cfg.kexec_watchdog / 4 > 0 ? d->cfg.kexec_watchdog / 4 : 1;
			if (d->cf.feed_sec > 30)
				d->cf.feed_sec = 30;
			sd_event_add_time_relative(d->ev, &d->cf.feed, CLOCK_MONOTONIC,
						   (uint64_t)d->cf.feed_sec * 1000000ull, 0, on_feed, d);
			sd_event_source_set_enabled(d->cf.feed, SD_EVENT_ON);
		}
	}
	rr_log(RR_LOG_NOTICE, "rerandomized boot: confirming within %llds (rerandd started %llds "
	       "into the boot)%s", (long long)(until > now ? until - now : 0),
	       (long long)(d->started > d->boot_time ? d->started - d->boot_time : 0),
	       d->cf.wd_fd >= 0 ? "; the watchdog is fed until then" : "");
	sd_event_add_time_relative(d->ev, &d->cf.deadline, CLOCK_MONOTONIC,
				   (uint64_t)(until > now ? until - now : 0) * 1000000ull, 0,
				   on_deadline, d);
	if (sd_booted() > 0) {
		d->cf.stage = "boot-complete.target";
		poll_boot_complete(d);
	} else {
		run_checks(d);               /* no systemd: the checks alone */
	}
}

bool confirm_busy(const struct daemon *d)
{
	return d->st.confirm_pending || d->cf.failing;
}

void confirm_stop(struct daemon *d)
{
	/* at exit: a boot still being confirmed keeps its watchdog running
	 * (the next rerandd takes it over, or it resets a hung machine) */
	confirm_stop_jobs(d);
	feed_cancel(d);
	reboot_request_cancel(d->cf.request);
	d->cf.request = NULL;
	oneshot_stop(d);
	if (d->cf.wd_fd >= 0)
		wdog_leave_running(d->cf.wd_fd);
	d->cf.wd_fd = -1;
}

/* ---- a one-shot boot loader choice (oneshot.c) ---------------------------- */

static void oneshot_say(struct daemon *d, int prio, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void oneshot_say(struct daemon *d, int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d->st.oneshot_note, sizeof(d->st.oneshot_note), fmt, ap);
	va_end(ap);
	/* one printable line: it goes into the state file and the status */
	for (char *p = d->st.oneshot_note; *p; p++)
		if (!isprint((unsigned char)*p))
			*p = '?';
	d->st.oneshot_note_time = time(NULL);
	rr_log(prio, "%s", d->st.oneshot_note);
}

void oneshot_note_attempt(struct daemon *d)
{
	struct rr_boot_entry be;
	bool ok = true;

	d->st.oneshot = RR_OS_NONE;
	d->st.oneshot_value[0] = 0;
	/* Kernel= set: rerandd did not follow the boot loader */
	if (*d->cfg.kernel || !d->staged || bootnext_find(&d->cfg, &be, NULL) != 1 ||
	    be.oneshot == RR_OS_NONE || strcmp(be.kernel, d->plan.kernel))
		return;
	for (const char *p = be.oneshot_value; *p; p++)
		ok &= isprint((unsigned char)*p) != 0;
	if (!ok) {
		rr_log(RR_LOG_WARNING, "%s is not printable text: rerandd will not clear it after "
		       "this reboot", oneshot_kind_text(be.oneshot));
		return;
	}
	d->st.oneshot = be.oneshot;
	snprintf(d->st.oneshot_value, sizeof(d->st.oneshot_value), "%s", be.oneshot_value);
	rr_log(RR_LOG_INFO, "the image was staged from %s \"%s\": it is cleared once the "
	       "rerandomized boot is confirmed", oneshot_kind_text(be.oneshot), be.oneshot_value);
}

void oneshot_forget(struct daemon *d, const char *why)
{
	if (d->st.oneshot == RR_OS_NONE)
		return;
	oneshot_say(d, RR_LOG_NOTICE, "%s \"%s\" left to the boot loader: %s",
		    oneshot_kind_text(d->st.oneshot), d->st.oneshot_value, why);
	d->st.oneshot = RR_OS_NONE;
	d->st.oneshot_value[0] = 0;
}

static void on_grub_editenv(int status, const char *out, void *ud)
{
	struct daemon *d = ud;
	char file[RR_PATH + 64], now[RR_ONESHOT_VALUE], value[RR_ONESHOT_VALUE], why[300];
	struct rr_err e;
	int r;

	d->oneshot_job = NULL;
	if (status == -ETIMEDOUT)
		snprintf(why, sizeof(why), "grub-editenv: killed after 30 s");
	else if (status < 0)
		snprintf(why, sizeof(why), "grub-editenv: %s", strerror(-status));
	else
		snprintf(why, sizeof(why), "grub-editenv: exit status %d%s%.200s", status,
			 out && *out ? ": " : "", out ? out : "");
	snprintf(value, sizeof(value), "%s", d->st.oneshot_value);
	oneshot_file(&d->cfg, RR_OS_GRUB, file, sizeof(file));
	/* what the file says now, not only grub-editenv's exit status */
	r = status == 0 ? oneshot_still(&d->cfg, RR_OS_GRUB, value, now, sizeof(now), &e) : -1;
	if (r == 0 && !*now)
		oneshot_say(d, RR_LOG_NOTICE, "GRUB next_entry \"%s\" cleared in %s (grub-editenv "
			    "unset next_entry): the rerandomized boot into it is confirmed", value,
			    file);
	else
		oneshot_say(d, RR_LOG_ERR, "GRUB next_entry \"%s\" could not be cleared in %s (%s): "
			    "the next firmware boot takes it; clear it with `grub-editenv %s unset "
			    "next_entry`", value, file,
			    status ? why : r < 0 ? e.msg : "still set", file);
	d->st.oneshot = RR_OS_NONE;
	d->st.oneshot_value[0] = 0;
	daemon_save(d);
	daemon_publish(d);
	daemon_evaluate_soon(d);
}

void oneshot_after_confirm(struct daemon *d)
{
	enum rr_oneshot_kind k = d->st.oneshot;
	char file[RR_PATH + 64], now[RR_ONESHOT_VALUE], value[RR_ONESHOT_VALUE];
	struct rr_err e;
	int r;

	if (k == RR_OS_NONE || d->oneshot_job)
		return;
	snprintf(value, sizeof(value), "%s", d->st.oneshot_value);
	oneshot_file(&d->cfg, k, file, sizeof(file));
	r = oneshot_still(&d->cfg, k, value, now, sizeof(now), &e);
	if (r < 0) {
		oneshot_say(d, RR_LOG_ERR, "%s \"%s\" could not be checked (%s): not cleared",
			    oneshot_kind_text(k), value, e.msg);
	} else if (r == 0) {
		/* the admin chose again (or cleared it): that choice is theirs */
		if (*now)
			oneshot_say(d, RR_LOG_NOTICE, "%s is \"%s\" now, not \"%s\" as at the reboot: "
				    "left as it is", oneshot_kind_text(k), now, value);
		else
			oneshot_say(d, RR_LOG_NOTICE, "%s \"%s\" was already cleared",
				    oneshot_kind_text(k), value);
	} else if (k == RR_OS_SDBOOT) {
		if (oneshot_delete_efivar(file, &e) < 0)
			oneshot_say(d, RR_LOG_ERR, "systemd-boot LoaderEntryOneShot \"%s\" could not be "
				    "cleared (%s): the next firmware boot takes it; clear it with "
				    "`bootctl set-oneshot ''`", value, e.msg);
		else
			oneshot_say(d, RR_LOG_NOTICE, "systemd-boot LoaderEntryOneShot \"%s\" cleared "
				    "(deleted, as systemd-boot does as it boots it): the rerandomized boot "
				    "into it is confirmed", value);
	} else if (!*d->cfg.grub_editenv) {
		oneshot_say(d, RR_LOG_WARNING, "GRUB next_entry \"%s\" not cleared: GrubEditenv= is "
			    "empty; clear it with `grub-editenv %s unset next_entry`", value, file);
	} else {
		char *argv[] = { d->cfg.grub_editenv, file, (char *)"unset", (char *)"next_entry",
				 NULL };

		r = job_start(d->ev, argv, 30, RR_CHILD_NO_CAPS, true, on_grub_editenv, d,
			      &d->oneshot_job);
		if (r < 0)
			oneshot_say(d, RR_LOG_ERR, "GRUB next_entry \"%s\" could not be cleared (%s: "
				    "%s): the next firmware boot takes it; clear it with `grub-editenv "
				    "%s unset next_entry`", value, d->cfg.grub_editenv, strerror(-r), file);
		else
			return;               /* on_grub_editenv saves */
	}
	d->st.oneshot = RR_OS_NONE;
	d->st.oneshot_value[0] = 0;
	daemon_save(d);
}

void oneshot_stop(struct daemon *d)
{
	/* the choice stays written down: the next start clears it */
	job_cancel(d->oneshot_job);
	d->oneshot_job = NULL;
}
