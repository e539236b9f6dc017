// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Traced by the daemon's tests: a server that calls handle() every INTERVAL ms for
 * SECONDS seconds (default 60); after a SIGUSR1 the next call goes through slow_path(),
 * which sleeps 300 ms. With -r RATE it calls hot() RATE times per second instead (a
 * storm of probe hits), paced in batches of 1000, until CALLS calls with -n. Prints "ready PID" first, and the
 * number of calls and the CPU seconds it used at the end.
 * Usage: fleet_server [-s SECONDS] [-i INTERVAL_MS] [-r RATE [-n CALLS]]
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t slow_next;

static void on_usr1(int sig)
{
	slow_next = 1;
}

/*
 * hot(i) = 3 * i + 1, starting with a 5-byte NOP: from Linux 6.17 on x86-64 a uprobe on
 * a NOP5 is optimized from a trap into a call of the kernel's uprobe trampoline
 * (arch_uprobe_optimize) after its first hit, several times cheaper, as a hot function
 * built with -fpatchable-function-entry or a USDT's NOP would be. Older kernels trap.
 */
int hot(int i);
__asm__(".text\n"
	".globl hot\n"
	".type hot, @function\n"
	"hot:\n"
	"\t.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"
	"\tleal 1(%rdi,%rdi,2), %eax\n"
	"\tret\n"
	".size hot, .-hot\n");

__attribute__((noinline)) void slow_path(void)
{
	usleep(300000);
}

__attribute__((noinline)) int handle(int i)
{
	int r = hot(i);

	if (slow_next) {
		slow_next = 0;
		slow_path();
	}
	return r;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int seconds = 60, interval_ms = 50, rate = 0, opt;
	long calls = 0, max_calls = 0;
	double start, end;

	while ((opt = getopt(argc, argv, "s:i:r:n:")) != -1) {
		switch (opt) {
		case 's':
			seconds = atoi(optarg);
			break;
		case 'i':
			interval_ms = atoi(optarg);
			break;
		case 'r':
			rate = atoi(optarg);
			break;
		case 'n':
			max_calls = atol(optarg);
			break;
		default:
			fprintf(stderr, "usage: fleet_server [-s SECONDS] [-i INTERVAL_MS] [-r RATE [-n CALLS]]\n");
			return 2;
		}
	}
	signal(SIGUSR1, on_usr1);
	printf("ready %d\n", getpid());
	fflush(stdout);
	start = now();
	end = start + seconds;
	while (now() < end && (!max_calls || calls < max_calls)) {
		if (rate) {
			double due;
			int k;

			for (k = 0; k < 1000; k++)
				hot(k);
			calls += 1000;
			due = start + (double)calls / rate;
			if (due > now())
				usleep((due - now()) * 1e6);
		} else {
			handle(calls++);
			usleep(interval_ms * 1000);
		}
	}
	{
		struct rusage ru;

		getrusage(RUSAGE_SELF, &ru);
		printf("calls %ld\ncpu_s %.3f\n", calls,
		       ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
		       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	}
	return 0;
}
