/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rerandd's control protocol, the one place both ends spell it: the CLI
 * (kexec/cmd_ctl.c) writes these lines, rerandd (daemon/control.c) parses
 * them.  One request line per connection, "VERB[ ARG]\n", at most
 * RR_CTL_LINE bytes; the answer is RR_CTL_OK then the body, or
 * RR_CTL_ERROR then why; the server then closes.  The socket is root's
 * alone (rerandd checks SO_PEERCRED too).
 *
 * Hosted code, shared by two programs: src/common/, not src/shared/ (the
 * freestanding code the stage links) nor include/ (the stage's ABI).
 */
#ifndef RERAND_CTL_H
#define RERAND_CTL_H

/* RunDirectory='s default (systemd's RuntimeDirectory=rerand) and the
 * socket in it; RERAND_CONTROL_SOCKET or --socket point the CLI elsewhere
 * (tests), ControlSocket= does for rerandd. */
#define RR_RUN_DIR              "/run/rerand"
#define RR_CTL_SOCKET_NAME      "control"
#define RR_CTL_SOCKET           RR_RUN_DIR "/" RR_CTL_SOCKET_NAME
#define RR_CTL_SOCKET_ENV       "RERAND_CONTROL_SOCKET"

#define RR_CTL_LINE 256

/* The verbs.  Those that take an argument take it after one space:
 * "hold TEXT" (the hold's reason, optional), "fleet release HOST",
 * "build KERNEL".
 * "now withdraw" is `rerand now --wait` giving up: the request it made is
 * taken back and a sequence not yet at its reboot request unwound; the
 * answer is "withdrawn", or "under way" when it is too late.  "due" may
 * answer "pending: ..." while rerandd asks the blockers: ask again. */
#define RR_CTLV_STATUS              "status"
#define RR_CTLV_STATUS_JSON         "status json"
#define RR_CTLV_NOW                 "now"
#define RR_CTLV_NOW_WITHDRAW        "now withdraw"
#define RR_CTLV_DUE                 "due"
#define RR_CTLV_PHASE               "phase"
#define RR_CTLV_HOLD                "hold"
#define RR_CTLV_UNHOLD              "unhold"
/* the old word for "unhold", still taken from an older `rerand` */
#define RR_CTLV_RELEASE             "release"
#define RR_CTLV_FLEET_STATUS        "fleet status"
#define RR_CTLV_FLEET_STATUS_JSON   "fleet status json"
#define RR_CTLV_FLEET_CLEAR_BREAKER "fleet clear-breaker"
#define RR_CTLV_FLEET_RELEASE       "fleet release"
/* "build KERNEL": the kernel hook's request that rerandd build, check and
 * cache the image of KERNEL (an absolute path) through its own sandboxed
 * builder; answered once the image is in the cache, or why not. */
#define RR_CTLV_BUILD               "build"
/* `rerand history [--json]`: the past rerandomizing reboots (daemon/history.c) */
#define RR_CTLV_HISTORY             "history"
#define RR_CTLV_HISTORY_JSON        "history json"

/* The answer's first line. */
#define RR_CTL_OK    "ok\n"
#define RR_CTL_ERROR "error: "

/* What rerandd parsed a line into (daemon/control.c). */
enum rr_ctl_cmd { RR_CTL_BAD = 0, RR_CTL_STATUS, RR_CTL_STATUS_JSON, RR_CTL_NOW, RR_CTL_HOLD,
		  RR_CTL_RELEASE, RR_CTL_FLEET_STATUS, RR_CTL_FLEET_STATUS_JSON,
		  RR_CTL_FLEET_RELEASE, RR_CTL_DUE, RR_CTL_PHASE, RR_CTL_FLEET_CLEAR_BREAKER,
		  RR_CTL_BUILD, RR_CTL_NOW_WITHDRAW, RR_CTL_HISTORY, RR_CTL_HISTORY_JSON };

#endif
