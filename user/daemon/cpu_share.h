/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Holds one thread to a share of one core, whatever code it runs (the decoder has no
 * hooks to yield from): a timer on the thread's own CPU clock (CLOCK_THREAD_CPUTIME_ID)
 * interrupts it after every QUANTUM of CPU, and the signal handler, running in that
 * thread, sleeps until the CPU used since the last check is `share` of the wall time
 * since then. cpu_share__stop() makes that check once more for the CPU since the last
 * one, so from start to stop the thread uses at most `share` of a core (less on a busy
 * host), however short the run: one shorter than a quantum and a kernel tick, which the
 * timer never interrupts, pauses at its stop.
 *
 *	cpu_share__start(&cs, 0.25);	in the thread to hold
 *	... any work ...
 *	cpu_share__stop(&cs);		cs.cpu_ns, cs.slept_ns: its CPU and its pauses
 *
 * One held thread at a time per process (the handler finds its state in a thread-local).
 */
#ifndef PTBPF_DAEMON_CPU_SHARE_H
#define PTBPF_DAEMON_CPU_SHARE_H

#include <stdint.h>
#include <time.h>

#define CPU_SHARE_QUANTUM_NS 5000000ull	/* 5 ms of CPU between checks */

struct cpu_share {
	volatile double share;		/* (0, 1]; 1: no pauses (set from another thread) */
	timer_t timer;
	int armed;
	uint64_t cpu_start_ns, wall_start_ns;	/* thread CPU clock, CLOCK_MONOTONIC at start */
	uint64_t quantum_cpu_ns, quantum_wall_ns;	/* the same at the last check */
	/* results (valid after stop; slept_ns grows while running) */
	uint64_t cpu_ns;		/* CPU the thread used between start and stop */
	uint64_t wall_ns;		/* time between start and stop */
	volatile uint64_t slept_ns;	/* time it was paused to keep its share */
};

/* Start holding the calling thread to `share` of a core. Returns 0 or -errno. */
int cpu_share__start(struct cpu_share *cs, double share);
/* Change the share of the running hold (e.g. 1 to let it finish fast at shutdown). */
void cpu_share__set(struct cpu_share *cs, double share);
/* Stop holding, after a last pause for the CPU since the last check (none at share 1);
 * fills cpu_ns and wall_ns (the pause included). */
void cpu_share__stop(struct cpu_share *cs);

#endif /* PTBPF_DAEMON_CPU_SHARE_H */
