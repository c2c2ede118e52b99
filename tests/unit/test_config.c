/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd's configuration: values, every error with file:line, drop-in
 * override order, and a reload that keeps the old config on error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rerandd.h"
#include "test.h"

static char dir[256];

static void put(const char *name, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	fputs(text, f);
	fclose(f);
}

static bool has_err(const struct rr_cfg_errs *e, const char *needle)
{
	for (unsigned i = 0; i < e->n; i++)
		if (strstr(e->msg[i], needle))
			return true;
	return false;
}

static void test_values(void)
{
	int64_t d;
	uint8_t days;

	T_OK(config_parse_duration("24h", &d) == 0 && d == 86400, "24h");
	T_OK(config_parse_duration("1d 12h 30min", &d) == 0 && d == 131400, "1d 12h 30min");
	T_OK(config_parse_duration("90", &d) == 0 && d == 90, "bare seconds");
	T_OK(config_parse_duration("5 parsecs", &d) < 0 && config_parse_duration("", &d) < 0 &&
	     config_parse_duration("-5s", &d) < 0, "bad durations refused");
	/* one grammar (issue 40, point 4): systemd's time spans, a bare number
	 * seconds in every key; ms where a key counts them; whole seconds else */
	T_OK(config_parse_duration_ms("250ms", &d) == 0 && d == 250 &&
	     config_parse_duration_ms("5", &d) == 0 && d == 5000 &&
	     config_parse_duration_ms("1min 500msec", &d) == 0 && d == 60500,
	     "ms keys: 250ms, a bare 5 is 5 seconds, 1min 500msec");
	T_OK(config_parse_duration("1500ms", &d) < 0 && config_parse_duration("2000ms", &d) == 0 && d == 2,
	     "second keys: 1500ms refused (not whole seconds), 2000ms is 2");
	{
		static const int64_t ms[] = { 0, 10, 250, 1000, 5000, 60500, 300000, 900000,
					      86400000, 90061001 };
		bool same = true;
		char out[64];
		for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++) {
			int64_t back = -1;
			config_format_duration_ms(ms[i], out, sizeof(out));
			same &= config_parse_duration_ms(out, &back) == 0 && back == ms[i];
		}
		T_OK(same && !strcmp(config_format_duration(900, out, sizeof(out)), "15min") &&
		     !strcmp(config_format_duration_ms(5000, out, sizeof(out)), "5s") &&
		     !strcmp(config_format_duration(90061, out, sizeof(out)), "1d 1h 1min 1s") &&
		     !strcmp(config_format_duration_ms(250, out, sizeof(out)), "250ms"),
		     "durations print as time spans (900 s is 15min) and parse back to the same");
	}
	T_OK(config_parse_days("Mon..Fri", &days) == 0 && days == 0x3e, "Mon..Fri");
	T_OK(config_parse_days("Sat..Mon", &days) == 0 && days == 0x43, "Sat..Mon wraps");
	T_OK(config_parse_days("sunday, Wed", &days) == 0 && days == 0x09, "full names and lists");
	T_OK(config_parse_days("Mo", &days) < 0 && config_parse_days("Funday", &days) < 0, "bad days refused");
	T_OK(config_tz_valid("Europe/Berlin") && config_tz_valid("") && !config_tz_valid("Mars/Olympus") &&
	     !config_tz_valid("../etc/passwd"), "time zones checked against the tz database");
}

static void test_files(void)
{
	struct rr_cfg_errs *e = calloc(1, sizeof(*e));
	struct rr_config c, old;
	char main_path[512], dropins[512];
	int r;

	snprintf(main_path, sizeof(main_path), "%s/rerand.conf", dir);
	snprintf(dropins, sizeof(dropins), "%s/rerand.conf.d", dir);
	mkdir(dropins, 0755);

	r = config_load(main_path, dropins, &c, e);
	T_OK(r == 0 && e->n == 0 && c.max_age == 86400 && c.max_failures == 3,
	     "no files at all: the defaults");

	put("rerand.conf",
	    "# comment\n"
	    "[Policy]\n"
	    "MaxLayoutAge=12h\n"
	    "Jitter=30min\n"
	    "OnOops=immediate\n"
	    "\n"
	    "[Window nightly]\n"
	    "Days=Mon..Fri\n"
	    "Start=02:00\n"
	    "Length=2h\n"
	    "TimeZone=Europe/Berlin\n"
	    "[Window weekend]\n"
	    "Days=Sat,Sun\n"
	    "Start=10:00\n"
	    "Length=4h\n"
	    "[Reboot]\n"
	    "RebootCommand=/bin/echo kexec \"two words\"\n");
	put("rerand.conf.d/50-site.conf", "[Policy]\nMaxLayoutAge=6h\n[Window nightly]\nStart=03:00\n");
	put("rerand.conf.d/10-early.conf", "[Policy]\nMaxLayoutAge=1h\nMinRebootInterval=2h\n");
	put("rerand.conf.d/90-off.conf", "[Window weekend]\nEnabled=no\n");
	put("rerand.conf.d/README", "this is not a .conf file and is ignored [[[\n");
	memset(e, 0, sizeof(*e));
	r = config_load(main_path, dropins, &c, e);
	T_OK(r == 0 && e->n == 0, "valid main file and drop-ins load (%u errors)", e->n);
	T_EQ_U64(c.max_age, 6 * 3600, "drop-ins apply in name order: 50-site beats 10-early and the main file");
	T_EQ_U64(c.min_interval, 2 * 3600, "a key only in 10-early survives");
	T_EQ_U64(c.jitter, 1800, "a key only in the main file survives");
	T_OK(c.on_oops == RR_WHEN_IMMEDIATE, "OnOops=immediate");
	T_OK(c.nr_win == 2 && !strcmp(c.win[0].name, "nightly") && c.win[0].start_min == 180 &&
	     c.win[0].length == 7200 && c.win[0].days == 0x3e && !strcmp(c.win[0].tz, "Europe/Berlin"),
	     "a drop-in overrides one key of a named window, keeping the rest");
	T_OK(!c.win[1].enabled, "a drop-in disables a window");
	T_OK(!strcmp(c.reboot_cmd, "/bin/echo kexec \"two words\""), "values keep their quotes");

	/* Errors: all of them, each with file:line. */
	old = c;
	put("rerand.conf.d/60-bad.conf",
	    "[Policy]\n"                        /* 1 */
	    "MaxLayoutAge=soon\n"               /* 2 */
	    "NoSuchKey=1\n"                     /* 3 */
	    "this line has no equals sign\n"    /* 4 */
	    "[Window nightly]\n"                /* 5 */
	    "TimeZone=Mars/Olympus\n"           /* 6 */
	    "Start=25:00\n"                     /* 7 */
	    "[Broken\n"                         /* 8 */
	    "[Reboot]\n"                        /* 9 */
	    "Method=teleport\n");               /* 10 */
	put("rerand.conf.d/70-bad.conf", "[Window x y]\nStart=01:00\n");
	memset(e, 0, sizeof(*e));
	c.max_age = 4242;
	r = config_load(main_path, dropins, &c, e);
	T_OK(r < 0, "a config with errors is refused");
	T_OK(c.max_age == 4242, "and the caller's config is untouched");
	T_OK(e->n == 8, "every error is reported (got %u)", e->n);
	for (unsigned i = 0; i < e->n; i++)
		printf("#   %s\n", e->msg[i]);
	T_OK(has_err(e, "60-bad.conf:2: MaxLayoutAge=soon"), "bad duration at :2");
	T_OK(has_err(e, "60-bad.conf:3: [Policy]: unknown key NoSuchKey"), "unknown key at :3");
	T_OK(has_err(e, "60-bad.conf:4: expected Key=Value"), "syntax error at :4");
	T_OK(has_err(e, "60-bad.conf:6: TimeZone=Mars/Olympus"), "bad zone at :6");
	T_OK(has_err(e, "60-bad.conf:7: Start=25:00"), "bad time at :7");
	T_OK(has_err(e, "60-bad.conf:8: bad section header"), "bad section at :8");
	T_OK(has_err(e, "60-bad.conf:10: Method=teleport"), "bad method at :10");
	T_OK(has_err(e, "70-bad.conf:1: [Window x y]"), "bad window name in the next file at :1");

	/* SIGHUP-style reload: the old config stays on error, the new one
	 * replaces it once fixed. */
	c = old;
	memset(e, 0, sizeof(*e));
	r = config_load(main_path, dropins, &c, e);
	T_OK(r < 0 && c.max_age == 6 * 3600 && c.nr_win == 2, "reload with errors keeps the running config");
	char p[600];
	snprintf(p, sizeof(p), "%s/60-bad.conf", dropins);
	unlink(p);
	snprintf(p, sizeof(p), "%s/70-bad.conf", dropins);
	unlink(p);
	put("rerand.conf.d/50-site.conf", "[Policy]\nMaxLayoutAge=8h\n");
	memset(e, 0, sizeof(*e));
	r = config_load(main_path, dropins, &c, e);
	T_OK(r == 0 && c.max_age == 8 * 3600, "fixed config reloads and replaces it");

	/* cross-field checks */
	put("rerand.conf.d/80-x.conf", "[Policy]\nJitter=9h\n[Reboot]\nMethod=command\nRebootCommand=\n"
	    "[Window late]\nDays=Mon\n");
	memset(e, 0, sizeof(*e));
	r = config_load(main_path, dropins, &c, e);
	/* each led by the drop-in line that set its first key, each key's
	 * file:line after it (issue 40, point 5) */
	T_OK(r < 0 && has_err(e, "80-x.conf:2: Jitter=9h is longer than MaxLayoutAge=8h (Jitter= at ") &&
	     has_err(e, "80-x.conf:2, MaxLayoutAge= at ") && has_err(e, "50-site.conf:2)") &&
	     has_err(e, "80-x.conf:4: Method=command needs RebootCommand= (Method= at ") &&
	     has_err(e, "80-x.conf:6: [Window late] has no Start="),
	     "cross-field errors: jitter > age, command method without a command, incomplete window, "
	     "each with its keys' file:line");
	free(e);
}

/* [Crash] and its [Paths]: defaults, values, and the refusals. */
static void test_crash(void)
{
	struct rr_cfg_errs *e = calloc(1, sizeof(*e));
	struct rr_config c;
	char main_path[512];
	int r;

	config_defaults(&c);
	T_OK(c.crash_mode == RR_CRASH_AUTO && !*c.crash_kernel && !*c.crash_initrd &&
	     !c.crash_cmdline_set && !c.crash_file_syscall_set && c.hotplug_settle == 10 &&
	     !strcmp(c.kexec_crash_size, "/sys/kernel/kexec_crash_size") &&
	     !strcmp(c.kexec_crash_loaded, "/sys/kernel/kexec_crash_loaded") &&
	     !strcmp(c.proc_vmcore, "/proc/vmcore") && !*c.uevents,
	     "[Crash] defaults: auto, as [Stage], kdump-tools-style line, netlink uevents");
	snprintf(main_path, sizeof(main_path), "%s/crash.conf", dir);
	put("crash.conf", "[Crash]\nMode=off\nKernel=/boot/vmlinuz-crash\nInitrd=none\n"
	    "CommandLine=root=/dev/vda1 console=ttyS0\nFileSyscall=yes\nHotplugSettle=30s\n"
	    "[Paths]\nKexecCrashSize=/tmp/size\nKexecCrashLoaded=/tmp/loaded\nProcVmcore=/tmp/vmcore\n"
	    "Uevents=/tmp/uevents.fifo\n");
	r = config_load(main_path, NULL, &c, e);
	T_OK(r == 0 && c.crash_mode == RR_CRASH_OFF && !strcmp(c.crash_kernel, "/boot/vmlinuz-crash") &&
	     !strcmp(c.crash_initrd, "none") && c.crash_cmdline_set &&
	     !strcmp(c.crash_cmdline, "root=/dev/vda1 console=ttyS0") && c.crash_file_syscall &&
	     c.crash_file_syscall_set && !c.file_syscall && c.hotplug_settle == 30 &&
	     !strcmp(c.kexec_crash_size, "/tmp/size") && !strcmp(c.uevents, "/tmp/uevents.fifo"),
	     "every [Crash] key and the crash [Paths] keys are read (%u errors)", e->n);
	put("crash.conf", "[Crash]\n"                       /* 1 */
	    "Mode=kdump\n"                                  /* 2 */
	    "CommandLine=root=/dev/vda1 nokaslr\n"          /* 3 */
	    "Initrd=relative.img\n"                         /* 4 */
	    "Kernel=vmlinuz\n"                              /* 5 */
	    "HotplugSettle=2h\n"                            /* 6 */
	    "Colour=red\n");                                /* 7 */
	memset(e, 0, sizeof(*e));
	r = config_load(main_path, NULL, &c, e);
	for (unsigned i = 0; i < e->n; i++)
		printf("#   %s\n", e->msg[i]);
	T_OK(r < 0 && has_err(e, "crash.conf:2: Mode=kdump: want auto or off"), "a bad Mode= at :2");
	T_OK(has_err(e, "[Crash] CommandLine= has nokaslr"), "nokaslr in [Crash] CommandLine= is refused");
	T_OK(has_err(e, "[Crash] Initrd= wants an absolute path"), "a relative crash initrd is refused");
	T_OK(has_err(e, "crash.conf:5: Kernel=vmlinuz: want an absolute path"), "a relative crash kernel at :5");
	T_OK(has_err(e, "HotplugSettle= must be at most 1h"), "a settle delay over 1h is refused");
	T_OK(has_err(e, "crash.conf:7: [Crash]: unknown key Colour"), "an unknown [Crash] key at :7");
	put("crash.conf", "[Crash]\nCommandLine=root=/dev/vda1 -- nokaslr\n");
	memset(e, 0, sizeof(*e));
	T_OK(config_load(main_path, NULL, &c, e) == 0, "nokaslr after -- (init's) is allowed");
	free(e);
}

/* What a reload asks, from the key table's reload column: each [Stage]
 * input restages (and reloads the crash kernel), each crash input reloads
 * the crash kernel only, other keys neither; [Crash] FileSyscall= going
 * from "as [Stage]" to the same value written out is no change. */
static unsigned reload_after(const char *text)
{
	struct rr_cfg_errs *e = calloc(1, sizeof(*e));
	struct rr_config o, c;
	unsigned fx;

	config_defaults(&o);
	c = o;
	config_apply_text(&c, text, strlen(text), "reload.conf", e);
	if (e->n)
		printf("#   %s: %s\n", text, e->msg[0]);
	fx = e->n ? 99 : config_reload_effects(&o, &c);
	free(e);
	return fx;
}

static void test_reload(void)
{
	const unsigned both = RR_CFG_RESTAGE | RR_CFG_RECRASH;

	T_OK(reload_after("[Policy]\nMaxLayoutAge=2d\n") == 0 &&
	     reload_after("[Daemon]\nMetricsFile=/tmp/m.prom\n") == 0,
	     "a policy or metrics key changes nothing staged");
	T_OK(reload_after("[Stage]\nKernel=/boot/vmlinuz-x\n") == both &&
	     reload_after("[Stage]\nCommandLine=quiet\n") == both &&
	     reload_after("[Stage]\nSignKey=/etc/k.pem\n") == both &&
	     reload_after("[Paths]\nLockdown=/tmp/lockdown\n") == both &&
	     reload_after("[Comeback]\nPanicRebootSec=off\n") == both,
	     "the image's inputs restage and reload the crash kernel");
	T_OK(reload_after("[Crash]\nKernel=/boot/vmlinuz-c\n") == RR_CFG_RECRASH &&
	     reload_after("[Crash]\nFileSyscall=yes\n") == RR_CFG_RECRASH &&
	     reload_after("[Stage]\nFileSyscall=yes\n") == RR_CFG_RECRASH &&
	     reload_after("[Paths]\nKexecCrashSize=/tmp/s\n") == RR_CFG_RECRASH,
	     "the crash kernel's inputs reload it only");
	T_OK(reload_after("[Crash]\nFileSyscall=\n") == 0 &&
	     reload_after("[Stage]\nKernel=\n") == 0, "a value set to what it was is no change");
	T_OK(reload_after("[Paths]\nKmsg=/tmp/kmsg\n") == 0,
	     "a key that waits for a restart asks nothing of the reload");
}

int main(void)
{
	char cmd[300];

	snprintf(dir, sizeof(dir), "/tmp/rerand-test-config-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	test_values();
	test_files();
	test_crash();
	test_reload();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
	return t_done();
}
