/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd reads the kernel's procfs files (size 0 in stat() on Debian 12's
 * 6.1) through one reader that reads to EOF.  Checked against the real /proc
 * and against fixtures that are procfs files too: /proc/PID/cmdline of a
 * child whose whole argument list is the fixture's text.  A reader that
 * trusted st_size is shown to read each fixture empty. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memmap_src.h"
#include "rerandd.h"
#include "test.h"

#define MAX_FIX 16
static pid_t fix_pid[MAX_FIX];
static unsigned nr_fix;

/* A procfs file holding text: the child execs cat with argv = { text } and
 * blocks on a pipe nobody writes to. */
static int procfs_fixture(const char *text, char *path, size_t len)
{
	int p[2];
	pid_t pid;

	if (nr_fix >= MAX_FIX || pipe(p) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char *argv[] = { (char *)text, NULL };
		dup2(p[0], STDIN_FILENO);
		close(p[1]);
		execv("/bin/cat", argv);
		_exit(127);
	}
	close(p[0]);                  /* the write end stays open: cat blocks */
	fix_pid[nr_fix++] = pid;
	snprintf(path, len, "/proc/%d/cmdline", (int)pid);
	/* until exec has set up the new argument area, the file is the test's
	 * own command line or empty */
	for (int i = 0; i < 500; i++) {
		char got[512];
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd < 0 ? -1 : read(fd, got, sizeof(got));

		if (fd >= 0)
			close(fd);
		if (n == (ssize_t)strlen(text) + 1 && !memcmp(got, text, (size_t)n))
			return 0;
		usleep(10000);
	}
	return -1;
}

/* What rr_read_file did before it read to EOF: st_size bytes. */
static ssize_t st_size_read(const char *path, char *buf, size_t cap)
{
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) < 0)
		return -1;
	n = read(fd, buf, (size_t)st.st_size < cap ? (size_t)st.st_size : cap);
	close(fd);
	return n;
}

static void test_fixtures(void)
{
	char cmdline[64], stat_path[64], boot_id[64], taint[64], kernel[] = "/tmp/rr-test-dr-XXXXXX";
	char buf[256];
	struct stat st;
	struct rr_config c;
	struct rr_stage_plan p;
	struct rr_err e = { "" };
	uint64_t v;
	time_t bt;
	char id[RR_BOOT_ID], err[256], mid[FLEET_ID_MAX];
	int fd;

	if (procfs_fixture("BOOT_IMAGE=/vmlinuz-6.1.0-57-cloud-amd64 root=/dev/vda1 ro console=ttyS0\n",
			   cmdline, sizeof(cmdline)) < 0 ||
	    procfs_fixture("cpu  1 2 3\nbtime 1700000000\nprocesses 9\n", stat_path, sizeof(stat_path)) < 0 ||
	    procfs_fixture("0123abcd-4567-89ab-cdef-0123456789ab\n", boot_id, sizeof(boot_id)) < 0 ||
	    procfs_fixture("512\n", taint, sizeof(taint)) < 0) {
		T_OK(0, "procfs fixtures start");
		return;
	}
	T_OK(stat(cmdline, &st) == 0 && st.st_size == 0 && S_ISREG(st.st_mode),
	     "the fixture is a regular procfs file of size 0 in stat(), like 6.1's /proc/cmdline");
	T_OK(st_size_read(cmdline, buf, sizeof(buf)) == 0 && st_size_read(stat_path, buf, sizeof(buf)) == 0,
	     "a reader trusting st_size gets 0 bytes from the fixtures (the bug they must catch)");

	/* staging: the command line from ProcCmdline= */
	fd = mkstemp(kernel);
	if (fd >= 0) {
		(void)!write(fd, "not really a kernel", 19);
		close(fd);
	}
	config_defaults(&c);
	snprintf(c.kernel, sizeof(c.kernel), "%s", kernel);
	snprintf(c.initrd, sizeof(c.initrd), "none");
	snprintf(c.proc_cmdline, sizeof(c.proc_cmdline), "%s", cmdline);
	snprintf(c.state_dir, sizeof(c.state_dir), "/tmp");
	c.kexec_watchdog = RR_WDOG_OFF;    /* its word: tests/unit/test_wdog.c */
	/* (and gets PanicRebootSec='s panic=10: tests/unit/test_panic.c) */
	T_OK(stage_plan(&c, NULL, &p, &e) == 0 &&
	     !strcmp(p.cmdline, "root=/dev/vda1 ro console=ttyS0 panic=10 rerand.panic=10"),
	     "stage_plan: the staged command line keeps root= (got '%s' %s)", p.cmdline, e.msg);
	unlink(kernel);

	T_OK(watch_read_btime(stat_path, time(NULL), &bt) == 0 && bt == 1700000000,
	     "watch_read_btime: btime from a size-0 /proc/stat");
	T_OK(watch_read_btime(stat_path, 1600000000, &bt) == -EINVAL,
	     "watch_read_btime: a btime in the future is refused");
	T_OK(watch_read_boot_id(boot_id, id) == 0 && !strcmp(id, "0123abcd-4567-89ab-cdef-0123456789ab"),
	     "watch_read_boot_id: from a size-0 file");
	T_OK(watch_read_taint(taint, &v) == 0 && v == 512, "watch_read_taint: from a size-0 file");
	T_OK(crash_read_u64(taint, &v) == 0 && v == 512, "crash_read_u64: from a size-0 file");
	T_OK(fleet_read_identity(boot_id, mid, sizeof(mid), err, sizeof(err)) == 0 &&
	     !strcmp(mid, "0123abcd-4567-89ab-cdef-0123456789ab"),
	     "fleet_read_identity: from a size-0 file");
	T_OK(crash_boot_detect(false, 0, false, "root=/dev/vda1 elfcorehdr=0x1000") &&
	     !crash_boot_detect(false, 0, false, "root=/dev/vda1"), "crash_boot_detect on text");
}

static void test_real_proc(void)
{
	char ref[8192] = "", clean[RR_CMD], id[RR_BOOT_ID];
	struct rr_err e = { "" };
	struct rr_config c;
	struct rr_stage_plan p;
	time_t bt;
	FILE *f;
	size_t n = 0;
	long long btime = 0;
	char line[512];

	if ((f = fopen("/proc/cmdline", "re"))) {
		n = fread(ref, 1, sizeof(ref) - 1, f);
		ref[n] = 0;
		fclose(f);
	}
	T_OK(n > 0, "/proc/cmdline has text through stdio (%zu bytes)", n);
	if (strstr(ref, "nokaslr")) {
		printf("ok %d # SKIP this host boots with nokaslr: stage_plan refuses it\n", ++t_run);
	} else {
		config_defaults(&c);
		c.kexec_watchdog = RR_WDOG_OFF;
		snprintf(c.kernel, sizeof(c.kernel), "/proc/self/exe");
		snprintf(c.initrd, sizeof(c.initrd), "none");
		T_OK(stage_clean_cmdline(ref, clean, sizeof(clean), &e) == 0 &&
		     stage_plan(&c, NULL, &p, &e) == 0 && !strcmp(p.cmdline, clean) && *clean,
		     "stage_plan on the real /proc/cmdline: '%.60s...' %s", p.cmdline, e.msg);
	}
	if ((f = fopen("/proc/stat", "re"))) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "btime %lld", &btime) == 1)
				break;
		fclose(f);
	}
	T_OK(btime > 0 && watch_read_btime("/proc/stat", time(NULL), &bt) == 0 && bt == btime,
	     "watch_read_btime on the real /proc/stat: %lld", btime);
	T_OK(watch_read_boot_id("/proc/sys/kernel/random/boot_id", id) == 0 && strlen(id) == 36,
	     "watch_read_boot_id on the real /proc: %s", id);
}

/* sysfs attributes say 4096 in stat() whatever they hold: a reader whose
 * limit is below that refuses every one of them (the record, the crash
 * region's size, the firmware memory map). */
static void test_real_sysfs(void)
{
	const char *attr = "/sys/devices/system/cpu/kernel_max";
	struct rr_msrc_info info;
	struct rr_memmap m;
	struct rr_err e = { "" };
	struct stat st;
	uint64_t v = 0;
	char ref[64] = "";
	FILE *f;

	if ((f = fopen(attr, "re"))) {
		if (!fgets(ref, sizeof(ref), f))
			ref[0] = 0;
		fclose(f);
	}
	T_OK(stat(attr, &st) == 0 && st.st_size == 4096 && *ref,
	     "%s: stat() says 4096, stdio reads '%.*s'", attr, (int)strcspn(ref, "\n"), ref);
	T_OK(crash_read_u64(attr, &v) == 0 && v == strtoull(ref, NULL, 10) && v > 0,
	     "crash_read_u64 (kexec_crash_size, kexec_crash_loaded) reads a sysfs number: %llu",
	     (unsigned long long)v);
	T_OK(watch_read_taint(attr, &v) == 0 && v == strtoull(ref, NULL, 10),
	     "watch_read_taint reads it too");
	if (stat(RR_MSRC_LIVE, &st) < 0) {
		printf("ok %d # SKIP no %s on this host\n", ++t_run, RR_MSRC_LIVE);
		return;
	}
	T_OK(rr_msrc_read(RR_MSRC_LIVE, &m, &info, &e) == 0 && info.nr_entries > 0 && info.nr_ram > 0,
	     "rr_msrc_read on the real %s: %u entries, %u RAM %s", RR_MSRC_LIVE, info.nr_entries,
	     info.nr_ram, e.msg);
}

int main(void)
{
	test_fixtures();
	test_real_proc();
	test_real_sysfs();
	for (unsigned i = 0; i < nr_fix; i++) {
		kill(fix_pid[i], SIGKILL);
		waitpid(fix_pid[i], NULL, 0);
	}
	return t_done();
}
