// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * `make bench`: ptbpf decode against perf script on the same perf.data, single thread.
 *
 * Inputs are real hardware PT, repeated as PSB-aligned segments until there are at least
 * 16 MiB of it (PTBPF_BENCH_MIB overrides), in a perf.data that both decoders read:
 *   hase   the AUX buffer of a `perf record -e intel_pt//u` capture (tests/data,
 *          HASE skl-control_flow, Skylake, TSC+MTC): timing packets, syscalls, few
 *          branches per byte;
 *   mruby  the kAFL/Nyx trace of the mruby interpreter (AGPL-3.0, outside the
 *          repository: $PTBPF_TESTDATA or ../shared/testdata, else skipped): dense
 *          branches, no timing. Its page dump becomes an ELF file and the guest-context
 *          packets (PIP, VMCS: no control flow) become PADs, so perf reads it as the
 *          user-space trace it is; it goes into the HASE capture in place of its trace.
 * For each: wall and CPU time and peak RSS of
 *   ptbpf decode FILE -j 1 -o OUT.fxt
 *   ptbpf decode FILE -j 2 -o OUT.fxt      (one stream: split at PSBs)
 *   perf script -i FILE --itrace=cr > /dev/null
 * the ratio, MB/s of PT (per wall second and per CPU second) and the -j 2 scaling,
 * against the goals (>= 8x perf script, >= 100 MB/s per core, -j 2 >= 1.8x -j 1); and
 * libipt's block, query and packet decoders alone over the same bytes, and pktq alone
 * (decoder/pktq.c, the fast path's query engine on libipt's packet decoder: what bounds
 * the fast path now), and the fast path on libipt's query decoder
 * (PTBPF_FAST_QUERY=libipt) for the comparison; from these, where the decode's CPU
 * goes (print_breakdown()). First, the skip benchmark (see
 * bench_skip(), on 64 MiB: PTBPF_BENCH_SKIP_MIB). BENCH_ONLY=skip,hase,mruby runs some;
 * BENCH_KEEP keeps the inputs; PTBPF_BENCH_RUNS: runs per figure (the best is kept).
 */
#include <elf.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <intel-pt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "callstack.h"
#include "capstone_lazy.h"
#include "capture_synth.h"
#include "pktq.h"
#include "ptd.h"
#include "perfdata.h"
#include "ptdecode.h"

#define HASE "perf-intel-pt/hase-2018/skl-control_flow"
#define HASE_FILE "control_flow-20180404T163033.perf"
#define GOAL_RATIO 8.0
#define GOAL_SCALING 1.8
#define GOAL_SPLIT_COST 1.08	/* -j 2's CPU over -j 1's that leaves 1.8x on 2 cores */
#define GOAL_MBS 100.0
#define MAX_RUNS 64

struct run {
	double wall;		/* seconds */
	double cpu;		/* user + system seconds of the child */
	long rss_kb;		/* its peak RSS */
	long faults;		/* its page faults (minor) */
	int status;		/* exit status, -1 if it did not exit */
};

/* A piece of code for libipt-alone: bytes at `offset` of `path` loaded at `vaddr`. */
struct piece {
	const char *path;
	uint64_t offset, size, vaddr;
};

static char data_dir[256];	/* tests/data */
static const char *kafl_dir;	/* the kAFL/Nyx set, or NULL */
static const char *ptbpf;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_seconds(const struct rusage *ru)
{
	return ru->ru_utime.tv_sec + ru->ru_utime.tv_usec / 1e6 + ru->ru_stime.tv_sec +
	       ru->ru_stime.tv_usec / 1e6;
}

/*
 * The CPU seconds loading capstone costs (its relocations and page faults), which a
 * decode with the fast path adds to `ptbpf --version`'s start: measured once, by main()
 * before any decode in this process, loaded the same way (dlopen on first use). 0 if it
 * cannot be loaded.
 */
static double capstone_load_cpu(void)
{
	static double cpu = -1;
	struct timespec a, b;

	if (cpu < 0) {
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
		cpu = capstone_lazy() ? 0 : -2;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
		cpu = cpu ? 0 : b.tv_sec - a.tv_sec + (b.tv_nsec - a.tv_nsec) / 1e9;
	}
	return cpu;
}

/*
 * The output file of argv ("-o PATH") removed before a run: a decode writes a new trace
 * as a user's does. Opening the last run's 36 MB output with O_TRUNC freed its page
 * cache inside the timed run (9-23 ms of the merge thread's wall time at -j 2).
 */
static void remove_output(char *const argv[])
{
	int i;

	for (i = 0; argv[i] && argv[i + 1]; i++)
		if (!strcmp(argv[i], "-o"))
			unlink(argv[i + 1]);
}

/* the commands run() and run_pair() wait for, 0: none */
static volatile pid_t running_child, running_child2;

/* Starts argv with stdout and stderr to /dev/null: its pid, or -errno. */
static pid_t spawn(char *const argv[])
{
	pid_t pid;

	remove_output(argv);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		int null = open("/dev/null", O_WRONLY);

		if (null < 0)
			_exit(127);
		dup2(null, 1);
		dup2(null, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/* Runs argv with stdout and stderr to /dev/null. */
static int run(char *const argv[], struct run *r)
{
	struct rusage ru;
	double t0;
	int status;
	pid_t pid;

	t0 = now();
	pid = spawn(argv);
	if (pid < 0)
		return pid;
	running_child = pid;
	if (wait4(pid, &status, 0, &ru) < 0) {
		running_child = 0;
		return -errno;
	}
	running_child = 0;
	r->wall = now() - t0;
	r->cpu = cpu_seconds(&ru);
	r->rss_kb = ru.ru_maxrss;
	r->faults = ru.ru_minflt;
	r->status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	return 0;
}

/*
 * argv_a and argv_b run at once, each on a core of its own if the machine has two idle:
 * r->cpu is their mean CPU seconds, r->wall the time until both ended.
 */
static int run_pair(char *const argv_a[], char *const argv_b[], struct run *r)
{
	struct rusage ru_a, ru_b;
	int status_a, status_b, err = 0;
	double t0 = now();
	pid_t a, b;

	a = spawn(argv_a);
	if (a < 0)
		return a;
	running_child = a;
	b = spawn(argv_b);
	if (b > 0)
		running_child2 = b;
	if (wait4(a, &status_a, 0, &ru_a) < 0)
		err = -errno;
	running_child = 0;
	if (b < 0)
		return b;
	if (wait4(b, &status_b, 0, &ru_b) < 0)
		err = -errno;
	running_child2 = 0;
	if (err)
		return err;
	r->wall = now() - t0;
	r->cpu = (cpu_seconds(&ru_a) + cpu_seconds(&ru_b)) / 2;
	r->rss_kb = ru_a.ru_maxrss;
	r->faults = ru_a.ru_minflt;
	r->status = WIFEXITED(status_a) && WIFEXITED(status_b) ?
			    WEXITSTATUS(status_a) | WEXITSTATUS(status_b) : -1;
	return 0;
}

/* Run r into the best so far (first: the first run). */
static void keep_best(struct run *best, const struct run *r, bool first)
{
	if (first || r->wall < best->wall)
		best->wall = r->wall;
	if (first || r->cpu < best->cpu)
		best->cpu = r->cpu;
	if (r->rss_kb > best->rss_kb)
		best->rss_kb = r->rss_kb;
	if (first || r->faults < best->faults)
		best->faults = r->faults;
}

/*
 * The best of `n` runs of each of argv_a and argv_b (NULL: none), and of argv_a and
 * argv_pair run at once (NULL: none; a failed one leaves pair->cpu 0), taken in turns (the
 * fastest wall time and the least CPU time apart: on a machine shared with other work,
 * the best run is the one the neighbours disturbed least). 0, or -1 if a run failed.
 */
static int best_of(int n, char *const argv_a[], struct run *a, char *const argv_b[],
		   struct run *b, char *const argv_pair[], struct run *pair)
{
	struct run r;
	int i;

	for (i = 0; i < n; i++) {
		if (run(argv_a, &r) || r.status)
			return -1;
		keep_best(a, &r, !i);
		if (argv_b) {
			if (run(argv_b, &r) || r.status)
				return -1;
			keep_best(b, &r, !i);
		}
		if (argv_pair && (!i || pair->cpu > 0)) {
			if (run_pair(argv_a, argv_pair, &r) || r.status)
				pair->cpu = 0;
			else
				keep_best(pair, &r, !i);
		}
	}
	return 0;
}

/* Runs per figure (PTBPF_BENCH_RUNS overrides). */
static int bench_runs(void)
{
	const char *e = getenv("PTBPF_BENCH_RUNS");
	int n = e ? atoi(e) : 3;

	return n > 0 ? n : 1;
}

/* The load average, said with every set of figures: they mean little on a busy machine. */
static void print_load(void)
{
	double load[3];

	if (getloadavg(load, 3) == 3)
		printf("  (load average %.1f %.1f %.1f on %ld CPUs; best of %d runs)\n", load[0],
		       load[1], load[2], sysconf(_SC_NPROCESSORS_ONLN), bench_runs());
}

static uint8_t *read_file(const char *path, size_t *size)
{
	uint8_t *buf = NULL;
	struct stat sb;
	FILE *f = fopen(path, "rb");

	if (!f)
		return NULL;
	if (!fstat(fileno(f), &sb) && sb.st_size > 0) {
		buf = malloc((size_t)sb.st_size);
		if (buf && fread(buf, 1, (size_t)sb.st_size, f) != (size_t)sb.st_size) {
			free(buf);
			buf = NULL;
		}
		*size = (size_t)sb.st_size;
	}
	fclose(f);
	return buf;
}

static int write_file(const char *path, const void *data, size_t size)
{
	FILE *f = fopen(path, "wb");
	int err = 0;

	if (!f)
		return -errno;
	if (fwrite(data, 1, size, f) != size)
		err = -EIO;
	if (fclose(f))
		err = -EIO;
	return err;
}

/*
 * The timing configuration of the input being measured, as ptbpf decode takes it from
 * the capture: the decoders measured alone do the same MTC time math as the decode
 * (without it, pktq alone skipped hase's and understated its share).
 */
static struct pt_config timing;

static void timing_of(const struct capture *cap)
{
	pt_config_init(&timing);
	ptd_config_timing(&timing, cap);
}

/* The libipt configuration of the benchmark's decoders over `pt`. */
static void bench_config(struct pt_config *cfg, const uint8_t *pt, size_t size)
{
	pt_config_init(cfg);
	cfg->begin = (uint8_t *)pt;
	cfg->end = (uint8_t *)pt + size;
	cfg->cpu.vendor = pcv_intel;
	cfg->cpu.family = 6;
	cfg->cpu.model = 94;
	cfg->cpu.stepping = 3;
	pt_cpu_errata(&cfg->errata, &cfg->cpu);
	cfg->mtc_freq = timing.mtc_freq;
	cfg->nom_freq = timing.nom_freq;
	cfg->cpuid_0x15_eax = timing.cpuid_0x15_eax;
	cfg->cpuid_0x15_ebx = timing.cpuid_0x15_ebx;
}

/*
 * libipt's query decoder alone, CPU seconds: every TNT bit and TIP of the trace taken and
 * its events drained, with no instruction decoded. What any fast path on the query layer
 * (a tracelet cache that costs nothing on a hit) would still spend.
 */
static double query_alone(const uint8_t *pt, size_t size)
{
	struct pt_query_decoder *dec;
	struct pt_config cfg;
	struct rusage a, b;
	uint64_t ip;
	int status, taken;

	bench_config(&cfg, pt, size);
	dec = pt_qry_alloc_decoder(&cfg);
	if (!dec)
		return 0;
	getrusage(RUSAGE_SELF, &a);
	while ((status = pt_qry_sync_forward(dec, &ip)) >= 0) {
		for (;;) {
			while (status >= 0 && (status & pts_event_pending)) {
				struct pt_event ev;

				status = pt_qry_event(dec, &ev, sizeof(ev));
			}
			if (status < 0)
				break;
			status = pt_qry_cond_branch(dec, &taken);
			if (status == -pte_bad_query)
				status = pt_qry_indirect_branch(dec, &ip);
			if (status < 0)
				break;
		}
		if (status == -pte_eos)
			break;
	}
	getrusage(RUSAGE_SELF, &b);
	pt_qry_free_decoder(dec);
	return cpu_seconds(&b) - cpu_seconds(&a);
}

/*
 * The same loop on pktq (decoder/pktq.c, the fast path's query engine: libipt's packet
 * decoder underneath): what the fast path's queries cost now. Where pktq falls back
 * (the fast path would hand over to the block decoder) it syncs at the next PSB;
 * *fallbacks counts those.
 */
static double pktq_alone(const uint8_t *pt, size_t size, unsigned *fallbacks)
{
	struct pt_config cfg;
	struct rusage a, b;
	struct pktq *q;
	uint64_t ip;
	int status, taken;

	bench_config(&cfg, pt, size);
	q = pktq_new(&cfg, PKTQ_OWN);
	if (!q)
		return 0;
	*fallbacks = 0;
	getrusage(RUSAGE_SELF, &a);
	while ((status = pktq_sync_forward(q, &ip)) >= 0 || status == PTD_FAST_FALLBACK) {
		while (status >= 0) {
			while (status >= 0 && (status & pts_event_pending)) {
				struct pt_event ev;

				status = pktq_event(q, &ev, sizeof(ev));
			}
			if (status < 0)
				break;
			status = pktq_cond_branch(q, &taken);
			if (status == -pte_bad_query)
				status = pktq_indirect_branch(q, &ip);
		}
		if (status == PTD_FAST_FALLBACK)
			(*fallbacks)++;
		if (status == -pte_eos)
			break;
	}
	getrusage(RUSAGE_SELF, &b);
	pktq_free(q);
	return cpu_seconds(&b) - cpu_seconds(&a);
}

/* libipt's packet decoder alone, CPU seconds: every packet read, nothing interpreted. */
static double packets_alone(const uint8_t *pt, size_t size)
{
	struct pt_packet_decoder *dec;
	struct pt_packet packet;
	struct pt_config cfg;
	struct rusage a, b;
	int status;

	bench_config(&cfg, pt, size);
	dec = pt_pkt_alloc_decoder(&cfg);
	if (!dec)
		return 0;
	getrusage(RUSAGE_SELF, &a);
	while (pt_pkt_sync_forward(dec) >= 0) {
		while ((status = pt_pkt_next(dec, &packet, sizeof(packet))) >= 0)
			;
		if (status == -pte_eos)
			break;
	}
	getrusage(RUSAGE_SELF, &b);
	pt_pkt_free_decoder(dec);
	return cpu_seconds(&b) - cpu_seconds(&a);
}

/* libipt's block decoder alone, CPU seconds; the config is the one ptbpf would use. */
static double libipt_alone(const uint8_t *pt, size_t size, const struct piece *pieces,
			   unsigned nr, uint64_t *insns)
{
	struct pt_image_section_cache *isc = pt_iscache_alloc(NULL);
	struct pt_image *image = pt_image_alloc(NULL);
	struct pt_block_decoder *dec;
	struct pt_config cfg;
	struct rusage a, b;
	unsigned i;
	int status;

	bench_config(&cfg, pt, size);
	cfg.flags.variant.block.end_on_call = 1;
	cfg.flags.variant.block.end_on_jump = 1;
	pt_iscache_set_limit(isc, 1 << 30);
	for (i = 0; i < nr; i++)
		pt_image_add_cached(image, isc,
				    pt_iscache_add_file(isc, pieces[i].path, pieces[i].offset,
							pieces[i].size, pieces[i].vaddr),
				    NULL);
	dec = pt_blk_alloc_decoder(&cfg);
	pt_blk_set_image(dec, image);
	*insns = 0;
	getrusage(RUSAGE_SELF, &a);
	/* sync, drain events, blocks; resync after errors, as ptbpf does */
	while (pt_blk_sync_forward(dec) >= 0) {
		status = 0;
		for (;;) {
			struct pt_block block;

			while (status & pts_event_pending) {
				struct pt_event ev;

				status = pt_blk_event(dec, &ev, sizeof(ev));
				if (status < 0)
					break;
			}
			if (status < 0)
				break;
			status = pt_blk_next(dec, &block, sizeof(block));
			*insns += block.ninsn;
			if (status < 0)
				break;
		}
		if (status == -pte_eos)
			break;
	}
	getrusage(RUSAGE_SELF, &b);
	pt_blk_free_decoder(dec);
	pt_image_free(image);
	pt_iscache_free(isc);
	return cpu_seconds(&b) - cpu_seconds(&a);
}

/* `seg` repeated until there are `want` bytes or more. */
static uint8_t *repeat(const uint8_t *seg, size_t len, size_t want, size_t *size)
{
	uint8_t *big = malloc(want + len);
	size_t i;

	if (!big)
		return NULL;
	for (i = 0; i < want; i += len)
		memcpy(big + i, seg, len);
	*size = i;
	return big;
}

/* Replaces the capture's AUX buffers by one holding `pt`. */
static int set_trace(struct capture *cap, const uint8_t *pt, size_t size)
{
	struct pd_auxtrace aux = cap->aux[0];

	aux.size = size;
	cap->nr_aux = 0;
	return capture__add_aux(cap, &aux, pt);
}

/*
 * The figures of `data` decoded in this process with `jobs` threads (to `fxt`), after a
 * --verify-fast pass if `verify`: 0, 1 if the two ways differ, -1 if it could not decode.
 */
static int decode_figures(const char *data, const char *sysroot, const char *fxt, int jobs,
			  bool verify, struct decode_stats *st)
{
	struct decode_opts o = { .output = fxt, .format = DECODE_FXT, .sysroot = sysroot,
				 .jobs = jobs, .verify_fast = verify };
	struct capture *cap = NULL;
	int err;

	if (perfdata_read(data, &cap))
		return -1;
	err = ptdecode_capture(cap, &o, st);
	capture__free(cap);
	if (err == -EDOM)
		return 1;
	return err && err != -EIO ? -1 : 0;
}

/*
 * The output side alone (call stacks, symbols, FXT: from the decoder's events to the bytes
 * written), CPU seconds, the least of the runs (PTBPF_OUTPUT_CPU=1: the events are kept,
 * then timed through the output); the symbol cache's figures in *st. -1 on failure.
 */
static double output_cpu(const char *data, const char *sysroot, const char *fxt,
			 struct decode_stats *st)
{
	struct decode_opts o = { .output = fxt, .format = DECODE_FXT, .sysroot = sysroot,
				 .jobs = 1 };
	struct capture *cap = NULL;
	double best = -1;
	int i, err;

	if (perfdata_read(data, &cap))
		return -1;
	setenv("PTBPF_OUTPUT_CPU", "1", 1);
	for (i = 0; i < bench_runs(); i++) {
		memset(st, 0, sizeof(*st));
		err = ptdecode_capture(cap, &o, st);
		if ((err && err != -EIO) || st->output_cpu <= 0)
			break;
		if (best < 0 || st->output_cpu < best)
			best = st->output_cpu;
	}
	unsetenv("PTBPF_OUTPUT_CPU");
	capture__free(cap);
	return best;
}

/*
 * Where the decode's CPU (-j 1, `decode`) goes, each part in s and %: libipt's packet
 * decoder alone (`pkt`), pktq's own work (pktq alone, `pq`, less the packet decoder), the
 * output side (`out`), the process's start and exit (ptbpf --version, `start`, and
 * loading capstone, `cs_load`) and the flow: the rest (the fast path's runs, stretches
 * and cache, the block decoder where it takes over, events, the merge). Each figure is
 * the least of its runs on a shared machine: a negative flow means the parts measured
 * apart exceed the decode's CPU (noise), and is said.
 */
static void print_breakdown(double decode, double pkt, double pq, double out, double start,
			    double cs_load)
{
	double pktq_own = pq - pkt, proc = start + cs_load, flow;

	if (pkt <= 0 || pq <= 0 || decode <= 0)
		return;
	if (out < 0)
		out = 0;
	flow = decode - pq - out - proc;
	printf("  decode CPU %.3f s (-j1) = libipt packet decoder alone %.3f s (%.0f%%) + pktq's "
	       "own work %.3f s (%.0f%%: pktq alone less packet alone) + the flow %.3f s "
	       "(%.0f%%: decode less pktq alone, output side and process start) + output side "
	       "%.3f s (%.0f%%) + process start and exit %.3f s (%.0f%%: ptbpf --version %.3f s, "
	       "loading capstone %.3f s)%s\n", decode, pkt, 100.0 * pkt / decode, pktq_own,
	       100.0 * pktq_own / decode, flow, 100.0 * flow / decode, out, 100.0 * out / decode,
	       proc, 100.0 * proc / decode, start, cs_load,
	       flow < 0 ? "; the parts measured apart exceed the decode: noise" : "");
}

static void measure(const char *name, const char *data, const char *sysroot, const uint8_t *pt,
		    size_t size, const struct piece *pieces, unsigned nr)
{
	char fxt[64], fxt2[64];
	char *pe_argv[] = { (char *)ptbpf, "decode", (char *)data, "-j", "1", "-o", fxt,
			    sysroot ? "--sysroot" : NULL, (char *)sysroot, NULL };
	char *pe2_argv[] = { (char *)ptbpf, "decode", (char *)data, "-j", "1", "-o", fxt2,
			     sysroot ? "--sysroot" : NULL, (char *)sysroot, NULL };
	/*
	 * two of pe at once: what two busy cores cost without a split (a shared cache, the
	 * host's other work; a VM's two vCPUs may be one core's two threads), for -j 2's CPU
	 * to be judged against
	 */
	struct run pp = {};
	char *pj_argv[] = { (char *)ptbpf, "decode", (char *)data, "-j", "2", "-o", fxt,
			    sysroot ? "--sysroot" : NULL, (char *)sysroot, NULL };
	struct run pj = {};
	char *pn_argv[] = { (char *)ptbpf, "decode", (char *)data, "-j", "1", "-o", fxt,
			    "--no-fast", sysroot ? "--sysroot" : NULL, (char *)sysroot, NULL };
	char *pr_argv[] = { "perf", "script", "-f", "-i", (char *)data, "--itrace=cr",
			    sysroot ? "--symfs" : NULL, (char *)sysroot, NULL };
	char *ver_argv[] = { (char *)ptbpf, "--version", NULL };
	struct run pe = {}, pr = {}, start = {}, pn = {}, pl = {};
	unsigned pktq_fallbacks = 0;
	double pq;
	struct decode_stats fst = {}, sst = {}, ost = {};
	double mb = size / 1e6, ipt = 0, qry, pkt, cs_load, out_cpu;
	uint64_t insns = 0;
	int i, verified;

	snprintf(fxt, sizeof(fxt), "/tmp/ptbpf-bench-%d.fxt", getpid());
	snprintf(fxt2, sizeof(fxt2), "/tmp/ptbpf-bench-%d.fxt2", getpid());
	if (best_of(bench_runs(), pe_argv, &pe, pj_argv, &pj, pe2_argv, &pp)) {
		printf("%s: ptbpf decode failed\n", name);
		unlink(fxt);
		unlink(fxt2);
		return;
	}
	unlink(fxt2);
	if (best_of(bench_runs(), pn_argv, &pn, NULL, NULL, NULL, NULL))
		pn.wall = 0;
	/* the fast path on libipt's query decoder, as before pktq */
	setenv("PTBPF_FAST_QUERY", "libipt", 1);
	if (best_of(bench_runs(), pe_argv, &pl, NULL, NULL, NULL, NULL))
		pl.wall = 0;
	unsetenv("PTBPF_FAST_QUERY");
	verified = decode_figures(data, sysroot, fxt, 1, true, &fst);
	/* the pieces -j 2 split the stream into, and what it decoded twice */
	if (pj.wall > 0 && decode_figures(data, sysroot, fxt, 2, false, &sst))
		sst.split_pieces = 0;
	out_cpu = output_cpu(data, sysroot, fxt, &ost);
	unlink(fxt);
	/* the least of as many runs as ptbpf's: the share below compares the two */
	for (i = 0; i < bench_runs(); i++) {
		double t = libipt_alone(pt, size, pieces, nr, &insns);

		if (!i || t < ipt)
			ipt = t;
	}
	/*
	 * the process start (loading the libraries) and exit, which every decode pays, and
	 * capstone's loading, which the fast path adds
	 */
	if (best_of(bench_runs(), ver_argv, &start, NULL, NULL, NULL, NULL))
		start.cpu = 0;
	cs_load = capstone_load_cpu();
	qry = query_alone(pt, size);
	pq = pktq_alone(pt, size, &pktq_fallbacks);
	pkt = packets_alone(pt, size);
	printf("%s: %.1f MB of PT, %llu instructions\n", name, mb, (unsigned long long)insns);
	print_load();
	printf("  %-36s %8s %8s %12s %12s\n", "", "wall s", "cpu s", "MB/s (wall)", "MB/s (cpu)");
	printf("  %-36s %8.3f %8.3f %12.1f %12.1f   peak RSS %ld MiB\n",
	       "ptbpf decode -j1 -o out.fxt", pe.wall, pe.cpu, mb / pe.wall, mb / pe.cpu,
	       pe.rss_kb / 1024);
	if (pl.wall > 0)
		printf("  %-36s %8.3f %8.3f %12.1f %12.1f   peak RSS %ld MiB\n",
		       "ptbpf decode -j1, libipt's queries", pl.wall, pl.cpu, mb / pl.wall,
		       mb / pl.cpu, pl.rss_kb / 1024);
	if (pn.wall > 0)
		printf("  %-36s %8.3f %8.3f %12.1f %12.1f   peak RSS %ld MiB\n",
		       "ptbpf decode -j1 --no-fast", pn.wall, pn.cpu, mb / pn.wall, mb / pn.cpu,
		       pn.rss_kb / 1024);
	if (pj.wall > 0)
		printf("  %-36s %8.3f %8.3f %12.1f %12.1f   peak RSS %ld MiB\n",
		       "ptbpf decode -j2 (one stream, split)", pj.wall, pj.cpu, mb / pj.wall,
		       mb / pj.cpu, pj.rss_kb / 1024);
	if (run(pr_argv, &pr) || pr.status) {
		printf("  perf script: not available (exit %d), no ratio\n", pr.status);
	} else {
		printf("  %-36s %8.3f %8.3f %12.1f %12.1f\n", "perf script --itrace=cr >/dev/null",
		       pr.wall, pr.cpu, mb / pr.wall, mb / pr.cpu);
	}
	printf("  %-36s %8s %8.3f %12s %12.1f\n", "libipt block decoder alone (ceiling)", "", ipt,
	       "", mb / ipt);
	if (qry > 0)
		printf("  %-36s %8s %8.3f %12s %12.1f\n", "libipt query decoder alone", "", qry, "",
		       mb / qry);
	if (pq > 0)
		printf("  %-36s %8s %8.3f %12s %12.1f   (%u fallbacks)\n", "pktq alone", "", pq, "",
		       mb / pq, pktq_fallbacks);
	if (pkt > 0)
		printf("  %-36s %8s %8.3f %12s %12.1f\n", "libipt packet decoder alone", "", pkt, "",
		       mb / pkt);
	/* met by both: on a busy machine perf script's long run gathers more wall time */
	if (!pr.status && pr.wall > 0)
		printf("  ratio perf script / ptbpf: %.1fx wall, %.1fx cpu (goal >= %.0fx in both: "
		       "%s); libipt alone would be %.1fx\n",
		       pr.wall / pe.wall, pr.cpu / pe.cpu, GOAL_RATIO,
		       pr.wall / pe.wall >= GOAL_RATIO && pr.cpu / pe.cpu >= GOAL_RATIO ? "met" :
											      "not met",
		       pr.cpu / ipt);
	printf("  PT per core: %.1f MB/s (goal >= %.0f: %s); ptbpf runs at %.0f%% of libipt's "
	       "own speed\n", mb / pe.cpu, GOAL_MBS, mb / pe.cpu >= GOAL_MBS ? "met" : "not met",
	       100.0 * ipt / pe.cpu);
	/* every decoder on libipt's layers reads each packet with pt_pkt_next(): no design
	 * that keeps libipt's packet decoder gets past that on this machine */
	if (pkt > 0) {
		double room = mb / GOAL_MBS - pkt;

		if (room <= 0)
			printf("  floor: libipt's packet decoder alone reads %.1f MB/s here, under the "
			       "per-core goal: out of reach on this machine for a decoder on libipt's "
			       "packets, whatever it does with them", mb / pkt);
		else
			printf("  floor: libipt's packet decoder alone reads %.1f MB/s here: the "
			       "per-core goal leaves %.3f s for the rest of the decode, which takes "
			       "%.3f s now", mb / pkt, room, pe.cpu - pkt);
		if (!pr.status && pr.cpu > 0)
			printf("; perf script's CPU over the packet decoder's alone: %.1fx (the "
			       "ratio's ceiling)", pr.cpu / pkt);
		printf("\n");
	}
	print_breakdown(pe.cpu, pkt, pq, out_cpu, start.cpu, cs_load);
	if (pj.wall > 0) {
		printf("  scaling on one stream: -j 2 %.2fx the speed of -j 1 (wall; goal >= %.1fx: "
		       "%s)\n", pe.wall / pj.wall, GOAL_SCALING,
		       pe.wall / pj.wall >= GOAL_SCALING ? "met" : "not met");
		/* the wall figure is the share the neighbours left; the CPU cost is the split's */
		printf("  split cost on one stream: -j 2 spends %.2fx the CPU of -j 1 (goal <= %.2fx: "
		       "%s): on 2 idle cores at most %.2fx the speed; peak RSS -j 1 %ld MiB, "
		       "-j 2 %ld MiB; page faults -j 1 %ld, -j 2 %ld (a fresh page costs a few us "
		       "on a virtual machine)\n", pj.cpu / pe.cpu, GOAL_SPLIT_COST,
		       pj.cpu / pe.cpu <= GOAL_SPLIT_COST ? "met" : "not met",
		       2.0 * pe.cpu / pj.cpu, pe.rss_kb / 1024, pj.rss_kb / 1024, pe.faults,
		       pj.faults);
		if (pp.cpu > 0)
			printf("  two busy cores without a split: two -j 1 decodes at once spend "
			       "%.2fx the CPU of one alone each; -j 2 spends %.2fx the CPU of one of "
			       "them (the split's own cost)\n", pp.cpu / pe.cpu, pj.cpu / pp.cpu);
		if (sst.split_pieces)
			printf("  split: -j 2 decodes the stream in %llu pieces, %.2f %% of its bytes "
			       "decoded again (seams that did not join)\n",
			       (unsigned long long)sst.split_pieces,
			       sst.bytes ? 100.0 * (double)sst.split_redecoded / (double)sst.bytes
					 : 0.0);
	}
	if (pn.cpu > 0)
		printf("  fast path: %.2fx the CPU speed of the block decoder path (--no-fast)\n",
		       pn.cpu / pe.cpu);
	if (verified >= 0)
		printf("  fast path: %.1f %% of blocks (fallback share %.1f %%: %llu times the block "
		       "decoder took over; %.1f %% of blocks in stretches), run cache hit rate "
		       "%.1f %% of %llu lookups, %llu flushes; tracelet hit rate %.1f %% of %llu "
		       "lookups (%.1f %% of blocks, %llu evicted); --verify-fast: %s\n",
		       fst.blocks ? 100.0 * (double)fst.fast_blocks / (double)fst.blocks : 0.0,
		       fst.blocks ? 100.0 - 100.0 * (double)fst.fast_blocks / (double)fst.blocks
				  : 0.0,
		       (unsigned long long)fst.fast_fallbacks,
		       fst.blocks ? 100.0 * (double)fst.fast_stretched / (double)fst.blocks : 0.0,
		       fst.fast_lookups ? 100.0 * (double)fst.fast_hits / (double)fst.fast_lookups
					: 0.0,
		       (unsigned long long)fst.fast_lookups, (unsigned long long)fst.fast_flushes,
		       fst.fast_tl_lookups ? 100.0 * (double)fst.fast_tl_hits /
						     (double)fst.fast_tl_lookups
					   : 0.0,
		       (unsigned long long)fst.fast_tl_lookups,
		       fst.blocks ? 100.0 * (double)fst.fast_tl_blocks / (double)fst.blocks : 0.0,
		       (unsigned long long)fst.fast_tl_evictions,
		       verified ? "DIFFERENCES (see stderr)" : "no difference");
	printf("  query engine of the fast path: %s (PTBPF_FAST_QUERY=libipt: libipt's query "
	       "decoder); its queries alone (pktq alone) %.3f s cap this design at %.1f MB/s per "
	       "core (libipt's query decoder: %.1f)\n", pktq_engine_name(pktq_engine_from_env()),
	       pq, pq > 0 ? mb / pq : 0.0, qry > 0 ? mb / qry : 0.0);
	if (pl.cpu > 0)
		printf("  fast path on pktq: %.2fx the CPU speed of the fast path on libipt's query "
		       "decoder\n", pl.cpu / pe.cpu);
	if (out_cpu > 0)
		printf("  output side (call stacks, symbols, FXT; the decode's events replayed): "
		       "%.3f s CPU, %.1f ns per call or return (%llu calls, %llu returns), %.0f%% "
		       "of the decode's CPU\n", out_cpu,
		       1e9 * out_cpu / (double)(ost.calls + ost.returns ? ost.calls + ost.returns : 1),
		       (unsigned long long)ost.calls, (unsigned long long)ost.returns,
		       100.0 * out_cpu / pe.cpu);
	if (ost.sym_lookups)
		printf("  symbol cache (call-stack builder, %u entries of 24 bytes): hit rate "
		       "%.2f %% of %llu lookups\n", CS_SYM_CACHE_ENTRIES,
		       100.0 * (double)ost.sym_hits / (double)ost.sym_lookups,
		       (unsigned long long)ost.sym_lookups);
}

/*
 * Skipping what no selected thread ran: the HASE trace repeated (its TSCs moved on by
 * `step` ticks per copy, so that time goes forward) on one CPU, where each copy is a
 * time slice of one of two processes with the same code: the target runs 10 copies in
 * every 200 (5 % of the time), another process the rest. `ptbpf decode --pid TARGET`
 * against the decode of everything, both -j 1 to FXT; the target's calls and returns
 * must be the same in both.
 */
#define SKIP_PERIOD 200
#define SKIP_TARGET 10

static bool skip_target_copy(size_t k)
{
	return k % SKIP_PERIOD < SKIP_TARGET;
}

static void bench_skip(size_t want)
{
	char src[512], symfs[512], data[64], fxt[64], all[64], sel[64], cmd[2048], pidarg[16];
	char nonearg[16];
	struct capture *cap = NULL;
	struct pt_packet_decoder *pd = NULL;
	struct pd_record sw = {};
	struct pt_config cfg;
	struct pt_packet p;
	uint64_t tsc_off[64], first = 0, last = 0, step, off;
	const uint8_t *seg;
	uint8_t *big = NULL;
	size_t len, size, nr_tsc = 0, k, i, n = 0;
	uint32_t target = 0, other;
	bool have_sw = false;

	snprintf(src, sizeof(src), "%s/" HASE "/" HASE_FILE, data_dir);
	snprintf(symfs, sizeof(symfs), "%s/" HASE "/symfs", data_dir);
	snprintf(data, sizeof(data), "/tmp/ptbpf-bench-%d.data", getpid());
	snprintf(fxt, sizeof(fxt), "/tmp/ptbpf-bench-%d.fxt", getpid());
	snprintf(all, sizeof(all), "/tmp/ptbpf-bench-%d.all", getpid());
	snprintf(sel, sizeof(sel), "/tmp/ptbpf-bench-%d.sel", getpid());
	if (perfdata_read(src, &cap) || cap->nr_aux != 1) {
		printf("skip: SKIP: cannot read %s\n", src);
		goto out;
	}
	seg = cap->aux[0].data;
	len = cap->aux[0].size;
	/* the TSC packets of the trace, to move each copy's on */
	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)seg;
	cfg.end = (uint8_t *)seg + len;
	pd = pt_pkt_alloc_decoder(&cfg);
	if (!pd || pt_pkt_sync_forward(pd) < 0)
		goto bad;
	while (pt_pkt_get_offset(pd, &off) >= 0 && pt_pkt_next(pd, &p, sizeof(p)) > 0) {
		if (p.type != ppt_tsc)
			continue;
		if (nr_tsc == sizeof(tsc_off) / sizeof(tsc_off[0]))
			goto bad;
		if (!nr_tsc)
			first = p.payload.tsc.tsc;
		last = p.payload.tsc.tsc;
		tsc_off[nr_tsc++] = off;
	}
	if (!nr_tsc)
		goto bad;
	/* the copy's span and ~3 ms more: MTCs after its last TSC stay within it */
	step = 4 * (last - first) + 10000000;
	big = repeat(seg, len, want, &size);
	if (!big)
		goto bad;
	for (k = 0; k * len < size; k++) {
		for (i = 0; i < nr_tsc; i++) {
			uint8_t *q = big + k * len + tsc_off[i] + 1;
			uint64_t v = 0;

			memcpy(&v, q, 7);
			v += k * step;
			memcpy(q, &v, 7);
		}
	}
	/* the sideband: no switches, no exit; a second process with the same code */
	have_sw = !capture_drop_schedule(cap, &sw);
	n = cap->nr_records;
	for (i = 0; i < n; i++)
		if (cap->records[i].type == PERF_RECORD_COMM &&
		    (cap->records[i].misc & PERF_RECORD_MISC_COMM_EXEC))
			target = cap->records[i].comm.pid;
	other = target + 1;
	for (i = 0; i < n && have_sw && target; i++) {
		struct pd_record r = cap->records[i];

		if (r.type == PERF_RECORD_COMM && r.comm.pid == target) {
			r.comm.pid = r.comm.tid = r.sample.pid = r.sample.tid = other;
			r.comm.comm = "other";
		} else if (r.type == PERF_RECORD_MMAP2 && r.mmap.pid == target) {
			r.mmap.pid = r.mmap.tid = r.sample.pid = r.sample.tid = other;
		} else {
			continue;
		}
		if (capture__add_record(cap, &r))
			goto bad;
	}
	if (!have_sw || !target)
		goto bad;
	sw.sample.cpu = cap->aux[0].cpu;
	for (k = 1; k * len < size; k++) {
		bool now = skip_target_copy(k), before = skip_target_copy(k - 1);

		if (now != before &&
		    capture_add_switch(cap, &sw, pd_tsc_to_time(&cap->pt, first + k * step) - 1000,
			       before ? target : other, now ? target : other))
			goto bad;
	}
	if (set_trace(cap, big, size) || perfdata_write(data, cap))
		goto bad;
	{
		char *all_argv[] = { (char *)ptbpf, "decode", data, "-j", "1", "-o", fxt,
				     "--sysroot", symfs, NULL };
		char *sel_argv[] = { (char *)ptbpf, "decode", data, "-j", "1", "-o", fxt,
				     "--sysroot", symfs, "--pid", pidarg, NULL };
		char *none_argv[] = { (char *)ptbpf, "decode", data, "-j", "1", "-o", fxt,
				      "--sysroot", symfs, "--pid", nonearg, NULL };
		struct run ra = {}, rs = {}, rn = {};
		double mb = size / 1e6, net_all, net_sel;
		int same;

		snprintf(pidarg, sizeof(pidarg), "%u", target);
		/* a process that never ran: what a decode costs before and around decoding */
		snprintf(nonearg, sizeof(nonearg), "%u", other + 1);
		if (best_of(bench_runs(), all_argv, &ra, sel_argv, &rs, NULL, NULL) ||
		    best_of(bench_runs(), none_argv, &rn, NULL, NULL, NULL, NULL)) {
			printf("skip: ptbpf decode failed\n");
			goto out;
		}
		net_all = ra.cpu - rn.cpu;
		net_sel = rs.cpu > rn.cpu ? rs.cpu - rn.cpu : 0;
		snprintf(cmd, sizeof(cmd),
			 "%s decode %s --sysroot %s --format calls -o %s && "
			 "%s decode %s --sysroot %s --format calls --pid %u -o %s && "
			 "grep '^%u/' %s | cmp -s - %s", ptbpf, data, symfs, all, ptbpf, data, symfs,
			 target, sel, target, all, sel);
		same = system(cmd);
		printf("skip: %.1f MB of PT on one CPU, the target (pid %u) in %d of every %d "
		       "time slices\n", mb, target, SKIP_TARGET, SKIP_PERIOD);
		print_load();
		printf("  %-36s %8s %8s\n", "", "wall s", "cpu s");
		printf("  %-36s %8.3f %8.3f\n", "ptbpf decode -j1 (everything)", ra.wall, ra.cpu);
		printf("  %-36s %8.3f %8.3f\n", "ptbpf decode -j1 --pid TARGET", rs.wall, rs.cpu);
		printf("  %-36s %8.3f %8.3f\n", "ptbpf decode -j1 --pid (never ran)", rn.wall,
		       rn.cpu);
		/*
		 * The decode's own time: the CPU of each run less that of the run that decodes
		 * nothing (process start, dynamic linking, reading the capture and the images:
		 * ~0.08 s here, as much as the target's whole decode).
		 */
		/* the goal is the gross ratio: what a user waits for, start included */
		printf("  skip ratio: %.1f%% of the CPU of decoding everything (goal <= 10%%: %s); "
		       "%.1f%% of the decode's own CPU (less the never-ran run's); the "
		       "target's calls and returns: %s\n", 100.0 * rs.cpu / ra.cpu,
		       rs.cpu <= 0.1 * ra.cpu ? "met" : "not met",
		       net_all > 0 ? 100.0 * net_sel / net_all : 0.0,
		       same ? "DIFFER" : "identical");
	}
	goto out;
bad:
	printf("skip: cannot prepare the input from %s\n", src);
out:
	if (!getenv("BENCH_KEEP"))
		unlink(data);
	unlink(fxt);
	unlink(all);
	unlink(sel);
	pt_pkt_free_decoder(pd);
	free(big);
	capture__free(cap);
}

static void bench_hase(size_t want)
{
	char src[512], symfs[512], elf[1024], data[64];
	struct capture *cap = NULL;
	uint8_t *big = NULL;
	size_t size, i;

	snprintf(src, sizeof(src), "%s/" HASE "/" HASE_FILE, data_dir);
	snprintf(symfs, sizeof(symfs), "%s/" HASE "/symfs", data_dir);
	snprintf(data, sizeof(data), "/tmp/ptbpf-bench-%d.data", getpid());
	if (perfdata_read(src, &cap) || cap->nr_aux != 1) {
		printf("hase: SKIP: cannot read %s\n", src);
		goto out;
	}
	/* the program, where the capture's mapping names it, below symfs/ */
	elf[0] = 0;
	for (i = 0; i < cap->nr_records && !elf[0]; i++)
		if (cap->records[i].type == PERF_RECORD_MMAP2 &&
		    cap->records[i].mmap.filename[0] == '/')
			snprintf(elf, sizeof(elf), "%s%s", symfs, cap->records[i].mmap.filename);
	if (!elf[0]) {
		printf("hase: SKIP: %s maps no program\n", src);
		goto out;
	}
	/* the buffer starts at a PSB: its copies follow each other cleanly */
	timing_of(cap);
	big = repeat(cap->aux[0].data, cap->aux[0].size, want, &size);
	if (!big || set_trace(cap, big, size) || perfdata_write(data, cap)) {
		printf("hase: cannot write %s\n", data);
		goto out;
	}
	{
		const struct piece code = { elf, 0, 0xabc, 0x400000 };

		measure("hase (Skylake, TSC+MTC, control_flow)", data, symfs, big, size, &code, 1);
	}
out:
	if (!getenv("BENCH_KEEP"))
		unlink(data);
	free(big);
	capture__free(cap);
}

/* [first PSB, last PSB) of a trace, with PIP and VMCS packets made PADs (in place). */
static int plain_user_trace(uint8_t *pt, size_t size, size_t *begin, size_t *end)
{
	struct pt_packet_decoder *d;
	struct pt_config cfg;
	struct pt_packet p;
	uint64_t off, first = UINT64_MAX, last = 0;

	pt_config_init(&cfg);
	cfg.begin = pt;
	cfg.end = pt + size;
	d = pt_pkt_alloc_decoder(&cfg);
	if (!d || pt_pkt_sync_forward(d) < 0)
		return -EINVAL;
	while (pt_pkt_get_offset(d, &off) >= 0 && pt_pkt_next(d, &p, sizeof(p)) > 0) {
		if (p.type == ppt_psb) {
			if (first == UINT64_MAX)
				first = off;
			last = off;
		} else if (p.type == ppt_pip || p.type == ppt_vmcs) {
			memset(pt + off, 0, p.size);
		}
	}
	pt_pkt_free_decoder(d);
	if (first == UINT64_MAX || last <= first)
		return -EINVAL;
	*begin = first;
	*end = last;
	return 0;
}

/*
 * An ELF executable of a kAFL page dump: one PT_LOAD per run of consecutive pages,
 * the pages at file offset 0x1000 on. Returns the runs as pieces (offsets in the ELF).
 */
static int dump_elf(const char *dir, const char *out, struct piece *runs, unsigned *nr)
{
	char path[640];
	uint8_t *addrs, *dump, *file = NULL;
	size_t na, nd, i, n = 0;
	Elf64_Ehdr eh = {};
	Elf64_Phdr ph[MAX_RUNS] = {};
	int err = -EINVAL;

	snprintf(path, sizeof(path), "%s/data.addr", dir);
	addrs = read_file(path, &na);
	snprintf(path, sizeof(path), "%s/data.dump", dir);
	dump = read_file(path, &nd);
	if (!addrs || !dump || nd < na / 8 * 4096)
		goto out;
	for (i = 0; i < na / 8; i++) {
		uint64_t a;

		memcpy(&a, addrs + 8 * i, 8);
		if (a & 0xfff)
			continue;	/* an unmapped page */
		if (n && runs[n - 1].vaddr + runs[n - 1].size == a &&
		    runs[n - 1].offset + runs[n - 1].size == 0x1000 + i * 4096) {
			runs[n - 1].size += 4096;
			continue;
		}
		if (n == MAX_RUNS)
			goto out;
		runs[n++] = (struct piece){ out, 0x1000 + i * 4096, 4096, a };
	}
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_EXEC;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_entry = runs[0].vaddr;
	eh.e_phoff = sizeof(eh);
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(ph[0]);
	eh.e_phnum = (uint16_t)n;
	for (i = 0; i < n; i++)
		ph[i] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X,
				      .p_offset = runs[i].offset, .p_vaddr = runs[i].vaddr,
				      .p_paddr = runs[i].vaddr, .p_filesz = runs[i].size,
				      .p_memsz = runs[i].size, .p_align = 0x1000 };
	file = calloc(1, 0x1000 + nd);
	if (!file || sizeof(eh) + n * sizeof(ph[0]) > 0x1000)
		goto out;
	memcpy(file, &eh, sizeof(eh));
	memcpy(file + sizeof(eh), ph, n * sizeof(ph[0]));
	memcpy(file + 0x1000, dump, nd);
	err = write_file(out, file, 0x1000 + nd);
	*nr = (unsigned)n;
out:
	free(addrs);
	free(dump);
	free(file);
	return err;
}

static void bench_mruby(size_t want)
{
	char src[512], dir[512], elf[64], data[64], trace[600];
	struct capture *cap = NULL;
	struct piece runs[MAX_RUNS];
	uint8_t *pt = NULL, *big = NULL;
	size_t size, begin, end, i, nr_rec;
	unsigned nr = 0, k;

	memset(runs, 0, sizeof(runs));

	if (!kafl_dir) {
		printf("mruby: SKIP: the kAFL/Nyx traces (AGPL-3.0, not in the repository) were not found: set PTBPF_TESTDATA\n");
		return;
	}
	snprintf(src, sizeof(src), "%s/" HASE "/" HASE_FILE, data_dir);
	snprintf(dir, sizeof(dir), "%s/mruby", kafl_dir);
	snprintf(trace, sizeof(trace), "%s/trace", dir);
	snprintf(elf, sizeof(elf), "/tmp/ptbpf-bench-%d.mruby", getpid());
	snprintf(data, sizeof(data), "/tmp/ptbpf-bench-%d.data", getpid());
	pt = read_file(trace, &size);
	if (!pt || plain_user_trace(pt, size, &begin, &end) || dump_elf(dir, elf, runs, &nr) ||
	    perfdata_read(src, &cap) || cap->nr_aux != 1) {
		printf("mruby: SKIP: cannot prepare %s\n", dir);
		goto out;
	}
	/*
	 * The HASE capture's sideband, with the program's mapping made the dump's runs, in
	 * its place (perf wants its records in time order).
	 */
	nr_rec = cap->nr_records;
	for (i = 0; i < nr_rec; i++) {
		struct pd_record r = cap->records[i];

		if (r.type != PERF_RECORD_MMAP2 || r.mmap.filename[0] != '/')
			continue;
		for (k = 1; k < nr; k++)
			if (capture__add_record(cap, &r))
				goto out;
		memmove(&cap->records[i + nr], &cap->records[i + 1],
			(nr_rec - i - 1) * sizeof(*cap->records));
		for (k = 0; k < nr; k++) {
			r.mmap.addr = runs[k].vaddr;
			r.mmap.len = runs[k].size;
			r.mmap.pgoff = runs[k].offset;
			r.mmap.filename = elf;
			cap->records[i + k] = r;
		}
		break;
	}
	/* no timing packets in this trace */
	cap->attrs[0].attr.config &= ~(cap->pt.tsc_bit | cap->pt.mtc_bit);
	timing_of(cap);
	big = repeat(pt + begin, end - begin, want, &size);
	if (!big || set_trace(cap, big, size) || perfdata_write(data, cap)) {
		printf("mruby: cannot write %s\n", data);
		goto out;
	}
	measure("mruby (kAFL, dense branches, no timing)", data, NULL, big, size, runs, nr);
out:
	if (!getenv("BENCH_KEEP")) {
		unlink(data);
		unlink(elf);
	}
	free(pt);
	free(big);
	capture__free(cap);
}

/*
 * The benchmark's files (/tmp/ptbpf-bench-PID.*) removed when it is stopped (Ctrl-C, a
 * kill): an interrupted run left tens of MB in /tmp. Paths made up front: a signal
 * handler may only unlink.
 */
static const char *const tmp_suffixes[] = { "data", "fxt", "fxt2", "all", "sel", "mruby" };
static char tmp_paths[sizeof(tmp_suffixes) / sizeof(tmp_suffixes[0])][64];

static void remove_tmp_files(int sig)
{
	pid_t child = running_child, child2 = running_child2;
	size_t i;

	/* first the commands, which may still be writing them */
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	if (child2 > 0) {
		kill(child2, SIGKILL);
		waitpid(child2, NULL, 0);
	}
	for (i = 0; i < sizeof(tmp_paths) / sizeof(tmp_paths[0]); i++)
		unlink(tmp_paths[i]);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void clean_up_on_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	size_t i;

	for (i = 0; i < sizeof(tmp_paths) / sizeof(tmp_paths[0]); i++)
		snprintf(tmp_paths[i], sizeof(tmp_paths[i]), "/tmp/ptbpf-bench-%d.%s", getpid(),
			 tmp_suffixes[i]);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], remove_tmp_files);
}

int main(void)
{
	const char *data = getenv("TESTDATA"), *mib = getenv("PTBPF_BENCH_MIB");
	size_t want = (mib ? strtoull(mib, NULL, 10) : 16) << 20;

	ptbpf = getenv("PTBPF");
	kafl_dir = getenv("KAFL") && *getenv("KAFL") ? getenv("KAFL") : NULL;
	if (!data || !ptbpf) {
		fprintf(stderr, "decode_bench: TESTDATA and PTBPF must be set (make bench does)\n");
		return 1;
	}
	snprintf(data_dir, sizeof(data_dir), "%s", data);
	clean_up_on_signals();
	capstone_load_cpu();	/* first, before any in-process decode loads it */
	/*
	 * The skip benchmark on 4 times more: the target's 5 % of 16 MiB decode in ~20 ms,
	 * as long as the process start and as noisy as the CPU times of a shared machine.
	 */
	if (!getenv("BENCH_ONLY") || strstr(getenv("BENCH_ONLY"), "skip"))
		bench_skip(getenv("PTBPF_BENCH_SKIP_MIB") ?
			   strtoull(getenv("PTBPF_BENCH_SKIP_MIB"), NULL, 10) << 20 : 4 * want);
	if (!getenv("BENCH_ONLY") || strstr(getenv("BENCH_ONLY"), "hase"))
		bench_hase(want);
	if (!getenv("BENCH_ONLY") || strstr(getenv("BENCH_ONLY"), "mruby"))
		bench_mruby(want);
	return 0;
}
