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
 *   - rerandd stops while the system is not shutting down (`systemctl stop`,
 *     `disable --now`, a package removal): nothing of rerand's stays behind.
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
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
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
		snprintf(why, len, "an operator hold is in place (`rerand release` lifts it)");
	else if (d->st.hold)
		snprintf(why, len, "held: %s (`rerand release` lifts it once checked)",
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
	struct rr_kernel_id now;

	*why = 0;
	if (!d->staged || !*d->plan.kernel)
		return 0;
	if (stat(d->plan.kernel, &s) < 0) {
		snprintf(why, len, "the staged kernel %.400s is gone (%s)", d->plan.kernel,
			 strerror(errno));
		return RR_KERNEL_GONE;
	}
	now = (struct rr_kernel_id){ .dev = s.st_dev, .ino = s.st_ino, .size = s.st_size,
				     .mtime_sec = s.st_mtim.tv_sec, .mtime_nsec = s.st_mtim.tv_nsec };
	/* a plan from before kernel_id was kept has none: nothing to compare */
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
		d->unload_failed_at = time(NULL);
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
		d->unload_failed_at = time(NULL);
		return -EIO;
	}
	return 0;
}

/* What the system does now, from systemd: SD_STOPPING when SystemState is
 * "stopping" (shutdown.target queued or active: a reboot, poweroff or
 * kexec is under way), or'ed with SD_KEXEC when kexec.target is queued or
 * active (the shutdown ends in a kexec of what is loaded: systemctl kexec,
 * and systemctl reboot on systemd >= 255, which logind turns into
 * kexec.target when a kernel is loaded).  0 when not stopping, or when
 * systemd cannot be asked (then nothing is a shutdown). */
enum { SD_STOPPING = 1, SD_KEXEC = 2 };
static int system_shutdown(void)
{
	_cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
	_cleanup_free_ char *state = NULL, *active = NULL;
	const char *kexec_target = "/org/freedesktop/systemd1/unit/kexec_2etarget";
	uint32_t job = 0;
	const char *job_path;
	sd_bus_message *m = NULL;
	int r = 0;

	if (sd_bus_open_system(&bus) < 0)
		return 0;
	(void)sd_bus_set_method_call_timeout(bus, 5 * 1000000ull);
	if (sd_bus_get_property_string(bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
				       "org.freedesktop.systemd1.Manager", "SystemState", NULL,
				       &state) < 0 || strcmp(state, "stopping"))
		return 0;
	r = SD_STOPPING;
	if (sd_bus_get_property_string(bus, "org.freedesktop.systemd1", kexec_target,
				       "org.freedesktop.systemd1.Unit", "ActiveState", NULL,
				       &active) >= 0 &&
	    (!strcmp(active, "active") || !strcmp(active, "activating")))
		r |= SD_KEXEC;
	if (sd_bus_get_property(bus, "org.freedesktop.systemd1", kexec_target,
				"org.freedesktop.systemd1.Unit", "Job", NULL, &m, "(uo)") >= 0 &&
	    sd_bus_message_read(m, "(uo)", &job, &job_path) >= 0 && job)
		r |= SD_KEXEC;
	sd_bus_message_unref(m);
	return r;
}

/* A kexec into our image that rerandd did not start: a rerandomization
 * like rerandd's own (RerandomizeOtherReboots=yes): the attempt on disk,
 * the watchdog armed; the next boot confirms it or names its failure. */
static void other_reboot(struct daemon *d)
{
	rr_log(RR_LOG_NOTICE, "the system is rebooting by kexec into rerandd's image (a reboot "
	       "rerandd did not start): counted as a rerandomization (RerandomizeOtherReboots=yes)");
	state_record_attempt(&d->st, RR_WHY_OTHER, time(NULL));
	confirm_arm_for_kexec(d);
	d->st.phase = RR_PH_REBOOTING;
	if (daemon_save(d) < 0) {
		/* not on disk: the next boot would not be counted; no watchdog
		 * reset for a boot nobody watches */
		confirm_disarm(d);
		rr_log(RR_LOG_ERR, "the attempt could not be saved: the next boot is not "
		       "watched or counted");
	}
}

int unstage_on_stop(struct daemon *d)
{
	const char *why;
	int sys;

	/* rerandd's own reboot is under way: its image is what boots next */
	if (d->st.phase == RR_PH_REBOOT || d->st.phase == RR_PH_REBOOTING)
		return 0;
	if (!d->staged && !d->loaded_mark && !d->stage_job)
		return 0;
	sys = system_shutdown();
	if ((sys & SD_STOPPING) && !(sys & SD_KEXEC)) {
		rr_log(RR_LOG_INFO, "the system is shutting down without a kexec: the staged image "
		       "is left as it is");
		return 0;
	}
	why = "rerandd stopped while the system keeps running";
	if ((sys & SD_KEXEC) && !d->cfg.rerandomize_other_reboots)
		why = "a kexec reboot rerandd did not start (RerandomizeOtherReboots=no)";
	else if (sys & SD_KEXEC) {
		if (d->staged && !d->stage_job) {
			other_reboot(d);
			return 0;
		}
		why = d->stage_job ? "a kexec reboot while rerandd was staging" :
		      "a kexec reboot while the image loaded is not the one rerandd planned";
	}
	stage_cancel(d->stage_job);
	d->stage_job = NULL;
	d->unload_then_exit = true;
	return daemon_unstage(d, why) < 0 ? 0 : 1;
}
