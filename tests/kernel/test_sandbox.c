/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The image builder's seccomp filter (daemon/sandbox.c), loaded for real in
 * forked children of this test (the kernel's seccomp, nothing mocked):
 * /proc shows filter mode; the real build/rerand image, exec'd under it as
 * rerandd execs it (kernel on fd 3, output on fd 4), writes the same image
 * as without it; threads and a fork still work; the dangerous calls kill
 * the process with SIGSYS, an i386 (int $0x80) or x32 call too; a call off
 * the list fails with ENOSYS.  The calls that must be killed are made with
 * arguments the kernel refuses anyway (bad reboot magic, fd -1), so that
 * a filter that failed to stop them still changes nothing on this machine.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/reboot.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"
#include "sandbox.h"

#define RERAND T_TOP "/build/rerand"
#define X32_SYSCALL_BIT 0x40000000L

/* "Seccomp:" or "Seccomp_filters:" of /proc/self/status, -1 if absent. */
static int status_field(const char *name)
{
	char line[256];
	size_t n = strlen(name);
	int v = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, n) && line[n] == ':')
			v = atoi(line + n + 1);
	fclose(f);
	return v;
}

/* Fork; the child sets no_new_privs (as caps_child_builder does), loads
 * the filter when `sandbox`, and exits with fn()'s value.  Returns the
 * wait status; exit 100 is "the filter did not load". */
static int in_child(bool sandbox, int (*fn)(void *), void *arg)
{
	int st = -1;
	pid_t pid = fork();

	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			_exit(100);
		if (sandbox) {
			int r = sandbox_builder();
			if (r < 0) {
				fprintf(stderr, "sandbox_builder: %s\n", strerror(-r));
				_exit(100);
			}
		}
		_exit(fn(arg));
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return st;
}

static bool killed_by_sigsys(int st)
{
	return st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS;
}

static int exited(int st)
{
	return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *describe(int st, char *buf, size_t n)
{
	if (st == -1)
		snprintf(buf, n, "fork/wait failed");
	else if (WIFSIGNALED(st))
		snprintf(buf, n, "signal %d", WTERMSIG(st));
	else
		snprintf(buf, n, "exit %d", WEXITSTATUS(st));
	return buf;
}

/* ---- (a) what /proc shows ------------------------------------------------- */

static int parent_filters;

static int fn_status(void *arg)
{
	int mode = status_field("Seccomp"), filters = status_field("Seccomp_filters");

	if (mode != 2)
		return 1;
	/* one filter more than the test had (the kernel has the field since 5.9) */
	if (filters >= 0 && filters != parent_filters + 1)
		return 2;
	return 0;
}

/* ---- (b) the real builder under it --------------------------------------------- */

struct build {
	const char *kernel, *out, *err;
	const char *codec, *threads;
};

/* As rerandd runs it: fd 3 the kernel, fd 4 the output, then exec. */
static int fn_build(void *arg)
{
	const struct build *b = arg;
	char *argv[] = { RERAND, "image", (char *)b->kernel, "--kernel-fd", "3", "-o", (char *)b->out,
			 "--output-fd", "4", "--codec", (char *)b->codec, "--threads", (char *)b->threads, NULL };
	int k = open(b->kernel, O_RDONLY), o = open(b->out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int e = open(b->err, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (k < 0 || o < 0 || e < 0 || dup2(k, 3) < 0 || dup2(o, 4) < 0 || dup2(e, 2) < 0)
		return 101;
	execv(argv[0], argv);
	return 127;
}

static bool files_equal(const char *a, const char *b)
{
	FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
	bool same = fa && fb;
	int ca, cb;

	while (same) {
		ca = getc(fa);
		cb = getc(fb);
		same = ca == cb;
		if (ca == EOF || cb == EOF)
			break;
	}
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return same;
}

static void show_file(const char *path)
{
	char line[512];
	FILE *f = fopen(path, "r");

	while (f && fgets(line, sizeof(line), f))
		printf("#   %s", line);
	if (f)
		fclose(f);
}

static void one_build(const char *dir, const char *name, const char *codec, const char *threads,
		      const char *tmp)
{
	char kernel[1024], ref[1024], out[1024], err[1024], cmd[4096], buf[64];
	struct build b = { kernel, ref, err, codec, threads };
	int st;

	snprintf(kernel, sizeof(kernel), "%s/%s", dir, name);
	snprintf(ref, sizeof(ref), "%s/ref.img", tmp);
	snprintf(out, sizeof(out), "%s/sandboxed.img", tmp);
	snprintf(err, sizeof(err), "%s/stderr", tmp);
	st = in_child(false, fn_build, &b);
	if (exited(st) != 0) {
		T_OK(0, "%s --codec %s: the reference build without the filter (%s)", name, codec,
		     describe(st, buf, sizeof(buf)));
		show_file(err);
		return;
	}
	b.out = out;
	st = in_child(true, fn_build, &b);
	T_OK(exited(st) == 0, "%s --codec %s --threads %s: rerand image under the filter exits 0 (%s)",
	     name, codec, threads, describe(st, buf, sizeof(buf)));
	if (exited(st) != 0)
		show_file(err);
	T_OK(files_equal(ref, out), "%s --codec %s: the image is the one built without the filter", name, codec);
	snprintf(cmd, sizeof(cmd), "'%s' inspect '%s' >/dev/null 2>&1", RERAND, out);
	T_OK(system(cmd) == 0, "%s --codec %s: rerand inspect reads the image", name, codec);
	unlink(ref);
	unlink(out);
}

/* ---- (c) killed ------------------------------------------------------------- */

/* Each with arguments the kernel refuses anyway, should the filter let one
 * through: it returns an error and the child exits 0, which fails the check.
 * (Not run without the filter on purpose: this test runs as root.) */
static int fn_kexec_file_load(void *arg)
{
	return syscall(SYS_kexec_file_load, -1, -1, 0UL, "", 0UL) < 0 ? 0 : 3;
}

static int fn_kexec_load(void *arg)
{
	/* flags of another architecture: EINVAL before anything is read */
	return syscall(SYS_kexec_load, 0UL, 0UL, NULL, 0xffff0000UL) < 0 ? 0 : 3;
}

static int fn_reboot(void *arg)
{
	/* magic numbers wrong: EINVAL (or EPERM) before any action */
	return syscall(SYS_reboot, 0, 0, LINUX_REBOOT_CMD_CAD_ON, NULL) < 0 ? 0 : 3;
}

static int fn_ptrace(void *arg)
{
	return syscall(SYS_ptrace, -1L, -1L, 0L, 0L) < 0 ? 0 : 3;
}

static int fn_bpf(void *arg)
{
	return syscall(SYS_bpf, -1, NULL, 0) < 0 ? 0 : 3;
}

static int fn_unshare(void *arg)
{
	return syscall(SYS_unshare, -1L) < 0 ? 0 : 3;
}

static int fn_io_uring(void *arg)
{
	return syscall(SYS_io_uring_setup, 0, NULL) < 0 ? 0 : 3;
}

static int fn_init_module(void *arg)
{
	return syscall(SYS_finit_module, -1, "", 0) < 0 ? 0 : 3;
}

/* getpid as i386 (int $0x80, number 20): the pid, or -ENOSYS and the like
 * on a kernel without ia32 emulation. */
static long int80_getpid(void)
{
	long r = 20;

	__asm__ volatile("int $0x80" : "+a"(r) : : "memory", "r8", "r9", "r10", "r11");
	return r;
}

static int fn_int80(void *arg)
{
	return int80_getpid() == getpid() ? 0 : 4;
}

/* getpid as x32 (number 39 with __X32_SYSCALL_BIT): ENOSYS on a kernel
 * that disables x32, which Debian's do by default. */
static int fn_x32(void *arg)
{
	long r = syscall(X32_SYSCALL_BIT | SYS_getpid);
	return r == getpid() || (r < 0 && errno == ENOSYS) ? 0 : 4;
}

/* ---- (d) refused, and what must still work ----------------------------------- */

static int fn_getpriority(void *arg)
{
	errno = 0;
	long r = syscall(SYS_getpriority, PRIO_PROCESS, 0);
	return r == -1 && errno == ENOSYS ? 0 : 1;
}

static int fn_clone3(void *arg)
{
	errno = 0;
	return syscall(SYS_clone3, NULL, 0UL) == -1 && errno == ENOSYS ? 0 : 1;
}

static int fn_clone_userns(void *arg)
{
	errno = 0;
	long r = syscall(SYS_clone, (long)(CLONE_NEWUSER | SIGCHLD), 0L, 0L, 0L, 0L);

	if (r == 0)
		_exit(0);          /* no filter: the new child leaves at once */
	if (r > 0) {
		waitpid(r, NULL, 0);
		return 1;
	}
	return errno == ENOSYS ? 0 : 2;
}

static int fn_tiocsti(void *arg)
{
	char c = 'x';
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	errno = 0;
	/* not a terminal (ENOTTY without the filter): nothing is injected */
	return fd >= 0 && ioctl(fd, TIOCSTI, &c) == -1 && errno == ENOSYS ? 0 : 1;
}

static int fn_kill_other(void *arg)
{
	errno = 0;
	/* signal 0 to the test: only checks, but the filter refuses it first */
	return kill(getppid(), 0) == -1 && errno == ENOSYS && kill(getpid(), 0) == 0 ? 0 : 1;
}

static int fn_fcntl_setown(void *arg)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	errno = 0;
	/* F_SETOWN with O_ASYNC would have the kernel signal the owner: refused,
	 * while the descriptor's own commands still work */
	return fd >= 0 && fcntl(fd, F_SETOWN, getppid()) == -1 && errno == ENOSYS &&
	       fcntl(fd, F_SETSIG, SIGKILL) == -1 && errno == ENOSYS &&
	       fcntl(fd, F_GETFD) == FD_CLOEXEC && fcntl(fd, F_GETFL) >= 0 ? 0 : 1;
}

static void *thread_fn(void *arg)
{
	return arg;
}

static int fn_thread_and_fork(void *arg)
{
	static int token;
	pthread_t t;
	void *ret = NULL;
	int st = -1;
	pid_t pid;

	if (pthread_create(&t, NULL, thread_fn, &token) != 0 || pthread_join(t, &ret) != 0 ||
	    ret != &token)
		return 1;
	pid = fork();
	if (pid == 0)
		_exit(7);
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 7)
		return 2;
	return 0;
}

struct call {
	const char *what;
	int (*fn)(void *);
};

int main(void)
{
	static const struct call kills[] = {
		{ "kexec_file_load", fn_kexec_file_load }, { "kexec_load", fn_kexec_load },
		{ "reboot", fn_reboot }, { "ptrace", fn_ptrace }, { "bpf", fn_bpf },
		{ "unshare", fn_unshare }, { "io_uring_setup", fn_io_uring },
		{ "finit_module", fn_init_module },
	};
	static const struct call refused[] = {
		{ "getpriority (not on the list)", fn_getpriority },
		{ "clone3 (glibc falls back to clone)", fn_clone3 },
		{ "clone with CLONE_NEWUSER", fn_clone_userns },
		{ "ioctl TIOCSTI", fn_tiocsti },
		{ "kill of another process", fn_kill_other },
		{ "fcntl F_SETOWN and F_SETSIG", fn_fcntl_setown },
	};
	const char *dir = t_kernels_dir();
	char buf[64], tmp[] = "/tmp/rerand-sandbox.XXXXXX";
	int st;

	parent_filters = status_field("Seccomp_filters");
	st = in_child(true, fn_status, NULL);
	T_OK(exited(st) == 0, "under the filter /proc/self/status shows Seccomp: 2 and one filter more (%s)",
	     describe(st, buf, sizeof(buf)));

	for (size_t i = 0; i < sizeof(kills) / sizeof(kills[0]); i++) {
		st = in_child(true, kills[i].fn, NULL);
		T_OK(killed_by_sigsys(st), "%s under the filter: the process is killed by SIGSYS (%s)",
		     kills[i].what, describe(st, buf, sizeof(buf)));
	}
	st = in_child(false, fn_int80, NULL);
	if (exited(st) == 0) {
		st = in_child(true, fn_int80, NULL);
		T_OK(killed_by_sigsys(st), "an i386 call (int $0x80 getpid) is killed by SIGSYS (%s)",
		     describe(st, buf, sizeof(buf)));
	} else {
		printf("ok %d # SKIP this kernel runs no i386 call (%s)\n", ++t_run,
		       describe(st, buf, sizeof(buf)));
	}
	st = in_child(true, fn_x32, NULL);
	T_OK(killed_by_sigsys(st), "an x32 call (__X32_SYSCALL_BIT | getpid) is killed by SIGSYS (%s)",
	     describe(st, buf, sizeof(buf)));

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		st = in_child(false, refused[i].fn, NULL);
		T_OK(exited(st) != 0, "%s without the filter: not ENOSYS (%s)", refused[i].what,
		     describe(st, buf, sizeof(buf)));
		st = in_child(true, refused[i].fn, NULL);
		T_OK(exited(st) == 0, "%s under the filter: ENOSYS (%s)", refused[i].what,
		     describe(st, buf, sizeof(buf)));
	}
	st = in_child(true, fn_thread_and_fork, NULL);
	T_OK(exited(st) == 0, "under the filter a thread and a fork still work (%s)",
	     describe(st, buf, sizeof(buf)));

	if (!dir) {
		T_OK(1, "# SKIP RERAND_KERNELS not set: the builder runs need the shared kernels");
		return t_done();
	}
	if (!mkdtemp(tmp)) {
		T_OK(0, "mkdtemp %s: %s", tmp, strerror(errno));
		return t_done();
	}
	/* bookworm's and trixie's kernels (others in long mode), with LZ4 on
	 * two threads and stored as is */
	static const struct { const char *name, *glob; bool long_only; } ks[] = {
		{ "vmlinuz-6.1.0-57-cloud-amd64", "vmlinuz-6.1.0-*-cloud-amd64", false },
		{ "vmlinuz-6.16.12+deb13-cloud-amd64", "vmlinuz-{6.1[5-9],[7-9]}.*-cloud-amd64", false },
		{ "vmlinuz-6.1.0-57-amd64", "vmlinuz-6.1.0-*-amd64", true },
		{ "vmlinuz-6.12.118+deb12-cloud-amd64", "vmlinuz-6.12.*-cloud-amd64", true },
	};
	bool lng = getenv("RERAND_MODE") && !strcmp(getenv("RERAND_MODE"), "long");
	for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
		char name[256];
		if (ks[i].long_only && !lng)
			continue;
		if (t_kernel_pick(ks[i].name, ks[i].glob, i == 2 ? "cloud" : NULL, name, sizeof(name)) < 0) {
			T_OK(0, "no kernel like %s in %s", ks[i].name, dir);
			continue;
		}
		one_build(dir, name, "lz4", "2", tmp);
		if (i == 0)
			one_build(dir, name, "none", "1", tmp);
	}
	snprintf(buf, sizeof(buf), "%s/stderr", tmp);
	unlink(buf);
	rmdir(tmp);
	return t_done();
}
