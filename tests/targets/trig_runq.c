// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Run-queue latency target: every thread is pinned to one CPU (-c, default 0). A sleeper
 * thread wakes up every SLEEP_US (-s, default 1000) N times (-n, default 200); with -h,
 * two CPU-bound threads share that CPU, so every thread waits runnable behind them.
 * Prints "sleeper TID" and "hog TID" lines, then the sleeper's worst oversleep.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static volatile int stop;
static int cpu;

static void pin(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		perror("sched_setaffinity");
		exit(1);
	}
}

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void *hog(void *arg)
{
	volatile unsigned long n = 0;

	pin();
	printf("hog %ld\n", (long)syscall(SYS_gettid));
	while (!stop)
		n++;
	return NULL;
}

int main(int argc, char **argv)
{
	int c, k, n = 200, sleep_us = 1000, hogs = 0;
	unsigned long long worst = 0, t0, d;
	pthread_t th[2];

	while ((c = getopt(argc, argv, "c:n:s:h")) != -1) {
		switch (c) {
		case 'c':
			cpu = atoi(optarg);
			break;
		case 'n':
			n = atoi(optarg);
			break;
		case 's':
			sleep_us = atoi(optarg);
			break;
		case 'h':
			hogs = 2;
			break;
		default:
			fprintf(stderr, "usage: %s [-c CPU] [-n N] [-s SLEEP_US] [-h]\n", argv[0]);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	pin();
	printf("sleeper %ld\n", (long)syscall(SYS_gettid));
	for (k = 0; k < hogs; k++)
		pthread_create(&th[k], NULL, hog, NULL);
	for (k = 0; k < n; k++) {
		t0 = now_ns();
		usleep(sleep_us);
		d = now_ns() - t0 - sleep_us * 1000ull;
		if (d > worst)
			worst = d;
	}
	stop = 1;
	for (k = 0; k < hogs; k++)
		pthread_join(th[k], NULL);
	printf("worst_oversleep_ns %llu\n", worst);
	return 0;
}
