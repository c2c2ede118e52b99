/* SPDX-License-Identifier: GPL-2.0-only */
/* What the operator sees of the fleet (the view for `rerand status` and the
 * metrics, `rerand fleet status`) and rerandd's side of the group-wide
 * breaker (etcd only): recording this host's failed rerandomizations for the
 * group, what the breaker says (status, journal, metric), and the operator's
 * clear-breaker, whose answer waits for rerand-fleetd.  The breaker itself
 * lives in etcd; rerand-fleetd refuses every acquire while it is tripped
 * (fleetd/fleet_etcd_breaker.c). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "jsonout.h"
#include "rerandd.h"

static void persist(struct rr_coord *co, struct rr_state *st)
{
	struct rr_err e;

	if (state_save(co->state_path, st, &e) < 0)
		rr_log(RR_LOG_ERR, "%s", e.msg);
}

const char *coord_token_shown(const char *tok, char *buf, size_t len)
{
	const char *c = strchr(tok, ':');

	c = c ? strchr(c + 1, ':') : NULL;
	snprintf(buf, len, "%.*s", c ? (int)(c - tok) : (int)strlen(tok), tok);
	return buf;
}

void coord_audit(const struct rr_coord *co, int prio, const char *msgid, const char *f1,
		 const char *f2, const char *fmt, ...)
{
	const char *tok = co->st && *co->st->fleet_token ? co->st->fleet_token : co->token;
	char msg[2048], f_be[64], f_grp[FLEET_GROUP_MAX + 32], f_id[FLEET_ID_MAX + 32],
	     f_slot[FLEET_TOKEN_MAX + 32], tk[FLEET_TOKEN_MAX];
	const char *fields[6] = { f_be, f_grp, f_id, f_slot };
	size_t n = 4;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(f_be, sizeof(f_be), "RERAND_FLEET_BACKEND=%s", fleet_backend_name(co->cfg.backend));
	snprintf(f_grp, sizeof(f_grp), "RERAND_FLEET_GROUP=%s", co->cfg.group);
	snprintf(f_id, sizeof(f_id), "RERAND_FLEET_HOLDER=%s", co->id);
	snprintf(f_slot, sizeof(f_slot), "RERAND_FLEET_SLOT=%s", coord_token_shown(tok, tk, sizeof(tk)));
	if (f1)
		fields[n++] = f1;
	if (f2)
		fields[n++] = f2;
	audit_log(prio, msgid, fields, n, "%s", msg);
}

bool coord_breaker_backend(const struct rr_coord *co)
{
	return co->cfg.backend == FLEET_BACKEND_ETCD;
}

/* What fleetd said about the breaker; the journal hears of a change once. */
static void breaker_update(struct rr_coord *co, bool tripped, const char *text)
{
	char esc[4 * FLEET_MSG_MAX];

	if (tripped && (!co->breaker_known || !co->breaker_tripped))
		coord_audit(co, RR_LOG_ERR, RR_MSGID_BREAKER_TRIP, NULL, NULL,
			    "fleet: BREAKER TRIPPED for group %s: %s; no host of the group "
			    "takes a slot until an operator runs `rerand fleet clear-breaker`",
			    co->cfg.group, rr_escape_str(esc, sizeof(esc), text));
	else if (!tripped && co->breaker_known && co->breaker_tripped)
		coord_audit(co, RR_LOG_NOTICE, RR_MSGID_BREAKER_CLEAR, "RERAND_FLEET_RESULT=seen-cleared",
			    NULL, "fleet: the breaker of group %s is cleared", co->cfg.group);
	co->breaker_known = true;
	co->breaker_tripped = tripped;
	snprintf(co->breaker_text, sizeof(co->breaker_text), "%s", text);
	co->breaker_at_ms = coord_now_ms();
}

static void clear_answer(struct rr_coord *co, bool ok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void clear_answer(struct rr_coord *co, bool ok, const char *fmt, ...)
{
	char msg[FLEET_MSG_MAX * 4 + 64];
	va_list ap;

	if (!co->clear_pending)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	control_reply(co->clear_fd, ok, msg);
	close(co->clear_fd);
	co->clear_pending = co->clear_sent = false;
	co->clear_fd = -1;
}

void coord_breaker_on_reply(struct rr_coord *co, enum coord_op op, const struct fleet_reply *p)
{
	struct rr_state *st = co->st;
	char f_cause[64];

	switch (op) {
	case CO_FAILED:
		if (p->rc < 0) {
			rr_log(RR_LOG_WARNING, "fleet: cannot record the failure for group %s's "
			       "breaker yet: %s", co->cfg.group, p->msg);
			co->report_next_ms = coord_now_ms() + fleet_backoff_ms(co->attempts,
				co->cfg.retry_base_ms, co->cfg.retry_max_ms, coord_rnd64());
			break;
		}
		snprintf(f_cause, sizeof(f_cause), "RERAND_FLEET_CAUSE=%s",
			 st ? wdog_cause_name(st->last_cause) : "?");
		coord_audit(co, RR_LOG_NOTICE, RR_MSGID_FAILURE_REC, f_cause, NULL,
			    "fleet: failure (%s) recorded for group %s: %s",
			    st ? wdog_cause_name(st->last_cause) : "?", co->cfg.group, p->msg);
		if (st) {
			st->fleet_report = false;
			persist(co, st);
		}
		breaker_update(co, p->rc == 1, p->msg);
		break;
	case CO_BREAKER:
		if (p->rc >= 0) {
			breaker_update(co, p->rc == 1, p->msg);
		} else {
			/* read again at the next poll, or when an acquire is
			 * refused: not at every tick of an outage, and not beside
			 * each retry (each failed request is an error of the
			 * backend's); an acquire checks the breaker by itself */
			rr_log(RR_LOG_DEBUG, "fleet: cannot read the breaker: %s", p->msg);
			co->breaker_at_ms = coord_now_ms();
		}
		break;
	case CO_CLEAR_BREAKER:
		if (p->rc < 0) {
			/* refused (etcd's permission denied to a host's own role)
			 * or not known: the attempt is in the trail too */
			coord_audit(co, RR_LOG_WARNING, RR_MSGID_BREAKER_CLEAR,
				    "RERAND_FLEET_RESULT=failed", NULL,
				    "fleet: operator clear-breaker failed: %s", p->msg);
			clear_answer(co, false, "cannot clear the breaker of group %s: %s\n",
				     co->cfg.group, p->msg);
			break;
		}
		coord_audit(co, RR_LOG_NOTICE, RR_MSGID_BREAKER_CLEAR,
			    p->rc == 1 ? "RERAND_FLEET_RESULT=cleared" : "RERAND_FLEET_RESULT=not-tripped",
			    NULL, "fleet: operator clear-breaker: %s", p->msg);
		breaker_update(co, false, "cleared");
		co->breaker_wanted = true;      /* what is left: read again */
		clear_answer(co, true, "%s\n", p->msg);
		break;
	default:
		break;
	}
}

bool coord_breaker_pump(struct rr_coord *co)
{
	if (co->clear_pending && !co->clear_sent) {
		co->clear_sent = true;
		coord_link_send(co, CO_CLEAR_BREAKER, NULL);
		return true;
	}
	if (co->st && co->st->fleet_report && coord_now_ms() >= co->report_next_ms) {
		char arg[64];

		if (!coord_breaker_backend(co)) {
			/* said once per failure, in the journal and by --check-config */
			rr_log(RR_LOG_WARNING, "fleet: the failure is not recorded for group %s: the %s "
			       "backend has no place for the group-wide breaker (etcd only)",
			       co->cfg.group, fleet_backend_name(co->cfg.backend));
			co->st->fleet_report = false;
			persist(co, co->st);
		} else {
			snprintf(arg, sizeof(arg), "%s %lld", wdog_cause_name(co->st->last_cause),
				 (long long)co->st->last_cause_time);
			coord_link_send(co, CO_FAILED, arg);
			return true;
		}
	}
	if (co->breaker_wanted) {
		co->breaker_wanted = false;
		coord_link_send(co, CO_BREAKER, NULL);
		return true;
	}
	return false;
}

/* rerand_fleet_breaker_tripped: on every host, 0 where there is no breaker,
 * so one alert rule fits the fleet. */
void coord_breaker_metric(const struct rr_coord *co, struct rr_view *v)
{
	size_t n = strlen(v->fleet_metrics);

	snprintf(v->fleet_metrics + n, sizeof(v->fleet_metrics) - n,
		 "# HELP rerand_fleet_breaker_tripped The fleet group's breaker (etcd only): 1 "
		 "tripped, no host takes a slot until `rerand fleet clear-breaker`.\n"
		 "# TYPE rerand_fleet_breaker_tripped gauge\n"
		 "rerand_fleet_breaker_tripped{group=\"%s\"} %d\n", co->cfg.group,
		 co->want && co->breaker_tripped);
}

int coord_clear_breaker(struct rr_coord *co, int fd, char *buf, size_t len)
{
	char esc[4 * RR_ERR_MAX];

	if (!co->want)
		return snprintf(buf, len, "fleet coordination is off ([Fleet] Backend=none)\n"), -EINVAL;
	if (!coord_breaker_backend(co))
		return snprintf(buf, len, "the %s backend has no group-wide breaker (etcd only)\n",
				fleet_backend_name(co->cfg.backend)), -EOPNOTSUPP;
	if (!co->opened)
		return snprintf(buf, len, "%s\n", rr_escape_str(esc, sizeof(esc), co->open_error)), -EIO;
	if (co->clear_pending)
		return snprintf(buf, len, "a clear-breaker is already on its way\n"), -EBUSY;
	co->clear_pending = true;
	co->clear_sent = false;
	co->clear_fd = fd;
	/* now if the helper is free, else after the request in flight */
	if (co->io && co->greeted && co->opened && !co->busy)
		coord_breaker_pump(co);
	return 0;
}

void coord_view(const struct rr_coord *co, struct rr_view *v)
{
	enum fleet_state s = co->opened ? co->fstate : FLEET_ST_ERROR;

	v->fleet_backend = fleet_backend_name(co->cfg.backend);
	snprintf(v->fleet_group, sizeof(v->fleet_group), "%s", co->cfg.group);
	snprintf(v->fleet_why, sizeof(v->fleet_why), "%s", co->why);
	/* shown as a wall time */
	v->fleet_next_try = co->why[0] && co->next_try_ms ?
		(time_t)((coord_wall_ms() + co->next_try_ms - coord_now_ms()) / 1000) : 0;
	if (!co->want) {
		/* the gauge exists either way, so one dashboard fits every host */
		v->fleet_state = "disabled";
		fleet_metrics_text("none", co->cfg.group, FLEET_ST_DISABLED, 0, v->fleet_metrics,
				   sizeof(v->fleet_metrics));
		v->fleet_breaker = "etcd only";
		coord_breaker_metric(co, v);
		return;
	}
	v->fleet_state = fleet_state_name(s);
	/* an unreachable helper counts as an error, so the counter moves */
	v->fleet_errors = co->errors + (co->opened ? 0 : 1);
	snprintf(v->fleet_id, sizeof(v->fleet_id), "%s", co->id);
	if (!co->opened)
		snprintf(v->fleet_why, sizeof(v->fleet_why), "%s", co->open_error);
	if (fleet_metrics_text(v->fleet_backend, co->cfg.group, s, v->fleet_errors,
			       v->fleet_metrics, sizeof(v->fleet_metrics)) < 0)
		v->fleet_metrics[0] = 0;
	v->fleet_breaker = !coord_breaker_backend(co) ? "etcd only" : !co->breaker_known ? "unknown" :
		co->breaker_tripped ? "tripped" : "ok";
	snprintf(v->fleet_breaker_text, sizeof(v->fleet_breaker_text), "%s", co->breaker_text);
	coord_breaker_metric(co, v);
}

/* A server's words on their way to the operator's terminal. */
static const char *ext(const char *s, char *esc, size_t len)
{
	return rr_escape_str(esc, len, s);
}

/* FleetLock's `fleet status --json`: what this host knows, holders null. */
static int fleetlock_status_json(const struct rr_coord *co, char *buf, size_t len)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();
	struct json_object *self = json_object_new_object();
	char esc[4 * RR_ERR_MAX];
	int r;

	if (!o || !self) {
		json_object_put(self);
		return snprintf(buf, len, "out of memory\n"), -ENOMEM;
	}
	rr_json_add_str(o, "group", co->cfg.group);
	rr_json_add_str(o, "backend", "fleetlock");
	rr_json_add_str(o, "url", ext(co->cfg.url, esc, sizeof(esc)));
	rr_json_add(o, "holders", NULL);
	rr_json_add_str(self, "id", co->id);
	rr_json_add_str(self, "state", fleet_state_name(co->fstate));
	rr_json_add(o, "self", self);
	r = snprintf(buf, len, "%s\n", rr_json_line(o));
	return r < 0 || (size_t)r >= len ? -ENOBUFS : 0;
}

int coord_status(struct rr_coord *co, bool json, char *buf, size_t len)
{
	char esc[4 * RR_ERR_MAX];
	int64_t age;
	int r;

	if (!co->want)
		return snprintf(buf, len, "fleet coordination is off ([Fleet] Backend=none)\n"), -EINVAL;
	if (!co->opened)
		return snprintf(buf, len, "%s\n", ext(co->open_error, esc, sizeof(esc))), -EIO;
	if (co->cfg.backend == FLEET_BACKEND_FLEETLOCK) {
		/* the protocol has no read call: say what this host knows */
		if (json)
			return fleetlock_status_json(co, buf, len);
		r = snprintf(buf, len, "group %s (fleetlock, %s): the FleetLock protocol cannot "
				    "list holders; this host (%s) is %s\n", co->cfg.group,
				    ext(co->cfg.url, esc, sizeof(esc)), co->id,
				    fleet_state_name(co->fstate));
		return r < 0 || (size_t)r >= len ? -ENOBUFS : 0;
	}
	/* the answer is what the helper said last; a fresh one is asked for now
	 * and shows on the next call */
	if (!co->busy)
		coord_link_send(co, CO_STATUS, NULL);
	if (!co->fst_at_ms)
		return snprintf(buf, len, "asking rerand-fleetd for group %s's holders; ask again "
				"in a moment\n", co->cfg.group), -EAGAIN;
	r = json ? fleet_status_format_json(&co->fst, co->cfg.group, buf, len)
		 : fleet_status_format_text(&co->fst, co->cfg.group, buf, len);
	if (r < 0)
		return snprintf(buf, len, "fleet status does not fit\n"), r;
	age = (coord_now_ms() - co->fst_at_ms) / 1000;
	if (!json && (size_t)r < len)
		snprintf(buf + r, len - (size_t)r, "(as etcd said %" PRId64 " s ago)\n", age);
	return 0;
}
