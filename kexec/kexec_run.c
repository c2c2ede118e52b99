/* SPDX-License-Identifier: GPL-2.0-only */
/* Running kexec-tools with one of its outputs captured, and the small facts
 * `rerand load` asks of the system (see kexec_run.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cleanup.h"
#include "kexec_run.h"
#include "child.h"
#include "kernel.h"
#include "lockdown.h"

#define CAP_SYS_BOOT_BIT 22

int kexec_run_capture(const char *kexec, char *const args[], int which, char *out,
		      size_t out_len)
{
	/* capturing stdout (--version), kexec's complaints are noise */
	struct rr_spawn_opts so = {
		.argv = args, .name = kexec, .exec_fail_prefix = "rerand: ",
		.pipe_stdout = which == STDOUT_FILENO, .pipe_stderr = which == STDERR_FILENO,
		.null_stderr = which == STDOUT_FILENO,
	};
	int r, rd, status;
	pid_t pid;

	if (!out_len)
		return -EINVAL;
	out[0] = 0;
	r = rr_spawn(&so, &pid, &rd, NULL);
	if (r < 0)
		return r;
	rr_child_read_tail(rd, out, out_len);
	close(rd);
	r = rr_child_wait(pid, kexec, &status, NULL);
	return r < 0 ? r : rr_child_exit_code(status);
}

void kexec_tools_version(const char *kexec, int ret[3])
{
	char out[256], *args[] = { (char *)kexec, "--version", NULL };

	ret[0] = ret[1] = ret[2] = -1;
	if (kexec_run_capture(kexec, args, STDOUT_FILENO, out, sizeof(out)) == 0)
		(void)rr_parse_kexec_version(out, ret);
}

void kexec_running_release(int ret[2])
{
	struct utsname u;

	ret[0] = ret[1] = -1;
	if (uname(&u) == 0)
		(void)rr_parse_release(u.release, ret);
}

bool kexec_crng_ready(void)
{
	unsigned char b;
	ssize_t n;

	do
		n = getrandom(&b, 1, GRND_NONBLOCK);
	while (n < 0 && errno == EINTR);
	if (n == 1)
		return true;
	/*
	 * The kernel (kexec_file_load) and kexec-tools (kexec_load) add their
	 * SETUP_RNG_SEED only once the CRNG is ready.  Early in a boot on a CPU
	 * without RDRAND it may not be yet: a blocking getrandom() makes the
	 * kernel gather jitter entropy (Linux >= 5.4), which takes about a
	 * second, instead of staging a weaker boot.
	 */
	do
		n = getrandom(&b, 1, 0);
	while (n < 0 && errno == EINTR);
	return n == 1;
}

bool kexec_disabled(void)
{
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len;
	bool off;

	if (rr_read_file("/proc/sys/kernel/kexec_load_disabled", 64, &buf, &len, NULL) < 0)
		return false;
	off = len >= 1 && buf[0] == '1';
	return off;
}

bool kexec_have_cap_sys_boot(void)
{
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len;
	bool have = false;

	if (rr_read_file("/proc/self/status", 1 << 16, &buf, &len, NULL) < 0)
		return false;
	for (size_t i = 0; i + 8 < len; i++)
		if ((i == 0 || buf[i - 1] == '\n') && !memcmp(buf + i, "CapEff:\t", 8)) {
			char hex[32];
			size_t j = 0;
			for (i += 8; i < len && j < sizeof(hex) - 1 && buf[i] != '\n'; i++)
				hex[j++] = (char)buf[i];
			hex[j] = 0;
			have = (strtoull(hex, NULL, 16) >> CAP_SYS_BOOT_BIT) & 1;
			break;
		}
	return have;
}
