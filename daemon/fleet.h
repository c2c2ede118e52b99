/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd's fleet coordination: at most K hosts of a group rebooting at once,
 * through an etcd v3 semaphore (leases) or a FleetLock server; fail closed. */
#ifndef RERAND_FLEET_H
#define RERAND_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FLEET_MAX_ENDPOINTS 8
#define FLEET_MAX_SLOTS     64
#define FLEET_STR           512
#define FLEET_ID_MAX        128
#define FLEET_GROUP_MAX     64
#define FLEET_TOKEN_MAX     64
#define FLEET_DEFAULT_MACHINE_ID "/etc/machine-id"

enum fleet_backend { FLEET_BACKEND_NONE = 0, FLEET_BACKEND_ETCD, FLEET_BACKEND_FLEETLOCK };

/* The [Fleet] section. */
struct fleet_config {
	enum fleet_backend backend;
	char     group[FLEET_GROUP_MAX];
	char     endpoints[FLEET_MAX_ENDPOINTS][FLEET_STR];
	unsigned nr_endpoints;
	char     ca_cert[FLEET_STR], cert[FLEET_STR], key[FLEET_STR];
	unsigned max_concurrent;
	int64_t  lock_ttl;          /* seconds; must outlast drain + reboot + boot */
	char     url[FLEET_STR];    /* FleetLock base URL */
	char     machine_id[FLEET_STR]; /* file holding the identity */
	char     id[FLEET_ID_MAX];  /* explicit identity (tests); "" = read machine_id */
	int64_t  timeout;           /* per request, seconds */
	int64_t  retry_base_ms, retry_max_ms; /* back-off between attempts */
};

void fleet_config_defaults(struct fleet_config *c);
/* One key of [Fleet]: 0, or -EINVAL/-ENOENT (unknown key) with a message in err. */
int fleet_config_set(struct fleet_config *c, const char *key, const char *value,
		     char *err, size_t errlen);
/* Cross-field checks once every file is read. */
int fleet_config_validate(const struct fleet_config *c, char *err, size_t errlen);
const char *fleet_backend_name(enum fleet_backend b);
/* The first line of path, trimmed; must be 1-127 printable non-space chars. */
int fleet_read_identity(const char *path, char *out, size_t len, char *err, size_t errlen);
/* FleetLock's group syntax, ^[a-zA-Z0-9.-]+$, used for etcd too (it is part of a key). */
bool fleet_group_valid(const char *g);

/* ---- pure helpers (unit-tested) ------------------------------------------ */
/* Capped exponential back-off with "equal jitter": with d = min(cap, base * 2^attempt),
 * the result is uniform in [d/2, d] from rnd.  attempt 0 is the first retry. */
int64_t fleet_backoff_ms(unsigned attempt, int64_t base_ms, int64_t cap_ms, uint64_t rnd);
/* When a due host should make its first attempt in a window [start, end):
 * uniform over the first half of what is left of the window from max(now, start),
 * so a fleet due at once does not stampede the backend when the window opens, and
 * the second half is left for retries.  0 if the window is over. */
int64_t fleet_spread_start(int64_t now, int64_t start, int64_t end, uint64_t rnd);
int fleet_b64_encode(const void *in, size_t n, char *out, size_t outlen);
/* -EINVAL on bad input; *ret_n bytes written, out NUL-terminated when room. */
int fleet_b64_decode(const char *in, void *out, size_t outlen, size_t *ret_n);

/* ---- the lock ------------------------------------------------------------ */
enum fleet_state {
	FLEET_ST_DISABLED = 0,  /* Backend=none: always allowed */
	FLEET_ST_IDLE,          /* nothing held, nothing wanted */
	FLEET_ST_WAITING,       /* wanted, the group is full */
	FLEET_ST_HELD,          /* a slot is ours */
	FLEET_ST_ERROR,         /* backend unreachable or refusing: fail closed */
};

struct fleet_holder {
	char    id[FLEET_ID_MAX];
	int     slot;           /* -1 for backends without slots */
	int64_t lease;          /* etcd lease id, 0 = none */
	int64_t ttl;            /* seconds left on the lease, -1 unknown */
	int64_t mod_revision;   /* etcd: for compare-and-delete */
};

struct fleet_status {
	unsigned max_concurrent;
	unsigned nr_holders;
	struct fleet_holder holders[FLEET_MAX_SLOTS];
	unsigned nr_stray;      /* slot keys outside 0..K-1 (a K changed fleet-wide) */
};

struct fleet;

/* Allocates; reads the identity.  -errno with a message in err. */
int fleet_open(const struct fleet_config *c, struct fleet **ret, char *err, size_t errlen);
void fleet_close(struct fleet *f);

/* Try to take a slot: 1 held (also when already held: the lock is recursive), 0 the
 * group is full or the server refused, <0 the backend could not be asked. */
int fleet_acquire(struct fleet *f);
/* Keep what we hold alive and check it is still ours: 1 held, 0 lost, <0 unknown.
 * The caller must treat anything but 1 as "do not reboot". */
int fleet_refresh(struct fleet *f);
/* Give back any slot this identity holds (FleetLock: steady-state). 0 or <0. */
int fleet_release(struct fleet *f);
/* What to persist across the reboot so the next boot can take the lease back. */
int fleet_token(const struct fleet *f, char *buf, size_t len);
/* After the boot: re-attach to the lease in token ("" = none).  1 the slot is still
 * ours, 0 it is gone (TTL expired or freed by an operator), <0 unknown. */
int fleet_resume(struct fleet *f, const char *token);
/* Holders and free slots as the backend reports them; -EOPNOTSUPP for FleetLock. */
int fleet_status(struct fleet *f, struct fleet_status *st);
/* Operator override: free every slot held by host.  Returns how many, or <0. */
int fleet_release_host(struct fleet *f, const char *host);

enum fleet_state fleet_state(const struct fleet *f);
const char *fleet_state_name(enum fleet_state s);
const char *fleet_identity(const struct fleet *f);
uint64_t fleet_errors(const struct fleet *f);
/* Why the last operation failed or was refused, "" if it did not. */
const char *fleet_last_error(const struct fleet *f);
/* Delay before the next attempt after a refusal or an error (back-off with jitter);
 * resets once a slot is held. */
int64_t fleet_next_delay_ms(struct fleet *f, uint64_t rnd);

/* rerand_fleet_lock_state and rerand_fleet_errors_total in Prometheus text format. */
int fleet_metrics_format(const struct fleet *f, char *buf, size_t len);
int fleet_status_format_text(const struct fleet_status *st, const char *group, char *buf,
			     size_t len);
int fleet_status_format_json(const struct fleet_status *st, const char *group, char *buf,
			     size_t len);

/* ---- JSON bodies, exposed for the unit tests ----------------------------- */
/* FleetLock: {"client_params":{"id":ID,"group":GROUP}} */
int fleet_lock_body(const char *id, const char *group, char *buf, size_t len);
/* FleetLock error body {"kind":..,"value":..}: 0 and both strings, or -EBADMSG. */
int fleet_lock_parse_error(const char *body, char *kind, size_t klen, char *value,
			   size_t vlen);
/* etcd: the txn that takes slot key for id under lease when the key does not exist. */
int fleet_etcd_acquire_body(const char *key, const char *id, int64_t lease, char *buf,
			    size_t len);
/* etcd: parse a range response into holders of prefix (slot number from the key suffix). */
int fleet_etcd_parse_range(const char *body, const char *prefix, unsigned max_concurrent,
			   struct fleet_status *st);

/* ---- backends (fleet_etcd.c, fleet_lock.c), called through fleet.c --------- */
struct fleet_http_reply {
	long  status;           /* HTTP status, 0 = no answer */
	char *body;             /* NUL-terminated, owned by the caller of fleet_http_post */
	size_t len;
};
/* POST body to base + path on one endpoint; -EIO etc. when no HTTP answer came. */
int fleet_http_post(struct fleet *f, const char *base, const char *path, const char *body,
		    bool fleetlock_header, struct fleet_http_reply *r);
void fleet_set_error(struct fleet *f, bool count, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
const struct fleet_config *fleet_config_of(const struct fleet *f);

struct fleet_etcd;
int  fleet_etcd_acquire(struct fleet *f, struct fleet_etcd *e);
int  fleet_etcd_refresh(struct fleet *f, struct fleet_etcd *e);
int  fleet_etcd_release(struct fleet *f, struct fleet_etcd *e);
int  fleet_etcd_resume(struct fleet *f, struct fleet_etcd *e, const char *token);
int  fleet_etcd_token(const struct fleet_etcd *e, char *buf, size_t len);
int  fleet_etcd_status(struct fleet *f, struct fleet_etcd *e, struct fleet_status *st);
int  fleet_etcd_release_host(struct fleet *f, struct fleet_etcd *e, const char *host);
struct fleet_etcd *fleet_etcd_new(void);
void fleet_etcd_free(struct fleet_etcd *e);

int fleet_lock_acquire(struct fleet *f);
int fleet_lock_release(struct fleet *f);

#endif
