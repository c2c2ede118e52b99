/* SPDX-License-Identifier: GPL-2.0-only */
/* libcrypto for rerandd's copy of src/pesig.c (pesig_dl.o), opened with
 * dlopen when a signature is checked, never at start-up: only rerandd's
 * forked helpers check signatures, and a libcrypto mapped in rerandd itself
 * cost 1.4 MiB of its idle RSS for nothing (issue 28, bench/rerandd-idle.sh).
 *
 * rr_crypto is the table of src/pesig_crypto.h; rerandd's main() hands it
 * and rr_crypto_load() to that copy (rr_pesig_use_crypto()). */
#ifndef RR_CRYPTO_DL_H
#define RR_CRYPTO_DL_H

#include <stdbool.h>

#include "err.h"
#include "pesig_crypto.h"

#if OPENSSL_VERSION_MAJOR != 3
#error "crypto_dl opens libcrypto.so.3: built against another OpenSSL major version"
#endif
#define RR_CRYPTO_SONAME "libcrypto.so.3"

extern struct rr_crypto rr_crypto;

/* 0 once every function is there; <0 with e naming the library and what
 * (for) wanted it.  An rr_crypto_load_fn. */
int rr_crypto_load(const char *what, struct rr_err *e);

#endif
