/* SPDX-License-Identifier: GPL-2.0-only */
/* `rerand doctor`'s watchdog lines: is there a hardware watchdog (not
 * softdog), is its driver there before rerandd starts, and does this kernel
 * keep it counting across a kexec (watchdog.stop_on_reboot=0)?  The rest of
 * doctor is cmd_doctor.c's. */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "doctor.h"

/* Module names compare with - and _ alike, as kmod does. */
static bool same_module(const char *a, const char *b, size_t blen)
{
	size_t i;

	for (i = 0; i < blen && a[i]; i++)
		if (a[i] != b[i] && !((a[i] == '-' || a[i] == '_') && (b[i] == '-' || b[i] == '_')))
			return false;
	return i == blen && !a[i];
}

/* How the watchdog's driver is there: a module loaded now, built into the
 * running kernel, a module the kernel no longer has, or not known. */
enum wd_kind { WD_UNKNOWN, WD_LOADED, WD_BUILTIN, WD_GONE };

/* The last component of the symlink ROOT/PATH into out; false if none. */
static bool link_base(const struct doctor *d, const char *path, char *out, size_t len)
{
	char full[1024], link[1024];
	ssize_t n;
	const char *b;

	*out = 0;
	snprintf(full, sizeof(full), "%s%s", d->root, path);
	if ((n = readlink(full, link, sizeof(link) - 1)) <= 0)
		return false;
	link[n] = 0;
	b = strrchr(link, '/');
	if ((size_t)snprintf(out, len, "%s", b ? b + 1 : link) >= len)
		*out = 0;                  /* no module or driver has such a name */
	return *out != 0;
}

/* MOD (kmod's spelling, - and _ alike) is named in the running kernel's
 * modules.builtin ("kernel/drivers/watchdog/i6300esb.ko" lines): 1, 0 if
 * not, -1 when no modules.builtin can be read. */
static int builtin_lists(const struct doctor *d, const char *mod)
{
	static const char *const dirs[] = { "/lib/modules", "/usr/lib/modules", NULL };

	for (int i = 0; dirs[i]; i++) {
		char path[1024], line[512];
		_cleanup_fclose_ FILE *f = NULL;
		snprintf(path, sizeof(path), "%s%s/%s/modules.builtin", d->root, dirs[i], d->release);
		if (!(f = fopen(path, "re")))
			continue;
		while (fgets(line, sizeof(line), f)) {
			size_t l = strcspn(line, "\r\n");
			char *b;
			line[l] = 0;
			b = strrchr(line, '/');
			b = b ? b + 1 : line;
			l = strlen(b);
			if (l > 3 && !strcmp(b + l - 3, ".ko") && same_module(mod, b, l - 3))
				return 1;
		}
		return 0;
	}
	return -1;
}

/* The driver behind /sys/class/watchdog/watchdog0 (its device's driver
 * link: drv, "i6300ESB timer"), its module (the driver's module link: mod,
 * "i6300esb"; "" when there is none) and how it is there.  The kernel
 * links a driver to /sys/module/NAME whether NAME is built in or loaded:
 * a loaded module has /sys/module/NAME/initstate, a built-in one has not
 * and is named in modules.builtin.  No driver link (the device node
 * without its sysfs class entry) is not known, never "built in". */
static enum wd_kind wd_driver(const struct doctor *d, char *drv, size_t dlen, char *mod, size_t mlen)
{
	char path[1024];
	int listed;

	*mod = 0;
	if (!link_base(d, "/sys/class/watchdog/watchdog0/device/driver", drv, dlen))
		return WD_UNKNOWN;
	if (!link_base(d, "/sys/class/watchdog/watchdog0/device/driver/module", mod, mlen))
		return WD_UNKNOWN;
	snprintf(path, sizeof(path), "/sys/module/%s/initstate", mod);
	if (exists(d, path))
		return WD_LOADED;
	listed = builtin_lists(d, mod);
	if (listed > 0)
		return WD_BUILTIN;
	snprintf(path, sizeof(path), "/sys/module/%s", mod);
	if (!exists(d, path))
		return WD_GONE;
	/* in /sys/module without initstate: built in, when modules.builtin
	 * cannot say otherwise */
	return listed < 0 ? WD_BUILTIN : WD_UNKNOWN;
}

/* The modules-load.d file (or /etc/modules) that names mod, into where;
 * false if none.  Lines are module names, '#' and ';' start comments
 * (modules-load.d(5)). */
static bool modules_load_names(const struct doctor *d, const char *mod, char *where, size_t len)
{
	static const char *const dirs[] = { "/etc/modules-load.d", "/run/modules-load.d",
					    "/usr/lib/modules-load.d", "/lib/modules-load.d", NULL };
	char files[64][512];
	int nf = 0;

	for (int i = 0; dirs[i]; i++) {
		char dir[1024];
		struct dirent **list;
		int n;
		snprintf(dir, sizeof(dir), "%s%s", d->root, dirs[i]);
		if ((n = scandir(dir, &list, NULL, alphasort)) < 0)
			continue;
		for (int j = 0; j < n; j++) {
			size_t l = strlen(list[j]->d_name);
			if (nf < 64 && l > 5 && !strcmp(list[j]->d_name + l - 5, ".conf"))
				snprintf(files[nf++], sizeof(files[0]), "%s/%s", dirs[i], list[j]->d_name);
			free(list[j]);
		}
		free(list);
	}
	if (nf < 64)
		snprintf(files[nf++], sizeof(files[0]), "/etc/modules");   /* Debian's kmod */
	for (int i = 0; i < nf; i++) {
		char full[1024], line[512];
		_cleanup_fclose_ FILE *f = NULL;
		if ((size_t)snprintf(full, sizeof(full), "%s%s", d->root, files[i]) >= sizeof(full) ||
		    !(f = fopen(full, "re")))
			continue;
		while (fgets(line, sizeof(line), f)) {
			char *p = line + strspn(line, " \t");
			size_t l = strcspn(p, " \t\r\n#;");
			if (l && same_module(mod, p, l)) {
				if ((size_t)snprintf(where, len, "%s", files[i]) >= len)
					where[len - 1] = 0;
				return true;
			}
		}
	}
	return false;
}

/* The stop_on_reboot= that kmod would pass to watchdog.ko at its next load
 * (modprobe --showconfig, which applies modprobe.d's overrides and the
 * command line): its value, or "" when none. */
static void modprobe_stop_on_reboot(const struct doctor *d, char *v, size_t len)
{
	_cleanup_(pclosep) FILE *p = NULL;
	char cmd[4096], line[1024];

	*v = 0;
	if (strchr(d->root, '\''))
		return;
	if (*d->root)
		snprintf(cmd, sizeof(cmd), "modprobe --showconfig -C '%1$s/etc/modprobe.d' "
			 "-C '%1$s/run/modprobe.d' -C '%1$s/usr/lib/modprobe.d' "
			 "-C '%1$s/lib/modprobe.d' 2>/dev/null", d->root);
	else
		snprintf(cmd, sizeof(cmd), "modprobe --showconfig 2>/dev/null");
	if (!(p = popen(cmd, "re")))
		return;
	while (fgets(line, sizeof(line), p)) {
		char *w, *save = NULL;
		if (strncmp(line, "options watchdog ", 17))
			continue;
		for (w = strtok_r(line + 17, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save))
			if (!strncmp(w, "stop_on_reboot=", 15))
				snprintf(v, len, "%s", w + 15);    /* the last one wins */
	}
}

/* Is /dev/watchdog0 a hardware watchdog, and whose driver is it?  false
 * when there is none to look at further. */
static bool watchdog_device(struct doctor *d, enum wd_kind *kind, char *mod, size_t mlen)
{
	char id[128], drv[128];
	bool dev = exists(d, "/dev/watchdog0"), cls = exists(d, "/sys/class/watchdog/watchdog0");

	if (!dev && !cls) {
		say(d, L_WARN, "watchdog", "/usr/lib/rerand/watchdog-setup finds and loads this "
		    "machine's hardware watchdog driver if it has one (iTCO_wdt, sp5100_tco, i6300esb "
		    "in QEMU; the package's postinst runs it)",
		    "no /dev/watchdog0: a rerandomized boot that hangs is not reset by a watchdog");
		return false;
	}
	if (!read_line(d, "/sys/class/watchdog/watchdog0/identity", id, sizeof(id)))
		snprintf(id, sizeof(id), "unknown");
	*kind = wd_driver(d, drv, sizeof(drv), mod, mlen);
	if (!strcmp(id, "Software Watchdog")) {
		say(d, L_WARN, "watchdog", "load the machine's hardware watchdog driver before softdog "
		    "(/usr/lib/rerand/watchdog-setup), or point [Paths] Watchdog= at it",
		    "/dev/watchdog0 is softdog: it lives in the kernel's memory, so it neither "
		    "survives a kexec nor resets a hung machine");
		return false;
	}
	if (*kind == WD_LOADED)
		say(d, L_OK, "watchdog", NULL, "/dev/watchdog0: %s (%s, a loaded module)", id, mod);
	else if (*kind == WD_BUILTIN)
		say(d, L_OK, "watchdog", NULL, "/dev/watchdog0: %s (%s, built into the kernel)", id, mod);
	else if (*kind == WD_GONE) {
		char fix[256];
		snprintf(fix, sizeof(fix), "modprobe %s, or /usr/lib/rerand/watchdog-setup", mod);
		say(d, L_WARN, "watchdog", fix,
		    "/dev/watchdog0: %s: its driver is the module %s, which is not loaded (no "
		    "/sys/module/%s)", id, mod, mod);
	} else if (*mod)
		say(d, L_OK, "watchdog", NULL, "/dev/watchdog0: %s (%s: whether built in or a module "
		    "is not known)", id, mod);
	else if (*drv)
		say(d, L_OK, "watchdog", NULL, "/dev/watchdog0: %s (driver \"%s\", its module not "
		    "known)", id, drv);
	else
		say(d, L_OK, "watchdog", NULL, "/dev/watchdog0: %s (its driver not known: no "
		    "/sys/class/watchdog/watchdog0/device/driver)", id);
	return true;
}

/* Is it there before rerandd starts?  rerandd binds it into its private
 * /dev then, and does not see one that appears later. */
static void watchdog_boot(struct doctor *d, enum wd_kind kind, const char *mod)
{
	const char *seen = js_str(d->status, "watchdog");
	char where[512];

	if (seen && !strcmp(seen, "off"))
		say(d, L_INFO, "watchdog-boot", NULL, "[Comeback] KexecWatchdogSec=off: rerandd arms "
		    "no watchdog across a kexec");
	else if (seen && !strcmp(seen, "absent"))
		say(d, L_WARN, "watchdog-boot", kind != WD_BUILTIN ? "systemctl restart rerandd; and have "
		    "the driver loaded at boot: /usr/lib/rerand/watchdog-setup" : "systemctl restart rerandd",
		    "rerandd has no /dev/watchdog0: its driver was loaded after rerandd started, "
		    "and rerandd does not see a watchdog that appears later");
	else if (kind == WD_BUILTIN)
		say(d, L_OK, "watchdog-boot", NULL, "its driver is built in: there before rerandd starts");
	else if (!*mod)
		say(d, L_WARN, "watchdog-boot", "/usr/lib/rerand/watchdog-setup (the package's postinst "
		    "runs it) names the driver in /etc/modules-load.d/rerand-watchdog.conf",
		    "its driver's module is not known: whether it is there before rerandd starts "
		    "cannot be told");
	else if (modules_load_names(d, mod, where, sizeof(where)))
		say(d, L_OK, "watchdog-boot", NULL, "%s is loaded at boot by %s, before rerandd starts",
		    mod, where);
	else
		say(d, L_WARN, "watchdog-boot", "/usr/lib/rerand/watchdog-setup (the package's postinst "
		    "runs it), or name it in /etc/modules-load.d/rerand-watchdog.conf",
		    "%s is not named in modules-load.d: when udev loads it after rerandd started, "
		    "rerandd runs without it until restarted", mod);
}

/* What this kernel does with it at the kexec: the watchdog core reads
 * stop_on_reboot (0444) when a driver registers its device. */
static void watchdog_kexec(struct doctor *d)
{
	char v[32] = "", opt[32];

	if (read_line(d, "/sys/module/watchdog/parameters/stop_on_reboot", v, sizeof(v))) {
		if (!strcmp(v, "0")) {
			say(d, L_OK, "watchdog-kexec", NULL, "this kernel keeps it counting across a "
			    "kexec (watchdog.stop_on_reboot=0)");
			return;
		}
	} else if (cmdline_has(d, "watchdog.stop_on_reboot=0")) {
		say(d, L_OK, "watchdog-kexec", NULL, "booted with watchdog.stop_on_reboot=0: kept "
		    "counting across a kexec");
		return;
	}
	if (exists(d, "/sys/module/watchdog") && !exists(d, "/sys/module/watchdog/initstate")) {
		say(d, L_WARN, "watchdog-kexec", "add watchdog.stop_on_reboot=0 to the kernel command "
		    "line: GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT "
		    "watchdog.stop_on_reboot=0\" in /etc/default/grub.d/rerand.cfg, then update-grub; "
		    "with kernel-install (systemd-boot), in /etc/kernel/cmdline",
		    "this kernel stops it at every reboot and kexec, and its watchdog core is built "
		    "in: only the boot loader's command line can say otherwise (rerandd's own kexecs "
		    "pass watchdog.stop_on_reboot=0 on)");
		return;
	}
	modprobe_stop_on_reboot(d, opt, sizeof(opt));
	if (!strcmp(opt, "0"))
		say(d, L_WARN, "watchdog-kexec", "nothing to do: the next boot through the firmware "
		    "applies it (or reload the driver and watchdog.ko while nothing holds "
		    "/dev/watchdog0)",
		    "this boot's watchdog core was loaded before the option that keeps it counting "
		    "(options watchdog stop_on_reboot=0): until the next boot through the firmware a "
		    "kexec from this boot is covered up to its shutdown only");
	else
		say(d, L_WARN, "watchdog-kexec", "options watchdog stop_on_reboot=0 in "
		    "/etc/modprobe.d/ (the package ships /usr/lib/modprobe.d/rerand.conf: is it "
		    "masked by an /etc/modprobe.d/rerand.conf?), then a boot through the firmware",
		    "this kernel stops it at every reboot and kexec (stop_on_reboot %s), and nothing "
		    "sets watchdog.stop_on_reboot=0 for watchdog.ko", *v ? v : "unknown");
}

void check_watchdog(struct doctor *d)
{
	enum wd_kind kind = WD_UNKNOWN;
	char mod[128] = "";

	if (!watchdog_device(d, &kind, mod, sizeof(mod)))
		return;
	watchdog_boot(d, kind, mod);
	watchdog_kexec(d);
}
