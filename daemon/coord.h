/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd's side of fleet coordination (coord.c).  The fleet client itself runs
 * in rerand-fleetd; coord talks to it over its unix socket without ever waiting:
 * requests go out, replies come back on the sd-event loop, and the wake
 * callback makes main evaluate again. */
#ifndef RERAND_COORD_H
#define RERAND_COORD_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "fleet.h"
#include "fleet_format.h"

/* coord_gate()/coord_confirm(): a request is in flight; ask again on the next
 * evaluation (the wake callback says when). */
#define COORD_PENDING (-EINPROGRESS)

/* Included by rerandd.h, after the types it names. */
typedef struct sd_event sd_event;
typedef struct sd_event_source sd_event_source;

enum coord_op { CO_NONE = 0, CO_OPEN, CO_RESUME, CO_ACQUIRE, CO_KEEPALIVE, CO_CONFIRM,
		CO_RELEASE, CO_STATUS, CO_RELEASE_HOST, CO_FAILED, CO_BREAKER, CO_CLEAR_BREAKER };

struct rr_coord {
	struct fleet_config cfg;       /* the [Fleet] settings in use */
	bool     want;                 /* Backend= is not none */
	char     state_path[RR_PATH + 16];
	struct rr_state *st;           /* main's, for the slot persisted across reboots */

	/* the helper connection (open while io is set) */
	sd_event *ev;
	int      fd;
	sd_event_source *io, *timer;
	bool     greeted, opened;
	char     in[FLEET_LINE_MAX];
	size_t   inlen;
	uint32_t seq;
	enum coord_op busy;            /* the request in flight, CO_NONE = none */
	uint32_t busy_seq;
	enum coord_op next_op;         /* one more sent behind it (start-up only) */
	uint32_t next_seq;
	int64_t  busy_since_ms, reconnect_ms, connected_ms;
	unsigned reconnects;
	char     open_error[RR_ERR_MAX];   /* why the helper is not usable, "" = it is */
	bool     no_install_id;        /* fleet-install-id unusable: no helper, fail closed */
	int64_t  install_retry_ms;     /* when to read it again */

	/* what the helper last said */
	enum fleet_state fstate;
	uint64_t errors;
	char     id[FLEET_ID_MAX], token[FLEET_TOKEN_MAX], last_error[FLEET_MSG_MAX];
	int      gate_rc, confirm_rc;  /* a completed acquire / confirm, COORD_PENDING = none */
	bool     confirm_wanted;
	struct fleet_status fst;       /* the last `fleet status` answer */
	int64_t  fst_at_ms;            /* when, 0 = never */
	char     release_host[FLEET_ID_MAX];   /* queued operator release, "" = none */
	char     release_host_sent[FLEET_ID_MAX];  /* the one in flight, for the journal */

	int64_t  next_try_ms;          /* coord_now_ms: next attempt after a refusal/error */
	int64_t  spread_at_ms;         /* coord_now_ms: this due period's first attempt */
	int64_t  last_keepalive_ms;
	unsigned attempts;             /* failed steps in a row, for the back-off */
	bool     release_pending;      /* something of ours may still be in the group */
	bool     health_needed;        /* post-boot hooks must pass before the release */
	struct rr_hooks *health;       /* the post-boot hooks running, NULL = none */
	bool     resume_pending;       /* the slot from before the reboot not taken back yet */
	bool     reopen_pending;       /* new [Fleet] settings wait for the release */
	struct fleet_config reopen_cfg;
	char     why[RR_ERR_MAX];      /* why a due reboot waits */

	/* the group-wide breaker (etcd only) */
	bool     await_confirm;        /* the slot waits for confirm.c's verdict */
	bool     breaker_known, breaker_tripped, breaker_wanted;
	char     breaker_text[FLEET_MSG_MAX];  /* the failures counted, as fleetd said */
	int64_t  breaker_at_ms;        /* when fleetd last said, 0 = never */
	int64_t  report_next_ms;       /* the next try to record a failure */
	bool     clear_pending;        /* an operator's clear-breaker waits on clear_fd */
	bool     clear_sent;
	int      clear_fd;

	void   (*wake)(void *arg);
	void    *wake_arg;
	/* coord.c's reply handler, called by coord_link.c: a pointer rather
	 * than a call so that coord_link.c depends on nothing above it */
	void   (*on_reply)(struct rr_coord *co, const struct fleet_reply *p);
};
/* CLOCK_BOOTTIME ms: every fleet time below is on it, none is wall time. */
int64_t coord_now_ms(void);
/* CLOCK_REALTIME ms: the maintenance windows, and times shown to the operator. */
int64_t coord_wall_ms(void);
/* Connect to the helper (Backend=none: nothing).  Never blocks: an unreachable
 * helper is retried in the background and leaves reboots off meanwhile. */
int  coord_open(struct rr_coord *co, const struct fleet_config *fc, const char *state_path);
void coord_close(struct rr_coord *co);
/* Called (never re-entrantly) when a reply, an outage or a lost slot may change
 * what main decides; main schedules an evaluation. */
void coord_set_wake(struct rr_coord *co, void (*wake)(void *arg), void *arg);
/* After the boot was accounted: take a persisted slot back, plan its release. */
void coord_startup(struct rr_coord *co, struct rr_state *st, enum rr_outcome out);
/* Every evaluation: the pending release (after the health hooks), keepalives. */
void coord_service(struct rr_coord *co, const struct rr_config *c, struct rr_state *st);
void coord_keepalive(struct rr_coord *co);
/* A reboot is due: 1 when a slot is held (and persisted in st), 0 to wait,
 * COORD_PENDING while the helper is asked. */
int  coord_gate(struct rr_coord *co, const struct rr_config *c, struct rr_state *st,
		enum rr_reason why);
/* Just before the reboot: 1 only if the slot is confirmed still ours by a
 * refresh made after this call; COORD_PENDING until then. */
int  coord_confirm(struct rr_coord *co);
/* The reboot did not go out after the slot was taken: give it back. */
void coord_abort(struct rr_coord *co);
void coord_not_due(struct rr_coord *co);
void coord_reconfigure(struct rr_coord *co, const struct fleet_config *fc,
		       const struct rr_state *st);
/* coord_now_ms() of the next fleet action, 0 = none. */
int64_t coord_next_ms(const struct rr_coord *co);
void coord_view(const struct rr_coord *co, struct rr_view *v);
/* `rerand fleet status [--json]` / `rerand fleet release HOST`: from what the
 * helper last said, never waiting for it.  0 and the reply, or <0 and a
 * message in buf. */
int  coord_status(struct rr_coord *co, bool json, char *buf, size_t len);
int  coord_release_host(struct rr_coord *co, const char *host, char *buf, size_t len);
/* `rerand fleet clear-breaker`: 0 and the control connection fd is coord's,
 * answered once fleetd has cleared the breaker (or failed to); <0 and the
 * refusal in buf (the caller answers and closes fd). */
int  coord_clear_breaker(struct rr_coord *co, int fd, char *buf, size_t len);
/* A fleet token as the journal shows it: LEASE:SLOT, without the etcd fence
 * (the secret half: with it, whoever reads the journal could take the slot
 * over, as the host that persisted it). */
const char *coord_token_shown(const char *tok, char *buf, size_t len);
/* A fleet operation for the journal (audit_log): MESSAGE_ID= msgid, the fields
 * RERAND_FLEET_BACKEND, _GROUP, _HOLDER (this host's id), _SLOT (the token as
 * coord_token_shown() gives it: a lease number and a slot index, no fence, no
 * address) and up to two more "NAME=value" (NULL = none). */
void coord_audit(const struct rr_coord *co, int prio, const char *msgid, const char *f1,
		 const char *f2, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* confirm.c's verdict on the rerandomized boot: the slot goes back only after
 * a confirmed boot; a failed one keeps it (its lease runs out by itself). */
void coord_confirmed(struct rr_coord *co, bool ok);
/* ... and the firmware reboot after a failed one did not happen. */
void coord_confirm_stranded(struct rr_coord *co);
/* ---- between coord.c and coord_reply.c (the helper's answers) -------- */
void coord_on_reply(struct rr_coord *co, const struct fleet_reply *p);
/* Send what waits (a resume, a confirm, the breaker's, an operator's
 * release) when nothing is in flight. */
void coord_pump(struct rr_coord *co);
/* The slot's state on disk (a failure only logged). */
void coord_persist(struct rr_coord *co, struct rr_state *st);
/* Say why a due reboot waits, logging only when the reason changes. */
void coord_set_why(struct rr_coord *co, int prio, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The next try after the capped exponential back-off with jitter. */
void coord_retry_later(struct rr_coord *co);
/* ---- between coord.c and coord_ops.c (the group-wide breaker) -------- */
/* How often an idle host reads the breaker: a rollout stopped elsewhere shows
 * in its `rerand status` within this. */
#define BREAKER_POLL_MS (5 * 60 * 1000)
bool coord_breaker_backend(const struct rr_coord *co);
void coord_breaker_on_reply(struct rr_coord *co, enum coord_op op, const struct fleet_reply *p);
/* One breaker request sent (a clear, a failure report, a read): true. */
bool coord_breaker_pump(struct rr_coord *co);
void coord_breaker_metric(const struct rr_coord *co, struct rr_view *v);
/* ---- coord_link.c, the bottom layer (the helper connection), used by
 * coord.c and coord_ops.c; it calls back up only through co->on_reply and
 * co->wake ---------------------------------------------------------------- */
void coord_link_connect(struct rr_coord *co);
/* Send one request (none may be in flight); <0 and the link dropped on failure. */
int  coord_link_send(struct rr_coord *co, enum coord_op op, const char *arg);
/* Drop the link: what was in flight fails, reconnect later, wake main. */
/* At start-up: one more request behind the one in flight (the slot's resume
 * behind the settings), so the helper starts on it while rerandd stages. */
int  coord_link_pipeline(struct rr_coord *co, enum coord_op op, const char *arg);
void coord_link_down(struct rr_coord *co, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void coord_link_arm(struct rr_coord *co, int64_t in_ms);
/* Call main's wake callback, if it set one. */
void coord_wake(struct rr_coord *co);
/* Jitter for the back-offs (getrandom, the clock if that fails). */
uint64_t coord_rnd64(void);


#endif
