// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Traced by the tests: a long-running process for -p attach, Ctrl-C and kill tests.
 * Calls tick() every 20 ms for SECONDS seconds (default 30), then prints how many
 * ticks it made and exits 0. SIGUSR1 makes it print the count at once.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile sig_atomic_t report;

__attribute__((noinline)) long tick(long n)
{
	long x = n;
	int i;

	for (i = 0; i < 10; i++)
		x = x * 7 + i;
	return x;
}

static void on_usr1(int sig)
{
	report = 1;
}

int main(int argc, char **argv)
{
	struct timespec ts = { .tv_nsec = 20 * 1000 * 1000 };
	long seconds = argc > 1 ? atol(argv[1]) : 30, n, acc = 0;

	signal(SIGUSR1, on_usr1);
	for (n = 0; n < seconds * 50; n++) {
		acc += tick(n);
		nanosleep(&ts, NULL);
		if (report) {
			printf("ticks=%ld\n", n + 1);
			fflush(stdout);
			report = 0;
		}
	}
	printf("ticks=%ld acc=%ld\n", n, acc);
	return 0;
}
