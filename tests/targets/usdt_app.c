// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Traced by tests/integration/triggers_usdt.sh: a program with USDT probes. Serves N
 * requests (default 6); each passes the probe app:request (arg0 = the request number,
 * arg1 = its work), and request 4 finds something wrong and calls PTBPF_TRIGGER_ARGS
 * (include/ptbpf.h) with its number.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/sdt.h>

#include "ptbpf.h"

__attribute__((noinline)) static long work(long i)
{
	long x = i;
	int k;

	for (k = 0; k < 50; k++)
		x = x * 31 + k;
	return x;
}

__attribute__((noinline)) long serve(long i)
{
	long w = work(i);

	DTRACE_PROBE2(app, request, i, w & 0xffff);
	if (i == 4)
		PTBPF_TRIGGER_ARGS(i, 42);
	return w;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 6, i, acc = 0;

	for (i = 0; i < n; i++)
		acc += serve(i);
	printf("served %ld (%ld)\n", n, acc);
	return 0;
}
