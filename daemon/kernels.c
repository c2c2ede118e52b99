/* SPDX-License-Identifier: GPL-2.0-only */
/* The kernel hooks' index (StateDirectory/kernels/VERSION, one SHA-256 per
 * file, written by /usr/lib/rerand/kernel-hook): the images it names were
 * built for installed kernels, so the cache prune keeps them.  And what a
 * new kernel in /boot waits for before rerandd stages it: the hook, and the
 * package manager that runs it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "rerandd.h"
#include "util.h"

/* Bounds the work on a directory anyone with root could fill. */
#define KERNELS_MAX 1024
/* An index file holds one line of 65 bytes: a larger one is not read. */
#define INDEX_MAX 4096

static bool is_sha(const char *s, size_t n)
{
	if (n != 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

bool kernels_indexed(const struct rr_config *c, const char *sha)
{
	char dir[RR_PATH + 16];
	struct dirent *de;
	unsigned seen = 0;
	bool found = false;
	DIR *d;

	if (!sha || !is_sha(sha, strlen(sha)))
		return false;
	snprintf(dir, sizeof(dir), "%s/kernels", c->state_dir);
	d = opendir(dir);
	if (!d)
		return false;
	while (!found && seen++ < KERNELS_MAX && (de = readdir(d))) {
		_cleanup_free_ uint8_t *line = NULL;
		struct rr_err e;
		size_t n;

		/* the hook's VERSION.tmp is half-written: its rename follows */
		if (de->d_name[0] == '.' ||
		    rr_read_file_at(dirfd(d), de->d_name, INDEX_MAX, &line, &n, &e) < 0 || n < 64)
			continue;
		found = is_sha((const char *)line, 64) && (n == 64 || line[64] == '\n') &&
			!memcmp(line, sha, 64);
	}
	closedir(d);
	return found;
}

/* A hook older than this is taken for dead: its temporary file is left over. */
#define HOOK_STALE 600

bool kernels_hook_busy(const struct rr_config *c)
{
	char dir[RR_PATH + 16];
	struct dirent *de;
	unsigned seen = 0;
	bool busy = false;
	time_t now = time(NULL);
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/images", c->state_dir);
	d = opendir(dir);
	if (!d)
		return false;
	while (!busy && seen++ < KERNELS_MAX && (de = readdir(d))) {
		struct stat st;
		size_t n = strlen(de->d_name);

		/* kernel-hook writes .hook-VERSION.tmp, then renames it */
		if (strncmp(de->d_name, ".hook-", 6) || n < 10 || strcmp(de->d_name + n - 4, ".tmp"))
			continue;
		busy = fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		       now - st.st_mtime < HOOK_STALE;
	}
	closedir(d);
	return busy;
}

/* dpkg and apt lock these with fcntl() for as long as they run (dpkg also
 * while a kernel package's postinst.d hooks run), lock-frontend first. */
const char *const rr_dpkg_locks[] = { "/var/lib/dpkg/lock-frontend", "/var/lib/dpkg/lock", NULL };

/* How long a new kernel waits for the package manager at most (an upgrade
 * under emulation, mkinitramfs included, takes minutes; a stuck one must
 * not keep the old image staged for ever), and how often it looks again. */
#define PKG_WAIT_MAX (30 * 60)
#define PKG_RECHECK 5

int kernels_lock_held(const char *path)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
	_cleanup_close_ int fd = -1;

	/* Read-only and without O_CREAT: a machine without dpkg gets no
	 * file, and F_GETLK only asks (it takes nothing, so dpkg is never
	 * kept out).  Closing the fd would drop rerandd's own locks on the
	 * file, and it holds none. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (fcntl(fd, F_GETLK, &fl) < 0)
		return -errno;
	return fl.l_type != F_UNLCK;
}

const char *kernels_pkg_busy(const char *const *locks)
{
	for (; locks && *locks; locks++)
		if (kernels_lock_held(*locks) > 0)
			return *locks;
	return NULL;
}

/* PackageLocks= as a NULL-ended list; buf holds the words. */
static void config_locks(const struct rr_config *c, char *buf, size_t len, const char **out,
			 size_t n)
{
	size_t i = 0;
	char *save = NULL, *w;

	snprintf(buf, len, "%s", c->package_locks);
	for (w = strtok_r(buf, " \t", &save); w && i + 1 < n; w = strtok_r(NULL, " \t", &save))
		out[i++] = w;
	out[i] = NULL;
}

int64_t kernels_new_wait(const struct rr_config *c, const char *const *locks, time_t now,
			 time_t *pkg_since, const char *what)
{
	char buf[sizeof(c->package_locks)];
	const char *mine[16];
	const char *held;

	if (!locks) {
		config_locks(c, buf, sizeof(buf), mine, ARRAY_SIZE(mine));
		locks = mine;
	}
	/* The hook is writing the image: stage from it once it is there. */
	if (kernels_hook_busy(c)) {
		rr_log(RR_LOG_INFO, "%s: waiting for rerand's kernel hook, which is building an "
		       "image", what);
		return c->new_kernel_settle > 0 ? c->new_kernel_settle : 1;
	}
	/* dpkg still configures packages: the kernel's postinst.d hooks
	 * (initramfs first, then rerand's) may not have run yet, and a
	 * settle that expires meanwhile would build the image twice. */
	held = kernels_pkg_busy(locks);
	if (held && !*pkg_since) {
		*pkg_since = now;
		rr_log(RR_LOG_INFO, "%s: waiting while the package manager holds %s "
		       "(at most %d min)", what, held, PKG_WAIT_MAX / 60);
	}
	if (held && now - *pkg_since < PKG_WAIT_MAX)
		return PKG_RECHECK;
	if (held)
		rr_log(RR_LOG_WARNING, "%s: %s is still held after %d min; staging "
		       "without waiting for the package manager", what, held, PKG_WAIT_MAX / 60);
	*pkg_since = 0;
	return 0;
}
