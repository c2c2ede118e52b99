/* SPDX-License-Identifier: GPL-2.0-only */
/* The kernel the boot loader would boot next, which is the one rerandd
 * stages (issue 38): systemd-boot's one-shot entry (`systemctl reboot
 * --boot-loader-entry=`), its default (`bootctl set-default`, loader.conf's
 * `default`), else the entry this boot came from; GRUB's next_entry
 * (grub-reboot), saved_entry (grub-set-default) or GRUB_DEFAULT.  What
 * cannot be told, or is no kernel rerand can stage, is an error saying
 * why: rerandd then stages nothing and the reboot goes through the
 * firmware, which boots what the admin chose. */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "rerandd.h"

#define GRUB_CFG_MAX   (4u << 20)    /* a generated grub.cfg is tens of KiB */
#define GRUB_ENV_MAX   (64u << 10)   /* grubenv is one 1 KiB block */
#define LOADER_CONF_MAX (64u << 10)
#define EFIVAR_MAX     4096
#define DIR_ENTRIES_MAX 4096

static bool regular(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* ---- systemd-boot ------------------------------------------------------- */

/* Another of systemd-boot's variables, beside LoaderEntrySelected (same
 * directory, same vendor GUID): its entry id in out; 0 if it is not set. */
static int sdboot_var(const struct rr_config *c, const char *var, char *path, size_t plen,
		      char *out, size_t size, struct rr_err *e)
{
	const char *sel = c->loader_entry_selected, *base = strrchr(sel, '/');
	const char *guid = strchr(base ? base : sel, '-');
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len;
	int r;

	if (!guid)
		return 0;
	snprintf(path, plen, "%.*s%s%s", base ? (int)(base - sel + 1) : 0, sel, var, guid);
	r = rr_read_file(path, EFIVAR_MAX, &buf, &len, NULL);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return rr_errf(e, -r, "%s: cannot read: %s", path, strerror(-r));
	/* systemd deletes a variable it empties; an empty one is unset too */
	if (len <= 6 && !(len == 6 && (buf[4] || buf[5])))
		return 0;
	r = bootloader_efivar_string(buf, len, out, size, path, e);
	return r < 0 ? r : 1;
}

/* loader.conf's `default` (the first loader/loader.conf of BootLoaderRoots=). */
static int loader_conf_default(const struct rr_config *c, char *path, size_t plen, char *out,
			       size_t size, struct rr_err *e)
{
	char roots[RR_PATH], *save = NULL, *root;
	_cleanup_free_ char *text = NULL;
	int r;

	snprintf(roots, sizeof(roots), "%s", c->boot_loader_roots);
	for (root = strtok_r(roots, " \t", &save); root; root = strtok_r(NULL, " \t", &save)) {
		snprintf(path, plen, "%s/loader/loader.conf", root);
		if (regular(path))
			break;
	}
	if (!root)
		return 0;
	if ((r = rr_read_text(path, LOADER_CONF_MAX, &text, e)) < 0)
		return r;
	*out = 0;
	for (char *l = text, *next; l && *l; l = next) {
		next = strchr(l, '\n');
		if (next)
			*next++ = 0;
		l += strspn(l, " \t");
		if (strncmp(l, "default", 7) || (l[7] != ' ' && l[7] != '\t'))
			continue;
		l += 7 + strspn(l + 7, " \t");
		l[strcspn(l, "\r")] = 0;
		for (size_t n = strlen(l); n && (l[n - 1] == ' ' || l[n - 1] == '\t'); n--)
			l[n - 1] = 0;
		if (strlen(l) >= size)
			return rr_errf(e, ENAMETOOLONG, "%s: default longer than %zu bytes", path,
				       size - 1);
		snprintf(out, size, "%s", l);   /* systemd-boot takes the last one */
	}
	return *out ? 1 : 0;
}

/* The entry loader.conf's glob picks: of the entries that match, the one
 * that sorts last by version (kernel-install's "<machine-id>-<version>"). */
static int glob_pick(const struct rr_config *c, const char *glob, char *out, size_t size)
{
	static const char *const dirs[] = { "loader/entries", "EFI/Linux" };
	char roots[RR_PATH], *save = NULL, *root, dir[RR_PATH + 32], id[256];
	int found = 0;

	snprintf(roots, sizeof(roots), "%s", c->boot_loader_roots);
	for (root = strtok_r(roots, " \t", &save); root; root = strtok_r(NULL, " \t", &save))
		for (unsigned k = 0; k < 2; k++) {
			struct dirent *de;
			unsigned seen = 0;
			DIR *d;

			snprintf(dir, sizeof(dir), "%s/%s", root, dirs[k]);
			if (!(d = opendir(dir)))
				continue;
			while (seen++ < DIR_ENTRIES_MAX && (de = readdir(d))) {
				const char *suffix = k ? ".efi" : ".conf";
				size_t n, sl = strlen(suffix);
				char bare[256];

				if (de->d_name[0] == '.' ||
				    bootloader_entry_id(de->d_name, id, sizeof(id)) < 0)
					continue;
				n = strlen(id);
				if (n <= sl || strcmp(id + n - sl, suffix))
					continue;
				/* "debian-*" as well as "debian-*.conf" */
				snprintf(bare, sizeof(bare), "%.*s", (int)(n - sl), id);
				if (fnmatch(glob, id, FNM_CASEFOLD) && fnmatch(glob, bare, FNM_CASEFOLD))
					continue;
				if ((!found || strverscmp(id, out) > 0) && n < size) {
					memcpy(out, id, n + 1);
					found = 1;
				}
			}
			closedir(d);
		}
	return found;
}

static int sdboot_next(const struct rr_config *c, struct rr_boot_entry *ret, struct rr_err *e)
{
	char path[RR_PATH + 64], id[200], glob[200];
	int r;

	if ((r = sdboot_var(c, "LoaderEntryOneShot", path, sizeof(path), id, sizeof(id), e)) != 0) {
		if (r < 0 || (r = bootloader_find_id(c, id, path, "the one-shot entry", ret, e)) < 0)
			return r;
		ret->oneshot = RR_OS_SDBOOT;
		snprintf(ret->oneshot_value, sizeof(ret->oneshot_value), "%s", id);
		return r;
	}
	if ((r = sdboot_var(c, "LoaderEntryDefault", path, sizeof(path), id, sizeof(id), e)) != 0)
		return r < 0 ? r : bootloader_find_id(c, id, path, "the default entry", ret, e);
	if ((r = loader_conf_default(c, path, sizeof(path), glob, sizeof(glob), e)) < 0)
		return r;
	if (r && !strcmp(glob, "@saved")) {
		if ((r = sdboot_var(c, "LoaderEntryLastBooted", path, sizeof(path), id, sizeof(id),
				    e)) != 0)
			return r < 0 ? r : bootloader_find_id(c, id, path, "the saved entry", ret, e);
		return rr_errf(e, EAGAIN, "systemd-boot: loader.conf says \"default @saved\" but "
			       "LoaderEntryLastBooted is not set: cannot tell the next entry");
	}
	if (r && *glob == '@')
		return rr_errf(e, EAGAIN, "%s: \"default %s\": cannot tell the next entry", path, glob);
	if (r) {
		if (!glob_pick(c, glob, id, sizeof(id)))
			return rr_errf(e, ENOENT, "%s: \"default %s\" matches no entry under %s", path,
				       glob, c->boot_loader_roots);
		return bootloader_find_id(c, id, path, "the default entry", ret, e);
	}
	/* no default: systemd-boot sorts its entries itself; rerand does not
	 * repeat that and stages the entry this boot came from */
	return bootloader_find(c, ret, e);
}

/* ---- GRUB --------------------------------------------------------------- */

/* A GRUB path of Debian's 10_linux ("/boot/vmlinuz-X" with /boot on the
 * root file system, "/vmlinuz-X" on a /boot of its own, "/@/boot/..." on
 * a btrfs subvolume) as the file under Boot=. */
static int grub_file(const struct rr_config *c, const char *gpath, const char *what,
		     const char *title, char *out, size_t size, struct rr_err *e)
{
	const char *base = strrchr(gpath, '/');
	size_t dir;

	if (!base || !base[1])
		return rr_errf(e, ENOENT, "GRUB's next entry \"%s\": %s \"%s\" is no file", title,
			       what, gpath);
	dir = (size_t)(base - gpath);
	if (dir && !(dir >= 5 && !memcmp(base - 5, "/boot", 5)))
		return rr_errf(e, ENOEXEC, "GRUB's next entry \"%s\": %s %s is not in /boot",
			       title, what, gpath);
	if (!strcmp(base + 1, "..") || !strcmp(base + 1, "."))
		return rr_errf(e, ENOENT, "GRUB's next entry \"%s\": %s \"%s\" is no file", title,
			       what, gpath);
	if (snprintf(out, size, "%s/%s", c->boot_dir, base + 1) >= (int)size)
		return rr_errf(e, ENAMETOOLONG, "GRUB's next entry \"%s\": %s path too long", title,
			       what);
	if (!regular(out))
		return rr_errf(e, ENOENT, "GRUB's next entry \"%s\": its %s %s is not there", title,
			       what, out);
	return 0;
}

static int grub_next(const struct rr_config *c, struct rr_boot_entry *ret, struct rr_err *e)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_free_ uint8_t *envb = NULL;
	_cleanup_free_ struct rr_grub_cfg *g = calloc(1, sizeof(*g));
	struct rr_grub_env env = { 0 };
	struct rr_grub_choice ch;
	struct rr_boot_entry be = { 0 };
	const struct rr_grub_entry *en;
	size_t len;
	int r;

	if (!g)
		return rr_errf(e, ENOMEM, "%s: out of memory", c->grub_cfg);
	if ((r = rr_read_text(c->grub_cfg, GRUB_CFG_MAX, &text, e)) < 0)
		return r;
	if ((r = grub_cfg_parse(text, strlen(text), c->grub_cfg, g, e)) < 0)
		return r;
	if (*c->grub_env) {
		r = rr_read_file(c->grub_env, GRUB_ENV_MAX, &envb, &len, NULL);
		if (r < 0 && r != -ENOENT)
			return rr_errf(e, -r, "%s: cannot read: %s", c->grub_env, strerror(-r));
		if (r == 0 && (r = grub_env_parse((const char *)envb, len, c->grub_env, &env, e)) < 0)
			return r;
	}
	if ((r = grub_cfg_pick(g, &env, c->grub_cfg, &ch, e)) < 0)
		return r;
	en = &g->ent[ch.entry];
	if (strcmp(en->loader, "linux"))
		return rr_errf(e, ENOEXEC, "GRUB's next entry \"%s\" (from %s \"%s\") boots no Linux "
			       "kernel (%s): not one rerand can rerandomize", en->title, ch.how,
			       ch.spec, *en->loader ? en->loader : "no linux line");
	if (!strncmp(en->id, "osprober-", 9))
		return rr_errf(e, ENOEXEC, "GRUB's next entry \"%s\" (from %s \"%s\") is another "
			       "installed system's (os-prober): not one rerand can rerandomize",
			       en->title, ch.how, ch.spec);
	if (en->recovery)
		return rr_errf(e, ENOEXEC, "GRUB's next entry \"%s\" (from %s \"%s\") is a recovery "
			       "entry: its command line is not this boot's, which rerand would give "
			       "it", en->title, ch.how, ch.spec);
	if (en->unsure || en->path_var)
		return rr_errf(e, EAGAIN, "GRUB's next entry \"%s\": cannot tell its kernel (a linux "
			       "or initrd line under a condition, twice, or made of variables)",
			       en->title);
	if ((r = grub_file(c, en->linux_path, "kernel", en->title, be.kernel, sizeof(be.kernel),
			   e)) < 0)
		return r;
	if (en->nr_initrd > 1)
		return rr_errf(e, E2BIG, "GRUB's next entry \"%s\": %u initrd files; rerand load "
			       "takes one initrd: set Initrd= in [Stage] (a file holding them "
			       "concatenated)", en->title, en->nr_initrd);
	if (en->nr_initrd &&
	    (r = grub_file(c, en->initrd, "initrd", en->title, be.initrd, sizeof(be.initrd), e)) < 0)
		return r;
	snprintf(be.id, sizeof(be.id), "GRUB entry \"%.250s\" (%s \"%.250s\")", en->title, ch.how,
		 ch.spec);
	if (ch.oneshot) {
		be.oneshot = RR_OS_GRUB;
		snprintf(be.oneshot_value, sizeof(be.oneshot_value), "%s", env.next_entry);
	}
	*ret = be;
	return 1;
}

int bootnext_find(const struct rr_config *c, struct rr_boot_entry *ret, struct rr_err *e)
{
	if (bootloader_selected(c))
		return sdboot_next(c, ret, e);
	if (*c->grub_cfg && access(c->grub_cfg, F_OK) == 0)
		return grub_next(c, ret, e);
	return 0;
}
