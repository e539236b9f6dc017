// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The singlestep clock's cross-thread order without futexes (issue 15): a writer thread
 * hands a reader four things in turn, each in its own phase: a pipe write, a signal
 * (pthread_kill of SIGUSR1, which the reader takes with sigwaitinfo), an eventfd write
 * and a plain store to a flag the reader spins on (no atomic, no system call).
 *
 * Each phase starts at a barrier. The reader then runs compute() (a few hundred
 * instructions: stepped, they take tens of ms of real time and a few µs of the trace's
 * clock) and waits; the writer naps PHASE_MS and hands over in send_*(). Untraced, the
 * reader waits about PHASE_MS; on the trace's clock its got_*() must begin after the
 * writer's send_*() began, though the reader's own clock was behind when it blocked.
 * PHASE_MS (default 600) leaves the reader time to block first even when stepping is
 * slow on a loaded machine. Prints "reader TID", "writer TID" and, per phase,
 * "blocked KIND NS": how long the reader's wait lasted (CLOCK_MONOTONIC by raw system
 * calls), so a test can see that it really waited.
 * Usage: mt_handoffs [-p PHASE_MS]
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>

static int phase_ms = 600;
static pthread_barrier_t phase;
static int pipe_fd[2], event_fd;
static pthread_t reader_thread;
static volatile int flag;
static volatile unsigned long sink;

static long long raw_now(void)
{
	struct timespec ts;

	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The reader's own work before it waits: stepped slowly, short on the trace's clock. */
__attribute__((noinline)) void compute(void)
{
	int i;

	for (i = 0; i < 100; i++)
		sink = sink * 31 + (unsigned long)i;
}

__attribute__((noinline)) void nap(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	syscall(SYS_nanosleep, &ts, NULL);
}

__attribute__((noinline)) void send_pipe(void)
{
	char c = 'p';

	if (write(pipe_fd[1], &c, 1) != 1)
		abort();
}

__attribute__((noinline)) void send_signal(void)
{
	pthread_kill(reader_thread, SIGUSR1);
}

__attribute__((noinline)) void send_eventfd(void)
{
	eventfd_write(event_fd, 1);
}

__attribute__((noinline)) void send_flag(void)
{
	flag = 1;
}

/* The reader saw the handover: each marks the moment on the trace. */
__attribute__((noinline)) void got_pipe(void) { sink++; }
__attribute__((noinline)) void got_signal(void) { sink++; }
__attribute__((noinline)) void got_eventfd(void) { sink++; }
__attribute__((noinline)) void got_flag(void) { sink++; }

static void *writer(void *arg)
{
	(void)arg;
	printf("writer %ld\n", (long)syscall(SYS_gettid));
	pthread_barrier_wait(&phase);
	nap(phase_ms);
	send_pipe();
	pthread_barrier_wait(&phase);
	nap(phase_ms);
	send_signal();
	pthread_barrier_wait(&phase);
	nap(phase_ms);
	send_eventfd();
	pthread_barrier_wait(&phase);
	nap(phase_ms);
	send_flag();
	return NULL;
}

static void *reader(void *arg)
{
	long long blocked[4], t0;
	sigset_t usr1;
	eventfd_t v;
	char c;

	(void)arg;
	printf("reader %ld\n", (long)syscall(SYS_gettid));
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_barrier_wait(&phase);
	compute();
	t0 = raw_now();
	if (read(pipe_fd[0], &c, 1) != 1)
		abort();
	blocked[0] = raw_now() - t0;
	got_pipe();
	pthread_barrier_wait(&phase);
	compute();
	t0 = raw_now();
	if (sigwaitinfo(&usr1, NULL) != SIGUSR1)
		abort();
	blocked[1] = raw_now() - t0;
	got_signal();
	pthread_barrier_wait(&phase);
	compute();
	t0 = raw_now();
	if (eventfd_read(event_fd, &v))
		abort();
	blocked[2] = raw_now() - t0;
	got_eventfd();
	pthread_barrier_wait(&phase);
	compute();
	t0 = raw_now();
	while (!flag)
		;
	blocked[3] = raw_now() - t0;
	got_flag();
	printf("blocked pipe %lld\nblocked signal %lld\nblocked eventfd %lld\nblocked flag %lld\n",
	       blocked[0], blocked[1], blocked[2], blocked[3]);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t w;
	sigset_t usr1;

	if (argc == 3 && !strcmp(argv[1], "-p"))
		phase_ms = atoi(argv[2]);
	if (phase_ms <= 0 || (argc != 1 && argc != 3)) {
		fprintf(stderr, "usage: mt_handoffs [-p PHASE_MS]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* blocked in every thread: the reader takes it with sigwaitinfo */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	if (pipe(pipe_fd) || (event_fd = eventfd(0, 0)) < 0)
		return 1;
	pthread_barrier_init(&phase, NULL, 2);
	if (pthread_create(&reader_thread, NULL, reader, NULL) ||
	    pthread_create(&w, NULL, writer, NULL))
		return 1;
	pthread_join(w, NULL);
	pthread_join(reader_thread, NULL);
	return 0;
}
