// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Traced by the tests: setjmp/longjmp out of a recursion, a signal handler entered
 * at a syscall return (raise), one entered asynchronously in the middle of user code
 * (a timer firing while main spins), and a siglongjmp out of a handler.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

static jmp_buf env;
static sigjmp_buf sigenv;
static volatile sig_atomic_t usr1_hits, alarm_hits;

__attribute__((noinline)) void on_usr1(int sig)
{
	usr1_hits++;
}

__attribute__((noinline)) void on_alarm(int sig)
{
	alarm_hits++;
}

__attribute__((noinline)) void on_usr2(int sig)
{
	siglongjmp(sigenv, 2);
}

__attribute__((noinline)) void deep(int n)
{
	if (n == 0)
		longjmp(env, 1);
	deep(n - 1);
}

int main(void)
{
	struct itimerval it = { .it_value = { .tv_usec = 1000 } };
	volatile unsigned long spins = 0;
	int jumps = 0, i;

	signal(SIGUSR1, on_usr1);
	signal(SIGALRM, on_alarm);
	signal(SIGUSR2, on_usr2);

	for (i = 0; i < 3; i++) {
		if (!setjmp(env))
			deep(4);
		else
			jumps++;
	}
	raise(SIGUSR1);
	if (!sigsetjmp(sigenv, 1))
		raise(SIGUSR2);
	else
		jumps++;

	/* The timer interrupts user code: an asynchronous transfer to on_alarm. */
	setitimer(ITIMER_REAL, &it, NULL);
	while (!alarm_hits)
		spins++;

	printf("jumps=%d usr1=%d alarm=%d\n", jumps, (int)usr1_hits, (int)alarm_hits);
	return 0;
}
