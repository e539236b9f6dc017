// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <capstone/capstone.h>

#include "array.h"
#include "log.h"
#include "ss_insn.h"

struct ss_dis {
	csh cs;
	cs_insn *insn;		/* scratch for cs_disasm_iter(): no allocation per call */
};

int ss_dis__new(struct ss_dis **out)
{
	struct ss_dis *d = calloc(1, sizeof(*d));
	cs_err cerr;

	if (!d)
		return -ENOMEM;
	cerr = cs_open(CS_ARCH_X86, CS_MODE_64, &d->cs);
	if (cerr != CS_ERR_OK) {
		elog("capstone: cannot open an x86-64 disassembler: %s\n", cs_strerror(cerr));
		free(d);
		return -EINVAL;
	}
	/* Details carry the groups and operand kinds the classes come from. */
	cs_option(d->cs, CS_OPT_DETAIL, CS_OPT_ON);
	d->insn = cs_malloc(d->cs);
	if (!d->insn) {
		cs_close(&d->cs);
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
	cs_free(d->insn, 1);
	cs_close(&d->cs);
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

int ss_dis__decode(struct ss_dis *d, const uint8_t *bytes, size_t size, uint64_t ip,
		   struct ss_insn *out)
{
	const uint8_t *code = bytes;
	uint64_t addr = ip;

	if (size > SS_INSN_MAX_LEN)
		size = SS_INSN_MAX_LEN;
	if (!cs_disasm_iter(d->cs, &code, &size, &addr, d->insn)) {
		out->len = 0;
		out->cls = SS_INSN_INVALID;
		out->call_next = false;
		return -EINVAL;
	}
	out->len = d->insn->size;
	out->cls = classify(d->insn, &out->call_next);
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
