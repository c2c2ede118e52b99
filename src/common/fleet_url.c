/* SPDX-License-Identifier: GPL-2.0-only */
/* The lock servers' URLs (Endpoints=, URL=): a strict subset of URL syntax on
 * which curl's parser cannot read another host than this one:
 * [http[s]://]HOST[:PORT][/PATH], HOST a name of [A-Za-z0-9._-], a dotted-quad
 * IPv4 address or a bracketed IPv6 one, PATH of [A-Za-z0-9._~/-].  User
 * info, queries, fragments, percent-encoding and every other character are
 * refused: "http://127.0.0.1:2379@etcd.example" sends to etcd.example.
 * rerand-fleetd parses each URL with curl's own parser too before it uses
 * it (fleetd/fleet_http.c).  Shared by rerandd and rerand-fleetd. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fleet.h"

#define URL_BAD(...) do { snprintf(err, errlen, __VA_ARGS__); return -EINVAL; } while (0)

static bool host_char(char ch)
{
	return isalnum((unsigned char)ch) || ch == '.' || ch == '-' || ch == '_';
}

static bool path_char(char ch)
{
	return isalnum((unsigned char)ch) || strchr("-._~/", ch);
}

/* The refusals that hold wherever the character is. */
static int refuse_specials(const char *key, const char *url, char *err, size_t errlen)
{
	if (!*url)
		URL_BAD("%s=: empty URL", key);
	if (strlen(url) >= FLEET_STR)
		URL_BAD("%s=%.40s...: too long (at most %d bytes)", key, url, FLEET_STR - 1);
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
	return 0;
}

/* The scheme, or none (a bare host:port is https with CACert=); *authority
 * is where the host starts. */
static int parse_scheme(const char *key, const char *url, bool need_scheme, bool has_ca,
			struct fleet_url *u, const char **authority, char *err, size_t errlen)
{
	const char *sep = strstr(url, "://");

	*authority = url;
	if (!sep) {
		if (need_scheme)
			URL_BAD("%s=%s: want an http:// or https:// URL", key, url);
		u->https = has_ca;
		return 0;
	}
	size_t n = (size_t)(sep - url);
	if (n == 4 && !strncmp(url, "http", 4))
		u->https = false;
	else if (n == 5 && !strncmp(url, "https", 5))
		u->https = true;
	else
		URL_BAD("%s=%s: only http:// and https:// are supported (lower case)", key, url);
	u->has_scheme = true;
	*authority = sep + 3;
	return 0;
}

/* [IPv6] from a up to the path at p; *end is past the ']'. */
static int parse_ipv6(const char *key, const char *url, const char *a, const char *p,
		      const char **end, char *err, size_t errlen)
{
	char v6[INET6_ADDRSTRLEN + 1];
	struct in6_addr a6;
	const char *e = memchr(a, ']', (size_t)(p - a));

	if (!e || (size_t)(e - a - 1) >= sizeof(v6))
		URL_BAD("%s=%s: an IPv6 address wants [ADDRESS] (no zone)", key, url);
	snprintf(v6, sizeof(v6), "%.*s", (int)(e - a - 1), a + 1);
	if (inet_pton(AF_INET6, v6, &a6) != 1)
		URL_BAD("%s=%s: [%s] is not an IPv6 address", key, url, v6);
	*end = e + 1;
	return 0;
}

/* A host name or a dotted quad from a up to the path at p; *end is where
 * it stops (a ':' or the path). */
static int parse_name(const char *key, const char *url, const char *a, const char *p,
		      const char **end, char *err, size_t errlen)
{
	const char *e, *last = a;

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
	*end = e;
	return 0;
}

/* ":PORT" from e up to the path at p, if there is one. */
static int parse_port(const char *key, const char *url, const char *e, const char *p,
		      struct fleet_url *u, char *err, size_t errlen)
{
	const char *d = e + 1;
	unsigned long port;

	if (e == p)
		return 0;
	if (*e != ':' || d == p || (size_t)(p - d) > 5 ||
	    strspn(d, "0123456789") != (size_t)(p - d))
		URL_BAD("%s=%s: want HOST:PORT with a port number after the ':'", key, url);
	port = strtoul(d, NULL, 10);
	if (port < 1 || port > 65535)
		URL_BAD("%s=%s: port %lu is not 1 to 65535", key, url, port);
	u->port = (unsigned)port;
	return 0;
}

int fleet_url_parse(const char *key, const char *url, bool need_scheme, bool has_ca,
		    struct fleet_url *u, char *err, size_t errlen)
{
	const char *a, *p, *e;
	int r;

	memset(u, 0, sizeof(*u));
	if ((r = refuse_specials(key, url, err, errlen)) < 0 ||
	    (r = parse_scheme(key, url, need_scheme, has_ca, u, &a, err, errlen)) < 0)
		return r;
	/* the authority: up to the path */
	p = a + strcspn(a, "/");
	r = *a == '[' ? parse_ipv6(key, url, a, p, &e, err, errlen)
		      : parse_name(key, url, a, p, &e, err, errlen);
	if (r < 0)
		return r;
	if ((size_t)(e - a) >= sizeof(u->host))
		URL_BAD("%s=%s: the host name is too long", key, url);
	snprintf(u->host, sizeof(u->host), "%.*s", (int)(e - a), a);
	if ((r = parse_port(key, url, e, p, u, err, errlen)) < 0)
		return r;
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
