/* SPDX-License-Identifier: GPL-2.0-only */
/* panic= on what rerandd stages ([Comeback] PanicRebootSec=, issue 22 item
 * 2): added with its rerand.panic= mark, the user's own panic= wins, a
 * changed setting replaces rerandd's earlier one, init's words stay last;
 * the key's values; and stage_plan's command line carrying it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rerandd.h"
#include "test.h"

static char out[RR_CMD];

static const char *pc(const char *in, int64_t sec)
{
	struct rr_err e = { "" };

	if (panic_cmdline(in, sec, out, sizeof(out), &e) < 0)
		snprintf(out, sizeof(out), "ERROR %s", e.msg);
	return out;
}

static void test_cmdline(void)
{
	struct rr_err e;
	char small[24];

	T_OK(!strcmp(pc("root=/dev/vda1 ro quiet", 10), "root=/dev/vda1 ro quiet panic=10 rerand.panic=10"),
	     "added with its mark: %s", out);
	T_OK(!strcmp(pc("root=/dev/vda1 panic=30 ro", 10), "root=/dev/vda1 panic=30 ro"),
	     "the user's panic= wins, nothing added: %s", out);
	T_OK(!strcmp(pc("root=/dev/vda1 panic=0", 10), "root=/dev/vda1 panic=0"),
	     "the user's panic=0 (hang) wins too: %s", out);
	T_OK(!strcmp(pc("root=/dev/vda1 ro panic=10 rerand.panic=10", 30),
		     "root=/dev/vda1 ro panic=30 rerand.panic=30"),
	     "rerandd's own from the last stage is replaced by a new setting: %s", out);
	T_OK(!strcmp(pc("root=/dev/vda1 ro panic=10 rerand.panic=10", 10),
		     "root=/dev/vda1 ro panic=10 rerand.panic=10"),
	     "restaged from a boot rerandd staged: the same line, no second panic=: %s", out);
	T_OK(!strcmp(pc("root=/dev/vda1 panic=10 rerand.panic=10", 0), "root=/dev/vda1"),
	     "PanicRebootSec=off takes rerandd's panic= away: %s", out);
	T_OK(!strcmp(pc("root=/dev/vda1 panic=5 panic=10 rerand.panic=10", 30), "root=/dev/vda1 panic=5"),
	     "the user's next to rerandd's old one: the user's stays, alone: %s", out);
	T_OK(!strcmp(pc("root=/dev/vda1", -1), "root=/dev/vda1 panic=-1 rerand.panic=-1"),
	     "a negative setting: panic=-1, reboot at once: %s", out);
	T_OK(!strcmp(pc("root=/dev/vda1 ro -- single panic=3", 10),
		     "root=/dev/vda1 ro panic=10 rerand.panic=10 -- single panic=3"),
	     "before \"--\"; init's words (a panic= among them) stay last and do not count: %s", out);
	T_OK(!strcmp(pc("dyndbg=\"file panic.c +p panic=3\" ro", 10),
		     "dyndbg=\"file panic.c +p panic=3\" ro panic=10 rerand.panic=10"),
	     "panic= inside a quoted value is not a panic= word: %s", out);
	T_OK(!strcmp(pc("panic_on_warn=1 panic_print=3 oops=panic", 10),
		     "panic_on_warn=1 panic_print=3 oops=panic panic=10 rerand.panic=10"),
	     "panic_on_warn= and friends are other parameters: %s", out);
	T_OK(!strcmp(pc("", 10), "panic=10 rerand.panic=10"), "an empty line: %s", out);
	T_OK(panic_cmdline("root=/dev/vda1 quiet", 10, small, sizeof(small), &e) == -E2BIG &&
	     strstr(e.msg, "longer than"), "too long for the buffer: -E2BIG, %s", e.msg);
}

static int conf(const char *text, struct rr_config *c, struct rr_cfg_errs *errs)
{
	memset(errs, 0, sizeof(*errs));
	config_defaults(c);
	config_apply_text(c, text, strlen(text), "t.conf", errs);
	return errs->n ? -EINVAL : 0;
}

static void test_config(void)
{
	static const struct { const char *v; int64_t want; } ok[] = {
		{ "10", 10 }, { "30s", 30 }, { "1min", 60 }, { "1h", 3600 }, { "0", 0 },
		{ "off", 0 }, { "no", 0 }, { "-1", -1 }, { "-5", -1 },
	};
	static const char *bad[] = { "2h", "abc", "-", "-x", "10 apples", "" };
	struct rr_cfg_errs errs;
	struct rr_config c;
	char text[128];

	config_defaults(&c);
	T_OK(c.panic_reboot == 10, "PanicRebootSec= defaults to 10");
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		snprintf(text, sizeof(text), "[Comeback]\nPanicRebootSec=%s\n", ok[i].v);
		T_OK(conf(text, &c, &errs) == 0 && c.panic_reboot == ok[i].want,
		     "PanicRebootSec=%s is %lld", ok[i].v, (long long)c.panic_reboot);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "[Comeback]\nPanicRebootSec=%s\n", bad[i]);
		T_OK(conf(text, &c, &errs) < 0 && strstr(errs.msg[0], "t.conf:2: PanicRebootSec=") &&
		     strstr(errs.msg[0], "want seconds"), "PanicRebootSec=%s refused: %s", bad[i],
		     errs.n ? errs.msg[0] : "(no error)");
	}
}

/* stage_plan: the command line `rerand load --append` gets. */
static void test_plan(void)
{
	char dir[] = "/tmp/rerand-test-panic-XXXXXX", kernel[300], cmdline[300];
	struct rr_stage_plan p;
	struct rr_config c;
	struct rr_err e = { "" };
	FILE *f;

	if (!mkdtemp(dir)) {
		T_OK(0, "mkdtemp");
		return;
	}
	snprintf(kernel, sizeof(kernel), "%s/vmlinuz-test", dir);
	snprintf(cmdline, sizeof(cmdline), "%s/cmdline", dir);
	/* stage_plan only hashes the kernel file: any file does */
	if ((f = fopen(kernel, "w"))) {
		fputs("not a kernel\n", f);
		fclose(f);
	}
	if ((f = fopen(cmdline, "w"))) {
		fputs("BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro panic=10 rerand.panic=10\n", f);
		fclose(f);
	}
	config_defaults(&c);
	snprintf(c.state_dir, sizeof(c.state_dir), "%s", dir);
	snprintf(c.kernel, sizeof(c.kernel), "%s", kernel);
	snprintf(c.initrd, sizeof(c.initrd), "none");
	snprintf(c.proc_cmdline, sizeof(c.proc_cmdline), "%s", cmdline);
	snprintf(c.lockdown_file, sizeof(c.lockdown_file), "%s/no-lockdown", dir);
	snprintf(c.secureboot_file, sizeof(c.secureboot_file), "%s/no-secureboot", dir);
	snprintf(c.loader_entry_selected, sizeof(c.loader_entry_selected), "%s/no-entry", dir);
	c.panic_reboot = 20;
	T_OK(stage_plan(&c, NULL, &p, &e) == 0 &&
	     !strcmp(p.cmdline, "watchdog.stop_on_reboot=0 root=/dev/vda1 ro panic=20 rerand.panic=20"),
	     "KexecWatchdogSec= on (the default): the watchdog word too: '%s' %s", p.cmdline, e.msg);
	c.kexec_watchdog = RR_WDOG_OFF;            /* panic= alone from here */
	T_OK(stage_plan(&c, NULL, &p, &e) == 0 &&
	     !strcmp(p.cmdline, "root=/dev/vda1 ro panic=20 rerand.panic=20"),
	     "stage_plan from /proc/cmdline of a boot rerandd staged, PanicRebootSec=20: '%s' %s",
	     p.cmdline, e.msg);
	c.cmdline_set = true;
	snprintf(c.cmdline, sizeof(c.cmdline), "root=/dev/vda2 panic=60");
	T_OK(stage_plan(&c, NULL, &p, &e) == 0 && !strcmp(p.cmdline, "root=/dev/vda2 panic=60"),
	     "CommandLine= with a panic= of its own: kept as it is: '%s' %s", p.cmdline, e.msg);
	snprintf(c.cmdline, sizeof(c.cmdline), "root=/dev/vda2");
	T_OK(stage_plan(&c, NULL, &p, &e) == 0 &&
	     !strcmp(p.cmdline, "root=/dev/vda2 panic=20 rerand.panic=20"),
	     "CommandLine= without one: panic= added: '%s' %s", p.cmdline, e.msg);
	unlink(kernel);
	unlink(cmdline);
	rmdir(dir);
}

int main(void)
{
	test_cmdline();
	test_config();
	test_plan();
	return t_done();
}
