/* SPDX-License-Identifier: GPL-2.0-only */
/* The etcd v3 backend: a counting semaphore of at most K keys, each attached to
 * its holder's lease, spoken over etcd's JSON gateway with endpoint failover.
 *
 * Two kinds of key hold a place in the semaphore of group G:
 *   /rerand/fleet/G/holder/ID  a host's own key (ID its MACHINEID~INSTALLID):
 *                              etcd can give each host a role that writes this
 *                              key and no other host's (rerand-etcd-roles);
 *   /rerand/fleet/G/slot/N     a numbered slot, N < K, as older rerand takes
 *                              them: every host's role writes the whole range.
 * A host takes a holder key when the group's marker /rerand/fleet/G/semaphore
 * says "holders" (an admin puts it once no host runs an older rerand), else a
 * numbered slot, which older hosts see.  Either way it counts both kinds, read
 * in one range [G/holder/, G/slot0) at revision R, and takes its key only if
 * fewer than K are held, in a txn that compares that whole range's
 * mod_revision < R+1: nothing in it was created or changed since the count
 * (etcd's applyCompare checks every key of a compare's range; a deleted key is
 * not in it, and a delete only frees a place).  A concurrent acquisition makes
 * the txn fail: the count is read again, a few times, with jitter.
 *
 * Fencing: a key's value is "HOLDER FENCE", the holder id and 128 random bits
 * (32 hex digits) made for this acquisition.  The fleet token rerandd persists
 * is "LEASE:SLOT:FENCE" for a numbered slot, "LEASE::FENCE" for a holder key,
 * and every write to the key that is not a create (the move to another lease,
 * the resume after a reboot, the delete at release) is a txn whose compare
 * names the whole value: a host with the same holder id (a clone made after
 * rerandd ran copies the machine id and the install id) but not the fence is
 * refused by etcd itself.  A resume gives the key a new fence (and lease), so
 * of two clones made while one held a slot, only the first to resume gets
 * it. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <json-c/json.h>

#include "cleanup.h"
#include "backend.h"
#include "fleetd.h"          /* rr_escape_str() */

#define KEY_MAX (FLEET_GROUP_MAX + FLEET_ID_MAX + 64)
#define VAL_MAX (FLEET_ID_MAX + FLEET_FENCE_MAX + 2)

struct fleet_etcd {
	int64_t  lease;          /* 0 = none */
	int      slot;           /* a numbered slot; -1 = the holder key (lease != 0) or none */
	char     fence[FLEET_FENCE_MAX];  /* this acquisition's, "" = none */
	int64_t  granted;        /* the lease's TTL as the last keepalive renewed it */
	unsigned cur;            /* endpoint that answered last */
};

static void *etcd_create(void)
{
	struct fleet_etcd *e = calloc(1, sizeof(*e));
	if (e)
		e->slot = -1;
	return e;
}

static void etcd_destroy(void *e)
{
	free(e);
}

/* The slot's value: "HOLDER FENCE" (the holder alone for a slot of an older
 * rerand, which has no fence). */
int fleet_etcd_value(const char *id, const char *fence, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s%s%s", id, *fence ? " " : "", fence);
	return n < 0 || (size_t)n >= len ? -ENOBUFS : 0;
}

/* 128 bits from getrandom(): the acquisition's fence in hex. */
static int new_fence(struct fleet_conn *c, char *out)
{
	uint8_t rnd[FLEET_FENCE_LEN / 2];

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		fleet_conn_error(c, "getrandom: %s: no fence for the slot, not taking it",
				 strerror(errno));
		return -EIO;
	}
	for (unsigned i = 0; i < sizeof(rnd); i++)
		snprintf(out + 2 * i, 3, "%02x", rnd[i]);
	explicit_bzero(rnd, sizeof(rnd));
	return 0;
}

static void slot_prefix(const struct fleet_conn *c, char *buf, size_t len)
{
	snprintf(buf, len, "/rerand/fleet/%s/slot/", c->cfg->group);
}

static void group_prefix(const struct fleet_conn *c, char *buf, size_t len)
{
	snprintf(buf, len, "/rerand/fleet/%s/", c->cfg->group);
}

/* The key acquisition e holds (or would): slot/N, or holder/ID for slot -1. */
static void our_key(const struct fleet_conn *c, int slot, char *buf, size_t len)
{
	if (slot >= 0)
		snprintf(buf, len, "/rerand/fleet/%s/slot/%d", c->cfg->group, slot);
	else
		snprintf(buf, len, "/rerand/fleet/%s/holder/%s", c->cfg->group, c->id);
}

/* The semaphore's whole range, both kinds of key and the marker between them:
 * [G/holder/, G/slot0) ("holder/" < "semaphore" < "slot/" < "slot0" by bytes). */
static void sem_range(const struct fleet_conn *c, char *key, char *end, size_t len)
{
	snprintf(key, len, "/rerand/fleet/%s/" FLEET_ETCD_HOLDER_DIR, c->cfg->group);
	snprintf(end, len, "/rerand/fleet/%s/slot0", c->cfg->group);
}

/* ---- JSON helpers ------------------------------------------------------------- */

/* etcd's gateway writes int64 as JSON strings; accept numbers too. */
static int64_t j_i64(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		return 0;
	if (json_object_is_type(v, json_type_string))
		return strtoll(json_object_get_string(v), NULL, 10);
	return json_object_get_int64(v);
}

static const char *j_str(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static bool j_bool(json_object *o, const char *key)
{
	json_object *v;

	/* proto3 JSON leaves out false */
	return json_object_object_get_ex(o, key, &v) && json_object_get_boolean(v);
}

static int b64(const char *s, char *out, size_t len)
{
	return fleet_b64_encode(s, strlen(s), out, len) < 0 ? -ENOBUFS : 0;
}

int fleet_etcd_acquire_body(const char *key, const char *value, int64_t lease, const char *from,
			    const char *to, int64_t rev, char *buf, size_t len)
{
	char k[KEY_MAX * 2], v[VAL_MAX * 2], f[KEY_MAX * 2], t[KEY_MAX * 2], rcmp[KEY_MAX * 4 + 160] = "";
	int n;

	if (b64(key, k, sizeof(k)) || b64(value, v, sizeof(v)))
		return -ENOBUFS;
	/* every key of [from, to) last written at or before rev, the revision the
	 * holders were counted at: none taken, moved or re-taken since (etcd
	 * compares each key of the range; a key deleted since is not in it, and
	 * an empty range compares as one key of revision 0) */
	if (from) {
		if (b64(from, f, sizeof(f)) || b64(to, t, sizeof(t)) || rev <= 0 || rev == INT64_MAX)
			return -ENOBUFS;
		snprintf(rcmp, sizeof(rcmp),
			 ",{\"key\":\"%s\",\"range_end\":\"%s\",\"target\":\"MOD\",\"result\":\"LESS\","
			 "\"mod_revision\":\"%" PRId64 "\"}", f, t, rev + 1);
	}
	/* create_revision == 0 means "the key does not exist": only one acquirer can
	 * create a given key, whatever else the compares say */
	n = snprintf(buf, len,
		"{\"compare\":[{\"key\":\"%s\",\"target\":\"CREATE\",\"result\":\"EQUAL\","
		"\"create_revision\":\"0\"}%s],"
		"\"success\":[{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\",\"lease\":\"%" PRId64 "\"}}]}",
		k, rcmp, k, v, lease);
	return n < 0 || (size_t)n >= len ? -ENOBUFS : n;
}

/* Delete key only while its value is still value, holder and fence (value NULL:
 * any value), and, if mod_rev, the key is unchanged. */
int fleet_etcd_delete_body(const char *key, const char *value, int64_t mod_rev, char *buf,
			   size_t len)
{
	char k[KEY_MAX * 2], v[VAL_MAX * 2], cmp[KEY_MAX * 2 + VAL_MAX * 2 + 128] = "",
	     modcmp[KEY_MAX * 2 + 128] = "";
	int n;

	if (b64(key, k, sizeof(k)) || (value && b64(value, v, sizeof(v))) || (!value && !mod_rev))
		return -ENOBUFS;
	if (value)
		snprintf(cmp, sizeof(cmp), "{\"key\":\"%s\",\"target\":\"VALUE\",\"result\":\"EQUAL\","
			 "\"value\":\"%s\"}", k, v);
	if (mod_rev)
		snprintf(modcmp, sizeof(modcmp),
			 "%s{\"key\":\"%s\",\"target\":\"MOD\",\"result\":\"EQUAL\",\"mod_revision\":\"%" PRId64 "\"}",
			 value ? "," : "", k, mod_rev);
	n = snprintf(buf, len,
		"{\"compare\":[%s%s],"
		"\"success\":[{\"request_delete_range\":{\"key\":\"%s\"}}]}",
		cmp, modcmp, k);
	return n < 0 || (size_t)n >= len ? -ENOBUFS : n;
}

static int cmp_slot(const void *a, const void *b)
{
	const struct fleet_holder *x = a, *y = b;
	int r = (x->slot > y->slot) - (x->slot < y->slot);
	return r ? r : strcmp(x->id, y->id);
}

/* A value "HOLDER FENCE" (an older rerand's slot: the holder alone) into h. */
static int split_value(const char *v64, struct fleet_holder *h)
{
	char val[VAL_MAX], *sp;
	size_t vn;

	if (!v64)
		v64 = "";
	if (fleet_b64_decode(v64, val, sizeof(val) - 1, &vn))
		return -EBADMSG;
	val[vn] = 0;
	if (strlen(val) != vn)
		return -EBADMSG;
	sp = strchr(val, ' ');
	if (sp)
		*sp++ = 0;
	if (strlen(val) >= sizeof(h->id) || (sp && strlen(sp) >= sizeof(h->fence)))
		return -EBADMSG;
	memcpy(h->id, val, strlen(val) + 1);
	h->fence[0] = 0;
	if (sp)
		memcpy(h->fence, sp, strlen(sp) + 1);
	explicit_bzero(val, sizeof(val));
	return 0;
}

/* A range reply over the group's semaphore.  Numbered slots (prefix slot/N) keep
 * their number; holder keys (prefix holder/ID) get slot -1 and the id their key
 * names (what etcd's roles bind), with the value's fence only when the value
 * names the same id; the marker's value goes to g.  Other keys are no holders. */
static int parse_range_obj(json_object *root, const char *prefix, unsigned k,
			   struct fleet_status *st, struct fleet_etcd_group *g)
{
	json_object *kvs, *hdr;
	size_t plen = strlen(prefix), sl = strlen("slot/"), hl = strlen(FLEET_ETCD_HOLDER_DIR);
	size_t n;

	memset(st, 0, sizeof(*st));
	st->max_concurrent = k;
	if (g)
		memset(g, 0, sizeof(*g));
	if (!json_object_is_type(root, json_type_object))
		return -EBADMSG;
	if (g && json_object_object_get_ex(root, "header", &hdr))
		g->revision = j_i64(hdr, "revision");
	if (!json_object_object_get_ex(root, "kvs", &kvs))
		return 0;             /* no key: proto3 JSON omits the empty list */
	if (!json_object_is_type(kvs, json_type_array))
		return -EBADMSG;
	n = json_object_array_length(kvs);
	for (size_t i = 0; i < n; i++) {
		json_object *kv = json_object_array_get_idx(kvs, i);
		const char *k64 = j_str(kv, "key"), *v64 = j_str(kv, "value"), *rest;
		char key[KEY_MAX + 1], *end;
		struct fleet_holder *h;
		size_t kn;
		long slot;

		if (!k64 || fleet_b64_decode(k64, key, sizeof(key) - 1, &kn))
			return -EBADMSG;
		key[kn] = 0;
		if (strlen(key) != kn || kn <= plen || strncmp(key, prefix, plen))
			continue;
		rest = key + plen;
		if (!strcmp(rest, FLEET_ETCD_MARKER)) {
			struct fleet_holder tmp;
			if (g) {
				if (split_value(v64, &tmp) < 0)
					return -EBADMSG;
				snprintf(g->marker, sizeof(g->marker), "%s", tmp.id);
				g->has_marker = true;
			}
			continue;
		}
		if (!strncmp(rest, FLEET_ETCD_HOLDER_DIR, hl)) {
			rest += hl;
			if (!*rest || strlen(rest) >= sizeof(h->id) || strchr(rest, '/'))
				return -EBADMSG;
			slot = -1;
		} else if (!strncmp(rest, "slot/", sl)) {
			slot = strtol(rest + sl, &end, 10);
			if (!rest[sl] || *end || slot < 0 || slot > 1000000)
				return -EBADMSG;
		} else {
			continue;
		}
		if (st->nr_holders >= FLEET_MAX_SLOTS)
			return -EBADMSG;
		h = &st->holders[st->nr_holders];
		memset(h, 0, sizeof(*h));
		if (split_value(v64, h) < 0)
			return -EBADMSG;
		if (slot < 0 && strcmp(h->id, rest)) {
			/* a value that names another host than its key: never ours */
			snprintf(h->id, sizeof(h->id), "%s", rest);
			explicit_bzero(h->fence, sizeof(h->fence));
		}
		h->slot = (int)slot;
		h->lease = j_i64(kv, "lease");
		h->mod_revision = j_i64(kv, "mod_revision");
		h->ttl = -1;
		if (slot >= 0 && (unsigned)slot >= k)
			st->nr_stray++;
		st->nr_holders++;
	}
	qsort(st->holders, st->nr_holders, sizeof(st->holders[0]), cmp_slot);
	return 0;
}

int fleet_etcd_parse_range(const char *body, const char *prefix, unsigned max_concurrent,
			   struct fleet_status *st, struct fleet_etcd_group *g)
{
	json_object *root = json_tokener_parse(body);
	int r;

	if (!root)
		return -EBADMSG;
	r = parse_range_obj(root, prefix, max_concurrent, st, g);
	json_object_put(root);
	return r;
}
/* ---- calls with failover ------------------------------------------------------ */

/* One gateway call.  Endpoints are tried in turn, starting with the last one that
 * answered, until one gives an HTTP answer that is not "unavailable".  0 and the
 * parsed reply, -ENOENT for etcd's NotFound, another -errno otherwise. */
static int call_once(struct fleet_conn *c, struct fleet_etcd *e, const char *path,
		     const char *body, json_object **ret)
{
	const struct fleet_config *cfg = c->cfg;
	char last[256] = "no endpoint";
	unsigned n = cfg->nr_endpoints;

	for (unsigned i = 0; i < n; i++) {
		unsigned ep = (e->cur + i) % n;
		_cleanup_reply_ struct fleet_http_reply r = { 0 };
		_cleanup_json_ json_object *root = NULL;
		long code;
		int rc;

		rc = fleet_http_post(c, cfg->endpoints[ep], path, body, false, &r);
		if (rc < 0) {
			snprintf(last, sizeof(last), "%.255s", c->err);
			continue;
		}
		root = json_tokener_parse(r.body);
		if (!root && r.status >= 400 && r.status < 500) {
			/* etcd's HTTP layer answers some refusals in plain text, the same
			 * on every member: say what it said, do not fail over */
			char line[160], text[4 * sizeof(line)];
			snprintf(line, sizeof(line), "%.*s", (int)strcspn(r.body, "\r\n"), r.body);
			rr_escape_str(text, sizeof(text), line);
			fleet_conn_error(c, "%s%s: HTTP %ld: %s%s", cfg->endpoints[ep], path,
					 r.status, text, strstr(r.body, "CommonName") ?
					 " (with etcd authentication on, the client certificate "
					 "must have no CN; see docs/fleet.md)" : "");
			e->cur = ep;
			return -EPROTO;
		}
		if (r.status == 503 || r.status == 502 || r.status == 504 || (!root && r.status != 200)) {
			/* a member without quorum or a proxy in front of a dead one */
			snprintf(last, sizeof(last), "%s%s: HTTP %ld", cfg->endpoints[ep], path, r.status);
			continue;
		}
		e->cur = ep;
		if (!root) {
			fleet_conn_error(c, "%s%s: the reply is not JSON", cfg->endpoints[ep], path);
			return -EBADMSG;
		}
		if (r.status != 200) {
			const char *msg = j_str(root, "message");
			code = (long)j_i64(root, "code");
			fleet_conn_error(c, "%s%s: HTTP %ld: %s", cfg->endpoints[ep], path, r.status,
					msg ? msg : "error");
			/* 16 Unauthenticated: no token, or one etcd no longer knows */
			return code == 5 ? -ENOENT : code == 16 ? -EACCES : -EPROTO;
		}
		*ret = TAKE_PTR(root);
		return 0;
	}
	fleet_conn_error(c, "etcd: no endpoint answered (%u tried; last: %s)", n, last);
	return -EHOSTUNREACH;
}

/* etcd authentication: the user and password for a token that every later call
 * carries (Authorization:).  The body holds the password: it is wiped, and no
 * message quotes it. */
static int authenticate(struct fleet_conn *c, struct fleet_etcd *e)
{
	json_object *req = json_object_new_object(), *root;
	const char *tok;
	char body[1024];
	int n, r;

	c->auth_token[0] = 0;
	if (!req)
		return -ENOMEM;
	json_object_object_add(req, "name", json_object_new_string(c->cfg->user));
	json_object_object_add(req, "password", json_object_new_string(c->password));
	n = snprintf(body, sizeof(body), "%s", json_object_to_json_string_ext(req,
										JSON_C_TO_STRING_PLAIN));
	json_object_put(req);
	if (n < 0 || (size_t)n >= sizeof(body)) {
		explicit_bzero(body, sizeof(body));
		fleet_conn_error(c, "etcd: the authentication request for user %s is too long",
				 c->cfg->user);
		return -ENOBUFS;
	}
	r = call_once(c, e, "/v3/auth/authenticate", body, &root);
	explicit_bzero(body, sizeof(body));
	if (r < 0) {
		/* call_once's message names the endpoint and etcd's reason */
		char why[sizeof(c->err)];
		snprintf(why, sizeof(why), "%s", c->err);
		fleet_conn_error(c, "etcd: authentication as user %s failed: %s", c->cfg->user, why);
		return r == -EACCES ? -EACCES : r;
	}
	tok = j_str(root, "token");
	if (!tok || !*tok || strlen(tok) >= sizeof(c->auth_token) || strpbrk(tok, "\r\n")) {
		json_object_put(root);
		fleet_conn_error(c, "etcd: authentication as user %s: no usable token in the reply",
				 c->cfg->user);
		return -EPROTO;
	}
	snprintf(c->auth_token, sizeof(c->auth_token), "%s", tok);
	json_object_put(root);
	return 0;
}

/* A call with etcd authentication when User= is set: a token is fetched first,
 * and once more if etcd says it no longer knows it (simple tokens expire after
 * five idle minutes, and a restarted member forgets them). */
static int call(struct fleet_conn *c, struct fleet_etcd *e, const char *path, const char *body,
		json_object **ret)
{
	int r;

	if (*c->cfg->user && !*c->auth_token && (r = authenticate(c, e)) < 0)
		return r;
	r = call_once(c, e, path, body, ret);
	if (r == -EACCES && *c->cfg->user) {
		if ((r = authenticate(c, e)) < 0)
			return r;
		r = call_once(c, e, path, body, ret);
	}
	return r;
}

int fleet_etcd_call(struct fleet_conn *c, void *be, const char *path, const char *body,
		    json_object_ptr *ret)
{
	return call(c, be, path, body, ret);
}

/* The breaker stops every acquire and every last word before a reboot. */
static int breaker_refuses(struct fleet_conn *c, struct fleet_etcd *e)
{
	char why[FLEET_MSG_MAX];
	int r = fleet_etcd_breaker_get(c, e, why, sizeof(why));

	if (r == 1)
		fleet_conn_error(c, "etcd: group %s: the breaker is tripped (%.300s): no host takes "
				 "a slot until an operator runs `rerand fleet clear-breaker`",
				 c->cfg->group, why);
	return r;
}

/* The semaphore's keys, both kinds, and the marker, in one read: one revision. */
static int range(struct fleet_conn *c, struct fleet_etcd *e, struct fleet_status *st,
		 struct fleet_etcd_group *g)
{
	char prefix[KEY_MAX], from[KEY_MAX], to[KEY_MAX], k[KEY_MAX * 2], ke[KEY_MAX * 2],
	     body[KEY_MAX * 5];
	json_object *root;
	int r;

	group_prefix(c, prefix, sizeof(prefix));
	sem_range(c, from, to, sizeof(from));
	if (b64(from, k, sizeof(k)) || b64(to, ke, sizeof(ke)))
		return -ENOBUFS;
	snprintf(body, sizeof(body), "{\"key\":\"%s\",\"range_end\":\"%s\"}", k, ke);
	r = call(c, e, "/v3/kv/range", body, &root);
	if (r < 0)
		return r;
	r = parse_range_obj(root, prefix, c->cfg->max_concurrent, st, g);
	json_object_put(root);
	if (r < 0)
		fleet_conn_error(c, "etcd: %s: malformed range reply (or more than %d holders)",
				 from, FLEET_MAX_SLOTS);
	return r;
}

static int txn(struct fleet_conn *c, struct fleet_etcd *e, const char *body)
{
	json_object *root;
	bool ok;
	int r;

	r = call(c, e, "/v3/kv/txn", body, &root);
	if (r < 0)
		return r;
	ok = j_bool(root, "succeeded");
	json_object_put(root);
	return ok ? 1 : 0;
}

static int lease_grant(struct fleet_conn *c, struct fleet_etcd *e, int64_t ttl, int64_t *ret)
{
	char body[64];
	json_object *root;
	int64_t id;
	int r;

	snprintf(body, sizeof(body), "{\"TTL\":\"%" PRId64 "\"}", ttl);
	r = call(c, e, "/v3/lease/grant", body, &root);
	if (r < 0)
		return r;
	id = j_i64(root, "ID");
	json_object_put(root);
	if (!id) {
		fleet_conn_error(c, "etcd: lease grant returned no lease");
		return -EPROTO;
	}
	*ret = id;
	return 0;
}

/* Seconds left after renewal, 0 if the lease no longer exists. */
static int lease_keepalive(struct fleet_conn *c, struct fleet_etcd *e, int64_t lease, int64_t *ret)
{
	char body[64];
	json_object *root, *res;
	int r;

	snprintf(body, sizeof(body), "{\"ID\":\"%" PRId64 "\"}", lease);
	r = call(c, e, "/v3/lease/keepalive", body, &root);
	if (r < 0)
		return r;
	/* a streaming call: the gateway wraps the message in "result" */
	if (!json_object_object_get_ex(root, "result", &res))
		res = root;
	*ret = j_i64(res, "TTL");
	json_object_put(root);
	return 0;
}

static int lease_revoke(struct fleet_conn *c, struct fleet_etcd *e, int64_t lease)
{
	char body[64];
	json_object *root;
	int r;

	snprintf(body, sizeof(body), "{\"ID\":\"%" PRId64 "\"}", lease);
	r = call(c, e, "/v3/lease/revoke", body, &root);
	if (r == -ENOENT)
		return 0;             /* expired already: the same outcome */
	if (r < 0)
		return r;
	json_object_put(root);
	return 0;
}

static int64_t lease_ttl(struct fleet_conn *c, struct fleet_etcd *e, int64_t lease)
{
	char body[64];
	json_object *root;
	int64_t ttl;

	snprintf(body, sizeof(body), "{\"ID\":\"%" PRId64 "\"}", lease);
	if (call(c, e, "/v3/lease/timetolive", body, &root) < 0)
		return -1;
	ttl = j_i64(root, "TTL");
	json_object_put(root);
	return ttl;
}

/* ---- the semaphore ------------------------------------------------------------ */

static void forget(struct fleet_etcd *e)
{
	e->lease = 0;
	e->slot = -1;
	explicit_bzero(e->fence, sizeof(e->fence));
}

/* The slot's whole value as this acquisition wrote it. */
static int our_value(struct fleet_conn *c, const struct fleet_etcd *e, char *buf, size_t len)
{
	return fleet_etcd_value(c->id, e->fence, buf, len);
}

static bool holder_is_ours(struct fleet_conn *c, const struct fleet_etcd *e,
			   const struct fleet_holder *h)
{
	return h->lease == e->lease && h->slot == e->slot && !strcmp(h->id, c->id) &&
	       *e->fence && !strcmp(h->fence, e->fence);
}

/* How a message names a holder's place: "slot N" or "the holder key ID". */
static const char *place(const struct fleet_holder *h, char *buf, size_t len)
{
	if (h->slot >= 0)
		snprintf(buf, len, "slot %d", h->slot);
	else
		snprintf(buf, len, "the holder key %s", h->id);
	return buf;
}

static const char *our_place(const struct fleet_conn *c, const struct fleet_etcd *e, char *buf,
			     size_t len)
{
	if (e->slot >= 0)
		snprintf(buf, len, "slot %d", e->slot);
	else
		snprintf(buf, len, "the holder key %s", c->id);
	return buf;
}

/* e->lease is always a lease this process granted (acquire, or the move that
 * a resume makes): revoking it never frees another host's slot. */
static int etcd_refresh(struct fleet_conn *c, struct fleet_etcd *e)
{
	struct fleet_status st;
	char pl[FLEET_ID_MAX + 32];
	int64_t ttl;
	int r;

	if (!e->lease) {
		fleet_conn_error(c, "etcd: this host holds no slot");
		return 0;
	}
	r = lease_keepalive(c, e, e->lease, &ttl);
	if (r < 0)
		return r;
	if (ttl <= 0) {
		fleet_conn_error(c, "etcd: lease %" PRIx64 " expired: slot lost", (uint64_t)e->lease);
		forget(e);
		return 0;
	}
	e->granted = ttl;
	/* the lease lives, but an operator may have freed the slot */
	r = range(c, e, &st, NULL);
	if (r < 0)
		return r;
	for (unsigned i = 0; i < st.nr_holders; i++) {
		if (st.holders[i].lease != e->lease)
			continue;
		if (holder_is_ours(c, e, &st.holders[i]))
			return 1;
		/* our lease under a value that is not ours: never revoked by us */
		fleet_conn_error(c, "etcd: %s under lease %" PRIx64 " is held by %s under "
				 "another acquisition, not by this one",
				 place(&st.holders[i], pl, sizeof(pl)), (uint64_t)e->lease,
				 st.holders[i].id);
		forget(e);
		return 0;
	}
	fleet_conn_error(c, "etcd: %s is no longer ours", our_place(c, e, pl, sizeof(pl)));
	lease_revoke(c, e, e->lease);
	forget(e);
	return 0;
}

/* A pause of 20 to 20 + 80 * (1 + attempt) ms before reading the count again:
 * hosts that lost the same race do not all come back at once. */
static void jitter(unsigned attempt)
{
	unsigned rnd = 0;
	long ms;
	struct timespec ts;

	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
		rnd = (unsigned)attempt * 2654435761u;
	ms = 20 + (long)(rnd % (80u * (attempt + 1)));
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Tries of the count-and-take txn per acquire; each failed one means another
 * host's acquisition, move or resume came between the count and the txn. */
#define ACQUIRE_TRIES 6

/* What the count says of taking a key now: 1 go on, 2 this process holds
 * one already (the lock is recursive), 0 refused (full), <0 refused for a
 * fault (another acquisition under this host's id or machine id, a marker
 * this rerand does not know, a reply without a revision); said in c. */
static int count_allows(struct fleet_conn *c, struct fleet_etcd *e, const struct fleet_status *st,
			const struct fleet_etcd_group *g)
{
	const struct fleet_config *cfg = c->cfg;
	char pl[FLEET_ID_MAX + 32];
	size_t m = fleet_holder_machine_len(c->id);

	/* recursive: the slot this process took (or resumed) and still holds is
	 * kept, not doubled.  A key with this host's own id and another fence
	 * is another acquisition: a host cloned after rerandd ran here (the
	 * same machine id and install id), or one of ours whose token was
	 * never written down (it runs out after LockTTL=).  Never adopted. */
	for (unsigned i = 0; i < st->nr_holders; i++) {
		if (strcmp(st->holders[i].id, c->id))
			continue;
		if (e->lease && holder_is_ours(c, e, &st->holders[i]))
			return 2;
		fleet_conn_error(c, "etcd: %s of group %s is held by %s, this host's own "
				 "id, under an acquisition this host does not hold (%s): not "
				 "adopted, and no slot taken while it is held. A host cloned "
				 "after rerandd ran shares its machine id and install id: on "
				 "the clone, rm /etc/machine-id /var/lib/rerand/fleet-install-id, "
				 "run systemd-machine-id-setup and restart rerandd. A slot of "
				 "this host whose token was lost runs out after LockTTL=",
				 place(&st->holders[i], pl, sizeof(pl)), cfg->group, c->id,
				 *st->holders[i].fence ? "another fence" :
				 "no fence: taken by an older rerand");
		return -EEXIST;
	}
	for (unsigned i = 0; i < st->nr_holders; i++) {
		const char *h = st->holders[i].id;
		if (fleet_holder_machine_len(h) != m || strncmp(h, c->id, m))
			continue;
		fleet_conn_error(c, "etcd: %s of group %s is held by %s, another host with "
				 "this machine id %.*s (an image cloned with its /etc/machine-id?): "
				 "not taking a slot while it holds one; give each host its own "
				 "machine id (rm /etc/machine-id; systemd-machine-id-setup)",
				 place(&st->holders[i], pl, sizeof(pl)), cfg->group, h, (int)m,
				 c->id);
		return -EEXIST;
	}
	if (g->has_marker && strcmp(g->marker, FLEET_ETCD_HOLDERS)) {
		fleet_conn_error(c, "etcd: group %s: the marker /rerand/fleet/%s/" FLEET_ETCD_MARKER
				 " says \"%.40s\", which this rerand does not know (want \""
				 FLEET_ETCD_HOLDERS "\" or no key): not taking a slot", cfg->group,
				 cfg->group, g->marker);
		return -EPROTO;
	}
	if (st->nr_holders >= cfg->max_concurrent) {
		fleet_conn_error(c, "etcd: group %s is full (%u of %u slots held)", cfg->group,
				 st->nr_holders, cfg->max_concurrent);
		return 0;
	}
	if (g->revision <= 0) {
		fleet_conn_error(c, "etcd: group %s: the range reply has no revision", cfg->group);
		return -EPROTO;
	}
	return 1;
}

/* The lowest slot number below K that no key holds, as an older rerand takes
 * one and counts it; -1 (said in c) if none. */
static int free_slot_number(struct fleet_conn *c, const struct fleet_status *st)
{
	bool used[FLEET_MAX_SLOTS] = { false };

	for (unsigned i = 0; i < st->nr_holders; i++)
		if (st->holders[i].slot >= 0 && st->holders[i].slot < FLEET_MAX_SLOTS)
			used[st->holders[i].slot] = true;
	for (unsigned s = 0; s < c->cfg->max_concurrent; s++)
		if (!used[s])
			return (int)s;
	fleet_conn_error(c, "etcd: group %s: no free slot number below %u", c->cfg->group,
			 c->cfg->max_concurrent);
	return -1;
}

/* This acquisition's fence, its value and its lease (granted last). */
static int prepare_acquisition(struct fleet_conn *c, struct fleet_etcd *e, char *fence,
			       char *val, size_t vlen, int64_t *lease)
{
	int r;

	r = new_fence(c, fence);
	if (r < 0)
		return r;
	r = fleet_etcd_value(c->id, fence, val, vlen);
	if (r < 0) {
		fleet_conn_error(c, "etcd: the identity %s is too long for a slot", c->id);
		return r;
	}
	r = lease_grant(c, e, c->cfg->lock_ttl, lease);
	if (r < 0)
		*lease = 0;
	return r;
}

static int etcd_acquire(struct fleet_conn *c, struct fleet_etcd *e)
{
	char key[KEY_MAX], from[KEY_MAX], to[KEY_MAX], body[4096], val[VAL_MAX],
	     fence[FLEET_FENCE_MAX];
	struct fleet_etcd_group g;
	struct fleet_status st;
	int64_t lease = 0;
	unsigned tries;
	int r, slot = -1;

	r = breaker_refuses(c, e);
	if (r != 0)
		return r < 0 ? r : 0;
	sem_range(c, from, to, sizeof(from));
	for (tries = 0; tries < ACQUIRE_TRIES; tries++) {
		if (tries)
			jitter(tries);
		r = range(c, e, &st, &g);
		if (r < 0)
			break;
		r = count_allows(c, e, &st, &g);
		if (r == 2) {
			if (lease)
				lease_revoke(c, e, lease);
			return etcd_refresh(c, e);
		}
		if (r <= 0)
			goto out;
		slot = -1;
		if (!g.has_marker && (slot = free_slot_number(c, &st)) < 0) {
			r = 0;
			goto out;
		}
		if (!lease && (r = prepare_acquisition(c, e, fence, val, sizeof(val), &lease)) < 0)
			goto out;
		our_key(c, slot, key, sizeof(key));
		r = fleet_etcd_acquire_body(key, val, lease, from, to, g.revision, body, sizeof(body));
		if (r < 0) {
			fleet_conn_error(c, "etcd: the acquire request for %s is too long", key);
			goto out;
		}
		r = txn(c, e, body);
		explicit_bzero(body, sizeof(body));
		if (r == 1) {
			e->lease = lease;
			e->slot = slot;
			memcpy(e->fence, fence, sizeof(e->fence));
			explicit_bzero(fence, sizeof(fence));
			explicit_bzero(val, sizeof(val));
			return 1;
		}
		if (r < 0)
			goto out;
		/* someone took, moved or re-took a key between our count and our txn */
	}
	if (r == 0)
		fleet_conn_error(c, "etcd: group %s: the count changed under each of %u tries "
				 "(other hosts taking or moving slots): not taken this time",
				 c->cfg->group, ACQUIRE_TRIES);
out:
	explicit_bzero(fence, sizeof(fence));
	explicit_bzero(val, sizeof(val));
	if (lease)
		lease_revoke(c, e, lease);
	return r < 0 ? r : 0;
}

int fleet_etcd_move_body(const char *key, const char *value, int64_t from, const char *to_value,
			 int64_t to, char *buf, size_t len)
{
	char k[KEY_MAX * 2], v[VAL_MAX * 2], nv[VAL_MAX * 2];
	int n;

	if (b64(key, k, sizeof(k)) || b64(value, v, sizeof(v)) || b64(to_value, nv, sizeof(nv)))
		return -ENOBUFS;
	/* only the key that is still this acquisition's (its whole value, the
	 * fence with it) on the lease it was on: a slot that expired and was taken
	 * by someone else in between, or a clone's, is never overwritten */
	n = snprintf(buf, len,
		"{\"compare\":[{\"key\":\"%s\",\"target\":\"VALUE\",\"result\":\"EQUAL\",\"value\":\"%s\"},"
		"{\"key\":\"%s\",\"target\":\"LEASE\",\"result\":\"EQUAL\",\"lease\":\"%" PRId64 "\"}],"
		"\"success\":[{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\",\"lease\":\"%" PRId64 "\"}}]}",
		k, v, k, from, k, nv, to);
	return n < 0 || (size_t)n >= len ? -ENOBUFS : n;
}

/* Move our slot key to a new lease of ttl seconds (and, with refence, a new
 * fence) and revoke the old lease.  1 moved, 0 etcd refused: the slot does
 * not carry the value e names (forgotten; the old lease is not revoked, as it
 * may be another host's: a token from a resume is not proven ours until this
 * txn succeeds), <0 not known: the old lease is kept as it was and the new
 * one revoked, so a failure never leaves a second lease on the slot that
 * outlives what the caller believes. */
static int move_lease(struct fleet_conn *c, struct fleet_etcd *e, int64_t ttl, bool refence)
{
	char key[KEY_MAX], body[4096], old[VAL_MAX], val[VAL_MAX], pl[FLEET_ID_MAX + 32];
	char fence[FLEET_FENCE_MAX];
	int64_t nl;
	int r;

	memcpy(fence, e->fence, sizeof(fence));
	if (refence && (r = new_fence(c, fence)) < 0)
		return r;
	if (our_value(c, e, old, sizeof(old)) < 0 ||
	    fleet_etcd_value(c->id, fence, val, sizeof(val)) < 0) {
		fleet_conn_error(c, "etcd: the identity %s is too long for a slot", c->id);
		return -ENOBUFS;
	}
	r = lease_grant(c, e, ttl, &nl);
	if (r < 0)
		return r;
	our_key(c, e->slot, key, sizeof(key));
	r = fleet_etcd_move_body(key, old, e->lease, val, nl, body, sizeof(body));
	if (r >= 0)
		r = txn(c, e, body);
	explicit_bzero(body, sizeof(body));
	explicit_bzero(old, sizeof(old));
	explicit_bzero(val, sizeof(val));
	if (r != 1) {
		explicit_bzero(fence, sizeof(fence));
		/* an unknown outcome (r < 0) may have moved the key: revoking the new
		 * lease deletes it then, which frees the slot rather than stretch it */
		lease_revoke(c, e, nl);
		if (r == 0) {
			fleet_conn_error(c, "etcd: %s under lease %" PRIx64 " does not carry "
					 "this host's fence (etcd refused the txn): taken by another "
					 "host with this identity, freed, or run out",
					 our_place(c, e, pl, sizeof(pl)), (uint64_t)e->lease);
			forget(e);
		}
		return r;
	}
	/* the key left the old lease: revoking it frees nothing; if that fails, it
	 * expires by itself */
	lease_revoke(c, e, e->lease);
	e->lease = nl;
	memcpy(e->fence, fence, sizeof(e->fence));
	explicit_bzero(fence, sizeof(fence));
	return 1;
}

/* Before the reboot: the slot must outlast the host being down (a stage reset, a
 * firmware POST, a fallback boot), so it goes to a lease of DownTTL=. */
static int etcd_down(struct fleet_conn *c, struct fleet_etcd *e)
{
	int r = etcd_refresh(c, e);

	if (r != 1)
		return r;
	/* tripped since this host took its slot: it does not reboot either */
	r = breaker_refuses(c, e);
	if (r != 0)
		return r < 0 ? r : 0;
#ifdef RERAND_TEST_NO_DOWN_TTL
	/* a deliberately broken build for the chaos test's own check: the slot
	 * lapses after LockTTL= while the host is down */
	return 1;
#endif
	if (c->cfg->down_ttl <= c->cfg->lock_ttl)
		return 1;
	return move_lease(c, e, c->cfg->down_ttl, false);
}

/* The slot this acquisition holds, deleted in a txn that compares its whole
 * value: a holder id alone (which a clone shares) deletes nothing.  A slot
 * this process does not hold (a start-up release after a crash that lost the
 * token, a slot taken by an older rerand) is left to run out. */
static int etcd_release(struct fleet_conn *c, struct fleet_etcd *e)
{
	char key[KEY_MAX], body[4096], val[VAL_MAX], pl[FLEET_ID_MAX + 32];
	int r;

	if (e->lease && *e->fence) {
		our_key(c, e->slot, key, sizeof(key));
		r = our_value(c, e, val, sizeof(val));
		if (r >= 0)
			r = fleet_etcd_delete_body(key, val, 0, body, sizeof(body));
		explicit_bzero(val, sizeof(val));
		if (r >= 0)
			r = txn(c, e, body);
		explicit_bzero(body, sizeof(body));
		if (r < 0)
			return r;
		if (r == 0)
			fleet_conn_error(c, "etcd: %s no longer carries this host's fence (etcd "
					 "refused the delete): not ours to free", our_place(c, e, pl, sizeof(pl)));
	}
	if (e->lease) {
		r = lease_revoke(c, e, e->lease);
		if (r < 0)
			return r;
	}
	forget(e);
	return 0;
}

static int etcd_token(const struct fleet_etcd *e, char *buf, size_t len)
{
	int n;

	if (!e->lease) {
		if (len)
			buf[0] = 0;
		return 0;
	}
	if (e->slot >= 0)
		n = snprintf(buf, len, "%" PRIx64 ":%d:%s", (uint64_t)e->lease, e->slot, e->fence);
	else
		n = snprintf(buf, len, "%" PRIx64 "::%s", (uint64_t)e->lease, e->fence);
	return n < 0 || (size_t)n >= len ? -ENOBUFS : 0;
}

/* After the reboot (or a restart of this helper): the slot is taken back only
 * through the token this host persisted, LEASE:SLOT:FENCE (LEASE::FENCE for
 * the holder key), in one txn that
 * compares the whole value and the lease and moves the slot to a new lease of
 * LockTTL= and a new fence.  Nothing is asked of etcd before that txn (not
 * even a keepalive of the token's lease, which a token copied by a clone
 * would name).  A token of an older rerand (LEASE:SLOT) carries no fence: not
 * adopted, as a clone may hold the same; that slot runs out with its lease. */
static int etcd_resume(struct fleet_conn *c, struct fleet_etcd *e, const char *token)
{
	unsigned long long lease;
	int slot, used = 0, fl = 0;
	char fence[FLEET_FENCE_MAX];

	forget(e);
	if (!token || !*token)
		return 0;
	if (sscanf(token, "%llx:%d%n", &lease, &slot, &used) == 2 && !token[used] && lease) {
		fleet_conn_error(c, "fleet token %llx:%d is an older rerand's (no fence): the slot "
				 "is not taken back, since a host cloned from this one could hold "
				 "the same token; it runs out with its lease (DownTTL=, LockTTL=)",
				 lease, slot);
		return 0;
	}
	used = 0;
	if (sscanf(token, "%llx::%n", &lease, &used) == 1 && used)
		slot = -1;          /* the holder key */
	else if (used = 0, sscanf(token, "%llx:%d:%n", &lease, &slot, &used) != 2 || slot < 0 ||
		 slot >= FLEET_MAX_SLOTS)
		used = 0;
	if (!used || !lease ||
	    (fl = (int)strspn(token + used, "0123456789abcdef")) != FLEET_FENCE_LEN ||
	    token[used + fl]) {
		fleet_conn_error(c, "fleet token \"%.40s\" is malformed (want LEASE:SLOT:FENCE or "
				 "LEASE::FENCE, FENCE %d hex digits)", token, FLEET_FENCE_LEN);
		return 0;
	}
	memcpy(fence, token + used, (size_t)fl);
	fence[fl] = 0;
	e->lease = (int64_t)lease;
	e->slot = slot;
	memcpy(e->fence, fence, sizeof(e->fence));
	explicit_bzero(fence, sizeof(fence));
	/* Up again: back to a lease of LockTTL=, so a host that dies during its
	 * post-boot checks frees its slot after LockTTL=, not DownTTL=; with a new
	 * fence, so a clone that copied this token can no longer use it. */
	return move_lease(c, e, c->cfg->lock_ttl, true);
}

/* The listing: a holder key has no number of its own, so it is shown at the
 * lowest one no numbered slot has (a position, the same count); holders past
 * K (a K lowered fleet-wide, or keys a host wrote beyond its one) are shown
 * as outside MaxConcurrent. */
static int etcd_status(struct fleet_conn *c, struct fleet_etcd *e, struct fleet_status *st)
{
	bool used[FLEET_MAX_SLOTS + 1] = { false };
	unsigned next = 0;
	int r = range(c, e, st, NULL);

	if (r < 0)
		return r;
	for (unsigned i = 0; i < st->nr_holders; i++)
		if (st->holders[i].slot >= 0 && st->holders[i].slot <= FLEET_MAX_SLOTS)
			used[st->holders[i].slot] = true;
	st->nr_stray = 0;
	for (unsigned i = 0; i < st->nr_holders; i++) {
		struct fleet_holder *h = &st->holders[i];
		if (h->slot < 0) {
			while (next < 1000000 && next <= FLEET_MAX_SLOTS && used[next])
				next++;
			h->slot = (int)next++;
		}
		if ((unsigned)h->slot >= st->max_concurrent)
			st->nr_stray++;
		/* the fences stay here: a listing is no way to learn one */
		explicit_bzero(h->fence, sizeof(h->fence));
		if (h->lease)
			h->ttl = lease_ttl(c, e, h->lease);
	}
	qsort(st->holders, st->nr_holders, sizeof(st->holders[0]), cmp_slot);
	return 0;
}

/* An operator's `rerand fleet release HOST`: every key naming HOST goes, each
 * only as it was read (numbered slots: value and revision; holder keys: the
 * revision, as the key names the host).  Needs a role that writes other
 * hosts' keys: the admin's. */
static int etcd_release_host(struct fleet_conn *c, struct fleet_etcd *e, const char *host)
{
	struct fleet_status st;
	char prefix[KEY_MAX], key[KEY_MAX + 16], body[4096], val[VAL_MAX];
	int r, freed = 0;

	r = range(c, e, &st, NULL);
	if (r < 0)
		return r;
	slot_prefix(c, prefix, sizeof(prefix));
	for (unsigned i = 0; i < st.nr_holders; i++) {
		const char *h = st.holders[i].id;
		/* HOST is a holder as listed, or its machine id (every install of it) */
		if (strcmp(h, host) && (fleet_holder_machine_len(h) != strlen(host) ||
					strncmp(h, host, strlen(host))))
			continue;
		/* only the exact key we saw: never a slot re-taken since by someone else */
		if (st.holders[i].slot >= 0) {
			snprintf(key, sizeof(key), "%s%d", prefix, st.holders[i].slot);
			r = fleet_etcd_value(h, st.holders[i].fence, val, sizeof(val));
			if (r >= 0)
				r = fleet_etcd_delete_body(key, val, st.holders[i].mod_revision, body,
							   sizeof(body));
		} else {
			snprintf(key, sizeof(key), "/rerand/fleet/%s/" FLEET_ETCD_HOLDER_DIR "%s",
				 c->cfg->group, h);
			r = fleet_etcd_delete_body(key, NULL, st.holders[i].mod_revision, body,
						   sizeof(body));
		}
		if (r >= 0)
			r = txn(c, e, body);
		if (r < 0)
			return r;
		freed += r;
	}
	explicit_bzero(&st, sizeof(st));
	explicit_bzero(val, sizeof(val));
	explicit_bzero(body, sizeof(body));
	return freed;
}

/* ---- the interface (backend.h) ------------------------------------------------ */

static int op_acquire(struct fleet_conn *c, void *e) { return etcd_acquire(c, e); }
static int op_refresh(struct fleet_conn *c, void *e) { return etcd_refresh(c, e); }
static int op_release(struct fleet_conn *c, void *e) { return etcd_release(c, e); }
static int op_down(struct fleet_conn *c, void *e) { return etcd_down(c, e); }
static int op_resume(struct fleet_conn *c, void *e, const char *t) { return etcd_resume(c, e, t); }
static int op_token(const void *e, char *buf, size_t len) { return etcd_token(e, buf, len); }
static int op_status(struct fleet_conn *c, void *e, struct fleet_status *st)
{
	return etcd_status(c, e, st);
}
static int op_release_host(struct fleet_conn *c, void *e, const char *host)
{
	return etcd_release_host(c, e, host);
}

const struct fleet_backend_ops fleet_etcd_ops = {
	.name = "etcd",
	.create = etcd_create,
	.destroy = etcd_destroy,
	.acquire = op_acquire,
	.refresh = op_refresh,
	.down = op_down,
	.release = op_release,
	.resume = op_resume,
	.token = op_token,
	.status = op_status,
	.release_host = op_release_host,
	.failed = fleet_etcd_failed,
	.breaker = fleet_etcd_breaker,
	.clear_breaker = fleet_etcd_clear_breaker,
};
