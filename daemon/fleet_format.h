/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd's words for the fleet lock (fleet_format.c): `rerand fleet status`
 * as text and JSON, and the lock's metrics.  rerand-fleetd prints none of
 * them, so they stay out of the shared src/common/fleet.h. */
#ifndef RERAND_FLEET_FORMAT_H
#define RERAND_FLEET_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "fleet.h"

/* ---- fleet_format.c: `rerand fleet status` -------------------------------- */
int fleet_status_format_text(const struct fleet_status *st, const char *group, char *buf,
			     size_t len);
int fleet_status_format_json(const struct fleet_status *st, const char *group, char *buf,
			     size_t len);
/* rerand_fleet_lock_state and rerand_fleet_errors_total, Prometheus text. */
int fleet_metrics_text(const char *backend, const char *group, enum fleet_state s,
		       uint64_t errors, char *buf, size_t len);

#endif
