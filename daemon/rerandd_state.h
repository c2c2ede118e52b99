/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd's state file (state.c): what survives a reboot, the boot's
 * outcome and the sequence's phase.
 * A part of rerandd.h, which includes it after the types it uses:
 * include rerandd.h, not this file. */
#ifndef RERANDD_STATE_H
#define RERANDD_STATE_H

/* ---- state.c ------------------------------------------------------------- */
/* RR_V_WEAK: the stage randomized, but from the TSC alone (RERAND_ST_WEAK:
 * no seed, no RDSEED or RDRAND), so the layout may be guessed: not verified. */
enum rr_verify { RR_V_UNKNOWN = 0, RR_V_RANDOMIZED, RR_V_NOT_RANDOMIZED, RR_V_ABSENT,
		 RR_V_MALFORMED, RR_V_WEAK };
enum rr_outcome { RR_OUT_SAME_BOOT = 0, RR_OUT_UNPLANNED, RR_OUT_ABORTED, RR_OUT_SUCCESS,
		  RR_OUT_FAILURE, RR_OUT_WEAK, RR_OUT_FALLBACK };
/* Whose reboot led to this boot: none rerandd saw before ("first"), one
 * rerandd asked for ("rerandd", counted as a success or a failure), or one
 * it did not (an administrator's reboot, which systemd 256+ turns into a
 * kexec of the staged image; a firmware reboot; systemd's own kexec):
 * never counted, said in the status.  "fallback": the firmware reboot
 * rerandd itself asked for after a rerandomized boot failed its
 * confirmation (confirm.c); that failure is already counted. */
enum rr_boot_origin { RR_BO_FIRST = 0, RR_BO_RERANDD, RR_BO_UNPLANNED, RR_BO_FALLBACK };

/* The reboot sequence (main.c): idle -> gate (fleet slot) -> restage (a
 * fresh seed) -> hooks -> confirm (the slot is still ours) -> reboot (the
 * request is out) -> rebooting (accepted; waiting for the end).  Saved at
 * each step, so a restart resumes or unwinds it (state_resume). */
enum rr_phase { RR_PH_IDLE = 0, RR_PH_GATE, RR_PH_RESTAGE, RR_PH_HOOKS, RR_PH_CONFIRM,
		RR_PH_REBOOT, RR_PH_REBOOTING };

/* Why reboots are held: an operator's `rerand hold`, or a state file that
 * could not be read whole (state_parse_damage: when in doubt, hold). */
enum rr_hold_why { RR_HOLD_OPERATOR = 0, RR_HOLD_DAMAGED };

struct rr_state {
	char     boot_id[RR_BOOT_ID];         /* the boot the fields below belong to */
	enum rr_phase phase;                  /* of the reboot sequence, in boot_id */
	bool     attempt;                     /* a reboot was started ... */
	char     attempt_boot_id[RR_BOOT_ID]; /* ... from this boot */
	time_t   attempt_time;
	enum rr_reason attempt_reason;
	unsigned failures;                    /* consecutive, weak boots included */
	uint64_t successes, total_failures;
	uint64_t weak_boots;                  /* attempts that booted weak (RR_V_WEAK) */
	time_t   last_success, last_failure, last_reboot;
	enum rr_verify last_verify;
	time_t   last_verify_time;
	int64_t  jitter;                      /* for boot_id */
	bool     hold;
	enum rr_hold_why hold_why;            /* meaningful while hold */
	time_t   hold_time;                   /* when it was put in place, 0 unknown */
	char     hold_text[RR_HOLD_TEXT];     /* `rerand hold --reason`, printable ASCII */
	bool     trig_oops, trig_new_kernel, trig_now;
	uint64_t taint_handled;               /* taint bits already turned into a trigger */
	char     staged_sha[65];              /* kernel hash of the staged image */
	time_t   staged_time;
	/* A fleet slot that may be ours: set before the reboot, cleared once it is
	 * given back.  The token lets the next boot take an etcd lease back. */
	bool     fleet_held;
	char     fleet_token[FLEET_TOKEN_MAX];
	/* The last cause (last_cause at last_cause_time) is still to be recorded
	 * for the group's breaker; the slot of a failed attempt is not given back
	 * (it runs out with its DownTTL= lease, or an operator frees it). */
	bool     fleet_report;
	bool     fleet_keep;
	/* Crash (kdump) kernel boots: counted apart, never settling an attempt. */
	uint64_t crash_boots;
	time_t   last_crash_boot;
	char     crash_boot_id[RR_BOOT_ID];   /* the crash boot already counted */
	/* The comeback (wdog.c, confirm.c): the watchdog armed for the attempt;
	 * a rerandomized boot waiting for its confirmation; the last cause. */
	bool     watchdog_armed;
	bool     confirm_pending;
	char     confirm_boot_id[RR_BOOT_ID];
	/* the boot that failed its confirmation and asked the firmware for a
	 * reboot: the next boot is that reboot, not an unplanned one */
	char     fallback_boot_id[RR_BOOT_ID];
	enum rr_cause last_cause;
	char     last_cause_detail[256];
	time_t   last_cause_time;
	uint64_t causes[RR_NR_CAUSES];        /* failures by cause */
	uint64_t confirmed;                   /* boots confirmed */
	enum rr_boot_origin boot_origin;      /* of boot_id */
	uint64_t unplanned_boots;             /* new boots rerandd did not plan */
	/* The pending attempt was assumed by state_parse_damage (the file was in
	 * doubt): state_account_boot never counts it a success.  Saved, for a
	 * crash kernel's boot that settles nothing. */
	bool     attempt_guessed;
	/* The one-shot boot loader choice the attempt's image was staged from
	 * (oneshot.c): cleared once the kexec boot into it is confirmed; and
	 * what became of the last one, for the status. */
	enum rr_oneshot_kind oneshot;
	char     oneshot_value[RR_ONESHOT_VALUE];
	char     oneshot_note[320];
	time_t   oneshot_note_time;
};

/* The failures in a row when a damaged state file lost them: past any
 * MaxFailures in use, so stopped (state_parse_damage). */
#define STATE_FAILURES_LOST 1000000

void state_init(struct rr_state *s);
int state_format(const struct rr_state *s, char *buf, size_t len);
/* What a damaged state file lost. */
struct rr_state_damage {
	unsigned bad;                         /* problems: lines skipped, keys missing */
	unsigned first_line;                  /* the first of them, from 1 */
	char     first_why[96];
	bool     held;                        /* the parse set a hold for it */
	unsigned lost;                        /* guarded keys in doubt (state.c's G_*) */
	char     what[96];                    /* the first doubt, for the hold's text */
};
/* Line by line and fails closed: unknown keys are skipped; a line that
 * cannot be read (no '=', a bad value, NUL, too long, cut short) is
 * skipped and counted, the rest kept.  A file this version writes
 * (version=2) ends with end=SHA256 of the bytes before it; without it, or
 * with another value, every guarded key (hold, failures, attempt,
 * attempt_boot_id, boot_id, fleet_keep, confirm_pending; "stopped" is
 * failures past MaxFailures) is in doubt.  A version=1 file (no end line)
 * is read as before, each guarded key required.  Any doubt (a guarded key
 * missing, twice or unreadable, a line that names no key, a bad or missing
 * end line) holds *s (RR_HOLD_DAMAGED, unless an operator's hold was read)
 * and takes each value in doubt at its worst (state.c, fail_closed).
 * 0 for a clean file, else -EBADMSG; ret may be NULL. */
int state_parse_damage(const char *text, size_t len, struct rr_state *s,
		       struct rr_state_damage *ret);
int state_parse(const char *text, size_t len, struct rr_state *s);
/* ENOENT gives the defaults and 0 (a first start: not held).  A damaged
 * file: what could be read, failing closed as state_parse_damage says, the
 * hold's text naming PATH and the doubt, -EBADMSG, and a hard link
 * PATH.corrupt to it (the file stays until a save replaces it).  A file
 * that cannot be read at all: the defaults at their worst, held, and the
 * error. */
int state_load(const char *path, struct rr_state *s, struct rr_err *e);
/* write, fsync, rename, fsync the directory */
int state_save(const char *path, const struct rr_state *s, struct rr_err *e);
/* Remove temporary files a kill -9 during state_save left beside path. */
void state_remove_stale_temps(const char *path);
/* What this boot's record says: r is rr_status_read()'s result, s the record. */
struct rerand_status;
enum rr_verify state_verify_record(int r, const struct rerand_status *s);
/* First look at the state in a boot: settle a pending attempt.  Only
 * RR_V_RANDOMIZED is a success; a weak boot is RR_OUT_WEAK and, like a
 * failure, counts towards failures in a row (back-off, MaxFailures). */
enum rr_outcome state_account_boot(struct rr_state *s, const char *boot_id,
				   enum rr_verify verify, time_t now);
/* A crash kernel's boot: counted once per boot id in crash_boots; a pending
 * attempt, the failure count and the boot id stay for the next normal boot.
 * True if this call counted it. */
bool state_account_crash_boot(struct rr_state *s, const char *boot_id, time_t now);
void state_record_attempt(struct rr_state *s, enum rr_reason why, time_t now);
/* A failure named: counted by cause, the last one kept with its detail. */
void state_record_cause(struct rr_state *s, enum rr_cause c, const char *detail, time_t now);
/* An operator's hold (with `rerand hold --reason` TEXT, made printable) or
 * release, stamped with now. */
void state_set_hold(struct rr_state *s, bool hold, const char *text, time_t now);
/* The reboot call itself failed: same boot, counted as a failure. */
void state_record_failed_reboot(struct rr_state *s, time_t now);
const char *state_verify_name(enum rr_verify v);
const char *state_origin_name(enum rr_boot_origin o);
const char *state_phase_name(enum rr_phase ph);
const char *state_hold_name(enum rr_hold_why h);
/* At start-up, before state_account_boot: the phase the file holds, which
 * is then idle.  RR_RESUME_UNWIND: a sequence of this boot stopped half-way
 * (in any phase: a recorded attempt is then dropped as aborted, and
 * coord_startup gives the slot back); RR_RESUME_NONE: idle, or another boot
 * (whose attempt state_account_boot settles). */
enum rr_resume { RR_RESUME_NONE = 0, RR_RESUME_UNWIND };
enum rr_resume state_resume(struct rr_state *s, const char *boot_id);

#endif
