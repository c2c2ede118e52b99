/* SPDX-License-Identifier: GPL-2.0-only */
/* Inside rerandd's staging, shared by its files; what the rest of rerandd
 * uses is in rerandd.h.  The calls run one way: stage_build -> stage_job ->
 * stage_child, stage_check -> stage_cache, and stage_plan. */
#ifndef RERAND_DAEMON_STAGE_INT_H
#define RERAND_DAEMON_STAGE_INT_H

#include "rerandd.h"

struct rr_stage_job {
	struct rr_config c;               /* a reload meanwhile does not change this run */
	struct rr_stage_plan p;
	/* what rerandd chose itself when the job started (stage_plan_choose,
	 * or the plan it staged): the helper's plan is checked against it */
	struct rr_stage_plan want;
	bool crash;
	struct rr_job *job;
	sd_event *ev;
	rr_stage_done_fn done;
	void *arg;
	char tmp[RR_PATH + 200];          /* the builder's output, "" when none */
	int sig_fd;                       /* sbsign's output (a memfd), -1 when none */
	char chk[RR_PATH + 200];          /* the checked copy sbsign signs, "" when none */
	bool build_only;                  /* stage_build(), the hook's build: no load */
	bool prechecking;                 /* the check before sbsign is running */
	int kernel_fd;                    /* the file the builder read, -1 when none */
};

/* stage_cache.c */
/* A temporary file beside p->image (tag in its name), for a child to write
 * and rerandd to rename: its fd, or <0. */
int stage_make_tmp(const struct rr_stage_plan *p, const char *tag, char *tmp, size_t len,
		   struct rr_err *e);

/* stage_check.c */
/* The parsing half's check of an image's bytes (see stage_parse.c). */
int stage_check_bytes(struct rr_stage_plan *p, const char *path, const uint8_t *buf, size_t len,
		      const uint8_t *trust, size_t trust_len, bool want_signed, struct rr_err *e);

/* stage_parse.c: the parsing half of a helper */
/* Fork it (as CheckUser=, from a process that still holds CAP_SETUID when
 * rerandd is root), before this process gives up its capabilities. */
int stage_parser_start(const struct rr_config *c, struct rr_err *e);
/* At debug level: who (the helper half) and its /proc/self/status lines
 * Uid, Gid, CapPrm, CapEff, CapBnd, NoNewPrivs, Seccomp, in one line. */
void stage_log_self(const char *who);
/* End this process's parsing half (a no-op in another process). */
void stage_parser_stop(void);
/* The root half: path (and TrustCert=) opened here, parsed there: it
 * parses, is signed when it must be, carries rerandd's stage (or is of
 * the plan's release); p->signer from its answer. */
int stage_check_image(struct rr_stage_plan *p, const char *path, bool want_signed,
		      struct rr_err *e);
/* 1: p->image must be built, 0: the cached one is usable, <0: not usable;
 * why a cached one is not, in note (may be NULL). */
int stage_build_needed(const struct rr_config *c, struct rr_stage_plan *p, char *note,
		       size_t notelen, struct rr_err *e);
/* What the builder wrote at path, copied, checked and renamed to p->image. */
int stage_built(struct rr_stage_plan *p, const char *path, struct rr_err *e);
/* Before signing: what the builder wrote at path, copied into one only root
 * holds (its name in copy) and checked as an unsigned image; sbsign signs
 * that copy, never the builder's file. */
int stage_prechecked(struct rr_stage_plan *p, const char *path, char *copy, size_t len,
		     struct rr_err *e);

/* stage_child.c */
int stage_builder_identity(const struct rr_config *c, struct rr_builder *b, struct rr_err *e);
/* CheckUser= (ImageUser= when empty), never root: the parsing halves and
 * sbsign run as it when rerandd is root. */
int stage_checker_identity(const struct rr_config *c, struct rr_builder *who, struct rr_err *e);
/* Who builds images, for the log. */
const char *stage_builder_name(const struct rr_config *c);
void stage_image_argv(const struct rr_config *c, const struct rr_stage_plan *p, char *argv[12]);
/* sbsign's command line: its input, key, certificate and output are the
 * descriptors RR_SIGNER_*_FD (caps_child_signer), as /proc/self/fd/N. */
void stage_sign_argv(const struct rr_config *c, char *argv[12]);
/* msg: "<what> <file> failed (...)" and the child's last line. */
void stage_child_failed(const char *what, const char *file, int status, const char *out,
			char *msg, size_t len);
/* Why `rerand load` failed, from its output. */
void stage_load_reason(const char *out, int status, bool crash, char *msg, size_t len);
/* `rerand load`'s output into the log, line by line. */
void stage_load_log(int prio, bool crash, const char *out);

/* stage_job.c */
/* Start the builder on sj->p; its end goes on to the check. */
int stage_job_build(struct rr_stage_job *sj, struct rr_err *e);
/* The job is over: freed, then done(r, plan, msg, arg). */
void stage_job_finish(struct rr_stage_job *sj, int r, const char *msg);

#endif
