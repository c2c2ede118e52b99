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
#include "load.h"
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
