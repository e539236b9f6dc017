/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The fast path of a PT stream (decoder/fastpath.c): libipt's block decoder redone on
 * libipt's query decoder with a cache of straight runs, so a repeated path costs one
 * lookup per block instead of decoding its instructions again. It answers the calls
 * decode.c makes of a block decoder (sync, next block, event, time, offsets) with the
 * same blocks, events, statuses and times, because it asks the query decoder the same
 * queries in the same order. What it does not handle it refuses with PTD_FAST_FALLBACK
 * before consuming anything, and the stream goes on with the block decoder (decode.c
 * replays the stretch since the last sync on it).
 */
#ifndef PTBPF_DECODER_FASTPATH_H
#define PTBPF_DECODER_FASTPATH_H

#include <stdbool.h>
#include <stdint.h>

#include <intel-pt.h>

struct ptd_images;
struct ptd_fast;
struct ptd_run_store;

/* Not handled here: go on with libipt's block decoder (a code of ours, not a -pte_*). */
#define PTD_FAST_FALLBACK (-0x1100)

struct ptd_fast_stats {
	uint64_t lookups;	/* straight runs looked up (one per block) */
	uint64_t hits;		/* ... found in the cache (or by a successor link) */
	uint64_t stored;	/* ... not, but decoded by another decoder (the store) */
	uint64_t linked;	/* ... found by a successor link, without hashing */
	uint64_t fallbacks;	/* times the block decoder took over */
	uint64_t flushes;	/* times the bounded cache was emptied */
	/* tracelets (a stretch's blocks for the TNT bits pending, ptd_fast_stretch()) */
	uint64_t tl_lookups;	/* looked up */
	uint64_t tl_hits;	/* ... and found */
	uint64_t tl_blocks;	/* blocks those hits walked */
	uint64_t tl_evictions;	/* tracelets evicted from the bounded cache */
};

/*
 * Zeroed memory with its pages written now: calloc() leaves a big block to the kernel's
 * zero page, which a lookup reads first and an insert writes later, a copy that, with a
 * split stream's threads on two CPUs, flushes the other CPU's TLB by an interrupt.
 */
void *ptd_zalloc_written(size_t size);
/* A fast decoder over `cfg`'s bytes (begin/end set) reading code from `im`; NULL: refused. */
struct ptd_fast *ptd_fast_new(const struct pt_config *cfg, struct ptd_images *im);
void ptd_fast_free(struct ptd_fast *f);
/*
 * The same fast decoder over other bytes (`cfg`'s begin/end; the rest as before),
 * unsynced, with no address space: its run cache is kept (the code has not changed).
 */
int ptd_fast_set_end(struct ptd_fast *f, const struct pt_config *cfg);
/* The address space whose code is decoded (as pt_blk_set_image), -1: none. */
void ptd_fast_set_as(struct ptd_fast *f, int as);
int ptd_fast_sync_forward(struct ptd_fast *f);
int ptd_fast_sync_set(struct ptd_fast *f, uint64_t offset);
int ptd_fast_get_offset(const struct ptd_fast *f, uint64_t *offset);
int ptd_fast_get_sync_offset(const struct ptd_fast *f, uint64_t *offset);
int ptd_fast_time(struct ptd_fast *f, uint64_t *time, uint32_t *lost_mtc, uint32_t *lost_cyc);
/* As pt_blk_next / pt_blk_event, or PTD_FAST_FALLBACK with nothing consumed. */
int ptd_fast_next(struct ptd_fast *f, struct pt_block *block);
int ptd_fast_event(struct ptd_fast *f, struct pt_event *event);

/*
 * A stretch: blocks that end in a conditional or direct jump staying in [lo, hi), taken
 * with no event or status (pts_*) between them, so that the caller makes no output for
 * them and only counts them; and, given room for edges, blocks that end in a direct
 * call or a compressed return, whose output (a call or return event) the stretch hands
 * back in order as edges. ptd_fast_stretch() walks such blocks (at most max_blocks),
 * sums them up in struct ptd_stretch, and hands back the first block that is not one,
 * as ptd_fast_next() does (the same block, status and errors). Where a run link leads
 * the way (the usual case), a block costs a compare and its TNT bit; where a tracelet
 * is known (the same TNT bits pending at the same ip before), the blocks of a TNT
 * packet's bits cost one lookup. A disable binding at a block's branch ends the stretch
 * after that block, its last (no block is handed back: the event is pending); given
 * lim->resume, the stretch takes it as ptd_fast_event() does, and the enable after it
 * if lim->resume agrees, as edges, and goes on where tracing resumed (kAFL's filters:
 * 340 K such pairs on mruby).
 */
enum ptd_edge_kind {
	PTD_EDGE_CALL,
	PTD_EDGE_RETURN,
	PTD_EDGE_STOP,		/* a disable at the branch `from` (to: 0) */
	PTD_EDGE_START,		/* an enable at `to` (from: 0) */
};

struct ptd_stretch_edge {
	uint64_t from;		/* the call or return instruction */
	uint64_t to;		/* where it went (the next block's ip) */
	uint64_t insns;		/* the stretch's instructions up to and with it */
	uint64_t time;		/* lim->time's answer there (0 without lim->time); a disable's
				 * or an enable's: to its event's tsc */
	enum ptd_edge_kind kind;
};

struct ptd_stretch_lim {
	uint64_t lo, hi;	/* a jump whose target is in [lo, hi) makes no output */
	uint64_t max_blocks;	/* blocks the stretch may hold (0: hand back the next) */
	bool check_entry;	/* the ip must be in [lo, hi) too: the branch that led to
				 * it is such a jump, not yet judged */
	/*
	 * Whether [lo, hi) is known at the start (else it is asked at the first jump, as
	 * after every edge). range: the function of a jump's address (the caller's
	 * jump_leaves()): >= 0 and the range, or < 0 when no range would make that jump
	 * quiet; NULL: [lo, hi) holds everywhere (no symbols: jumps make no output). Its
	 * answer must depend on nothing but the address space and the address: it is kept
	 * with the run (asked once per run), and the last one handed back in struct
	 * ptd_stretch.
	 */
	bool ask_range;
	int (*range)(void *ctx, uint64_t from, uint64_t *lo, uint64_t *hi);
	void *ctx;
	/*
	 * Edges: room for max_edges (0: a call or return ends the stretch as any other
	 * branch). A return into [up_start, up_end) ends it. time: the caller's time at an
	 * edge, from ptd_fast_time()'s answer there (status, tsc), called when that answer
	 * changes; 0 ends the stretch before the edge (or, a return's bit taken, with it).
	 * NULL: edges have no time.
	 */
	struct ptd_stretch_edge *edges;
	unsigned max_edges;
	uint64_t up_start, up_end;
	uint64_t (*time)(void *ctx, int status, uint64_t tsc);
	/*
	 * Whether the stretch may take an enable at `ip`, its event's time `tsc`, after
	 * `insns` of the stretch's instructions, and go on: the caller would make its START
	 * alone (PTD_EDGE_START). NULL: a disable ends the stretch after its block (none
	 * is taken).
	 */
	bool (*resume)(void *ctx, uint64_t ip, uint64_t tsc, uint64_t insns);
};

struct ptd_stretch {
	uint64_t ip;		/* its first block's ip; valid if blocks */
	uint64_t insns;		/* instructions the stretch retired */
	uint64_t blocks;	/* its blocks (0: none, the block handed back is the next) */
	uint64_t end_ip;	/* its last instruction (a jump, or the last edge's); valid if
				 * blocks */
	int isid;		/* that instruction's libipt section */
	enum pt_insn_class iclass;	/* and class (ptic_cond_jump, ptic_jump, or the last
					 * edge's ptic_call or ptic_return) */
	unsigned nr_edges;	/* edges in lim->edges */
	bool edge_last;		/* the last block is the last edge's */
	unsigned events;	/* of them, disables and enables taken (PTD_EDGE_STOP, _START) */
	bool toggled_last;	/* the last block's branch led to a disable taken: no branch
				 * is pending */
	/* it ended at its events (no block handed back): the status is ptd_fast_event()'s
	 * for the last one it took, or (< 0) for the next one, not taken */
	bool event_status;
	/* the stretch asked lim->range after its last edge (whether it has blocks or
	 * not): its answer */
	bool ranged;
	int range;
	uint64_t lo, hi;
};

int ptd_fast_stretch(struct ptd_fast *f, struct pt_block *block, const struct ptd_stretch_lim *lim,
		     struct ptd_stretch *st);
/* Where the next block starts (valid between blocks, with tracing on). */
uint64_t ptd_fast_ip(const struct ptd_fast *f);
/* An event is fetched that binds further on: the next block is taken alone (ptd_fast_next()). */
bool ptd_fast_event_waits(const struct ptd_fast *f);
void ptd_fast_stats(const struct ptd_fast *f, struct ptd_fast_stats *st);
/* Frees the runs a decode's fast decoders share (struct ptd_images' run_store). */
void ptd_run_store_free(struct ptd_run_store *st);

#endif /* PTBPF_DECODER_FASTPATH_H */
