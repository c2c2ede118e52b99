/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd's image cache is keyed by the kernel's SHA-256 and the SHA-256 of
 * the stage it links in: after an upgrade of rerand (a new stage), an image
 * the old rerandd cached is rebuilt, never booted, and pruned. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cachekey.h"
#include "image.h"
#include "rerandd.h"
#include "stage_blob.h"
#include "test.h"

/* sha256sum's word on a file: an implementation apart from the daemon's (Nettle) */
static int sha256sum(const char *path, char hex[65])
{
	char cmd[600];
	FILE *p;
	int ok;

	snprintf(cmd, sizeof(cmd), "sha256sum '%s'", path);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	ok = fscanf(p, "%64s", hex) == 1;
	pclose(p);
	return ok && strlen(hex) == 64 ? 0 : -1;
}

static int write_image(const struct rr_kernel *k, const uint8_t *stage, size_t len,
		       const char *path)
{
	struct rr_image_opts o = { .codec = RERAND_CODEC_LZ4 };
	struct rr_err e;
	uint8_t *buf;
	size_t n;
	int r = rr_image_build(k, stage, len, &o, &buf, &n, path, &e);

	if (r < 0)
		return r;
	r = rr_write_file_atomic(path, buf, n, &e);
	free(buf);
	return r;
}

/* The image records the SHA-256 of the stage it carries (image format 2):
 * the one rerandd links in?  (The bytes differ: the writer fills in the
 * locator and the EFI stub.) */
static bool has_our_stage(const char *path)
{
	uint8_t want[32], *buf;
	struct rr_image im;
	size_t n;
	bool same;

	if (rr_stage_sha256(rr_stage_blob, (size_t)(rr_stage_blob_end - rr_stage_blob), want) < 0 ||
	    rr_read_file(path, 512u << 20, &buf, &n, NULL) < 0)
		return false;
	same = rr_image_parse(buf, n, path, &im, NULL) == 0 &&
	       !memcmp(im.hdr.stage_sha256, want, sizeof(want));
	free(buf);
	return same;
}

/* The release an image's kernel says it is ("" if it does not parse). */
static void image_release(const char *path, char *out, size_t n)
{
	struct rr_image im;
	uint8_t *buf;
	size_t len, w = 0;

	*out = 0;
	if (rr_read_file(path, 512u << 20, &buf, &len, NULL) < 0)
		return;
	if (rr_image_parse(buf, len, path, &im, NULL) == 0) {
		while (im.kernel_version[w] && im.kernel_version[w] != ' ')
			w++;
		snprintf(out, n, "%.*s", (int)w, im.kernel_version);
	}
	free(buf);
}

/* What dpkg does to a kernel it upgrades: the new file renamed over the path. */
static int replace_file(const char *from, const char *path)
{
	uint8_t *buf;
	size_t n;
	int r = rr_read_file(from, 512u << 20, &buf, &n, NULL);

	if (r < 0)
		return r;
	r = rr_write_file_atomic(path, buf, n, NULL);
	free(buf);
	return r;
}

/* One kernel, one hash (issue 24, point 5): a kernel replaced between the
 * plan (its hash, the cache key) and the build is never built under the old
 * hash; the restage's rekey sees the new file. */
static void replaced_kernel(struct rr_config c, const char *kdir, const char *dir,
			    const char *first)
{
	char second[300], from[600], path[600], sha2[65], rel[128], note[RR_ERR_MAX] = "";
	struct rr_stage_plan p, q;
	struct rr_err e = { "" };
	int r;

	if (t_kernel_pick("vmlinuz-6.12.118+deb12-cloud-amd64", "vmlinuz-6.1[2-9]*-cloud-amd64",
			  NULL, second, sizeof(second)) < 0) {
		printf("ok %d # SKIP no second kernel in %s to replace the first with\n", ++t_run, kdir);
		return;
	}
	snprintf(from, sizeof(from), "%s/%s", kdir, second);
	/* a cache of its own: the first kernel's image is not there yet */
	snprintf(c.state_dir, sizeof(c.state_dir), "%.400s/swap", dir);
	mkdir(c.state_dir, 0700);
	snprintf(path, sizeof(path), "%.400s/boot-vmlinuz", dir);
	snprintf(c.kernel, sizeof(c.kernel), "%.500s", path);
	T_OK(replace_file(first, path) == 0 && sha256sum(from, sha2) == 0, "setup: %s", path);
	r = stage_plan(&c, NULL, &p, &e);
	T_OK(r == 0, "planned %s: sha256 %.16s %s", path, p.sha, r < 0 ? e.msg : "");
	/* the upgrade lands after the hash, before the builder opens it */
	T_OK(replace_file(from, path) == 0, "%s replaced by %s between the plan and the build", path,
	     second);
	r = stage_build(&c, &p, &e);
	image_release(p.image, rel, sizeof(rel));
	T_OK(access(p.image, F_OK) < 0 || !strcmp(rel, "6.1.0-57-cloud-amd64"),
	     "nothing but the hashed kernel's image under its hash %.16s (image of \"%s\")", p.sha,
	     access(p.image, F_OK) < 0 ? "none" : rel);
	T_OK(r == -ESTALE && strstr(e.msg, "replaced while staging") && strstr(e.msg, path),
	     "the build is refused, naming the file and why: %s", e.msg);
	q = p;
	T_OK(stage_rekey(&c, &q, note, sizeof(note), &e) == 1 && !strcmp(q.sha, sha2) &&
	     strstr(q.image, sha2) && strstr(note, "changed since it was staged"),
	     "the restage's rekey hashes the file there now (%.16s): %s", q.sha, note);
	T_OK(stage_build(&c, &q, &e) == 0 && (image_release(q.image, rel, sizeof(rel)), 1) &&
	     !strncmp(rel, second + 8, strlen(rel)) && *rel,
	     "... and its image is built of it (%s) %s", rel, e.msg);
	T_OK(stage_rekey(&c, &q, note, sizeof(note), &e) == 0 && !strcmp(q.sha, sha2),
	     "an unchanged kernel keeps its key");
	/* An in-place write while the builder reads it (not dpkg's way): a
	 * wrapper builder appends to the kernel through its fd 3 first; the
	 * image is refused after the build, not cached under the old hash. */
	{
		char wdir[] = "/tmp/rerand-test-wrap-XXXXXX", wrap[300];
		struct rr_config w = c;
		FILE *f;

		T_OK(replace_file(first, path) == 0 && chmod(path, 0666) == 0 && mkdtemp(wdir) &&
		     chmod(wdir, 0755) == 0, "setup: a kernel the builder may write");
		snprintf(wrap, sizeof(wrap), "%s/rerand", wdir);
		f = fopen(wrap, "w");
		if (f) {
			fprintf(f, "#!/bin/sh\nprintf x >>/proc/self/fd/3\nexec %s/build/rerand \"$@\"\n",
				T_TOP);
			fclose(f);
		}
		chmod(wrap, 0755);
		snprintf(w.rerand_bin, sizeof(w.rerand_bin), "%s", wrap);
		r = stage_plan(&w, NULL, &p, &e);
		T_OK(r == 0, "planned %s again %s", path, r < 0 ? e.msg : "");
		r = stage_build(&w, &p, &e);
		T_OK(r == -ESTALE && strstr(e.msg, "changed while the image was built") &&
		     access(p.image, F_OK) < 0,
		     "a kernel written while the builder read it: no image cached, and why: %s", e.msg);
		unlink(wrap);
		rmdir(wdir);
	}
	unlink(path);
	if (mkfifo(path, 0600) == 0)
		T_OK(stage_rekey(&c, &q, note, sizeof(note), &e) < 0 &&
		     strstr(e.msg, "not a regular file") && strstr(e.msg, path),
		     "a FIFO at the kernel's path is refused without hanging: %s", e.msg);
	unlink(path);
}

/* The Debian kernel hook (debian/hooks/kernel-hook) builds nothing itself:
 * it indexes the kernel (StateDirectory/kernels/VERSION, its SHA-256) and
 * asks rerandd to build.  Here no rerandd answers (RERAND_CONTROL_SOCKET
 * names no socket, as at package install time): the hook exits 0, caches
 * nothing, and its index names the kernel rerandd's plan hashes, so that
 * the image rerandd builds later is kept by the cache prune.  And `rerand
 * cache-key` prints rerandd's key.  (The hook's build through a running
 * rerandd: tests/daemon/test-onepath-daemon.sh.) */
static void hook_key(struct rr_config c, const char *kernel, const char *dir)
{
	char cmd[2000], *line = NULL;
	struct rr_stage_plan p;
	struct rr_err e = { "" };
	size_t cap = 0;
	unsigned n = 0;
	struct dirent *de;
	DIR *d;
	FILE *f;
	int rc, r;

	snprintf(c.state_dir, sizeof(c.state_dir), "%.400s/hook", dir);
	snprintf(cmd, sizeof(cmd), "RERAND_STATE_DIR='%s' RERAND_BIN='%s/build/rerand' "
		 "RERAND_CONTROL_SOCKET='%s/no-rerandd' sh '%s/debian/hooks/kernel-hook' add 6.1-hook "
		 "'%s' 2>/dev/null", c.state_dir, T_TOP, dir, T_TOP, kernel);
	rc = system(cmd);
	snprintf(cmd, sizeof(cmd), "%s/images", c.state_dir);
	if ((d = opendir(cmd))) {
		while ((de = readdir(d)))
			n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
		closedir(d);
	}
	T_OK(rc == 0 && n == 0, "no rerandd: the kernel hook exits 0 and caches nothing (exit %d, "
	     "%u files)", rc, n);
	r = stage_plan(&c, NULL, &p, &e);
	T_OK(r == 0 && kernels_indexed(&c, p.sha), "the hook's index names the kernel rerandd "
	     "plans: %s", r == 0 ? p.sha : e.msg);
	snprintf(cmd, sizeof(cmd), "'%s/build/rerand' cache-key '%s'", T_TOP, kernel);
	f = popen(cmd, "r");
	if (f && getline(&line, &cap, f) > 0)
		line[strcspn(line, "\n")] = 0;
	if (f)
		pclose(f);
	snprintf(cmd, sizeof(cmd), "%s.%s", p.sha, p.stage_sha);
	T_OK(line && !strcmp(line, cmd), "rerand cache-key prints rerandd's key: %s", line ? line : "");
	free(line);
}

int main(void)
{
	const char *kdir = t_kernels_dir();
	char dir[] = "/tmp/rerand-test-cache-XXXXXX", kernel[600], hex[65], ksha[65];
	char old_key[RR_PATH + 100], other_stage[RR_PATH + 200], cmd[700];
	size_t blen = (size_t)(rr_stage_blob_end - rr_stage_blob);
	struct rr_stage_plan p;
	struct rr_config c;
	struct rr_kernel k;
	struct rr_err e = { "" };
	struct stat st1, st2;
	uint8_t *other;

	T_OK(sha256sum("build/stage.bin", hex) == 0 && !strcmp(stage_blob_sha(), hex),
	     "stage_blob_sha() is sha256sum of build/stage.bin: %.16s", stage_blob_sha());
	if (!kdir) {
		printf("ok %d # SKIP RERAND_KERNELS not set: the cache tests need a kernel\n", ++t_run);
		return t_done();
	}
	snprintf(kernel, sizeof(kernel), "%s/vmlinuz-6.1.0-57-cloud-amd64", kdir);
	if (!mkdtemp(dir) || sha256sum(kernel, ksha) < 0 || rr_kernel_load(kernel, NULL, &k, &e) < 0) {
		T_OK(0, "setup: %s %s", kernel, e.msg);
		return t_done();
	}
	config_defaults(&c);
	snprintf(c.state_dir, sizeof(c.state_dir), "%s", dir);
	/* images are built by `rerand image` in a child, as rerandd does */
	snprintf(c.rerand_bin, sizeof(c.rerand_bin), "%s/build/rerand", T_TOP);
	snprintf(c.kernel, sizeof(c.kernel), "%.480s", kernel);
	snprintf(c.initrd, sizeof(c.initrd), "none");
	c.cmdline_set = true;
	snprintf(c.cmdline, sizeof(c.cmdline), "root=/dev/vda1");
	/* The builder is this tree's rerand; as root it runs as nobody (no
	 * "rerand" user on a build host). */
	snprintf(c.rerand_bin, sizeof(c.rerand_bin), "%s/build/rerand", T_TOP);
	snprintf(c.image_user, sizeof(c.image_user), "nobody");
	T_OK(stage_plan(&c, NULL, &p, &e) == 0 && !strcmp(p.sha, ksha) &&
	     !strcmp(p.stage_sha, stage_blob_sha()), "the plan carries both hashes %s", e.msg);
	snprintf(cmd, sizeof(cmd), "%s/images/%s.%s.img", dir, ksha, stage_blob_sha());
	T_OK(!strcmp(p.image, cmd), "the cache key is <kernel sha256>.<stage sha256>: %s",
	     strrchr(p.image, '/') + 1);

	/* What an older rerandd left: an image of this kernel with another stage,
	 * under the old key (kernel hash alone) and under its own stage's key. */
	other = malloc(blen);
	memcpy(other, rr_stage_blob, blen);
	other[blen - 1] ^= 0x5a;                  /* "the previous release's stage" */
	snprintf(cmd, sizeof(cmd), "%s/images", dir);
	mkdir(cmd, 0700);
	snprintf(old_key, sizeof(old_key), "%s/images/%s.img", dir, ksha);
	char osha[65];
	rr_sha256_hex(other, blen, osha);
	snprintf(other_stage, sizeof(other_stage), "%s/images/%s.%s.img", dir, ksha, osha);
	T_OK(write_image(&k, other, blen, old_key) == 0 && write_image(&k, other, blen, other_stage) == 0 &&
	     !has_our_stage(old_key), "images of the old stage in the cache");
	T_OK(strcmp(osha, stage_blob_sha()) && strcmp(other_stage, p.image),
	     "another stage, another key");

	T_OK(stage_build(&c, &p, &e) == 0 && has_our_stage(p.image),
	     "stage_build builds an image with this rerandd's stage, not the cached old one %s", e.msg);
	stat(p.image, &st1);
	T_OK(stage_build(&c, &p, &e) == 0 && stat(p.image, &st2) == 0 && st1.st_ino == st2.st_ino &&
	     st1.st_mtime == st2.st_mtime, "the next stage_build uses the cached image (same file)");
	stage_prune(&c, p.sha, NULL);
	T_OK(access(p.image, F_OK) == 0 && access(old_key, F_OK) < 0 && access(other_stage, F_OK) < 0,
	     "stage_prune keeps this stage's image and removes the old stage's");

	/* The kernel hook's images (debian/hooks/kernel-hook): of a kernel its
	 * index names, with this stage, kept; of an unindexed kernel or an older
	 * stage, removed; a half-written index entry (.tmp) names nothing. */
	{
		static const char *hooked = "1111111111111111111111111111111111111111111111111111111111111111";
		static const char *loose = "2222222222222222222222222222222222222222222222222222222222222222";
		static const char *pending = "3333333333333333333333333333333333333333333333333333333333333333";
		char kept[RR_PATH + 200], gone[RR_PATH + 200], gone_old[RR_PATH + 200], tmp[RR_PATH + 200];
		char idx[RR_PATH + 100];
		FILE *f;
		bool made = true;

		snprintf(idx, sizeof(idx), "%s/kernels", dir);
		mkdir(idx, 0700);
		snprintf(kept, sizeof(kept), "%s/images/%s.%s.img", dir, hooked, stage_blob_sha());
		snprintf(gone, sizeof(gone), "%s/images/%s.%s.img", dir, loose, stage_blob_sha());
		snprintf(gone_old, sizeof(gone_old), "%s/images/%s.%s.img", dir, hooked, osha);
		snprintf(tmp, sizeof(tmp), "%s/images/%s.%s.img", dir, pending, stage_blob_sha());
		const char *files[] = { kept, gone, gone_old, tmp };
		for (unsigned i = 0; i < 4; i++)
			if (!(f = fopen(files[i], "w")) || fclose(f))
				made = false;
		snprintf(idx, sizeof(idx), "%s/kernels/6.12.118+deb12-cloud-amd64", dir);
		if (!(f = fopen(idx, "w")) || fprintf(f, "%s\n", hooked) < 0 || fclose(f))
			made = false;
		snprintf(idx, sizeof(idx), "%s/kernels/.6.13.0-1-amd64.tmp", dir);
		if (!(f = fopen(idx, "w")) || fprintf(f, "%s\n", pending) < 0 || fclose(f))
			made = false;
		T_OK(made, "the hook's index and images in %s", dir);
		T_OK(kernels_indexed(&c, hooked) && !kernels_indexed(&c, loose) &&
		     !kernels_indexed(&c, pending) && !kernels_indexed(&c, "11"),
		     "kernels_indexed: the index names exactly the hooked kernel");
		T_OK(!kernels_hook_busy(&c), "no hook at work: not busy");
		snprintf(idx, sizeof(idx), "%s/images/.hook-6.12.118+deb12-cloud-amd64.tmp", dir);
		T_OK((f = fopen(idx, "w")) && !fclose(f) && kernels_hook_busy(&c),
		     "the hook's .hook-VERSION.tmp in the cache: busy");
		struct timespec old[2] = { { time(NULL) - 700, 0 }, { time(NULL) - 700, 0 } };
		T_OK(utimensat(AT_FDCWD, idx, old, 0) == 0 && !kernels_hook_busy(&c),
		     "one 700 s old is a dead hook's: not busy");
		stage_prune(&c, p.sha, NULL);
		T_OK(access(kept, F_OK) == 0 && access(p.image, F_OK) == 0,
		     "stage_prune keeps the image the hook built for an installed kernel");
		T_OK(access(gone, F_OK) < 0 && access(gone_old, F_OK) < 0 && access(tmp, F_OK) < 0,
		     "stage_prune removes an unindexed kernel's image and the hooked kernel's old-stage one");
	}

	replaced_kernel(c, kdir, dir, kernel);
	hook_key(c, kernel, dir);

	free(other);
	rr_kernel_free(&k);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
	return t_done();
}
