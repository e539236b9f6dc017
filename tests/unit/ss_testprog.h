/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A tiny position-independent x86-64 program for the singlestep unit tests, and the
 * steps one pass through it takes (a call, a loop, an indirect call, returns, a
 * syscall, a jump back):
 *
 *   +00: mov $3,%ecx   +05: call +20   +0a: dec %ecx   +0c: jne +05   +0e: call *%rax
 *   +10: syscall       +12: nop        +13: jmp +00    +20: ret       +30: ret
 */
#ifndef PTBPF_SS_TESTPROG_H
#define PTBPF_SS_TESTPROG_H

#include <stddef.h>
#include <stdint.h>

#define SS_TESTPROG_SIZE 0x40
#define SS_TESTPROG_STEPS 18	/* steps per pass */

extern const uint8_t ss_testprog_code[SS_TESTPROG_SIZE];

struct ss_testprog_step {
	uint8_t from, to;	/* offsets of the instruction and of the next one */
};

/* One pass; returns SS_TESTPROG_STEPS. */
size_t ss_testprog_pass(struct ss_testprog_step *steps);

#endif /* PTBPF_SS_TESTPROG_H */
