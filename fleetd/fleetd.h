/* SPDX-License-Identifier: GPL-2.0-only */
/* rerand-fleetd's fleet client: at most K hosts of a group rebooting at once,
 * through an etcd v3 semaphore (leases) or a FleetLock server; fail closed.
 * Every call may block on the network for up to Timeout= per endpoint: the
 * helper makes them on its worker thread only (fleetd/main.c). */
#ifndef RERAND_FLEETD_H
#define RERAND_FLEETD_H

#include "fleet.h"

struct fleet;

/* Allocates; reads the identity.  -errno with a message in err. */
int fleet_open(const struct fleet_config *c, struct fleet **ret, char *err, size_t errlen);
void fleet_close(struct fleet *f);

/* Try to take a slot: 1 held (also when already held: the lock is recursive), 0 the
 * group is full or the server refused, <0 the backend could not be asked. */
int fleet_acquire(struct fleet *f);
/* Keep what we hold alive and check it is still ours: 1 held, 0 lost, <0 unknown.
 * The caller must treat anything but 1 as "do not reboot". */
int fleet_refresh(struct fleet *f);
/* The last word before the reboot: as fleet_refresh(), and the slot is moved to
 * a lease that outlasts the reboot (DownTTL=); fleet_token() names it after. */
int fleet_down(struct fleet *f);
/* Give back any slot this identity holds (FleetLock: steady-state). 0 or <0. */
int fleet_release(struct fleet *f);
/* What to persist across the reboot so the next boot can take the lease back. */
int fleet_token(const struct fleet *f, char *buf, size_t len);
/* After the boot: re-attach to the lease in token ("" = none).  1 the slot is still
 * ours, 0 it is gone (TTL expired or freed by an operator), <0 unknown. */
int fleet_resume(struct fleet *f, const char *token);
/* Holders and free slots as the backend reports them; -EOPNOTSUPP for FleetLock. */
int fleet_status(struct fleet *f, struct fleet_status *st);
/* Operator override: free every slot held by host.  Returns how many, or <0. */
int fleet_release_host(struct fleet *f, const char *host);

/* The group-wide breaker (etcd; -EOPNOTSUPP for FleetLock): record a failed
 * rerandomization of this host (1 the breaker is tripped now, 0 not), ask its
 * state (1 tripped, 0 not), clear it (1 it was tripped, 0 not); what etcd
 * holds in fleet_last_error(). */
int fleet_record_failure(struct fleet *f, const char *cause, int64_t at);
int fleet_breaker(struct fleet *f);
int fleet_clear_breaker(struct fleet *f);

enum fleet_state fleet_state(const struct fleet *f);
const char *fleet_identity(const struct fleet *f);
uint64_t fleet_errors(const struct fleet *f);
/* Why the last operation failed or was refused, "" if it did not. */
const char *fleet_last_error(const struct fleet *f);
/* Delay before the next attempt after a refusal or an error (back-off with jitter);
 * resets once a slot is held. */
int64_t fleet_next_delay_ms(struct fleet *f, uint64_t rnd);

/* src/common/escape.h: text from a server made safe for one log line. */
#include "escape.h"

#endif
