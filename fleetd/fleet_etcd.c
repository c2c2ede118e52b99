/* SPDX-License-Identifier: GPL-2.0-only */
/* The etcd v3 backend: a counting semaphore of K slot keys, each attached to the
 * holder's lease, spoken over etcd's JSON gateway with endpoint failover. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cleanup.h"
#include "backend.h"
#include "fleetd.h"          /* rr_escape_str() */

#define KEY_MAX (FLEET_GROUP_MAX + 64)

struct fleet_etcd {
	int64_t  lease;          /* 0 = none */
	int      slot;           /* -1 = none */
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

static void slot_prefix(const struct fleet_conn *c, char *buf, size_t len)
{
	snprintf(buf, len, "/rerand/fleet/%s/slot/", c->cfg->group);
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

int fleet_etcd_acquire_body(const char *key, const char *id, int64_t lease, char *buf,
			    size_t len)
{
	char k[KEY_MAX * 2], v[FLEET_ID_MAX * 2];
	int n;

	if (b64(key, k, sizeof(k)) || b64(id, v, sizeof(v)))
		return -ENOBUFS;
	/* create_revision == 0 means "the key does not exist": only one acquirer can
	 * create a given slot, so at most K holders exist however many race. */
	n = snprintf(buf, len,
		"{\"compare\":[{\"key\":\"%s\",\"target\":\"CREATE\",\"result\":\"EQUAL\","
		"\"create_revision\":\"0\"}],"
		"\"success\":[{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\",\"lease\":\"%" PRId64 "\"}}]}",
		k, k, v, lease);
	return n < 0 || (size_t)n >= len ? -ENOBUFS : n;
}

/* Delete key only while it still says id (and, if mod_rev, is unchanged). */
static int delete_body(const char *key, const char *id, int64_t mod_rev, char *buf, size_t len)
{
	char k[KEY_MAX * 2], v[FLEET_ID_MAX * 2], modcmp[KEY_MAX * 2 + 128] = "";
	int n;

	if (b64(key, k, sizeof(k)) || b64(id, v, sizeof(v)))
		return -ENOBUFS;
	if (mod_rev)
		snprintf(modcmp, sizeof(modcmp),
			 ",{\"key\":\"%s\",\"target\":\"MOD\",\"result\":\"EQUAL\",\"mod_revision\":\"%" PRId64 "\"}",
			 k, mod_rev);
	n = snprintf(buf, len,
		"{\"compare\":[{\"key\":\"%s\",\"target\":\"VALUE\",\"result\":\"EQUAL\",\"value\":\"%s\"}%s],"
		"\"success\":[{\"request_delete_range\":{\"key\":\"%s\"}}]}",
		k, v, modcmp, k);
	return n < 0 || (size_t)n >= len ? -ENOBUFS : n;
}

static int cmp_slot(const void *a, const void *b)
{
	const struct fleet_holder *x = a, *y = b;
	return (x->slot > y->slot) - (x->slot < y->slot);
}

static int parse_range_obj(json_object *root, const char *prefix, unsigned k,
			   struct fleet_status *st)
{
	json_object *kvs;
	size_t plen = strlen(prefix);
	size_t n;

	memset(st, 0, sizeof(*st));
	st->max_concurrent = k;
	if (!json_object_is_type(root, json_type_object))
		return -EBADMSG;
	if (!json_object_object_get_ex(root, "kvs", &kvs))
		return 0;             /* no key: proto3 JSON omits the empty list */
	if (!json_object_is_type(kvs, json_type_array))
		return -EBADMSG;
	n = json_object_array_length(kvs);
	for (size_t i = 0; i < n; i++) {
		json_object *kv = json_object_array_get_idx(kvs, i);
		const char *k64 = j_str(kv, "key"), *v64 = j_str(kv, "value");
		char key[KEY_MAX + 1], *end;
		struct fleet_holder *h;
		size_t kn, vn;
		long slot;

		if (!k64 || fleet_b64_decode(k64, key, sizeof(key) - 1, &kn))
			return -EBADMSG;
		key[kn] = 0;
		if (kn <= plen || strncmp(key, prefix, plen))
			continue;
		slot = strtol(key + plen, &end, 10);
		if (*end || slot < 0 || slot > 1000000 || st->nr_holders >= FLEET_MAX_SLOTS)
			return -EBADMSG;
		h = &st->holders[st->nr_holders];
		memset(h, 0, sizeof(*h));
		if (!v64)
			v64 = "";
		if (fleet_b64_decode(v64, h->id, sizeof(h->id) - 1, &vn))
			return -EBADMSG;
		h->id[vn] = 0;
		if (strlen(h->id) != vn)
			return -EBADMSG;
		h->slot = (int)slot;
		h->lease = j_i64(kv, "lease");
		h->mod_revision = j_i64(kv, "mod_revision");
		h->ttl = -1;
		if ((unsigned)slot >= k)
			st->nr_stray++;
		st->nr_holders++;
	}
	qsort(st->holders, st->nr_holders, sizeof(st->holders[0]), cmp_slot);
	return 0;
}

int fleet_etcd_parse_range(const char *body, const char *prefix, unsigned max_concurrent,
			   struct fleet_status *st)
{
	json_object *root = json_tokener_parse(body);
	int r;

	if (!root)
		return -EBADMSG;
	r = parse_range_obj(root, prefix, max_concurrent, st);
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

static int range(struct fleet_conn *c, struct fleet_etcd *e, struct fleet_status *st)
{
	char prefix[KEY_MAX], end[KEY_MAX], k[KEY_MAX * 2], ke[KEY_MAX * 2], body[KEY_MAX * 5];
	json_object *root;
	size_t pl;
	int r;

	slot_prefix(c, prefix, sizeof(prefix));
	snprintf(end, sizeof(end), "%s", prefix);
	pl = strlen(end);
	end[pl - 1]++;            /* "…/slot/" .. "…/slot0": every key under the prefix */
	if (b64(prefix, k, sizeof(k)) || b64(end, ke, sizeof(ke)))
		return -ENOBUFS;
	snprintf(body, sizeof(body), "{\"key\":\"%s\",\"range_end\":\"%s\"}", k, ke);
	r = call(c, e, "/v3/kv/range", body, &root);
	if (r < 0)
		return r;
	r = parse_range_obj(root, prefix, c->cfg->max_concurrent, st);
	json_object_put(root);
	if (r < 0)
		fleet_conn_error(c, "etcd: %s: malformed range reply", prefix);
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
}

static int etcd_refresh(struct fleet_conn *c, struct fleet_etcd *e)
{
	struct fleet_status st;
	int64_t ttl;
	int r;

	if (!e->lease)
		return 0;
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
	r = range(c, e, &st);
	if (r < 0)
		return r;
	for (unsigned i = 0; i < st.nr_holders; i++) {
		if (st.holders[i].lease != e->lease)
			continue;
		if (st.holders[i].slot == e->slot && !strcmp(st.holders[i].id, c->id))
			return 1;
		/* the lease holds another install's slot (a clone with a copy of our
		 * state): not ours to revoke */
		fleet_conn_error(c, "etcd: slot %d is held by %s under lease %" PRIx64 ", not by "
				 "this install (%s)", st.holders[i].slot, st.holders[i].id,
				 (uint64_t)e->lease, c->id);
		forget(e);
		return 0;
	}
	fleet_conn_error(c, "etcd: slot %d is no longer ours", e->slot);
	lease_revoke(c, e, e->lease);
	forget(e);
	return 0;
}

static int etcd_acquire(struct fleet_conn *c, struct fleet_etcd *e)
{
	const struct fleet_config *cfg = c->cfg;
	char prefix[KEY_MAX], key[KEY_MAX + 16], body[2048];
	bool used[FLEET_MAX_SLOTS] = { false };
	struct fleet_status st;
	int64_t lease;
	int r;

	r = breaker_refuses(c, e);
	if (r != 0)
		return r < 0 ? r : 0;
	r = range(c, e, &st);
	if (r < 0)
		return r;
	/* recursive: a slot already ours (this boot, or a lease that survived the
	 * reboot) is kept, not doubled.  Ours means this install's full id: a slot
	 * with our machine id and another install id is another host's. */
	for (unsigned i = 0; i < st.nr_holders; i++) {
		if (strcmp(st.holders[i].id, c->id))
			continue;
		e->lease = st.holders[i].lease;
		e->slot = st.holders[i].slot;
		return etcd_refresh(c, e);
	}
	for (unsigned i = 0; i < st.nr_holders; i++) {
		const char *h = st.holders[i].id;
		size_t m = fleet_holder_machine_len(c->id);
		if (fleet_holder_machine_len(h) != m || strncmp(h, c->id, m))
			continue;
		fleet_conn_error(c, "etcd: slot %d of group %s is held by %s, another host with "
				 "this machine id %.*s (an image cloned with its /etc/machine-id?): "
				 "not taking a slot while it holds one; give each host its own "
				 "machine id (rm /etc/machine-id; systemd-machine-id-setup)",
				 st.holders[i].slot, cfg->group, h, (int)m, c->id);
		return -EEXIST;
	}
	if (st.nr_holders >= cfg->max_concurrent) {
		fleet_conn_error(c, "etcd: group %s is full (%u of %u slots held)", cfg->group,
				st.nr_holders, cfg->max_concurrent);
		return 0;
	}
	for (unsigned i = 0; i < st.nr_holders; i++)
		if (st.holders[i].slot < FLEET_MAX_SLOTS)
			used[st.holders[i].slot] = true;
	r = lease_grant(c, e, cfg->lock_ttl, &lease);
	if (r < 0)
		return r;
	slot_prefix(c, prefix, sizeof(prefix));
	for (unsigned s = 0; s < cfg->max_concurrent; s++) {
		if (used[s])
			continue;
		snprintf(key, sizeof(key), "%s%u", prefix, s);
		r = fleet_etcd_acquire_body(key, c->id, lease, body, sizeof(body));
		if (r < 0)
			break;
		r = txn(c, e, body);
		if (r == 1) {
			e->lease = lease;
			e->slot = (int)s;
			return 1;
		}
		if (r < 0)
			break;
		/* someone took it between our read and our txn: try the next one */
	}
	lease_revoke(c, e, lease);
	if (r == 0)
		fleet_conn_error(c, "etcd: group %s: lost the race for every free slot",
				cfg->group);
	return r < 0 ? r : 0;
}

int fleet_etcd_move_body(const char *key, const char *id, int64_t from, int64_t to, char *buf,
			 size_t len)
{
	char k[KEY_MAX * 2], v[FLEET_ID_MAX * 2];
	int n;

	if (b64(key, k, sizeof(k)) || b64(id, v, sizeof(v)))
		return -ENOBUFS;
	/* only the key that is still ours on the lease we hold: a slot that expired and
	 * was taken by someone else in between is never overwritten */
	n = snprintf(buf, len,
		"{\"compare\":[{\"key\":\"%s\",\"target\":\"VALUE\",\"result\":\"EQUAL\",\"value\":\"%s\"},"
		"{\"key\":\"%s\",\"target\":\"LEASE\",\"result\":\"EQUAL\",\"lease\":\"%" PRId64 "\"}],"
		"\"success\":[{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\",\"lease\":\"%" PRId64 "\"}}]}",
		k, v, k, from, k, v, to);
	return n < 0 || (size_t)n >= len ? -ENOBUFS : n;
}

/* Move our slot key to a new lease of ttl seconds and revoke the old one.  1 moved,
 * 0 the slot is not ours any more (forgotten), <0 not known: the old lease is kept
 * as it was and the new one revoked, so a failure never leaves a second lease on
 * the slot that outlives what the caller believes. */
static int move_lease(struct fleet_conn *c, struct fleet_etcd *e, int64_t ttl)
{
	char prefix[KEY_MAX], key[KEY_MAX + 16], body[2048];
	int64_t nl;
	int r;

	r = lease_grant(c, e, ttl, &nl);
	if (r < 0)
		return r;
	slot_prefix(c, prefix, sizeof(prefix));
	snprintf(key, sizeof(key), "%s%d", prefix, e->slot);
	r = fleet_etcd_move_body(key, c->id, e->lease, nl, body, sizeof(body));
	if (r >= 0)
		r = txn(c, e, body);
	if (r != 1) {
		/* an unknown outcome (r < 0) may have moved the key: revoking the new
		 * lease deletes it then, which frees the slot rather than stretch it */
		lease_revoke(c, e, nl);
		if (r == 0) {
			fleet_conn_error(c, "etcd: slot %d is no longer ours", e->slot);
			lease_revoke(c, e, e->lease);
			forget(e);
		}
		return r;
	}
	/* the key left the old lease: revoking it frees nothing; if that fails, it
	 * expires by itself */
	lease_revoke(c, e, e->lease);
	e->lease = nl;
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
	return move_lease(c, e, c->cfg->down_ttl);
}

static int etcd_release(struct fleet_conn *c, struct fleet_etcd *e)
{
	struct fleet_status st;
	char prefix[KEY_MAX], key[KEY_MAX + 16], body[2048];
	int r;

	r = range(c, e, &st);
	if (r < 0)
		return r;
	slot_prefix(c, prefix, sizeof(prefix));
	for (unsigned i = 0; i < st.nr_holders; i++) {
		if (strcmp(st.holders[i].id, c->id))
			continue;
		snprintf(key, sizeof(key), "%s%d", prefix, st.holders[i].slot);
		r = delete_body(key, c->id, 0, body, sizeof(body));
		if (r >= 0)
			r = txn(c, e, body);
		if (r < 0)
			return r;
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
	n = snprintf(buf, len, "%" PRIx64 ":%d", (uint64_t)e->lease, e->slot);
	return n < 0 || (size_t)n >= len ? -ENOBUFS : 0;
}

static int etcd_resume(struct fleet_conn *c, struct fleet_etcd *e, const char *token)
{
	unsigned long long lease;
	int slot, used = 0, r;

	forget(e);
	if (!token || !*token)
		return 0;
	if (sscanf(token, "%llx:%d%n", &lease, &slot, &used) != 2 || token[used] || !lease ||
	    slot < 0 || slot >= FLEET_MAX_SLOTS) {
		fleet_conn_error(c, "fleet token \"%s\" is malformed", token);
		return 0;
	}
	e->lease = (int64_t)lease;
	e->slot = slot;
	r = etcd_refresh(c, e);
	/* a restart in the same boot resumes a lease of LockTTL= already */
	if (r != 1 || e->granted <= c->cfg->lock_ttl)
		return r;
	/* Up again: back to a lease of LockTTL=, so a host that dies during its
	 * post-boot checks frees its slot after LockTTL=, not DownTTL=.  If the move
	 * fails the slot stays on the down lease, still ours, kept alive the same. */
	if (move_lease(c, e, c->cfg->lock_ttl) == 0)
		return 0;
	return 1;
}

static int etcd_status(struct fleet_conn *c, struct fleet_etcd *e, struct fleet_status *st)
{
	int r = range(c, e, st);

	if (r < 0)
		return r;
	for (unsigned i = 0; i < st->nr_holders; i++)
		if (st->holders[i].lease)
			st->holders[i].ttl = lease_ttl(c, e, st->holders[i].lease);
	return 0;
}

static int etcd_release_host(struct fleet_conn *c, struct fleet_etcd *e, const char *host)
{
	struct fleet_status st;
	char prefix[KEY_MAX], key[KEY_MAX + 16], body[2048];
	int r, freed = 0;

	r = range(c, e, &st);
	if (r < 0)
		return r;
	slot_prefix(c, prefix, sizeof(prefix));
	for (unsigned i = 0; i < st.nr_holders; i++) {
		const char *h = st.holders[i].id;
		/* HOST is a holder as listed, or its machine id (every install of it) */
		if (strcmp(h, host) && (fleet_holder_machine_len(h) != strlen(host) ||
					strncmp(h, host, strlen(host))))
			continue;
		snprintf(key, sizeof(key), "%s%d", prefix, st.holders[i].slot);
		/* only the exact key we saw: never a slot re-taken since by someone else */
		r = delete_body(key, h, st.holders[i].mod_revision, body, sizeof(body));
		if (r >= 0)
			r = txn(c, e, body);
		if (r < 0)
			return r;
		freed += r;
	}
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
