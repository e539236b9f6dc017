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
};

/* A fast decoder over `cfg`'s bytes (begin/end set) reading code from `im`; NULL: refused. */
struct ptd_fast *ptd_fast_new(const struct pt_config *cfg, struct ptd_images *im);
void ptd_fast_free(struct ptd_fast *f);
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
void ptd_fast_stats(const struct ptd_fast *f, struct ptd_fast_stats *st);
/* Frees the runs a decode's fast decoders share (struct ptd_images' run_store). */
void ptd_run_store_free(struct ptd_run_store *st);

#endif /* PTBPF_DECODER_FASTPATH_H */
