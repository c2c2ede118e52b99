/* SPDX-License-Identifier: GPL-2.0-only */
/* Readers for memory maps a user can find or copy: /sys/firmware/memmap (live
 * or saved), /proc/iomem and dmesg's e820 table; see memmap_src.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "kernel.h"
#include "memmap_src.h"

const char *rr_msrc_format_name(enum rr_msrc_format f)
{
	switch (f) {
	case RR_MSRC_SYSFS: return "sysfs";
	case RR_MSRC_IOMEM: return "iomem";
	case RR_MSRC_E820:  return "e820";
	}
	return "unknown";
}

/* Inclusive end to exclusive, saturating: a range ending at the very top of
 * the address space loses its last byte rather than wrapping to 0. */
static uint64_t excl_end(uint64_t incl)
{
	return incl == UINT64_MAX ? UINT64_MAX : incl + 1;
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static unsigned hex_val(char c)
{
	if (c >= '0' && c <= '9')
		return (unsigned)(c - '0');
	if (c >= 'a' && c <= 'f')
		return (unsigned)(c - 'a' + 10);
	return (unsigned)(c - 'A' + 10);
}

/* Hex digits at s[*pos..n), an optional "0x" first.  At least one digit; a
 * value above 64 bits is refused rather than truncated. */
static bool parse_hex(const char *s, size_t n, size_t *pos, uint64_t *ret)
{
	size_t i = *pos, digits = 0;
	uint64_t v = 0;

	if (i + 1 < n && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X') &&
	    i + 2 < n && is_hex(s[i + 2]))
		i += 2;
	for (; i < n && is_hex(s[i]); i++, digits++) {
		if (v >> 60)
			return false;
		v = v << 4 | hex_val(s[i]);
	}
	if (!digits)
		return false;
	*pos = i;
	*ret = v;
	return true;
}

static size_t skip_blanks(const char *s, size_t n, size_t i)
{
	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	return i;
}

/* Length of s[0..n) without trailing blanks, CR and LF. */
static size_t trim_len(const char *s, size_t n)
{
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		n--;
	return n;
}

static bool word_is(const char *s, size_t n, const char *w)
{
	size_t wl = strlen(w);

	return n == wl && memcmp(s, w, wl) == 0;
}

/* Where needle first occurs in s[0..n), or -1. */
static long find(const char *s, size_t n, const char *needle)
{
	size_t nl = strlen(needle), i;

	if (nl > n)
		return -1;
	for (i = 0; i + nl <= n; i++)
		if (memcmp(s + i, needle, nl) == 0)
			return (long)i;
	return -1;
}

/* Line iteration over a bounded buffer. */
struct lines {
	const char *buf;
	size_t len, pos;
	unsigned lineno;
};

static bool next_line(struct lines *l, const char **ret, size_t *ret_len)
{
	const char *nl;

	if (l->pos >= l->len)
		return false;
	nl = memchr(l->buf + l->pos, '\n', l->len - l->pos);
	*ret = l->buf + l->pos;
	*ret_len = nl ? (size_t)(nl - (l->buf + l->pos)) : l->len - l->pos;
	l->pos += *ret_len + (nl ? 1 : 0);
	l->lineno++;
	return true;
}

static void info_add(struct rr_msrc_info *info, struct rr_memmap *m, uint64_t s, uint64_t e,
		     bool ram)
{
	info->nr_entries++;
	/* An empty "usable" entry (old dmesg format, start == end) holds no
	 * RAM: counting it would let a map with no RAM pass. */
	if (!ram || s >= e)
		return;
	info->nr_ram++;
	info->ram_bytes += e - s;
	rr_memmap_add_ram(m, s, e);
}

/* ---- /proc/iomem -------------------------------------------------------- */

int rr_msrc_parse_iomem(const char *buf, size_t len, const char *name,
			struct rr_memmap *m, struct rr_msrc_info *ret, struct rr_err *e)
{
	struct lines l = { .buf = buf, .len = len };
	struct rr_msrc_info info = { .format = RR_MSRC_IOMEM };
	bool nonzero = false;
	const char *s;
	size_t n;

	while (next_line(&l, &s, &n)) {
		uint64_t start, end;
		size_t i = 0;

		n = trim_len(s, n);
		if (n == 0)
			continue;
		/* Nested lines (indented) describe parts of a top-level
		 * range: drivers, the kernel's own sections.  Only the top
		 * level says what the memory is. */
		if (s[0] == ' ' || s[0] == '\t')
			continue;
		if (!parse_hex(s, n, &i, &start) || i >= n || s[i] != '-')
			goto bad;
		i++;
		if (!parse_hex(s, n, &i, &end))
			goto bad;
		i = skip_blanks(s, n, i);
		if (i >= n || s[i] != ':')
			goto bad;
		i = skip_blanks(s, n, i + 1);
		if (end < start)
			return rr_errf(e, EINVAL, "%s: line %u: range ends before it starts", name,
				       l.lineno);
		nonzero |= end != 0;
		info_add(&info, m, start, excl_end(end), word_is(s + i, n - i, "System RAM"));
		continue;
bad:
		return rr_errf(e, EINVAL, "%s: line %u: not a /proc/iomem line "
			       "(want \"START-END : NAME\")", name, l.lineno);
	}
	if (info.nr_entries == 0)
		return rr_errf(e, EINVAL, "%s: no /proc/iomem ranges in it", name);
	if (!nonzero)
		return rr_errf(e, EPERM, "%s: every range reads 00000000-00000000: /proc/iomem "
			       "was read without CAP_SYS_ADMIN (copy it as root)", name);
	if (info.nr_ram == 0)
		return rr_errf(e, EINVAL, "%s: no top-level \"System RAM\" range", name);
	*ret = info;
	return 0;
}

/* ---- dmesg e820 --------------------------------------------------------- */

/*
 * One dmesg line.  Returns 1 with an entry, 0 if the line is not a table
 * line, -1 if it claims to be one but does not parse.  Two shapes:
 *   "BIOS-e820: [mem 0x0000000000100000-0x000000003ffdffff] usable"  (3.x+,
 *   also "e820: [mem ...]" in the tables some kernels print), end inclusive;
 *   "BIOS-e820: 0000000000100000 - 000000003ffe0000 (usable)"  (2.6), end
 *   exclusive.
 * "e820: update [mem ...]" and friends have a word before "[mem": not the
 * firmware's table, so not matched.
 */
static int e820_line(const char *s, size_t n, uint64_t *rs, uint64_t *re, bool *ram)
{
	long at = find(s, n, "e820: [mem ");
	size_t i;

	if (at >= 0) {
		i = (size_t)at + strlen("e820: [mem ");
		if (!parse_hex(s, n, &i, rs) || i >= n || s[i] != '-')
			return -1;
		i++;
		if (!parse_hex(s, n, &i, re) || i >= n || s[i] != ']' || *re < *rs)
			return -1;
		i = skip_blanks(s, n, i + 1);
		*re = excl_end(*re);
		*ram = word_is(s + i, n - i, "usable");
		return 1;
	}
	at = find(s, n, "BIOS-e820: ");
	if (at < 0)
		return 0;
	i = skip_blanks(s, n, (size_t)at + strlen("BIOS-e820: "));
	if (!parse_hex(s, n, &i, rs))
		return -1;
	i = skip_blanks(s, n, i);
	if (i >= n || s[i] != '-')
		return -1;
	i = skip_blanks(s, n, i + 1);
	if (!parse_hex(s, n, &i, re) || *re < *rs)
		return -1;
	i = skip_blanks(s, n, i);
	if (i >= n || s[i] != '(' || s[n - 1] != ')')
		return -1;
	*ram = word_is(s + i + 1, n - i - 2, "usable");
	return 1;
}

int rr_msrc_parse_e820(const char *buf, size_t len, const char *name,
		       struct rr_memmap *m, struct rr_msrc_info *ret, struct rr_err *e)
{
	struct lines l = { .buf = buf, .len = len };
	struct rr_msrc_info info = { .format = RR_MSRC_E820 };
	unsigned headers = 0;
	const char *s;
	size_t n;

	while (next_line(&l, &s, &n)) {
		uint64_t start, end;
		bool ram;
		int r;

		n = trim_len(s, n);
		if (find(s, n, "efi: EFI v") >= 0)
			info.firmware_hint = RR_FW_UEFI;
		/* A second table header is a second boot pasted in (or the
		 * kernel after a kexec): the first boot's table is the one. */
		if (find(s, n, "BIOS-provided physical RAM map") >= 0 && ++headers > 1)
			break;
		r = e820_line(s, n, &start, &end, &ram);
		if (r < 0)
			return rr_errf(e, EINVAL, "%s: line %u: malformed e820 line (want "
				       "\"BIOS-e820: [mem 0xSTART-0xEND] TYPE\")", name, l.lineno);
		if (r > 0)
			info_add(&info, m, start, end, ram);
	}
	if (info.nr_entries == 0)
		return rr_errf(e, EINVAL, "%s: no e820 lines (\"BIOS-e820: [mem ...] usable\")", name);
	if (info.nr_ram == 0)
		return rr_errf(e, EINVAL, "%s: the e820 table has no usable entry", name);
	*ret = info;
	return 0;
}

int rr_msrc_parse_text(const char *buf, size_t len, const char *name,
		       struct rr_memmap *m, struct rr_msrc_info *ret, struct rr_err *e)
{
	struct lines l = { .buf = buf, .len = len };
	const char *s;
	size_t n;

	/* Any e820 table line makes it a dmesg copy: /proc/iomem never says
	 * "e820", and dmesg is full of lines that are not table lines. */
	while (next_line(&l, &s, &n)) {
		uint64_t a, b;
		bool ram;

		if (e820_line(s, trim_len(s, n), &a, &b, &ram) != 0)
			return rr_msrc_parse_e820(buf, len, name, m, ret, e);
	}
	return rr_msrc_parse_iomem(buf, len, name, m, ret, e);
}

/* ---- /sys/firmware/memmap ----------------------------------------------- */

int rr_msrc_sysfs_entry(const char *start, size_t start_len, const char *end, size_t end_len,
			const char *type, size_t type_len, const char *name,
			uint64_t *ret_start, uint64_t *ret_end, bool *ret_ram, struct rr_err *e)
{
	uint64_t s, en;
	size_t i = 0;

	start_len = trim_len(start, start_len);
	end_len = trim_len(end, end_len);
	if (!parse_hex(start, start_len, &i, &s) || i != start_len)
		return rr_errf(e, EINVAL, "%s/start: line 1: not a hex address", name);
	i = 0;
	if (!parse_hex(end, end_len, &i, &en) || i != end_len)
		return rr_errf(e, EINVAL, "%s/end: line 1: not a hex address", name);
	if (en < s)
		return rr_errf(e, EINVAL, "%s: end 0x%llx is below start 0x%llx", name,
			       (unsigned long long)en, (unsigned long long)s);
	*ret_start = s;
	*ret_end = excl_end(en);
	*ret_ram = word_is(type, trim_len(type, type_len), "System RAM");
	return 0;
}

/* A small sysfs attribute, bounded (stat() says 4096 bytes whatever it holds). */
static int read_small(const char *path, char *buf, size_t cap, size_t *ret_len, struct rr_err *e)
{
	_cleanup_free_ uint8_t *data = NULL;
	size_t len;
	int r = rr_read_file(path, RR_SYSFS_MAX, &data, &len, e);

	if (r < 0)
		return r;
	if (len >= cap)
		return rr_errf(e, EFBIG, "%s: line 1: longer than %zu bytes", path, cap - 1);
	memcpy(buf, data, len);
	*ret_len = len;
	return 0;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static int read_sysfs_tree(const char *dir, struct rr_memmap *m, struct rr_msrc_info *ret,
			   struct rr_err *e)
{
	struct rr_msrc_info info = { .format = RR_MSRC_SYSFS };
	struct dirent *de;
	DIR *d = opendir(dir);
	int r = 0;

	if (!d)
		return rr_errf(e, errno, "%s: %s%s", dir, strerror(errno),
			       errno == ENOENT && !strcmp(dir, RR_MSRC_LIVE)
			       ? " (kernel without CONFIG_FIRMWARE_MEMMAP? pass --memmap)" : "");
	while ((de = readdir(d))) {
		char base[4096], path[4200], sb[64], eb[64], tb[128];
		size_t sl, el, tl;
		uint64_t s, en;
		bool ram;

		if (!all_digits(de->d_name))
			continue;
		if (info.nr_entries >= RR_MSRC_MAX_ENTRIES) {
			r = rr_errf(e, E2BIG, "%s: more than %u entries", dir, RR_MSRC_MAX_ENTRIES);
			break;
		}
		snprintf(base, sizeof(base), "%s/%s", dir, de->d_name);
		snprintf(path, sizeof(path), "%s/start", base);
		if ((r = read_small(path, sb, sizeof(sb), &sl, e)) < 0)
			break;
		snprintf(path, sizeof(path), "%s/end", base);
		if ((r = read_small(path, eb, sizeof(eb), &el, e)) < 0)
			break;
		snprintf(path, sizeof(path), "%s/type", base);
		if ((r = read_small(path, tb, sizeof(tb), &tl, e)) < 0)
			break;
		if ((r = rr_msrc_sysfs_entry(sb, sl, eb, el, tb, tl, base, &s, &en, &ram, e)) < 0)
			break;
		info_add(&info, m, s, en, ram);
	}
	closedir(d);
	if (r < 0)
		return r;
	if (info.nr_entries == 0)
		return rr_errf(e, ENOENT, "%s: no <n>/{start,end,type} entries", dir);
	if (info.nr_ram == 0)
		return rr_errf(e, EINVAL, "%s: no \"System RAM\" entry", dir);
	*ret = info;
	return 0;
}

int rr_msrc_read(const char *path, struct rr_memmap *m, struct rr_msrc_info *ret,
		 struct rr_err *e)
{
	struct stat st;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	if (!path)
		path = RR_MSRC_LIVE;
	if (stat(path, &st) < 0)
		return rr_errf(e, errno, "%s: %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return read_sysfs_tree(path, m, ret, e);
	/* /proc/iomem reports size 0 in stat: rr_read_file reads to EOF */
	r = rr_read_file(path, RR_MSRC_MAX_TEXT, (uint8_t **)&buf, &len, e);
	if (r < 0)
		return r;
	return rr_msrc_parse_text(buf, len, path, m, ret, e);
}
