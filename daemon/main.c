/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd: keeps a fresh rerandomizing image staged and reboots into it by
 * kexec when policy says so; an sd-event loop around the other modules. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include "rerandd.h"
#include "image.h"
#include "status.h"

#define STAGE_RETRY 300            /* seconds between attempts after a stage failure */
#define REBOOT_GRACE 300           /* an accepted reboot that never came is a failure */

struct daemon {
	char conf_main[RR_PATH], conf_dir[RR_PATH];
	char blocked_why[512];          /* last blocker reason logged */
	struct rr_config cfg;
	struct rr_state st;
	char state_path[RR_PATH + 16];
	sd_event *ev;
	sd_event_source *timer;
	int kmsg_fd, ctl_fd;
	char boot_id[RR_BOOT_ID];
	time_t boot_time;
	enum rr_verify verify;
	double entropy_bits;
	struct rr_stage_plan plan;
	bool staged;
	time_t stage_failed_at;
	char stage_error[RR_ERR_MAX];
	time_t new_kernel_at;          /* settle deadline after a /boot change */
	time_t pkg_wait_since;         /* a new kernel waits for dpkg since */
	time_t rebooting_since;
	struct rr_policy_out out;
	struct rr_coord co;            /* the fleet lock; off with Backend=none */
	struct rr_crash cr;            /* the rerandomizing crash kernel */
	bool have_status;              /* this boot has a stage status record */
	uint32_t status_flags;         /* its RERAND_ST_* flags */
	bool crash_boot;               /* this boot is a crash kernel's: idle */
	bool confirming;               /* staged and hooked: waiting for the fleet's confirm */
};

static void save_state(struct daemon *d)
{
	struct rr_err e;

	if (state_save(d->state_path, &d->st, &e) < 0)
		rr_log(RR_LOG_ERR, "%s", e.msg);
}

static void read_verify(struct daemon *d)
{
	struct rerand_status s;
	struct rr_err e;
	int r = rr_status_read(d->cfg.setup_data, &s, &e);

	d->entropy_bits = 0;
	d->have_status = r == 0;
	d->status_flags = r == 0 ? s.flags : 0;
	d->verify = state_verify_record(r, &s);
	if (r < 0 && r != -ENOENT)
		rr_log(RR_LOG_WARNING, "%s", e.msg);
	if (r == 0)
		d->entropy_bits = (s.phys_slots ? log2((double)s.phys_slots) : 0) +
				  (s.virt_slots ? log2((double)s.virt_slots) : 0);
}

static void set_stage_error(struct daemon *d, const char *msg)
{
	if (strcmp(d->stage_error, msg))
		rr_log(RR_LOG_ERR, "staging failed: %s", msg);
	snprintf(d->stage_error, sizeof(d->stage_error), "%s", msg);
}

/* Plan (unless given), build into the cache, load with a fresh seed. */
static int stage(struct daemon *d, const struct rr_stage_plan *given)
{
	struct rr_stage_plan p;
	struct rr_err e;
	int r;

	if (given)
		p = *given;
	else if ((r = stage_plan(&d->cfg, NULL, &p, &e)) < 0)
		goto fail;
	if ((r = stage_build(&d->cfg, &p, &e)) < 0 || (r = stage_load(&d->cfg, &p, &e)) < 0)
		goto fail;
	d->plan = p;
	d->staged = true;
	d->stage_error[0] = 0;
	d->stage_failed_at = 0;
	snprintf(d->st.staged_sha, sizeof(d->st.staged_sha), "%s", p.sha);
	d->st.staged_time = time(NULL);
	stage_prune(&d->cfg, p.sha, d->cr.sha);
	save_state(d);
	if (*p.signer)
		rr_log(RR_LOG_INFO, "staged %s (kernel sha256 %.16s), %s image %s signed by \"%s\"",
		       p.kernel, p.sha, stage_source_name(p.source), p.image, p.signer);
	else
		rr_log(RR_LOG_INFO, "staged %s (kernel sha256 %.16s)", p.kernel, p.sha);
	return 0;
fail:
	d->stage_failed_at = time(NULL);
	set_stage_error(d, e.msg);
	return r;
}

static void check_new_kernel(struct daemon *d)
{
	struct rr_stage_plan p;
	struct rr_err e;
	char newest[RR_PATH];
	const char *target = NULL;
	int64_t wait;

	d->new_kernel_at = 0;
	/* The package's hook is building the new kernel's image, or dpkg has
	 * yet to run it: stage from its image once it is there rather than
	 * build a second one meanwhile. */
	wait = kernels_new_wait(&d->cfg, rr_dpkg_locks, time(NULL), &d->pkg_wait_since);
	if (wait > 0) {
		d->new_kernel_at = time(NULL) + wait;
		return;
	}
	/* Booted by systemd-boot: its entry, not the newest file in /boot. */
	if (!*d->cfg.kernel && !bootloader_selected(&d->cfg)) {
		if (stage_newest_kernel(d->cfg.boot_dir, newest, sizeof(newest)) < 0)
			return;
		target = newest;
	}
	if (stage_plan(&d->cfg, target, &p, &e) < 0) {
		set_stage_error(d, e.msg);
		return;
	}
	if (!strcmp(p.sha, d->st.staged_sha))
		return;
	rr_log(RR_LOG_NOTICE, "new kernel %s (sha256 %.16s)", p.kernel, p.sha);
	if (stage(d, &p) == 0) {
		d->st.trig_new_kernel = true;
		save_state(d);
	}
}

static void check_taint(struct daemon *d)
{
	uint64_t t, fresh;

	if (watch_read_taint(d->cfg.tainted, &t) < 0)
		return;
	fresh = t & (RR_TAINT_DIE | RR_TAINT_WARN) & ~d->st.taint_handled;
	if (!fresh)
		return;
	d->st.taint_handled |= fresh;
	d->st.trig_oops = true;
	rr_log(RR_LOG_WARNING, "kernel taint shows a new %s: the layout may have leaked",
	       fresh & RR_TAINT_DIE ? "oops (TAINT_DIE)" : "warning (TAINT_WARN)");
	save_state(d);
}

static void fill_view(struct daemon *d, struct rr_view *v)
{
	memset(v, 0, sizeof(*v));
	v->now = time(NULL);
	v->layout_age = v->now - d->boot_time;
	v->verify = d->verify;
	v->entropy_bits = d->entropy_bits;
	v->failures = d->st.failures;
	v->max_failures = d->cfg.max_failures;
	v->stopped = policy_stopped(&d->cfg, d->st.failures);
	v->hold = d->st.hold;
	v->staged = d->staged;
	v->plan = d->out;
	v->successes = d->st.successes;
	v->total_failures = d->st.total_failures;
	v->weak_boots = d->st.weak_boots;
	v->last_success = d->st.last_success;
	v->last_failure = d->st.last_failure;
	v->last_verify_time = d->st.last_verify_time;
	v->staged_time = d->st.staged_time;
	snprintf(v->kernel, sizeof(v->kernel), "%s", d->plan.kernel);
	snprintf(v->image_sha, sizeof(v->image_sha), "%s", d->plan.sha);
	snprintf(v->stage_error, sizeof(v->stage_error), "%s", d->stage_error);
	stage_view_secure(&d->cfg, d->staged ? &d->plan : NULL, v);
	coord_view(&d->co, v);
	v->crash_mode = d->cfg.crash_mode == RR_CRASH_OFF ? "off" : "auto";
	v->crash_state = d->cr.state;
	v->crash_loaded = d->cr.loaded;
	v->crash_ours = d->cr.ours;
	v->crash_reserved = d->cr.reserved;
	v->crash_loads = d->cr.loads;
	v->crash_failures = d->cr.failures;
	v->crash_loaded_at = d->cr.loaded_at;
	snprintf(v->crash_kernel, sizeof(v->crash_kernel), "%s", d->cr.kernel);
	snprintf(v->crash_error, sizeof(v->crash_error), "%s", d->cr.error);
	v->crash_boot = d->crash_boot;
	v->crash_boots = d->st.crash_boots;
}

static void publish(struct daemon *d)
{
	struct rr_view v;
	struct rr_err e;

	crash_refresh(&d->cfg, &d->cr);
	fill_view(d, &v);
	if (metrics_write(d->cfg.metrics_file, &v, &e) < 0)
		rr_log(RR_LOG_WARNING, "%s", e.msg);
	if (d->crash_boot) {
		sd_notify(0, "STATUS=crash kernel boot: idle");
		return;
	}
	sd_notifyf(0, "STATUS=%s; next: %s (%s)%s", state_verify_name(v.verify),
		   policy_action_name(v.plan.action), policy_reason_name(v.plan.reason),
		   v.stopped ? "; STOPPED after repeated failures" : "");
}

static void do_reboot(struct daemon *d)
{
	struct rr_err e;

	/* At most MaxConcurrent hosts of the group past this point at once; with
	 * the backend unreachable nobody is (fail closed). */
	int r;

	if (coord_gate(&d->co, &d->cfg, &d->st, d->out.reason) != 1)
		return;
	if (!d->confirming) {
		rr_log(RR_LOG_NOTICE, "rerandomizing reboot (%s)", policy_reason_name(d->out.reason));
		/* A fresh seed just before the reboot: the staged one has sat in
		 * memory since the last restage. */
		if (stage(d, &d->plan) < 0) {
			coord_abort(&d->co);
			return;
		}
		publish(d);                 /* hooks see this tick's status and metrics */
		if (reboot_run_hooks(d->cfg.pre_reboot_dir, d->cfg.hook_timeout, &e) < 0) {
			rr_log(RR_LOG_ERR, "%s; not rebooting now", e.msg);
			coord_abort(&d->co);
			return;
		}
		d->confirming = true;
	}
	/* the fleet helper's answer wakes the next evaluation (coord_set_wake) */
	r = coord_confirm(&d->co);
	if (r == COORD_PENDING)
		return;
	d->confirming = false;
	if (r != 1) {
		coord_abort(&d->co);
		return;
	}
	state_record_attempt(&d->st, d->out.reason, time(NULL));
	d->st.trig_now = false;
	save_state(d);              /* the attempt must be on disk before we go */
	publish(d);
	if (reboot_kexec(&d->cfg, &e) < 0) {
		rr_log(RR_LOG_ERR, "reboot failed: %s", e.msg);
		state_record_failed_reboot(&d->st, time(NULL));
		save_state(d);
		coord_abort(&d->co);
		return;
	}
	d->rebooting_since = time(NULL);
}

static void evaluate(struct daemon *d)
{
	struct rr_policy_in in = { 0 };
	time_t now = time(NULL);
	int64_t next_ms, fleet_ms;

	if (d->rebooting_since) {
		/* the lease must outlive the shutdown */
		coord_keepalive(&d->co);
		if (now - d->rebooting_since < REBOOT_GRACE)
			goto rearm;
		rr_log(RR_LOG_ERR, "the reboot was accepted but never happened");
		d->rebooting_since = 0;
		state_record_failed_reboot(&d->st, now);
		save_state(d);
		coord_abort(&d->co);
	}
	coord_service(&d->co, &d->cfg, &d->st);
	check_taint(d);
	if (d->new_kernel_at && now >= d->new_kernel_at)
		check_new_kernel(d);
	if ((!d->staged && (!d->stage_failed_at || now - d->stage_failed_at >= STAGE_RETRY)) ||
	    (d->staged && now - d->st.staged_time >= d->cfg.restage_interval))
		stage(d, d->staged ? &d->plan : NULL);
	/* after a new kernel was staged: the crash kernel follows it */
	if (crash_due(&d->cfg, &d->cr, now))
		crash_reload(&d->cfg, &d->cr, d->staged ? &d->plan : NULL, now);

	in.now = now;
	in.layout_born = d->boot_time;
	in.jitter = d->st.jitter > 0 ? d->st.jitter : 0;
	in.last_reboot = d->st.last_reboot;
	in.last_failure = d->st.last_failure;
	in.failures = d->st.failures;
	in.oops = d->st.trig_oops;
	in.new_kernel = d->st.trig_new_kernel;
	in.now_requested = d->st.trig_now;
	in.weak = d->verify == RR_V_WEAK;
	in.hold = d->st.hold;
	in.staged = d->staged;
	policy_decide(&d->cfg, &in, &d->out);
	if (d->out.action == RR_ACT_REBOOT) {
		char who[256] = "", why[sizeof(d->blocked_why)] = "";
		/* The expensive blockers are asked only when a reboot is due. */
		in.inhibited = d->cfg.honor_inhibitors && reboot_inhibited(who, sizeof(who)) > 0;
		if (in.inhibited)
			snprintf(why, sizeof(why), "reboot blocked by a logind inhibitor: %s", who);
		in.command_blocks = !in.inhibited &&
				    reboot_command_blocks(&d->cfg, why, sizeof(why)) > 0;
		/* Say so when the reason changes, not at every tick. */
		if (*why && strcmp(why, d->blocked_why))
			rr_log(RR_LOG_NOTICE, "%s", why);
		snprintf(d->blocked_why, sizeof(d->blocked_why), "%s", why);
		policy_decide(&d->cfg, &in, &d->out);
	}
	if (d->out.action == RR_ACT_REBOOT)
		do_reboot(d);
	else {
		d->confirming = false;
		coord_not_due(&d->co);
	}
	publish(d);
rearm:
	next_ms = d->cfg.tick * 1000;
	if (d->out.action == RR_ACT_WAIT && d->out.when > now && d->out.when - now < d->cfg.tick)
		next_ms = (int64_t)(d->out.when - now) * 1000;
	if (d->new_kernel_at > now && (int64_t)(d->new_kernel_at - now) * 1000 < next_ms)
		next_ms = (int64_t)(d->new_kernel_at - now) * 1000;
	time_t crash_at = crash_next(&d->cfg, &d->cr);
	if (crash_at && (crash_at <= now || (int64_t)(crash_at - now) * 1000 < next_ms))
		next_ms = crash_at <= now ? 0 : (int64_t)(crash_at - now) * 1000;
	/* retries, the spread start and keepalives are in milliseconds */
	fleet_ms = coord_next_ms(&d->co);
	if (fleet_ms) {
		fleet_ms -= coord_now_ms();
		if (fleet_ms < next_ms)
			next_ms = fleet_ms;
	}
	if (next_ms < 10)
		next_ms = 10;
	uint64_t usec;
	sd_event_now(d->ev, CLOCK_MONOTONIC, &usec);
	sd_event_source_set_time(d->timer, usec + (uint64_t)next_ms * 1000ull);
	sd_event_source_set_enabled(d->timer, SD_EVENT_ONESHOT);
}

static void evaluate_soon(struct daemon *d)
{
	uint64_t usec;

	if (!d->timer)
		return;                    /* a crash boot: nothing to evaluate */
	sd_event_now(d->ev, CLOCK_MONOTONIC, &usec);
	sd_event_source_set_time(d->timer, usec);
	sd_event_source_set_enabled(d->timer, SD_EVENT_ONESHOT);
}

/* coord's wake callback: a fleet reply or outage; evaluate on the next turn */
static void on_coord_wake(void *ud)
{
	evaluate_soon(ud);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *ud)
{
	evaluate(ud);
	return 0;
}

static int on_kmsg(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	struct daemon *d = ud;
	enum rr_kmsg_kind k = watch_kmsg_drain(fd);

	if (k == RR_KMSG_NONE || d->st.trig_oops)
		return 0;
	/* The record itself is never logged: an oops is full of addresses. */
	rr_log(RR_LOG_WARNING, "the kernel logged a%s: the layout may have leaked",
	       k == RR_KMSG_OOPS ? "n oops" : k == RR_KMSG_BUG ? " BUG" : " WARNING");
	d->st.trig_oops = true;
	save_state(d);
	evaluate_soon(d);
	return 0;
}

static int on_boot_change(sd_event_source *s, const struct inotify_event *ev, void *ud)
{
	struct daemon *d = ud;

	if (!ev->len || (strncmp(ev->name, "vmlinuz-", 8) && strncmp(ev->name, "initrd", 6) &&
			 strncmp(ev->name, "initramfs", 9)))
		return 0;
	/* Package scripts write the initrd after the kernel: let them settle. */
	d->new_kernel_at = time(NULL) + d->cfg.new_kernel_settle;
	crash_request(&d->cr, time(NULL), d->cfg.new_kernel_settle);
	evaluate_soon(d);
	return 0;
}

/* A signed image arrived (SignedImageDirectory=): maybe the one a locked-down
 * machine waits for; plan again as for a new kernel. */
static int on_signed_change(sd_event_source *s, const struct inotify_event *ev, void *ud)
{
	struct daemon *d = ud;
	size_t n = ev->len ? strlen(ev->name) : 0;

	if (n < 5 || strcmp(ev->name + n - 4, ".img"))
		return 0;
	d->new_kernel_at = time(NULL) + d->cfg.new_kernel_settle;
	if (!d->staged)
		d->stage_failed_at = 0;        /* no need to wait for the retry */
	crash_request(&d->cr, time(NULL), d->cfg.new_kernel_settle);
	evaluate_soon(d);
	return 0;
}

static int on_uevent(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	struct daemon *d = ud;
	enum rr_hotplug k = crash_uevent_drain(&d->cr);

	if (k == RR_HP_NONE || d->cfg.crash_mode == RR_CRASH_OFF)
		return 0;
	/* the crash memory map and CPU count are fixed when it is loaded */
	rr_log(RR_LOG_INFO, "%s hotplug: reloading the crash kernel once it settles",
	       k == RR_HP_MEMORY ? "memory" : "CPU");
	crash_request(&d->cr, time(NULL), d->cfg.hotplug_settle);
	evaluate_soon(d);
	return 0;
}

static int on_control(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	struct daemon *d = ud;
	enum rr_ctl_cmd cmd;
	struct rr_view v;
	char body[16384], arg[FLEET_ID_MAX];
	int cfd;

	if (control_accept(fd, &cmd, arg, sizeof(arg), &cfd) < 0)
		return 0;
	switch (cmd) {
	case RR_CTL_STATUS:
	case RR_CTL_STATUS_JSON:
		fill_view(d, &v);
		if ((cmd == RR_CTL_STATUS ? control_format_text(&v, body, sizeof(body))
					  : control_format_json(&v, body, sizeof(body))) < 0)
			snprintf(body, sizeof(body), "status too long\n");
		control_reply(cfd, true, body);
		break;
	case RR_CTL_NOW:
		if (d->crash_boot) {
			control_reply(cfd, false, "this is a crash kernel boot: rerandd does not "
				      "rerandomize from it\n");
			break;
		}
		d->st.trig_now = true;
		save_state(d);
		rr_log(RR_LOG_NOTICE, "rerandomization requested over the control socket");
		control_reply(cfd, true, d->st.hold ? "requested, but a hold is in place\n"
						    : "requested\n");
		evaluate_soon(d);
		break;
	case RR_CTL_HOLD:
	case RR_CTL_RELEASE:
		d->st.hold = cmd == RR_CTL_HOLD;
		save_state(d);
		rr_log(RR_LOG_NOTICE, "operator %s", d->st.hold ? "hold" : "release");
		control_reply(cfd, true, d->st.hold ? "held\n" : "released\n");
		evaluate_soon(d);
		break;
	case RR_CTL_FLEET_STATUS:
	case RR_CTL_FLEET_STATUS_JSON:
		control_reply(cfd, coord_status(&d->co, cmd == RR_CTL_FLEET_STATUS_JSON, body,
						sizeof(body)) == 0, body);
		break;
	case RR_CTL_FLEET_RELEASE:
		control_reply(cfd, coord_release_host(&d->co, arg, body, sizeof(body)) == 0, body);
		evaluate_soon(d);
		break;
	default:
		control_reply(cfd, false, "unknown command (status [json], now, hold, release, "
			      "fleet status [json], fleet release HOST)\n");
	}
	close(cfd);
	return 0;
}

static void print_errs(const struct rr_cfg_errs *errs)
{
	for (unsigned i = 0; i < errs->n; i++)
		rr_log(RR_LOG_ERR, "%s", errs->msg[i]);
	if (errs->dropped)
		rr_log(RR_LOG_ERR, "... and %u more errors", errs->dropped);
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *ud)
{
	struct daemon *d = ud;
	struct rr_cfg_errs *errs = calloc(1, sizeof(*errs));
	struct rr_config *c = malloc(sizeof(*c));

	sd_notify(0, "RELOADING=1");
	if (errs && c && config_load(d->conf_main, d->conf_dir, c, errs) == 0) {
		if (strcmp(c->state_dir, d->cfg.state_dir) || strcmp(c->control_socket, d->cfg.control_socket) ||
		    strcmp(c->run_dir, d->cfg.run_dir) || strcmp(c->kmsg, d->cfg.kmsg))
			rr_log(RR_LOG_WARNING, "directory, socket and kmsg changes take effect on restart");
		bool restage = strcmp(c->kernel, d->cfg.kernel) || strcmp(c->initrd, d->cfg.initrd) ||
			       strcmp(c->cmdline, d->cfg.cmdline) || c->cmdline_set != d->cfg.cmdline_set ||
			       stage_secure_changed(c, &d->cfg);
		bool recrash = restage || c->crash_mode != d->cfg.crash_mode ||
			       strcmp(c->crash_kernel, d->cfg.crash_kernel) ||
			       strcmp(c->crash_initrd, d->cfg.crash_initrd) ||
			       strcmp(c->crash_cmdline, d->cfg.crash_cmdline) ||
			       c->crash_cmdline_set != d->cfg.crash_cmdline_set ||
			       c->crash_file_syscall != d->cfg.crash_file_syscall ||
			       c->crash_file_syscall_set != d->cfg.crash_file_syscall_set ||
			       c->file_syscall != d->cfg.file_syscall ||
			       strcmp(c->kexec_crash_size, d->cfg.kexec_crash_size);
		if (strcmp(c->uevents, d->cfg.uevents))
			rr_log(RR_LOG_WARNING, "Uevents= changes take effect on restart");
		memcpy(c->uevents, d->cfg.uevents, sizeof(c->uevents));
		/* keep what only a restart may change */
		memcpy(c->state_dir, d->cfg.state_dir, sizeof(c->state_dir));
		memcpy(c->run_dir, d->cfg.run_dir, sizeof(c->run_dir));
		memcpy(c->control_socket, d->cfg.control_socket, sizeof(c->control_socket));
		memcpy(c->kmsg, d->cfg.kmsg, sizeof(c->kmsg));
		d->cfg = *c;
		coord_reconfigure(&d->co, &d->cfg.fleet, &d->st);
		rr_log(RR_LOG_INFO, "configuration reloaded");
		if (restage)
			d->staged = false, d->stage_failed_at = 0;
		/* Mode=off leaves a loaded crash kernel alone, ours or not */
		if (recrash && !d->crash_boot && d->cfg.crash_mode == RR_CRASH_AUTO)
			d->cr.state = RR_CS_PENDING;
		else if (recrash)
			crash_refresh(&d->cfg, &d->cr);
	} else if (errs) {
		print_errs(errs);
		rr_log(RR_LOG_ERR, "configuration has errors: keeping the previous one");
	}
	free(errs);
	free(c);
	sd_notify(0, "READY=1");
	evaluate_soon(d);
	return 0;
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

static enum rr_outcome first_look(struct daemon *d)
{
	struct rr_err e;
	time_t now = time(NULL);
	enum rr_outcome out;

	if (state_load(d->state_path, &d->st, &e) < 0)
		rr_log(RR_LOG_WARNING, "%s", e.msg);
	read_verify(d);
	out = state_account_boot(&d->st, d->boot_id, d->verify, now);
	switch (out) {
	case RR_OUT_SUCCESS:
		rr_log(RR_LOG_NOTICE, "rerandomizing reboot verified: this boot is randomized (%.1f bits)",
		       d->entropy_bits);
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
		rr_log(RR_LOG_NOTICE, "booted without rerandd (this boot: %s)",
		       state_verify_name(d->verify));
		break;
	default:
		break;
	}
	if (policy_stopped(&d->cfg, d->st.failures))
		rr_log(RR_LOG_ERR, "ALERT: %u rerandomizing reboots failed in a row; stopped until "
		       "a verified boot or `rerand now`", d->st.failures);
	if (d->st.jitter < 0) {
		uint64_t r = 0;
		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			r = (uint64_t)now * 0x9e3779b97f4a7c15ull;
		d->st.jitter = policy_jitter(d->cfg.jitter, r);
	}
	save_state(d);
	d->boot_time = boot_started(&d->cfg, now);
	return out;
}

/* A crash kernel's boot (kdump): count it, and stay idle.  Staging from
 * here would load a kernel into a machine that is about to be reset after
 * the dump, and a reboot from here would lose the dump. */
static bool crash_boot_check(struct daemon *d)
{
	struct rr_err e;
	struct stat st;
	char *text = NULL;

	read_verify(d);
	if (rr_read_text(d->cfg.proc_cmdline, 1u << 16, &text, NULL) < 0)
		text = NULL;
	d->crash_boot = crash_boot_detect(d->have_status, d->status_flags,
					  stat(d->cfg.proc_vmcore, &st) == 0, text);
	free(text);
	if (!d->crash_boot)
		return false;
	if (state_load(d->state_path, &d->st, &e) < 0)
		rr_log(RR_LOG_WARNING, "%s", e.msg);
	if (state_account_crash_boot(&d->st, d->boot_id, time(NULL)))
		save_state(d);
	d->cr.state = RR_CS_CRASH_BOOT;
	d->boot_time = boot_started(&d->cfg, time(NULL));
	rr_log(RR_LOG_NOTICE, "this is a crash kernel's boot (crash boot %llu): not a rerandomization; "
	       "rerandd stays idle (no staging, no reboots)", (unsigned long long)d->st.crash_boots);
	return true;
}

static void usage(FILE *f)
{
	fputs("Usage: rerandd [--check-config] [--config FILE] [--config-dir DIR] [--debug]\n"
	      "Keep the kernel at a fresh, secret base; see rerandd(8).\n", f);
}

static int run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "check-config", no_argument, NULL, 'c' },
		{ "config", required_argument, NULL, 'f' },
		{ "config-dir", required_argument, NULL, 'd' },
		{ "debug", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct daemon *d = calloc(1, sizeof(*d));
	struct rr_cfg_errs *errs = calloc(1, sizeof(*errs));
	bool check = false;
	struct rr_err e;
	sigset_t ss;
	int c, r;

	if (!d || !errs)
		return 1;
	snprintf(d->conf_main, sizeof(d->conf_main), "%s", RR_CONF_MAIN);
	snprintf(d->conf_dir, sizeof(d->conf_dir), "%s", RR_CONF_DROPINS);
	while ((c = getopt_long(argc, argv, "nhf:d:", opts, NULL)) != -1) {
		switch (c) {
		case 'c': case 'n': check = true; break;
		case 'f': snprintf(d->conf_main, sizeof(d->conf_main), "%s", optarg); break;
		case 'd': snprintf(d->conf_dir, sizeof(d->conf_dir), "%s", optarg); break;
		case 'D': rr_log_level = RR_LOG_DEBUG; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	r = config_load(d->conf_main, d->conf_dir, &d->cfg, errs);
	if (check) {
		/* the values quoted are the file's: escaped for the terminal */
		for (unsigned i = 0; i < errs->n; i++) {
			char esc[4 * sizeof(errs->msg[0])];
			fprintf(stderr, "rerandd: %s\n", rr_escape_str(esc, sizeof(esc), errs->msg[i]));
		}
		if (errs->dropped)
			fprintf(stderr, "rerandd: ... and %u more errors\n", errs->dropped);
		if (!r)
			printf("%s: configuration OK\n", d->conf_main);
		return r ? 1 : 0;
	}
	if (r < 0) {
		print_errs(errs);
		return 1;
	}
	if (!*d->cfg.control_socket)
		snprintf(d->cfg.control_socket, sizeof(d->cfg.control_socket), "%.500s/control",
			 d->cfg.run_dir);
	mkdir(d->cfg.state_dir, 0700);
	mkdir(d->cfg.run_dir, 0755);
	snprintf(d->state_path, sizeof(d->state_path), "%s/state", d->cfg.state_dir);
	state_remove_stale_temps(d->state_path);

	/* Before the capability drop: /dev/kmsg may need CAP_SYSLOG. */
	d->kmsg_fd = open(d->cfg.kmsg, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (d->kmsg_fd < 0)
		rr_log(RR_LOG_WARNING, "%s: %s; oopses are seen through taint bits only", d->cfg.kmsg,
		       strerror(errno));
	if (caps_drop_daemon(&e) < 0) {
		rr_log(RR_LOG_ERR, "%s", e.msg);
		return 1;
	}
	if ((r = watch_read_boot_id(d->cfg.boot_id, d->boot_id)) < 0) {
		rr_log(RR_LOG_ERR, "%s: cannot read the boot id: %s", d->cfg.boot_id, strerror(-r));
		return 1;
	}
	crash_init(&d->cr);
	d->cr.state = d->cfg.crash_mode == RR_CRASH_OFF ? RR_CS_OFF : RR_CS_PENDING;
	if (!crash_boot_check(d)) {
		/* the boot is accounted for first: its verdict decides what happens
		 * to a fleet slot held across the reboot */
		enum rr_outcome out = first_look(d);
		coord_set_wake(&d->co, on_coord_wake, d);
		coord_open(&d->co, &d->cfg.fleet, d->state_path);
		coord_startup(&d->co, &d->st, out);
	}

	d->ctl_fd = control_listen(d->cfg.control_socket, &e);
	if (d->ctl_fd < 0) {
		rr_log(RR_LOG_ERR, "%s", e.msg);
		return 1;
	}
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sigaddset(&ss, SIGHUP);
	sigprocmask(SIG_BLOCK, &ss, NULL);
	if ((r = sd_event_default(&d->ev)) < 0 ||
	    (r = sd_event_add_signal(d->ev, NULL, SIGTERM, NULL, NULL)) < 0 ||
	    (r = sd_event_add_signal(d->ev, NULL, SIGINT, NULL, NULL)) < 0 ||
	    (r = sd_event_add_signal(d->ev, NULL, SIGHUP, on_sighup, d)) < 0 ||
	    (r = sd_event_add_io(d->ev, NULL, d->ctl_fd, EPOLLIN, on_control, d)) < 0 ||
	    (r = sd_event_set_watchdog(d->ev, true)) < 0) {
		rr_log(RR_LOG_ERR, "sd-event setup: %s", strerror(-r));
		return 1;
	}
	if (d->crash_boot) {
		/* only the control socket: `rerand status` says what this boot is */
		publish(d);
		goto loop;
	}
	if ((r = sd_event_add_time(d->ev, &d->timer, CLOCK_MONOTONIC, 0, 0, on_timer, d)) < 0) {
		rr_log(RR_LOG_ERR, "sd-event setup: %s", strerror(-r));
		return 1;
	}
	if (d->kmsg_fd >= 0 && sd_event_add_io(d->ev, NULL, d->kmsg_fd, EPOLLIN, on_kmsg, d) < 0)
		rr_log(RR_LOG_WARNING, "%s: cannot watch", d->cfg.kmsg);
	if (sd_event_add_inotify(d->ev, NULL, d->cfg.boot_dir,
				 IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE, on_boot_change, d) < 0)
		rr_log(RR_LOG_WARNING, "%s: cannot watch for new kernels", d->cfg.boot_dir);
	if (*d->cfg.signed_dir && (mkdir(d->cfg.signed_dir, 0755) == 0 || errno == EEXIST) &&
	    sd_event_add_inotify(d->ev, NULL, d->cfg.signed_dir, IN_CLOSE_WRITE | IN_MOVED_TO,
				 on_signed_change, d) < 0)
		rr_log(RR_LOG_INFO, "%s: cannot watch for signed images; looking every 5 minutes",
		       d->cfg.signed_dir);
	/* opened with Mode=off too: a reload may turn it on */
	if (crash_uevent_open(&d->cfg, &d->cr, &e) < 0 ||
	    sd_event_add_io(d->ev, NULL, d->cr.uevent_fd, EPOLLIN, on_uevent, d) < 0)
		rr_log(RR_LOG_WARNING, "%s; the crash kernel is not reloaded on memory or CPU hotplug",
		       d->cr.uevent_fd < 0 ? e.msg : "cannot watch uevents");

	if (d->kmsg_fd >= 0)
		on_kmsg(NULL, d->kmsg_fd, 0, d);    /* records from before we started */
	stage(d, NULL);
	evaluate(d);
loop:
	sd_notify(0, "READY=1");
	rr_log(RR_LOG_INFO, "rerandd running: state %s, control %s", d->state_path,
	       d->cfg.control_socket);
	r = sd_event_loop(d->ev);
	sd_notify(0, "STOPPING=1");
	unlink(d->cfg.control_socket);
	/* a held slot is not released here: the lease outlives the reboot on purpose */
	coord_close(&d->co);
	sd_event_unref(d->ev);
	free(errs);
	free(d);
	return r < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	return run(argc, argv);
}
