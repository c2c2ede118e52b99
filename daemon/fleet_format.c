/* SPDX-License-Identifier: GPL-2.0-only */
/* `rerand fleet status` in rerandd: the holders the helper last reported, as
 * text or JSON; and the fleet gauges for the metrics file.  Holder ids are other hosts' words, from etcd: escaped. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "rerandd.h"         /* fleet.h, rr_escape_str() */
#include "fleet_format.h"
#include "util.h"

int fleet_status_format_text(const struct fleet_status *st, const char *group, char *buf,
			     size_t len)
{
	size_t o = 0;
	int n;
	unsigned k = st->max_concurrent;
	unsigned in_range = st->nr_holders - st->nr_stray;

	n = snprintf(buf, len, "group %s: %u of %u slots held, %u free\n", group, in_range, k,
		     in_range >= k ? 0 : k - in_range);
	if (n < 0 || (size_t)n >= len)
		return -ENOBUFS;
	o = (size_t)n;
	for (unsigned i = 0; i < st->nr_holders; i++) {
		const struct fleet_holder *h = &st->holders[i];
		char id[4 * FLEET_ID_MAX];   /* another host's word, from etcd */
		n = snprintf(buf + o, len - o, "  slot %d: %s (lease %" PRIx64 ", ttl %llds)%s\n",
			     h->slot, rr_escape_str(id, sizeof(id), h->id), (uint64_t)h->lease, (long long)h->ttl,
			     h->slot >= (int)k ? " outside MaxConcurrent" : "");
		if (n < 0 || (size_t)n >= len - o)
			return -ENOBUFS;
		o += (size_t)n;
	}
	return (int)o;
}

int fleet_status_format_json(const struct fleet_status *st, const char *group, char *buf,
			     size_t len)
{
	json_object *root = json_object_new_object(), *arr = json_object_new_array();
	unsigned in_range = st->nr_holders - st->nr_stray;
	const char *s;
	int r;

	if (!root || !arr) {
		json_object_put(root);
		json_object_put(arr);
		return -ENOMEM;
	}
	json_object_object_add(root, "group", json_object_new_string(group));
	json_object_object_add(root, "max_concurrent", json_object_new_int((int)st->max_concurrent));
	json_object_object_add(root, "free", json_object_new_int(in_range >= st->max_concurrent ?
				0 : (int)(st->max_concurrent - in_range)));
	for (unsigned i = 0; i < st->nr_holders; i++) {
		json_object *h = json_object_new_object();
		char id[4 * FLEET_ID_MAX];
		json_object_object_add(h, "id", json_object_new_string(rr_escape_str(id, sizeof(id),
										  st->holders[i].id)));
		json_object_object_add(h, "slot", json_object_new_int(st->holders[i].slot));
		/* an etcd lease id uses all 64 bits: a string, as addresses are */
		char lease[24];
		snprintf(lease, sizeof(lease), "0x%" PRIx64, (uint64_t)st->holders[i].lease);
		json_object_object_add(h, "lease", json_object_new_string(lease));
		json_object_object_add(h, "ttl", json_object_new_int64(st->holders[i].ttl));
		json_object_array_add(arr, h);
	}
	json_object_object_add(root, "holders", arr);
	s = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
	r = snprintf(buf, len, "%s\n", s);
	json_object_put(root);
	if (r < 0 || (size_t)r >= len)
		return -ENOBUFS;
	return r;
}

int fleet_metrics_text(const char *backend, const char *group, enum fleet_state s,
		       uint64_t errors, char *buf, size_t len)
{
	/* a state as labels, one series per state, as the Prometheus naming
	 * guide has it: alert on rerand_fleet_lock_state{state="error"} == 1 */
	static const enum fleet_state all[] = { FLEET_ST_DISABLED, FLEET_ST_IDLE, FLEET_ST_WAITING,
						FLEET_ST_HELD, FLEET_ST_ERROR };
	size_t o = 0;
	int n = snprintf(buf, len,
		"# HELP rerand_fleet_lock_state The fleet lock's state: 1 for the current one (error: fail closed).\n"
		"# TYPE rerand_fleet_lock_state gauge\n");

	if (n < 0 || (size_t)n >= len)
		return -ENOBUFS;
	o = (size_t)n;
	for (size_t i = 0; i < ARRAY_SIZE(all); i++) {
		n = snprintf(buf + o, len - o,
			     "rerand_fleet_lock_state{backend=\"%s\",group=\"%s\",state=\"%s\"} %d\n",
			     backend, group, fleet_state_name(all[i]), all[i] == s);
		if (n < 0 || (size_t)n >= len - o)
			return -ENOBUFS;
		o += (size_t)n;
	}
	n = snprintf(buf + o, len - o,
		"# HELP rerand_fleet_errors_total Fleet backend operations that failed.\n"
		"# TYPE rerand_fleet_errors_total counter\n"
		"rerand_fleet_errors_total{backend=\"%s\"} %" PRIu64 "\n", backend, errors);
	if (n < 0 || (size_t)n >= len - o)
		return -ENOBUFS;
	return (int)(o + (size_t)n);
}
