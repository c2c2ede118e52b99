/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd's configuration as a whole: the built-in defaults, then rerand.conf,
 * then the drop-ins of rerand.conf.d/ in name order (each file parsed by
 * config.c), then the checks across keys (config_check.c), each error led
 * by the file:line where it was set. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "config_int.h"
#include "lockdown.h"
#include "rerandd.h"

#define CONF_MAX_FILE (1u << 20)
/* `make install` may pass -DRR_RERAND_BIN='"$(BINDIR)/rerand"'. */
#ifndef RR_RERAND_BIN
#define RR_RERAND_BIN "/usr/local/bin/rerand"
#endif

void config_defaults(struct rr_config *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->state_dir, sizeof(c->state_dir), "/var/lib/rerand");
	snprintf(c->run_dir, sizeof(c->run_dir), RR_RUN_DIR);
	/* where Debian's prometheus-node-exporter reads textfiles by default */
	snprintf(c->metrics_file, sizeof(c->metrics_file), RR_METRICS_FILE);
	snprintf(c->rerand_bin, sizeof(c->rerand_bin), "%s", RR_RERAND_BIN);
	snprintf(c->kexec_bin, sizeof(c->kexec_bin), "kexec");
	snprintf(c->image_user, sizeof(c->image_user), "rerand");
	c->tick = 300;                     /* computed deadlines wake it sooner */
	snprintf(c->boot_dir, sizeof(c->boot_dir), "/boot");
	snprintf(c->proc_cmdline, sizeof(c->proc_cmdline), "/proc/cmdline");
	snprintf(c->setup_data, sizeof(c->setup_data), "/sys/kernel/boot_params/setup_data");
	snprintf(c->kmsg, sizeof(c->kmsg), "/dev/kmsg");
	snprintf(c->tainted, sizeof(c->tainted), "/proc/sys/kernel/tainted");
	snprintf(c->boot_id, sizeof(c->boot_id), "/proc/sys/kernel/random/boot_id");
	snprintf(c->pre_reboot_dir, sizeof(c->pre_reboot_dir), "/etc/rerand/pre-reboot.d");
	snprintf(c->proc_stat, sizeof(c->proc_stat), "/proc/stat");
	snprintf(c->post_boot_dir, sizeof(c->post_boot_dir), "/etc/rerand/post-boot.d");
	snprintf(c->kexec_crash_size, sizeof(c->kexec_crash_size), "/sys/kernel/kexec_crash_size");
	snprintf(c->crash_loader_wants, sizeof(c->crash_loader_wants),
		 "/etc/systemd/system/multi-user.target.wants");
	snprintf(c->kdump_tools_default, sizeof(c->kdump_tools_default), "/etc/default/kdump-tools");
	snprintf(c->kexec_crash_loaded, sizeof(c->kexec_crash_loaded), "/sys/kernel/kexec_crash_loaded");
	snprintf(c->proc_vmcore, sizeof(c->proc_vmcore), "/proc/vmcore");
	snprintf(c->lockdown_file, sizeof(c->lockdown_file), "%s", RR_LOCKDOWN_PATH);
	snprintf(c->secureboot_file, sizeof(c->secureboot_file), "%s", RR_SECUREBOOT_PATH);
	snprintf(c->boot_params_file, sizeof(c->boot_params_file), "%s", RR_BOOT_PARAMS_PATH);
	snprintf(c->signed_dir, sizeof(c->signed_dir), "/var/lib/rerand/signed");
	snprintf(c->loader_entry_selected, sizeof(c->loader_entry_selected),
		 "/sys/firmware/efi/efivars/LoaderEntrySelected-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f");
	/* bootctl's order: the ESP at /efi, /boot or /boot/efi; XBOOTLDR at /boot */
	snprintf(c->boot_loader_roots, sizeof(c->boot_loader_roots), "/efi /boot /boot/efi");
	snprintf(c->grub_cfg, sizeof(c->grub_cfg), "/boot/grub/grub.cfg");
	snprintf(c->grub_env, sizeof(c->grub_env), "/boot/grub/grubenv");
	snprintf(c->grub_editenv, sizeof(c->grub_editenv), "/usr/bin/grub-editenv");
	snprintf(c->package_locks, sizeof(c->package_locks), "%s %s", rr_dpkg_locks[0],
		 rr_dpkg_locks[1]);
	/* A boot has ConfirmTimeoutSec= to reach boot-complete.target and pass
	 * the post-boot checks; the watchdog armed before the kexec covers the
	 * same span (iTCO_wdt counts up to 613 s). */
	c->kexec_watchdog = 600;
	c->confirm_timeout = 600;
	snprintf(c->watchdog_dev, sizeof(c->watchdog_dev), "/dev/watchdog0");
	snprintf(c->watchdog_sysfs, sizeof(c->watchdog_sysfs), "/sys/class/watchdog/watchdog0");
	snprintf(c->watchdog_stop_on_reboot, sizeof(c->watchdog_stop_on_reboot),
		 "/sys/module/watchdog/parameters/stop_on_reboot");
	snprintf(c->pstore_dir, sizeof(c->pstore_dir), "/sys/fs/pstore");
	c->crash_mode = RR_CRASH_AUTO;
	c->hotplug_settle = 10;
	c->restage_interval = 6 * 3600;
	c->new_kernel_settle = 30;
	c->max_age = 24 * 3600;
	c->jitter = 3600;
	c->min_interval = 3600;
	c->backoff = 1800;
	c->backoff_max = 24 * 3600;
	c->blocker_timeout = 30;
	c->on_oops = RR_WHEN_WINDOW;
	c->on_new_kernel = RR_WHEN_WINDOW;
	c->honor_inhibitors = true;
	/* an overnight job's lock is honoured; a forgotten or hostile one
	 * cannot keep a leaked layout past the next working shift */
	c->max_inhibit = 4 * 3600;
	c->max_failures = 3;
	c->method = RR_RM_AUTO;
	c->hook_timeout = 60;
	c->rerandomize_other_reboots = true;
	c->panic_reboot = 10;
	fleet_config_defaults(&c->fleet);
}

static int apply_file(struct rr_config *c, const char *path, bool may_be_missing,
		      struct rr_cfg_errs *errs, struct rr_cfg_origins *origins,
		      struct rr_cfg_errs *warns)
{
	_cleanup_free_ uint8_t *buf = NULL;
	struct rr_err e;
	size_t len;
	int r;

	r = rr_read_file(path, CONF_MAX_FILE, &buf, &len, &e);
	if (r == -ENOENT && may_be_missing)
		return r;                  /* not an error: the caller says what it means */
	if (r == -ENOENT) {
		config_errs_add(errs, "%s (rerandd --allow-missing-config runs on the built-in defaults "
			 "and the drop-ins)", e.msg);
		return r;
	}
	if (r < 0) {
		config_errs_add(errs, "%s", e.msg);
		return r;
	}
	config_apply_text_at(c, (const char *)buf, len, path, errs, origins, warns);
	return 0;
}

static int conf_filter(const struct dirent *de)
{
	size_t n = strlen(de->d_name);
	return de->d_name[0] != '.' && n > 5 && !strcmp(de->d_name + n - 5, ".conf");
}

/* Where the key KEY (len n) of SECTION ("" = the first section that has it)
 * was set: its "file:line", "" for its default; NULL when it is no key. */
static const char *key_origin(const struct rr_cfg_origins *o, const char *section,
			      const char *key, size_t n)
{
	bool fleet_only = !strcmp(section, "Fleet");

	for (size_t i = 0; !fleet_only && i < rr_cfg_nkeys; i++)
		if ((!*section || !strcmp(rr_cfg_keys[i].section, section)) &&
		    strlen(rr_cfg_keys[i].name) == n && !strncmp(rr_cfg_keys[i].name, key, n))
			return o->key[i];
	for (size_t i = 0; (fleet_only || !*section) && fleet_config_key(i); i++)
		if (strlen(fleet_config_key(i)) == n && !strncmp(fleet_config_key(i), key, n))
			return o->fleet[i];
	return NULL;
}

/* A check of config_validate() ("NAME: message") as the operator needs it:
 * led by the file:line of the first key it names that a file set (not the
 * main file's name when the key came from a drop-in), and when it names
 * several keys, where each one was set ("default" for a built-in value). */
static void add_located(struct rr_cfg_errs *errs, const char *name,
			const struct rr_cfg_origins *o, const char *msg)
{
	size_t nl = strlen(name), pl = 0;
	const char *body = msg + nl + 2, *lead = NULL, *seen[8];
	char section[32] = "", paren[4 * (RR_CFG_ORIGIN + 40)];
	unsigned nkeys = 0;

	if (strncmp(msg, name, nl) || strncmp(msg + nl, ": ", 2)) {
		config_errs_add(errs, "%s", msg);     /* a window's check names its header already */
		return;
	}
	paren[0] = 0;
	for (const char *p = body; *p;) {
		if (*p == '[') {
			size_t n = strcspn(p + 1, "]");
			if (p[1 + n] == ']' && n < sizeof(section))
				snprintf(section, sizeof(section), "%.*s", (int)n, p + 1);
			p += 1 + n;
			continue;
		}
		if (isalpha((unsigned char)*p) && (p == body || !isalnum((unsigned char)p[-1]))) {
			const char *q = p;
			while (isalnum((unsigned char)*q))
				q++;
			const char *org = *q == '=' ? key_origin(o, strncmp(section, "Window", 6) ?
								 section : "", p, (size_t)(q - p)) : NULL;
			bool dup = false;
			for (unsigned i = 0; org && i < nkeys && i < 8; i++)
				dup |= seen[i] == org;
			if (org && !dup) {
				if (nkeys < 8)
					seen[nkeys] = org;
				nkeys++;
				if (!lead && *org)
					lead = org;
				if (pl < sizeof(paren))
					pl += (size_t)snprintf(paren + pl, sizeof(paren) - pl, "%s%.*s= %s %s",
							       pl ? ", " : "", (int)(q - p), p,
							       *org ? "at" : "is", *org ? org : "the default");
			}
			p = q;
			continue;
		}
		p++;
	}
	if (nkeys > 1)
		config_errs_add(errs, "%s: %s (%s)", lead ? lead : name, body, paren);
	else
		config_errs_add(errs, "%s: %s", lead ? lead : name, body);
}

int config_load(const char *main_path, const char *dropin_dir, struct rr_config *ret,
		struct rr_cfg_errs *errs)
{
	struct rr_cfg_load l = { .main = main_path, .dir = dropin_dir };

	return config_load_ex(&l, ret, errs);
}

int config_load_ex(const struct rr_cfg_load *l, struct rr_config *ret, struct rr_cfg_errs *errs)
{
	const char *main_path = l->main, *dropin_dir = l->dir;
	_cleanup_free_ struct rr_config *c = malloc(sizeof(*c));
	_cleanup_free_ struct dirent **list = NULL;
	/* kept for the checks across keys even when the caller keeps none */
	_cleanup_free_ struct rr_cfg_origins *own = l->origins ? NULL : calloc(1, sizeof(*own));
	_cleanup_free_ struct rr_cfg_errs *checks = calloc(1, sizeof(*checks));
	struct rr_cfg_origins *origins = l->origins ? l->origins : own;
	unsigned before = errs->n + errs->dropped;
	int n;

	if (!c || !origins || !checks)
		return -ENOMEM;
	config_defaults(c);
	if (main_path && apply_file(c, main_path, !l->main_required, errs, origins, l->warns) ==
			 -ENOENT && !l->main_required)
		config_errs_add(l->warns, "%s: does not exist: the built-in defaults stand in for it "
			 "(--allow-missing-config)", main_path);
	if (dropin_dir) {
		/* alphasort: "10-foo.conf" before "50-bar.conf", later files win */
		n = scandir(dropin_dir, &list, conf_filter, alphasort);
		if (n < 0 && errno != ENOENT)
			config_errs_add(errs, "%s: cannot read: %s", dropin_dir, strerror(errno));
		for (int i = 0; i < n; i++) {
			char path[PATH_MAX];
			snprintf(path, sizeof(path), "%s/%s", dropin_dir, list[i]->d_name);
			apply_file(c, path, true, errs, origins, l->warns);
			free(list[i]);
		}
	}
	const char *name = main_path ? main_path : "configuration";
	config_validate(c, name, checks);
	for (unsigned i = 0; i < checks->n; i++)
		add_located(errs, name, origins, checks->msg[i]);
	errs->dropped += checks->dropped;
	if (errs->n + errs->dropped != before)
		return -EINVAL;
	*ret = *c;
	return 0;
}
