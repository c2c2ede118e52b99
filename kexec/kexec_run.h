/* SPDX-License-Identifier: GPL-2.0-only */
/* Running kexec-tools for `rerand load`, and the facts about this system the
 * seed rule needs. */
#ifndef RERAND_KEXEC_RUN_H
#define RERAND_KEXEC_RUN_H

#include <stdbool.h>
#include <stddef.h>

/* Run kexec (a path, or a name looked up in PATH) with args; the child's
 * fd `which` (1 or 2) is captured: its last out_len - 1 bytes, NUL-ended.
 * Returns the exit status (0-255), 128+signal, or a negative errno. */
int kexec_run_capture(const char *kexec, char *const args[], int which, char *out,
		      size_t out_len);
/* `kexec --version` as major.minor.patch; -1s when it does not say. */
void kexec_tools_version(const char *kexec, int ret[3]);
/* The running kernel's major.minor from uname(); -1s if unreadable. */
void kexec_running_release(int ret[2]);
/* getrandom(GRND_NONBLOCK) succeeds: the CRNG is ready, the condition
 * under which the kernel and kexec-tools add a SETUP_RNG_SEED node. */
bool kexec_crng_ready(void);
/* kernel.kexec_load_disabled is 1: no kexec at all until the next boot. */
bool kexec_disabled(void);
/* CAP_SYS_BOOT is in this process's effective set (/proc/self/status). */
bool kexec_have_cap_sys_boot(void);

#endif
