/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * JSON output, one way: json-c objects, written as the CLI always wrote
 * them.  One line with no spaces, keys in the order added, '/' not escaped
 * (json-c escapes it unless told), addresses and 64-bit sizes as "0x..."
 * strings (a JSON number past 2^53 loses digits in jq and JavaScript),
 * counts as numbers (uint64 where they can pass INT64_MAX), and figures with
 * a fixed number of decimals as printf writes them ("8.9", "0.00"), which a
 * json-c double would print to 17 digits.
 */
#ifndef RERAND_JSONOUT_H
#define RERAND_JSONOUT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define RR_JSON_LINE_FLAGS   (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
#define RR_JSON_PRETTY_FLAGS (JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | \
			      JSON_C_TO_STRING_NOSLASHESCAPE)

static inline void rr_json_add(struct json_object *o, const char *key, struct json_object *v)
{
	json_object_object_add(o, key, v);
}

static inline void rr_json_add_str(struct json_object *o, const char *key, const char *v)
{
	rr_json_add(o, key, json_object_new_string(v));
}

static inline void rr_json_add_bool(struct json_object *o, const char *key, bool v)
{
	rr_json_add(o, key, json_object_new_boolean(v));
}

static inline void rr_json_add_int(struct json_object *o, const char *key, int64_t v)
{
	rr_json_add(o, key, json_object_new_int64(v));
}

static inline void rr_json_add_u64(struct json_object *o, const char *key, uint64_t v)
{
	rr_json_add(o, key, json_object_new_uint64(v));
}

/* An address or an offset (never a byte size, a number): "0x1a00000". */
static inline void rr_json_add_hex(struct json_object *o, const char *key, uint64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "0x%llx", (unsigned long long)v);
	rr_json_add_str(o, key, b);
}

/* A number written as TEXT (already formatted, "%.1f" or "%.2f"). */
static inline void rr_json_add_num_text(struct json_object *o, const char *key, double v,
					const char *text)
{
	rr_json_add(o, key, json_object_new_double_s(v, text));
}

static inline void rr_json_add_fixed(struct json_object *o, const char *key, double v,
				     int decimals)
{
	char b[64];

	snprintf(b, sizeof(b), "%.*f", decimals, v);
	rr_json_add_num_text(o, key, v, b);
}

/* O as one line, valid until O is put. */
static inline const char *rr_json_line(struct json_object *o)
{
	return json_object_to_json_string_ext(o, RR_JSON_LINE_FLAGS);
}

#endif
