// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <intel-pt.h>

#include "array.h"
#include "log.h"
#include "ss_enc.h"

/* libipt's return stack holds 64 entries (pt_retstack.h); hardware's is no deeper. */
#define RETSTACK_MAX 64
/* Perf's decoder stack has no bound; ours only needs to be a suffix of it. */
#define PERFSTACK_MAX 1024
/* Most bits a TNT-64 packet carries. */
#define TNT64_BITS 47
#define TNT8_BITS 6
/* MTC carries 8 bits of CTC: beyond half that range, resynchronise with PSB+. */
#define MTC_MAX_GAP 128

struct ss_enc {
	struct ss_enc_config cfg;
	uint8_t *ring;
	uint64_t total;			/* bytes ever written; head = total & (size - 1) */
	uint64_t since_psb;		/* bytes written since the last PSB started */
	struct pt_encoder *pte;		/* libipt encoder: one packet into `scratch` */
	uint8_t scratch[64];
	uint64_t last_ip;		/* IP compression: last FUP/TIP* IP, 0 after PSB */
	uint64_t tnt;			/* pending TNT bits, oldest in the highest position */
	uint8_t tnt_bits;
	bool enabled;			/* PacketEn: between TIP.PGE and TIP.PGD */
	bool need_sync;			/* next enable is preceded by PSB+ */
	uint64_t last_period;		/* CTC >> mtc_freq at the last time packet */
	uint64_t last_tsc;		/* TSC of the last PSB+ */
	uint64_t cur_tsc;		/* time of the instruction being encoded */
	uint64_t cyc_ref;		/* time the last CYC (or TSC) accounted up to */
	uint64_t cyc_at;		/* time of the packet being written, for its CYC */
	bool in_psb;			/* writing PSB+: no CYC inside it */
	uint64_t ninsn;
	/*
	 * Return compression. libipt's decoder pops its stack on compressed returns only,
	 * perf's on every ret; a return is compressed only when both would find its target
	 * on top. Both stacks are cleared at PSB, as both decoders clear theirs there.
	 */
	uint64_t lstack[RETSTACK_MAX];
	unsigned int lstack_top, lstack_n;	/* ring: top is lstack[(top - 1) % MAX] */
	uint64_t *pstack;
	unsigned int pstack_n;
	struct ss_psb_mark *psbs;
	size_t nr_psbs, cap_psbs, first_psb;
};

int ss_enc__new(const struct ss_enc_config *cfg, struct ss_enc **out)
{
	struct pt_config pc;
	struct ss_enc *e;

	if (!cfg->ring_size || (cfg->ring_size & (cfg->ring_size - 1)) || !cfg->psb_period ||
	    (cfg->mtc && (!cfg->ctc_eax || !cfg->ctc_ebx || cfg->mtc_freq > 15)))
		return -EINVAL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->cfg = *cfg;
	e->ring = calloc(1, cfg->ring_size);
	e->pstack = calloc(PERFSTACK_MAX, sizeof(*e->pstack));
	pt_config_init(&pc);
	pc.begin = e->scratch;
	pc.end = e->scratch + sizeof(e->scratch);
	e->pte = pt_alloc_encoder(&pc);
	if (!e->ring || !e->pstack || !e->pte) {
		ss_enc__free(e);
		return -ENOMEM;
	}
	e->need_sync = true;
	*out = e;
	return 0;
}

void ss_enc__free(struct ss_enc *e)
{
	if (!e)
		return;
	pt_free_encoder(e->pte);
	free(e->ring);
	free(e->pstack);
	free(e->psbs);
	free(e);
}

static void ring_write(struct ss_enc *e, const uint8_t *p, size_t n)
{
	uint64_t mask = e->cfg.ring_size - 1;

	while (n) {
		uint64_t off = e->total & mask;
		size_t chunk = e->cfg.ring_size - off;

		if (chunk > n)
			chunk = n;
		memcpy(e->ring + off, p, chunk);
		e->total += chunk;
		e->since_psb += chunk;
		p += chunk;
		n -= chunk;
	}
}

static bool cyc_eligible(enum pt_packet_type type)
{
	switch (type) {
	case ppt_tnt_8:
	case ppt_tnt_64:
	case ppt_tip:
	case ppt_tip_pge:
	case ppt_tip_pgd:
	case ppt_fup:
	case ppt_mtc:
	case ppt_mode:
		return true;
	default:
		return false;
	}
}

static int emit_raw(struct ss_enc *e, const struct pt_packet *pkt);

/* Cycle-accurate mode: the cycles since the last CYC go before an eligible packet. */
static int emit(struct ss_enc *e, const struct pt_packet *pkt)
{
	if (e->cfg.cyc && !e->in_psb && cyc_eligible(pkt->type) && e->cyc_at > e->cyc_ref) {
		struct pt_packet cyc = { .type = ppt_cyc };
		int err;

		cyc.payload.cyc.value = e->cyc_at - e->cyc_ref;
		err = emit_raw(e, &cyc);
		if (err)
			return err;
		e->cyc_ref = e->cyc_at;
	}
	return emit_raw(e, pkt);
}

static int emit_raw(struct ss_enc *e, const struct pt_packet *pkt)
{
	int n;

	pt_enc_sync_set(e->pte, 0);
	n = pt_enc_next(e->pte, pkt);
	if (n < 0) {
		elog("singlestep: cannot encode a PT packet (type %d): %s\n", pkt->type,
		     pt_errstr(pt_errcode(n)));
		return -EINVAL;
	}
	ring_write(e, e->scratch, n);
	return 0;
}

static int flush_tnt(struct ss_enc *e)
{
	struct pt_packet pkt = {};
	int err;

	if (!e->tnt_bits)
		return 0;
	pkt.type = e->tnt_bits <= TNT8_BITS ? ppt_tnt_8 : ppt_tnt_64;
	pkt.payload.tnt.bit_size = e->tnt_bits;
	pkt.payload.tnt.payload = e->tnt;
	err = emit(e, &pkt);
	e->tnt = 0;
	e->tnt_bits = 0;
	return err;
}

static int push_tnt(struct ss_enc *e, bool taken)
{
	e->tnt = (e->tnt << 1) | taken;
	if (++e->tnt_bits == TNT64_BITS)
		return flush_tnt(e);
	return 0;
}

/* The most compact IP compression the decoder can expand against last_ip. */
static int emit_ip(struct ss_enc *e, enum pt_packet_type type, uint64_t ip)
{
	struct pt_packet pkt = { .type = type };
	uint64_t last = e->last_ip;
	int64_t sext = (int64_t)(ip << 16) >> 16;
	int err;

	err = flush_tnt(e);
	if (err)
		return err;
	if ((ip >> 16) == (last >> 16))
		pkt.payload.ip.ipc = pt_ipc_update_16;
	else if ((ip >> 32) == (last >> 32))
		pkt.payload.ip.ipc = pt_ipc_update_32;
	else if ((uint64_t)sext == ip)
		pkt.payload.ip.ipc = pt_ipc_sext_48;
	else if ((ip >> 48) == (last >> 48))
		pkt.payload.ip.ipc = pt_ipc_update_48;
	else
		pkt.payload.ip.ipc = pt_ipc_full;
	pkt.payload.ip.ip = ip;
	e->last_ip = ip;
	return emit(e, &pkt);
}

static int emit_pgd(struct ss_enc *e)
{
	struct pt_packet pkt = { .type = ppt_tip_pgd };
	int err;

	err = flush_tnt(e);
	if (err)
		return err;
	pkt.payload.ip.ipc = pt_ipc_suppressed;
	e->enabled = false;
	return emit(e, &pkt);
}

static uint64_t ctc_of(const struct ss_enc *e, uint64_t tsc)
{
	return (uint64_t)((unsigned __int128)tsc * e->cfg.ctc_eax / e->cfg.ctc_ebx);
}

static uint64_t period_of(const struct ss_enc *e, uint64_t tsc)
{
	return ctc_of(e, tsc) >> e->cfg.mtc_freq;
}

static int log_psb(struct ss_enc *e)
{
	if (!e->cfg.log_psb)
		return 0;
	if (e->nr_psbs == e->cap_psbs) {
		/* Reuse the room of trimmed marks before growing. */
		if (e->first_psb) {
			memmove(e->psbs, e->psbs + e->first_psb,
				(e->nr_psbs - e->first_psb) * sizeof(*e->psbs));
			e->nr_psbs -= e->first_psb;
			e->first_psb = 0;
		}
		if (array_grow_sz((void **)&e->psbs, &e->cap_psbs, e->nr_psbs + 1, sizeof(*e->psbs)))
			return -ENOMEM;
	}
	e->psbs[e->nr_psbs++] = (struct ss_psb_mark){ .offset = e->total, .insn = e->ninsn };
	return 0;
}

/* PSB+: PSB, TSC, TMA, CBR, MODE.Exec, FUP (when packets are enabled), PSBEND. */
static int emit_psb(struct ss_enc *e, uint64_t ip, uint64_t tsc)
{
	struct pt_packet pkt = {};
	int err;

	err = flush_tnt(e);
	if (!err)
		err = log_psb(e);
	if (err)
		return err;
	e->since_psb = 0;
	e->last_ip = 0;
	e->lstack_n = 0;
	e->pstack_n = 0;
	e->in_psb = true;
	pkt.type = ppt_psb;
	err = emit(e, &pkt);
	if (!err && e->cfg.tsc) {
		pkt.type = ppt_tsc;
		pkt.payload.tsc.tsc = tsc & ((1ull << 56) - 1);
		err = emit(e, &pkt);
	}
	if (!err && e->cfg.tsc && e->cfg.mtc) {
		uint64_t ctc = ctc_of(e, tsc);
		uint64_t edge = (uint64_t)((unsigned __int128)ctc * e->cfg.ctc_ebx /
					   e->cfg.ctc_eax);

		pkt.type = ppt_tma;
		pkt.payload.tma.ctc = (uint16_t)ctc;
		pkt.payload.tma.fc = (uint16_t)((tsc - edge) & 0x1ff);
		err = emit(e, &pkt);
	}
	if (!err) {
		pkt.type = ppt_cbr;
		pkt.payload.cbr.ratio = e->cfg.cbr;
		err = emit(e, &pkt);
	}
	if (!err) {
		pkt.type = ppt_mode;
		pkt.payload.mode.leaf = pt_mol_exec;
		pkt.payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
		err = emit(e, &pkt);
	}
	if (!err && e->enabled)
		err = emit_ip(e, ppt_fup, ip);
	if (!err) {
		pkt.type = ppt_psbend;
		err = emit(e, &pkt);
	}
	e->in_psb = false;
	/* Decoders count cycles from the TSC on. */
	e->cyc_ref = e->cyc_at = tsc;
	e->last_tsc = tsc;
	if (e->cfg.mtc)
		e->last_period = period_of(e, tsc);
	e->need_sync = false;
	return err;
}

static int emit_mtc(struct ss_enc *e, uint64_t period)
{
	struct pt_packet pkt = { .type = ppt_mtc };
	uint64_t edge;
	int err;

	/*
	 * The MTC is the CTC edge: what came before it (pending TNT bits, cycles) is
	 * accounted up to the edge, and cycles after it count from there.
	 */
	if (e->cfg.cyc) {
		edge = (uint64_t)((unsigned __int128)(period << e->cfg.mtc_freq) * e->cfg.ctc_ebx /
				  e->cfg.ctc_eax);
		e->cyc_at = edge > e->cyc_ref ? edge : e->cyc_ref;
	}
	err = flush_tnt(e);
	if (err)
		return err;
	pkt.payload.mtc.ctc = (uint8_t)period;
	e->last_period = period;
	err = emit(e, &pkt);
	e->cyc_at = e->cur_tsc;
	return err;
}

int ss_enc__begin(struct ss_enc *e, uint64_t ip, uint64_t tsc)
{
	uint64_t period = e->cfg.mtc ? period_of(e, tsc) : 0;
	bool time_lost = e->cfg.mtc && period - e->last_period >= MTC_MAX_GAP;
	int err = 0;

	e->cur_tsc = e->cyc_at = tsc;
	if (!e->enabled) {
		/*
		 * Tracing resumes: a sync point when the decoder needs one (first enable,
		 * another thread, fresh sideband), when time would otherwise be lost, or
		 * (TSC only, no MTC) whenever time moved; else an MTC if a period ended.
		 */
		if (e->need_sync || e->since_psb >= e->cfg.psb_period || time_lost ||
		    (e->cfg.tsc && !e->cfg.mtc && tsc != e->last_tsc))
			err = emit_psb(e, ip, tsc);
		else if (e->cfg.mtc && period != e->last_period)
			err = emit_mtc(e, period);
		if (!err)
			err = emit_ip(e, ppt_tip_pge, ip);
		e->enabled = true;
	} else if (e->need_sync || e->since_psb >= e->cfg.psb_period || time_lost) {
		err = emit_psb(e, ip, tsc);
	} else if (e->cfg.mtc && period != e->last_period) {
		err = emit_mtc(e, period);
	}
	e->ninsn++;
	return err;
}

static void push_call(struct ss_enc *e, uint64_t ret)
{
	e->lstack[e->lstack_top] = ret;
	e->lstack_top = (e->lstack_top + 1) % RETSTACK_MAX;
	if (e->lstack_n < RETSTACK_MAX)
		e->lstack_n++;
	if (e->pstack_n == PERFSTACK_MAX) {
		/* Drop the oldest: what is left stays a suffix of perf's stack. */
		memmove(e->pstack, e->pstack + 1, (PERFSTACK_MAX - 1) * sizeof(*e->pstack));
		e->pstack_n--;
	}
	e->pstack[e->pstack_n++] = ret;
}

static int do_ret(struct ss_enc *e, uint64_t next)
{
	unsigned int ltop = (e->lstack_top + RETSTACK_MAX - 1) % RETSTACK_MAX;
	bool compress = e->cfg.retcomp && e->lstack_n && e->pstack_n &&
			e->lstack[ltop] == next && e->pstack[e->pstack_n - 1] == next;

	if (e->pstack_n)
		e->pstack_n--;
	if (!compress)
		return emit_ip(e, ppt_tip, next);
	e->lstack_top = ltop;
	e->lstack_n--;
	return push_tnt(e, true);
}

int ss_enc__end(struct ss_enc *e, const struct ss_insn *insn, uint64_t ip, uint64_t next)
{
	if (!e->enabled)
		return -EINVAL;
	switch (insn->cls) {
	case SS_INSN_JCC:
		return push_tnt(e, next != ip + insn->len);
	case SS_INSN_CALL:
		if (!insn->call_next)
			push_call(e, ip + insn->len);
		return 0;
	case SS_INSN_CALL_IND:
		push_call(e, ip + insn->len);
		return emit_ip(e, ppt_tip, next);
	case SS_INSN_JMP_IND:
	case SS_INSN_FAR:
		return emit_ip(e, ppt_tip, next);
	case SS_INSN_RET:
		return do_ret(e, next);
	case SS_INSN_SYSCALL:
		/* User-only tracing: the target is in the kernel, so the IP is suppressed. */
		return emit_pgd(e);
	default:
		return 0;
	}
}

int ss_enc__async_disable(struct ss_enc *e, uint64_t ip)
{
	int err;

	if (!e->enabled)
		return 0;
	err = emit_ip(e, ppt_fup, ip);
	if (err)
		return err;
	return emit_pgd(e);
}

void ss_enc__need_sync(struct ss_enc *e)
{
	e->need_sync = true;
}

bool ss_enc__enabled(const struct ss_enc *e)
{
	return e->enabled;
}

const uint8_t *ss_enc__ring(const struct ss_enc *e)
{
	return e->ring;
}

uint64_t ss_enc__ring_size(const struct ss_enc *e)
{
	return e->cfg.ring_size;
}

uint64_t ss_enc__total(const struct ss_enc *e)
{
	return e->total;
}

uint64_t ss_enc__insns(const struct ss_enc *e)
{
	return e->ninsn;
}

const struct ss_psb_mark *ss_enc__psb_marks(const struct ss_enc *e, size_t *nr)
{
	*nr = e->nr_psbs - e->first_psb;
	return e->psbs + e->first_psb;
}

void ss_enc__trim_psb(struct ss_enc *e, uint64_t offset)
{
	while (e->first_psb < e->nr_psbs && e->psbs[e->first_psb].offset < offset)
		e->first_psb++;
}
