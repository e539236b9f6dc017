/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Call-stack reconstruction (decoder/callstack.c): turns per-thread control-flow events,
 * in time order per thread, into properly nested FXT slices.
 *
 * Threads are named by (pid, tid). Times are absolute ns (the fxt writer rebases them).
 * Addresses are virtual addresses in the thread's process. Every function returns 0 or
 * a negative errno (an error of the underlying writer).
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

struct callstack_opts {
	cs_symbolize_fn symbolize;
	void *ctx;			/* passed to symbolize */
	unsigned max_depth;		/* 0: CS_MAX_DEPTH; never more than CS_MAX_DEPTH */
};

struct cs_stats {
	uint64_t calls, returns, jumps, tail_calls;
	uint64_t unknown_parents;	/* returns above the first frame */
	uint64_t unwinds;		/* returns that popped more than one frame */
	uint64_t depth_capped;		/* calls not shown because of max_depth */
	uint64_t errors, overflows;
	uint64_t clamps;		/* timestamps raised to keep a thread's time monotonic */
	uint64_t slices;		/* slices written */
};

struct callstack *callstack__new(struct fxt_writer *w, const struct callstack_opts *opts);
/* Closes every open slice at its thread's last timestamp, then frees. NULL-safe. */
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
/* Tracing stopped at `ip` (last instruction executed) / resumed at `ip`. */
int callstack__stop(struct callstack *cs, uint32_t pid, uint32_t tid, enum cs_stop_reason why,
		    uint64_t ip, uint64_t t);
int callstack__start(struct callstack *cs, uint32_t pid, uint32_t tid, uint64_t ip, uint64_t t);
/* A decode error at trace `offset` and `ip`: instant event, the stack restarts after it. */
int callstack__error(struct callstack *cs, uint32_t pid, uint32_t tid, uint64_t offset,
		     uint64_t ip, const char *msg, uint64_t t);
/* The thread was scheduled out / in (per-CPU traces). Open slices stay open. */
int callstack__switch_out(struct callstack *cs, uint32_t pid, uint32_t tid, uint64_t t);
int callstack__switch_in(struct callstack *cs, uint32_t pid, uint32_t tid, uint64_t t);
/* An instant event at the thread's current position (the trigger marker, for one). */
int callstack__instant(struct callstack *cs, uint32_t pid, uint32_t tid, const char *name,
		       uint64_t t, const struct fxt_arg *args, unsigned nargs);

#endif /* PTBPF_CALLSTACK_H */
