/* SPDX-License-Identifier: GPL-2.0-only */
/* Inside `rerand load`: the checks of load_check.c that cmd_load.c runs
 * before and after kexec. */
#ifndef RERAND_KEXEC_LOAD_H
#define RERAND_KEXEC_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "image.h"
#include "lockdown.h"
#include "pesig.h"

/* A crash image that cannot fit the reserved region: refused, with the sizes. */
int check_crash_fit(const char *path, const struct rr_image *im, const char *initrd);
/* kexec-tools said kexec_load(2) failed with EPERM. */
bool kexec_load_eperm(const char *out);
/* What lockdown would refuse, refused before kexec runs. */
int check_lockdown(const char *path, const struct rr_lockdown_state *ld, bool sb_bp,
		   const struct rr_pe_sig *sig);
/* kexec failed: why, in the user's terms, with kexec's own line. */
void report_failure(const char *path, const char *kexec, bool file_syscall, bool crash,
		    int r, const char *out, const struct rr_lockdown_state *ld,
		    const struct rr_pe_sig *sig);
/* --sha256: the bytes read, which are the bytes kexec gets, are the image
 * asked for. */
int check_sha256(const char *path, const uint8_t *buf, size_t len, const char *want,
		 struct rr_err *e);
/* What the stage cannot boot with this command line and memory map,
 * refused before kexec runs. */
int check_cmdline(const char *path, const char *cmdline, const char *from);

#endif
