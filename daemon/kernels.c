/* SPDX-License-Identifier: GPL-2.0-only */
/* The kernel hooks' index (StateDirectory/kernels/VERSION, one SHA-256 per
 * file, written by /usr/lib/rerand/kernel-hook): the images it names were
 * built for installed kernels, so the cache prune keeps them. */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rerandd.h"

/* Bounds the work on a directory anyone with root could fill. */
#define KERNELS_MAX 1024

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
		char line[80];
		ssize_t n;
		int fd;

		/* the hook's VERSION.tmp is half-written: its rename follows */
		if (de->d_name[0] == '.')
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		if (fd < 0)
			continue;
		n = read(fd, line, sizeof(line) - 1);
		close(fd);
		if (n < 64)
			continue;
		found = is_sha(line, 64) && (n == 64 || line[64] == '\n') && !memcmp(line, sha, 64);
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
