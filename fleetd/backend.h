/* SPDX-License-Identifier: GPL-2.0-only */
/* What a fleet backend is given and must provide.  A backend sees the settings,
 * the identity, the HTTP transport and an error buffer (struct fleet_conn), and
 * answers through struct fleet_backend_ops; it never calls the state machine
 * (fleet.c), which is the only caller of the ops. */
#ifndef RERAND_FLEETD_BACKEND_H
#define RERAND_FLEETD_BACKEND_H

#include <stdlib.h>

#include "fleet.h"

typedef struct json_object *json_object_ptr;

struct fleet_http_reply {
	long  status;           /* HTTP status, 0 = no answer */
	char *body;             /* NUL-terminated, owned by the caller of fleet_http_post */
	size_t len;
};

/* A reply whose body is freed when it goes out of scope (initialize it
 * with { 0 }: fleet_http_post leaves body NULL when no answer came). */
static inline void fleet_http_reply_done(struct fleet_http_reply *r)
{
	free(r->body);
}
#define _cleanup_reply_ __attribute__((cleanup(fleet_http_reply_done)))

struct fleet_conn {
	const struct fleet_config *cfg;
	const char *id;                  /* this host's identity */
	void *curl;                      /* the easy handle, reused between requests */
	char password[256];              /* etcd auth: from PasswordFile=, never logged */
	char auth_token[2048];           /* etcd auth: the token it gave, "" = none yet */
	char err[FLEET_MSG_MAX];         /* why the last call failed or was refused */
};

/* ---- fleet_http.c ------------------------------------------------------------ */
int  fleet_conn_init(struct fleet_conn *c, const struct fleet_config *cfg, const char *id,
		     char *err, size_t errlen);
void fleet_conn_fini(struct fleet_conn *c);
/* The URL a request to base + path goes to (a bare host:port gets its scheme):
 * 0, or -ENAMETOOLONG. */
int  fleet_http_url(const struct fleet_config *cfg, const char *base, const char *path,
		    char *buf, size_t len);
/* base + path (path "" for the base alone) as curl's own URL parser reads it
 * (curl_url): http or https only, no user info, login options, query,
 * fragment or zone id, the host the one fleet_url_parse() found, and the
 * plaintext rule applied to that host.  0, or -EINVAL with "KEY=BASE: why". */
int  fleet_http_check_url(const struct fleet_config *cfg, const char *key, const char *base,
			  const char *path, char *err, size_t errlen);
/* POST body to base + path; 0 with any HTTP answer, -EIO/-ETIMEDOUT when none came. */
int  fleet_http_post(struct fleet_conn *c, const char *base, const char *path, const char *body,
		     bool fleetlock_header, struct fleet_http_reply *r);
void fleet_conn_error(struct fleet_conn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- the interface ------------------------------------------------------------
 * Results as in fleetd.h: 1 held, 0 refused or lost, <0 the backend could not be
 * asked; the reason in c->err. */
struct fleet_backend_ops {
	const char *name;
	void *(*create)(void);
	void  (*destroy)(void *be);
	int   (*acquire)(struct fleet_conn *c, void *be);
	int   (*refresh)(struct fleet_conn *c, void *be);
	/* as refresh, then the slot outlasts the reboot; NULL: refresh (FleetLock
	 * holds without expiry) */
	int   (*down)(struct fleet_conn *c, void *be);
	/* 0 released (or nothing was held), <0 not known to be released */
	int   (*release)(struct fleet_conn *c, void *be);
	int   (*resume)(struct fleet_conn *c, void *be, const char *token);
	int   (*token)(const void *be, char *buf, size_t len);
	/* NULL where the protocol cannot list holders or free another's slot */
	int   (*status)(struct fleet_conn *c, void *be, struct fleet_status *st);
	int   (*release_host)(struct fleet_conn *c, void *be, const char *host);
	/* the group-wide breaker; NULL where the protocol has no place for it */
	int   (*failed)(struct fleet_conn *c, void *be, const char *cause, int64_t at);
	int   (*breaker)(struct fleet_conn *c, void *be);
	int   (*clear_breaker)(struct fleet_conn *c, void *be);
};
extern const struct fleet_backend_ops fleet_etcd_ops;   /* fleet_etcd.c */
extern const struct fleet_backend_ops fleet_lock_ops;   /* fleet_lock.c */

/* ---- fleet_etcd.c / fleet_etcd_breaker.c ------------------------------------- */
/* One gateway call with failover and authentication: 0 and the parsed reply. */
int fleet_etcd_call(struct fleet_conn *c, void *be, const char *path, const char *body,
		    json_object_ptr *ret);
/* Record a failure (1: the breaker is tripped now, 0: not); the breaker's
 * state (1/0) with the failures counted in c->err; clear it (1 it was
 * tripped, 0 it was not). */
int fleet_etcd_failed(struct fleet_conn *c, void *be, const char *cause, int64_t at);
int fleet_etcd_breaker(struct fleet_conn *c, void *be);
int fleet_etcd_clear_breaker(struct fleet_conn *c, void *be);
/* 1 and the breaker key's value (why may be NULL), 0 none, <0 unknown. */
int fleet_etcd_breaker_get(struct fleet_conn *c, void *be, char *why, size_t len);
/* The group's failure records in a range reply's text (keys under prefix,
 * at most FLEET_FAILURES_MAX): 0 and *n of them, -EBADMSG if it is not JSON. */
int fleet_etcd_parse_failures(const char *body, const char *prefix, struct fleet_failure *f,
			      unsigned *n);

/* ---- fleet_b64.c: etcd's gateway speaks base64 keys and values --------------- */
int fleet_b64_encode(const void *in, size_t n, char *out, size_t outlen);
/* -EINVAL on bad input; *ret_n bytes written, out NUL-terminated when room. */
int fleet_b64_decode(const char *in, void *out, size_t outlen, size_t *ret_n);

/* ---- JSON bodies, exposed for the unit tests --------------------------------- */
/* FleetLock: {"client_params":{"id":ID,"group":GROUP}} */
int fleet_lock_body(const char *id, const char *group, char *buf, size_t len);
/* FleetLock error body {"kind":..,"value":..}: 0 and both strings, or -EBADMSG. */
int fleet_lock_parse_error(const char *body, char *kind, size_t klen, char *value,
			   size_t vlen);
/* etcd: a slot's value, "ID FENCE" ("ID" with fence ""): 0, or -ENOBUFS. */
int fleet_etcd_value(const char *id, const char *fence, char *buf, size_t len);
/* etcd: the txn that takes key with value under lease when the key does not
 * exist and, with from (else NULL), no key of [from, to) was written after
 * revision rev (the count of holders still stands). */
int fleet_etcd_acquire_body(const char *key, const char *value, int64_t lease, const char *from,
			    const char *to, int64_t rev, char *buf, size_t len);
/* etcd: move key (still value, on lease from) to to_value on lease to. */
int fleet_etcd_move_body(const char *key, const char *value, int64_t from, const char *to_value,
			 int64_t to, char *buf, size_t len);
/* etcd: delete key while it is still value (NULL: any value) and, mod_rev != 0,
 * unchanged (value NULL needs mod_rev). */
int fleet_etcd_delete_body(const char *key, const char *value, int64_t mod_rev, char *buf,
			   size_t len);
/* The semaphore's keys under a group's prefix: GROUP/holder/ID, one host's own
 * (etcd roles can limit a host to it), GROUP/slot/N, the numbered slots an
 * older rerand takes, and the marker GROUP/semaphore = "holders" once every
 * host of the group takes holder keys (docs/fleet.md). */
#define FLEET_ETCD_HOLDER_DIR "holder/"
#define FLEET_ETCD_MARKER     "semaphore"
#define FLEET_ETCD_HOLDERS    "holders"
struct fleet_etcd_group {
	int64_t revision;        /* the reply's header revision, 0 unknown */
	bool    has_marker;
	char    marker[FLEET_ID_MAX]; /* its value's first word */
};
/* etcd: parse a range response under a group's prefix into holders: numbered
 * slots (their number from the key) and holder keys (slot -1, the id their
 * key names); a value "ID FENCE" split into id and fence.  g (may be NULL)
 * gets the revision and the marker. */
int fleet_etcd_parse_range(const char *body, const char *prefix, unsigned max_concurrent,
			   struct fleet_status *st, struct fleet_etcd_group *g);

#endif
