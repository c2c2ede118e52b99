/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd's side of fleet coordination: what each answer of rerand-fleetd
 * changes (coord_link.c hands them here, one at a time, in the order the
 * requests went out), and what to send next when nothing is in flight.
 * The slot's state is persisted before anything else acts on an answer. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rerandd.h"

void coord_persist(struct rr_coord *co, struct rr_state *st)
{
	struct rr_err e;

	if (state_save(co->state_path, st, &e) < 0)
		rr_log(RR_LOG_ERR, "%s", e.msg);
}

/* Say why a due reboot waits, logging only when the reason changes. */
void coord_set_why(struct rr_coord *co, int prio, const char *fmt, ...)
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
void coord_retry_later(struct rr_coord *co)
{
	co->next_try_ms = coord_now_ms() + fleet_backoff_ms(co->attempts, co->cfg.retry_base_ms,
							    co->cfg.retry_max_ms, coord_rnd64());
	rr_log(RR_LOG_DEBUG, "fleet: next try in %" PRId64 " ms (attempt %u)",
	       co->next_try_ms - coord_now_ms(), co->attempts);
	if (co->attempts < 64)
		co->attempts++;
}

static void release_done(struct rr_coord *co)
{
	struct rr_state *st = co->st;

	if (st && st->fleet_held)
		coord_audit(co, RR_LOG_NOTICE, RR_MSGID_SLOT_RELEASED, NULL, NULL, "fleet: slot released");
	co->attempts = 0;
	co->release_pending = false;
	co->why[0] = 0;
	co->next_try_ms = 0;
	if (st) {
		st->fleet_held = false;
		st->fleet_token[0] = 0;
		coord_persist(co, st);
	}
	if (co->reopen_pending) {
		co->reopen_pending = false;
		co->cfg = co->reopen_cfg;
		co->want = co->cfg.backend != FLEET_BACKEND_NONE;
		co->release_pending = co->want;   /* the new group may hold an old slot */
		co->opened = false;
		if (co->io)
			coord_link_send(co, CO_OPEN, NULL);
	}
}

/* The helper took (or refused) the settings. */
static void open_reply(struct rr_coord *co, const struct fleet_reply *p)
{
	struct rr_state *st = co->st;

	if (p->rc < 0) {
		char msg[RR_ERR_MAX];
		snprintf(msg, sizeof(msg), "cannot start the %s client: %.400s",
			 fleet_backend_name(co->cfg.backend), p->msg);
		if (strcmp(msg, co->open_error))
			rr_log(RR_LOG_ERR, "fleet: %s; reboots stay off (fail closed)", msg);
		snprintf(co->open_error, sizeof(co->open_error), "%s", msg);
		co->fstate = FLEET_ST_ERROR;
		co->reconnect_ms = coord_now_ms() + co->cfg.retry_base_ms;
		coord_link_arm(co, co->cfg.retry_base_ms);
		return;
	}
	co->opened = true;
	co->open_error[0] = 0;
	co->reconnects = 0;
	rr_log(RR_LOG_INFO, "fleet: %s, group %s, identity %s (through %s)",
	       fleet_backend_name(co->cfg.backend), co->cfg.group, co->id, co->cfg.helper);
	/* a new helper knows no lease: the persisted one is taken back first
	 * (not a slot kept for a failed attempt: it runs out by itself) */
	if (st && st->fleet_held && *st->fleet_token && !st->fleet_keep)
		co->resume_pending = true;
	co->breaker_wanted = coord_breaker_backend(co);
}

/* The gate's request for a slot answered. */
static void acquire_reply(struct rr_coord *co, const struct fleet_reply *p)
{
	struct rr_state *st = co->st;
	char tok[FLEET_TOKEN_MAX], tk[FLEET_TOKEN_MAX];

	co->gate_rc = p->rc;
	if (p->rc == 1 && st) {
		/* On disk before anything else happens: the next boot (or a restart
		 * after a kill -9) must know there is a slot to take back or give back. */
		snprintf(tok, sizeof(tok), "%s", p->token);
		st->fleet_held = true;
		st->fleet_keep = false;
		snprintf(st->fleet_token, sizeof(st->fleet_token), "%s", tok);
		coord_persist(co, st);
		co->last_keepalive_ms = coord_now_ms();
		coord_audit(co, RR_LOG_NOTICE, RR_MSGID_SLOT_TAKEN, NULL, NULL, "fleet: slot taken%s%s",
			    *tok ? " " : "", coord_token_shown(tok, tk, sizeof(tk)));
	}
	/* refused: perhaps by the breaker; what it says shows in the status */
	if (p->rc == 0)
		co->breaker_wanted = coord_breaker_backend(co);
}

/* The last refresh before the reboot answered. */
static void confirm_reply(struct rr_coord *co, const struct fleet_reply *p)
{
	struct rr_state *st = co->st;

	/* The slot now hangs on the down lease (DownTTL=): the next boot must
	 * resume that one, so it is on disk before the answer lets the reboot
	 * go ahead.  A confirm whose token cannot be saved is no confirm. */
	if (p->rc == 1 && st && *p->token && strcmp(p->token, st->fleet_token)) {
		char f_ttl[64], tk[FLEET_TOKEN_MAX];
		struct rr_err e;

		snprintf(st->fleet_token, sizeof(st->fleet_token), "%s", p->token);
		st->fleet_held = true;
		if (state_save(co->state_path, st, &e) < 0) {
			rr_log(RR_LOG_ERR, "%s", e.msg);
			co->confirm_rc = -EIO;
			snprintf(co->last_error, sizeof(co->last_error),
				 "cannot save the slot's down lease: %.400s", e.msg);
			co->last_keepalive_ms = coord_now_ms();
			return;
		}
		snprintf(f_ttl, sizeof(f_ttl), "RERAND_FLEET_DOWN_TTL=%" PRId64, co->cfg.down_ttl);
		coord_audit(co, RR_LOG_INFO, RR_MSGID_SLOT_DOWN, f_ttl, NULL,
			    "fleet: slot %s kept across the reboot for up to %" PRId64
			    " s (DownTTL=)", coord_token_shown(st->fleet_token, tk, sizeof(tk)),
			    co->cfg.down_ttl);
	}
	co->confirm_rc = p->rc;
	co->last_keepalive_ms = coord_now_ms();
	if (p->rc == 0)
		co->breaker_wanted = coord_breaker_backend(co);
}

/* The slot from before the reboot taken back (or found gone). */
static void resume_reply(struct rr_coord *co, const struct fleet_reply *p)
{
	struct rr_state *st = co->st;
	char tk[FLEET_TOKEN_MAX];

	if (p->rc < 0) {
		coord_set_why(co, RR_LOG_WARNING, "cannot take the slot from before the reboot back "
			"yet: %s", p->msg);
		coord_retry_later(co);
		return;
	}
	if (p->rc == 1) {
		/* the resume gave the slot a new lease and fence: the old token
		 * (which a clone may have copied) is dead, the new one on disk */
		if (st && *p->token && strcmp(p->token, st->fleet_token)) {
			snprintf(st->fleet_token, sizeof(st->fleet_token), "%s", p->token);
			coord_persist(co, st);
		}
		coord_audit(co, RR_LOG_NOTICE, RR_MSGID_SLOT_RESUMED, "RERAND_FLEET_RESULT=resumed",
			    NULL, "fleet: took slot %s back after the reboot",
			    coord_token_shown(st ? st->fleet_token : "", tk, sizeof(tk)));
	} else
		coord_audit(co, RR_LOG_WARNING, RR_MSGID_SLOT_RESUMED, "RERAND_FLEET_RESULT=gone",
			    NULL, "fleet: the slot from before the reboot is gone: %s", p->msg);
	co->resume_pending = false;
}

/* An operator's `rerand fleet release HOST` answered. */
static void release_host_reply(struct rr_coord *co, const struct fleet_reply *p)
{
	char f_host[4 * FLEET_ID_MAX + 32], esc[4 * FLEET_ID_MAX];

	/* as the operator typed it: escaped in the field as in the message */
	snprintf(f_host, sizeof(f_host), "RERAND_FLEET_HOST=%s",
		 rr_escape_str(esc, sizeof(esc), co->release_host_sent));
	if (p->rc < 0)
		coord_audit(co, RR_LOG_ERR, RR_MSGID_FLEET_RELEASE, f_host,
			    "RERAND_FLEET_RESULT=failed", "fleet: operator release of %s failed: %s",
			    co->release_host_sent, p->msg);
	else
		coord_audit(co, RR_LOG_NOTICE, RR_MSGID_FLEET_RELEASE, f_host,
			    "RERAND_FLEET_RESULT=done", "fleet: operator freed %s slot(s) of %s",
			    p->msg, co->release_host_sent);
	co->release_host_sent[0] = 0;
	co->fst_at_ms = 0;      /* the cached holders are stale */
}

/* coord_link hands every reply here (co->on_reply, set by coord_open). */
void coord_on_reply(struct rr_coord *co, const struct fleet_reply *p)
{
	enum coord_op op = co->busy;
	/* the pipelined request, if any, is now the one in flight */
	co->busy = co->next_op;
	co->busy_seq = co->next_seq;
	co->next_op = CO_NONE;
	if (co->busy)
		co->busy_since_ms = coord_now_ms();
	co->fstate = p->state;
	co->errors = p->errors;
	if (*p->id)
		snprintf(co->id, sizeof(co->id), "%s", p->id);
	snprintf(co->token, sizeof(co->token), "%s", p->token);
	/* the lock's last word: what the breaker's and the status calls say is
	 * theirs, and must not replace a refusal the gate has yet to read */
	if (op != CO_BREAKER && op != CO_FAILED && op != CO_CLEAR_BREAKER && op != CO_STATUS)
		snprintf(co->last_error, sizeof(co->last_error), "%s", p->msg);
	switch (op) {
	case CO_OPEN:
		open_reply(co, p);
		break;
	case CO_RESUME:
		resume_reply(co, p);
		break;
	case CO_ACQUIRE:
		acquire_reply(co, p);
		break;
	case CO_KEEPALIVE:
		if (p->rc != 1)
			rr_log(RR_LOG_WARNING, "fleet: keepalive: %s", p->msg);
		break;
	case CO_CONFIRM:
		confirm_reply(co, p);
		break;
	case CO_RELEASE:
		if (p->rc < 0) {
			coord_set_why(co, RR_LOG_ERR, "backend unreachable, not rebooting (fail closed): "
				"cannot give back what this host may hold: %s", p->msg);
			coord_retry_later(co);
			break;
		}
		release_done(co);
		break;
	case CO_STATUS:
		if (p->has_status) {
			co->fst = p->st;
			co->fst_at_ms = coord_now_ms();
		}
		break;
	case CO_RELEASE_HOST:
		release_host_reply(co, p);
		break;
	case CO_FAILED:
	case CO_BREAKER:
	case CO_CLEAR_BREAKER:
		coord_breaker_on_reply(co, op, p);
		break;
	case CO_NONE:
		break;
	}
	coord_pump(co);
	coord_wake(co);
}

void coord_pump(struct rr_coord *co)
{
	if (!co->io || !co->greeted || co->busy)
		return;
	if (!co->opened)
		return;           /* the timer re-sends open */
	if (co->resume_pending && co->st && coord_now_ms() >= co->next_try_ms) {
		coord_link_send(co, CO_RESUME, co->st->fleet_token);
		return;
	}
	if (co->confirm_wanted) {
		co->confirm_wanted = false;
		coord_link_send(co, CO_CONFIRM, NULL);
		return;
	}
	if (coord_breaker_pump(co))
		return;
	if (*co->release_host) {
		char h[FLEET_ID_MAX];
		snprintf(h, sizeof(h), "%s", co->release_host);
		co->release_host[0] = 0;
		snprintf(co->release_host_sent, sizeof(co->release_host_sent), "%s", h);
		coord_link_send(co, CO_RELEASE_HOST, h);
	}
}
