// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cpu_share (user/daemon/cpu_share.h): a thread that only burns CPU, with no call that
 * could yield, is held to its share of a core. The bound is an upper one, so a busy
 * host (which gives the thread less) cannot make it fail: CPU / wall <= share (the stop
 * holds the CPU since the last check too), and a run shorter than a quantum pauses.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <cmocka.h>

#include "cpu_share.h"

#define BURN_CPU_NS 50000000ull	/* 50 ms of CPU, 10 quanta */

struct burn {
	double share;
	uint64_t cpu_ns;		/* CPU to burn (BURN_CPU_NS if 0) */
	struct cpu_share cs;
	uint64_t wall_ns;
	int err;
	volatile uint64_t sink;
};

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void *burn_thread(void *arg)
{
	struct burn *b = arg;
	uint64_t t0 = now_ns(CLOCK_MONOTONIC), c0, i = 0;

	b->err = cpu_share__start(&b->cs, b->share);
	if (b->err)
		return NULL;
	c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	/* pure computation: the decoder's case, with no place to yield from */
	while (now_ns(CLOCK_THREAD_CPUTIME_ID) - c0 < (b->cpu_ns ?: BURN_CPU_NS))
		for (int k = 0; k < 10000; k++)
			b->sink += ++i * 2654435761u;
	cpu_share__stop(&b->cs);
	b->wall_ns = now_ns(CLOCK_MONOTONIC) - t0;
	return NULL;
}

static void run_burn(struct burn *b)
{
	pthread_t th;

	assert_int_equal(pthread_create(&th, NULL, burn_thread, b), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(b->err, 0);
}

static void test_share_holds(void **state)
{
	/* far below what a loaded 2-core host leaves a thread: the share has to pause it */
	struct burn b = { .share = 0.05 };
	double used;

	(void)state;
	run_burn(&b);
	used = (double)b.cs.cpu_ns / b.cs.wall_ns;
	printf("share 0.05: %.0f ms CPU in %.0f ms (%.3f of a core), paused %.0f ms\n",
	       b.cs.cpu_ns / 1e6, b.wall_ns / 1e6, used, b.cs.slept_ns / 1e6);
	assert_true(b.cs.cpu_ns >= BURN_CPU_NS);
	/* everything is paced, what ran after the last timer check by the stop */
	assert_true(b.cs.cpu_ns <= 0.05 * b.cs.wall_ns);
	assert_true(b.cs.slept_ns > 0);
}

/*
 * A run shorter than a quantum, which the timer never interrupts (a small decode), is
 * held at its stop: the whole of its CPU, with no slack, and it pauses on any machine.
 */
static void test_short_run_held_at_stop(void **state)
{
	struct burn b = { .share = 0.02, .cpu_ns = CPU_SHARE_QUANTUM_NS / 5 };

	(void)state;
	run_burn(&b);
	printf("share 0.02, %.1f ms of CPU: %.1f ms wall (%.3f of a core), paused %.1f ms\n",
	       b.cs.cpu_ns / 1e6, b.cs.wall_ns / 1e6, (double)b.cs.cpu_ns / b.cs.wall_ns,
	       b.cs.slept_ns / 1e6);
	assert_true(b.cs.cpu_ns >= b.cpu_ns);
	assert_true(b.cs.slept_ns > 0);
	assert_true(b.cs.cpu_ns <= 0.02 * b.cs.wall_ns);
}

static void test_full_share_never_pauses(void **state)
{
	struct burn b = { .share = 1.0 };

	(void)state;
	run_burn(&b);
	printf("share 1: %.0f ms CPU in %.0f ms, paused %.0f ms\n", b.cs.cpu_ns / 1e6,
	       b.wall_ns / 1e6, b.cs.slept_ns / 1e6);
	assert_int_equal(b.cs.slept_ns, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_share_holds),
		cmocka_unit_test(test_short_run_held_at_stop),
		cmocka_unit_test(test_full_share_never_pauses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
