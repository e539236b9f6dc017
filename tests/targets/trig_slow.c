// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Trigger test target: calls slow_path(i) N times (default 100) from T threads; five of
 * the calls (i = 3, 24, 45, 66, 87 when N = 100) busy-loop for SLOW_US (default 3000 us),
 * the others return at once. Each call is printed with its own timing, measured inside
 * the function on CLOCK_MONOTONIC (the clock of bpf_ktime_get_ns), so that tests can
 * compare (start_ns is taken just before the call):
 *	slow_path ADDRESS			(first line)
 *	call I tid TID start_ns S dur_ns D slow 0|1 outer_ns O
 * where D is measured inside slow_path and O around the call (it includes the probes, and
 * any preemption between the call and the return, which a busy machine adds).
 * Usage: trig_slow [-t THREADS] [-n CALLS] [-i INTERVAL_US] [-s SLOW_US]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static int nthreads = 4, ncalls = 100, interval_us, slow_us = 3000;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int is_slow(int i)
{
	return i % 21 == 3;
}

/* The function's own view of each call: its first and last instants. */
static unsigned long long call_dur[100000];

__attribute__((noinline)) int slow_path(int i, long cookie)
{
	unsigned long long t0 = now_ns(), end;
	volatile int sink = 0;

	if (is_slow(i)) {
		end = t0 + slow_us * 1000ull;
		while (now_ns() < end)
			sink++;
	}
	call_dur[i] = now_ns() - t0;
	return i + (int)cookie;
}

static void *worker(void *arg)
{
	long k = (long)arg;
	int i;

	for (i = k; i < ncalls; i += nthreads) {
		unsigned long long t0 = now_ns(), t1;

		slow_path(i, 0x5eed);
		t1 = now_ns();
		pthread_mutex_lock(&out_lock);
		printf("call %d tid %ld start_ns %llu dur_ns %llu slow %d outer_ns %llu\n", i,
		       (long)syscall(SYS_gettid), t0, call_dur[i], is_slow(i), t1 - t0);
		pthread_mutex_unlock(&out_lock);
		if (interval_us)
			usleep(interval_us);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[64];
	int c, k;

	while ((c = getopt(argc, argv, "t:n:i:s:")) != -1) {
		switch (c) {
		case 't':
			nthreads = atoi(optarg);
			break;
		case 'n':
			ncalls = atoi(optarg);
			break;
		case 'i':
			interval_us = atoi(optarg);
			break;
		case 's':
			slow_us = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: %s [-t THREADS] [-n CALLS] [-i INTERVAL_US] "
				"[-s SLOW_US]\n", argv[0]);
			return 2;
		}
	}
	if (nthreads < 1 || nthreads > 64 || ncalls < 1 || ncalls > 100000)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("slow_path %p\n", (void *)slow_path);
	/* Thread k makes calls k, k + T, k + 2T...: the main thread is thread 0. */
	for (k = 1; k < nthreads; k++)
		pthread_create(&th[k], NULL, worker, (void *)(long)k);
	worker(0);
	for (k = 1; k < nthreads; k++)
		pthread_join(th[k], NULL);
	return 0;
}
