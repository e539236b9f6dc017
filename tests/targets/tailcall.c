// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Traced by the tests, built with -O2: middle() ends in a tail call (jmp leaf), so
 * leaf returns straight to main.
 */
#include <stdio.h>

__attribute__((noinline, noipa)) int leaf(int x)
{
	return x * 3 + 1;
}

__attribute__((noinline, noipa)) int middle(int x)
{
	return leaf(x + 1);
}

int main(int argc, char **argv)
{
	int sum = 0, i;

	for (i = 0; i < 8; i++)
		sum += middle(i + argc);
	printf("sum=%d\n", sum);
	return 0;
}
