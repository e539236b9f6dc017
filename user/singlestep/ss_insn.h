/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * x86-64 instruction length and branch class for the singlestep backend.
 *
 * Decoded with capstone (Debian's libcapstone). The classes are the ones Intel PT
 * cares about, named after libipt's `enum pt_insn_class`; `--verify` decodes the
 * produced trace with libipt's own instruction decoder, so a disagreement between
 * the two decoders on a length or a class shows up as a difference there.
 */
#ifndef PTBPF_SS_INSN_H
#define PTBPF_SS_INSN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SS_INSN_MAX_LEN 15

enum ss_insn_class {
	SS_INSN_OTHER = 0,	/* no change of flow: no packet */
	SS_INSN_JCC,		/* jcc, jrcxz, loop*: one TNT bit */
	SS_INSN_JMP,		/* direct near jmp: no packet */
	SS_INSN_JMP_IND,	/* indirect near jmp: TIP */
	SS_INSN_CALL,		/* direct near call: no packet; return compression pushes */
	SS_INSN_CALL_IND,	/* indirect near call: TIP; return compression pushes */
	SS_INSN_RET,		/* near ret: a taken TNT bit if compressed, else TIP */
	SS_INSN_SYSCALL,	/* syscall, sysenter, int n, int3, into: to the kernel, TIP.PGD */
	SS_INSN_FAR,		/* far jmp/call/ret, iret staying in user space: TIP */
	SS_INSN_INVALID,	/* not an instruction capstone knows */
};

/* ss_insn.mem_access: capstone's CS_AC_READ and CS_AC_WRITE. */
#define SS_MEM_READ 1
#define SS_MEM_WRITE 2

struct ss_insn {
	uint8_t len;		/* bytes, 1..15; 0 when invalid */
	uint8_t cls;		/* enum ss_insn_class */
	bool call_next;		/* call to the next instruction (PIC thunk): not pushed */
	/*
	 * An atomic read-modify-write of memory (lock prefix, or xchg with memory), where
	 * threads meet (the trace clock orders them, ss_backend.c); any other access to
	 * memory by an explicit operand (mem_access: SS_MEM_READ, SS_MEM_WRITE, both) is
	 * where a thread may read what another wrote. The memory operand as capstone
	 * registers (0: none), for ss_insn__mem_addr().
	 */
	bool atomic;
	uint8_t mem_access;
	uint8_t mem_scale;
	uint16_t mem_seg, mem_base, mem_index;
	int64_t mem_disp;
};

struct ss_dis;

/* A capstone handle with instruction details. Returns 0 or -errno. */
int ss_dis__new(struct ss_dis **out);
void ss_dis__free(struct ss_dis *d);

/*
 * Decode the instruction at `ip` from `bytes` (`size` readable bytes, at most 15 are
 * looked at). Returns 0, or -EINVAL if the bytes are no valid instruction (then
 * out->cls is SS_INSN_INVALID).
 */
int ss_dis__decode(struct ss_dis *d, const uint8_t *bytes, size_t size, uint64_t ip,
		   struct ss_insn *out);

const char *ss_insn_class_str(enum ss_insn_class cls);

struct user_regs_struct;

/*
 * The address the memory operand of the instruction at `ip` names, from the registers
 * it started with. Returns 0, or -EINVAL (no memory operand, or a register outside the
 * general ones).
 */
int ss_insn__mem_addr(const struct ss_insn *insn, const struct user_regs_struct *regs,
		      uint64_t ip, uint64_t *addr);

/* Its memory operand is the thread's own: its stack (rsp-relative) or its TLS (%fs). */
bool ss_insn__thread_private(const struct ss_insn *insn);

#endif /* PTBPF_SS_INSN_H */
