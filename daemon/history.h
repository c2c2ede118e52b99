/* SPDX-License-Identifier: GPL-2.0-only */
/* The history of rerandomizing reboots (history.c): StateDirectory/history,
 * the newest HISTORY_MAX, for `rerand history [--json]`.  Never an address. */
#ifndef RERANDD_HISTORY_H
#define RERANDD_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#define HISTORY_MAX  100
#define HISTORY_FILE "history"

struct daemon;
struct rr_err;
/* The next boot settled an attempt (boot_first_look): one line for it when
 * OUT is a success, a weak boot or a failure; STARTED and WHY are the
 * attempt's (its time and reason, as the state file had them). */
void history_boot(struct daemon *d, enum rr_outcome out, time_t started, enum rr_reason why);
/* The last open line's end: confirmed, or failed with cause C (confirm.c). */
void history_confirmed(struct daemon *d, time_t now);
void history_failed(struct daemon *d, enum rr_cause c, time_t now);
/* The answer to "history" (table) or "history json": its length, or
 * -errno with E said. */
int history_format(const struct daemon *d, bool json, char *buf, size_t len, struct rr_err *e);
/* The control socket's "history [json]": answered on CFD (0, as
 * on_control returns for an answered request). */
int history_reply(const struct daemon *d, bool json, int cfd);

#endif
