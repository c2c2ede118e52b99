/* SPDX-License-Identifier: GPL-2.0-only */
/* The control socket (root only, checked with SO_PEERCRED) and its tiny line
 * protocol, spelled once in src/common/ctl.h for rerandd and the CLI.  Each
 * connection is read by an event source of its own, within a deadline. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-login.h>
#include <unistd.h>

#include "cleanup.h"
#include "rerandd.h"

enum rr_ctl_cmd control_parse_arg(const char *line, size_t len, char *arg, size_t arglen)
{
	char buf[RR_CTL_LINE];

	if (arglen)
		arg[0] = 0;
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' '))
		len--;
	if (len >= sizeof(buf) || memchr(line, 0, len))
		return RR_CTL_BAD;
	memcpy(buf, line, len);
	buf[len] = 0;
	if (!strcmp(buf, RR_CTLV_STATUS)) return RR_CTL_STATUS;
	if (!strcmp(buf, RR_CTLV_STATUS_JSON)) return RR_CTL_STATUS_JSON;
	if (!strcmp(buf, RR_CTLV_NOW)) return RR_CTL_NOW;
	if (!strcmp(buf, RR_CTLV_NOW_WITHDRAW)) return RR_CTL_NOW_WITHDRAW;
	if (!strcmp(buf, RR_CTLV_DUE)) return RR_CTL_DUE;
	if (!strcmp(buf, RR_CTLV_PHASE)) return RR_CTL_PHASE;
	if (!strcmp(buf, RR_CTLV_HOLD)) return RR_CTL_HOLD;
	if (!strncmp(buf, RR_CTLV_HOLD " ", sizeof(RR_CTLV_HOLD))) {
		/* `rerand hold --reason TEXT`: kept as the hold's reason
		 * (sizeof counts the NUL where the line has the space) */
		const char *t = buf + sizeof(RR_CTLV_HOLD);
		if (!*t || strlen(t) >= arglen || strlen(t) >= RR_HOLD_TEXT)
			return RR_CTL_BAD;
		snprintf(arg, arglen, "%s", t);
		return RR_CTL_HOLD;
	}
	if (!strcmp(buf, RR_CTLV_UNHOLD) || !strcmp(buf, RR_CTLV_RELEASE)) return RR_CTL_RELEASE;
	if (!strcmp(buf, RR_CTLV_HISTORY)) return RR_CTL_HISTORY;
	if (!strcmp(buf, RR_CTLV_HISTORY_JSON)) return RR_CTL_HISTORY_JSON;
	if (!strcmp(buf, RR_CTLV_FLEET_STATUS)) return RR_CTL_FLEET_STATUS;
	if (!strcmp(buf, RR_CTLV_FLEET_STATUS_JSON)) return RR_CTL_FLEET_STATUS_JSON;
	if (!strcmp(buf, RR_CTLV_FLEET_CLEAR_BREAKER)) return RR_CTL_FLEET_CLEAR_BREAKER;
	if (!strncmp(buf, RR_CTLV_FLEET_RELEASE " ", sizeof(RR_CTLV_FLEET_RELEASE))) {
		const char *h = buf + sizeof(RR_CTLV_FLEET_RELEASE);
		/* a fleet identity: what fleet_read_identity() accepts */
		if (!*h || strlen(h) >= arglen || strlen(h) >= FLEET_ID_MAX)
			return RR_CTL_BAD;
		for (const char *p = h; *p; p++)
			if (*p <= ' ' || *p > '~' || *p == '"' || *p == '\\')
				return RR_CTL_BAD;
		snprintf(arg, arglen, "%s", h);
		return RR_CTL_FLEET_RELEASE;
	}
	if (!strncmp(buf, RR_CTLV_BUILD " ", sizeof(RR_CTLV_BUILD))) {
		/* an absolute path of printable characters, no "..": what
		 * rerandd plans like Kernel= */
		const char *k = buf + sizeof(RR_CTLV_BUILD);
		if (*k != '/' || strlen(k) >= arglen || strlen(k) >= RR_PATH || strstr(k, "/../") ||
		    (strlen(k) >= 3 && !strcmp(k + strlen(k) - 3, "/..")))
			return RR_CTL_BAD;
		for (const char *p = k; *p; p++)
			if (*p < ' ' || *p > '~')
				return RR_CTL_BAD;
		snprintf(arg, arglen, "%s", k);
		return RR_CTL_BUILD;
	}
	return RR_CTL_BAD;
}

enum rr_ctl_cmd control_parse(const char *line, size_t len)
{
	char arg[FLEET_ID_MAX];

	return control_parse_arg(line, len, arg, sizeof(arg));
}

int control_listen(const char *path, struct rr_err *e)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;

	if (strlen(path) >= sizeof(sa.sun_path))
		return rr_errf(e, ENAMETOOLONG, "%s: socket path too long", path);
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return rr_errf(e, errno, "socket: %s", strerror(errno));
	unlink(path);
	/* 0600 from the start: no window in which others could connect */
	mode_t old = umask(0177);
	int r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || listen(fd, 8) < 0)
		return rr_errf(e, errno, "%s: cannot listen: %s", path, strerror(errno));
	return TAKE_FD(fd);
}

/*
 * Each connection is an event source of its own with a deadline: the line
 * is read as it arrives, without ever blocking the loop, so a client that
 * trickles its bytes (or sends none) costs rerandd nothing but a slot
 * until CTL_DEADLINE_USEC, while other clients are answered and the
 * watchdog is fed.  At most CTL_MAX_CONNS wait at once; more are turned
 * away at once.
 */
#define CTL_DEADLINE_USEC (2 * 1000000ULL)
#define CTL_MAX_CONNS 32

struct ctl_server;
struct ctl_conn {
	struct ctl_server *srv;
	int fd;
	size_t got;
	char line[RR_CTL_LINE];
	sd_event_source *io, *timer;
	struct ucred peer;                  /* SO_PEERCRED at accept */
	char unit[256];                     /* the peer's systemd unit, "" unknown */
};
struct ctl_server {
	sd_event *ev;
	control_fn fn;
	void *ud;
	unsigned nconns;
};

static void conn_free(struct ctl_conn *c, bool close_fd)
{
	c->srv->nconns--;
	sd_event_source_disable_unref(c->io);
	sd_event_source_disable_unref(c->timer);
	if (close_fd)
		close(c->fd);
	free(c);
}

static int on_conn_deadline(sd_event_source *s, uint64_t usec, void *ud)
{
	struct ctl_conn *c = ud;

	(void)s;
	(void)usec;
	control_reply(c->fd, false, "no complete command line in time\n");
	conn_free(c, true);
	return 0;
}

/* ---- the audit trail: who asked for what ----------------------------------
 * The peer as the kernel saw it at connect (SO_PEERCRED: uid, pid) and the
 * unit its pid was in then (its cgroup, through sd_pid_get_unit(), else a
 * user unit, else ""), read at accept while the peer still waits. */
static void control_peer_unit(pid_t pid, char *out, size_t len)
{
	_cleanup_free_ char *u = NULL;

	out[0] = 0;
	if (sd_pid_get_unit(pid, &u) >= 0 || sd_pid_get_user_unit(pid, &u) >= 0)
		snprintf(out, len, "%s", u);
}

static const char *control_verb(enum rr_ctl_cmd cmd, bool *changes)
{
	*changes = true;
	switch (cmd) {
	case RR_CTL_NOW:                 return RR_CTLV_NOW;
	case RR_CTL_HOLD:                return RR_CTLV_HOLD;
	case RR_CTL_RELEASE:             return RR_CTLV_UNHOLD;
	case RR_CTL_FLEET_RELEASE:       return RR_CTLV_FLEET_RELEASE;
	case RR_CTL_FLEET_CLEAR_BREAKER: return RR_CTLV_FLEET_CLEAR_BREAKER;
	case RR_CTL_NOW_WITHDRAW:        return RR_CTLV_NOW_WITHDRAW;
	case RR_CTL_BUILD:               return RR_CTLV_BUILD;
	default:                         break;
	}
	*changes = false;
	switch (cmd) {
	case RR_CTL_STATUS:            return RR_CTLV_STATUS;
	case RR_CTL_STATUS_JSON:       return RR_CTLV_STATUS_JSON;
	case RR_CTL_DUE:               return RR_CTLV_DUE;
	case RR_CTL_PHASE:             return RR_CTLV_PHASE;
	case RR_CTL_FLEET_STATUS:      return RR_CTLV_FLEET_STATUS;
	case RR_CTL_FLEET_STATUS_JSON: return RR_CTLV_FLEET_STATUS_JSON;
	case RR_CTL_HISTORY:           return RR_CTLV_HISTORY;
	case RR_CTL_HISTORY_JSON:      return RR_CTLV_HISTORY_JSON;
	default:                       *changes = true;  /* a root peer sending junk */
				       return "unknown";
	}
}

/* Every command that changes something, at notice; the read-only ones
 * (`rerand status`, `now --wait` polling the phase) at debug only, so that
 * they do not drown the rest. */
static void control_audit(const struct ctl_conn *c, enum rr_ctl_cmd cmd, const char *arg)
{
	bool changes;
	const char *verb = control_verb(cmd, &changes);
	char f_cmd[64], f_arg[RR_CTL_LINE + 32], f_uid[32], f_pid[32], f_unit[300];
	const char *fields[] = { f_cmd, f_uid, f_pid, f_unit, f_arg };

	snprintf(f_cmd, sizeof(f_cmd), "RERAND_COMMAND=%s", verb);
	snprintf(f_uid, sizeof(f_uid), "RERAND_PEER_UID=%u", (unsigned)c->peer.uid);
	snprintf(f_pid, sizeof(f_pid), "RERAND_PEER_PID=%d", (int)c->peer.pid);
	snprintf(f_unit, sizeof(f_unit), "RERAND_PEER_UNIT=%s", c->unit);
	snprintf(f_arg, sizeof(f_arg), "RERAND_COMMAND_ARG=%s", arg);
	audit_log(changes ? RR_LOG_NOTICE : RR_LOG_DEBUG, RR_MSGID_CONTROL, fields,
		  *arg ? 5 : 4, "control command \"%s%s%s\" from uid %u pid %d unit %s", verb,
		  *arg ? " " : "", arg, (unsigned)c->peer.uid, (int)c->peer.pid,
		  *c->unit ? c->unit : "(none)");
}

static int on_conn_read(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	struct ctl_conn *c = ud;
	char arg[RR_CTL_LINE];
	enum rr_ctl_cmd cmd;
	char *nl;

	(void)s;
	(void)revents;
	for (;;) {
		ssize_t n = read(fd, c->line + c->got, sizeof(c->line) - c->got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;                   /* more later */
		if (n > 0)
			c->got += (size_t)n;
		nl = memchr(c->line, '\n', c->got);
		if (nl || n <= 0 || c->got == sizeof(c->line))
			break;
	}
	cmd = nl ? control_parse_arg(c->line, (size_t)(nl - c->line), arg, sizeof(arg)) : RR_CTL_BAD;
	control_audit(c, cmd, cmd == RR_CTL_BAD ? "" : arg);
	/* the answer goes out at once (a status fits the socket's buffer),
	 * or fn keeps the connection to answer later */
	conn_free(c, !c->srv->fn(c->srv->ud, cmd, arg, c->fd));
	return 0;
}

static int on_listen(sd_event_source *s, int lfd, uint32_t revents, void *ud)
{
	struct ctl_server *srv = ud;
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	struct ctl_conn *c;
	uint64_t now;
	_cleanup_close_ int fd = -1;

	(void)s;
	(void)revents;
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return 0;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0 || cred.uid != 0) {
		control_reply(fd, false, "permission denied: root only\n");
		return 0;
	}
	if (srv->nconns >= CTL_MAX_CONNS) {
		control_reply(fd, false, "busy: too many connections waiting for their command\n");
		return 0;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return 0;
	c->srv = srv;
	c->fd = TAKE_FD(fd);
	c->peer = cred;
	control_peer_unit(cred.pid, c->unit, sizeof(c->unit));
	srv->nconns++;
	if (sd_event_now(srv->ev, CLOCK_MONOTONIC, &now) < 0 ||
	    sd_event_add_io(srv->ev, &c->io, c->fd, EPOLLIN, on_conn_read, c) < 0 ||
	    sd_event_add_time(srv->ev, &c->timer, CLOCK_MONOTONIC, now + CTL_DEADLINE_USEC, 0,
			      on_conn_deadline, c) < 0)
		conn_free(c, true);
	return 0;
}

int control_serve(sd_event *ev, int lfd, control_fn fn, void *ud)
{
	static struct ctl_server srv;       /* one control socket per rerandd */

	srv = (struct ctl_server){ .ev = ev, .fn = fn, .ud = ud };
	return sd_event_add_io(ev, NULL, lfd, EPOLLIN, on_listen, &srv);
}

int control_reply(int fd, bool ok, const char *body)
{
	char head[16];
	const char *parts[2] = { head, body };
	size_t lens[2];

	snprintf(head, sizeof(head), "%s", ok ? RR_CTL_OK : RR_CTL_ERROR);
	lens[0] = strlen(head);
	lens[1] = strlen(body);
	for (int i = 0; i < 2; i++) {
		size_t done = 0;
		while (done < lens[i]) {
			ssize_t n = send(fd, parts[i] + done, lens[i] - done, MSG_NOSIGNAL);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return -errno;
			done += (size_t)n;
		}
	}
	return 0;
}
