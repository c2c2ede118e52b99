/* SPDX-License-Identifier: GPL-2.0-only */
/* The backends' HTTP transport (libcurl, one easy handle per client) and their
 * error text.  Blocking: the helper calls it from its worker thread only. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "backend.h"

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
	char url[FLEET_STR + 64];
	size_t bl = strlen(base);
	CURL *cu = c->curl;
	CURLcode cc;

	memset(r, 0, sizeof(*r));
	/* "host:port" means http unless a CA is configured; a trailing '/' is dropped */
	if (bl && base[bl - 1] == '/')
		bl--;
	snprintf(url, sizeof(url), "%s%.*s%s",
		 strstr(base, "://") ? "" : (*cfg->ca_cert ? "https://" : "http://"),
		 (int)bl, base, path);
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
