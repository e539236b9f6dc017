/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Fuchsia Trace Format writer (decoder/fxt.c). Facts: ../shared/notes/fxt.md.
 *
 * Callers pass absolute times in nanoseconds; the writer subtracts opts.time_base so the
 * earliest event of the capture is at 0 (Perfetto holds times as doubles) and records
 * the base in the trace. Strings and threads are interned by the writer (FXT string
 * indices 1..32767 and thread indices 1..255, recycled); callers never see FXT indices.
 * Every function returns 0 or a negative errno; after an I/O error every later call
 * returns the same error, and fxt_writer__close() reports it.
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
	FXT_ARG_BOOL,
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
/* Flushes, closes and frees; returns the first error seen (e.g. -ENOSPC). NULL-safe. */
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

#endif /* PTBPF_FXT_H */
