/* SPDX-License-Identifier: GPL-2.0-only */
/* A tiny TAP producer for the unit tests: one "ok"/"not ok" line per check,
 * a plan at the end, exit status 1 if anything failed. */
#ifndef RERAND_TEST_H
#define RERAND_TEST_H

#include <fnmatch.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* The stage's decoder copy widths (lz4dec.h's enum rr_simd, by value, so
 * that tests not about the decoder need not include it): a name, and
 * whether this CPU runs it (a test of a width it lacks is a skip). */
static inline const char *t_simd_name(int simd)
{
	return simd == 2 ? "avx2" : simd == 1 ? "sse2" : "8-byte";
}

static inline int t_simd_usable(int simd)
{
	__builtin_cpu_init();
	return simd == 0 || (simd == 1 && __builtin_cpu_supports("sse2")) ||
	       (simd == 2 && __builtin_cpu_supports("avx2"));
}

/* RERAND_JSON_DUMP=DIR: each JSON document a test formats (rerandd's
 * status, fleet status) is also written to DIR/KIND.PID.N.json, for
 * tests/cli/test-json-schema.sh to hold to docs/json/KIND.schema.json:
 * every state a unit test builds is checked against the schema. */
static inline void t_json(const char *kind, const char *body)
{
	static unsigned n;
	const char *dir = getenv("RERAND_JSON_DUMP");
	char path[4096];
	FILE *f;

	if (!dir || !*dir || !body)
		return;
	snprintf(path, sizeof(path), "%s/%s.%d.%u.json", dir, kind, (int)getpid(), n++);
	if ((f = fopen(path, "w"))) {
		fputs(body, f);
		fclose(f);
	}
}

/* R, the formatter's return; BODY dumped when R says it was formatted */
static inline int t_json_r(const char *kind, int r, const char *body)
{
	if (r > 0)
		t_json(kind, body);
	return r;
}

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

/* The kernel a test names, or its stand-in: NAME itself when the directory
 * holds it; else the newest kernel matching GLOB whose name lacks NOT (the
 * same series and flavour from another build: on a machine without
 * ../shared the kernels come from whatever Debian's archive serves).  GLOB
 * may hold {a,b} alternatives (GLOB_BRACE: "6.15 or later" is no one glob).
 * Writes the file name (not the path) to out; 1 exact, 0 stand-in, -1 none. */
static inline int t_kernel_pick(const char *name, const char *glob_pat, const char *not,
				char *out, size_t n)
{
	char pat[1024];
	glob_t g;
	int found = -1;

	snprintf(pat, sizeof(pat), "%s/%s", t_kernels_dir(), name);
	FILE *f = fopen(pat, "rb");
	if (f) {
		fclose(f);
		snprintf(out, n, "%s", name);
		return 1;
	}
	snprintf(pat, sizeof(pat), "%s/%s", t_kernels_dir(), glob_pat);
	if (glob(pat, GLOB_BRACE, NULL, &g) != 0)
		return -1;
	for (size_t i = g.gl_pathc; i-- > 0;) {   /* sorted per alternative: newest last, mostly */
		const char *b = strrchr(g.gl_pathv[i], '/') + 1;
		if (not && strstr(b, not))
			continue;
		snprintf(out, n, "%s", b);
		found = 0;
		break;
	}
	globfree(&g);
	return found;
}

/* The relocation oracle: tests/tools/reloc-oracle.py, a copy of the shared
 * test tool kept in the tree so that it tests itself without ../shared. */
#ifndef T_TOP
#define T_TOP "."
#endif
static inline const char *t_oracle(void)
{
	return T_TOP "/tests/tools/reloc-oracle.py";
}

#endif
