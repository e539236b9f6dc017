/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Call-stack reconstruction (decoder/callstack.c): turns per-thread control-flow events,
 * in time order per thread, into properly nested FXT slices.
 *
 * Threads are named by (pid, tid). Times are absolute ns (the fxt writer rebases them).
 * Addresses are virtual addresses in the thread's process. Every function returns 0 or
 * a negative errno (an error of the underlying writer, or -ENOMEM); the first error is
 * sticky and callstack__finish() returns it.
 *
 * Output. A thread's trace is cut into epochs: an epoch begins at the thread's first event
 * (or its first after a decode error, an overflow or the end of its data) and ends at the
 * next of those. The epoch's first frame is the function the thread was in when it began
 * (named by the symbol of the first address seen), starting at the epoch's start. A return
 * that matches no frame (the thread returns above everything seen) closes every frame and
 * makes the function returned into (or "[unknown]") the new outermost frame; as it was
 * active before the epoch began, it starts at the epoch's start and encloses all that was
 * already reconstructed. Because such parents can appear at any moment, a thread's slices
 * are held in memory (16 bytes a slice) and written when its epoch ends, each parent
 * before its children: slices are FXT complete events (24 bytes) when that is exact under
 * Perfetto's rules (complete slices are closed-open intervals and zero-length ones stack
 * like instants), otherwise begin/end pairs (zero-length slices, slices with a child or an
 * instant at their very end, slices longer than 4.29 s). Slices of one thread are in
 * timestamp order in the file, ties in nesting order. When a thread holds more than
 * opts.max_buffer slices, what it holds is written (open frames as begin events, their end
 * events later) and parents found later in that epoch start when they are found, not at
 * the epoch's start (counted in late_parents).
 *
 * Names of synthetic slices: "[unknown]" (a parent without a symbol), "[unknown @ 0xADDR]"
 * (a call target without a symbol), "[syscall]", "[untraced]", "[depth limit]" (the frame
 * at depth max_depth, which stands for it and all frames below it; arg "function" names
 * it), and instant events "[decode error]" (args offset, ip, message) and "[overflow]"
 * (arg ip). Slices back-dated to the epoch start carry arg "inferred_start" (int32 1).
 *
 * Not thread-safe: feed one callstack from one thread at a time.
 */
#ifndef PTBPF_CALLSTACK_H
#define PTBPF_CALLSTACK_H

#include <stdint.h>

#include "fxt.h"

struct callstack;

/* What the symbolizer says about an address. */
struct cs_symbol {
	const char *name;	/* function name, or "binary+0xoff"; must stay valid until
				 * callstack__free() (the symbolizer owns it) */
	uint64_t start;		/* start address of the function, 0 if unknown */
};

/* Returns 0 and fills `out`, or -ENOENT when nothing is known about `addr`. */
typedef int (*cs_symbolize_fn)(void *ctx, uint32_t pid, uint64_t addr, struct cs_symbol *out);

/* Why the trace of a thread stopped. */
enum cs_stop_reason {
	CS_STOP_SYSCALL,	/* TIP.PGD after a syscall: "[syscall]" slice until resumed */
	CS_STOP_UNTRACED,	/* left traced code (filter, kernel, [uprobes]): "[untraced]" */
	CS_STOP_OVERFLOW,	/* internal buffer overflow: instant marker, stack restarts */
	CS_STOP_END,		/* end of data for this thread */
};

/* Deepest stack kept; deeper calls are counted, and a marker slice shows the cut. */
#define CS_MAX_DEPTH 500

/* Entries of the (pid, address) -> symbol cache (24 bytes each: 384 KiB, fixed). */
#define CS_SYM_CACHE_ENTRIES (1u << 14)

/* Slices a thread holds before writing them early (see Output above): 256 Ki, 4 MiB. */
#define CS_MAX_BUFFER (256u << 10)

struct callstack_opts {
	cs_symbolize_fn symbolize;	/* NULL: every address is unknown */
	void *ctx;			/* passed to symbolize */
	unsigned max_depth;		/* 0: CS_MAX_DEPTH; never more than CS_MAX_DEPTH. Frames
					 * at depths 0..max_depth-1 are shown, the one at depth
					 * max_depth as the "[depth limit]" marker, deeper ones
					 * not at all */
	unsigned max_buffer;		/* 0: CS_MAX_BUFFER; slices held per thread */
};

struct cs_stats {
	uint64_t calls, returns, jumps, tail_calls;
	uint64_t unknown_parents;	/* returns above the first frame */
	uint64_t unwinds;		/* returns that popped more than one frame */
	uint64_t depth_capped;		/* calls not shown because of max_depth */
	uint64_t errors, overflows;
	uint64_t clamps;		/* timestamps raised to keep a thread's time monotonic */
	uint64_t slices;		/* slices written */
	uint64_t late_parents;		/* parents found after an early write (see Output) */
	uint64_t early_writes;		/* times a thread wrote its slices early */
	uint64_t gaps;			/* [syscall] and [untraced] slices */
	uint64_t max_held;		/* most slices one thread held at once */
	/* the (pid, address) -> symbol cache in front of opts.symbolize: addresses looked up
	 * (call targets, returns above the first frame, epoch starts) and found there */
	uint64_t sym_lookups, sym_hits;
	uint64_t sym_misses;		/* lookups the symbolizer answered */
	/* the longest call that returned to its call site (not one closed by an unwind, an
	 * error or the end of the data), timed from call to return */
	uint64_t slowest_ns;		/* 0: no call returned */
	uint32_t slowest_pid, slowest_tid;
	char slowest_path[512];		/* "main > handle > slow_path": its frames as the trace
					 * nests them, outermost first, cut at the front to fit */
};

/* NULL (errno set) on bad arguments or no memory. */
struct callstack *callstack__new(struct fxt_writer *w, const struct callstack_opts *opts);
/*
 * Closes every open slice at its thread's last timestamp and writes all that is held;
 * returns the first error seen. Call it once, at the end, then callstack__free() (which
 * frees and drops what a callstack that was not finished still holds). Both NULL-safe.
 */
int callstack__finish(struct callstack *cs);
void callstack__free(struct callstack *cs);
void callstack__stats(const struct callstack *cs, struct cs_stats *out);

/* A call instruction at `from` transferred to `to`. */
int callstack__call(struct callstack *cs, uint32_t pid, uint32_t tid, uint64_t from, uint64_t to,
		    uint64_t t);
/* A return instruction at `from` landed at `to`. */
int callstack__return(struct callstack *cs, uint32_t pid, uint32_t tid, uint64_t from,
		      uint64_t to, uint64_t t);
/* A jump at `from` left the current function for `to` (tail call when `to` starts a function). */
int callstack__jump(struct callstack *cs, uint32_t pid, uint32_t tid, uint64_t from, uint64_t to,
		    uint64_t t);
/*
 * Tracing stopped at `ip` (last instruction executed; `resume`: where the stopped code
 * would go on, 0 unknown) / resumed at `ip`. Resuming at a function's entry elsewhere
 * than `resume` is a signal handler's entry: a call from the stopped point, whose return
 * into the signal trampoline (a return no frame expects) goes back to `resume`. A jump
 * into a function's body (siglongjmp), an error or an overflow forgets the handlers.
 */
int callstack__stop(struct callstack *cs, uint32_t pid, uint32_t tid, enum cs_stop_reason why,
		    uint64_t ip, uint64_t resume, uint64_t t);
int callstack__start(struct callstack *cs, uint32_t pid, uint32_t tid, uint64_t ip, uint64_t t);
/* A decode error at trace `offset` and `ip`: instant event, the stack restarts after it. */
int callstack__error(struct callstack *cs, uint32_t pid, uint32_t tid, uint64_t offset,
		     uint64_t ip, const char *msg, uint64_t t);
/* The thread was scheduled out / in (per-CPU traces). Open slices stay open. */
int callstack__switch_out(struct callstack *cs, uint32_t pid, uint32_t tid, uint64_t t);
int callstack__switch_in(struct callstack *cs, uint32_t pid, uint32_t tid, uint64_t t);
/*
 * The thread's innermost open call (below a [syscall] or [untraced] gap) counts for the
 * slowest call with its length up to `t`, though it has not returned (a system call still
 * open at a --syscall-latency-over trigger). Nothing if the thread has no open call.
 */
int callstack__note_open_call(struct callstack *cs, uint32_t pid, uint32_t tid, uint64_t t);
/* An instant event at the thread's current position (the trigger marker, for one). */
int callstack__instant(struct callstack *cs, uint32_t pid, uint32_t tid, const char *name,
		       uint64_t t, const struct fxt_arg *args, unsigned nargs);

#endif /* PTBPF_CALLSTACK_H */
