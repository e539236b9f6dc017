// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Instruction length and PT class of the singlestep backend's x86 decoder. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <sys/user.h>

#include "array.h"
#include "ss_insn.h"

struct want {
	const char *what;
	uint8_t bytes[15];
	uint8_t len;
	enum ss_insn_class cls;
	bool call_next;
};

static const struct want table[] = {
	{ "push %rbp", { 0x55 }, 1, SS_INSN_OTHER },
	{ "mov %rsp,%rbp", { 0x48, 0x89, 0xe5 }, 3, SS_INSN_OTHER },
	{ "endbr64", { 0xf3, 0x0f, 0x1e, 0xfa }, 4, SS_INSN_OTHER },
	{ "jne rel8", { 0x75, 0xf7 }, 2, SS_INSN_JCC },
	{ "je rel32", { 0x0f, 0x84, 0x10, 0x00, 0x00, 0x00 }, 6, SS_INSN_JCC },
	{ "jrcxz", { 0xe3, 0x05 }, 2, SS_INSN_JCC },
	{ "loop", { 0xe2, 0xfe }, 2, SS_INSN_JCC },
	{ "jmp rel8", { 0xeb, 0x10 }, 2, SS_INSN_JMP },
	{ "jmp rel32", { 0xe9, 0x00, 0x01, 0x00, 0x00 }, 5, SS_INSN_JMP },
	{ "jmp *%rax", { 0xff, 0xe0 }, 2, SS_INSN_JMP_IND },
	{ "notrack jmp *%rax", { 0x3e, 0xff, 0xe0 }, 3, SS_INSN_JMP_IND },
	{ "jmp *0x10(%rip)", { 0xff, 0x25, 0x10, 0x00, 0x00, 0x00 }, 6, SS_INSN_JMP_IND },
	{ "call rel32", { 0xe8, 0x16, 0x00, 0x00, 0x00 }, 5, SS_INSN_CALL },
	{ "call next", { 0xe8, 0x00, 0x00, 0x00, 0x00 }, 5, SS_INSN_CALL, true },
	{ "call *%rax", { 0xff, 0xd0 }, 2, SS_INSN_CALL_IND },
	{ "call *0x8(%rbx)", { 0xff, 0x53, 0x08 }, 3, SS_INSN_CALL_IND },
	{ "ret", { 0xc3 }, 1, SS_INSN_RET },
	{ "ret $8", { 0xc2, 0x08, 0x00 }, 3, SS_INSN_RET },
	{ "bnd ret", { 0xf2, 0xc3 }, 2, SS_INSN_RET },
	{ "syscall", { 0x0f, 0x05 }, 2, SS_INSN_SYSCALL },
	{ "int3", { 0xcc }, 1, SS_INSN_SYSCALL },
	{ "int $0x80", { 0xcd, 0x80 }, 2, SS_INSN_SYSCALL },
	{ "iretq", { 0x48, 0xcf }, 2, SS_INSN_FAR },
	{ "lretq", { 0x48, 0xcb }, 2, SS_INSN_FAR },
	{ "nopw 15 bytes",
	  { 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0 },
	  15, SS_INSN_OTHER },
	{ "mov $imm64,%rax", { 0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8 }, 10, SS_INSN_OTHER },
};

static void test_table(void **state)
{
	struct ss_dis *d;
	struct ss_insn insn;
	size_t i;

	assert_int_equal(ss_dis__new(&d), 0);
	for (i = 0; i < ARRAY_SIZE(table); i++) {
		const struct want *w = &table[i];

		assert_int_equal(ss_dis__decode(d, w->bytes, sizeof(w->bytes), 0x401000, &insn), 0);
		if (insn.len != w->len || insn.cls != w->cls || insn.call_next != w->call_next)
			fail_msg("%s: got len %u class %s call_next %d", w->what, insn.len,
				 ss_insn_class_str(insn.cls), insn.call_next);
	}
	ss_dis__free(d);
}

static void test_invalid_and_truncated(void **state)
{
	static const uint8_t bad[] = { 0x06 };	/* push %es: invalid in 64-bit mode */
	static const uint8_t cut[] = { 0xe8, 0x00 };		/* call rel32, 2 of 5 bytes */
	struct ss_insn insn;
	struct ss_dis *d;

	assert_int_equal(ss_dis__new(&d), 0);
	assert_int_equal(ss_dis__decode(d, bad, sizeof(bad), 0x1000, &insn), -EINVAL);
	assert_int_equal(insn.cls, SS_INSN_INVALID);
	assert_int_equal(insn.len, 0);
	assert_int_equal(ss_dis__decode(d, cut, sizeof(cut), 0x1000, &insn), -EINVAL);
	assert_string_equal(ss_insn_class_str(SS_INSN_RET), "ret");
	assert_string_equal(ss_insn_class_str(99), "?");
	ss_dis__free(d);
	ss_dis__free(NULL);
}

/*
 * The memory access the singlestep clock orders threads by (a load after another
 * thread's store): what each instruction does to its memory operand, and its address.
 */
static void test_memory_access(void **state)
{
	static const struct {
		const char *what;
		uint8_t bytes[15];
		uint8_t access;
		bool atomic, private;
	} access[] = {
		{ "mov (%rdi),%eax", { 0x8b, 0x07 }, SS_MEM_READ },
		{ "mov %eax,(%rdi)", { 0x89, 0x07 }, SS_MEM_WRITE },
		{ "movzwl (%rdi,%rax,1),%eax", { 0x0f, 0xb7, 0x04, 0x07 }, SS_MEM_READ },
		/* capstone 4 says test writes its memory operand */
		{ "testb $0x20,0x1(%rcx,%rdx,2)", { 0xf6, 0x44, 0x51, 0x01, 0x20 }, SS_MEM_READ },
		{ "cmpb $0,(%rdi)", { 0x80, 0x3f, 0x00 }, SS_MEM_READ },
		{ "addl $1,(%rdi)", { 0x83, 0x07, 0x01 }, SS_MEM_READ | SS_MEM_WRITE },
		{ "lock cmpxchg %esi,(%rdi)", { 0xf0, 0x0f, 0xb1, 0x37 },
		  SS_MEM_READ | SS_MEM_WRITE, true },
		{ "mov %eax,0x8(%rsp)", { 0x89, 0x44, 0x24, 0x08 }, SS_MEM_WRITE, false, true },
		{ "mov %fs:0x28,%rax", { 0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0 }, SS_MEM_READ,
		  false, true },
		{ "lea 0x8(%rdi),%rax", { 0x48, 0x8d, 0x47, 0x08 }, 0 },
		{ "mov %rsi,%rax", { 0x48, 0x89, 0xf0 }, 0 },
	};
	struct user_regs_struct regs = { .rdi = 0x5000, .rsp = 0x7000, .rcx = 0x100, .rdx = 2 };
	struct ss_dis *d;
	struct ss_insn insn;
	uint64_t addr;
	size_t i;

	(void)state;
	assert_int_equal(ss_dis__new(&d), 0);
	for (i = 0; i < ARRAY_SIZE(access); i++) {
		assert_int_equal(ss_dis__decode(d, access[i].bytes, sizeof(access[i].bytes),
						 0x401000, &insn), 0);
		if (insn.mem_access != access[i].access || insn.atomic != access[i].atomic ||
		    (access[i].access && ss_insn__thread_private(&insn) != access[i].private))
			fail_msg("%s: access %d atomic %d private %d", access[i].what,
				 insn.mem_access, insn.atomic, ss_insn__thread_private(&insn));
		assert_int_equal(ss_insn__mem_addr(&insn, &regs, 0x401000, &addr),
				 access[i].access ? 0 : -EINVAL);
	}
	ss_dis__decode(d, access[0].bytes, sizeof(access[0].bytes), 0x401000, &insn);
	ss_insn__mem_addr(&insn, &regs, 0x401000, &addr);
	assert_int_equal(addr, 0x5000);
	ss_dis__decode(d, access[3].bytes, sizeof(access[3].bytes), 0x401000, &insn);
	ss_insn__mem_addr(&insn, &regs, 0x401000, &addr);
	assert_int_equal(addr, 0x100 + 2 * 2 + 1);
	ss_dis__free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_invalid_and_truncated),
		cmocka_unit_test(test_memory_access),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
