/* SPDX-License-Identifier: GPL-2.0-only */
/* What the kernel tells rerandd: oops/BUG/WARN records in /dev/kmsg, taint
 * bits, and the boot id.  The parsers are pure so they can be tested. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static ssize_t read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;

	if (fd < 0)
		return -errno;
	while (got < cap - 1) {
		ssize_t n = read(fd, buf + got, cap - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int r = -errno;
			close(fd);
			return r;
		}
		if (!n)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = 0;
	return (ssize_t)got;
}

int watch_read_taint(const char *path, uint64_t *ret)
{
	char buf[64];
	ssize_t n = read_small(path, buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	return watch_parse_taint(buf, (size_t)n, ret);
}

int watch_read_boot_id(const char *path, char ret[RR_BOOT_ID])
{
	char buf[RR_BOOT_ID + 8];
	ssize_t n = read_small(path, buf, sizeof(buf));
	size_t l = 0;

	if (n < 0)
		return (int)n;
	while (l < (size_t)n && (isxdigit((unsigned char)buf[l]) || buf[l] == '-'))
		l++;
	if (l < 8 || l >= RR_BOOT_ID)
		return -EINVAL;
	memcpy(ret, buf, l);
	ret[l] = 0;
	return 0;
}
