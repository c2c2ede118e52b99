/* SPDX-License-Identifier: GPL-2.0-only */
/* The configuration's keys in one table: config.c parses with it, --dump-config
 * prints from it, and tests/daemon/test-config-doc.sh holds rerand.conf(5) to it;
 * plus the "did you mean" for a key or section that is not in it. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "rerandd.h"

#define F(field) offsetof(struct rr_config, field), sizeof(((struct rr_config *)0)->field)
const struct rr_cfg_key rr_cfg_keys[] = {
	{ "Daemon", "StateDirectory", K_PATH, F(state_dir) },
	{ "Daemon", "RuntimeDirectory", K_PATH, F(run_dir) },
	{ "Daemon", "ControlSocket", K_PATH, F(control_socket) },
	{ "Daemon", "MetricsFile", K_PATH, F(metrics_file) },
	{ "Daemon", "RerandBinary", K_STR, F(rerand_bin) },
	{ "Daemon", "KexecBinary", K_STR, F(kexec_bin) },
	{ "Daemon", "ImageUser", K_STR, F(image_user) },
	{ "Daemon", "CheckUser", K_STR, F(check_user) },
	{ "Daemon", "CheckInterval", K_DUR, F(tick) },
	{ "Paths", "Boot", K_PATH, F(boot_dir) },
	{ "Paths", "ProcCmdline", K_PATH, F(proc_cmdline) },
	{ "Paths", "SetupData", K_PATH, F(setup_data) },
	{ "Paths", "Kmsg", K_PATH, F(kmsg) },
	{ "Paths", "Tainted", K_PATH, F(tainted) },
	{ "Paths", "BootId", K_PATH, F(boot_id) },
	{ "Paths", "PreRebootDirectory", K_PATH, F(pre_reboot_dir) },
	{ "Paths", "ProcStat", K_PATH, F(proc_stat) },
	{ "Paths", "PostBootDirectory", K_PATH, F(post_boot_dir) },
	{ "Paths", "KexecCrashSize", K_PATH, F(kexec_crash_size) },
	{ "Paths", "CrashLoaderWants", K_PATH, F(crash_loader_wants) },
	{ "Paths", "KdumpToolsDefault", K_PATH, F(kdump_tools_default) },
	{ "Paths", "KexecCrashLoaded", K_PATH, F(kexec_crash_loaded) },
	{ "Paths", "ProcVmcore", K_PATH, F(proc_vmcore) },
	{ "Paths", "Uevents", K_PATH, F(uevents) },
	{ "Paths", "LoaderEntrySelected", K_PATH, F(loader_entry_selected) },
	{ "Paths", "BootLoaderRoots", K_STR, F(boot_loader_roots) },
	{ "Paths", "GrubConfig", K_PATH, F(grub_cfg) },
	{ "Paths", "GrubEnvironment", K_PATH, F(grub_env) },
	{ "Paths", "GrubEditenv", K_PATH, F(grub_editenv) },
	{ "Paths", "PackageLocks", K_STR, F(package_locks) },
	{ "Paths", "Lockdown", K_PATH, F(lockdown_file) },
	{ "Paths", "SecureBoot", K_PATH, F(secureboot_file) },
	{ "Paths", "BootParams", K_PATH, F(boot_params_file) },
	{ "Stage", "Kernel", K_PATH, F(kernel) },
	{ "Stage", "Initrd", K_STR, F(initrd) },
	{ "Stage", "CommandLine", K_STR, F(cmdline) },
	{ "Stage", "FileSyscall", K_BOOL, F(file_syscall) },
	{ "Stage", "RestageInterval", K_DUR, F(restage_interval) },
	{ "Stage", "NewKernelSettle", K_DUR, F(new_kernel_settle) },
	{ "Stage", "SignedImageDirectory", K_PATH, F(signed_dir) },
	{ "Stage", "SignKey", K_STR, F(sign_key) },
	{ "Stage", "SignCert", K_PATH, F(sign_cert) },
	{ "Stage", "TrustCert", K_PATH, F(trust_cert) },
	{ "Policy", "MaxLayoutAge", K_DUR, F(max_age) },
	{ "Policy", "Jitter", K_DUR, F(jitter) },
	{ "Policy", "MinRebootInterval", K_DUR, F(min_interval) },
	{ "Policy", "OnOops", K_WHEN, F(on_oops) },
	{ "Policy", "OnNewKernel", K_WHEN, F(on_new_kernel) },
	{ "Policy", "RebootOutsideWindows", K_BOOL, F(outside_windows) },
	{ "Policy", "HonorInhibitors", K_BOOL, F(honor_inhibitors) },
	{ "Policy", "MaxInhibitSec", K_DUR, F(max_inhibit) },
	{ "Policy", "BlockerCommand", K_STR, F(blocker_cmd) },
	{ "Policy", "BlockerTimeout", K_DUR, F(blocker_timeout) },
	{ "Policy", "BackoffBase", K_DUR, F(backoff) },
	{ "Policy", "BackoffMax", K_DUR, F(backoff_max) },
	{ "Policy", "MaxFailures", K_UINT, F(max_failures) },
	{ "Crash", "Mode", K_CRASHMODE, F(crash_mode) },
	{ "Crash", "Kernel", K_PATH, F(crash_kernel) },
	{ "Crash", "Initrd", K_STR, F(crash_initrd) },
	{ "Crash", "CommandLine", K_STR, F(crash_cmdline) },
	{ "Crash", "FileSyscall", K_BOOL, F(crash_file_syscall) },
	{ "Crash", "HotplugSettle", K_DUR, F(hotplug_settle) },
	{ "Reboot", "Method", K_METHOD, F(method) },
	{ "Reboot", "RebootCommand", K_STR, F(reboot_cmd) },
	{ "Reboot", "HookTimeout", K_DUR, F(hook_timeout) },
	{ "Comeback", "PanicRebootSec", K_PANIC, F(panic_reboot) },
	{ "Reboot", "FirmwareRebootCommand", K_STR, F(firmware_reboot_cmd) },
	{ "Reboot", "RerandomizeOtherReboots", K_BOOL, F(rerandomize_other_reboots) },
	{ "Comeback", "KexecWatchdogSec", K_WDOG, F(kexec_watchdog) },
	{ "Comeback", "ConfirmTimeoutSec", K_DUR, F(confirm_timeout) },
	{ "Paths", "Watchdog", K_PATH, F(watchdog_dev) },
	{ "Paths", "WatchdogSysfs", K_PATH, F(watchdog_sysfs) },
	{ "Paths", "WatchdogStopOnReboot", K_PATH, F(watchdog_stop_on_reboot) },
	{ "Paths", "Pstore", K_PATH, F(pstore_dir) },
};
#undef F
const size_t rr_cfg_nkeys = sizeof(rr_cfg_keys) / sizeof(rr_cfg_keys[0]);


/* fleet_config_set()'s keys, in rerand.conf's order */
const char *const rr_cfg_fleet_keys[] = {
	"Backend", "Group", "Endpoints", "CACert", "Cert", "Key", "User", "PasswordFile",
	"AllowPlaintext", "MaxConcurrent", "LockTTL", "DownTTL", "URL", "MachineIDFile", "ID",
	"InstallID", "Timeout", "RetryBase", "RetryMax", "HelperSocket",
	"BreakerFailures", "BreakerWindowSec",
};
const size_t rr_cfg_nfleet_keys = sizeof(rr_cfg_fleet_keys) / sizeof(rr_cfg_fleet_keys[0]);
const char *const rr_cfg_window_keys[RR_CFG_NWINDOW_KEYS] = {
	"Days", "Start", "Length", "TimeZone", "Enabled",
};
const char *const rr_cfg_sections[] = {
	"Daemon", "Paths", "Stage", "Crash", "Policy", "Reboot", "Comeback", "Fleet",
};
const size_t rr_cfg_nsections = sizeof(rr_cfg_sections) / sizeof(rr_cfg_sections[0]);

_Static_assert(sizeof(rr_cfg_fleet_keys) / sizeof(rr_cfg_fleet_keys[0]) <= RR_CFG_MAX_FLEET_KEYS,
	       "struct rr_cfg_origins is too small for [Fleet]");

/* Edit distance with transpositions (optimal string alignment), case-
 * insensitive: "MaxLayutAge", "Strat" and "maxlayoutage" are typos too. */
static unsigned edit_distance(const char *a, const char *b)
{
	unsigned d[64][64], la = (unsigned)strlen(a), lb = (unsigned)strlen(b);

	if (la >= 64 || lb >= 64)
		return 99;
	for (unsigned i = 0; i <= la; i++)
		d[i][0] = i;
	for (unsigned j = 0; j <= lb; j++)
		d[0][j] = j;
	for (unsigned i = 1; i <= la; i++)
		for (unsigned j = 1; j <= lb; j++) {
			int ai = tolower((unsigned char)a[i - 1]), bj = tolower((unsigned char)b[j - 1]);
			unsigned best = d[i - 1][j - 1] + (ai != bj);
			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && ai == tolower((unsigned char)b[j - 2]) &&
			    tolower((unsigned char)a[i - 2]) == bj && d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	return d[la][lb];
}

/* Close enough to be a typo: a third of the name, at least 1, at most 3. */
static unsigned max_typo(const char *name)
{
	unsigned m = (unsigned)strlen(name) / 3;

	return m < 1 ? 1 : m > 3 ? 3 : m;
}

static void consider(const char *cand, const char *name, const char **best, unsigned *bestd)
{
	unsigned d = edit_distance(cand, name);

	if (d < *bestd) {
		*best = cand;
		*bestd = d;
	}
}

const char *config_suggest(const char *section, const char *name, char *out, size_t len)
{
	const char *best = NULL;
	unsigned bestd = 99;

	out[0] = 0;
	if (!section) {
		for (size_t i = 0; i < rr_cfg_nsections; i++)
			consider(rr_cfg_sections[i], name, &best, &bestd);
		consider("Window", name, &best, &bestd);
		if (best && bestd <= max_typo(name))
			snprintf(out, len, " (did you mean [%s%s]?)", best,
				 !strcmp(best, "Window") ? " NAME" : "");
		return out;
	}
	if (!strcmp(section, "Fleet")) {
		static const char *const old_names[] = { "RetryBaseMSec", "RetryMaxMSec" };
		for (size_t i = 0; i < rr_cfg_nfleet_keys; i++)
			consider(rr_cfg_fleet_keys[i], name, &best, &bestd);
		/* a typo of an old name: named with its new one */
		for (size_t i = 0; i < sizeof(old_names) / sizeof(old_names[0]); i++)
			consider(old_names[i], name, &best, &bestd);
		if (best && bestd <= max_typo(name) && fleet_config_alias(best)) {
			snprintf(out, len, " (did you mean %s=, now %s=?)", best, fleet_config_alias(best));
			return out;
		}
	} else if (!strncmp(section, "Window", 6)) {
		for (size_t i = 0; i < RR_CFG_NWINDOW_KEYS; i++)
			consider(rr_cfg_window_keys[i], name, &best, &bestd);
	} else {
		for (size_t i = 0; i < rr_cfg_nkeys; i++)
			if (!strcmp(rr_cfg_keys[i].section, section))
				consider(rr_cfg_keys[i].name, name, &best, &bestd);
	}
	if (best && bestd <= max_typo(name)) {
		snprintf(out, len, " (did you mean %s=?)", best);
		return out;
	}
	/* the right key in the wrong section */
	for (size_t i = 0; i < rr_cfg_nkeys; i++)
		if (!strcasecmp(rr_cfg_keys[i].name, name)) {
			snprintf(out, len, " (%s= belongs in [%s])", rr_cfg_keys[i].name,
				 rr_cfg_keys[i].section);
			return out;
		}
	for (size_t i = 0; i < rr_cfg_nfleet_keys; i++)
		if (!strcasecmp(rr_cfg_fleet_keys[i], name)) {
			snprintf(out, len, " (%s= belongs in [Fleet])", rr_cfg_fleet_keys[i]);
			return out;
		}
	return out;
}
