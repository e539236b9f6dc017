/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What split.c (the merge, and one CPU's stream in pieces on several cores) needs of a
 * stream (decode.c): its events a chunk at a time, pieces of it that start at a PSB, and
 * the join of two pieces at their seam, which only the stream's state can tell.
 */
#ifndef PTBPF_DECODER_PIECE_H
#define PTBPF_DECODER_PIECE_H

#include "ptd.h"

/* Events ptd_stream_fill() writes at most: a chunk, and the events of its last step. */
#define PTD_CHUNK_EVENTS 4096
#define PTD_CHUNK_SLACK 16

/* Decodes until `out` holds about PTD_CHUNK_EVENTS events or the stream ends; the count. */
size_t ptd_stream_fill(struct ptd_stream *s, struct ptd_event *out);
/*
 * Frees the decoders of a stream that will decode no more (split in pieces), its fast
 * decoder, warm cache and pages, to the next stream's (piece's).
 */
void ptd_stream_release(struct ptd_stream *s);
/* Has the stream (or piece) decoded all its bytes? */
bool ptd_stream_done(const struct ptd_stream *s);
/* Bytes of its own the stream (or piece) has decoded (progress). */
uint64_t ptd_stream_done_bytes(const struct ptd_stream *s);
const struct ptd_stream_opts *ptd_stream_opts(const struct ptd_stream *s);
/* Its figures (a split stream's are set from its pieces'). */
struct decode_stats *ptd_stream_counts(struct ptd_stream *s);

/*
 * A piece of `parent`: bytes [begin, stop) decoded with a decoder that reads up to
 * `end` (the PSB+ at stop, to meet it; stop_ip: its FUP's ip, 0: none); stop 0: to the
 * end. The first piece (begin 0) syncs like the whole stream would; the others at
 * their PSB. NULL: no memory, or libipt refused.
 */
struct ptd_stream *ptd_piece_new(const struct ptd_stream *parent, uint64_t begin,
				 uint64_t stop, uint64_t stop_ip, uint64_t end);

/*
 * A stream's caches of what its branch instructions are and of function ranges: what
 * they hold depends only on the decode's images and symbols, so that a piece takes
 * those of a piece before (their pages mapped, their entries warm).
 */
struct class_ent;
struct ptd_caches {
	struct class_ent *classes;
	struct symbols_range_cache *fns;
};

/* Moves s's caches into *c (s makes new ones if it decodes on). */
void ptd_stream_caches_take(struct ptd_stream *s, struct ptd_caches *c);
/* s, before it decodes, takes the caches in *c, which is left empty. */
void ptd_stream_caches_give(struct ptd_stream *s, struct ptd_caches *c);
void ptd_caches_free(struct ptd_caches *c);

/*
 * With opts.populate, maps the pages of bytes [begin, end) of the stream in one call (a
 * page faulted in one at a time costs several microseconds on a virtual machine).
 */
void ptd_stream_populate(const struct ptd_stream *s, uint64_t begin, uint64_t end);

/* What the sequential decode makes at a seam, for the merge to put between two pieces. */
struct ptd_join {
	struct ptd_event ev[2];
	size_t nr;
	bool clean;		/* no resync there: one sync less than the pieces counted */
	uint64_t calls, returns;	/* counted by ev */
};

/*
 * Joins piece `next` to `prev` (decoded to its end): 0, with the seam in *j; 1: `next`
 * must be decoded again as a continuation; 2: so must the rest of the stream (the work
 * budget: decoding each piece again from the start would cost the sequential decode
 * once per piece). `first` is next's first chunk, nr_first events (NULL: none), where
 * the join fills in prev's last instruction for next's stops before its first block;
 * blocks_before the blocks of the pieces up to prev, add_prev/add_next what their
 * times count from (timeless: instructions), `index` prev's (for the log).
 */
int ptd_piece_join(const struct ptd_stream *prev, struct ptd_stream *next,
		   struct ptd_event *first, size_t nr_first, uint64_t blocks_before,
		   uint64_t add_prev, uint64_t add_next, size_t index, struct ptd_join *j);

/*
 * Starts decoding `streams` with `jobs` threads (jobs > 1: helpers; the caller's thread
 * joins in when it calls ptd_decode_streams() with the same streams), so that the
 * pieces decode while the caller opens the output. 0 or -ENOMEM (then
 * ptd_decode_streams() starts it itself).
 */
int ptd_decode_start(struct ptd_stream **streams, size_t nr, int jobs);
/*
 * Before the session sets up: with jobs > 1 and the fast path, loads capstone in a
 * thread, so that the first pieces do not wait for it.
 */
void ptd_decode_prepare(int jobs, bool fast);
/*
 * Stops and frees what ptd_decode_start() began, if ptd_decode_streams() did not take
 * it, and waits for ptd_decode_prepare()'s thread.
 */
void ptd_decode_cancel(void);

/*
 * PTBPF_SPLIT_TIMES=1: prints "[time] SECONDS WHAT" on stderr (CLOCK_MONOTONIC), to see
 * where a decode's wall time goes (setup, the pieces, the merge, teardown).
 */
void ptd_mark(const char *what);
bool ptd_marking(void);

#endif /* PTBPF_DECODER_PIECE_H */
