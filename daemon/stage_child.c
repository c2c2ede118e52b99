/* SPDX-License-Identifier: GPL-2.0-only */
/* The children of staging, as rerandd runs them: the image builder
 * (`rerand image`, ImageUser=, no capabilities), sbsign and `rerand load`:
 * their identity and command lines, and what their output says when they
 * fail. */
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

#include "stage_int.h"

/* The image builder's identity: ImageUser= when rerandd is root; else
 * (tests, a user's own instance) rerandd's own uid, without capabilities. */
int stage_builder_identity(const struct rr_config *c, struct rr_builder *b, struct rr_err *e)
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

/* The identity of what parses the builder's output (the parsing halves of
 * the staging helpers, sbsign): CheckUser=, or ImageUser= when it is
 * empty, when rerandd is root; never root. */
int stage_checker_identity(const struct rr_config *c, struct rr_builder *who, struct rr_err *e)
{
	const char *user = *c->check_user ? c->check_user : c->image_user;
	struct passwd *pw;

	who->switch_user = geteuid() == 0;
	if (!who->switch_user)
		return 0;
	errno = 0;
	pw = getpwnam(user);
	if (!pw)
		return rr_errf(e, errno ? errno : ENOENT, "%s=%s: %s (the checks of built images and "
			       "sbsign run as %s)", *c->check_user ? "CheckUser" : "ImageUser", user,
			       errno ? strerror(errno) : "no such user",
			       *c->check_user ? "it" : "it too: CheckUser= is empty");
	if (pw->pw_uid == 0 || pw->pw_gid == 0)
		return rr_errf(e, EPERM, "%s=%s: uid %u gid %u is root: the image checks and sbsign "
			       "must not run as root", *c->check_user ? "CheckUser" : "ImageUser",
			       user, (unsigned)pw->pw_uid, (unsigned)pw->pw_gid);
	who->uid = pw->pw_uid;
	who->gid = pw->pw_gid;
	return 0;
}

/* Who built the image, for the log. */
const char *stage_builder_name(const struct rr_config *c)
{
	return geteuid() == 0 ? c->image_user : "rerandd's own uid";
}

/*
 * `rerand image` as the unprivileged builder: the decompressors and libelf
 * run as ImageUser= with no capabilities, on the kernel and an output file
 * rerandd opened (fds 3 and 4); rerandd renames the checked file into place.
 */
void stage_image_argv(const struct rr_config *c, const struct rr_stage_plan *p, char *argv[12])
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
 * sbsign on the checked copy of the builder's output, as a separate child
 * (run.c, caps_child_signer): CheckUser= without capabilities under the
 * parsing half's seccomp filter.  It opens nothing by a path of rerandd's:
 * the checked copy, the key and the certificate are descriptors its root
 * side opened (the key and certificate copied into sealed memfds), and its
 * output a memfd rerandd keeps; it reaches each through /proc/self/fd/N.
 * The key never enters the process that parses kernel files.  A pkcs11:
 * URI is a key on a token, through OpenSSL's pkcs11 engine, as CheckUser=.
 */
void stage_sign_argv(const struct rr_config *c, char *argv[12])
{
	static char in[32], key[32], cert[32], out[32];
	int n = 0;

	snprintf(in, sizeof(in), "/proc/self/fd/%d", RR_SIGNER_IN_FD);
	snprintf(key, sizeof(key), "/proc/self/fd/%d", RR_SIGNER_KEY_FD);
	snprintf(cert, sizeof(cert), "/proc/self/fd/%d", RR_SIGNER_CERT_FD);
	snprintf(out, sizeof(out), "/proc/self/fd/%d", RR_SIGNER_OUT_FD);
	argv[n++] = getenv("RERAND_SBSIGN") ? getenv("RERAND_SBSIGN") : "sbsign";
	if (!strncmp(c->sign_key, "pkcs11:", 7)) {
		argv[n++] = "--engine";
		argv[n++] = "pkcs11";
		argv[n++] = "--key";
		argv[n++] = (char *)c->sign_key;
	} else {
		argv[n++] = "--key";
		argv[n++] = key;
	}
	argv[n++] = "--cert";
	argv[n++] = cert;
	argv[n++] = "--output";
	argv[n++] = out;
	argv[n++] = in;
	argv[n] = NULL;
}

/* A child of the build failed: rerand's (or sbsign's) own message is its
 * last line. */
void stage_child_failed(const char *what, const char *file, int status, const char *out,
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
void stage_load_reason(const char *out, int status, bool crash, char *msg, size_t len)
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

void stage_load_log(int prio, bool crash, const char *out)
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
