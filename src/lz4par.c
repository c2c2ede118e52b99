/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Parallel LZ4 compression for the image writer (see lz4par.h).  liblz4
 * compresses every chunk; this file only schedules the chunks and joins
 * their blocks.  Joining works because an LZ4 block is a list of sequences
 * (literals, then a match that refers back by offset in the *output*): a
 * chunk's block ends with a literals-only sequence, and its literals are
 * the chunk's last bytes verbatim, so they can be carried into the next
 * chunk's first sequence, whose match offsets stay valid in the joined
 * output.  The end-of-block rules (last 5 bytes literals, last match at
 * least 12 bytes before the end) hold for the joined block because they
 * held for the last chunk's.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <lz4.h>
#include <lz4hc.h>

#include "kernel.h"
#include "lz4par.h"

enum { CH_QUEUED, CH_BUSY, CH_DONE };

struct chunk {
	const uint8_t *base;
	size_t off, len;
	uint8_t *out;               /* its LZ4 block, malloc'd; freed once joined */
	size_t out_len;
	int state;
	int err;
	bool gated;                 /* queued by the decode hook: wait for the bytes */
};

struct rr_lz4par {
	pthread_mutex_t lock;
	pthread_cond_t wake;        /* workers: chunks queued, bytes decoded, stop */
	pthread_cond_t done;        /* a chunk finished */
	struct chunk *c;            /* taken in order: c[0, next) are busy or done */
	size_t n, cap, next;
	size_t ready;               /* gated chunks: base[0, ready) is decoded */
	bool peeked, stop;
	size_t hooked, early;       /* rr_lz4par_stats() */
	int level;
	unsigned nworkers;
	pthread_t t[RR_LZ4PAR_MAX_THREADS];
};

unsigned rr_lz4par_default_threads(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return 1;
	n = CPU_COUNT(&set);
	if (n < 1)
		return 1;
	return n > RR_LZ4PAR_MAX_THREADS ? RR_LZ4PAR_MAX_THREADS : (unsigned)n;
}

size_t rr_lz4par_bound(size_t len)
{
	size_t full = len / RR_LZ4PAR_CHUNK, rest = len % RR_LZ4PAR_CHUNK;

	/* Joining never grows the sum of the chunks' blocks (see join_chunk). */
	return full * (size_t)LZ4_compressBound((int)RR_LZ4PAR_CHUNK) +
	       (size_t)LZ4_compressBound((int)rest) + 16;
}

static bool takeable(struct rr_lz4par *p)
{
	while (p->next < p->n && p->c[p->next].state == CH_DONE)     /* cancelled */
		p->next++;
	return p->next < p->n &&
	       (!p->c[p->next].gated || p->c[p->next].off + p->c[p->next].len <= p->ready);
}

/* buf is about to be freed: drop its queued chunks, wait for its busy ones. */
static void cancel_base(struct rr_lz4par *p, const uint8_t *buf)
{
	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < p->n; i++)
		if (p->c[i].base == buf && p->c[i].state == CH_QUEUED) {
			p->c[i].state = CH_DONE;
			p->c[i].err = -ECANCELED;
		}
	for (size_t i = 0; i < p->n; i++)
		while (p->c[i].base == buf && p->c[i].state == CH_BUSY)
			pthread_cond_wait(&p->done, &p->lock);
	p->ready = 0;
	pthread_mutex_unlock(&p->lock);
}

/* Compress the next chunk; called and returns with the lock held. */
static void run_next(struct rr_lz4par *p)
{
	size_t i = p->next++;
	struct chunk c = p->c[i];
	uint8_t *out;
	int n = -1, cap = LZ4_compressBound((int)c.len);

	p->c[i].state = CH_BUSY;
	pthread_mutex_unlock(&p->lock);
	out = malloc((size_t)cap);
	if (out && p->level > 0)
		n = LZ4_compress_HC((const char *)c.base + c.off, (char *)out, (int)c.len, cap, p->level);
	else if (out)
		n = LZ4_compress_default((const char *)c.base + c.off, (char *)out, (int)c.len, cap);
	pthread_mutex_lock(&p->lock);
	if (!out)
		p->c[i].err = -ENOMEM;
	else if (n <= 0)
		p->c[i].err = -EIO;
	if (p->c[i].err) {
		free(out);
		out = NULL;
	}
	p->c[i].out = out;
	p->c[i].out_len = n > 0 ? (size_t)n : 0;
	p->c[i].state = CH_DONE;
	pthread_cond_broadcast(&p->done);
}

static void *worker(void *arg)
{
	struct rr_lz4par *p = arg;

	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		if (takeable(p))
			run_next(p);
		else
			pthread_cond_wait(&p->wake, &p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int rr_lz4par_new(unsigned threads, int level, struct rr_lz4par **ret)
{
	struct rr_lz4par *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	pthread_cond_init(&p->done, NULL);
	p->level = level;
	if (threads > RR_LZ4PAR_MAX_THREADS)
		threads = RR_LZ4PAR_MAX_THREADS;
	/* The caller is one of the threads: it decodes, then helps. */
	for (unsigned i = 1; i < threads; i++) {
		/* Fewer workers only make it slower, never different. */
		if (pthread_create(&p->t[p->nworkers], NULL, worker, p) != 0)
			break;
		p->nworkers++;
	}
	*ret = p;
	return 0;
}

void rr_lz4par_free(struct rr_lz4par *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->nworkers; i++)
		pthread_join(p->t[i], NULL);
	for (size_t i = 0; i < p->n; i++)
		free(p->c[i].out);
	free(p->c);
	pthread_cond_destroy(&p->done);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

/* Queue base[off, off + len) in chunks; lock held.  Returns the first
 * chunk's index, or -ENOMEM. */
static ssize_t queue_range(struct rr_lz4par *p, const uint8_t *base, size_t off, size_t len,
			   bool gated)
{
	size_t want = (len + RR_LZ4PAR_CHUNK - 1) / RR_LZ4PAR_CHUNK, first = p->n;

	if (p->n + want > p->cap) {
		size_t ncap = (p->n + want) * 2;
		struct chunk *nc = realloc(p->c, ncap * sizeof(*nc));

		if (!nc)
			return -ENOMEM;
		p->c = nc;
		p->cap = ncap;
	}
	for (size_t done = 0; done < len; done += RR_LZ4PAR_CHUNK) {
		struct chunk *c = &p->c[p->n++];

		memset(c, 0, sizeof(*c));
		c->base = base;
		c->off = off + done;
		c->len = len - done < RR_LZ4PAR_CHUNK ? len - done : RR_LZ4PAR_CHUNK;
		c->gated = gated;
	}
	pthread_cond_broadcast(&p->wake);
	return (ssize_t)first;
}

void rr_lz4par_decode_hook(void *arg, const uint8_t *buf, size_t len, size_t total)
{
	struct rr_lz4par *p = arg;
	uint64_t off[RR_MAX_ELF_SEGMENTS], size[RR_MAX_ELF_SEGMENTS];
	int n = 0;

	if (total == 0) {
		cancel_base(p, buf);
		return;
	}
	if (!p->peeked) {
		n = rr_elf_peek_loads(buf, len, total, off, size, RR_MAX_ELF_SEGMENTS);
		/* Not yet there: ask again with more bytes; no ELF: give up, the
		 * whole work then happens in rr_lz4par_block. */
		p->peeked = n != 0;
	}
	pthread_mutex_lock(&p->lock);
	/* In file order, the decoder's order. */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && off[j - 1] > off[j]; j--) {
			uint64_t t = off[j]; off[j] = off[j - 1]; off[j - 1] = t;
			t = size[j]; size[j] = size[j - 1]; size[j - 1] = t;
		}
	for (int i = 0; i < n; i++) {
		if (queue_range(p, buf, (size_t)off[i], (size_t)size[i], true) < 0)
			break;      /* rr_lz4par_block queues what is missing */
		p->hooked += (size[i] + RR_LZ4PAR_CHUNK - 1) / RR_LZ4PAR_CHUNK;
	}
	if (len == total)
		for (size_t i = 0; i < p->n; i++)
			p->early += p->c[i].base == buf && p->c[i].state == CH_DONE;
	p->ready = len;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
}

void rr_lz4par_stats(struct rr_lz4par *p, size_t *ret_hooked, size_t *ret_early)
{
	pthread_mutex_lock(&p->lock);
	*ret_hooked = p->hooked;
	*ret_early = p->early;
	pthread_mutex_unlock(&p->lock);
}

/* Where the sequences of one LZ4 block liblz4 wrote begin and end. */
struct seqs {
	size_t first_lits;          /* literal count of the first sequence */
	size_t first_body;          /* the byte after them */
	size_t last_start;          /* token of the last (literals-only) sequence */
	size_t last_lits;
};

static int lz4_seqs(const uint8_t *b, size_t n, struct seqs *s)
{
	size_t pos = 0;

	for (bool first = true;; first = false) {
		size_t start = pos, lits;
		unsigned tok;

		if (pos >= n)
			return -EIO;
		tok = b[pos++];
		lits = tok >> 4;
		if (lits == 15)
			do {
				if (pos >= n)
					return -EIO;
				lits += b[pos];
			} while (b[pos++] == 255);
		if (lits > n - pos)
			return -EIO;
		pos += lits;
		if (first) {
			s->first_lits = lits;
			s->first_body = pos;
		}
		if (pos == n) {
			s->last_start = start;
			s->last_lits = lits;
			return 0;
		}
		if (n - pos < 2)
			return -EIO;
		pos += 2;
		if ((tok & 15) == 15)
			do {
				if (pos >= n)
					return -EIO;
			} while (b[pos++] == 255);
	}
}

/* The joined block being written. */
struct join {
	uint8_t *dst;
	size_t cap, pos;
	const uint8_t *src;
	size_t pend;                /* src[pend, ...) are literals not yet written */
};

static int put_token(struct join *j, size_t lits, unsigned match)
{
	size_t need = 1 + (lits >= 15 ? (lits - 15) / 255 + 1 : 0);

	if (need > j->cap - j->pos)
		return -ENOSPC;
	j->dst[j->pos++] = (uint8_t)((lits >= 15 ? 15 : lits) << 4 | match);
	if (lits >= 15) {
		for (lits -= 15; lits >= 255; lits -= 255)
			j->dst[j->pos++] = 255;
		j->dst[j->pos++] = (uint8_t)lits;
	}
	return 0;
}

static int put(struct join *j, const uint8_t *p, size_t n)
{
	if (n > j->cap - j->pos)
		return -ENOSPC;
	memcpy(j->dst + j->pos, p, n);
	j->pos += n;
	return 0;
}

/* Append one chunk's block: its first sequence takes the literals pending
 * from before, its last one's literals become pending.  The token and
 * length bytes of one merged run never outnumber those of the two runs
 * merged, so the joined block is no larger than the chunks' blocks. */
static int join_chunk(struct join *j, const struct chunk *c)
{
	struct seqs s;
	size_t lits;
	int r;

	if (lz4_seqs(c->out, c->out_len, &s) < 0 || s.first_lits > c->len ||
	    s.last_lits > c->len ||
	    /* Literals are the input's bytes: check that this reading agrees. */
	    memcmp(c->out + s.first_body - s.first_lits, c->base + c->off, s.first_lits) ||
	    memcmp(c->out + c->out_len - s.last_lits, c->base + c->off + c->len - s.last_lits,
		   s.last_lits))
		return -EIO;
	if (s.last_start == 0)          /* literals only: all of it pending */
		return s.last_lits == c->len ? 0 : -EIO;
	lits = c->off + s.first_lits - j->pend;
	r = put_token(j, lits, c->out[0] & 15);
	if (r == 0)
		r = put(j, j->src + j->pend, lits);
	if (r == 0)
		r = put(j, c->out + s.first_body, s.last_start - s.first_body);
	j->pend = c->off + c->len - s.last_lits;
	return r;
}

/* The chunks of base[off, off + len) queued earlier, or -1. */
static ssize_t find_range(const struct rr_lz4par *p, const uint8_t *base, size_t off, size_t len)
{
	size_t want = (len + RR_LZ4PAR_CHUNK - 1) / RR_LZ4PAR_CHUNK;

	for (size_t i = 0; i + want <= p->n; i++) {
		size_t k;

		if (p->c[i].base != base || p->c[i].off != off || p->c[i].out_len == SIZE_MAX)
			continue;
		for (k = 0; k < want; k++) {
			const struct chunk *c = &p->c[i + k];
			size_t o = off + k * RR_LZ4PAR_CHUNK;

			if (c->base != base || c->off != o ||
			    c->len != (len - k * RR_LZ4PAR_CHUNK < RR_LZ4PAR_CHUNK ?
				       len - k * RR_LZ4PAR_CHUNK : RR_LZ4PAR_CHUNK))
				break;
		}
		if (k == want)
			return (ssize_t)i;
	}
	return -1;
}

int rr_lz4par_block(struct rr_lz4par *p, const uint8_t *base, size_t off, size_t len,
		    uint8_t *dst, size_t cap, size_t *ret_len)
{
	size_t want = (len + RR_LZ4PAR_CHUNK - 1) / RR_LZ4PAR_CHUNK;
	struct join j = { .dst = dst, .cap = cap, .src = base, .pend = off };
	ssize_t first;
	int r = 0;

	if (len > LZ4_MAX_INPUT_SIZE)
		return -EFBIG;
	pthread_mutex_lock(&p->lock);
	/* The caller holds all of base: nothing of it waits for the decoder. */
	for (size_t i = 0; i < p->n; i++)
		if (p->c[i].base == base)
			p->c[i].gated = false;
	pthread_cond_broadcast(&p->wake);
	first = want ? find_range(p, base, off, len) : 0;
	if (first < 0)
		first = queue_range(p, base, off, len, false);
	if (first < 0) {
		pthread_mutex_unlock(&p->lock);
		return (int)first;
	}
	for (size_t i = (size_t)first; r == 0 && i < (size_t)first + want; i++) {
		struct chunk c;

		/* Help rather than wait: the caller is one of the threads. */
		while (p->c[i].state != CH_DONE) {
			if (takeable(p))
				run_next(p);
			else
				pthread_cond_wait(&p->done, &p->lock);
		}
		c = p->c[i];
		p->c[i].out = NULL;
		p->c[i].out_len = SIZE_MAX;     /* joined: never found again */
		pthread_mutex_unlock(&p->lock);
		r = c.err ? c.err : join_chunk(&j, &c);
		free(c.out);
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	if (r == 0)
		r = put_token(&j, off + len - j.pend, 0);
	if (r == 0)
		r = put(&j, base + j.pend, off + len - j.pend);
	if (r < 0)
		return r;
	*ret_len = j.pos;
	return 0;
}
