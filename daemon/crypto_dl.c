/* SPDX-License-Identifier: GPL-2.0-only */
/* libcrypto opened on first use (crypto_dl.h says why).  Once loaded it
 * stays: only rerandd-check loads it, and that helper exits when done. */
#include <dlfcn.h>
#include <errno.h>

#include "crypto_dl.h"

struct rr_crypto rr_crypto;
static bool loaded;

int rr_crypto_load(const char *what, struct rr_err *e)
{
	void *h;

	if (loaded)
		return 0;
	h = dlopen(RR_CRYPTO_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return rr_errf(e, ELIBACC, "%s: cannot check its signature: %s", what, dlerror());
#define RR_CRYPTO_SYM(f)                                                                   \
	if (!(*(void **)&rr_crypto.f = dlsym(h, #f)))                                      \
		return rr_errf(e, ELIBBAD, "%s: cannot check its signature: " RR_CRYPTO_SONAME \
			       " has no %s", what, #f);
	RR_CRYPTO_FNS(RR_CRYPTO_SYM)
#undef RR_CRYPTO_SYM
	loaded = true;
	return 0;
}
