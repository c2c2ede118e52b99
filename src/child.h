/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What rerand's kexec runner (kexec/kexec_run.c) and rerandd's child runner
 * (daemon/run.c) do alike: exec a program named by path or found in PATH,
 * keep the tail of its output, and turn its wait status into an exit code.
 * Library code: no logging.
 */
#ifndef RERAND_CHILD_H
#define RERAND_CHILD_H

#include <stddef.h>

/* execv() when PROG has a '/', else execvp(); returns only on failure,
 * with errno set. */
void rr_child_exec(const char *prog, char *const argv[]);

/* Append N bytes of P to TAIL (TAIL_LEN bytes, *USED of them in use),
 * keeping only the last TAIL_LEN - 1 bytes, NUL-terminated: a child's
 * verdict comes last.  TAIL_LEN must be at least 2. */
void rr_tail_append(char *tail, size_t tail_len, size_t *used, const char *p, size_t n);

/* A waitpid() status as a shell shows it: the exit code, or 128 + signal. */
int rr_child_exit_code(int status);

#endif
