/* SPDX-License-Identifier: GPL-2.0-only */
/* What rerandd stages: the kernel, its initrd and command line; the image
 * cache under the state dir keyed by the SHA-256 of the kernel and of the
 * stage; `rerand load`. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "image.h"
#include "rerandd.h"

#ifndef __clang__
#pragma GCC diagnostic ignored "-Wformat-truncation"  /* paths are checked by stat() */
#endif

#define CMDLINE_MAX 4096

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

int stage_plan(const struct rr_config *c, const char *kernel_override, struct rr_stage_plan *p,
	       struct rr_err *e)
{
	const char *base;
	int r;

	memset(p, 0, sizeof(*p));
	if (kernel_override && *kernel_override)
		snprintf(p->kernel, sizeof(p->kernel), "%s", kernel_override);
	else if (*c->kernel)
		snprintf(p->kernel, sizeof(p->kernel), "%s", c->kernel);
	else {
		struct utsname u;
		uname(&u);
		snprintf(p->kernel, sizeof(p->kernel), "%s/vmlinuz-%s", c->boot_dir, u.release);
	}
	if (!readable(p->kernel))
		return rr_errf(e, ENOENT, "%s: no such kernel (set Kernel= in [Stage])", p->kernel);

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
	return 0;
}

static int build_in_process(const struct rr_stage_plan *p, struct rr_err *e)
{
	struct rr_image_opts o = { .codec = RERAND_CODEC_LZ4, .lz4_level = 0 };
	struct rr_kernel k;
	uint8_t *buf;
	size_t len;
	int r;

	r = rr_kernel_load(p->kernel, NULL, &k, e);
	if (r < 0)
		return r;
	r = rr_image_build(&k, rr_stage_blob, (size_t)(rr_stage_blob_end - rr_stage_blob), &o,
			   &buf, &len, p->kernel, e);
	rr_kernel_free(&k);
	if (r < 0)
		return r;
	r = rr_write_file_atomic(p->image, buf, len, e);
	free(buf);
	return r;
}

int stage_build(const struct rr_config *c, struct rr_stage_plan *p, struct rr_err *e)
{
	char dir[RR_PATH + 16];
	struct rr_image im;
	uint8_t *buf;
	size_t len;
	int r;

	if (rr_read_file(p->image, 512u << 20, &buf, &len, NULL) == 0) {
		r = rr_image_parse(buf, len, p->image, &im, NULL);
		free(buf);
		if (r == 0)
			return 0;                  /* cached */
		unlink(p->image);
	}
	snprintf(dir, sizeof(dir), "%s/images", c->state_dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return rr_errf(e, errno, "%s: cannot create: %s", dir, strerror(errno));
	return build_in_process(p, e);
}

int stage_load(const struct rr_config *c, const struct rr_stage_plan *p, struct rr_err *e)
{
	char *argv[16], initrd_arg[RR_PATH + 16], append_arg[RR_CMD + 16], kexec_arg[RR_PATH + 16];
	int n = 0, r;

	argv[n++] = (char *)c->rerand_bin;
	argv[n++] = "load";
	argv[n++] = (char *)p->image;
	if (*p->initrd) {
		snprintf(initrd_arg, sizeof(initrd_arg), "--initrd=%s", p->initrd);
		argv[n++] = initrd_arg;
	}
	snprintf(append_arg, sizeof(append_arg), "--append=%s", p->cmdline);
	argv[n++] = append_arg;
	snprintf(kexec_arg, sizeof(kexec_arg), "--kexec=%s", c->kexec_bin);
	argv[n++] = kexec_arg;
	if (c->file_syscall)
		argv[n++] = "--file-syscall";
	argv[n] = NULL;
	r = run_argv(argv, 300, RR_CHILD_KEXEC_CAPS);
	if (r != 0)
		return rr_errf(e, r < 0 ? -r : EIO, "%s load %s failed (%s %d)", c->rerand_bin,
			       p->image, r < 0 ? "error" : "status", r < 0 ? -r : r);
	return 0;
}

void stage_prune(const struct rr_config *c, const char *keep_sha, const char *keep_sha2)
{
	char dir[RR_PATH + 16], keep[160], keep2[160] = "";
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/images", c->state_dir);
	snprintf(keep, sizeof(keep), "%s.%s.img", keep_sha, stage_blob_sha());
	/* the crash kernel may run another kernel's image */
	if (keep_sha2 && *keep_sha2)
		snprintf(keep2, sizeof(keep2), "%s.%s.img", keep_sha2, stage_blob_sha());
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || !strcmp(de->d_name, keep) ||
		    (*keep2 && !strcmp(de->d_name, keep2)))
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) == 0)
			rr_log(RR_LOG_INFO, "removed cached image %s/%s", dir, de->d_name);
	}
	closedir(d);
}
