// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Traced by tests/integration/capture_clock.sh: serves REQUESTS requests (default 10)
 * with handle(i), each a few thousand instructions of work; request SLOW (default 7)
 * also sleeps 200 ms. Untraced, request 0 may take a few ms (the first hit of a uprobe
 * maps its page), request SLOW 200 ms; single-stepped, every request takes longer than
 * that in wall time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long slow = 7;

__attribute__((noinline)) long handle(long i)
{
	struct timespec ts = { .tv_nsec = 200 * 1000 * 1000 };
	long x = i;
	int k;

	for (k = 0; k < 1000; k++)
		x = x * 31 + k;
	if (i == slow)
		nanosleep(&ts, NULL);
	return x;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10, i, acc = 0;

	if (argc > 2)
		slow = atol(argv[2]);
	for (i = 0; i < n; i++)
		acc += handle(i);
	printf("served %ld requests (%ld)\n", n, acc);
	return 0;
}
