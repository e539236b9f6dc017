// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Traced by the tests: main and two worker threads, each running its own loop. */
#include <pthread.h>
#include <stdio.h>

__attribute__((noinline)) long work(long seed)
{
	long x = seed;
	int i;

	for (i = 0; i < 200; i++)
		x = x * 31 + i;
	return x;
}

__attribute__((noinline)) void *worker(void *arg)
{
	long *v = arg;

	*v = work(*v);
	return NULL;
}

int main(void)
{
	pthread_t t[2];
	long v[2] = { 1, 2 };
	int i;

	for (i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, worker, &v[i]))
			return 1;
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("threads=2 v0=%ld v1=%ld\n", v[0], v[1]);
	return 0;
}
