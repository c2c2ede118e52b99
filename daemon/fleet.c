/* SPDX-License-Identifier: GPL-2.0-only */
/* The backend-independent half of fleet coordination: [Fleet] config keys,
 * identity, back-off and window spreading, HTTP transport, metrics and status. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <dlfcn.h>
#include <json-c/json.h>

#include "rerandd.h"         /* fleet.h, rr_read_text(), rr_escape() */

#define FLEET_REPLY_MAX (1u << 20)

struct fleet {
	struct fleet_config cfg;
	char id[FLEET_ID_MAX];
	enum fleet_state state;
	uint64_t errors;
	unsigned attempts;           /* refusals/errors since the last success */
	char last_error[512];
	CURL *curl;
	struct fleet_etcd *etcd;
};

/* ---- config ---------------------------------------------------------------- */

void fleet_config_defaults(struct fleet_config *c)
{
	memset(c, 0, sizeof(*c));
	c->backend = FLEET_BACKEND_NONE;
	snprintf(c->group, sizeof(c->group), "default");
	c->max_concurrent = 1;
	c->lock_ttl = 900;
	snprintf(c->machine_id, sizeof(c->machine_id), "%s", FLEET_DEFAULT_MACHINE_ID);
	c->timeout = 5;
	c->retry_base_ms = 5000;
	c->retry_max_ms = 300000;
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

/* Seconds, with an optional s/min/h suffix (LockTTL=15min). */
static int parse_seconds(const char *key, const char *v, int64_t *ret, char *err,
			 size_t errlen)
{
	char *end;
	long long x;
	int64_t mul = 1;

	errno = 0;
	if (!isdigit((unsigned char)*v))
		goto bad;
	x = strtoll(v, &end, 10);
	if (errno)
		goto bad;
	if (!strcmp(end, "") || !strcmp(end, "s"))
		mul = 1;
	else if (!strcmp(end, "min") || !strcmp(end, "m"))
		mul = 60;
	else if (!strcmp(end, "h"))
		mul = 3600;
	else
		goto bad;
	if (x <= 0 || x > 7 * 24 * 3600 / mul)
		goto bad;
	*ret = x * mul;
	return 0;
bad:
	snprintf(err, errlen, "%s=%s: want a duration like 30, 90s, 15min or 1h (up to a week)",
		 key, v);
	return -EINVAL;
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
		if (n >= FLEET_MAX_ENDPOINTS) {
			snprintf(err, errlen, "Endpoints=: more than %d endpoints",
				 FLEET_MAX_ENDPOINTS);
			return -EINVAL;
		}
		if (strlen(tok) >= FLEET_STR) {
			snprintf(err, errlen, "Endpoints=: %.40s...: too long", tok);
			return -EINVAL;
		}
		if (strstr(tok, "://") && strncmp(tok, "http://", 7) && strncmp(tok, "https://", 8)) {
			snprintf(err, errlen, "Endpoints=: %s: only http:// and https:// are supported",
				 tok);
			return -EINVAL;
		}
		snprintf(c->endpoints[n++], FLEET_STR, "%s", tok);
	}
	/* an empty assignment resets the list, as in systemd */
	c->nr_endpoints = n;
	return 0;
}

int fleet_config_set(struct fleet_config *c, const char *key, const char *value, char *err,
		     size_t errlen)
{
	uint64_t u;
	int r;

	if (!strcasecmp(key, "Backend")) {
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
	if (!strcasecmp(key, "Group")) {
		if (!fleet_group_valid(value) || strlen(value) >= FLEET_GROUP_MAX) {
			snprintf(err, errlen, "Group=%s: want 1-%d characters of [a-zA-Z0-9.-]",
				 value, FLEET_GROUP_MAX - 1);
			return -EINVAL;
		}
		snprintf(c->group, sizeof(c->group), "%s", value);
		return 0;
	}
	if (!strcasecmp(key, "Endpoints"))
		return set_endpoints(c, value, err, errlen);
	if (!strcasecmp(key, "CACert"))
		return set_str(c->ca_cert, sizeof(c->ca_cert), "CACert", value, err, errlen);
	if (!strcasecmp(key, "Cert"))
		return set_str(c->cert, sizeof(c->cert), "Cert", value, err, errlen);
	if (!strcasecmp(key, "Key"))
		return set_str(c->key, sizeof(c->key), "Key", value, err, errlen);
	if (!strcasecmp(key, "URL")) {
		if (*value && strncmp(value, "http://", 7) && strncmp(value, "https://", 8)) {
			snprintf(err, errlen, "URL=%s: want an http:// or https:// URL", value);
			return -EINVAL;
		}
		return set_str(c->url, sizeof(c->url), "URL", value, err, errlen);
	}
	if (!strcasecmp(key, "MachineIDFile"))
		return set_str(c->machine_id, sizeof(c->machine_id), "MachineIDFile", value, err,
			       errlen);
	if (!strcasecmp(key, "ID")) {
		if (*value && !fleet_group_valid(value)) {
			snprintf(err, errlen, "ID=%s: want characters of [a-zA-Z0-9.-]", value);
			return -EINVAL;
		}
		return set_str(c->id, sizeof(c->id), "ID", value, err, errlen);
	}
	if (!strcasecmp(key, "MaxConcurrent")) {
		r = parse_u64("MaxConcurrent", value, 1, FLEET_MAX_SLOTS, &u, err, errlen);
		if (!r)
			c->max_concurrent = (unsigned)u;
		return r;
	}
	if (!strcasecmp(key, "LockTTL"))
		return parse_seconds("LockTTL", value, &c->lock_ttl, err, errlen);
	if (!strcasecmp(key, "Timeout"))
		return parse_seconds("Timeout", value, &c->timeout, err, errlen);
	if (!strcasecmp(key, "RetryBaseMSec") || !strcasecmp(key, "RetryMaxMSec")) {
		r = parse_u64(key, value, 10, 24ull * 3600 * 1000, &u, err, errlen);
		if (r)
			return r;
		if (!strcasecmp(key, "RetryBaseMSec"))
			c->retry_base_ms = (int64_t)u;
		else
			c->retry_max_ms = (int64_t)u;
		return 0;
	}
	snprintf(err, errlen, "unknown key %s= in [Fleet]", key);
	return -ENOENT;
}

int fleet_config_validate(const struct fleet_config *c, char *err, size_t errlen)
{
	if (c->retry_max_ms < c->retry_base_ms) {
		snprintf(err, errlen, "[Fleet] RetryMaxMSec= is below RetryBaseMSec=");
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
		/* etcd refuses leases shorter than ~2 s; less than 5 s cannot cover a reboot */
		if (c->lock_ttl < 5) {
			snprintf(err, errlen, "[Fleet] LockTTL= must be at least 5 seconds");
			return -EINVAL;
		}
		return 0;
	case FLEET_BACKEND_FLEETLOCK:
		if (!*c->url) {
			snprintf(err, errlen, "[Fleet] Backend=fleetlock needs URL=");
			return -EINVAL;
		}
		return 0;
	}
	return 0;
}

int fleet_read_identity(const char *path, char *out, size_t len, char *err, size_t errlen)
{
	struct rr_err re;
	char *buf;
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
		free(buf);
		return -EINVAL;
	}
	for (i = b; i < e; i++)
		if (!isgraph((unsigned char)buf[i]) || buf[i] == '"' || buf[i] == '\\') {
			snprintf(err, errlen, "%s: the machine id has an unusable character", path);
			free(buf);
			return -EINVAL;
		}
	memcpy(out, buf + b, e - b);
	out[e - b] = 0;
	free(buf);
	return 0;
}

/* ---- pure helpers ------------------------------------------------------------ */

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

static const char b64_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int fleet_b64_encode(const void *in, size_t n, char *out, size_t outlen)
{
	const uint8_t *p = in;
	size_t o = 0;

	if (outlen < (n + 2) / 3 * 4 + 1)
		return -ENOBUFS;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		out[o++] = b64_alphabet[(v >> 18) & 63];
		out[o++] = b64_alphabet[(v >> 12) & 63];
		out[o++] = i + 1 < n ? b64_alphabet[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? b64_alphabet[v & 63] : '=';
	}
	out[o] = 0;
	return (int)o;
}

static int b64_val(char c)
{
	const char *p = c ? strchr(b64_alphabet, c) : NULL;
	return p ? (int)(p - b64_alphabet) : -1;
}

int fleet_b64_decode(const char *in, void *out, size_t outlen, size_t *ret_n)
{
	size_t len = strlen(in), o = 0;
	uint8_t *q = out;

	if (len % 4)
		return -EINVAL;
	for (size_t i = 0; i < len; i += 4) {
		int a = b64_val(in[i]), b = b64_val(in[i + 1]);
		int c = in[i + 2] == '=' ? -2 : b64_val(in[i + 2]);
		int d = in[i + 3] == '=' ? -2 : b64_val(in[i + 3]);
		bool last = i + 4 == len;

		if (a < 0 || b < 0 || c == -1 || d == -1 || (c == -2 && d != -2) ||
		    ((c == -2 || d == -2) && !last))
			return -EINVAL;
		uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)(c < 0 ? 0 : c) << 6 |
			     (uint32_t)(d < 0 ? 0 : d);
		int nb = c < 0 ? 1 : d < 0 ? 2 : 3;
		if (o + (size_t)nb > outlen)
			return -ENOBUFS;
		q[o++] = (uint8_t)(v >> 16);
		if (nb > 1)
			q[o++] = (uint8_t)(v >> 8);
		if (nb > 2)
			q[o++] = (uint8_t)v;
	}
	if (o < outlen)
		q[o] = 0;
	*ret_n = o;
	return 0;
}

/* libcurl, loaded only when a fleet backend is configured: linked in, it
 * and its TLS, Kerberos and LDAP libraries would more than double rerandd's
 * resident memory on the many hosts that never use a fleet lock. */
static struct {
	CURLcode (*global_init)(long flags);
	CURL *(*easy_init)(void);
	void (*easy_reset)(CURL *curl);
	CURLcode (*easy_setopt)(CURL *curl, CURLoption option, ...);
	CURLcode (*easy_perform)(CURL *curl);
	CURLcode (*easy_getinfo)(CURL *curl, CURLINFO info, ...);
	const char *(*easy_strerror)(CURLcode code);
	void (*easy_cleanup)(CURL *curl);
	struct curl_slist *(*slist_append)(struct curl_slist *list, const char *s);
	void (*slist_free_all)(struct curl_slist *list);
} cu;

#define CURL_SONAME "libcurl.so.4"

static int curl_load(char *err, size_t errlen)
{
	static bool ready;
	void *h;

	if (ready)
		return 0;
	h = dlopen(CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(err, errlen, "cannot load %s (Debian: libcurl4): %s", CURL_SONAME, dlerror());
		return -ENOENT;
	}
#define SYM(field, name)                                                                      \
	if (!(*(void **)&cu.field = dlsym(h, name))) {                                        \
		snprintf(err, errlen, "%s has no %s", CURL_SONAME, name);                     \
		dlclose(h);                                                                   \
		return -ENOENT;                                                               \
	}
	SYM(global_init, "curl_global_init")
	SYM(easy_init, "curl_easy_init")
	SYM(easy_reset, "curl_easy_reset")
	SYM(easy_setopt, "curl_easy_setopt")
	SYM(easy_perform, "curl_easy_perform")
	SYM(easy_getinfo, "curl_easy_getinfo")
	SYM(easy_strerror, "curl_easy_strerror")
	SYM(easy_cleanup, "curl_easy_cleanup")
	SYM(slist_append, "curl_slist_append")
	SYM(slist_free_all, "curl_slist_free_all")
#undef SYM
	if (cu.global_init(CURL_GLOBAL_DEFAULT)) {
		snprintf(err, errlen, "libcurl failed to initialize");
		return -EIO;   /* the library stays loaded: it may not unload cleanly */
	}
	ready = true;
	return 0;
}

/* ---- transport ---------------------------------------------------------------- */

static size_t http_sink(char *p, size_t sz, size_t nm, void *ud)
{
	struct fleet_http_reply *r = ud;
	size_t n = sz * nm;
	char *nb;

	if (r->len + n > FLEET_REPLY_MAX)
		return 0;             /* aborts the transfer: a lock server never says this much */
	nb = realloc(r->body, r->len + n + 1);
	if (!nb)
		return 0;
	memcpy(nb + r->len, p, n);
	r->body = nb;
	r->len += n;
	r->body[r->len] = 0;
	return n;
}

int fleet_http_post(struct fleet *f, const char *base, const char *path, const char *body,
		    bool fleetlock_header, struct fleet_http_reply *r)
{
	const struct fleet_config *c = &f->cfg;
	struct curl_slist *h = NULL;
	char url[FLEET_STR + 64];
	size_t bl = strlen(base);
	CURLcode cc;

	memset(r, 0, sizeof(*r));
	/* "host:port" means http unless a CA is configured; a trailing '/' is dropped */
	if (bl && base[bl - 1] == '/')
		bl--;
	snprintf(url, sizeof(url), "%s%.*s%s",
		 strstr(base, "://") ? "" : (*c->ca_cert ? "https://" : "http://"),
		 (int)bl, base, path);
	cu.easy_reset(f->curl);
	h = cu.slist_append(h, "Content-Type: application/json");
	if (fleetlock_header)
		h = cu.slist_append(h, "fleet-lock-protocol: true");
	if (!h)
		return -ENOMEM;
	cu.easy_setopt(f->curl, CURLOPT_URL, url);
	cu.easy_setopt(f->curl, CURLOPT_HTTPHEADER, h);
	cu.easy_setopt(f->curl, CURLOPT_POST, 1L);
	cu.easy_setopt(f->curl, CURLOPT_POSTFIELDS, body);
	cu.easy_setopt(f->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	cu.easy_setopt(f->curl, CURLOPT_WRITEFUNCTION, http_sink);
	cu.easy_setopt(f->curl, CURLOPT_WRITEDATA, r);
	cu.easy_setopt(f->curl, CURLOPT_NOSIGNAL, 1L);
	cu.easy_setopt(f->curl, CURLOPT_TIMEOUT, (long)c->timeout);
	cu.easy_setopt(f->curl, CURLOPT_CONNECTTIMEOUT, (long)(c->timeout > 2 ? 2 : c->timeout));
	/* a redirect could carry the lock request somewhere unintended */
	cu.easy_setopt(f->curl, CURLOPT_FOLLOWLOCATION, 0L);
	cu.easy_setopt(f->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	if (*c->ca_cert)
		cu.easy_setopt(f->curl, CURLOPT_CAINFO, c->ca_cert);
	if (*c->cert)
		cu.easy_setopt(f->curl, CURLOPT_SSLCERT, c->cert);
	if (*c->key)
		cu.easy_setopt(f->curl, CURLOPT_SSLKEY, c->key);
	cc = cu.easy_perform(f->curl);
	cu.slist_free_all(h);
	if (cc != CURLE_OK) {
		fleet_set_error(f, false, "%s%s: %s", base, path, cu.easy_strerror(cc));
		free(r->body);
		r->body = NULL;
		r->len = 0;
		return cc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -EIO;
	}
	cu.easy_getinfo(f->curl, CURLINFO_RESPONSE_CODE, &r->status);
	if (!r->body) {
		r->body = strdup("");
		if (!r->body)
			return -ENOMEM;
	}
	return 0;
}

void fleet_set_error(struct fleet *f, bool count, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f->last_error, sizeof(f->last_error), fmt, ap);
	va_end(ap);
	if (count)
		f->errors++;
}

const struct fleet_config *fleet_config_of(const struct fleet *f)
{
	return &f->cfg;
}

/* ---- the lock ------------------------------------------------------------------- */

int fleet_open(const struct fleet_config *c, struct fleet **ret, char *err, size_t errlen)
{
	struct fleet *f;
	int r;

	r = fleet_config_validate(c, err, errlen);
	if (r)
		return r;
	f = calloc(1, sizeof(*f));
	if (!f) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	f->cfg = *c;
	f->state = c->backend == FLEET_BACKEND_NONE ? FLEET_ST_DISABLED : FLEET_ST_IDLE;
	if (*c->id)
		snprintf(f->id, sizeof(f->id), "%s", c->id);
	else if (c->backend != FLEET_BACKEND_NONE) {
		r = fleet_read_identity(c->machine_id, f->id, sizeof(f->id), err, errlen);
		if (r) {
			free(f);
			return r;
		}
	}
	if (c->backend != FLEET_BACKEND_NONE) {
		r = curl_load(err, errlen);
		if (r) {
			free(f);
			return r;
		}
		f->curl = cu.easy_init();
		if (c->backend == FLEET_BACKEND_ETCD)
			f->etcd = fleet_etcd_new();
		if (!f->curl || (c->backend == FLEET_BACKEND_ETCD && !f->etcd)) {
			snprintf(err, errlen, "out of memory");
			fleet_close(f);
			return -ENOMEM;
		}
	}
	*ret = f;
	return 0;
}

void fleet_close(struct fleet *f)
{
	if (!f)
		return;
	if (f->curl)
		cu.easy_cleanup(f->curl);
	fleet_etcd_free(f->etcd);
	free(f);
}

/* Fold a backend result into the state machine: errors are counted once per
 * failed operation and leave the lock in ERROR (fail closed). */
static int settle(struct fleet *f, int r, enum fleet_state on_zero)
{
	if (r < 0) {
		f->errors++;
		f->attempts++;
		f->state = FLEET_ST_ERROR;
	} else if (r == 0) {
		f->attempts++;
		f->state = on_zero;
	} else {
		f->attempts = 0;
		f->last_error[0] = 0;
		f->state = FLEET_ST_HELD;
	}
	return r;
}

int fleet_acquire(struct fleet *f)
{
	int r;

	switch (f->cfg.backend) {
	case FLEET_BACKEND_NONE:
		return 1;
	case FLEET_BACKEND_ETCD:
		r = fleet_etcd_acquire(f, f->etcd);
		break;
	default:
		r = fleet_lock_acquire(f);
		break;
	}
	return settle(f, r, FLEET_ST_WAITING);
}

int fleet_refresh(struct fleet *f)
{
	switch (f->cfg.backend) {
	case FLEET_BACKEND_NONE:
		return 1;
	case FLEET_BACKEND_ETCD:
		return settle(f, fleet_etcd_refresh(f, f->etcd), FLEET_ST_IDLE);
	default:
		/* FleetLock has no lease: the server holds the slot until steady-state */
		return f->state == FLEET_ST_HELD ? 1 : 0;
	}
}

int fleet_release(struct fleet *f)
{
	int r;

	switch (f->cfg.backend) {
	case FLEET_BACKEND_NONE:
		return 0;
	case FLEET_BACKEND_ETCD:
		r = fleet_etcd_release(f, f->etcd);
		break;
	default:
		r = fleet_lock_release(f);
		break;
	}
	if (r < 0) {
		f->errors++;
		f->state = FLEET_ST_ERROR;
	} else {
		f->state = FLEET_ST_IDLE;
		f->last_error[0] = 0;
	}
	return r;
}

int fleet_token(const struct fleet *f, char *buf, size_t len)
{
	if (f->cfg.backend != FLEET_BACKEND_ETCD) {
		if (len)
			buf[0] = 0;
		return 0;
	}
	return fleet_etcd_token(f->etcd, buf, len);
}

int fleet_resume(struct fleet *f, const char *token)
{
	switch (f->cfg.backend) {
	case FLEET_BACKEND_NONE:
		return 1;
	case FLEET_BACKEND_ETCD:
		return settle(f, fleet_etcd_resume(f, f->etcd, token), FLEET_ST_IDLE);
	default:
		/* the server still counts us until steady-state: say held */
		f->state = FLEET_ST_HELD;
		return 1;
	}
}

int fleet_status(struct fleet *f, struct fleet_status *st)
{
	int r;

	memset(st, 0, sizeof(*st));
	st->max_concurrent = f->cfg.max_concurrent;
	if (f->cfg.backend != FLEET_BACKEND_ETCD) {
		fleet_set_error(f, false, "the %s backend cannot list holders",
				fleet_backend_name(f->cfg.backend));
		return -EOPNOTSUPP;
	}
	r = fleet_etcd_status(f, f->etcd, st);
	if (r < 0)
		f->errors++;
	return r;
}

int fleet_release_host(struct fleet *f, const char *host)
{
	int r;

	if (f->cfg.backend != FLEET_BACKEND_ETCD) {
		fleet_set_error(f, false, "the %s backend cannot free another host's slot",
				fleet_backend_name(f->cfg.backend));
		return -EOPNOTSUPP;
	}
	r = fleet_etcd_release_host(f, f->etcd, host);
	if (r < 0)
		f->errors++;
	return r;
}

enum fleet_state fleet_state(const struct fleet *f) { return f->state; }
const char *fleet_identity(const struct fleet *f) { return f->id; }
uint64_t fleet_errors(const struct fleet *f) { return f->errors; }
const char *fleet_last_error(const struct fleet *f) { return f->last_error; }

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

int64_t fleet_next_delay_ms(struct fleet *f, uint64_t rnd)
{
	return fleet_backoff_ms(f->attempts ? f->attempts - 1 : 0, f->cfg.retry_base_ms,
				f->cfg.retry_max_ms, rnd);
}

int fleet_metrics_format(const struct fleet *f, char *buf, size_t len)
{
	int n = snprintf(buf, len,
		"# HELP rerand_fleet_lock_state Fleet lock: 0 disabled, 1 idle, 2 waiting, 3 held, 4 error (fail closed).\n"
		"# TYPE rerand_fleet_lock_state gauge\n"
		"rerand_fleet_lock_state{backend=\"%s\",group=\"%s\"} %d\n"
		"# HELP rerand_fleet_errors_total Fleet backend operations that failed.\n"
		"# TYPE rerand_fleet_errors_total counter\n"
		"rerand_fleet_errors_total{backend=\"%s\"} %" PRIu64 "\n",
		fleet_backend_name(f->cfg.backend), f->cfg.group, (int)f->state,
		fleet_backend_name(f->cfg.backend), f->errors);
	if (n < 0 || (size_t)n >= len)
		return -ENOBUFS;
	return n;
}

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
		json_object_object_add(h, "lease", json_object_new_int64(st->holders[i].lease));
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
