/* SPDX-License-Identifier: GPL-2.0-only */
/* The FleetLock client (Zincati's protocol, as served by airlock or a Kubernetes
 * FleetLock server): POST /v1/pre-reboot to lock, /v1/steady-state to unlock. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cleanup.h"
#include "backend.h"

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

/* FleetLock has no lease and no read call: the server holds the slot until
 * steady-state, so "held" is what this client last did. */
struct fleet_lock {
	bool held;
};

/* 1 on 200, 0 on a refusal (any other HTTP status; kind and value kept for the
 * operator), <0 when no answer came. */
static int post(struct fleet_conn *c, const char *path)
{
	const struct fleet_config *cfg = c->cfg;
	_cleanup_reply_ struct fleet_http_reply r = { 0 };
	char body[FLEET_ID_MAX + FLEET_GROUP_MAX + 64], kind[128], value[256];
	int rc;

	rc = fleet_lock_body(c->id, cfg->group, body, sizeof(body));
	if (rc < 0) {
		fleet_conn_error(c, "fleetlock: cannot build the request for id %s group %s",
				 c->id, cfg->group);
		return rc;
	}
	rc = fleet_http_post(c, cfg->url, path, body, true, &r);
	if (rc < 0)
		return rc;
	if (r.status == 200)
		return 1;
	if (!fleet_lock_parse_error(r.body, kind, sizeof(kind), value, sizeof(value)))
		fleet_conn_error(c, "fleetlock: %s%s: HTTP %ld: %s: %s", cfg->url, path, r.status,
				 kind, value);
	else
		fleet_conn_error(c, "fleetlock: %s%s: HTTP %ld without an error body", cfg->url,
				 path, r.status);
	/* a server error is an error; a 4xx is the server saying no */
	return r.status >= 500 && r.status < 600 ? -EPROTO : 0;
}

static void *lock_create(void)
{
	return calloc(1, sizeof(struct fleet_lock));
}

static void lock_destroy(void *be)
{
	free(be);
}

static int lock_acquire(struct fleet_conn *c, void *be)
{
	struct fleet_lock *l = be;
	int r = post(c, "/v1/pre-reboot");

	if (r == 1)
		l->held = true;
	return r;
}

static int lock_refresh(struct fleet_conn *c, void *be)
{
	struct fleet_lock *l = be;

	if (!l->held)
		fleet_conn_error(c, "fleetlock: no slot was taken");
	return l->held ? 1 : 0;
}

static int lock_release(struct fleet_conn *c, void *be)
{
	struct fleet_lock *l = be;
	int r = post(c, "/v1/steady-state");

	/* the release must be acknowledged before the host counts as steady */
	if (r == 1)
		l->held = false;
	return r == 1 ? 0 : r == 0 ? -EPROTO : r;
}

static int lock_resume(struct fleet_conn *c, void *be, const char *token)
{
	struct fleet_lock *l = be;

	/* the server still counts us until steady-state: say held */
	l->held = true;
	return 1;
}

static int lock_token(const void *be, char *buf, size_t len)
{
	if (len)
		buf[0] = 0;
	return 0;
}

const struct fleet_backend_ops fleet_lock_ops = {
	.name = "fleetlock",
	.create = lock_create,
	.destroy = lock_destroy,
	.acquire = lock_acquire,
	.refresh = lock_refresh,
	.release = lock_release,
	.resume = lock_resume,
	.token = lock_token,
};
