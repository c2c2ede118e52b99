/* SPDX-License-Identifier: GPL-2.0-only */
/* What the kernel tells rerandd: oops/BUG/WARN records in /dev/kmsg, taint
 * bits, and the boot id.  The parsers are pure so they can be tested. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "rerandd.h"

static bool starts(const char *s, size_t n, const char *prefix)
{
	size_t l = strlen(prefix);
	return n >= l && !memcmp(s, prefix, l);
}

enum rr_kmsg_kind watch_kmsg_classify(const char *rec, size_t len)
{
	const char *semi, *text, *end;
	unsigned long prio = 0;
	size_t i = 0;

	/* "prio,seq,usec,flags[,...];text\n[ KEY=value\n]..." */
	while (i < len && i < 12 && isdigit((unsigned char)rec[i]))
		prio = prio * 10 + (unsigned long)(rec[i++] - '0');
	if (!i || i >= len || rec[i] != ',')
		return RR_KMSG_NONE;
	if (prio >> 3)                  /* facility 0 (kernel) only */
		return RR_KMSG_NONE;
	semi = memchr(rec, ';', len);
	if (!semi)
		return RR_KMSG_NONE;
	text = semi + 1;
	end = memchr(text, '\n', len - (size_t)(text - rec));
	if (!end)
		end = rec + len;
	size_t n = (size_t)(end - text);
	if (starts(text, n, "Oops:") || starts(text, n, "general protection fault") ||
	    starts(text, n, "Kernel panic"))
		return RR_KMSG_OOPS;
	if (starts(text, n, "BUG:") || starts(text, n, "kernel BUG at"))
		return RR_KMSG_BUG;
	if (starts(text, n, "WARNING: CPU:") || starts(text, n, "WARNING: at ") ||
	    starts(text, n, "------------[ cut here ]------------"))
		return RR_KMSG_WARN;
	return RR_KMSG_NONE;
}

int watch_parse_taint(const char *s, size_t len, uint64_t *ret)
{
	uint64_t v = 0;
	size_t i = 0;

	while (i < len && isspace((unsigned char)s[i]))
		i++;
	if (i == len || !isdigit((unsigned char)s[i]))
		return -EINVAL;
	for (; i < len && isdigit((unsigned char)s[i]); i++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	while (i < len && isspace((unsigned char)s[i]))
		i++;
	if (i != len)
		return -EINVAL;
	*ret = v;
	return 0;
}

enum rr_kmsg_kind watch_kmsg_drain(int fd)
{
	enum rr_kmsg_kind worst = RR_KMSG_NONE;
	char rec[8192];

	for (unsigned guard = 0; guard < 100000; guard++) {
		ssize_t n = read(fd, rec, sizeof(rec));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EPIPE)     /* overwritten records: go on */
			continue;
		if (n <= 0)
			break;
		enum rr_kmsg_kind k = watch_kmsg_classify(rec, (size_t)n);
		if (k > worst)
			worst = k;
	}
	return worst;
}

/* procfs reports size 0 in stat(): rr_read_text reads to EOF. */
int watch_read_taint(const char *path, uint64_t *ret)
{
	_cleanup_free_ char *text = NULL;
	int r = rr_read_text(path, RR_SYSFS_MAX, &text, NULL);

	if (r < 0)
		return r;
	return watch_parse_taint(text, strlen(text), ret);
}

int watch_read_boot_id(const char *path, char ret[RR_BOOT_ID])
{
	_cleanup_free_ char *text = NULL;
	size_t l = 0;
	int r = rr_read_text(path, RR_SYSFS_MAX, &text, NULL);

	if (r < 0)
		return r;
	while (isxdigit((unsigned char)text[l]) || text[l] == '-')
		l++;
	if (l < 8 || l >= RR_BOOT_ID || (text[l] && text[l] != '\n'))
		return -EINVAL;
	memcpy(ret, text, l);
	ret[l] = 0;
	return 0;
}

int watch_read_btime(const char *path, time_t now, time_t *ret)
{
	_cleanup_free_ char *text = NULL;
	char *p;
	long long v;
	int r = rr_read_text(path, 1u << 20, &text, NULL);

	if (r < 0)
		return r;
	p = strstr(text, "\nbtime ");
	p = p ? p + 1 : !strncmp(text, "btime ", 6) ? text : NULL;
	v = p ? strtoll(p + 6, NULL, 10) : 0;
	if (v <= 0 || v > (long long)now)
		return -EINVAL;
	*ret = (time_t)v;
	return 0;
}
