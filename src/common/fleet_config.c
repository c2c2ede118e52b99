/* SPDX-License-Identifier: GPL-2.0-only */
/* [Fleet] settings, the host's identity, and the pure timing helpers: shared by
 * rerandd (which parses the configuration) and rerand-fleetd (which is handed it). */
#include <arpa/inet.h>
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

/* ---- the lock servers' URLs -------------------------------------------------
 * A strict subset of URL syntax on which curl's parser cannot read another
 * host than this one: [http[s]://]HOST[:PORT][/PATH], HOST a name of
 * [A-Za-z0-9._-], a dotted-quad IPv4 address or a bracketed IPv6 one, PATH of
 * [A-Za-z0-9._~/-].  User info, queries, fragments, percent-encoding and
 * every other character are refused: "http://127.0.0.1:2379@etcd.example"
 * sends to etcd.example.  rerand-fleetd parses each URL with curl's own
 * parser too before it uses it (fleetd/fleet_url.c). */

static bool host_char(char ch)
{
	return isalnum((unsigned char)ch) || ch == '.' || ch == '-' || ch == '_';
}

static bool path_char(char ch)
{
	return isalnum((unsigned char)ch) || strchr("-._~/", ch);
}

#define URL_BAD(...) do { snprintf(err, errlen, __VA_ARGS__); return -EINVAL; } while (0)

int fleet_url_parse(const char *key, const char *url, bool need_scheme, bool has_ca,
		    struct fleet_url *u, char *err, size_t errlen)
{
	const char *sep = strstr(url, "://"), *a, *p, *e;
	size_t n;

	memset(u, 0, sizeof(*u));
	if (!*url)
		URL_BAD("%s=: empty URL", key);
	if (strlen(url) >= FLEET_STR)
		URL_BAD("%s=%.40s...: too long (at most %d bytes)", key, url, FLEET_STR - 1);
	/* the specific refusals first, wherever they are */
	if (strchr(url, '#'))
		URL_BAD("%s=%s: a fragment (#...) is not accepted in a lock server URL", key, url);
	if (strchr(url, '?'))
		URL_BAD("%s=%s: a query (?...) is not accepted: the request path is appended to "
			"the URL", key, url);
	if (strchr(url, '@'))
		URL_BAD("%s=%s: user info (user@ or user:password@) is not accepted: curl would "
			"connect to the host after the '@'; give etcd's user with User= and "
			"PasswordFile=", key, url);
	if (strchr(url, '%'))
		URL_BAD("%s=%s: percent-encoding (%%XX) is not accepted in a lock server URL",
			key, url);
	if (sep) {
		n = (size_t)(sep - url);
		if (n == 4 && !strncmp(url, "http", 4))
			u->https = false;
		else if (n == 5 && !strncmp(url, "https", 5))
			u->https = true;
		else
			URL_BAD("%s=%s: only http:// and https:// are supported (lower case)", key, url);
		u->has_scheme = true;
		a = sep + 3;
	} else if (need_scheme) {
		URL_BAD("%s=%s: want an http:// or https:// URL", key, url);
	} else {
		u->https = has_ca;          /* a bare host:port: https with CACert= */
		a = url;
	}
	/* the authority: up to the path */
	p = a + strcspn(a, "/");
	if (*a == '[') {
		char v6[INET6_ADDRSTRLEN + 1];
		struct in6_addr a6;

		e = memchr(a, ']', (size_t)(p - a));
		if (!e || (size_t)(e - a - 1) >= sizeof(v6))
			URL_BAD("%s=%s: an IPv6 address wants [ADDRESS] (no zone)", key, url);
		snprintf(v6, sizeof(v6), "%.*s", (int)(e - a - 1), a + 1);
		if (inet_pton(AF_INET6, v6, &a6) != 1)
			URL_BAD("%s=%s: [%s] is not an IPv6 address", key, url, v6);
		e++;
	} else {
		for (e = a; e < p && host_char(*e); e++)
			;
		if (e == a)
			URL_BAD("%s=%s: no host name", key, url);
		if (e < p && *e != ':')
			URL_BAD("%s=%s: the character '%c' is not accepted in a host name (want "
				"[A-Za-z0-9._-], an IPv4 address or [IPv6])", key, url,
				isprint((unsigned char)*e) ? *e : '?');
		/* a name whose last label starts with a digit is an address to curl
		 * (127.1, 0x7f.1, 2130706433 are all 127.0.0.1): only the dotted quad */
		const char *last = a;
		for (const char *q = a; q < e; q++)
			if (*q == '.' && q + 1 < e)
				last = q + 1;
		if (isdigit((unsigned char)*last)) {
			char v4[INET_ADDRSTRLEN + 1];
			struct in_addr a4;

			if ((size_t)(e - a) >= sizeof(v4))
				URL_BAD("%s=%s: %.*s is not a dotted-quad IPv4 address", key, url,
					(int)(e - a), a);
			snprintf(v4, sizeof(v4), "%.*s", (int)(e - a), a);
			if (inet_pton(AF_INET, v4, &a4) != 1)
				URL_BAD("%s=%s: %s is not a dotted-quad IPv4 address (a.b.c.d, decimal)",
					key, url, v4);
		}
	}
	if ((size_t)(e - a) >= sizeof(u->host))
		URL_BAD("%s=%s: the host name is too long", key, url);
	snprintf(u->host, sizeof(u->host), "%.*s", (int)(e - a), a);
	if (e < p) {
		unsigned long port = 0;
		const char *d = e + 1;

		if (*e != ':' || d == p || (size_t)(p - d) > 5 ||
		    strspn(d, "0123456789") != (size_t)(p - d))
			URL_BAD("%s=%s: want HOST:PORT with a port number after the ':'", key, url);
		port = strtoul(d, NULL, 10);
		if (port < 1 || port > 65535)
			URL_BAD("%s=%s: port %lu is not 1 to 65535", key, url, port);
		u->port = (unsigned)port;
	}
	for (const char *q = p; *q; q++)
		if (!path_char(*q))
			URL_BAD("%s=%s: the character '%c' is not accepted in the path (want "
				"[A-Za-z0-9._~/-])", key, url, isprint((unsigned char)*q) ? *q : '?');
	return 0;
}
#undef URL_BAD

bool fleet_host_loopback(const char *host)
{
	struct in6_addr a6;
	struct in_addr a4;
	size_t n = strlen(host);

	/* "localhost", which curl resolves to loopback itself without asking DNS;
	 * by address otherwise (a name like 127.example.org is not) */
	if (!strcasecmp(host, "localhost"))
		return true;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (n > 2 && host[0] == '[' && host[n - 1] == ']') {
		char v6[INET6_ADDRSTRLEN + 1];

		if (n - 2 >= sizeof(v6))
			return false;
		snprintf(v6, sizeof(v6), "%.*s", (int)(n - 2), host + 1);
		if (inet_pton(AF_INET6, v6, &a6) == 1)
			return IN6_IS_ADDR_LOOPBACK(&a6);
	}
	return false;
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

/* How each key is stored: by its own function, as a checked string, or as a
 * duration in seconds or milliseconds, in the field at off. */
enum fleet_key_kind { FK_FN, FK_STR, FK_SECONDS, FK_MSEC, FK_MSEC_LEGACY };

struct fleet_key {
	const char *name;
	enum fleet_key_kind kind;
	size_t off, size;
	int (*set)(struct fleet_config *c, const char *value, char *err, size_t errlen);
	int (*check)(const char *value, char *err, size_t errlen);
};

#define FK_FIELD(field) offsetof(struct fleet_config, field), \
	sizeof(((struct fleet_config *)0)->field)
#define KEY_FN(name, fn)            { name, FK_FN, 0, 0, fn, NULL }
#define KEY_STR(name, field, check) { name, FK_STR, FK_FIELD(field), NULL, check }
#define KEY_SECONDS(name, field)    { name, FK_SECONDS, FK_FIELD(field), NULL, NULL }
#define KEY_MSEC(name, field)       { name, FK_MSEC, FK_FIELD(field), NULL, NULL }
#define KEY_MSEC_LEGACY(name, field) { name, FK_MSEC_LEGACY, FK_FIELD(field), NULL, NULL }
static const struct fleet_key fleet_keys[] = {
	KEY_FN("Backend", set_backend),
	KEY_STR("Group", group, check_group),
	KEY_FN("Endpoints", set_endpoints),
	KEY_STR("CACert", ca_cert, NULL),
	KEY_STR("Cert", cert, NULL),
	KEY_STR("Key", key, NULL),
	KEY_STR("User", user, check_user),
	KEY_STR("PasswordFile", password_file, check_password_file),
	KEY_FN("AllowPlaintext", set_allow_plaintext),
	KEY_STR("URL", url, check_url),
	KEY_STR("MachineIDFile", machine_id, NULL),
	KEY_STR("ID", id, check_id),
	KEY_STR("InstallID", install_id, check_install_id),
	KEY_FN("MaxConcurrent", set_max_concurrent),
	KEY_SECONDS("LockTTL", lock_ttl),
	KEY_SECONDS("DownTTL", down_ttl),
	KEY_SECONDS("Timeout", timeout),
	KEY_FN("BreakerFailures", set_breaker_failures),
	KEY_FN("BreakerWindowSec", set_breaker_window),
	KEY_MSEC("RetryBase", retry_base_ms),
	KEY_MSEC("RetryMax", retry_max_ms),
	KEY_STR("HelperSocket", helper, check_helper),
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

const char *fleet_config_alias(const char *key)
{
	if (!strcasecmp(key, "RetryBaseMSec"))
		return "RetryBase";
	if (!strcasecmp(key, "RetryMaxMSec"))
		return "RetryMax";
	return NULL;
}

int fleet_config_set(struct fleet_config *c, const char *key, const char *value, char *err,
		     size_t errlen)
{
	for (size_t i = 0; i < ARRAY_SIZE(fleet_keys); i++) {
		const struct fleet_key *k = &fleet_keys[i];
		char *field = (char *)c + k->off;
		int r;

		if (strcasecmp(key, k->name))
			continue;
		switch (k->kind) {
		case FK_FN:
			return k->set(c, value, err, errlen);
		case FK_STR:
			r = k->check ? k->check(value, err, errlen) : 0;
			return r < 0 ? r : set_str(field, k->size, k->name, value, err, errlen);
		case FK_SECONDS:
			return parse_seconds(k->name, value, (int64_t *)field, err, errlen);
		case FK_MSEC:
		case FK_MSEC_LEGACY:
			return parse_msec(k->name, value, k->kind == FK_MSEC_LEGACY, (int64_t *)field,
					  err, errlen);
		}
	}
	snprintf(err, errlen, "unknown key %s= in [Fleet]", key);
	return -ENOENT;
}

bool fleet_url_plaintext_remote(const char *url, bool has_ca, char *host, size_t hlen)
{
	struct fleet_url u;
	char err[FLEET_MSG_MAX];

	/* what does not parse is not known to be safe */
	if (fleet_url_parse("URL", url, false, has_ca, &u, err, sizeof(err)) < 0) {
		snprintf(host, hlen, "%s", url);
		return true;
	}
	snprintf(host, hlen, "%s", u.host);
	return !u.https && !fleet_host_loopback(u.host);
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

/* ---- pure helpers ------------------------------------------------------------ */

size_t fleet_holder_machine_len(const char *holder)
{
	const char *s = strchr(holder, FLEET_ID_SEP);

	return s ? (size_t)(s - holder) : strlen(holder);
}

int64_t fleet_backoff_ms(unsigned attempt, int64_t base_ms, int64_t cap_ms, uint64_t rnd)
{
	int64_t d = base_ms > 0 ? base_ms : 1;
	int64_t half;

	if (cap_ms < d)
		cap_ms = d;
	for (unsigned i = 0; i < attempt && d < cap_ms; i++)
		d = d > cap_ms / 2 ? cap_ms : d * 2;
	if (d > cap_ms)
		d = cap_ms;
	half = d / 2;
	return half + (int64_t)(rnd % (uint64_t)(d - half + 1));
}

int64_t fleet_spread_start(int64_t now, int64_t start, int64_t end, uint64_t rnd)
{
	int64_t from = now > start ? now : start;
	int64_t span;

	if (end <= from)
		return 0;
	span = (end - from) / 2;
	if (span <= 0)
		return from;
	return from + (int64_t)(rnd % (uint64_t)span);
}

const char *fleet_state_name(enum fleet_state s)
{
	switch (s) {
	case FLEET_ST_DISABLED: return "disabled";
	case FLEET_ST_IDLE: return "idle";
	case FLEET_ST_WAITING: return "waiting";
	case FLEET_ST_HELD: return "held";
	case FLEET_ST_ERROR: return "error";
	}
	return "?";
}

/* The helper is handed the settings as the same KEY=VALUE pairs a file has, and
 * parses them with fleet_config_set(): one parser, one set of checks. */
int fleet_config_each(const struct fleet_config *c,
		      int (*fn)(const char *key, const char *value, void *ud), void *ud)
{
	char eps[FLEET_MAX_ENDPOINTS * (FLEET_STR + 1)] = "", num[64];
	size_t o = 0;
	int r;

	for (unsigned i = 0; i < c->nr_endpoints; i++)
		o += (size_t)snprintf(eps + o, sizeof(eps) - o, "%s%s", i ? "," : "", c->endpoints[i]);
#define KV(k, v) do { if ((r = fn(k, v, ud)) < 0) return r; } while (0)
#define KN(k, fmt, v) do { snprintf(num, sizeof(num), fmt, v); KV(k, num); } while (0)
	/* durations as every duration is printed: what the parser reads back */
#define KD(k, v) KV(k, config_format_duration(v, num, sizeof(num)))
#define KDMS(k, v) KV(k, config_format_duration_ms(v, num, sizeof(num)))
	KV("Backend", fleet_backend_name(c->backend));
	KV("Group", c->group);
	KV("Endpoints", eps);
	KV("CACert", c->ca_cert);
	KV("Cert", c->cert);
	KV("Key", c->key);
	KV("User", c->user);
	KV("PasswordFile", c->password_file);
	KV("AllowPlaintext", c->allow_plaintext ? "yes" : "no");
	KN("MaxConcurrent", "%u", c->max_concurrent);
	KD("LockTTL", c->lock_ttl);
	KD("DownTTL", c->down_ttl);
	KV("URL", c->url);
	KV("MachineIDFile", c->machine_id);
	KV("ID", c->id);
	KV("InstallID", c->install_id);
	KD("Timeout", c->timeout);
	KDMS("RetryBase", c->retry_base_ms);
	KDMS("RetryMax", c->retry_max_ms);
	KN("BreakerFailures", "%u", c->breaker_failures);
	KD("BreakerWindowSec", c->breaker_window);
#undef KDMS
#undef KD
#undef KN
#undef KV
	return 0;
}
