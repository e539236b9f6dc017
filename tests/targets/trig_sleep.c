// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Syscall latency target: N times (-n, default 10) sleeps SLEEP_US (-s, default 5000) with
 * the nanosleep syscall, then the same with clock_nanosleep, each time between 100 fast
 * getppid() calls. Raw syscalls, because glibc's nanosleep() is clock_nanosleep.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

int main(int argc, char **argv)
{
	int c, k, j, n = 10, sleep_us = 5000;
	struct timespec ts;

	while ((c = getopt(argc, argv, "n:s:")) != -1) {
		switch (c) {
		case 'n':
			n = atoi(optarg);
			break;
		case 's':
			sleep_us = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: %s [-n N] [-s SLEEP_US]\n", argv[0]);
			return 2;
		}
	}
	ts.tv_sec = sleep_us / 1000000;
	ts.tv_nsec = (sleep_us % 1000000) * 1000L;
	for (k = 0; k < n; k++) {
		for (j = 0; j < 100; j++)
			syscall(SYS_getppid);
		syscall(SYS_nanosleep, &ts, NULL);
	}
	for (k = 0; k < n; k++) {
		for (j = 0; j < 100; j++)
			syscall(SYS_getppid);
		syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, NULL);
	}
	printf("done %d\n", n);
	return 0;
}
