/* SPDX-License-Identifier: GPL-2.0-only */
/* The stage's SHA-256, which an image's header records: for `rerand image`
 * and `rerand load`.  Not in image_read.c, which rerandd links: a call to
 * libcrypto there would make rerandd map libcrypto at start-up (issue 28),
 * where it hashes with Nettle instead (daemon/digest.c). */
#include <errno.h>
#include <openssl/evp.h>

#include "image.h"

int rr_stage_sha256(const uint8_t *stage, size_t len, uint8_t out[32])
{
	unsigned n = 0;

	if (!EVP_Digest(stage, len, out, &n, EVP_sha256(), NULL) || n != 32)
		return -EIO;
	return 0;
}
