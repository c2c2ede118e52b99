/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd's check of a staging helper's plan (daemon/stage_guard.c, issue
 * 39 point 2): the plan a real stage_plan makes passes; a plan whose image
 * is outside rerandd's cache (another directory, a symlinked cache
 * directory, a symlink for the image, another name), whose command line,
 * kernel or initrd is not the one rerandd chose itself, whose cache key
 * names another stage, whose image SHA-256 is not the recorded one, or
 * which claims a signing source the configuration does not have, is
 * refused with a message naming what differs.  Real files in a temporary
 * directory; the helper that would return the bad plan is stood in for by
 * editing the plan a real stage_plan made. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rerandd.h"
#include "test.h"

static char dir[] = "/tmp/rerand-test-planguard-XXXXXX";
static struct rr_config c;
static struct rr_stage_plan want, good;

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* verify got (need_build as given): r, and the message in e */
static int v(const struct rr_stage_plan *got, bool need_build, struct rr_err *e)
{
	e->msg[0] = 0;
	return stage_plan_verify(&c, &want, got, need_build, e);
}

static void refused(const struct rr_stage_plan *got, bool need_build, const char *word,
		    const char *what)
{
	struct rr_err e;
	int r = v(got, need_build, &e);

	T_OK(r == -EPERM && strstr(e.msg, word) && strstr(e.msg, "refused, nothing staged"),
	     "%s: refused (%d): %s", what, r, e.msg);
}

int main(void)
{
	char kernel[300], cmdline[300], images[300], other[300], path[700], rec[800];
	struct rr_stage_plan p;
	struct rr_err e = { "" };

	if (!mkdtemp(dir)) {
		T_OK(0, "mkdtemp");
		return t_done();
	}
	snprintf(kernel, sizeof(kernel), "%s/vmlinuz-test", dir);
	snprintf(cmdline, sizeof(cmdline), "%s/cmdline", dir);
	snprintf(images, sizeof(images), "%s/images", dir);
	snprintf(other, sizeof(other), "%s/elsewhere", dir);
	mkdir(images, 0700);
	mkdir(other, 0700);
	put(kernel, "not a kernel, hashed only\n");
	put(cmdline, "BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro\n");
	config_defaults(&c);
	snprintf(c.state_dir, sizeof(c.state_dir), "%s", dir);
	snprintf(c.kernel, sizeof(c.kernel), "%s", kernel);
	snprintf(c.initrd, sizeof(c.initrd), "none");
	snprintf(c.proc_cmdline, sizeof(c.proc_cmdline), "%s", cmdline);
	snprintf(c.lockdown_file, sizeof(c.lockdown_file), "%s/no-lockdown", dir);
	snprintf(c.secureboot_file, sizeof(c.secureboot_file), "%s/no-secureboot", dir);
	snprintf(c.loader_entry_selected, sizeof(c.loader_entry_selected), "%s/no-entry", dir);

	/* rerandd's own choice, and the helper's honest plan */
	T_OK(stage_plan_choose(&c, NULL, &want, &e) == 0 && strstr(want.cmdline, "root=/dev/vda1") &&
	     !*want.image, "stage_plan_choose: the command line, no image named: '%s' %s",
	     want.cmdline, e.msg);
	T_OK(stage_plan(&c, NULL, &good, &e) == 0, "stage_plan: %s %s", good.image, e.msg);
	T_OK(v(&good, true, &e) == 0, "the helper's honest plan (to build) passes: %s", e.msg);

	/* ---- the image outside the cache ---- */
	p = good;
	snprintf(p.image, sizeof(p.image), "%s/%s", other, strrchr(good.image, '/') + 1);
	refused(&p, true, "the image", "the image in another directory, under the key's name");
	p = good;
	snprintf(p.image, sizeof(p.image), "%s/../elsewhere/%s", images, strrchr(good.image, '/') + 1);
	refused(&p, true, "the image", "the image through images/../elsewhere");
	p = good;
	snprintf(p.image, sizeof(p.image), "/boot/vmlinuz");
	refused(&p, true, "the image", "the image /boot/vmlinuz");
	p = good;
	snprintf(p.image, sizeof(p.image), "%s/x.img", images);
	refused(&p, true, "the image", "another name in the cache");
	/* the image a symlink out of the cache */
	snprintf(path, sizeof(path), "%s/target.img", other);
	put(path, "an image elsewhere\n");
	T_OK(symlink(path, good.image) == 0, "symlink %s -> %s", good.image, path);
	refused(&good, true, "a symlink", "the image a symlink to a file outside the cache");
	unlink(good.image);
	/* the cache directory itself a symlink out of the state directory */
	rename(images, path);                      /* images -> elsewhere/target.img, a dir now */
	unlink(path);
	rmdir(images);
	T_OK(symlink(other, images) == 0, "symlink %s -> %s", images, other);
	refused(&good, true, "outside rerandd's image cache", "the cache directory a symlink out of the state directory");
	unlink(images);
	mkdir(images, 0700);
	T_OK(v(&good, true, &e) == 0, "a real cache directory again: passes (%s)", e.msg);

	/* ---- the command line, kernel, initrd ---- */
	p = good;
	snprintf(p.cmdline, sizeof(p.cmdline), "%.900s init=/bin/sh", good.cmdline);
	refused(&p, true, "the command line", "a command line with init=/bin/sh added");
	p = good;
	snprintf(p.cmdline, sizeof(p.cmdline), "root=/dev/vda1 ro nokaslr");
	refused(&p, true, "the command line", "a command line with nokaslr");
	p = good;
	snprintf(p.kernel, sizeof(p.kernel), "%s/cmdline", dir);
	refused(&p, true, "the kernel", "another kernel file");
	p = good;
	snprintf(p.initrd, sizeof(p.initrd), "%.400s", path);
	refused(&p, true, "the initrd", "an initrd where rerandd stages none");
	p = good;
	p.uki = true;
	refused(&p, true, "the kernel's kind", "a bzImage called a UKI");
	p = good;
	snprintf(p.trust_cert, sizeof(p.trust_cert), "%.400s", path);
	refused(&p, true, "TrustCert=", "another TrustCert=");

	/* ---- the key, the source, the recorded hash ---- */
	p = good;
	memset(p.stage_sha, 'a', 64);
	refused(&p, true, "rerandd's stage", "a cache key naming another stage");
	p = good;
	p.source = RR_IMG_SIGNED_HERE;
	snprintf(p.image, sizeof(p.image), "%s/%s.%s.signed.img", images, good.sha, good.stage_sha);
	refused(&p, true, "SignKey=", "signed here without SignKey=");
	p = good;
	p.source = RR_IMG_PRESIGNED;
	snprintf(p.release, sizeof(p.release), "6.1.0-test");
	c.signed_dir[0] = 0;
	refused(&p, true, "SignedImageDirectory=", "pre-signed without SignedImageDirectory=");
	snprintf(c.signed_dir, sizeof(c.signed_dir), "%s/signed", dir);
	mkdir(c.signed_dir, 0700);
	snprintf(p.image, sizeof(p.image), "%s/6.1.0-test.img", other);
	refused(&p, true, "pre-signed image", "a pre-signed image outside SignedImageDirectory=");
	snprintf(p.image, sizeof(p.image), "%s/6.1.0-test.img", c.signed_dir);
	T_OK(v(&p, true, &e) == 0, "the pre-signed image of the release passes: %s", e.msg);
	c.signed_dir[0] = 0;

	/* cached: the image's SHA-256 is its record's */
	put(good.image, "the cached image\n");
	snprintf(rec, sizeof(rec), "%s.sha256", good.image);
	{
		char line[900];
		snprintf(line, sizeof(line), "%s  %s\n",
			 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			 strrchr(good.image, '/') + 1);
		put(rec, line);
	}
	p = good;
	snprintf(p.image_sha256, sizeof(p.image_sha256), "%s",
		 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
	T_OK(v(&p, false, &e) == 0, "cached, with the recorded SHA-256: passes (%s)", e.msg);
	memset(p.image_sha256, 'f', 64);
	refused(&p, false, "not the one recorded", "cached, a SHA-256 other than the record's");
	unlink(rec);
	snprintf(p.image_sha256, sizeof(p.image_sha256), "%s",
		 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
	refused(&p, false, "not the one recorded", "cached, no record at all");
	unlink(good.image);

	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	(void)!system(path);
	return t_done();
}
