/* SPDX-License-Identifier: GPL-2.0-only */
/* Staging as jobs, nothing slow in rerandd's loop: a helper plans and
 * checks the cache, the builder builds and sbsign signs, a helper checks
 * the result, `rerand load` loads it; each job's end starts the next. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

/* What a helper tells the loop. */
/* ---- staging as jobs: plan and check (a forked helper), build (`rerand
 * image`), check again (a helper), load (`rerand load`) --------------------- */

struct helper_result {
	int r;                            /* <0 error, 0 go on, 1 unchanged */
	int need_build;
	char msg[RR_ERR_MAX];
	char note[RR_ERR_MAX];            /* why a cached image is rebuilt, for the log */
	char changed[RR_ERR_MAX];         /* the staged kernel's file changed, for the log */
	char copy[RR_PATH + 200];         /* the check before signing: the checked copy */
	struct rr_stage_plan p;
};

struct prep_args {
	const struct rr_config *c;
	const struct rr_stage_req *req;
	struct rr_stage_plan *p;
};

static int helper_write(int fd, const struct helper_result *res)
{
	const char *b = (const char *)res;
	size_t done = 0;

	while (done < sizeof(*res)) {
		ssize_t n = write(fd, b + done, sizeof(*res) - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		done += (size_t)n;
	}
	return 0;
}

#ifdef RERAND_TEST_LYING_HELPER
/* NEVER in rerandd: the test build build/liar/rerandd (Makefile), a plan
 * helper subverted as a hostile cache file might subvert it, for
 * tests/daemon/test-planguard-daemon.sh.  <state>/../lie says how it lies:
 * "image PATH" names PATH as the image, "cmdline WORDS" adds WORDS to the
 * command line; absent or empty, it tells the truth. */
static void helper_lie(const struct rr_config *c, struct rr_stage_plan *p)
{
	char path[RR_PATH + 16], line[RR_PATH + 64] = "";
	FILE *f;

	if (rr_path_join(path, sizeof(path), c->state_dir, "../lie") < 0 || !(f = fopen(path, "re")))
		return;
	if (!fgets(line, sizeof(line), f))
		line[0] = 0;
	fclose(f);
	line[strcspn(line, "\n")] = 0;
	if (!strncmp(line, "image ", 6))
		snprintf(p->image, sizeof(p->image), "%s", line + 6);
	else if (!strncmp(line, "cmdline ", 8) && strlen(p->cmdline) + strlen(line) < sizeof(p->cmdline))
		strcat(strcat(p->cmdline, " "), line + 8);
}
#endif

/* In a helper, before it drops its capabilities: its parsing half. */
static int parser_pre(const struct rr_config *c)
{
	struct rr_err e;

	/* a failure is each check's to report (stage_check_image) */
	(void)stage_parser_start(c, &e);
	return 0;
}

static int prep_pre(void *ud)
{
	return parser_pre(((struct prep_args *)ud)->c);
}

/* In the helper: the plan (SHA-256 of the kernel) and the cache check. */
static int prep_child(void *ud, int fd)
{
	struct prep_args *a = ud;
	struct helper_result res = { 0 };
	struct rr_err e = { "" };
	int r = 0;

	stage_log_self("rerandd-plan, the root half");
	if (a->req->plan) {
		/* hashed again: a kernel replaced since it was staged is noticed */
		res.p = *a->req->plan;
		r = stage_rekey(a->c, &res.p, res.changed, sizeof(res.changed), &e);
		r = r > 0 ? 0 : r;
	} else if (a->req->planner)
		r = a->req->planner(a->c, a->req->planner_arg, &res.p, &e);
	else
		r = stage_plan(a->c, a->req->kernel, &res.p, &e);
	if (r == 0 && a->req->unless_sha && !strcmp(res.p.sha, a->req->unless_sha))
		r = 1;
#ifdef RERAND_TEST_LYING_HELPER
	if (r == 0)
		helper_lie(a->c, &res.p);
#endif
	if (r == 0 && (r = stage_build_needed(a->c, &res.p, res.note, sizeof(res.note), &e)) > 0) {
		res.need_build = 1;
		r = 0;
	}
	res.r = r;
	snprintf(res.msg, sizeof(res.msg), "%s", e.msg);
	stage_parser_stop();
	return helper_write(fd, &res);
}

struct check_args {
	const struct rr_config *c;
	struct rr_stage_plan *p;
	const char *path;
	bool pre;                         /* before sbsign: checked, not renamed */
};

/* In the helper: the image the builder (and sbsign) wrote parses, is signed
 * when it must be, carries rerandd's stage; then it is renamed into place.
 * Before signing (pre): the builder's file is copied and the copy checked,
 * unsigned, for sbsign to sign. */
static int check_pre(void *ud)
{
	return parser_pre(((struct check_args *)ud)->c);
}

static int check_child(void *ud, int fd)
{
	struct check_args *a = ud;
	struct helper_result res = { 0 };
	struct rr_err e = { "" };

	stage_log_self("rerandd-check, the root half");
	res.p = *a->p;
	if (a->pre)
		res.r = stage_prechecked(&res.p, a->path, res.copy, sizeof(res.copy), &e);
	else
		res.r = stage_built(&res.p, a->path, &e);
	snprintf(res.msg, sizeof(res.msg), "%s", e.msg);
	stage_parser_stop();
	return helper_write(fd, &res);
}

/* Nothing half-built stays beside the cache (renamed ones are gone). */
static void unlink_tmps(struct rr_stage_job *sj)
{
	if (*sj->tmp)
		unlink(sj->tmp);
	if (*sj->chk)
		unlink(sj->chk);
	*sj->tmp = *sj->chk = 0;
	if (sj->sig_fd >= 0)
		close(sj->sig_fd);
	sj->sig_fd = -1;
}

static void stage_job_free(struct rr_stage_job *sj)
{
	unlink_tmps(sj);
	if (sj->kernel_fd >= 0)
		close(sj->kernel_fd);
	free(sj);
}

void stage_job_finish(struct rr_stage_job *sj, int r, const char *msg)
{
	struct rr_stage_plan p = sj->p;
	rr_stage_done_fn done = sj->done;
	void *arg = sj->arg;

	stage_job_free(sj);
	done(r, &p, msg, arg);
}

/* A helper's result, or why there is none. */
static const struct helper_result *helper_got(int status, const void *buf, size_t len,
					      char *msg, size_t msglen)
{
	if (status == 0 && len == sizeof(struct helper_result))
		return buf;
	snprintf(msg, msglen, "the staging helper %s (%s %d, %zu bytes)",
		 status == -ETIMEDOUT ? "was stopped after its timeout" : "failed",
		 status < 0 ? "error" : "status", status < 0 ? -status : status, len);
	return NULL;
}

static void on_loaded(int status, const char *out, void *ud)
{
	struct rr_stage_job *sj = ud;
	char msg[RR_ERR_MAX] = "";

	sj->job = NULL;
	stage_load_log(status == 0 ? RR_LOG_INFO : RR_LOG_NOTICE, sj->crash, out);
	if (status != 0)
		stage_load_reason(out, status, sj->crash, msg, sizeof(msg));
	stage_job_finish(sj, status == 0 ? 0 : status < 0 ? status : -EIO, msg);
}

static int start_load(struct rr_stage_job *sj, struct rr_err *e)
{
	struct rr_load_argv a;
	int r;

	stage_load_argv(&sj->c, &sj->p, sj->crash, &a);
	r = job_start(sj->ev, a.argv, 300, RR_CHILD_KEXEC_CAPS | RR_CHILD_NICE, true, on_loaded, sj,
		      &sj->job);
	return r < 0 ? rr_errf(e, -r, "%s load: cannot start: %s", sj->c.rerand_bin, strerror(-r)) : 0;
}

static void start_check(struct rr_stage_job *sj, const char *path, bool pre);
static void start_sign(struct rr_stage_job *sj);

static void on_checked(int status, const void *buf, size_t len, void *ud)
{
	struct rr_stage_job *sj = ud;
	const struct helper_result *res;
	struct rr_err e;
	char msg[RR_ERR_MAX];
	bool pre = sj->prechecking;

	sj->job = NULL;
	sj->prechecking = false;
	if (!(res = helper_got(status, buf, len, msg, sizeof(msg)))) {
		stage_job_finish(sj, -EIO, msg);
		return;
	}
	if (pre) {
		/* the copy the helper made and checked: beside the image,
		 * named as stage_make_tmp names it, or not taken */
		size_t n = strlen(sj->p.image);
		if (res->r == 0 && (strncmp(res->copy, sj->p.image, n) || strncmp(res->copy + n, ".chk", 4) ||
				    strchr(res->copy + n, '/') || strlen(res->copy) >= sizeof(sj->chk))) {
			stage_job_finish(sj, -EIO, "the staging helper named no checked copy");
			return;
		}
		if (res->r == 0)
			snprintf(sj->chk, sizeof(sj->chk), "%s", res->copy);
		if (res->r < 0) {
			/* never signed: sbsign does not see what failed */
			stage_job_finish(sj, res->r, res->msg);
			return;
		}
		unlink(sj->tmp);                  /* the builder's file: done with */
		*sj->tmp = 0;
		start_sign(sj);
		return;
	}
	if (res->r < 0) {
		stage_job_finish(sj, res->r, res->msg);
		return;
	}
	{
		/* what the check found (the signer, the image's SHA-256 it
		 * recorded), and nothing else of its plan */
		struct rr_stage_plan p = sj->p;
		snprintf(p.signer, sizeof(p.signer), "%s", res->p.signer);
		snprintf(p.signature, sizeof(p.signature), "%s", res->p.signature);
		snprintf(p.anchor, sizeof(p.anchor), "%s", res->p.anchor);
		snprintf(p.image_sha256, sizeof(p.image_sha256), "%s", res->p.image_sha256);
		if (stage_plan_verify(&sj->c, &sj->want, &p, false, &e) < 0) {
			stage_job_finish(sj, -EPERM, e.msg);
			return;
		}
		sj->p = p;
	}
	unlink_tmps(sj);                   /* a copy of them is in place */
	rr_log(RR_LOG_INFO, "built %s as %s without capabilities%s", sj->p.image,
	       stage_builder_name(&sj->c), sj->p.source == RR_IMG_SIGNED_HERE ?
	       ", checked, then signed by sbsign" : "");
	if (sj->build_only)
		stage_job_finish(sj, 0, "");
	else if (start_load(sj, &e) < 0)
		stage_job_finish(sj, -EIO, e.msg);
}

static void start_check(struct rr_stage_job *sj, const char *path, bool pre)
{
	struct check_args a = { &sj->c, &sj->p, path, pre };
	int r;

	sj->prechecking = pre;
	r = job_start_fn_pre(sj->ev, "rerandd-check", check_pre, check_child, &a, 600, on_checked, sj,
			     &sj->job);
	if (r < 0) {
		char msg[RR_ERR_MAX];
		snprintf(msg, sizeof(msg), "cannot start the staging helper: %s", strerror(-r));
		stage_job_finish(sj, r, msg);
	}
}

/* Every use of SignKey= in the journal (RR_MSGID_SIGNKEY): the key (a path,
 * or a pkcs11: URI without its query, where a pin-value= would be), the
 * certificate, the kernel and the image it signed (a file of the cache named
 * by hashes), and how sbsign ended.  No key material, no address. */
static void audit_sign(const struct rr_stage_job *sj, int status)
{
	char key[RR_PATH], f_key[RR_PATH + 32], f_cert[RR_PATH + 32], f_kern[RR_PATH + 32],
	     f_img[RR_PATH + 192], f_res[64];
	const char *fields[] = { f_key, f_cert, f_kern, f_img, f_res };

	snprintf(key, sizeof(key), "%s", sj->c.sign_key);
	if (!strncmp(key, "pkcs11:", 7))
		key[strcspn(key, "?")] = 0;
	snprintf(f_key, sizeof(f_key), "RERAND_SIGN_KEY=%s", key);
	snprintf(f_cert, sizeof(f_cert), "RERAND_SIGN_CERT=%s", sj->c.sign_cert);
	snprintf(f_kern, sizeof(f_kern), "RERAND_KERNEL=%s", sj->p.kernel);
	snprintf(f_img, sizeof(f_img), "RERAND_IMAGE=%s", sj->p.image);
	if (status == 0)
		snprintf(f_res, sizeof(f_res), "RERAND_SIGN_RESULT=signed");
	else
		snprintf(f_res, sizeof(f_res), "RERAND_SIGN_RESULT=failed (status %d)", status);
	audit_log(status == 0 ? RR_LOG_NOTICE : RR_LOG_WARNING, RR_MSGID_SIGNKEY, fields, 5,
		  "SignKey=%s %s the image %s of %s (SignCert=%s)", key,
		  status == 0 ? "signed" : "did not sign", sj->p.image, sj->p.kernel, sj->c.sign_cert);
}

static void on_signed(int status, const char *out, void *ud)
{
	struct rr_stage_job *sj = ud;
	char msg[RR_ERR_MAX], path[32];
	struct rr_err e;

	sj->job = NULL;
	unlink(sj->chk);
	*sj->chk = 0;
	audit_sign(sj, status);
	if (status != 0) {
		stage_child_failed("sbsign of", sj->p.image, status, out, msg, sizeof(msg));
		stage_job_finish(sj, status < 0 ? status : -EIO, msg);
		return;
	}
	/* What sbsign wrote, made root's alone and unchangeable before it is
	 * checked: whatever CheckUser= still holds open (it was reachable
	 * through /proc while sbsign ran) can write no more; a writable
	 * mapping of it somewhere (EBUSY) and it is not used. */
	if (fchmod(sj->sig_fd, 0600) < 0 ||
	    fcntl(sj->sig_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
		rr_errf(&e, EPERM, "sbsign's output for %s cannot be sealed (%s): not used",
			sj->p.image, strerror(errno));
		stage_job_finish(sj, -EPERM, e.msg);
		return;
	}
	/* the helper is forked, not exec'd: it has the memfd at this number */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", sj->sig_fd);
	start_check(sj, path, false);
}

/* sbsign on the copy that passed the check (sj->chk), into a memfd
 * (sj->sig_fd), as CheckUser= (caps_child_signer): the copy it reads is
 * handed over open read-only, the key and certificate as sealed memfds;
 * it is given no path of rerandd's. */
static void start_sign(struct rr_stage_job *sj)
{
	struct rr_signer s = { .in_fd = -1, .out_fd = -1, .cert = sj->c.sign_cert,
			       .who = { .kernel_fd = -1, .out_fd = -1 } };
	char msg[RR_ERR_MAX], *argv[12];
	struct rr_err e;
	int r;

	if (strncmp(sj->c.sign_key, "pkcs11:", 7))
		s.key = sj->c.sign_key;
	if ((r = stage_checker_identity(&sj->c, &s.who, &e)) < 0) {
		stage_job_finish(sj, r, e.msg);
		return;
	}
	s.in_fd = open(sj->chk, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
	if (s.in_fd < 0) {
		r = -errno;
		rr_errf(&e, r, "%s: cannot open for sbsign: %s", sj->chk, strerror(-r));
		stage_job_finish(sj, r, e.msg);
		return;
	}
	/* its mode lets CheckUser= reopen it to write (others: write only),
	 * until on_signed seals it */
	sj->sig_fd = s.out_fd = memfd_create("rerandd-signed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (s.out_fd < 0 || fchmod(s.out_fd, 0602) < 0) {
		r = -errno;
		snprintf(msg, sizeof(msg), "%s: a memfd for sbsign's output: %s", sj->p.image,
			 strerror(-r));
		close(s.in_fd);
		stage_job_finish(sj, r, msg);
		return;
	}
	stage_sign_argv(&sj->c, argv);
	r = job_start_signer(sj->ev, argv, 600, &s, on_signed, sj, &sj->job);
	close(s.in_fd);
	if (r < 0) {
		snprintf(msg, sizeof(msg), "%s: cannot start: %s", argv[0], strerror(-r));
		stage_job_finish(sj, r, msg);
	}
}

static void on_built(int status, const char *out, void *ud)
{
	struct rr_stage_job *sj = ud;
	char msg[RR_ERR_MAX];
	struct rr_err e;
	int r;

	sj->job = NULL;
	if (status != 0) {
		char what[RR_PATH + 16], file[RR_PATH + 64];
		snprintf(what, sizeof(what), "%s image", sj->c.rerand_bin);
		snprintf(file, sizeof(file), "%s (as %s, no capabilities)", sj->p.kernel,
			 stage_builder_name(&sj->c));
		stage_child_failed(what, file, status, out, msg, sizeof(msg));
		stage_job_finish(sj, status < 0 ? status : -EIO, msg);
		return;
	}
	{
		/* the hash names the file as it was when the builder started: an
		 * in-place write meanwhile (not dpkg's way, which renames) makes
		 * the image another kernel's */
		r = digest_kernel_unchanged(sj->kernel_fd, sj->p.kernel, &sj->p.kernel_id, &e);
		if (r < 0) {
			stage_job_finish(sj, r, e.msg);
			return;
		}
	}
	if (chmod(sj->tmp, 0644) < 0) {
		r = rr_errf(&e, errno, "%s: chmod: %s", sj->tmp, strerror(errno));
		stage_job_finish(sj, r, e.msg);
		return;
	}
	/* Checked before anything else reads it: with SignKey=, a copy is
	 * checked first and only that copy is signed (start_sign). */
	start_check(sj, sj->tmp, sj->p.source == RR_IMG_SIGNED_HERE);
}

/* The builder's identity, its two files (rerandd's, handed over as fds
 * 3 and 4), and the job. */
int stage_job_build(struct rr_stage_job *sj, struct rr_err *e)
{
	struct rr_builder b = { .kernel_fd = -1, .out_fd = -1 };
	char *argv[12];
	int r;

	r = stage_builder_identity(&sj->c, &b, e);
	if (r < 0)
		return r;
	/* the file the plan hashed, or nothing: its image is cached under
	 * that hash */
	b.kernel_fd = digest_kernel_reopen(sj->p.kernel, &sj->p.kernel_id, e);
	if (b.kernel_fd < 0)
		return b.kernel_fd;
	b.out_fd = stage_make_tmp(&sj->p, "tmp", sj->tmp, sizeof(sj->tmp), e);
	if (b.out_fd < 0) {
		*sj->tmp = 0;
		close(b.kernel_fd);
		return b.out_fd;
	}
	/* The package guest checks this line: the kernel hook's image is
	 * staged, not rebuilt. */
	rr_log(RR_LOG_INFO, "building %s from %s%s", sj->p.image, sj->p.kernel,
	       sj->build_only ? " (build only, not staged)" : "");
	stage_image_argv(&sj->c, &sj->p, argv);
	r = job_start_builder(sj->ev, argv, 600, &b, on_built, sj, &sj->job);
	/* the child has its copies (or there is no child); the kernel's is
	 * kept to check, once it is built, that the file did not change */
	close(b.out_fd);
	if (r < 0) {
		close(b.kernel_fd);
		return rr_errf(e, -r, "%s image: cannot start: %s", sj->c.rerand_bin, strerror(-r));
	}
	if (sj->kernel_fd >= 0)
		close(sj->kernel_fd);
	sj->kernel_fd = b.kernel_fd;
	return 0;
}

static void on_prepped(int status, const void *buf, size_t len, void *ud)
{
	struct rr_stage_job *sj = ud;
	const struct helper_result *res;
	struct rr_err e;
	char msg[RR_ERR_MAX];
	int r;

	sj->job = NULL;
	if (!(res = helper_got(status, buf, len, msg, sizeof(msg)))) {
		stage_job_finish(sj, -EIO, msg);
		return;
	}
	sj->p = res->p;
	if (*res->changed)
		rr_log(RR_LOG_NOTICE, "%s", res->changed);
	if (*res->note)
		rr_log(RR_LOG_ERR, "%s", res->note);
	if (res->r != 0) {
		stage_job_finish(sj, res->r, res->msg);
		return;
	}
	/* nothing the helper says is taken on its word: the paths and the
	 * command line `rerand load` gets are rerandd's own */
	if ((r = stage_plan_verify(&sj->c, &sj->want, &sj->p, res->need_build, &e)) < 0) {
		stage_job_finish(sj, r, e.msg);
		return;
	}
	if (!res->need_build && sj->build_only) {
		stage_job_finish(sj, 0, "");     /* cached already, and checked */
		return;
	}
	if (!res->need_build) {
		if (start_load(sj, &e) < 0)
			stage_job_finish(sj, -EIO, e.msg);
		return;
	}
	r = stage_job_build(sj, &e);
	if (r < 0)
		stage_job_finish(sj, r, e.msg);
}

int stage_start(sd_event *ev, const struct rr_config *c, const struct rr_stage_req *req,
		rr_stage_done_fn done, void *arg, struct rr_stage_job **ret, struct rr_err *e)
{
	struct rr_stage_job *sj = calloc(1, sizeof(*sj));
	struct prep_args a;
	int r = 0;

	if (!sj)
		return rr_errf(e, ENOMEM, "out of memory");
	memset(&sj->p, 0, sizeof(sj->p));
	sj->kernel_fd = -1;
	sj->sig_fd = -1;
	sj->c = *c;
	sj->crash = req->crash;
	sj->build_only = req->build_only;
	sj->job = NULL;
	sj->ev = ev;
	sj->done = done;
	sj->arg = arg;
	/* rerandd's own choice, made here and now (cheap: nothing hashed),
	 * which the helper's plan must match */
	if (req->plan)
		sj->want = *req->plan;
	else if (req->planner)
		r = req->expect ? req->expect(c, req->planner_arg, &sj->want, e)
				: rr_errf(e, EINVAL, "a staging planner without its check");
	else
		r = stage_plan_choose(c, req->kernel, &sj->want, e);
	if (r < 0) {
		free(sj);
		return r;
	}
	a = (struct prep_args){ &sj->c, req, &sj->p };
	/* forked at once: the helper sees req as it is now */
	r = job_start_fn_pre(ev, "rerandd-plan", prep_pre, prep_child, &a, 600, on_prepped, sj,
			     &sj->job);
	if (r < 0) {
		free(sj);
		return rr_errf(e, -r, "cannot start the staging helper: %s", strerror(-r));
	}
	*ret = sj;
	return 0;
}

void stage_cancel(struct rr_stage_job *sj)
{
	if (!sj)
		return;
	job_cancel(sj->job);
	stage_job_free(sj);
}
