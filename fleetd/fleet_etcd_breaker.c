/* SPDX-License-Identifier: GPL-2.0-only */
/* The group-wide breaker in etcd.  Each failed rerandomization of a host is a
 * key /rerand/fleet/GROUP/failures/ID/TIME = CAUSE; the host that records the
 * failure which brings the group to BreakerFailures= within BreakerWindowSec=
 * creates /rerand/fleet/GROUP/breaker/ID, a key under its own name (a
 * transaction: only while no breaker key exists).  While a breaker key exists
 * (that one, or /rerand/fleet/GROUP/breaker as rerand 0.2 wrote it), every
 * acquire and every last word before a reboot (down) is refused, on every host
 * of the group, whatever its own threshold.  A host writes only keys under its
 * own id (failures/ID/, breaker/ID), so etcd can give each host a role that
 * cannot clear the breaker or remove another host's records
 * (etc/examples/etcd/rerand-etcd-roles, docs/fleet.md).  Records carry a host
 * id and a cause name, never an address. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "backend.h"
#include "fleetd.h"

#define KEY_MAX (FLEET_GROUP_MAX + FLEET_ID_MAX + 64)

static void failures_prefix(const struct fleet_conn *c, char *buf, size_t len)
{
	snprintf(buf, len, "/rerand/fleet/%s/failures/", c->cfg->group);
}

/* Every breaker key, old and new: [GROUP/breaker, GROUP/breaker0), which is
 * "breaker" itself and "breaker" followed by a byte below '0' ("breaker/ID"). */
static void breaker_range(const struct fleet_conn *c, char *key, char *end, size_t len)
{
	snprintf(key, len, "/rerand/fleet/%s/breaker", c->cfg->group);
	snprintf(end, len, "/rerand/fleet/%s/breaker0", c->cfg->group);
}

/* The one this host trips it with. */
static void breaker_own_key(const struct fleet_conn *c, char *buf, size_t len)
{
	snprintf(buf, len, "/rerand/fleet/%s/breaker/%s", c->cfg->group, c->id);
}

static int b64(const char *s, char *out, size_t len)
{
	return fleet_b64_encode(s, strlen(s), out, len) < 0 ? -ENOBUFS : 0;
}

/* A key's or value's text, decoded; "" when absent. */
static int j_b64(json_object *o, const char *key, char *out, size_t len)
{
	json_object *v;
	size_t n;

	out[0] = 0;
	if (!json_object_object_get_ex(o, key, &v))
		return 0;
	if (!json_object_is_type(v, json_type_string) ||
	    fleet_b64_decode(json_object_get_string(v), out, len - 1, &n))
		return -EBADMSG;
	out[n] = 0;
	return strlen(out) == n ? 0 : -EBADMSG;
}

static json_object *kvs_of(json_object *root)
{
	json_object *kvs;

	if (!json_object_object_get_ex(root, "kvs", &kvs) ||
	    !json_object_is_type(kvs, json_type_array))
		return NULL;
	return kvs;
}

/* 1 and the breaker key's value in why, 0 when there is none, <0 unknown. */
int fleet_etcd_breaker_get(struct fleet_conn *c, void *be, char *why, size_t len)
{
	char key[KEY_MAX], end[KEY_MAX], k[KEY_MAX * 2], ke[KEY_MAX * 2], body[KEY_MAX * 5];
	json_object *root, *kvs;
	int r;

	breaker_range(c, key, end, sizeof(key));
	if (b64(key, k, sizeof(k)) || b64(end, ke, sizeof(ke)))
		return -ENOBUFS;
	/* the first one made: what the host that tripped it first wrote */
	snprintf(body, sizeof(body), "{\"key\":\"%s\",\"range_end\":\"%s\",\"limit\":\"1\","
		 "\"sort_order\":\"ASCEND\",\"sort_target\":\"CREATE\"}", k, ke);
	r = fleet_etcd_call(c, be, "/v3/kv/range", body, &root);
	if (r < 0)
		return r;
	kvs = kvs_of(root);
	r = kvs && json_object_array_length(kvs) > 0;
	if (r && why && j_b64(json_object_array_get_idx(kvs, 0), "value", why, len) < 0)
		snprintf(why, len, "(unreadable)");
	json_object_put(root);
	return r;
}

static void failures_of(json_object *root, const char *prefix, struct fleet_failure *f,
			unsigned *n)
{
	json_object *kvs = kvs_of(root);
	size_t pl = strlen(prefix);

	*n = 0;
	for (size_t i = 0; kvs && i < json_object_array_length(kvs) && *n < FLEET_FAILURES_MAX; i++) {
		json_object *kv = json_object_array_get_idx(kvs, i);
		char kt[KEY_MAX + 1];
		struct fleet_failure *x = &f[*n];

		if (j_b64(kv, "key", kt, sizeof(kt)) < 0 || strncmp(kt, prefix, pl) ||
		    fleet_failure_key_parse(kt + pl, x) < 0)
			continue;     /* not ours to judge: someone else's key under the prefix */
		if (j_b64(kv, "value", x->cause, sizeof(x->cause)) < 0 || !fleet_cause_valid(x->cause))
			snprintf(x->cause, sizeof(x->cause), "unknown");
		(*n)++;
	}
}

int fleet_etcd_parse_failures(const char *body, const char *prefix, struct fleet_failure *f,
			      unsigned *n)
{
	json_object *root = json_tokener_parse(body);

	*n = 0;
	if (!root)
		return -EBADMSG;
	failures_of(root, prefix, f, n);
	json_object_put(root);
	return 0;
}

/* The newest FLEET_FAILURES_MAX failure records of the group. */
static int read_failures(struct fleet_conn *c, void *be, struct fleet_failure *f, unsigned *n)
{
	char prefix[KEY_MAX], end[KEY_MAX], k[KEY_MAX * 2], ke[KEY_MAX * 2], body[KEY_MAX * 6];
	json_object *root;
	size_t pl;
	int r;

	*n = 0;
	failures_prefix(c, prefix, sizeof(prefix));
	snprintf(end, sizeof(end), "%s", prefix);
	pl = strlen(end);
	end[pl - 1]++;            /* every key under the prefix */
	if (b64(prefix, k, sizeof(k)) || b64(end, ke, sizeof(ke)))
		return -ENOBUFS;
	snprintf(body, sizeof(body), "{\"key\":\"%s\",\"range_end\":\"%s\",\"limit\":\"%d\","
		 "\"sort_order\":\"DESCEND\",\"sort_target\":\"CREATE\"}", k, ke,
		 FLEET_FAILURES_MAX);
	r = fleet_etcd_call(c, be, "/v3/kv/range", body, &root);
	if (r < 0)
		return r;
	failures_of(root, prefix, f, n);
	json_object_put(root);
	return 0;
}

/* Create this host's breaker key unless a breaker key exists: 1 done or
 * already there, <0 unknown.  The compare covers the whole breaker range
 * (etcd compares every key in [key, range_end); none there is create 0). */
static int trip(struct fleet_conn *c, void *be, const char *why)
{
	char key[KEY_MAX], end[KEY_MAX], own[KEY_MAX * 2], k[KEY_MAX * 2], ke[KEY_MAX * 2],
	     ko[KEY_MAX * 3], v[FLEET_MSG_MAX * 2], body[KEY_MAX * 9 + FLEET_MSG_MAX * 4];
	json_object *root;
	int r;

	breaker_range(c, key, end, sizeof(key));
	breaker_own_key(c, own, sizeof(own));
	if (b64(key, k, sizeof(k)) || b64(end, ke, sizeof(ke)) || b64(own, ko, sizeof(ko)) ||
	    b64(why, v, sizeof(v)))
		return -ENOBUFS;
	snprintf(body, sizeof(body),
		 "{\"compare\":[{\"key\":\"%s\",\"range_end\":\"%s\",\"target\":\"CREATE\","
		 "\"result\":\"EQUAL\",\"create_revision\":\"0\"}],"
		 "\"success\":[{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\"}}]}", k, ke, ko, v);
	r = fleet_etcd_call(c, be, "/v3/kv/txn", body, &root);
	if (r < 0)
		return r;
	json_object_put(root);
	return 1;
}

int fleet_etcd_failed(struct fleet_conn *c, void *be, const char *cause, int64_t at)
{
	struct fleet_failure f[FLEET_FAILURES_MAX];
	char prefix[KEY_MAX], key[KEY_MAX + 32], k[KEY_MAX * 2 + 64], v[FLEET_CAUSE_MAX * 2];
	char body[KEY_MAX * 3 + 256], sum[FLEET_MSG_MAX], why[FLEET_MSG_MAX];
	int64_t now = time(NULL);
	json_object *root;
	unsigned n, count;
	int r;

	if (!fleet_cause_valid(cause) || at <= 0) {
		fleet_conn_error(c, "failed: %s at %" PRId64 ": want a cause name and a time",
				 cause, at);
		return -EINVAL;
	}
	failures_prefix(c, prefix, sizeof(prefix));
	snprintf(key, sizeof(key), "%s%s/%" PRId64, prefix, c->id, at);
	if (b64(key, k, sizeof(k)) || b64(cause, v, sizeof(v)))
		return -ENOBUFS;
	/* a plain put: the same failure reported twice (a restart before the
	 * answer was saved) is the same key, counted once */
	snprintf(body, sizeof(body), "{\"key\":\"%s\",\"value\":\"%s\"}", k, v);
	r = fleet_etcd_call(c, be, "/v3/kv/put", body, &root);
	if (r < 0)
		return r;
	json_object_put(root);
	if ((r = read_failures(c, be, f, &n)) < 0)
		return r;
	count = fleet_breaker_count(f, n, now, c->cfg->breaker_window);
	if (fleet_breaker_summary(f, n, now, c->cfg->breaker_window, sum, sizeof(sum)) < 0)
		snprintf(sum, sizeof(sum), "%u failures", count);
	if (fleet_breaker_trips(count, c->cfg->breaker_failures)) {
		time_t t = (time_t)now;
		struct tm tm;
		char when[32] = "?";

		if (gmtime_r(&t, &tm))
			strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		snprintf(why, sizeof(why), "tripped %s by BreakerFailures=%u: %.400s", when,
			 c->cfg->breaker_failures, sum);
		if ((r = trip(c, be, why)) < 0)
			return r;
	}
	r = fleet_etcd_breaker_get(c, be, NULL, 0);
	if (r < 0)
		return r;
	fleet_conn_error(c, "%s", sum);
	return r;
}

/* A breaker key ("breaker" itself, or "breaker/ID") of the group, whose
 * breaker key is key? */
static bool is_breaker_key(const char *key, const char *k)
{
	size_t n = strlen(key);

	return !strncmp(k, key, n) && (!k[n] || (unsigned char)k[n] < '0');
}

/* One idle look at the breaker (rerandd asks every 5 minutes): a single
 * range request over [GROUP/breaker, GROUP/failures0), which holds the
 * breaker keys and the failure records and nothing else of the group (the
 * slot and holder keys sort after it), the newest FLEET_FAILURES_MAX
 * first.  1 tripped (why: the first breaker key's value), 0 not (f, n:
 * the newest records), 2 when the answer was cut by the limit (more keys
 * than it: a breaker key could be among those not returned), <0 errno. */
static int breaker_and_failures(struct fleet_conn *c, void *be, char *why, size_t wlen,
				struct fleet_failure *f, unsigned *n)
{
	char key[KEY_MAX], end[KEY_MAX], prefix[KEY_MAX], k[KEY_MAX * 2], ke[KEY_MAX * 2];
	char body[KEY_MAX * 6];
	json_object *root, *kvs, *more;
	int64_t first = INT64_MAX;
	int r = 0;

	breaker_range(c, key, end, sizeof(key));
	failures_prefix(c, prefix, sizeof(prefix));
	snprintf(end, sizeof(end), "%s", prefix);
	end[strlen(end) - 1]++;       /* past every key under failures/ */
	if (b64(key, k, sizeof(k)) || b64(end, ke, sizeof(ke)))
		return -ENOBUFS;
	snprintf(body, sizeof(body), "{\"key\":\"%s\",\"range_end\":\"%s\",\"limit\":\"%d\","
		 "\"sort_order\":\"DESCEND\",\"sort_target\":\"CREATE\"}", k, ke,
		 FLEET_FAILURES_MAX);
	if ((r = fleet_etcd_call(c, be, "/v3/kv/range", body, &root)) < 0)
		return r;
	r = 0;
	kvs = kvs_of(root);
	for (size_t i = 0; kvs && i < json_object_array_length(kvs); i++) {
		json_object *kv = json_object_array_get_idx(kvs, i), *cr;
		char kt[KEY_MAX + 1];
		int64_t rev;

		if (j_b64(kv, "key", kt, sizeof(kt)) < 0 || !is_breaker_key(key, kt))
			continue;
		r = 1;
		rev = json_object_object_get_ex(kv, "create_revision", &cr) ?
		      json_object_get_int64(cr) : INT64_MAX - 1;
		if (rev < first) {
			first = rev;
			if (j_b64(kv, "value", why, wlen) < 0)
				snprintf(why, wlen, "(unreadable)");
		}
	}
	if (json_object_object_get_ex(root, "more", &more) && json_object_get_boolean(more))
		r = 2;
	else if (!r)
		failures_of(root, prefix, f, n);
	json_object_put(root);
	return r;
}

int fleet_etcd_breaker(struct fleet_conn *c, void *be)
{
	struct fleet_failure f[FLEET_FAILURES_MAX];
	char why[FLEET_MSG_MAX] = "", sum[FLEET_MSG_MAX];
	unsigned n = 0;
	int r, t;

	t = breaker_and_failures(c, be, why, sizeof(why), f, &n);
	if (t == 2) {
		/* more records than one answer holds: the breaker keys alone, then
		 * the records (two more requests, only with that many records) */
		t = fleet_etcd_breaker_get(c, be, why, sizeof(why));
		if (t == 0 && (r = read_failures(c, be, f, &n)) < 0)
			return r;
	}
	if (t < 0)
		return t;
	if (t) {
		/* what the host that tripped it wrote, records that aged out included */
		fleet_conn_error(c, "%s", why);
		return 1;
	}
	if (fleet_breaker_summary(f, n, time(NULL), c->cfg->breaker_window, sum, sizeof(sum)) < 0)
		snprintf(sum, sizeof(sum), "?");
	fleet_conn_error(c, "%s", sum);
	return 0;
}

static int delete_range(struct fleet_conn *c, void *be, const char *key, const char *end,
			int64_t *deleted)
{
	char k[KEY_MAX * 2], ke[KEY_MAX * 2] = "", body[KEY_MAX * 5];
	json_object *root, *d;
	int r;

	if (b64(key, k, sizeof(k)) || (end && b64(end, ke, sizeof(ke))))
		return -ENOBUFS;
	if (end)
		snprintf(body, sizeof(body), "{\"key\":\"%s\",\"range_end\":\"%s\"}", k, ke);
	else
		snprintf(body, sizeof(body), "{\"key\":\"%s\"}", k);
	r = fleet_etcd_call(c, be, "/v3/kv/deleterange", body, &root);
	if (r < 0)
		return r;
	*deleted = 0;
	if (json_object_object_get_ex(root, "deleted", &d))
		*deleted = strtoll(json_object_get_string(d), NULL, 10);
	json_object_put(root);
	return 0;
}

int fleet_etcd_clear_breaker(struct fleet_conn *c, void *be)
{
	char key[KEY_MAX], bend[KEY_MAX], prefix[KEY_MAX], end[KEY_MAX];
	int64_t b = 0, n = 0;
	int r;

	/* the records first: a breaker removed before them could be tripped
	 * again at once by the next failure report counting the old ones */
	failures_prefix(c, prefix, sizeof(prefix));
	snprintf(end, sizeof(end), "%s", prefix);
	end[strlen(end) - 1]++;
	if ((r = delete_range(c, be, prefix, end, &n)) < 0)
		return r;
	breaker_range(c, key, bend, sizeof(key));
	if ((r = delete_range(c, be, key, bend, &b)) < 0)
		return r;
	fleet_conn_error(c, "group %s: %s; %" PRId64 " failure record%s removed", c->cfg->group,
			 b ? "breaker cleared" : "the breaker was not tripped", n, n == 1 ? "" : "s");
	return b ? 1 : 0;
}
