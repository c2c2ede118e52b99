/* SPDX-License-Identifier: GPL-2.0-only */
/* Lockdown and Secure Boot detection from fixture files laid out as the
 * kernel shows them, the seed rule, and kexec-tools' refusal lines. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lockdown.h"
#include "test.h"

static char dir[] = "/tmp/rr-lockdown-XXXXXX";

static const char *fixture(const char *name, const void *data, size_t len)
{
	static char path[4][256];
	static int next;
	char *p = path[next++ % 4];
	FILE *f;

	snprintf(p, 256, "%s/%s", dir, name);
	f = fopen(p, "we");
	if (!f || fwrite(data, 1, len, f) != len) {
		perror(p);
		exit(1);
	}
	fclose(f);
	return p;
}

static void probe_case(const char *ld, const uint8_t *sb, size_t sb_len, bool want_locked,
		       enum rr_lockdown want_ld, enum rr_secureboot want_sb, const char *what)
{
	const char *lp = ld ? fixture("lockdown", ld, strlen(ld)) : "/nonexistent/lockdown";
	const char *sp = sb ? fixture("SecureBoot", sb, sb_len) : "/nonexistent/SecureBoot";
	struct rr_lockdown_state s;
	struct rr_err e = { "" };
	int r = rr_lockdown_probe(lp, sp, &s, &e);

	T_OK(r == 0 && s.locked == want_locked && s.lockdown == want_ld && s.secureboot == want_sb,
	     "%s: locked=%d lockdown=%s secureboot=%s", what, r == 0 && s.locked,
	     r == 0 ? rr_lockdown_name(s.lockdown) : e.msg, r == 0 ? rr_secureboot_name(s.secureboot) : "");
	unlink(lp);
	unlink(sp);
}

static void test_probe(void)
{
	static const uint8_t sb_on[5] = { 0x06, 0, 0, 0, 1 }, sb_off[5] = { 0x06, 0, 0, 0, 0 };

	probe_case("[none] integrity confidentiality\n", sb_off, 5, false, RR_LD_NONE, RR_SB_OFF,
		   "none, Secure Boot off");
	probe_case("none [integrity] confidentiality\n", sb_on, 5, true, RR_LD_INTEGRITY, RR_SB_ON,
		   "integrity, Secure Boot on (Debian under Secure Boot)");
	probe_case("none integrity [confidentiality]\n", NULL, 0, true, RR_LD_CONFIDENTIALITY,
		   RR_SB_ABSENT, "confidentiality without EFI");
	probe_case(NULL, sb_on, 5, true, RR_LD_ABSENT, RR_SB_ON,
		   "no lockdown file but Secure Boot on: assumed locked");
	probe_case(NULL, NULL, 0, false, RR_LD_ABSENT, RR_SB_ABSENT, "neither file (BIOS, no LSM)");
	probe_case("[none] integrity confidentiality\n", sb_on, 5, false, RR_LD_NONE, RR_SB_ON,
		   "[none] under Secure Boot: the kernel says it is not locked");

	/* malformed files are errors that name the file */
	struct rr_lockdown_state s;
	struct rr_err e = { "" };
	const char *lp = fixture("lockdown", "none integrity confidentiality\n", 31);
	int r = rr_lockdown_probe(lp, "/nonexistent", &s, &e);
	T_OK(r == -EBADMSG && strstr(e.msg, lp) && strstr(e.msg, "no mode in brackets"),
	     "lockdown without a selected mode: %s", e.msg);
	lp = fixture("lockdown", "none [bogus] confidentiality\n", 29);
	r = rr_lockdown_probe(lp, "/nonexistent", &s, &e);
	T_OK(r == -EBADMSG && strstr(e.msg, "unknown lockdown mode \"[bogus]\""), "unknown mode: %s", e.msg);
	lp = fixture("lockdown", "[none] [integrity]\n", 19);
	r = rr_lockdown_probe(lp, "/nonexistent", &s, &e);
	T_OK(r == -EBADMSG && strstr(e.msg, "more than one"), "two modes: %s", e.msg);
	unlink(lp);
	static const uint8_t short_sb[4] = { 6, 0, 0, 0 }, bad_sb[5] = { 6, 0, 0, 0, 7 };
	const char *sp = fixture("SecureBoot", short_sb, 4);
	r = rr_lockdown_probe("/nonexistent", sp, &s, &e);
	T_OK(r == -EBADMSG && strstr(e.msg, sp) && strstr(e.msg, "4 bytes, expected 5"),
	     "a 4-byte SecureBoot variable: %s", e.msg);
	sp = fixture("SecureBoot", bad_sb, 5);
	r = rr_lockdown_probe("/nonexistent", sp, &s, &e);
	T_OK(r == -EBADMSG && strstr(e.msg, "SecureBoot value 7"), "SecureBoot value 7: %s", e.msg);
	unlink(sp);
	/* a directory in place of the file: unreadable, not "absent" */
	r = rr_lockdown_probe(dir, "/nonexistent", &s, &e);
	T_OK(r < 0 && r != -ENOENT && strstr(e.msg, dir), "a directory as the lockdown file: %s", e.msg);

	/* EFI booted but efivarfs not mounted: unknown, not "unsupported" */
	char efi[300], var[400];
	snprintf(efi, sizeof(efi), "%s/efi", dir);
	snprintf(var, sizeof(var), "%s/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c", efi);
	mkdir(efi, 0755);
	r = rr_lockdown_probe("/nonexistent", var, &s, &e);
	T_OK(r == 0 && s.secureboot == RR_SB_UNKNOWN && !strcmp(rr_secureboot_name(s.secureboot), "unknown") &&
	     !s.locked, "EFI directory without the variable (efivarfs not mounted): Secure Boot unknown");
	rmdir(efi);

	/* the real files of this machine read without error (absent is fine) */
	r = rr_lockdown_probe(RR_LOCKDOWN_PATH, RR_SECUREBOOT_PATH, &s, &e);
	T_OK(r == 0, "this machine: lockdown %s, Secure Boot %s, locked %d%s%s",
	     r == 0 ? rr_lockdown_name(s.lockdown) : "?", r == 0 ? rr_secureboot_name(s.secureboot) : "?",
	     r == 0 && s.locked, r ? ": " : "", r ? e.msg : "");
}

static void seed_case(bool fsys, bool sig, bool crng, int kmaj, int kmin, int t0, int t1, int t2,
		      enum rr_seed_source want, const char *what)
{
	struct rr_seed_in in = { fsys, sig, crng, { kmaj, kmin }, { t0, t1, t2 } };
	enum rr_seed_source got = rr_seed_source(&in);

	T_OK(got == want, "seed: %s -> %s", what, rr_seed_source_name(got));
}

static void test_seed_rule(void)
{
	seed_case(true, true, true, 6, 1, 2, 0, 25, RR_SEED_KERNEL, "kexec_file_load on 6.1, signed");
	seed_case(true, false, true, 6, 0, -1, -1, -1, RR_SEED_KERNEL, "kexec_file_load on 6.0, unsigned");
	seed_case(true, false, true, 5, 19, 2, 0, 25, RR_SEED_PATCH, "kexec_file_load on 5.19, unsigned");
	seed_case(true, true, true, 5, 15, 2, 0, 25, RR_SEED_NONE, "kexec_file_load on 5.15, signed");
	seed_case(true, true, false, 6, 12, 2, 0, 25, RR_SEED_NONE, "kexec_file_load, CRNG not ready, signed");
	seed_case(true, false, true, -1, -1, 2, 0, 25, RR_SEED_PATCH, "kexec_file_load, release unknown");
	seed_case(false, false, true, 6, 1, 2, 0, 25, RR_SEED_KEXEC_TOOLS, "kexec_load, kexec-tools 2.0.25");
	seed_case(false, true, true, 6, 1, 2, 0, 31, RR_SEED_KEXEC_TOOLS, "kexec_load, kexec-tools 2.0.31, signed");
	seed_case(false, false, true, 6, 1, 2, 1, 0, RR_SEED_KEXEC_TOOLS, "kexec_load, kexec-tools 2.1.0");
	seed_case(false, false, true, 6, 1, 2, 0, 24, RR_SEED_PATCH, "kexec_load, kexec-tools 2.0.24");
	seed_case(false, true, true, 6, 1, 2, 0, 20, RR_SEED_PATCH,
		  "kexec_load, kexec-tools 2.0.20, signed (kexec_load checks no signature)");
	seed_case(false, false, true, 6, 1, -1, -1, -1, RR_SEED_PATCH, "kexec_load, version unknown");
	seed_case(false, false, false, 6, 1, 2, 0, 25, RR_SEED_PATCH, "kexec_load, CRNG not ready");

	int v[3] = { -1, -1, -1 }, k[2] = { -1, -1 };
	T_OK(rr_parse_kexec_version("kexec-tools 2.0.25\n", v) == 0 && v[0] == 2 && v[1] == 0 && v[2] == 25,
	     "kexec --version \"kexec-tools 2.0.25\"");
	T_OK(rr_parse_kexec_version("kexec-tools 2.0.29-git\n", v) == 0 && v[2] == 29,
	     "kexec --version with a suffix");
	T_OK(rr_parse_kexec_version("kexec 2.0\n", v) == -EINVAL && rr_parse_kexec_version("", v) == -EINVAL,
	     "not a kexec-tools version");
	T_OK(rr_parse_release("6.1.0-57-cloud-amd64", k) == 0 && k[0] == 6 && k[1] == 1, "release 6.1.0-57");
	T_OK(rr_parse_release("6.18.44-fc-v1252", k) == 0 && k[0] == 6 && k[1] == 18, "release 6.18.44");
	T_OK(rr_parse_release("vmlinuz", k) == -EINVAL && rr_parse_release("6", k) == -EINVAL,
	     "not a release");
}

static void test_refusal_lines(void)
{
	char buf[512];
	const char *l;
	size_t n;

	snprintf(buf, sizeof(buf), "Try gzip decompression.\nkexec_file_load failed: %s\n",
		 strerror(EKEYREJECTED));
	l = rr_kexec_sig_refusal(buf, &n);
	T_OK(l && n == strlen("kexec_file_load failed: ") + strlen(strerror(EKEYREJECTED)),
	     "EKEYREJECTED: \"%.*s\"", (int)n, l ? l : "");
	snprintf(buf, sizeof(buf), "kexec_file_load failed: %s\n", strerror(EPERM));
	l = rr_kexec_sig_refusal(buf, &n);
	T_OK(l != NULL, "EPERM (lockdown without a verified signature)");
	snprintf(buf, sizeof(buf), "kexec_file_load failed: %s\n", strerror(ELIBBAD));
	T_OK(rr_kexec_sig_refusal(buf, &n) != NULL, "ELIBBAD (no PE header)");
	l = rr_kexec_sig_refusal("x\nkexec_file: Enforced kernel signature verification failed (-129).\n", &n);
	T_OK(l && !memcmp(l, "kexec_file: Enforced", 20), "the kernel's own line");
	snprintf(buf, sizeof(buf), "kexec_file_load failed: %s\n", strerror(ENOMEM));
	T_OK(rr_kexec_sig_refusal(buf, &n) == NULL, "ENOMEM is not a signature refusal");
	snprintf(buf, sizeof(buf), "Cannot open /x: %s\n", strerror(EPERM));
	T_OK(rr_kexec_sig_refusal(buf, &n) == NULL, "EPERM from another step is not one");
	l = rr_last_line("a\nlast one\n\n", &n);
	T_OK(l && n == 8 && !memcmp(l, "last one", 8), "last non-empty line");
	T_OK(rr_last_line("", &n) == NULL, "no line in empty output");
	l = rr_last_line("kexec_load failed: Operation not permitted\nentry       = 0x1000\n"
			 "segment[0].memsz = 0x1000\n", &n);
	T_OK(l && n == 42 && !memcmp(l, "kexec_load failed: Operation not permitted", 42),
	     "kexec's verdict, not its segment dump after it: \"%.*s\"", (int)n, l ? l : "");
}

/* No securityfs and no efivarfs (an initramfs, a container): the Secure Boot
 * byte of boot_params, as /sys/kernel/boot_params/data shows it. */
static void bp_case(uint8_t byte, size_t len, int want_r, bool want_locked,
		    enum rr_secureboot want_sb, bool want_bp, const char *what)
{
	static uint8_t bp[4096];
	const char *bpp;
	struct rr_lockdown_state s = { 0 };
	struct rr_err e = { "" };
	bool from_bp = !want_bp;
	int r;

	memset(bp, 0, sizeof(bp));
	bp[RR_BP_SECURE_BOOT] = byte;
	bpp = fixture("boot_params", bp, len);
	r = rr_lockdown_probe_bp("/nonexistent/lockdown", "/nonexistent/efi/efivars/SecureBoot",
				 bpp, &s, &from_bp, &e);
	T_OK(r == want_r && (r < 0 ? strstr(e.msg, bpp) != NULL :
			     s.locked == want_locked && s.secureboot == want_sb && from_bp == want_bp),
	     "%s: r=%d locked=%d secureboot=%s from boot_params=%d %s", what, r, s.locked,
	     rr_secureboot_name(s.secureboot), from_bp, r < 0 ? e.msg : "");
	unlink(bpp);
}

static void test_boot_params(void)
{
	struct rr_lockdown_state s;
	struct rr_err e = { "" };
	bool from_bp = true;
	static const uint8_t sb_off[5] = { 0x06, 0, 0, 0, 0 };

	bp_case(3, 4096, 0, true, RR_SB_ON, true,
		"boot_params secure_boot 3 (enabled): Secure Boot on, so locked");
	bp_case(2, 4096, 0, false, RR_SB_OFF, true, "boot_params secure_boot 2 (disabled): off");
	bp_case(0, 4096, 0, false, RR_SB_ABSENT, false, "boot_params secure_boot 0 (unset): no word");
	bp_case(1, 4096, 0, false, RR_SB_ABSENT, false, "boot_params secure_boot 1 (unknown): no word");
	bp_case(9, 4096, -EBADMSG, false, RR_SB_ABSENT, false,
		"boot_params secure_boot 9: malformed, naming the file");
	bp_case(3, 0x100, -EBADMSG, false, RR_SB_ABSENT, false,
		"boot_params of 256 bytes: too short, naming the file");
	T_OK(rr_lockdown_probe_bp("/nonexistent/lockdown", "/nonexistent/efi/efivars/SecureBoot",
				  "/nonexistent/boot_params", &s, &from_bp, &e) == 0 &&
	     !s.locked && !from_bp && s.secureboot == RR_SB_ABSENT,
	     "no boot_params either: not an error, state unchanged");
	/* efivarfs has the word: boot_params is not read at all */
	const char *sp = fixture("SecureBoot", sb_off, 5);
	static uint8_t bp[4096];
	bp[RR_BP_SECURE_BOOT] = 3;
	const char *bpp = fixture("boot_params", bp, sizeof(bp));
	T_OK(rr_lockdown_probe_bp("/nonexistent/lockdown", sp, bpp, &s, &from_bp, &e) == 0 &&
	     !s.locked && !from_bp && s.secureboot == RR_SB_OFF,
	     "the SecureBoot variable, where readable, wins over boot_params");
	unlink(sp);
	unlink(bpp);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_probe();
	test_seed_rule();
	test_refusal_lines();
	test_boot_params();
	rmdir(dir);
	return t_done();
}
