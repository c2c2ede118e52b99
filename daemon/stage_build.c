/* SPDX-License-Identifier: GPL-2.0-only */
/* stage_build(): the build of the staging pipeline (stage_job.c) on a
 * private loop, waited for; the unit tests build images with it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "image.h"
#include "lockdown.h"
#include "pesig.h"
#include "rerandd.h"
#include "sign.h"

#include "stage_int.h"

struct build_wait {
	bool finished;
	int r;
	struct rr_stage_plan p;
	char msg[RR_ERR_MAX];
};

static void build_waited(int r, const struct rr_stage_plan *p, const char *msg, void *arg)
{
	struct build_wait *w = arg;

	w->finished = true;
	w->r = r;
	w->p = *p;
	snprintf(w->msg, sizeof(w->msg), "%s", msg);
}

/* The build of the staging pipeline on a private loop, waited for (the unit
 * tests; rerandd itself only ever uses stage_start). */
int stage_build(const struct rr_config *c, struct rr_stage_plan *p, struct rr_err *e)
{
	struct build_wait w = { 0 };
	struct rr_stage_job *sj;
	sigset_t chld, old;
	sd_event *ev = NULL;
	int r = stage_parser_start(c, e);

	/* the cache check here, in this process: its parsing half too */
	if (r == 0)
		r = stage_build_needed(c, p, NULL, 0, e);
	stage_parser_stop();
	if (r <= 0)
		return r;
	if (!(sj = calloc(1, sizeof(*sj))))
		return rr_errf(e, ENOMEM, "out of memory");
	r = sd_event_new(&ev);
	if (r < 0) {
		free(sj);
		return rr_errf(e, -r, "cannot create an event loop: %s", strerror(-r));
	}
	/* sd-event's child sources need SIGCHLD blocked */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &old);
	sj->kernel_fd = -1;
	sj->sig_fd = -1;
	sj->c = *c;
	sj->p = *p;
	sj->want = *p;                     /* the caller's plan, checked by the caller */
	sj->ev = ev;
	sj->build_only = true;
	sj->done = build_waited;
	sj->arg = &w;
	r = stage_job_build(sj, e);
	if (r < 0)
		stage_job_finish(sj, r, e->msg);
	while (!w.finished)
		if (sd_event_run(ev, UINT64_MAX) < 0)
			break;
	sigprocmask(SIG_SETMASK, &old, NULL);
	sd_event_unref(ev);
	if (!w.finished)
		return rr_errf(e, EIO, "%s: the build's event loop failed", p->image);
	*p = w.p;
	if (w.r < 0)
		return rr_errf(e, -w.r, "%s", w.msg);
	return 0;
}
