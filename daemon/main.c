/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd: keeps a fresh rerandomizing image staged and reboots into it by
 * kexec when policy says so.  This file only wires the sd-event loop: its
 * sources call the core (core.c) and the evaluation (evaluate.c). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "crypto_dl.h"
#include "rerandd.h"
#include "history.h"
#include "image.h"
#include "pesig.h"
#include "sign.h"
#include "status.h"

/* coord finished something: evaluate from the loop, never from inside coord */
static void on_coord_wake(void *ud)
{
	daemon_evaluate_soon(ud);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *ud)
{
	daemon_evaluate(ud);
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
	daemon_save(d);
	daemon_evaluate_soon(d);
	return 0;
}

static int on_boot_change(sd_event_source *s, const struct inotify_event *ev, void *ud)
{
	struct daemon *d = ud;

	if (!ev->len || (strncmp(ev->name, "vmlinuz-", 8) && strncmp(ev->name, "initrd", 6) &&
			 strncmp(ev->name, "initramfs", 9)))
		return 0;
	/* Package scripts write the initrd after the kernel: let them settle. */
	d->new_kernel_at = daemon_mono() + d->cfg.new_kernel_settle;
	d->boot_changed = true;
	crash_request(&d->cr, daemon_mono(), d->cfg.new_kernel_settle);
	daemon_evaluate_soon(d);
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
	d->new_kernel_at = daemon_mono() + d->cfg.new_kernel_settle;
	if (!d->staged)
		d->stage_failed_at = 0;        /* no need to wait for the retry */
	crash_request(&d->cr, daemon_mono(), d->cfg.new_kernel_settle);
	daemon_evaluate_soon(d);
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
	crash_request(&d->cr, daemon_mono(), d->cfg.hotplug_settle);
	daemon_evaluate_soon(d);
	return 0;
}

static void print_errs(const struct rr_cfg_errs *errs)
{
	for (unsigned i = 0; i < errs->n; i++)
		rr_log(RR_LOG_ERR, "%s", errs->msg[i]);
	if (errs->dropped)
		rr_log(RR_LOG_ERR, "... and %u more errors", errs->dropped);
}

/* What --check-config warns about, in the journal at each start and reload. */
static void print_warns(const struct rr_cfg_errs *warns)
{
	for (unsigned i = 0; warns && i < warns->n; i++)
		rr_log(RR_LOG_WARNING, "%s", warns->msg[i]);
}

/* What a reload means for the state machine: a new image (restage), a new
 * crash kernel (recrash), or only what a restart may change (warned). */

/* Keep what only a restart may change, and say so. */
static void reload_keep_fixed(const struct rr_config *o, struct rr_config *c)
{
	char a[RR_PATH + 64], b[RR_PATH + 64];

	for (size_t i = 0; i < rr_cfg_nkeys; i++) {
		const struct rr_cfg_key *k = &rr_cfg_keys[i];

		if (!(k->reload & RR_CFG_RESTART))
			continue;
		config_format_value(o, k, a, sizeof(a));
		config_format_value(c, k, b, sizeof(b));
		if (!strcmp(a, b))
			continue;
		rr_log(RR_LOG_WARNING, "[%s] %s= changes take effect on restart: %s until then",
		       k->section, k->name, a);
		memcpy((char *)c + k->off, (const char *)o + k->off, k->size);
	}
}

static void reload_apply(struct daemon *d, unsigned fx)
{
	coord_reconfigure(&d->co, &d->cfg.fleet, &d->st);
	if (fx & RR_CFG_RESTAGE) {
		/* staged: the old settings' image; staging: finishes, then again */
		d->staged = false;
		d->stage_failed_at = 0;
		d->stage_stale = d->stage_job != NULL;
		/* a sequence that has not asked for the reboot yet would boot
		 * the old settings: it starts again with the new ones */
		if (d->st.phase >= RR_PH_GATE && d->st.phase <= RR_PH_CONFIRM)
			seq_unwind(d, "the configuration changed what is staged");
	}
	if (!(fx & RR_CFG_RECRASH))
		return;
	/* Mode=off leaves a loaded crash kernel alone, ours or not */
	if (!d->crash_boot && d->cfg.crash_mode == RR_CRASH_AUTO)
		d->cr.state = RR_CS_PENDING;
	else
		crash_refresh(&d->cfg, &d->cr);
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *ud)
{
	struct daemon *d = ud;
	_cleanup_free_ struct rr_cfg_errs *errs = calloc(1, sizeof(*errs));
	_cleanup_free_ struct rr_config *c = malloc(sizeof(*c));

	_cleanup_free_ struct rr_cfg_errs *warns = calloc(1, sizeof(*warns));

	sd_notify(0, "RELOADING=1");
	struct rr_cfg_load l = { .main = d->conf_main, .dir = d->conf_dir,
				 .main_required = d->conf_required, .warns = warns };

	if (errs && c && config_load_ex(&l, c, errs) == 0) {
		print_warns(warns);
		unsigned fx = config_reload_effects(&d->cfg, c);
		config_fill_runtime(c);
		bool was_never = policy_never_reboots(&d->cfg);
		reload_keep_fixed(&d->cfg, c);
		d->cfg = *c;
		d->metrics_at = 0;         /* MetricsFile= may have changed */
		rr_log(RR_LOG_INFO, "configuration reloaded");
		if (!was_never && policy_never_reboots(&d->cfg))
			rr_log(RR_LOG_NOTICE, "%s", RR_NO_WINDOW_NOTICE);
		reload_apply(d, fx);
	} else if (errs) {
		print_errs(errs);
		rr_log(RR_LOG_ERR, "configuration has errors: keeping the previous one");
	}
	sd_notify(0, "READY=1");
	daemon_evaluate_soon(d);
	return 0;
}

static void usage(FILE *f)
{
	fputs("Usage: rerandd [--check-config | --dump-config] [--config FILE] [--config-dir DIR]\n"
	      "               [--allow-missing-config] [--debug] [--version]\n"
	      "Keep the kernel at a fresh, secret base; see rerandd(8) and rerand.conf(5).\n"
	      "  --check-config   check the configuration and exit (0 when good, 78 if not)\n"
	      "  --dump-config    print the effective configuration, each value's file:line\n"
	      "  --config FILE    the main file (default " RR_CONF_MAIN "); must exist\n"
	      "  --config-dir DIR the drop-in directory (default " RR_CONF_DROPINS ")\n"
	      "  --allow-missing-config  a missing main file is a warning, not an error:\n"
	      "                   the built-in defaults and the drop-ins (rerandd.service)\n"
	      "  --debug          log debug messages too\n"
	      "  --version        print the version and exit\n", f);
}

/* The command line into d; -1 to go on, else run's exit code. */
static int parse_args(struct daemon *d, int argc, char **argv, bool *check, bool *dump)
{
	static const struct option opts[] = {
		{ "check-config", no_argument, NULL, 'c' },
		{ "dump-config", no_argument, NULL, 'T' },
		{ "version", no_argument, NULL, 'V' },
		{ "config", required_argument, NULL, 'f' },
		{ "config-dir", required_argument, NULL, 'd' },
		{ "allow-missing-config", no_argument, NULL, 'M' },
		{ "debug", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	bool may_be_missing = false;
	int c;

	snprintf(d->conf_main, sizeof(d->conf_main), "%s", RR_CONF_MAIN);
	snprintf(d->conf_dir, sizeof(d->conf_dir), "%s", RR_CONF_DROPINS);
	while ((c = getopt_long(argc, argv, "nhf:d:", opts, NULL)) != -1) {
		switch (c) {
		case 'c': case 'n': *check = true; break;
		case 'T': *dump = true; break;
		case 'V': printf("rerandd %s\n", RR_VERSION); return 0;
		case 'f': snprintf(d->conf_main, sizeof(d->conf_main), "%s", optarg); break;
		case 'M': may_be_missing = true; break;
		case 'd': snprintf(d->conf_dir, sizeof(d->conf_dir), "%s", optarg); break;
		case 'D': rr_log_level = RR_LOG_DEBUG; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return EX_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rerandd: unexpected operand '%s' (rerandd takes options only)\n",
			argv[optind]);
		usage(stderr);
		return EX_USAGE;
	}
	if (*check && *dump) {
		fputs("rerandd: --check-config and --dump-config: choose one\n", stderr);
		return EX_USAGE;
	}
	/* A missing main file is an error: a check of a configuration that is
	 * not there must not say "OK".  The unit passes --allow-missing-config:
	 * an admin who deleted the conffile keeps a rerandd on its defaults and
	 * drop-ins, with a warning, rather than none. */
	d->conf_required = !may_be_missing;
	return -1;
}

/* The configuration, its directories and the state file's path; <0 if the
 * configuration has errors (logged). */
static int load_config(struct daemon *d, struct rr_cfg_errs *errs)
{
	_cleanup_free_ struct rr_cfg_errs *warns = calloc(1, sizeof(*warns));
	struct rr_cfg_load l = { .main = d->conf_main, .dir = d->conf_dir,
				 .main_required = d->conf_required, .warns = warns };
	int r = config_load_ex(&l, &d->cfg, errs);

	if (r < 0) {
		print_errs(errs);
		return r;
	}
	print_warns(warns);
	config_fill_runtime(&d->cfg);
	mkdir(d->cfg.state_dir, 0700);
	mkdir(d->cfg.run_dir, 0755);
	snprintf(d->state_path, sizeof(d->state_path), "%s/state", d->cfg.state_dir);
	state_remove_stale_temps(d->state_path);
	return 0;
}

/* What needs privilege first (/dev/kmsg may need CAP_SYSLOG), then the
 * capability drop, then the boot id; <0 (logged) if rerandd cannot go on. */
static int drop_privileges(struct daemon *d)
{
	struct rr_err e;
	int r;

	/* once per start (and after a reload that makes it so), not at every tick */
	if (policy_never_reboots(&d->cfg))
		rr_log(RR_LOG_NOTICE, "%s", RR_NO_WINDOW_NOTICE);
	if (config_signer_shares_builder(&d->cfg))
		rr_log(RR_LOG_WARNING, "%s", RR_SIGNER_SHARED_NOTICE);
	{
		char note[768];
		int level = wdog_start_note(&d->cfg, note, sizeof(note));
		if (level >= 0)
			rr_log(level, "%s", note);
	}
	d->kmsg_fd = open(d->cfg.kmsg, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (d->kmsg_fd < 0)
		rr_log(RR_LOG_WARNING, "%s: %s; oopses are seen through taint bits only", d->cfg.kmsg,
		       strerror(errno));
	if ((r = caps_drop_daemon(&e)) < 0) {
		rr_log(RR_LOG_ERR, "%s", e.msg);
		return r;
	}
	if ((r = watch_read_boot_id(d->cfg.boot_id, d->boot_id)) < 0) {
		rr_log(RR_LOG_ERR, "%s: cannot read the boot id: %s", d->cfg.boot_id, strerror(-r));
		return r;
	}
	return 0;
}

/* What this boot is: a crash kernel's, or one to account for, with the
 * sequence a restart stopped resumed. */
static void first_look(struct daemon *d)
{
	crash_init(&d->cr);
	confirm_init(d);
	/* a rerandd that stopped without its unload (killed) left it loaded */
	d->loaded_mark = unstage_marker_this_boot(d);
	d->cr.state = d->cfg.crash_mode == RR_CRASH_OFF ? RR_CS_OFF : RR_CS_PENDING;
	if (!boot_crash_check(d)) {
		/* the boot is accounted for first: its verdict decides what happens
		 * to a fleet slot held across the reboot */
		enum rr_resume resume;
		enum rr_outcome out = boot_first_look(d, &resume);
		confirm_first_look(d, out);
		coord_open(&d->co, &d->cfg.fleet, d->state_path);
		coord_startup(&d->co, &d->st, out);
		seq_resume(d, resume);
	}
}

/* SIGTERM, SIGINT: nothing of ours stays loaded unless the system is going
 * down (unstage.c); the loop ends once the unload is done.  A second signal
 * ends it at once. */
static int on_stop(sd_event_source *s, const struct signalfd_siginfo *si, void *ud)
{
	struct daemon *d = ud;

	if (d->unload_then_exit || d->crash_boot || !unstage_on_stop(d))
		return sd_event_exit(d->ev, 0);
	return 0;
}

/* The control socket, the signals and the loop; <0 (logged) on failure. */
static int open_loop(struct daemon *d)
{
	struct rr_err e;
	sigset_t ss;
	int r;

	d->ctl_fd = control_listen(d->cfg.control_socket, &e);
	if (d->ctl_fd < 0) {
		rr_log(RR_LOG_ERR, "%s", e.msg);
		return d->ctl_fd;
	}
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sigaddset(&ss, SIGHUP);
	sigaddset(&ss, SIGCHLD);           /* sd-event's child sources want it blocked */
	sigprocmask(SIG_BLOCK, &ss, NULL);
	if ((r = sd_event_default(&d->ev)) < 0 ||
	    (r = sd_event_add_signal(d->ev, NULL, SIGTERM, on_stop, d)) < 0 ||
	    (r = sd_event_add_signal(d->ev, NULL, SIGINT, on_stop, d)) < 0 ||
	    (r = sd_event_add_signal(d->ev, NULL, SIGHUP, on_sighup, d)) < 0 ||
	    (r = control_serve(d->ev, d->ctl_fd, daemon_on_control, d)) < 0 ||
	    (r = sd_event_set_watchdog(d->ev, true)) < 0) {
		rr_log(RR_LOG_ERR, "sd-event setup: %s", strerror(-r));
		return r;
	}
	/* idle, the looks ride on the pings (evaluate.c, sleep_cap_ms) */
	uint64_t wd_usec;
	if (sd_watchdog_enabled(0, &wd_usec) > 0)
		d->wd_half_ms = (int64_t)(wd_usec / 2000);
	return 0;
}

/* The timer and what rerandd watches (not in a crash boot); <0 (logged)
 * without the timer, the rest only warned about. */
static int add_watches(struct daemon *d)
{
	struct rr_err e;
	int r;

	if ((r = sd_event_add_time(d->ev, &d->timer, CLOCK_MONOTONIC, 0, 0, on_timer, d)) < 0) {
		rr_log(RR_LOG_ERR, "sd-event setup: %s", strerror(-r));
		return r;
	}
	coord_set_wake(&d->co, on_coord_wake, d);
	if (d->kmsg_fd >= 0 && sd_event_add_io(d->ev, NULL, d->kmsg_fd, EPOLLIN, on_kmsg, d) < 0) {
		rr_log(RR_LOG_WARNING, "%s: cannot watch; oopses are seen through taint bits only",
		       d->cfg.kmsg);
		/* the timer then looks at the taint bits every minute */
		close(d->kmsg_fd);
		d->kmsg_fd = -1;
	}
	/* removals too: the image of a removed kernel is unloaded at once */
	if (sd_event_add_inotify(d->ev, NULL, d->cfg.boot_dir,
				 IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM,
				 on_boot_change, d) < 0)
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
	return 0;
}

/* After the loop: a sequence stopped here is unwound by the next start
 * (st.phase); a held slot is not released, its lease outlives the reboot
 * on purpose. */
static void shut_down(struct daemon *d)
{
	sd_notify(0, "STOPPING=1");
	unlink(d->cfg.control_socket);
	seq_cancel(d);
	confirm_stop(d);
	stage_cancel(d->stage_job);
	stage_cancel(d->cr.job);
	if (d->hook_job) {
		stage_cancel(d->hook_job);
		control_reply(d->hook_fd, false, "rerandd is stopping; it builds the image when it "
			      "stages that kernel\n");
		close(d->hook_fd);
	}
	job_cancel(d->unload_job);
	blockers_cancel(d->blockers);
	blockers_cancel(d->due_blk);
	reboot_bus_close();
	coord_close(&d->co);
	sd_event_unref(d->ev);
}

static int run(int argc, char **argv)
{
	/* freed on every return, the early ones too */
	_cleanup_free_ struct daemon *d = calloc(1, sizeof(*d));
	_cleanup_free_ struct rr_cfg_errs *errs = calloc(1, sizeof(*errs));
	bool check = false, dump = false;
	int r;

	if (!d || !errs)
		return 1;
	d->on_restaged = seq_restaged;
	d->hook_fd = -1;
	d->started = time(NULL);
	if ((r = parse_args(d, argc, argv, &check, &dump)) >= 0)
		return r;
	if (check || dump) {
		struct rr_cfg_load l = { .main = d->conf_main, .dir = d->conf_dir,
					 .main_required = d->conf_required };
		return config_cli(&l, dump);
	}
	if (load_config(d, errs) < 0)
		return EX_CONFIG;
	if (drop_privileges(d) < 0)
		return 1;
	free(errs);                /* 48 kB, zeroed: not kept for the daemon's life */
	errs = NULL;
	first_look(d);
	if (open_loop(d) < 0)
		return 1;
	if (d->crash_boot) {
		/* only the control socket: `rerand status` says what this boot is */
		daemon_publish(d);
	} else {
		if (add_watches(d) < 0)
			return 1;
		if (d->kmsg_fd >= 0)
			on_kmsg(NULL, d->kmsg_fd, 0, d);    /* records from before we started */
		confirm_start(d);
		/* stages at once unless none is wanted (keep_staged) */
		daemon_evaluate(d);
	}
	sd_notify(0, "READY=1");
	rr_log(RR_LOG_INFO, "rerandd running: state %s, control %s", d->state_path,
	       d->cfg.control_socket);
	r = sd_event_loop(d->ev);
	shut_down(d);
	return r < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	/* the signature checks' libcrypto, opened by the helper that first
	 * checks one (crypto_dl.h) */
	rr_pesig_use_crypto(&rr_crypto, rr_crypto_load);
	return run(argc, argv);
}
