/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --verify: the singlestep backend logs the address of every instruction it steps, per
 * virtual CPU, and at each snapshot decodes the PT it wrote with libipt's instruction
 * decoder (an independent x86 decoder and PT state machine), comparing address by
 * address from the first PSB in the ring. The first difference is reported with its
 * trace offset, the expected and the decoded IP.
 */
#ifndef PTBPF_SS_VERIFY_H
#define PTBPF_SS_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "ss_enc.h"

struct ss_mm;
struct ss_verify;

/* The address space a logged instruction ran in (ss_mm__id() numbering). */
typedef struct ss_mm *(*ss_verify_mm_fn)(void *ctx, int mm_id);

int ss_verify__new(int nr_cpus, ss_verify_mm_fn mm_of, void *ctx, struct ss_verify **out);
void ss_verify__free(struct ss_verify *v);

/* Instruction number `ss_enc__insns()` of CPU `cpu` ran at `ip` in address space `mm_id`. */
int ss_verify__log(struct ss_verify *v, int cpu, uint64_t ip, int mm_id);
/* Forget instructions numbered below `insn` on `cpu` (they left the ring). */
void ss_verify__trim(struct ss_verify *v, int cpu, uint64_t insn);

struct ss_verify_result {
	uint64_t checked;	/* instructions that matched */
	uint64_t skipped;	/* logged instructions before the first PSB in the ring */
	/* On a difference: */
	uint64_t offset;	/* stream offset of the decoder when it happened */
	uint64_t insn;		/* instruction number */
	uint64_t expected_ip;	/* 0 if the decoder went past the last stepped instruction */
	uint64_t decoded_ip;	/* 0 if the decoder stopped before it */
	char what[160];		/* one line saying what differed */
};

/*
 * Check the linear copy `buf` (`len` bytes, the oldest first; its first byte is byte
 * `offset` of the stream) of CPU `cpu`'s ring, written with `cfg`, against the log.
 * `marks` are the encoder's PSB marks. Returns 0 when every logged instruction from the
 * first PSB on was decoded at its address, -EILSEQ on the first difference (res says
 * which), or -errno.
 */
int ss_verify__check(struct ss_verify *v, int cpu, const struct ss_enc_config *cfg,
		     const uint8_t *buf, size_t len, uint64_t offset,
		     const struct ss_psb_mark *marks, size_t nr_marks,
		     struct ss_verify_result *res);

#endif /* PTBPF_SS_VERIFY_H */
