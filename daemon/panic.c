/* SPDX-License-Identifier: GPL-2.0-only */
/* panic= on the command lines rerandd stages ([Comeback] PanicRebootSec=).
 * Debian's kernels are built with panic=0: a kernel that panics after the
 * kexec waits forever, and the machine is lost until someone power-cycles
 * it.  With panic=N it reboots through the firmware N seconds after the
 * panic (N < 0: at once), which the next boot counts as a failed attempt.
 *
 * A panic= the user already has wins.  The one rerandd adds is marked by
 * the word rerand.panic=N beside it: the kernel ignores a dotted word it
 * has no module for (unknown_bootoption: not passed to init either), and
 * the next stage, which starts from the running command line, can tell
 * rerandd's panic= from the user's and apply a changed PanicRebootSec=. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "rerandd.h"

#define MARK "rerand.panic="
#define MAX_MARKS 8

/* Here, not in crash.c, which uses it too: panic.c calls nothing else in
 * rerandd, so crash.c -> panic.c runs one way. */
const char *cmdline_next_word(const char **pp, size_t *len)
{
	const char *p = *pp, *w;
	bool quoted = false;

	while (*p == ' ' || *p == '\t' || *p == '\n')
		p++;
	if (!*p)
		return NULL;
	w = p;
	while (*p && (quoted || (*p != ' ' && *p != '\t' && *p != '\n'))) {
		if (*p == '"')
			quoted = !quoted;
		p++;
	}
	*len = (size_t)(p - w);
	*pp = p;
	return w;
}

static bool starts(const char *w, size_t n, const char *lit)
{
	size_t l = strlen(lit);
	return n >= l && !memcmp(w, lit, l);
}

static int put(char *out, size_t len, size_t *used, const char *w, size_t n, struct rr_err *e)
{
	if (*used + (*used ? 1 : 0) + n + 1 > len)
		return rr_errf(e, E2BIG, "the command line with panic= is longer than %zu bytes",
			       len - 1);
	if (*used)
		out[(*used)++] = ' ';
	memcpy(out + *used, w, n);
	*used += n;
	out[*used] = 0;
	return 0;
}

int panic_cmdline(const char *in, int64_t sec, char *out, size_t len, struct rr_err *e)
{
	struct mark { const char *v; size_t n; bool used; } mark[MAX_MARKS];
	const char *s = in, *w, *rest = NULL;
	unsigned nmark = 0;
	bool users = false;
	size_t used = 0, n;
	int r;

	if (!len)
		return rr_errf(e, ENOBUFS, "command line buffer too small");
	/* the values rerandd marked as its own (kernel words only) */
	while ((w = cmdline_next_word(&s, &n)) && !(n == 2 && !memcmp(w, "--", 2)))
		if (starts(w, n, MARK) && nmark < MAX_MARKS)
			mark[nmark++] = (struct mark){ w + strlen(MARK), n - strlen(MARK), false };
	out[0] = 0;
	s = in;
	while ((w = cmdline_next_word(&s, &n))) {
		if (n == 2 && !memcmp(w, "--", 2)) {
			rest = w;
			break;
		}
		if (starts(w, n, MARK))
			continue;
		if (starts(w, n, "panic=")) {
			unsigned i;
			/* rerandd's own from the last stage: dropped, set again below */
			for (i = 0; i < nmark; i++)
				if (!mark[i].used && mark[i].n == n - 6 && !memcmp(mark[i].v, w + 6, n - 6))
					break;
			if (i < nmark) {
				mark[i].used = true;
				continue;
			}
			users = true;
		}
		if ((r = put(out, len, &used, w, n, e)) < 0)
			return r;
	}
	if (sec && !users) {
		char add[64];
		int an = snprintf(add, sizeof(add), "panic=%" PRId64 " " MARK "%" PRId64,
				  sec > 0 ? sec : -1, sec > 0 ? sec : -1);
		if ((r = put(out, len, &used, add, (size_t)an, e)) < 0)
			return r;
	}
	/* init's arguments stay last, unchanged */
	while (rest && (w = cmdline_next_word(&rest, &n)))
		if ((r = put(out, len, &used, w, n, e)) < 0)
			return r;
	return 0;
}
