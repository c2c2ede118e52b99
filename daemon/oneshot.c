/* SPDX-License-Identifier: GPL-2.0-only */
/* A one-shot boot loader choice that a kexec boot consumed (issue 38).
 * GRUB clears grubenv's next_entry as it boots it (00_header: `set
 * next_entry=`, `save_env next_entry`), systemd-boot deletes
 * LoaderEntryOneShot as it boots it; a kexec into the image staged from
 * that choice runs neither, so the choice would still be taken by the next
 * firmware boot.  rerandd clears it itself, once the kexec boot into it is
 * confirmed (confirm.c): a boot that fails, hangs or never comes goes back
 * through the firmware, and the boot loader then takes the choice as it
 * would have without rerand.  These are the parts that need no daemon. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cleanup.h"
#include "rerandd.h"

#define GRUB_ENV_MAX (64u << 10)
#define EFIVAR_MAX   4096

static const char *const names[] = { "none", "grub", "systemd-boot" };
static const char *const texts[] = { "no one-shot entry", "GRUB next_entry",
				     "systemd-boot LoaderEntryOneShot" };

const char *oneshot_kind_name(enum rr_oneshot_kind k)
{
	return (unsigned)k <= RR_OS_SDBOOT ? names[k] : names[0];
}

const char *oneshot_kind_text(enum rr_oneshot_kind k)
{
	return (unsigned)k <= RR_OS_SDBOOT ? texts[k] : texts[0];
}

int oneshot_kind_parse(const char *name, enum rr_oneshot_kind *ret)
{
	for (unsigned k = RR_OS_NONE; k <= RR_OS_SDBOOT; k++)
		if (!strcmp(name, names[k])) {
			*ret = k;
			return 0;
		}
	return -EINVAL;
}

void oneshot_file(const struct rr_config *c, enum rr_oneshot_kind k, char *out, size_t size)
{
	const char *sel = c->loader_entry_selected, *base, *guid;

	*out = 0;
	if (k == RR_OS_GRUB) {
		snprintf(out, size, "%s", c->grub_env);
		return;
	}
	if (k != RR_OS_SDBOOT || !*sel)
		return;
	/* beside LoaderEntrySelected, with its vendor GUID (bootnext.c) */
	base = strrchr(sel, '/');
	guid = strchr(base ? base : sel, '-');
	if (guid)
		snprintf(out, size, "%.*sLoaderEntryOneShot%s", base ? (int)(base - sel + 1) : 0, sel,
			 guid);
}

int oneshot_still(const struct rr_config *c, enum rr_oneshot_kind k, const char *value,
		  char *now, size_t nowlen, struct rr_err *e)
{
	char path[RR_PATH + 64];
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len;
	int r;

	*now = 0;
	oneshot_file(c, k, path, sizeof(path));
	if (!*path)
		return rr_errf(e, ENOENT, "%s: no file to read it from", oneshot_kind_text(k));
	r = rr_read_file(path, k == RR_OS_GRUB ? GRUB_ENV_MAX : EFIVAR_MAX, &buf, &len, NULL);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return rr_errf(e, -r, "%s: cannot read: %s", path, strerror(-r));
	if (k == RR_OS_GRUB) {
		struct rr_grub_env env;

		if ((r = grub_env_parse((const char *)buf, len, path, &env, e)) < 0)
			return r;
		snprintf(now, nowlen, "%s", env.next_entry);
	} else {
		/* systemd deletes a variable it empties; an empty one is unset */
		if (len <= 6 && !(len == 6 && (buf[4] || buf[5])))
			return 0;
		if ((r = bootloader_efivar_string(buf, len, now, nowlen, path, e)) < 0)
			return r;
	}
	return *now && !strcmp(now, value);
}

int oneshot_delete_efivar(const char *path, struct rr_err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), flags = 0, r = 0;

	if (fd < 0)
		return errno == ENOENT ? 0 : rr_errf(e, errno, "%s: %s", path, strerror(errno));
	/* efivarfs creates variables outside its allow list immutable (to
	 * guard against an accidental rm); systemd lifts the flag before it
	 * removes one (efi_set_variable), and so does rerandd.  A file system
	 * without the flag (a test's directory) says ENOTTY. */
	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0) {
		if (flags & FS_IMMUTABLE_FL) {
			flags &= ~FS_IMMUTABLE_FL;
			caps_immutable(true);
			if (ioctl(fd, FS_IOC_SETFLAGS, &flags) < 0)
				r = rr_errf(e, errno, "%s: cannot clear its immutable flag: %s", path,
					    strerror(errno));
			caps_immutable(false);
		}
	} else if (errno != ENOTTY && errno != EOPNOTSUPP && errno != EINVAL) {
		r = rr_errf(e, errno, "%s: cannot read its flags: %s", path, strerror(errno));
	}
	close(fd);
	if (r < 0)
		return r;
	if (unlink(path) < 0 && errno != ENOENT)
		return rr_errf(e, errno, "%s: cannot delete: %s", path, strerror(errno));
	return 0;
}
