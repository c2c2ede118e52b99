/* SPDX-License-Identifier: GPL-2.0-only */
/* A tiny TAP producer for the unit tests: one "ok"/"not ok" line per check,
 * a plan at the end, exit status 1 if anything failed. */
#ifndef RERAND_TEST_H
#define RERAND_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int t_run, t_failed;

#define T_OK(cond, ...) do {                                              \
	int t_c_ = !!(cond);                                              \
	t_run++;                                                          \
	if (t_c_) { printf("ok %d - ", t_run); }                          \
	else { t_failed++; printf("not ok %d - ", t_run); }               \
	printf(__VA_ARGS__);                                              \
	printf("%s\n", t_c_ ? "" : "  (" __FILE__ ":" T_STR(__LINE__) ": " #cond ")"); \
	fflush(stdout);                                                   \
} while (0)
#define T_STR2(x) #x
#define T_STR(x) T_STR2(x)
#define T_EQ_U64(a, b, ...) do {                                          \
	unsigned long long _a = (a), _b = (b);                            \
	T_OK(_a == _b, __VA_ARGS__);                                      \
	if (_a != _b) printf("#   got %llu, want %llu\n", _a, _b);        \
} while (0)

static inline int t_done(void)
{
	printf("1..%d\n", t_run);
	return t_failed ? 1 : 0;
}

/* Directory of the shared test kernels, or NULL when absent. */
static inline const char *t_kernels_dir(void)
{
	const char *d = getenv("RERAND_KERNELS");
	return d && *d ? d : NULL;
}

#endif
