/* SPDX-License-Identifier: GPL-2.0-only */
/* Lockdown and Secure Boot state, the seed rule, and kexec-tools' words for
 * a refused signature (see lockdown.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cleanup.h"
#include "kernel.h"
#include "lockdown.h"
#include "util.h"

#define STATE_FILE_MAX 4096

static const struct { const char *name; enum rr_lockdown mode; } modes[] = {
	{ "none", RR_LD_NONE },
	{ "integrity", RR_LD_INTEGRITY },
	{ "confidentiality", RR_LD_CONFIDENTIALITY },
};

int rr_lockdown_parse(const char *text, size_t len, const char *name, enum rr_lockdown *ret,
		      struct rr_err *e)
{
	const char *open = memchr(text, '[', len), *close;

	if (!open)
		return rr_errf(e, EBADMSG, "%s: no mode in brackets (expected e.g. \"none [integrity] "
			       "confidentiality\")", name);
	close = memchr(open, ']', len - (size_t)(open - text));
	if (!close)
		return rr_errf(e, EBADMSG, "%s: unterminated '[' in the lockdown modes", name);
	/* exactly one selected mode */
	if (memchr(close, '[', len - (size_t)(close - text)))
		return rr_errf(e, EBADMSG, "%s: more than one selected lockdown mode", name);
	size_t n = (size_t)(close - open - 1);
	for (size_t i = 0; i < ARRAY_SIZE(modes); i++)
		if (strlen(modes[i].name) == n && !memcmp(open + 1, modes[i].name, n)) {
			*ret = modes[i].mode;
			return 0;
		}
	return rr_errf(e, EBADMSG, "%s: unknown lockdown mode \"[%.*s]\"", name,
		       (int)(n > 32 ? 32 : n), open + 1);
}

int rr_secureboot_parse(const uint8_t *buf, size_t len, const char *name,
			enum rr_secureboot *ret, struct rr_err *e)
{
	if (len != 5)
		return rr_errf(e, EBADMSG, "%s: %zu bytes, expected 5 (4 attribute bytes and the "
			       "SecureBoot byte)", name, len);
	if (buf[4] > 1)
		return rr_errf(e, EBADMSG, "%s: SecureBoot value %u is neither 0 nor 1", name, buf[4]);
	*ret = buf[4] ? RR_SB_ON : RR_SB_OFF;
	return 0;
}

/* .../efi of .../efi/efivars/SecureBoot-...: EFI booted, variables unseen */
static bool firmware_dir_exists(const char *var)
{
	char dir[4096];
	struct stat st;
	char *slash;

	if (snprintf(dir, sizeof(dir), "%s", var) >= (int)sizeof(dir))
		return false;
	for (int up = 0; up < 2; up++) {
		slash = strrchr(dir, '/');
		if (!slash || slash == dir)
			return false;
		*slash = 0;
	}
	return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

int rr_lockdown_probe(const char *lockdown_path, const char *secureboot_path,
		      struct rr_lockdown_state *ret, struct rr_err *e)
{
	struct rr_lockdown_state s = { RR_LD_ABSENT, RR_SB_ABSENT, false };
	_cleanup_free_ uint8_t *ld = NULL, *sb = NULL;
	size_t len;
	int r;

	r = rr_read_file(lockdown_path, STATE_FILE_MAX, &ld, &len, e);
	if (r == 0) {
		r = rr_lockdown_parse((const char *)ld, len, lockdown_path, &s.lockdown, e);
		if (r < 0)
			return r;
	} else if (r != -ENOENT) {
		return r;
	}
	r = rr_read_file(secureboot_path, STATE_FILE_MAX, &sb, &len, e);
	if (r == 0) {
		r = rr_secureboot_parse(sb, len, secureboot_path, &s.secureboot, e);
		if (r < 0)
			return r;
	} else if (r == -ENOENT) {
		if (firmware_dir_exists(secureboot_path))
			s.secureboot = RR_SB_UNKNOWN;
	} else {
		return r;
	}
	s.locked = s.lockdown == RR_LD_INTEGRITY || s.lockdown == RR_LD_CONFIDENTIALITY ||
		   (s.lockdown == RR_LD_ABSENT && s.secureboot == RR_SB_ON);
	*ret = s;
	return 0;
}

int rr_secureboot_from_boot_params(const uint8_t *buf, size_t len, const char *name,
				   enum rr_secureboot *ret, struct rr_err *e)
{
	if (len <= RR_BP_SECURE_BOOT)
		return rr_errf(e, EBADMSG, "%s: %zu bytes, too short for boot_params (secure_boot "
			       "at 0x%x)", name, len, RR_BP_SECURE_BOOT);
	switch (buf[RR_BP_SECURE_BOOT]) {
	case 2: *ret = RR_SB_OFF; return 0;
	case 3: *ret = RR_SB_ON; return 0;
	case 0:                 /* not booted by the EFI stub, or an old kernel */
	case 1:                 /* the stub could not tell */
		return -ENODATA;
	default:
		return rr_errf(e, EBADMSG, "%s: secure_boot byte %u is not 0 to 3", name,
			       buf[RR_BP_SECURE_BOOT]);
	}
}

int rr_lockdown_probe_bp(const char *lockdown_path, const char *secureboot_path,
			 const char *boot_params_path, struct rr_lockdown_state *ret,
			 bool *ret_from_boot_params, struct rr_err *e)
{
	struct rr_lockdown_state s;
	enum rr_secureboot sb;
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len;
	int r = rr_lockdown_probe(lockdown_path, secureboot_path, &s, e);

	*ret_from_boot_params = false;

	if (r < 0 || !boot_params_path ||
	    (s.secureboot != RR_SB_ABSENT && s.secureboot != RR_SB_UNKNOWN)) {
		if (r == 0)
			*ret = s;
		return r;
	}
	/* a second opinion only: boot_params readable by root alone, or a
	 * kernel without it, leave the state as the efivarfs probe said */
	if (rr_read_file(boot_params_path, STATE_FILE_MAX, &buf, &len, NULL) < 0) {
		*ret = s;
		return 0;
	}
	r = rr_secureboot_from_boot_params(buf, len, boot_params_path, &sb, e);
	if (r == -ENODATA) {
		*ret = s;
		return 0;
	}
	if (r < 0)
		return r;
	s.secureboot = sb;
	*ret_from_boot_params = true;
	s.locked = s.lockdown == RR_LD_INTEGRITY || s.lockdown == RR_LD_CONFIDENTIALITY ||
		   (s.lockdown == RR_LD_ABSENT && s.secureboot == RR_SB_ON);
	*ret = s;
	return 0;
}

const char *rr_lockdown_name(enum rr_lockdown l)
{
	for (size_t i = 0; i < ARRAY_SIZE(modes); i++)
		if (modes[i].mode == l)
			return modes[i].name;
	return "unknown";
}

const char *rr_secureboot_name(enum rr_secureboot s)
{
	switch (s) {
	case RR_SB_ON: return "on";
	case RR_SB_OFF: return "off";
	case RR_SB_UNKNOWN: return "unknown";
	case RR_SB_ABSENT: break;
	}
	return "unsupported";
}

/* ---- the seed rule -------------------------------------------------------- */

static bool at_least(const int *v, const int *min, int n)
{
	for (int i = 0; i < n; i++) {
		if (v[i] < 0)
			return false;               /* unknown: assume the older */
		if (v[i] != min[i])
			return v[i] > min[i];
	}
	return true;
}

/*
 * A signed file must reach the kernel byte for byte (the signature covers
 * the header), so the seed comes from whoever adds a SETUP_RNG_SEED node:
 * the kernel for kexec_file_load since 6.0 (setup_rng_seed() in
 * arch/x86/kernel/kexec-bzimage64.c), kexec-tools for kexec_load since
 * 2.0.25 (setup_rng_seed() in kexec/arch/i386/x86-linux-setup.c).  Both
 * skip the node while the CRNG is not ready.  kexec_load never checks a
 * signature, so there the copy in memory may still carry a seed.
 */
enum rr_seed_source rr_seed_source(const struct rr_seed_in *in)
{
	static const int linux_6_0[2] = { 6, 0 }, kt_2_0_25[3] = { 2, 0, 25 };

	if (in->file_syscall) {
		if (in->crng_ready && at_least(in->kernel, linux_6_0, 2))
			return RR_SEED_KERNEL;
		return in->signed_image ? RR_SEED_NONE : RR_SEED_PATCH;
	}
	if (in->crng_ready && at_least(in->kexec_tools, kt_2_0_25, 3))
		return RR_SEED_KEXEC_TOOLS;
	return RR_SEED_PATCH;
}

const char *rr_seed_source_name(enum rr_seed_source s)
{
	switch (s) {
	case RR_SEED_PATCH: return "rerand load (header, in memory)";
	case RR_SEED_KERNEL: return "the kernel (kexec_file_load SETUP_RNG_SEED)";
	case RR_SEED_KEXEC_TOOLS: return "kexec-tools (SETUP_RNG_SEED)";
	case RR_SEED_NONE: return "none";
	}
	return "unknown";
}

/* Up to n dot-separated decimal numbers at s; how many were read. */
static int parse_dotted(const char *s, int *v, int n)
{
	int got = 0;

	while (got < n) {
		char *end;
		long x;

		if (*s < '0' || *s > '9')
			break;
		x = strtol(s, &end, 10);
		if (x > 100000)
			break;
		v[got++] = (int)x;
		s = end;
		if (*s != '.')
			break;
		s++;
	}
	return got;
}

int rr_parse_release(const char *s, int ret[2])
{
	int v[2];

	if (parse_dotted(s, v, 2) != 2)
		return -EINVAL;
	ret[0] = v[0];
	ret[1] = v[1];
	return 0;
}

int rr_parse_kexec_version(const char *s, int ret[3])
{
	const char *p = strstr(s, "kexec-tools ");
	int v[3];

	if (!p || parse_dotted(p + 12, v, 3) != 3)
		return -EINVAL;
	memcpy(ret, v, sizeof(v));
	return 0;
}

/* ---- kexec-tools' word on a refused signature ----------------------------- */

static bool line_has(const char *l, size_t n, const char *needle)
{
	size_t k = strlen(needle);

	for (size_t i = 0; k && i + k <= n; i++)
		if (!memcmp(l + i, needle, k))
			return true;
	return false;
}

/* The errnos a signature check gives: kimage_validate_signature() and
 * verify_pefile_signature() (and EPERM from lockdown itself). */
static const int sig_errnos[] = { EKEYREJECTED, ENOKEY, EPERM, EBADMSG, ELIBBAD, ENOPKG,
				  EKEYEXPIRED, EKEYREVOKED };

const char *rr_kexec_sig_refusal(const char *out, size_t *ret_len)
{
	const char *p = out;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		if (line_has(p, n, "signature verification failed")) {
			*ret_len = n;
			return p;
		}
		if (line_has(p, n, "kexec_file_load failed"))
			for (size_t i = 0; i < ARRAY_SIZE(sig_errnos); i++)
				if (line_has(p, n, strerror(sig_errnos[i]))) {
					*ret_len = n;
					return p;
				}
		p = nl ? nl + 1 : NULL;
	}
	return NULL;
}

const char *rr_last_line(const char *out, size_t *ret_len)
{
	const char *p = out, *last = NULL, *verdict = NULL;
	size_t last_n = 0, verdict_n = 0;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		if (n) {
			last = p;
			last_n = n;
		}
		/* kexec-tools dumps its segments after "kexec_load failed: ..." */
		if (line_has(p, n, "failed") || line_has(p, n, "Cannot ")) {
			verdict = p;
			verdict_n = n;
		}
		p = nl ? nl + 1 : NULL;
	}
	*ret_len = verdict ? verdict_n : last_n;
	return verdict ? verdict : last;
}
