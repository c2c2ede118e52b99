/* SPDX-License-Identifier: GPL-2.0-only */
/* rerand-fleetd: rerandd's network-facing fleet client, in its own process so
 * that rerandd keeps PrivateNetwork=yes and this one keeps no capability.
 *
 * It serves one client (rerandd) on a unix socket, passed by systemd (socket
 * activation, root-only) or made with --socket.  The main thread runs sd-event
 * and only reads requests and writes replies; the fleet calls, which block on
 * HTTP for up to Timeout= per endpoint, run one at a time on a worker thread.
 * A slow or dead etcd therefore delays a reply, never the socket. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sysexits.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "cleanup.h"
#include "fleetd.h"
#include "fleetd_peer.h"
#include "log.h"
#include "util.h"

#define QUEUE_MAX 8                 /* rerandd keeps one request in flight */

struct job {
	uint64_t gen;                   /* the connection it came on */
	struct fleet_request q;
	struct fleet_reply p;
};

static struct {
	sd_event *ev;
	int lfd, cfd, efd;
	sd_event_source *cio;
	uint64_t gen;                   /* bumped per accepted connection */
	char in[FLEET_LINE_MAX];
	size_t inlen;

	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job *todo[QUEUE_MAX], *done[QUEUE_MAX];
	unsigned nr_todo, nr_done;
	bool quit;

	struct fleet *f;                /* the worker's only */
	struct fleet_config cfg;
	/* --peer-unit/--peer-cgroup: the cgroup (its cgroupfs directory) the
	 * peer must be in; "" = any peer of the right uid */
	char peer_cgroup[PATH_MAX];
} g = { .lfd = -1, .cfd = -1, .efd = -1, .mu = PTHREAD_MUTEX_INITIALIZER,
	.cv = PTHREAD_COND_INITIALIZER };

/* ---- the worker --------------------------------------------------------------- */

/* The unit loads /etc/rerand/fleet-tls (root-only) with
 * LoadCredential=rerand-fleet:/etc/rerand/fleet-tls.  For a directory, systemd
 * loads each regular file in it, recursively and skipping symlinks, as a
 * credential named after the ID and the file's path below the directory with
 * '/' turned into '_' (systemd 252 src/core/execute.c and 257
 * src/core/exec-credential.c, load_cred_recurse_dir_cb): ca.pem arrives as
 * $CREDENTIALS_DIRECTORY/rerand-fleet_ca.pem. */
#define CRED_ID  "rerand-fleet"
#define CRED_DIR "/etc/rerand/fleet-tls/"

/* The credential name systemd gives the file at path: its path below CRED_DIR,
 * or, for a file elsewhere, its base name (a unit whose LoadCredential= an
 * admin pointed at another directory). */
static void credential_name(const char *path, char *name, size_t len)
{
	const char *rel = path;
	size_t o;

	if (!strncmp(path, CRED_DIR, strlen(CRED_DIR)))
		rel = path + strlen(CRED_DIR);
	else if (strrchr(path, '/'))
		rel = strrchr(path, '/') + 1;
	o = (size_t)snprintf(name, len, "%s_", CRED_ID);
	for (; *rel && o + 1 < len; rel++)
		name[o++] = *rel == '/' ? '_' : *rel;
	name[o < len ? o : len - 1] = 0;
}

/* Point a CACert=, Cert=, Key= or PasswordFile= path at what the helper can read:
 * systemd's copy of it when there is one, else the file itself (a test, or a
 * world-readable CA such as /etc/ssl/certs/...).  Neither: -errno and a message
 * naming the setting, the file and the credential looked for. */
static int credential(const char *key, char *path, size_t len, char *err, size_t errlen)
{
	const char *dir = getenv("CREDENTIALS_DIRECTORY");
	char name[FLEET_STR], p[FLEET_STR + 512];
	int r;

	if (!*path)
		return 0;
	credential_name(path, name, sizeof(name));
	if (dir && *dir) {
		snprintf(p, sizeof(p), "%s/%s", dir, name);
		if (access(p, R_OK) == 0) {
			if (strlen(p) >= len) {
				snprintf(err, errlen, "%s=%.200s: the credential's path is too long",
					 key, path);
				return -ENAMETOOLONG;
			}
			snprintf(path, len, "%s", p);
			return 0;
		}
	}
	if (access(path, R_OK) == 0)
		return 0;
	r = -errno;
	if (dir && *dir)
		snprintf(err, errlen, "%s=%.96s: no credential %.96s in $CREDENTIALS_DIRECTORY "
			 "(%.48s) and the file is not readable here (%s): put it (not a symlink) "
			 "in " CRED_DIR ", which rerand-fleetd.service loads as "
			 "LoadCredential=" CRED_ID ":/etc/rerand/fleet-tls",
			 key, path, name, dir, strerror(-r));
	else
		snprintf(err, errlen, "%s=%.120s: cannot read: %s (and no $CREDENTIALS_DIRECTORY: "
			 "not started by rerand-fleetd.service, which would pass it as the "
			 "credential %.120s)", key, path, strerror(-r), name);
	return r;
}

static int do_open(const struct fleet_request *q, struct fleet_reply *p)
{
	struct fleet_config c;
	char err[FLEET_MSG_MAX];
	int r;

	fleet_config_defaults(&c);
	for (unsigned i = 0; i < q->nr_args; i++) {
		char *eq = strchr(q->args[i], '=');
		if (!eq) {
			snprintf(p->msg, sizeof(p->msg), "open: %s is not KEY=VALUE", q->args[i]);
			return -EINVAL;
		}
		*eq = 0;
		if (!strcmp(q->args[i], "HelperSocket"))
			continue;      /* rerandd's setting */
		r = fleet_config_set(&c, q->args[i], eq + 1, err, sizeof(err));
		if (r < 0) {
			snprintf(p->msg, sizeof(p->msg), "%s", err);
			return r;
		}
	}
	/* a missing file fails the open, naming it: curl would only say "Problem
	 * with the SSL CA cert" at every request */
	if ((r = credential("CACert", c.ca_cert, sizeof(c.ca_cert), err, sizeof(err))) < 0 ||
	    (r = credential("Cert", c.cert, sizeof(c.cert), err, sizeof(err))) < 0 ||
	    (r = credential("Key", c.key, sizeof(c.key), err, sizeof(err))) < 0 ||
	    (r = credential("PasswordFile", c.password_file, sizeof(c.password_file), err,
			    sizeof(err))) < 0) {
		snprintf(p->msg, sizeof(p->msg), "%s", err);
		rr_log(RR_LOG_ERR, "%s", err);
		return r;
	}
	fleet_close(g.f);
	g.f = NULL;
	r = fleet_open(&c, &g.f, err, sizeof(err));
	if (r < 0) {
		snprintf(p->msg, sizeof(p->msg), "%s", err);
		return r;
	}
	g.cfg = c;
	rr_log(RR_LOG_INFO, "%s client for group %s, identity %s", fleet_backend_name(c.backend),
	       c.group, fleet_identity(g.f));
	return 0;
}

static void run_job(struct job *j)
{
	struct fleet_request *q = &j->q;
	struct fleet_reply *p = &j->p;
	int r;

	memset(p, 0, sizeof(*p));
	p->seq = q->seq;
	rr_log(RR_LOG_DEBUG, "request %u: %s", q->seq, fleet_verb_name(q->verb));
	if (q->verb == FLEET_V_OPEN)
		r = do_open(q, p);
	else if (!g.f) {
		snprintf(p->msg, sizeof(p->msg), "the fleet client is not configured yet");
		r = -ENOTCONN;
	} else {
		switch (q->verb) {
		case FLEET_V_ACQUIRE: r = fleet_acquire(g.f); break;
		case FLEET_V_REFRESH: r = fleet_refresh(g.f); break;
		case FLEET_V_DOWN: r = fleet_down(g.f); break;
		case FLEET_V_RELEASE: r = fleet_release(g.f); break;
		case FLEET_V_RESUME: r = fleet_resume(g.f, q->args[0]); break;
		case FLEET_V_STATUS:
			r = fleet_status(g.f, &p->st);
			p->has_status = r >= 0;
			break;
		case FLEET_V_RELEASE_HOST: r = fleet_release_host(g.f, q->args[0]); break;
		case FLEET_V_FAILED: {
			char *end;
			long long at = strtoll(q->args[1], &end, 10);
			/* a bad time is refused by the record's key parser in etcd
			 * anyway; 0 makes the refusal say so */
			r = fleet_record_failure(g.f, q->args[0], *end || at <= 0 ? 0 : at);
			break;
		}
		case FLEET_V_BREAKER: r = fleet_breaker(g.f); break;
		case FLEET_V_CLEAR_BREAKER: r = fleet_clear_breaker(g.f); break;
		default: r = -EINVAL; break;
		}
		/* the server's words, escaped here: the reply carries no control bytes */
		rr_escape_str(p->msg, sizeof(p->msg), fleet_last_error(g.f));
	}
	p->rc = r < -4095 ? -EIO : r > 1 ? 1 : r;
	if (q->verb == FLEET_V_RELEASE_HOST && r >= 0)
		/* the count of freed slots travels in the message */
		snprintf(p->msg, sizeof(p->msg), "%d", r);
	if (g.f) {
		p->state = fleet_state(g.f);
		p->errors = fleet_errors(g.f);
		snprintf(p->id, sizeof(p->id), "%s", fleet_identity(g.f));
		fleet_token(g.f, p->token, sizeof(p->token));
	} else {
		p->state = FLEET_ST_ERROR;
	}
}

static void *worker(void *arg)
{
	uint64_t one = 1;

	pthread_mutex_lock(&g.mu);
	for (;;) {
		struct job *j;
		while (!g.quit && !g.nr_todo)
			pthread_cond_wait(&g.cv, &g.mu);
		if (g.quit)
			break;
		j = g.todo[0];
		memmove(g.todo, g.todo + 1, --g.nr_todo * sizeof(g.todo[0]));
		pthread_mutex_unlock(&g.mu);
		run_job(j);
		pthread_mutex_lock(&g.mu);
		if (g.nr_done < QUEUE_MAX)
			g.done[g.nr_done++] = j;
		else
			free(j);
		if (write(g.efd, &one, sizeof(one)) < 0)
			rr_log(RR_LOG_ERR, "eventfd: %s", strerror(errno));
	}
	pthread_mutex_unlock(&g.mu);
	return NULL;
}

/* ---- the socket ---------------------------------------------------------------- */

static void drop_client(const char *why)
{
	if (g.cfd < 0)
		return;
	if (why)
		rr_log(RR_LOG_WARNING, "rerandd connection closed: %s", why);
	g.cio = sd_event_source_disable_unref(g.cio);
	close(g.cfd);
	g.cfd = -1;
	g.inlen = 0;
	g.gen++;                        /* replies still on their way are dropped */
}

static void send_line(const char *buf, size_t n)
{
	while (n && g.cfd >= 0) {
		ssize_t w = send(g.cfd, buf, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			drop_client(w < 0 ? strerror(errno) : "short write");
			return;
		}
		buf += w;
		n -= (size_t)w;
	}
}

static void send_reply(const struct fleet_reply *p)
{
	static char line[FLEET_LINE_MAX];
	int n = fleet_proto_format_reply(p, line, sizeof(line));

	if (n < 0) {
		rr_log(RR_LOG_ERR, "reply %u does not fit a line", p->seq);
		return;
	}
	send_line(line, (size_t)n);
}

static int on_done(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	struct job *done[QUEUE_MAX];
	unsigned n;
	uint64_t v;

	if (read(g.efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		rr_log(RR_LOG_ERR, "eventfd: %s", strerror(errno));
	pthread_mutex_lock(&g.mu);
	n = g.nr_done;
	memcpy(done, g.done, n * sizeof(done[0]));
	g.nr_done = 0;
	pthread_mutex_unlock(&g.mu);
	for (unsigned i = 0; i < n; i++) {
		if (done[i]->gen == g.gen)
			send_reply(&done[i]->p);
		free(done[i]);
	}
	return 0;
}

static void handle_line(const char *line, size_t len)
{
	_cleanup_free_ struct job *j = calloc(1, sizeof(*j));

	if (!j) {
		drop_client("out of memory");
		return;
	}
	if (fleet_proto_parse_request(line, len, &j->q) < 0) {
		drop_client("a request out of shape");
		return;
	}
	j->gen = g.gen;
	pthread_mutex_lock(&g.mu);
	if (g.nr_todo < QUEUE_MAX) {
		g.todo[g.nr_todo++] = TAKE_PTR(j);       /* the worker's now */
		pthread_cond_signal(&g.cv);
	}
	pthread_mutex_unlock(&g.mu);
	if (j) {
		j->p.seq = j->q.seq;
		j->p.rc = -EBUSY;
		j->p.state = FLEET_ST_ERROR;
		snprintf(j->p.msg, sizeof(j->p.msg), "the fleet helper is busy (%d requests queued)",
			 QUEUE_MAX);
		send_reply(&j->p);
	}
}

static int on_client(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	ssize_t n;
	char *nl;

	n = recv(fd, g.in + g.inlen, sizeof(g.in) - g.inlen, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		drop_client(n < 0 ? strerror(errno) : NULL);
		return 0;
	}
	g.inlen += (size_t)n;
	while (g.cfd >= 0 && (nl = memchr(g.in, '\n', g.inlen))) {
		size_t l = (size_t)(nl - g.in);
		handle_line(g.in, l);
		if (g.cfd < 0)
			return 0;
		memmove(g.in, nl + 1, g.inlen - l - 1);
		g.inlen -= l + 1;
	}
	if (g.inlen == sizeof(g.in))
		drop_client("a line longer than the protocol allows");
	return 0;
}

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	struct timeval tv = { .tv_sec = 2 };
	_cleanup_close_ int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);

	if (c < 0)
		return 0;
	/* root (rerandd under systemd) or our own user (a test): nobody else */
	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 ||
	    (cr.uid != 0 && cr.uid != geteuid())) {
		rr_log(RR_LOG_WARNING, "refused a client with uid %u", (unsigned)cr.uid);
		return 0;
	}
	/* and, with --peer-unit (the unit's own setting), rerandd.service's
	 * process, not any root process: refused, it replaces nothing */
	{
		char why[PATH_MAX + 128];
		if (fleetd_peer_in_cgroup(g.peer_cgroup, c, &cr, why, sizeof(why)) < 0) {
			rr_log(RR_LOG_WARNING, "refused a client with uid %u, pid %d: not in rerandd's "
			       "unit (%s); the connection of rerandd, if any, stays", (unsigned)cr.uid,
			       (int)cr.pid, why);
			return 0;
		}
	}
	/* one rerandd: a new connection is a restarted rerandd */
	drop_client(g.cfd >= 0 ? "a new connection replaces it" : NULL);
	g.cfd = TAKE_FD(c);
	setsockopt(g.cfd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (sd_event_add_io(g.ev, &g.cio, g.cfd, EPOLLIN, on_client, NULL) < 0) {
		drop_client("sd-event");
		return 0;
	}
	send_line(FLEET_PROTO_GREETING "\n", strlen(FLEET_PROTO_GREETING) + 1);
	rr_log(RR_LOG_DEBUG, "rerandd connected (pid %d)", (int)cr.pid);
	return 0;
}

static int listen_on(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		rr_log(RR_LOG_ERR, "%s: too long for a unix socket path", path);
		return -ENAMETOOLONG;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(path);
	/* 0600 from the start: no window in which another user could connect */
	mode_t old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4) < 0) {
		int r = -errno;
		umask(old);
		rr_log(RR_LOG_ERR, "%s: cannot listen: %s", path, strerror(-r));
		return r;
	}
	umask(old);
	return TAKE_FD(fd);
}

static void usage(FILE *f)
{
	fputs("Usage: rerand-fleetd [--socket PATH] [--peer-unit UNIT | --peer-cgroup DIR] [--debug] [--version]\n"
	      "rerandd's fleet lock client (etcd, FleetLock); see rerand-fleetd(8).\n", f);
}

/* The command line: -1 to go on (path: --socket's, or NULL), else the
 * exit status. */
static int parse_args(int argc, char **argv, const char **path)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "debug", no_argument, NULL, 'D' },
		{ "peer-unit", required_argument, NULL, 'u' },
		{ "peer-cgroup", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "s:hV", opts, NULL)) != -1) {
		switch (c) {
		case 's': *path = optarg; break;
		case 'D': rr_log_level = RR_LOG_DEBUG; break;
		case 'u':
			if (fleetd_peer_unit_dir(optarg, g.peer_cgroup, sizeof(g.peer_cgroup)) < 0)
				return 2;
			break;
		case 'c':
			if (optarg[0] != '/' || strlen(optarg) >= sizeof(g.peer_cgroup)) {
				rr_log(RR_LOG_ERR, "--peer-cgroup %s: not an absolute path", optarg);
				return 2;
			}
			snprintf(g.peer_cgroup, sizeof(g.peer_cgroup), "%s", optarg);
			break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("rerand-fleetd %s\n", RERAND_VERSION); return 0;
		default: usage(stderr); return EX_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rerand-fleetd: unexpected operand '%s' (it takes options only)\n",
			argv[optind]);
		usage(stderr);
		return EX_USAGE;
	}
	return -1;
}

int main(int argc, char **argv)
{
	const char *path = NULL;
	pthread_t th;
	sigset_t ss;
	int r, n;

	if ((r = parse_args(argc, argv, &path)) >= 0)
		return r;
	n = sd_listen_fds(1);
	if (n > 1) {
		rr_log(RR_LOG_ERR, "systemd passed %d sockets; want one", n);
		return 1;
	}
	if (n == 1)
		g.lfd = SD_LISTEN_FDS_START;
	else if (path)
		g.lfd = listen_on(path);
	else {
		/* how it was run, not what went wrong while running */
		rr_log(RR_LOG_ERR, "no socket: run from rerand-fleetd.socket or give --socket PATH");
		return EX_USAGE;
	}
	if (g.lfd < 0)
		return 1;
	g.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (g.efd < 0) {
		rr_log(RR_LOG_ERR, "eventfd: %s", strerror(errno));
		return 1;
	}
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sigprocmask(SIG_BLOCK, &ss, NULL);     /* before the thread: it inherits the mask */
	if ((r = pthread_create(&th, NULL, worker, NULL)) != 0) {
		rr_log(RR_LOG_ERR, "cannot start the worker thread: %s", strerror(r));
		return 1;
	}
	if ((r = sd_event_default(&g.ev)) < 0 ||
	    (r = sd_event_add_signal(g.ev, NULL, SIGTERM, NULL, NULL)) < 0 ||
	    (r = sd_event_add_signal(g.ev, NULL, SIGINT, NULL, NULL)) < 0 ||
	    (r = sd_event_add_io(g.ev, NULL, g.lfd, EPOLLIN, on_accept, NULL)) < 0 ||
	    (r = sd_event_add_io(g.ev, NULL, g.efd, EPOLLIN, on_done, NULL)) < 0) {
		rr_log(RR_LOG_ERR, "sd-event setup: %s", strerror(-r));
		return 1;
	}
	sd_notify(0, "READY=1");
	r = sd_event_loop(g.ev);
	sd_notify(0, "STOPPING=1");
	drop_client(NULL);
	if (path && n != 1)
		unlink(path);
	/* the worker may sit in a request for Timeout= seconds: do not wait for it.
	 * A held lease is not released here; it outlives the reboot on purpose. */
	return r < 0 ? 1 : 0;
}
