/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The decoder's public API: a capture (perf.data) or raw PT plus images, decoded with
 * libipt's block decoder into call stacks written as FXT (or as text for diffing).
 * Errors are negative errnos here; libipt's error space stays inside decoder/.
 */
#ifndef PTBPF_PTDECODE_H
#define PTBPF_PTDECODE_H

#include <stdbool.h>
#include <stdint.h>

#include "perfdata.h"

enum decode_format {
	DECODE_FXT,		/* Fuchsia trace (.fxt, .fxt.gz) */
	DECODE_TEXT,		/* per thread, "depth name begin_ns end_ns" per slice */
	DECODE_CALLS,		/* one line per event: "PID/TID TIME KIND FROM TO NAME", for
				 * diffing with `perf script --itrace=cr` */
};

struct decode_opts {
	const char *output;		/* output path, "-" for stdout */
	enum decode_format format;
	const char *sysroot;		/* prefix for mapped file paths (perf's --symfs) */
	const char *debug_dir;		/* build-id cache, default ~/.debug */
	int jobs;			/* decoder threads, 0: number of cores */
	bool kernel;			/* decode kernel control flow (needs a kcore copy) */
	bool strict;			/* a missing binary is an error, not "binary+0xoff" frames */
	bool progress;			/* progress on stderr when the decode takes > 1 s */
	/*
	 * What to decode. With pids or tids, only the flow of those processes (and, with
	 * children, of the processes they fork) and threads is decoded and written: the
	 * PSB-delimited pieces of a CPU's trace in which none of them ran are skipped.
	 */
	const uint32_t *pids;
	size_t nr_pids;
	const uint32_t *tids;
	size_t nr_tids;
	bool children;			/* the selected processes' descendants too */
	uint64_t window_ns;		/* only the last window_ns before the trigger (the end of
					 * the capture without one), from the PSB before; 0: all */
	bool no_fast;			/* libipt's block decoder alone, no fast path */
	bool verify_fast;		/* decode every stream both ways first and fail (-EDOM)
					 * at the first difference */
};

struct decode_stats {
	uint64_t insns;			/* instructions decoded */
	uint64_t blocks;		/* libipt blocks */
	uint64_t calls, returns;
	uint64_t errors;		/* decode errors (each marked in the trace) */
	uint64_t overflows;		/* OVF packets */
	/*
	 * PERF_RECORD_AUX records with PERF_AUX_FLAG_TRUNCATED (trace data lost), _PARTIAL
	 * (the trace has gaps: VMX entry on a CPU whose PT cannot run alongside it) and
	 * _COLLISION; each such record is a gap marked in the trace.
	 */
	uint64_t aux_truncated, aux_partial, aux_collision;
	uint64_t gaps;			/* such records, each marked in the trace */
	uint64_t syncs;			/* synchronisations (PSB) */
	uint64_t bytes;			/* PT bytes decoded */
	uint64_t skipped;		/* PT bytes not decoded (--pid, --tid, --window) */
	/* the fast path: runs looked up and found cached, cache flushes, blocks it
	 * decoded, times the block decoder took over, blocks replayed for that */
	uint64_t fast_lookups, fast_hits, fast_flushes, fast_blocks, fast_fallbacks;
	uint64_t fast_replayed;
	uint64_t fast_stored;		/* misses copied from the runs another stream decoded */
	uint64_t fast_stretched;	/* of fast_blocks: walked in stretches, counted as one
					 * sum each (decoder/fastpath.c, ptd_fast_stretch()) */
	uint64_t fast_edges;		/* of those: calls and returns stretches went through */
	/* of those: tracelets looked up, found, the blocks they walked, evictions */
	uint64_t fast_tl_lookups, fast_tl_hits, fast_tl_blocks, fast_tl_evictions;
	/* one CPU's stream on several cores: pieces decoded (0: no stream was split), and
	 * bytes decoded again for seams that did not join (replays, pieces given up) */
	uint64_t split_pieces, split_redecoded;
	/* the call-stack builder's (pid, address) -> symbol cache: lookups, found there */
	uint64_t sym_lookups, sym_hits;
	uint64_t threads;		/* threads with at least one slice */
	uint64_t first_time, last_time;	/* absolute ns span of the decoded flow */
	double seconds;			/* wall time of the decode */
	/* PTBPF_OUTPUT_CPU=1 (the benchmark): CPU seconds of the output side alone, from the
	 * decoder's events to the bytes written (call stacks, symbols, FXT); else 0 */
	double output_cpu;
	bool trigger_placed;		/* the trigger marker was placed in a thread's flow */
	bool verified_fast;		/* every stream was first decoded both ways, block
					 * decoder and fast path, with no difference */
	bool fast_off_small;		/* no fast path: too little PT to decode for it to pay
					 * (decoder/session.c, PTBPF_FAST_MIN_PT) */
	/* For a capture summary: the longest call that returned in the trace. */
	uint64_t slowest_ns;		/* its duration, 0 if no call returned */
	uint32_t slowest_pid, slowest_tid;	/* its thread */
	char slowest_path[512];		/* "main > handle > slow_path" (outermost first, cut
					 * at the front with "... > " when too long) */
	int write_err;			/* -errno if the output could not be written (full
					 * disk, I/O error), 0 otherwise; the decode then
					 * fails with it and the caller names the file */
};

/*
 * When a capture's trace begins (ns, the capture's perf clock): the earliest TSC after a
 * PSB of its AUX buffers, without decoding them. -ENODATA when the trace holds no time.
 */
int ptdecode_first_time(const struct capture *cap, uint64_t *ns);

/* Decode a capture; output per `opts`. */
int ptdecode_capture(const struct capture *cap, const struct decode_opts *opts,
		     struct decode_stats *stats);

/* One memory image for raw mode (ptxed's --elf / --raw). */
struct raw_image {
	const char *path;
	bool elf;			/* ELF: load executable PT_LOAD segments, at `vaddr` as base */
	uint64_t from, to;		/* raw: file byte range, to == 0 means to the end */
	uint64_t vaddr;			/* raw: load address; ELF: where its lowest PT_LOAD goes,
					 * as ptxed --elf FILE:BASE (0: as linked) */
};

/* Raw PT (ptxed style) with its decoding parameters. */
struct raw_decode_opts {
	const char *pt_path;
	struct raw_image *images;
	unsigned nr_images;
	uint32_t cpu_family, cpu_model, cpu_stepping;	/* 0/0/0: no errata */
	uint32_t mtc_freq, nom_freq;
	uint32_t cpuid_0x15_eax, cpuid_0x15_ebx;
	uint64_t tsc_hz;		/* TSC ticks per second for ns times, 0: ticks as ns */
};

int ptdecode_raw(const struct raw_decode_opts *raw, const struct decode_opts *opts,
		 struct decode_stats *stats);

/*
 * Kernel addresses outside a decode (a kprobe's fire record), named from a kallsyms file
 * (/proc/kallsyms) with the decoder's kernel symbol code. kernel_symbols__load: 0,
 * -errno, or -ENODATA (no text symbols, or their addresses hidden by kptr_restrict).
 * kernel_symbols__name writes "func" or "func+0xoff": 0, or -ENOENT outside the symbols.
 */
struct symbols;
int kernel_symbols__load(const char *kallsyms, struct symbols **out);
int kernel_symbols__name(const struct symbols *sy, uint64_t addr, char *buf, size_t size);
void symbols__free(struct symbols *sy);

#endif /* PTBPF_PTDECODE_H */
