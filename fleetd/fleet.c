/* SPDX-License-Identifier: GPL-2.0-only */
/* The fleet client's state machine: which backend, the identity, the lock's
 * state and error count.  It calls a backend through its ops table only. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "fleetd.h"
#include "backend.h"

struct fleet {
	struct fleet_config cfg;
	char id[FLEET_ID_MAX];
	enum fleet_state state;
	uint64_t errors;
	unsigned attempts;           /* refusals/errors since the last success */
	struct fleet_conn conn;      /* transport and error text, lent to the backend */
	const struct fleet_backend_ops *ops;
	void *be;
};

/* etcd's password: the first line of path, read into out only (no copy left in
 * freed memory), never echoed in a message. */
static int read_password(const char *path, char *out, size_t len, char *err, size_t errlen)
{
	_cleanup_close_ int fd = -1;
	char buf[512];
	ssize_t n;
	size_t e;
	int r = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "PasswordFile=%s: cannot open: %s", path, strerror(-r));
		return r;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0) {
		r = -errno;
		snprintf(err, errlen, "PasswordFile=%s: cannot read: %s", path, strerror(-r));
		return r;
	}
	buf[n > 0 ? n : 0] = 0;
	e = strcspn(buf, "\r\n");
	if (!e || e >= len) {
		snprintf(err, errlen, "PasswordFile=%s: want the password on the first line "
			 "(1 to %zu bytes)", path, len - 1);
		r = -EINVAL;
	}
	for (size_t i = 0; !r && i < e; i++)
		if (iscntrl((unsigned char)buf[i])) {
			snprintf(err, errlen, "PasswordFile=%s: the password has a control character",
				 path);
			r = -EINVAL;
		}
	if (!r) {
		memcpy(out, buf, e);
		out[e] = 0;
	}
	explicit_bzero(buf, sizeof(buf));
	return r;
}

static void fleet_closep(struct fleet **f)
{
	fleet_close(*f);
}

int fleet_open(const struct fleet_config *c, struct fleet **ret, char *err, size_t errlen)
{
	_cleanup_(fleet_closep) struct fleet *f = NULL;
	int r;

	r = fleet_config_validate(c, err, errlen);
	if (r)
		return r;
	/* every lock server URL as curl itself reads it, before any is used */
	if (c->backend == FLEET_BACKEND_FLEETLOCK)
		r = fleet_http_check_url(c, "URL", c->url, "", err, errlen);
	for (unsigned i = 0; !r && c->backend == FLEET_BACKEND_ETCD && i < c->nr_endpoints; i++)
		r = fleet_http_check_url(c, "Endpoints", c->endpoints[i], "", err, errlen);
	if (r)
		return r;
	f = calloc(1, sizeof(*f));
	if (!f) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	f->cfg = *c;
	f->state = c->backend == FLEET_BACKEND_NONE ? FLEET_ST_DISABLED : FLEET_ST_IDLE;
	if (*c->id)
		snprintf(f->id, sizeof(f->id), "%s", c->id);
	else if (c->backend != FLEET_BACKEND_NONE) {
		r = fleet_read_identity(c->machine_id, f->id, sizeof(f->id), err, errlen);
		if (r)
			return r;
	}
	if (*c->install_id && *f->id) {
		/* the slot names this install, not only the machine id a clone shares */
		size_t n = strlen(f->id), m = strlen(c->install_id);
		if (n + 1 + m >= sizeof(f->id)) {
			snprintf(err, errlen, "the identity %s with its install id is too long", f->id);
			return -EINVAL;
		}
		f->id[n] = FLEET_ID_SEP;
		memcpy(f->id + n + 1, c->install_id, m + 1);
	}
	if (c->backend != FLEET_BACKEND_NONE) {
		f->ops = c->backend == FLEET_BACKEND_ETCD ? &fleet_etcd_ops : &fleet_lock_ops;
		r = fleet_conn_init(&f->conn, &f->cfg, f->id, err, errlen);
		if (r)
			return r;
		if (c->backend == FLEET_BACKEND_ETCD && *c->password_file) {
			r = read_password(c->password_file, f->conn.password,
					  sizeof(f->conn.password), err, errlen);
			if (r)
				return r;
		}
		f->be = f->ops->create();
		if (!f->be) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	*ret = TAKE_PTR(f);
	return 0;
}

void fleet_close(struct fleet *f)
{
	if (!f)
		return;
	if (f->ops && f->be)
		f->ops->destroy(f->be);
	fleet_conn_fini(&f->conn);
	explicit_bzero(&f->conn, sizeof(f->conn));
	free(f);
}

/* Fold a backend result into the state machine: errors are counted once per
 * failed operation and leave the lock in ERROR (fail closed). */
static int settle(struct fleet *f, int r, enum fleet_state on_zero)
{
	if (r < 0) {
		f->errors++;
		f->attempts++;
		f->state = FLEET_ST_ERROR;
	} else if (r == 0) {
		f->attempts++;
		f->state = on_zero;
	} else {
		f->attempts = 0;
		f->conn.err[0] = 0;
		f->state = FLEET_ST_HELD;
	}
	return r;
}

int fleet_acquire(struct fleet *f)
{
	if (!f->ops)
		return 1;
	return settle(f, f->ops->acquire(&f->conn, f->be), FLEET_ST_WAITING);
}

int fleet_refresh(struct fleet *f)
{
	if (!f->ops)
		return 1;
	return settle(f, f->ops->refresh(&f->conn, f->be), FLEET_ST_IDLE);
}

int fleet_down(struct fleet *f)
{
	if (!f->ops)
		return 1;
	if (!f->ops->down)
		return fleet_refresh(f);
	return settle(f, f->ops->down(&f->conn, f->be), FLEET_ST_IDLE);
}

int fleet_release(struct fleet *f)
{
	int r;

	if (!f->ops)
		return 0;
	r = f->ops->release(&f->conn, f->be);
	if (r < 0) {
		f->errors++;
		f->state = FLEET_ST_ERROR;
	} else {
		f->state = FLEET_ST_IDLE;
		f->conn.err[0] = 0;
	}
	return r;
}

int fleet_token(const struct fleet *f, char *buf, size_t len)
{
	if (!f->ops) {
		if (len)
			buf[0] = 0;
		return 0;
	}
	return f->ops->token(f->be, buf, len);
}

int fleet_resume(struct fleet *f, const char *token)
{
	if (!f->ops)
		return 1;
	return settle(f, f->ops->resume(&f->conn, f->be, token), FLEET_ST_IDLE);
}

int fleet_status(struct fleet *f, struct fleet_status *st)
{
	int r;

	memset(st, 0, sizeof(*st));
	st->max_concurrent = f->cfg.max_concurrent;
	if (!f->ops || !f->ops->status) {
		fleet_conn_error(&f->conn, "the %s backend cannot list holders",
				 fleet_backend_name(f->cfg.backend));
		return -EOPNOTSUPP;
	}
	r = f->ops->status(&f->conn, f->be, st);
	if (r < 0)
		f->errors++;
	return r;
}

int fleet_release_host(struct fleet *f, const char *host)
{
	int r;

	if (!f->ops || !f->ops->release_host) {
		fleet_conn_error(&f->conn, "the %s backend cannot free another host's slot",
				 fleet_backend_name(f->cfg.backend));
		return -EOPNOTSUPP;
	}
	r = f->ops->release_host(&f->conn, f->be, host);
	if (r < 0)
		f->errors++;
	return r;
}

/* The breaker calls leave the lock's state alone: they are about the group. */
static int breaker_op(struct fleet *f, int r)
{
	if (r < 0)
		f->errors++;
	return r;
}

static bool breaker_supported(struct fleet *f)
{
	if (f->ops && f->ops->failed)
		return true;
	fleet_conn_error(&f->conn, "the %s backend has no place for the group-wide breaker "
			 "(etcd only)", fleet_backend_name(f->cfg.backend));
	return false;
}

int fleet_record_failure(struct fleet *f, const char *cause, int64_t at)
{
	if (!breaker_supported(f))
		return -EOPNOTSUPP;
	return breaker_op(f, f->ops->failed(&f->conn, f->be, cause, at));
}

int fleet_breaker(struct fleet *f)
{
	if (!breaker_supported(f))
		return -EOPNOTSUPP;
	return breaker_op(f, f->ops->breaker(&f->conn, f->be));
}

int fleet_clear_breaker(struct fleet *f)
{
	if (!breaker_supported(f))
		return -EOPNOTSUPP;
	return breaker_op(f, f->ops->clear_breaker(&f->conn, f->be));
}

enum fleet_state fleet_state(const struct fleet *f) { return f->state; }
const char *fleet_identity(const struct fleet *f) { return f->id; }
uint64_t fleet_errors(const struct fleet *f) { return f->errors; }
const char *fleet_last_error(const struct fleet *f) { return f->conn.err; }

int64_t fleet_next_delay_ms(struct fleet *f, uint64_t rnd)
{
	return fleet_backoff_ms(f->attempts ? f->attempts - 1 : 0, f->cfg.retry_base_ms,
				f->cfg.retry_max_ms, rnd);
}
