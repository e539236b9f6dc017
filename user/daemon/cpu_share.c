// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* A thread held to a share of one core (cpu_share.h). */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cpu_share.h"

/* The realtime signal the CPU-clock timer sends to the held thread. */
#define CPU_SHARE_SIGNAL (SIGRTMIN + 3)

static __thread struct cpu_share *held;

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* The longest single sleep of a pause: a share changed meanwhile applies after it. */
#define CPU_SHARE_SLICE_NS 50000000ull

/*
 * Sleep until the CPU used since the last check is `share` of the wall time since then,
 * then start the next check from here. clock_gettime() and nanosleep() are
 * async-signal-safe: this runs in the timer's signal handler.
 */
static void pace(struct cpu_share *cs)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	uint64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);

	for (;;) {
		double share = cs->share;
		uint64_t due, left;
		struct timespec ts;

		if (share <= 0 || share >= 1)
			break;
		/* rounded up: the held time is never short of CPU / share */
		due = cs->quantum_wall_ns + (uint64_t)((cpu - cs->quantum_cpu_ns) / share) + 1;
		if (now >= due)
			break;
		left = due - now < CPU_SHARE_SLICE_NS ? due - now : CPU_SHARE_SLICE_NS;
		ts = (struct timespec){ left / 1000000000ull, left % 1000000000ull };
		nanosleep(&ts, NULL);
		cs->slept_ns += clock_ns(CLOCK_MONOTONIC) - now;
		now = clock_ns(CLOCK_MONOTONIC);
	}
	/* the pause's own CPU (signal, sleeps) counts in the next check: none goes unheld */
	cs->quantum_wall_ns = now;
	cs->quantum_cpu_ns = cpu;
}

/* About a quantum of CPU is used up (the kernel checks CPU-clock timers at its ticks, so
 * it may be a tick more). */
static void on_quantum(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;

	(void)sig;
	(void)si;
	(void)uc;
	if (held)
		pace(held);
	errno = saved;
}

int cpu_share__start(struct cpu_share *cs, double share)
{
	struct sigaction sa = { .sa_sigaction = on_quantum, .sa_flags = SA_SIGINFO | SA_RESTART };
	struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = CPU_SHARE_SIGNAL };
	struct itimerspec its = {
		.it_value = { 0, CPU_SHARE_QUANTUM_NS },
		.it_interval = { 0, CPU_SHARE_QUANTUM_NS },
	};
	sigset_t set;

	memset(cs, 0, sizeof(*cs));
	cs->share = share > 0 && share <= 1 ? share : 1;
	cs->cpu_start_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	cs->quantum_cpu_ns = cs->cpu_start_ns;
	cs->wall_start_ns = clock_ns(CLOCK_MONOTONIC);
	cs->quantum_wall_ns = cs->wall_start_ns;
	if (sigaction(CPU_SHARE_SIGNAL, &sa, NULL))
		return -errno;
	sev._sigev_un._tid = syscall(SYS_gettid);
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &cs->timer))
		return -errno;
	held = cs;
	sigemptyset(&set);
	sigaddset(&set, CPU_SHARE_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	if (timer_settime(cs->timer, 0, &its, NULL)) {
		int err = -errno;

		timer_delete(cs->timer);
		held = NULL;
		return err;
	}
	cs->armed = 1;
	return 0;
}

void cpu_share__set(struct cpu_share *cs, double share)
{
	cs->share = share > 0 && share <= 1 ? share : 1;
}

void cpu_share__stop(struct cpu_share *cs)
{
	if (cs->armed) {
		timer_delete(cs->timer);
		cs->armed = 0;
	}
	held = NULL;
	cs->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cs->cpu_start_ns;
	/*
	 * The CPU since the last check is held too: a run shorter than a quantum and a tick
	 * (a small decode) would otherwise never be paused, and many of them in a row would
	 * use what they like.
	 */
	pace(cs);
	cs->wall_ns = clock_ns(CLOCK_MONOTONIC) - cs->wall_start_ns;
}
