/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Least privilege with libcap.  rerandd needs CAP_SYS_BOOT itself (reboot(2)
 * without systemd) and hands CAP_SYS_BOOT + CAP_SYS_ADMIN to the kexec-tools
 * child as ambient capabilities: kexec_load(2) needs CAP_SYS_BOOT, and
 * kexec-tools reads /proc/iomem, which shows every address as 0 to a reader
 * without CAP_SYS_ADMIN.  CAP_SYS_ADMIN is never effective in rerandd.
 * /dev/kmsg (CAP_SYSLOG under dmesg_restrict) is opened before the drop.
 * CAP_SETUID, CAP_SETGID and CAP_SETPCAP stay permitted (never effective in
 * rerandd, never inheritable) only so that the image builder child can
 * become ImageUser= with an empty bounding set (caps_child_builder).
 * CAP_LINUX_IMMUTABLE stays permitted, effective only for the ioctl that
 * lifts efivarfs' immutable flag off LoaderEntryOneShot (caps_immutable).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <string.h>
#include <stdio.h>
#include <sys/capability.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rerandd.h"
#include "util.h"

static const cap_value_t keep[] = { CAP_SYS_BOOT, CAP_SYS_ADMIN };
static const cap_value_t effective[] = { CAP_SYS_BOOT };
static const cap_value_t builder_drop[] = { CAP_SETUID, CAP_SETGID, CAP_SETPCAP };
/* Permitted only, effective for one ioctl: lifting the immutable flag
 * efivarfs puts on LoaderEntryOneShot before deleting it (oneshot.c). */
static const cap_value_t immutable_caps[] = { CAP_LINUX_IMMUTABLE };
static const struct { int res; rlim_t max; } builder_limits[] = {
	{ RLIMIT_AS, 2ULL << 30 },          /* address space: 2 GiB */
	{ RLIMIT_CPU, 300 },                /* seconds of CPU */
	{ RLIMIT_FSIZE, 512ULL << 20 },     /* the image it writes: 512 MiB */
	{ RLIMIT_CORE, 0 },                 /* no core file of a kernel's bytes */
};
/* Processes and threads of ImageUser= (the kernel counts them per uid): the
 * builder needs a few (a thread per LZ4 worker, a wrapper's pipeline); a
 * fork bomb stops here, and at the unit's TasksMax=.  Set only when the
 * builder has a uid of its own to count (rerandd as root): as rerandd's own
 * uid (tests, a user's instance) it would count every process of that user. */
#define BUILDER_NPROC 128
static const cap_value_t pidns_caps[] = { CAP_SYS_ADMIN };

static bool have(cap_t cur, cap_value_t v)
{
	cap_flag_value_t f = CAP_CLEAR;
	return cap_get_flag(cur, v, CAP_PERMITTED, &f) == 0 && f == CAP_SET;
}

int caps_drop_daemon(struct rr_err *e)
{
	cap_t cur = cap_get_proc(), next;
	int r = 0;

	if (!cur)
		return rr_errf(e, errno, "cap_get_proc: %s", strerror(errno));
	/* Shrink the bounding set while CAP_SETPCAP may still be ours; under
	 * the unit's CapabilityBoundingSet= it already is small, so EPERM is
	 * fine here. */
	for (cap_value_t v = 0; v <= CAP_LAST_CAP; v++) {
		bool kept = false;
		for (size_t i = 0; i < ARRAY_SIZE(keep); i++)
			kept |= keep[i] == v;
		for (size_t i = 0; i < ARRAY_SIZE(builder_drop); i++)
			kept |= builder_drop[i] == v;
		kept |= v == immutable_caps[0];
		if (!kept && CAP_IS_SUPPORTED(v))
			(void)cap_drop_bound(v);
	}
	next = cap_init();
	if (!next) {
		cap_free(cur);
		return rr_errf(e, errno, "cap_init: %s", strerror(errno));
	}
	for (size_t i = 0; i < ARRAY_SIZE(keep); i++) {
		if (!have(cur, keep[i]))
			continue;          /* not root, or a tighter bounding set */
		cap_set_flag(next, CAP_PERMITTED, 1, &keep[i], CAP_SET);
		cap_set_flag(next, CAP_INHERITABLE, 1, &keep[i], CAP_SET);
	}
	for (size_t i = 0; i < ARRAY_SIZE(builder_drop); i++)
		if (have(cur, builder_drop[i]))
			cap_set_flag(next, CAP_PERMITTED, 1, &builder_drop[i], CAP_SET);
	if (have(cur, immutable_caps[0]))
		cap_set_flag(next, CAP_PERMITTED, 1, immutable_caps, CAP_SET);
	for (size_t i = 0; i < ARRAY_SIZE(effective); i++)
		if (have(cur, effective[i]))
			cap_set_flag(next, CAP_EFFECTIVE, 1, &effective[i], CAP_SET);
	if (cap_set_proc(next) < 0)
		r = rr_errf(e, errno, "cap_set_proc: %s", strerror(errno));
	cap_free(next);
	cap_free(cur);
	if (r < 0)
		return r;
	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return rr_errf(e, errno, "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
	return 0;
}

void caps_immutable(bool on)
{
	cap_t cur = cap_get_proc();

	if (!cur)
		return;
	/* not permitted (not root, a tighter bounding set): the ioctl says EPERM */
	if (have(cur, immutable_caps[0]) &&
	    cap_set_flag(cur, CAP_EFFECTIVE, 1, immutable_caps, on ? CAP_SET : CAP_CLEAR) == 0)
		(void)cap_set_proc(cur);
	cap_free(cur);
}

int caps_child_kexec(void)
{
	cap_t cur = cap_get_proc();

	if (!cur)
		return -errno;
	/* Ambient needs permitted and inheritable. */
	for (size_t i = 0; i < ARRAY_SIZE(keep); i++)
		if (have(cur, keep[i]))
			cap_set_flag(cur, CAP_INHERITABLE, 1, &keep[i], CAP_SET);
	(void)cap_set_proc(cur);
	for (size_t i = 0; i < ARRAY_SIZE(keep); i++)
		if (have(cur, keep[i]) && cap_set_ambient(keep[i], CAP_SET) < 0) {
			int r = -errno;
			cap_free(cur);
			return r;
		}
	cap_free(cur);
	return 0;
}

int caps_child_none(void)
{
	cap_t none = cap_init();
	int r = 0;

	if (!none)
		return -errno;
	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	/* With no permitted set left, even a root child execs with nothing:
	 * NO_NEW_PRIVS caps what exec may grant to what we hold. */
	if (cap_set_proc(none) < 0)
		r = -errno;
	cap_free(none);
	return r;
}

/* Move FROM to TO without O_CLOEXEC, through a high copy so that moving
 * one fd cannot close the other. */
static int move_fd(int from, int to)
{
	if (from == to)
		return fcntl(to, F_SETFD, 0) < 0 ? -errno : 0;
	if (dup2(from, to) < 0)
		return -errno;
	return 0;
}

/*
 * What the builder and the parsing half of a staging helper become (with
 * ImageUser=/CheckUser= as B says): that user with no capability in any
 * set and an empty bounding set, no_new_privs, the builder's resource
 * limits, and with NPROC the builder's bound on processes; checked rather
 * than trusted.  Ambient capabilities are cleared by the caller.
 */
static int become_unprivileged(const struct rr_builder *b, bool nproc)
{
	cap_t cur, none;
	int r;

	if (b->switch_user) {
		cur = cap_get_proc();
		if (!cur)
			return -errno;
		/* Raise what the switch needs, from permitted. */
		cap_set_flag(cur, CAP_EFFECTIVE, ARRAY_SIZE(builder_drop), builder_drop, CAP_SET);
		if (cap_set_proc(cur) < 0) {
			r = -errno;
			cap_free(cur);
			return r;
		}
		cap_free(cur);
		/* The bounding set first: dropping it needs CAP_SETPCAP, which
		 * the uid change below takes away. */
		for (cap_value_t v = 0; v <= CAP_LAST_CAP; v++)
			if (CAP_IS_SUPPORTED(v) && cap_drop_bound(v) < 0)
				return -errno;
		if (setgroups(0, NULL) < 0 || setresgid(b->gid, b->gid, b->gid) < 0 ||
		    setresuid(b->uid, b->uid, b->uid) < 0)
			return -errno;
	}
	none = cap_init();
	if (!none)
		return -errno;
	r = cap_set_proc(none) < 0 ? -errno : 0;
	cap_free(none);
	if (r < 0)
		return r;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	/* Bounds for a parser fed a hostile kernel file: a decompression bomb
	 * or a loop stops here, not in the machine's memory or disk.  An
	 * image of Debian's largest kernel needs about 130 MB and a second. */
	for (size_t i = 0; i < ARRAY_SIZE(builder_limits); i++) {
		struct rlimit rl = { builder_limits[i].max, builder_limits[i].max };
#ifdef __SANITIZE_ADDRESS__
		/* Only the unit tests' ASan build (build/san) compiles this: ASan
		 * reserves terabytes of shadow address space, so under a 2 GiB cap
		 * the child's next mmap (libseccomp's allocations, before the
		 * exec) fails.  The exec'd builder is the normal build/rerand. */
		if (builder_limits[i].res == RLIMIT_AS)
			continue;
#endif
		if (setrlimit(builder_limits[i].res, &rl) < 0)
			return -errno;
	}
	if (b->switch_user && nproc) {
		struct rlimit rl = { BUILDER_NPROC, BUILDER_NPROC };
		if (setrlimit(RLIMIT_NPROC, &rl) < 0)
			return -errno;
	}
	/* Check rather than trust: a root builder would be no separation. */
	if (b->switch_user && (getuid() == 0 || geteuid() == 0 || getgid() == 0 ||
			       setresuid(0, 0, 0) == 0))
		return -EPERM;
	return 0;
}

int caps_child_builder(const struct rr_builder *b, int *pidns)
{
	int k = fcntl(b->kernel_fd, F_DUPFD_CLOEXEC, 16);
	int o = fcntl(b->out_fd, F_DUPFD_CLOEXEC, 16);
	cap_t cur = NULL;
	int r;

	if (k < 0 || o < 0)
		return -errno;
	/* The child sees the kernel on fd 3 and the output on fd 4, and no
	 * path: it needs no access to the state directory or /boot. */
	if ((r = move_fd(k, RR_BUILDER_KERNEL_FD)) < 0 || (r = move_fd(o, RR_BUILDER_OUT_FD)) < 0)
		return r;
	close(k);
	close(o);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	*pidns = -ENOSYS;
	if (b->switch_user) {
		/* A PID namespace of its own for what this process forks next
		 * (the builder, its pid 1): when the builder exits, the kernel
		 * kills everything left in it, and nothing in it can fork
		 * meanwhile, so no chain of forks outlasts the reaper.
		 * CAP_SYS_ADMIN is permitted (for kexec-tools), raised for this
		 * call only; the unit allows it (RestrictNamespaces=pid). */
		cur = cap_get_proc();
		if (!cur)
			return -errno;
		cap_set_flag(cur, CAP_EFFECTIVE, 1, pidns_caps, CAP_SET);
		*pidns = cap_set_proc(cur) < 0 || unshare(CLONE_NEWPID) < 0 ? -errno : 0;
		cap_free(cur);
	}
	return become_unprivileged(b, true);
}

int caps_child_parser(const struct rr_builder *b)
{
	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	return become_unprivileged(b, false);
}

/* FILE (the key or certificate, read as root) copied into a memfd sealed
 * against any change, of mode MODE: sbsign, as CheckUser=, reopens it
 * through /proc/self/fd/N, and the memfd stays root's; what it holds is on
 * no file system.  Said on stderr (sbsign's output) when it fails. */
static int sealed_copy(const char *file, const char *what, mode_t mode)
{
	char buf[65536];
	size_t total = 0;
	struct stat st;
	ssize_t n;
	int in, fd, r = 0;

	in = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (in < 0) {
		r = -errno;
		fprintf(stderr, "%s: cannot open the signing %s: %s\n", file, what, strerror(-r));
		return r;
	}
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "%s: the signing %s is not a regular file\n", file, what);
		close(in);
		return -EINVAL;
	}
	fd = memfd_create(what, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		r = -errno;
		fprintf(stderr, "%s: memfd_create: %s\n", file, strerror(-r));
		close(in);
		return r;
	}
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || (total += (size_t)n) > (4u << 20) || write(fd, buf, (size_t)n) != n) {
			r = n < 0 ? -errno : total > (4u << 20) ? -EFBIG : -EIO;
			break;
		}
	}
	explicit_bzero(buf, sizeof(buf));
	close(in);
	if (r == 0 && (fchmod(fd, mode) < 0 ||
		       fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0))
		r = -errno;
	if (r < 0) {
		fprintf(stderr, "%s: cannot copy the signing %s for sbsign: %s\n", file, what,
			strerror(-r));
		close(fd);
		return r;
	}
	return fd;
}

int caps_child_signer(const struct rr_signer *s)
{
	int fds[4] = { -1, -1, -1, -1 };
	static const int to[4] = { RR_SIGNER_IN_FD, RR_SIGNER_KEY_FD, RR_SIGNER_CERT_FD,
				   RR_SIGNER_OUT_FD };
	int r;

	/* read as root, before the switch: CheckUser= may read neither
	 * file, and gets the key as the memfd alone (mode 0404: its owner,
	 * root, and through /proc/self/fd, whoever holds it) */
	if (s->key && (fds[1] = sealed_copy(s->key, "key", 0404)) < 0)
		return fds[1];
	if ((fds[2] = sealed_copy(s->cert, "certificate", 0404)) < 0)
		return fds[2];
	/* high copies first, so that moving one cannot close another */
	fds[0] = fcntl(s->in_fd, F_DUPFD_CLOEXEC, 16);
	fds[3] = fcntl(s->out_fd, F_DUPFD_CLOEXEC, 16);
	if (fds[0] < 0 || fds[3] < 0)
		return -errno;
	for (int i = 1; i <= 2; i++) {
		int high;
		if (fds[i] < 0)
			continue;
		if ((high = fcntl(fds[i], F_DUPFD_CLOEXEC, 16)) < 0)
			return -errno;
		close(fds[i]);
		fds[i] = high;
	}
	for (int i = 0; i < 4; i++) {
		if (fds[i] < 0)
			continue;
		if ((r = move_fd(fds[i], to[i])) < 0)
			return r;
		close(fds[i]);
	}
	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	return become_unprivileged(&s->who, false);
}
