/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `rerand load`: stage an image through kexec-tools, from a sealed memfd.
 * Under lockdown it uses kexec_file_load and refuses an unsigned image
 * before kexec runs.  A fresh seed is written into the header in memory only
 * where nobody else adds a SETUP_RNG_SEED node and no signature covers the
 * header (the seed rule, lockdown.c), so it never touches a disk.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bootparams.h"
#include "cleanup.h"
#include "cli.h"
#include "cmdtab.h"
#include "image.h"
#include "kexec_run.h"
#include "lockdown.h"
#include "memmap_src.h"
#include "pesig.h"
#include "rng.h"
#include "select.h"
#include "uki.h"
#include "util.h"

#define MAX_IMAGE_FILE (512u << 20)
#define KEXEC_OUT_MAX  16384

static int fill_seed(uint8_t *seed)
{
	size_t got = 0;

	while (got < RERAND_SEED_SIZE) {
		ssize_t n = getrandom(seed + got, RERAND_SEED_SIZE - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		got += (size_t)n;
	}
	return 0;
}

/* Refuse a crash image that cannot fit the reserved region, with the size
 * it needs: the image's init_size, the kernel's in-memory size (2 MiB
 * aligned, plus 2 MiB of alignment slack), the initrd, and 1 MiB for
 * kexec-tools' purgatory, boot_params and ELF core header. */
static int check_crash_fit(const char *path, const struct rr_image *im, const char *initrd)
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

static int make_memfd(const uint8_t *buf, size_t len)
{
	_cleanup_close_ int fd = memfd_create("rerand-image", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	size_t done = 0;

	if (fd < 0)
		return -errno;
	while (done < len) {
		ssize_t n = write(fd, buf + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0)
		return -errno;
	return TAKE_FD(fd);
}

/* The state files, overridable for tests (documented as such in rerand(8)). */
static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);
	return v && *v ? v : dflt;
}

/* boot_params for the Secure Boot byte where efivarfs cannot say.  A caller
 * that substitutes the SecureBoot file (tests, rerandd's [Paths]) gets no
 * second opinion from this host's boot_params unless it names one too. */
static const char *boot_params_path(void)
{
	const char *v = getenv("RERAND_BOOT_PARAMS_FILE");

	if (v)
		return *v ? v : NULL;
	return getenv("RERAND_SECUREBOOT_FILE") ? NULL : RR_BOOT_PARAMS_PATH;
}

/* kexec-tools said kexec_load(2) failed with EPERM. */
static bool kexec_load_eperm(const char *out)
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
static int check_lockdown(const char *path, const struct rr_lockdown_state *ld, bool sb_bp,
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
static void report_failure(const char *path, const char *kexec, bool file_syscall, bool crash,
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

/* From the UKI at path: the command line into cmdline (if want_cmdline) and,
 * if want_initrd and it has one, .ucode + .initrd in a sealed memfd that
 * kexec inherits.  Returns the fd, -1 for no initrd, < -1 on an error
 * (reported). */
static int uki_parts(const char *path, bool want_initrd, bool want_cmdline, char *cmdline,
		     size_t size)
{
	struct rr_uki u;
	struct rr_err e;
	_cleanup_free_ uint8_t *buf = NULL, *ird = NULL;
	size_t len, ilen = 0;
	_cleanup_close_ int fd = -1;

	if (rr_read_file(path, MAX_IMAGE_FILE, &buf, &len, &e) < 0 ||
	    rr_uki_parse(buf, len, path, &u, &e) < 0 ||
	    (want_cmdline && rr_uki_cmdline(buf, len, &u, cmdline, size, path, &e) < 0) ||
	    (want_initrd && rr_uki_initrd(buf, len, &u, &ird, &ilen, path, &e) < 0)) {
		cli_err("%s", e.msg);
		return -2;
	}
	if (!ilen)
		return -1;
	fd = make_memfd(ird, ilen);
	if (fd < 0 || fcntl(fd, F_SETFD, 0) < 0) {
		cli_err("%s: cannot put the UKI's initrd in a memfd: %s", path,
			strerror(fd < 0 ? -fd : errno));
		return -2;
	}
	return TAKE_FD(fd);
}

/* --sha256: the bytes read, which are the bytes kexec gets, are the image
 * as it was built (its builder recorded the hash), not a copy with a bit
 * flipped on disk since: a flipped byte in a segment passes every
 * structural check and boots a broken kernel. */
static int check_sha256(const char *path, const uint8_t *buf, size_t len, const char *want,
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
static int check_cmdline(const char *path, const char *cmdline, const char *from)
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

static const struct cli_opt load_opts[] = {
	{ "initrd", 0, required_argument, "FILE", 'i', "the initrd to pass", "@file" },
	{ "append", 0, required_argument, "CMDLINE", 'a', "the next kernel's command line", NULL },
	{ "reuse-cmdline", 0, no_argument, NULL, 'R',
	  "pass this boot's command line (/proc/cmdline) instead", NULL },
	{ "crash", 0, no_argument, NULL, 'p',
	  "stage the crash kernel (kexec -p) into the crashkernel= region", NULL },
	{ "file-syscall", 0, no_argument, NULL, 's',
	  "use kexec_file_load (kexec -s); chosen by itself under lockdown", NULL },
	{ "kexec", 0, required_argument, "PATH", 'k', "the kexec binary (default: kexec in $PATH)",
	  "@file" },
	{ "uki", 0, required_argument, "FILE", 'U',
	  "take the initrd and command line from this unified kernel image", "@file" },
	{ "sha256", 0, required_argument, "HEX", 'S',
	  "refuse IMAGE unless its SHA-256 is HEX (64 lower-case hex digits)", NULL },
	{ "trust-cert", 0, required_argument, "CERTS", 't',
	  "refuse IMAGE unless its signer chains to one of these certificates (PEM, or one DER)",
	  "@file" },
	{ 0 }
};

const struct cli_cmd cli_load = {
	.name = "load", .synopsis = "IMAGE", .fn = cmd_load, .opts = load_opts,
	.summary = "Stage IMAGE with kexec-tools from a sealed memfd (kexec_file_load and signed\n"
		   "images only under lockdown).",
	.operand_complete = "@file",
};

/* What the command line asked for, and the UKI's parts standing in for it. */
struct load_req {
	const char *path, *initrd, *append, *kexec, *uki, *want_sha, *trust_cert;
	bool reuse, crash, file_syscall;
	char uki_initrd[64], uki_cmdline[4096];
};

/* -1 to go on, or the exit status (usage error, --help). */
static int load_parse(struct load_req *q, int argc, char **argv)
{
	int c;

	while ((c = cli_getopt(&cli_load, argc, argv)) != -1) {
		switch (c) {
		case 'i': q->initrd = optarg; break;
		case 'a': q->append = optarg; break;
		case 'R': q->reuse = true; break;
		case 'p': q->crash = true; break;
		case 's': q->file_syscall = true; break;
		case 'k': q->kexec = optarg; break;
		case 'U': q->uki = optarg; break;
		case 'S': q->want_sha = optarg; break;
		case 't': q->trust_cert = optarg; break;
		case CLI_HELP:
			return 0;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind == argc)
		return cli_usage_error(&cli_load, "the IMAGE to stage is missing");
	if (optind < argc - 1)
		return cli_usage_error(&cli_load, "one IMAGE only ('%s' is one too many)",
				       argv[optind + 1]);
	if (q->append && q->reuse)
		return cli_usage_error(&cli_load, "--append and --reuse-cmdline exclude each other");
	if (q->want_sha && (strlen(q->want_sha) != 64 ||
			    strspn(q->want_sha, "0123456789abcdef") != 64)) {
		cli_err("load: --sha256 %s: want 64 lower-case hex digits", q->want_sha);
		return EXIT_USAGE;
	}
	q->path = argv[optind];
	return -1;
}

/* The initrd and the command line the next kernel gets, checked: 0, or -1
 * (reported).  *uki_fd is the UKI's initrd in a memfd, or stays -1. */
static int load_inputs(struct load_req *q, int *uki_fd)
{
	struct rr_err e;

	/* kexec opens the initrd by path: a FIFO would hang it. */
	if (q->initrd && (rr_check_input_file(q->initrd, "initrd", NULL, &e) < 0 ||
			  (access(q->initrd, R_OK) < 0 &&
			   rr_errf(&e, errno, "%s: cannot read the initrd: %s", q->initrd,
				   strerror(errno)) < 0))) {
		cli_err("%s", e.msg);
		return -1;
	}
	/* A UKI's initrd and command line, unless given here. */
	if (q->uki) {
		bool want_cmdline = !q->append && !q->reuse;

		*uki_fd = uki_parts(q->uki, !q->initrd, want_cmdline, q->uki_cmdline,
				    sizeof(q->uki_cmdline));
		if (*uki_fd < -1)
			return -1;
		if (*uki_fd >= 0) {
			snprintf(q->uki_initrd, sizeof(q->uki_initrd), "/proc/self/fd/%d", *uki_fd);
			q->initrd = q->uki_initrd;
		}
		if (want_cmdline)
			q->append = q->uki_cmdline;
	}
	/* The command line the stage will parse (kexec-tools adds no memmap=). */
	if (q->append && check_cmdline(q->path, q->append, q->uki && q->append == q->uki_cmdline
				       ? q->uki : "--append") < 0)
		return -1;
	if (q->reuse) {
		const char *f = env_or("RERAND_CMDLINE_FILE", "/proc/cmdline");
		_cleanup_free_ char *text = NULL;

		if (rr_read_text(f, RR_CMDLINE_MAX + 1, &text, &e) < 0) {
			cli_err("%s (--reuse-cmdline); nothing was staged", e.msg);
			return -1;
		}
		if (check_cmdline(q->path, text, f) < 0)
			return -1;
	}
	return 0;
}

/* The image read, checked against lockdown and the crash region, its seed
 * filled where the seed rule allows, in a sealed memfd kexec inherits: the
 * fd, or -1 (reported).  The file's bytes are freed on return, before kexec
 * runs, and the seed is wiped from them first. */
static int load_image_fd(struct load_req *q, const struct rr_lockdown_state *ld, bool sb_bp,
			 struct rr_image *im, struct rr_pe_sig *sig)
{
	_cleanup_free_ uint8_t *buf = NULL, *trust = NULL;
	size_t trust_len = 0;
	_cleanup_close_ int fd = -1;
	struct rr_err e;
	size_t len;
	int r;

	if ((q->trust_cert && rr_read_file(q->trust_cert, 4u << 20, &trust, &trust_len, &e) < 0) ||
	    rr_read_file(q->path, MAX_IMAGE_FILE, &buf, &len, &e) < 0 ||
	    (q->want_sha && check_sha256(q->path, buf, len, q->want_sha, &e) < 0) ||
	    rr_image_parse(buf, len, q->path, im, &e) < 0 ||
	    rr_pe_sig_read_trust(buf, len, q->path, trust, trust_len, q->trust_cert, sig, &e) < 0) {
		cli_err("%s", e.msg);
		return -1;
	}
	if (q->trust_cert && !sig->trusted) {
		cli_err("%s: not signed by a key of %s: %s. Nothing was staged; any kernel staged "
			"before is unchanged", q->path, q->trust_cert,
			!sig->is_signed ? "it is not signed" :
			!sig->verified ? sig->why : sig->trust_why);
		return -1;
	}
	/* kexec_load is refused under lockdown: kexec_file_load by itself */
	if (ld->locked)
		q->file_syscall = true;
	if (check_lockdown(q->path, ld, sb_bp, sig) < 0 ||
	    (q->crash && check_crash_fit(q->path, im, q->initrd) < 0))
		return -1;
	if (q->append && (!strncmp(q->append, "nokaslr", 7) || strstr(q->append, " nokaslr")))
		cli_err("warning: nokaslr on the command line: the next boot will not be randomized");

	struct rr_seed_in si = { .file_syscall = q->file_syscall, .signed_image = sig->is_signed,
				 .crng_ready = kexec_crng_ready() };
	kexec_running_release(si.kernel);
	if (q->file_syscall)
		si.kexec_tools[0] = si.kexec_tools[1] = si.kexec_tools[2] = -1;
	else
		kexec_tools_version(q->kexec, si.kexec_tools);
	enum rr_seed_source src = rr_seed_source(&si);
	uint8_t *seed = buf + im->header_file_offset + offsetof(struct rerand_image_header, seed);
	if (src == RR_SEED_PATCH && (r = fill_seed(seed)) < 0) {
		cli_err("getrandom failed: %s", strerror(-r));
		return -1;
	}
	if (src == RR_SEED_NONE)
		cli_err("warning: %s is signed and staged unchanged, and this kernel adds no "
			"SETUP_RNG_SEED to a kexec_file_load (Linux >= 6.0 with a ready CRNG does): the "
			"stage draws from RDSEED, RDRAND and RDTSC only", q->path);
	fd = make_memfd(buf, len);
	rr_memzero_explicit(seed, RERAND_SEED_SIZE);
	if (fd < 0) {
		cli_err("cannot put the image in a memfd: %s", strerror(-fd));
		return -1;
	}
	/* The one fd kexec must inherit. */
	if (fcntl(fd, F_SETFD, 0) < 0) {
		cli_err("fcntl: %s", strerror(errno));
		return -1;
	}
	return TAKE_FD(fd);
}

/* kexec's argument vector in ARGS (room for 12), pointing into FDPATH,
 * INITRD_ARG and *APPEND_ARG (the caller's to free): the count, or -1. */
static int load_argv(const struct load_req *q, int fd, char *fdpath, size_t fdpath_size,
		     char *initrd_arg, size_t initrd_arg_size, char **append_arg, char **args)
{
	int n = 0;

	snprintf(fdpath, fdpath_size, "/proc/self/fd/%d", fd);
	args[n++] = (char *)q->kexec;
	if (q->file_syscall)
		args[n++] = "-s";
	args[n++] = q->crash ? "-p" : "-l";
	args[n++] = fdpath;
	if (q->initrd) {
		snprintf(initrd_arg, initrd_arg_size, "--initrd=%s", q->initrd);
		args[n++] = initrd_arg;
	}
	if (q->append) {
		if (asprintf(append_arg, "--append=%s", q->append) < 0) {
			*append_arg = NULL;
			return -1;
		}
		args[n++] = *append_arg;
	}
	if (q->reuse)
		args[n++] = "--reuse-cmdline";
	args[n] = NULL;
	return n;
}

/* Run kexec on the image in FD; its output goes to stderr as it came, and a
 * failure is explained.  The exit status. */
static int load_run(struct load_req *q, int fd, const struct rr_lockdown_state *ld,
		    const struct rr_pe_sig *sig)
{
	char fdpath[64], initrd_arg[4096 + 16], *args[12];
	_cleanup_free_ char *append_arg = NULL, *out = NULL;
	int n, r;

	n = load_argv(q, fd, fdpath, sizeof(fdpath), initrd_arg, sizeof(initrd_arg), &append_arg,
		      args);
	if (n < 0)
		return EXIT_FAILURE_RR;
	out = malloc(KEXEC_OUT_MAX);
	if (!out) {
		cli_err("out of memory");
		return EXIT_FAILURE_RR;
	}
	r = kexec_run_capture(q->kexec, args, STDERR_FILENO, out, KEXEC_OUT_MAX);
	if (r != 0 && !q->file_syscall && q->crash && strstr(out, "/proc/kcore") &&
	    kexec_have_cap_sys_boot() && !kexec_disabled()) {
		/* kexec_load's crash kernel needs an ELF core header that
		 * kexec-tools builds from /proc/kcore, which needs
		 * CAP_SYS_RAWIO and which rerandd.service hides
		 * (ProtectKernelTunables=): kexec_file_load has the kernel
		 * build it.  kexec-tools stopped before the system call, so
		 * the crash kernel loaded before is still there. */
		char *args2[13];
		fputs(out, stderr);
		cli_err("%s: kexec-tools cannot read /proc/kcore for kexec_load's crash header; "
			"retrying with kexec_file_load (kexec -s -p), whose header the kernel builds",
			q->path);
		args2[0] = args[0];
		args2[1] = "-s";
		memcpy(args2 + 2, args + 1, sizeof(char *) * (size_t)n);
		q->file_syscall = true;
		r = kexec_run_capture(q->kexec, args2, STDERR_FILENO, out, KEXEC_OUT_MAX);
	} else if (r != 0 && !q->file_syscall && ld->lockdown == RR_LD_ABSENT && kexec_load_eperm(out) &&
	    kexec_have_cap_sys_boot() && !kexec_disabled()) {
		/* No securityfs to say whether the kernel is locked down, and
		 * kexec_load refused with what lockdown refuses with: try the
		 * call a locked-down kernel accepts (as newer kexec-tools do).
		 * A refused kexec_load changed nothing, crash kernel included. */
		char *args2[13];
		fputs(out, stderr);
		cli_err("%s: kexec_load was refused (%s) and the lockdown state is unknown (%s is "
			"missing: no securityfs); retrying with kexec_file_load (kexec -s), which a "
			"locked-down kernel accepts for a signed image", q->path, strerror(EPERM),
			env_or("RERAND_LOCKDOWN_FILE", RR_LOCKDOWN_PATH));
		args2[0] = args[0];
		args2[1] = "-s";
		memcpy(args2 + 2, args + 1, sizeof(char *) * (size_t)n);
		q->file_syscall = true;
		r = kexec_run_capture(q->kexec, args2, STDERR_FILENO, out, KEXEC_OUT_MAX);
	}
	fputs(out, stderr);              /* kexec's own words, as they came */
	if (*out && out[strlen(out) - 1] != '\n')
		fputc('\n', stderr);
	if (r != 0)
		report_failure(q->path, q->kexec, q->file_syscall, q->crash, r, out, ld, sig);
	return r == 0 ? 0 : EXIT_FAILURE_RR;
}

int cmd_load(int argc, char **argv)
{
	struct load_req q = { .kexec = "kexec" };
	_cleanup_close_ int uki_fd = -1, fd = -1;
	struct rr_lockdown_state ld;
	struct rr_pe_sig sig;
	struct rr_image im;
	struct rr_err e;
	bool sb_bp = false;
	int r;

	r = load_parse(&q, argc, argv);
	if (r >= 0)
		return r;
	if (load_inputs(&q, &uki_fd) < 0)
		return EXIT_FAILURE_RR;
	if (rr_lockdown_probe_bp(env_or("RERAND_LOCKDOWN_FILE", RR_LOCKDOWN_PATH),
				 env_or("RERAND_SECUREBOOT_FILE", RR_SECUREBOOT_PATH),
				 boot_params_path(), &ld, &sb_bp, &e) < 0) {
		cli_err("%s; cannot tell whether the kernel is locked down, so nothing was staged", e.msg);
		return EXIT_FAILURE_RR;
	}
	fd = load_image_fd(&q, &ld, sb_bp, &im, &sig);
	if (fd < 0)
		return EXIT_FAILURE_RR;
	return load_run(&q, fd, &ld, &sig);
}
