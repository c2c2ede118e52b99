/* SPDX-License-Identifier: GPL-2.0-only */
/* What rerandd stages: the kernel, its initrd and command line, the image
 * cache key, and under lockdown where a signed image comes from (pre-signed
 * or signed here).  The plan is made in a helper (stage_job.c). */
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

#include "cachekey.h"
#include "cleanup.h"
#include "image.h"
#include "lockdown.h"
#include "pesig.h"
#include "rerandd.h"
#include "sign.h"

#include "stage_int.h"

#define CMDLINE_MAX 4096

int stage_clean_cmdline(const char *in, char *out, size_t len, struct rr_err *e)
{
	size_t used = 0;
	bool after_dashes = false;

	if (!len)
		return rr_errf(e, ENOBUFS, "command line buffer too small");
	out[0] = 0;
	while (*in) {
		const char *w;
		bool quoted = false;
		size_t n;

		while (*in == ' ' || *in == '\t' || *in == '\n')
			in++;
		if (!*in)
			break;
		w = in;
		/* A word ends at a blank outside double quotes, as the kernel splits. */
		while (*in && (quoted || (*in != ' ' && *in != '\t' && *in != '\n'))) {
			if (*in == '"')
				quoted = !quoted;
			in++;
		}
		n = (size_t)(in - w);
		if (!after_dashes && n == 2 && !memcmp(w, "--", 2))
			after_dashes = true;   /* the rest belongs to init */
		if (!after_dashes) {
			if ((n >= 11 && !memcmp(w, "BOOT_IMAGE=", 11)) || (n >= 7 && !memcmp(w, "initrd=", 7)))
				continue;
			if (n == 7 && !memcmp(w, "nokaslr", 7))
				return rr_errf(e, EINVAL, "the command line has nokaslr: a kernel booted "
					       "with it is never randomized; remove it or set CommandLine=");
		}
		if (used + (used ? 1 : 0) + n + 1 > len)
			return rr_errf(e, E2BIG, "the command line is longer than %zu bytes", len - 1);
		if (used)
			out[used++] = ' ';
		memcpy(out + used, w, n);
		used += n;
		out[used] = 0;
	}
	return 0;
}

static int vercmp_entries(const struct dirent **a, const struct dirent **b)
{
	return strverscmp((*a)->d_name, (*b)->d_name);
}

static int is_vmlinuz(const struct dirent *de)
{
	size_t n = strlen(de->d_name);
	/* skip package-manager leftovers like vmlinuz-6.1.0.dpkg-tmp */
	return !strncmp(de->d_name, "vmlinuz-", 8) && n > 8 && !strstr(de->d_name, ".dpkg-") &&
	       strcmp(de->d_name + n - 4, ".old") && strcmp(de->d_name + n - 4, ".bak");
}

int stage_newest_kernel(const char *boot_dir, char *out, size_t len)
{
	struct dirent **list;
	int n = scandir(boot_dir, &list, is_vmlinuz, vercmp_entries);
	int r = -ENOENT;

	if (n < 0)
		return -errno;
	if (n > 0)
		r = rr_path_join(out, len, boot_dir, list[n - 1]->d_name);
	for (int i = 0; i < n; i++)
		free(list[i]);
	free(list);
	return r;
}

static bool readable(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

const char *stage_source_name(enum rr_image_source s)
{
	switch (s) {
	case RR_IMG_BUILT: return "built";
	case RR_IMG_PRESIGNED: return "pre-signed";
	case RR_IMG_SIGNED_HERE: return "signed-here";
	}
	return "unknown";
}

/* The release from an open kernel file (fd: kept open, read from offset 0). */
static int kernel_release_fd(int fd, const char *kernel, char *ret, size_t len, struct rr_err *e)
{
	_cleanup_free_ uint8_t *buf = NULL;
	struct rr_bzimage bz;
	size_t n, w = 0;
	int dup, r;

	/* rr_read_fd reads from the offset and closes what it is given */
	if (lseek(fd, 0, SEEK_SET) < 0 || (dup = fcntl(fd, F_DUPFD_CLOEXEC, 3)) < 0)
		return rr_errf(e, errno, "%s: %s", kernel, strerror(errno));
	r = rr_read_fd(dup, kernel, 512u << 20, &buf, &n, e);
	if (r < 0)
		return r;
	r = rr_bzimage_parse(buf, n, kernel, &bz, e);
	if (r < 0)
		return r;
	while (bz.kernel_version[w] && bz.kernel_version[w] != ' ')
		w++;
	if (!w)
		return rr_errf(e, ENODATA, "%s: no version string: cannot tell its release", kernel);
	if (w >= len)
		return rr_errf(e, ENAMETOOLONG, "%s: release longer than %zu bytes", kernel, len - 1);
	memcpy(ret, bz.kernel_version, w);
	ret[w] = 0;
	if (strchr(ret, '/') || ret[0] == '.')
		return rr_errf(e, EINVAL, "%s: release \"%s\" cannot name a file", kernel, ret);
	return 0;
}

int stage_kernel_release(const char *kernel, char *ret, size_t len, struct rr_err *e)
{
	struct rr_kernel_id id;
	_cleanup_close_ int fd = digest_kernel_open(kernel, &id, e);

	if (fd < 0)
		return fd;
	return kernel_release_fd(fd, kernel, ret, len, e);
}

/* Lockdown and Secure Boot as [Paths] says; Secure Boot from boot_params
 * where the efivarfs variable cannot say (no efivarfs in a container or an
 * initramfs; a BIOS boot says absent either way). */
static int secure_probe(const struct rr_config *c, struct rr_lockdown_state *ld, bool *from_bp,
			struct rr_err *e)
{
	bool bp;

	return rr_lockdown_probe_bp(c->lockdown_file, c->secureboot_file,
				    *c->boot_params_file ? c->boot_params_file : NULL, ld,
				    from_bp ? from_bp : &bp, e);
}

/* <state>/images/ and the key's image name (src/cachekey.h) */
static int plan_image(const struct rr_config *c, struct rr_stage_plan *p,
		      const struct rr_cache_key *key, bool signed_here, struct rr_err *e)
{
	char name[RR_CACHE_KEY_LEN + 16];

	if (rr_cache_image_name(key, signed_here, name, sizeof(name)) < 0 ||
	    rr_pathf(p->image, sizeof(p->image), "%s/images/%s", c->state_dir, name) < 0)
		return rr_errf(e, ENAMETOOLONG, "%s/images: path too long for an image", c->state_dir);
	return 0;
}

/* Under lockdown kexec_file_load takes signed images only: where this
 * plan's comes from.  Nothing unsigned is ever tried. */
static int plan_signed(const struct rr_config *c, struct rr_stage_plan *p, int kfd,
		       const struct rr_cache_key *key, struct rr_err *e)
{
	struct rr_lockdown_state ld;
	char presigned[RR_PATH + 160];
	int r;

	r = secure_probe(c, &ld, NULL, e);
	if (r < 0)
		return r;
	p->locked = ld.locked;
	p->source = RR_IMG_BUILT;
	if (!ld.locked)
		return 0;
	r = kernel_release_fd(kfd, p->kernel, p->release, sizeof(p->release), e);
	if (r < 0)
		return r;
	if (rr_pathf(presigned, sizeof(presigned), "%s/%s.img", c->signed_dir, p->release) < 0)
		return rr_errf(e, ENAMETOOLONG, "%s: the pre-signed image of release %s would be a "
			       "path too long", c->signed_dir, p->release);
	if (*c->signed_dir && readable(presigned)) {
		snprintf(p->image, sizeof(p->image), "%s", presigned);
		p->source = RR_IMG_PRESIGNED;
		return 0;
	}
	if (*c->sign_key && *c->sign_cert) {
		/* before anything is built: a key others can read is not used */
		r = rr_sign_key_check(c->sign_key, e);
		if (r < 0)
			return r;
		r = plan_image(c, p, key, true, e);
		if (r < 0)
			return r;
		p->source = RR_IMG_SIGNED_HERE;
		return 0;
	}
	return rr_errf(e, ENOKEY, "the kernel is locked down (lockdown: %s, Secure Boot: %s) and there "
		       "is no signed image of %s for release %s: put one at %s (made with 'rerand image "
		       "--sign-key KEY --sign-cert CERT' on a build host), or set SignKey= and SignCert= "
		       "in [Stage] (signing on this machine weakens lockdown); see docs/secure-boot.md",
		       rr_lockdown_name(ld.lockdown), rr_secureboot_name(ld.secureboot), p->kernel,
		       p->release, presigned);
}

/* The cache key, from one open file: the SHA-256 of the kernel, the
 * identity of the file that was hashed (the builder gets that file or
 * none), the release (under lockdown) from the same file. */
static int plan_key(const struct rr_config *c, struct rr_stage_plan *p, struct rr_err *e)
{
	_cleanup_close_ int kfd = digest_kernel_open(p->kernel, &p->kernel_id, e);
	struct rr_cache_key key;
	int r;

	if (kfd < 0)
		return kfd;
	r = stage_cache_key(kfd, p->kernel, &p->kernel_id, &key, e);
	if (r == 0) {
		snprintf(p->sha, sizeof(p->sha), "%s", key.kernel_sha);
		snprintf(p->stage_sha, sizeof(p->stage_sha), "%s", key.stage_sha);
		p->release[0] = p->signer[0] = p->signature[0] = p->image_sha256[0] = 0;
		r = plan_image(c, p, &key, false, e);
	}
	if (r == 0)
		r = plan_signed(c, p, kfd, &key, e);
	return r;
}

int stage_plan_choose(const struct rr_config *c, const char *kernel_override,
		      struct rr_stage_plan *p, struct rr_err *e)
{
	struct rr_boot_entry be = { 0 };
	const char *base;
	int r, booted = 0;

	memset(p, 0, sizeof(*p));
	snprintf(p->trust_cert, sizeof(p->trust_cert), "%s", c->trust_cert);
	if (kernel_override && *kernel_override)
		snprintf(p->kernel, sizeof(p->kernel), "%s", kernel_override);
	else if (*c->kernel)
		snprintf(p->kernel, sizeof(p->kernel), "%s", c->kernel);
	else if ((booted = c->plan_running ? bootloader_find(c, &be, e) : bootnext_find(c, &be, e)) < 0)
		return booted;
	else if (booted)
		snprintf(p->kernel, sizeof(p->kernel), "%s", be.kernel);
	else {
		struct utsname u;
		uname(&u);
		if (rr_pathf(p->kernel, sizeof(p->kernel), "%s/vmlinuz-%s", c->boot_dir, u.release) < 0)
			return rr_errf(e, ENAMETOOLONG, "%s/vmlinuz-%s: path too long (set Kernel= "
				       "in [Stage])", c->boot_dir, u.release);
	}
	if (!readable(p->kernel))
		return rr_errf(e, ENOENT, "%s: no such kernel (set Kernel= in [Stage])", p->kernel);
	p->uki = bootloader_is_uki(p->kernel);

	base = strrchr(p->kernel, '/');
	base = base ? base + 1 : p->kernel;
	if (!strcmp(c->initrd, "none")) {
		p->initrd[0] = 0;
	} else if (*c->initrd && !kernel_override) {
		if (!readable(c->initrd))
			return rr_errf(e, ENOENT, "%s: no such initrd (Initrd= in [Stage])", c->initrd);
		snprintf(p->initrd, sizeof(p->initrd), "%s", c->initrd);
	} else if (!strncmp(base, "vmlinuz-", 8)) {
		/* Debian's name first, then Fedora's. */
		const int dl = (int)(base - p->kernel);
		if (rr_pathf(p->initrd, sizeof(p->initrd), "%.*sinitrd.img-%s", dl, p->kernel,
			     base + 8) < 0 ||
		    (!readable(p->initrd) &&
		     rr_pathf(p->initrd, sizeof(p->initrd), "%.*sinitramfs-%s.img", dl, p->kernel,
			      base + 8) < 0))
			return rr_errf(e, ENAMETOOLONG, "%s: the initrd beside it would be a path too "
				       "long (set Initrd= in [Stage])", p->kernel);
		if (!readable(p->initrd))
			p->initrd[0] = 0;
	}
	/* Unless Initrd= says: a UKI carries its own (`rerand load --uki`), a
	 * type #1 entry names its own. */
	if (!*c->initrd && (booted || p->uki))
		snprintf(p->initrd, sizeof(p->initrd), "%s", p->uki ? "" : be.initrd);

	char clean[RR_CMD];
	if (c->cmdline_set) {
		r = stage_clean_cmdline(c->cmdline, clean, sizeof(clean), e);
	} else {
		_cleanup_free_ char *text = NULL;
		r = rr_read_text(c->proc_cmdline, CMDLINE_MAX, &text, e);
		if (r < 0)
			return r;
		r = stage_clean_cmdline(text, clean, sizeof(clean), e);
	}
	/* the watchdog keeps counting across the next kexec too */
	char wd[RR_CMD];
	if (r == 0)
		r = wdog_cmdline(c, clean, wd, sizeof(wd), e);
	/* a panic after the kexec reboots, rather than hanging for good */
	if (r == 0)
		r = panic_cmdline(wd, c->panic_reboot, p->cmdline, sizeof(p->cmdline), e);
	return r;
}

int stage_plan(const struct rr_config *c, const char *kernel_override, struct rr_stage_plan *p,
	       struct rr_err *e)
{
	int r = stage_plan_choose(c, kernel_override, p, e);

	return r < 0 ? r : plan_key(c, p, e);
}

int stage_rekey(const struct rr_config *c, struct rr_stage_plan *p, char *note, size_t notelen,
		struct rr_err *e)
{
	char was[65];
	int r;

	snprintf(was, sizeof(was), "%s", p->sha);
	r = plan_key(c, p, e);
	if (r == 0 && strcmp(was, p->sha)) {
		if (note)
			snprintf(note, notelen, "%s changed since it was staged (sha256 %.16s... now "
				 "%.16s...; a package upgrade?): staging the file there now",
				 p->kernel, was, p->sha);
		return 1;
	}
	return r;
}

void stage_view_secure(const struct rr_config *c, const struct rr_stage_plan *staged,
		       struct rr_view *v)
{
	struct rr_lockdown_state ld;
	bool bp = false;

	/* unreadable: shown as unknown, staging says why */
	if (secure_probe(c, &ld, &bp, NULL) < 0)
		ld = (struct rr_lockdown_state){ RR_LD_ABSENT, RR_SB_ABSENT, false };
	v->secure_boot = rr_secureboot_name(ld.secureboot);
	v->secure_boot_from_bp = bp;
	v->lockdown = rr_lockdown_name(ld.lockdown);
	v->locked = ld.locked;
	v->image_source = staged ? stage_source_name(staged->source) : "";
	snprintf(v->signer, sizeof(v->signer), "%s", staged ? staged->signer : "");
	snprintf(v->signature, sizeof(v->signature), "%s", staged ? staged->signature : "");
	snprintf(v->anchor, sizeof(v->anchor), "%s", staged ? staged->anchor : "");
}
