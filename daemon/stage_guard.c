/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd's own check of the plan a staging helper hands back.  The helper
 * hashes the kernel and parses cached images (bytes the unprivileged
 * builder wrote): whatever it says is checked here, in rerandd, before
 * `rerand load` runs with CAP_SYS_BOOT on its paths and command line.  The
 * kernel, initrd and command line must be those rerandd chose itself; the
 * image must be in rerandd's own cache under the name its key gives (or
 * the pre-signed image of the release), reached through no symlink. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rerandd.h"

#include "stage_int.h"

static bool is_hex64(const char *s)
{
	return strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

/* path's directory, by its real path, is base's real path followed by sub
 * (sub itself no symlink), and path itself is no symlink: a regular file, or
 * none yet (it is about to be built). */
static int inside(const char *path, const char *base, const char *sub, const char *what,
		  struct rr_err *e)
{
	char real_base[PATH_MAX], real_parent[PATH_MAX], parent[RR_PATH + 200];
	char want[PATH_MAX + 64];
	const char *slash = strrchr(path, '/');
	struct stat st;

	if (!slash || slash == path || !slash[1])
		return rr_errf(e, EPERM, "the staging helper's plan names the image \"%s\", not a file "
			       "in %s: refused, nothing staged", path, what);
	if (rr_pathf(parent, sizeof(parent), "%.*s", (int)(slash - path), path) < 0)
		return rr_errf(e, ENAMETOOLONG, "the staging helper's plan names the image \"%s\", "
			       "a path too long: refused, nothing staged", path);
	if (!realpath(base, real_base))
		return rr_errf(e, errno, "%s: %s: %s", what, base, strerror(errno));
	if (rr_pathf(want, sizeof(want), "%s%s%s", real_base, sub ? "/" : "", sub ? sub : "") < 0)
		return rr_errf(e, ENAMETOOLONG, "%s: %s/%s: path too long", what, real_base,
			       sub ? sub : "");
	if (!realpath(parent, real_parent) || strcmp(want, real_parent))
		return rr_errf(e, EPERM, "the staging helper's plan names the image %s, outside %s "
			       "(%s): refused, nothing staged", path, what, want);
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return rr_errf(e, EPERM, "the staging helper's plan names the image %s, which is %s, "
			       "not a regular file in %s: refused, nothing staged", path,
			       S_ISLNK(st.st_mode) ? "a symlink" : "no regular file", what);
	return 0;
}

static int differs(const char *field, const char *want, const char *got, struct rr_err *e)
{
	return rr_errf(e, EPERM, "the staging helper's plan has %s \"%s\", but rerandd's own is "
		       "\"%s\": refused, nothing staged", field, got, want);
}

int stage_plan_verify(const struct rr_config *c, const struct rr_stage_plan *want,
		      const struct rr_stage_plan *got, bool need_build, struct rr_err *e)
{
	char dir[RR_PATH + 16], name[RR_PATH + 200], rec[65];
	int r;

	if (strcmp(want->kernel, got->kernel))
		return differs("the kernel", want->kernel, got->kernel, e);
	if (strcmp(want->initrd, got->initrd))
		return differs("the initrd", want->initrd, got->initrd, e);
	if (strcmp(want->cmdline, got->cmdline))
		return differs("the command line", want->cmdline, got->cmdline, e);
	if (strcmp(want->trust_cert, got->trust_cert))
		return differs("TrustCert=", want->trust_cert, got->trust_cert, e);
	if (want->uki != got->uki)
		return differs("the kernel's kind", want->uki ? "UKI" : "bzImage",
			       got->uki ? "UKI" : "bzImage", e);
	if (!is_hex64(got->sha) || strcmp(got->stage_sha, stage_blob_sha()))
		return rr_errf(e, EPERM, "the staging helper's plan has the cache key %.70s.%.70s, not "
			       "a kernel's SHA-256 and rerandd's stage (%.16s...): refused, nothing "
			       "staged", got->sha, got->stage_sha, stage_blob_sha());
	if (*got->image_sha256 && !is_hex64(got->image_sha256))
		return rr_errf(e, EPERM, "the staging helper's plan has the image SHA-256 \"%.70s\": "
			       "refused, nothing staged", got->image_sha256);
	switch (got->source) {
	case RR_IMG_PRESIGNED:
		if (!*c->signed_dir || !*got->release || strchr(got->release, '/') ||
		    got->release[0] == '.')
			return rr_errf(e, EPERM, "the staging helper's plan names a pre-signed image %s "
				       "(release \"%s\") without SignedImageDirectory= of that release: "
				       "refused, nothing staged", got->image, got->release);
		if (rr_pathf(name, sizeof(name), "%s/%s.img", c->signed_dir, got->release) < 0 ||
		    strcmp(name, got->image))
			return differs("the pre-signed image", name, got->image, e);
		return inside(got->image, c->signed_dir, NULL, "SignedImageDirectory=", e);
	case RR_IMG_SIGNED_HERE:
		if (!*c->sign_key || !*c->sign_cert)
			return rr_errf(e, EPERM, "the staging helper's plan has an image signed here "
				       "(%s), but SignKey= and SignCert= are not set: refused, nothing "
				       "staged", got->image);
		/* fall through */
	case RR_IMG_BUILT:
		break;
	default:
		return rr_errf(e, EPERM, "the staging helper's plan has image source %d: refused, "
			       "nothing staged", (int)got->source);
	}
	if (rr_path_join(dir, sizeof(dir), c->state_dir, "images") < 0 ||
	    rr_pathf(name, sizeof(name), "%s/%s.%s%s.img", dir, got->sha, got->stage_sha,
		     got->source == RR_IMG_SIGNED_HERE ? ".signed" : "") < 0 ||
	    strcmp(name, got->image))
		return differs("the image", name, got->image, e);
	r = inside(got->image, c->state_dir, "images", "rerandd's image cache", e);
	if (r < 0)
		return r;
	/* a cached image is loaded with --sha256 of the record rerandd wrote
	 * when it was built, not of a hash the helper made up */
	if (!need_build) {
		struct rr_err re;
		if (digest_record_read(got->image, rec, &re) < 0 || strcmp(rec, got->image_sha256))
			return rr_errf(e, EPERM, "the staging helper's plan has the image SHA-256 "
				       "%.16s... for %s, not the one recorded when it was built: "
				       "refused, nothing staged", got->image_sha256, got->image);
	}
	return 0;
}
