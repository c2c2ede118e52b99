/* SPDX-License-Identifier: GPL-2.0-only */
/* The FleetLock client (Zincati's protocol, as served by airlock or a Kubernetes
 * FleetLock server): POST /v1/pre-reboot to lock, /v1/steady-state to unlock. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "fleet.h"

int fleet_lock_body(const char *id, const char *group, char *buf, size_t len)
{
	json_object *root, *cp;
	const char *s;
	int n;

	if (!*id || !fleet_group_valid(group))
		return -EINVAL;
	root = json_object_new_object();
	cp = json_object_new_object();
	if (!root || !cp) {
		json_object_put(root);
		json_object_put(cp);
		return -ENOMEM;
	}
	json_object_object_add(cp, "id", json_object_new_string(id));
	json_object_object_add(cp, "group", json_object_new_string(group));
	json_object_object_add(root, "client_params", cp);
	s = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
	n = snprintf(buf, len, "%s", s);
	json_object_put(root);
	return n < 0 || (size_t)n >= len ? -ENOBUFS : n;
}

int fleet_lock_parse_error(const char *body, char *kind, size_t klen, char *value, size_t vlen)
{
	json_object *root = json_tokener_parse(body), *k, *v;
	int r = -EBADMSG;

	if (!root)
		return -EBADMSG;
	/* both are required, non-empty strings */
	if (json_object_is_type(root, json_type_object) &&
	    json_object_object_get_ex(root, "kind", &k) && json_object_is_type(k, json_type_string) &&
	    json_object_object_get_ex(root, "value", &v) && json_object_is_type(v, json_type_string) &&
	    *json_object_get_string(k) && *json_object_get_string(v)) {
		snprintf(kind, klen, "%s", json_object_get_string(k));
		snprintf(value, vlen, "%s", json_object_get_string(v));
		r = 0;
	}
	json_object_put(root);
	return r;
}

/* 1 on 200, 0 on a refusal (any other HTTP status; kind and value kept for the
 * operator), <0 when no answer came. */
static int post(struct fleet *f, const char *path)
{
	const struct fleet_config *c = fleet_config_of(f);
	struct fleet_http_reply r;
	char body[FLEET_ID_MAX + FLEET_GROUP_MAX + 64], kind[128], value[256];
	int rc;

	rc = fleet_lock_body(fleet_identity(f), c->group, body, sizeof(body));
	if (rc < 0) {
		fleet_set_error(f, false, "fleetlock: cannot build the request for id %s group %s",
				fleet_identity(f), c->group);
		return rc;
	}
	rc = fleet_http_post(f, c->url, path, body, true, &r);
	if (rc < 0)
		return rc;
	if (r.status == 200) {
		free(r.body);
		return 1;
	}
	if (!fleet_lock_parse_error(r.body, kind, sizeof(kind), value, sizeof(value)))
		fleet_set_error(f, false, "fleetlock: %s%s: HTTP %ld: %s: %s", c->url, path, r.status,
				kind, value);
	else
		fleet_set_error(f, false, "fleetlock: %s%s: HTTP %ld without an error body", c->url,
				path, r.status);
	free(r.body);
	/* a server error is an error; a 4xx is the server saying no */
	return r.status >= 500 && r.status < 600 ? -EPROTO : 0;
}

int fleet_lock_acquire(struct fleet *f)
{
	return post(f, "/v1/pre-reboot");
}

int fleet_lock_release(struct fleet *f)
{
	int r = post(f, "/v1/steady-state");

	/* the release must be acknowledged before the host counts as steady */
	return r == 1 ? 0 : r == 0 ? -EPROTO : r;
}
