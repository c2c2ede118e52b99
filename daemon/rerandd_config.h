/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd's configuration: struct rr_config, its loader (config.c), its key
 * table (config_keys.c) and --check-config / --dump-config (config_dump.c).
 * A part of rerandd.h, which includes it after the types it uses:
 * include rerandd.h, not this file. */
#ifndef RERANDD_CONFIG_H
#define RERANDD_CONFIG_H

/* ---- config.c ------------------------------------------------------------ */
enum rr_when { RR_WHEN_IGNORE = 0, RR_WHEN_WINDOW, RR_WHEN_IMMEDIATE };
enum rr_method { RR_RM_AUTO = 0, RR_RM_LOGIND, RR_RM_SYSTEMD, RR_RM_SYSCALL, RR_RM_COMMAND };
enum rr_crash_mode { RR_CRASH_AUTO = 0, RR_CRASH_OFF };

struct rr_window {
	char     name[64];
	bool     enabled;
	uint8_t  days;            /* bit n = tm_wday n (0 = Sunday) */
	int      start_min;       /* minutes after local midnight, -1 unset */
	int64_t  length;          /* seconds */
	char     tz[64];          /* IANA zone; "" = the system's local time */
	char     origin[RR_PATH + 16]; /* "file:line" of its first section header */
};

/* MetricsFile='s default: in the directory Debian's prometheus-node-exporter
 * reads textfiles from (its built-in --collector.textfile.directory) */
#define RR_METRICS_FILE "/var/lib/prometheus/node-exporter/rerand.prom"

struct rr_config {
	/* [Daemon] */
	char state_dir[RR_PATH], run_dir[RR_PATH], control_socket[RR_PATH];
	char metrics_file[RR_PATH], rerand_bin[RR_PATH], kexec_bin[RR_PATH];
	char image_user[64];                /* builds images (as root only; see caps.c) */
	char check_user[64];                /* parses what was built (stage_parse.c); "" = image_user */
	int64_t tick;                       /* longest sleep between policy checks */
	/* [Paths]: every kernel interface, so tests can point them at fixtures */
	char boot_dir[RR_PATH], proc_cmdline[RR_PATH], setup_data[RR_PATH];
	char kmsg[RR_PATH], tainted[RR_PATH], boot_id[RR_PATH], pre_reboot_dir[RR_PATH];
	char proc_stat[RR_PATH];            /* its btime line: when this boot began */
	char post_boot_dir[RR_PATH];        /* health hooks before the fleet slot is freed */
	char kexec_crash_size[RR_PATH];     /* bytes reserved by crashkernel= */
	/* where enabled units are linked (kdump-tools.service, kdump.service:
	 * another crash loader, which Mode=auto leaves alone) and
	 * kdump-tools' defaults file (USE_KDUMP=0 turns it off) */
	char crash_loader_wants[RR_PATH], kdump_tools_default[RR_PATH];
	char kexec_crash_loaded[RR_PATH];   /* 1 while a crash kernel is loaded */
	char proc_vmcore[RR_PATH];          /* exists only inside a crash kernel */
	char uevents[RR_PATH];              /* "" = the kernel's uevent netlink socket;
					     * a path = a FIFO of uevents (tests) */
	char lockdown_file[RR_PATH];        /* securityfs lockdown: "[none] integrity ..." */
	char secureboot_file[RR_PATH];      /* efivarfs SecureBoot variable */
	char boot_params_file[RR_PATH];     /* boot_params: Secure Boot where efivarfs
					     * cannot say; "" = not asked */
	char loader_entry_selected[RR_PATH]; /* efivarfs: systemd-boot's entry of this boot */
	char boot_loader_roots[RR_PATH];    /* where the ESP/XBOOTLDR may be mounted, blank-separated */
	char grub_cfg[RR_PATH], grub_env[RR_PATH];   /* GRUB's menu and environment block, "" = not read */
	char grub_editenv[RR_PATH];          /* GRUB's grub-editenv, "" = next_entry never cleared */
	bool plan_running;                  /* not a key: stage_plan() takes the running kernel,
					     * not the boot loader's next (the crash kernel) */
	char package_locks[RR_PATH];        /* dpkg's lock files, blank-separated */
	/* [Stage] */
	char kernel[RR_PATH];               /* "" = <boot>/vmlinuz-$(uname -r) */
	char initrd[RR_PATH];               /* "" = guess from the kernel; "none" */
	char cmdline[RR_CMD];
	bool cmdline_set;
	bool file_syscall;
	/* Under lockdown only signed images are staged: <dir>/<release>.img made
	 * on a build host, else signed here with SignKey=/SignCert= (weakens
	 * lockdown: root could then sign any kernel). */
	char signed_dir[RR_PATH];
	char sign_key[RR_PATH];             /* a PEM file or a PKCS#11 URI */
	char sign_cert[RR_PATH];
	/* certificates a signed image's signer must chain to (db, MOK, a CA);
	 * "" = only the signature's own certificate is checked */
	char trust_cert[RR_PATH];
	int64_t restage_interval, new_kernel_settle;
	/* [Policy] */
	int64_t max_age, jitter, min_interval, backoff, backoff_max, blocker_timeout;
	int64_t max_inhibit;                /* MaxInhibitSec=: how long inhibitors may hold one back */
	enum rr_when on_oops, on_new_kernel;
	bool outside_windows, honor_inhibitors;
	unsigned max_failures;              /* 0 = never stop */
	char blocker_cmd[RR_CMD];
	/* [Reboot] */
	enum rr_method method;
	char reboot_cmd[RR_CMD];
	/* a kexec reboot rerandd did not ask for (systemctl reboot on systemd
	 * >= 255, systemctl kexec, kured) into its image: counted and watched
	 * as a rerandomization (yes), or the image unloaded first (no) */
	bool rerandomize_other_reboots;
	char firmware_reboot_cmd[RR_CMD];   /* Method=command: a reboot through the firmware */
	int64_t hook_timeout;
	/* [Comeback]: panic=N on what rerandd stages (and the crash kernel): seconds, 0 =
	 * none added, < 0 = reboot at once */
	int64_t panic_reboot;
	/* [Comeback]: a rerandomized boot that does not come back by itself */
	int64_t kexec_watchdog;             /* seconds, RR_WDOG_OFF */
	int64_t confirm_timeout;            /* from the new boot's start */
	char watchdog_dev[RR_PATH];         /* [Paths] Watchdog= */
	char watchdog_sysfs[RR_PATH];       /* [Paths] WatchdogSysfs=: its class directory */
	char watchdog_stop_on_reboot[RR_PATH]; /* the watchdog core's parameter */
	char pstore_dir[RR_PATH];
	/* [Crash]: the rerandomizing crash (kdump) kernel */
	enum rr_crash_mode crash_mode;
	char crash_kernel[RR_PATH];         /* "" = the kernel [Stage] stages */
	char crash_initrd[RR_PATH];         /* "" = as [Stage]; "none" */
	char crash_cmdline[RR_CMD];
	bool crash_cmdline_set;             /* else kdump-tools-style from ProcCmdline */
	bool crash_file_syscall, crash_file_syscall_set;  /* unset = as [Stage] */
	int64_t hotplug_settle;             /* after memory/CPU hotplug, before reloading */
	/* [Window NAME] */
	struct rr_window win[RR_MAX_WINDOWS];
	unsigned nr_win;
	/* [Fleet]: parsed and checked by fleet.c */
	struct fleet_config fleet;
};

#define RR_WDOG_OFF (-1)

#define RR_CFG_MAX_ERRS 64
struct rr_cfg_errs {
	unsigned n, dropped;
	char msg[RR_CFG_MAX_ERRS][RR_PATH + 256];
};

#define RR_CONF_MAIN    "/etc/rerand/rerand.conf"
#define RR_CONF_DROPINS "/etc/rerand/rerand.conf.d"

void config_defaults(struct rr_config *c);
/* Apply one file's text on top of c; errors are appended as "name:line: ...". */
void config_apply_text(struct rr_config *c, const char *text, size_t len, const char *name,
		       struct rr_cfg_errs *errs);
/* One message into errs (NULL: none kept); past RR_CFG_MAX_ERRS, counted. */
void config_errs_add(struct rr_cfg_errs *errs, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Cross-field checks after all files ("name: ..."): config_check.c. */
void config_validate(const struct rr_config *c, const char *name, struct rr_cfg_errs *errs);
/* Defaults, then the main file (may be absent), then the *.conf files of dropin_dir in name
 * order.  Returns 0 and *ret, or -EINVAL with every error in errs and *ret
 * untouched.  config_load_ex() leads a check across keys with the file:line
 * of the keys it names. */
int config_load(const char *main_path, const char *dropin_dir, struct rr_config *ret,
		struct rr_cfg_errs *errs);
int config_parse_days(const char *s, uint8_t *ret);
bool config_tz_valid(const char *zone);
/* An empty ControlSocket= means <RuntimeDirectory>/control: filled in here, so
 * that a reload compares like with like. */
void config_fill_runtime(struct rr_config *c);

/* ---- config_keys.c: the key table (parser, --dump-config, rerand.conf(5)'s test) */
enum rr_ktype { K_PATH, K_STR, K_DUR, K_BOOL, K_UINT, K_WHEN, K_METHOD, K_CRASHMODE, K_PANIC,
		K_WDOG };
/* What a changed value asks of a reload (SIGHUP, `rerand reload`): build
 * and stage the image again, load the crash kernel again, or nothing until
 * rerandd restarts (the old value is kept meanwhile, and the journal says so). */
enum { RR_CFG_RESTAGE = 1 << 0, RR_CFG_RECRASH = 1 << 1, RR_CFG_RESTART = 1 << 2 };
struct rr_cfg_key {
	const char *section, *name;
	enum rr_ktype type;
	size_t off, size;
	unsigned reload;                  /* RR_CFG_* */
};
extern const struct rr_cfg_key rr_cfg_keys[];
extern const size_t rr_cfg_nkeys;
/* [Window NAME] keys ([Fleet]'s are fleet_config.c's: fleet_config_key()) */
extern const char *const rr_cfg_window_keys[];
#define RR_CFG_NWINDOW_KEYS 5
/* The fixed sections, in the order rerand.conf has them ([Window NAME] aside). */
extern const char *const rr_cfg_sections[];
extern const size_t rr_cfg_nsections;
/* " (did you mean X?)" for an unknown key of a section (NULL: a section name),
 * or "" when nothing is close. */
const char *config_suggest(const char *section, const char *name, char *out, size_t len);

/* Where each value came from ("file:line"; "" = the built-in default). */
#define RR_CFG_ORIGIN 300
#define RR_CFG_MAX_KEYS 80
struct rr_cfg_origins {
	char key[RR_CFG_MAX_KEYS][RR_CFG_ORIGIN];
	char fleet[FLEET_NR_KEYS][RR_CFG_ORIGIN];
	char win[RR_MAX_WINDOWS][RR_CFG_NWINDOW_KEYS][RR_CFG_ORIGIN];
};
struct rr_cfg_load {
	const char *main, *dir;
	bool main_required;          /* must exist; else a missing one is a warning */
	struct rr_cfg_origins *origins;   /* NULL: not kept */
	/* what is accepted but should change (a deprecated key name, a main
	 * file allowed to be missing), each "file:line: ..."; NULL: not kept */
	struct rr_cfg_errs *warns;
};
int config_load_ex(const struct rr_cfg_load *l, struct rr_config *ret, struct rr_cfg_errs *errs);

/* ---- config_dump.c: rerandd --check-config / --dump-config ---------------- */
/* One key's value as --dump-config prints it (what the parser reads back). */
void config_format_value(const struct rr_config *c, const struct rr_cfg_key *k, char *out,
			 size_t len);
/* What a reload from o to c asks (RR_CFG_RESTAGE, RR_CFG_RECRASH): the
 * reload column of each key whose value differs as --dump-config prints it. */
unsigned config_reload_effects(const struct rr_config *o, const struct rr_config *c);
/* The effective configuration as rerand.conf text (it parses back to the
 * same), each value preceded by a comment naming its file:line or "default". */
int config_dump(FILE *f, const struct rr_config *c, const struct rr_cfg_origins *o);
/* --check-config (dump false) or --dump-config: 0 when the configuration is
 * good, EX_CONFIG (78; errors printed to stderr, each naming its file) if
 * not, 1 when rerandd itself failed (memory, writing stdout). */
int config_cli(const struct rr_cfg_load *l, bool dump);

#endif
