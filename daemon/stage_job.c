/* SPDX-License-Identifier: GPL-2.0-only */
/* What rerandd stages: the kernel, its initrd and command line; the image
 * cache under the state dir keyed by the SHA-256 of the kernel and of the
 * stage; under lockdown a signed image (pre-signed, or signed here);
 * `rerand load`. */
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

#ifndef __clang__
#pragma GCC diagnostic ignored "-Wformat-truncation"  /* paths are checked by stat() */
#endif

#define CMDLINE_MAX 4096

/* The stage, linked in: rerandd builds images itself. */
#include "../kexec/stage_blob.h"

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

/* The release from an open kernel file (fd: kept open, read from offset 0). */
static int kernel_release_fd(int fd, const char *kernel, char *ret, size_t len, struct rr_err *e)
{
	struct rr_bzimage bz;
	uint8_t *buf;
	size_t n, w = 0;
	int dup, r;

	/* rr_read_fd reads from the offset and closes what it is given */
	if (lseek(fd, 0, SEEK_SET) < 0 || (dup = fcntl(fd, F_DUPFD_CLOEXEC, 3)) < 0)
		return rr_errf(e, errno, "%s: %s", kernel, strerror(errno));
	r = rr_read_fd(dup, kernel, 512u << 20, &buf, &n, e);
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

int stage_kernel_release(const char *kernel, char *ret, size_t len, struct rr_err *e)
{
	struct rr_kernel_id id;
	int fd = digest_kernel_open(kernel, &id, e), r;

	if (fd < 0)
		return fd;
	r = kernel_release_fd(fd, kernel, ret, len, e);
	close(fd);
	return r;
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

/* Under lockdown kexec_file_load takes signed images only: where this
 * plan's comes from.  Nothing unsigned is ever tried. */
static int plan_signed(const struct rr_config *c, struct rr_stage_plan *p, int kfd,
		       struct rr_err *e)
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
	snprintf(presigned, sizeof(presigned), "%s/%s.img", c->signed_dir, p->release);
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

/* The cache key, from one open file: the SHA-256 of the kernel, the
 * identity of the file that was hashed (the builder gets that file or
 * none), the release (under lockdown) from the same file. */
static int plan_key(const struct rr_config *c, struct rr_stage_plan *p, struct rr_err *e)
{
	int kfd, r;

	kfd = digest_kernel_open(p->kernel, &p->kernel_id, e);
	if (kfd < 0)
		return kfd;
	r = digest_kernel(kfd, p->kernel, &p->kernel_id, p->sha, e);
	if (r == 0 && !*stage_blob_sha())
		r = rr_errf(e, EIO, "cannot hash the built-in stage (libcrypto)");
	if (r == 0) {
		snprintf(p->stage_sha, sizeof(p->stage_sha), "%s", stage_blob_sha());
		snprintf(p->image, sizeof(p->image), "%s/images/%s.%s.img", c->state_dir, p->sha,
			 p->stage_sha);
		p->release[0] = p->signer[0] = p->signature[0] = p->image_sha256[0] = 0;
		r = plan_signed(c, p, kfd, e);
	}
	close(kfd);
	return r;
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

	char clean[RR_CMD];
	if (c->cmdline_set) {
		r = stage_clean_cmdline(c->cmdline, clean, sizeof(clean), e);
	} else {
		char *text;
		r = rr_read_text(c->proc_cmdline, CMDLINE_MAX, &text, e);
		if (r < 0)
			return r;
		r = stage_clean_cmdline(text, clean, sizeof(clean), e);
		free(text);
	}
	/* the watchdog keeps counting across the next kexec too */
	char wd[RR_CMD];
	if (r == 0)
		r = wdog_cmdline(c, clean, wd, sizeof(wd), e);
	/* a panic after the kexec reboots, rather than hanging for good */
	if (r == 0)
		r = panic_cmdline(wd, c->panic_reboot, p->cmdline, sizeof(p->cmdline), e);
	if (r < 0)
		return r;

	return plan_key(c, p, e);
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
	if (want_signed && !sig.verified)
		return rr_errf(e, EKEYREJECTED, "%s: signature does not verify: %s; not staged (a "
			       "locked-down kernel refuses it)", path, sig.why);
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
	/* a name from a signature that does not verify is not a signer */
	snprintf(p->signer, sizeof(p->signer), "%s", sig.verified ? sig.subject : "");
	snprintf(p->signature, sizeof(p->signature), "%s", rr_pe_sig_state(&sig));
	return 0;
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
 * rerandd opened (fds 3 and 4); rerandd renames the checked file into place.
 */
static void image_argv(const struct rr_config *c, const struct rr_stage_plan *p, char *argv[12])
{
	static char kfd[8], ofd[8];
	int n = 0;

	snprintf(kfd, sizeof(kfd), "%d", RR_BUILDER_KERNEL_FD);
	snprintf(ofd, sizeof(ofd), "%d", RR_BUILDER_OUT_FD);
	argv[n++] = (char *)c->rerand_bin;
	argv[n++] = "image";
	argv[n++] = (char *)p->kernel;
	argv[n++] = "--kernel-fd";
	argv[n++] = kfd;
	argv[n++] = "-o";
	argv[n++] = (char *)p->image;
	argv[n++] = "--output-fd";
	argv[n++] = ofd;
	argv[n] = NULL;
}

/*
 * sbsign on the builder's output, as a separate child: root (it reads the
 * key, which only root can) without capabilities.  The key never enters the
 * process that parses kernel files, so a kernel file that subverted a
 * decompressor still cannot read the key.  A pkcs11: URI is a key on a
 * token, through OpenSSL's pkcs11 engine.
 */
static void sign_argv(const struct rr_config *c, const char *in, const char *out, char *argv[12])
{
	int n = 0;

	argv[n++] = getenv("RERAND_SBSIGN") ? getenv("RERAND_SBSIGN") : "sbsign";
	if (!strncmp(c->sign_key, "pkcs11:", 7)) {
		argv[n++] = "--engine";
		argv[n++] = "pkcs11";
	}
	argv[n++] = "--key";
	argv[n++] = (char *)c->sign_key;
	argv[n++] = "--cert";
	argv[n++] = (char *)c->sign_cert;
	argv[n++] = "--output";
	argv[n++] = (char *)out;
	argv[n++] = (char *)in;
	argv[n] = NULL;
}

/* 1: p->image must be built (the cache dir is there and the stale file gone),
 * 0: usable as it is, <0: not usable (a pre-signed image is never rebuilt).
 * A cached image is usable only if its bytes are those recorded when it
 * was built; why one is not is put in note (may be NULL), for the log. */
static int build_needed(const struct rr_config *c, struct rr_stage_plan *p, char *note,
			size_t notelen, struct rr_err *e)
{
	char dir[RR_PATH + 16], rec[RR_PATH + 200];
	bool want_signed = p->source != RR_IMG_BUILT;
	struct rr_err de;

	p->image_sha256[0] = 0;
	/* someone else's file: checked, never rebuilt or removed; its content is
	 * the signature's business (kexec_file_load verifies it) */
	if (p->source == RR_IMG_PRESIGNED)
		return check_image(p, p->image, true, e);
	if (check_image(p, p->image, want_signed, NULL) == 0) {
		if (digest_image_check(p->image, p->image_sha256, &de) == 0)
			return 0;                  /* cached, and as it was built */
		p->image_sha256[0] = 0;
		if (note)
			snprintf(note, notelen, "%s; not loaded: rebuilding it", de.msg);
	}
	unlink(p->image);
	snprintf(rec, sizeof(rec), "%s.sha256", p->image);
	unlink(rec);
	snprintf(dir, sizeof(dir), "%s/images", c->state_dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return rr_errf(e, errno, "%s: cannot create: %s", dir, strerror(errno));
	return 1;
}

/* A child of the build failed: rerand's (or sbsign's) own message is its
 * last line. */
static void build_failed(const char *what, const char *file, int status, const char *out,
			 char *msg, size_t len)
{
	const char *last = NULL;

	for (const char *q = out; *q; q++)
		if ((q == out || q[-1] == '\n') && *q != '\n')
			last = q;
	snprintf(msg, len, "%s %s failed (%s %d)%s%.*s", what, file,
		 status < 0 ? "error" : "status", status < 0 ? -status : status, last ? ": " : "",
		 last ? (int)strcspn(last, "\n") : 0, last ? last : "");
}

/* A copy of path that only root holds, beside the image, in copy. */
static int private_copy(const struct rr_stage_plan *p, const char *path, char *copy, size_t len,
			struct rr_err *e)
{
	char buf[65536];
	int in, out, r = 0;
	ssize_t n;

	in = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (in < 0)
		return rr_errf(e, errno, "%s: cannot open: %s", path, strerror(errno));
	out = make_tmp(p, "chk", copy, len, e);
	if (out < 0) {
		close(in);
		*copy = 0;
		return out;
	}
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || write(out, buf, (size_t)n) != n) {
			r = rr_errf(e, errno ? errno : EIO, "%s: cannot copy to %s: %s", path, copy,
				    strerror(errno ? errno : EIO));
			break;
		}
	}
	if (r == 0 && fchmod(out, 0644) < 0)
		r = rr_errf(e, errno, "%s: chmod: %s", copy, strerror(errno));
	close(in);
	close(out);
	if (r < 0) {
		unlink(copy);
		*copy = 0;
	}
	return r;
}

/* The builder ran unprivileged, and what it started may outlive it with
 * its output still open: the file it wrote (path) is copied into one only
 * root holds, and that copy is checked like any other file before it is
 * named an image.  Nothing the builder left behind can change it after. */
static int built(struct rr_stage_plan *p, const char *path, struct rr_err *e)
{
	char copy[RR_PATH + 64];
	int r = private_copy(p, path, copy, sizeof(copy), e);

	if (r == 0)
		r = check_image(p, copy, p->source != RR_IMG_BUILT, e);
	/* the record first: an image in place without its record is rebuilt,
	 * never loaded unchecked */
	if (r == 0)
		r = digest_file_hex(copy, p->image_sha256, e);
	if (r == 0)
		r = digest_record_write(p->image, p->image_sha256, e);
	if (r == 0 && rename(copy, p->image) < 0)
		r = rr_errf(e, errno, "%s: cannot rename into place: %s", p->image, strerror(errno));
	if (r < 0 && *copy)
		unlink(copy);
	return r;
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
	if (*p->image_sha256) {
		/* `rerand load` hashes the very bytes it hands to kexec */
		snprintf(a->sha256, sizeof(a->sha256), "--sha256=%s", p->image_sha256);
		a->argv[n++] = a->sha256;
	}
	a->argv[n] = NULL;
	/* `rerand load` must look at the very files rerandd looked at ([Paths]
	 * points them at fixtures in tests); rerandd is single-threaded. */
	setenv("RERAND_KEXEC_CRASH_SIZE_FILE", c->kexec_crash_size, 1);
	setenv("RERAND_LOCKDOWN_FILE", c->lockdown_file, 1);
	setenv("RERAND_SECUREBOOT_FILE", c->secureboot_file, 1);
	setenv("RERAND_BOOT_PARAMS_FILE", c->boot_params_file, 1);
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

/* ---- staging as jobs: plan and check (a forked helper), build (`rerand
 * image`), check again (a helper), load (`rerand load`) --------------------- */

struct rr_stage_job {
	struct rr_config c;               /* a reload meanwhile does not change this run */
	struct rr_stage_plan p;
	bool crash;
	struct rr_job *job;
	sd_event *ev;
	rr_stage_done_fn done;
	void *arg;
	char tmp[RR_PATH + 200];          /* the builder's output, "" when none */
	char sig[RR_PATH + 200];          /* sbsign's output, "" when none */
	bool build_only;                  /* stage_build(): no load after the check */
	int kernel_fd;                    /* the file the builder read, -1 when none */
};

/* What a helper tells the loop. */
struct helper_result {
	int r;                            /* <0 error, 0 go on, 1 unchanged */
	int need_build;
	char msg[RR_ERR_MAX];
	char note[RR_ERR_MAX];            /* why a cached image is rebuilt, for the log */
	char changed[RR_ERR_MAX];         /* the staged kernel's file changed, for the log */
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

/* In the helper: the plan (SHA-256 of the kernel) and the cache check. */
static int prep_child(void *ud, int fd)
{
	struct prep_args *a = ud;
	struct helper_result res = { 0 };
	struct rr_err e = { "" };
	int r = 0;

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
	if (r == 0 && (r = build_needed(a->c, &res.p, res.note, sizeof(res.note), &e)) > 0) {
		res.need_build = 1;
		r = 0;
	}
	res.r = r;
	snprintf(res.msg, sizeof(res.msg), "%s", e.msg);
	return helper_write(fd, &res);
}

struct check_args {
	struct rr_stage_plan *p;
	const char *path;
};

/* In the helper: the image the builder (and sbsign) wrote parses, is signed
 * when it must be, carries rerandd's stage; then it is renamed into place. */
static int check_child(void *ud, int fd)
{
	struct check_args *a = ud;
	struct helper_result res = { 0 };
	struct rr_err e = { "" };

	res.p = *a->p;
	res.r = built(&res.p, a->path, &e);
	snprintf(res.msg, sizeof(res.msg), "%s", e.msg);
	return helper_write(fd, &res);
}

/* Nothing half-built stays beside the cache (renamed ones are gone). */
static void unlink_tmps(struct rr_stage_job *sj)
{
	if (*sj->tmp)
		unlink(sj->tmp);
	if (*sj->sig)
		unlink(sj->sig);
	*sj->tmp = *sj->sig = 0;
}

static void stage_free(struct rr_stage_job *sj)
{
	unlink_tmps(sj);
	if (sj->kernel_fd >= 0)
		close(sj->kernel_fd);
	free(sj);
}

static void stage_finish(struct rr_stage_job *sj, int r, const char *msg)
{
	struct rr_stage_plan p = sj->p;
	rr_stage_done_fn done = sj->done;
	void *arg = sj->arg;

	stage_free(sj);
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
	log_lines(status == 0 ? RR_LOG_INFO : RR_LOG_NOTICE, sj->crash, out);
	if (status != 0)
		reason_from(out, status, sj->crash, msg, sizeof(msg));
	stage_finish(sj, status == 0 ? 0 : status < 0 ? status : -EIO, msg);
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

static void on_checked(int status, const void *buf, size_t len, void *ud)
{
	struct rr_stage_job *sj = ud;
	const struct helper_result *res;
	struct rr_err e;
	char msg[RR_ERR_MAX];

	sj->job = NULL;
	if (!(res = helper_got(status, buf, len, msg, sizeof(msg)))) {
		stage_finish(sj, -EIO, msg);
		return;
	}
	sj->p = res->p;                    /* its signer */
	if (res->r < 0) {
		stage_finish(sj, res->r, res->msg);
		return;
	}
	unlink_tmps(sj);                   /* a copy of them is in place */
	rr_log(RR_LOG_INFO, "built %s as %s without capabilities%s", sj->p.image,
	       b_user_log(&sj->c), sj->p.source == RR_IMG_SIGNED_HERE ? ", signed by sbsign" : "");
	if (sj->build_only)
		stage_finish(sj, 0, "");
	else if (start_load(sj, &e) < 0)
		stage_finish(sj, -EIO, e.msg);
}

static void start_check(struct rr_stage_job *sj, const char *path)
{
	struct check_args a = { &sj->p, path };
	int r;

	r = job_start_fn(sj->ev, "rerandd-check", check_child, &a, 600, on_checked, sj, &sj->job);
	if (r < 0) {
		char msg[RR_ERR_MAX];
		snprintf(msg, sizeof(msg), "cannot start the staging helper: %s", strerror(-r));
		stage_finish(sj, r, msg);
	}
}

static void on_signed(int status, const char *out, void *ud)
{
	struct rr_stage_job *sj = ud;
	char msg[RR_ERR_MAX];

	sj->job = NULL;
	unlink(sj->tmp);
	*sj->tmp = 0;
	if (status != 0) {
		build_failed("sbsign of", sj->p.image, status, out, msg, sizeof(msg));
		stage_finish(sj, status < 0 ? status : -EIO, msg);
		return;
	}
	if (chmod(sj->sig, 0644) < 0) {
		snprintf(msg, sizeof(msg), "%s: chmod: %s", sj->sig, strerror(errno));
		stage_finish(sj, -errno, msg);
		return;
	}
	start_check(sj, sj->sig);
}

static void on_built(int status, const char *out, void *ud)
{
	struct rr_stage_job *sj = ud;
	char msg[RR_ERR_MAX], *argv[12];
	int fd, r;

	sj->job = NULL;
	if (status != 0) {
		char what[RR_PATH + 16], file[RR_PATH + 64];
		snprintf(what, sizeof(what), "%s image", sj->c.rerand_bin);
		snprintf(file, sizeof(file), "%s (as %s, no capabilities)", sj->p.kernel,
			 b_user_log(&sj->c));
		build_failed(what, file, status, out, msg, sizeof(msg));
		stage_finish(sj, status < 0 ? status : -EIO, msg);
		return;
	}
	{
		/* the hash names the file as it was when the builder started: an
		 * in-place write meanwhile (not dpkg's way, which renames) makes
		 * the image another kernel's */
		struct rr_err e;
		r = digest_kernel_unchanged(sj->kernel_fd, sj->p.kernel, &sj->p.kernel_id, &e);
		if (r < 0) {
			stage_finish(sj, r, e.msg);
			return;
		}
	}
	if (chmod(sj->tmp, 0644) < 0) {
		snprintf(msg, sizeof(msg), "%s: chmod: %s", sj->tmp, strerror(errno));
		stage_finish(sj, -errno, msg);
		return;
	}
	if (sj->p.source != RR_IMG_SIGNED_HERE) {
		start_check(sj, sj->tmp);
		return;
	}
	{
		struct rr_err e;
		fd = make_tmp(&sj->p, "sig", sj->sig, sizeof(sj->sig), &e);
		if (fd < 0) {
			*sj->sig = 0;
			stage_finish(sj, fd, e.msg);
			return;
		}
	}
	close(fd);
	sign_argv(&sj->c, sj->tmp, sj->sig, argv);
	r = job_start(sj->ev, argv, 600, RR_CHILD_NO_CAPS, true, on_signed, sj, &sj->job);
	if (r < 0) {
		snprintf(msg, sizeof(msg), "%s: cannot start: %s", argv[0], strerror(-r));
		stage_finish(sj, r, msg);
	}
}

/* The builder's identity, its two files (rerandd's, handed over as fds
 * 3 and 4), and the job. */
static int start_build(struct rr_stage_job *sj, struct rr_err *e)
{
	struct rr_builder b = { .kernel_fd = -1, .out_fd = -1 };
	char *argv[12];
	int r;

	r = builder_identity(&sj->c, &b, e);
	if (r < 0)
		return r;
	/* the file the plan hashed, or nothing: its image is cached under
	 * that hash */
	b.kernel_fd = digest_kernel_reopen(sj->p.kernel, &sj->p.kernel_id, e);
	if (b.kernel_fd < 0)
		return b.kernel_fd;
	b.out_fd = make_tmp(&sj->p, "tmp", sj->tmp, sizeof(sj->tmp), e);
	if (b.out_fd < 0) {
		*sj->tmp = 0;
		close(b.kernel_fd);
		return b.out_fd;
	}
	/* The package guest checks this line: the kernel hook's image is
	 * staged, not rebuilt. */
	rr_log(RR_LOG_INFO, "building %s from %s", sj->p.image, sj->p.kernel);
	image_argv(&sj->c, &sj->p, argv);
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
		stage_finish(sj, -EIO, msg);
		return;
	}
	sj->p = res->p;
	if (*res->changed)
		rr_log(RR_LOG_NOTICE, "%s", res->changed);
	if (*res->note)
		rr_log(RR_LOG_ERR, "%s", res->note);
	if (res->r != 0) {
		stage_finish(sj, res->r, res->msg);
		return;
	}
	if (!res->need_build) {
		if (start_load(sj, &e) < 0)
			stage_finish(sj, -EIO, e.msg);
		return;
	}
	r = start_build(sj, &e);
	if (r < 0)
		stage_finish(sj, r, e.msg);
}

int stage_start(sd_event *ev, const struct rr_config *c, const struct rr_stage_req *req,
		rr_stage_done_fn done, void *arg, struct rr_stage_job **ret, struct rr_err *e)
{
	struct rr_stage_job *sj = calloc(1, sizeof(*sj));
	struct prep_args a;
	int r;

	if (!sj)
		return rr_errf(e, ENOMEM, "out of memory");
	memset(&sj->p, 0, sizeof(sj->p));
	sj->kernel_fd = -1;
	sj->c = *c;
	sj->crash = req->crash;
	sj->job = NULL;
	sj->ev = ev;
	sj->done = done;
	sj->arg = arg;
	a = (struct prep_args){ &sj->c, req, &sj->p };
	/* forked at once: the helper sees req as it is now */
	r = job_start_fn(ev, "rerandd-plan", prep_child, &a, 600, on_prepped, sj, &sj->job);
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
	stage_free(sj);
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
}

bool stage_secure_changed(const struct rr_config *a, const struct rr_config *b)
{
	return strcmp(a->signed_dir, b->signed_dir) || strcmp(a->sign_key, b->sign_key) ||
	       strcmp(a->sign_cert, b->sign_cert) || strcmp(a->lockdown_file, b->lockdown_file) ||
	       strcmp(a->secureboot_file, b->secureboot_file) ||
	       strcmp(a->boot_params_file, b->boot_params_file);
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
	int r = build_needed(c, p, NULL, 0, e);

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
	sj->c = *c;
	sj->p = *p;
	sj->ev = ev;
	sj->build_only = true;
	sj->done = build_waited;
	sj->arg = &w;
	r = start_build(sj, e);
	if (r < 0)
		stage_finish(sj, r, e->msg);
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
