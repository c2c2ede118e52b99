/* SPDX-License-Identifier: GPL-2.0-only */
/* Which kernel a systemd-boot machine is running: the LoaderEntrySelected
 * EFI variable names a Boot Loader Specification entry, type #1
 * (loader/entries/ID.conf: its linux or efi line) or type #2
 * (EFI/Linux/ID.efi, a UKI), on the ESP or the XBOOTLDR partition. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "rerandd.h"
#include "uki.h"

#define ENTRY_FILE_MAX  (64u << 10)   /* a type #1 entry is a few lines */
#define EFIVAR_MAX      4096
#define DIR_ENTRIES_MAX 4096          /* bounds the scan of a directory */

int bootloader_efivar_string(const uint8_t *buf, size_t len, char *out, size_t size,
			     const char *name, struct rr_err *e)
{
	size_t n = 0;

	/* efivarfs: a 32-bit attribute word, then the data: UTF-16LE. */
	if (len < 6)
		return rr_errf(e, EINVAL, "%s: %zu bytes: too short for an EFI string variable",
			       name, len);
	if ((len - 4) % 2)
		return rr_errf(e, EINVAL, "%s: odd length %zu: not UTF-16", name, len - 4);
	for (size_t i = 4; i + 1 < len; i += 2) {
		unsigned u = buf[i] | (unsigned)buf[i + 1] << 8;

		if (!u)
			break;
		/* An entry id is a file name on a FAT file system, written by
		 * the boot loader; only printable ASCII, and no separator,
		 * is taken as one. */
		if (u < 0x20 || u > 0x7e || u == '/' || u == '\\')
			return rr_errf(e, EINVAL, "%s: character U+%04X at %zu: not an entry id rerand "
				       "takes (printable ASCII, no path separator)", name, u, (i - 4) / 2);
		if (n + 1 >= size)
			return rr_errf(e, ENAMETOOLONG, "%s: entry id longer than %zu characters",
				       name, size - 1);
		out[n++] = (char)u;
	}
	out[n] = 0;
	if (!n || !strcmp(out, ".") || !strcmp(out, ".."))
		return rr_errf(e, EINVAL, "%s: empty entry id", name);
	return 0;
}

/* An entry value that names a file on the entry's partition: relative to
 * its root, '/' separated (a leading '/' is optional, '\' is taken as '/'
 * as systemd-boot does); no "..", no control characters. */
static int entry_path(const char *v, size_t n, char *out, size_t size, const char *name,
		      unsigned line, struct rr_err *e)
{
	size_t o = 0;

	if (!n)
		return rr_errf(e, EINVAL, "%s:%u: empty path", name, line);
	if (n + 2 > size)
		return rr_errf(e, ENAMETOOLONG, "%s:%u: path longer than %zu bytes", name, line,
			       size - 2);
	if (*v != '/' && *v != '\\')
		out[o++] = '/';
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)v[i];
		if (ch < 0x20 || ch == 0x7f)
			return rr_errf(e, EINVAL, "%s:%u: control character in a path", name, line);
		out[o++] = ch == '\\' ? '/' : (char)ch;
	}
	out[o] = 0;
	for (const char *p = out; (p = strstr(p, "..")); p += 2)
		if (p[-1] == '/' && (p[2] == '/' || !p[2]))
			return rr_errf(e, EINVAL, "%s:%u: \"..\" in a path", name, line);
	return 0;
}

int bootloader_parse_entry(const char *text, size_t len, const char *name,
			   struct rr_bls_entry *ret, struct rr_err *e)
{
	struct rr_bls_entry be = { 0 };
	size_t pos = 0;
	unsigned line = 0;
	int r;

	while (pos < len) {
		const char *l = text + pos, *nl = memchr(l, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - l) : len - pos, k = 0, v;

		pos += n + (nl ? 1 : 0);
		line++;
		if (memchr(l, 0, n))
			return rr_errf(e, EINVAL, "%s:%u: NUL byte: not a text entry", name, line);
		while (n && (l[n - 1] == '\r' || l[n - 1] == ' ' || l[n - 1] == '\t'))
			n--;
		while (k < n && (l[k] == ' ' || l[k] == '\t'))
			k++;
		l += k;
		n -= k;
		if (!n || *l == '#')
			continue;
		/* "key value": the key up to the first blank */
		for (k = 0; k < n && l[k] != ' ' && l[k] != '\t'; k++)
			;
		for (v = k; v < n && (l[v] == ' ' || l[v] == '\t'); v++)
			;
		if (k == 5 && !memcmp(l, "linux", 5)) {
			r = entry_path(l + v, n - v, be.linux_path, sizeof(be.linux_path), name, line, e);
		} else if (k == 3 && !memcmp(l, "efi", 3)) {
			r = entry_path(l + v, n - v, be.efi_path, sizeof(be.efi_path), name, line, e);
		} else if (k == 6 && !memcmp(l, "initrd", 6)) {
			/* the first is kept; how many there are decides */
			char p[RR_PATH];
			r = entry_path(l + v, n - v, p, sizeof(p), name, line, e);
			if (r == 0 && be.nr_initrd++ == 0)
				snprintf(be.initrd, sizeof(be.initrd), "%s", p);
		} else {
			continue;   /* title, options, version, ...: not rerand's */
		}
		if (r < 0)
			return r;
	}
	if (!*be.linux_path && !*be.efi_path)
		return rr_errf(e, ENOEXEC, "%s: no linux or efi line: not an entry that boots a kernel",
			       name);
	*ret = be;
	return 0;
}

/* The id systemd-boot gives a file: its name in lower case, without the
 * boot counter ("+LEFT[-DONE]" before the suffix) that it renames as it
 * counts tries, so that the entry matches before and after a rename. */
int bootloader_entry_id(const char *file, char *out, size_t size)
{
	const char *dot = strrchr(file, '.'), *plus = strrchr(file, '+');
	size_t n = strlen(file), cut = dot ? (size_t)(dot - file) : 0;

	if (!dot || n + 1 > size)
		return -EINVAL;
	if (plus && plus < dot) {
		const char *p = plus + 1;
		bool ok = isdigit((unsigned char)*p);

		while (isdigit((unsigned char)*p))
			p++;
		if (ok && *p == '-') {
			ok = isdigit((unsigned char)*++p);
			while (isdigit((unsigned char)*p))
				p++;
		}
		if (ok && p == dot)
			cut = (size_t)(plus - file);
	}
	for (size_t i = 0; i < cut; i++)
		out[i] = (char)tolower((unsigned char)file[i]);
	for (size_t i = 0; dot[i]; i++)
		out[cut + i] = (char)tolower((unsigned char)dot[i]);
	out[cut + strlen(dot)] = 0;
	return 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcasecmp(s + n - m, suffix);
}

/* The file in dir whose entry id is want: its name in out.  1 found. */
static int find_in(const char *dir, const char *want, char *out, size_t size)
{
	char id[256];
	struct dirent *de;
	unsigned seen = 0;
	int found = 0;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while (!found && seen++ < DIR_ENTRIES_MAX && (de = readdir(d))) {
		if (de->d_name[0] == '.' || bootloader_entry_id(de->d_name, id, sizeof(id)) < 0 ||
		    strcmp(id, want) || strlen(de->d_name) >= size)
			continue;
		snprintf(out, size, "%s", de->d_name);
		found = 1;
	}
	closedir(d);
	return found;
}

static bool regular(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Type #1 entry file at path on the partition mounted at root. */
static int from_type1(const char *root, const char *path, struct rr_boot_entry *ret,
		      struct rr_err *e)
{
	_cleanup_free_ uint8_t *buf = NULL;
	struct rr_bls_entry be;
	size_t len;
	int r = rr_read_file(path, ENTRY_FILE_MAX, &buf, &len, e);

	if (r < 0)
		return r;
	r = bootloader_parse_entry((const char *)buf, len, path, &be, e);
	if (r < 0)
		return r;
	/* systemd-boot boots "linux" when both are there */
	if (snprintf(ret->kernel, sizeof(ret->kernel), "%s%s", root,
		     *be.linux_path ? be.linux_path : be.efi_path) >= (int)sizeof(ret->kernel))
		return rr_errf(e, ENAMETOOLONG, "%s: its kernel's path under %s is longer than %zu bytes",
			       path, root, sizeof(ret->kernel) - 1);
	if (!regular(ret->kernel))
		return rr_errf(e, ENOENT, "%s: its kernel %s is not there", path, ret->kernel);
	if (be.nr_initrd > 1)
		return rr_errf(e, E2BIG, "%s: %u initrd lines; rerand load takes one initrd: set "
			       "Initrd= in [Stage] (a file holding them concatenated)", path, be.nr_initrd);
	if (be.nr_initrd) {
		if (snprintf(ret->initrd, sizeof(ret->initrd), "%s%s", root, be.initrd) >=
		    (int)sizeof(ret->initrd))
			return rr_errf(e, ENAMETOOLONG, "%s: its initrd's path under %s is longer than "
				       "%zu bytes", path, root, sizeof(ret->initrd) - 1);
		if (!regular(ret->initrd))
			return rr_errf(e, ENOENT, "%s: its initrd %s is not there", path, ret->initrd);
	}
	return 0;
}

bool bootloader_is_uki(const char *path)
{
	uint8_t buf[64 << 10];
	ssize_t n;
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	/* the PE headers and section table sit at the front */
	n = read(fd, buf, sizeof(buf));
	return n > 0 && rr_uki_probe(buf, (size_t)n);
}

bool bootloader_selected(const struct rr_config *c)
{
	return *c->loader_entry_selected && access(c->loader_entry_selected, F_OK) == 0;
}

int bootloader_find(const struct rr_config *c, struct rr_boot_entry *ret, struct rr_err *e)
{
	char sel[200];
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len;
	int r;

	if (!*c->loader_entry_selected)
		return 0;
	r = rr_read_file(c->loader_entry_selected, EFIVAR_MAX, &buf, &len, NULL);
	if (r == -ENOENT)
		return 0;          /* not booted by systemd-boot (or no EFI) */
	if (r < 0)
		return rr_errf(e, -r, "%s: cannot read: %s", c->loader_entry_selected, strerror(-r));
	r = bootloader_efivar_string(buf, len, sel, sizeof(sel), c->loader_entry_selected, e);
	if (r < 0)
		return r;
	return bootloader_find_id(c, sel, c->loader_entry_selected, "this boot's entry", ret, e);
}

int bootloader_find_id(const struct rr_config *c, const char *sel, const char *from,
		       const char *what, struct rr_boot_entry *ret, struct rr_err *e)
{
	char want[256], roots[RR_PATH], name[256], path[RR_PATH * 2 + 300];
	struct rr_boot_entry be = { 0 };
	char *save = NULL, *root;
	bool uki;
	int r;

	if (bootloader_entry_id(sel, want, sizeof(want)) < 0 ||
	    (!(uki = ends_with(want, ".efi")) && !ends_with(want, ".conf")))
		return rr_errf(e, ENOEXEC, "%s: %s \"%s\" is not a Boot Loader "
			       "Specification entry (loader/entries/*.conf or EFI/Linux/*.efi): set "
			       "Kernel= in [Stage]", from, what, sel);
	snprintf(be.id, sizeof(be.id), "%s", sel);
	snprintf(roots, sizeof(roots), "%s", c->boot_loader_roots);
	for (root = strtok_r(roots, " \t", &save); root; root = strtok_r(NULL, " \t", &save)) {
		snprintf(path, sizeof(path), "%s/%s", root, uki ? "EFI/Linux" : "loader/entries");
		if (!find_in(path, want, name, sizeof(name)))
			continue;
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%s", name);
		if (uki) {
			/* a cut path would name another file, or none */
			if (snprintf(be.kernel, sizeof(be.kernel), "%s", path) >= (int)sizeof(be.kernel))
				return rr_errf(e, ENAMETOOLONG, "%s: path longer than %zu bytes", path,
					       sizeof(be.kernel) - 1);
		} else {
			r = from_type1(root, path, &be, e);
			if (r < 0)
				return r;
		}
		be.uki = bootloader_is_uki(be.kernel);
		if (uki && !be.uki)
			return rr_errf(e, ENOEXEC, "%s: not a unified kernel image (no .linux section)",
				       be.kernel);
		*ret = be;
		return 1;
	}
	return rr_errf(e, ENOENT, "%s names %s \"%s\", but no %s under %s holds it "
		       "(is the ESP mounted?): set Kernel= in [Stage]", from, what, sel,
		       uki ? "EFI/Linux" : "loader/entries", c->boot_loader_roots);
}
