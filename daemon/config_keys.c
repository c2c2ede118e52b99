/* SPDX-License-Identifier: GPL-2.0-only */
/* The configuration's keys in one table: config.c parses with it, --dump-config
 * prints from it, and tests/daemon/test-config-doc.sh holds rerand.conf(5) to it;
 * plus the "did you mean" for a key or section that is not in it. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "rerandd.h"
#include "util.h"

#define F(field) offsetof(struct rr_config, field), sizeof(((struct rr_config *)0)->field)
/* the reload column (RR_CFG_*): a [Stage] input changed restages and reloads
 * the crash kernel (whose command line follows the image's); a crash input
 * reloads the crash kernel; a directory, socket or input stream waits for a
 * restart */
#define RESTAGE (RR_CFG_RESTAGE | RR_CFG_RECRASH)
#define RECRASH RR_CFG_RECRASH
#define RESTART RR_CFG_RESTART
const struct rr_cfg_key rr_cfg_keys[] = {
	{ "Daemon", "StateDirectory", K_PATH, F(state_dir), RESTART },
	{ "Daemon", "RuntimeDirectory", K_PATH, F(run_dir), RESTART },
	{ "Daemon", "ControlSocket", K_PATH, F(control_socket), RESTART },
	{ "Daemon", "MetricsFile", K_PATH, F(metrics_file), 0 },
	{ "Daemon", "RerandBinary", K_STR, F(rerand_bin), 0 },
	{ "Daemon", "KexecBinary", K_STR, F(kexec_bin), 0 },
	{ "Daemon", "ImageUser", K_STR, F(image_user), 0 },
	{ "Daemon", "CheckUser", K_STR, F(check_user), 0 },
	{ "Daemon", "CheckInterval", K_DUR, F(tick), 0 },
	{ "Paths", "Boot", K_PATH, F(boot_dir), 0 },
	{ "Paths", "ProcCmdline", K_PATH, F(proc_cmdline), 0 },
	{ "Paths", "SetupData", K_PATH, F(setup_data), 0 },
	{ "Paths", "Kmsg", K_PATH, F(kmsg), RESTART },
	{ "Paths", "Tainted", K_PATH, F(tainted), 0 },
	{ "Paths", "BootId", K_PATH, F(boot_id), 0 },
	{ "Paths", "PreRebootDirectory", K_PATH, F(pre_reboot_dir), 0 },
	{ "Paths", "ProcStat", K_PATH, F(proc_stat), 0 },
	{ "Paths", "PostBootDirectory", K_PATH, F(post_boot_dir), 0 },
	{ "Paths", "KexecCrashSize", K_PATH, F(kexec_crash_size), RECRASH },
	{ "Paths", "CrashLoaderWants", K_PATH, F(crash_loader_wants), 0 },
	{ "Paths", "KdumpToolsDefault", K_PATH, F(kdump_tools_default), 0 },
	{ "Paths", "KexecCrashLoaded", K_PATH, F(kexec_crash_loaded), 0 },
	{ "Paths", "ProcVmcore", K_PATH, F(proc_vmcore), 0 },
	{ "Paths", "Uevents", K_PATH, F(uevents), RESTART },
	{ "Paths", "LoaderEntrySelected", K_PATH, F(loader_entry_selected), 0 },
	{ "Paths", "BootLoaderRoots", K_STR, F(boot_loader_roots), 0 },
	{ "Paths", "GrubConfig", K_PATH, F(grub_cfg), 0 },
	{ "Paths", "GrubEnvironment", K_PATH, F(grub_env), 0 },
	{ "Paths", "GrubEditenv", K_PATH, F(grub_editenv), 0 },
	{ "Paths", "PackageLocks", K_STR, F(package_locks), 0 },
	{ "Paths", "Lockdown", K_PATH, F(lockdown_file), RESTAGE },
	{ "Paths", "SecureBoot", K_PATH, F(secureboot_file), RESTAGE },
	{ "Paths", "BootParams", K_PATH, F(boot_params_file), RESTAGE },
	{ "Stage", "Kernel", K_PATH, F(kernel), RESTAGE },
	{ "Stage", "Initrd", K_STR, F(initrd), RESTAGE },
	{ "Stage", "CommandLine", K_STR, F(cmdline), RESTAGE },
	{ "Stage", "FileSyscall", K_BOOL, F(file_syscall), RECRASH },
	{ "Stage", "RestageInterval", K_DUR, F(restage_interval), 0 },
	{ "Stage", "NewKernelSettle", K_DUR, F(new_kernel_settle), 0 },
	{ "Stage", "SignedImageDirectory", K_PATH, F(signed_dir), RESTAGE },
	{ "Stage", "SignKey", K_STR, F(sign_key), RESTAGE },
	{ "Stage", "SignCert", K_PATH, F(sign_cert), RESTAGE },
	{ "Stage", "TrustCert", K_PATH, F(trust_cert), RESTAGE },
	{ "Policy", "MaxLayoutAge", K_DUR, F(max_age), 0 },
	{ "Policy", "Jitter", K_DUR, F(jitter), 0 },
	{ "Policy", "MinRebootInterval", K_DUR, F(min_interval), 0 },
	{ "Policy", "OnOops", K_WHEN, F(on_oops), 0 },
	{ "Policy", "OnNewKernel", K_WHEN, F(on_new_kernel), 0 },
	{ "Policy", "RebootOutsideWindows", K_BOOL, F(outside_windows), 0 },
	{ "Policy", "HonorInhibitors", K_BOOL, F(honor_inhibitors), 0 },
	{ "Policy", "MaxInhibitSec", K_DUR, F(max_inhibit), 0 },
	{ "Policy", "BlockerCommand", K_STR, F(blocker_cmd), 0 },
	{ "Policy", "BlockerTimeout", K_DUR, F(blocker_timeout), 0 },
	{ "Policy", "BackoffBase", K_DUR, F(backoff), 0 },
	{ "Policy", "BackoffMax", K_DUR, F(backoff_max), 0 },
	{ "Policy", "MaxFailures", K_UINT, F(max_failures), 0 },
	{ "Crash", "Mode", K_CRASHMODE, F(crash_mode), RECRASH },
	{ "Crash", "Kernel", K_PATH, F(crash_kernel), RECRASH },
	{ "Crash", "Initrd", K_STR, F(crash_initrd), RECRASH },
	{ "Crash", "CommandLine", K_STR, F(crash_cmdline), RECRASH },
	{ "Crash", "FileSyscall", K_BOOL, F(crash_file_syscall), RECRASH },
	{ "Crash", "HotplugSettle", K_DUR, F(hotplug_settle), 0 },
	{ "Reboot", "Method", K_METHOD, F(method), 0 },
	{ "Reboot", "RebootCommand", K_STR, F(reboot_cmd), 0 },
	{ "Reboot", "HookTimeout", K_DUR, F(hook_timeout), 0 },
	{ "Comeback", "PanicRebootSec", K_PANIC, F(panic_reboot), RESTAGE },
	{ "Reboot", "FirmwareRebootCommand", K_STR, F(firmware_reboot_cmd), 0 },
	{ "Reboot", "RerandomizeOtherReboots", K_BOOL, F(rerandomize_other_reboots), 0 },
	{ "Comeback", "KexecWatchdogSec", K_WDOG, F(kexec_watchdog), 0 },
	{ "Comeback", "ConfirmTimeoutSec", K_DUR, F(confirm_timeout), 0 },
	{ "Paths", "Watchdog", K_PATH, F(watchdog_dev), 0 },
	{ "Paths", "WatchdogSysfs", K_PATH, F(watchdog_sysfs), 0 },
	{ "Paths", "WatchdogStopOnReboot", K_PATH, F(watchdog_stop_on_reboot), 0 },
	{ "Paths", "Pstore", K_PATH, F(pstore_dir), 0 },
};
#undef RESTART
#undef RECRASH
#undef RESTAGE
#undef F
const size_t rr_cfg_nkeys = ARRAY_SIZE(rr_cfg_keys);


const char *const rr_cfg_window_keys[RR_CFG_NWINDOW_KEYS] = {
	"Days", "Start", "Length", "TimeZone", "Enabled",
};
const char *const rr_cfg_sections[] = {
	"Daemon", "Paths", "Stage", "Crash", "Policy", "Reboot", "Comeback", "Fleet",
};
const size_t rr_cfg_nsections = ARRAY_SIZE(rr_cfg_sections);

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
		for (size_t i = 0; fleet_config_key(i); i++)
			consider(fleet_config_key(i), name, &best, &bestd);
		/* a typo of an old name: named with its new one */
		for (size_t i = 0; i < ARRAY_SIZE(old_names); i++)
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
	for (size_t i = 0; fleet_config_key(i); i++)
		if (!strcasecmp(fleet_config_key(i), name)) {
			snprintf(out, len, " (%s= belongs in [Fleet])", fleet_config_key(i));
			return out;
		}
	return out;
}
