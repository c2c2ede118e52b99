/* SPDX-License-Identifier: GPL-2.0-only */
/* BLAKE2s (RFC 7693) and the stage's random generator built on it: the
 * staging seed, the kernel's seed nodes and the CPU's sources hashed into a
 * key, then counter mode. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rerand/abi.h"
#include "rng.h"
#include "util.h"

static const uint32_t blake2s_iv[8] = {
	0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
	0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u,
};

static const uint8_t blake2s_sigma[10][16] = {
	{ 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 },
	{ 14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3 },
	{ 11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4 },
	{ 7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8 },
	{ 9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13 },
	{ 2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9 },
	{ 12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11 },
	{ 13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10 },
	{ 6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5 },
	{ 10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0 },
};

void rr_memzero_explicit(void *p, uint64_t n)
{
	volatile uint8_t *q = p;

	while (n--)
		*q++ = 0;
	/* The compiler must assume the zeroed bytes are read afterwards. */
	__asm__ __volatile__("" : : "r"(p) : "memory");
}

static uint32_t ror32(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

static void blake2s_compress(struct rr_blake2s *s, const uint8_t block[64], bool last)
{
	uint32_t m[16], v[16];
	unsigned i, r;

	for (i = 0; i < 16; i++)
		m[i] = rr_get32(block + 4 * i);
	for (i = 0; i < 8; i++) {
		v[i] = s->h[i];
		v[i + 8] = blake2s_iv[i];
	}
	v[12] ^= s->t[0];
	v[13] ^= s->t[1];
	if (last)
		v[14] = ~v[14];

#define G(a, b, c, d, x, y) do {                                  \
	v[a] = v[a] + v[b] + (x); v[d] = ror32(v[d] ^ v[a], 16);  \
	v[c] = v[c] + v[d];       v[b] = ror32(v[b] ^ v[c], 12);  \
	v[a] = v[a] + v[b] + (y); v[d] = ror32(v[d] ^ v[a], 8);   \
	v[c] = v[c] + v[d];       v[b] = ror32(v[b] ^ v[c], 7);   \
} while (0)
	for (r = 0; r < 10; r++) {
		const uint8_t *sg = blake2s_sigma[r];

		G(0, 4, 8, 12, m[sg[0]], m[sg[1]]);
		G(1, 5, 9, 13, m[sg[2]], m[sg[3]]);
		G(2, 6, 10, 14, m[sg[4]], m[sg[5]]);
		G(3, 7, 11, 15, m[sg[6]], m[sg[7]]);
		G(0, 5, 10, 15, m[sg[8]], m[sg[9]]);
		G(1, 6, 11, 12, m[sg[10]], m[sg[11]]);
		G(2, 7, 8, 13, m[sg[12]], m[sg[13]]);
		G(3, 4, 9, 14, m[sg[14]], m[sg[15]]);
	}
#undef G
	for (i = 0; i < 8; i++)
		s->h[i] ^= v[i] ^ v[i + 8];
	rr_memzero_explicit(m, sizeof(m));
	rr_memzero_explicit(v, sizeof(v));
}

static void blake2s_count(struct rr_blake2s *s, uint32_t n)
{
	s->t[0] += n;
	if (s->t[0] < n)
		s->t[1]++;
}

/* outlen 1..32 and keylen 0..32; out-of-range values are clamped so that a
 * caller's mistake cannot overrun the state. */
void rr_blake2s_init(struct rr_blake2s *s, uint32_t outlen, const void *key, uint32_t keylen)
{
	unsigned i;

	if (outlen == 0 || outlen > 32)
		outlen = 32;
	if (!key || keylen > 32)
		keylen = key ? 32 : 0;
	rr_memset(s, 0, sizeof(*s));
	for (i = 0; i < 8; i++)
		s->h[i] = blake2s_iv[i];
	s->h[0] ^= 0x01010000u ^ (keylen << 8) ^ outlen;
	s->outlen = outlen;
	if (keylen) {
		/* The key is the first block, zero padded (RFC 7693 3.3). */
		rr_memcpy(s->buf, key, keylen);
		s->buflen = 64;
	}
}

void rr_blake2s_update(struct rr_blake2s *s, const void *in, uint64_t len)
{
	const uint8_t *p = in;

	while (len > 0) {
		uint64_t take;

		/* Compress a full buffer only once more input follows: the
		 * last block must be compressed with the final flag. */
		if (s->buflen == 64) {
			blake2s_count(s, 64);
			blake2s_compress(s, s->buf, false);
			s->buflen = 0;
		}
		take = 64 - s->buflen;
		if (take > len)
			take = len;
		rr_memcpy(s->buf + s->buflen, p, take);
		s->buflen += (uint32_t)take;
		p += take;
		len -= take;
	}
}

void rr_blake2s_final(struct rr_blake2s *s, void *out)
{
	uint8_t full[32];
	unsigned i;

	blake2s_count(s, s->buflen);
	rr_memset(s->buf + s->buflen, 0, 64 - s->buflen);
	blake2s_compress(s, s->buf, true);
	for (i = 0; i < 8; i++)
		rr_put32(full + 4 * i, s->h[i]);
	rr_memcpy(out, full, s->outlen);
	rr_memzero_explicit(full, sizeof(full));
	rr_memzero_explicit(s, sizeof(*s));
}

/* One tagged 64-bit value into the pool; the tag keeps inputs from
 * different sources from being confused with one another. */
static void mix_u64(struct rr_blake2s *hs, uint8_t tag, uint64_t v)
{
	uint8_t b[9];

	b[0] = tag;
	rr_put64(b + 1, v);
	rr_blake2s_update(hs, b, sizeof(b));
	rr_memzero_explicit(b, sizeof(b));
}

#define RNG_WORDS 4
#define RNG_TRIES 16
#define RNG_TSC_READS 8

/*
 * Draw RNG_WORDS words from an RDSEED/RDRAND-like source.  Values are mixed
 * even when the source turns out bad (hashing them cannot hurt), but a bad
 * source is not credited: some CPUs' RDRAND returned all-ones after resume.
 */
static void mix_source(struct rr_blake2s *hs, struct rr_rng *rng, bool (*fn)(uint64_t *),
		       uint8_t tag, uint32_t bit)
{
	uint64_t v = 0, prev = 0;
	bool bad = false;
	unsigned w, t;

	if (!fn)
		return;
	for (w = 0; w < RNG_WORDS; w++) {
		bool got = false;

		for (t = 0; t < RNG_TRIES && !got; t++)
			got = fn(&v);
		if (!got) {
			bad = true;
			break;
		}
		mix_u64(hs, tag, v);
		if (v == 0 || v == UINT64_MAX || (w > 0 && v == prev))
			bad = true;
		prev = v;
	}
	if (bad)
		rng->sources_rejected |= bit;
	else
		rng->sources_used |= bit;
	rr_memzero_explicit(&v, sizeof(v));
	rr_memzero_explicit(&prev, sizeof(prev));
}

struct tsc_state {
	uint64_t last;
	unsigned reads;
	bool monotonic;
};

static void mix_tsc(struct rr_blake2s *hs, const struct rr_entropy_ops *ops, struct tsc_state *ts)
{
	uint64_t now;

	if (!ops || !ops->rdtsc)
		return;
	now = ops->rdtsc();
	if (ts->reads > 0 && now <= ts->last)
		ts->monotonic = false;
	ts->last = now;
	ts->reads++;
	mix_u64(hs, 'T', now);
}

/* Each node tagged with its length, so node boundaries are unambiguous. */
static void mix_kernel_seeds(struct rr_blake2s *hs, struct rr_rng *rng,
			     const struct rr_seed_span *ks, unsigned n)
{
	bool good = false;
	unsigned i, j;

	for (i = 0; i < n; i++) {
		bool nonzero = false;

		if (!ks[i].data)
			continue;
		for (j = 0; j < ks[i].len; j++)
			nonzero |= ks[i].data[j] != 0;
		mix_u64(hs, 'K', ks[i].len);
		rr_blake2s_update(hs, ks[i].data, ks[i].len);
		good |= nonzero && ks[i].len >= RR_KERNEL_SEED_MIN;
	}
	if (good)
		rng->sources_used |= RERAND_SRC_KERNEL_SEED;
	else if (n)
		rng->sources_rejected |= RERAND_SRC_KERNEL_SEED;
}

void rr_rng_init(struct rr_rng *rng, const uint8_t seed[32], const struct rr_entropy_ops *ops)
{
	rr_rng_init_seeds(rng, seed, NULL, 0, ops);
}

void rr_rng_init_seeds(struct rr_rng *rng, const uint8_t seed[32],
		       const struct rr_seed_span *kseed, unsigned nr_kseed,
		       const struct rr_entropy_ops *ops)
{
	static const char domain[] = "rerand rng v1: seed, rdseed, rdrand, rdtsc";
	struct tsc_state ts = { .last = 0, .reads = 0, .monotonic = true };
	struct rr_blake2s hs;
	unsigned i;

	rr_memset(rng, 0, sizeof(*rng));
	rr_blake2s_init(&hs, 32, NULL, 0);
	rr_blake2s_update(&hs, domain, sizeof(domain));

	mix_tsc(&hs, ops, &ts);
	if (seed) {
		bool nonzero = false;

		for (i = 0; i < RERAND_SEED_SIZE; i++)
			nonzero |= seed[i] != 0;
		mix_u64(&hs, 'S', RERAND_SEED_SIZE);
		rr_blake2s_update(&hs, seed, RERAND_SEED_SIZE);
		if (nonzero)
			rng->sources_used |= RERAND_SRC_SEED;
	} else {
		mix_u64(&hs, 'N', 0);
	}
	if (kseed && nr_kseed)
		mix_kernel_seeds(&hs, rng, kseed, nr_kseed);
	if (ops) {
		mix_source(&hs, rng, ops->rdseed, 'D', RERAND_SRC_RDSEED);
		mix_tsc(&hs, ops, &ts);
		mix_source(&hs, rng, ops->rdrand, 'R', RERAND_SRC_RDRAND);
	}
	while (ops && ops->rdtsc && ts.reads < RNG_TSC_READS)
		mix_tsc(&hs, ops, &ts);
	if (ops && ops->rdtsc) {
		if (ts.monotonic)
			rng->sources_used |= RERAND_SRC_RDTSC;
		else
			rng->sources_rejected |= RERAND_SRC_RDTSC;
	}
	mix_u64(&hs, 'U', (uint64_t)rng->sources_used << 32 | rng->sources_rejected);
	rr_blake2s_final(&hs, rng->key);
	rr_memzero_explicit(&ts, sizeof(ts));
}

void rr_rng_derive(const struct rr_rng *rng, uint32_t index, uint8_t *out, uint32_t len)
{
	static const char domain[] = "rerand kernel-seed v1: for the next kernel's CRNG";
	uint8_t blk[32], in[8];
	uint32_t b, off = 0;

	for (b = 0; off < len; b++) {
		struct rr_blake2s s;
		uint32_t take = len - off < sizeof(blk) ? len - off : (uint32_t)sizeof(blk);

		rr_put32(in, index);
		rr_put32(in + 4, b);
		rr_blake2s_init(&s, sizeof(blk), rng->key, sizeof(rng->key));
		rr_blake2s_update(&s, domain, sizeof(domain));
		rr_blake2s_update(&s, in, sizeof(in));
		rr_blake2s_final(&s, blk);
		rr_memcpy(out + off, blk, take);
		off += take;
	}
	rr_memzero_explicit(blk, sizeof(blk));
}

void rr_rng_replace_seeds(const struct rr_rng *rng, const struct rr_seed_span *kseed, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (kseed[i].data)
			rr_rng_derive(rng, i, kseed[i].data, kseed[i].len);
}

bool rr_rng_weak(uint32_t sources_used)
{
	return (sources_used & ~(uint32_t)RERAND_SRC_RDTSC) == 0;
}

uint64_t rr_rng_u64(struct rr_rng *rng)
{
	uint64_t v;
	uint32_t off;

	if (rng->avail < 8 || rng->avail > sizeof(rng->block)) {
		struct rr_blake2s s;
		uint8_t ctr[8];

		rr_put64(ctr, rng->counter++);
		rr_blake2s_init(&s, sizeof(rng->block), rng->key, sizeof(rng->key));
		rr_blake2s_update(&s, ctr, sizeof(ctr));
		rr_blake2s_final(&s, rng->block);
		rng->avail = sizeof(rng->block);
	}
	off = (uint32_t)sizeof(rng->block) - rng->avail;
	v = rr_get64(rng->block + off);
	/* Spent output is erased: a later dump of the state cannot replay it. */
	rr_memzero_explicit(rng->block + off, 8);
	rng->avail -= 8;
	return v;
}

uint64_t rr_rng_uniform(struct rr_rng *rng, uint64_t n)
{
	uint64_t rem, x;

	if (n <= 1)
		return 0;
	/* 2^64 mod n, computed in 64 bits: (2^64 - n) mod n. */
	rem = (0 - n) % n;
	for (;;) {
		x = rr_rng_u64(rng);
		/* Accept x < 2^64 - rem: a whole number of copies of [0, n). */
		if (rem == 0 || x < 0 - rem)
			return x % n;
	}
}

void rr_rng_wipe(struct rr_rng *rng)
{
	rr_memzero_explicit(rng, sizeof(*rng));
}
