/* SPDX-License-Identifier: GPL-2.0-only */
/* Finding and describing the stage's status record of this boot. */
#ifndef RERAND_STATUS_H
#define RERAND_STATUS_H

#include <stdbool.h>
#include <stdio.h>
#include <rerand/abi.h>
#include "err.h"

struct json_object;

#define RR_SETUP_DATA_SYSFS "/sys/kernel/boot_params/setup_data"

/* Look through DIR/<n>/{type,data} for the rerand node.  Returns 0 and the
 * record, -ENOENT if there is none (a boot not made by rerand), or another
 * negative errno for a malformed record. */
int rr_status_read(const char *dir, struct rerand_status *ret, struct rr_err *e);
/* Validate a raw record. */
int rr_status_parse(const void *data, size_t len, const char *name,
		    struct rerand_status *ret, struct rr_err *e);

/* The record's result field as stored: "randomized", "nokaslr", "no-slot". */
const char *rr_status_result_name(uint32_t result);
/* The one word for a boot's outcome that rerand verify, rerandd's status,
 * its metrics and journal all use (docs/rerand.8, "JSON"): "randomized",
 * "weak" (randomized from the TSC alone), "not-randomized"; rerand verify
 * adds "absent", "malformed" and "unreadable" for a missing or bad record. */
const char *rr_status_word(const struct rerand_status *st);
/* Why a not-randomized boot was not ("nokaslr", "no-slot"); "" otherwise. */
const char *rr_status_why(const struct rerand_status *st);
/* "seed+rdrand+rdtsc" style; buf of 64 bytes is enough. */
void rr_status_sources(uint32_t mask, char *buf, size_t len);
/* How good the randomness of a boot's choice was, from the sources the
 * stage mixed (RERAND_SRC_*): "hardware" (RDSEED or RDRAND), "seed" (a
 * staging or kernel seed and the TSC, no RDRAND or RDSEED: only as secret
 * as the seed stayed in the old kernel's memory until the kexec), or
 * "tsc-only" (RERAND_ST_WEAK: guessable). */
const char *rr_status_grade(uint32_t sources_used);
/* Bits of entropy a uniform choice among n gives (floor(log2 n), with a
 * tenth), as text. */
/* log2(n) (0 for 0): the bits of entropy in a choice among n slots. */
double rr_bits(uint64_t n);
void rr_bits_text(uint64_t n, char *buf, size_t len);
/* The record as JSON (rerand verify --json; src/jsonout.h's conventions):
 * a new json-c object, the caller's to put; NULL when out of memory. */
struct json_object *rr_status_json(const struct rerand_status *st);
/* The record as text, or with JSON as one line of rr_status_json(). */
void rr_status_print(FILE *f, const struct rerand_status *st, bool json);

#endif
