/* SPDX-License-Identifier: GPL-2.0-only */
/* Inside `rerand doctor`: one result line (say), what a check reads (under
 * RERAND_DOCTOR_ROOT), and the checks that live in files of their own. */
#ifndef RERAND_KEXEC_DOCTOR_H
#define RERAND_KEXEC_DOCTOR_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum level { L_OK, L_INFO, L_WARN, L_FAIL };

struct doctor {
	const char *root;              /* RERAND_DOCTOR_ROOT, "" */
	char release[128];
	int json;
	enum level worst;
	struct json_object *checks;    /* --json */
	struct json_object *status;    /* rerandd's status --json, NULL */
	char status_err[256];
};

/* For _cleanup_: a command's pipe (popen). */
static inline void pclosep(FILE **f)
{
	if (*f)
		pclose(*f);
}

/* One check's result: printed (with the fix from warn up), or a --json entry. */
void say(struct doctor *d, enum level l, const char *name, const char *fix,
	 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* The first line of ROOT/PATH, without its newline; false if unreadable. */
bool read_line(const struct doctor *d, const char *path, char *buf, size_t len);
bool exists(const struct doctor *d, const char *path);
/* A word of the running kernel's command line ("nokaslr"). */
bool cmdline_has(const struct doctor *d, const char *word);
/* A string member of rerandd's status --json, or NULL. */
const char *js_str(struct json_object *o, const char *key);

/* doctor_watchdog.c */
void check_watchdog(struct doctor *d);

#endif
