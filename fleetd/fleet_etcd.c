/* SPDX-License-Identifier: GPL-2.0-only */
/* The etcd v3 backend: a counting semaphore of K slot keys, each attached to the
 * holder's lease, spoken over etcd's JSON gateway with endpoint failover.
 *
 * Fencing: a slot key's value is "HOLDER FENCE", the holder id and 128 random
 * bits (32 hex digits) made for this acquisition.  The fleet token rerandd
 * persists is "LEASE:SLOT:FENCE", and every write to a slot that is not a
 * create (the move to another lease, the resume after a reboot, the delete at
 * release) is a txn whose compare names the whole value: a host with the same
 * holder id (a clone made after rerandd ran copies the machine id and the
 * install id) but not the fence is refused by etcd itself.  A resume gives the
 * slot a new fence (and lease), so of two clones made while one held a slot,
 * only the first to resume gets it. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <json-c/json.h>

#include "cleanup.h"
#include "backend.h"
#include "fleetd.h"          /* rr_escape_str() */

#define KEY_MAX (FLEET_GROUP_MAX + 64)
#define VAL_MAX (FLEET_ID_MAX + FLEET_FENCE_MAX + 2)

struct fleet_etcd {
	int64_t  lease;          /* 0 = none */
	int      slot;           /* -1 = none */
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

int fleet_etcd_acquire_body(const char *key, const char *value, int64_t lease, char *buf,
			    size_t len)
{
	char k[KEY_MAX * 2], v[VAL_MAX * 2];
	int n;

	if (b64(key, k, sizeof(k)) || b64(value, v, sizeof(v)))
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

/* Delete key only while its value is still value, holder and fence (and, if
 * mod_rev, the key is unchanged). */
int fleet_etcd_delete_body(const char *key, const char *value, int64_t mod_rev, char *buf,
			   size_t len)
{
	char k[KEY_MAX * 2], v[VAL_MAX * 2], modcmp[KEY_MAX * 2 + 128] = "";
	int n;

	if (b64(key, k, sizeof(k)) || b64(value, v, sizeof(v)))
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
		char key[KEY_MAX + 1], val[VAL_MAX], *end, *sp;
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
		if (fleet_b64_decode(v64, val, sizeof(val) - 1, &vn))
			return -EBADMSG;
		val[vn] = 0;
		if (strlen(val) != vn)
			return -EBADMSG;
		/* "HOLDER FENCE"; an older rerand's slot is the holder alone */
		sp = strchr(val, ' ');
		if (sp)
			*sp++ = 0;
		if (strlen(val) >= sizeof(h->id) || (sp && strlen(sp) >= sizeof(h->fence)))
			return -EBADMSG;
		memcpy(h->id, val, strlen(val) + 1);
		if (sp)
			memcpy(h->fence, sp, strlen(sp) + 1);
		explicit_bzero(val, sizeof(val));
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

/* e->lease is always a lease this process granted (acquire, or the move that
 * a resume makes): revoking it never frees another host's slot. */
static int etcd_refresh(struct fleet_conn *c, struct fleet_etcd *e)
{
	struct fleet_status st;
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
	r = range(c, e, &st);
	if (r < 0)
		return r;
	for (unsigned i = 0; i < st.nr_holders; i++) {
		if (st.holders[i].lease != e->lease)
			continue;
		if (holder_is_ours(c, e, &st.holders[i]))
			return 1;
		/* our lease under a value that is not ours: never revoked by us */
		fleet_conn_error(c, "etcd: slot %d under lease %" PRIx64 " is held by %s under "
				 "another acquisition, not by this one", st.holders[i].slot,
				 (uint64_t)e->lease, st.holders[i].id);
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
	char prefix[KEY_MAX], key[KEY_MAX + 16], body[2048], val[VAL_MAX], fence[FLEET_FENCE_MAX];
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
	/* recursive: the slot this process took (or resumed) and still holds is
	 * kept, not doubled.  A slot with this host's own id and another fence is
	 * another acquisition: a host cloned after rerandd ran here (the same
	 * machine id and install id), or one of ours whose token was never written
	 * down (it runs out after LockTTL=).  Never adopted. */
	for (unsigned i = 0; i < st.nr_holders; i++) {
		if (strcmp(st.holders[i].id, c->id))
			continue;
		if (e->lease && holder_is_ours(c, e, &st.holders[i]))
			return etcd_refresh(c, e);
		fleet_conn_error(c, "etcd: slot %d of group %s is held by %s, this host's own id, "
				 "under an acquisition this host does not hold (%s): not adopted, "
				 "and no slot taken while it is held. A host cloned after rerandd "
				 "ran shares its machine id and install id: on the clone, rm "
				 "/etc/machine-id /var/lib/rerand/fleet-install-id, run "
				 "systemd-machine-id-setup and restart rerandd. A slot of this host "
				 "whose token was lost runs out after LockTTL=",
				 st.holders[i].slot, cfg->group, c->id,
				 *st.holders[i].fence ? "another fence" :
				 "no fence: taken by an older rerand");
		return -EEXIST;
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
	r = new_fence(c, fence);
	if (r < 0)
		return r;
	r = fleet_etcd_value(c->id, fence, val, sizeof(val));
	if (r < 0) {
		fleet_conn_error(c, "etcd: the identity %s is too long for a slot", c->id);
		return r;
	}
	r = lease_grant(c, e, cfg->lock_ttl, &lease);
	if (r < 0)
		return r;
	slot_prefix(c, prefix, sizeof(prefix));
	for (unsigned s = 0; s < cfg->max_concurrent; s++) {
		if (used[s])
			continue;
		snprintf(key, sizeof(key), "%s%u", prefix, s);
		r = fleet_etcd_acquire_body(key, val, lease, body, sizeof(body));
		if (r < 0)
			break;
		r = txn(c, e, body);
		if (r == 1) {
			e->lease = lease;
			e->slot = (int)s;
			memcpy(e->fence, fence, sizeof(e->fence));
			explicit_bzero(fence, sizeof(fence));
			return 1;
		}
		if (r < 0)
			break;
		/* someone took it between our read and our txn: try the next one */
	}
	explicit_bzero(fence, sizeof(fence));
	lease_revoke(c, e, lease);
	if (r == 0)
		fleet_conn_error(c, "etcd: group %s: lost the race for every free slot",
				cfg->group);
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
	char prefix[KEY_MAX], key[KEY_MAX + 16], body[2048], old[VAL_MAX], val[VAL_MAX];
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
	slot_prefix(c, prefix, sizeof(prefix));
	snprintf(key, sizeof(key), "%s%d", prefix, e->slot);
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
			fleet_conn_error(c, "etcd: slot %d under lease %" PRIx64 " does not carry "
					 "this host's fence (etcd refused the txn): taken by another "
					 "host with this identity, freed, or run out", e->slot,
					 (uint64_t)e->lease);
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
	char prefix[KEY_MAX], key[KEY_MAX + 16], body[2048], val[VAL_MAX];
	int r;

	if (e->lease && e->slot >= 0 && *e->fence) {
		slot_prefix(c, prefix, sizeof(prefix));
		snprintf(key, sizeof(key), "%s%d", prefix, e->slot);
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
			fleet_conn_error(c, "etcd: slot %d no longer carries this host's fence (etcd "
					 "refused the delete): not ours to free", e->slot);
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
	n = snprintf(buf, len, "%" PRIx64 ":%d:%s", (uint64_t)e->lease, e->slot, e->fence);
	return n < 0 || (size_t)n >= len ? -ENOBUFS : 0;
}

/* After the reboot (or a restart of this helper): the slot is taken back only
 * through the token this host persisted, LEASE:SLOT:FENCE, in one txn that
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
	if (sscanf(token, "%llx:%d:%n", &lease, &slot, &used) != 2 || !used || !lease ||
	    slot < 0 || slot >= FLEET_MAX_SLOTS ||
	    (fl = (int)strspn(token + used, "0123456789abcdef")) != FLEET_FENCE_LEN ||
	    token[used + fl]) {
		fleet_conn_error(c, "fleet token \"%.40s\" is malformed (want LEASE:SLOT:FENCE, "
				 "FENCE %d hex digits)", token, FLEET_FENCE_LEN);
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

static int etcd_status(struct fleet_conn *c, struct fleet_etcd *e, struct fleet_status *st)
{
	int r = range(c, e, st);

	if (r < 0)
		return r;
	for (unsigned i = 0; i < st->nr_holders; i++) {
		/* the fences stay here: a listing is no way to learn one */
		explicit_bzero(st->holders[i].fence, sizeof(st->holders[i].fence));
		if (st->holders[i].lease)
			st->holders[i].ttl = lease_ttl(c, e, st->holders[i].lease);
	}
	return 0;
}

static int etcd_release_host(struct fleet_conn *c, struct fleet_etcd *e, const char *host)
{
	struct fleet_status st;
	char prefix[KEY_MAX], key[KEY_MAX + 16], body[2048], val[VAL_MAX];
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
		r = fleet_etcd_value(h, st.holders[i].fence, val, sizeof(val));
		if (r >= 0)
			r = fleet_etcd_delete_body(key, val, st.holders[i].mod_revision, body,
						   sizeof(body));
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
