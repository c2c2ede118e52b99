/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd's side of fleet coordination: when to ask the fleet lock (spread over the
 * window, back-off), the slot's life across the reboot, and failing closed.  The
 * lock itself is rerand-fleetd's (fleetd/): coord sends it one request at a time
 * over its unix socket and never waits for the answer; replies, a helper that went
 * away, and timeouts arrive on the sd-event loop and wake main. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "image.h"
#include "rerandd.h"

/* The window that contains now with the most time left; 0 if none does. */
static int window_now(const struct rr_config *c, time_t now, time_t *ws, time_t *we)
{
	int found = 0;

	for (unsigned i = 0; i < c->nr_win; i++) {
		time_t s, e;
		if (policy_window_next(&c->win[i], now, &s, &e) < 0 || s > now)
			continue;
		if (!found || e > *we) {
			*ws = s;
			*we = e;
			found = 1;
		}
	}
	return found;
}

/* ---- what main calls ------------------------------------------------------------ */

/* The per-install half of this host's fleet identity: 128 random bits made once
 * and kept next to the state file, so that a host cloned from an image made
 * before rerandd first ran there holds slots under a name of its own, and a
 * slot is adopted after a reboot only by the install that took it.  0, or
 * -errno and a message; an InstallID= already set (tests) is kept. */
/* The id's file: 33 bytes; more is not an install id (a page: any line
 * shorter reads as before). */
#define INSTALL_ID_MAX 4096

static int install_id(const char *state_path, struct fleet_config *fc, char *err, size_t errlen)
{
	char path[RR_PATH + 48], buf[72];
	const char *slash = strrchr(state_path, '/');
	_cleanup_free_ char *text = NULL;
	struct rr_err we;
	uint8_t rnd[16];
	int r;

	if (*fc->install_id || fc->backend == FLEET_BACKEND_NONE)
		return 0;
	snprintf(path, sizeof(path), "%.*s/fleet-install-id",
		 slash ? (int)(slash - state_path) : 1, slash ? state_path : ".");
	r = rr_read_text_at(AT_FDCWD, path, INSTALL_ID_MAX, &text, &we);
	if (r == 0) {
		text[strcspn(text, "\n")] = 0;
		if (fleet_config_set(fc, "InstallID", text, err, errlen) == 0 && *fc->install_id)
			return 0;
		snprintf(err, errlen, "%.400s: not an install id (32 hex digits); remove it to make "
			 "a new one", path);
		return -EINVAL;
	}
	if (r != -ENOENT) {
		snprintf(err, errlen, "%s", we.msg);
		return r;
	}
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
		snprintf(err, errlen, "getrandom: %s", strerror(errno));
		return -EIO;
	}
	for (unsigned i = 0; i < sizeof(rnd); i++)
		snprintf(buf + 2 * i, 3, "%02x", rnd[i]);
	/* written whole or not at all: a torn id would be a new identity */
	buf[32] = '\n';
	r = rr_write_file_atomic(path, (const uint8_t *)buf, 33, &we);
	buf[32] = 0;
	if (r < 0) {
		snprintf(err, errlen, "%.400s: cannot write: %s", path, strerror(-r));
		return r;
	}
	rr_log(RR_LOG_NOTICE, "fleet: made this install's id in %s", path);
	return fleet_config_set(fc, "InstallID", buf, err, errlen);
}

static void no_install_id(struct rr_coord *co, const char *err)
{
	char msg[RR_ERR_MAX];

	snprintf(msg, sizeof(msg), "no install id (%.300s), and the machine id alone names "
		 "a clone too: no slot, no reboot (fail closed)", err);
	if (strcmp(msg, co->open_error))
		rr_log(RR_LOG_ERR, "fleet: %s", msg);
	snprintf(co->open_error, sizeof(co->open_error), "%s", msg);
	co->fstate = FLEET_ST_ERROR;
	/* read again after RetryMax= (and at a reload) */
	co->install_retry_ms = coord_now_ms() + co->cfg.retry_max_ms;
}

/* Read (or make) the install id again: 1 now known and the helper is being
 * connected, 0 still not. */
static int install_id_retry(struct rr_coord *co)
{
	struct fleet_config fc = co->cfg;
	char err[RR_ERR_MAX];

	if (!co->no_install_id)
		return 1;
	if (coord_now_ms() < co->install_retry_ms)
		return 0;
	if (install_id(co->state_path, &fc, err, sizeof(err)) < 0) {
		no_install_id(co, err);
		return 0;
	}
	co->cfg = fc;
	co->no_install_id = false;
	rr_log(RR_LOG_NOTICE, "fleet: this install's id is known now; connecting to the fleet "
	       "helper");
	snprintf(co->open_error, sizeof(co->open_error), "waiting for the fleet helper at %.400s",
		 co->cfg.helper);
	coord_link_connect(co);
	return 1;
}

int coord_open(struct rr_coord *co, const struct fleet_config *fc, const char *state_path)
{
	char err[RR_ERR_MAX];

	snprintf(co->state_path, sizeof(co->state_path), "%s", state_path);
	co->cfg = *fc;
	co->no_install_id = install_id(state_path, &co->cfg, err, sizeof(err)) < 0;
	co->install_retry_ms = 0;
	co->want = fc->backend != FLEET_BACKEND_NONE;
	co->breaker_known = co->breaker_tripped = co->breaker_wanted = false;
	co->breaker_text[0] = 0;
	co->breaker_at_ms = co->report_next_ms = 0;
	co->fd = -1;
	co->io = NULL;
	co->open_error[0] = 0;
	co->next_try_ms = co->spread_at_ms = co->last_keepalive_ms = co->reconnect_ms = 0;
	co->attempts = co->reconnects = 0;
	co->resume_pending = co->confirm_wanted = false;
	co->gate_rc = co->confirm_rc = COORD_PENDING;
	co->busy = co->next_op = CO_NONE;
	co->fst_at_ms = 0;
	co->fstate = co->want ? FLEET_ST_ERROR : FLEET_ST_DISABLED;
	co->on_reply = coord_on_reply;
	if (!co->want)
		return 0;
	/* until the helper said yes: fail closed */
	snprintf(co->open_error, sizeof(co->open_error), "waiting for the fleet helper at %.400s",
		 fc->helper);
	if (!co->ev && sd_event_default(&co->ev) < 0) {
		snprintf(co->open_error, sizeof(co->open_error), "sd-event: no event loop");
		rr_log(RR_LOG_ERR, "fleet: %s; reboots stay off (fail closed)", co->open_error);
		return -ENOMEM;
	}
	if (co->no_install_id) {
		/* The machine id alone names a clone as well: fail closed, no helper,
		 * no slot, no reboot, until the install id can be read or made. */
		no_install_id(co, err);
		return 0;
	}
	coord_link_connect(co);
	return 0;
}

static void health_cancel(struct rr_coord *co)
{
	hooks_cancel(co->health);
	co->health = NULL;
}

void coord_close(struct rr_coord *co)
{
	health_cancel(co);
	if (co->io) {
		co->io = sd_event_source_disable_unref(co->io);
		close(co->fd);
	}
	co->fd = -1;
	co->timer = sd_event_source_disable_unref(co->timer);
	co->ev = sd_event_unref(co->ev);
	co->greeted = co->opened = false;
	co->busy = co->next_op = CO_NONE;
}

void coord_startup(struct rr_coord *co, struct rr_state *st, enum rr_outcome out)
{
	co->st = st;
	if (!co->want) {
		if (st->fleet_held) {
			rr_log(RR_LOG_NOTICE, "fleet: coordination is off now; forgetting the old slot");
			st->fleet_held = false;
			st->fleet_token[0] = 0;
			coord_persist(co, st);
		}
		return;
	}
	/* A failed attempt's slot is not given back: the group stays a slot short
	 * until its lease (DownTTL=) runs out or an operator frees it, so a bad
	 * kernel does not move on to the next host at once.  Forgotten here: a
	 * release, a resume or a keepalive from this host would undo that. */
	if (st->fleet_keep && st->fleet_held) {
		rr_log(RR_LOG_NOTICE, "fleet: the slot of the failed rerandomization stays in group "
		       "%s until its lease runs out (DownTTL=%llds from the reboot, or LockTTL=%llds "
		       "from the failed boot's last keepalive if it took the slot back) or an "
		       "operator frees it (`rerand fleet release HOST`)", co->cfg.group,
		       (long long)co->cfg.down_ttl, (long long)co->cfg.lock_ttl);
		st->fleet_held = false;
		st->fleet_token[0] = 0;
		coord_persist(co, st);
	}
	/* The machine came back from our reboot: the slot stays ours until this
	 * boot has been checked.  A rerandomized boot is confirmed by confirm.c
	 * (boot-complete.target, then post-boot.d), which says when it is done:
	 * the hooks run there, once.  Other boots run them here. */
	co->await_confirm = st->confirm_pending;
	co->health_needed = !co->await_confirm &&
		(out == RR_OUT_SUCCESS || out == RR_OUT_FAILURE || out == RR_OUT_WEAK);
	/* Whatever else happened (a restart mid-drain, a kill -9 between taking the
	 * slot and writing it down, a FleetLock slot from an older boot), nothing of
	 * ours may stay in the group: release at start-up, as Zincati does. */
	co->release_pending = !st->fleet_keep;
	/* Taken back, its lease is kept alive while the health hooks fail: a sick
	 * host keeps the group paused. */
	co->resume_pending = st->fleet_held && *st->fleet_token;
	/* Sent now, behind the settings: the helper takes the lease back while
	 * rerandd stages; the answer is read once the event loop runs. */
	if (co->resume_pending && co->busy == CO_OPEN)
		coord_link_pipeline(co, CO_RESUME, st->fleet_token);
	coord_pump(co);
}

void coord_confirmed(struct rr_coord *co, bool ok)
{
	struct rr_state *st = co->st;

	co->await_confirm = false;
	if (!co->want)
		return;
	if (ok) {
		/* the release in coord_service follows: the hooks ran in confirm.c */
		co->health_needed = false;
		coord_wake(co);
		return;
	}
	/* the firmware reboot follows; the slot stays (confirm.c set fleet_keep) */
	co->release_pending = false;
	co->health_needed = false;
	health_cancel(co);
	if (st && st->fleet_held)
		coord_set_why(co, RR_LOG_WARNING, "the rerandomized boot failed its confirmation: keeping "
			"the slot so the rollout stops here");
}

void coord_confirm_stranded(struct rr_coord *co)
{
	struct rr_state *st = co->st;

	if (!co->want)
		return;
	/* The failed boot could not go back through the firmware, so the host
	 * stays up in it: as with any sick host, its post-boot hooks are tried
	 * again with back-off, the slot kept alive meanwhile, and given back once
	 * they pass (the failure is recorded for the breaker either way). */
	co->release_pending = true;
	co->health_needed = true;
	if (st && st->fleet_keep) {
		st->fleet_keep = false;
		coord_persist(co, st);
	}
	coord_set_why(co, RR_LOG_WARNING, "the failed boot did not go back through the firmware: "
		"keeping the slot until the post-boot hooks pass");
	coord_retry_later(co);
	coord_wake(co);
}

static void health_failed(struct rr_coord *co, const char *why)
{
	coord_set_why(co, RR_LOG_WARNING, "post-boot health check failed, keeping the slot "
		"so the rollout stops here: %s", why);
	/* keep the lease alive: a sick host must keep the group paused */
	if (co->fstate == FLEET_ST_HELD && !co->busy)
		coord_link_send(co, CO_KEEPALIVE, NULL);
	coord_retry_later(co);
}

static void on_health(int r, const char *msg, void *arg)
{
	struct rr_coord *co = arg;

	co->health = NULL;
	if (r < 0)
		health_failed(co, msg);
	else
		co->health_needed = false;
	coord_wake(co);
}

void coord_service(struct rr_coord *co, const struct rr_config *c, struct rr_state *st)
{
	int64_t now = coord_now_ms();
	struct rr_err e;

	co->st = st;
	if (!co->want)
		return;
	if (!install_id_retry(co))
		return;
	if (coord_breaker_backend(co) && co->opened && now - co->breaker_at_ms > BREAKER_POLL_MS)
		co->breaker_wanted = true;
	coord_pump(co);
	if (!co->opened || co->busy)
		return;
	/* the lease stays alive while the slot waits for the health hooks or
	 * the confirmation */
	if (!co->release_pending || co->health || co->await_confirm) {
		coord_keepalive(co);
		return;
	}
	if (now < co->next_try_ms || co->resume_pending)
		return;
	if (co->health_needed) {
		/* The hooks run as jobs, each bounded by HookTimeout=; on_health
		 * wakes main when they are done. */
		int r = hooks_start(co->ev, c->post_boot_dir, "post-boot", c->hook_timeout,
				    on_health, co, &co->health, &e);
		if (r > 0)
			return;
		if (r < 0) {
			health_failed(co, e.msg);
			return;
		}
		co->health_needed = false;         /* no hooks */
	}
	coord_link_send(co, CO_RELEASE, NULL);
}

void coord_keepalive(struct rr_coord *co)
{
	int64_t now = coord_now_ms();

	if (!co->want)
		return;
	coord_pump(co);
	if (!co->opened || co->busy || co->fstate != FLEET_ST_HELD)
		return;
	if (now - co->last_keepalive_ms < co->cfg.lock_ttl * 1000 / 3)
		return;
	co->last_keepalive_ms = now;
	coord_link_send(co, CO_KEEPALIVE, NULL);
}

int coord_gate(struct rr_coord *co, const struct rr_config *c, struct rr_state *st,
	       enum rr_reason why)
{
	int64_t now = coord_now_ms();
	time_t ws, we;
	int r;

	if (!co->want)
		return 1;
	co->st = st;
	if (!install_id_retry(co)) {
		coord_set_why(co, RR_LOG_ERR, "%s: not rebooting (fail closed)", co->open_error);
		return 0;
	}
	if (co->release_pending) {
		/* an acquire answered after an abort: the release gives it back */
		co->gate_rc = COORD_PENDING;
		/* a failed release already said why */
		if (!*co->why)
			coord_set_why(co, RR_LOG_INFO, "giving back the slot from before first");
		return 0;
	}
	/* The hooks ran and the confirm was sent: its answer decides, not a new
	 * acquire.  A failed confirm leaves the helper in ERROR; acquiring again
	 * here would hide the confirm's failure and use it stale later. */
	if (co->confirm_rc != COORD_PENDING || co->busy == CO_CONFIRM || co->confirm_wanted)
		return 1;
	if (co->gate_rc != COORD_PENDING) {
		/* the answer to the acquire this gate sent (persisted by on_reply) */
		r = co->gate_rc;
		co->gate_rc = COORD_PENDING;
		if (r == 1 && st->fleet_held) {
			co->why[0] = 0;
			co->next_try_ms = 0;
			co->attempts = 0;
			return 1;
		}
		coord_retry_later(co);
		if (r == 0)
			coord_set_why(co, RR_LOG_INFO, "waiting for a slot: %s", co->last_error);
		else if (r == -EEXIST)
			coord_set_why(co, RR_LOG_ERR, "another host uses this identity, not rebooting "
				"(fail closed): %s", co->last_error);
		else
			coord_set_why(co, RR_LOG_ERR, "backend unreachable, not rebooting (fail closed): %s",
				co->last_error);
		return 0;
	}
	if (!co->opened) {
		coord_set_why(co, RR_LOG_ERR, "%s: not rebooting (fail closed)", co->open_error);
		return 0;
	}
	if (!co->spread_at_ms) {
		/* Due hosts make their first attempt spread over the window, not all at
		 * the moment it opens; `rerand now` is an operator's explicit order. */
		int64_t wall = coord_wall_ms(), at = 0;

		co->spread_at_ms = now;
		if (why != RR_WHY_NOW && window_now(c, (time_t)(wall / 1000), &ws, &we))
			at = fleet_spread_start(wall, (int64_t)ws * 1000, (int64_t)we * 1000,
						coord_rnd64());
		/* the window is wall time; the wait is paced on now's clock */
		if (at > wall)
			co->spread_at_ms = now + (at - wall);
		if (co->spread_at_ms > now)
			rr_log(RR_LOG_INFO, "fleet: first attempt in %" PRId64 " ms (spread over the "
			       "window)", co->spread_at_ms - now);
	}
	if (now < co->spread_at_ms) {
		coord_set_why(co, RR_LOG_DEBUG, "first attempt spread over the window");
		co->next_try_ms = co->spread_at_ms;
		return 0;
	}
	if (now < co->next_try_ms)
		return 0;
	/* recursive: a slot taken this due period and not given back */
	if (st->fleet_held && co->fstate == FLEET_ST_HELD)
		return 1;
	if (co->busy)
		return COORD_PENDING;
	return coord_link_send(co, CO_ACQUIRE, NULL) < 0 ? 0 : COORD_PENDING;
}

int coord_confirm(struct rr_coord *co)
{
	int r;

	if (!co->want)
		return 1;
	if (co->confirm_rc != COORD_PENDING) {
		r = co->confirm_rc;
		co->confirm_rc = COORD_PENDING;
		if (r != 1)
			/* one event, one line: the reason with the backend's words */
			coord_set_why(co, RR_LOG_ERR, "the slot is not confirmed (%s): not rebooting (fail "
				"closed): %s", r == 0 ? "lost" : "backend unreachable", co->last_error);
		return r == 1;
	}
	if (!co->opened) {
		coord_set_why(co, RR_LOG_ERR, "the slot is not confirmed (%s): not rebooting (fail closed)",
			co->open_error);
		return 0;
	}
	/* the last word before the reboot: a refresh sent after this call */
	if (co->busy == CO_CONFIRM)
		return COORD_PENDING;
	if (co->busy) {
		co->confirm_wanted = true;
		return COORD_PENDING;
	}
	return coord_link_send(co, CO_CONFIRM, NULL) < 0 ? 0 : COORD_PENDING;
}

void coord_abort(struct rr_coord *co)
{
	if (!co->want)
		return;
	/* the slot (if still ours) goes back before the next try */
	co->release_pending = true;
	co->health_needed = false;
	health_cancel(co);
	co->spread_at_ms = 0;
	co->gate_rc = co->confirm_rc = COORD_PENDING;
	co->confirm_wanted = false;
	coord_retry_later(co);
}

void coord_not_due(struct rr_coord *co)
{
	co->spread_at_ms = 0;
	/* an acquire that came back after the reboot stopped being due (not the
	 * slot a failed confirmation keeps) */
	if (co->want && co->st && co->st->fleet_held && !co->release_pending &&
	    !co->st->fleet_keep) {
		rr_log(RR_LOG_INFO, "fleet: the reboot is no longer due; giving the slot back");
		coord_abort(co);
		co->next_try_ms = 0;
	}
	if (!co->release_pending)
		co->why[0] = 0;
}

void coord_reconfigure(struct rr_coord *co, const struct fleet_config *fc,
		       const struct rr_state *st)
{
	struct rr_state *keep = co->st;
	void (*w)(void *) = co->wake;
	void *wa = co->wake_arg;
	struct fleet_config nc = *fc;
	char err[RR_ERR_MAX];

	/* compared, and reopened, with this install's id as coord_open sets it */
	if (install_id(co->state_path, &nc, err, sizeof(err)) < 0 && !co->no_install_id) {
		/* the id read at start names this install's slots still: kept, never
		 * the machine id alone */
		rr_log(RR_LOG_ERR, "fleet: cannot read this install's id again (%s); keeping the "
		       "one read before", err);
		snprintf(nc.install_id, sizeof(nc.install_id), "%s", co->cfg.install_id);
	}
	fc = &nc;
	if (!memcmp(fc, &co->cfg, sizeof(*fc)))
		return;
	if (co->fstate == FLEET_ST_HELD || st->fleet_held) {
		/* the slot is given back through the client that took it */
		rr_log(RR_LOG_WARNING, "fleet: the new [Fleet] settings apply once the slot is "
		       "given back");
		co->reopen_cfg = *fc;
		co->reopen_pending = true;
		return;
	}
	coord_close(co);
	coord_open(co, fc, co->state_path);
	co->st = keep;
	co->wake = w;
	co->wake_arg = wa;
	co->release_pending = co->want;
	co->health_needed = false;
	co->why[0] = 0;
}

int64_t coord_next_ms(const struct rr_coord *co)
{
	int64_t t = 0;

	if (co->want && co->no_install_id)
		return co->install_retry_ms;
	if (!co->want || !co->opened)
		return 0;
	if (co->next_try_ms)
		t = co->next_try_ms;
	if (co->fstate == FLEET_ST_HELD) {
		int64_t k = co->last_keepalive_ms + co->cfg.lock_ttl * 1000 / 3;
		if (!t || k < t)
			t = k;
	}
	return t;
}

int coord_release_host(struct rr_coord *co, const char *host, char *buf, size_t len)
{
	char esc[4 * RR_ERR_MAX];

	if (!co->want)
		return snprintf(buf, len, "fleet coordination is off ([Fleet] Backend=none)\n"), -EINVAL;
	if (!co->opened)
		return snprintf(buf, len, "%s\n", rr_escape_str(esc, sizeof(esc), co->open_error)), -EIO;
	if (co->cfg.backend != FLEET_BACKEND_ETCD)
		return snprintf(buf, len, "the %s backend cannot free another host's slot\n",
				fleet_backend_name(co->cfg.backend)), -EOPNOTSUPP;
	snprintf(co->release_host, sizeof(co->release_host), "%s", host);
	coord_pump(co);
	snprintf(buf, len, "queued: free the slots held by %s in group %s (the journal says how "
		 "many)\n", host, co->cfg.group);
	return 0;
}
