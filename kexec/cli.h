/* SPDX-License-Identifier: GPL-2.0-only */
/* The rerand command's subcommands. */
#ifndef RERAND_CLI_H
#define RERAND_CLI_H

#include <stdint.h>
#include <stddef.h>

/* Exit codes. */
#define EXIT_NOT_RANDOMIZED 1   /* verify: record present, boot not randomized */
#define EXIT_USAGE          2
#define EXIT_WEAK           3   /* verify: randomized, but from RDTSC alone */
#define EXIT_FAILURE_RR     1
#define EXIT_NOT_DUE        1   /* due: nothing is due now */
#define EXIT_DUE_ERROR      3   /* due: rerandd could not be asked */

extern const uint8_t rr_stage_blob[];
extern const uint8_t rr_stage_blob_end[];

int cmd_image(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_load(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_now(int argc, char **argv);
int cmd_due(int argc, char **argv);
int cmd_hold(int argc, char **argv);
int cmd_release(int argc, char **argv);
int cmd_fleet(int argc, char **argv);
int cmd_entropy(int argc, char **argv);

/* "rerand: " prefix on stderr. */
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* S as a JSON string on stdout (inspect --json, entropy --json). */
void cli_json_str(const char *s);

#endif
