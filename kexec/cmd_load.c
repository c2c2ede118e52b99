/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `rerand load`: stage an image through kexec-tools.  The image goes to
 * kexec in a sealed memfd with a fresh 256-bit seed from getrandom() written
 * into its header, so the seed never touches a disk.
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

#include "cli.h"
#include "image.h"
#include "rng.h"
#include "uki.h"
#include "util.h"

#define MAX_IMAGE_FILE (512u << 20)

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
	struct stat st;
	FILE *fp;

	if (!f)
		f = "/sys/kernel/kexec_crash_size";
	fp = fopen(f, "re");
	if (!fp || fscanf(fp, "%llu", &have) != 1) {
		cli_err("%s: cannot read the crash region size", f);
		if (fp)
			fclose(fp);
		return -1;
	}
	fclose(fp);
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
	int fd = memfd_create("rerand-image", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	size_t done = 0;

	if (fd < 0)
		return -errno;
	while (done < len) {
		ssize_t n = write(fd, buf + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int r = -errno;
			close(fd);
			return r;
		}
		done += (size_t)n;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

static int run_kexec(const char *kexec, char **args)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (strchr(kexec, '/'))
			execv(kexec, args);
		else
			execvp(kexec, args);
		fprintf(stderr, "rerand: cannot run %s: %s\n", kexec, strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
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
	uint8_t *buf, *ird = NULL;
	size_t len, ilen = 0;
	int fd = -1;

	if (rr_read_file(path, MAX_IMAGE_FILE, &buf, &len, &e) < 0 ||
	    rr_uki_parse(buf, len, path, &u, &e) < 0 ||
	    (want_cmdline && rr_uki_cmdline(buf, len, &u, cmdline, size, path, &e) < 0) ||
	    (want_initrd && rr_uki_initrd(buf, len, &u, &ird, &ilen, path, &e) < 0)) {
		cli_err("%s", e.msg);
		free(buf);
		return -2;
	}
	free(buf);
	if (ilen) {
		fd = make_memfd(ird, ilen);
		if (fd < 0 || fcntl(fd, F_SETFD, 0) < 0) {
			cli_err("%s: cannot put the UKI's initrd in a memfd: %s", path,
				strerror(fd < 0 ? -fd : errno));
			fd = -2;
		}
	}
	free(ird);
	return fd;
}

int cmd_load(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "initrd", required_argument, NULL, 'i' },
		{ "append", required_argument, NULL, 'a' },
		{ "reuse-cmdline", no_argument, NULL, 'R' },
		{ "crash", no_argument, NULL, 'p' },
		{ "file-syscall", no_argument, NULL, 's' },
		{ "kexec", required_argument, NULL, 'k' },
		{ "uki", required_argument, NULL, 'U' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *initrd = NULL, *append = NULL, *kexec = "kexec", *uki = NULL;
	char uki_initrd[64], uki_cmdline[4096];
	int uki_fd = -1;
	bool reuse = false, crash = false, file_syscall = false;
	struct rr_image im;
	struct rr_err e;
	uint8_t *buf;
	size_t len;
	int c, r, fd;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'i': initrd = optarg; break;
		case 'a': append = optarg; break;
		case 'R': reuse = true; break;
		case 'p': crash = true; break;
		case 's': file_syscall = true; break;
		case 'k': kexec = optarg; break;
		case 'U': uki = optarg; break;
		case 'h':
			puts("Usage: rerand load IMAGE [--initrd FILE] [--append S | --reuse-cmdline] "
			     "[--crash] [--file-syscall] [--kexec PATH] [--uki FILE]");
			return 0;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		cli_err("load: usage: rerand load IMAGE [--initrd FILE] [--append S | --reuse-cmdline] "
			"[--crash] [--file-syscall]");
		return EXIT_USAGE;
	}
	if (append && reuse) {
		cli_err("load: --append and --reuse-cmdline exclude each other");
		return EXIT_USAGE;
	}
	const char *path = argv[optind];
	if (initrd && access(initrd, R_OK) < 0) {
		cli_err("%s: cannot read the initrd: %s", initrd, strerror(errno));
		return EXIT_FAILURE_RR;
	}
	/* A UKI's initrd and command line, unless given here. */
	if (uki) {
		uki_fd = uki_parts(uki, !initrd, !append && !reuse, uki_cmdline, sizeof(uki_cmdline));
		if (uki_fd < -1)
			return EXIT_FAILURE_RR;
		if (uki_fd >= 0) {
			snprintf(uki_initrd, sizeof(uki_initrd), "/proc/self/fd/%d", uki_fd);
			initrd = uki_initrd;
		}
		if (!append && !reuse)
			append = uki_cmdline;
	}
	if (rr_read_file(path, MAX_IMAGE_FILE, &buf, &len, &e) < 0 ||
	    rr_image_parse(buf, len, path, &im, &e) < 0) {
		cli_err("%s", e.msg);
		return EXIT_FAILURE_RR;
	}
	if (crash && check_crash_fit(path, &im, initrd) < 0) {
		free(buf);
		return EXIT_FAILURE_RR;
	}
	if (append && (!strncmp(append, "nokaslr", 7) || strstr(append, " nokaslr")))
		cli_err("warning: nokaslr on the command line: the next boot will not be randomized");

	uint8_t *seed = buf + im.header_file_offset + offsetof(struct rerand_image_header, seed);
	r = fill_seed(seed);
	if (r < 0) {
		cli_err("getrandom failed: %s", strerror(-r));
		free(buf);
		return EXIT_FAILURE_RR;
	}
	fd = make_memfd(buf, len);
	rr_memzero_explicit(seed, RERAND_SEED_SIZE);
	free(buf);
	if (fd < 0) {
		cli_err("cannot put the image in a memfd: %s", strerror(-fd));
		return EXIT_FAILURE_RR;
	}
	/* The one fd kexec must inherit. */
	if (fcntl(fd, F_SETFD, 0) < 0) {
		cli_err("fcntl: %s", strerror(errno));
		close(fd);
		return EXIT_FAILURE_RR;
	}

	char fdpath[64], initrd_arg[4096 + 16], *args[12];
	int n = 0;
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	args[n++] = (char *)kexec;
	if (file_syscall)
		args[n++] = "-s";
	args[n++] = crash ? "-p" : "-l";
	args[n++] = fdpath;
	if (initrd) {
		snprintf(initrd_arg, sizeof(initrd_arg), "--initrd=%s", initrd);
		args[n++] = initrd_arg;
	}
	char *append_arg = NULL;
	if (append) {
		if (asprintf(&append_arg, "--append=%s", append) < 0) {
			close(fd);
			return EXIT_FAILURE_RR;
		}
		args[n++] = append_arg;
	}
	if (reuse)
		args[n++] = "--reuse-cmdline";
	args[n] = NULL;

	r = run_kexec(kexec, args);
	close(fd);
	if (uki_fd >= 0)
		close(uki_fd);
	free(append_arg);
	if (r != 0) {
		/* kexec_load replaces a normal image only on success, but the
		 * kernel drops the old crash image before loading a new one. */
		cli_err("%s: %s %s%s failed (%s %d); %s", path, kexec, file_syscall ? "-s " : "",
			crash ? "-p" : "-l", r < 0 ? "error" : "exit status", r < 0 ? -r : r,
			crash ? "check /sys/kernel/kexec_crash_loaded: the previous crash kernel may be gone"
			      : "any kernel staged before is unchanged");
		return EXIT_FAILURE_RR;
	}
	return 0;
}
