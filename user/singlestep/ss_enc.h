/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The packet writer of the singlestep backend: what Intel PT hardware emits on one CPU
 * for user-only tracing, encoded with libipt's encoder into an overwrite ring laid out
 * like the kernel's AUX area in snapshot mode (notes/kernel-pt-abi.md §2: `head` is an
 * offset in the ring, the ring starts zeroed and wraps silently).
 *
 * The caller reports each executed instruction twice: ss_enc__begin() before its
 * packets (enable, timing, PSB+), ss_enc__end() after it ran (TNT bit, TIP, TIP.PGD).
 * Asynchronous events (signals, preemption, the freeze) are ss_enc__async_disable().
 *
 * Virtual hardware: TSC ticks are nanoseconds of the caller's clock; the crystal clock
 * (CTC) ticks every ctc_ebx/ctc_eax TSC ticks; MTC every 2^mtc_freq CTC ticks; the core
 * runs at the nominal ratio (CBR = max non-turbo ratio), so a cycle is a TSC tick as
 * both libipt and perf convert it.
 */
#ifndef PTBPF_SS_ENC_H
#define PTBPF_SS_ENC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ss_insn.h"

struct ss_enc_config {
	uint64_t ring_size;	/* bytes, a power of two */
	uint64_t psb_period;	/* trace bytes between PSB+ (RTIT_CTL.PSBFreq) */
	bool retcomp;		/* return compression (RTIT_CTL.DisRETC clear) */
	bool tsc;		/* TSC packets in PSB+ (TSCEn) */
	bool mtc;		/* MTC packets, TMA in PSB+ (MTCEn) */
	uint8_t mtc_freq;	/* MTC every 2^mtc_freq CTC ticks (RTIT_CTL.MTCFreq) */
	bool cyc;		/* CYC packets: cycles (= TSC ticks here) before each
				 * CYC-eligible packet (CYCEn, CycThresh 0) */
	uint32_t ctc_eax;	/* CPUID.0x15.EAX: TSC/CTC ratio denominator */
	uint32_t ctc_ebx;	/* CPUID.0x15.EBX: TSC/CTC ratio numerator */
	uint8_t cbr;		/* core:bus ratio in CBR packets */
	bool log_psb;		/* keep a ss_psb_mark per PSB (for --verify) */
};

/* Where a PSB was written: its byte position in the stream and the instruction it precedes. */
struct ss_psb_mark {
	uint64_t offset;	/* stream offset (bytes ever written before the PSB) */
	uint64_t insn;		/* number of ss_enc__begin() calls before it */
};

struct ss_enc;

int ss_enc__new(const struct ss_enc_config *cfg, struct ss_enc **out);
void ss_enc__free(struct ss_enc *e);

/*
 * Before the instruction at `ip` executes at time `tsc`: TIP.PGE if tracing was off
 * (after PSB+ when the trace needs a time or a sync point), a periodic PSB+ (with FUP)
 * or an MTC when one is due.
 */
int ss_enc__begin(struct ss_enc *e, uint64_t ip, uint64_t tsc);
/*
 * After it executed: `next` is where execution went (the IP of the next instruction
 * in the same thread, or the trap target for SS_INSN_SYSCALL, which is not emitted).
 */
int ss_enc__end(struct ss_enc *e, const struct ss_insn *insn, uint64_t ip, uint64_t next);
/*
 * Tracing stops before the instruction at `ip` for a reason outside the instruction
 * stream (a signal, an interrupt, a context switch, the freeze): FUP + TIP.PGD.
 * Nothing if tracing is already off.
 */
int ss_enc__async_disable(struct ss_enc *e, uint64_t ip);
/*
 * The next instruction is preceded by PSB+ (new thread on this CPU, new sideband): a
 * sync point, and a TSC later than what the caller wrote meanwhile.
 */
void ss_enc__need_sync(struct ss_enc *e);
/* Whether packet generation is on (between TIP.PGE and TIP.PGD). */
bool ss_enc__enabled(const struct ss_enc *e);

const uint8_t *ss_enc__ring(const struct ss_enc *e);
uint64_t ss_enc__ring_size(const struct ss_enc *e);
/* Bytes ever written; the write offset in the ring is total & (size - 1). */
uint64_t ss_enc__total(const struct ss_enc *e);
/* Instructions reported through ss_enc__begin(). */
uint64_t ss_enc__insns(const struct ss_enc *e);
/* PSB marks, oldest first (cfg.log_psb); ss_enc__trim_psb() drops marks before `offset`. */
const struct ss_psb_mark *ss_enc__psb_marks(const struct ss_enc *e, size_t *nr);
void ss_enc__trim_psb(struct ss_enc *e, uint64_t offset);

#endif /* PTBPF_SS_ENC_H */
