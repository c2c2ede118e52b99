/* SPDX-License-Identifier: GPL-2.0-only */
/* Who may talk to rerand-fleetd: beside the socket's owner and mode, the
 * peer must be a process of rerandd's unit (--peer-unit) or of a given
 * cgroup (--peer-cgroup), checked through its pidfd so that a pid reused
 * meanwhile cannot pass for it (issue 39). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fleetd_peer.h"
#include "log.h"
#include "util.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77                 /* Linux 6.5 */
#endif

/* Is pid listed in the cgroup's cgroup.procs (pids as this pid namespace,
 * the host's, numbers them)?  1 yes, 0 no, <0 unreadable. */
static int cgroup_has(const char *dir, pid_t pid)
{
	char path[PATH_MAX + 16], buf[4096], *line;
	_cleanup_close_ int fd = -1;
	size_t used = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* a line at a time through a small buffer: the unit has few processes,
	 * but the file is not bounded */
	for (;;) {
		n = read(fd, buf + used, sizeof(buf) - 1 - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		used += (size_t)n;
		buf[used] = 0;
		char *start = buf, *nl;
		while ((nl = strchr(start, '\n'))) {
			*nl = 0;
			line = start;
			if (*line && strtol(line, NULL, 10) == pid)
				return 1;
			start = nl + 1;
		}
		used = strlen(start);
		memmove(buf, start, used);
		if (n == 0)
			return used && strtol(buf, NULL, 10) == pid;
		if (used == sizeof(buf) - 1)
			return -EBADMSG;
	}
}

/* The peer is the process it says, alive, in cgroup: its pidfd
 * (SO_PEERPIDFD, Linux 6.5; else pidfd_open of its pid, which a pid reused
 * meanwhile could fool only if the real peer had exited) still names a live
 * process after its pid was found in the cgroup, so the pid found is that
 * process.  0, or -EPERM and why. */
int fleetd_peer_in_cgroup(const char *cgroup, int c, const struct ucred *cr, char *why, size_t len)
{
	_cleanup_close_ int pfd = -1;
	socklen_t l = sizeof(int);
	int r;

	if (!*cgroup)
		return 0;
	if (getsockopt(c, SOL_SOCKET, SO_PEERPIDFD, &pfd, &l) < 0) {
		pfd = -1;
		pfd = pidfd_open(cr->pid, 0);
	}
	if (pfd < 0) {
		snprintf(why, len, "its pid %d has no pidfd: %s", (int)cr->pid, strerror(errno));
		return -EPERM;
	}
	r = cgroup_has(cgroup, cr->pid);
	if (r < 0) {
		snprintf(why, len, "%s/cgroup.procs: %s", cgroup, strerror(-r));
		return -EPERM;
	}
	if (r == 0) {
		snprintf(why, len, "pid %d is not in %s", (int)cr->pid, cgroup);
		return -EPERM;
	}
	/* signal 0 checks permission too: an unprivileged helper gets EPERM
	 * for a live root peer; only ESRCH says it is gone */
	if (pidfd_send_signal(pfd, 0, NULL, 0) < 0 && errno == ESRCH) {
		snprintf(why, len, "pid %d exited while it was checked", (int)cr->pid);
		return -EPERM;
	}
	return 0;
}

/* A system unit's cgroup directory: system.slice/UNIT on the cgroup v2
 * hierarchy, at /sys/fs/cgroup (unified) or /sys/fs/cgroup/unified (hybrid). */
int fleetd_peer_unit_dir(const char *unit, char *out, size_t size)
{
	static const char *const roots[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
	char path[PATH_MAX];
	struct stat st;

	if (!*unit || strchr(unit, '/') || unit[0] == '.' || strlen(unit) > 200) {
		rr_log(RR_LOG_ERR, "--peer-unit %s: not a unit name", unit);
		return -EINVAL;
	}
	for (size_t i = 0; i < ARRAY_SIZE(roots); i++) {
		snprintf(path, sizeof(path), "%s/cgroup.controllers", roots[i]);
		if (stat(path, &st) < 0)
			continue;                 /* not the v2 hierarchy */
		snprintf(out, size, "%s/system.slice/%s", roots[i], unit);
		return 0;
	}
	/* no v2 hierarchy: the check refuses every peer, and says why */
	snprintf(out, size, "/sys/fs/cgroup/system.slice/%s", unit);
	rr_log(RR_LOG_WARNING, "--peer-unit %s: no cgroup v2 hierarchy at /sys/fs/cgroup or "
	       "/sys/fs/cgroup/unified: no peer can be checked, every peer is refused", unit);
	return 0;
}
