// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The multi-thread clock's test target (issue 15): three threads of known sleeps beside
 * one lock. Thread k (1, 2, 3) sleeps k * UNIT ms (default 10) in nap(), 6 / k times,
 * so each sleeps 6 * UNIT ms in all; after each sleep it takes the shared mutex and
 * runs critical(), a short computation. main starts the three and joins them.
 * Before starting, each thread prints "sleeper TID NAP_MS" (stdout, line buffered) so a
 * test knows what each thread's nap() slices should last. At the end each thread prints
 * "nap TID I NS RUNQ", the length of its I-th sleep as the kernel kept it (CLOCK_MONOTONIC
 * read by raw system calls right around the nanosleep call: stepping must not be
 * counted) and how much of it the thread waited on a run queue once woken (schedstat:
 * a loaded machine wakes a thread late, which the trace's clock leaves out), and
 * "crit TID I SEQ", the order in
 * which the lock went to its I-th critical(); main prints "native NS", the run's length.
 * Usage: mt_sleepers [-u UNIT_MS]
 */
#include <fcntl.h>
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

/* The thread's run-queue wait so far (schedstat's second field), 0 if unknown. */
static long long runq_ns(int schedstat_fd)
{
	char buf[96];
	long long run, wait;
	long n = syscall(SYS_pread64, schedstat_fd, buf, sizeof(buf) - 1, 0L);

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return sscanf(buf, "%lld %lld", &run, &wait) == 2 ? wait : 0;
}

/* The sleep, how long the kernel kept the thread in it, and its run-queue part. */
__attribute__((noinline)) long long nap(int ms, int schedstat_fd, long long *runq)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
	long long q0 = runq_ns(schedstat_fd), t0 = raw_now(), t1;

	syscall(SYS_nanosleep, &ts, NULL);
	t1 = raw_now();
	*runq = runq_ns(schedstat_fd) - q0;
	return t1 - t0;
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
	int k = (int)(long)arg, i, order[6], schedstat_fd;
	long tid = (long)syscall(SYS_gettid);
	long long slept[6], runq[6];
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%ld/schedstat", tid);
	schedstat_fd = open(path, O_RDONLY | O_CLOEXEC);

	printf("sleeper %ld %d\n", tid, k * unit_ms);
	pthread_barrier_wait(&ready);
	for (i = 0; i < 6 / k; i++) {
		slept[i] = nap(k * unit_ms, schedstat_fd, &runq[i]);
		pthread_mutex_lock(&lock);
		order[i] = critical(k);
		pthread_mutex_unlock(&lock);
	}
	for (i = 0; i < 6 / k; i++)
		printf("nap %ld %d %lld %lld\ncrit %ld %d %d\n", tid, i, slept[i], runq[i], tid, i,
		       order[i]);
	if (schedstat_fd >= 0)
		close(schedstat_fd);
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
