/* SPDX-License-Identifier: GPL-2.0-only */
/* A staged image only while a rerandomization is wanted (issue 38).
 *
 * On systemd >= 255 every `reboot` kexecs into whatever is loaded, so an
 * image rerandd staged is a promise about the next boot.  It is taken back
 * (`kexec -s -u`, which frees the staged image however it was loaded and is
 * allowed under lockdown) when:
 *   - an operator hold is in place;
 *   - MaxFailures= stopped rerandomization (until `rerand now`);
 *   - the staged kernel file (or its initrd) was removed or replaced: the
 *     image of a kernel whose modules may be gone must not boot; the
 *     new-kernel path then stages what is there now;
 *   - the boot loader boots next what rerand cannot stage, or rerandd
 *     cannot tell what it boots (bootnext.c): the reboot goes through the
 *     firmware, which boots what the admin chose;
 *   - rerandd stops while the system is not shutting down (`systemctl stop`,
 *     `disable --now`, a package removal): nothing of rerand's stays behind
 *     (shutdown.c, which asks systemd what the shutdown is).
 * The marker <StateDirectory>/loaded holds the boot id of the boot in which
 * rerandd loaded its image: so a restarted rerandd, and the package's
 * prerm, know that what the kernel holds is rerand's.  It never holds an
 * address or anything that reveals one. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include "image.h"
#include "rerandd.h"

#define UNLOAD_TIMEOUT 30          /* seconds for `kexec -s -u` */

static void marker_path(const struct daemon *d, char *buf, size_t len)
{
	snprintf(buf, len, "%s/loaded", d->cfg.state_dir);
}

bool unstage_marker_this_boot(const struct daemon *d)
{
	char path[RR_PATH + 16], buf[RR_BOOT_ID + 2] = "";
	ssize_t n;
	int fd;

	marker_path(d, path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return !strcmp(buf, d->boot_id);
}

void unstage_mark_loaded(struct daemon *d)
{
	char path[RR_PATH + 16], line[RR_BOOT_ID + 2];
	struct rr_err e;
	int n = snprintf(line, sizeof(line), "%s\n", d->boot_id);

	d->loaded_mark = true;
	d->unstaged_why[0] = 0;
	marker_path(d, path, sizeof(path));
	if (n > 0 && rr_write_file_atomic(path, (const uint8_t *)line, (size_t)n, &e) < 0)
		rr_log(RR_LOG_WARNING, "%s (the package's removal then cannot tell that the "
		       "staged kernel is rerand's)", e.msg);
}

static void mark_unloaded(struct daemon *d)
{
	char path[RR_PATH + 16];

	d->loaded_mark = false;
	marker_path(d, path, sizeof(path));
	if (unlink(path) < 0 && errno != ENOENT)
		rr_log(RR_LOG_WARNING, "%s: %s", path, strerror(errno));
}

bool unstage_unwanted(const struct daemon *d, char *why, size_t len)
{
	*why = 0;
	if (d->st.hold && d->st.hold_why == RR_HOLD_OPERATOR)
		snprintf(why, len, "an operator hold is in place (`rerand unhold` lifts it)");
	else if (d->st.hold)
		snprintf(why, len, "held: %s (`rerand unhold` lifts it once checked)",
			 state_hold_name(d->st.hold_why));
	else if (policy_stopped(&d->cfg, d->st.failures) && !d->st.trig_now)
		snprintf(why, len, "stopped after %u failed rerandomizations in a row "
			 "(MaxFailures=%u; `rerand now` tries again)", d->st.failures,
			 d->cfg.max_failures);
	else if (d->cf.failing)
		snprintf(why, len, "this boot failed its confirmation");
	return *why != 0;
}

int unstage_kernel_changed(const struct daemon *d, char *why, size_t len)
{
	struct stat s;

	*why = 0;
	if (!d->staged || !*d->plan.kernel)
		return 0;
	if (stat(d->plan.kernel, &s) < 0) {
		snprintf(why, len, "the staged kernel %.400s is gone (%s)", d->plan.kernel,
			 strerror(errno));
		return RR_KERNEL_GONE;
	}
	/* a plan from before kernel_id was kept has none: nothing to compare */
	struct rr_kernel_id now = digest_kernel_id(&s);
	if (d->plan.kernel_id.ino && !digest_kernel_same(&now, &d->plan.kernel_id)) {
		snprintf(why, len, "the staged kernel %.400s was replaced", d->plan.kernel);
		return RR_KERNEL_REPLACED;
	}
	if (*d->plan.initrd && access(d->plan.initrd, F_OK) < 0) {
		snprintf(why, len, "the staged kernel's initrd %.400s is gone", d->plan.initrd);
		return RR_KERNEL_GONE;
	}
	return 0;
}

static void on_unloaded(int s, const char *out, void *ud)
{
	struct daemon *d = ud;

	d->unload_job = NULL;
	if (s != 0) {
		rr_log(RR_LOG_ERR, "%s -s -u: exit %d; the staged image may still be loaded "
		       "(%s)", d->cfg.kexec_bin, s, d->unstaged_why);
		d->unload_failed_at = daemon_mono();
	} else {
		rr_log(RR_LOG_NOTICE, "unloaded the staged image: %s", d->unstaged_why);
		d->unload_failed_at = 0;
		mark_unloaded(d);
	}
	if (d->unload_then_exit) {
		sd_event_exit(d->ev, 0);
		return;
	}
	daemon_publish(d);
	daemon_evaluate_soon(d);
}

int daemon_unstage(struct daemon *d, const char *why)
{
	char *argv[] = { d->cfg.kexec_bin, "-s", "-u", NULL };

	/* what was staged is no longer what the next boot gets */
	d->staged = false;
	d->st.staged_sha[0] = 0;
	snprintf(d->unstaged_why, sizeof(d->unstaged_why), "%s", why);
	if (d->unload_job)
		return 0;
	if (job_start(d->ev, argv, UNLOAD_TIMEOUT, RR_CHILD_KEXEC_CAPS, false, on_unloaded, d,
		      &d->unload_job) < 0) {
		rr_log(RR_LOG_ERR, "%s: cannot run to unload the staged image (%s)",
		       d->cfg.kexec_bin, why);
		d->unload_failed_at = daemon_mono();
		return -EIO;
	}
	return 0;
}

void daemon_loader_refuses(struct daemon *d, const char *why)
{
	time_t now = time(NULL);

	if (strcmp(d->unstaged_why, why))
		rr_log(RR_LOG_NOTICE, "nothing staged, a reboot goes through the firmware: %s", why);
	d->unstaged_by_policy = true;
	if (d->staged || d->loaded_mark) {
		if (!d->unload_job && (!d->unload_failed_at ||
				       now - d->unload_failed_at >= DAEMON_STAGE_RETRY))
			daemon_unstage(d, why);
	} else {
		snprintf(d->unstaged_why, sizeof(d->unstaged_why), "%s", why);
	}
}
