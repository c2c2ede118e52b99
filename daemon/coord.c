/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd's side of fleet coordination: when to ask the fleet lock (spread over the
 * window, back-off), the slot's life across the reboot, and failing closed. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "rerandd.h"

int64_t coord_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t rnd64(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint64_t)coord_now_ms() * 0x9e3779b97f4a7c15ull;
	return v;
}

static void persist(struct rr_coord *co, struct rr_state *st)
{
	struct rr_err e;

	if (state_save(co->state_path, st, &e) < 0)
		rr_log(RR_LOG_ERR, "%s", e.msg);
}

/* Say why a due reboot waits, logging only when the reason changes. */
static void set_why(struct rr_coord *co, int prio, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void set_why(struct rr_coord *co, int prio, const char *fmt, ...)
{
	char msg[sizeof(co->why)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (strcmp(msg, co->why) && *msg)
		rr_log(prio, "fleet: %s", msg);
	snprintf(co->why, sizeof(co->why), "%s", msg);
}

/* Capped exponential back-off with jitter over every failed step, releases
 * included (the client's own counter sees only acquisitions). */
static void retry_later(struct rr_coord *co)
{
	co->next_try_ms = coord_now_ms() + fleet_backoff_ms(co->attempts, co->cfg.retry_base_ms,
							    co->cfg.retry_max_ms, rnd64());
	if (co->attempts < 64)
		co->attempts++;
}

int coord_open(struct rr_coord *co, const struct fleet_config *fc, const char *state_path)
{
	char err[256];
	int r;

	snprintf(co->state_path, sizeof(co->state_path), "%s", state_path);
	co->cfg = *fc;
	co->want = fc->backend != FLEET_BACKEND_NONE;
	co->f = NULL;
	co->open_error[0] = 0;
	co->next_try_ms = co->spread_at_ms = co->last_keepalive_ms = 0;
	co->attempts = 0;
	co->resume_pending = false;
	if (!co->want)
		return 0;
	r = fleet_open(fc, &co->f, err, sizeof(err));
	if (r < 0) {
		/* no identity, no lock: never reboot until this is fixed */
		snprintf(co->open_error, sizeof(co->open_error), "cannot start the %s client: %s",
			 fleet_backend_name(fc->backend), err);
		rr_log(RR_LOG_ERR, "fleet: %s; reboots stay off (fail closed)", co->open_error);
		co->f = NULL;
		return r;
	}
	rr_log(RR_LOG_INFO, "fleet: %s, group %s, identity %s", fleet_backend_name(fc->backend),
	       fc->group, fleet_identity(co->f));
	return 0;
}

void coord_close(struct rr_coord *co)
{
	fleet_close(co->f);
	co->f = NULL;
}

/* Take the persisted slot back.  0 done (taken back, or gone), <0 not yet. */
static int resume_step(struct rr_coord *co, const struct rr_state *st)
{
	int r = fleet_resume(co->f, st->fleet_token);

	if (r < 0) {
		set_why(co, RR_LOG_WARNING, "cannot take the slot from before the reboot back "
			"yet: %s", fleet_last_error(co->f));
		return r;
	}
	if (r == 1)
		rr_log(RR_LOG_NOTICE, "fleet: took slot %s back after the reboot", st->fleet_token);
	else
		rr_log(RR_LOG_WARNING, "fleet: the slot from before the reboot is gone: %s",
		       fleet_last_error(co->f));
	co->resume_pending = false;
	return 0;
}

void coord_startup(struct rr_coord *co, struct rr_state *st, enum rr_outcome out)
{
	if (!co->want) {
		if (st->fleet_held) {
			rr_log(RR_LOG_NOTICE, "fleet: coordination is off now; forgetting the old slot");
			st->fleet_held = false;
			st->fleet_token[0] = 0;
			persist(co, st);
		}
		return;
	}
	/* The machine came back from our reboot: the slot stays ours until this
	 * boot has been checked and the post-boot health hooks pass. */
	co->health_needed = out == RR_OUT_SUCCESS || out == RR_OUT_FAILURE || out == RR_OUT_WEAK;
	/* Whatever else happened (a restart mid-drain, a kill -9 between taking the
	 * slot and writing it down, a FleetLock slot from an older boot), nothing of
	 * ours may stay in the group: release at start-up, as Zincati does. */
	co->release_pending = true;
	if (!co->f)
		return;
	/* Taken back, its lease is kept alive while the health hooks fail: a sick
	 * host keeps the group paused.  With the backend down, retried before
	 * every release step (see release_step). */
	co->resume_pending = st->fleet_held && *st->fleet_token;
	if (co->resume_pending)
		(void)resume_step(co, st);
}

/* Give back what we hold once the health hooks pass.  1 done, 0 not yet. */
static int release_step(struct rr_coord *co, const struct rr_config *c, struct rr_state *st)
{
	struct rr_err e;
	int r;

	if (co->resume_pending && resume_step(co, st) < 0) {
		retry_later(co);
		return 0;
	}
	if (co->health_needed) {
		if (reboot_run_hooks(c->post_boot_dir, c->hook_timeout, &e) < 0) {
			set_why(co, RR_LOG_WARNING, "post-boot health check failed, keeping the slot "
				"so the rollout stops here: %s", e.msg);
			/* keep the lease alive: a sick host must keep the group paused */
			if (fleet_state(co->f) == FLEET_ST_HELD)
				fleet_refresh(co->f);
			retry_later(co);
			return 0;
		}
		co->health_needed = false;
	}
	r = fleet_release(co->f);
	if (r < 0) {
		set_why(co, RR_LOG_ERR, "backend unreachable, not rebooting (fail closed): cannot "
			"give back what this host may hold: %s", fleet_last_error(co->f));
		retry_later(co);
		return 0;
	}
	if (st->fleet_held)
		rr_log(RR_LOG_NOTICE, "fleet: slot released");
	co->attempts = 0;
	co->release_pending = false;
	co->why[0] = 0;
	co->next_try_ms = 0;
	st->fleet_held = false;
	st->fleet_token[0] = 0;
	persist(co, st);
	if (co->reopen_pending) {
		struct fleet_config fc = co->reopen_cfg;
		co->reopen_pending = false;
		coord_close(co);
		coord_open(co, &fc, co->state_path);
		co->release_pending = co->want;    /* the new group may hold an old slot */
	}
	return 1;
}

void coord_service(struct rr_coord *co, const struct rr_config *c, struct rr_state *st)
{
	int64_t now = coord_now_ms();

	if (!co->f)
		return;
	if (co->release_pending) {
		if (now >= co->next_try_ms)
			release_step(co, c, st);
		return;
	}
	coord_keepalive(co);
}

void coord_keepalive(struct rr_coord *co)
{
	int64_t now = coord_now_ms();

	if (!co->f || fleet_state(co->f) != FLEET_ST_HELD)
		return;
	if (now - co->last_keepalive_ms < co->cfg.lock_ttl * 1000 / 3)
		return;
	co->last_keepalive_ms = now;
	if (fleet_refresh(co->f) != 1)
		rr_log(RR_LOG_WARNING, "fleet: keepalive: %s", fleet_last_error(co->f));
}

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

int coord_gate(struct rr_coord *co, const struct rr_config *c, struct rr_state *st,
	       enum rr_reason why)
{
	int64_t now = coord_now_ms();
	char tok[FLEET_TOKEN_MAX] = "";
	time_t ws, we;
	int r;

	if (!co->want)
		return 1;
	if (!co->f) {
		set_why(co, RR_LOG_ERR, "%s: not rebooting (fail closed)", co->open_error);
		return 0;
	}
	if (co->release_pending) {
		/* a failed release already said why */
		if (!*co->why)
			set_why(co, RR_LOG_INFO, "giving back the slot from before first");
		return 0;
	}
	if (!co->spread_at_ms) {
		/* Due hosts make their first attempt spread over the window, not all at
		 * the moment it opens; `rerand now` is an operator's explicit order. */
		co->spread_at_ms = now;
		if (why != RR_WHY_NOW && window_now(c, (time_t)(now / 1000), &ws, &we))
			co->spread_at_ms = fleet_spread_start(now, (int64_t)ws * 1000,
							      (int64_t)we * 1000, rnd64());
		if (co->spread_at_ms > now)
			rr_log(RR_LOG_INFO, "fleet: first attempt in %" PRId64 " ms (spread over the "
			       "window)", co->spread_at_ms - now);
		if (!co->spread_at_ms)
			co->spread_at_ms = now;
	}
	if (now < co->spread_at_ms) {
		set_why(co, RR_LOG_DEBUG, "first attempt spread over the window");
		co->next_try_ms = co->spread_at_ms;
		return 0;
	}
	if (now < co->next_try_ms)
		return 0;
	r = fleet_acquire(co->f);
	if (r != 1) {
		retry_later(co);
		if (r == 0)
			set_why(co, RR_LOG_INFO, "waiting for a slot: %s", fleet_last_error(co->f));
		else
			set_why(co, RR_LOG_ERR, "backend unreachable, not rebooting (fail closed): %s",
				fleet_last_error(co->f));
		return 0;
	}
	/* On disk before anything else happens: the next boot (or a restart after a
	 * kill -9) must know there is a slot to take back or give back. */
	fleet_token(co->f, tok, sizeof(tok));
	st->fleet_held = true;
	snprintf(st->fleet_token, sizeof(st->fleet_token), "%s", tok);
	persist(co, st);
	co->last_keepalive_ms = now;
	co->why[0] = 0;
	co->next_try_ms = 0;
	co->attempts = 0;
	rr_log(RR_LOG_NOTICE, "fleet: slot taken%s%s", *tok ? " " : "", tok);
	return 1;
}

int coord_confirm(struct rr_coord *co)
{
	int r;

	if (!co->want)
		return 1;
	if (!co->f)
		return 0;
	/* the last word before the reboot: anything but "still ours" means no */
	r = fleet_refresh(co->f);
	if (r != 1)
		/* one event, one line: the reason with the backend's words */
		set_why(co, RR_LOG_ERR, "the slot is not confirmed (%s): not rebooting (fail closed): %s",
			r == 0 ? "lost" : "backend unreachable", fleet_last_error(co->f));
	co->last_keepalive_ms = coord_now_ms();
	return r == 1;
}

void coord_abort(struct rr_coord *co)
{
	if (!co->f)
		return;
	/* the slot (if still ours) goes back before the next try */
	co->release_pending = true;
	co->health_needed = false;
	co->spread_at_ms = 0;
	retry_later(co);
}

void coord_not_due(struct rr_coord *co)
{
	co->spread_at_ms = 0;
	if (!co->release_pending)
		co->why[0] = 0;
}

void coord_reconfigure(struct rr_coord *co, const struct fleet_config *fc,
		       const struct rr_state *st)
{
	if (!memcmp(fc, &co->cfg, sizeof(*fc)))
		return;
	if ((co->f && fleet_state(co->f) == FLEET_ST_HELD) || st->fleet_held) {
		/* the slot is given back through the client that took it */
		rr_log(RR_LOG_WARNING, "fleet: the new [Fleet] settings apply once the slot is "
		       "given back");
		co->reopen_cfg = *fc;
		co->reopen_pending = true;
		return;
	}
	coord_close(co);
	coord_open(co, fc, co->state_path);
	co->release_pending = co->want;
	co->health_needed = false;
	co->why[0] = 0;
}

int64_t coord_next_ms(const struct rr_coord *co)
{
	int64_t t = 0;

	if (!co->f)
		return 0;
	if (co->next_try_ms)
		t = co->next_try_ms;
	if (fleet_state(co->f) == FLEET_ST_HELD) {
		int64_t k = co->last_keepalive_ms + co->cfg.lock_ttl * 1000 / 3;
		if (!t || k < t)
			t = k;
	}
	return t;
}

void coord_view(const struct rr_coord *co, struct rr_view *v)
{
	v->fleet_backend = fleet_backend_name(co->cfg.backend);
	snprintf(v->fleet_group, sizeof(v->fleet_group), "%s", co->cfg.group);
	snprintf(v->fleet_why, sizeof(v->fleet_why), "%s", co->why);
	v->fleet_next_try = co->why[0] && co->next_try_ms ? (time_t)(co->next_try_ms / 1000) : 0;
	if (!co->want) {
		/* the gauge exists either way, so one dashboard fits every host */
		v->fleet_state = "disabled";
		snprintf(v->fleet_metrics, sizeof(v->fleet_metrics),
			 "# HELP rerand_fleet_lock_state Fleet lock: 0 disabled, 1 idle, 2 waiting, "
			 "3 held, 4 error (fail closed).\n"
			 "# TYPE rerand_fleet_lock_state gauge\n"
			 "rerand_fleet_lock_state{backend=\"none\",group=\"%s\"} 0\n", co->cfg.group);
		return;
	}
	if (!co->f) {
		v->fleet_state = "error";
		v->fleet_errors = 1;
		snprintf(v->fleet_why, sizeof(v->fleet_why), "%s", co->open_error);
		snprintf(v->fleet_metrics, sizeof(v->fleet_metrics),
			 "# TYPE rerand_fleet_lock_state gauge\n"
			 "rerand_fleet_lock_state{backend=\"%s\",group=\"%s\"} %d\n"
			 "# TYPE rerand_fleet_errors_total counter\n"
			 "rerand_fleet_errors_total{backend=\"%s\"} 1\n",
			 v->fleet_backend, co->cfg.group, (int)FLEET_ST_ERROR, v->fleet_backend);
		return;
	}
	v->fleet_state = fleet_state_name(fleet_state(co->f));
	v->fleet_errors = fleet_errors(co->f);
	snprintf(v->fleet_id, sizeof(v->fleet_id), "%s", fleet_identity(co->f));
	if (fleet_metrics_format(co->f, v->fleet_metrics, sizeof(v->fleet_metrics)) < 0)
		v->fleet_metrics[0] = 0;
}

/* A server's words on their way to the operator's terminal. */
static const char *ext(const char *s, char *esc, size_t len)
{
	return rr_escape_str(esc, len, s);
}

int coord_status(struct rr_coord *co, bool json, char *buf, size_t len)
{
	char esc[4 * RR_ERR_MAX];
	struct fleet_status fs;
	int r;

	if (!co->want)
		return snprintf(buf, len, "fleet coordination is off ([Fleet] Backend=none)\n"), -EINVAL;
	if (!co->f)
		return snprintf(buf, len, "%s\n", ext(co->open_error, esc, sizeof(esc))), -EIO;
	if (co->cfg.backend == FLEET_BACKEND_FLEETLOCK) {
		/* the protocol has no read call: say what this host knows */
		r = json ? snprintf(buf, len, "{\"group\":\"%s\",\"backend\":\"fleetlock\",\"url\":\"%s\","
				    "\"holders\":null,\"self\":{\"id\":\"%s\",\"state\":\"%s\"}}\n",
				    co->cfg.group, ext(co->cfg.url, esc, sizeof(esc)), fleet_identity(co->f),
				    fleet_state_name(fleet_state(co->f)))
			 : snprintf(buf, len, "group %s (fleetlock, %s): the FleetLock protocol cannot "
				    "list holders; this host (%s) is %s\n", co->cfg.group,
				    ext(co->cfg.url, esc, sizeof(esc)),
				    fleet_identity(co->f), fleet_state_name(fleet_state(co->f)));
		return r < 0 || (size_t)r >= len ? -ENOBUFS : 0;
	}
	r = fleet_status(co->f, &fs);
	if (r < 0)
		return snprintf(buf, len, "%s\n", ext(fleet_last_error(co->f), esc, sizeof(esc))), r;
	r = json ? fleet_status_format_json(&fs, co->cfg.group, buf, len)
		 : fleet_status_format_text(&fs, co->cfg.group, buf, len);
	return r < 0 ? (snprintf(buf, len, "fleet status does not fit\n"), r) : 0;
}

int coord_release_host(struct rr_coord *co, const char *host, char *buf, size_t len)
{
	char esc[4 * RR_ERR_MAX];
	int r;

	if (!co->want)
		return snprintf(buf, len, "fleet coordination is off ([Fleet] Backend=none)\n"), -EINVAL;
	if (!co->f)
		return snprintf(buf, len, "%s\n", ext(co->open_error, esc, sizeof(esc))), -EIO;
	r = fleet_release_host(co->f, host);
	if (r < 0)
		return snprintf(buf, len, "%s\n", ext(fleet_last_error(co->f), esc, sizeof(esc))), r;
	rr_log(RR_LOG_NOTICE, "fleet: operator freed %d slot%s of %s", r, r == 1 ? "" : "s", host);
	snprintf(buf, len, "freed %d slot%s held by %s in group %s\n", r, r == 1 ? "" : "s", host,
		 co->cfg.group);
	return 0;
}

/* The contract with main.c: this synchronous client never leaves a request
 * in flight, so it has nothing to wake main for; kept for the interface. */
void coord_set_wake(struct rr_coord *co, void (*wake)(void *arg), void *arg)
{
	co->wake = wake;
	co->wake_arg = arg;
}
