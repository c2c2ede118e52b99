/* SPDX-License-Identifier: GPL-2.0-only */
/* The backends' HTTP transport (libcurl, one easy handle per client) and their
 * error text.  Blocking: the helper calls it from its worker thread only. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "backend.h"
#include "util.h"

#define FLEET_REPLY_MAX (1u << 20)

int fleet_conn_init(struct fleet_conn *c, const struct fleet_config *cfg, const char *id,
		    char *err, size_t errlen)
{
	static bool ready;

	memset(c, 0, sizeof(*c));
	c->cfg = cfg;
	c->id = id;
	if (!ready) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
			snprintf(err, errlen, "libcurl failed to initialize");
			return -EIO;
		}
		ready = true;
	}
	c->curl = curl_easy_init();
	if (!c->curl) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

void fleet_conn_fini(struct fleet_conn *c)
{
	if (c->curl)
		curl_easy_cleanup(c->curl);
	c->curl = NULL;
}

void fleet_conn_error(struct fleet_conn *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
}

/* ---- URLs, as curl itself reads them ------------------------------------------ */

int fleet_http_url(const struct fleet_config *cfg, const char *base, const char *path,
		   char *buf, size_t len)
{
	size_t bl = strlen(base);
	int n;

	/* "host:port" means http unless a CA is configured; a trailing '/' is dropped */
	if (bl && base[bl - 1] == '/')
		bl--;
	n = snprintf(buf, len, "%s%.*s%s",
		     strstr(base, "://") ? "" : (*cfg->ca_cert ? "https://" : "http://"),
		     (int)bl, base, path);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Two spellings of one host: equal names (case aside), or equal IPv6 addresses
 * however written ("[::1]", "[0:0::1]"). */
static bool same_host(const char *a, const char *b)
{
	struct in6_addr x, y;
	char va[INET6_ADDRSTRLEN + 1], vb[INET6_ADDRSTRLEN + 1];
	size_t na = strlen(a), nb = strlen(b);

	if (!strcasecmp(a, b))
		return true;
	if (na < 3 || nb < 3 || *a != '[' || *b != '[' || a[na - 1] != ']' || b[nb - 1] != ']' ||
	    na - 2 >= sizeof(va) || nb - 2 >= sizeof(vb))
		return false;
	snprintf(va, sizeof(va), "%.*s", (int)(na - 2), a + 1);
	snprintf(vb, sizeof(vb), "%.*s", (int)(nb - 2), b + 1);
	return inet_pton(AF_INET6, va, &x) == 1 && inet_pton(AF_INET6, vb, &y) == 1 &&
	       !memcmp(&x, &y, sizeof(x));
}

/* Is a part set?  1 yes (its text in *ret, to curl_free), 0 no, <0 curl failed. */
static int url_part(CURLU *h, CURLUPart what, char **ret)
{
	CURLUcode uc = curl_url_get(h, what, ret, 0);

	if (uc == CURLUE_OK)
		return 1;
	*ret = NULL;
	switch (uc) {
	case CURLUE_NO_USER: case CURLUE_NO_PASSWORD: case CURLUE_NO_OPTIONS:
	case CURLUE_NO_QUERY: case CURLUE_NO_FRAGMENT: case CURLUE_NO_PORT:
	case CURLUE_NO_ZONEID: case CURLUE_NO_HOST:
		return 0;
	default:
		return -EINVAL;
	}
}

#define URL_BAD(...) do { snprintf(err, errlen, __VA_ARGS__); r = -EINVAL; goto out; } while (0)

int fleet_http_check_url(const struct fleet_config *cfg, const char *key, const char *base,
			 const char *path, char *err, size_t errlen)
{
	static const struct { CURLUPart part; const char *what; } refused[] = {
		{ CURLUPART_USER, "user info (a user name)" },
		{ CURLUPART_PASSWORD, "user info (a password)" },
		{ CURLUPART_OPTIONS, "login options" },
		{ CURLUPART_QUERY, "a query (?...)" },
		{ CURLUPART_FRAGMENT, "a fragment (#...)" },
		{ CURLUPART_ZONEID, "an IPv6 zone id" },
	};
	struct fleet_url u;
	char url[FLEET_STR + 64];
	char *scheme = NULL, *host = NULL, *v = NULL;
	CURLU *h = NULL;
	CURLUcode uc;
	int r;

	/* rerandd's own check first (the same one its --check-config made) */
	r = fleet_url_parse(key, base, !strcmp(key, "URL"), *cfg->ca_cert, &u, err, errlen);
	if (r < 0)
		return r;
	if (fleet_http_url(cfg, base, path, url, sizeof(url)) < 0) {
		snprintf(err, errlen, "%s=%s: too long", key, base);
		return -EINVAL;
	}
	h = curl_url();
	if (!h) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	uc = curl_url_set(h, CURLUPART_URL, url, 0);
	if (uc != CURLUE_OK)
		URL_BAD("%s=%s: curl cannot parse %s: %s", key, base, url, curl_url_strerror(uc));
	if (url_part(h, CURLUPART_SCHEME, &scheme) != 1 ||
	    (strcmp(scheme, "http") && strcmp(scheme, "https")))
		URL_BAD("%s=%s: curl reads the scheme as %s: only http and https are supported",
			key, base, scheme ? scheme : "(none)");
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
		r = url_part(h, refused[i].part, &v);
		curl_free(v);
		v = NULL;
		if (r != 0)
			URL_BAD("%s=%s: curl finds %s in it: not accepted", key, base,
				r > 0 ? refused[i].what : "a part it cannot read");
	}
	if (url_part(h, CURLUPART_HOST, &host) != 1 || !*host)
		URL_BAD("%s=%s: curl finds no host in it", key, base);
	/* the host the rule below judges must be the one curl connects to */
	if (!same_host(host, u.host))
		URL_BAD("%s=%s: curl would connect to %s, not to %s: refused", key, base, host,
			u.host);
	if (!strcmp(scheme, "http") && !cfg->allow_plaintext && !fleet_host_loopback(host))
		URL_BAD("[Fleet] %s=%s: plaintext HTTP to %s, which is not on loopback: the lock "
			"traffic would cross the network unprotected; use https://, or set "
			"AllowPlaintext=yes to accept that", key, base, host);
	r = 0;
out:
	curl_free(scheme);
	curl_free(host);
	curl_url_cleanup(h);
	return r;
}
#undef URL_BAD

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

int fleet_http_post(struct fleet_conn *c, const char *base, const char *path, const char *body,
		    bool fleetlock_header, struct fleet_http_reply *r)
{
	const struct fleet_config *cfg = c->cfg;
	struct curl_slist *h = NULL;
	char url[FLEET_STR + 64], why[FLEET_MSG_MAX];
	CURL *cu = c->curl;
	CURLcode cc;
	int rc;

	memset(r, 0, sizeof(*r));
	/* fleet_open checked every URL; checked again as it is sent, so that no
	 * request goes anywhere that check did not see */
	rc = fleet_http_check_url(cfg, cfg->backend == FLEET_BACKEND_FLEETLOCK ? "URL" : "Endpoints",
				  base, path, why, sizeof(why));
	if (rc < 0 || fleet_http_url(cfg, base, path, url, sizeof(url)) < 0) {
		fleet_conn_error(c, "%s", rc < 0 ? why : "URL too long");
		return -EINVAL;
	}
	curl_easy_reset(cu);
	h = curl_slist_append(h, "Content-Type: application/json");
	if (fleetlock_header)
		h = curl_slist_append(h, "fleet-lock-protocol: true");
	if (h && *c->auth_token) {
		/* etcd's gateway takes the token from authenticate as it is */
		char auth[sizeof(c->auth_token) + 32];
		snprintf(auth, sizeof(auth), "Authorization: %s", c->auth_token);
		h = curl_slist_append(h, auth);
		explicit_bzero(auth, sizeof(auth));
	}
	if (!h)
		return -ENOMEM;
	curl_easy_setopt(cu, CURLOPT_URL, url);
	curl_easy_setopt(cu, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(cu, CURLOPT_POST, 1L);
	curl_easy_setopt(cu, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(cu, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	curl_easy_setopt(cu, CURLOPT_WRITEFUNCTION, http_sink);
	curl_easy_setopt(cu, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(cu, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(cu, CURLOPT_TIMEOUT, (long)cfg->timeout);
	curl_easy_setopt(cu, CURLOPT_CONNECTTIMEOUT, (long)(cfg->timeout > 2 ? 2 : cfg->timeout));
	/* a redirect could carry the lock request somewhere unintended */
	curl_easy_setopt(cu, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(cu, CURLOPT_PROTOCOLS_STR, "http,https");
	if (*cfg->ca_cert)
		curl_easy_setopt(cu, CURLOPT_CAINFO, cfg->ca_cert);
	if (*cfg->cert)
		curl_easy_setopt(cu, CURLOPT_SSLCERT, cfg->cert);
	if (*cfg->key)
		curl_easy_setopt(cu, CURLOPT_SSLKEY, cfg->key);
	cc = curl_easy_perform(cu);
	curl_slist_free_all(h);
	if (cc != CURLE_OK) {
		fleet_conn_error(c, "%s%s: %s", base, path, curl_easy_strerror(cc));
		free(r->body);
		r->body = NULL;
		r->len = 0;
		return cc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -EIO;
	}
	curl_easy_getinfo(cu, CURLINFO_RESPONSE_CODE, &r->status);
	if (!r->body) {
		r->body = strdup("");
		if (!r->body)
			return -ENOMEM;
	}
	return 0;
}
