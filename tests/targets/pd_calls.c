// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A program whose every branch is known, for the perf.data writer's "perf accepts what
 * we write" test: no libc, only direct calls, one indirect call and returns, then the
 * exit syscall. tests/tools/perfdata_tool.c (`synth`) encodes the PT of exactly this
 * control flow; change both together.
 *
 *   _start -> a -> b -> leaf, ret, ret; a -> *indirect (leaf), ret, ret;
 *   _start -> b -> leaf, ret, ret; exit(0)
 */
void leaf(void);
void (*volatile indirect)(void) = leaf;

void leaf(void)
{
}

void b(void)
{
	leaf();
}

void a(void)
{
	b();
	indirect();
}

void _start(void)
{
	a();
	b();
	asm volatile("mov $60, %%eax\n\txor %%edi, %%edi\n\tsyscall" ::: "rax", "rdi", "memory");
}
