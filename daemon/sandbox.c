/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The image builder's seccomp filter, with libseccomp.  The builder parses
 * untrusted kernel files (six decompressors, libelf, the PE reader); if one
 * of them is subverted, what it can ask of the kernel is this list, not the
 * unit's filter (which allows kexec_load for rerandd itself).
 *
 * An allow-list.  What is not listed fails with ENOSYS, the answer of a
 * kernel without the call, so that glibc's fallbacks work (clone3 -> clone,
 * statx -> fstatat, faccessat2 -> faccessat) on bookworm's 2.36 and trixie's
 * 2.41 alike, and a call some future glibc adds degrades instead of
 * killing every build.  The calls nothing in the builder has a use for and
 * that give a kernel exploit or the machine's control to whoever makes them
 * kill the whole process instead, so that an attempt is loud (SIGSYS, exit
 * status 159 in rerandd's log), not a quiet error a payload could probe.
 *
 * The list comes from `strace -f` of `rerand image --kernel-fd 3
 * --output-fd 4` on Debian's 6.1, 6.1 cloud, 6.12 and 6.16 kernels with
 * --codec none and lz4 (1 and 2 threads, levels 0 and 12), of failing
 * builds (not a kernel, truncated, /dev/null), and of a bash RerandBinary=
 * wrapper (tests/daemon/test-builder-daemon.sh: bash, grep, sed, tr, ls,
 * readlink, setsid, sleep), plus what glibc 2.36 to 2.41 may call instead.
 *
 * x86_64 only: libseccomp's filter checks the architecture word first and
 * kills on any other (an i386 `int $0x80` call), and on x86_64 also kills a
 * call with the x32 bit set (__X32_SYSCALL_BIT).
 */
#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "sandbox.h"
#include "util.h"

/* Numbers libseccomp 2.5.4 (bookworm) may not know by name. */
#define NR_MAP_SHADOW_STACK 453   /* glibc 2.39+ threads with CET shadow stacks */
#define NR_MSEAL 462              /* glibc may seal its own mappings */

static const int allowed[] = {
	/* memory (malloc, the loader, the LZ4 threads' buffers) */
	SCMP_SYS(brk), SCMP_SYS(mmap), SCMP_SYS(munmap), SCMP_SYS(mprotect),
	SCMP_SYS(mremap), SCMP_SYS(madvise),
	/* files: reading the kernel on fd 3, writing fd 4, the libraries,
	 * openssl.cnf, /proc/self for a wrapper */
	SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(readv), SCMP_SYS(writev),
	SCMP_SYS(pread64), SCMP_SYS(pwrite64), SCMP_SYS(lseek), SCMP_SYS(close),
	SCMP_SYS(open), SCMP_SYS(openat), SCMP_SYS(newfstatat), SCMP_SYS(fstat),
	SCMP_SYS(stat), SCMP_SYS(lstat), SCMP_SYS(statx), SCMP_SYS(statfs),
	SCMP_SYS(fstatfs), SCMP_SYS(access), SCMP_SYS(faccessat),
	SCMP_SYS(faccessat2), SCMP_SYS(readlink), SCMP_SYS(readlinkat),
	SCMP_SYS(getdents64), SCMP_SYS(getcwd), SCMP_SYS(dup),
	SCMP_SYS(dup2), SCMP_SYS(dup3), SCMP_SYS(pipe), SCMP_SYS(pipe2),
	SCMP_SYS(fsync), SCMP_SYS(fdatasync), SCMP_SYS(ftruncate),
	SCMP_SYS(fadvise64), SCMP_SYS(poll), SCMP_SYS(ppoll),
	/* the program itself, and a wrapper's children (clone: see below) */
	SCMP_SYS(execve), SCMP_SYS(vfork), SCMP_SYS(wait4), SCMP_SYS(waitid),
	SCMP_SYS(exit), SCMP_SYS(exit_group), SCMP_SYS(setsid), SCMP_SYS(setpgid),
	/* threads and glibc's start-up */
	SCMP_SYS(arch_prctl), SCMP_SYS(set_tid_address), SCMP_SYS(set_robust_list),
	SCMP_SYS(rseq), SCMP_SYS(futex), SCMP_SYS(sched_getaffinity),
	SCMP_SYS(sched_yield), SCMP_SYS(getrandom), SCMP_SYS(restart_syscall),
	NR_MAP_SHADOW_STACK, NR_MSEAL,
	/* signals */
	SCMP_SYS(rt_sigaction), SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigreturn),
	SCMP_SYS(rt_sigsuspend), SCMP_SYS(sigaltstack),
	/* who and where am I, what time is it */
	SCMP_SYS(getpid), SCMP_SYS(gettid), SCMP_SYS(getppid), SCMP_SYS(getpgrp),
	SCMP_SYS(getpgid), SCMP_SYS(getsid), SCMP_SYS(getuid), SCMP_SYS(geteuid),
	SCMP_SYS(getgid), SCMP_SYS(getegid), SCMP_SYS(getresuid),
	SCMP_SYS(getresgid), SCMP_SYS(getgroups), SCMP_SYS(uname), SCMP_SYS(sysinfo),
	SCMP_SYS(getrusage), SCMP_SYS(times), SCMP_SYS(getrlimit),
	SCMP_SYS(clock_gettime), SCMP_SYS(clock_getres), SCMP_SYS(gettimeofday),
	SCMP_SYS(time), SCMP_SYS(nanosleep), SCMP_SYS(clock_nanosleep),
};

/* No use in the builder, and each is a way to the machine or to a kernel
 * attack surface that an unprivileged user otherwise keeps. */
static const int killed[] = {
	SCMP_SYS(kexec_load), SCMP_SYS(kexec_file_load), SCMP_SYS(reboot),
	SCMP_SYS(init_module), SCMP_SYS(finit_module), SCMP_SYS(delete_module),
	SCMP_SYS(ptrace), SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev),
	SCMP_SYS(pidfd_getfd), SCMP_SYS(kcmp), SCMP_SYS(bpf),
	SCMP_SYS(perf_event_open), SCMP_SYS(userfaultfd),
	SCMP_SYS(io_uring_setup), SCMP_SYS(io_uring_enter), SCMP_SYS(io_uring_register),
	SCMP_SYS(mount), SCMP_SYS(umount2), SCMP_SYS(pivot_root), SCMP_SYS(chroot),
	SCMP_SYS(fsopen), SCMP_SYS(fsconfig), SCMP_SYS(fsmount), SCMP_SYS(fspick),
	SCMP_SYS(move_mount), SCMP_SYS(open_tree), SCMP_SYS(mount_setattr),
	SCMP_SYS(setns), SCMP_SYS(unshare), SCMP_SYS(open_by_handle_at),
	SCMP_SYS(name_to_handle_at), SCMP_SYS(keyctl), SCMP_SYS(add_key),
	SCMP_SYS(request_key), SCMP_SYS(swapon), SCMP_SYS(swapoff), SCMP_SYS(acct),
	SCMP_SYS(quotactl), SCMP_SYS(syslog), SCMP_SYS(iopl), SCMP_SYS(ioperm),
	SCMP_SYS(settimeofday), SCMP_SYS(clock_settime), SCMP_SYS(clock_adjtime),
	SCMP_SYS(adjtimex), SCMP_SYS(sethostname), SCMP_SYS(setdomainname),
	SCMP_SYS(vhangup), SCMP_SYS(fanotify_init), SCMP_SYS(lookup_dcookie),
};

/* fcntl on the descriptor itself: not F_SETOWN, F_SETOWN_EX or F_SETSIG,
 * with which O_ASYNC has the kernel signal any process of ImageUser= (the
 * reaper included), nor leases or directory notification. */
static const unsigned long fcntl_cmds[] = {
	F_DUPFD, F_DUPFD_CLOEXEC, F_GETFD, F_SETFD, F_GETFL, F_SETFL,
	F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW,
	F_GETPIPE_SZ, F_ADD_SEALS, F_GET_SEALS,
};

/* Terminal queries isatty() and a shell make; not TIOCSTI or any setter. */
static const unsigned long ioctl_reqs[] = { TCGETS, TIOCGWINSZ, TIOCGPGRP };

/* A thread or a plain child, never a new namespace: Debian lets unprivileged
 * users create user namespaces, a large kernel attack surface.  clone3's
 * flags are in memory, where a filter cannot look, so clone3 gets ENOSYS
 * and glibc falls back to clone, whose flags are an argument. */
#define NS_FLAGS (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | \
		  CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET)

static int add_rules(scmp_filter_ctx ctx, int sock)
{
	scmp_datum_t self = (scmp_datum_t)getpid();
	int r;

	for (size_t i = 0; i < ARRAY_SIZE(allowed); i++)
		if ((r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0)) < 0)
			return r;
	for (size_t i = 0; i < ARRAY_SIZE(killed); i++)
		if ((r = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, killed[i], 0)) < 0)
			return r;
	/* the kernel reads ioctl's request as an unsigned int */
	for (size_t i = 0; i < ARRAY_SIZE(ioctl_reqs); i++)
		if ((r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
					  SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, ioctl_reqs[i]))) < 0)
			return r;
	for (size_t i = 0; i < ARRAY_SIZE(fcntl_cmds); i++)
		if ((r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(fcntl), 1,
					  SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, fcntl_cmds[i]))) < 0)
			return r;
	/* clone3 is left to the default (libseccomp refuses a rule that
	 * repeats the default action) */
	if ((r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
				  SCMP_A0(SCMP_CMP_MASKED_EQ, NS_FLAGS, 0))) < 0)
		return r;
	/* Signals and limits for itself only (abort() is tgkill(getpid(), ...);
	 * getrlimit() is prlimit64(0, ...)), not for the other processes of
	 * ImageUser=, which may be another service's "nobody". */
	if ((r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
				  SCMP_A0(SCMP_CMP_EQ, self))) < 0 ||
	    (r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(kill), 1,
				  SCMP_A0(SCMP_CMP_EQ, self))) < 0 ||
	    (r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(kill), 1,
				  SCMP_A0(SCMP_CMP_EQ, 0))) < 0 ||
	    (r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), 1,
				  SCMP_A0(SCMP_CMP_EQ, 0))) < 0)
		return r;
	/* the parsing half of a staging helper: descriptors come on its one
	 * socket (SCM_RIGHTS), which recvmsg alone can take */
	if (sock >= 0 && (r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(recvmsg), 1,
					       SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)sock))) < 0)
		return r;
	return 0;
}

static int sandbox_load(int sock)
{
	scmp_filter_ctx ctx;
	int r;

	if (seccomp_arch_native() != SCMP_ARCH_X86_64)
		return -EOPNOTSUPP;   /* the list's numbers and reasons are x86_64's */
	ctx = seccomp_init(SCMP_ACT_ERRNO(ENOSYS));
	if (!ctx)
		return -ENOMEM;
	/* a foreign architecture's call (i386, and x32 on x86_64) is killed */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (r == 0)
		r = add_rules(ctx, sock);
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	return r < 0 ? r : 0;
}

int sandbox_builder(void)
{
	return sandbox_load(-1);
}

int sandbox_parser(int sock)
{
	return sandbox_load(sock);
}

int sandbox_signer(void)
{
	return sandbox_load(-1);
}
