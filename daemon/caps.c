/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Least privilege with libcap.  rerandd needs CAP_SYS_BOOT itself (reboot(2)
 * without systemd) and hands CAP_SYS_BOOT + CAP_SYS_ADMIN to the kexec-tools
 * child as ambient capabilities: kexec_load(2) needs CAP_SYS_BOOT, and
 * kexec-tools reads /proc/iomem, which shows every address as 0 to a reader
 * without CAP_SYS_ADMIN.  CAP_SYS_ADMIN is never effective in rerandd.
 * /dev/kmsg (CAP_SYSLOG under dmesg_restrict) is opened before the drop.
 */
#include <errno.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>

#include "rerandd.h"

static const cap_value_t keep[] = { CAP_SYS_BOOT, CAP_SYS_ADMIN };
static const cap_value_t effective[] = { CAP_SYS_BOOT };

static bool have(cap_t cur, cap_value_t v)
{
	cap_flag_value_t f = CAP_CLEAR;
	return cap_get_flag(cur, v, CAP_PERMITTED, &f) == 0 && f == CAP_SET;
}

int caps_drop_daemon(struct rr_err *e)
{
	cap_t cur = cap_get_proc(), next;
	int r = 0;

	if (!cur)
		return rr_errf(e, errno, "cap_get_proc: %s", strerror(errno));
	/* Shrink the bounding set while CAP_SETPCAP may still be ours; under
	 * the unit's CapabilityBoundingSet= it already is small, so EPERM is
	 * fine here. */
	for (cap_value_t v = 0; v <= CAP_LAST_CAP; v++) {
		bool kept = false;
		for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
			kept |= keep[i] == v;
		if (!kept && CAP_IS_SUPPORTED(v))
			(void)cap_drop_bound(v);
	}
	next = cap_init();
	if (!next) {
		cap_free(cur);
		return rr_errf(e, errno, "cap_init: %s", strerror(errno));
	}
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
		if (!have(cur, keep[i]))
			continue;          /* not root, or a tighter bounding set */
		cap_set_flag(next, CAP_PERMITTED, 1, &keep[i], CAP_SET);
		cap_set_flag(next, CAP_INHERITABLE, 1, &keep[i], CAP_SET);
	}
	for (size_t i = 0; i < sizeof(effective) / sizeof(effective[0]); i++)
		if (have(cur, effective[i]))
			cap_set_flag(next, CAP_EFFECTIVE, 1, &effective[i], CAP_SET);
	if (cap_set_proc(next) < 0)
		r = rr_errf(e, errno, "cap_set_proc: %s", strerror(errno));
	cap_free(next);
	cap_free(cur);
	if (r < 0)
		return r;
	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return rr_errf(e, errno, "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
	return 0;
}

int caps_child_kexec(void)
{
	cap_t cur = cap_get_proc();

	if (!cur)
		return -errno;
	/* Ambient needs permitted and inheritable. */
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (have(cur, keep[i]))
			cap_set_flag(cur, CAP_INHERITABLE, 1, &keep[i], CAP_SET);
	(void)cap_set_proc(cur);
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (have(cur, keep[i]) && cap_set_ambient(keep[i], CAP_SET) < 0) {
			int r = -errno;
			cap_free(cur);
			return r;
		}
	cap_free(cur);
	return 0;
}

int caps_child_none(void)
{
	cap_t none = cap_init();
	int r = 0;

	if (!none)
		return -errno;
	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	/* With no permitted set left, even a root child execs with nothing:
	 * NO_NEW_PRIVS caps what exec may grant to what we hold. */
	if (cap_set_proc(none) < 0)
		r = -errno;
	cap_free(none);
	return r;
}
