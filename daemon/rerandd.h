/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd: every module's types and prototypes behind one header (OpenBSD
 * style), so a reader sees the whole daemon's surface from here.  The four
 * largest concerns are in rerandd_config.h, rerandd_state.h,
 * rerandd_stage.h and rerandd_daemon.h, included below in the order their
 * types need. */
#ifndef RERANDD_H
#define RERANDD_H

#include <stdbool.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>
#include <time.h>

#include "fleet.h"           /* struct fleet_config, the fleet lock */
#include "kernel.h"          /* struct rr_err, rr_errf() */

#define RR_PATH   512
#define RR_CMD    1024
/* One version for every program: the Makefile's -DRERAND_VERSION, from
 * debian/changelog (rerand --version says the same). */
#ifndef RERAND_VERSION
#error "RERAND_VERSION comes from the Makefile (debian/changelog's version)"
#endif
#define RR_VERSION RERAND_VERSION
#define RR_MAX_WINDOWS 16
#define RR_HOLD_TEXT 160
#define RR_BOOT_ID 40

/* ---- log.c: journald-friendly stderr ("<N>message") ------------------- */
#include "log.h"

/* ---- escape.c: text from outside, safe for the journal, status, terminals - */
#include "escape.h"

/* ---- audit.c: events with a journal MESSAGE_ID= of their own --------------- */
/* A control command, with the peer that sent it (docs/rerandd.8, AUDIT). */
#define RR_MSGID_CONTROL   "cab9b5e72e464ba4b70373f2caa67f02"
/* A due rerandomization goes on despite a logind inhibitor (MaxInhibitSec=,
 * or one a non-root user holds against `rerand now` or an oops). */
#define RR_MSGID_INHIBITOR "3453cf549ce949a9983597d045cc8ccf"
/* The fleet lock as rerandd learns it from rerand-fleetd's answers (the
 * helper has no journal fields of its own), and SignKey=: one id per kind,
 * all in systemd/rerand.catalog and docs/operations.md, "The journal". */
#define RR_MSGID_SLOT_TAKEN     "bd9b39a1ad8f40d2977f4ecfb524a934"  /* acquire granted */
#define RR_MSGID_SLOT_DOWN      "6f12abb291f841b4923415bad48d891d"  /* moved to the down lease */
#define RR_MSGID_SLOT_RESUMED   "feefb0396a8540549eb6a6fdbf6a93c6"  /* taken back after the boot */
#define RR_MSGID_SLOT_RELEASED  "d76e9661f3214f868430995fbd5ad48c"  /* this host's given back */
#define RR_MSGID_FLEET_RELEASE  "6a6ad61a575c4e4fa183263684d9ce9d"  /* `fleet release HOST` done */
#define RR_MSGID_FAILURE_REC    "900e26c85b7c45c99c32d57d867193a4"  /* a failure recorded for the group */
#define RR_MSGID_BREAKER_TRIP   "2d9005ed00c04b45b1bc19f0bad05348"  /* the breaker seen tripped */
#define RR_MSGID_BREAKER_CLEAR  "f070b77f62de40faae0c6bc08391a5f8"  /* `fleet clear-breaker` done */
#define RR_MSGID_SIGNKEY        "fa64ec5659fc4be7861305738ea60d86"  /* sbsign ran with SignKey= */
#define RR_AUDIT_MAX_FIELDS 8
/* rr_log's message, and under systemd a journal entry with MESSAGE_ID= and
 * the fields ("NAME=value", at most RR_AUDIT_MAX_FIELDS). */
void audit_log(int prio, const char *message_id, const char *const *fields, size_t nfields,
	       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#include "rerandd_config.h"

/* ---- policy.c: pure decisions ------------------------------------------- */
enum rr_action { RR_ACT_NONE = 0, RR_ACT_WAIT, RR_ACT_REBOOT, RR_ACT_BLOCKED, RR_ACT_STOPPED };
/* In order of urgency (a tie is reported as the more urgent); stored by name. */
enum rr_reason { RR_WHY_NONE = 0, RR_WHY_AGE, RR_WHY_NEW_KERNEL, RR_WHY_WEAK, RR_WHY_OOPS,
		 RR_WHY_NOW,
		 /* never planned: a kexec reboot into rerandd's image that
		  * rerandd did not start (RerandomizeOtherReboots=) */
		 RR_WHY_OTHER, RR_WHY_LAST = RR_WHY_OTHER };
enum rr_blocker { RR_BLK_NONE = 0, RR_BLK_HOLD, RR_BLK_NOT_STAGED, RR_BLK_INHIBITOR,
		  RR_BLK_COMMAND };

struct rr_policy_in {
	time_t   now;
	time_t   layout_born;        /* when this boot (and so its layout) began */
	int64_t  jitter;             /* drawn once for this boot */
	time_t   last_reboot;        /* last attempt, 0 = none */
	time_t   last_failure;
	unsigned failures;           /* consecutive */
	bool     oops, new_kernel, now_requested;
	bool     weak;               /* this boot is weak: its layout may be guessed */
	bool     hold, staged, inhibited, command_blocks;
};

struct rr_policy_out {
	enum rr_action  action;
	enum rr_reason  reason;
	enum rr_blocker blocker;
	time_t          when;        /* planned reboot; 0 = none planned */
};

void policy_decide(const struct rr_config *c, const struct rr_policy_in *in,
		   struct rr_policy_out *out);
/* policy_decide with every window open: what `rerand due` answers for an
 * outside scheduler (kured).  action RR_ACT_REBOOT means due now. */
void policy_due(const struct rr_config *c, const struct rr_policy_in *in,
		struct rr_policy_out *out);
/* Start and end of the occurrence of w that contains t, else of the next one. */
int policy_window_next(const struct rr_window *w, time_t t, time_t *ret_start, time_t *ret_end);
/* t itself if some window contains t, else the earliest window start after t;
 * 0 if there is no enabled window. */
time_t policy_next_allowed(const struct rr_config *c, time_t t);
/* Uniform in [0, max] from 64 random bits. */
int64_t policy_jitter(int64_t max, uint64_t random_bits);
/* Delay after `failures` consecutive failures: 0, base, 2 base, 4 base ... max. */
int64_t policy_backoff(const struct rr_config *c, unsigned failures);
bool policy_stopped(const struct rr_config *c, unsigned failures);
/* No enabled [Window] and RebootOutsideWindows=no, the default install:
 * nothing is ever planned by age (only `rerand now`, an "immediate" trigger
 * or an outside scheduler asking `rerand due`). */
bool policy_never_reboots(const struct rr_config *c);
#define RR_NO_WINDOW_NOTICE "no maintenance window is configured and RebootOutsideWindows=no: " \
	"rerandd keeps an image staged but never reboots by itself; add a [Window NAME] section " \
	"(Days=, Start=, Length=) or RebootOutsideWindows=yes in /etc/rerand/rerand.conf.d/, " \
	"see rerand.conf(5); `rerand now` rerandomizes at once"
/* SignKey= set while sbsign's user (CheckUser=, or ImageUser= when empty)
 * is the builder's: a builder running meanwhile could read the key through
 * /proc/PID/fd of sbsign (same uid).  Said at start and by --check-config. */
bool config_signer_shares_builder(const struct rr_config *c);
#define RR_SIGNER_SHARED_NOTICE "SignKey= is set and sbsign runs as the image builder's user " \
	"(CheckUser= is empty or names ImageUser='s user): a builder running at the same time " \
	"could read the key through /proc; give CheckUser= a user of its own (see rerand.conf(5))"
/* ---- view.c ---- */
struct daemon;
struct rr_view;
void daemon_fill_view(struct daemon *d, struct rr_view *v);
/* The instant local wall time (y, mon 1-12, day, minutes) first occurs in zone
 * (a time skipped by a DST change maps to the end of the gap). */
time_t policy_wall_to_utc(const char *zone, int y, int mon, int day, int minutes);
const char *policy_reason_name(enum rr_reason r);
const char *policy_blocker_name(enum rr_blocker b);
const char *policy_action_name(enum rr_action a);

/* ---- watch.c: what the kernel tells us ----------------------------------- */
enum rr_kmsg_kind { RR_KMSG_NONE = 0, RR_KMSG_WARN, RR_KMSG_BUG, RR_KMSG_OOPS };
#define RR_TAINT_DIE  (1ull << 7)
#define RR_TAINT_WARN (1ull << 9)
/* Classify one /dev/kmsg record ("prio,seq,usec,flags;text").  Only
 * kernel-facility records count: userspace cannot write facility 0. */
enum rr_kmsg_kind watch_kmsg_classify(const char *rec, size_t len);
int watch_parse_taint(const char *s, size_t len, uint64_t *ret);
/* Read all pending records from a non-blocking /dev/kmsg fd; the worst kind. */
enum rr_kmsg_kind watch_kmsg_drain(int fd);
int watch_read_taint(const char *path, uint64_t *ret);
int watch_read_boot_id(const char *path, char ret[RR_BOOT_ID]);
/* When this boot began: the btime line of /proc/stat (not after now). */
int watch_read_btime(const char *path, time_t now, time_t *ret);

/* ---- wdog.c: the watchdog across the kexec, and what went wrong -------- */
/* Why a rerandomizing reboot did not come back by itself (stored by name). */
enum rr_cause { RR_CAUSE_NONE = 0, RR_CAUSE_WATCHDOG, RR_CAUSE_PANIC, RR_CAUSE_CHECK,
		RR_CAUSE_UNCONFIRMED, RR_CAUSE_NO_TRACE, RR_NR_CAUSES };
const char *wdog_cause_name(enum rr_cause c);
int wdog_cause_parse(const char *s, enum rr_cause *ret);
/* KexecWatchdogSec= against ConfirmTimeoutSec= and the hardware's
 * max_timeout (WatchdogSysfs=): errors through add ("name: ..."). */
struct rr_cfg_errs;
void wdog_validate(const struct rr_config *c, const char *name, struct rr_cfg_errs *errs,
		   void (*add)(struct rr_cfg_errs *, const char *, ...));
/* On, and the device node exists. */
bool wdog_present(const struct rr_config *c);
/* Open, set the timeout (refused if the driver cannot count that long),
 * ping.  The fd is the caller's: wdog_leave_running() or wdog_stop(). */
int wdog_open(const struct rr_config *c, int64_t timeout, int *ret_fd, struct rr_err *e);
/* in with watchdog.stop_on_reboot=0 first when KexecWatchdogSec= is on and in
 * has no watchdog.stop_on_reboot= of its own. */
/* panic.c: the next word of a kernel command line (blanks outside double
 * quotes end it, as the kernel splits); NULL at the end. */
const char *cmdline_next_word(const char **pp, size_t *len);
int wdog_cmdline(const struct rr_config *c, const char *in, char *out, size_t len,
		 struct rr_err *e);
int wdog_feed(int fd);
int wdog_leave_running(int fd);
int wdog_stop(int fd);
/* 1: this kernel stops the watchdog at a kexec or reboot (its
 * watchdog.stop_on_reboot is not 0), 0: it keeps it running, -1: unknown. */
int wdog_stops_on_reboot(const struct rr_config *c);
/* What to say at start about the watchdog rerandd would arm (present, in
 * sysfs but not in rerandd's /dev, absent, stopped at a reboot by this
 * kernel): an RR_LOG_* level and the line, or -1 (KexecWatchdogSec=off). */
int wdog_start_note(const struct rr_config *c, char *msg, size_t len);
/* The driver's boot status: the last reset was the watchdog's. */
int wdog_bootstatus(const struct rr_config *c, bool *ret_reset);
/* Runs of 6+ hex digits replaced by '#', unprintable bytes by '?'. */
void wdog_redact(char *s);
/* 1 and the redacted "Kernel panic - not syncing" line of a pstore dmesg
 * record in dir, else 0. */
int wdog_pstore_panic(const char *dir, char *line, size_t len);
/* The cause of a boot that did not come back by itself, from what the
 * next boot can see. */
enum rr_cause wdog_cause(bool reached_rerandd, bool wd_reset, bool panic);

/* A choice the boot loader takes for one boot and clears as it boots it:
 * GRUB's next_entry (grub-reboot), systemd-boot's LoaderEntryOneShot. */
enum rr_oneshot_kind { RR_OS_NONE = 0, RR_OS_GRUB, RR_OS_SDBOOT };
#define RR_ONESHOT_VALUE 512
#include "rerandd_state.h"

/* ---- digest.c: the kernel file hashed, the record of each image -------------- */
/* SHA-256 of a file as 64 hex digits (src/cachekey.h's rr_sha256_hex for bytes) */
int digest_file_hex(const char *path, char hex[65], struct rr_err *e);
/* Which file a kernel path named when it was hashed.  The builder must read
 * the very file whose hash keys the image cache: a package upgrade renames a
 * new vmlinuz over the path, and an image of one kernel must never be cached
 * under the other's hash. */
struct rr_kernel_id {
	uint64_t dev, ino;
	int64_t size, mtime_sec, mtime_nsec;
};
/* Open a kernel read-only, close-on-exec; -EINVAL for anything but a
 * regular file (a FIFO does not hang the open).  Its identity in id. */
int digest_kernel_open(const char *path, struct rr_kernel_id *id, struct rr_err *e);
/* The image cache key (src/cachekey.h) of the kernel open as fd
 * (digest_kernel_open gave id) and the stage hashed as stage_sha; -ESTALE if
 * the file changed since it was opened or while it was read. */
struct rr_cache_key;
int digest_kernel_key(int fd, const char *path, const struct rr_kernel_id *id,
		      const char *stage_sha, struct rr_cache_key *k, struct rr_err *e);
bool digest_kernel_same(const struct rr_kernel_id *a, const struct rr_kernel_id *b);
/* The identity a stat() of the kernel file gives. */
struct stat;
struct rr_kernel_id digest_kernel_id(const struct stat *st);
/* Open path again for the builder: -ESTALE, and why, unless it is still the
 * file want names (the one hashed). */
int digest_kernel_reopen(const char *path, const struct rr_kernel_id *want, struct rr_err *e);
/* After the build: -ESTALE, and why, unless the file open as fd is still
 * the one want names (not written in place while the builder read it). */
int digest_kernel_unchanged(int fd, const char *path, const struct rr_kernel_id *want,
			    struct rr_err *e);
/* The SHA-256 of a whole image as it was built, in <image>.sha256
 * (sha256sum's "HEX  NAME" line), written atomically. */
int digest_record_write(const char *image, const char hex[65], struct rr_err *e);
/* -ENOENT: no record; -EBADMSG: not a record of this image. */
int digest_record_read(const char *image, char hex[65], struct rr_err *e);
/* The image's bytes hash to its record: 0 and hex; -EBADMSG when they do
 * not (e names the file), -ENOENT without a record, or a read error. */
int digest_image_check(const char *image, char hex[65], struct rr_err *e);

/* ---- run.c: children with a timeout -------------------------------------- */
enum rr_child_caps { RR_CHILD_NO_CAPS = 0, RR_CHILD_KEXEC_CAPS,
		    /* or'ed in: background work (building, loading) at nice 10, so
		     * the loop and `rerand status` come first on a busy CPU */
		    RR_CHILD_NICE = 0x100 };
/* A child as a job on the event loop.  The child is watched through a
 * pidfd; its stdout and stderr are logged, escaped, a line at a time under
 * its name (or captured: the last 4 KiB); after timeout_sec it gets
 * SIGTERM, 5 s later SIGKILL (its whole process group).  done(status, out,
 * arg) runs once on the loop: the exit status (0-255), 128+signal,
 * -ETIMEDOUT or another negative errno, and the captured output ("" when
 * not captured). */
struct rr_job;
typedef void (*rr_job_done_fn)(int status, const char *out, void *arg);
int job_start(sd_event *ev, char *const argv[], int64_t timeout_sec, enum rr_child_caps caps,
	      bool capture, rr_job_done_fn done, void *arg, struct rr_job **ret);
/* job_start for the image builder (its output relayed): the child
 * becomes it through caps_child_builder() instead of a caps enum. */
struct rr_builder;
int job_start_builder(sd_event *ev, char *const argv[], int64_t timeout_sec,
		      const struct rr_builder *b, rr_job_done_fn done, void *arg,
		      struct rr_job **ret);
/* job_start for sbsign (output captured): the child becomes it through
 * caps_child_signer(), then the parsing half's seccomp filter. */
struct rr_signer;
int job_start_signer(sd_event *ev, char *const argv[], int64_t timeout_sec,
		     const struct rr_signer *s, rr_job_done_fn done, void *arg,
		     struct rr_job **ret);
/* job_start for a hook (no capabilities), exec'd not by its path but through
 * what reboot.c checked: dirfd, the hook directory; fd, an O_PATH fd of the
 * file it runs; direct, the entry name is that file itself (not a symlink). */
struct rr_hook_exec {
	int dirfd, fd;
	const char *name;
	bool direct;
};
int job_start_hook(sd_event *ev, char *const argv[], const struct rr_hook_exec *hook,
		   int64_t timeout_sec, rr_job_done_fn done, void *arg, struct rr_job **ret);
/* A function job: fn(fn_arg, out_fd) runs in a forked child (rerandd's own
 * code, no exec, nice 10), for work too slow for the loop (hashing and
 * parsing images); what it writes to out_fd (up to 64 KiB) reaches
 * done(status, buf, len, arg): status 0 if fn returned >= 0. */
typedef void (*rr_job_raw_fn)(int status, const void *buf, size_t len, void *arg);
int job_start_fn(sd_event *ev, const char *name, int (*fn)(void *arg, int out_fd), void *fn_arg,
		 int64_t timeout_sec, rr_job_raw_fn done, void *arg, struct rr_job **ret);
/* job_start_fn with pre(fn_arg) run in the child first, while it still has
 * rerandd's capabilities (it forks the helper's parsing half); <0 fails it. */
int job_start_fn_pre(sd_event *ev, const char *name, int (*pre)(void *arg),
		     int (*fn)(void *arg, int out_fd), void *fn_arg, int64_t timeout_sec,
		     rr_job_raw_fn done, void *arg, struct rr_job **ret);
/* run_command as a job: done's out is the error message ("" on success). */
int job_start_command(sd_event *ev, const char *cmdline, int64_t timeout_sec,
		      enum rr_child_caps caps, rr_job_done_fn done, void *arg, struct rr_job **ret,
		      struct rr_err *e);
/* Kill the job's process group; done is not called.  NULL is fine. */
void job_cancel(struct rr_job *j);

/* ---- caps.c -------------------------------------------------------------- */
/* Keep CAP_SYS_BOOT (effective) and CAP_SYS_ADMIN (permitted+inheritable only,
 * for the kexec child), drop the rest, set PR_SET_NO_NEW_PRIVS. */
int caps_drop_daemon(struct rr_err *e);
/* In a child before exec. */
/* CAP_LINUX_IMMUTABLE effective (on) or not; nothing if not permitted. */
void caps_immutable(bool on);
int caps_child_kexec(void);
int caps_child_none(void);
/* The image builder (`rerand image --kernel-fd 3 --output-fd 4`): the two
 * fds moved to 3 and 4, then, when switch_user (rerandd is root), no
 * supplementary groups, uid and gid ImageUser='s and an empty bounding set;
 * always no capabilities at all and no_new_privs. */
#define RR_BUILDER_KERNEL_FD 3
#define RR_BUILDER_OUT_FD 4
struct rr_builder {
	int kernel_fd, out_fd;               /* rerandd's, moved in the child */
	bool switch_user;
	uid_t uid;
	gid_t gid;
};
/* In the builder's child: become ImageUser= with nothing (above), with the
 * builder's limits; *pidns: 0 when what it forks next starts a PID namespace
 * of its own (rerandd as root), else why not (-errno). */
int caps_child_builder(const struct rr_builder *b, int *pidns);
/* In the parsing half of a staging helper (stage_parse.c): the same user
 * switch (b's fds unused), no capabilities in any set, no_new_privs and
 * the builder's limits. */
int caps_child_parser(const struct rr_builder *b);

/* sbsign (SignKey=, stage_job.c): its root side opens and hands over every
 * file, then it becomes CheckUser= as the parsing half does (signer.c). */
#define RR_SIGNER_IN_FD 3          /* the checked copy, read-only */
#define RR_SIGNER_KEY_FD 4         /* the key, a sealed memfd (not for pkcs11:) */
#define RR_SIGNER_CERT_FD 5        /* the certificate, a sealed memfd */
#define RR_SIGNER_OUT_FD 6         /* its output: rerandd's memfd */
struct rr_signer {
	int in_fd, out_fd;                   /* rerandd's, moved in the child */
	const char *key;                     /* a key file, or NULL (a pkcs11: URI) */
	const char *cert;
	struct rr_builder who;               /* CheckUser=; its fds unused */
};
/* In sbsign's child, before the exec: the key and certificate read (as
 * root) into sealed memfds, the four fds in place, then CheckUser= with no
 * capabilities, an empty bounding set, no_new_privs and the builder's
 * limits.  The seccomp filter is the caller's, last (sandbox_signer). */
int caps_child_signer(const struct rr_signer *s);

#include "rerandd_stage.h"

/* ---- bootloader.c: the running kernel on a systemd-boot machine ----------- */
struct rr_bls_entry {                        /* what rerand needs of a type #1 entry */
	char linux_path[RR_PATH], efi_path[RR_PATH];   /* from the partition's root */
	char initrd[RR_PATH];                /* the first initrd line */
	unsigned nr_initrd;
};
struct rr_boot_entry {
	char id[600];                        /* the entry: LoaderEntrySelected, GRUB's title */
	char kernel[RR_PATH];                /* path on this system */
	char initrd[RR_PATH];                /* type #1's initrd line, "" = none */
	bool uki;
	enum rr_oneshot_kind oneshot;        /* chosen for one boot (bootnext_find) */
	char oneshot_value[RR_ONESHOT_VALUE];   /* next_entry's value, the entry id */
};
/* An efivarfs file's bytes (attributes, UTF-16LE) as an entry id. */
int bootloader_efivar_string(const uint8_t *buf, size_t len, char *out, size_t size,
			     const char *name, struct rr_err *e);
/* A type #1 entry's text: linux, efi and initrd lines; errors "name:line: ...". */
int bootloader_parse_entry(const char *text, size_t len, const char *name,
			   struct rr_bls_entry *ret, struct rr_err *e);
/* systemd-boot's id of an entry file: lower case, boot counter dropped. */
int bootloader_entry_id(const char *file, char *out, size_t size);
/* This boot has a LoaderEntrySelected variable: systemd-boot booted it. */
bool bootloader_selected(const struct rr_config *c);
/* The file starts like a UKI (PE with a .linux section). */
bool bootloader_is_uki(const char *path);
/* 1 and *ret: the entry LoaderEntrySelected names, found under one of
 * BootLoaderRoots=; 0: no such variable (not booted by systemd-boot); < 0:
 * the variable names an entry that cannot be used or found (e says why). */
int bootloader_find(const struct rr_config *c, struct rr_boot_entry *ret, struct rr_err *e);
/* The same for the entry id sel, named by from (a variable, loader.conf) as
 * what ("the one-shot entry"): 1 and *ret, or <0. */
int bootloader_find_id(const struct rr_config *c, const char *sel, const char *from,
		       const char *what, struct rr_boot_entry *ret, struct rr_err *e);

/* ---- grubcfg.c: what GRUB boots next (grub.cfg, grubenv) ------------------ */
struct rr_grub_env {                     /* grubenv's variables rerand reads */
	char saved_entry[512], next_entry[512], prev_saved_entry[512];
	bool has_saved, has_next, has_prev;
};
/* grubenv's bytes (grub-editenv's block); errors "name:line: ...". */
int grub_env_parse(const char *buf, size_t len, const char *name, struct rr_grub_env *ret,
		   struct rr_err *e);
#define RR_GRUB_ENTRIES 256
struct rr_grub_entry {
	char title[256], id[256];
	int parent;                          /* the submenu holding it, -1: the top menu */
	bool submenu;
	bool conditional;                    /* inside an if, a loop or a function */
	bool title_var;                      /* its title is made of variables */
	char loader[24];                     /* its first boot command: "linux", "chainloader"... */
	char linux_path[RR_PATH], initrd[RR_PATH];   /* GRUB paths, a "(dev)" prefix dropped */
	unsigned nr_initrd;                  /* files on its initrd line */
	bool recovery;                       /* single, recovery, emergency, systemd.unit= */
	bool path_var;                       /* a path made of variables (or too long) */
	bool unsure;                         /* a kernel or initrd only under a condition, or two */
};
struct rr_grub_cfg {
	bool loads_env, uses_next_entry;     /* load_env; set default="${next_entry}" */
	unsigned n_default;                  /* other `set default=` at the top level */
	bool default_saved, default_var;     /* the last one: "${saved_entry}"; other '$' */
	char default_val[512];
	unsigned n;
	struct rr_grub_entry ent[RR_GRUB_ENTRIES];   /* in file order (GRUB's menu order) */
};
/* grub.cfg's text into *g (large: allocate it); errors "name:line: ...". */
int grub_cfg_parse(const char *text, size_t len, const char *name, struct rr_grub_cfg *g,
		   struct rr_err *e);
struct rr_grub_choice {
	int entry;                           /* index in g->ent */
	char spec[512];                      /* the default it came from */
	const char *how;                     /* where that default was set */
	bool oneshot;                        /* it is next_entry, for one boot */
};
/* The entry GRUB boots next by its rules: next_entry (when grub.cfg uses
 * it), else the default, saved_entry for "${saved_entry}"; a number, a
 * title or an id per level, '>' into a submenu, the first entry for one
 * that names none.  -EAGAIN "cannot tell" (e says why), -ENOENT no entry. */
int grub_cfg_pick(const struct rr_grub_cfg *g, const struct rr_grub_env *env, const char *name,
		  struct rr_grub_choice *ret, struct rr_err *e);

/* ---- bootnext.c: the kernel the boot loader boots next -------------------- */
/* 1 and *ret (kernel, initrd from a type #1 entry, id: what was chosen and
 * how): systemd-boot's next entry when it booted this system, else GRUB's
 * when GrubConfig= exists; 0: neither (the running or newest kernel, as
 * before); <0: the boot loader's choice cannot be told or is not a kernel
 * rerand can stage (e says why: the reboot goes through the firmware). */
int bootnext_find(const struct rr_config *c, struct rr_boot_entry *ret, struct rr_err *e);

/* ---- oneshot.c: a one-shot choice a kexec boot consumed -------------------- */
/* "GRUB next_entry", "systemd-boot LoaderEntryOneShot"; the state file's
 * names "grub", "systemd-boot", "none". */
const char *oneshot_kind_text(enum rr_oneshot_kind k);
const char *oneshot_kind_name(enum rr_oneshot_kind k);
int oneshot_kind_parse(const char *name, enum rr_oneshot_kind *ret);
/* The file holding the choice: GrubEnvironment=, or the LoaderEntryOneShot
 * variable beside LoaderEntrySelected=.  "" if none. */
void oneshot_file(const struct rr_config *c, enum rr_oneshot_kind k, char *out, size_t size);
/* Whether the choice is still value: 1 yes, 0 no (unset, or another one,
 * told in now), <0 unreadable (e says why). */
int oneshot_still(const struct rr_config *c, enum rr_oneshot_kind k, const char *value,
		  char *now, size_t nowlen, struct rr_err *e);
/* Delete systemd-boot's LoaderEntryOneShot (path) as systemd-boot does when
 * it boots it: efivarfs marks such a variable immutable, so the flag is
 * cleared first (CAP_LINUX_IMMUTABLE, raised for that ioctl only).  0 or <0. */
int oneshot_delete_efivar(const char *path, struct rr_err *e);
struct daemon;
/* At the commit to a kexec (sequence.c, shutdown.c): the one-shot choice
 * the staged image came from, if any, is written down with the attempt. */
void oneshot_note_attempt(struct daemon *d);
/* The rerandomized boot into it is confirmed: clear the choice (if it is
 * still the one written down), as the boot loader would have. */
void oneshot_after_confirm(struct daemon *d);
/* The attempt ended without a confirmed kexec boot (why): the choice is
 * left to the boot loader, which takes it at the firmware boot. */
void oneshot_forget(struct daemon *d, const char *why);
void oneshot_stop(struct daemon *d);

/* ---- kernels.c: the kernel hooks' index ---------------------------------- */
/* True when StateDirectory/kernels/ has a file naming sha (a kernel the
 * package's hook built an image of). */
bool kernels_indexed(const struct rr_config *c, const char *sha);
/* The hook is building an image now (its .hook-VERSION.tmp, younger than
 * 10 min, is in StateDirectory/images): a new kernel waits for it. */
bool kernels_hook_busy(const struct rr_config *c);
/* The package manager's locks a new kernel waits on (dpkg's). */
extern const char *const rr_dpkg_locks[];
/* 1 when another process holds a lock on path (fcntl F_GETLK; nothing is
 * taken, nothing created), 0 when none or no such file, else -errno. */
int kernels_lock_held(const char *path);
/* The first of the NULL-ended locks another process holds, or NULL. */
const char *kernels_pkg_busy(const char *const *locks);
/* Whether a kernel can be staged now (a new one seen in /boot, the fresh
 * stage of a reboot): 0, or the seconds until rerandd should look again
 * (the hook is at work; one of locks, NULL: [Paths] PackageLocks=, is held,
 * for at most 30 min counted from *pkg_since, which it keeps).  what names
 * the waiter in the log. */
int64_t kernels_new_wait(const struct rr_config *c, const char *const *locks, time_t now,
			 time_t *pkg_since, const char *what);

/* ---- panic.c: panic= on the staged command lines -------------------------- */
/* in with panic=N (sec; < 0: -1, reboot at once) and its mark rerand.panic=N
 * added before any "--", unless in has a panic= of its own (the user's
 * wins); the panic= and mark an earlier stage added are dropped first, so a
 * changed setting applies.  sec 0: only those are dropped. */
int panic_cmdline(const char *in, int64_t sec, char *out, size_t len, struct rr_err *e);

/* ---- crash.c: the rerandomizing crash kernel ------------------------------ */
enum rr_crash_state { RR_CS_OFF = 0, RR_CS_NOT_RESERVED, RR_CS_PENDING, RR_CS_LOADED,
		      RR_CS_ERROR, RR_CS_CRASH_BOOT,
		      /* Mode=auto, and kdump-tools or kdumpctl is enabled: theirs */
		      RR_CS_OTHER_LOADER };
enum rr_hotplug { RR_HP_NONE = 0, RR_HP_MEMORY, RR_HP_CPU };
/* What kdump-tools appends for the dump-capture kernel (Debian, amd64). */
#define RR_CRASH_APPEND "reset_devices systemd.unit=kdump-tools-dump.service nr_cpus=1 irqpoll nousb"

struct rr_crash {
	enum rr_crash_state state;
	bool     loaded;               /* a crash kernel is in memory (ours or not) */
	bool     ours;                 /* ... and rerandd loaded it */
	uint64_t reserved;             /* bytes in the crash region */
	char     kernel[RR_PATH];
	char     sha[65];              /* kernel hash of the loaded image */
	time_t   loaded_at, failed_at;   /* daemon_mono(): every time here is */
	time_t   reload_at;            /* a reload is wanted from then on; 0 = none */
	time_t   first_request;        /* of the pending reload: caps the settling */
	uint64_t loads, failures;
	char     error[RR_ERR_MAX];
	int      uevent_fd;            /* -1 = none */
	bool     uevent_fifo;
	struct rr_stage_job *job;      /* a load in progress */
};
const char *crash_state_name(enum rr_crash_state s);
/* kdump-tools or kdumpctl enabled ([Paths] CrashLoaderWants=, or its
 * sibling basic.target.wants): its unit's name, else NULL. */
const char *crash_other_loader(const struct rr_config *c);
/* The crash kernel's command line.  custom NULL: the running command line
 * without loader words, crashkernel=, what kdump-tools drops and what
 * conflicts with RR_CRASH_APPEND, then RR_CRASH_APPEND (before any "--").
 * Loader-owned words go from a custom line too.  -EINVAL on nokaslr. */
int crash_build_cmdline(const char *running, const char *custom, char *out, size_t len,
			struct rr_err *e);
/* nokaslr as a kernel parameter (before any "--"). */
bool crash_cmdline_has_nokaslr(const char *s);
/* One raw kernel uevent ("ACTION@DEVPATH\0KEY=VALUE\0..."): memory or CPU
 * hotplug (add, remove, online, offline) or nothing. */
enum rr_hotplug crash_uevent_classify(const void *buf, size_t len);
/* A crash kernel's boot: the stage's record says so, /proc/vmcore exists, or
 * the command line has elfcorehdr=. */
bool crash_boot_detect(bool have_status, uint32_t status_flags, bool vmcore_exists,
		       const char *cmdline);
int crash_read_u64(const char *path, uint64_t *ret);
void crash_init(struct rr_crash *cr);
/* Open the uevent source ([Paths] Uevents=). */
int crash_uevent_open(const struct rr_config *c, struct rr_crash *cr, struct rr_err *e);
/* Read what is pending; RR_HP_MEMORY/CPU if any of it was hotplug. */
enum rr_hotplug crash_uevent_drain(struct rr_crash *cr);
/* Ask for a reload at `at`; repeated requests push it back, by at most
 * 4 settle delays after the first. */
void crash_request(struct rr_crash *cr, time_t at, int64_t settle);
/* Whether crash_reload() should run now. */
bool crash_due(const struct rr_config *c, const struct rr_crash *cr, time_t now);
/* When crash_due() next becomes true; 0 = not planned. */
time_t crash_next(const struct rr_config *c, const struct rr_crash *cr);
/* Check the region, plan (base: the plan [Stage] staged, may be NULL), then
 * build and `rerand load --crash` as jobs on ev.  Updates cr and logs.
 * 1: a job runs, done(arg) follows once cr says how it went; 0: finished
 * now (nothing to load, or failed: cr says why), done is not called. */
int crash_start(sd_event *ev, const struct rr_config *c, struct rr_crash *cr,
		const struct rr_stage_plan *base, time_t now, void (*done)(void *arg), void *arg);
/* Mode=off, or a fresh look at kexec_crash_loaded for the status. */
void crash_refresh(const struct rr_config *c, struct rr_crash *cr);

/* ---- reboot.c ------------------------------------------------------------ */
/* An operation on the loop finished: r and a message (why it failed, or
 * what blocks); the operation is freed before done runs. */
typedef void (*rr_op_done_fn)(int r, const char *msg, void *arg);
/* The executable files of dir in name order, one job after another, each
 * stopped after timeout; kind ("pre-reboot", "post-boot") names them in
 * the log (a static string).  1: started, done(0 or <0, why) follows; 0: no
 * hooks (done is not called); <0: error in e. */
struct rr_hooks;
int hooks_start(sd_event *ev, const char *dir, const char *kind, int64_t timeout,
		rr_op_done_fn done, void *arg, struct rr_hooks **ret, struct rr_err *e);
void hooks_cancel(struct rr_hooks *h);
/* A logind lock that can block a reboot ("block" mode, "shutdown" among
 * what it inhibits), as ListInhibitors gives it: the text is the holder's
 * own, escaped wherever it is shown. */
#define RR_MAX_INHIBITORS 8
struct rr_inhibitor {
	char what[64], who[64], why[128], mode[16];
	uint32_t uid, pid;
	time_t seen_mono;            /* first seen by rerandd (daemon_mono()) */
	time_t seen;                 /* the same on the wall clock (rr_view only) */
	bool blocks;                 /* holds the due reboot back; else ignored or overridden */
};
struct rr_inhibitors {
	unsigned n, more;            /* more: locks past RR_MAX_INHIBITORS */
	struct rr_inhibitor l[RR_MAX_INHIBITORS];
};
/* Decides which of the locks hold the due reboot back (sets .blocks) and
 * whether any does. */
typedef bool (*rr_inhibit_judge_fn)(struct rr_inhibitors *list, void *arg);
/* Whether a reboot is blocked: a logind block-mode shutdown inhibitor
 * (HonorInhibitors=, an asynchronous ListInhibitors; judge, given arg,
 * says which count), then BlockerCommand= (a job).  1: started, done(1
 * blocked / 0 not, why) follows; 0: nothing to ask, not blocked. */
struct rr_blockers;
int blockers_start(sd_event *ev, const struct rr_config *c, rr_inhibit_judge_fn judge,
		   rr_op_done_fn done, void *arg, struct rr_blockers **ret);
void blockers_cancel(struct rr_blockers *b);
/* Ask for a reboot into the staged kernel (logind RebootWithFlags(kexec),
 * else systemd's kexec.target, asynchronously; RebootCommand= as a job;
 * reboot(2) without systemd).  0: asked, done(0) once the request is
 * accepted (the end comes as SIGTERM) or done(<0, why); <0: refused now. */
struct rr_request;
int reboot_request_start(sd_event *ev, const struct rr_config *c, rr_op_done_fn done, void *arg,
			 struct rr_request **ret, struct rr_err *e);
void reboot_request_cancel(struct rr_request *q);
void reboot_bus_close(void);
/* The system bus on the loop (opened on first use), or NULL. */
struct sd_bus;
struct sd_bus *reboot_bus(sd_event *ev);
/* A reboot through the firmware (not kexec), after `kexec -s -u` unloaded
 * the staged kernel: FirmwareRebootCommand= with Method=command (none set:
 * refused, the watchdog is left to reset the machine), reboot(2) with
 * Method=syscall or without systemd, else systemd's reboot.target.  As
 * reboot_request_start. */
int reboot_firmware_start(sd_event *ev, const struct rr_config *c, rr_op_done_fn done,
			  void *arg, struct rr_request **ret, struct rr_err *e);

/* ---- control.c ----------------------------------------------------------- */
struct rr_view {
	time_t   now;
	int64_t  layout_age;
	time_t   layout_born;                /* the wall clock at this boot's start */
	int64_t  max_age;                    /* MaxLayoutAge= */
	enum rr_verify verify;
	double   entropy_bits;
	const char *entropy_grade;           /* rr_status_grade(): hardware, seed, tsc-only */
	unsigned failures, max_failures;
	bool     stopped, hold, staged;
	const char *hold_reason;             /* state_hold_name(), "" when not held */
	time_t   hold_time;                  /* when the hold was put in place, 0 unknown */
	char     hold_text[RR_HOLD_TEXT];    /* the operator's --reason, "" none */
	time_t   started;                    /* rerandd's start */
	bool     no_window;                  /* nothing reboots: no window, not outside them */
	char     reboot_error[RR_ERR_MAX];   /* the last reboot cancelled, and why */
	struct rr_policy_out plan;
	uint64_t successes, total_failures, weak_boots;
	enum rr_boot_origin boot_origin;
	uint64_t unplanned_boots;
	time_t   last_success, last_failure, last_verify_time, staged_time;
	char     kernel[RR_PATH];
	char     image_sha[65];
	char     stage_error[RR_ERR_MAX];
	char     unstaged_why[256];         /* why nothing is staged on purpose, "" */
	/* Secure Boot: the state now, and how the staged image is signed */
	const char *secure_boot, *lockdown;  /* rr_secureboot_name(), rr_lockdown_name() */
	bool     secure_boot_from_bp;        /* read from boot_params, not efivarfs */
	bool     locked;                    /* only signed images can be staged */
	const char *image_source;           /* stage_source_name() */
	char     signer[256];               /* "" = unsigned or not verified */
	char     signature[12];             /* verified, bad, none; "" = nothing staged */
	char     anchor[256];               /* TrustCert='s certificate it chains to, "" */
	/* fleet coordination (backend "none" when off) */
	const char *fleet_backend, *fleet_state;
	char     fleet_group[FLEET_GROUP_MAX];
	char     fleet_id[FLEET_ID_MAX];
	char     fleet_why[RR_ERR_MAX];     /* why a due reboot waits: full, error, spread */
	uint64_t fleet_errors;
	time_t   fleet_next_try;            /* next attempt at the backend, 0 = none */
	char     fleet_metrics[2048];       /* fleet_metrics_format(), the breaker's gauge */
	/* the group-wide breaker: "tripped", "ok", "unknown", or "etcd only" */
	const char *fleet_breaker;
	char     fleet_breaker_text[FLEET_MSG_MAX];  /* the failures counted (ids, causes) */
	/* the crash kernel */
	const char *crash_mode;
	enum rr_crash_state crash_state;
	bool     crash_loaded, crash_ours;
	uint64_t crash_reserved, crash_loads, crash_failures;
	time_t   crash_loaded_at;
	char     crash_kernel[RR_PATH];
	char     crash_error[RR_ERR_MAX];
	bool     crash_boot;                /* this boot is a crash kernel's */
	uint64_t crash_boots;
	/* the comeback: confirmation, the watchdog, the last cause */
	const char *confirm;                /* "pending", "failed", "" */
	const char *watchdog;               /* "fed until confirmed", "off", "absent", ... */
	uint64_t confirmed;
	enum rr_cause last_cause;
	char     last_cause_detail[256];
	time_t   last_cause_time;
	char     oneshot_note[320];          /* what became of a one-shot choice, "" */
	time_t   oneshot_note_time;
	uint64_t causes[RR_NR_CAUSES];
	/* logind inhibitors at the last look while a reboot was due */
	struct rr_inhibitors inhibitors;
	time_t   inhibited_since;           /* a due one held back by them since; 0 none */
	int64_t  max_inhibit;               /* MaxInhibitSec= */
};
#include "ctl.h"           /* the protocol: verbs, enum rr_ctl_cmd, RR_CTL_LINE */
enum rr_ctl_cmd control_parse(const char *line, size_t len);
/* The same, and the HOST of "fleet release HOST" in arg (else ""). */
enum rr_ctl_cmd control_parse_arg(const char *line, size_t len, char *arg, size_t arglen);
int control_format_text(const struct rr_view *v, char *buf, size_t len);
int control_format_json(const struct rr_view *v, char *buf, size_t len);
/* A listening socket at path, mode 0600. */
int control_listen(const char *path, struct rr_err *e);
/* Serve the listening socket lfd on ev: each root client's line, read
 * without blocking and within a deadline, goes to fn with the connection's
 * fd, which fn answers with control_reply; the server closes it unless fn
 * returns 1: it kept the fd, to answer and close later. */
typedef int (*control_fn)(void *ud, enum rr_ctl_cmd cmd, const char *arg, int fd);
int control_serve(sd_event *ev, int lfd, control_fn fn, void *ud);
int control_reply(int fd, bool ok, const char *body);

/* ---- coord.c: the fleet lock around the reboot (coord.h) ---------------- */
#include "coord.h"

#include "rerandd_daemon.h"

/* ---- metrics.c ----------------------------------------------------------- */
int metrics_format(const struct rr_view *v, char *buf, size_t len);
int metrics_write(const char *path, const struct rr_view *v, struct rr_err *e);

#endif
