/* SPDX-License-Identifier: GPL-2.0-only */
/* The image cache under <state>/images, keyed by the SHA-256 of the kernel
 * and of the stage: the temporary files beside an image, and pruning the
 * images no kernel needs any more. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <signal.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include "cachekey.h"
#include "image.h"
#include "lockdown.h"
#include "pesig.h"
#include "rerandd.h"
#include "sign.h"

#include "stage_int.h"

/* The stage, linked in: rerandd builds images itself. */
#include "stage_blob.h"

/* Hashed once per process.  rerandd itself never reads the stage's bytes
 * otherwise (the images are built by RerandBinary=), so its pages are
 * unmapped again after the hash: about 70 kB of idle RSS (issue 28).  They
 * are the executable's read-only pages: a later read maps them back from
 * the file. */
const char *stage_blob_sha(void)
{
	static char hex[65];
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)rr_stage_blob, b = (uintptr_t)rr_stage_blob_end;

	if (*hex)
		return hex;
	if (rr_cache_key_stage(rr_stage_blob, (size_t)(b - a), hex) < 0)
		hex[0] = 0;
	a = (a + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
	b &= ~((uintptr_t)pg - 1);
	if (pg > 0 && b > a)
		(void)madvise((void *)a, b - a, MADV_DONTNEED);
	return hex;
}

/* src/cachekey.c's key, with this rerandd's stage: `rerand cache-key`, which
 * the kernel hook asks, links the same stage and computes the same key.
 * The stage's hash is the one made once (stage_blob_sha): hashing its bytes
 * at every plan would map back the pages dropped after the first. */
int stage_cache_key(int kfd, const char *kernel, const struct rr_kernel_id *id,
		    struct rr_cache_key *k, struct rr_err *e)
{
	return digest_kernel_key(kfd, kernel, id, stage_blob_sha(), k, e);
}

/* A temporary file beside p->image, for a child to write and rerandd to
 * rename: nothing half-written is ever at p->image. */
int stage_make_tmp(const struct rr_stage_plan *p, const char *tag, char *tmp, size_t len,
		   struct rr_err *e)
{
	int fd;

	if (rr_pathf(tmp, len, "%s.%sXXXXXX", p->image, tag) < 0)
		return rr_errf(e, ENAMETOOLONG, "%s: path too long", p->image);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return rr_errf(e, errno, "%s: cannot create a temporary file: %s", tmp, strerror(errno));
	return fd;
}

/* <key>.img or <key>.signed.img, or the record of one (.sha256) */
static bool image_of(const char *name, const char *key)
{
	size_t n = strlen(key);

	return *key && !strncmp(name, key, n) &&
	       (!strcmp(name + n, ".img") || !strcmp(name + n, ".signed.img") ||
		!strcmp(name + n, ".img.sha256") || !strcmp(name + n, ".signed.img.sha256"));
}

/* <sha>.<this stage's sha>.img that the kernel hook built for an installed
 * kernel (its index names the sha): rerandd stages it when that kernel comes
 * up, and removing it would race the hook, which may have just written it. */
static bool hook_image(const struct rr_config *c, const char *name)
{
	char sha[65];

	if (strlen(name) < 65 || name[64] != '.')
		return false;
	memcpy(sha, name, 64);
	sha[64] = 0;
	return image_of(name + 65, stage_blob_sha()) && kernels_indexed(c, sha);
}

/* A build's temporary file (stage_make_tmp: IMAGE.tmpXXXXXX, .chk, .sig)
 * young enough for its job to be running: another job's (the kernel hook's
 * build runs beside staging), not a leftover.  Each step of a build times
 * out within 10 minutes. */
static bool busy_tmp(int dfd, const char *name)
{
	struct stat st;

	if (!strstr(name, ".img.tmp") && !strstr(name, ".img.chk") && !strstr(name, ".img.sig"))
		return false;
	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && time(NULL) - st.st_mtime < 3600;
}

void stage_prune(const struct rr_config *c, const char *keep_sha, const char *keep_sha2)
{
	char dir[RR_PATH + 16], keep[160], keep2[160] = "";
	struct dirent *de;
	DIR *d;

	if (rr_path_join(dir, sizeof(dir), c->state_dir, "images") < 0)
		return;                    /* no such cache: nothing to prune */
	/* cache names start with <kernel sha>.<stage sha> */
	snprintf(keep, sizeof(keep), "%s.%s", keep_sha ? keep_sha : "", stage_blob_sha());
	if (keep_sha2 && *keep_sha2)
		snprintf(keep2, sizeof(keep2), "%s.%s", keep_sha2, stage_blob_sha());
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		/* the crash kernel may run another kernel's image */
		if (de->d_name[0] == '.' || (keep_sha && *keep_sha && image_of(de->d_name, keep)) ||
		    image_of(de->d_name, keep2) || hook_image(c, de->d_name) ||
		    busy_tmp(dirfd(d), de->d_name))
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) == 0)
			rr_log(RR_LOG_INFO, "removed cached image %s/%s", dir, de->d_name);
	}
	closedir(d);
}
