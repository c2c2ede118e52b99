/* SPDX-License-Identifier: GPL-2.0-only */
/* coord's connection to rerand-fleetd: connect (non-blocking), check the peer,
 * send one request at a time, read replies on the sd-event loop, time out a
 * helper that does not answer, and reconnect with back-off.  Replies go to
 * co->on_reply (coord.c sets it); anything wrong drops the connection, and
 * coord fails closed.  This is the bottom of coord: the clocks and the wake
 * live here too, so the calls run one way, coord.c -> coord_ops.c -> here. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "rerandd.h"

/* Pacing (keepalives, back-off, timeouts) runs on CLOCK_BOOTTIME: a wall clock
 * stepped back would hold keepalives off until it caught up again, and unlike
 * CLOCK_MONOTONIC it counts a suspend, after which a keepalive is due at once.
 * Only the maintenance windows are wall time (coord_wall_ms). */
int64_t coord_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t coord_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t coord_rnd64(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint64_t)coord_now_ms() * 0x9e3779b97f4a7c15ull;
	return v;
}

void coord_wake(struct rr_coord *co)
{
	if (co->wake)
		co->wake(co->wake_arg);
}

void coord_set_wake(struct rr_coord *co, void (*fn)(void *arg), void *arg)
{
	co->wake = fn;
	co->wake_arg = arg;
}

#define HELPER_RETRY_MIN_MS 250
#define HELPER_RETRY_MAX_MS 30000

/* Longest a request may take: every endpoint timing out on each call of the
 * longest sequence (an etcd acquire: range, grant, K txns, revoke). */
static int64_t busy_limit_ms(const struct rr_coord *co)
{
	int64_t eps = co->cfg.nr_endpoints ? co->cfg.nr_endpoints : 1;

	return (co->cfg.timeout * eps * (4 + (int64_t)co->cfg.max_concurrent) + 10) * 1000;
}

void coord_link_down(struct rr_coord *co, const char *fmt, ...)
{
	char msg[RR_ERR_MAX];
	va_list ap;
	int64_t d;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (co->io) {
		co->io = sd_event_source_disable_unref(co->io);
		close(co->fd);
	}
	co->fd = -1;
	co->greeted = co->opened = false;
	co->inlen = 0;
	/* what was in flight failed: fail closed */
	if (co->busy == CO_ACQUIRE || co->next_op == CO_ACQUIRE)
		co->gate_rc = -EIO;
	if (co->busy == CO_CONFIRM || co->next_op == CO_CONFIRM || co->confirm_wanted)
		co->confirm_rc = -EIO;
	co->confirm_wanted = false;
	/* an operator's clear-breaker in flight: it is not known to be done */
	if (co->clear_pending) {
		char m[RR_ERR_MAX + 64];
		snprintf(m, sizeof(m), "the breaker is not known to be cleared: %s\n", msg);
		control_reply(co->clear_fd, false, m);
		close(co->clear_fd);
		co->clear_pending = co->clear_sent = false;
	}
	co->busy = co->next_op = CO_NONE;
	co->fstate = FLEET_ST_ERROR;
	if (strcmp(msg, co->open_error))
		rr_log(RR_LOG_ERR, "fleet: %s; reboots stay off (fail closed)", msg);
	snprintf(co->open_error, sizeof(co->open_error), "%s", msg);
	snprintf(co->last_error, sizeof(co->last_error), "%s", msg);
	d = fleet_backoff_ms(co->reconnects, HELPER_RETRY_MIN_MS, HELPER_RETRY_MAX_MS, coord_rnd64());
	if (co->reconnects < 64)
		co->reconnects++;
	co->reconnect_ms = coord_now_ms() + d;
	coord_link_arm(co, d);
	coord_wake(co);
}

static int add_kv(const char *k, const char *v, void *ud)
{
	struct fleet_request *q = ud;

	if (q->nr_args >= FLEET_ARGS_MAX)
		return -E2BIG;
	snprintf(q->args[q->nr_args++], sizeof(q->args[0]), "%s=%s", k, v);
	return 0;
}

/* One request out; the socket is non-blocking and a request is small, so a
 * full socket buffer means a helper that stopped reading: it is dropped. */
static int send_line(struct rr_coord *co, enum coord_op op, const char *arg, uint32_t *ret_seq);

int coord_link_send(struct rr_coord *co, enum coord_op op, const char *arg)
{
	uint32_t seq;
	int r;

	/* the settings go out at once; anything else after the greeting */
	if (!co->io || co->busy || (!co->greeted && op != CO_OPEN))
		return -EBUSY;
	r = send_line(co, op, arg, &seq);
	if (r < 0)
		return r;
	co->busy = op;
	co->busy_seq = seq;
	co->busy_since_ms = coord_now_ms();
	coord_link_arm(co, busy_limit_ms(co));
	return 0;
}

int coord_link_pipeline(struct rr_coord *co, enum coord_op op, const char *arg)
{
	uint32_t seq;
	int r;

	if (!co->io || !co->busy || co->next_op)
		return -EBUSY;
	r = send_line(co, op, arg, &seq);
	if (r < 0)
		return r;
	co->next_op = op;
	co->next_seq = seq;
	return 0;
}

static int send_line(struct rr_coord *co, enum coord_op op, const char *arg, uint32_t *ret_seq)
{
	static const enum fleet_verb verb[] = {
		[CO_OPEN] = FLEET_V_OPEN, [CO_RESUME] = FLEET_V_RESUME,
		[CO_ACQUIRE] = FLEET_V_ACQUIRE, [CO_KEEPALIVE] = FLEET_V_REFRESH,
		[CO_CONFIRM] = FLEET_V_DOWN, [CO_RELEASE] = FLEET_V_RELEASE,
		[CO_STATUS] = FLEET_V_STATUS, [CO_RELEASE_HOST] = FLEET_V_RELEASE_HOST,
		[CO_FAILED] = FLEET_V_FAILED, [CO_BREAKER] = FLEET_V_BREAKER,
		[CO_CLEAR_BREAKER] = FLEET_V_CLEAR_BREAKER,
	};
	static struct fleet_request q;
	char line[FLEET_ARGS_MAX * (FLEET_STR + 32) * 3 + 64];
	ssize_t w;
	int n;

	memset(&q, 0, sizeof(q));
	q.seq = ++co->seq;
	q.verb = verb[op];
	if (op == CO_OPEN && fleet_config_each(&co->cfg, add_kv, &q) < 0)
		return -E2BIG;
	if (arg && op == CO_FAILED) {
		/* "CAUSE TIME": two fields */
		size_t k = strcspn(arg, " ");
		snprintf(q.args[0], sizeof(q.args[0]), "%.*s", (int)k, arg);
		snprintf(q.args[1], sizeof(q.args[1]), "%s", arg[k] ? arg + k + 1 : "");
		q.nr_args = 2;
	} else if (arg) {
		snprintf(q.args[0], sizeof(q.args[0]), "%s", arg);
		q.nr_args = 1;
	}
	n = fleet_proto_format_request(&q, line, sizeof(line));
	if (n < 0)
		return n;
	w = send(co->fd, line, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (w != n) {
		coord_link_down(co, "cannot write to the fleet helper at %s: %s", co->cfg.helper,
			    w < 0 ? strerror(errno) : "short write");
		return -EIO;
	}
	*ret_seq = q.seq;
	return 0;
}

static void on_line(struct rr_coord *co, const char *line, size_t len)
{
	static struct fleet_reply p;

	if (!co->greeted) {
		if (len != strlen(FLEET_PROTO_GREETING) || memcmp(line, FLEET_PROTO_GREETING, len)) {
			coord_link_down(co, "%s does not speak %s", co->cfg.helper, FLEET_PROTO_GREETING);
			return;
		}
		co->greeted = true;     /* the settings went out with the connect */
		return;
	}
	if (fleet_proto_parse_reply(line, len, &p) < 0) {
		coord_link_down(co, "the fleet helper at %s sent a reply out of shape", co->cfg.helper);
		return;
	}
	if (!co->busy || p.seq != co->busy_seq) {
		coord_link_down(co, "the fleet helper at %s answered request %" PRIu32 ", which is "
			    "not in flight", co->cfg.helper, p.seq);
		return;
	}
	co->on_reply(co, &p);
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	struct rr_coord *co = ud;
	ssize_t n;
	char *nl;

	n = recv(fd, co->in + co->inlen, sizeof(co->in) - co->inlen, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		coord_link_down(co, "the fleet helper at %s closed the connection%s%s", co->cfg.helper,
			    n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
		return 0;
	}
	co->inlen += (size_t)n;
	while (co->io && (nl = memchr(co->in, '\n', co->inlen))) {
		size_t l = (size_t)(nl - co->in);
		on_line(co, co->in, l);
		if (!co->io)
			return 0;
		memmove(co->in, nl + 1, co->inlen - l - 1);
		co->inlen -= l + 1;
	}
	if (co->inlen == sizeof(co->in))
		coord_link_down(co, "the fleet helper at %s sent a line longer than the protocol "
			    "allows", co->cfg.helper);
	return 0;
}

/* Non-blocking: a unix socket connects at once or not at all. */
void coord_link_connect(struct rr_coord *co)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	_cleanup_close_ int fd = -1;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.107s", co->cfg.helper);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		coord_link_down(co, "socket: %s", strerror(errno));
		return;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		coord_link_down(co, "cannot reach the fleet helper at %s: %s (is rerand-fleetd.socket "
			    "enabled?)", co->cfg.helper, strerror(errno));
		return;
	}
	/* The peer must be root (systemd made the socket, root-only) or ourselves
	 * (a test): anyone else could grant a slot that does not exist. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 ||
	    (cr.uid != 0 && cr.uid != geteuid())) {
		coord_link_down(co, "%s: the socket belongs to uid %u, neither root nor rerandd's "
			    "user: refused", co->cfg.helper, (unsigned)cr.uid);
		return;
	}
	if (sd_event_add_io(co->ev, &co->io, fd, EPOLLIN, on_io, co) < 0) {
		coord_link_down(co, "sd-event: cannot watch the fleet helper's socket");
		return;
	}
	co->fd = TAKE_FD(fd);
	co->greeted = co->opened = false;
	co->inlen = 0;
	co->busy = co->next_op = CO_NONE;
	/* the settings at once (the helper reads them after its greeting), and
	 * the greeting must come, and soon */
	co->connected_ms = coord_now_ms();
	coord_link_arm(co, 5000);
	coord_link_send(co, CO_OPEN, NULL);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *ud)
{
	struct rr_coord *co = ud;
	int64_t now = coord_now_ms();

	if (!co->want)
		return 0;
	if (!co->io) {
		if (now >= co->reconnect_ms)
			coord_link_connect(co);
		else
			coord_link_arm(co, co->reconnect_ms - now);
		return 0;
	}
	if (!co->greeted && now - co->connected_ms >= 5000) {
		coord_link_down(co, "the fleet helper at %s did not greet", co->cfg.helper);
		return 0;
	}
	if (co->busy && now - co->busy_since_ms >= busy_limit_ms(co)) {
		coord_link_down(co, "the fleet helper at %s did not answer request %" PRIu32
			    " in %" PRId64 " s", co->cfg.helper, co->busy_seq,
			    busy_limit_ms(co) / 1000);
		return 0;
	}
	if (co->greeted && !co->opened && !co->busy && now >= co->reconnect_ms)
		coord_link_send(co, CO_OPEN, NULL);
	if (co->busy)
		coord_link_arm(co, co->busy_since_ms + busy_limit_ms(co) - now);
	else if (co->greeted && !co->opened)
		coord_link_arm(co, co->reconnect_ms > now ? co->reconnect_ms - now : 0);
	return 0;
}

void coord_link_arm(struct rr_coord *co, int64_t in_ms)
{
	uint64_t now;

	if (!co->ev)
		return;
	if (in_ms < 0)
		in_ms = 0;
	sd_event_now(co->ev, CLOCK_MONOTONIC, &now);
	if (!co->timer) {
		if (sd_event_add_time(co->ev, &co->timer, CLOCK_MONOTONIC,
				      now + (uint64_t)in_ms * 1000, 0, on_timer, co) < 0)
			rr_log(RR_LOG_ERR, "fleet: sd-event: cannot add a timer");
		return;
	}
	sd_event_source_set_time(co->timer, now + (uint64_t)in_ms * 1000);
	sd_event_source_set_enabled(co->timer, SD_EVENT_ONESHOT);
}

/* The next request nobody else starts: the persisted slot first, then a
 * confirm that waited for another request, then an operator's release. */
