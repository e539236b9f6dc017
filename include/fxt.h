/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Fuchsia Trace Format writer (decoder/fxt.c). Facts: doc/fxt.md.
 *
 * Callers pass absolute times in nanoseconds; the writer subtracts opts.time_base so the
 * earliest event of the capture is at 0 (Perfetto holds times as doubles) and records
 * the base in the trace. Strings and threads are interned by the writer (FXT string
 * indices 1..32767 and thread indices 1..255, recycled); callers never see FXT indices.
 * Every function returns 0 or a negative errno; after an I/O error every later call
 * returns the same error, and fxt_writer__close() reports it.
 *
 * What is written, in order: the magic record; provider info and provider section
 * (provider 0, opts.provider_name); a 4-word initialization record (1e9 ticks per second,
 * then base ticks 0 and base time opts.time_base, the extension magic-trace writes and
 * fxtcheck reads); then string, thread, kernel object and event records as the calls
 * come. Events always use indexed threads (a thread record precedes first use and every
 * reuse of a recycled index) and indexed names and categories (a string record precedes
 * first use of an index); string argument values are written inline. The base time is
 * also an argument ("time_base_ns") of every process kernel object.
 *
 * Names are sanitised: invalid UTF-8 bytes become U+FFFD, and a name longer than
 * FXT_MAX_NAME_LEN bytes is cut at a character boundary and ends in "…" (U+2026), so the
 * written name is at most FXT_MAX_NAME_LEN bytes. NULL is the empty string.
 *
 * Text mode (opts.text) writes, instead of FXT, exactly what `fxtcheck --stacks`
 * (tests/tools/fxtcheck.c) prints for the FXT the same calls would have produced: per
 * thread (sorted by pid, tid), a line "# thread pid=P tid=T name=NAME" and one line
 * "DEPTH NAME BEGIN_NS END_NS" per duration slice in begin order, depth by Perfetto's
 * slice-stack rules. It is printed at close, so it holds every slice in memory (about 32
 * bytes each).
 *
 * Not thread-safe: one writer per thread, or callers serialise.
 */
#ifndef PTBPF_FXT_H
#define PTBPF_FXT_H

#include <stdbool.h>
#include <stdint.h>

struct fxt_writer;

/* Longest name written, in bytes; longer names are cut at a UTF-8 boundary and end in "…". */
#define FXT_MAX_NAME_LEN 1024

struct fxt_opts {
	uint64_t time_base;		/* absolute ns subtracted from every timestamp */
	const char *provider_name;	/* provider info record name, "ptbpf" if NULL */
	bool gzip;			/* force gzip; also on when the path ends in ".gz" */
	bool text;			/* write `fxtcheck --stacks` text instead of FXT */
};

enum fxt_arg_type {
	FXT_ARG_INT32,
	FXT_ARG_UINT32,
	FXT_ARG_INT64,
	FXT_ARG_UINT64,
	FXT_ARG_DOUBLE,
	FXT_ARG_STRING,
	FXT_ARG_POINTER,
	FXT_ARG_KOID,
	FXT_ARG_BOOL,		/* valid FXT, but Perfetto shows it as "unknown": use INT32 0/1 */
};

/* One event argument; at most FXT_MAX_ARGS per event. */
#define FXT_MAX_ARGS 15
struct fxt_arg {
	const char *name;
	enum fxt_arg_type type;
	union {
		int64_t i;		/* INT32, INT64 */
		uint64_t u;		/* UINT32, UINT64, POINTER, KOID */
		double d;		/* DOUBLE */
		const char *s;		/* STRING */
		bool b;			/* BOOL */
	};
};

/* Opens `path` ("-" is stdout) and writes the magic, provider and initialization records. */
int fxt_writer__open(struct fxt_writer **out, const char *path, const struct fxt_opts *opts);
/*
 * Flushes, closes and frees; returns the first error seen (e.g. -ENOSPC), and then removes
 * the regular file it was writing: nothing half-written is left behind. NULL-safe.
 */
int fxt_writer__close(struct fxt_writer *w);

/* Name a process (kernel object type 1) and a thread (type 2, with its "process" koid). */
int fxt_process(struct fxt_writer *w, uint64_t pid, const char *name);
int fxt_thread(struct fxt_writer *w, uint64_t pid, uint64_t tid, const char *name);

/* Events on the track of thread (pid, tid). `ts` and `end` are absolute ns. */
int fxt_begin(struct fxt_writer *w, uint64_t pid, uint64_t tid, const char *cat, const char *name,
	      uint64_t ts, const struct fxt_arg *args, unsigned nargs);
int fxt_end(struct fxt_writer *w, uint64_t pid, uint64_t tid, const char *cat, const char *name,
	    uint64_t ts, const struct fxt_arg *args, unsigned nargs);
int fxt_complete(struct fxt_writer *w, uint64_t pid, uint64_t tid, const char *cat,
		 const char *name, uint64_t ts, uint64_t end, const struct fxt_arg *args,
		 unsigned nargs);
int fxt_instant(struct fxt_writer *w, uint64_t pid, uint64_t tid, const char *cat,
		const char *name, uint64_t ts, const struct fxt_arg *args, unsigned nargs);
int fxt_counter(struct fxt_writer *w, uint64_t pid, uint64_t tid, const char *cat,
		const char *name, uint64_t ts, uint64_t counter_id, const struct fxt_arg *args,
		unsigned nargs);

/* Bytes written so far (after compression when gzip is on). */
uint64_t fxt_writer__bytes(const struct fxt_writer *w);

/*
 * Fast path for names and threads used many times (symbols, per-event threads): the
 * string is sanitised and hashed once, here, and events then take the returned id. Ids
 * are the writer's own handles, stable until close (not FXT indices: the FXT index behind
 * an id may be recycled and is re-defined by the writer when needed). String id 0 is the
 * empty string. The _id event functions take the same arguments as their named forms.
 */
int fxt_intern(struct fxt_writer *w, const char *s, uint32_t *id);
int fxt_thread_id(struct fxt_writer *w, uint64_t pid, uint64_t tid, uint32_t *id);
int fxt_begin_id(struct fxt_writer *w, uint32_t thread, uint32_t cat, uint32_t name, uint64_t ts,
		 const struct fxt_arg *args, unsigned nargs);
int fxt_end_id(struct fxt_writer *w, uint32_t thread, uint32_t cat, uint32_t name, uint64_t ts,
	       const struct fxt_arg *args, unsigned nargs);
int fxt_complete_id(struct fxt_writer *w, uint32_t thread, uint32_t cat, uint32_t name,
		    uint64_t ts, uint64_t end, const struct fxt_arg *args, unsigned nargs);
int fxt_instant_id(struct fxt_writer *w, uint32_t thread, uint32_t cat, uint32_t name,
		   uint64_t ts, const struct fxt_arg *args, unsigned nargs);
/*
 * Many events of one thread, without arguments, packed as the call-stack builder holds a
 * thread's slices (16 bytes each: it holds millions): the same records, in the same
 * order, as fxt_begin_id(), fxt_end_id() and fxt_complete_id() called for each in turn,
 * for less work per event (the thread and the time checks once for all). Event i is at
 * t0 + (ev[i].bd & FXT_PACKED_TIME_MAX) ns. An event of another type is -EINVAL, with
 * the events before it written.
 */
enum fxt_event_type {
	FXT_EVENT_COMPLETE = 1,
	FXT_EVENT_BEGIN = 2,
	FXT_EVENT_END = 3,
};
#define FXT_PACKED_TIME_BITS 48
#define FXT_PACKED_TIME_MAX ((1ULL << FXT_PACKED_TIME_BITS) - 1)
#define FXT_PACKED_TYPE_SHIFT 28
#define FXT_PACKED_NAME_MASK ((1u << FXT_PACKED_TYPE_SHIFT) - 1)
struct fxt_packed {
	uint64_t bd;		/* bits 0..47: ns since t0; bits 48..63: the caller's, ignored */
	uint32_t nk;		/* bits 0..27: string id; bits 28..31: enum fxt_event_type (or
				 * the caller's own kinds, never passed here) */
	uint32_t dur;		/* FXT_EVENT_COMPLETE: length in ns */
};
int fxt_events_id(struct fxt_writer *w, uint32_t thread, uint32_t cat, uint64_t t0,
		  const struct fxt_packed *ev, unsigned n);
/* The sanitised text behind a string id ("" for unknown ids). */
const char *fxt_string(const struct fxt_writer *w, uint32_t id);

struct fxt_stats {
	uint64_t records;		/* FXT records written (text mode: slices) */
	uint64_t bytes;			/* output bytes, after compression */
	uint64_t string_records;	/* string records (first definitions and re-definitions) */
	uint64_t strings_recycled;	/* string indices taken from a least recently used string */
	uint64_t thread_records;	/* thread records */
	uint64_t threads_recycled;	/* thread indices taken from a least recently used thread */
	uint64_t names_fixed;		/* names with invalid UTF-8 replaced */
	uint64_t names_cut;		/* names cut at FXT_MAX_NAME_LEN */
	uint64_t ts_clamped;		/* timestamps before opts.time_base, written as 0 */
};
void fxt_writer__stats(const struct fxt_writer *w, struct fxt_stats *out);

/*
 * Sanitise `in` into `out` (room for FXT_MAX_NAME_LEN + 1 bytes, NUL-terminated) as names
 * are written: valid UTF-8, at most FXT_MAX_NAME_LEN bytes. Returns the length; sets
 * *fixed / *cut (either may be NULL) when bytes were replaced / the name was cut.
 */
unsigned fxt_sanitize(const char *in, char *out, bool *fixed, bool *cut);

#endif /* PTBPF_FXT_H */
