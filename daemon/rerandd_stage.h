/* SPDX-License-Identifier: GPL-2.0-only */
/* What the rest of rerandd uses of staging (stage_*.c): the plan, the jobs,
 * the cache; what the staging files share among themselves is in stage_int.h.
 * A part of rerandd.h, which includes it after the types it uses:
 * include rerandd.h, not this file. */
#ifndef RERANDD_STAGE_H
#define RERANDD_STAGE_H

/* ---- stage_*.c (inside: stage_int.h) ------------------------------------ */
enum rr_image_source {
	RR_IMG_BUILT = 0,                    /* built here into the cache, unsigned */
	RR_IMG_PRESIGNED,                    /* SignedImageDirectory=/<release>.img */
	RR_IMG_SIGNED_HERE,                  /* built and signed here (SignKey=) */
};
struct rr_stage_plan {
	char kernel[RR_PATH];
	char initrd[RR_PATH];                /* "" = none */
	char cmdline[RR_CMD];
	char sha[65];                        /* the kernel file's SHA-256 */
	char stage_sha[65];                  /* the stage's: stage_blob_sha() */
	/* <state>/images/<sha>.<stage_sha>[.signed].img, or a pre-signed one */
	char image[RR_PATH + 160];
	enum rr_image_source source;
	bool locked;                         /* planned under lockdown: signed images only */
	char release[128];                   /* the kernel's, when locked */
	char signer[256];                    /* subject of the image's signer, "" = unsigned */
	                                     /* or the signature does not verify */
	char signature[12];                  /* rr_pe_sig_state(): verified, bad, none */
	char trust_cert[RR_PATH];            /* [Stage] TrustCert=, "" = none */
	char anchor[256];                    /* the TrustCert= certificate the signer */
	                                     /* chains to; "" = not checked */
	bool uki;                            /* the kernel is a UKI: `rerand load --uki` */
	/* SHA-256 of the whole image file as built here (its .sha256 record),
	 * checked by `rerand load --sha256`; "" for a pre-signed image */
	char image_sha256[65];
	/* the kernel file hashed into sha: the builder gets this file or none */
	struct rr_kernel_id kernel_id;
};
const char *stage_source_name(enum rr_image_source s);
/* The release (uname -r) a kernel file says it is: the first word of its
 * bzImage version string. */
int stage_kernel_release(const char *kernel, char *ret, size_t len, struct rr_err *e);
/* SHA-256 of the stage rerandd links in (src/stage_blob.S) and builds into
 * every image: with the kernel's, the image cache key, so a new rerand (a new
 * stage) never boots an image the old one cached. */
const char *stage_blob_sha(void);
/* The image cache key (src/cachekey.h) of the kernel open as kfd with this
 * stage; id from digest_kernel_open: -ESTALE if the file changed since. */
struct rr_cache_key;
int stage_cache_key(int kfd, const char *kernel, const struct rr_kernel_id *id,
		    struct rr_cache_key *k, struct rr_err *e);
/* Drop loader-only words (BOOT_IMAGE=, initrd=); -EINVAL on nokaslr. */
int stage_clean_cmdline(const char *in, char *out, size_t len, struct rr_err *e);
/* The newest <boot>/vmlinuz-* by version order. */
int stage_newest_kernel(const char *boot_dir, char *out, size_t len);
int stage_plan(const struct rr_config *c, const char *kernel_override, struct rr_stage_plan *p,
	       struct rr_err *e);
/* stage_plan without the kernel's hash and the image's name: the kernel,
 * initrd and command line it would stage (cheap: no file is hashed). */
int stage_plan_choose(const struct rr_config *c, const char *kernel_override,
		      struct rr_stage_plan *p, struct rr_err *e);
/* rerandd's check of a plan a helper returned (got) before anything acts on
 * it: the kernel, initrd, command line and certificate those rerandd chose
 * itself (want, from stage_plan_choose or the plan it staged), the image
 * in its own cache (<state>/images/<sha>.<its stage's sha>[.signed].img,
 * the directory's real path, no symlink) or SignedImageDirectory=/
 * <release>.img, and, cached (need_build false), the image's SHA-256 the
 * one its record holds.  0, or -EPERM and e says what differs. */
int stage_plan_verify(const struct rr_config *c, const struct rr_stage_plan *want,
		      const struct rr_stage_plan *got, bool need_build, struct rr_err *e);
/* A staged plan's key again, from the kernel file as it is now (the restage
 * before a reboot, a periodic restage): 1 and why in note if the file
 * changed since (its image is another), 0 if not, <0 if it cannot be hashed. */
int stage_rekey(const struct rr_config *c, struct rr_stage_plan *p, char *note, size_t notelen,
		struct rr_err *e);
/* Build the image into the cache unless it is there already (signed with
 * SignKey= when the plan says so), or check a pre-signed one: signed, and
 * of the plan's release.  Sets p->signer.  Blocking (tests); rerandd uses
 * stage_start(). */
int stage_build(const struct rr_config *c, struct rr_stage_plan *p, struct rr_err *e);
/* The `rerand load` command line for p (crash: `--crash`, [Crash]
 * FileSyscall=): the one place it is built.  Also exports the [Paths]
 * files `rerand load` reads, so it sees what rerandd saw. */
struct rr_load_argv {
	char *argv[16];
	char initrd[RR_PATH + 16], append[RR_CMD + 16], kexec[RR_PATH + 16], uki[RR_PATH + 16];
	char sha256[80];
};
void stage_load_argv(const struct rr_config *c, const struct rr_stage_plan *p, bool crash,
		     struct rr_load_argv *ret);
/* Staging as jobs on ev, nothing slow in the loop: a forked helper plans
 * (the kernel's SHA-256) and checks the cache, `rerand image` builds (an
 * unprivileged child), a helper checks the result, `rerand load` (crash:
 * --crash) loads it.  done(0, plan with its signer, "", arg) once loaded,
 * done(1, plan, ...) when the plan's kernel hash is req->unless_sha, else
 * done(<0, plan, why, arg).  <0 with e (done not called) if nothing started. */
struct rr_stage_req {
	const struct rr_stage_plan *plan;    /* staged as it is; NULL: planned */
	const char *kernel;                  /* plan this kernel (NULL: [Stage]'s) */
	/* or plan with this (crash.c), in the helper */
	int (*planner)(const struct rr_config *c, const void *arg, struct rr_stage_plan *p,
		       struct rr_err *e);
	/* with planner: what rerandd checks the helper's plan against
	 * (stage_plan_choose's part of it), run in rerandd itself */
	int (*expect)(const struct rr_config *c, const void *arg, struct rr_stage_plan *p,
		      struct rr_err *e);
	const void *planner_arg;
	const char *unless_sha;              /* a new kernel only */
	bool crash;
	/* built (or found cached) and checked, not loaded: the kernel hook's
	 * request over the control socket (done(0, ...) once in the cache) */
	bool build_only;
};
struct rr_stage_job;
typedef void (*rr_stage_done_fn)(int r, const struct rr_stage_plan *p, const char *msg, void *arg);
int stage_start(sd_event *ev, const struct rr_config *c, const struct rr_stage_req *req,
		rr_stage_done_fn done, void *arg, struct rr_stage_job **ret, struct rr_err *e);
void stage_cancel(struct rr_stage_job *sj);
struct rr_view;
/* The view's Secure Boot fields: the state now, the staged plan's signer. */
void stage_view_secure(const struct rr_config *c, const struct rr_stage_plan *staged,
		       struct rr_view *v);
/* Remove cached images other than those of kernels keep_sha and keep_sha2 (may
 * be NULL or "") and of kernels in the hooks' index (kernels_indexed), with
 * this rerandd's stage: images of an older stage go too. */
void stage_prune(const struct rr_config *c, const char *keep_sha, const char *keep_sha2);

#endif
