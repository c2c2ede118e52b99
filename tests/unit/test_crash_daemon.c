/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd's crash kernel: its command line, uevent classification from raw
 * kernel buffers, crash-boot detection and accounting, reload timing, and
 * what status and metrics say. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rerand/abi.h>
#include "rerandd.h"
#include "test.h"

#define UEV(lit) lit, sizeof(lit) - 1

static void test_cmdline(void)
{
	char out[RR_CMD];
	struct rr_err e;

	T_OK(crash_build_cmdline("BOOT_IMAGE=/vmlinuz-6.1.0 root=UUID=ab-cd ro crashkernel=256M quiet\n",
				 NULL, out, sizeof(out), &e) == 0 &&
	     !strcmp(out, "root=UUID=ab-cd ro quiet " RR_CRASH_APPEND),
	     "default: BOOT_IMAGE= and crashkernel= dropped, kdump-tools' words appended: '%s'", out);
	T_OK(!strcmp(RR_CRASH_APPEND, "reset_devices systemd.unit=kdump-tools-dump.service nr_cpus=1 "
		     "irqpoll nousb"), "the appended words are Debian kdump-tools' amd64 defaults");
	T_OK(crash_build_cmdline("root=/dev/vda1 crashkernel=512M,high crashkernel=128M,low "
				 "crashkernel=1G-4G:192M,4G-:256M initrd=/initrd.img ro", NULL, out,
				 sizeof(out), &e) == 0 && !strstr(out, "crashkernel") && !strstr(out, "initrd="),
	     "every crashkernel= form and initrd= dropped: '%s'", out);
	T_OK(crash_build_cmdline("root=/dev/vda1 nr_cpus=16 maxcpus=8 irqpoll reset_devices nousb "
				 "systemd.unit=graphical.target hugepages=512 hugepagesz=2M "
				 "default_hugepagesz=1G cma=64M mem=8G memmap=1G$4G elfcorehdr=1234K abm=1",
				 NULL, out, sizeof(out), &e) == 0 &&
	     !strcmp(out, "root=/dev/vda1 " RR_CRASH_APPEND),
	     "conflicting words dropped, each appended word once: '%s'", out);
	T_OK(crash_build_cmdline("root=/dev/vda1 nokaslr console=ttyS0", NULL, out, sizeof(out), &e) == 0 &&
	     !strstr(out, "nokaslr") && strstr(out, "console=ttyS0"),
	     "nokaslr in the running command line never reaches the crash kernel: '%s'", out);
	T_OK(crash_build_cmdline("root=/dev/vda1 ro -- single nr_cpus=4", NULL, out, sizeof(out), &e) == 0 &&
	     !strcmp(out, "root=/dev/vda1 ro " RR_CRASH_APPEND " -- single nr_cpus=4"),
	     "init's arguments after -- stay last and untouched: '%s'", out);
	T_OK(crash_build_cmdline("root=/dev/vda1 dyndbg=\"file x.c +p crashkernel=1M\" ro", NULL, out,
				 sizeof(out), &e) == 0 && strstr(out, "dyndbg=\"file x.c +p crashkernel=1M\""),
	     "a quoted value is one word: '%s'", out);

	T_OK(crash_build_cmdline("root=/dev/sda1 crashkernel=256M", "root=/dev/vda1 console=ttyS0 "
				 "crashkernel=64M BOOT_IMAGE=/x elfcorehdr=1K nr_cpus=2", out, sizeof(out),
				 &e) == 0 && !strcmp(out, "root=/dev/vda1 console=ttyS0 nr_cpus=2"),
	     "custom: used as given, only loader words dropped, nothing appended: '%s'", out);
	T_OK(crash_build_cmdline(NULL, "root=/dev/vda1 nokaslr", out, sizeof(out), &e) == -EINVAL &&
	     strstr(e.msg, "nokaslr"), "custom: nokaslr refused (%s)", e.msg);
	T_OK(crash_build_cmdline(NULL, "root=/dev/vda1 -- nokaslr", out, sizeof(out), &e) == 0,
	     "custom: nokaslr after -- is init's, not the kernel's");
	T_OK(crash_cmdline_has_nokaslr("a nokaslr b") && !crash_cmdline_has_nokaslr("nokaslrx kaslr") &&
	     !crash_cmdline_has_nokaslr("a -- nokaslr") && !crash_cmdline_has_nokaslr(""),
	     "nokaslr is found as a whole word before --");
	T_OK(crash_build_cmdline("root=/dev/vda1", NULL, out, 20, &e) == -E2BIG,
	     "a line longer than the buffer is an error, not a truncation");
}

static void test_uevents(void)
{
	T_OK(crash_uevent_classify(UEV("add@/devices/system/memory/memory32\0ACTION=add\0"
				       "DEVPATH=/devices/system/memory/memory32\0SUBSYSTEM=memory\0"
				       "SEQNUM=4211\0")) == RR_HP_MEMORY, "memory add");
	T_OK(crash_uevent_classify(UEV("online@/devices/system/memory/memory33\0ACTION=online\0"
				       "DEVPATH=/devices/system/memory/memory33\0SUBSYSTEM=memory\0"
				       "SEQNUM=4212\0")) == RR_HP_MEMORY, "memory online");
	T_OK(crash_uevent_classify(UEV("offline@/devices/system/memory/memory33\0ACTION=offline\0"
				       "SUBSYSTEM=memory\0")) == RR_HP_MEMORY, "memory offline");
	T_OK(crash_uevent_classify(UEV("remove@/devices/system/memory/memory33\0ACTION=remove\0"
				       "SUBSYSTEM=memory")) == RR_HP_MEMORY,
	     "memory remove, last field without its NUL");
	T_OK(crash_uevent_classify(UEV("add@/devices/system/cpu/cpu5\0ACTION=add\0"
				       "DEVPATH=/devices/system/cpu/cpu5\0SUBSYSTEM=cpu\0SEQNUM=9\0")) == RR_HP_CPU,
	     "CPU add");
	T_OK(crash_uevent_classify(UEV("offline@/devices/system/cpu/cpu5\0ACTION=offline\0"
				       "SUBSYSTEM=cpu\0")) == RR_HP_CPU, "CPU offline");
	T_OK(crash_uevent_classify(UEV("change@/devices/system/memory/memory33\0ACTION=change\0"
				       "SUBSYSTEM=memory\0")) == RR_HP_NONE, "memory change: not hotplug");
	T_OK(crash_uevent_classify(UEV("add@/devices/virtual/block/loop0\0ACTION=add\0"
				       "SUBSYSTEM=block\0")) == RR_HP_NONE, "block add: ignored");
	T_OK(crash_uevent_classify(UEV("add@/devices/system/cpu/cpufreq\0ACTION=add\0"
				       "SUBSYSTEM=cpufreq\0")) == RR_HP_NONE, "SUBSYSTEM=cpufreq is not cpu");
	T_OK(crash_uevent_classify(UEV("libudev\0\xfe\xed\xca\xfe" "ACTION=add\0SUBSYSTEM=memory\0")) ==
	     RR_HP_NONE, "udev's monitor messages are not the kernel's");
	T_OK(crash_uevent_classify(UEV("ACTION=add\0SUBSYSTEM=memory\0")) == RR_HP_NONE,
	     "no ACTION@DEVPATH header: refused");
	T_OK(crash_uevent_classify(UEV("add@/devices/system/memory/memory1\0")) == RR_HP_NONE,
	     "no SUBSYSTEM=: nothing");
	T_OK(crash_uevent_classify("", 0) == RR_HP_NONE, "empty buffer");
	T_OK(crash_uevent_classify(UEV("add@/devices/system/memory/memory1\0ACTION=add\0SUBSYSTEM=memoryx\0"))
	     == RR_HP_NONE, "the subsystem must match whole");
}

static void test_boot(void)
{
	T_OK(crash_boot_detect(true, RERAND_ST_CRASH, false, "root=/dev/vda1"),
	     "the status record's crash flag");
	T_OK(!crash_boot_detect(false, RERAND_ST_CRASH, false, "root=/dev/vda1"),
	     "flags without a record mean nothing");
	T_OK(!crash_boot_detect(true, RERAND_ST_LA57 | RERAND_ST_EFI_MAP, false, "root=/dev/vda1"),
	     "other flags: a normal boot");
	T_OK(crash_boot_detect(false, 0, true, NULL), "/proc/vmcore exists");
	T_OK(crash_boot_detect(false, 0, false, "root=/dev/vda1 elfcorehdr=0x12345 reset_devices"),
	     "elfcorehdr= on the command line");
	T_OK(!crash_boot_detect(false, 0, false, "root=/dev/vda1 -- elfcorehdr=1"),
	     "elfcorehdr= after -- is init's");
	T_OK(!crash_boot_detect(false, 0, false, "root=/dev/vda1 xelfcorehdr=1"), "a lookalike is not it");
}

static void test_accounting(void)
{
	const char *pre = "1111aaaa", *crash = "2222bbbb", *next = "3333cccc";
	struct rr_state s;

	state_init(&s);
	state_account_boot(&s, pre, RR_V_RANDOMIZED, 100);
	s.failures = 1;
	s.successes = 4;
	state_record_attempt(&s, RR_WHY_AGE, 150);
	T_OK(state_account_crash_boot(&s, crash, 200) && s.crash_boots == 1 && s.last_crash_boot == 200,
	     "a crash boot is counted");
	T_OK(s.failures == 1 && s.successes == 4 && s.total_failures == 0 && s.attempt &&
	     !strcmp(s.boot_id, pre), "... not as a success, not as a failure; the attempt waits");
	T_OK(!state_account_crash_boot(&s, crash, 260) && s.crash_boots == 1 && s.last_crash_boot == 200,
	     "a restart in the same crash boot does not count it twice");
	T_OK(state_account_boot(&s, next, RR_V_RANDOMIZED, 300) == RR_OUT_SUCCESS && s.successes == 5 &&
	     s.failures == 0 && s.crash_boots == 1,
	     "the next normal boot settles the attempt against its own record");

	char buf[4096];
	struct rr_state t;
	int n = state_format(&s, buf, sizeof(buf));
	T_OK(n > 0 && state_parse(buf, (size_t)n, &t) == 0 && t.crash_boots == 1 &&
	     t.last_crash_boot == 200 && !strcmp(t.crash_boot_id, crash),
	     "crash_boots, last_crash_boot, crash_boot_id survive the state file");
	T_OK(state_parse("version=1\ncrash_boot_id=../x\n", 30, &t) == -EBADMSG,
	     "a non-hex crash boot id is refused");
}

static void test_timing(void)
{
	struct rr_config c;
	struct rr_crash cr;

	config_defaults(&c);
	crash_init(&cr);
	T_OK(crash_due(&c, &cr, 1000), "a fresh start loads at once");
	cr.state = RR_CS_LOADED;
	cr.ours = true;
	cr.loaded_at = 1000;
	T_OK(!crash_due(&c, &cr, 1001) && crash_next(&c, &cr) == 1000 + c.restage_interval,
	     "loaded: the next load is a fresh seed after RestageInterval=");
	crash_request(&cr, 2000, 10);
	T_OK(cr.reload_at == 2011 && !crash_due(&c, &cr, 2010) && crash_due(&c, &cr, 2011),
	     "a hotplug reload waits for the settle delay, at least whole seconds");
	crash_request(&cr, 2008, 10);
	T_OK(cr.reload_at == 2019, "another event pushes it back");
	for (time_t t = 2016; t < 2100; t += 8)
		crash_request(&cr, t, 10);
	T_OK(cr.reload_at == 2041, "... but never more than 4 settle delays after the first (%lld)",
	     (long long)cr.reload_at);
	cr.reload_at = 0;
	cr.state = RR_CS_ERROR;
	cr.failed_at = 3000;
	T_OK(!crash_due(&c, &cr, 3299) && crash_due(&c, &cr, 3300), "a failure is retried after 5 min");
	cr.state = RR_CS_NOT_RESERVED;
	T_OK(!crash_due(&c, &cr, 99999), "nothing reserved: nothing to do until asked");
	c.crash_mode = RR_CRASH_OFF;
	cr.state = RR_CS_PENDING;
	crash_request(&cr, 4000, 1);
	T_OK(!crash_due(&c, &cr, 5000) && !crash_next(&c, &cr), "Mode=off: never");
	c.crash_mode = RR_CRASH_AUTO;
	cr.state = RR_CS_CRASH_BOOT;
	T_OK(!crash_due(&c, &cr, 5000), "a crash boot: never");
}

static void test_view(void)
{
	struct rr_view v;
	char buf[16384];

	memset(&v, 0, sizeof(v));
	v.crash_mode = "auto";
	v.crash_state = RR_CS_ERROR;
	v.crash_loaded = true;
	v.crash_failures = 2;
	snprintf(v.crash_error, sizeof(v.crash_error), "x.img: the crash region is 16 MiB but the image "
		 "needs at least 66 MiB");
	T_OK(control_format_text(&v, buf, sizeof(buf)) > 0 &&
	     strstr(buf, "crash kernel:      error: x.img: the crash region is 16 MiB but the image "
		    "needs at least 66 MiB; the crash kernel loaded before stays in place"),
	     "text status: the refusal and that the old crash kernel stays");
	T_OK(t_json_r("status", control_format_json(&v, buf, sizeof(buf)), buf) > 0 &&
	     strstr(buf, "\"crash\":{\"mode\":\"auto\",\"state\":\"error\",\"loaded\":true") &&
	     strstr(buf, "needs at least 66 MiB\"},\"crash_boot\":false,\"crash_boots\":0"),
	     "JSON status: state, loaded and the error");
	T_OK(metrics_format(&v, buf, sizeof(buf)) > 0 && strstr(buf, "\nrerand_crash_kernel_loaded 1\n") &&
	     strstr(buf, "\nrerand_crash_kernel_error 1\n") &&
	     strstr(buf, "rerand_crash_kernel_loads_total{result=\"failure\"} 2\n"),
	     "metrics: loaded 1 (the old one), error 1, 2 failures");
	v.crash_state = RR_CS_NOT_RESERVED;
	v.crash_loaded = false;
	T_OK(control_format_text(&v, buf, sizeof(buf)) > 0 &&
	     strstr(buf, "crash kernel:      not reserved") && metrics_format(&v, buf, sizeof(buf)) > 0 &&
	     strstr(buf, "\nrerand_crash_kernel_loaded 0\n"), "not reserved: status and metric 0");
	v.crash_boot = true;
	v.crash_boots = 3;
	T_OK(control_format_text(&v, buf, sizeof(buf)) > 0 && strstr(buf, "a crash kernel's") &&
	     strstr(buf, "crash boots:       3") && !strstr(buf, "next rerandomize"),
	     "a crash boot's status: what it is, the count, no plan");
}

int main(void)
{
	test_cmdline();
	test_uevents();
	test_boot();
	test_accounting();
	test_timing();
	test_view();
	return t_done();
}
