/* SPDX-License-Identifier: GPL-2.0-only */
/* struct daemon, rerandd's own state, and the files that drive it: main.c
 * (the loop), evaluate.c, core.c, boot.c, confirm.c and sequence.c.
 * A part of rerandd.h, which includes it after the types it uses:
 * include rerandd.h, not this file. */
#ifndef RERANDD_DAEMON_H
#define RERANDD_DAEMON_H

/* ---- main.c and sequence.c: the daemon ---------------------------------- */
/* confirm.c: the confirmation of a rerandomized boot */
struct rr_confirm {
	int wd_fd;                     /* the watchdog, fed until confirmed; -1 */
	bool had_wd;
	int64_t feed_sec;
	const char *stage;             /* what it waits for (static) */
	bool failing;                  /* failed: going back through the firmware */
	sd_event_source *feed, *poll, *deadline;
	struct sd_bus_slot *slot;
	struct rr_hooks *hooks;
	struct rr_request *request;
};

struct daemon {
	bool conf_required;            /* the main file must exist: unless
					* --allow-missing-config */
	time_t started;                /* for the status's uptime */
	char conf_main[RR_PATH], conf_dir[RR_PATH];
	char blocked_why[512];          /* last blocker reason logged */
	struct rr_config cfg;
	struct rr_state st;             /* st.phase: where the reboot sequence is */
	char state_path[RR_PATH + 16];
	sd_event *ev;
	sd_event_source *timer;
	int kmsg_fd, ctl_fd;
	char boot_id[RR_BOOT_ID];
	time_t boot_time;              /* wall clock, for display */
	time_t born_mono;              /* the same instant on daemon_mono()'s clock */
	enum rr_verify verify;
	double entropy_bits;
	const char *entropy_grade;           /* rr_status_grade() of this boot, "" none */
	struct rr_stage_plan plan;
	bool staged;
	time_t stage_failed_at;
	char stage_error[RR_ERR_MAX];
	time_t staged_mono;            /* when the image staged now was staged */
	time_t new_kernel_at;          /* settle deadline after a /boot change */
	bool   boot_changed;           /* a kernel file in /boot changed: settling (new_kernel_at set) */
	time_t pkg_wait_since;         /* a new kernel waits for dpkg since */
	time_t restage_at;             /* the reboot's fresh stage waits (dpkg) until */
	time_t restage_pkg_since;      /* ... for dpkg since */
	time_t rebooting_since;
	struct rr_policy_out out;
	struct rr_coord co;            /* the fleet lock; off with Backend=none */
	struct rr_crash cr;            /* the rerandomizing crash kernel */
	bool have_status;              /* this boot has a stage status record */
	uint32_t status_flags;         /* its RERAND_ST_* flags */
	bool crash_boot;               /* this boot is a crash kernel's: idle */
	/* what runs on the loop right now (at most one of each) */
	struct rr_stage_job *stage_job;
	/* the kernel hook's build (control "build KERNEL"), answered on
	 * hook_fd once the image is cached or refused */
	struct rr_stage_job *hook_job;
	int hook_fd;
	char hook_kernel[RR_PATH];
	bool stage_new_kernel;         /* ... for a new kernel: trig_new_kernel once loaded */
	bool stage_stale;              /* ... with settings a reload replaced */
	/* The deadlines below, *_at and *_since, are daemon_mono() seconds. */
	struct rr_blockers *blockers;
	bool blk_done, blk_blocked;    /* their last answer, not yet used */
	char blk_why[512];
	/* logind inhibitors at the last look while a reboot was due (evaluate.c) */
	struct rr_inhibitors inh;
	time_t inh_since;              /* a due reboot held back by them since; 0 none */
	char inh_said[256];            /* the last override or ignore logged */
	/* `rerand due`'s own look at the same blockers (evaluate.c): kured asks
	 * while rerandd itself has no reboot planned, so nothing else does */
	struct rr_blockers *due_blk;
	time_t due_blk_at;             /* when they last answered; 0 = never */
	bool due_blk_blocked;
	char due_blk_why[512];
	struct rr_hooks *hooks;
	struct rr_request *request;
	char save_error[RR_ERR_MAX];   /* the last failed state save */
	char seq_error[RR_ERR_MAX];    /* why the last reboot was cancelled */
	time_t seq_cancelled_at;       /* ... for an unwritable state; 0 = none */
	struct rr_confirm cf;
	/* unstage.c: no image while none is wanted */
	struct rr_job *unload_job;     /* `kexec -s -u` running */
	struct rr_job *oneshot_job;    /* grub-editenv unset next_entry (oneshot.c) */
	char unstaged_why[256];        /* why nothing of ours is staged; "" */
	bool unstaged_by_policy;       /* ... because unstage_unwanted() says so */
	bool loaded_mark;              /* <state>/loaded names this boot */
	bool restage_not_new;          /* the next new-kernel stage follows a removal */
	bool unload_then_exit;         /* stopping: the loop ends once unloaded */
	time_t unload_failed_at;
	/* what daemon_publish last wrote and said, so that an idle tick
	 * rewrites and notifies nothing (issue 28: idle CPU) */
	char *metrics_last;            /* the file as written, the age zeroed */
	size_t metrics_last_len;
	time_t metrics_at;             /* when written; 0 = write at the next publish */
	char status_last[256];         /* the last STATUS= sent */
	int64_t wd_half_ms;            /* half of WatchdogSec= (WATCHDOG_USEC), 0 = none */
	/* a staging job finished (r: 0, or <0); main.c sets seq_restaged, so
	 * core.c does not call up into the sequence */
	void (*on_restaged)(struct daemon *d, int r);
};

#define DAEMON_STAGE_RETRY 300     /* seconds between attempts after a stage failure */

/* core.c: what the sequence, the confirmation and the evaluation use */
/* CLOCK_BOOTTIME in whole seconds (never 0): every duration within this boot
 * counts on it (issue 39), so that a step of the wall clock (NTP,
 * settimeofday) neither ends a wait early nor makes it longer.  The wall
 * clock is only for windows, what is kept across reboots, and display. */
time_t daemon_mono(void);
/* A daemon_mono() instant on the wall clock, for display. */
time_t daemon_mono_to_wall(time_t mono);
/* When this boot's layout was born, in the wall clock of now: now less the
 * layout's age as daemon_mono() measures it. */
time_t daemon_layout_born(const struct daemon *d, time_t now);
/* 0, or <0 with the reason logged and in d->save_error. */
int daemon_save(struct daemon *d);
void daemon_publish(struct daemon *d);
void daemon_evaluate_soon(struct daemon *d);
/* Stage p (NULL: plan it now) as a job; 0 once started, <0 (the stage
 * error is set) if it could not start. */
int daemon_stage(struct daemon *d, const struct rr_stage_plan *p, bool new_kernel);
/* A kernel appeared in /boot: stage it unless it is the staged one (or
 * wait for its package's image). */
void daemon_stage_new_kernel(struct daemon *d);

/* evaluate.c: the timer's work */
/* In idle: staging, the crash kernel, policy, maybe seq_begin; in a
 * sequence: seq_step.  Then the status, and the timer set again. */
void daemon_evaluate(struct daemon *d);
/* `rerand due`'s answer into out; "pending: ..." while it asks the
 * blockers (the client asks again). */
void daemon_format_due(struct daemon *d, char *out, size_t size);

/* boot.c: at start-up, what this boot is */
/* The state loaded, a stopped sequence looked at (*resume), the boot
 * accounted (unless our reboot may still come), the jitter drawn. */
enum rr_outcome boot_first_look(struct daemon *d, enum rr_resume *resume);
/* A crash kernel's boot: counted, and rerandd stays idle.  True if so. */
bool boot_crash_check(struct daemon *d);

/* confirm.c */
void confirm_init(struct daemon *d);
/* After the attempt is recorded, before the request: the watchdog armed
 * for KexecWatchdogSec= and left running (st.watchdog_armed). */
void confirm_arm_for_kexec(struct daemon *d);
/* The reboot did not go: stop the watchdog armed for it. */
void confirm_disarm(struct daemon *d);
/* At start-up, after boot_first_look: the cause of a failed attempt named
 * (state, journal), a rerandomized boot marked for confirmation. */
void confirm_first_look(struct daemon *d, enum rr_outcome out);
/* On the loop: take the watchdog over, wait for boot-complete.target and
 * the post-boot checks until ConfirmTimeoutSec= from the boot's start. */
void confirm_start(struct daemon *d);
/* A confirmation runs or failed: no new rerandomization meanwhile. */
bool confirm_busy(const struct daemon *d);
void confirm_stop(struct daemon *d);

/* unstage.c: a staged image only while a rerandomization is wanted */
/* Why none should be staged now (a hold, MaxFailures, a failed
 * confirmation) into why; false (why "") when one is wanted. */
bool unstage_unwanted(const struct daemon *d, char *why, size_t len);
enum { RR_KERNEL_REPLACED = 1, RR_KERNEL_GONE = 2 };
/* The staged kernel file or its initrd is gone (RR_KERNEL_GONE) or another
 * file (RR_KERNEL_REPLACED), why said; 0 if not, or nothing is staged. */
int unstage_kernel_changed(const struct daemon *d, char *why, size_t len);
/* Unload the staged image as a job (`kexec -s -u`), why kept for the status;
 * d->staged is false from now on.  <0 if the job could not start. */
int daemon_unstage(struct daemon *d, const char *why);
/* The boot loader's next entry is none rerand can stage (why): unload what
 * is staged, stage nothing, say why in the status. */
void daemon_loader_refuses(struct daemon *d, const char *why);
/* An image of ours was loaded: <state>/loaded names this boot. */
void unstage_mark_loaded(struct daemon *d);
/* <state>/loaded names this boot: what the kernel holds may be ours. */
bool unstage_marker_this_boot(const struct daemon *d);
/* shutdown.c, SIGTERM: 1 if an unload was started (the loop ends when it is done), 0
 * if the loop can end now (nothing of ours loaded, our own reboot under
 * way, or the system shutting down: the image stays for that reboot). */
int unstage_on_stop(struct daemon *d);

/* commands.c: a control socket command (control_serve's callback): 0
 * answered, 1 the connection is kept and answered later. */
int daemon_on_control(void *ud, enum rr_ctl_cmd cmd, const char *arg, int cfd);

/* sequence.c: the reboot sequence, one step per phase (rr_phase) */
/* Policy says reboot and nothing blocks: idle -> gate. */
void seq_begin(struct daemon *d);
/* Every evaluation outside idle: the step of the current phase. */
void seq_step(struct daemon *d, time_t now);
/* The staging job of the restage phase finished. */
void seq_restaged(struct daemon *d, int r);
/* A restart found this phase in the state file (state_resume). */
void seq_resume(struct daemon *d, enum rr_resume how);
/* Stop whatever runs, give the slot back, idle. */
void seq_unwind(struct daemon *d, const char *why);
/* The jobs of the sequence, at exit. */
void seq_cancel(struct daemon *d);

#endif
