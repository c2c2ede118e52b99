/* SPDX-License-Identifier: GPL-2.0-only */
/* `rerand load`'s checks before and after kexec runs: the crash kernel fits
 * its region, lockdown takes the image, the image is the one asked for,
 * the command line keeps what the stage needs; and a failure named by its
 * cause.  Nothing here stages anything: cmd_load.c does. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bootparams.h"
#include "cleanup.h"
#include "cli.h"
#include "image.h"
#include "kexec_run.h"
#include "load.h"
#include "lockdown.h"
#include "memmap_src.h"
#include "select.h"
#include "util.h"

/* Refuse a crash image that cannot fit the reserved region, with the size
 * it needs: the image's init_size, the kernel's in-memory size (2 MiB
 * aligned, plus 2 MiB of alignment slack), the initrd, and 1 MiB for
 * kexec-tools' purgatory, boot_params and ELF core header. */
int check_crash_fit(const char *path, const struct rr_image *im, const char *initrd)
{
	const char *f = getenv("RERAND_KEXEC_CRASH_SIZE_FILE");
	unsigned long long have = 0, need, initrd_size = 0;
	struct rr_err e;
	struct stat st;
	_cleanup_free_ char *text = NULL;
	char *end;

	if (!f)
		f = "/sys/kernel/kexec_crash_size";
	if (rr_read_text(f, RR_SYSFS_MAX, &text, &e) < 0) {
		cli_err("%s", e.msg);
		return -1;
	}
	errno = 0;
	have = strtoull(text, &end, 10);
	if (errno || end == text || (*end && *end != '\n')) {
		cli_err("%s: not a size in bytes", f);
		return -1;
	}
	if (initrd && stat(initrd, &st) == 0)
		initrd_size = (unsigned long long)st.st_size;
	need = RR_ALIGN_UP(im->init_size, 4096) + RR_ALIGN_UP(im->hdr.mem_size, RERAND_SLOT_ALIGN) +
	       RERAND_SLOT_ALIGN + RR_ALIGN_UP(initrd_size, 4096) + (1ULL << 20);
	if (have == 0) {
		cli_err("%s: no crash region is reserved (boot with crashkernel=); the image needs %llu MiB",
			path, (need + (1 << 20) - 1) >> 20);
		return -1;
	}
	if (have < need) {
		cli_err("%s: the crash region is %llu MiB but the image needs at least %llu MiB "
			"(image %u KiB, kernel %llu MiB, initrd %llu KiB, 3 MiB alignment and loader data)",
			path, have >> 20, (need + (1 << 20) - 1) >> 20, im->init_size >> 10,
			(unsigned long long)(RR_ALIGN_UP(im->hdr.mem_size, RERAND_SLOT_ALIGN) >> 20),
			initrd_size >> 10);
		return -1;
	}
	return 0;
}

/* kexec-tools said kexec_load(2) failed with EPERM. */
bool kexec_load_eperm(const char *out)
{
	for (const char *p = out; (p = strstr(p, "kexec_load failed")); p++) {
		const char *eol = strchr(p, '\n');
		size_t n = eol ? (size_t)(eol - p) : strlen(p);
		if (memmem(p, n, strerror(EPERM), strlen(strerror(EPERM))))
			return true;
	}
	return false;
}

/* Refuse what lockdown would refuse, before kexec runs: a kexec_file_load
 * of an unsigned image fails anyway, and a failed `kexec -p` takes the
 * loaded crash kernel with it. */
int check_lockdown(const char *path, const struct rr_lockdown_state *ld, bool sb_bp,
		   const struct rr_pe_sig *sig)
{
	if (!ld->locked)
		return 0;
	if (!sig->is_signed) {
		cli_err("%s: not signed, and the kernel is locked down (lockdown: %s, Secure Boot: %s%s), "
			"so kexec_file_load accepts only signed images. Sign it with "
			"'rerand image --sign-key KEY --sign-cert CERT' and, if the certificate is not in "
			"db or MOK, enroll it with 'mokutil --import CERT' (then reboot and confirm in "
			"MokManager). Nothing was staged; any kernel staged before is unchanged",
			path, rr_lockdown_name(ld->lockdown), rr_secureboot_name(ld->secureboot),
			sb_bp ? " per boot_params" : "");
		return -EKEYREJECTED;
	}
	if (sig->nr_signatures > 1) {
		cli_err("%s: carries %u signatures, and the locked-down kernel's kexec_file_load accepts "
			"exactly one; sign the image once. Nothing was staged; any kernel staged before is "
			"unchanged", path, sig->nr_signatures);
		return -EKEYREJECTED;
	}
	/* the kernel computes the same digest and would refuse it */
	if (!sig->verified) {
		cli_err("%s: signature does not verify: %s; the locked-down kernel's kexec_file_load "
			"would refuse it. Sign it again with 'rerand image --sign-key KEY --sign-cert CERT' "
			"and ship it unchanged. Nothing was staged; any kernel staged before is unchanged",
			path, sig->why);
		return -EKEYREJECTED;
	}
	return 0;
}

/* kexec failed: say why in the user's terms, with kexec's own line. */
void report_failure(const char *path, const char *kexec, bool file_syscall, bool crash,
		    int r, const char *out, const struct rr_lockdown_state *ld,
		    const struct rr_pe_sig *sig)
{
	const char *after = crash ? "the kernel drops the loaded crash kernel before it loads a new "
				    "one: check /sys/kernel/kexec_crash_loaded"
				  : "any kernel staged before is unchanged";
	const char *line;
	size_t n;

	line = file_syscall ? rr_kexec_sig_refusal(out, &n) : NULL;
	/* EPERM has two causes besides a signature */
	if (line && strstr(line, strerror(EPERM)) && !kexec_have_cap_sys_boot()) {
		cli_err("%s: kexec said \"%.*s\": this process lacks CAP_SYS_BOOT (run it as root); %s",
			path, (int)n, line, after);
		return;
	}
	if (line && strstr(line, strerror(EPERM)) && kexec_disabled()) {
		cli_err("%s: kexec said \"%.*s\": kexec is disabled until the next boot "
			"(/proc/sys/kernel/kexec_load_disabled is 1); %s", path, (int)n, line, after);
		return;
	}
	if (line && sig->is_signed && !sig->verified) {
		cli_err("%s: the kernel refused the image (kexec said \"%.*s\"): its signature does not "
			"verify: %s. Sign it again with 'rerand image --sign-key KEY --sign-cert CERT' and "
			"ship it unchanged; %s", path, (int)n, line, sig->why, after);
		return;
	}
	if (line && sig->is_signed &&
	    (strstr(line, strerror(EBADMSG)) || strstr(line, strerror(ELIBBAD)))) {
		cli_err("%s: the kernel could not use the image's signature (kexec said \"%.*s\"): the "
			"signature or the PE header is malformed, or the file changed after it was signed "
			"by \"%s\". Sign it again with 'rerand image --sign-key KEY --sign-cert CERT' and "
			"ship it unchanged; %s", path, (int)n, line, sig->subject, after);
		return;
	}
	if (line && sig->is_signed) {
		cli_err("%s: the kernel refused the image's signature (kexec said \"%.*s\"): it is signed "
			"by \"%s\" (issuer \"%s\"), a key in none of the keyrings kexec_file_load trusts: "
			".secondary_trusted_keys, .machine (MOK) and .platform (UEFI db)%s. Enroll the "
			"signing certificate with 'mokutil --import CERT', or sign with a key the kernel "
			"trusts%s; %s", path, (int)n, line, sig->subject, sig->issuer,
			ld->locked ? "" : " (the kernel enforces signatures although it is not locked down)",
			strstr(line, strerror(EPERM)) ? " (the kernel's log has its own reason: dmesg)" : "",
			after);
		return;
	}
	if (line) {
		cli_err("%s: the kernel refused the image (kexec said \"%.*s\"): it is not signed, and "
			"this kernel's kexec_file_load wants a signature. Sign it with 'rerand image "
			"--sign-key KEY --sign-cert CERT' and enroll the certificate with 'mokutil --import "
			"CERT' if it is not in db or MOK; %s", path, (int)n, line, after);
		return;
	}
	line = rr_last_line(out, &n);
	cli_err("%s: %s %s%s failed (%s %d)%s%.*s%s; %s", path, kexec, file_syscall ? "-s " : "",
		crash ? "-p" : "-l", r < 0 ? "error" : "exit status", r < 0 ? -r : r,
		line ? ": \"" : "", line ? (int)n : 0, line ? line : "", line ? "\"" : "", after);
}

/* --sha256: the bytes read, which are the bytes kexec gets, are the image
 * as it was built (its builder recorded the hash), not a copy with a bit
 * flipped on disk since: a flipped byte in a segment passes every
 * structural check and boots a broken kernel. */
int check_sha256(const char *path, const uint8_t *buf, size_t len, const char *want,
		 struct rr_err *e)
{
	uint8_t md[32];
	char got[65];

	if (rr_stage_sha256(buf, len, md) < 0)
		return rr_errf(e, EIO, "%s: cannot compute its SHA-256 (libcrypto)", path);
	for (int i = 0; i < 32; i++)
		snprintf(got + 2 * i, 3, "%02x", md[i]);
	if (strcmp(got, want))
		return rr_errf(e, EBADMSG, "%s: its SHA-256 is %.16s..., not the %.16s... it had when "
			       "it was built: the file changed since (a flipped bit on disk, or "
			       "tampering); not loaded", path, got, want);
	return 0;
}

/*
 * What the stage cannot boot, refused before kexec runs.  Past RR_MAX_MEMMAP
 * memmap= regions, or with more separate ranges to keep clear than its avoid
 * table holds, a range the kernel must not land on is unknown to the stage:
 * no place is then known safe, and it resets the machine
 * (kexec/stage/stage.c).  The avoid table is checked against the live memory
 * map with what userspace knows (memmap=, elfcorehdr=, 1 GiB pages); the
 * ranges only the stage sees (its image, boot_params, setup_data) come on top.
 */
int check_cmdline(const char *path, const char *cmdline, const char *from)
{
	const char *src = getenv("RERAND_MEMMAP_SOURCE");
	static struct rr_memmap m;   /* 48 KiB: not on the stack */
	struct rr_msrc_info info;
	struct rr_cmdline cl;
	struct rr_err e;

	rr_cmdline_parse(cmdline, strlen(cmdline), &cl);
	if (cl.memmap_overflow) {
		cli_err("%s: the command line (%s) has %u memmap= regions: the stage honours at most "
			"%d, and with a region it cannot keep clear it resets the machine instead of "
			"booting. Merge or drop memmap= regions. Nothing was staged; any kernel staged "
			"before is unchanged", path, from, cl.nr_memmap_seen, RR_MAX_MEMMAP);
		return -1;
	}
	rr_memmap_init(&m);
	if (rr_msrc_read(src && *src ? src : NULL, &m, &info, &e) < 0) {
		if (src && *src) {
			cli_err("%s (RERAND_MEMMAP_SOURCE); nothing was staged", e.msg);
			return -1;
		}
		/* No firmware map here (a container): the memmap= count above
		 * is what can be checked. */
		cli_err("warning: %s: the stage's avoid table is not checked", e.msg);
		return 0;
	}
	rr_memmap_apply_cmdline(&m, &cl);
	if (m.overflow) {
		cli_err("%s: the command line (%s) gives the stage more than %d separate ranges to keep "
			"clear on this memory map (%u RAM ranges; memmap=, elfcorehdr=, 1 GiB pages for "
			"hugepages=): its avoid table overflows and it resets the machine instead of "
			"booting. Lower hugepages= or memmap=. Nothing was staged; any kernel staged "
			"before is unchanged", path, from, RR_MAX_AVOID, m.nr_ram);
		return -1;
	}
	return 0;
}
