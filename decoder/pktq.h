/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A query engine on libipt's packet decoder (decoder/pktq.c): the answers of libipt
 * 2.0.5's query decoder (pt_qry_*) to the fast path's queries, the same TNT bits,
 * targets, events, statuses, offsets and times, at the cost of libipt's packet decoder.
 * What it does not do exactly it answers PTD_FAST_FALLBACK (and is then unusable until
 * the next sync): the fast path hands the stream to libipt's block decoder.
 */
#ifndef PTBPF_DECODER_PKTQ_H
#define PTBPF_DECODER_PKTQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <intel-pt.h>

#include "fastpath.h"	/* PTD_FAST_FALLBACK */

struct pktq;

/*
 * Which engine answers: this one (the default); libipt's query decoder (for comparison);
 * or both in step, every answer, status, offset and time compared and the process
 * aborted at the first difference (the differential test; where this engine falls back
 * the two part until the next sync). Chosen by PTBPF_FAST_QUERY=pktq|libipt|check.
 */
enum pktq_engine { PKTQ_OWN, PKTQ_LIBIPT, PKTQ_CHECK };

enum pktq_engine pktq_engine_from_env(void);
enum pktq_engine pktq_engine_of(const struct pktq *q);
const char *pktq_engine_name(enum pktq_engine e);

/* An engine over `cfg`'s bytes (flags ignored, as the block decoder's query decoder). */
struct pktq *pktq_new(const struct pt_config *cfg, enum pktq_engine engine);
void pktq_free(struct pktq *q);

/* As pt_qry_sync_forward, pt_qry_sync_set, pt_qry_get_offset, pt_qry_get_sync_offset,
 * pt_qry_cond_branch, pt_qry_indirect_branch, pt_qry_event, pt_qry_time. */
int pktq_sync_forward(struct pktq *q, uint64_t *ip);
int pktq_sync_set(struct pktq *q, uint64_t *ip, uint64_t offset);
int pktq_get_offset(const struct pktq *q, uint64_t *offset);
int pktq_get_sync_offset(const struct pktq *q, uint64_t *offset);
static inline int pktq_cond_branch(struct pktq *q, int *taken);
int pktq_indirect_branch(struct pktq *q, uint64_t *ip);
int pktq_event(struct pktq *q, struct pt_event *event, size_t size);
int pktq_time(const struct pktq *q, uint64_t *time, uint32_t *lost_mtc, uint32_t *lost_cyc);

/*
 * Bulk TNT, for a cache keyed by branch outcomes. pktq_cond_bits: the bits the next *n
 * pktq_cond_branch calls would return (the oldest in bit 0), consuming nothing: the rest
 * of the TNT packet being taken or, once it is used up, the next TNT packet when no
 * event comes first; *n = 0 when the next call would not return a bit (a TIP or an event
 * ahead, the end). Every call but the last of them returns status 0; the last returns
 * the status pktq_cond_take returns. pktq_cond_take: consume n <= *n of them as n calls
 * would; the status of the last call. The time (pktq_time) changes only when a call
 * takes the first bit of a TNT packet: it becomes the time at that packet, that is with
 * the timing packets before it (the ones after it, up to the next TNT/TIP/event packet,
 * are read ahead into the time the next packet will bring).
 */
int pktq_cond_bits(struct pktq *q, uint64_t *bits, unsigned *n);
int pktq_cond_take(struct pktq *q, unsigned n);
/* (-pte_not_supported with the libipt engine) */

/*
 * pktq_cond_branch() is one call per TNT bit, the fast path's most frequent query: a bit
 * of the cached TNT packet (nothing else changes: status 0, or for its last bit the
 * status known when the packet was cached) is answered here, inline; the rest by
 * pktq_cond_branch_slow(). The TNT cache is struct pktq's first member, for this alone.
 */
struct pktq_tnt {
	uint64_t payload;	/* the cached TNT packet's bits */
	uint64_t index;		/* the next bit's mask (the oldest bit is the highest); 0: none */
	/* ~0 where this engine alone answers, 0 where not (PKTQ_LIBIPT, PKTQ_CHECK): with
	 * index, one test says whether a bit is answered inline */
	uint64_t inline_mask;
	int end_flags;		/* the status of its last bit (pts_event_pending, pts_eos) */
};

int pktq_cond_branch_slow(struct pktq *q, int *taken);

static inline int pktq_cond_branch(struct pktq *q, int *taken)
{
	struct pktq_tnt *tnt = (struct pktq_tnt *)q;

	if (__builtin_expect(tnt->index & tnt->inline_mask, 1)) {
		*taken = (tnt->payload & tnt->index) != 0;
		tnt->index >>= 1;
		/* 0 but for the last bit (without a branch: where it is varies) */
		return tnt->end_flags & -(int)!tnt->index;
	}
	return pktq_cond_branch_slow(q, taken);
}

#endif /* PTBPF_DECODER_PKTQ_H */
