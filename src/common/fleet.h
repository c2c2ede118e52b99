/* SPDX-License-Identifier: GPL-2.0-only */
/* What rerandd and its fleet helper (rerand-fleetd) share: the [Fleet] settings,
 * the pure timing helpers, the lock's states and holders, and the protocol they
 * speak over the helper's unix socket.  Nothing here does network I/O: the
 * client itself is fleetd/fleetd.h, in the helper only; what only rerandd
 * prints (`rerand fleet status`, the metrics) is daemon/fleet_format.h. */
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
/* etcd: the random fence of one acquisition, in the slot's value and in the
 * fleet token (LEASE:SLOT:FENCE); 32 hex digits written, up to 64 read. */
#define FLEET_FENCE_LEN     32
#define FLEET_FENCE_MAX     65
#define FLEET_MSG_MAX       512
#define FLEET_DEFAULT_MACHINE_ID "/etc/machine-id"
#define FLEET_DEFAULT_HELPER     "/run/rerand-fleetd/socket"
/* A holder is "MACHINEID~INSTALLID": the machine id alone cannot tell two hosts
 * cloned from one image apart, the install id (random, made once by rerandd
 * in its state directory) can. */
#define FLEET_ID_SEP '~'

enum fleet_backend { FLEET_BACKEND_NONE = 0, FLEET_BACKEND_ETCD, FLEET_BACKEND_FLEETLOCK };

/* The [Fleet] section. */
struct fleet_config {
	enum fleet_backend backend;
	char     group[FLEET_GROUP_MAX];
	char     endpoints[FLEET_MAX_ENDPOINTS][FLEET_STR];
	unsigned nr_endpoints;
	char     ca_cert[FLEET_STR], cert[FLEET_STR], key[FLEET_STR];
	char     user[FLEET_ID_MAX];        /* etcd auth user, "" = no etcd auth */
	char     password_file[FLEET_STR];  /* its password, one line (a credential) */
	bool     allow_plaintext;   /* http:// to a host that is not on loopback */
	unsigned max_concurrent;
	int64_t  lock_ttl;          /* seconds; must outlast drain + reboot + boot */
	int64_t  down_ttl;          /* seconds; the slot's lease across the reboot (etcd) */
	char     url[FLEET_STR];    /* FleetLock base URL */
	char     machine_id[FLEET_STR]; /* file holding the identity */
	char     id[FLEET_ID_MAX];  /* explicit identity (tests); "" = read machine_id */
	char     install_id[FLEET_ID_MAX]; /* per-install random id, "" = none (rerandd's) */
	int64_t  timeout;           /* per request, seconds */
	int64_t  retry_base_ms, retry_max_ms; /* back-off between attempts */
	char     helper[FLEET_STR]; /* the fleet helper's socket (rerandd only) */
	unsigned breaker_failures;  /* group-wide breaker: failures that trip it, 0 = off */
	int64_t  breaker_window;    /* seconds: only failures this recent count */
};

/* ---- fleet_config.c ------------------------------------------------------ */
void fleet_config_defaults(struct fleet_config *c);
/* One key of [Fleet]: 0, 1 when KEY matched a name only with its case
 * ignored (taken: rerand 0.1 took any case; the caller warns), or
 * -EINVAL/-ENOENT (unknown key) with a message in err. */
int fleet_config_set(struct fleet_config *c, const char *key, const char *value,
		     char *err, size_t errlen);
/* The [Fleet] keys in rerand.conf's order (the old names aside): the name
 * of key i (NULL past the last), and its value in c as a file has it. */
#define FLEET_NR_KEYS 22
const char *fleet_config_key(size_t i);
void fleet_config_get(const struct fleet_config *c, size_t i, char *out, size_t len);
/* The key a deprecated [Fleet] key name stands for (RetryBaseMSec ->
 * RetryBase), or NULL.  fleet_config_set() takes both. */
const char *fleet_config_alias(const char *key);
/* Cross-field checks once every file is read. */
int fleet_config_validate(const struct fleet_config *c, char *err, size_t errlen);
/* Call fn(key, value) for every key the helper needs (HelperSocket= is rerandd's). */
int fleet_config_each(const struct fleet_config *c,
		      int (*fn)(const char *key, const char *value, void *ud), void *ud);
const char *fleet_backend_name(enum fleet_backend b);
/* The first line of path, trimmed; must be 1-127 printable non-space chars. */
int fleet_read_identity(const char *path, char *out, size_t len, char *err, size_t errlen);
/* A lock server URL (Endpoints=, URL=) as the fleet accepts it: a strict subset
 * of URL syntax on which curl cannot read another host (no user info, query,
 * fragment or percent-encoding; see fleet_config.c). */
struct fleet_url {
	bool     https;            /* https://, or a bare host:port with CACert= */
	bool     has_scheme;       /* written with http:// or https:// */
	char     host[FLEET_STR];  /* a name, a dotted quad, or "[IPv6]" */
	unsigned port;             /* 0: none given */
};
/* 0, or -EINVAL with "KEY=URL: what is wrong" in err.  need_scheme: a bare
 * host:port is refused (URL=); has_ca: a bare one means https (Endpoints=). */
int fleet_url_parse(const char *key, const char *url, bool need_scheme, bool has_ca,
		    struct fleet_url *u, char *err, size_t errlen);
/* "localhost", 127.0.0.0/8 as a dotted quad, or "[::1]": the hosts the
 * plaintext rule lets through. */
bool fleet_host_loopback(const char *host);
/* A plaintext URL (http://, or a bare host:port without CACert=) to a host that is
 * not on loopback, or one that does not parse: true, and the host in host. */
bool fleet_url_plaintext_remote(const char *url, bool has_ca, char *host, size_t hlen);
/* The machine id part of a holder id (before FLEET_ID_SEP): its length. */
size_t fleet_holder_machine_len(const char *holder);
/* FleetLock's group syntax, ^[a-zA-Z0-9.-]+$, used for etcd too (it is part of a key). */
bool fleet_group_valid(const char *g);

/* Capped exponential back-off with "equal jitter": with d = min(cap, base * 2^attempt),
 * the result is uniform in [d/2, d] from rnd.  attempt 0 is the first retry. */
int64_t fleet_backoff_ms(unsigned attempt, int64_t base_ms, int64_t cap_ms, uint64_t rnd);
/* When a due host should make its first attempt in a window [start, end):
 * uniform over the first half of what is left of the window from max(now, start),
 * so a fleet due at once does not stampede the backend when the window opens, and
 * the second half is left for retries.  0 if the window is over. */
int64_t fleet_spread_start(int64_t now, int64_t start, int64_t end, uint64_t rnd);

/* ---- the lock's state and holders ------------------------------------------ */
enum fleet_state {
	FLEET_ST_DISABLED = 0,  /* Backend=none: always allowed */
	FLEET_ST_IDLE,          /* nothing held, nothing wanted */
	FLEET_ST_WAITING,       /* wanted, the group is full */
	FLEET_ST_HELD,          /* a slot is ours */
	FLEET_ST_ERROR,         /* backend unreachable or refusing: fail closed */
};
#define FLEET_ST_MAX FLEET_ST_ERROR
/* duration.c: systemd's time spans, "90s", "15min", "1d 12h", "250ms"; a bare
 * number is seconds.  In whole seconds (-EINVAL for "1500ms"), or in ms. */
int config_parse_duration(const char *s, int64_t *ret);
int config_parse_duration_ms(const char *s, int64_t *ret);
/* The same value as --dump-config prints it, which the parsers read back:
 * 90061 s -> "1d 1h 1min 1s", 5000 ms -> "5s", 250 ms -> "250ms", 0 -> "0". */
const char *config_format_duration(int64_t seconds, char *out, size_t len);
const char *config_format_duration_ms(int64_t ms, char *out, size_t len);
const char *fleet_state_name(enum fleet_state s);

struct fleet_holder {
	char    id[FLEET_ID_MAX];
	int     slot;           /* -1 for backends without slots */
	int64_t lease;          /* etcd lease id, 0 = none */
	int64_t ttl;            /* seconds left on the lease, -1 unknown */
	int64_t mod_revision;   /* etcd: for compare-and-delete */
	char    fence[FLEET_FENCE_MAX]; /* etcd: the acquisition's fence, "" = none;
	                         * rerand-fleetd's own, never sent to rerandd */
};

struct fleet_status {
	unsigned max_concurrent;
	unsigned nr_holders;
	struct fleet_holder holders[FLEET_MAX_SLOTS];
	unsigned nr_stray;      /* slot keys outside 0..K-1 (a K changed fleet-wide) */
};

/* ---- fleet_breaker.c: the group-wide breaker's pure logic ------------------
 * Every failed rerandomization of a host is a record FAILURE_PREFIX ID/TIME =
 * CAUSE under the group's prefix (etcd only: FleetLock has no place for it);
 * once BreakerFailures= of them are younger than BreakerWindowSec=, the
 * breaker key exists and no host of the group takes a slot until an operator
 * clears it. */
#define FLEET_CAUSE_MAX     32
#define FLEET_FAILURES_MAX  64
struct fleet_failure {
	char    id[FLEET_ID_MAX];
	char    cause[FLEET_CAUSE_MAX];
	int64_t at;             /* unix seconds, as the failing host saw it */
};
/* A cause name as rerandd writes it: 1-31 of [a-z0-9-]. */
bool fleet_cause_valid(const char *cause);
/* The part of a failure key after the prefix, "ID/TIME": 0, or -EINVAL. */
int fleet_failure_key_parse(const char *rel, struct fleet_failure *f);
/* Failures with now - window < at <= now + 300 (a clock a little ahead still
 * counts; a record from the far future would never age out and does not). */
unsigned fleet_breaker_count(const struct fleet_failure *f, unsigned n, int64_t now,
			     int64_t window);
/* threshold 0: the breaker is off. */
bool fleet_breaker_trips(unsigned count, unsigned threshold);
/* "N failure(s) in the last W s: ID (CAUSE), ..." of the counted failures,
 * newest first, cut with "+K more" to fit len; the length, or -ENOBUFS. */
int fleet_breaker_summary(const struct fleet_failure *f, unsigned n, int64_t now,
			  int64_t window, char *buf, size_t len);

/* ---- fleet_proto.c: rerandd <-> rerand-fleetd ------------------------------
 * One request or reply per line, at most FLEET_LINE_MAX bytes with the '\n'.
 * Fields are separated by one space; each field is percent-encoded (bytes
 * outside [A-Za-z0-9._:/,=+@] as %XX) and "-" stands for the empty string.
 * The helper greets with "RERAND-FLEET 1"; then
 *   request: "Q" SEQ VERB [ARG...]
 *   reply:   "R" SEQ RC STATE ERRORS ID TOKEN MESSAGE [N (SLOT LEASE TTL MODREV ID)*N]
 * RC is 1, 0 or -errno as fleet_acquire() and friends return it; the holders
 * follow only in the reply to "status".  Replies come in request order. */
#define FLEET_PROTO_GREETING "RERAND-FLEET 1"
#define FLEET_LINE_MAX       (64 * 1024)
#define FLEET_ARGS_MAX       24

enum fleet_verb {
	FLEET_V_NONE = 0,
	FLEET_V_OPEN,           /* ARG...: KEY=VALUE of [Fleet]; RC 0 or -errno */
	FLEET_V_ACQUIRE,
	FLEET_V_REFRESH,
	FLEET_V_RELEASE,
	FLEET_V_RESUME,         /* ARG: the token */
	FLEET_V_STATUS,
	FLEET_V_RELEASE_HOST,   /* ARG: the host */
	FLEET_V_DOWN,           /* the last word before the reboot: confirm the slot and
	                         * move it to a lease of DownTTL= that outlasts the reboot */
	FLEET_V_FAILED,         /* ARG: CAUSE TIME: record a failed rerandomization for the
	                         * group; RC 1 the breaker is (now) tripped, 0 not */
	FLEET_V_BREAKER,        /* RC 1 tripped, 0 not; MESSAGE: the failures counted */
	FLEET_V_CLEAR_BREAKER,  /* remove the breaker and the failure records; MESSAGE: how many */
};
const char *fleet_verb_name(enum fleet_verb v);

struct fleet_request {
	uint32_t seq;
	enum fleet_verb verb;
	unsigned nr_args;
	char args[FLEET_ARGS_MAX][FLEET_STR + 32];
};

struct fleet_reply {
	uint32_t seq;
	int rc;
	enum fleet_state state;
	uint64_t errors;
	char id[FLEET_ID_MAX];
	char token[FLEET_TOKEN_MAX];
	char msg[FLEET_MSG_MAX];
	bool has_status;
	struct fleet_status st;
};

/* Parse one line (without its '\n').  -EBADMSG on anything out of shape:
 * a control byte, a bad escape, an unknown verb, a number out of range, a
 * field too long, too many or too few fields. */
int fleet_proto_parse_request(const char *line, size_t len, struct fleet_request *q);
int fleet_proto_parse_reply(const char *line, size_t len, struct fleet_reply *r);
/* The line with its '\n' into buf; its length, or -ENOBUFS. */
int fleet_proto_format_request(const struct fleet_request *q, char *buf, size_t len);
int fleet_proto_format_reply(const struct fleet_reply *r, char *buf, size_t len);

#endif
