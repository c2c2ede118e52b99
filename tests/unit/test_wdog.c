/* SPDX-License-Identifier: GPL-2.0-only */
/* The comeback of a rerandomized boot without hardware: KexecWatchdogSec=
 * and ConfirmTimeoutSec= refused when they would reset a healthy boot (the
 * hardware's max_timeout from a sysfs fixture), the cause the next boot
 * names, a pstore panic line (redacted), the watchdog's boot status and
 * stop_on_reboot from fixtures, the state keys round trip.  The device
 * itself (open, timeout, magic close) is exercised in the QEMU guest
 * (tests/e2e/check-comeback.sh), where a real i6300esb exists. */
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

/* Defaults, then text, then the cross-field checks, with WatchdogSysfs= at
 * the fixture directory. */
static void load(const char *text, struct rr_config *c, struct rr_cfg_errs *e)
{
	config_defaults(c);
	snprintf(c->watchdog_sysfs, sizeof(c->watchdog_sysfs), "%s/wd", dir);
	memset(e, 0, sizeof(*e));
	config_apply_text(c, text, strlen(text), "t.conf", e);
	config_validate(c, "t.conf", e);
}

static void test_config(void)
{
	struct rr_config c;
	struct rr_cfg_errs e;
	char p[512];

	snprintf(p, sizeof(p), "%s/wd", dir);
	mkdir(p, 0755);
	put("wd/max_timeout", "2046\n");

	load("", &c, &e);
	T_OK(e.n == 0 && c.kexec_watchdog == 600 && c.confirm_timeout == 600,
	     "defaults: KexecWatchdogSec=10min, ConfirmTimeoutSec=10min, accepted");
	load("[Comeback]\nKexecWatchdogSec=off\n", &c, &e);
	T_OK(e.n == 0 && c.kexec_watchdog == RR_WDOG_OFF, "KexecWatchdogSec=off");
	load("[Comeback]\nKexecWatchdogSec=soon\n", &c, &e);
	T_OK(has_err(&e, "t.conf:2: KexecWatchdogSec=soon: want a duration"),
	     "KexecWatchdogSec=soon refused with file:line");
	load("[Comeback]\nKexecWatchdogSec=20s\nConfirmTimeoutSec=1min\n", &c, &e);
	T_OK(has_err(&e, "KexecWatchdogSec=20s is shorter than 30s"), "KexecWatchdogSec=20s refused");
	load("[Comeback]\nKexecWatchdogSec=5min\nConfirmTimeoutSec=10min\n", &c, &e);
	T_OK(has_err(&e, "KexecWatchdogSec=300s is shorter than ConfirmTimeoutSec=600s"),
	     "a watchdog shorter than the confirmation time refused");
	load("[Comeback]\nKexecWatchdogSec=off\nConfirmTimeoutSec=10min\n", &c, &e);
	T_OK(e.n == 0, "off with any ConfirmTimeoutSec= is fine");
	load("[Comeback]\nConfirmTimeoutSec=30s\nKexecWatchdogSec=off\n", &c, &e);
	T_OK(has_err(&e, "ConfirmTimeoutSec= must be between 1min and 1d"), "ConfirmTimeoutSec=30s refused");
	/* iTCO_wdt v2 counts up to 613 s */
	put("wd/max_timeout", "613\n");
	load("[Comeback]\nKexecWatchdogSec=15min\nConfirmTimeoutSec=15min\n", &c, &e);
	T_OK(has_err(&e, "KexecWatchdogSec=900s is longer than the watchdog can count") &&
	     has_err(&e, "613s"), "a watchdog that cannot count that long refused, its limit named");
	load("[Comeback]\nKexecWatchdogSec=10min\nConfirmTimeoutSec=10min\n", &c, &e);
	T_OK(e.n == 0, "10min on a 613 s watchdog accepted");
	/* no watchdog, or no sysfs: nothing to compare with */
	snprintf(p, sizeof(p), "%s/wd/max_timeout", dir);
	unlink(p);
	load("[Comeback]\nKexecWatchdogSec=1h\nConfirmTimeoutSec=1h\n", &c, &e);
	T_OK(e.n == 0, "without max_timeout the hardware check is skipped");
	load("[Paths]\nWatchdog=dev/watchdog0\n", &c, &e);
	T_OK(has_err(&e, "Watchdog=dev/watchdog0: want an absolute path"), "a relative Watchdog= refused");
}

static void test_cause(void)
{
	T_OK(wdog_cause(false, true, false) == RR_CAUSE_WATCHDOG, "no rerandd, watchdog reset: watchdog");
	T_OK(wdog_cause(false, true, true) == RR_CAUSE_PANIC, "a panic wins over the watchdog it led to");
	T_OK(wdog_cause(false, false, false) == RR_CAUSE_NO_TRACE, "nothing seen: no-trace");
	T_OK(wdog_cause(true, false, false) == RR_CAUSE_UNCONFIRMED, "rerandd ran, nothing else: never-confirmed");
	T_OK(wdog_cause(true, true, false) == RR_CAUSE_WATCHDOG, "rerandd ran, then the watchdog");
	for (unsigned c = 0; c < RR_NR_CAUSES; c++) {
		enum rr_cause back;
		T_OK(wdog_cause_parse(wdog_cause_name(c), &back) == 0 && back == c, "cause %s by name",
		     wdog_cause_name(c));
	}
	enum rr_cause x;
	T_OK(wdog_cause_parse("gremlins", &x) == -EINVAL, "an unknown cause name refused");
}

static void test_redact_pstore(void)
{
	char s[160], p[512];

	snprintf(s, sizeof(s), "Kernel panic - not syncing: at ffffffff9a200000 (0x1c00000)\t!");
	wdog_redact(s);
	T_OK(!strcmp(s, "Kernel panic - not syncing: at # (#)?!"), "hex runs and a tab redacted: '%s'", s);
	snprintf(s, sizeof(s), "CPU: 0 PID: 1 Comm: init");
	wdog_redact(s);
	T_OK(!strcmp(s, "CPU: 0 PID: 1 Comm: init"), "plain text kept");

	snprintf(p, sizeof(p), "%s/pstore", dir);
	mkdir(p, 0755);
	T_OK(wdog_pstore_panic(p, s, sizeof(s)) == 0, "an empty pstore: no panic");
	put("pstore/console-ramoops-0", "Kernel panic - not syncing: console only\n");
	T_OK(wdog_pstore_panic(p, s, sizeof(s)) == 0, "only dmesg-* records count");
	put("pstore/dmesg-ramoops-0",
	    "Panic#1 Part1\n<0>[   12.3] Kernel panic - not syncing: sysrq triggered crash\n"
	    "<0>[   12.4] Kernel Offset: 0x1e000000 from 0xffffffff81000000\n");
	T_OK(wdog_pstore_panic(p, s, sizeof(s)) == 1 &&
	     !strcmp(s, "Kernel panic - not syncing: sysrq triggered crash"),
	     "the panic line of a dmesg record: '%s'", s);
	T_OK(wdog_pstore_panic("", s, sizeof(s)) == 0, "Pstore= empty: not looked at");
}

static void test_sysfs(void)
{
	struct rr_config c;
	bool reset = true;
	char p[512];

	config_defaults(&c);
	snprintf(c.watchdog_sysfs, sizeof(c.watchdog_sysfs), "%s/wd", dir);
	snprintf(p, sizeof(p), "%s/wd", dir);
	mkdir(p, 0755);
	put("wd/bootstatus", "32\n");         /* WDIOF_CARDRESET */
	T_OK(wdog_bootstatus(&c, &reset) == 0 && reset, "bootstatus 32: the watchdog reset the machine");
	put("wd/bootstatus", "0\n");
	T_OK(wdog_bootstatus(&c, &reset) == 0 && !reset, "bootstatus 0: not the watchdog");
	c.watchdog_sysfs[0] = 0;
	T_OK(wdog_bootstatus(&c, &reset) == -ENOENT, "no WatchdogSysfs=: unknown");

	snprintf(c.watchdog_stop_on_reboot, sizeof(c.watchdog_stop_on_reboot), "%s/sor", dir);
	put("sor", "-1\n");
	T_OK(wdog_stops_on_reboot(&c) == 1, "stop_on_reboot=-1 (the driver's choice): stops");
	put("sor", "0\n");
	T_OK(wdog_stops_on_reboot(&c) == 0, "watchdog.stop_on_reboot=0: keeps running");
	/* sysfs gives every attribute a size of 4096 bytes (seen: the guest's
	 * bootstatus went unread behind a 64-byte limit) */
	const char *real = "/sys/module/kernel/parameters/panic";
	if (access(real, R_OK) == 0) {
		snprintf(c.watchdog_stop_on_reboot, sizeof(c.watchdog_stop_on_reboot), "%s", real);
		FILE *f = fopen(real, "r");
		long v = -1;
		if (f && fscanf(f, "%ld", &v) != 1)
			v = -1;
		if (f)
			fclose(f);
		T_OK(wdog_stops_on_reboot(&c) == (v != 0), "a real sysfs attribute is read (%s = %ld)",
		     real, v);
	} else {
		T_OK(1, "# SKIP no %s", real);
	}
	snprintf(c.watchdog_stop_on_reboot, sizeof(c.watchdog_stop_on_reboot), "%s/none", dir);
	T_OK(wdog_stops_on_reboot(&c) == -1, "the core not loaded: unknown");

	snprintf(c.watchdog_dev, sizeof(c.watchdog_dev), "%s/no-such-watchdog", dir);
	T_OK(!wdog_present(&c), "no device node: absent");
	put("watchdog0", "");
	snprintf(c.watchdog_dev, sizeof(c.watchdog_dev), "%s/watchdog0", dir);
	T_OK(wdog_present(&c), "a device node: present");
	c.kexec_watchdog = RR_WDOG_OFF;
	T_OK(!wdog_present(&c), "KexecWatchdogSec=off: not used");
	/* a regular file is no watchdog: the timeout ioctl fails, named */
	struct rr_err e;
	int fd = -1;
	T_OK(wdog_open(&c, 600, &fd, &e) < 0 && strstr(e.msg, "cannot set a timeout of 600s") &&
	     strstr(e.msg, "watchdog0"), "a device that takes no timeout refused: %s", e.msg);
}

/* What rerandd says at start (issue 38, point 5): each case from fixtures,
 * the level and the words an operator acts on. */
static void test_start_note(void)
{
	struct rr_config c;
	char msg[768], p[512];
	int l;

	config_defaults(&c);
	snprintf(c.watchdog_dev, sizeof(c.watchdog_dev), "%s/note-dev", dir);
	snprintf(c.watchdog_sysfs, sizeof(c.watchdog_sysfs), "%s/note-sysfs", dir);
	snprintf(c.watchdog_stop_on_reboot, sizeof(c.watchdog_stop_on_reboot), "%s/note-sor", dir);

	l = wdog_start_note(&c, msg, sizeof(msg));
	T_OK(l == RR_LOG_NOTICE && strstr(msg, "no hardware watchdog (") &&
	     strstr(msg, "/usr/lib/rerand/watchdog-setup"), "none at all: a notice: %s", msg);

	snprintf(p, sizeof(p), "%s/note-sysfs", dir);
	mkdir(p, 0755);
	l = wdog_start_note(&c, msg, sizeof(msg));
	T_OK(l == RR_LOG_WARNING && strstr(msg, "its driver was loaded after rerandd started") &&
	     strstr(msg, "systemctl restart rerandd") && strstr(msg, "modules-load.d"),
	     "in sysfs, not in rerandd's /dev: a warning, restart and modules-load.d: %s", msg);

	put("note-dev", "");
	put("note-sor", "-1\n");
	l = wdog_start_note(&c, msg, sizeof(msg));
	T_OK(l == RR_LOG_WARNING && strstr(msg, "this kernel stops it at a reboot") &&
	     strstr(msg, "/usr/lib/modprobe.d/rerand.conf"),
	     "present, stop_on_reboot -1: a warning naming the option file: %s", msg);

	put("note-sor", "0\n");
	l = wdog_start_note(&c, msg, sizeof(msg));
	T_OK(l == RR_LOG_INFO && strstr(msg, "armed across each kexec for 600s, and this kernel keeps "
					"it counting"), "present, stop_on_reboot 0: info: %s", msg);

	c.kexec_watchdog = RR_WDOG_OFF;
	T_OK(wdog_start_note(&c, msg, sizeof(msg)) == -1, "KexecWatchdogSec=off: nothing to say");
}

static void test_state(void)
{
	struct rr_state s, t;
	char buf[4096];

	state_init(&s);
	s.watchdog_armed = true;
	s.confirm_pending = true;
	snprintf(s.confirm_boot_id, sizeof(s.confirm_boot_id), "0123abcd-ef");
	s.confirmed = 7;
	state_record_cause(&s, RR_CAUSE_CHECK, "/etc/rerand/post-boot.d/10-net: post-boot hook failed "
			   "(status 1)", 1700000000);
	state_record_cause(&s, RR_CAUSE_WATCHDOG, "the watchdog reset the machine at ffffffffa1000000",
			   1700000100);
	int n = state_format(&s, buf, sizeof(buf));
	T_OK(n > 0 && state_parse(buf, (size_t)n, &t) == 0, "state with the comeback keys round-trips");
	T_OK(t.watchdog_armed && t.confirm_pending && !strcmp(t.confirm_boot_id, "0123abcd-ef") &&
	     t.confirmed == 7, "armed, pending, its boot id, confirmed count");
	T_OK(t.last_cause == RR_CAUSE_WATCHDOG && t.last_cause_time == 1700000100 &&
	     t.causes[RR_CAUSE_CHECK] == 1 && t.causes[RR_CAUSE_WATCHDOG] == 1 &&
	     t.causes[RR_CAUSE_PANIC] == 0, "the last cause and the counts by cause");
	T_OK(!strcmp(t.last_cause_detail, "the watchdog reset the machine at #"),
	     "the stored detail has no address: '%s'", t.last_cause_detail);
	const char *bad = "version=1\nlast_cause=gremlins\n";
	T_OK(state_parse(bad, strlen(bad), &t) == -EBADMSG, "an unknown last_cause is a bad line");
	/* the keys every state file has (state.c's guarded ones), and a newer cause */
	const char *newer = "version=1\nboot_id=\nattempt=0\nattempt_boot_id=\nfailures=0\nhold=0\n"
			    "fleet_keep=0\nconfirm_pending=0\ncause_meteor=3\n";
	T_OK(state_parse(newer, strlen(newer), &t) == 0, "a cause_ key of a newer rerandd is skipped");
}

static void test_cmdline(void)
{
	struct rr_config c;
	struct rr_err e;
	char out[128], small[30];

	config_defaults(&c);
	T_OK(wdog_cmdline(&c, "root=/dev/vda1 ro -- single", out, sizeof(out), &e) == 0 &&
	     !strcmp(out, "watchdog.stop_on_reboot=0 root=/dev/vda1 ro -- single"),
	     "KexecWatchdogSec= on: stop_on_reboot=0 first, ahead of init's arguments: %s", out);
	T_OK(wdog_cmdline(&c, "", out, sizeof(out), &e) == 0 &&
	     !strcmp(out, "watchdog.stop_on_reboot=0"), "an empty line: %s", out);
	T_OK(wdog_cmdline(&c, "ro watchdog.stop_on_reboot=1 quiet", out, sizeof(out), &e) == 0 &&
	     !strcmp(out, "ro watchdog.stop_on_reboot=1 quiet"), "the user's own wins: %s", out);
	T_OK(wdog_cmdline(&c, "watchdog.stop_on_reboot=0 ro", out, sizeof(out), &e) == 0 &&
	     !strcmp(out, "watchdog.stop_on_reboot=0 ro"), "the last stage's is not repeated: %s",
	     out);
	T_OK(wdog_cmdline(&c, "xwatchdog.stop_on_reboot=1 ro", out, sizeof(out), &e) == 0 &&
	     !strncmp(out, "watchdog.stop_on_reboot=0 ", 26), "another word's suffix is not it: %s",
	     out);
	c.kexec_watchdog = RR_WDOG_OFF;
	T_OK(wdog_cmdline(&c, "root=/dev/vda1", out, sizeof(out), &e) == 0 &&
	     !strcmp(out, "root=/dev/vda1"), "KexecWatchdogSec=off: unchanged: %s", out);
	config_defaults(&c);
	T_OK(wdog_cmdline(&c, "root=/dev/vda1", small, sizeof(small), &e) == -E2BIG,
	     "too long for the buffer: -E2BIG");
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/rerand-test-wdog.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	test_config();
	test_cause();
	test_redact_pstore();
	test_sysfs();
	test_start_note();
	test_state();
	test_cmdline();
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", dir);
	return t_done();
}
