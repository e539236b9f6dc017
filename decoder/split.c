// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The merge of the streams' events by time, and one CPU's stream on several cores.
 *
 * Each stream (decode.c) produces its events in chunks; helper threads decode chunks
 * ahead of the merge, which hands the events of all streams, in time order, to the
 * sink, and decodes chunks too whenever it has no event to take (-j N: N threads). The order depends only on the events, not on the number of threads. With more
 * threads than streams, a stream is split at PSBs into pieces decoded in parallel and
 * joined in trace order (ptd_piece_join()), so that its events are those of the
 * sequential decode.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include "capstone_lazy.h"
#include "log.h"
#include "piece.h"

/*
 * Chunks the merge's current piece of a stream may be decoded ahead of the merge; and
 * pieces after it that may be decoded (whole) ahead of it, per thread: the window that
 * bounds the memory of a split stream to a few pieces' events, whatever its length.
 * Two a thread: with one, a thread that decoded the next pieces while the current one
 * (of more branches) was still decoding waited, a fifth of the time (mruby, -j 2).
 */
#define MAX_AHEAD 4
/* Caches of pieces the merge is past, for the pieces made next (piece_open()). */
#define CACHE_POOL 16
#define AHEAD_PIECES_PER_JOB 2

struct chunk {
	struct ptd_event *ev;
	size_t nr;
	struct chunk *next;
};

/* A piece of a stream in the merge: its decoded-ahead chunks (guarded by the lock). */
struct piece {
	/*
	 * Made by the thread that decodes it first (piece_open()), so that a piece takes
	 * the decoders (and their warm caches) of the pieces that ended before it
	 */
	struct ptd_stream *s;
	const struct ptd_stream *parent;	/* the stream it is a piece of */
	uint64_t begin, stop, stop_ip, end;	/* its bytes (ptd_piece_new()) */
	struct chunk *head, *tail;	/* decoded, not yet merged */
	unsigned queued;		/* chunks in head..tail */
	uint64_t done_bytes;		/* its bytes decoded (progress) */
	bool busy;			/* a thread is decoding it */
	int owner;			/* the thread that decodes it (decode_or_wait()'s
					 * self + 1), 0: none yet */
	int last;			/* the thread that decoded its last chunk (self + 1) */
	bool finished;			/* fully decoded */
	bool replay;			/* decoded again from the stream's start (next_piece()) */
};

/* One stream in the merge: its pieces (one when not split) and the merge cursor. */
struct lane {
	struct ptd_stream *s;
	bool split;			/* in pieces (each a stream of its own) */
	struct piece *pc;		/* pieces, in trace order */
	size_t nr_pc;
	size_t nr_live;			/* pieces in use: a decode to the end replaced the rest */
	size_t at;			/* the piece being merged; later ones decode ahead */
	bool wanted;			/* the merge waits for it */
	struct chunk *cur;		/* chunk being merged (merge thread only) */
	size_t pos;			/* next event in cur */
	uint64_t floor;			/* the last time merged: times never go back */
	uint64_t add;			/* timeless: instructions of the pieces before */
	struct ptd_join join;		/* events the join with the piece before adds */
	size_t join_pos;
	uint32_t clean_joins;		/* joins that are no resync (one sync less) */
	uint64_t join_calls, join_returns;	/* counted by the joins' events */
	uint64_t delivered;		/* events the merge took from it */
	uint64_t skip;			/* events of a replay to drop: taken already */
	uint64_t replayed;		/* bytes the replays decoded again */
	uint64_t redecoded;		/* ... and the pieces given up had decoded */
};

struct helper {
	struct merge *m;
	int self;
};

struct merge {
	struct lane *lanes;
	size_t nr;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct chunk *free;		/* recycled chunks (free_lock) */
	struct ptd_caches caches[CACHE_POOL];	/* recycled caches (free_lock) */
	unsigned nr_caches;
	pthread_mutex_t free_lock;
	size_t ahead;			/* pieces after the current one that may decode */
	unsigned held, held_peak;	/* chunks queued in all pieces, and the most */
	size_t reach;			/* the most pieces a worker went past the merge's */
	unsigned moves;			/* chunks decoded on another thread than the piece's
					 * chunk before (its decoders' caches went cold) */
	bool stop;			/* the merge failed: workers quit */
	double idle_workers, idle_merge;	/* seconds the threads waited (-vv) */
	double first_chunk, last_finished;	/* when (PTBPF_SPLIT_TIMES) */
	struct ptd_stream **streams;	/* the lanes' */
	size_t pieces;			/* in all lanes */
	pthread_t *tids;		/* the helper threads */
	struct helper *helpers;		/* theirs: 1..; the merge thread is 0 */
	int nthreads;
	double start;			/* when it started (progress) */
	int err;			/* first decode allocation error */
};

#define CHUNK_BYTES ((PTD_CHUNK_EVENTS + PTD_CHUNK_SLACK) * sizeof(struct ptd_event))

/*
 * A chunk's events, mapped with their pages in place: the pieces of a split stream
 * decode ahead of the merge, into hundreds of chunks, and a page fault per 4 KiB costs
 * more than the events it holds on a virtual machine (a tenth of the CPU of the decode).
 */
static struct ptd_event *chunk_events_alloc(void)
{
	void *p = mmap(NULL, CHUNK_BYTES, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * Chunks are recycled through a free list: a fresh 200 KiB allocation per chunk is an
 * mmap and its page faults, a cost per event as high as decoding it.
 */
static struct chunk *get_chunk(struct merge *m)
{
	struct chunk *c;

	pthread_mutex_lock(&m->free_lock);
	c = m->free;
	if (c)
		m->free = c->next;
	pthread_mutex_unlock(&m->free_lock);
	if (c)
		return c;
	c = malloc(sizeof(*c));
	if (c)
		c->ev = chunk_events_alloc();
	if (!c || !c->ev) {
		free(c);
		return NULL;
	}
	return c;
}

static void put_chunk(struct merge *m, struct chunk *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&m->free_lock);
	c->next = m->free;
	m->free = c;
	pthread_mutex_unlock(&m->free_lock);
}

static void free_chunks(struct chunk *c)
{
	while (c) {
		struct chunk *n = c->next;

		munmap(c->ev, CHUNK_BYTES);
		free(c);
		c = n;
	}
}

/* Piece p's stream, made on first use, with the caches of a piece before; 0 or -ENOMEM. */
static int piece_open(struct merge *m, struct piece *p)
{
	if (p->s)
		return 0;
	p->s = ptd_piece_new(p->parent, p->begin, p->stop, p->stop_ip, p->end);
	if (!p->s)
		return -ENOMEM;
	pthread_mutex_lock(&m->free_lock);
	if (m->nr_caches)
		ptd_stream_caches_give(p->s, &m->caches[--m->nr_caches]);
	pthread_mutex_unlock(&m->free_lock);
	return 0;
}

/* The caches of piece p, which the merge is past, for the next piece made. */
static void piece_caches_put(struct merge *m, struct piece *p)
{
	struct ptd_caches c;

	if (!p->s)
		return;
	ptd_stream_caches_take(p->s, &c);
	pthread_mutex_lock(&m->free_lock);
	if (m->nr_caches < CACHE_POOL) {
		m->caches[m->nr_caches++] = c;
		c.classes = NULL;
		c.fns = NULL;
	}
	pthread_mutex_unlock(&m->free_lock);
	ptd_caches_free(&c);
}

static struct chunk *decode_chunk(struct merge *m, struct piece *p, int *err)
{
	struct chunk *c;

	*err = piece_open(m, p);
	if (*err)
		return NULL;
	c = get_chunk(m);
	if (!c) {
		*err = -ENOMEM;
		return NULL;
	}
	c->nr = ptd_stream_fill(p->s, c->ev);
	c->next = NULL;
	return c;
}

/* Adds a decoded chunk to its piece; called with the lock held. */
static void piece_push(struct merge *m, struct piece *p, struct chunk *c)
{
	if (p->s) {
		p->done_bytes = ptd_stream_done_bytes(p->s);
		if (ptd_stream_done(p->s)) {
			p->finished = true;
			if (ptd_marking())
				m->last_finished = ptd_seconds();
		}
	}
	if (ptd_marking() && !m->first_chunk)
		m->first_chunk = ptd_seconds();
	if (!c)
		return;
	if (!c->nr) {
		put_chunk(m, c);
		return;
	}
	if (p->tail)
		p->tail->next = c;
	else
		p->head = c;
	p->tail = c;
	p->queued++;
	if (++m->held > m->held_peak)
		m->held_peak = m->held;
}

/*
 * The piece thread `self` should decode next, or NULL: its own pieces first (a piece
 * stays on one core, with its decoders' caches, instead of going back and forth chunk by
 * chunk), then one no thread began, then another thread's (rather than wait); among
 * those the merge's current pieces first (the one it waits for before all), each at
 * most MAX_AHEAD chunks ahead, then the pieces after them, decoded whole in the
 * background, m->ahead at most per stream.
 */
static struct piece *pick(struct merge *m, int self)
{
	struct piece *best = NULL;
	size_t i, k, reach = 0;
	int best_rank = -1;

	for (i = 0; i < m->nr; i++) {
		struct lane *l = &m->lanes[i];
		size_t window = l->at + 1 + m->ahead < l->nr_live ? l->at + 1 + m->ahead : l->nr_live;

		for (k = l->at; k < window; k++) {
			struct piece *p = &l->pc[k];
			bool current = k == l->at;
			int rank;

			/*
			 * a piece is bounded by its bytes: its thread decodes it to the end,
			 * rather than open another piece meanwhile (a fast decoder more, whose
			 * 2 MiB of fresh pages cost 3.5 us each on a virtual machine); a
			 * stream not split, or a replay from the stream's start, is not
			 */
			if (p->busy || p->finished ||
			    (current && (!l->split || p->replay) && p->queued >= MAX_AHEAD))
				continue;
			rank = p->owner == self + 1 ? 8 : !p->owner ? 4 : 0;
			rank += current ? 2 + l->wanted : 0;
			if (rank > best_rank || (rank == best_rank && best && p->queued < best->queued)) {
				best = p;
				best_rank = rank;
				reach = k - l->at;
			}
		}
	}
	if (reach > m->reach)
		m->reach = reach;
	return best;
}

/* Waits for the merge's condition, adding the seconds to *waited (lock held). */
static void wait_timed(struct merge *m, double *waited)
{
	double t0 = ptd_seconds();

	pthread_cond_wait(&m->cond, &m->lock);
	*waited += ptd_seconds() - t0;
}

/*
 * A thread decodes a chunk of what pick() gives it, or waits (adding the seconds to
 * *idle) if every piece in reach is being decoded or done: the helpers, and the merge
 * thread when it has no event to take. With the lock held (dropped while it decodes).
 */
static void decode_or_wait(struct merge *m, int self, double *idle)
{
	struct piece *p = pick(m, self);
	struct chunk *c;
	int err = 0;

	if (!p) {
		/* even when all is decoded: a join may ask for a piece again */
		wait_timed(m, idle);
		return;
	}
	p->busy = true;
	if (!p->owner)
		p->owner = self + 1;
	m->moves += p->last && p->last != self + 1;
	p->last = self + 1;
	pthread_mutex_unlock(&m->lock);
	c = decode_chunk(m, p, &err);
	pthread_mutex_lock(&m->lock);
	p->busy = false;
	if (err) {
		m->err = err;
		p->finished = true;
	}
	piece_push(m, p, c);
	pthread_cond_broadcast(&m->cond);
}

static void *worker(void *arg)
{
	struct helper *h = arg;
	struct merge *m = h->m;

	pthread_mutex_lock(&m->lock);
	while (!m->stop)
		decode_or_wait(m, h->self, &m->idle_workers);
	pthread_mutex_unlock(&m->lock);
	ptd_mark("worker exits");
	return NULL;
}

/* ---------------------------------------------------------------- pieces */

/*
 * One CPU's stream on several cores. The stream is split at PSBs into pieces of about
 * equal size, decoded in parallel, and joined in the merge, in trace order, so that the
 * events are those of the sequential decode:
 * - A piece ends where the sequential decode crosses the next piece's PSB+: at the
 *   MODE.Exec status update bound to its FUP's ip (PE_CLEAN), with the state there
 *   (thread, tracing on, the branch whose target the next block gives); or where a
 *   resync after an error finds that PSB (PE_SYNC); or where the bytes end, up to that
 *   PSB+'s PSBEND, with tracing off (PE_EOS).
 * - A piece after the first syncs at its PSB and withholds the START of its first
 *   block (piece_head). The join then gives what the sequential decode makes there: the
 *   call, return or jump the previous piece's last branch makes with that block
 *   (PE_CLEAN, same thread), the START (PE_SYNC: the sequential decode resyncs there too),
 *   or nothing (tracing off across the PSB). The hardware starts return compression
 *   afresh at each PSB, so no return of a piece needs a call of the piece before.
 * - Anything else (the trampoline of a uretprobe or a probed instruction's copy across
 *   the PSB, a return into the trampoline at the seam, another thread by the schedule,
 *   an error at the seam, events before the first block, a work budget that ran out)
 *   and the piece is decoded again, as a continuation of the state the piece before
 *   ended in, the way the sequential decode goes on through the PSB.
 * Times: a piece's never go back from the previous piece's; without timing packets,
 * times are instruction counts, and a piece's start from the pieces before.
 */
#define MIN_PIECE ((uint64_t)256 << 10)
#define MAX_PIECES 4096

/*
 * Bytes per piece at least (PTBPF_DECODE_PIECE overrides: the tests split small traces
 * into two pieces a thread). A long stream splits into pieces of about MIN_PIECE, so
 * that the window of pieces in flight bounds the memory.
 */
static uint64_t min_piece(void)
{
	const char *e = getenv("PTBPF_DECODE_PIECE");
	unsigned long long v;
	char *end;

	if (e && *e) {
		v = strtoull(e, &end, 0);
		if (!*end && v)
			return v;
	}
	return MIN_PIECE;
}

/* The ip of a FUP in a PSB+ (compressed against 0: the last ip is reset at PSB). */
static uint64_t psb_fup_ip(const struct pt_packet_ip *ip)
{
	switch (ip->ipc) {
	case pt_ipc_update_16:
		return ip->ip & 0xffff;
	case pt_ipc_update_32:
		return ip->ip & 0xffffffff;
	case pt_ipc_update_48:
		return ip->ip & 0xffffffffffffull;
	case pt_ipc_sext_48:
		return (uint64_t)((int64_t)(ip->ip << 16) >> 16);
	case pt_ipc_full:
		return ip->ip;
	default:
		return 0;
	}
}

/*
 * The offset just past the PSBEND of the PSB+ at `psb`, and its FUP's ip in *fup_ip (0:
 * none); 0 if that PSB+ cannot end a piece: a FUP without MODE.Exec (no status update
 * would mark where the flow meets it).
 */
static uint64_t boundary_end(const struct ptd_stream_opts *o, uint64_t psb, uint64_t *fup_ip)
{
	struct pt_packet_decoder *pkt = ptd_pkt_open(o->buf, o->size, &o->config);
	bool fup = false, exec = false;
	uint64_t end = 0, off;

	*fup_ip = 0;
	struct pt_packet p;
	int i;

	if (!pkt)
		return 0;
	if (pt_pkt_sync_set(pkt, psb) >= 0) {
		for (i = 0; i < 64 && pt_pkt_get_offset(pkt, &off) >= 0 &&
			    pt_pkt_next(pkt, &p, sizeof(p)) >= 0; i++) {
			if (p.type == ppt_fup) {
				fup = true;
				*fup_ip = psb_fup_ip(&p.payload.ip);
			}
			if (p.type == ppt_mode && p.payload.mode.leaf == pt_mol_exec)
				exec = true;
			if (p.type == ppt_psbend) {
				end = fup && !exec ? 0 : off + p.size;
				break;
			}
		}
	}
	pt_pkt_free_decoder(pkt);
	return end;
}

/*
 * Lane `l`'s stream is split at PSBs near n equal offsets (next_boundary()), the first
 * piece published as soon as its end is found (split_first()), so that it decodes while
 * the rest are found (split_rest()).
 */
struct splitting {
	size_t n;		/* pieces wanted */
	size_t i;		/* the next of the n - 1 offsets to look near */
	uint64_t first;		/* the stream's first PSB: no piece ends before it */
	uint64_t last;		/* the last piece's start (0: none yet) */
};

/*
 * The next piece boundary, looking near the offsets from sp->i on: its PSB's offset in
 * *at, the end of its PSB+ in *end and its FUP's ip in *ip; false when there is none. A
 * PSB+ that cannot end a piece is passed over.
 */
static bool next_boundary(const struct ptd_stream_opts *o, struct splitting *sp, uint64_t *at,
			  uint64_t *end, uint64_t *ip)
{
	struct ptd_psb psb;
	size_t tries;

	for (; sp->i < sp->n; sp->i++) {
		uint64_t from = o->size / sp->n * sp->i, e, fup;
		/*
		 * A PSB+ with a FUP first: tracing is on there, and the pieces join unless
		 * something unusual happens at the seam. Without one, the decoder may still
		 * be tracing (a PSB+ between a PGD and its packets...): the last resort.
		 */
		bool fallback = false;
		uint64_t fb_at = 0, fb_end = 0;

		for (tries = 0; tries < 16; tries++) {
			if (ptd_psb_next(o->buf, o->size, &o->config, &o->clock, from, &psb))
				break;
			from = psb.offset + 1;
			if (psb.offset <= sp->first || psb.offset <= sp->last)
				continue;
			e = boundary_end(o, psb.offset, &fup);
			if (e && fup) {
				*at = psb.offset;
				*end = e;
				*ip = fup;
				sp->i++;
				return true;
			}
			if (e && !fallback) {
				fallback = true;
				fb_at = psb.offset;
				fb_end = e;
			}
		}
		if (fallback) {
			*at = fb_at;
			*end = fb_end;
			*ip = 0;
			sp->i++;
			return true;
		}
	}
	return false;
}

/*
 * Ends the lane's open piece (the one after its l->nr_pc whole ones) at the boundary
 * (at, end, ip), and opens the next, to the end of the stream.
 */
static void piece_add(struct lane *l, struct splitting *sp, uint64_t at, uint64_t end,
		      uint64_t ip)
{
	struct piece *pc = &l->pc[l->nr_pc];

	pc->stop = at;
	pc->stop_ip = ip;
	pc->end = end;
	sp->last = at;
	pc = &l->pc[l->nr_pc + 1];
	pc->parent = l->s;
	pc->begin = at;
	pc->stop = 0;
	pc->end = ptd_stream_opts(l->s)->size;
}

/*
 * Splits lane `l`'s stream into at least `n` pieces (more for a long stream: pieces of
 * about MIN_PIECE bytes, so that the window of pieces in flight bounds the memory), up
 * to the end of its first piece: a stream that does not split keeps one piece, itself.
 * 0 or -ENOMEM.
 */
static int split_first(struct lane *l, size_t n, struct splitting *sp)
{
	const struct ptd_stream_opts *o = ptd_stream_opts(l->s);
	uint64_t piece = min_piece(), at, end, ip;
	struct ptd_psb psb;

	if (n > 1 && o->size / MIN_PIECE > n)
		n = o->size / MIN_PIECE;
	if (n > MAX_PIECES)
		n = MAX_PIECES;
	memset(sp, 0, sizeof(*sp));
	l->pc = calloc(n, sizeof(*l->pc));
	if (!l->pc)
		return -ENOMEM;
	l->nr_pc = 1;
	l->pc[0].s = l->s;
	l->split = false;
	if (n < 2 || o->ranges || o->size < 2 * piece)
		goto whole;
	/* the first piece holds the first PSB: the bytes before it (a ring that wrapped) hold
	 * no sync point, and a piece without one would decode nothing of its own */
	if (ptd_psb_next(o->buf, o->size, &o->config, &o->clock, 0, &psb))
		goto whole;
	sp->n = n;
	sp->i = 1;
	sp->first = psb.offset;
	if (!next_boundary(o, sp, &at, &end, &ip))
		goto whole;
	l->pc[0].s = NULL;	/* piece_open() */
	l->pc[0].parent = l->s;
	l->pc[0].begin = 0;
	l->nr_pc = 0;
	piece_add(l, sp, at, end, ip);
	l->nr_pc = 1;
	l->split = true;
	/* the stream decodes nothing itself: its fast decoder goes to the first piece */
	ptd_stream_release(l->s);
	return 0;
whole:
	sp->n = 0;
	ptd_stream_populate(l->s, 0, o->size);
	return 0;
}

/*
 * The rest of lane `l`'s pieces (split_first()), each published to the helper threads
 * as its end is found; the last one ends with the stream.
 */
static void split_rest(struct merge *m, struct lane *l, struct splitting *sp, bool threaded)
{
	const struct ptd_stream_opts *o = ptd_stream_opts(l->s);
	uint64_t at, end, ip;
	bool more = true;

	if (!l->split)
		return;
	while (more) {
		more = next_boundary(o, sp, &at, &end, &ip);
		if (threaded)
			pthread_mutex_lock(&m->lock);
		/* the open piece is whole: it ends at the boundary, or with the stream */
		if (more)
			piece_add(l, sp, at, end, ip);
		l->nr_live = ++l->nr_pc;
		if (threaded) {
			pthread_cond_broadcast(&m->cond);
			pthread_mutex_unlock(&m->lock);
		}
	}
}

/* Is lane `l` split (its pieces are streams of their own)? */
static bool split_lane(const struct lane *l)
{
	return l->split;
}

/*
 * The sequential decode itself, from the start of the stream to the end of `next` (of
 * the stream: to_end): what replaces a piece that does not join. Its first l->delivered
 * events are the ones the merge already took (the joins before were exact), and are
 * dropped.
 */
static struct ptd_stream *replay(struct lane *l, const struct piece *next, bool to_end)
{
	if (to_end)
		return ptd_piece_new(l->s, 0, 0, 0, ptd_stream_opts(l->s)->size);
	return ptd_piece_new(l->s, 0, next->stop, next->stop_ip, next->end);
}

/* Frees a piece's queued chunks and its stream (not the lane's own). */
static void piece_drop(struct merge *m, struct lane *l, struct piece *p)
{
	while (p->head) {
		struct chunk *c = p->head;

		p->head = c->next;
		put_chunk(m, c);
	}
	p->tail = NULL;
	m->held -= p->queued;
	p->queued = 0;
	if (p->s != l->s)
		ptd_stream_free(p->s);
	p->s = NULL;
}

/*
 * The merge moves from piece l->at to the next: waits for the next piece's first chunk,
 * joins it, or decodes it again as a continuation. 0 or -ENOMEM.
 */
static int next_piece(struct merge *m, struct lane *l, bool threaded)
{
	struct piece *prev = &l->pc[l->at], *next = &l->pc[l->at + 1];
	uint64_t add_prev = l->add;
	int err = 0, again;

	if (threaded)
		pthread_mutex_lock(&m->lock);
	while (threaded && (next->busy || (!next->head && !next->finished))) {
		l->wanted = true;
		decode_or_wait(m, 0, &m->idle_merge);
	}
	l->wanted = false;
	if (!threaded) {
		while (!next->head && !next->finished) {
			struct chunk *c = decode_chunk(m, next, &err);

			if (err) {
				next->finished = true;
				break;
			}
			piece_push(m, next, c);
		}
	}
	if (!err && !next->s)
		err = -ENOMEM;	/* a worker could not make it */
	if (!err) {
		uint64_t blocks_before = 0;
		size_t k;

		/* without time, a piece's "times" count its instructions from 0 */
		if (ptd_stream_opts(next->s)->timeless)
			l->add += ptd_stream_counts(prev->s)->insns;
		for (k = 0; k <= l->at; k++)
			if (l->pc[k].s)
				blocks_before += ptd_stream_counts(l->pc[k].s)->blocks;
		again = ptd_piece_join(prev->s, next->s, next->head ? next->head->ev : NULL,
				       next->head ? next->head->nr : 0, blocks_before, add_prev,
				       l->add, l->at, &l->join);
		l->join_pos = 0;
		/*
		 * A replay decodes from the start of the stream: once the replays would have
		 * decoded the stream once more, the rest goes in sequence (the pieces, the
		 * replays and that: at most 3x the sequential decode's work, however many
		 * seams do not join; with pieces of 256 KiB, a seam every 256 KiB).
		 */
		if (again == 1 && l->replayed + next->end > ptd_stream_opts(l->s)->size)
			again = 2;
		if (again == 1)
			l->replayed += next->end;
		if (again)
			l->redecoded += again == 1 ? next->end : ptd_stream_opts(l->s)->size;
		if (!again) {
			l->clean_joins += l->join.clean;
			l->join_calls += l->join.calls;
			l->join_returns += l->join.returns;
		} else {
			struct ptd_stream *c = replay(l, next, again == 2);

			if (!c) {
				err = -ENOMEM;
			} else {
				piece_drop(m, l, next);
				next->s = c;
				next->finished = false;
				next->replay = true;
				/*
				 * The pieces after it are out of use (a thread may still be
				 * decoding one: they are freed with the merge).
				 */
				if (again == 2) {
					for (k = l->at + 2; k < l->nr_live; k++)
						l->redecoded += l->pc[k].done_bytes;
					l->nr_live = l->at + 2;
				}
				/* it counts from the start: the pieces before count no more */
				for (k = 0; k <= l->at; k++)
					if (l->pc[k].s)
						memset(ptd_stream_counts(l->pc[k].s), 0,
						       sizeof(struct decode_stats));
				l->clean_joins = 0;
				l->join_calls = l->join_returns = 0;
				l->add = 0;
				l->skip = l->delivered;
			}
		}
	}
	/* prev is merged and joined: its caches go to a piece made later */
	piece_caches_put(m, prev);
	l->at++;
	if (threaded) {
		pthread_cond_broadcast(&m->cond);
		pthread_mutex_unlock(&m->lock);
	}
	return err;
}

/* Adjusts a chunk's times as the merge takes it: never back, plus the pieces' base. */
static void adjust_times(struct lane *l, struct ptd_event *ev, size_t n, uint64_t add)
{
	size_t i;

	if (!split_lane(l))
		return;
	for (i = 0; i < n; i++) {
		uint64_t t = ev[i].time + add;

		ev[i].time = t < l->floor ? l->floor : t;
		l->floor = ev[i].time;
	}
}

/* The next event of a lane, or NULL when it has no more; merge thread only. */
static const struct ptd_event *lane_head(struct merge *m, struct lane *l, bool threaded)
{
	struct piece *p;

	if (l->join_pos < l->join.nr)
		return &l->join.ev[l->join_pos];
	if (l->cur && l->pos < l->cur->nr)
		return &l->cur->ev[l->pos];
	put_chunk(m, l->cur);
	l->cur = NULL;
	l->pos = 0;
	for (;;) {
		p = &l->pc[l->at];
		if (!threaded) {
			/* decode on demand, in this thread */
			while (!p->head && !p->finished) {
				int err = 0;
				struct chunk *c = decode_chunk(m, p, &err);

				if (err) {
					m->err = err;
					p->finished = true;
				}
				piece_push(m, p, c);
			}
		} else {
			pthread_mutex_lock(&m->lock);
			while (!p->head && !p->finished) {
				l->wanted = true;
				decode_or_wait(m, 0, &m->idle_merge);
			}
			l->wanted = false;
		}
		if (p->head) {
			l->cur = p->head;
			p->head = p->head->next;
			l->cur->next = NULL;
			if (!p->head)
				p->tail = NULL;
			p->queued--;
			m->held--;
			if (threaded) {
				pthread_cond_broadcast(&m->cond);
				pthread_mutex_unlock(&m->lock);
			}
			if (l->skip) {
				/* a replay's events the merge took already */
				size_t n = l->skip < l->cur->nr ? l->skip : l->cur->nr;

				l->skip -= n;
				l->pos = n;
				adjust_times(l, l->cur->ev + n, l->cur->nr - n, l->add);
				if (n == l->cur->nr)
					return lane_head(m, l, threaded);
				return &l->cur->ev[n];
			}
			adjust_times(l, l->cur->ev, l->cur->nr, l->add);
			return &l->cur->ev[0];
		}
		if (threaded)
			pthread_mutex_unlock(&m->lock);
		/* this piece is done: on to the next, joined */
		if (l->at + 1 >= l->nr_live)
			return NULL;
		{
			int err = next_piece(m, l, threaded);

			if (err) {
				m->err = err;
				return NULL;
			}
		}
		if (l->join.nr) {
			/* their times are the stream's already */
			adjust_times(l, l->join.ev, l->join.nr, 0);
			return &l->join.ev[0];
		}
	}
}

/* The end of the events lane l's head is one of (the join's or the chunk's). */
static const struct ptd_event *lane_end(const struct lane *l)
{
	if (l->join_pos < l->join.nr)
		return l->join.ev + l->join.nr;
	return l->cur->ev + l->cur->nr;
}

/* The merge took lane l's head event and the n - 1 after it (up to lane_end()). */
static void lane_next(struct lane *l, size_t n)
{
	l->delivered += n;
	if (l->join_pos < l->join.nr)
		l->join_pos += n;
	else
		l->pos += n;
}

double ptd_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

bool ptd_marking(void)
{
	static int on = -1;

	if (on < 0)
		on = getenv("PTBPF_SPLIT_TIMES") && !strcmp(getenv("PTBPF_SPLIT_TIMES"), "1");
	return on;
}

static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void ptd_mark(const char *what)
{
	if (ptd_marking())
		fprintf(stderr, "[time] %.6f %s (thread cpu %.6f)\n", ptd_seconds(), what,
			thread_cpu());
}

static void progress(struct merge *m, double start, double *last, bool final)
{
	uint64_t done = 0, total = 0;
	double t = ptd_seconds();
	size_t i, k;

	if (!final && (t - start < 1.0 || t - *last < 0.5))
		return;
	if (final && *last == 0)
		return;
	*last = t;
	/* the workers decode the pieces: what they said when they last pushed a chunk */
	pthread_mutex_lock(&m->lock);
	for (i = 0; i < m->nr; i++) {
		for (k = 0; k < m->lanes[i].nr_live; k++)
			done += m->lanes[i].pc[k].done_bytes;
		total += ptd_stream_opts(m->lanes[i].s)->size;
	}
	pthread_mutex_unlock(&m->lock);
	fprintf(stderr, "\rptbpf: decoding %5.1f%% of %.1f MB of PT (%.1f MB/s)%s",
		total ? 100.0 * done / total : 100.0, total / 1e6, done / 1e6 / (t - start),
		final ? "\n" : "");
}

/* The merge's order: by time, then by stream. A bound: what an event must come before. */
struct bound {
	uint64_t time;
	uint32_t cpu;
};

static bool below(const struct bound *b, uint64_t time, uint32_t cpu)
{
	return time < b->time || (time == b->time && cpu < b->cpu);
}

static bool before(const struct ptd_event *a, const struct ptd_event *b)
{
	return below(&(struct bound){ b->time, b->cpu }, a->time, a->cpu);
}

static void bound_lower(struct bound *b, uint64_t time, uint32_t cpu)
{
	if (below(b, time, cpu))
		*b = (struct bound){ time, cpu };
}

/* A split lane's figures are its pieces', as the sequential decode would count them. */
static void lane_stats(struct lane *l)
{
	struct decode_stats st = {}, *all;
	size_t k;

	if (!split_lane(l))
		return;
	for (k = 0; k < l->nr_live; k++)
		if (l->pc[k].s)
			ptd_stream_stats(l->pc[k].s, &st);
	all = ptd_stream_counts(l->s);
	all->insns = st.insns;
	all->blocks = st.blocks;
	all->calls = st.calls + l->join_calls;
	all->returns = st.returns + l->join_returns;
	all->errors = st.errors;
	all->overflows = st.overflows;
	all->syncs = st.syncs - l->clean_joins;
	all->fast_lookups = st.fast_lookups;
	all->fast_hits = st.fast_hits;
	all->fast_stored = st.fast_stored;
	all->fast_flushes = st.fast_flushes;
	all->fast_blocks = st.fast_blocks;
	all->fast_fallbacks = st.fast_fallbacks;
	all->fast_replayed = st.fast_replayed;
	all->fast_stretched = st.fast_stretched;
	all->fast_edges = st.fast_edges;
	all->fast_tl_lookups = st.fast_tl_lookups;
	all->fast_tl_hits = st.fast_tl_hits;
	all->fast_tl_blocks = st.fast_tl_blocks;
	all->fast_tl_evictions = st.fast_tl_evictions;
	all->split_pieces = l->nr_pc;
	all->split_redecoded = l->redecoded;
}

/*
 * Frees merge `m` (NULL: none) after its threads stopped; the streams' figures are set
 * from their pieces'.
 */
static void merge_close(struct merge *m)
{
	size_t k;
	int i;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->stop = true;
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
	for (i = 0; i < m->nthreads; i++)
		pthread_join(m->tids[i], NULL);
	ptd_mark("joined");
	for (k = 0; k < m->nr; k++) {
		struct lane *l = &m->lanes[k];
		size_t p;

		lane_stats(l);
		for (p = 0; p < l->nr_pc; p++)
			piece_drop(m, l, &l->pc[p]);
		free_chunks(l->cur);
		free(l->pc);
	}
	free_chunks(m->free);
	while (m->nr_caches)
		ptd_caches_free(&m->caches[--m->nr_caches]);
	free(m->tids);
	free(m->helpers);
	free(m->lanes);
	pthread_mutex_destroy(&m->lock);
	pthread_mutex_destroy(&m->free_lock);
	pthread_cond_destroy(&m->cond);
	free(m);
	ptd_mark("merge freed");
}

/*
 * The merge of `streams`, split into pieces, its helper threads decoding already; 0 or
 * -ENOMEM.
 */
static int merge_open(struct ptd_stream **streams, size_t nr, int jobs, struct merge **out)
{
	struct merge *m = calloc(1, sizeof(*m));
	struct splitting *sp = NULL;
	size_t k;
	int err = 0, i;

	*out = NULL;
	if (!m)
		return -ENOMEM;
	m->nr = nr;
	m->streams = streams;
	m->start = ptd_seconds();
	pthread_mutex_init(&m->lock, NULL);
	pthread_mutex_init(&m->free_lock, NULL);
	pthread_cond_init(&m->cond, NULL);
	m->lanes = calloc(nr ? nr : 1, sizeof(*m->lanes));
	if (!m->lanes) {
		err = -ENOMEM;
		goto fail;
	}
	sp = calloc(nr ? nr : 1, sizeof(*sp));
	if (!sp) {
		err = -ENOMEM;
		goto fail;
	}
	ptd_mark("merge");
	for (k = 0; k < nr; k++) {
		struct lane *l = &m->lanes[k];

		l->s = streams[k];
		/* more threads than streams: the streams split at PSBs, two pieces a thread */
		err = split_first(l, jobs > (int)nr ? (size_t)(2 * jobs / (int)nr) : 1, &sp[k]);
		if (err)
			goto fail;
		/* a split stream has its first piece now, and one more at least to come */
		l->nr_live = l->nr_pc;
		m->pieces += l->split ? 2 : 1;
	}
	ptd_mark("first piece");
	/*
	 * One piece needs no helper: the merge thread decodes it. With more, the merge
	 * thread is one of the `jobs` decoding threads: it decodes whenever it has no event
	 * to take (decode_or_wait()), so that `jobs` threads keep `jobs` cores busy, not one
	 * more thread than cores, waking each other per chunk.
	 */
	if (jobs > (int)m->pieces)
		jobs = (int)m->pieces;
	m->ahead = (size_t)jobs * AHEAD_PIECES_PER_JOB;
	if (jobs > 1) {
		m->tids = calloc((size_t)jobs, sizeof(*m->tids));
		m->helpers = calloc((size_t)jobs, sizeof(*m->helpers));
		if (!m->tids || !m->helpers) {
			err = -ENOMEM;
			goto fail;
		}
		for (i = 0; i < jobs - 1; i++) {
			m->helpers[i] = (struct helper){ m, i + 1 };
			if (pthread_create(&m->tids[i], NULL, worker, &m->helpers[i]))
				break;
			m->nthreads++;
		}
	}
	ptd_mark("threads started");
	m->pieces = 0;
	for (k = 0; k < nr; k++) {
		split_rest(m, &m->lanes[k], &sp[k], m->nthreads > 0);
		m->pieces += m->lanes[k].nr_pc;
	}
	ptd_mark("split");
	free(sp);
	*out = m;
	return 0;
fail:
	free(sp);
	merge_close(m);
	return err;
}

/*
 * A merge started ahead of ptd_decode_streams() by ptd_decode_start(), in the thread
 * that will call it (a daemon decodes several captures at once, each in a thread).
 */
static _Thread_local struct merge *started;

/*
 * Capstone, which the fast path's first runs need, loaded by a thread of its own while
 * the session sets up: a millisecond of relocations the first pieces do not wait for.
 */
static _Thread_local pthread_t loader;
static _Thread_local bool loading;

static void *load_capstone(void *arg)
{
	(void)arg;
	capstone_lazy();
	return NULL;
}

void ptd_decode_prepare(int jobs, bool fast)
{
	if (jobs > 1 && fast && !loading)
		loading = !pthread_create(&loader, NULL, load_capstone, NULL);
}

int ptd_decode_start(struct ptd_stream **streams, size_t nr, int jobs)
{
	merge_close(started);
	started = NULL;
	if (jobs < 2)
		return 0;
	return merge_open(streams, nr, jobs, &started);
}

void ptd_decode_cancel(void)
{
	merge_close(started);
	started = NULL;
	if (loading)
		pthread_join(loader, NULL);
	loading = false;
}

/*
 * How the split went (-vv, PTBPF_SPLIT_TIMES): how far the threads went ahead, the
 * chunks that took (each of their pages a fault: ~3.5 us on a virtual machine), and
 * how long the threads waited.
 */
static void split_summary(const struct merge *m)
{
	struct rusage ru;
	char line[512];

	getrusage(RUSAGE_SELF, &ru);
	snprintf(line, sizeof(line),
		 "[split: %zu pieces, decoded at most %zu ahead of the merge's, at most %u chunks "
		 "of %u events held (%zu KiB); in %.3f s the decoding threads waited %.3f s for "
		 "work, the merge %.3f s for events; %u chunks decoded on another thread than "
		 "their piece's chunk before; %ld page faults so far]\n", m->pieces, m->reach,
		 m->held_peak, PTD_CHUNK_EVENTS, (size_t)m->held_peak * CHUNK_BYTES >> 10,
		 ptd_seconds() - m->start, m->idle_workers, m->idle_merge, m->moves,
		 ru.ru_minflt);
	if (ptd_marking())
		fputs(line, stderr);
	else
		dlog("%s", line);
}

int ptd_decode_streams(struct ptd_stream **streams, size_t nr, int jobs,
		       const struct ptd_event *extra, size_t nr_extra, const struct ptd_sink *sink,
		       bool show_progress)
{
	struct merge *m = NULL;
	int err = 0;
	size_t k, x = 0;
	double last = 0;
	unsigned long iter = 0;

	ptd_mark("decode_streams");
	if (started && started->streams == streams && started->nr == nr) {
		m = started;
		started = NULL;
	} else {
		ptd_decode_cancel();
		err = merge_open(streams, nr, jobs, &m);
		if (err)
			return err;
	}
	for (;;) {
		const struct ptd_event *best = NULL, *ev, *end;
		struct lane *bl = NULL;
		/* the other lanes' heads: what stops a run of the best lane's events */
		struct bound lim = { UINT64_MAX, UINT32_MAX };
		unsigned long was = iter;

		for (k = 0; k < nr; k++) {
			ev = lane_head(m, &m->lanes[k], m->nthreads > 0);
			if (!ev)
				continue;
			if (!best || before(ev, best)) {
				if (best)
					bound_lower(&lim, best->time, best->cpu);
				best = ev;
				bl = &m->lanes[k];
			} else {
				bound_lower(&lim, ev->time, ev->cpu);
			}
		}
		/* sideband goes first among equal times: a COMM names what follows */
		if (x < nr_extra && (!best || extra[x].time <= best->time)) {
			ev = &extra[x];
			while (++x < nr_extra && (!best || extra[x].time <= best->time))
				;
			bl = NULL;
			best = ev;
			end = &extra[x];
		} else if (best) {
			if (x < nr_extra)
				bound_lower(&lim, extra[x].time, 0);
			/*
			 * The head goes first; so do the events after it that come strictly
			 * before every other head and the next sideband event: the merge would
			 * take them one by one with nothing else in between.
			 */
			for (ev = best + 1, end = lane_end(bl);
			     ev < end && below(&lim, ev->time, ev->cpu); ev++)
				;
			end = ev;
		} else {
			break;
		}
		err = sink->events(sink->ctx, best, end - best);
		if (err)
			break;
		if (bl)
			lane_next(bl, end - best);
		iter += end - best;
		if (show_progress && (iter >> 12) != (was >> 12))
			progress(m, m->start, &last, false);
	}
	if (!err)
		err = m->err;
	if (ptd_marking())
		fprintf(stderr, "[time] %.6f first chunk\n[time] %.6f last piece decoded\n",
			m->first_chunk, m->last_finished);
	ptd_mark("merge done");
	if (m->pieces > nr && (ptd_marking() || ptbpf_log_level >= LOG_DEBUG))
		split_summary(m);
	if (show_progress)
		progress(m, m->start, &last, true);
	merge_close(m);
	return err;
}
