/* SPDX-License-Identifier: GPL-2.0-only */
/* Signing a rerand image through sbsign (sbsigntool): rerand never writes
 * Authenticode itself. */
#ifndef RERAND_SIGN_H
#define RERAND_SIGN_H

#include <stddef.h>
#include <stdint.h>
#include "err.h"

struct rr_sign_opts {
	const char *key;        /* PEM file, or an engine key id such as "pkcs11:..." */
	const char *cert;       /* PEM certificate of the signer */
	const char *engine;     /* OpenSSL engine for the key (sbsign --engine), or NULL */
	const char *addcert;    /* intermediate certificates (sbsign --addcert), or NULL */
	const char *sbsign;     /* program to run; NULL: "sbsign" from PATH */
};

/*
 * Sign the image in buf and write the signed file to path atomically: the
 * unsigned bytes and sbsign's output live in temporary files next to path,
 * the result is read back and checked (a rerand image, signed, signature
 * inside the image's room) before the rename.  On failure nothing is left
 * at path or beside it, and e says what failed, with sbsign's own message.
 * sbsign inherits the terminal, so it can prompt for a key's passphrase.
 */
int rr_sign_image_file(const uint8_t *buf, size_t len, const char *path,
		       const struct rr_sign_opts *o, struct rr_err *e);

/* A SignKey= that rerandd may sign with: a pkcs11: URI, or a regular file
 * owned by root that neither its group nor others can read (src/signkey.c).
 * 0, or an error naming the file and its owner or mode. */
int rr_sign_key_check(const char *key, struct rr_err *e);

#endif
