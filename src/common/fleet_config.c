/* SPDX-License-Identifier: GPL-2.0-only */
/* [Fleet] settings and the host's identity: shared by rerandd (which parses
 * the configuration) and rerand-fleetd (which is handed it).  The URLs they
 * name are fleet_url.c's. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cleanup.h"
#include "fleet.h"
#include "util.h"
#include "kernel.h"          /* struct rr_err, rr_read_text() */

/* ---- config ---------------------------------------------------------------- */

void fleet_config_defaults(struct fleet_config *c)
{
	memset(c, 0, sizeof(*c));
	c->backend = FLEET_BACKEND_NONE;
	snprintf(c->group, sizeof(c->group), "default");
	c->max_concurrent = 1;
	c->lock_ttl = 900;
	c->down_ttl = 1800;
	snprintf(c->machine_id, sizeof(c->machine_id), "%s", FLEET_DEFAULT_MACHINE_ID);
	c->timeout = 5;
	c->retry_base_ms = 5000;
	c->retry_max_ms = 300000;
	c->breaker_failures = 3;
	c->breaker_window = 24 * 3600;
	snprintf(c->helper, sizeof(c->helper), "%s", FLEET_DEFAULT_HELPER);
}

const char *fleet_backend_name(enum fleet_backend b)
{
	switch (b) {
	case FLEET_BACKEND_NONE: return "none";
	case FLEET_BACKEND_ETCD: return "etcd";
	case FLEET_BACKEND_FLEETLOCK: return "fleetlock";
	}
	return "?";
}

bool fleet_group_valid(const char *g)
{
	if (!*g)
		return false;
	for (; *g; g++)
		if (!isalnum((unsigned char)*g) && *g != '.' && *g != '-')
			return false;
	return true;
}

static int set_str(char *dst, size_t dlen, const char *key, const char *v, char *err,
		   size_t errlen)
{
	if (strlen(v) >= dlen) {
		snprintf(err, errlen, "%s= is too long (at most %zu bytes)", key, dlen - 1);
		return -EINVAL;
	}
	snprintf(dst, dlen, "%s", v);
	return 0;
}

static int parse_u64(const char *key, const char *v, uint64_t lo, uint64_t hi, uint64_t *ret,
		     char *err, size_t errlen)
{
	char *end;
	unsigned long long x;

	errno = 0;
	if (!isdigit((unsigned char)*v))
		goto bad;
	x = strtoull(v, &end, 10);
	if (errno || *end || x < lo || x > hi)
		goto bad;
	*ret = x;
	return 0;
bad:
	snprintf(err, errlen, "%s=%s: want a whole number from %" PRIu64 " to %" PRIu64,
		 key, v, lo, hi);
	return -EINVAL;
}

/* A duration as every other key takes it (LockTTL=15min, 1h 30min); a bare
 * number stays seconds, as it always was here. */
static int parse_seconds(const char *key, const char *v, int64_t *ret, char *err,
			 size_t errlen)
{
	int64_t x;

	if (config_parse_duration(v, &x) < 0 || x <= 0 || x > 7 * 24 * 3600) {
		snprintf(err, errlen, "%s=%s: want a duration like 30, 90s, 15min or 1h (up to a "
			 "week)", key, v);
		return -EINVAL;
	}
	*ret = x;
	return 0;
}

/* RetryBase=/RetryMax=: a duration to the millisecond (5s, 250ms), a bare
 * number seconds as in every other key.  Their old names RetryBaseMSec= and
 * RetryMaxMSec= (legacy) keep their old bare unit, milliseconds, so that a
 * file written for them means what it meant; --check-config warns. */
static int parse_msec(const char *key, const char *v, bool legacy, int64_t *ret, char *err,
		      size_t errlen)
{
	const int64_t lo = 10, hi = 24ll * 3600 * 1000;
	size_t digits = strspn(v, "0123456789");
	int64_t x = -1;

	if (legacy && digits && !v[digits]) {
		errno = 0;
		unsigned long long u = strtoull(v, NULL, 10);
		if (!errno && u <= (unsigned long long)hi)
			x = (int64_t)u;
	} else if (config_parse_duration_ms(v, &x) < 0) {
		x = -1;
	}
	if (x < lo || x > hi) {
		if (legacy)
			snprintf(err, errlen, "%s=%s: want milliseconds (5000) or a duration (5s, "
				 "250ms) from 10ms to 24h", key, v);
		else
			snprintf(err, errlen, "%s=%s: want a duration from 10ms to 24h (5s, 250ms, "
				 "1min; a bare number is seconds)", key, v);
		return -EINVAL;
	}
	*ret = x;
	return 0;
}

static int set_endpoints(struct fleet_config *c, const char *v, char *err, size_t errlen)
{
	char buf[FLEET_MAX_ENDPOINTS * FLEET_STR];
	char *save = NULL, *tok;
	unsigned n = 0;

	if (strlen(v) >= sizeof(buf)) {
		snprintf(err, errlen, "Endpoints= is too long");
		return -EINVAL;
	}
	snprintf(buf, sizeof(buf), "%s", v);
	for (tok = strtok_r(buf, " ,\t", &save); tok; tok = strtok_r(NULL, " ,\t", &save)) {
		struct fleet_url u;
		int r;

		if (n >= FLEET_MAX_ENDPOINTS) {
			snprintf(err, errlen, "Endpoints=: more than %d endpoints",
				 FLEET_MAX_ENDPOINTS);
			return -EINVAL;
		}
		if ((r = fleet_url_parse("Endpoints", tok, false, false, &u, err, errlen)) < 0)
			return r;
		snprintf(c->endpoints[n++], FLEET_STR, "%s", tok);
	}
	/* an empty assignment resets the list, as in systemd */
	c->nr_endpoints = n;
	return 0;
}

/* ---- the [Fleet] keys, one step each ------------------------------------- */

static int set_backend(struct fleet_config *c, const char *value, char *err, size_t errlen)
{
	if (!strcmp(value, "none") || !*value)
		c->backend = FLEET_BACKEND_NONE;
	else if (!strcmp(value, "etcd"))
		c->backend = FLEET_BACKEND_ETCD;
	else if (!strcmp(value, "fleetlock"))
		c->backend = FLEET_BACKEND_FLEETLOCK;
	else {
		snprintf(err, errlen, "Backend=%s: want none, etcd or fleetlock", value);
		return -EINVAL;
	}
	return 0;
}

static int set_allow_plaintext(struct fleet_config *c, const char *value, char *err,
			       size_t errlen)
{
	if (!strcmp(value, "yes") || !strcmp(value, "true") || !strcmp(value, "1") ||
	    !strcmp(value, "on"))
		c->allow_plaintext = true;
	else if (!strcmp(value, "no") || !strcmp(value, "false") || !strcmp(value, "0") ||
		 !strcmp(value, "off") || !*value)
		c->allow_plaintext = false;
	else {
		snprintf(err, errlen, "AllowPlaintext=%s: want yes or no", value);
		return -EINVAL;
	}
	return 0;
}

static int set_max_concurrent(struct fleet_config *c, const char *value, char *err,
			      size_t errlen)
{
	uint64_t u;
	int r = parse_u64("MaxConcurrent", value, 1, FLEET_MAX_SLOTS, &u, err, errlen);

	if (!r)
		c->max_concurrent = (unsigned)u;
	return r;
}

static int set_breaker_failures(struct fleet_config *c, const char *value, char *err,
				size_t errlen)
{
	uint64_t u;
	int r = parse_u64("BreakerFailures", value, 0, 1000, &u, err, errlen);

	if (!r)
		c->breaker_failures = (unsigned)u;
	return r;
}

static int set_breaker_window(struct fleet_config *c, const char *value, char *err,
			      size_t errlen)
{
	int r = parse_seconds("BreakerWindowSec", value, &c->breaker_window, err, errlen);

	if (!r && c->breaker_window < 60) {
		snprintf(err, errlen, "BreakerWindowSec=%s: want at least 60 seconds", value);
		r = -EINVAL;
	}
	return r;
}

/* The checks of the string keys that have one, before set_str stores them. */
static int check_group(const char *value, char *err, size_t errlen)
{
	if (!fleet_group_valid(value) || strlen(value) >= FLEET_GROUP_MAX) {
		snprintf(err, errlen, "Group=%s: want 1-%d characters of [a-zA-Z0-9.-]",
			 value, FLEET_GROUP_MAX - 1);
		return -EINVAL;
	}
	return 0;
}

static int check_user(const char *value, char *err, size_t errlen)
{
	/* etcd user names are free text, but this one goes into a JSON body and
	 * the journal: keep it plain */
	for (const char *p = value; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("._-", *p)) {
			snprintf(err, errlen, "User=%s: want characters of [a-zA-Z0-9._-]", value);
			return -EINVAL;
		}
	return 0;
}

static int check_password_file(const char *value, char *err, size_t errlen)
{
	if (*value && *value != '/') {
		snprintf(err, errlen, "PasswordFile=%s: want an absolute path", value);
		return -EINVAL;
	}
	return 0;
}

static int check_url(const char *value, char *err, size_t errlen)
{
	struct fleet_url u;

	return *value ? fleet_url_parse("URL", value, true, false, &u, err, errlen) : 0;
}

static int check_id(const char *value, char *err, size_t errlen)
{
	if (*value && !fleet_group_valid(value)) {
		snprintf(err, errlen, "ID=%s: want characters of [a-zA-Z0-9.-]", value);
		return -EINVAL;
	}
	return 0;
}

static int check_install_id(const char *value, char *err, size_t errlen)
{
	size_t n = strlen(value);

	if (n && (n < 8 || n > 64 || strspn(value, "0123456789abcdef") != n)) {
		snprintf(err, errlen, "InstallID=%s: want 8 to 64 lower-case hex digits", value);
		return -EINVAL;
	}
	return 0;
}

static int check_helper(const char *value, char *err, size_t errlen)
{
	if (*value != '/') {
		snprintf(err, errlen, "HelperSocket=%s: want an absolute path", value);
		return -EINVAL;
	}
	/* sun_path holds 108 bytes with the NUL */
	if (strlen(value) >= 108) {
		snprintf(err, errlen, "HelperSocket=%s: longer than a unix socket path may be",
			 value);
		return -EINVAL;
	}
	return 0;
}

/* The values of the keys stored by their own function, as a file has them. */
static void get_backend(const struct fleet_config *c, char *out, size_t len)
{
	snprintf(out, len, "%s", fleet_backend_name(c->backend));
}

static void get_endpoints(const struct fleet_config *c, char *out, size_t len)
{
	size_t o = 0;

	out[0] = 0;
	for (unsigned i = 0; i < c->nr_endpoints && o < len; i++)
		o += (size_t)snprintf(out + o, len - o, "%s%s", i ? "," : "", c->endpoints[i]);
}

static void get_allow_plaintext(const struct fleet_config *c, char *out, size_t len)
{
	snprintf(out, len, "%s", c->allow_plaintext ? "yes" : "no");
}

static void get_max_concurrent(const struct fleet_config *c, char *out, size_t len)
{
	snprintf(out, len, "%u", c->max_concurrent);
}

static void get_breaker_failures(const struct fleet_config *c, char *out, size_t len)
{
	snprintf(out, len, "%u", c->breaker_failures);
}

static void get_breaker_window(const struct fleet_config *c, char *out, size_t len)
{
	config_format_duration(c->breaker_window, out, len);
}

/* How each key is stored: by its own functions, as a checked string, or as
 * a duration in seconds or milliseconds, in the field at off. */
enum fleet_key_kind { FK_FN, FK_STR, FK_SECONDS, FK_MSEC, FK_MSEC_LEGACY };

/* Every [Fleet] key, once, in rerand.conf's order: fleet_config_set() parses
 * with it, fleet_config_each() hands the helper the values from it, and
 * rerandd's --dump-config, origins and "did you mean" read it through
 * fleet_config_key().  The old names come last (fleet_config_alias()). */
struct fleet_key {
	const char *name;
	enum fleet_key_kind kind;
	size_t off, size;
	int (*set)(struct fleet_config *c, const char *value, char *err, size_t errlen);
	void (*get)(const struct fleet_config *c, char *out, size_t len);
	int (*check)(const char *value, char *err, size_t errlen);
	bool local;                       /* rerandd's alone: not handed to the helper */
};

#define FK_FIELD(field) offsetof(struct fleet_config, field), \
	sizeof(((struct fleet_config *)0)->field)
#define KEY_FN(name, set, get)      { name, FK_FN, 0, 0, set, get, NULL, false }
#define KEY_STR(name, field, check) { name, FK_STR, FK_FIELD(field), NULL, NULL, check, false }
#define KEY_SECONDS(name, field)    { name, FK_SECONDS, FK_FIELD(field), NULL, NULL, NULL, false }
#define KEY_MSEC(name, field)       { name, FK_MSEC, FK_FIELD(field), NULL, NULL, NULL, false }
#define KEY_MSEC_LEGACY(name, field) { name, FK_MSEC_LEGACY, FK_FIELD(field), NULL, NULL, NULL, false }
static const struct fleet_key fleet_keys[] = {
	KEY_FN("Backend", set_backend, get_backend),
	KEY_STR("Group", group, check_group),
	KEY_FN("Endpoints", set_endpoints, get_endpoints),
	KEY_STR("CACert", ca_cert, NULL),
	KEY_STR("Cert", cert, NULL),
	KEY_STR("Key", key, NULL),
	KEY_STR("User", user, check_user),
	KEY_STR("PasswordFile", password_file, check_password_file),
	KEY_FN("AllowPlaintext", set_allow_plaintext, get_allow_plaintext),
	KEY_FN("MaxConcurrent", set_max_concurrent, get_max_concurrent),
	KEY_SECONDS("LockTTL", lock_ttl),
	KEY_SECONDS("DownTTL", down_ttl),
	KEY_STR("URL", url, check_url),
	KEY_STR("MachineIDFile", machine_id, NULL),
	KEY_STR("ID", id, check_id),
	KEY_STR("InstallID", install_id, check_install_id),
	KEY_SECONDS("Timeout", timeout),
	KEY_MSEC("RetryBase", retry_base_ms),
	KEY_MSEC("RetryMax", retry_max_ms),
	{ "HelperSocket", FK_STR, FK_FIELD(helper), NULL, NULL, check_helper, true },
	KEY_FN("BreakerFailures", set_breaker_failures, get_breaker_failures),
	KEY_FN("BreakerWindowSec", set_breaker_window, get_breaker_window),
	/* the old names (fleet_config_alias()), after the new ones */
	KEY_MSEC_LEGACY("RetryBaseMSec", retry_base_ms),
	KEY_MSEC_LEGACY("RetryMaxMSec", retry_max_ms),
};
#undef KEY_MSEC_LEGACY
#undef KEY_MSEC
#undef KEY_SECONDS
#undef KEY_STR
#undef KEY_FN
#undef FK_FIELD
_Static_assert(ARRAY_SIZE(fleet_keys) - 2 == FLEET_NR_KEYS, "FLEET_NR_KEYS is the table's current names");

const char *fleet_config_key(size_t i)
{
	return i < FLEET_NR_KEYS ? fleet_keys[i].name : NULL;
}

void fleet_config_get(const struct fleet_config *c, size_t i, char *out, size_t len)
{
	const struct fleet_key *k = &fleet_keys[i < FLEET_NR_KEYS ? i : 0];
	const char *field = (const char *)c + k->off;

	switch (k->kind) {
	case FK_FN:
		k->get(c, out, len);
		return;
	case FK_STR:
		snprintf(out, len, "%s", field);
		return;
	case FK_SECONDS:
		config_format_duration(*(const int64_t *)field, out, len);
		return;
	case FK_MSEC:
	case FK_MSEC_LEGACY:
		/* durations as every duration is printed: what the parser reads back */
		config_format_duration_ms(*(const int64_t *)field, out, len);
		return;
	}
}

const char *fleet_config_alias(const char *key)
{
	if (!strcasecmp(key, "RetryBaseMSec"))
		return "RetryBase";
	if (!strcasecmp(key, "RetryMaxMSec"))
		return "RetryMax";
	return NULL;
}

/* Keys are case-sensitive in every section; for compatibility with rerand
 * 0.1, which took [Fleet] keys in any case, a key that matches only when
 * case is ignored is taken and 1 returned, for the caller to warn. */
int fleet_config_set(struct fleet_config *c, const char *key, const char *value, char *err,
		     size_t errlen)
{
	const struct fleet_key *k = NULL;
	int r = -EINVAL;

	for (size_t i = 0; !k && i < ARRAY_SIZE(fleet_keys); i++)
		if (!strcmp(key, fleet_keys[i].name))
			k = &fleet_keys[i];
	for (size_t i = 0; !k && i < ARRAY_SIZE(fleet_keys); i++)
		if (!strcasecmp(key, fleet_keys[i].name))
			k = &fleet_keys[i];
	if (!k) {
		snprintf(err, errlen, "unknown key %s= in [Fleet]", key);
		return -ENOENT;
	}
	char *field = (char *)c + k->off;
	switch (k->kind) {
	case FK_FN:
		r = k->set(c, value, err, errlen);
		break;
	case FK_STR:
		r = k->check ? k->check(value, err, errlen) : 0;
		if (r >= 0)
			r = set_str(field, k->size, k->name, value, err, errlen);
		break;
	case FK_SECONDS:
		r = parse_seconds(k->name, value, (int64_t *)field, err, errlen);
		break;
	case FK_MSEC:
	case FK_MSEC_LEGACY:
		r = parse_msec(k->name, value, k->kind == FK_MSEC_LEGACY, (int64_t *)field, err,
			       errlen);
		break;
	}
	return r < 0 ? r : strcmp(key, k->name) ? 1 : 0;
}

static int check_plaintext(const struct fleet_config *c, const char *key, const char *url,
			   char *err, size_t errlen)
{
	struct fleet_url u;
	int r;

	/* parsed once more: the structure may have been filled another way */
	r = fleet_url_parse(key, url, !strcmp(key, "URL"), *c->ca_cert, &u, err, errlen);
	if (r < 0 || c->allow_plaintext || u.https || fleet_host_loopback(u.host))
		return r;
	snprintf(err, errlen, "[Fleet] %s=%s: plaintext HTTP to %s, which is not on loopback: "
		 "the lock traffic%s would cross the network unprotected; use https:%s, or set "
		 "AllowPlaintext=yes to accept that", key, url, u.host,
		 *c->user ? " and the etcd password" : "", u.has_scheme ? "//" : "// or CACert=");
	return -EINVAL;
}

int fleet_config_validate(const struct fleet_config *c, char *err, size_t errlen)
{
	int r;

	if (c->retry_max_ms < c->retry_base_ms) {
		snprintf(err, errlen, "[Fleet] RetryMax= is below RetryBase=");
		return -EINVAL;
	}
	switch (c->backend) {
	case FLEET_BACKEND_NONE:
		return 0;
	case FLEET_BACKEND_ETCD:
		if (!c->nr_endpoints) {
			snprintf(err, errlen, "[Fleet] Backend=etcd needs Endpoints=");
			return -EINVAL;
		}
		if (!!*c->cert != !!*c->key) {
			snprintf(err, errlen, "[Fleet] Cert= and Key= go together");
			return -EINVAL;
		}
		if (!!*c->user != !!*c->password_file) {
			snprintf(err, errlen, "[Fleet] User= and PasswordFile= go together (etcd "
				 "authentication)");
			return -EINVAL;
		}
		for (unsigned i = 0; i < c->nr_endpoints; i++)
			if ((r = check_plaintext(c, "Endpoints", c->endpoints[i], err, errlen)))
				return r;
		/* etcd refuses leases shorter than ~2 s; less than 5 s cannot cover a reboot */
		if (c->lock_ttl < 5) {
			snprintf(err, errlen, "[Fleet] LockTTL= must be at least 5 seconds");
			return -EINVAL;
		}
		/* the down lease replaces the lock's for the reboot: a shorter one would
		 * free the slot sooner than LockTTL= promises */
		if (c->down_ttl < c->lock_ttl) {
			snprintf(err, errlen, "[Fleet] DownTTL= (%" PRId64 " s) must not be shorter "
				 "than LockTTL= (%" PRId64 " s)", c->down_ttl, c->lock_ttl);
			return -EINVAL;
		}
		return 0;
	case FLEET_BACKEND_FLEETLOCK:
		if (!*c->url) {
			snprintf(err, errlen, "[Fleet] Backend=fleetlock needs URL=");
			return -EINVAL;
		}
		return check_plaintext(c, "URL", c->url, err, errlen);
	}
	return 0;
}

int fleet_read_identity(const char *path, char *out, size_t len, char *err, size_t errlen)
{
	struct rr_err re;
	_cleanup_free_ char *buf = NULL;
	size_t i, b, e;
	int r;

	r = rr_read_text(path, 4096, &buf, &re);
	if (r < 0) {
		snprintf(err, errlen, "%s", re.msg);
		return r;
	}
	for (b = 0; buf[b] == ' ' || buf[b] == '\t'; b++)
		;
	for (e = b; buf[e] && buf[e] != '\n'; e++)
		;
	while (e > b && (buf[e - 1] == ' ' || buf[e - 1] == '\t' || buf[e - 1] == '\r'))
		e--;
	if (e == b || e - b >= len || e - b >= FLEET_ID_MAX) {
		snprintf(err, errlen, "%s: no usable machine id on the first line", path);
		return -EINVAL;
	}
	for (i = b; i < e; i++)
		if (!isgraph((unsigned char)buf[i]) || buf[i] == '"' || buf[i] == '\\' ||
		    buf[i] == FLEET_ID_SEP) {
			snprintf(err, errlen, "%s: the machine id has an unusable character", path);
			return -EINVAL;
		}
	memcpy(out, buf + b, e - b);
	out[e - b] = 0;
	return 0;
}

/* The helper is handed the settings as the same KEY=VALUE pairs a file has, and
 * parses them with fleet_config_set(): one parser, one set of checks. */
int fleet_config_each(const struct fleet_config *c,
		      int (*fn)(const char *key, const char *value, void *ud), void *ud)
{
	char v[FLEET_MAX_ENDPOINTS * (FLEET_STR + 1)];
	int r;

	for (size_t i = 0; i < FLEET_NR_KEYS; i++) {
		if (fleet_keys[i].local)
			continue;
		fleet_config_get(c, i, v, sizeof(v));
		if ((r = fn(fleet_keys[i].name, v, ud)) < 0)
			return r;
	}
	return 0;
}
