/* SPDX-License-Identifier: GPL-2.0-only */
/* BLAKE2s against RFC 7693 / reference KAT vectors, and the stage RNG with
 * absent, stuck, repeating and failing CPU sources, kernel seed nodes (mixed,
 * credited, replaced), the weak rule; uniformity of draws. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "rerand/abi.h"
#include "rng.h"
#include "test.h"

static void hex(const char *h, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		sscanf(h + 2 * i, "%2x", &v);
		out[i] = (uint8_t)v;
	}
}

static int digest_is(const void *data, size_t len, const void *key, uint32_t keylen,
		     uint32_t outlen, const char *want_hex, size_t chunk)
{
	struct rr_blake2s s;
	uint8_t got[32], want[32];
	const uint8_t *p = data;

	rr_blake2s_init(&s, outlen, key, keylen);
	for (size_t off = 0; off < len; off += chunk)
		rr_blake2s_update(&s, p + off, len - off < chunk ? len - off : chunk);
	rr_blake2s_final(&s, got);
	hex(want_hex, want, outlen);
	return memcmp(got, want, outlen) == 0;
}

static void test_blake2s(void)
{
	/* RFC 7693 Appendix B and the empty message. */
	T_OK(digest_is("abc", 3, NULL, 0, 32,
		       "508c5e8c327c14e2e1a72ba34eeb452f37458b209ed63a294d999b4c86675982", 64),
	     "blake2s: BLAKE2s-256(\"abc\") (RFC 7693)");
	T_OK(digest_is("", 0, NULL, 0, 32,
		       "69217a3079908094e11121d042354a7c1f55b6482ca1a51e1b250dfd1ed0eef9", 64),
	     "blake2s: BLAKE2s-256(\"\")");
	/* blake2s-kat.txt: key 00..1f, message 00..len-1. */
	static const struct { size_t len; const char *h; } kat[] = {
		{ 0, "48a8997da407876b3d79c0d92325ad3b89cbb754d86ab71aee047ad345fd2c49" },
		{ 1, "40d15fee7c328830166ac3f918650f807e7e01e177258cdc0a39b11f598066f1" },
		{ 2, "6bb71300644cd3991b26ccd4d274acd1adeab8b1d7914546c1198bbe9fc9d803" },
		{ 3, "1d220dbe2ee134661fdf6d9e74b41704710556f2f6e5a091b227697445dbea6b" },
		{ 63, "c65382513f07460da39833cb666c5ed82e61b9e998f4b0c4287cee56c3cc9bcd" },
		{ 64, "8975b0577fd35566d750b362b0897a26c399136df07bababbde6203ff2954ed4" },
		{ 65, "21fe0ceb0052be7fb0f004187cacd7de67fa6eb0938d927677f2398c132317a8" },
		{ 127, "ddbfea75cc467882eb3483ce5e2e756a4f4701b76b445519e89f22d60fa86e06" },
		{ 128, "0c311f38c35a4fb90d651c289d486856cd1413df9b0677f53ece2cd9e477c60a" },
		{ 129, "46a73a8dd3e70f59d3942c01df599def783c9da82fd83222cd662b53dce7dbdf" },
		{ 255, "3fb735061abc519dfe979e54c1ee5bfad0a9d858b3315bad34bde999efd724dd" },
	};
	uint8_t key[32], msg[256];
	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)i;
	for (int i = 0; i < 256; i++)
		msg[i] = (uint8_t)i;
	for (size_t i = 0; i < sizeof(kat) / sizeof(kat[0]); i++) {
		T_OK(digest_is(msg, kat[i].len, key, 32, 32, kat[i].h, 256),
		     "blake2s: keyed KAT, %zu-byte message", kat[i].len);
		T_OK(digest_is(msg, kat[i].len, key, 32, 32, kat[i].h, 7),
		     "blake2s: keyed KAT, %zu-byte message fed in 7-byte pieces", kat[i].len);
	}
	T_OK(digest_is("abc", 3, NULL, 0, 16, "aa4938119b1dc7b87cbad0ffd200d0ae", 1),
	     "blake2s: 16-byte output");
	T_OK(digest_is("hello world", 11, "secret", 6, 20, "76e7bca95bb856556a7887a71c79bc6d40cb7557", 3),
	     "blake2s: 6-byte key, 20-byte output");
}

/* Scripted CPU sources. */
enum mode { GOOD, ONES, ZEROS, REPEAT, FAIL, FLAKY, REPEAT_LATE };
static enum mode seed_mode, rand_mode;
static uint64_t seed_state, rand_state, tsc_now;
static unsigned flaky_calls;
static int tsc_mode;    /* 0 advancing, 1 frozen, 2 backwards once */
static unsigned tsc_calls;

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static bool scripted(enum mode m, uint64_t *state, uint64_t *v)
{
	switch (m) {
	case GOOD: *v = splitmix(state); return true;
	case ONES: *v = UINT64_MAX; return true;
	case ZEROS: *v = 0; return true;
	case REPEAT: *v = 0x0123456789abcdefULL; return true;
	case REPEAT_LATE: {
		static const uint64_t seq[] = { 11, 22, 33, 33 };
		*v = seq[(*state)++ % 4];
		return true;
	}
	case FAIL: return false;
	case FLAKY:
		/* fails 15 times, then succeeds: within the 16 tries */
		if (++flaky_calls % 16)
			return false;
		*v = splitmix(state);
		return true;
	}
	return false;
}

static bool f_rdseed(uint64_t *v) { return scripted(seed_mode, &seed_state, v); }
static bool f_rdrand(uint64_t *v) { return scripted(rand_mode, &rand_state, v); }
static uint64_t f_rdtsc(void)
{
	tsc_calls++;
	if (tsc_mode == 1)
		return 5000;
	if (tsc_mode == 2 && tsc_calls == 3)
		return tsc_now - 10;
	return tsc_now += 1000;
}

static void reset_sources(uint64_t salt)
{
	seed_state = 1000 + salt;
	rand_state = 2000 + salt;
	tsc_now = 1ULL << 40;
	flaky_calls = 0;
	tsc_calls = 0;
}

struct scenario {
	const char *name;
	bool has_rdseed, has_rdrand, has_tsc;
	enum mode sm, rm;
	int tsc;
	uint32_t used, rejected;   /* expected, without SEED */
};

static void draws(const uint8_t *seed, const struct rr_entropy_ops *ops, uint64_t salt,
		  uint64_t out[4], struct rr_rng *rng)
{
	reset_sources(salt);
	rr_rng_init(rng, seed, ops);
	for (int i = 0; i < 4; i++)
		out[i] = rr_rng_u64(rng);
}

static void test_sources(void)
{
	const struct scenario sc[] = {
		{ "all good", 1, 1, 1, GOOD, GOOD, 0,
		  RERAND_SRC_RDSEED | RERAND_SRC_RDRAND | RERAND_SRC_RDTSC, 0 },
		{ "rdrand absent", 1, 0, 1, GOOD, GOOD, 0, RERAND_SRC_RDSEED | RERAND_SRC_RDTSC, 0 },
		{ "no hardware at all", 0, 0, 0, GOOD, GOOD, 0, 0, 0 },
		{ "rdrand stuck all-ones", 1, 1, 1, GOOD, ONES, 0,
		  RERAND_SRC_RDSEED | RERAND_SRC_RDTSC, RERAND_SRC_RDRAND },
		{ "rdseed stuck all-zeros", 1, 1, 1, ZEROS, GOOD, 0,
		  RERAND_SRC_RDRAND | RERAND_SRC_RDTSC, RERAND_SRC_RDSEED },
		{ "rdrand repeating", 1, 1, 1, GOOD, REPEAT, 0,
		  RERAND_SRC_RDSEED | RERAND_SRC_RDTSC, RERAND_SRC_RDRAND },
		{ "rdrand repeating only at the 4th word", 1, 1, 1, GOOD, REPEAT_LATE, 0,
		  RERAND_SRC_RDSEED | RERAND_SRC_RDTSC, RERAND_SRC_RDRAND },
		{ "rdseed failing every try", 1, 1, 1, FAIL, GOOD, 0,
		  RERAND_SRC_RDRAND | RERAND_SRC_RDTSC, RERAND_SRC_RDSEED },
		{ "both failing", 1, 1, 1, FAIL, FAIL, 0,
		  RERAND_SRC_RDTSC, RERAND_SRC_RDSEED | RERAND_SRC_RDRAND },
		{ "rdseed succeeding on the 16th try", 1, 0, 1, FLAKY, GOOD, 0,
		  RERAND_SRC_RDSEED | RERAND_SRC_RDTSC, 0 },
		{ "TSC frozen", 1, 1, 1, GOOD, GOOD, 1,
		  RERAND_SRC_RDSEED | RERAND_SRC_RDRAND, RERAND_SRC_RDTSC },
		{ "TSC stepping back once", 0, 0, 1, GOOD, GOOD, 2, 0, RERAND_SRC_RDTSC },
		{ "everything stuck", 1, 1, 1, ONES, ZEROS, 1,
		  0, RERAND_SRC_RDSEED | RERAND_SRC_RDRAND | RERAND_SRC_RDTSC },
	};
	uint8_t seed_a[32], seed_b[32], zero[32] = { 0 };
	struct rr_rng rng;

	for (int i = 0; i < 32; i++) {
		seed_a[i] = (uint8_t)(i * 7 + 1);
		seed_b[i] = (uint8_t)(i * 7 + 1);
	}
	seed_b[31] ^= 1;

	for (size_t i = 0; i < sizeof(sc) / sizeof(sc[0]); i++) {
		const struct scenario *s = &sc[i];
		struct rr_entropy_ops ops = {
			.rdseed = s->has_rdseed ? f_rdseed : NULL,
			.rdrand = s->has_rdrand ? f_rdrand : NULL,
			.rdtsc = s->has_tsc ? f_rdtsc : NULL,
		};
		uint64_t a1[4], a2[4], b[4], z[4];

		seed_mode = s->sm;
		rand_mode = s->rm;
		tsc_mode = s->tsc;
		draws(seed_a, &ops, 0, a1, &rng);
		T_OK(rng.sources_used == (s->used | RERAND_SRC_SEED) && rng.sources_rejected == s->rejected,
		     "rng %s: used %#x rejected %#x", s->name, rng.sources_used, rng.sources_rejected);
		draws(seed_a, &ops, 0, a2, &rng);
		T_OK(memcmp(a1, a2, sizeof(a1)) == 0, "rng %s: same seed and sources, same draws", s->name);
		draws(seed_b, &ops, 0, b, &rng);
		T_OK(memcmp(a1, b, sizeof(a1)) != 0, "rng %s: seeds differing in one bit, different draws", s->name);
		draws(zero, &ops, 0, z, &rng);
		T_OK(!(rng.sources_used & RERAND_SRC_SEED) && rng.sources_used == s->used,
		     "rng %s: an all-zero seed is not counted", s->name);
	}

	/* A working RDRAND changes the key even with the same seed. */
	struct rr_entropy_ops ops = { .rdrand = f_rdrand, .rdtsc = f_rdtsc };
	uint64_t x[4], y[4];
	rand_mode = GOOD;
	tsc_mode = 0;
	draws(seed_a, &ops, 0, x, &rng);
	draws(seed_a, &ops, 77, y, &rng);
	T_OK(memcmp(x, y, sizeof(x)) != 0, "rng: different RDRAND output, different draws");
	draws(NULL, &ops, 0, x, &rng);
	T_OK(!(rng.sources_used & RERAND_SRC_SEED), "rng: NULL seed is not counted");
	rr_rng_init(&rng, NULL, NULL);
	T_OK(rng.sources_used == 0 && rng.sources_rejected == 0, "rng: no seed, no ops: nothing used");
}

/* The draw is BLAKE2s(key, counter) consumed 8 bytes at a time. */
static void test_counter_mode(void)
{
	struct rr_rng rng;
	uint8_t seed[32];
	uint8_t blk[32], ctr[8] = { 0 };
	struct rr_blake2s s;
	int ok = 1;

	memset(seed, 0x42, sizeof(seed));
	rr_rng_init(&rng, seed, NULL);
	uint8_t key[32];
	memcpy(key, rng.key, 32);
	for (uint64_t c = 0; c < 3; c++) {
		for (int i = 0; i < 8; i++)
			ctr[i] = (uint8_t)(c >> (8 * i));
		rr_blake2s_init(&s, 32, key, 32);
		rr_blake2s_update(&s, ctr, 8);
		rr_blake2s_final(&s, blk);
		for (int w = 0; w < 4; w++) {
			uint64_t want = 0;
			for (int i = 7; i >= 0; i--)
				want = want << 8 | blk[8 * w + i];
			if (rr_rng_u64(&rng) != want)
				ok = 0;
		}
	}
	T_OK(ok, "rng: u64 draws are BLAKE2s(key, counter) in 8-byte pieces");
	rr_rng_wipe(&rng);
	uint8_t zero[sizeof(rng)] = { 0 };
	T_OK(memcmp(&rng, zero, sizeof(rng)) == 0, "rng: wipe clears the whole state");
	uint8_t buf[100];
	memset(buf, 0xff, sizeof(buf));
	rr_memzero_explicit(buf + 1, 98);
	T_OK(buf[0] == 0xff && buf[99] == 0xff && buf[1] == 0 && buf[98] == 0,
	     "rng: memzero_explicit clears exactly the range");
}

/* Upper tail critical value of chi-square at p = 0.001 (Wilson-Hilferty). */
static double chi2_crit(double df)
{
	double z = 3.0902, k = 2.0 / (9.0 * df);
	return df * pow(1.0 - k + z * sqrt(k), 3.0);
}

static double chi2(const uint64_t *obs, int buckets, double expected)
{
	double x = 0;
	for (int i = 0; i < buckets; i++)
		x += (obs[i] - expected) * (obs[i] - expected) / expected;
	return x;
}

static void test_uniform(void)
{
	struct rr_rng rng;
	uint8_t seed[32] = { 1, 2, 3 };
	struct rr_entropy_ops stuck = { .rdrand = f_rdrand, .rdtsc = f_rdtsc };
	const int draws_n = 100000;

	rand_mode = ONES;       /* a stuck source: the seed alone carries it */
	tsc_mode = 1;
	reset_sources(0);
	rr_rng_init(&rng, seed, &stuck);

	uint64_t obs[7] = { 0 };
	int out_of_range = 0;
	for (int i = 0; i < draws_n; i++) {
		uint64_t v = rr_rng_uniform(&rng, 7);
		if (v >= 7)
			out_of_range++;
		else
			obs[v]++;
	}
	double x = chi2(obs, 7, draws_n / 7.0);
	T_OK(out_of_range == 0 && x < chi2_crit(6), "uniform(7): chi-square %.2f < %.2f (p > 0.001)",
	     x, chi2_crit(6));

	/* n = 2/3 of 2^64: plain modulo would make the lower half of the
	 * range twice as likely; rejection must keep the ten deciles even. */
	const uint64_t n = 0xaaaaaaaaaaaaaaaaULL;
	uint64_t dec[10] = { 0 };
	out_of_range = 0;
	for (int i = 0; i < draws_n; i++) {
		uint64_t v = rr_rng_uniform(&rng, n);
		if (v >= n)
			out_of_range++;
		else
			dec[(unsigned)((unsigned __int128)v * 10 / n)]++;
	}
	x = chi2(dec, 10, draws_n / 10.0);
	T_OK(out_of_range == 0 && x < chi2_crit(9), "uniform(2/3 * 2^64): chi-square over deciles %.2f < %.2f",
	     x, chi2_crit(9));

	uint64_t b[1000] = { 0 };
	for (int i = 0; i < draws_n; i++)
		b[rr_rng_uniform(&rng, 1000)]++;
	x = chi2(b, 1000, draws_n / 1000.0);
	T_OK(x < chi2_crit(999), "uniform(1000): chi-square %.1f < %.1f", x, chi2_crit(999));

	int ok = 1;
	for (int i = 0; i < 1000; i++) {
		if (rr_rng_uniform(&rng, 1) != 0 || rr_rng_uniform(&rng, UINT64_MAX) == UINT64_MAX ||
		    rr_rng_uniform(&rng, 1ULL << 63) >> 63)
			ok = 0;
	}
	T_OK(ok, "uniform: n = 1, 2^63 and 2^64-1 stay in range");
}

static uint64_t first_draw(const uint8_t *seed, const struct rr_seed_span *ks, unsigned n,
			   const struct rr_entropy_ops *ops, struct rr_rng *rng)
{
	reset_sources(0);
	rr_rng_init_seeds(rng, seed, ks, n, ops);
	return rr_rng_u64(rng);
}

/* SETUP_RNG_SEED bytes: mixed and credited, then replaced by a derived
 * value that differs from the input and from the draws. */
static void test_kernel_seed(void)
{
	struct rr_entropy_ops tsc_only = { .rdtsc = f_rdtsc };
	uint8_t zero[32] = { 0 }, hseed[32], k1[32], k2[64], kz[32], ks8[8];
	uint8_t in1[32], in2[64];
	struct rr_rng rng, plain;
	uint64_t d_plain, d_k, d_k2;

	for (int i = 0; i < 32; i++) {
		hseed[i] = (uint8_t)(i + 1);
		k1[i] = (uint8_t)(0x55 ^ (i * 13));
		kz[i] = 0;
	}
	for (int i = 0; i < 64; i++)
		k2[i] = (uint8_t)(i * 29 + 7);
	memset(ks8, 0x77, sizeof(ks8));
	tsc_mode = 0;

	/* No nodes: exactly rr_rng_init's key. */
	reset_sources(0);
	rr_rng_init(&plain, hseed, &tsc_only);
	reset_sources(0);
	rr_rng_init_seeds(&rng, hseed, NULL, 0, &tsc_only);
	T_OK(memcmp(plain.key, rng.key, 32) == 0 && rng.sources_used == plain.sources_used,
	     "kernel seed: no nodes, same key as rr_rng_init");

	/* Signed image: zero header seed, a kernel node, only RDTSC besides. */
	struct rr_seed_span one = { k1, 32 };
	d_plain = first_draw(zero, NULL, 0, &tsc_only, &rng);
	T_OK(rng.sources_used == RERAND_SRC_RDTSC && rr_rng_weak(rng.sources_used),
	     "kernel seed: zero header seed and no node: RDTSC only, weak");
	d_k = first_draw(zero, &one, 1, &tsc_only, &rng);
	T_OK(rng.sources_used == (RERAND_SRC_KERNEL_SEED | RERAND_SRC_RDTSC) && rng.sources_rejected == 0 &&
	     !rr_rng_weak(rng.sources_used),
	     "kernel seed: a 32-byte node is used (%#x), the zero header seed is not, not weak",
	     rng.sources_used);
	T_OK(d_k != d_plain, "kernel seed: the node changes the draws");
	k1[31] ^= 1;
	d_k2 = first_draw(zero, &one, 1, &tsc_only, &rng);
	k1[31] ^= 1;
	T_OK(d_k2 != d_k, "kernel seed: nodes differing in one bit, different draws");

	/* All-zero or short nodes are mixed but not credited. */
	struct rr_seed_span zs = { kz, 32 }, shorts = { ks8, 8 };
	first_draw(hseed, &zs, 1, &tsc_only, &rng);
	T_OK(!(rng.sources_used & RERAND_SRC_KERNEL_SEED) && (rng.sources_rejected & RERAND_SRC_KERNEL_SEED) &&
	     (rng.sources_used & RERAND_SRC_SEED), "kernel seed: an all-zero node is rejected");
	first_draw(hseed, &shorts, 1, &tsc_only, &rng);
	T_OK(!(rng.sources_used & RERAND_SRC_KERNEL_SEED) && (rng.sources_rejected & RERAND_SRC_KERNEL_SEED),
	     "kernel seed: an 8-byte node is rejected");
	struct rr_seed_span mix[2] = { { ks8, 8 }, { k2, 64 } };
	first_draw(NULL, mix, 2, NULL, &rng);
	T_OK(rng.sources_used == RERAND_SRC_KERNEL_SEED && rng.sources_rejected == 0,
	     "kernel seed: one good node of two is enough");

	/* Replacement: each node gets its own derived bytes. */
	memcpy(in1, k1, 32);
	memcpy(in2, k2, 64);
	struct rr_seed_span two[2] = { { k1, 32 }, { k2, 64 } };
	reset_sources(0);
	rr_rng_init_seeds(&rng, hseed, two, 2, &tsc_only);
	struct rr_rng copy = rng;
	rr_rng_replace_seeds(&rng, two, 2);
	T_OK(memcmp(k1, in1, 32) != 0 && memcmp(k2, in2, 32) != 0 && memcmp(k2 + 32, in2 + 32, 32) != 0,
	     "kernel seed: both nodes overwritten, every block");
	T_OK(memcmp(k1, k2, 32) != 0 && memcmp(k2, k2 + 32, 32) != 0,
	     "kernel seed: the nodes and their blocks get different values");
	int nz = 0;
	for (int i = 0; i < 32; i++)
		nz |= k1[i];
	T_OK(nz, "kernel seed: the replacement is not zeros (the next kernel still gets a seed)");
	/* The replacement is not what was drawn: the first 64 draw bytes. */
	uint8_t drawn[64];
	for (int i = 0; i < 8; i++)
		for (int b = 0; b < 8; b++)
			drawn[8 * i + b] = (uint8_t)(rr_rng_u64(&copy) >> (8 * b));
	int overlap = 0;
	for (int off = 0; off + 8 <= 64; off += 8)
		for (int w = 0; w + 8 <= 32; w += 8)
			overlap |= memcmp(drawn + off, k1 + w, 8) == 0 || memcmp(drawn + off, k2 + w, 8) == 0;
	T_OK(!overlap, "kernel seed: no 8-byte word of the replacement equals a draw");
	/* The replacement is a function of the key alone: the input bytes
	 * (now gone) are not needed to reproduce it, and another key gives
	 * another value. */
	uint8_t again[32], other[32];
	rr_rng_derive(&rng, 0, again, 32);
	T_OK(memcmp(again, k1, 32) == 0, "kernel seed: derived value is deterministic in the key");
	reset_sources(5);
	rr_rng_init_seeds(&copy, hseed, NULL, 0, &tsc_only);
	rr_rng_derive(&copy, 0, other, 32);
	T_OK(memcmp(other, k1, 32) != 0, "kernel seed: another key, another replacement");
	uint8_t before[5] = { 9, 9, 9, 9, 9 };
	rr_rng_derive(&rng, 3, before + 1, 3);
	T_OK(before[0] == 9 && before[4] == 9, "kernel seed: derive writes exactly len bytes");

	/* The weak rule. */
	T_OK(rr_rng_weak(0) && rr_rng_weak(RERAND_SRC_RDTSC) && !rr_rng_weak(RERAND_SRC_SEED) &&
	     !rr_rng_weak(RERAND_SRC_KERNEL_SEED | RERAND_SRC_RDTSC) &&
	     !rr_rng_weak(RERAND_SRC_RDRAND | RERAND_SRC_RDTSC) && !rr_rng_weak(RERAND_SRC_RDSEED),
	     "weak: only when nothing but RDTSC was used");
}

int main(void)
{
	test_blake2s();
	test_sources();
	test_counter_mode();
	test_kernel_seed();
	test_uniform();
	return t_done();
}
