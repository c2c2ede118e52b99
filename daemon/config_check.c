/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd's configuration, the checks across keys once every file is read
 * (config_validate), each "NAME: message" as --check-config and the start
 * report it; parsing is config.c's. */
#include <pwd.h>
#include <stdio.h>
#include <string.h>

#include "rerandd.h"

void config_validate(const struct rr_config *c, const char *name, struct rr_cfg_errs *errs)
{
	if (!*c->state_dir)
		config_errs_add(errs, "%s: StateDirectory= must not be empty", name);
	if (!*c->run_dir && !*c->control_socket)
		config_errs_add(errs, "%s: RuntimeDirectory= or ControlSocket= must be set", name);
	if (c->jitter > c->max_age) {
		char j[64], m[64];
		config_errs_add(errs, "%s: Jitter=%s is longer than MaxLayoutAge=%s", name,
			 config_format_duration(c->jitter, j, sizeof(j)),
			 config_format_duration(c->max_age, m, sizeof(m)));
	}
	if (c->max_age < 60)
		config_errs_add(errs, "%s: MaxLayoutAge= is shorter than 1min", name);
	if (c->max_inhibit < 1)
		config_errs_add(errs, "%s: MaxInhibitSec= must be at least 1s (HonorInhibitors=no ignores "
			 "inhibitors)", name);
	if (c->tick < 1 || c->tick > 3600)
		config_errs_add(errs, "%s: CheckInterval= must be between 1s and 1h", name);
	if (c->backoff_max < c->backoff)
		config_errs_add(errs, "%s: BackoffMax= is shorter than BackoffBase=", name);
	if (c->method == RR_RM_COMMAND && !*c->reboot_cmd)
		config_errs_add(errs, "%s: Method=command needs RebootCommand=", name);
	for (unsigned i = 0; i < c->nr_win; i++) {
		const struct rr_window *w = &c->win[i];
		if (!w->enabled)
			continue;
		if (w->start_min < 0)
			config_errs_add(errs, "%s: [Window %s] has no Start=", w->origin, w->name);
		if (w->length <= 0)
			config_errs_add(errs, "%s: [Window %s] has no Length=", w->origin, w->name);
	}
	if (*c->initrd && strcmp(c->initrd, "none") && c->initrd[0] != '/')
		config_errs_add(errs, "%s: Initrd= wants an absolute path or \"none\"", name);
	if (*c->crash_initrd && strcmp(c->crash_initrd, "none") && c->crash_initrd[0] != '/')
		config_errs_add(errs, "%s: [Crash] Initrd= wants an absolute path or \"none\"", name);
	/* nokaslr is the one kernel parameter that keeps an x86 kernel at a
	 * fixed base (kaslr=off does not exist there; norandmaps is user
	 * space's ASLR, not the kernel's base): staging refuses it, and so does
	 * the check, before a reload takes it. */
	if (c->cmdline_set && crash_cmdline_has_nokaslr(c->cmdline))
		config_errs_add(errs, "%s: [Stage] CommandLine= has nokaslr: a kernel booted with it is "
			 "not randomized; remove it", name);
	/* A crash kernel runs when something went badly wrong, perhaps under
	 * attack: it must land at a fresh base like any other. */
	if (c->crash_cmdline_set && crash_cmdline_has_nokaslr(c->crash_cmdline))
		config_errs_add(errs, "%s: [Crash] CommandLine= has nokaslr: the crash kernel must be "
			 "randomized; remove it", name);
	if (!*c->image_user)
		config_errs_add(errs, "%s: [Daemon] ImageUser= is empty: images are built as an "
			 "unprivileged user (the package creates \"rerand\")", name);
	else if (!strcmp(c->image_user, "root") || !strcmp(c->image_user, "0"))
		config_errs_add(errs, "%s: [Daemon] ImageUser=%s: the image builder parses kernel files "
			 "and must not run as root", name, c->image_user);
	if (!strcmp(c->check_user, "root") || !strcmp(c->check_user, "0"))
		config_errs_add(errs, "%s: [Daemon] CheckUser=%s: the image checks parse what the builder "
			 "wrote and must not run as root", name, c->check_user);
	if (!*c->sign_key != !*c->sign_cert)
		config_errs_add(errs, "%s: [Stage] SignKey= and SignCert= go together: set both or neither", name);
	if (*c->sign_key && *c->sign_key != '/' && strncmp(c->sign_key, "pkcs11:", 7))
		config_errs_add(errs, "%s: [Stage] SignKey=%s: want an absolute path or a pkcs11: URI", name,
			 c->sign_key);
	if (c->hotplug_settle > 3600)
		config_errs_add(errs, "%s: [Crash] HotplugSettle= must be at most 1h", name);
	wdog_validate(c, name, errs, config_errs_add);
	char ferr[FLEET_MSG_MAX];
	if (fleet_config_validate(&c->fleet, ferr, sizeof(ferr)) < 0)
		config_errs_add(errs, "%s: %s", name, ferr);
	/* The slot must outlive the drain: the hooks run while it is held and a
	 * lease that expired meanwhile makes the reboot fail closed every time. */
	if (c->fleet.backend == FLEET_BACKEND_ETCD && c->fleet.lock_ttl <= c->fleet.timeout * 3)
		config_errs_add(errs, "%s: [Fleet] LockTTL= must be longer than 3 times Timeout=", name);
}

bool config_signer_shares_builder(const struct rr_config *c)
{
	const struct passwd *pw;
	uid_t builder;

	if (!*c->sign_key || !*c->check_user || !strcmp(c->check_user, c->image_user))
		return *c->sign_key != 0;
	/* two names, perhaps one uid */
	if (!(pw = getpwnam(c->image_user)))
		return false;
	builder = pw->pw_uid;
	return (pw = getpwnam(c->check_user)) && pw->pw_uid == builder;
}
