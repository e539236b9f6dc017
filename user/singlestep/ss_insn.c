// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <pthread.h>
#include <sys/user.h>
#include <stdlib.h>
#include <capstone/capstone.h>

#include "array.h"
#include "capstone_lazy.h"
#include "log.h"
#include "ss_insn.h"

struct ss_dis {
	csh cs;
	cs_insn *insn;		/* scratch for cs_disasm_iter(): no allocation per call */
};

/* capstone's functions (include/capstone_lazy.h), loaded by the first disassembler */
static const struct capstone_fns *csf;

int ss_dis__new(struct ss_dis **out)
{
	struct ss_dis *d;
	cs_err cerr;

	csf = capstone_lazy();
	if (!csf)
		return -ENOENT;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	cerr = csf->open(CS_ARCH_X86, CS_MODE_64, &d->cs);
	if (cerr != CS_ERR_OK) {
		elog("capstone: cannot open an x86-64 disassembler: %s\n", csf->strerror(cerr));
		free(d);
		return -EINVAL;
	}
	/* Details carry the groups and operand kinds the classes come from. */
	csf->option(d->cs, CS_OPT_DETAIL, CS_OPT_ON);
	d->insn = csf->malloc(d->cs);
	if (!d->insn) {
		csf->close(&d->cs);
		free(d);
		return -ENOMEM;
	}
	*out = d;
	return 0;
}

void ss_dis__free(struct ss_dis *d)
{
	if (!d)
		return;
	csf->free(d->insn, 1);
	csf->close(&d->cs);
	free(d);
}

static bool has_group(const cs_insn *insn, uint8_t group)
{
	int i;

	for (i = 0; i < insn->detail->groups_count; i++)
		if (insn->detail->groups[i] == group)
			return true;
	return false;
}

static bool direct_target(const cs_insn *insn, uint64_t *target)
{
	const cs_x86 *x = &insn->detail->x86;

	if (x->op_count != 1 || x->operands[0].type != X86_OP_IMM)
		return false;
	*target = x->operands[0].imm;
	return true;
}

static enum ss_insn_class classify(const cs_insn *insn, bool *call_next)
{
	uint64_t target;

	*call_next = false;
	switch (insn->id) {
	case X86_INS_SYSCALL:
	case X86_INS_SYSENTER:
	case X86_INS_INT:
	case X86_INS_INT1:
	case X86_INS_INT3:
	case X86_INS_INTO:
		return SS_INSN_SYSCALL;
	case X86_INS_LJMP:
	case X86_INS_LCALL:
	case X86_INS_RETF:
	case X86_INS_RETFQ:
	case X86_INS_IRET:
	case X86_INS_IRETD:
	case X86_INS_IRETQ:
		return SS_INSN_FAR;
	case X86_INS_RET:
		return SS_INSN_RET;
	case X86_INS_CALL:
		if (!direct_target(insn, &target))
			return SS_INSN_CALL_IND;
		*call_next = target == insn->address + insn->size;
		return SS_INSN_CALL;
	case X86_INS_JMP:
		return direct_target(insn, &target) ? SS_INSN_JMP : SS_INSN_JMP_IND;
	case X86_INS_LOOP:
	case X86_INS_LOOPE:
	case X86_INS_LOOPNE:
		/* Not in capstone 4's jump group. */
		return SS_INSN_JCC;
	case X86_INS_XBEGIN:
		/* RTM: aborts are not modelled; the fall-through path needs no packet. */
		return SS_INSN_OTHER;
	default:
		/* Every other jump (jcc, jrcxz, loop*) is conditional. */
		if (has_group(insn, CS_GRP_JUMP))
			return SS_INSN_JCC;
		return SS_INSN_OTHER;
	}
}

/*
 * Instructions that only read their memory operand though capstone 4 says they write
 * it (found by listing every memory operand's access in a static glibc's text).
 */
static bool read_only(unsigned int id)
{
	switch (id) {
	case X86_INS_TEST:
	case X86_INS_FRSTOR:
	case X86_INS_FLDENV:
	case X86_INS_FLDCW:
	case X86_INS_FXRSTOR:
	case X86_INS_FXRSTOR64:
	case X86_INS_XRSTOR:
	case X86_INS_XRSTOR64:
	case X86_INS_XRSTORS:
	case X86_INS_XRSTORS64:
	case X86_INS_LDMXCSR:
	case X86_INS_VLDMXCSR:
		return true;
	default:
		return false;
	}
}

/*
 * Its explicit memory operand, if any, and how it is accessed: a lock-prefixed
 * instruction, or xchg with memory (locked without the prefix), is atomic. lea and the
 * hints (nop, prefetch) name memory without touching it.
 */
static void memory_operand(const cs_insn *insn, struct ss_insn *out)
{
	const cs_x86 *x = &insn->detail->x86;
	int i;

	out->atomic = false;
	out->mem_access = 0;
	out->mem_seg = out->mem_base = out->mem_index = 0;
	out->mem_scale = 0;
	out->mem_disp = 0;
	switch (insn->id) {
	case X86_INS_LEA:
	case X86_INS_NOP:
	case X86_INS_PREFETCH:
	case X86_INS_PREFETCHNTA:
	case X86_INS_PREFETCHT0:
	case X86_INS_PREFETCHT1:
	case X86_INS_PREFETCHT2:
	case X86_INS_PREFETCHW:
		return;
	default:
		break;
	}
	for (i = 0; i < x->op_count; i++) {
		const cs_x86_op *op = &x->operands[i];

		if (op->type != X86_OP_MEM)
			continue;
		out->atomic = x->prefix[0] == X86_PREFIX_LOCK || insn->id == X86_INS_XCHG;
		/* an atomic reads and writes (capstone 4 has lock cmpxchg only read) */
		out->mem_access = out->atomic		? SS_MEM_READ | SS_MEM_WRITE :
				  read_only(insn->id) ? SS_MEM_READ :
							op->access & (CS_AC_READ | CS_AC_WRITE);
		out->mem_seg = (uint16_t)op->mem.segment;
		out->mem_base = (uint16_t)op->mem.base;
		out->mem_index = (uint16_t)op->mem.index;
		out->mem_scale = (uint8_t)op->mem.scale;
		out->mem_disp = op->mem.disp;
		return;
	}
}

/* A 64-bit general register's value; false for any other register. */
static bool reg_value(const struct user_regs_struct *r, unsigned reg, uint64_t *v)
{
	switch (reg) {
	case X86_REG_RAX: *v = r->rax; return true;
	case X86_REG_RBX: *v = r->rbx; return true;
	case X86_REG_RCX: *v = r->rcx; return true;
	case X86_REG_RDX: *v = r->rdx; return true;
	case X86_REG_RSI: *v = r->rsi; return true;
	case X86_REG_RDI: *v = r->rdi; return true;
	case X86_REG_RBP: *v = r->rbp; return true;
	case X86_REG_RSP: *v = r->rsp; return true;
	case X86_REG_R8: *v = r->r8; return true;
	case X86_REG_R9: *v = r->r9; return true;
	case X86_REG_R10: *v = r->r10; return true;
	case X86_REG_R11: *v = r->r11; return true;
	case X86_REG_R12: *v = r->r12; return true;
	case X86_REG_R13: *v = r->r13; return true;
	case X86_REG_R14: *v = r->r14; return true;
	case X86_REG_R15: *v = r->r15; return true;
	default: return false;
	}
}

int ss_insn__mem_addr(const struct ss_insn *insn, const struct user_regs_struct *regs,
		      uint64_t ip, uint64_t *addr)
{
	uint64_t a = (uint64_t)insn->mem_disp, v;

	if (!insn->atomic && !insn->mem_access)
		return -EINVAL;
	if (insn->mem_base == X86_REG_RIP)
		a += ip + insn->len;
	else if (insn->mem_base) {
		if (!reg_value(regs, insn->mem_base, &v))
			return -EINVAL;
		a += v;
	}
	if (insn->mem_index) {
		if (!reg_value(regs, insn->mem_index, &v))
			return -EINVAL;
		a += v * (insn->mem_scale ? insn->mem_scale : 1);
	}
	if (insn->mem_seg == X86_REG_FS)
		a += regs->fs_base;
	else if (insn->mem_seg == X86_REG_GS)
		a += regs->gs_base;
	else if (insn->mem_seg)
		return -EINVAL;
	*addr = a;
	return 0;
}

bool ss_insn__thread_private(const struct ss_insn *insn)
{
	return insn->mem_base == X86_REG_RSP || insn->mem_seg == X86_REG_FS;
}

int ss_dis__decode(struct ss_dis *d, const uint8_t *bytes, size_t size, uint64_t ip,
		   struct ss_insn *out)
{
	const uint8_t *code = bytes;
	uint64_t addr = ip;

	if (size > SS_INSN_MAX_LEN)
		size = SS_INSN_MAX_LEN;
	if (!csf->disasm_iter(d->cs, &code, &size, &addr, d->insn)) {
		out->len = 0;
		out->cls = SS_INSN_INVALID;
		out->call_next = false;
		return -EINVAL;
	}
	out->len = d->insn->size;
	out->cls = classify(d->insn, &out->call_next);
	memory_operand(d->insn, out);
	return 0;
}

const char *ss_insn_class_str(enum ss_insn_class cls)
{
	static const char *const names[] = {
		[SS_INSN_OTHER] = "other",	   [SS_INSN_JCC] = "jcc",
		[SS_INSN_JMP] = "jmp",		   [SS_INSN_JMP_IND] = "jmp*",
		[SS_INSN_CALL] = "call",	   [SS_INSN_CALL_IND] = "call*",
		[SS_INSN_RET] = "ret",		   [SS_INSN_SYSCALL] = "syscall",
		[SS_INSN_FAR] = "far",		   [SS_INSN_INVALID] = "invalid",
	};

	return (unsigned)cls < ARRAY_SIZE(names) ? names[cls] : "?";
}
