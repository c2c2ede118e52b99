/* SPDX-License-Identifier: GPL-2.0-only */
/* What a new kernel in /boot waits for (daemon/kernels.c): the package
 * manager's fcntl() locks, probed with F_GETLK against a real lock that a
 * child process holds, and the bounded wait rerandd derives from them. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rerandd.h"
#include "test.h"

struct holder {
	pid_t pid;
	int release;                   /* parent's end: close to let it go */
};

/* A child that takes a lock of type on path (F_SETLK, as dpkg does) and
 * holds it until the parent closes its pipe; 0 once the lock is taken. */
static int hold(const char *path, short type, struct holder *h)
{
	int ready[2], go[2];
	char c;

	if (pipe(ready) < 0 || pipe(go) < 0)
		return -errno;
	h->pid = fork();
	if (h->pid < 0)
		return -errno;
	if (h->pid == 0) {
		struct flock fl = { .l_type = type, .l_whence = SEEK_SET };
		int fd = open(path, type == F_WRLCK ? O_RDWR : O_RDONLY);

		close(ready[0]);
		close(go[1]);
		if (fd < 0 || fcntl(fd, F_SETLK, &fl) < 0)
			_exit(1);
		c = 'y';
		if (write(ready[1], &c, 1) != 1)
			_exit(1);
		(void)!read(go[0], &c, 1);     /* EOF: the parent let go */
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	h->release = go[1];
	if (read(ready[0], &c, 1) != 1) {
		close(ready[0]);
		close(go[1]);
		waitpid(h->pid, NULL, 0);
		return -EIO;
	}
	close(ready[0]);
	return 0;
}

static int release(struct holder *h)
{
	int st = -1;

	close(h->release);
	waitpid(h->pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(void)
{
	char dir[] = "/tmp/rr-pkglock.XXXXXX", lock[64], front[64], none[64], cmd[128];
	const char *locks[4];
	struct rr_config c;
	struct holder h;
	struct stat st;
	time_t since = 0, now = time(NULL);
	int fd;

	if (!mkdtemp(dir)) {
		printf("not ok 1 - mkdtemp: %s\n1..1\n", strerror(errno));
		return 1;
	}
	snprintf(front, sizeof(front), "%s/lock-frontend", dir);
	snprintf(lock, sizeof(lock), "%s/lock", dir);
	snprintf(none, sizeof(none), "%s/no-such-lock", dir);
	fd = open(lock, O_RDWR | O_CREAT, 0640);
	T_OK(fd >= 0 && close(fd) == 0, "made %s (0640, as dpkg has it)", lock);
	fd = open(front, O_RDWR | O_CREAT, 0640);
	T_OK(fd >= 0 && close(fd) == 0, "made %s", front);

	/* the probe alone */
	T_OK(kernels_lock_held(lock) == 0, "nobody holds the lock: not held");
	T_OK(kernels_lock_held(none) == 0 && stat(none, &st) < 0 && errno == ENOENT,
	     "no lock file (a machine without dpkg): not held, and the probe did not create it");
	T_OK(hold(lock, F_WRLCK, &h) == 0, "a child takes a write lock, as dpkg does");
	T_OK(kernels_lock_held(lock) == 1, "F_GETLK sees the child's write lock: held");
	T_OK(kernels_lock_held(lock) == 1, "probing twice takes nothing and drops nothing: still held");
	T_OK(release(&h) == 0, "the child kept its lock until told to let go (exit 0)");
	T_OK(kernels_lock_held(lock) == 0, "the child let go: not held");
	T_OK(hold(lock, F_RDLCK, &h) == 0, "a child takes a read lock");
	T_OK(kernels_lock_held(lock) == 1, "a read lock counts as held too");
	T_OK(release(&h) == 0 && kernels_lock_held(lock) == 0, "released: not held");
	/* the probe never blocked dpkg: a child can lock right after it */
	T_OK(kernels_lock_held(lock) == 0 && hold(lock, F_WRLCK, &h) == 0 && release(&h) == 0,
	     "after a probe another process still takes the write lock at once");

	/* the first held lock of a list */
	locks[0] = front;
	locks[1] = lock;
	locks[2] = NULL;
	T_OK(kernels_pkg_busy(locks) == NULL, "no lock of the list held: not busy");
	T_OK(hold(lock, F_WRLCK, &h) == 0, "a child holds the second lock (dpkg -i without apt)");
	T_OK(kernels_pkg_busy(locks) == lock, "busy, naming %s", lock);

	/* the wait rerandd derives from it */
	memset(&c, 0, sizeof(c));
	snprintf(c.state_dir, sizeof(c.state_dir), "%s", dir);   /* no images/: no hook at work */
	c.new_kernel_settle = 90;
	T_EQ_U64(kernels_new_wait(&c, locks, now, &since, "new kernel"), 5, "dpkg at work: look again in 5 s");
	T_OK(since == now, "the wait counts from the first look");
	T_EQ_U64(kernels_new_wait(&c, locks, now + 1799, &since, "new kernel"), 5,
		 "still held after 29 min 59 s: still waiting");
	T_OK(since == now, "later looks keep the start");
	T_EQ_U64(kernels_new_wait(&c, locks, now + 1800, &since, "new kernel"), 0,
		 "still held after 30 min: stage anyway (the wait is bounded)");
	T_OK(since == 0, "and the next new kernel waits afresh");
	T_EQ_U64(kernels_new_wait(&c, locks, now + 1810, &since, "new kernel"), 5, "a new wait begins");
	T_OK(release(&h) == 0, "dpkg is done");
	T_EQ_U64(kernels_new_wait(&c, locks, now + 1815, &since, "new kernel"), 0, "lock free: stage now");
	T_OK(since == 0, "the wait is over");

	/* the hook's rule stays first: its .hook-VERSION.tmp waits NewKernelSettle= */
	snprintf(cmd, sizeof(cmd), "%s/images", dir);
	T_OK(mkdir(cmd, 0700) == 0, "made %s", cmd);
	snprintf(cmd, sizeof(cmd), "%s/images/.hook-6.12.1-amd64.tmp", dir);
	fd = open(cmd, O_WRONLY | O_CREAT, 0600);
	T_OK(fd >= 0 && close(fd) == 0, "the hook writes .hook-6.12.1-amd64.tmp");
	T_EQ_U64(kernels_new_wait(&c, locks, now, &since, "new kernel"), 90,
		 "the hook at work, no lock held: wait NewKernelSettle= (90 s)");
	unlink(cmd);
	T_EQ_U64(kernels_new_wait(&c, locks, now, &since, "new kernel"), 0, "the hook done, no lock held: stage now");
	/* NULL: [Paths] PackageLocks=, blank-separated (rerandd's callers) */
	snprintf(c.package_locks, sizeof(c.package_locks), "%s  %s", none, front);
	T_OK(hold(front, F_WRLCK, &h) == 0, "a child holds %s", front);
	T_EQ_U64(kernels_new_wait(&c, NULL, now, &since, "rerandomizing reboot"), 5,
		 "PackageLocks=\"%s  %s\": the second is held, wait", none, front);
	T_OK(release(&h) == 0 && kernels_new_wait(&c, NULL, now, &since, "rerandomizing reboot") == 0,
	     "released: no wait");
	config_defaults(&c);
	T_OK(!strcmp(c.package_locks, "/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock"),
	     "PackageLocks= is dpkg's lock-frontend and lock by default");
	/* the real locks' paths, not probed here (the host's dpkg may run) */
	T_OK(!strcmp(rr_dpkg_locks[0], "/var/lib/dpkg/lock-frontend") &&
	     !strcmp(rr_dpkg_locks[1], "/var/lib/dpkg/lock") && !rr_dpkg_locks[2],
	     "rerandd waits on dpkg's lock-frontend and lock");

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
	return t_done();
}
