/* SPDX-License-Identifier: GPL-2.0-only */
/* The fleet layer's pure logic: back-off bounds and jitter, window spreading,
 * base64, the JSON the backends send and parse, and the [Fleet] config keys. */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rerandd.h"         /* fleet.h: fleet_metrics_text() */
#include "fleetd.h"
#include "backend.h"
#include "test.h"

static uint64_t sm_state = 0x9e3779b97f4a7c15ull;
static uint64_t splitmix(void)
{
	uint64_t z = (sm_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void test_backoff(void)
{
	bool bounds = true, capped = true;
	int64_t lo = INT64_MAX, hi = 0;
	double sum = 0;

	for (unsigned a = 0; a < 70; a++) {
		int64_t d = 1000;
		for (unsigned i = 0; i < a && d < 60000; i++)
			d = d * 2 > 60000 ? 60000 : d * 2;
		for (int k = 0; k < 200; k++) {
			int64_t v = fleet_backoff_ms(a, 1000, 60000, splitmix());
			if (v < d / 2 || v > d)
				bounds = false;
			if (v > 60000)
				capped = false;
		}
	}
	T_OK(bounds, "back-off: every draw lies in [d/2, d] with d = min(cap, base * 2^attempt)");
	T_OK(capped, "back-off: never above the cap, even at attempt 69 (no overflow)");
	T_EQ_U64(fleet_backoff_ms(0, 1000, 60000, 0), 500, "back-off: attempt 0, lowest draw is base/2");
	T_EQ_U64(fleet_backoff_ms(0, 1000, 60000, 500), 1000, "back-off: attempt 0, highest draw is base");
	T_EQ_U64(fleet_backoff_ms(3, 1000, 60000, 0), 4000, "back-off: attempt 3 starts at 8 s / 2");
	T_EQ_U64(fleet_backoff_ms(40, 1000, 60000, 30000), 60000, "back-off: a late attempt tops out at the cap");
	T_EQ_U64(fleet_backoff_ms(2, 5000, 1000, 0), 2500, "back-off: a cap below the base is raised to the base");
	for (int k = 0; k < 20000; k++) {
		int64_t v = fleet_backoff_ms(5, 1000, 60000, splitmix());
		lo = v < lo ? v : lo;
		hi = v > hi ? v : hi;
		sum += (double)v;
	}
	/* 32 s: uniform in [16 s, 32 s] has mean 24 s */
	T_OK(lo < 16200 && hi > 31800, "jitter: draws cover [16 s, 32 s] (saw %lld..%lld)",
	     (long long)lo, (long long)hi);
	T_OK(sum / 20000 > 23500 && sum / 20000 < 24500, "jitter: mean %.0f ms is near 24000",
	     sum / 20000);
}

static void test_spread(void)
{
	bool in = true;
	int64_t lo = INT64_MAX, hi = 0;
	unsigned buckets[10] = { 0 };

	/* window [10000, 13600): hosts due before it opens */
	for (int k = 0; k < 20000; k++) {
		int64_t t = fleet_spread_start(5000, 10000, 13600, splitmix());
		if (t < 10000 || t >= 11800)
			in = false;
		lo = t < lo ? t : lo;
		hi = t > hi ? t : hi;
		if (t >= 10000 && t < 11800)
			buckets[(t - 10000) / 180]++;
	}
	T_OK(in, "spread: due before the window, starts fall in its first half");
	T_OK(lo < 10010 && hi > 11790, "spread: starts cover the first half (%lld..%lld)",
	     (long long)lo, (long long)hi);
	bool flat = true;
	for (int b = 0; b < 10; b++)
		if (buckets[b] < 1600 || buckets[b] > 2400)
			flat = false;
	T_OK(flat, "spread: no tenth of the spread gets more than 1.2x its share (no stampede)");
	in = true;
	for (int k = 0; k < 1000; k++) {
		int64_t t = fleet_spread_start(13000, 10000, 13600, splitmix());
		if (t < 13000 || t >= 13300)
			in = false;
	}
	T_OK(in, "spread: inside the window, starts fall in the first half of what is left");
	T_EQ_U64(fleet_spread_start(13600, 10000, 13600, 7), 0, "spread: a window that is over gives 0");
	T_EQ_U64(fleet_spread_start(13599, 10000, 13600, 7), 13599, "spread: the last second starts now");
}

static void test_b64(void)
{
	static const char *const plain[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
	static const char *const enc[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=",
					   "Zm9vYmFy" };
	char buf[64], back[64];
	bool all = true;
	size_t n;

	for (unsigned i = 0; i < 7; i++) {
		fleet_b64_encode(plain[i], strlen(plain[i]), buf, sizeof(buf));
		if (strcmp(buf, enc[i]) || fleet_b64_decode(enc[i], back, sizeof(back), &n) ||
		    n != strlen(plain[i]) || memcmp(back, plain[i], n))
			all = false;
	}
	T_OK(all, "base64: RFC 4648 test vectors both ways");
	T_OK(fleet_b64_decode("Zm9", back, sizeof(back), &n) == -EINVAL, "base64: a length not a multiple of 4 is refused");
	T_OK(fleet_b64_decode("Zm!v", back, sizeof(back), &n) == -EINVAL, "base64: a bad character is refused");
	T_OK(fleet_b64_decode("Zg==Zm9v", back, sizeof(back), &n) == -EINVAL, "base64: padding in the middle is refused");
	T_OK(fleet_b64_decode("Zm9vYmFy", back, 4, &n) == -ENOBUFS, "base64: output longer than the buffer is refused");
	T_OK(fleet_b64_encode("foobar", 6, buf, 8) == -ENOBUFS, "base64: encode checks its buffer (NUL included)");
}

static void test_fleetlock_json(void)
{
	char buf[256], kind[64], value[128];

	T_OK(fleet_lock_body("c988d2509fdf4cdcbed39037c56406fb", "workers", buf, sizeof(buf)) > 0 &&
	     !strcmp(buf, "{\"client_params\":{\"id\":\"c988d2509fdf4cdcbed39037c56406fb\",\"group\":\"workers\"}}"),
	     "fleetlock: the request body is exactly {client_params:{id,group}}");
	T_OK(fleet_lock_body("a", "bad group", buf, sizeof(buf)) == -EINVAL,
	     "fleetlock: a group outside ^[a-zA-Z0-9.-]+$ is not sent");
	T_OK(fleet_lock_body("", "g", buf, sizeof(buf)) == -EINVAL, "fleetlock: an empty id is not sent");
	T_OK(fleet_lock_body("a", "g", buf, 10) == -ENOBUFS, "fleetlock: a short buffer is reported");
	T_OK(!fleet_lock_parse_error("{\"kind\":\"failed_lock_semaphore_full\",\"value\":\"all slots are locked\"}",
				     kind, sizeof(kind), value, sizeof(value)) &&
	     !strcmp(kind, "failed_lock_semaphore_full") && !strcmp(value, "all slots are locked"),
	     "fleetlock: an error body gives kind and value");
	T_OK(fleet_lock_parse_error("{\"kind\":\"x\"}", kind, sizeof(kind), value, sizeof(value)) == -EBADMSG,
	     "fleetlock: an error body without value is malformed");
	T_OK(fleet_lock_parse_error("{\"kind\":\"\",\"value\":\"v\"}", kind, sizeof(kind), value, sizeof(value)) == -EBADMSG,
	     "fleetlock: an empty kind is malformed");
	T_OK(fleet_lock_parse_error("{\"kind\":1,\"value\":\"v\"}", kind, sizeof(kind), value, sizeof(value)) == -EBADMSG,
	     "fleetlock: a kind that is not a string is malformed");
	T_OK(fleet_lock_parse_error("<html>502</html>", kind, sizeof(kind), value, sizeof(value)) == -EBADMSG,
	     "fleetlock: a proxy's HTML page is not an error body");
}

static const char *jpath_str(json_object *o, const char *a, int idx, const char *b, const char *c)
{
	json_object *x;
	if (!json_object_object_get_ex(o, a, &x) || !(x = json_object_array_get_idx(x, (size_t)idx)))
		return NULL;
	if (!json_object_object_get_ex(x, b, &x))
		return NULL;
	if (c && !json_object_object_get_ex(x, c, &x))
		return NULL;
	return json_object_get_string(x);
}

static void test_etcd_json(void)
{
	char buf[1024], key[64];
	json_object *o;
	size_t n;

	T_OK(fleet_etcd_acquire_body("/rerand/fleet/web/slot/1", "host-7", 7235123456789, NULL, NULL, 0,
				     buf, sizeof(buf)) > 0,
	     "etcd: the acquire txn is built");
	o = json_tokener_parse(buf);
	T_OK(o != NULL, "etcd: the acquire txn is JSON");
	const char *k = jpath_str(o, "compare", 0, "key", NULL);
	T_OK(k && !fleet_b64_decode(k, key, sizeof(key), &n) && !strcmp(key, "/rerand/fleet/web/slot/1"),
	     "etcd: it compares the slot key (base64)");
	T_OK(!strcmp(jpath_str(o, "compare", 0, "target", NULL) ?: "", "CREATE") &&
	     !strcmp(jpath_str(o, "compare", 0, "create_revision", NULL) ?: "", "0") &&
	     !strcmp(jpath_str(o, "compare", 0, "result", NULL) ?: "", "EQUAL"),
	     "etcd: the compare is create_revision == 0 (the slot does not exist)");
	T_OK(!strcmp(jpath_str(o, "success", 0, "request_put", "lease") ?: "", "7235123456789") &&
	     !strcmp(jpath_str(o, "success", 0, "request_put", "value") ?: "", "aG9zdC03"),
	     "etcd: the put carries the lease and the holder's id");
	json_object *f;
	T_OK(!json_object_object_get_ex(o, "failure", &f), "etcd: a lost race changes nothing (no failure ops)");
	json_object_put(o);
	/* the count's guard: the semaphore's range unchanged since revision 9 */
	T_OK(fleet_etcd_acquire_body("/rerand/fleet/web/holder/host-7", "host-7 f", 5, "/rerand/fleet/web/holder/",
				     "/rerand/fleet/web/slot0", 9, buf, sizeof(buf)) > 0 &&
	     (o = json_tokener_parse(buf)) != NULL, "etcd: the counted acquire txn is JSON");
	k = jpath_str(o, "compare", 1, "key", NULL);
	const char *ke = jpath_str(o, "compare", 1, "range_end", NULL);
	char kend[64];
	T_OK(k && ke && !fleet_b64_decode(k, key, sizeof(key), &n) && (key[n] = 0, 1) &&
	     !strcmp(key, "/rerand/fleet/web/holder/") && !fleet_b64_decode(ke, kend, sizeof(kend), &n) &&
	     (kend[n] = 0, 1) && !strcmp(kend, "/rerand/fleet/web/slot0") &&
	     !strcmp(jpath_str(o, "compare", 1, "target", NULL) ?: "", "MOD") &&
	     !strcmp(jpath_str(o, "compare", 1, "result", NULL) ?: "", "LESS") &&
	     !strcmp(jpath_str(o, "compare", 1, "mod_revision", NULL) ?: "", "10") &&
	     !strcmp(jpath_str(o, "compare", 0, "target", NULL) ?: "", "CREATE"),
	     "etcd: ... it compares the whole range [holder/, slot0): mod_revision < R+1, and the key's "
	     "create_revision == 0");
	json_object_put(o);
	T_OK(fleet_etcd_acquire_body("/k", "v", 5, "/a", "/b", 0, buf, sizeof(buf)) == -ENOBUFS,
	     "etcd: ... without a revision it is not built");

	T_OK(fleet_etcd_value("host-7", "00112233445566778899aabbccddeeff", key, sizeof(key)) == 0 &&
	     !strcmp(key, "host-7 00112233445566778899aabbccddeeff") &&
	     fleet_etcd_value("host-7", "", key, sizeof(key)) == 0 && !strcmp(key, "host-7") &&
	     fleet_etcd_value("host-7", "00112233445566778899aabbccddeeff", key, 20) == -ENOBUFS,
	     "etcd: a slot's value is \"ID FENCE\" (\"ID\" without a fence), too long refused");
	T_OK(fleet_etcd_move_body("/rerand/fleet/web/slot/1", "host-7 00112233445566778899aabbccddeeff", 11,
				  "host-7 ffeeddccbbaa99887766554433221100", 22, buf, sizeof(buf)) > 0 &&
	     (o = json_tokener_parse(buf)) != NULL, "etcd: the lease move txn is JSON");
	T_OK(!strcmp(jpath_str(o, "compare", 0, "target", NULL) ?: "", "VALUE") &&
	     !strcmp(jpath_str(o, "compare", 0, "value", NULL) ?: "",
		     "aG9zdC03IDAwMTEyMjMzNDQ1NTY2Nzc4ODk5YWFiYmNjZGRlZWZm") &&
	     !strcmp(jpath_str(o, "compare", 1, "target", NULL) ?: "", "LEASE") &&
	     !strcmp(jpath_str(o, "compare", 1, "lease", NULL) ?: "", "11") &&
	     !strcmp(jpath_str(o, "success", 0, "request_put", "lease") ?: "", "22") &&
	     !strcmp(jpath_str(o, "success", 0, "request_put", "value") ?: "",
		     "aG9zdC03IGZmZWVkZGNjYmJhYTk5ODg3NzY2NTU0NDMzMjIxMTAw") &&
	     !json_object_object_get_ex(o, "failure", &f),
	     "etcd: the move puts the new value on the new lease only while the old value (fence "
	     "included) is there on the old lease");
	json_object_put(o);
	T_OK(fleet_etcd_delete_body("/rerand/fleet/web/slot/1", "host-7 00112233445566778899aabbccddeeff", 0,
				    buf, sizeof(buf)) > 0 && (o = json_tokener_parse(buf)) != NULL &&
	     !strcmp(jpath_str(o, "compare", 0, "target", NULL) ?: "", "VALUE") &&
	     !strcmp(jpath_str(o, "compare", 0, "value", NULL) ?: "",
		     "aG9zdC03IDAwMTEyMjMzNDQ1NTY2Nzc4ODk5YWFiYmNjZGRlZWZm") &&
	     jpath_str(o, "success", 0, "request_delete_range", "key") &&
	     !json_object_object_get_ex(o, "failure", &f),
	     "etcd: the release deletes the slot only while its value, fence included, is there");
	json_object_put(o);
	T_OK(fleet_etcd_delete_body("/rerand/fleet/web/holder/h", NULL, 12, buf, sizeof(buf)) > 0 &&
	     (o = json_tokener_parse(buf)) != NULL &&
	     !strcmp(jpath_str(o, "compare", 0, "target", NULL) ?: "", "MOD") &&
	     !strcmp(jpath_str(o, "compare", 0, "mod_revision", NULL) ?: "", "12") &&
	     !jpath_str(o, "compare", 1, "target", NULL) &&
	     fleet_etcd_delete_body("/k", NULL, 0, buf, sizeof(buf)) == -ENOBUFS,
	     "etcd: an operator's release of a holder key compares its revision (and never nothing)");
	json_object_put(o);

	/* a reply as etcd 3.4's gateway writes it: int64 as strings, key order by bytes */
	const char *reply =
		"{\"header\":{\"revision\":\"9\"},\"kvs\":["
		"{\"key\":\"L3JlcmFuZC9mbGVldC93ZWIvc2xvdC8x\",\"create_revision\":\"5\",\"mod_revision\":\"5\","
		"\"version\":\"1\",\"value\":\"aG9zdC1iIDAxMjM0NTY3ODlhYmNkZWYwMTIzNDU2Nzg5YWJjZGVm\",\"lease\":\"77\"},"
		"{\"key\":\"L3JlcmFuZC9mbGVldC93ZWIvc2xvdC8xMA==\",\"mod_revision\":\"8\",\"value\":\"aG9zdC16\",\"lease\":\"99\"},"
		"{\"key\":\"L3JlcmFuZC9mbGVldC93ZWIvc2xvdC8w\",\"mod_revision\":\"4\",\"value\":\"aG9zdC1h\"}],\"count\":\"3\"}";
	struct fleet_status st;
	T_OK(fleet_etcd_parse_range(reply, "/rerand/fleet/web/", 2, &st, NULL) == 0 && st.nr_holders == 3,
	     "etcd: a range reply gives three holders");
	T_OK(st.holders[0].slot == 0 && !strcmp(st.holders[0].id, "host-a") && st.holders[0].lease == 0 &&
	     st.holders[1].slot == 1 && !strcmp(st.holders[1].id, "host-b") && st.holders[1].lease == 77 &&
	     st.holders[1].mod_revision == 5 && st.holders[2].slot == 10 && st.holders[2].lease == 99,
	     "etcd: holders sorted by slot number (10 after 1), lease and revision read from strings");
	T_OK(!strcmp(st.holders[1].fence, "0123456789abcdef0123456789abcdef") && !*st.holders[0].fence,
	     "etcd: a value \"ID FENCE\" is split into holder and fence (an older one has no fence)");
	T_OK(st.nr_stray == 1, "etcd: slot 10 with MaxConcurrent=2 is reported as stray");
	struct fleet_etcd_group g;
	T_OK(fleet_etcd_parse_range("{\"header\":{\"revision\":\"3\"}}", "/p/", 2, &st, &g) == 0 &&
	     st.nr_holders == 0 && g.revision == 3 && !g.has_marker,
	     "etcd: an empty group (no kvs member) has no holders, and the reply's revision");
	T_OK(fleet_etcd_parse_range("{\"kvs\":[{\"key\":\"!!!!\"}]}", "/p/", 2, &st, NULL) == -EBADMSG,
	     "etcd: a key that is not base64 is a malformed reply");
	T_OK(fleet_etcd_parse_range("{\"kvs\":[{\"key\":\"L3Avc2xvdC94\",\"value\":\"YQ==\"}]}", "/p/", 2, &st, NULL) == -EBADMSG,
	     "etcd: a slot key whose suffix is not a number is a malformed reply");
	T_OK(fleet_etcd_parse_range("{\"kvs\":[{\"key\":\"L3AvaG9sZGVyLw==\",\"value\":\"YQ==\"}]}", "/p/", 2, &st, NULL) == -EBADMSG,
	     "etcd: a holder key without an id is a malformed reply");
	T_OK(fleet_etcd_parse_range("[1,2]", "/p/", 2, &st, NULL) == -EBADMSG && fleet_etcd_parse_range("{", "/p/", 2, &st, NULL) == -EBADMSG,
	     "etcd: replies that are not an object are malformed");
	/* both kinds, the marker, and a failure record that is no holder */
	const char *mixed =
		"{\"header\":{\"revision\":\"21\"},\"kvs\":["
		"{\"key\":\"L3JlcmFuZC9mbGVldC93ZWIvZmFpbHVyZXMvaG9zdC1jfjBhLzE=\",\"value\":\"bmV2ZXItY29uZmlybWVk\"},"
		"{\"key\":\"L3JlcmFuZC9mbGVldC93ZWIvaG9sZGVyL2hvc3QtY34wYQ==\",\"mod_revision\":\"20\",\"lease\":\"5\","
		"\"value\":\"aG9zdC14fjBiIDAwMTEyMjMzNDQ1NTY2Nzc4ODk5YWFiYmNjZGRlZWZm\"},"
		"{\"key\":\"L3JlcmFuZC9mbGVldC93ZWIvc2VtYXBob3Jl\",\"value\":\"aG9sZGVycw==\"},"
		"{\"key\":\"L3JlcmFuZC9mbGVldC93ZWIvc2xvdC8x\",\"mod_revision\":\"7\","
		"\"value\":\"aG9zdC1iIDAxMjM0NTY3ODlhYmNkZWYwMTIzNDU2Nzg5YWJjZGVm\"}]}";
	T_OK(fleet_etcd_parse_range(mixed, "/rerand/fleet/web/", 2, &st, &g) == 0 && st.nr_holders == 2 &&
	     g.revision == 21 && g.has_marker && !strcmp(g.marker, "holders") && st.nr_stray == 0,
	     "etcd: a holder key and a numbered slot are two holders; the marker and a failure record none");
	T_OK(st.holders[0].slot == -1 && !strcmp(st.holders[0].id, "host-c~0a") && !*st.holders[0].fence &&
	     st.holders[0].mod_revision == 20 && st.holders[0].lease == 5 &&
	     st.holders[1].slot == 1 && !strcmp(st.holders[1].id, "host-b"),
	     "etcd: a holder key's id is the one its key names (etcd's roles bind the key), with no fence "
	     "when its value names another host");

	memset(&st, 0, sizeof(st));
	st.max_concurrent = 2;
	T_OK(t_json_r("fleet-status", fleet_status_format_json(&st, "web", buf, sizeof(buf)), buf) > 0, "status: JSON formats");
	o = json_tokener_parse(buf);
	json_object *fr;
	T_OK(o && json_object_object_get_ex(o, "free", &fr) && json_object_get_int(fr) == 2,
	     "status: an empty group of 2 has 2 free slots");
	json_object_put(o);
	/* etcd's lease ids use all 64 bits: a number would be rounded */
	st.nr_holders = 1;
	st.nr_stray = 0;
	st.holders[0].slot = 0;
	st.holders[0].lease = 0x694d8e2a1b3c4d5fLL;
	snprintf(st.holders[0].id, sizeof(st.holders[0].id), "host-a");
	T_OK(t_json_r("fleet-status", fleet_status_format_json(&st, "web", buf, sizeof(buf)), buf) > 0 &&
	     strstr(buf, "\"lease\":\"0x694d8e2a1b3c4d5f\""),
	     "status: a 64-bit lease id is a \"0x...\" string, exact (%s)", buf);
}

static char err_last[256];         /* set()'s last message */

static int set(struct fleet_config *c, const char *k, const char *v)
{
	err_last[0] = 0;
	return fleet_config_set(c, k, v, err_last, sizeof(err_last));
}

/* fleet_config_each() into fleet_config_set(): rerandd's handoff to
 * rerand-fleetd, which parses what rerandd prints */
static int reparse_kv(const char *key, const char *value, void *ud)
{
	char err[256];
	return fleet_config_set(ud, key, value, err, sizeof(err)) ? -1 : 0;
}

/* fleet_config_each(): " KEY=VALUE " appended to ud */
static int collect_kv(const char *key, const char *value, void *ud)
{
	size_t o = strlen(ud);
	snprintf((char *)ud + o, 512 - o, "%s%s=%s ", o ? "" : " ", key, value);
	return 0;
}

static void test_config(void)
{
	struct fleet_config c;
	char err[256];

	fleet_config_defaults(&c);
	T_OK(c.backend == FLEET_BACKEND_NONE && !strcmp(c.group, "default") && c.max_concurrent == 1 &&
	     !strcmp(c.machine_id, "/etc/machine-id"), "config: defaults are none, group default, K=1, /etc/machine-id");
	T_OK(!set(&c, "Backend", "etcd") && c.backend == FLEET_BACKEND_ETCD, "config: Backend=etcd");
	T_OK(set(&c, "Backend", "consul") == -EINVAL, "config: Backend=consul is refused");
	T_OK(!set(&c, "Endpoints", "10.0.0.1:2379, https://e2:2379  e3:2379") && c.nr_endpoints == 3 &&
	     !strcmp(c.endpoints[1], "https://e2:2379") && !strcmp(c.endpoints[2], "e3:2379"),
	     "config: Endpoints= split on commas and spaces");
	T_OK(set(&c, "Endpoints", "unix:///run/etcd.sock") == -EINVAL, "config: a non-http endpoint is refused");
	T_OK(set(&c, "Endpoints", "a b c d e f g h i") == -EINVAL, "config: more than 8 endpoints are refused");
	T_OK(!set(&c, "MaxConcurrent", "3") && c.max_concurrent == 3, "config: MaxConcurrent=3");
	T_OK(set(&c, "MaxConcurrent", "0") == -EINVAL && set(&c, "MaxConcurrent", "65") == -EINVAL &&
	     set(&c, "MaxConcurrent", "-1") == -EINVAL && set(&c, "MaxConcurrent", "2x") == -EINVAL,
	     "config: MaxConcurrent outside 1..64 or not a number is refused");
	T_OK(!set(&c, "LockTTL", "15min") && c.lock_ttl == 900 && !set(&c, "LockTTL", "90") && c.lock_ttl == 90,
	     "config: LockTTL= takes 15min and 90");
	T_OK(set(&c, "LockTTL", "0") == -EINVAL && set(&c, "LockTTL", "1fortnight") == -EINVAL,
	     "config: LockTTL=0 and unknown units are refused");
	/* RetryBase=/RetryMax=: a bare number is seconds as in every duration;
	 * the old names keep their milliseconds (issue 40, point 4) */
	T_OK(!set(&c, "RetryBase", "2") && c.retry_base_ms == 2000 && !set(&c, "RetryBase", "250ms") &&
	     c.retry_base_ms == 250 && !set(&c, "RetryMax", "1min") && c.retry_max_ms == 60000,
	     "config: RetryBase=2 is 2 s, 250ms is 250 ms; RetryMax=1min");
	T_OK(!set(&c, "RetryBaseMSec", "5000") && c.retry_base_ms == 5000 && !set(&c, "RetryMaxMSec", "5s") &&
	     c.retry_max_ms == 5000 && !strcmp(fleet_config_alias("RetryBaseMSec"), "RetryBase") &&
	     !fleet_config_alias("RetryBase"),
	     "config: the old RetryBaseMSec=5000 is still 5000 ms, RetryMaxMSec=5s 5 s; named as aliases");
	T_OK(set(&c, "RetryBase", "5ms") == -EINVAL && set(&c, "RetryBase", "2d") == -EINVAL &&
	     strstr(err_last, "RetryBase=2d") && strstr(err_last, "bare number is seconds"),
	     "config: RetryBase= under 10ms or over 24h is refused, saying a bare number is seconds");
	{
		/* what the helper is handed and --dump-config prints: time spans */
		struct fleet_config d;
		char got[512] = "";
		fleet_config_defaults(&d);
		fleet_config_each(&d, collect_kv, got);
		T_OK(strstr(got, " LockTTL=15min ") && strstr(got, " DownTTL=30min ") &&
		     strstr(got, " Timeout=5s ") && strstr(got, " RetryBase=5s ") &&
		     strstr(got, " RetryMax=5min ") && strstr(got, " BreakerWindowSec=1d "),
		     "config: the defaults' durations print as time spans: %s", got);
		/* odd values survive the handoff to rerand-fleetd unchanged */
		struct fleet_config back;
		d.lock_ttl = 90061;
		d.down_ttl = 100000;
		d.timeout = 7;
		d.retry_base_ms = 1250;
		d.retry_max_ms = 61001;
		d.breaker_window = 3661;
		fleet_config_defaults(&back);
		T_OK(fleet_config_each(&d, reparse_kv, &back) == 0 && back.lock_ttl == 90061 &&
		     back.down_ttl == 100000 && back.timeout == 7 && back.retry_base_ms == 1250 &&
		     back.retry_max_ms == 61001 && back.breaker_window == 3661,
		     "config: every duration printed for rerand-fleetd parses back to the same value");
	}
	set(&c, "RetryBase", "5s");
	set(&c, "RetryMax", "5min");
	T_OK(set(&c, "Group", "a/b") == -EINVAL && set(&c, "Group", "") == -EINVAL && !set(&c, "Group", "db-1.eu"),
	     "config: Group= follows FleetLock's ^[a-zA-Z0-9.-]+$");
	T_OK(fleet_config_set(&c, "Colour", "blue", err, sizeof(err)) == -ENOENT && strstr(err, "Colour"),
	     "config: an unknown key is -ENOENT and named");
	T_OK(set(&c, "MaxConcurrent", "4") == 0 && set(&c, "maxconcurrent", "3") == 1 &&
	     c.max_concurrent == 3 && set(&c, "MAXCONCURRENT", "x") == -EINVAL,
	     "config: a key in another case is taken and said (1), its value still checked");
	{
		/* each key once, in rerand.conf's order; its value reads back */
		static const char *const order[] = { "Backend", "Group", "Endpoints", "CACert",
			"Cert", "Key", "User", "PasswordFile", "AllowPlaintext", "MaxConcurrent",
			"LockTTL", "DownTTL", "URL", "MachineIDFile", "ID", "InstallID", "Timeout",
			"RetryBase", "RetryMax", "HelperSocket", "BreakerFailures",
			"BreakerWindowSec" };
		struct fleet_config back;
		char v[4096];
		bool same = fleet_config_key(FLEET_NR_KEYS) == NULL &&
			    sizeof(order) / sizeof(order[0]) == FLEET_NR_KEYS;

		fleet_config_defaults(&back);
		for (size_t i = 0; same && i < FLEET_NR_KEYS; i++) {
			same = !strcmp(fleet_config_key(i), order[i]);
			fleet_config_get(&c, i, v, sizeof(v));
			if (same && fleet_config_set(&back, order[i], v, err, sizeof(err)) != 0)
				same = false;
		}
		for (size_t i = 0; i < FLEET_NR_KEYS; i++) {
			char w[4096];
			fleet_config_get(&c, i, v, sizeof(v));
			fleet_config_get(&back, i, w, sizeof(w));
			if (strcmp(v, w)) {
				printf("# %s: %s, read back %s\n", order[i], v, w);
				same = false;
			}
		}
		T_OK(same && back.max_concurrent == 3 && back.nr_endpoints == c.nr_endpoints,
		     "config: fleet_config_key() names every key once in order; each value "
		     "fleet_config_get() prints parses back to the same configuration");
	}
	T_OK(!set(&c, "Cert", "/etc/rerand/c.pem") && fleet_config_validate(&c, err, sizeof(err)) == -EINVAL &&
	     strstr(err, "Key="), "config: Cert= without Key= fails validation");
	T_OK(!set(&c, "Key", "/etc/rerand/k.pem") && !set(&c, "CACert", "/etc/rerand/ca.pem") &&
	     fleet_config_validate(&c, err, sizeof(err)) == 0, "config: a complete etcd TLS section validates");
	T_OK(!set(&c, "LockTTL", "3") && fleet_config_validate(&c, err, sizeof(err)) == -EINVAL,
	     "config: LockTTL below 5 s fails validation");
	T_OK(!set(&c, "LockTTL", "15min") && c.down_ttl == 1800 && !fleet_config_validate(&c, err, sizeof(err)),
	     "config: DownTTL= defaults to 30 min, twice the default LockTTL=");
	T_OK(!set(&c, "DownTTL", "2h") && c.down_ttl == 7200 && set(&c, "DownTTL", "0") == -EINVAL,
	     "config: DownTTL= takes 2h and refuses 0");
	T_OK(!set(&c, "DownTTL", "10min") && fleet_config_validate(&c, err, sizeof(err)) == -EINVAL &&
	     strstr(err, "DownTTL=") && strstr(err, "LockTTL="),
	     "config: a DownTTL= shorter than LockTTL= fails validation, naming both");
	fleet_config_defaults(&c);
	T_OK(!set(&c, "Backend", "fleetlock") && fleet_config_validate(&c, err, sizeof(err)) == -EINVAL &&
	     strstr(err, "URL="), "config: fleetlock without URL= fails validation");
	T_OK(set(&c, "URL", "ftp://x") == -EINVAL && !set(&c, "URL", "https://fleetlock.example/base"),
	     "config: URL= must be http(s)");
	T_OK(!set(&c, "URL", "http://fleetlock.example/") && fleet_config_validate(&c, err, sizeof(err)) ==
	     -EINVAL && strstr(err, "plaintext HTTP to fleetlock.example") && strstr(err, "AllowPlaintext=yes"),
	     "config: plaintext FleetLock to another host fails validation, saying why");
	T_OK(!set(&c, "AllowPlaintext", "yes") && fleet_config_validate(&c, err, sizeof(err)) == 0 &&
	     set(&c, "AllowPlaintext", "maybe") == -EINVAL, "config: AllowPlaintext=yes accepts it");

	char host[64];
	T_OK(fleet_url_plaintext_remote("10.1.2.3:2379", false, host, sizeof(host)) && !strcmp(host, "10.1.2.3") &&
	     !fleet_url_plaintext_remote("10.1.2.3:2379", true, host, sizeof(host)) &&
	     !fleet_url_plaintext_remote("https://10.1.2.3:2379", false, host, sizeof(host)),
	     "plaintext: a bare host:port is plaintext unless CACert= makes it https");
	T_OK(!fleet_url_plaintext_remote("http://127.0.0.9:1", false, host, sizeof(host)) &&
	     !fleet_url_plaintext_remote("http://[::1]:1/", false, host, sizeof(host)) &&
	     !fleet_url_plaintext_remote("localhost:1", false, host, sizeof(host)) &&
	     fleet_url_plaintext_remote("http://127.example.org/", false, host, sizeof(host)) &&
	     fleet_url_plaintext_remote("http://[::ffff:10.0.0.1]:1", false, host, sizeof(host)),
	     "plaintext: loopback is 127/8, ::1 or localhost, by address, not by a name's prefix");

	fleet_config_defaults(&c);
	T_OK(!set(&c, "InstallID", "0123456789abcdef0123456789abcdef") && set(&c, "InstallID", "XYZ") == -EINVAL &&
	     set(&c, "InstallID", "abc") == -EINVAL, "config: InstallID= is 8 to 64 lower-case hex digits");
	T_OK(fleet_holder_machine_len("m1~abcd") == 2 && fleet_holder_machine_len("m1") == 2,
	     "identity: the machine id part of MACHINEID~INSTALLID");
	T_OK(!set(&c, "User", "rerand-web") && set(&c, "User", "a b") == -EINVAL && !set(&c, "Backend", "etcd") &&
	     !set(&c, "Endpoints", "https://e1:2379") && fleet_config_validate(&c, err, sizeof(err)) == -EINVAL &&
	     strstr(err, "PasswordFile="), "config: User= without PasswordFile= fails validation");
}

/* ---- lock server URLs (issue 39, point 6) ----------------------------------
 * What rerandd --check-config says of one Endpoints= or URL= value: the key
 * set on an etcd (Endpoints=) or fleetlock (URL=) section, then the section
 * validated.  Only the API rerandd has always had. */
static int url_verdict(const char *key, const char *url, bool allow_plaintext, char *err,
		       size_t errlen)
{
	struct fleet_config c;
	int r;

	fleet_config_defaults(&c);
	err[0] = 0;
	r = fleet_config_set(&c, "Backend", !strcmp(key, "URL") ? "fleetlock" : "etcd", err, errlen);
	if (!r && allow_plaintext)
		r = fleet_config_set(&c, "AllowPlaintext", "yes", err, errlen);
	if (!r)
		r = fleet_config_set(&c, key, url, err, errlen);
	if (!r)
		r = fleet_config_validate(&c, err, errlen);
	return r;
}

static void url_refused(const char *key, const char *url, const char *why, const char *name)
{
	char err[FLEET_MSG_MAX], k[32];
	int r = url_verdict(key, url, false, err, sizeof(err));

	snprintf(k, sizeof(k), "%s=", key);
	T_OK(r == -EINVAL && strstr(err, k) && strstr(err, why), "url: %s (%s=%s) is refused, saying %s",
	     name, key, url, why);
	if (r != -EINVAL || !strstr(err, why))
		printf("# r=%d err: %s\n", r, err);
}

static void url_accepted(const char *key, const char *url, const char *name)
{
	char err[FLEET_MSG_MAX];
	int r = url_verdict(key, url, false, err, sizeof(err));

	T_OK(r == 0, "url: %s (%s=%s) is accepted without AllowPlaintext=", name, key, url);
	if (r)
		printf("# r=%d err: %s\n", r, err);
}

static void test_url_config(void)
{
	/* the bypass of the issue: the old rule read 127.0.0.1, curl goes to etcd.example */
	url_refused("Endpoints", "http://127.0.0.1:2379@etcd.example:2379", "user info",
		    "user info before the host");
	url_refused("Endpoints", "127.0.0.1:2379@etcd.example:2379", "user info",
		    "user info in a bare host:port");
	url_refused("URL", "http://127.0.0.1@fleetlock.example/", "user info", "user info (FleetLock)");
	url_refused("Endpoints", "https://root:secret@etcd.example:2379", "user info",
		    "a password in the URL, even over https");
	url_refused("Endpoints", "https://etcd.example:2379#x", "fragment", "a fragment");
	url_refused("Endpoints", "http://127.0.0.1:2379#@etcd.example", "fragment",
		    "a fragment hiding an '@'");
	url_refused("URL", "https://fleetlock.example/base?x=1", "query", "a query");
	url_refused("Endpoints", "ftp://etcd.example:2379", "only http:// and https://", "ftp://");
	url_refused("URL", "ftp://fleetlock.example/", "only http:// and https://", "ftp:// (FleetLock)");
	url_refused("Endpoints", "HTTP://etcd.example:2379", "only http:// and https://",
		    "an upper-case scheme");
	url_refused("Endpoints", "http://127.0.0.1%2f@evil.example", "user info",
		    "a percent-encoded '/' before an '@'");
	url_refused("Endpoints", "https://127.0.0.1%2f@evil.example", "user info",
		    "a percent-encoded '/' before an '@', over https");
	url_refused("Endpoints", "http://127.0.0.1%2f.evil.example:2379", "percent-encoding",
		    "a percent-encoded host");
	url_refused("Endpoints", "http://127.0.0.1:2379\\@etcd.example", "user info",
		    "a backslash before an '@'");
	url_refused("Endpoints", "http://127.1:2379", "dotted-quad",
		    "a short IPv4 form (curl reads 127.0.0.1)");
	url_refused("Endpoints", "http://0x7f.0.0.1:2379", "dotted-quad", "a hex IPv4 form");
	url_refused("Endpoints", "https://2130706433:2379", "dotted-quad", "a decimal IPv4 form");
	url_refused("Endpoints", "http://[fe80::1%25eth0]:2379", "percent-encoding", "an IPv6 zone id");
	url_refused("Endpoints", "http://[::2]:2379", "plaintext HTTP to [::2]",
		    "plaintext to an IPv6 host not on loopback");
	url_refused("Endpoints", "http://localhost.evil.example:2379",
		    "plaintext HTTP to localhost.evil.example", "a name that starts with localhost");
	url_refused("Endpoints", "http://etcd.example:99999", "port", "a port above 65535");
	url_refused("Endpoints", "http://etcd.example:/", "port", "an empty port");
	url_refused("URL", "https://fleetlock.example/a b", "not accepted in the path",
		    "a space in the path");
	url_refused("URL", "fleetlock.example:8080", "want an http:// or https:// URL",
		    "a FleetLock URL without a scheme");
	url_accepted("Endpoints", "http://[::1]:2379", "the IPv6 loopback");
	url_accepted("Endpoints", "http://127.0.0.9:2379/", "127/8");
	url_accepted("Endpoints", "http://localhost:2379", "http://localhost");
	url_accepted("Endpoints", "https://etcd.example:2379", "a plain https host");
	url_accepted("Endpoints", "https://[2001:db8::1]:2379", "an https IPv6 host");
	url_accepted("URL", "https://fleetlock.example/prefix/", "an https FleetLock URL with a path");
	url_accepted("Endpoints", "localhost:2379", "a bare loopback host:port");
}

/* The same URLs as curl's own parser reads them (rerand-fleetd's check). */
static bool curl_host_of(const char *url, char *host, size_t len)
{
	CURLU *h = curl_url();
	char *v = NULL;
	bool ok = h && curl_url_set(h, CURLUPART_URL, url, 0) == CURLUE_OK &&
		  curl_url_get(h, CURLUPART_HOST, &v, 0) == CURLUE_OK;

	snprintf(host, len, "%s", ok ? v : "");
	curl_free(v);
	curl_url_cleanup(h);
	return ok;
}

static void test_url_curl(void)
{
	/* a corpus of spellings: every one rerandd accepts must be read by curl
	 * with the same host, and nothing else in it */
	static const char *const corpus[] = {
		"http://127.0.0.1:2379", "https://e1:2379/", "e3:2379", "http://[::1]:1/",
		"https://[0:0:0:0:0:0:0:1]:2379", "http://localhost", "https://a_b.example/x/y",
		"http://127.0.0.1.:2379", "http://LOCALHOST:1", "https://fleetlock.example/prefix/",
		"http://127.0.0.1:2379@etcd.example:2379", "http://127.0.0.1%2f@evil",
		"http://127.0.0.1@etcd.example/", "https://a:b@[::1]/",
		"http://127.1/", "http://0x7f.1/", "http:/x", "http:x", "http:///x", "http://x:/",
		"http://x:0/", "http://:80/", "//x/", "http://x\\y/", "http://[::1", "http://[::1]x/",
		"http://x./..", "http://x/%2e%2e", "http://x/#", "http://x/?", "http://a..b/",
		"https://-x/", "http://x/.;@evil/", "http://[::ffff:127.0.0.1]/", "http://127.0.0.01/",
	};
	struct fleet_config c;
	char err[FLEET_MSG_MAX], full[FLEET_STR + 64], ch[FLEET_STR];
	unsigned accepted = 0, agree = 0;

	fleet_config_defaults(&c);
	c.backend = FLEET_BACKEND_ETCD;
	c.allow_plaintext = true;        /* the hosts, not the plaintext rule, here */
	for (size_t i = 0; i < sizeof(corpus) / sizeof(corpus[0]); i++) {
		struct fleet_url u;

		if (fleet_url_parse("Endpoints", corpus[i], false, false, &u, err, sizeof(err)) < 0)
			continue;
		accepted++;
		if (!fleet_http_url(&c, corpus[i], "/v3/kv/range", full, sizeof(full)) &&
		    curl_host_of(full, ch, sizeof(ch)) &&
		    !fleet_http_check_url(&c, "Endpoints", corpus[i], "/v3/kv/range", err, sizeof(err)))
			agree++;
		else
			printf("# %s: rerand reads host %s, curl %s: %s\n", corpus[i], u.host, ch, err);
	}
	T_OK(accepted >= 10 && agree == accepted,
	     "url: curl reads the host rerandd's check read in every accepted spelling (%u of %u)",
	     agree, accepted);

	/* what the attack does to curl, so that the test above means something */
	T_OK(curl_host_of("http://127.0.0.1:2379@etcd.example:2379/v3/kv/range", ch, sizeof(ch)) &&
	     !strcmp(ch, "etcd.example"), "url: curl itself connects to the host after the '@' (%s)", ch);

	/* rerand-fleetd's own check, handed a section that never went through
	 * fleet_config_set (as a fleetd talking to an older rerandd would be) */
	struct fleet *f = NULL;
	fleet_config_defaults(&c);
	c.backend = FLEET_BACKEND_ETCD;
	snprintf(c.id, sizeof(c.id), "m1");
	snprintf(c.endpoints[0], FLEET_STR, "http://127.0.0.1:2379@etcd.example:2379");
	c.nr_endpoints = 1;
	T_OK(fleet_open(&c, &f, err, sizeof(err)) == -EINVAL && !f && strstr(err, "user info") &&
	     strstr(err, "Endpoints="), "url: rerand-fleetd refuses to start on a user-info endpoint");
	printf("# %s\n", err);
	T_OK(fleet_http_check_url(&c, "Endpoints", "https://etcd.example:2379", "", err, sizeof(err)) == 0 &&
	     fleet_http_check_url(&c, "Endpoints", "http://[::1]:2379", "", err, sizeof(err)) == 0 &&
	     fleet_http_check_url(&c, "Endpoints", "http://etcd.example:2379", "", err, sizeof(err)) == -EINVAL &&
	     strstr(err, "plaintext HTTP to etcd.example"),
	     "url: rerand-fleetd applies the plaintext rule to curl's host");
}

static void test_identity_and_none(void)
{
	char path[] = "/tmp/rerand-test-fleet-XXXXXX", id[FLEET_ID_MAX], err[256], m[1024];
	struct fleet_config c;
	struct fleet *f;
	int fd = mkstemp(path);

	T_OK(fd >= 0 && write(fd, "\t4f2a9c\n second line\n", 22) == 22, "identity: test file written");
	close(fd);
	T_OK(!fleet_read_identity(path, id, sizeof(id), err, sizeof(err)) && !strcmp(id, "4f2a9c"),
	     "identity: first line, trimmed");
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	T_OK(fd >= 0 && write(fd, "\n", 1) == 1, "identity: emptied");
	close(fd);
	T_OK(fleet_read_identity(path, id, sizeof(id), err, sizeof(err)) == -EINVAL && strstr(err, path),
	     "identity: an empty machine-id is refused, naming the file");
	unlink(path);
	T_OK(fleet_read_identity(path, id, sizeof(id), err, sizeof(err)) == -ENOENT && strstr(err, path),
	     "identity: a missing file is -ENOENT, naming the file");

	fleet_config_defaults(&c);
	T_OK(!fleet_open(&c, &f, err, sizeof(err)), "Backend=none opens without an identity");
	T_OK(fleet_acquire(f) == 1 && fleet_state(f) == FLEET_ST_DISABLED && fleet_refresh(f) == 1 &&
	     fleet_release(f) == 0, "Backend=none: always allowed, state disabled");
	T_OK(fleet_metrics_text("none", "default", fleet_state(f), fleet_errors(f), m, sizeof(m)) > 0 &&
	     strstr(m, "rerand_fleet_lock_state{backend=\"none\",group=\"default\",state=\"disabled\"} 1\n") &&
	     strstr(m, "rerand_fleet_lock_state{backend=\"none\",group=\"default\",state=\"error\"} 0\n") &&
	     strstr(m, "rerand_fleet_errors_total{backend=\"none\"} 0\n"), "metrics: both series present");
	fleet_close(f);
	set(&c, "Backend", "etcd");
	set(&c, "Endpoints", "127.0.0.1:1");
	snprintf(c.machine_id, sizeof(c.machine_id), "%s", path);
	T_OK(fleet_open(&c, &f, err, sizeof(err)) == -ENOENT, "Backend=etcd without a machine id does not open");
}

/* rerandd <-> rerand-fleetd: what one side writes the other reads back, and
 * lines out of shape are refused whole. */
static void test_proto(void)
{
	static struct fleet_request q, q2;
	static struct fleet_reply p, p2;
	char line[FLEET_LINE_MAX];
	int n;

	q.seq = 7;
	q.verb = FLEET_V_OPEN;
	q.nr_args = 2;
	snprintf(q.args[0], sizeof(q.args[0]), "Endpoints=a:1,b:2");
	snprintf(q.args[1], sizeof(q.args[1]), "CACert=/etc/with space/%%ca-.pem");
	n = fleet_proto_format_request(&q, line, sizeof(line));
	T_OK(n > 0 && line[n - 1] == '\n' && strchr(line, '\n') == line + n - 1, "proto: a request is one line");
	T_OK(!fleet_proto_parse_request(line, (size_t)n - 1, &q2) && q2.seq == 7 &&
	     q2.verb == FLEET_V_OPEN && q2.nr_args == 2 && !strcmp(q2.args[1], q.args[1]),
	     "proto: a request round-trips, spaces and %% included");
	p.seq = 9;
	p.rc = -ETIMEDOUT;
	p.state = FLEET_ST_HELD;
	p.errors = 3;
	snprintf(p.id, sizeof(p.id), "host-1");
	snprintf(p.token, sizeof(p.token), "%s", "");
	snprintf(p.msg, sizeof(p.msg), "etcd: no endpoint answered (2 tried)");
	p.has_status = true;
	p.st.max_concurrent = 2;
	p.st.nr_holders = 2;
	p.st.holders[0] = (struct fleet_holder){ .id = "a b", .slot = 0, .lease = 0x1234, .ttl = 9 };
	p.st.holders[1] = (struct fleet_holder){ .id = "-", .slot = 5, .lease = -1, .ttl = -1 };
	n = fleet_proto_format_reply(&p, line, sizeof(line));
	T_OK(n > 0 && !fleet_proto_parse_reply(line, (size_t)n - 1, &p2) && p2.seq == 9 &&
	     p2.rc == -ETIMEDOUT && p2.state == FLEET_ST_HELD && p2.errors == 3 &&
	     !strcmp(p2.id, "host-1") && !*p2.token && !strcmp(p2.msg, p.msg) && p2.has_status &&
	     p2.st.nr_holders == 2 && !strcmp(p2.st.holders[0].id, "a b") &&
	     !strcmp(p2.st.holders[1].id, "-") && p2.st.holders[1].slot == 5 && p2.st.nr_stray == 1,
	     "proto: a reply with holders round-trips (an id of \"-\" is not the empty one)");
	T_OK(fleet_proto_parse_reply("R 1 2 0 0 - - -", 15, &p2) == -EBADMSG, "proto: rc 2 is refused");
	T_OK(fleet_proto_parse_reply("R 1 1 9 0 - - -", 15, &p2) == -EBADMSG, "proto: state 9 is refused");
	T_OK(fleet_proto_parse_reply("R 1 1 3 0 - - a%0Ab", 19, &p2) == -EBADMSG,
	     "proto: an encoded newline in a message is refused");
	T_OK(fleet_proto_parse_reply("R 1 1 3 0 - -  x", 16, &p2) == -EBADMSG, "proto: an empty field is refused");
	T_OK(fleet_proto_parse_reply("R 1 1 3 0 - - x ", 16, &p2) == -EBADMSG, "proto: a trailing space is refused");
	T_OK(fleet_proto_parse_reply("R 1 1 3 0 - -", 13, &p2) == -EBADMSG, "proto: a missing field is refused");
	T_OK(fleet_proto_parse_reply("R 1 1 3 0 - - x 2 2 0 0 0 0 a", 29, &p2) == -EBADMSG,
	     "proto: fewer holders than announced is refused");
	T_OK(fleet_proto_parse_reply("R 1 1 3 0 - - x 2 65 0", 22, &p2) == -EBADMSG,
	     "proto: more holders than slots exist is refused");
	T_OK(fleet_proto_parse_request("Q 1 reboot", 10, &q2) == -EBADMSG, "proto: an unknown verb is refused");
	T_OK(!fleet_proto_parse_request("Q 3 down", 8, &q2) && q2.verb == FLEET_V_DOWN && !q2.nr_args &&
	     fleet_proto_parse_request("Q 3 down x", 10, &q2) == -EBADMSG,
	     "proto: down takes no argument");
	T_OK(fleet_proto_parse_request("Q 1 resume", 10, &q2) == -EBADMSG, "proto: resume without its token is refused");
	T_OK(fleet_proto_parse_request("Q 1 acquire x", 13, &q2) == -EBADMSG, "proto: acquire with an argument is refused");
}

/* The group-wide breaker: which records count, when they trip it, what the
 * operator reads, and its settings. */
static void test_breaker(void)
{
	struct fleet_failure f[5], big[FLEET_FAILURES_MAX];
	struct fleet_config c;
	struct fleet_request q;
	char err[256], buf[FLEET_MSG_MAX];
	const int64_t now = 1700000000, w = 3600;
	int n;

	T_OK(!fleet_failure_key_parse("m1~0123/1699999000", &f[0]) && !strcmp(f[0].id, "m1~0123") &&
	     f[0].at == 1699999000, "breaker: a failure key is ID/TIME");
	T_OK(fleet_failure_key_parse("m1", &f[1]) == -EINVAL &&
	     fleet_failure_key_parse("/17", &f[1]) == -EINVAL &&
	     fleet_failure_key_parse("m1/", &f[1]) == -EINVAL &&
	     fleet_failure_key_parse("m1/17x", &f[1]) == -EINVAL &&
	     fleet_failure_key_parse("m1/0", &f[1]) == -EINVAL &&
	     fleet_failure_key_parse("a/b/17", &f[1]) == -EINVAL,
	     "breaker: a key without an id, or without a whole positive time, is refused");
	T_OK(fleet_cause_valid("check-failed") && fleet_cause_valid("no-trace") &&
	     !fleet_cause_valid("") && !fleet_cause_valid("Panic") && !fleet_cause_valid("a b") &&
	     !fleet_cause_valid("0xffffffff81000000/x") &&
	     !fleet_cause_valid("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
	     "breaker: a cause is 1-31 of [a-z0-9-]");

	memset(f, 0, sizeof(f));
	f[0] = (struct fleet_failure){ .id = "a", .cause = "watchdog", .at = now - 10 };
	f[1] = (struct fleet_failure){ .id = "b", .cause = "panic", .at = now - w };       /* edge: out */
	f[2] = (struct fleet_failure){ .id = "c", .cause = "no-trace", .at = now - w + 1 }; /* in */
	f[3] = (struct fleet_failure){ .id = "d", .cause = "panic", .at = now + 299 };     /* skew: in */
	f[4] = (struct fleet_failure){ .id = "e", .cause = "panic", .at = now + 301 };     /* future: out */
	T_OK(fleet_breaker_count(f, 5, now, w) == 3,
	     "breaker: counted are failures younger than the window and at most 300 s ahead (%u)",
	     fleet_breaker_count(f, 5, now, w));
	T_OK(fleet_breaker_count(f, 5, now + w, w) == 2 && fleet_breaker_count(f, 0, now, w) == 0,
	     "breaker: a window later only the two written with the clock ahead are left");
	T_OK(!fleet_breaker_trips(2, 3) && fleet_breaker_trips(3, 3) && fleet_breaker_trips(4, 3) &&
	     !fleet_breaker_trips(100, 0) && fleet_breaker_trips(1, 1),
	     "breaker: trips at the threshold, never with BreakerFailures=0");
	n = fleet_breaker_summary(f, 5, now, w, buf, sizeof(buf));
	T_OK(n > 0 && !strcmp(buf, "3 failures in the last 3600 s: d (panic), a (watchdog), c (no-trace)"),
	     "breaker: the summary names the hosts and causes, newest first: %s", buf);
	for (unsigned i = 0; i < FLEET_FAILURES_MAX; i++) {
		snprintf(big[i].id, sizeof(big[i].id), "%064u~%032u", i, i);
		snprintf(big[i].cause, sizeof(big[i].cause), "check-failed");
		big[i].at = now - (int64_t)i;
	}
	n = fleet_breaker_summary(big, FLEET_FAILURES_MAX, now, w, buf, sizeof(buf));
	T_OK(n > 0 && (size_t)n < sizeof(buf) && strstr(buf, "64 failures in the last") == buf &&
	     strstr(buf, " more") && strlen(buf) == (size_t)n,
	     "breaker: 64 long ids fit a message, cut with \"+N more\" (%d bytes)", n);

	fleet_config_defaults(&c);
	T_OK(c.breaker_failures == 3 && c.breaker_window == 86400,
	     "breaker: BreakerFailures=3 and BreakerWindowSec=24h by default");
	T_OK(!fleet_config_set(&c, "BreakerFailures", "0", err, sizeof(err)) && c.breaker_failures == 0 &&
	     !fleet_config_set(&c, "BreakerWindowSec", "2h", err, sizeof(err)) && c.breaker_window == 7200,
	     "breaker: BreakerFailures=0 (off) and BreakerWindowSec=2h are taken");
	T_OK(fleet_config_set(&c, "BreakerWindowSec", "30s", err, sizeof(err)) == -EINVAL &&
	     strstr(err, "BreakerWindowSec=30s"), "breaker: a window under a minute is refused: %s", err);
	T_OK(fleet_config_set(&c, "BreakerFailures", "-1", err, sizeof(err)) == -EINVAL &&
	     strstr(err, "BreakerFailures=-1"), "breaker: a negative threshold is refused: %s", err);
	T_OK(!fleet_proto_parse_request("Q 4 failed watchdog 1700000000", 30, &q) &&
	     q.verb == FLEET_V_FAILED && q.nr_args == 2 &&
	     fleet_proto_parse_request("Q 4 failed watchdog", 19, &q) == -EBADMSG &&
	     !fleet_proto_parse_request("Q 5 clear-breaker", 17, &q) && q.verb == FLEET_V_CLEAR_BREAKER &&
	     !fleet_proto_parse_request("Q 6 breaker", 11, &q) && q.verb == FLEET_V_BREAKER,
	     "breaker: failed takes a cause and a time; breaker and clear-breaker nothing");
}

int main(void)
{
	test_breaker();
	test_proto();
	test_backoff();
	test_spread();
	test_b64();
	test_fleetlock_json();
	test_etcd_json();
	test_config();
	test_url_config();
	test_url_curl();
	test_identity_and_none();
	return t_done();
}
