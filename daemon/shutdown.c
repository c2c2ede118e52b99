/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd stopped: is the system going down, and into what?  (issue 38)
 * A stop while the system keeps running (`systemctl stop`, `disable --now`,
 * the package's removal) unloads rerandd's image; a shutdown that ends in a
 * kexec into it (systemctl reboot on systemd >= 256, systemctl kexec, kured)
 * is recorded and watched as a rerandomization (RerandomizeOtherReboots=);
 * any other shutdown leaves it as it is.  Linked into rerandd only: it arms
 * the watchdog through confirm.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <time.h>

#include "cleanup.h"
#include "rerandd.h"

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
	oneshot_note_attempt(d);
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
