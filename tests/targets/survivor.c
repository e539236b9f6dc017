// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Traced by tests/integration/ss_survive.sh, which SIGKILLs ptbpf while it steps this
 * program: TICKS rounds (default 50) of a little arithmetic and a 20 ms sleep, then one
 * line with the result and the TracerPid the program sees in its own /proc status, and
 * exit status 3. Killed by a stray single-step trap, it prints nothing of that.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

__attribute__((noinline)) static long work(long n)
{
	long x = n;
	int i;

	for (i = 0; i < 20; i++)
		x = x * 31 + i;
	return x;
}

static long tracer_pid(void)
{
	char line[256];
	long pid = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "TracerPid:", 10))
			pid = atol(line + 10);
	fclose(f);
	return pid;
}

int main(int argc, char **argv)
{
	struct timespec ts = { .tv_nsec = 20 * 1000 * 1000 };
	long ticks = argc > 1 ? atol(argv[1]) : 50, n, acc = 0;

	for (n = 0; n < ticks; n++) {
		acc += work(n);
		nanosleep(&ts, NULL);
	}
	printf("survivor: %ld ticks, result %ld, TracerPid %ld\n", ticks, acc, tracer_pid());
	return 3;
}
