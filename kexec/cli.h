/* SPDX-License-Identifier: GPL-2.0-only */
/* The rerand command's subcommands. */
#ifndef RERAND_CLI_H
#define RERAND_CLI_H

#include <stdint.h>
#include <stddef.h>

/* Exit codes (rerand(8), EXIT STATUS).  Scripts and kured depend on them:
 * change none.  A usage error has a code no command uses for an answer. */
#define EXIT_FAILURE_RR     1   /* the command failed (named on stderr) */
#define EXIT_NOT_RANDOMIZED 1   /* verify: record present, boot not randomized */
#define EXIT_NOT_DUE        1   /* due: nothing is due now */
#define EXIT_NO_RECORD      2   /* verify: no rerand record in this boot */
#define EXIT_NOT_KERNEL     2   /* inspect: a PE file, not a kernel, UKI or image */
#define EXIT_WEAK           3   /* verify: randomized, but from RDTSC alone */
#define EXIT_UNTRUSTED      3   /* inspect --trust-cert: not signed by a trusted key */
#define EXIT_NO_HWRNG       6   /* verify --require-hwrng: no RDRAND or RDSEED */
#define EXIT_DUE_ERROR      3   /* due: rerandd could not be asked */
#define EXIT_BAD_RECORD     4   /* verify: a record that cannot be read or is malformed */
#define EXIT_UNREADABLE     5   /* verify: the setup_data tree cannot be read */
#define EXIT_USAGE          64  /* sysexits.h's EX_USAGE */

#include "stage_blob.h"

struct cli_cmd;
extern const struct cli_cmd cli_image, cli_inspect, cli_load, cli_verify, cli_status,
	cli_now, cli_due, cli_hold, cli_unhold, cli_release, cli_fleet, cli_entropy, cli_cache_key,
	cli_doctor, cli_build, cli_history;

int cmd_image(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_load(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_now(int argc, char **argv);
int cmd_due(int argc, char **argv);
int cmd_hold(int argc, char **argv);
int cmd_unhold(int argc, char **argv);
int cmd_release(int argc, char **argv);
int cmd_build(int argc, char **argv);
int cmd_fleet(int argc, char **argv);
int cmd_entropy(int argc, char **argv);
int cmd_cache_key(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_history(int argc, char **argv);
/* LINE to rerandd's control socket (--socket, $RERAND_CONTROL_SOCKET or the
 * default), quietly: 0 and the answer's body in BUF; 1 and why it refused;
 * <0 (-errno) when it cannot be reached. */
int cli_ctl_ask(const char *line, char *buf, size_t size);
/* After cli_ctl_ask() (or the status commands' own ask) failed with R: >0,
 * rerandd's refusal (BUF) said on stderr; <0, unreachable (the caller said
 * where).  With --json (JSON, a CLI_JSON_ mode) one object whose only
 * member is "error" on stdout too.  Returns EXIT_FAILURE_RR. */
int cli_ctl_failed(int r, const char *buf, int json);

/* An --OPT N naming an open file descriptor, MIN to 1023: N, or -1 after
 * saying on stderr why ARG is none (a usage error). */
int cli_fd_arg(const char *opt, const char *arg, int min);
/* "rerand: " prefix on stderr. */
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* --json[=short|pretty]: 0 none, 1 short (one line), 2 pretty (indented). */
enum { CLI_JSON_NONE, CLI_JSON_SHORT, CLI_JSON_PRETTY };
int cli_json_mode(const char *optarg);      /* -1: neither short nor pretty */
struct json_object;
/* O on stdout in MODE (src/jsonout.h's line, or indented), then put. */
void cli_json_print(struct json_object *o, int mode);
/* TEXT, rerandd's JSON reply, on stdout: as it came, or indented for
 * pretty (as it came if it is not JSON). */
void cli_json_reprint(const char *text, int mode);

#endif
