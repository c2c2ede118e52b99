/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Randomness for the stage: BLAKE2s mixes the staging seed and the
 * kernel's SETUP_RNG_SEED bytes with whatever the CPU offers (RDSEED,
 * RDRAND, RDTSC) into a key, and BLAKE2s in counter mode draws from it.  The CPU sources are behind function pointers so hosted
 * tests can make them absent, stuck or failing.  Built twice.
 */
#ifndef RERAND_RNG_H
#define RERAND_RNG_H

#include <stdbool.h>
#include <stdint.h>

struct rr_blake2s {
	uint32_t h[8];
	uint32_t t[2];
	uint32_t f[2];
	uint8_t  buf[64];
	uint32_t buflen;
	uint32_t outlen;
};

void rr_blake2s_init(struct rr_blake2s *s, uint32_t outlen, const void *key, uint32_t keylen);
void rr_blake2s_update(struct rr_blake2s *s, const void *in, uint64_t len);
void rr_blake2s_final(struct rr_blake2s *s, void *out);

/* Hardware sources.  A NULL pointer means absent.  rdseed/rdrand return
 * true with a value, false when the instruction reported failure (CF=0). */
struct rr_entropy_ops {
	bool     (*rdseed)(uint64_t *v);
	bool     (*rdrand)(uint64_t *v);
	uint64_t (*rdtsc)(void);
};

/* Bytes of one SETUP_RNG_SEED node (writable: they are overwritten). */
struct rr_seed_span {
	uint8_t *data;
	uint32_t len;
};

/* Below this many bytes (or all zero) a kernel seed is mixed, not credited. */
#define RR_KERNEL_SEED_MIN 16

struct rr_rng {
	uint8_t  key[32];
	uint64_t counter;
	uint8_t  block[32];
	uint32_t avail;          /* unread bytes at the end of block */
	uint32_t sources_used;   /* RERAND_SRC_* */
	uint32_t sources_rejected;
};

/* Mix seed (may be NULL or all-zero: then SEED is not counted as used) and
 * the sources into rng.  Each hardware source is tried up to 16 times for
 * each of 4 words; a source is rejected if it fails every try, returns
 * all-ones or all-zeros, or repeats its previous value. RDTSC is rejected
 * if it does not advance. */
void rr_rng_init(struct rr_rng *rng, const uint8_t seed[32], const struct rr_entropy_ops *ops);
/* The same, also mixing kernel seed nodes.  RERAND_SRC_KERNEL_SEED is used
 * when one node has at least RR_KERNEL_SEED_MIN bytes, not all zero;
 * rejected when nodes were given but none qualified.  With nr_kseed 0 the
 * key is exactly rr_rng_init's. */
void rr_rng_init_seeds(struct rr_rng *rng, const uint8_t seed[32],
		       const struct rr_seed_span *kseed, unsigned nr_kseed,
		       const struct rr_entropy_ops *ops);
/* Fill out with a value for the next kernel's CRNG, in place of kernel seed
 * node `index`: BLAKE2s(key, domain || index || block), independent of
 * every draw (whose input is the 8-byte counter alone). */
void rr_rng_derive(const struct rr_rng *rng, uint32_t index, uint8_t *out, uint32_t len);
/* Overwrite every node's bytes with rr_rng_derive(rng, i, ...). */
void rr_rng_replace_seeds(const struct rr_rng *rng, const struct rr_seed_span *kseed, unsigned n);
/* A choice is weak when nothing but RDTSC (or nothing at all) fed it. */
bool rr_rng_weak(uint32_t sources_used);
uint64_t rr_rng_u64(struct rr_rng *rng);
/* Uniform in [0, n), n > 0, by rejection: no modulo bias. */
uint64_t rr_rng_uniform(struct rr_rng *rng, uint64_t n);
/* Overwrite the whole state; not optimised away. */
void rr_rng_wipe(struct rr_rng *rng);
void rr_memzero_explicit(void *p, uint64_t n);

#endif
