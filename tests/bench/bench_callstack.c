// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Call-stack reconstruction + FXT writer throughput and output size, on a synthetic
 * stream of 10 M calls (20 M call/return events) to 5 000 distinct functions, from 4
 * threads switching every 1 000 events, 1-40 ns apart. Goals (issue 3): >= 20 M events/s
 * on one core, <= 32 bytes per call in the output (string and thread records included).
 * The stream is generated in chunks outside the timed part; times are CPU time of the
 * process (the machine may be shared), the best of three runs (the least disturbed).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "callstack.h"

#define NR_CALLS 10000000u
#define NR_SYMS 5000u
#define NR_THREADS 4u
#define SWITCH_EVERY 1000u
#define CHUNK (1u << 20)
#define MAX_DEPTH 40
#define FN(i) (0x400000ull + (uint64_t)(i) * 0x100)
#define RUNS 3

struct ev {
	uint64_t from, to, t;
	uint32_t tid;
	uint32_t ret;		/* 0 call, 1 return */
};

struct gen_thread {
	uint64_t t;
	int depth;
	uint32_t fn[MAX_DEPTH + 1];
	uint64_t ret[MAX_DEPTH + 1];
};

static char *names[NR_SYMS];
static uint64_t rng = 88172645463325252ull;

static uint64_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int symbolize(void *ctx, uint32_t pid, uint64_t addr, struct cs_symbol *out)
{
	uint64_t i = (addr - FN(0)) / 0x100;

	if (addr < FN(0) || i >= NR_SYMS)
		return -ENOENT;
	out->name = names[i];
	out->start = FN(i);
	return 0;
}

/* The next chunk of the stream; returns the events in it, counting calls made. */
static uint32_t generate(struct ev *evs, struct gen_thread *th, uint64_t *calls, uint32_t *cur)
{
	uint32_t n = 0;

	while (n < CHUNK && *calls < NR_CALLS) {
		struct gen_thread *g = &th[*cur];
		uint64_t r = xorshift();
		struct ev *e = &evs[n++];
		/* calls get rarer deeper down; hot functions are called more often */
		bool call = g->depth == 0 ||
			    (g->depth < MAX_DEPTH && (int)(r & 0xff) < 128 + (12 - g->depth) * 8);
		uint64_t pc = FN(g->fn[g->depth]) + 0x10 + (r >> 8 & 0x3f);

		g->t += 1 + (r >> 16) % 40;
		e->t = g->t;
		e->tid = *cur + 1;
		e->from = pc;
		if (call) {
			uint32_t f = (uint32_t)((r >> 24) % ((r >> 60) < 12 ? 64 : NR_SYMS));

			e->to = FN(f);
			e->ret = 0;
			g->depth++;
			g->fn[g->depth] = f;
			g->ret[g->depth] = pc + 5;
			(*calls)++;
		} else {
			e->to = g->ret[g->depth--];
			e->ret = 1;
		}
		if (n % SWITCH_EVERY == 0)
			*cur = (*cur + 1) % NR_THREADS;
	}
	return n;
}

/* CPU time of this process: the machine may be shared, the goal is for one core. */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One run into `path`; returns 0 and the seconds, events, bytes and stats. */
static int run(const char *path, double *secs, uint64_t *events, uint64_t *bytes,
	       struct cs_stats *st)
{
	struct callstack_opts co = { .symbolize = symbolize };

	struct fxt_opts fo = { .time_base = 1000000 };
	struct gen_thread th[NR_THREADS] = { 0 };
	struct ev *evs = malloc(CHUNK * sizeof(*evs));
	struct fxt_writer *w = NULL;
	struct callstack *cs = NULL;
	uint64_t calls = 0;
	uint32_t cur = 0, n, i;
	struct stat sb;
	double t0, spent = 0;
	int err;

	rng = 88172645463325252ull;
	for (i = 0; i < NR_THREADS; i++)
		th[i].t = 1000000;
	*events = 0;
	err = evs ? fxt_writer__open(&w, path, &fo) : -ENOMEM;
	if (err)
		goto out;
	cs = callstack__new(w, &co);
	if (!cs) {
		err = -errno;
		goto out;
	}
	while ((n = generate(evs, th, &calls, &cur))) {
		t0 = now();
		for (i = 0; i < n && !err; i++) {
			const struct ev *e = &evs[i];

			err = e->ret ? callstack__return(cs, 1, e->tid, e->from, e->to, e->t)
				     : callstack__call(cs, 1, e->tid, e->from, e->to, e->t);
		}
		spent += now() - t0;
		*events += n;
		if (err)
			goto out;
	}
	t0 = now();
	err = callstack__finish(cs);
	callstack__stats(cs, st);
	callstack__free(cs);
	cs = NULL;
	err = fxt_writer__close(w) ?: err;
	w = NULL;
	spent += now() - t0;
	*secs = spent;
	if (!err && stat(path, &sb))
		err = -errno;
	*bytes = (uint64_t)sb.st_size;
out:
	callstack__free(cs);
	fxt_writer__close(w);
	free(evs);
	return err;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	uint64_t events, bytes;
	struct cs_stats st;
	struct rusage ru;
	char path[256];
	double secs, evs, bpc, runs[RUNS];
	unsigned i;
	int err;

	for (i = 0; i < NR_SYMS; i++) {
		if (asprintf(&names[i], "namespace::Class%u::method_%u(int, char const*)", i % 97,
			     i) < 0)
			return 1;
	}
	snprintf(path, sizeof(path), "%s/ptbpf-bench-cs-%d.fxt", dir, (int)getpid());
	for (i = 0; i < RUNS; i++) {
		double s;

		err = run(path, &s, &events, &bytes, &st);
		unlink(path);
		if (err) {
			fprintf(stderr, "bench_callstack: %s\n", strerror(-err));
			return 1;
		}
		runs[i] = s;
	}
	qsort(runs, RUNS, sizeof(runs[0]), cmp_double);
	secs = runs[0];
	getrusage(RUSAGE_SELF, &ru);
	evs = events / secs / 1e6;
	bpc = (double)bytes / st.calls;
	printf("callstack+fxt: %llu calls, %llu events in %.3f s of CPU (best of %d; median "
	       "%.3f s): %.1f M events/s (goal >= 20: ratio %.2f)\n",
	       (unsigned long long)st.calls, (unsigned long long)events, secs, RUNS,
	       runs[RUNS / 2], evs, evs / 20);
	printf("output: %llu bytes, %.2f bytes per call (goal <= 32: ratio %.2f); "
	       "%llu slices, %llu early writes, %llu held at most, max RSS %ld MiB\n",
	       (unsigned long long)bytes, bpc, bpc / 32, (unsigned long long)st.slices,
	       (unsigned long long)st.early_writes, (unsigned long long)st.max_held,
	       ru.ru_maxrss / 1024);

	if (argc > 1 && !strcmp(argv[1], "--no-gzip"))
		return 0;
	snprintf(path, sizeof(path), "%s/ptbpf-bench-cs-%d.fxt.gz", dir, (int)getpid());
	err = run(path, &secs, &events, &bytes, &st);
	unlink(path);
	if (err) {
		fprintf(stderr, "bench_callstack: gzip: %s\n", strerror(-err));
		return 1;
	}
	printf("with gzip (.fxt.gz): %.1f M events/s, %.2f bytes per call\n",
	       events / secs / 1e6, (double)bytes / st.calls);
	for (i = 0; i < NR_SYMS; i++)
		free(names[i]);
	return 0;
}
