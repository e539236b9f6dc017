// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libipt 2.0.5's query decoder (src/pt_query_decoder.c, pt_time.c, pt_last_ip.c,
 * pt_tnt_cache.c, pt_event_queue.c) done again on its packet decoder. libipt parses every
 * packet (pt_pkt_next); what is done here is what the query decoder does with them, step
 * by step in its order, so that every answer, status, offset and time is the same:
 *
 *   - `pos` is the query decoder's position (its get_offset), `nx` the packet there (its
 *     `next` decoder function): fetched once, kept while a packet is decoded again (a
 *     TIP with events bound to it, a PSBEND with PSB+ events);
 *   - after every query it reads ahead as libipt does: timing and other status packets
 *     are applied up to the next TNT, TIP or event packet, and the time a query reports
 *     (pt_qry_time) is the one saved when its own packet was taken;
 *   - last-IP decompression, the TNT cache, the three event queues (PSB+, TIP, FUP
 *     bound) and the standalone event are libipt's, with the same limits.
 *
 * Done: PSB+ (FUP with erratum BDM70's look-ahead, MODE.Exec, TSC, TMA, MTC, CBR, PAD),
 * TNT, TIP, TIP.PGE/PGD, FUP (asynchronous branches and disables), MODE.Exec, TSC, TMA,
 * MTC, CBR, PAD, a PSB+ met on the way. Not done, answered PTD_FAST_FALLBACK: CYC (its
 * calibration), OVF, PIP, VMCS, MODE.TSX, PTWRITE, power and MNT packets, STOP, unknown
 * packets, any packet libipt's packet decoder refuses (a truncated last packet too),
 * the errors libipt meets past those, and full event queues. The fast path then goes on
 * with the block decoder from the last PSB (decode.c fast_fallback()).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pktq.h"

/* Called for every packet (some traces are mostly PADs): through the GOT, without a PLT
 * stub's jump each time (GCC) */
#ifdef __has_attribute
#if __has_attribute(noplt)
extern int pt_pkt_next(struct pt_packet_decoder *decoder, struct pt_packet *packet,
		       size_t size) __attribute__((noplt));
#endif
#endif

/* libipt's sizes and limits (internal/include/pt_opcodes.h, pt_event_queue.h) */
#define PSB_SIZE 16
#define MTC_BITS 8
#define TMA_CTC_BITS 16
#define TMA_CTC_MASK 0xffffu
#define MTC_MASK 0xffu
#define TSC_BITS 56
#define FCR_SHR 8
#define EVQ_MAX 8

enum evb { EVB_PSBEND, EVB_TIP, EVB_FUP, EVB_MAX };

/* libipt's struct pt_time */
struct qtime {
	uint64_t tsc, base, fc;
	uint32_t ctc, ctc_cyc, lost_mtc, lost_cyc;
	uint8_t cbr;
	bool have_tsc, have_cbr, have_tma, have_mtc;
};

/* What pt_qry_time reports of a struct qtime (kept at every query: only this is copied) */
struct qtime_seen {
	uint64_t tsc;
	uint32_t lost_mtc, lost_cyc;
	bool have_tsc;
};

/* libipt's struct pt_time_cal: the fast-counter:cycles ratio CYC needs */
struct qtcal {
	uint64_t fcr, min_fcr, max_fcr, tsc, cyc_tsc, cyc_mtc;
	uint32_t ctc, lost_mtc;
	bool have_mtc, check_skl168;
};

struct pktq {
	struct pktq_tnt tnt;		/* the TNT cache, first: pktq_cond_branch() reads it */
	struct pt_config cfg;
	struct pt_packet_decoder *pd;	/* the packets at pos */
	struct pt_packet_decoder *look;	/* BDM70's look-ahead */
	uint64_t size;
	uint64_t pd_off;		/* where pd reads next; UINT64_MAX: not known */

	bool synced;			/* pos and sync are set (libipt: pos != NULL) */
	uint64_t pos, sync;
	bool have_next;			/* libipt's decoder->next != NULL: nx is at pos */
	bool nx_valid;			/* nx was read at nx_off */
	uint64_t nx_off;
	int nx_size;
	struct pt_packet nx;

	uint64_t ip;			/* last IP */
	bool have_ip, ip_suppressed;
	struct qtime time;
	struct qtime_seen last_time;	/* the time the last query reports */
	/* time changed since time_seen() copied it (most queries of a trace without timing
	 * packets find it as it was: no copy) */
	bool time_new;
	/* the next MTC read ahead takes read_ahead_mtc()'s short way (its comment says when);
	 * cleared by every other change of time or tcal */
	bool mtc_steady;
	/* the last steady MTC's CTC delta and its fast counter ticks (they depend on the
	 * configuration alone); UINT64_MAX, which no 32-bit delta is, until there is one
	 * (UINT32_MAX is a CTC one back with MTC frequency 0) */
	uint64_t mtc_delta;
	uint64_t mtc_fc;
	/* read_ahead_run()'s run of steady MTCs: as mtc_run_break() leaves it, and what one
	 * more MTC adds to it (the comment at MTC_RUN_ONE) */
	uint64_t mtc_run, mtc_step;
	struct qtcal tcal;
	bool enabled, consume_packet;
	struct pt_event *event;		/* the event the last decode published */
	struct pt_event standalone;
	struct pt_event queue[EVB_MAX][EVQ_MAX];
	uint8_t qbegin[EVB_MAX], qend[EVB_MAX];
	uint32_t event_pkts;		/* PKT() of the packets that are an event now: PKT_EVENT
					 * and those the queued events are bound to */

	enum pktq_engine engine;
	struct pt_query_decoder *ref;	/* libipt's, PKTQ_LIBIPT and PKTQ_CHECK */
	bool ref_lost;			/* PKTQ_CHECK: own engine fell back, until a sync */
	uint64_t queries;		/* PKTQ_CHECK: queries compared */
};

static int fallback(struct pktq *q, const char *why)
{
	ddlog("[pktq: to the block decoder at trace offset %#" PRIx64 ": %s]\n", q->pos, why);
	return PTD_FAST_FALLBACK;
}

/* ---------------------------------------------------------------- events */

#define PKT(t) (1u << (t))
/* The packets done here that need no further look (MODE and CBR do: fetch_slow()). */
#define PKT_DONE (PKT(ppt_pad) | PKT(ppt_psb) | PKT(ppt_psbend) | PKT(ppt_tnt_8) |	\
		  PKT(ppt_tnt_64) | PKT(ppt_tip) | PKT(ppt_tip_pge) | PKT(ppt_tip_pgd) |	\
		  PKT(ppt_fup) | PKT(ppt_tsc) | PKT(ppt_tma) | PKT(ppt_mtc) | PKT(ppt_cyc) |	\
		  PKT(ppt_ovf) | PKT(ppt_pip) | PKT(ppt_vmcs))
/* libipt's pdff_event packets (of those done here): an event whatever is queued */
#define PKT_EVENT (PKT(ppt_tip_pge) | PKT(ppt_tip_pgd) | PKT(ppt_mode) | PKT(ppt_cbr) |	\
		   PKT(ppt_ovf) | PKT(ppt_pip) | PKT(ppt_vmcs))
#define PKT_BRANCH (PKT(ppt_tip) | PKT(ppt_tnt_8) | PKT(ppt_tnt_64))
/* the packet the events queued in each queue are bound to */
static const uint32_t evq_pkt[EVB_MAX] = { PKT(ppt_psbend), PKT(ppt_tip), PKT(ppt_fup) };

static struct pt_event *evq_standalone(struct pktq *q)
{
	memset(&q->standalone, 0, sizeof(q->standalone));
	return &q->standalone;
}

static struct pt_event *evq_enqueue(struct pktq *q, enum evb b)
{
	uint8_t idx = q->qend[b], end = (uint8_t)((idx + 1) % EVQ_MAX);

	/* libipt leaves a gap so the last dequeued event is not overwritten */
	if (q->qbegin[b] == (end + 1) % EVQ_MAX)
		return NULL;
	q->qend[b] = end;
	q->event_pkts |= evq_pkt[b];
	memset(&q->queue[b][idx], 0, sizeof(q->queue[b][idx]));
	return &q->queue[b][idx];
}

static struct pt_event *evq_dequeue(struct pktq *q, enum evb b)
{
	uint8_t begin = q->qbegin[b];

	if (begin == q->qend[b])
		return NULL;
	q->qbegin[b] = (uint8_t)((begin + 1) % EVQ_MAX);
	if (q->qbegin[b] == q->qend[b])
		q->event_pkts &= ~evq_pkt[b];
	return &q->queue[b][begin];
}

/* pt_evq_find: the oldest queued event of `type` */
static struct pt_event *evq_find(struct pktq *q, enum evb b, enum pt_event_type type)
{
	uint8_t k;

	for (k = q->qbegin[b]; k != q->qend[b]; k = (uint8_t)((k + 1) % EVQ_MAX))
		if (q->queue[b][k].type == type)
			return &q->queue[b][k];
	return NULL;
}

static inline bool evq_pending(const struct pktq *q, enum evb b)
{
	return q->qbegin[b] != q->qend[b];
}

/* ---------------------------------------------------------------- last IP, time */

static int last_ip_query(const struct pktq *q, uint64_t *ip)
{
	if (!q->have_ip || q->ip_suppressed) {
		if (ip)
			*ip = 0;
		return q->have_ip ? -pte_ip_suppressed : -pte_noip;
	}
	if (ip)
		*ip = q->ip;
	return 0;
}

static inline int last_ip_update(struct pktq *q, const struct pt_packet_ip *p)
{
	switch (p->ipc) {
	case pt_ipc_suppressed:
		q->ip_suppressed = true;
		return 0;
	case pt_ipc_sext_48:
		q->ip = (p->ip & (1ull << 47)) ? p->ip | ~0ull << 48 : p->ip & ~(~0ull << 48);
		break;
	case pt_ipc_update_16:
		q->ip = (q->ip & ~0xffffull) | (p->ip & 0xffffull);
		break;
	case pt_ipc_update_32:
		q->ip = (q->ip & ~0xffffffffull) | (p->ip & 0xffffffffull);
		break;
	case pt_ipc_update_48:
		q->ip = (q->ip & ~0xffffffffffffull) | (p->ip & 0xffffffffffffull);
		break;
	case pt_ipc_full:
		q->ip = p->ip;
		break;
	default:
		return fallback(q, "ip compression");
	}
	q->have_ip = true;
	q->ip_suppressed = false;
	return 0;
}

/* pt_qry_event_ip: a missing ip suppresses the event's */
static void event_ip(struct pktq *q, uint64_t *ip, struct pt_event *ev)
{
	if (last_ip_query(q, ip) < 0)
		ev->ip_suppressed = 1;
}

/* pt_qry_event_time: the time at the packet (not the last query's) */
static void event_time(const struct pktq *q, struct pt_event *ev)
{
	ev->tsc = q->time.tsc;
	ev->lost_mtc = q->time.lost_mtc;
	ev->lost_cyc = q->time.lost_cyc;
	if (q->time.have_tsc)
		ev->has_tsc = 1;
}

/* pt_time_ctc_delta: one wrap-around corrected */
static int ctc_delta(const struct pktq *q, uint32_t ctc, uint32_t last_ctc, uint32_t *delta)
{
	if (ctc < last_ctc) {
		ctc += 1u << (q->cfg.mtc_freq + MTC_BITS);
		if (ctc < last_ctc)
			return -pte_bad_packet;
	}
	*delta = ctc - last_ctc;
	return 0;
}

/* pt_time_ctc_fc */
static int ctc_fc(const struct pktq *q, uint64_t ctc, uint64_t *fc)
{
	if (!q->cfg.cpuid_0x15_eax || !q->cfg.cpuid_0x15_ebx)
		return -pte_bad_config;
	*fc = (ctc * q->cfg.cpuid_0x15_ebx) / q->cfg.cpuid_0x15_eax;
	return 0;
}

/* A query's time: the time at its packet */
static inline void time_seen(struct pktq *q)
{
	if (!q->time_new)
		return;
	q->time_new = false;
	q->last_time.tsc = q->time.tsc;
	q->last_time.lost_mtc = q->time.lost_mtc;
	q->last_time.lost_cyc = q->time.lost_cyc;
	q->last_time.have_tsc = q->time.have_tsc;
}

static void time_tsc(struct qtime *t, uint64_t tsc)
{
	t->have_tsc = true;
	t->have_tma = false;
	t->have_mtc = false;
	t->tsc = t->base = tsc;
	t->ctc = 0;
	t->fc = 0;
	t->lost_mtc = 0;
	t->lost_cyc = 0;
}

static int time_tma(struct pktq *q, struct qtime *t, const struct pt_packet_tma *p)
{
	uint32_t mtc_hi = q->cfg.mtc_freq + MTC_BITS, ctc_mask = (1u << mtc_hi) - 1u;

	/* libipt's errors (no TSC, a second TMA, MTC before it) */
	if (!t->have_tsc || t->have_tma || t->have_mtc)
		return fallback(q, "TMA out of place");
	t->have_tma = true;
	t->base -= p->fc;
	t->fc += p->fc;
	if (mtc_hi <= TMA_CTC_BITS)
		t->have_mtc = true;
	t->ctc = t->ctc_cyc = p->ctc & ctc_mask;
	return 0;
}

static inline int time_mtc(struct pktq *q, struct qtime *t, const struct pt_packet_mtc *p)
{
	uint32_t last_ctc = t->ctc, ctc, delta;
	uint8_t mtc_freq = q->cfg.mtc_freq;
	uint64_t fc;
	bool have_mtc = t->have_mtc;

	/* MTCs between TSC and TMA are ignored */
	if (t->have_tsc && !t->have_tma)
		return 0;
	ctc = (uint32_t)p->ctc << mtc_freq;
	if (t->fc || t->lost_cyc || !have_mtc)
		t->ctc_cyc = ctc;
	t->have_mtc = true;
	t->fc = 0;
	t->ctc = ctc;
	t->lost_cyc = 0;
	if (!have_mtc) {
		uint32_t ctc_lo, ctc_hi;

		if (!t->have_tma)
			return 0;
		if (last_ctc & ~TMA_CTC_MASK)
			return fallback(q, "MTC after TMA");
		ctc_lo = ctc & TMA_CTC_MASK;
		ctc_hi = ctc & ~TMA_CTC_MASK;
		if (ctc_lo < last_ctc) {
			ctc_hi -= 1u << TMA_CTC_BITS;
			ctc_hi &= MTC_MASK << mtc_freq;
		}
		last_ctc |= ctc_hi;
	}
	if (ctc_delta(q, ctc, last_ctc, &delta) < 0) {
		t->lost_mtc += 1;
		return fallback(q, "MTC wrap");
	}
	/* without CPUID 0x15 libipt ignores the MTC (pte_bad_config) */
	if (ctc_fc(q, delta, &fc) < 0)
		return 0;
	t->base += fc;
	t->tsc = t->base;
	return 0;
}

static int time_cbr(struct pktq *q, struct qtime *t, uint8_t ratio)
{
	if (!ratio)
		return fallback(q, "CBR 0");
	t->have_cbr = true;
	t->cbr = ratio;
	return 0;
}

/* pt_time_update_cyc (with pt_time_adjust_cyc) */
static int time_cyc(struct pktq *q, struct qtime *t, uint64_t cyc, uint64_t fcr)
{
	uint64_t fc = t->fc;
	int status;

	if (!fcr) {
		t->lost_cyc += 1;
		return 0;
	}
	if (!fc && t->ctc != t->ctc_cyc) {
		uint64_t cfc, old_cyc;
		uint32_t delta;

		status = ctc_delta(q, t->ctc, t->ctc_cyc, &delta);
		if (status < 0)
			return status;
		status = ctc_fc(q, delta, &cfc);
		if (status < 0)
			return status;
		old_cyc = (cfc << FCR_SHR) / fcr;
		cyc = (cyc < old_cyc ? old_cyc : cyc) - old_cyc;
	}
	fc += (cyc * fcr) >> FCR_SHR;
	t->fc = fc;
	t->tsc = t->base + fc;
	return 0;
}

static void tcal_init(struct qtcal *c)
{
	memset(c, 0, sizeof(*c));
	c->min_fcr = UINT64_MAX;
}

static bool tcal_have_fcr(const struct qtcal *c)
{
	return c->min_fcr <= c->max_fcr;
}

static void tcal_set_fcr(struct qtcal *c, uint64_t fcr)
{
	c->fcr = fcr;
	if (fcr < c->min_fcr)
		c->min_fcr = fcr;
	if (fcr > c->max_fcr)
		c->max_fcr = fcr;
}

/* pt_tcal_header_tsc: a TSC in PSB+ calibrates with the cycles since the last one */
static int tcal_header_tsc(struct qtcal *c, uint64_t tsc)
{
	uint64_t last_tsc = c->tsc, cyc = c->cyc_tsc, delta;

	c->tsc = tsc;
	c->cyc_tsc = 0;
	if (!last_tsc || !cyc || c->have_mtc)
		return 0;
	if (tsc < last_tsc) {
		tsc += 1ull << TSC_BITS;
		if (tsc < last_tsc)
			return -pte_bad_packet;
	}
	delta = tsc - last_tsc;
	if (delta & ~(~0ull >> FCR_SHR))
		return -pte_internal;
	tcal_set_fcr(c, (delta << FCR_SHR) / cyc);
	return 0;
}

/* pt_tcal_header_cbr: the nominal frequency calibrates */
static int tcal_header_cbr(const struct pktq *q, struct qtcal *c, uint8_t cbr)
{
	uint64_t p1 = q->cfg.nom_freq;

	if (!p1)
		return 0;
	if (!cbr)
		return -pte_bad_packet;
	tcal_set_fcr(c, (p1 << FCR_SHR) / cbr);
	return 0;
}

/* pt_tcal_update_mtc */
static inline int tcal_mtc(const struct pktq *q, struct qtcal *c, uint8_t mtc)
{
	uint32_t last_ctc = c->ctc, ctc = (uint32_t)mtc << q->cfg.mtc_freq, delta;
	uint64_t cyc = c->cyc_mtc, fc, fcr;
	bool check_skl168 = c->check_skl168;
	int status;

	c->check_skl168 = false;
	if (!c->have_mtc) {
		c->cyc_mtc = 0;
		c->ctc = ctc;
		c->have_mtc = true;
		return 0;
	}
	if (!cyc)
		return 0;
	c->have_mtc = true;
	c->cyc_mtc = 0;
	c->ctc = ctc;
	c->lost_mtc += 1;
	status = ctc_delta(q, ctc, last_ctc, &delta);
	if (status < 0)
		return status;
	status = ctc_fc(q, delta, &fc);
	if (status < 0)
		return status;
	if (fc & ~(~0ull >> FCR_SHR))
		return -pte_internal;
	fcr = (fc << FCR_SHR) / cyc;
	/* SKL168: CYC packets dropped before PSB; the MTC is skipped */
	if (check_skl168) {
		if ((1u << q->cfg.mtc_freq) < delta)
			return 0;
		if (q->cfg.mtc_freq < 10 && tcal_have_fcr(c) &&
		    ((c->fcr * (cyc + 0xf00)) >> FCR_SHR) < fc)
			return 0;
	}
	tcal_set_fcr(c, fcr);
	c->lost_mtc = 0;
	return 0;
}

/*
 * A timing packet (TSC, TMA, MTC, CBR, CYC) applied to a time and its calibration as
 * libipt's pt_qry_apply_* (`header`: the PSB+ variants of TSC and CBR). libipt ignores
 * configuration errors (-pte_bad_config); its other errors are left to the block
 * decoder.
 */
static int apply_timing(struct pktq *q, struct qtime *t, struct qtcal *c,
			const struct pt_packet *p, bool header)
{
	int status = 0;

	q->mtc_steady = false;
	q->time_new = true;

	switch (p->type) {
	case ppt_tsc:
		if (header) {
			status = tcal_header_tsc(c, p->payload.tsc.tsc);
		} else {
			c->tsc = p->payload.tsc.tsc;
			c->cyc_tsc = 0;
		}
		if (status < 0 && status != -pte_bad_config)
			return fallback(q, "TSC calibration");
		time_tsc(t, p->payload.tsc.tsc);
		return 0;
	case ppt_cbr:
		/* a CBR out of PSB+ is a frequency change: the calibration starts again */
		if (!header)
			tcal_init(c);
		status = tcal_header_cbr(q, c, p->payload.cbr.ratio);
		if (status < 0 && status != -pte_bad_config)
			return fallback(q, "CBR calibration");
		return time_cbr(q, t, p->payload.cbr.ratio);
	case ppt_tma:
		return time_tma(q, t, &p->payload.tma);
	case ppt_mtc:
		status = tcal_mtc(q, c, p->payload.mtc.ctc);
		if (status < 0 && status != -pte_bad_config)
			return fallback(q, "MTC calibration");
		return time_mtc(q, t, &p->payload.mtc);
	case ppt_cyc:
		c->cyc_mtc += p->payload.cyc.value;
		c->cyc_tsc += p->payload.cyc.value;
		status = time_cyc(q, t, p->payload.cyc.value, tcal_have_fcr(c) ? c->fcr : 0);
		if (status < 0 && status != -pte_bad_config)
			return fallback(q, "CYC");
		return 0;
	default:
		return fallback(q, "not a timing packet");
	}
}

/* ---------------------------------------------------------------- packets */

static void reset(struct pktq *q)
{
	q->enabled = false;
	q->consume_packet = false;
	q->event = NULL;
	q->ip = 0;
	q->have_ip = q->ip_suppressed = false;
	q->tnt.payload = q->tnt.index = 0;
	memset(&q->time, 0, sizeof(q->time));
	q->time_new = true;
	q->mtc_steady = false;
	memset(&q->last_time, 0, sizeof(q->last_time));
	tcal_init(&q->tcal);
	memset(q->qbegin, 0, sizeof(q->qbegin));
	memset(q->qend, 0, sizeof(q->qend));
	q->event_pkts = PKT_EVENT;
	q->have_next = false;
}


static int fetch_slow(struct pktq *q)
{
	int size;

	q->have_next = false;
	if (q->pos >= q->size)
		return -pte_eos;
	if (!q->nx_valid || q->nx_off != q->pos) {
		q->nx_valid = false;
		if (q->pd_off != q->pos && pt_pkt_sync_set(q->pd, q->pos) < 0)
			return fallback(q, "packet decoder sync");
		size = pt_pkt_next(q->pd, &q->nx, sizeof(q->nx));
		if (size == -pte_bad_opc) {
			/* an unknown opcode (no decode callback): libipt's query decoder fetches
			 * it and fails when it decodes it (decode()), where the packet is */
			q->pd_off = UINT64_MAX;
			q->nx.type = ppt_unknown;
			size = 0;
		} else if (size < 0) {
			/* malformed or cut: where libipt fails depends on what it is */
			q->pd_off = UINT64_MAX;
			return fallback(q, "packet refused by libipt");
		} else {
			q->pd_off = q->pos + (uint64_t)size;
		}
		q->nx_off = q->pos;
		q->nx_size = size;
		q->nx_valid = true;
	}
	if (q->nx.type == ppt_cbr && !q->nx.payload.cbr.ratio)
		return fallback(q, "CBR 0");
	if (q->nx.type != ppt_cbr && q->nx.type != ppt_mode &&
	    !(q->nx.type == ppt_unknown && !q->nx_size) &&
	    (q->nx.type >= 32 || !(PKT(q->nx.type) & PKT_DONE)))
		return fallback(q, "packet type not done");
	q->have_next = true;
	return 0;
}

/* pt_df_fetch: the packet at pos into nx; -pte_eos at the end. The common case here:
 * the packet decoder is at pos (the last packet was consumed). */
static inline int fetch(struct pktq *q)
{
	if (__builtin_expect(q->pd_off == q->pos && q->pos < q->size, 1)) {
		int size = pt_pkt_next(q->pd, &q->nx, sizeof(q->nx));

		if (__builtin_expect(size > 0 && (unsigned)q->nx.type < 32 &&
				     (PKT(q->nx.type) & PKT_DONE), 1)) {
			q->nx_off = q->pos;
			q->pd_off = q->pos + (uint64_t)size;
			q->nx_size = size;
			q->nx_valid = true;
			q->have_next = true;
			return 0;
		}
		/* again, slowly, to say why (or for MODE and CBR) */
		q->nx_valid = false;
		q->pd_off = UINT64_MAX;
	}
	return fetch_slow(q);
}

static inline bool is_tnt(const struct pktq *q)
{
	return q->nx.type == ppt_tnt_8 || q->nx.type == ppt_tnt_64;
}

/* pt_qry_will_event */
static inline bool will_event(const struct pktq *q)
{
	return q->have_next && (PKT(q->nx.type) & q->event_pkts);
}

/* pt_qry_status_flags once the TNT bits are used up: an event, the end */
static inline int end_flags(const struct pktq *q)
{
	int flags = 0;

	if (will_event(q))
		flags |= pts_event_pending;
	if (!q->have_next && q->pos >= q->size)
		flags |= pts_eos;
	return flags;
}

/* pt_qry_status_flags: events and the end only once the TNT bits are used up */
static inline int status_flags(const struct pktq *q)
{
	return q->tnt.index ? 0 : end_flags(q);
}

/*
 * The status the last bit of the TNT cache will return (end_flags() then), kept at the
 * end of the queries that may leave bits in the cache (cache_tnt(), indirect_branch):
 * the others leave the state as it is while bits are left (an event query refuses,
 * pktq_cond_take() takes bits only) or empty the cache (a sync).
 */
static inline void tnt_end_flags(struct pktq *q)
{
	if (q->tnt.index)
		q->tnt.end_flags = end_flags(q);
}

/* pt_qry_provoke_fetch_error: no next packet */
static int provoke(struct pktq *q)
{
	if (!q->synced)
		return -pte_nosync;
	if (q->pos >= q->size)
		return -pte_eos;
	return fallback(q, "fetch error");
}

static void consume(struct pktq *q)
{
	q->pos += (uint64_t)q->nx_size;
}

/* BDM70: a PSB+ FUP while disabled that a TIP.PGE follows is not an enable */
static int bdm70_applies(struct pktq *q, uint64_t from)
{
	struct pt_packet p;
	int status;

	if (pt_pkt_sync_set(q->look, from) < 0)
		return fallback(q, "BDM70 look-ahead");
	for (;;) {
		status = pt_pkt_next(q->look, &p, sizeof(p));
		if (status < 0)
			return status == -pte_eos ? 0 : fallback(q, "BDM70 look-ahead");
		switch (p.type) {
		case ppt_tip_pge:
			return 1;
		case ppt_pad:
		case ppt_tsc:
		case ppt_cbr:
		case ppt_psbend:
		case ppt_pip:
		case ppt_mode:
		case ppt_vmcs:
		case ppt_tma:
		case ppt_mtc:
		case ppt_cyc:
		case ppt_mnt:
			continue;
		default:
			return 0;
		}
	}
}

/* A timing packet nx, in PSB+ (TMA, MTC, CYC) or not (TSC, TMA, MTC, CYC). */
static int decode_timing(struct pktq *q)
{
	int status;

	/* SKD007: libipt looks at the byte after a short CYC for an OVF it overlaps */
	if (q->nx.type == ppt_cyc && q->cfg.errata.skd007 && q->nx_size == 2 &&
	    ((uint16_t)q->nx.payload.cyc.value & ~0x1f) == 0x20)
		return fallback(q, "SKD007");
	status = apply_timing(q, &q->time, &q->tcal, &q->nx, false);
	if (status < 0)
		return status;
	consume(q);
	return 0;
}

/* The event of the MODE packet nx (type and payload). */
static void set_mode_event(struct pktq *q, struct pt_event *ev)
{
	const struct pt_packet_mode *m = &q->nx.payload.mode;

	if (m->leaf == pt_mol_exec) {
		ev->type = ptev_exec_mode;
		ev->variant.exec_mode.mode = pt_get_exec_mode(&m->bits.exec);
	} else {
		ev->type = ptev_tsx;
		ev->variant.tsx.speculative = m->bits.tsx.intx;
		ev->variant.tsx.aborted = m->bits.tsx.abrt;
	}
}

/* The event of the PIP or VMCS packet nx, `async` (bound to an ip) or not. */
static void set_guest_event(struct pktq *q, struct pt_event *ev, bool async)
{
	if (q->nx.type == ppt_pip) {
		ev->type = async ? ptev_async_paging : ptev_paging;
		/* the same layout in both variants */
		ev->variant.async_paging.cr3 = q->nx.payload.pip.cr3;
		ev->variant.async_paging.non_root = q->nx.payload.pip.nr;
	} else {
		ev->type = async ? ptev_async_vmcs : ptev_vmcs;
		ev->variant.async_vmcs.base = q->nx.payload.vmcs.base;
	}
}

/* pt_qry_decode_pip and pt_qry_decode_vmcs */
static int decode_guest(struct pktq *q)
{
	struct pt_event *ev, *bound;

	if (q->nx.type == ppt_vmcs && (bound = evq_find(q, EVB_TIP, ptev_async_paging))) {
		/* a VMCS and a paging event at the same ip: libipt applies the VMCS first */
		ev = evq_enqueue(q, EVB_TIP);
		if (!ev)
			return fallback(q, "event queue full");
		*ev = *bound;
		bound->type = ptev_async_vmcs;
		bound->variant.async_vmcs.base = q->nx.payload.vmcs.base;
		consume(q);
		return 0;
	}
	if (evq_find(q, EVB_TIP, ptev_async_branch)) {
		/* bound to the TIP of an asynchronous branch in flight */
		ev = evq_enqueue(q, EVB_TIP);
		if (!ev)
			return fallback(q, "event queue full");
		set_guest_event(q, ev, true);
		/* libipt times a paging event here, not a VMCS one */
		if (q->nx.type == ppt_pip)
			event_time(q, ev);
	} else {
		ev = evq_standalone(q);
		set_guest_event(q, ev, false);
		q->event = ev;
		event_time(q, ev);
	}
	consume(q);
	return 0;
}

/* A PSB+ packet (libipt's header functions), nx at pos. */
static int decode_header(struct pktq *q)
{
	struct pt_event *ev;
	int status;

	switch (q->nx.type) {
	case ppt_pad:
		break;
	case ppt_fup:
		if (q->cfg.errata.bdm70 && !q->enabled) {
			status = bdm70_applies(q, q->pos + (uint64_t)q->nx_size);
			if (status < 0)
				return status;
			if (status)
				break;
		}
		status = last_ip_update(q, &q->nx.payload.ip);
		if (status < 0)
			return status;
		if (q->nx.payload.ip.ipc != pt_ipc_suppressed)
			q->enabled = true;
		break;
	case ppt_mode:
		ev = evq_enqueue(q, EVB_PSBEND);
		if (!ev)
			return fallback(q, "event queue full");
		set_mode_event(q, ev);
		break;
	case ppt_tsc:
		status = apply_timing(q, &q->time, &q->tcal, &q->nx, true);
		if (status < 0)
			return status;
		break;
	case ppt_cbr:
		status = apply_timing(q, &q->time, &q->tcal, &q->nx, true);
		if (status < 0)
			return status;
		ev = evq_enqueue(q, EVB_PSBEND);
		if (!ev)
			return fallback(q, "event queue full");
		ev->type = ptev_cbr;
		ev->variant.cbr.ratio = q->nx.payload.cbr.ratio;
		break;
	case ppt_tma:
	case ppt_mtc:
	case ppt_cyc:
		status = decode_timing(q);
		if (status < 0)
			return status;
		return 0;
	case ppt_pip:
	case ppt_vmcs:
		/* reported at PSBEND, with its ip */
		ev = evq_enqueue(q, EVB_PSBEND);
		if (!ev)
			return fallback(q, "event queue full");
		set_guest_event(q, ev, true);
		break;
	case ppt_unknown:
		return -pte_bad_opc;
	default:
		/* libipt: -pte_bad_context */
		return fallback(q, "packet in PSB+");
	}
	consume(q);
	return 0;
}

/* pt_qry_decode_psb: the PSB and its header up to (not with) PSBEND */
static int decode_psb(struct pktq *q)
{
	uint64_t at = q->pos;
	int status;

	if (q->cfg.errata.skl168) {
		q->tcal.check_skl168 = true;
		/* the next MTC checks it (read_ahead_mtc_steady() leaves it) */
		q->mtc_steady = false;
	}
	consume(q);
	q->have_ip = q->ip_suppressed = false;
	q->ip = 0;
	for (;;) {
		status = fetch(q);
		if (status)
			break;
		if (q->nx.type == ppt_psbend)
			return 0;
		status = decode_header(q);
		if (status)
			break;
	}
	/* back to the PSB (the next packet again), its events dropped */
	q->pos = at;
	q->qbegin[EVB_PSBEND] = q->qend[EVB_PSBEND] = 0;
	q->event_pkts &= ~evq_pkt[EVB_PSBEND];
	if (fetch(q))
		q->have_next = false;
	return status;
}

/*
 * The tail libipt's TIP, TIP.PGE, TIP.PGD and FUP share once the packet published `ev`:
 * while more events bound to it are queued in `b` the packet is decoded again (one event
 * each time); then it is consumed if `take` (an event took the packet, or the packet is
 * one that is always taken). Whether it was consumed.
 */
static bool publish_bound(struct pktq *q, struct pt_event *ev, enum evb b, bool take)
{
	q->event = ev;
	if (evq_pending(q, b) || !take)
		return false;
	consume(q);
	return true;
}

/* pt_qry_decode_tip's binding of a pending event */
static int event_tip(struct pktq *q, struct pt_event *ev)
{
	switch (ev->type) {
	case ptev_async_branch:
		q->consume_packet = true;
		event_ip(q, &ev->variant.async_branch.to, ev);
		return 0;
	case ptev_exec_mode:
		event_ip(q, &ev->variant.exec_mode.ip, ev);
		return 0;
	case ptev_async_paging:
		event_ip(q, &ev->variant.async_paging.ip, ev);
		return 0;
	case ptev_async_vmcs:
		event_ip(q, &ev->variant.async_vmcs.ip, ev);
		return 0;
	default:
		return fallback(q, "event bound to TIP");
	}
}

static int decode_tip(struct pktq *q)
{
	struct pt_event *ev;
	int status = last_ip_update(q, &q->nx.payload.ip);

	if (status < 0)
		return status;
	ev = evq_dequeue(q, EVB_TIP);
	if (ev) {
		status = event_tip(q, ev);
		if (status < 0)
			return status;
		if (publish_bound(q, ev, EVB_TIP, q->consume_packet))
			q->consume_packet = false;
		return 0;
	}
	consume(q);
	return 0;
}

/*
 * A TIP.PGE's enable (the events bound to the packet come next) or, no event bound to it,
 * a TIP.PGD's disable (`pge`: which) into `ev`, zeroed here, the packet's ip updated:
 * decode_tip_pge()'s, decode_tip_pgd()'s and decode_pg_into()'s. The enable needs the
 * ip; tracing is on, or off, from the packet on. 0 or the error.
 */
static inline int pg_event(struct pktq *q, struct pt_event *ev, bool pge)
{
	if (!pge) {
		memset(ev, 0, sizeof(*ev));
		ev->type = ptev_disabled;
		event_ip(q, &ev->variant.disabled.ip, ev);
		event_time(q, ev);
		q->enabled = false;
		return 0;
	}
	if (last_ip_query(q, NULL) < 0)
		return fallback(q, "TIP.PGE without ip");
	memset(ev, 0, sizeof(*ev));
	ev->type = ptev_enabled;
	ev->variant.enabled.ip = q->ip;
	event_time(q, ev);
	q->tnt.payload = q->tnt.index = 0;
	q->enabled = true;
	return 0;
}

static int decode_tip_pge(struct pktq *q)
{
	struct pt_event *ev;
	int status = last_ip_update(q, &q->nx.payload.ip);

	if (status < 0)
		return status;
	if (!q->consume_packet) {
		/* the enable first; the events bound to this packet next (pg_event() zeroes
		 * the standalone event) */
		ev = &q->standalone;
		status = pg_event(q, ev, true);
		if (status < 0)
			return status;
		q->consume_packet = true;
	} else {
		ev = evq_dequeue(q, EVB_TIP);
		if (!ev)
			return fallback(q, "TIP.PGE without event");
		if (ev->type != ptev_exec_mode)
			return fallback(q, "event bound to TIP.PGE");
		event_ip(q, &ev->variant.exec_mode.ip, ev);
	}
	if (publish_bound(q, ev, EVB_TIP, true))
		q->consume_packet = false;
	return 0;
}

static int decode_tip_pgd(struct pktq *q)
{
	struct pt_event *ev;
	int status = last_ip_update(q, &q->nx.payload.ip);

	if (status < 0)
		return status;
	ev = evq_dequeue(q, EVB_TIP);
	if (ev) {
		switch (ev->type) {
		case ptev_async_branch: {
			uint64_t at = ev->variant.async_branch.from;

			ev->type = ptev_async_disabled;
			ev->variant.async_disabled.at = at;
			event_ip(q, &ev->variant.async_disabled.ip, ev);
			break;
		}
		case ptev_exec_mode:
		case ptev_async_paging:
		case ptev_async_vmcs:
			/* tracing is disabled when it applies */
			ev->ip_suppressed = 1;
			break;
		default:
			return fallback(q, "event bound to TIP.PGD");
		}
	} else {
		ev = &q->standalone;
		pg_event(q, ev, false);
	}
	if (publish_bound(q, ev, EVB_TIP, true))
		q->enabled = false;
	return 0;
}

static int decode_fup(struct pktq *q)
{
	struct pt_event *ev;
	uint64_t ip;
	int status = last_ip_update(q, &q->nx.payload.ip);

	if (status < 0)
		return status;
	ev = evq_dequeue(q, EVB_FUP);
	if (ev) {
		switch (ev->type) {
		case ptev_overflow:
			q->consume_packet = true;
			if (last_ip_query(q, &ev->variant.overflow.ip) < 0)
				return fallback(q, "OVF FUP without ip");
			break;
		case ptev_tsx:
			if (!ev->variant.tsx.aborted)
				q->consume_packet = true;
			event_ip(q, &ev->variant.tsx.ip, ev);
			break;
		default:
			return fallback(q, "event bound to FUP");
		}
		if (publish_bound(q, ev, EVB_FUP, q->consume_packet))
			q->consume_packet = false;
		return 0;
	}
	/* an asynchronous branch, bound to the next TIP */
	if (last_ip_query(q, &ip) < 0)
		return fallback(q, "FUP without ip");
	ev = evq_enqueue(q, EVB_TIP);
	if (!ev)
		return fallback(q, "event queue full");
	ev->type = ptev_async_branch;
	ev->variant.async_branch.from = ip;
	event_time(q, ev);
	consume(q);
	return 0;
}

/* pt_qry_process_pending_psb_events: publish the next PSB+ event; whether there was one */
static bool psbend_event(struct pktq *q)
{
	struct pt_event *ev = evq_dequeue(q, EVB_PSBEND);

	if (!ev)
		return false;
	/* one per decode of the PSBEND (or OVF), as status updates */
	ev->status_update = 1;
	event_time(q, ev);
	if (ev->type == ptev_exec_mode)
		event_ip(q, &ev->variant.exec_mode.ip, ev);
	else if (ev->type == ptev_tsx)
		event_ip(q, &ev->variant.tsx.ip, ev);
	else if (ev->type == ptev_async_paging)
		event_ip(q, &ev->variant.async_paging.ip, ev);
	else if (ev->type == ptev_async_vmcs)
		event_ip(q, &ev->variant.async_vmcs.ip, ev);
	q->event = ev;
	return true;
}

static int decode_psbend(struct pktq *q)
{
	if (!psbend_event(q))
		consume(q);
	return 0;
}

/*
 * pt_qry_find_ovf_fup: from `from` (after an OVF), the length up to the end of the FUP
 * the overflow binds to, 0 when a packet says tracing was disabled first, or libipt's
 * error (-pte_eos, -pte_bad_context, ...).
 */
static int ovf_fup(struct pktq *q, uint64_t from)
{
	struct pt_packet p;
	uint64_t end;
	int status = pt_pkt_sync_set(q->look, from);

	for (; status >= 0;) {
		status = pt_pkt_next(q->look, &p, sizeof(p));
		if (status < 0)
			return status;
		switch (p.type) {
		case ppt_fup:
			if (pt_pkt_get_offset(q->look, &end) < 0 || end - from > INT32_MAX)
				return fallback(q, "OVF");
			return (int)(end - from);
		case ppt_invalid:
			return -pte_bad_opc;
		case ppt_unknown:
		case ppt_pad:
		case ppt_mnt:
		case ppt_cbr:
		case ppt_tsc:
		case ppt_tma:
		case ppt_mtc:
		case ppt_cyc:
			continue;
		case ppt_psbend:
		case ppt_tip:
		case ppt_tip_pgd:
		case ppt_tnt_8:
		case ppt_tnt_64:
			return -pte_bad_context;
		default:
			return 0;
		}
	}
	return status;
}

/*
 * SKD010 (pt_qry_handle_skd010): an overflow that looks disabled may have lost its FUP.
 * 1 where libipt finds the trace right as it is; what it would recover (resuming at a
 * later packet) is not done here.
 */
static int skd010_fine(struct pktq *q, uint64_t from)
{
	struct qtime t = q->time;
	struct qtcal c = q->tcal;
	struct pt_packet p;
	bool mode_tsx = false;
	int status;

	if (pt_pkt_sync_set(q->look, from) < 0)
		return fallback(q, "SKD010");
	for (;;) {
		status = pt_pkt_next(q->look, &p, sizeof(p));
		if (status < 0)
			return status == -pte_eos ? 1 : fallback(q, "SKD010");
		switch (p.type) {
		case ppt_tip_pge:
		case ppt_tnt_8:
		case ppt_tnt_64:
		case ppt_ovf:
		case ppt_stop:
		case ppt_unknown:
		case ppt_invalid:
		case ppt_mwait:
			return 1;
		case ppt_mode:
			if (p.payload.mode.leaf == pt_mol_tsx) {
				if (mode_tsx)
					return 1;
				mode_tsx = true;
			}
			break;
		case ppt_psb:
			/* tracing is enabled if the PSB+ has a FUP */
			for (;;) {
				status = pt_pkt_next(q->look, &p, sizeof(p));
				if (status < 0)
					return status == -pte_eos ? 1 : fallback(q, "SKD010");
				if (p.type == ppt_psbend)
					return 1;
				if (p.type == ppt_fup)
					return fallback(q, "SKD010 recovery");
			}
		case ppt_exstop:
			if (p.payload.exstop.ip)
				return 1;
			break;
		case ppt_ptw:
			if (p.payload.ptw.ip)
				return 1;
			break;
		case ppt_tsc:
		case ppt_cbr:
		case ppt_tma:
		case ppt_mtc:
		case ppt_cyc:
			/* time is kept on the way (for a recovery, not done here) */
			if (apply_timing(q, &t, &c, &p, false) < 0)
				return PTD_FAST_FALLBACK;
			break;
		case ppt_tip_pgd:
		case ppt_fup:
		case ppt_tip:
			return fallback(q, "SKD010 recovery");
		case ppt_psbend:
			return fallback(q, "SKD010: PSBEND");
		default:
			/* PIP, VMCS, PAD, MNT, power events, CYC: skipped */
			break;
		}
	}
}

/* pt_qry_decode_ovf */
static int decode_ovf(struct pktq *q)
{
	struct qtime t = q->time;
	struct pt_event *ev;
	int found, status;

	/* the PSB+ events first */
	if (psbend_event(q))
		return 0;
	/* the state is reset, the time kept */
	reset(q);
	q->time = t;
	q->time_new = true;
	consume(q);
	found = ovf_fup(q, q->pos);
	if (found == PTD_FAST_FALLBACK)
		return found;
	if (found > 0) {
		/* resolved while tracing: the overflow binds to that FUP */
		if (q->cfg.errata.apl12)
			return fallback(q, "APL12");
		ev = evq_enqueue(q, EVB_FUP);
		if (!ev)
			return fallback(q, "event queue full");
		ev->type = ptev_overflow;
		q->enabled = true;
		event_time(q, ev);
		return 0;
	}
	if (q->cfg.errata.skd010) {
		status = skd010_fine(q, q->pos);
		if (status <= 0)
			return status ? status : fallback(q, "SKD010");
	}
	if (q->cfg.errata.apl11 && found == -pte_bad_context)
		return fallback(q, "APL11");
	if (found < 0 && found != -pte_eos)
		return fallback(q, "OVF: no FUP");
	/* resolved with tracing disabled: standalone, no ip */
	ev = evq_standalone(q);
	ev->type = ptev_overflow;
	ev->ip_suppressed = 1;
	q->enabled = false;
	q->event = ev;
	event_time(q, ev);
	return 0;
}

/* dfun->decode of the packet nx at pos */
static int decode(struct pktq *q)
{
	struct pt_event *ev;
	int status;

	switch (q->nx.type) {
	case ppt_pad:
		break;
	case ppt_psb:
		return decode_psb(q);
	case ppt_psbend:
		return decode_psbend(q);
	case ppt_tnt_8:
	case ppt_tnt_64:
		if (q->tnt.index || !q->nx.payload.tnt.bit_size)
			return fallback(q, "TNT");
		q->tnt.payload = q->nx.payload.tnt.payload;
		q->tnt.index = 1ull << (q->nx.payload.tnt.bit_size - 1);
		break;
	case ppt_tip:
		return decode_tip(q);
	case ppt_tip_pge:
		return decode_tip_pge(q);
	case ppt_tip_pgd:
		return decode_tip_pgd(q);
	case ppt_fup:
		return decode_fup(q);
	case ppt_mode:
		if (q->nx.payload.mode.leaf == pt_mol_exec) {
			/* MODE.Exec binds to TIP */
			ev = evq_enqueue(q, EVB_TIP);
		} else if (!q->enabled) {
			/* MODE.TSX: standalone while disabled, without an ip */
			ev = evq_standalone(q);
			ev->ip_suppressed = 1;
			q->event = ev;
		} else {
			/* ... else bound to FUP */
			ev = evq_enqueue(q, EVB_FUP);
		}
		if (!ev)
			return fallback(q, "event queue full");
		set_mode_event(q, ev);
		event_time(q, ev);
		break;
	case ppt_ovf:
		return decode_ovf(q);
	case ppt_pip:
	case ppt_vmcs:
		return decode_guest(q);
	case ppt_tsc:
	case ppt_tma:
	case ppt_mtc:
	case ppt_cyc:
		return decode_timing(q);
	case ppt_cbr:
		status = apply_timing(q, &q->time, &q->tcal, &q->nx, false);
		if (status < 0)
			return status;
		ev = evq_standalone(q);
		ev->type = ptev_cbr;
		ev->variant.cbr.ratio = q->nx.payload.cbr.ratio;
		q->event = ev;
		event_time(q, ev);
		break;
	case ppt_unknown:
		return -pte_bad_opc;
	default:
		return fallback(q, "packet type not done");
	}
	consume(q);
	return 0;
}

/*
 * An MTC read ahead (pt_qry_apply_mtc): the calibration, then the time. Most MTCs of a
 * trace come after TMA and an MTC with no CYC since (calibration and time have an MTC,
 * no cycles counted: tcal.cyc_mtc, time.fc and time.lost_cyc 0, and no SKL168 check
 * since a PSB): the time then advances by the CTC since the last MTC (when that does not
 * wrap), and the rest of what tcal_mtc() and time_mtc() do leaves it as it is:
 * read_ahead_mtc_steady(). mtc_steady says so, from the MTC before.
 */
static __attribute__((noinline)) int read_ahead_mtc_unsteady(struct pktq *q)
{
	struct qtcal *c = &q->tcal;
	struct qtime *t = &q->time;
	int status;

	q->time_new = true;
	status = tcal_mtc(q, c, q->nx.payload.mtc.ctc);
	if (status < 0 && status != -pte_bad_config)
		return fallback(q, "MTC calibration");
	status = time_mtc(q, t, &q->nx.payload.mtc);
	if (status < 0)
		return status;
	q->mtc_steady = c->have_mtc && !c->cyc_mtc && t->have_mtc && t->have_tma && !t->fc &&
			!t->lost_cyc;
	return 0;
}

/* A steady MTC (above): whether it was one (and is done) */
static inline bool read_ahead_mtc_steady(struct pktq *q)
{
	struct qtime *t = &q->time;
	uint32_t ctc = (uint32_t)q->nx.payload.mtc.ctc << q->cfg.mtc_freq;
	uint32_t delta = ctc - t->ctc;
	uint64_t fc;

	if (__builtin_expect(!q->mtc_steady, 0))
		return false;
	/* most MTCs come the same CTC delta after the last: its fast counter ticks are kept
	 * (ctc_fc() divides) */
	if (__builtin_expect(delta != q->mtc_delta, 0)) {
		if (ctc < t->ctc)
			return false;
		if (ctc_fc(q, delta, &fc) < 0) {
			/* without CPUID 0x15 libipt ignores the MTC's time */
			t->ctc = ctc;
			return true;
		}
		q->mtc_delta = delta;
		q->mtc_fc = fc;
	}
	t->base += q->mtc_fc;
	t->tsc = t->base;
	t->ctc = ctc;
	q->time_new = true;
	return true;
}

static inline int read_ahead_mtc(struct pktq *q)
{
	return read_ahead_mtc_steady(q) ? 0 : read_ahead_mtc_unsteady(q);
}

/*
 * A run of steady MTCs (read_ahead_mtc_steady()'s common case: the same CTC delta as
 * the last) is counted, not applied one by one: each is its payload compared with the
 * one expected, and the time advances at the run's end by the count times the delta's
 * fast counter ticks (libipt adds them one at a time: the same sum). One register, `run`,
 * carries both: the count in its high half (2^32 MTCs would be 8 GiB of trace), the next
 * payload expected in its low half (the last one's plus the delta in payload units);
 * mtc_step adds one MTC to both. No payload is expected (above 255) until an MTC begins
 * a run (mtc_run_break()), nor where the MTC is not steady or no delta is kept, nor past
 * a wrap (read_ahead_mtc() takes those).
 */
#define MTC_RUN_ONE (1ull << 32)
#define MTC_RUN_NONE UINT32_MAX

/* The end of a run: its MTCs applied as read_ahead_mtc_steady() would */
static inline void mtc_run_end(struct pktq *q, uint64_t run)
{
	uint32_t n = (uint32_t)(run >> 32);

	if (!n)
		return;
	q->time.base += (uint64_t)n * q->mtc_fc;
	q->time.tsc = q->time.base;
	q->time.ctc = ((uint32_t)run - (uint32_t)q->mtc_step) << q->cfg.mtc_freq;
	q->time_new = true;
}

/* A run begun at the time as it is, in mtc_run and mtc_step: none where none can */
static inline void mtc_run_begin(struct pktq *q)
{
	uint32_t d8;

	/* steady: time.ctc is the last MTC's payload shifted by mtc_freq (time_mtc()) */
	if (!q->mtc_steady || q->mtc_delta == UINT64_MAX) {
		q->mtc_run = MTC_RUN_NONE;
		q->mtc_step = 0;
		return;
	}
	d8 = (uint32_t)(q->mtc_delta >> q->cfg.mtc_freq);
	q->mtc_run = (q->time.ctc >> q->cfg.mtc_freq) + d8;
	q->mtc_step = MTC_RUN_ONE | d8;
}

/*
 * The MTC nx at pos is not the one `run` expects: the run ends, and the MTC is the first
 * of a new one or is read ahead alone. The run goes on in mtc_run (and mtc_step); or
 * the MTC's error. Out of line: once per run, not per MTC.
 */
static __attribute__((noinline)) int mtc_run_break(struct pktq *q, uint64_t run)
{
	int status;

	mtc_run_end(q, run);
	mtc_run_begin(q);
	if (q->nx.payload.mtc.ctc == (uint32_t)q->mtc_run) {
		q->mtc_run += q->mtc_step;
		return 0;
	}
	status = read_ahead_mtc(q);
	if (status < 0)
		return status;
	mtc_run_begin(q);
	return 0;
}

/* libipt's sizes of the packets read_ahead_pad_mtc() steps over (pt_opcodes.h ptps_*) */
#define PAD_SIZE 1
#define MTC_SIZE 2

/*
 * read_ahead_pad_mtc() once the packet at pos, nx, is a PAD or an MTC: up to the first
 * packet that is neither, with its status. A run of PADs and one of MTCs are each a loop
 * of their own (some traces have most of theirs in a row); pos and the run's step are
 * kept in q (an addition to memory is one instruction as well: no register for them
 * across pt_pkt_next(), in the queries that have this inline).
 */
static inline __attribute__((always_inline)) int read_ahead_run(struct pktq *q)
{
	uint64_t run = MTC_RUN_NONE;
	int status = 0;

	for (;;) {
		if (q->nx.type == ppt_pad) {
			do {
				q->pos += PAD_SIZE;
				if (__builtin_expect(pt_pkt_next(q->pd, &q->nx,
								 sizeof(q->nx)) <= 0, 0))
					goto failed;
			} while (q->nx.type == ppt_pad);
		}
		if (q->nx.type != ppt_mtc)
			break;
		do {
			if (__builtin_expect(q->nx.payload.mtc.ctc != (uint32_t)run, 0)) {
				status = mtc_run_break(q, run);
				if (status < 0) {
					q->have_next = true;
					run = MTC_RUN_NONE;
					goto done;
				}
				run = q->mtc_run;
			} else {
				run += q->mtc_step;
			}
			q->pos += MTC_SIZE;
			if (__builtin_expect(pt_pkt_next(q->pd, &q->nx, sizeof(q->nx)) <= 0, 0))
				goto failed;
		} while (q->nx.type == ppt_mtc);
	}
done:
	mtc_run_end(q, run);
	q->nx_off = q->pos;
	q->pd_off = q->pos + q->nx.size;
	q->nx_size = q->nx.size;
	q->nx_valid = true;
	return status;
failed:
	mtc_run_end(q, run);
	q->pd_off = UINT64_MAX;
	return 1;
}

/*
 * The packets from pos while the packet decoder is there (the common case), up to the
 * first that is not a PAD or an MTC (most packets of some traces: taken here, without
 * fetch()'s bookkeeping for each, a run of steady MTCs counted: mtc_run_end(); when the
 * first packet is already another, as between the TNT packets of most traces, that is
 * all). 0: that packet is nx, read as fetch() reads it (for the caller to check); 1: the
 * packet decoder failed at pos, for fetch_slow() to say how; or an MTC's error, at the
 * MTC (have_next).
 */
static inline __attribute__((always_inline)) int read_ahead_pad_mtc(struct pktq *q)
{
	int size;

	q->nx_valid = false;
	size = pt_pkt_next(q->pd, &q->nx, sizeof(q->nx));
	if (__builtin_expect(size <= 0, 0)) {
		q->pd_off = UINT64_MAX;
		return 1;
	}
	if (q->nx.type == ppt_mtc || q->nx.type == ppt_pad)
		return read_ahead_run(q);
	q->nx_off = q->pos;
	q->pd_off = q->pos + (uint64_t)size;
	q->nx_size = size;
	q->nx_valid = true;
	return 0;
}

/* pt_qry_read_ahead: status packets up to the next TNT, TIP or event packet (all of
 * it; read_ahead() tries the common case inline first) */
static __attribute__((noinline)) int read_ahead_slow_from(struct pktq *q, bool fetched)
{
	int status;

	for (;; fetched = false) {
		if (fetched) {
			/* read_ahead_fast() fetched nx (have_next), a packet done here */
			status = 0;
		} else if (q->pd_off == q->pos && q->pos < q->size) {
			status = read_ahead_pad_mtc(q);
			if (status < 0)
				return status;
			if (!status && (unsigned)q->nx.type < 32 && (PKT(q->nx.type) & PKT_DONE))
				q->have_next = true;
			else
				status = 1;
		} else {
			status = 1;
		}
		/* an end, an error, MODE, CBR or a packet not done here */
		if (status)
			status = fetch_slow(q);
		if (status)
			return status;
		/* (PADs and MTCs fetch_slow() read) */
		if (q->nx.type == ppt_pad) {
			q->pos += 1;
			continue;
		}
		if (q->nx.type == ppt_mtc) {
			status = read_ahead_mtc(q);
			if (status < 0)
				return status;
			q->pos += (uint64_t)q->nx_size;
			continue;
		}
		if ((PKT(q->nx.type) & PKT_BRANCH) || will_event(q))
			return 0;
		status = decode(q);
		if (status) {
			/* a truncated status packet at the end */
			if (status == -pte_eos) {
				q->pos = q->size;
				q->have_next = false;
			}
			return status;
		}
	}
}

static int read_ahead_slow(struct pktq *q)
{
	return read_ahead_slow_from(q, false);
}

/*
 * read_ahead()'s common case, inline in the queries: the packet decoder at pos, PADs and
 * MTCs, then a TNT or TIP no event is bound to (it becomes the next packet, have_next).
 * 0 then; an MTC's error; 3: an event packet or a branch an event is bound to is next
 * (have_next), where the read-ahead stops too (a TIP.PGD's is its TIP.PGE: 340 K on
 * mruby); 1 (or 2: nx is the next packet, one done here, have_next): read_ahead_rest()
 * goes on from where this stopped.
 */
static inline __attribute__((always_inline)) int read_ahead_fast(struct pktq *q)
{
	uint32_t pkt;
	int status;

	/* (at the end pt_pkt_next() fails: read_ahead_slow_from() then says so) */
	if (__builtin_expect(q->pd_off != q->pos, 0))
		return 1;
	status = read_ahead_pad_mtc(q);
	if (__builtin_expect(status, 0))
		return status < 0 ? status : 1;
	/* (a packet libipt decoded has a type below 32) */
	pkt = PKT(q->nx.type);
	if (__builtin_expect(!(pkt & PKT_DONE), 0))
		return 1;
	q->have_next = true;
	if (pkt & PKT_BRANCH & ~q->event_pkts)
		return 0;
	/* (read_ahead_slow_from() would stop at once: will_event()) */
	return pkt & (PKT_BRANCH | q->event_pkts) ? 3 : 2;
}

/* After read_ahead_fast()'s `status` > 0: the rest of the read-ahead */
static inline int read_ahead_rest(struct pktq *q, int status)
{
	return status == 3 ? 0 : read_ahead_slow_from(q, status == 2);
}

static inline __attribute__((always_inline)) int read_ahead(struct pktq *q)
{
	int status = read_ahead_fast(q);

	return status <= 0 ? status : read_ahead_rest(q, status);
}

/* ---------------------------------------------------------------- queries */

static int start_at(struct pktq *q, uint64_t off, uint64_t *ip)
{
	int status;

	reset(q);
	q->synced = true;
	q->sync = q->pos = off;
	status = fetch(q);
	if (status)
		return status;
	if (q->nx.type != ppt_psb)
		return -pte_nosync;
	status = decode_psb(q);
	if (status < 0)
		return status;
	/* the start address before reading ahead (an adjacent PSB+ may change it) */
	if (ip && !last_ip_query(q, ip))
		ip = NULL;
	status = read_ahead_slow(q);
	if (status < 0)
		return status;
	status = status_flags(q);
	if (last_ip_query(q, ip) < 0 && ip)
		status |= pts_ip_suppressed;
	return status;
}

static int own_sync_forward(struct pktq *q, uint64_t *ip)
{
	uint64_t pos = q->synced ? q->pos : 0, space, off;
	int status;

	if (q->synced && pos == q->sync)
		pos += PSB_SIZE;
	/* a bit earlier, for a PSB a preceding packet partly consumed */
	space = pos < PSB_SIZE ? pos : PSB_SIZE - 1;
	pos -= space;
	if (pos > q->size)
		return -pte_internal;
	/* libipt's packet decoder searches from one past a position it is set to */
	if (pos) {
		status = pt_pkt_sync_set(q->pd, pos - 1);
	} else {
		struct pt_packet_decoder *fresh = pt_pkt_alloc_decoder(&q->cfg);

		status = fresh ? 0 : -pte_nomem;
		if (fresh) {
			pt_pkt_free_decoder(q->pd);
			q->pd = fresh;
		}
	}
	if (status >= 0)
		status = pt_pkt_sync_forward(q->pd);
	q->pd_off = UINT64_MAX;
	if (status < 0)
		return status;
	status = pt_pkt_get_sync_offset(q->pd, &off);
	if (status < 0)
		return status;
	q->pd_off = off;
	return start_at(q, off, ip);
}

static int own_sync_set(struct pktq *q, uint64_t *ip, uint64_t offset)
{
	const uint8_t *p = q->cfg.begin + offset;

	/* pt_sync_set's checks (a PSB there); a PSB libipt refuses is left to fetch() */
	if (offset > q->size || q->size < offset + 2)
		return -pte_eos;
	if (p[0] != 0x02 || p[1] != 0x82)
		return -pte_nosync;
	return start_at(q, offset, ip);
}

static int own_get_offset(const struct pktq *q, uint64_t *offset)
{
	if (!q->synced)
		return -pte_nosync;
	*offset = q->pos;
	return 0;
}

static int own_get_sync_offset(const struct pktq *q, uint64_t *offset)
{
	if (!q->synced)
		return -pte_nosync;
	*offset = q->sync;
	return 0;
}

/* The next packet is a TNT with bits (the common case), for cache_tnt() */
static inline bool tnt_next(const struct pktq *q)
{
	return q->have_next && is_tnt(q) && q->nx.payload.tnt.bit_size;
}

/*
 * A packet before the one a query asks for (a TNT, a TIP): decoded and read past, 0; or
 * the query's error (-pte_event_ignored where it was an event).
 */
static int pass_packet(struct pktq *q)
{
	int status;

	q->event = NULL;
	status = decode(q);
	if (status)
		return status;
	if (q->event)
		return -pte_event_ignored;
	return read_ahead_slow(q);
}

/* cache_tnt()'s way to the next TNT packet when it is not the next packet: 0 once it is */
static __attribute__((noinline)) int tnt_ahead(struct pktq *q)
{
	int status;

	for (;;) {
		if (!q->have_next)
			return provoke(q);
		if (is_tnt(q))
			return q->nx.payload.tnt.bit_size ? 0 : fallback(q, "TNT");
		if (will_event(q) || q->nx.type == ppt_tip)
			return -pte_bad_query;
		status = pass_packet(q);
		if (status)
			return status;
	}
}

/*
 * pt_qry_cache_tnt: the next TNT packet into the cache. Inline in the queries that take
 * bits (one call's frame for the refill, the read-ahead and the bit), the common case
 * first: the TNT packet is next and a TNT or TIP without an event comes after it.
 */
static inline __attribute__((always_inline)) int cache_tnt(struct pktq *q)
{
	int status;

	if (__builtin_expect(!tnt_next(q), 0)) {
		status = tnt_ahead(q);
		if (status)
			return status;
	}
	/* decode() of the TNT packet */
	q->tnt.payload = q->nx.payload.tnt.payload;
	q->tnt.index = 1ull << (q->nx.payload.tnt.bit_size - 1);
	q->pos += (uint64_t)q->nx_size;
	time_seen(q);
	status = read_ahead_fast(q);
	if (__builtin_expect(!status, 1)) {
		/* a TNT or TIP next, no event: the last bit's status is 0 (end_flags()) */
		q->tnt.end_flags = 0;
		return 0;
	}
	if (status > 0)
		status = read_ahead_rest(q, status);
	tnt_end_flags(q);
	if (status < 0 && status != -pte_eos)
		return status;
	return 0;
}

static int own_cond_branch(struct pktq *q, int *taken)
{
	int status;

	if (!q->tnt.index) {
		status = cache_tnt(q);
		if (status < 0)
			return status;
	}
	*taken = (q->tnt.payload & q->tnt.index) != 0;
	q->tnt.index >>= 1;
	/* as pktq_cond_branch() inline, for PKTQ_CHECK to compare it */
	return q->tnt.end_flags & -(int)!q->tnt.index;
}

/* A byte's bits in reverse order */
#define REV2(b) (b), (b) + 2 * 64, (b) + 1 * 64, (b) + 3 * 64
#define REV4(b) REV2(b), REV2((b) + 2 * 16), REV2((b) + 1 * 16), REV2((b) + 3 * 16)
#define REV6(b) REV4(b), REV4((b) + 2 * 4), REV4((b) + 1 * 4), REV4((b) + 3 * 4)
static const uint8_t byte_reversed[256] = { REV6(0), REV6(2), REV6(1), REV6(3) };

/* own_cond_bits() of more than 8 bits (a TNT-64 packet's), out of line: the common case
 * needs no frame */
static __attribute__((noinline)) int cond_bits_long(uint64_t payload, unsigned left,
						    uint64_t *bits, unsigned *n)
{
	uint64_t b = 0;
	unsigned k;

	for (k = 0; k < left; k += 8)
		b |= (uint64_t)byte_reversed[(payload >> k) & 0xff] << (56 - k);
	*bits = b >> (64 - left);
	*n = left;
	return 0;
}

static int own_cond_bits(struct pktq *q, uint64_t *bits, unsigned *n)
{
	uint64_t payload;
	unsigned left;

	if (q->tnt.index) {
		payload = q->tnt.payload;
		left = (unsigned)(64 - __builtin_clzll(q->tnt.index));
	} else if (tnt_next(q)) {
		/* what cache_tnt() would take first */
		payload = q->nx.payload.tnt.payload;
		left = q->nx.payload.tnt.bit_size;
	} else {
		*bits = 0;
		*n = 0;
		return 0;
	}
	/* the bits from index down, the highest first: reversed, a byte at a time (a TNT-8
	 * packet's in one) */
	if (__builtin_expect(left > 8, 0))
		return cond_bits_long(payload, left, bits, n);
	*bits = byte_reversed[payload & 0xff] >> (8 - left);
	*n = left;
	return 0;
}

static int own_cond_take(struct pktq *q, unsigned n)
{
	uint64_t left;
	int status;

	if (!n)
		return -pte_invalid;
	if (!q->tnt.index) {
		status = cache_tnt(q);
		if (status < 0)
			return status;
	}
	/* the bits left: index is the next one's, the oldest is the highest */
	left = (uint64_t)(64 - __builtin_clzll(q->tnt.index));
	if (n > left)
		return -pte_invalid;
	q->tnt.index = n == 64 ? 0 : q->tnt.index >> n;
	/* as own_cond_branch(): the status kept for the last bit */
	return q->tnt.end_flags & -(int)!q->tnt.index;
}

static int own_indirect_branch(struct pktq *q, uint64_t *addr)
{
	int status, flags = 0;

	for (;;) {
		if (!q->have_next)
			return provoke(q);
		if (will_event(q))
			return -pte_bad_query;
		/* a TNT while bits are left: the user is out of step */
		if (is_tnt(q) && q->tnt.index)
			return -pte_bad_query;
		if (q->nx.type == ppt_tip) {
			uint64_t ip;

			/* the TIP asked for, most often: decode_tip() with no event bound to it
			 * (will_event() says so) */
			status = last_ip_update(q, &q->nx.payload.ip);
			if (status)
				return status;
			consume(q);
			if (last_ip_query(q, &ip) < 0)
				flags |= pts_ip_suppressed;
			else
				*addr = ip;
			break;
		}
		status = pass_packet(q);
		if (status)
			return status;
	}
	time_seen(q);
	status = read_ahead(q);
	if (status < 0 && status != -pte_eos)
		return status;
	return flags | status_flags(q);
}

/*
 * A TIP.PGD or TIP.PGE no event is bound to, the whole event asked for (kAFL's filters:
 * 340 K pairs on mruby): decode_tip_pgd()'s or decode_tip_pge()'s event, the packet
 * consumed, made in `ev` itself (no copy). 1: done; 0: not such a packet; or the error.
 */
static inline int decode_pg_into(struct pktq *q, struct pt_event *ev)
{
	bool pge = q->nx.type == ppt_tip_pge;
	int status;

	if ((!pge && q->nx.type != ppt_tip_pgd) || q->consume_packet || evq_pending(q, EVB_TIP))
		return 0;
	status = last_ip_update(q, &q->nx.payload.ip);
	if (status < 0)
		return status;
	status = pg_event(q, ev, pge);
	if (status < 0)
		return status;
	consume(q);
	return 1;
}

static int own_event(struct pktq *q, struct pt_event *event, size_t size)
{
	int status;

	if (size < offsetof(struct pt_event, variant))
		return -pte_invalid;
	if (q->tnt.index)
		return -pte_bad_query;
	if (size > sizeof(*event))
		size = sizeof(*event);
	for (;;) {
		if (!q->have_next)
			return provoke(q);
		if ((q->nx.type == ppt_tip || is_tnt(q)) && !will_event(q))
			return -pte_bad_query;
		if (size == sizeof(*event)) {
			status = decode_pg_into(q, event);
			if (status < 0)
				return status;
			if (status)
				break;
		}
		q->event = NULL;
		status = decode(q);
		if (status)
			return status;
		if (q->event) {
			/* (the whole event, most often: a copy the compiler sees the size of) */
			if (size == sizeof(*event))
				*event = *q->event;
			else
				memcpy(event, q->event, size);
			break;
		}
		status = read_ahead_slow(q);
		if (status)
			return status;
	}
	time_seen(q);
	status = read_ahead(q);
	if (status < 0 && status != -pte_eos)
		return status;
	return status_flags(q);
}

static int own_time(const struct pktq *q, uint64_t *time, uint32_t *lost_mtc, uint32_t *lost_cyc)
{
	*time = q->last_time.tsc;
	if (lost_mtc)
		*lost_mtc = q->last_time.lost_mtc;
	if (lost_cyc)
		*lost_cyc = q->last_time.lost_cyc;
	return q->last_time.have_tsc ? 0 : -pte_no_time;
}

/* ---------------------------------------------------------------- engines */

/* PKTQ_CHECK: a difference from libipt's query decoder is a bug here: say it and stop. */
static void differs(const struct pktq *q, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));

static void differs(const struct pktq *q, const char *what, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "pktq: %s differs from libipt's query decoder after %" PRIu64
		" queries (offset %#" PRIx64 "): ", what, q->queries, q->pos);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

/*
 * After a query both engines answered (PKTQ_CHECK): the same result and the same state
 * as the user sees it (offsets, time). `own` PTD_FAST_FALLBACK: nothing to compare, the
 * engines part until the next sync.
 */
static int compare(struct pktq *q, const char *what, int own, int ref)
{
	uint64_t a = 0, b = 0;
	uint32_t am, bm, ac, bc;
	int sa, sb;

	q->queries++;
	if (own == PTD_FAST_FALLBACK) {
		q->ref_lost = true;
		return own;
	}
	if (own != ref)
		differs(q, what, "status %d, libipt %d", own, ref);
	sa = own_get_offset(q, &a);
	sb = pt_qry_get_offset(q->ref, &b);
	if (sa != sb || (sa >= 0 && a != b))
		differs(q, what, "offset %#" PRIx64 " (%d), libipt %#" PRIx64 " (%d)", a, sa, b, sb);
	sa = own_get_sync_offset(q, &a);
	sb = pt_qry_get_sync_offset(q->ref, &b);
	if (sa != sb || (sa >= 0 && a != b))
		differs(q, what, "sync offset %#" PRIx64 ", libipt %#" PRIx64, a, b);
	a = b = 0;
	am = bm = ac = bc = 0;
	sa = own_time(q, &a, &am, &ac);
	sb = pt_qry_time(q->ref, &b, &bm, &bc);
	if (sa != sb || a != b || am != bm || ac != bc)
		differs(q, what, "time %" PRIu64 " (%d, lost %u/%u), libipt %" PRIu64
			" (%d, lost %u/%u)", a, sa, am, ac, b, sb, bm, bc);
	return own;
}

/* Whether the engines are in step (PKTQ_CHECK): a query is asked of both. */
static bool both(const struct pktq *q)
{
	return q->engine == PKTQ_CHECK && !q->ref_lost;
}

int pktq_sync_forward(struct pktq *q, uint64_t *ip)
{
	uint64_t ref_ip = 0;
	int own, ref;

	if (q->engine == PKTQ_LIBIPT)
		return pt_qry_sync_forward(q->ref, ip);
	own = own_sync_forward(q, ip);
	if (q->engine != PKTQ_CHECK)
		return own;
	/* after a fallback libipt's decoder is elsewhere: it starts at our PSB */
	if (q->ref_lost) {
		if (own < 0 && own != PTD_FAST_FALLBACK)
			return own;
		ref = own_get_sync_offset(q, &ref_ip);
		if (ref >= 0)
			ref = pt_qry_sync_set(q->ref, &ref_ip, ref_ip);
	} else {
		ref = pt_qry_sync_forward(q->ref, &ref_ip);
	}
	q->ref_lost = false;
	if (own >= 0 && ref >= 0 && !(own & pts_ip_suppressed) && *ip != ref_ip)
		differs(q, "sync_forward", "ip %#" PRIx64 ", libipt %#" PRIx64, *ip, ref_ip);
	return compare(q, "sync_forward", own, ref);
}

int pktq_sync_set(struct pktq *q, uint64_t *ip, uint64_t offset)
{
	uint64_t ref_ip = 0;
	int own, ref;

	if (q->engine == PKTQ_LIBIPT)
		return pt_qry_sync_set(q->ref, ip, offset);
	own = own_sync_set(q, ip, offset);
	if (q->engine != PKTQ_CHECK)
		return own;
	ref = pt_qry_sync_set(q->ref, &ref_ip, offset);
	q->ref_lost = false;
	if (own >= 0 && ref >= 0 && !(own & pts_ip_suppressed) && *ip != ref_ip)
		differs(q, "sync_set", "ip %#" PRIx64 ", libipt %#" PRIx64, *ip, ref_ip);
	return compare(q, "sync_set", own, ref);
}

int pktq_get_offset(const struct pktq *q, uint64_t *offset)
{
	if (q->engine == PKTQ_LIBIPT)
		return pt_qry_get_offset(q->ref, offset);
	return own_get_offset(q, offset);
}

int pktq_get_sync_offset(const struct pktq *q, uint64_t *offset)
{
	if (q->engine == PKTQ_LIBIPT)
		return pt_qry_get_sync_offset(q->ref, offset);
	return own_get_sync_offset(q, offset);
}

int pktq_time(const struct pktq *q, uint64_t *time, uint32_t *lost_mtc, uint32_t *lost_cyc)
{
	if (q->engine == PKTQ_LIBIPT)
		return pt_qry_time(q->ref, time, lost_mtc, lost_cyc);
	return own_time(q, time, lost_mtc, lost_cyc);
}

/* pktq_cond_branch() on libipt's query decoder or both (PKTQ_CHECK) */
static __attribute__((noinline)) int other_cond_branch(struct pktq *q, int *taken)
{
	int own, ref, ref_taken = -1;

	if (q->engine == PKTQ_LIBIPT)
		return pt_qry_cond_branch(q->ref, taken);
	own = own_cond_branch(q, taken);
	if (!both(q))
		return own;
	ref = pt_qry_cond_branch(q->ref, &ref_taken);
	if (own >= 0 && ref >= 0 && *taken != ref_taken)
		differs(q, "cond_branch", "taken %d, libipt %d", *taken, ref_taken);
	return compare(q, "cond_branch", own, ref);
}

/* pktq_cond_branch() when the TNT cache has no bit with more after it, or the engine is
 * not this one alone */
int pktq_cond_branch_slow(struct pktq *q, int *taken)
{
	if (__builtin_expect(q->engine == PKTQ_OWN, 1)) {
		/* a TIP next (often: a return that is not compressed): tnt_ahead()'s answer,
		 * without own_cond_branch()'s frame */
		if (!q->tnt.index && q->have_next && q->nx.type == ppt_tip)
			return -pte_bad_query;
		return own_cond_branch(q, taken);
	}
	return other_cond_branch(q, taken);
}

int pktq_indirect_branch(struct pktq *q, uint64_t *ip)
{
	uint64_t ref_ip = 0;
	int own, ref;

	if (q->engine == PKTQ_LIBIPT)
		return pt_qry_indirect_branch(q->ref, ip);
	own = own_indirect_branch(q, ip);
	tnt_end_flags(q);
	if (!both(q))
		return own;
	ref = pt_qry_indirect_branch(q->ref, &ref_ip);
	if (own >= 0 && ref >= 0 && !(own & pts_ip_suppressed) && *ip != ref_ip)
		differs(q, "indirect_branch", "ip %#" PRIx64 ", libipt %#" PRIx64, *ip, ref_ip);
	return compare(q, "indirect_branch", own, ref);
}

int pktq_event(struct pktq *q, struct pt_event *event, size_t size)
{
	struct pt_event ref_ev;
	int own, ref;

	if (q->engine == PKTQ_LIBIPT)
		return pt_qry_event(q->ref, event, size);
	own = own_event(q, event, size);
	if (!both(q))
		return own;
	memset(&ref_ev, 0, sizeof(ref_ev));
	ref = pt_qry_event(q->ref, &ref_ev, size);
	if (own >= 0 && ref >= 0 && memcmp(event, &ref_ev, size < sizeof(ref_ev) ? size
								       : sizeof(ref_ev)))
		differs(q, "event", "type %d ip_suppressed %d tsc %" PRIu64 ", libipt type %d "
			"ip_suppressed %d tsc %" PRIu64, event->type, event->ip_suppressed,
			event->tsc, ref_ev.type, ref_ev.ip_suppressed, ref_ev.tsc);
	return compare(q, "event", own, ref);
}

int pktq_cond_bits(struct pktq *q, uint64_t *bits, unsigned *n)
{
	if (q->engine == PKTQ_LIBIPT) {
		*bits = 0;
		*n = 0;
		return -pte_not_supported;
	}
	return own_cond_bits(q, bits, n);
}

int pktq_cond_take(struct pktq *q, unsigned n)
{
	int own, ref = 0, taken;
	unsigned k;

	if (q->engine == PKTQ_LIBIPT)
		return -pte_not_supported;
	own = own_cond_take(q, n);
	if (!both(q))
		return own;
	/* n calls of libipt's: every one but the last says 0 */
	for (k = 0; k < n && ref >= 0; k++) {
		ref = pt_qry_cond_branch(q->ref, &taken);
		if (ref > 0 && k + 1 < n)
			differs(q, "cond_take", "libipt's status %d at bit %u of %u", ref, k, n);
	}
	return compare(q, "cond_take", own, ref);
}

enum pktq_engine pktq_engine_of(const struct pktq *q)
{
	return q->engine;
}

const char *pktq_engine_name(enum pktq_engine e)
{
	switch (e) {
	case PKTQ_OWN:
		return "pktq";
	case PKTQ_LIBIPT:
		return "libipt";
	default:
		return "check";
	}
}

enum pktq_engine pktq_engine_from_env(void)
{
	const char *e = getenv("PTBPF_FAST_QUERY");

	if (e && !strcmp(e, "libipt"))
		return PKTQ_LIBIPT;
	if (e && !strcmp(e, "check"))
		return PKTQ_CHECK;
	return PKTQ_OWN;
}

struct pktq *pktq_new(const struct pt_config *cfg, enum pktq_engine engine)
{
	struct pktq *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->cfg = *cfg;
	memset(&q->cfg.flags, 0, sizeof(q->cfg.flags));
	q->engine = engine;
	q->tnt.inline_mask = engine == PKTQ_OWN ? ~0ull : 0;
	q->event_pkts = PKT_EVENT;
	q->mtc_delta = UINT64_MAX;
	q->size = (uint64_t)(cfg->end - cfg->begin);
	q->pd_off = UINT64_MAX;
	q->pd = pt_pkt_alloc_decoder(&q->cfg);
	q->look = pt_pkt_alloc_decoder(&q->cfg);
	if (engine != PKTQ_OWN)
		q->ref = pt_qry_alloc_decoder(&q->cfg);
	if (!q->pd || !q->look || (engine != PKTQ_OWN && !q->ref)) {
		pktq_free(q);
		return NULL;
	}
	return q;
}

void pktq_free(struct pktq *q)
{
	if (!q)
		return;
	pt_pkt_free_decoder(q->pd);
	pt_pkt_free_decoder(q->look);
	pt_qry_free_decoder(q->ref);
	free(q);
}
