// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Traced by the tests: dynamically linked, calls clock_gettime() in a loop, which
 * glibc serves from the vDSO (__vdso_clock_gettime) without a syscall.
 */
#include <stdio.h>
#include <time.h>

__attribute__((noinline)) long elapsed_ns(const struct timespec *a, const struct timespec *b)
{
	return (b->tv_sec - a->tv_sec) * 1000000000L + (b->tv_nsec - a->tv_nsec);
}

int main(void)
{
	struct timespec first, prev, now;
	int backwards = 0, i;

	clock_gettime(CLOCK_MONOTONIC, &first);
	prev = first;
	for (i = 0; i < 5; i++) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (elapsed_ns(&prev, &now) < 0)
			backwards++;
		prev = now;
	}
	printf("calls=%d backwards=%d\n", i + 1, backwards);
	return 0;
}
