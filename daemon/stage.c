/* SPDX-License-Identifier: GPL-2.0-only */
/* What rerandd stages: the kernel, its initrd and command line; the image
 * cache under the state dir keyed by the SHA-256 of the kernel and of the
 * stage; under lockdown a signed image (pre-signed, or signed here);
 * `rerand load`. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "image.h"
#include "lockdown.h"
#include "pesig.h"
#include "rerandd.h"

#ifndef __clang__
#pragma GCC diagnostic ignored "-Wformat-truncation"  /* paths are checked by stat() */
#endif

#define CMDLINE_MAX 4096
#define LOAD_OUT_MAX 4096          /* captured stderr of `rerand load` */

/* The stage, linked in (kexec/stage_blob.S): rerandd builds images itself. */
extern const uint8_t rr_stage_blob[];
extern const uint8_t rr_stage_blob_end[];

const char *stage_blob_sha(void)
{
	static char hex[65];

	if (!*hex && digest_hex(rr_stage_blob, (size_t)(rr_stage_blob_end - rr_stage_blob), hex) < 0)
		hex[0] = 0;
	return hex;
}

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
	if (n > 0 && snprintf(out, len, "%s/%s", boot_dir, list[n - 1]->d_name) < (int)len)
		r = 0;
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

int stage_kernel_release(const char *kernel, char *ret, size_t len, struct rr_err *e)
{
	struct rr_bzimage bz;
	uint8_t *buf;
	size_t n, w = 0;
	int r = rr_read_file(kernel, 512u << 20, &buf, &n, e);

	if (r < 0)
		return r;
	r = rr_bzimage_parse(buf, n, kernel, &bz, e);
	free(buf);
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

/* Under lockdown kexec_file_load takes signed images only: where this
 * plan's comes from.  Nothing unsigned is ever tried. */
static int plan_signed(const struct rr_config *c, struct rr_stage_plan *p, struct rr_err *e)
{
	struct rr_lockdown_state ld;
	char presigned[RR_PATH + 160];
	int r;

	r = rr_lockdown_probe(c->lockdown_file, c->secureboot_file, &ld, e);
	if (r < 0)
		return r;
	p->locked = ld.locked;
	p->source = RR_IMG_BUILT;
	if (!ld.locked)
		return 0;
	r = stage_kernel_release(p->kernel, p->release, sizeof(p->release), e);
	if (r < 0)
		return r;
	snprintf(presigned, sizeof(presigned), "%s/%s.img", c->signed_dir, p->release);
	if (*c->signed_dir && readable(presigned)) {
		snprintf(p->image, sizeof(p->image), "%s", presigned);
		p->source = RR_IMG_PRESIGNED;
		return 0;
	}
	if (*c->sign_key && *c->sign_cert) {
		snprintf(p->image, sizeof(p->image), "%s/images/%s.%s.signed.img", c->state_dir, p->sha,
			 p->stage_sha);
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

int stage_plan(const struct rr_config *c, const char *kernel_override, struct rr_stage_plan *p,
	       struct rr_err *e)
{
	struct rr_boot_entry be = { 0 };
	const char *base;
	int r, booted = 0;

	memset(p, 0, sizeof(*p));
	if (kernel_override && *kernel_override)
		snprintf(p->kernel, sizeof(p->kernel), "%s", kernel_override);
	else if (*c->kernel)
		snprintf(p->kernel, sizeof(p->kernel), "%s", c->kernel);
	else if ((booted = bootloader_find(c, &be, e)) < 0)
		return booted;
	else if (booted)
		snprintf(p->kernel, sizeof(p->kernel), "%s", be.kernel);
	else {
		struct utsname u;
		uname(&u);
		snprintf(p->kernel, sizeof(p->kernel), "%s/vmlinuz-%s", c->boot_dir, u.release);
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
		char dir[RR_PATH];
		snprintf(dir, sizeof(dir), "%.*s", (int)(base - p->kernel), p->kernel);
		snprintf(p->initrd, sizeof(p->initrd), "%sinitrd.img-%s", dir, base + 8);
		if (!readable(p->initrd)) {
			snprintf(p->initrd, sizeof(p->initrd), "%sinitramfs-%s.img", dir, base + 8);
			if (!readable(p->initrd))
				p->initrd[0] = 0;
		}
	}
	/* Unless Initrd= says: a UKI carries its own (`rerand load --uki`), a
	 * type #1 entry names its own. */
	if (!*c->initrd && (booted || p->uki))
		snprintf(p->initrd, sizeof(p->initrd), "%s", p->uki ? "" : be.initrd);

	if (c->cmdline_set) {
		r = stage_clean_cmdline(c->cmdline, p->cmdline, sizeof(p->cmdline), e);
	} else {
		char *text;
		r = rr_read_text(c->proc_cmdline, CMDLINE_MAX, &text, e);
		if (r < 0)
			return r;
		r = stage_clean_cmdline(text, p->cmdline, sizeof(p->cmdline), e);
		free(text);
	}
	if (r < 0)
		return r;

	r = digest_file_hex(p->kernel, p->sha, e);
	if (r < 0)
		return r;
	if (!*stage_blob_sha())
		return rr_errf(e, EIO, "cannot hash the built-in stage (libcrypto)");
	snprintf(p->stage_sha, sizeof(p->stage_sha), "%s", stage_blob_sha());
	snprintf(p->image, sizeof(p->image), "%s/images/%s.%s.img", c->state_dir, p->sha,
		 p->stage_sha);
	return plan_signed(c, p, e);
}

/* The image builder's identity: ImageUser= when rerandd is root; else
 * (tests, a user's own instance) rerandd's own uid, without capabilities. */
static int builder_identity(const struct rr_config *c, struct rr_builder *b, struct rr_err *e)
{
	struct passwd *pw;

	b->switch_user = geteuid() == 0;
	if (!b->switch_user)
		return 0;
	errno = 0;
	pw = getpwnam(c->image_user);
	if (!pw)
		return rr_errf(e, errno ? errno : ENOENT, "ImageUser=%s: %s (the package creates the "
			       "\"rerand\" user from sysusers.d/rerand.conf; run systemd-sysusers)",
			       c->image_user, errno ? strerror(errno) : "no such user");
	if (pw->pw_uid == 0 || pw->pw_gid == 0)
		return rr_errf(e, EPERM, "ImageUser=%s: uid %u gid %u is root: the image builder "
			       "parses kernel files and must not run as root", c->image_user,
			       (unsigned)pw->pw_uid, (unsigned)pw->pw_gid);
	b->uid = pw->pw_uid;
	b->gid = pw->pw_gid;
	return 0;
}

/* Who built the image, for the log. */
static const char *b_user_log(const struct rr_config *c)
{
	return geteuid() == 0 ? c->image_user : "rerandd's own uid";
}

/* A temporary file beside p->image, for a child to write and rerandd to
 * rename: nothing half-written is ever at p->image. */
static int make_tmp(const struct rr_stage_plan *p, const char *tag, char *tmp, size_t len,
		    struct rr_err *e)
{
	int fd;

	if (snprintf(tmp, len, "%s.%sXXXXXX", p->image, tag) >= (int)len)
		return rr_errf(e, ENAMETOOLONG, "%s: path too long", p->image);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return rr_errf(e, errno, "%s: cannot create a temporary file: %s", tmp, strerror(errno));
	return fd;
}

/*
 * `rerand image` as the unprivileged builder: the decompressors and libelf
 * run as ImageUser= with no capabilities, on the kernel and an output file
 * rerandd opened (fds 3 and 4).  The unsigned image is left at tmp.
 */
static int build_unsigned(const struct rr_config *c, const struct rr_stage_plan *p, char *tmp,
			  size_t tmp_len, struct rr_err *e)
{
	struct rr_builder b = { .kernel_fd = -1, .out_fd = -1 };
	char kfd[8], ofd[8];
	char *argv[] = { (char *)c->rerand_bin, "image", (char *)p->kernel, "--kernel-fd", kfd,
			 "-o", (char *)p->image, "--output-fd", ofd, NULL };
	int r;

	r = builder_identity(c, &b, e);
	if (r < 0)
		return r;
	b.kernel_fd = open(p->kernel, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (b.kernel_fd < 0)
		return rr_errf(e, errno, "%s: cannot open: %s", p->kernel, strerror(errno));
	b.out_fd = make_tmp(p, "tmp", tmp, tmp_len, e);
	if (b.out_fd < 0) {
		close(b.kernel_fd);
		return b.out_fd;
	}
	snprintf(kfd, sizeof(kfd), "%d", RR_BUILDER_KERNEL_FD);
	snprintf(ofd, sizeof(ofd), "%d", RR_BUILDER_OUT_FD);
	r = run_builder(argv, 600, &b);
	close(b.kernel_fd);
	if (r == 0 && fchmod(b.out_fd, 0644) < 0)
		r = -errno;
	close(b.out_fd);
	if (r != 0) {
		unlink(tmp);
		return rr_errf(e, r < 0 ? -r : EIO, "%s image %s (as %s, no capabilities) failed (%s %d)",
			       c->rerand_bin, p->kernel, b.switch_user ? c->image_user : "rerandd's uid",
			       r < 0 ? "error" : "status", r < 0 ? -r : r);
	}
	return 0;
}

/*
 * sbsign on the builder's output, as a separate child: root (it reads the
 * key, which only root can) without capabilities.  The key never enters the
 * process that parses kernel files, so a kernel file that subverted a
 * decompressor still cannot read the key.  A pkcs11: URI is a key on a
 * token, through OpenSSL's pkcs11 engine.
 */
static int sign_image(const struct rr_config *c, const struct rr_stage_plan *p,
		      const char *unsigned_tmp, char *tmp, size_t tmp_len, struct rr_err *e)
{
	const char *sbsign = getenv("RERAND_SBSIGN") ? getenv("RERAND_SBSIGN") : "sbsign";
	char *argv[12];
	int n = 0, fd, r;

	fd = make_tmp(p, "sig", tmp, tmp_len, e);
	if (fd < 0)
		return fd;
	close(fd);
	argv[n++] = (char *)sbsign;
	if (!strncmp(c->sign_key, "pkcs11:", 7)) {
		argv[n++] = "--engine";
		argv[n++] = "pkcs11";
	}
	argv[n++] = "--key";
	argv[n++] = (char *)c->sign_key;
	argv[n++] = "--cert";
	argv[n++] = (char *)c->sign_cert;
	argv[n++] = "--output";
	argv[n++] = tmp;
	argv[n++] = (char *)unsigned_tmp;
	argv[n] = NULL;
	r = run_argv(argv, 600, RR_CHILD_NO_CAPS);
	if (r != 0) {
		unlink(tmp);
		return rr_errf(e, r < 0 ? -r : EIO, "%s --key %s --cert %s for %s failed (%s %d)",
			       sbsign, c->sign_key, c->sign_cert, p->image,
			       r < 0 ? "error" : "status", r < 0 ? -r : r);
	}
	if (chmod(tmp, 0644) < 0) {
		r = rr_errf(e, errno, "%s: chmod: %s", tmp, strerror(errno));
		unlink(tmp);
		return r;
	}
	return 0;
}

/* The image at path parses, is signed when it must be, and (pre-signed)
 * is of the plan's release; p->signer from its signature. */
static int check_image(struct rr_stage_plan *p, const char *path, bool want_signed,
		       struct rr_err *e)
{
	struct rr_image im;
	struct rr_pe_sig sig;
	uint8_t *buf;
	size_t len, w = 0;
	int r;

	r = rr_read_file(path, 512u << 20, &buf, &len, e);
	if (r < 0)
		return r;
	r = rr_image_parse(buf, len, path, &im, e);
	if (r == 0)
		r = rr_pe_sig_read(buf, len, path, &sig, e);
	free(buf);
	if (r < 0)
		return r;
	if (want_signed && !sig.is_signed)
		return rr_errf(e, ENOKEY, "%s: not signed, and the kernel is locked down: it accepts "
			       "only signed images (see docs/secure-boot.md)", path);
	while (im.kernel_version[w] && im.kernel_version[w] != ' ')
		w++;
	if (p->source == RR_IMG_PRESIGNED &&
	    (strlen(p->release) != w || memcmp(im.kernel_version, p->release, w)))
		return rr_errf(e, EINVAL, "%s: an image of release \"%.*s\", not of %s's %s", path,
			       (int)w, im.kernel_version, p->kernel, p->release);
	if (p->source != RR_IMG_PRESIGNED) {
		/* Built by RerandBinary=, a separate program: it must carry the
		 * stage the cache key names, or an upgrade of one and not the
		 * other would keep booting an old stage. */
		char hex[65];
		for (int i = 0; i < 32; i++)
			snprintf(hex + 2 * i, 3, "%02x", im.hdr.stage_sha256[i]);
		if (strcmp(hex, p->stage_sha))
			return rr_errf(e, EINVAL, "%s: carries stage %.16s..., but rerandd's is "
				       "%.16s...: RerandBinary= is from another build", path, hex,
				       p->stage_sha);
	}
	snprintf(p->signer, sizeof(p->signer), "%s", sig.is_signed ? sig.subject : "");
	return 0;
}

int stage_build(const struct rr_config *c, struct rr_stage_plan *p, struct rr_err *e)
{
	char dir[RR_PATH + 16], tmp[RR_PATH + 200], sig[RR_PATH + 200];
	const char *done;
	bool want_signed = p->source != RR_IMG_BUILT;
	int r;

	/* someone else's file: checked, never rebuilt or removed */
	if (p->source == RR_IMG_PRESIGNED)
		return check_image(p, p->image, true, e);
	if (check_image(p, p->image, want_signed, NULL) == 0)
		return 0;                          /* cached */
	unlink(p->image);
	snprintf(dir, sizeof(dir), "%s/images", c->state_dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return rr_errf(e, errno, "%s: cannot create: %s", dir, strerror(errno));
	/* The package guest checks this line: the kernel hook's image is
	 * staged, not rebuilt. */
	rr_log(RR_LOG_INFO, "building %s from %s", p->image, p->kernel);
	r = build_unsigned(c, p, tmp, sizeof(tmp), e);
	if (r < 0)
		return r;
	done = tmp;
	if (p->source == RR_IMG_SIGNED_HERE) {
		r = sign_image(c, p, tmp, sig, sizeof(sig), e);
		unlink(tmp);
		if (r < 0)
			return r;
		done = sig;
	}
	/* The builder ran unprivileged: what it wrote is checked like any
	 * other file before it is named an image. */
	r = check_image(p, done, want_signed, e);
	if (r == 0 && rename(done, p->image) < 0)
		r = rr_errf(e, errno, "%s: cannot rename into place: %s", p->image, strerror(errno));
	if (r < 0) {
		unlink(done);
		return r;
	}
	if (b_user_log(c))
		rr_log(RR_LOG_INFO, "built %s as %s without capabilities%s", p->image,
		       b_user_log(c), p->source == RR_IMG_SIGNED_HERE ? ", signed by sbsign" : "");
	return 0;
}

void stage_load_argv(const struct rr_config *c, const struct rr_stage_plan *p, bool crash,
		     struct rr_load_argv *a)
{
	bool fsys = crash && c->crash_file_syscall_set ? c->crash_file_syscall : c->file_syscall;
	int n = 0;

	a->argv[n++] = (char *)c->rerand_bin;
	a->argv[n++] = "load";
	a->argv[n++] = (char *)p->image;
	if (crash)
		a->argv[n++] = "--crash";
	if (*p->initrd) {
		snprintf(a->initrd, sizeof(a->initrd), "--initrd=%s", p->initrd);
		a->argv[n++] = a->initrd;
	}
	snprintf(a->append, sizeof(a->append), "--append=%s", p->cmdline);
	a->argv[n++] = a->append;
	if (p->uki) {
		/* its .ucode + .initrd, unless --initrd came from Initrd= */
		snprintf(a->uki, sizeof(a->uki), "--uki=%s", p->kernel);
		a->argv[n++] = a->uki;
	}
	snprintf(a->kexec, sizeof(a->kexec), "--kexec=%s", c->kexec_bin);
	a->argv[n++] = a->kexec;
	if (fsys)
		a->argv[n++] = "--file-syscall";
	a->argv[n] = NULL;
	/* `rerand load` must look at the very files rerandd looked at ([Paths]
	 * points them at fixtures in tests); rerandd is single-threaded. */
	setenv("RERAND_KEXEC_CRASH_SIZE_FILE", c->kexec_crash_size, 1);
	setenv("RERAND_LOCKDOWN_FILE", c->lockdown_file, 1);
	setenv("RERAND_SECUREBOOT_FILE", c->secureboot_file, 1);
}

/* rerand's own last message ("rerand: ..."), else the last line. */
static void reason_from(const char *out, int status, bool crash, char *msg, size_t len)
{
	const char *best = NULL, *last = NULL, *p = out;
	const char *what = crash ? "rerand load --crash" : "rerand load";
	size_t best_n = 0, last_n = 0;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		if (n) {
			last = p;
			last_n = n;
			if (n > 8 && !memcmp(p, "rerand: ", 8)) {
				best = p + 8;
				best_n = n - 8;
			}
		}
		p += n + (nl ? 1 : 0);
	}
	if (best)
		snprintf(msg, len, "%.*s", (int)best_n, best);
	else if (last)
		snprintf(msg, len, "%s failed (%s %d): %.*s", what, status < 0 ? "error" : "status",
			 status < 0 ? -status : status, (int)last_n, last);
	else
		snprintf(msg, len, "%s failed (%s %d)", what, status < 0 ? "error" : "status",
			 status < 0 ? -status : status);
}

static void log_lines(int prio, bool crash, const char *out)
{
	const char *p = out;

	while (*p) {
		const char *nl = strchr(p, '\n');
		int n = nl ? (int)(nl - p) : (int)strlen(p);
		if (n)
			rr_log(prio, "rerand load%s: %.*s", crash ? " --crash" : "", n, p);
		p += n + (nl ? 1 : 0);
	}
}

int stage_load_run(const struct rr_config *c, const struct rr_stage_plan *p, bool crash,
		   char *msg, size_t len)
{
	struct rr_load_argv a;
	char *out = malloc(LOAD_OUT_MAX);
	int r;

	if (!out) {
		snprintf(msg, len, "out of memory");
		return -ENOMEM;
	}
	stage_load_argv(c, p, crash, &a);
	r = run_argv_capture(a.argv, 300, RR_CHILD_KEXEC_CAPS, out, LOAD_OUT_MAX);
	log_lines(r == 0 ? RR_LOG_INFO : RR_LOG_NOTICE, crash, out);
	if (r != 0)
		reason_from(out, r, crash, msg, len);
	free(out);
	return r == 0 ? 0 : r < 0 ? r : -EIO;
}

int stage_load(const struct rr_config *c, const struct rr_stage_plan *p, struct rr_err *e)
{
	char msg[RR_ERR_MAX];
	int r = stage_load_run(c, p, false, msg, sizeof(msg));

	return r < 0 ? rr_errf(e, -r, "%s", msg) : 0;
}

void stage_view_secure(const struct rr_config *c, const struct rr_stage_plan *staged,
		       struct rr_view *v)
{
	struct rr_lockdown_state ld;

	/* unreadable: shown as unknown, staging says why */
	if (rr_lockdown_probe(c->lockdown_file, c->secureboot_file, &ld, NULL) < 0)
		ld = (struct rr_lockdown_state){ RR_LD_ABSENT, RR_SB_ABSENT, false };
	v->secure_boot = rr_secureboot_name(ld.secureboot);
	v->lockdown = rr_lockdown_name(ld.lockdown);
	v->locked = ld.locked;
	v->image_source = staged ? stage_source_name(staged->source) : "";
	snprintf(v->signer, sizeof(v->signer), "%s", staged ? staged->signer : "");
}

bool stage_secure_changed(const struct rr_config *a, const struct rr_config *b)
{
	return strcmp(a->signed_dir, b->signed_dir) || strcmp(a->sign_key, b->sign_key) ||
	       strcmp(a->sign_cert, b->sign_cert) || strcmp(a->lockdown_file, b->lockdown_file) ||
	       strcmp(a->secureboot_file, b->secureboot_file);
}

/* <key>.img or <key>.signed.img */
static bool image_of(const char *name, const char *key)
{
	size_t n = strlen(key);

	return *key && !strncmp(name, key, n) &&
	       (!strcmp(name + n, ".img") || !strcmp(name + n, ".signed.img"));
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

void stage_prune(const struct rr_config *c, const char *keep_sha, const char *keep_sha2)
{
	char dir[RR_PATH + 16], keep[160], keep2[160] = "";
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/images", c->state_dir);
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
		    image_of(de->d_name, keep2) || hook_image(c, de->d_name))
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) == 0)
			rr_log(RR_LOG_INFO, "removed cached image %s/%s", dir, de->d_name);
	}
	closedir(d);
}
