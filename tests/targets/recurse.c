// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Traced by the tests: recursion (fib), indirect calls through a table of function
 * pointers (ops[]) and a switch dense enough to become a jump table (dispatch).
 * Usage: recurse [N]   (fib depth, default 8; small: every instruction is stepped)
 */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) int fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) int op_add(int a, int b) { return a + b; }
__attribute__((noinline)) int op_sub(int a, int b) { return a - b; }
__attribute__((noinline)) int op_mul(int a, int b) { return a * b; }
__attribute__((noinline)) int op_xor(int a, int b) { return a ^ b; }

int (*const ops[])(int, int) = { op_add, op_sub, op_mul, op_xor };

/* Eight dense cases: gcc emits an indirect jump through a table even at -O0. */
__attribute__((noinline)) int dispatch(int k, int x)
{
	switch (k) {
	case 0: return x + 1;
	case 1: return x * 3;
	case 2: return x - 7;
	case 3: return x << 2;
	case 4: return x >> 1;
	case 5: return x ^ 0x55;
	case 6: return -x;
	case 7: return x | 1;
	default: return x;
	}
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 8;
	int acc = 0, i;

	for (i = 0; i < 16; i++) {
		acc = ops[i % 4](acc, i + 1);
		acc = dispatch(i % 9, acc);
	}
	printf("fib(%d)=%d acc=%d\n", n, fib(n), acc);
	return 0;
}
