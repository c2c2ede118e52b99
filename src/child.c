/* SPDX-License-Identifier: GPL-2.0-only */
/* Shared pieces of running a child program (see child.h). */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"

void rr_child_exec(const char *prog, char *const argv[])
{
	if (strchr(prog, '/'))
		execv(prog, argv);
	else
		execvp(prog, argv);
}

void rr_tail_append(char *tail, size_t tail_len, size_t *used, const char *p, size_t n)
{
	size_t cap = tail_len - 1;

	if (n >= cap) {
		memcpy(tail, p + n - cap, cap);
		*used = cap;
	} else {
		if (*used + n > cap) {
			size_t drop = *used + n - cap;
			memmove(tail, tail + drop, *used - drop);
			*used -= drop;
		}
		memcpy(tail + *used, p, n);
		*used += n;
	}
	tail[*used] = 0;
}

int rr_child_exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
