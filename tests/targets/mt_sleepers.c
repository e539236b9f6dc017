// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The multi-thread clock's test target (issue 15): three threads of known sleeps beside
 * one lock. Thread k (1, 2, 3) sleeps k * UNIT ms (default 10) in nap(), 6 / k times,
 * so each sleeps 6 * UNIT ms in all; after each sleep it takes the shared mutex and
 * runs critical(), a short computation. main starts the three and joins them.
 * Before starting, each thread prints "sleeper TID NAP_MS" (stdout, line buffered) so a
 * test knows what each thread's nap() slices should last. At the end each thread prints
 * "nap TID I NS", the length of its I-th sleep as the kernel kept it (CLOCK_MONOTONIC
 * read by raw system calls right around the nanosleep call: a loaded machine wakes a
 * thread late, and stepping must not be counted), and "crit TID I SEQ", the order in
 * which the lock went to its I-th critical(); main prints "native NS", the run's length.
 * Usage: mt_sleepers [-u UNIT_MS]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static int unit_ms = 10;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t ready;
static volatile unsigned long shared;
static int seq;

static long long raw_now(void)
{
	struct timespec ts;

	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The sleep, and how long the kernel kept the thread in it. */
__attribute__((noinline)) long long nap(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
	long long t0 = raw_now();

	syscall(SYS_nanosleep, &ts, NULL);
	return raw_now() - t0;
}

/* Under the lock: a few hundred instructions; returns its place in the lock's order. */
__attribute__((noinline)) int critical(int k)
{
	int i;

	for (i = 0; i < 40; i++)
		shared = shared * 31 + (unsigned long)k;
	return ++seq;
}

__attribute__((noinline)) void *sleeper(void *arg)
{
	int k = (int)(long)arg, i, order[6];
	long tid = (long)syscall(SYS_gettid);
	long long slept[6];

	printf("sleeper %ld %d\n", tid, k * unit_ms);
	pthread_barrier_wait(&ready);
	for (i = 0; i < 6 / k; i++) {
		slept[i] = nap(k * unit_ms);
		pthread_mutex_lock(&lock);
		order[i] = critical(k);
		pthread_mutex_unlock(&lock);
	}
	for (i = 0; i < 6 / k; i++)
		printf("nap %ld %d %lld\ncrit %ld %d %d\n", tid, i, slept[i], tid, i, order[i]);
	return NULL;
}

int main(int argc, char **argv)
{
	struct timespec t0, t1;
	pthread_t t[3];
	long k;

	if (argc == 3 && !strcmp(argv[1], "-u"))
		unit_ms = atoi(argv[2]);
	if (unit_ms <= 0) {
		fprintf(stderr, "usage: mt_sleepers [-u UNIT_MS]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	pthread_barrier_init(&ready, NULL, 3);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (k = 1; k <= 3; k++)
		if (pthread_create(&t[k - 1], NULL, sleeper, (void *)k))
			return 1;
	for (k = 0; k < 3; k++)
		pthread_join(t[k], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("native %lld\n", (t1.tv_sec - t0.tv_sec) * 1000000000LL + t1.tv_nsec - t0.tv_nsec);
	return 0;
}
