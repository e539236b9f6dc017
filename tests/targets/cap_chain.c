// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Capture test target: a loop of requests through a known call chain,
 *	main > serve > level1 > level2 > leaf
 * Usage: cap_chain [-n N] [-s SLOW] [-f] [-p MS]
 *	-n N	 iterations (default 20; 0 = forever)
 *	-s SLOW	 iteration SLOW sleeps 300 ms inside leaf() (default: none)
 *	-f	 forever, 20 ms apart (for Ctrl-C, -p and kill tests)
 *	-p MS	 iterations MS ms apart (with -f: instead of 20)
 * Each iteration prints "iter I" (stdout, line buffered) so a test can see it advance.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int slow_iter = -1;
static volatile unsigned long sink;

static void pause_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

__attribute__((noinline)) void leaf(int i)
{
	sink += (unsigned long)i * 3;
	if (i == slow_iter)
		pause_ms(300);
}

__attribute__((noinline)) void level2(int i)
{
	leaf(i);
	sink ^= i;
}

__attribute__((noinline)) void level1(int i)
{
	level2(i);
	sink += 1;
}

__attribute__((noinline)) void serve(int i)
{
	level1(i);
}

int main(int argc, char **argv)
{
	int i, n = 20, forever = 0, apart_ms = -1;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-n") && i + 1 < argc)
			n = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-s") && i + 1 < argc)
			slow_iter = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-f"))
			forever = 1;
		else if (!strcmp(argv[i], "-p") && i + 1 < argc)
			apart_ms = atoi(argv[++i]);
	}
	if (forever && apart_ms < 0)
		apart_ms = 20;
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 0; forever || n == 0 || i < n; i++) {
		serve(i);
		printf("iter %d\n", i);
		if (apart_ms > 0)
			pause_ms(apart_ms);
	}
	return 0;
}
