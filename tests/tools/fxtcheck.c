// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fxtcheck: the tests' reader and validator of Fuchsia Trace Format files, written from
 * the format's specification (doc/fxt.md) and from what Perfetto's importer does with
 * slices (doc/fxt.md, "How Perfetto reads it"), independent of ptbpf's writer.
 *
 *   fxtcheck FILE [--strict] [--stacks | --events] [--allow-anonymous-end]
 *                 [--perfetto-ns] [--max-issues N]
 *
 * FILE may be gzip-compressed (detected by content); "-" reads stdin.
 * Default output: a summary (records by type, providers, string and thread tables,
 * threads, duration events, time span, warnings, the first error).
 * --stacks prints, per thread, one line per duration slice in begin order,
 * "DEPTH NAME BEGIN_NS END_NS" (END_NS "-" when never ended), after a line
 * "# thread pid=P tid=T name=NAME"; backslash, newline, CR and tab in names are escaped.
 * Depth follows Perfetto's slice stack: complete events are closed-open intervals, but
 * zero-length ones at the same time stack.
 * --events lists, tab-separated, what a viewer shows: "process PID NAME", "thread PID
 * TID NAME" (kernel objects), then per thread its slices as --stacks orders them, "slice
 * PID TID DEPTH BEGIN_NS END_NS NAME", and its instants, "instant PID TID TS_NS NAME",
 * each followed by its arguments, "arg KEY VALUE" (integers in decimal, doubles %.17g,
 * bools true/false). tests/perfetto compares this with what Perfetto imports.
 * --strict turns warnings into errors. Exit status: 0 valid, 1 invalid, 2 usage or I/O.
 *
 * Errors (a record with one is skipped, framing goes on): wrong-magic, zero-size,
 * overrun, truncated, size-mismatch, reserved-bits, undefined-string, undefined-thread,
 * arg-size, utf8, padding, bad-value, timestamp-overflow, gzip, time-order (slice-track
 * events going back in time on a thread), end-without-begin, end-mismatch, nesting
 * (slices that overlap without nesting).
 * Warnings: unclosed, unknown-type, ignored-record, extension, string-too-long,
 * dropped-records, async, flow, perfetto-compat (valid FXT that Perfetto mishandles:
 * depth > 512, koids above 32 bits, a thread object without a "process" koid...).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "utf8_check.h"

#define FXT_MAGIC 0x0016547846040010ULL
#define FXT_MAGIC_SWAPPED 0x1000044678541600ULL
#define NS_PER_SEC 1000000000ULL
#define PERFETTO_MAX_DEPTH 512		/* Perfetto's SliceTracker::kMaxDepth */
#define SPEC_MAX_STRING 32000		/* the specification's practical string limit */
#define MAX_PROVIDERS 64

enum { ARG_NULL, ARG_I32, ARG_U32, ARG_I64, ARG_U64, ARG_DOUBLE, ARG_STRING, ARG_POINTER,
       ARG_KOID, ARG_BOOL, ARG_BLOB };
static const char *const arg_type_names[] = { "null", "int32", "uint32", "int64", "uint64",
					      "double", "string", "pointer", "koid", "bool",
					      "blob" };
static const char *const event_names[] = { "instant", "counter", "duration_begin",
					   "duration_end", "duration_complete", "async_begin",
					   "async_instant", "async_end", "flow_begin",
					   "flow_step", "flow_end" };
static const char *const record_names[16] = { "metadata", "initialization", "string",
					      "thread", "event", "blob", "userspace_object",
					      "kernel_object", "scheduling", "log", NULL, NULL,
					      NULL, NULL, NULL, "large" };

/* A string kept for the whole run (names repeat: one copy each). */
static const char *intern(const char *s, size_t len)
{
	static char **slots;
	static size_t cap, used;
	uint64_t h = 1469598103934665603ULL;
	size_t i;
	char *copy;

	if (used * 2 >= cap) {
		size_t ncap = cap ? cap * 2 : 4096;
		char **n = calloc(ncap, sizeof(*n));

		if (!n) {
			fprintf(stderr, "fxtcheck: out of memory\n");
			exit(2);
		}
		for (i = 0; i < cap; i++) {
			if (!slots[i])
				continue;
			uint64_t g = 1469598103934665603ULL;
			for (const char *p = slots[i]; *p; p++)
				g = (g ^ (uint8_t)*p) * 1099511628211ULL;
			size_t j = g & (ncap - 1);
			while (n[j])
				j = (j + 1) & (ncap - 1);
			n[j] = slots[i];
		}
		free(slots);
		slots = n;
		cap = ncap;
	}
	for (i = 0; i < len; i++)
		h = (h ^ (uint8_t)s[i]) * 1099511628211ULL;
	for (i = h & (cap - 1); slots[i]; i = (i + 1) & (cap - 1))
		if (!strncmp(slots[i], s, len) && !slots[i][len])
			return slots[i];
	copy = strndup(s, len);
	if (!copy) {
		fprintf(stderr, "fxtcheck: out of memory\n");
		exit(2);
	}
	slots[i] = copy;
	used++;
	return copy;
}

static void *grow_array(void *arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *n;

	if (need <= *cap)
		return arr;
	ncap = *cap ? *cap * 2 : 16;
	while (ncap < need)
		ncap *= 2;
	n = realloc(arr, ncap * elem);
	if (!n) {
		fprintf(stderr, "fxtcheck: out of memory\n");
		exit(2);
	}
	*cap = ncap;
	return n;
}

struct provider {
	uint32_t id;
	const char *name;
	const char *strings[0x8000];	/* string table: index -> text, NULL if undefined */
	bool thread_defined[256];
	uint64_t thread_pid[256], thread_tid[256];
	uint64_t ticks_per_second;	/* 1e9 (1 tick = 1 ns) until an initialization record */
	bool has_base;			/* the 4-word initialization record of magic-trace */
	uint64_t base_ticks, base_time_ns;
};

struct frame {
	char kind;			/* 'B' begin/end pair, 'X' complete event */
	const char *name, *cat;
	uint64_t begin, end;		/* ns; end valid when has_end */
	bool has_end;
	int depth;			/* Perfetto's depth at push (0 = outermost) */
	size_t off;			/* file offset of the record that began it */
	long rec;			/* its record index */
	long listed;			/* index in thread.frames (--stacks), or -1 */
	const char *args;		/* "arg\tKEY\tVALUE\n" lines (--events), or NULL */
};

struct instant {
	uint64_t pid, tid, ts;		/* ts in ns */
	const char *name, *args;	/* args as in struct frame */
};

struct thread {
	uint64_t pid, tid;
	struct frame *stack;
	size_t nstack, capstack;
	struct frame *frames;		/* every slice in begin order (--stacks only) */
	size_t nframes, capframes;
	bool has_last;
	uint64_t last_ns;
	size_t last_off;
	long events, begins, ends, pairs, completes;
	int max_depth;
	bool depth_warned;
};

struct koid_name {
	uint64_t koid, pid;		/* pid: a thread's "process" argument */
	bool has_pid;
	const char *name;
};

struct count {
	const char *name;
	long n;
};

struct async_key {
	uint64_t pid, id;
	const char *cat, *name;
	long open;
};

struct arg {
	const char *name;
	int type;
	uint64_t value;
	const char *str;		/* ARG_STRING's text */
};

struct checker {
	const uint8_t *data;
	size_t len;
	bool strict, stacks, events, anonymous_end, perfetto_ns, gzipped;
	long max_issues;
	const char *source;
	long n_errors, n_warnings;
	char **errors, **warnings;	/* the first max_issues of each, formatted */
	size_t nerr_kept, nwarn_kept;
	struct provider *providers[MAX_PROVIDERS];
	size_t nproviders;
	struct provider *prov;
	struct thread *threads;
	size_t nthreads, capthreads;
	struct koid_name *thread_names, *process_names;
	size_t nthread_names, capthread_names, nprocess_names, capprocess_names;
	struct count *counts;
	size_t ncounts, capcounts;
	struct count *instants;
	size_t ninstants, capinstants;
	struct instant *instant_list;	/* --events */
	size_t ninstant_list, capinstant_list;
	struct async_key *asyncs;
	size_t nasyncs, capasyncs;
	uint64_t *flows;
	size_t nflows, capflows;
	bool has_time;
	uint64_t first_ns, last_ns;
	long rec_index, records;
	size_t rec_off;
	const char *rec_type;
	long strings_defined, strings_redefined, max_string_index;
	long threads_defined, threads_redefined;
	long unclosed;
	uint64_t *koid_warned;
	size_t nkoid_warned, capkoid_warned;
	char compat_warned[8][24];
	/* the error of the record being read */
	bool rec_failed;
};

/* A bounded cursor over one record or one argument. */
struct cur {
	size_t pos, end, base;
	const char *code;		/* error code when the content overruns */
	const char *ctx;		/* "record" or "argument" */
};

static void issue_at(struct checker *ck, bool warning, const char *code, size_t off,
		     long rec, const char *type, const char *fmt, va_list ap)
{
	char msg[1024], line[1400], where[32];

	if (warning && ck->strict)
		warning = false;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (rec >= 0)
		snprintf(where, sizeof(where), "record #%ld", rec);
	else
		snprintf(where, sizeof(where), "end of trace");
	snprintf(line, sizeof(line), "offset 0x%zx (%zu), %s [%s]: %s: %s", off, off, where,
		 type, code, msg);
	if (warning) {
		ck->n_warnings++;
		if ((long)ck->nwarn_kept < ck->max_issues) {
			ck->warnings = realloc(ck->warnings, (ck->nwarn_kept + 1) * sizeof(char *));
			ck->warnings[ck->nwarn_kept++] = strdup(line);
		}
	} else {
		ck->n_errors++;
		if ((long)ck->nerr_kept < ck->max_issues) {
			ck->errors = realloc(ck->errors, (ck->nerr_kept + 1) * sizeof(char *));
			ck->errors[ck->nerr_kept++] = strdup(line);
		}
	}
}

__attribute__((format(printf, 4, 5)))
static void issue(struct checker *ck, bool warning, const char *code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	issue_at(ck, warning, code, ck->rec_off, ck->rec_index, ck->rec_type, fmt, ap);
	va_end(ap);
}

/* An error inside the record: reported, and the rest of the record is skipped. */
__attribute__((format(printf, 3, 4)))
static int rec_error(struct checker *ck, const char *code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	issue_at(ck, false, code, ck->rec_off, ck->rec_index, ck->rec_type, fmt, ap);
	va_end(ap);
	ck->rec_failed = true;
	return -EINVAL;
}

static void compat_once(struct checker *ck, int key, const char *msg)
{
	if (ck->compat_warned[key][0])
		return;
	ck->compat_warned[key][0] = 1;
	issue(ck, true, "perfetto-compat", "%s", msg);
}

static void count_add(struct count **arr, size_t *n, size_t *cap, const char *name)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if ((*arr)[i].name == name) {
			(*arr)[i].n++;
			return;
		}
	*arr = grow_array(*arr, cap, *n + 1, sizeof(**arr));
	(*arr)[*n].name = name;
	(*arr)[(*n)++].n = 1;
}

static void count_record(struct checker *ck, const char *type)
{
	ck->rec_type = intern(type, strlen(type));
	count_add(&ck->counts, &ck->ncounts, &ck->capcounts, ck->rec_type);
}

static int word(struct checker *ck, struct cur *c, const char *what, uint64_t *out)
{
	if (c->pos + 8 > c->end)
		return rec_error(ck, c->code,
				 "%s: needs word %zu (0-based) but the %s declares only %zu words",
				 what, (c->pos - c->base) / 8, c->ctx, (c->end - c->base) / 8);
	memcpy(out, ck->data + c->pos, 8);
	c->pos += 8;
	return 0;
}

/* A stream of `len` bytes padded to words; *out (interned) when it is text. */
static int stream(struct checker *ck, struct cur *c, size_t len, const char *what, bool text,
		  const char **out)
{
	size_t padded = (len + 7) & ~(size_t)7, i;
	const uint8_t *p = ck->data + c->pos;
	long bad;

	if (c->pos + padded > c->end)
		return rec_error(ck, c->code,
				 "%s: %zu-byte stream (%zu words) starting at word %zu overruns the %s (%zu words declared)",
				 what, len, padded / 8, (c->pos - c->base) / 8, c->ctx,
				 (c->end - c->base) / 8);
	for (i = len; i < padded; i++)
		if (p[i])
			return rec_error(ck, "padding",
					 "%s: non-zero padding after the %zu-byte stream", what,
					 len);
	c->pos += padded;
	if (!text)
		return 0;
	bad = utf8_invalid_at(p, len);
	if (bad >= 0)
		return rec_error(ck, "utf8", "%s: invalid UTF-8 at byte %ld of the %zu-byte string",
				 what, bad, len);
	if (out)
		*out = intern((const char *)p, len);
	return 0;
}

static int string_ref(struct checker *ck, struct cur *c, uint16_t ref, const char *what,
		      const char **out)
{
	*out = intern("", 0);	/* interned: names compare by pointer */
	if (!ref)
		return 0;
	if (ref & 0x8000) {
		size_t n = ref & 0x7fff;

		if (n > SPEC_MAX_STRING)
			issue(ck, true, "string-too-long",
			      "%s: inline string of %zu bytes exceeds %d", what, n,
			      SPEC_MAX_STRING);
		return stream(ck, c, n, what, true, out);
	}
	if (!ck->prov->strings[ref])
		return rec_error(ck, "undefined-string",
				 "%s: string ref index %u was never defined by a string record (provider %u)",
				 what, ref, ck->prov->id);
	*out = ck->prov->strings[ref];
	return 0;
}

static void check_koid(struct checker *ck, uint64_t koid)
{
	size_t i;

	if (koid < (1ULL << 32))
		return;
	for (i = 0; i < ck->nkoid_warned; i++)
		if (ck->koid_warned[i] == koid)
			return;
	ck->koid_warned = grow_array(ck->koid_warned, &ck->capkoid_warned,
				     ck->nkoid_warned + 1, sizeof(uint64_t));
	ck->koid_warned[ck->nkoid_warned++] = koid;
	issue(ck, true, "perfetto-compat",
	      "koid %#llx does not fit in 32 bits; Perfetto truncates pids/tids to uint32",
	      (unsigned long long)koid);
}

static int thread_ref(struct checker *ck, struct cur *c, uint8_t ref, const char *what,
		      uint64_t *pid, uint64_t *tid)
{
	char label[64];

	if (!ref) {
		snprintf(label, sizeof(label), "%s process koid", what);
		if (word(ck, c, label, pid))
			return -EINVAL;
		snprintf(label, sizeof(label), "%s thread koid", what);
		if (word(ck, c, label, tid))
			return -EINVAL;
		check_koid(ck, *pid);
		check_koid(ck, *tid);
		return 0;
	}
	if (!ck->prov->thread_defined[ref])
		return rec_error(ck, "undefined-thread",
				 "%s: thread ref index %u was never defined by a thread record (provider %u)",
				 what, ref, ck->prov->id);
	*pid = ck->prov->thread_pid[ref];
	*tid = ck->prov->thread_tid[ref];
	return 0;
}

static int reserved(struct checker *ck, uint64_t value, const char *what)
{
	if (value)
		return rec_error(ck, "reserved-bits", "reserved bits %s must be zero (found %#llx)",
				 what, (unsigned long long)value);
	return 0;
}

/* Perfetto's tick conversion (integer math with a truncated 2^32-scaled multiplier). */
static bool perfetto_ticks_to_ns(uint64_t ticks, uint64_t tps, uint64_t *ns)
{
	unsigned __int128 mult, hi = ticks >> 32, lo = ticks & 0xffffffff, res;

	if (!tps)
		return false;
	mult = (uint64_t)(NS_PER_SEC << 32) / tps;
	res = hi * mult;
	if (hi && res >> 64)
		return false;
	res = (uint64_t)(res + lo * NS_PER_SEC / tps);
	if (res >> 63)
		return false;
	*ns = (uint64_t)res;
	return true;
}

static int to_ns(struct checker *ck, uint64_t ticks, const char *what, uint64_t *ns)
{
	uint64_t tps = ck->prov->ticks_per_second;
	bool ok;

	if (ck->perfetto_ns) {
		ok = perfetto_ticks_to_ns(ticks, tps, ns);
	} else {
		unsigned __int128 v = (unsigned __int128)ticks * NS_PER_SEC / tps;

		ok = !(v >> 63);
		*ns = (uint64_t)v;
	}
	if (!ok)
		return rec_error(ck, "timestamp-overflow",
				 "%s %llu ticks at %llu ticks/s does not fit in int64 ns", what,
				 (unsigned long long)ticks, (unsigned long long)tps);
	if (!ck->has_time || *ns < ck->first_ns)
		ck->first_ns = *ns;
	if (!ck->has_time || *ns > ck->last_ns)
		ck->last_ns = *ns;
	ck->has_time = true;
	return 0;
}

/* Up to 15 arguments into args[] (their names interned). */
static int read_args(struct checker *ck, struct cur *c, unsigned nargs, struct arg *args)
{
	unsigned i;

	for (i = 0; i < nargs; i++) {
		size_t a_off = c->pos;
		uint64_t ah, hi, w;
		unsigned atype, asize;
		struct cur sub;
		char label[96];
		const char *s;

		snprintf(label, sizeof(label), "argument %u/%u header", i + 1, nargs);
		if (word(ck, c, label, &ah))
			return -EINVAL;
		atype = ah & 0xf;
		asize = (ah >> 4) & 0xfff;
		hi = ah >> 32;
		snprintf(label, sizeof(label), "argument %u/%u (%s%s)", i + 1, nargs,
			 atype <= ARG_BLOB ? arg_type_names[atype] : "type",
			 atype <= ARG_BLOB ? "" : "?");
		if (!asize)
			return rec_error(ck, "arg-size", "%s: argument size is 0 words", label);
		if (a_off + asize * 8 > c->end)
			return rec_error(ck, "arg-size",
					 "%s: declares %u words but only %zu words remain in the record",
					 label, asize, (c->end - a_off) / 8);
		sub = (struct cur){ .pos = c->pos, .end = a_off + asize * 8, .base = a_off,
				    .code = "arg-size", .ctx = "argument" };
		if (string_ref(ck, &sub, (ah >> 16) & 0xffff, label, &args[i].name))
			return -EINVAL;
		args[i].type = atype;
		args[i].value = 0;
		switch (atype) {
		case ARG_NULL:
			if (reserved(ck, hi, "[32..63] of a null argument"))
				return -EINVAL;
			break;
		case ARG_I32:
		case ARG_U32:
			args[i].value = hi;
			break;
		case ARG_I64:
		case ARG_U64:
		case ARG_DOUBLE:
		case ARG_POINTER:
		case ARG_KOID:
			if (reserved(ck, hi, "[32..63] of a 64-bit argument") ||
			    word(ck, &sub, "argument value", &w))
				return -EINVAL;
			args[i].value = w;
			break;
		case ARG_STRING:
			if (reserved(ck, hi >> 16, "[48..63] of a string argument") ||
			    string_ref(ck, &sub, hi & 0xffff, "string argument value", &s))
				return -EINVAL;
			args[i].str = s;
			break;
		case ARG_BOOL:
			if (reserved(ck, hi >> 1, "[33..63] of a bool argument"))
				return -EINVAL;
			args[i].value = hi & 1;
			break;
		case ARG_BLOB:
			if (stream(ck, &sub, hi, "blob argument payload", false, NULL))
				return -EINVAL;
			break;
		default:
			issue(ck, true, "unknown-type",
			      "%s: argument type %u is not defined by the spec; skipped using its size (%u words)",
			      label, atype, asize);
			sub.pos = sub.end;
		}
		if (sub.pos != sub.end)
			return rec_error(ck, "arg-size",
					 "%s '%s': header declares %u words but its content is %zu words",
					 label, args[i].name, asize, (sub.pos - a_off) / 8);
		c->pos = sub.end;
	}
	return 0;
}

/* ---- slices: Perfetto's per-thread stack ----------------------------------------------- */

static struct thread *thread_state(struct checker *ck, uint64_t pid, uint64_t tid)
{
	static size_t last;
	struct thread *t;
	size_t i;

	if (last < ck->nthreads && ck->threads[last].pid == pid && ck->threads[last].tid == tid)
		return &ck->threads[last];
	for (i = 0; i < ck->nthreads; i++)
		if (ck->threads[i].pid == pid && ck->threads[i].tid == tid)
			return &ck->threads[last = i];
	ck->threads = grow_array(ck->threads, &ck->capthreads, ck->nthreads + 1,
				 sizeof(*ck->threads));
	t = &ck->threads[ck->nthreads];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->tid = tid;
	last = ck->nthreads++;
	return t;
}

/* Finished complete slices leave the stack (Perfetto's MaybeCloseStack): a complete
 * slice is [begin, end), but zero-length ones at the same time stack. */
static void pop_complete(struct thread *t, uint64_t ts, bool new_zero_length)
{
	while (t->nstack) {
		struct frame *f = &t->stack[t->nstack - 1];

		if (f->kind != 'X')
			break;
		if (f->end < ts || (f->end == ts && !(f->end == f->begin && new_zero_length)))
			t->nstack--;
		else
			break;
	}
}

static void push(struct checker *ck, struct thread *t, struct frame f)
{
	f.depth = (int)t->nstack;
	f.listed = -1;
	if (ck->stacks || ck->events) {
		t->frames = grow_array(t->frames, &t->capframes, t->nframes + 1, sizeof(f));
		f.listed = (long)t->nframes;
		t->frames[t->nframes++] = f;
	}
	t->stack = grow_array(t->stack, &t->capstack, t->nstack + 1, sizeof(f));
	t->stack[t->nstack++] = f;
	if (f.depth + 1 > t->max_depth) {
		t->max_depth = f.depth + 1;
		if (t->max_depth > PERFETTO_MAX_DEPTH && !t->depth_warned) {
			t->depth_warned = true;
			issue(ck, true, "perfetto-compat",
			      "thread pid=%llu tid=%llu: slice depth %d exceeds Perfetto's maximum of %d; deeper slices are dropped by Perfetto",
			      (unsigned long long)t->pid, (unsigned long long)t->tid,
			      t->max_depth, PERFETTO_MAX_DEPTH);
		}
	}
}

static void on_async(struct checker *ck, unsigned et, uint64_t pid, const char *cat,
		     const char *name, uint64_t id)
{
	struct async_key *k = NULL;
	size_t i;

	for (i = 0; i < ck->nasyncs; i++)
		if (ck->asyncs[i].pid == pid && ck->asyncs[i].id == id &&
		    ck->asyncs[i].cat == cat && ck->asyncs[i].name == name)
			k = &ck->asyncs[i];
	if (et == 5) {
		if (!k) {
			ck->asyncs = grow_array(ck->asyncs, &ck->capasyncs, ck->nasyncs + 1,
						sizeof(*k));
			k = &ck->asyncs[ck->nasyncs++];
			*k = (struct async_key){ .pid = pid, .id = id, .cat = cat, .name = name };
		}
		k->open++;
	} else if (!k || !k->open) {
		issue(ck, true, "async", "async %s '%s' (category '%s') id %llu without a matching begin",
		      et == 6 ? "instant" : "end", name, cat, (unsigned long long)id);
	} else if (et == 7) {
		k->open--;
	}
}

static void on_flow(struct checker *ck, unsigned et, uint64_t id)
{
	size_t i;

	for (i = 0; i < ck->nflows; i++)
		if (ck->flows[i] == id)
			break;
	if (et == 8) {
		if (i == ck->nflows) {
			ck->flows = grow_array(ck->flows, &ck->capflows, ck->nflows + 1,
					       sizeof(uint64_t));
			ck->flows[ck->nflows++] = id;
		}
	} else if (i == ck->nflows) {
		issue(ck, true, "flow", "flow %s id %llu without a flow begin",
		      et == 9 ? "step" : "end", (unsigned long long)id);
	} else if (et == 10) {
		ck->flows[i] = ck->flows[--ck->nflows];
	}
}

static void put_escaped_buf(char **p, size_t *left, const char *s)
{
	for (; *s && *left > 2; s++) {
		const char *e = *s == '\\' ? "\\\\" : *s == '\n' ? "\\n" : *s == '\r' ? "\\r" :
				*s == '\t' ? "\\t" : NULL;

		if (e) {
			*(*p)++ = e[0];
			*(*p)++ = e[1];
			*left -= 2;
		} else {
			*(*p)++ = *s;
			(*left)--;
		}
	}
	**p = 0;
}

/* The arguments as --events lists them (interned), or NULL when there are none. */
static const char *format_args(const struct arg *args, unsigned nargs)
{
	char buf[16 * 2200], *p = buf, val[64];
	size_t left = sizeof(buf);
	unsigned i;

	if (!nargs)
		return NULL;
	for (i = 0; i < nargs; i++) {
		const char *v = val;
		union {
			uint64_t u;
			double d;
		} dv = { .u = args[i].value };

		switch (args[i].type) {
		case ARG_NULL: v = "null"; break;
		case ARG_I32: snprintf(val, sizeof(val), "%d", (int32_t)args[i].value); break;
		case ARG_I64: snprintf(val, sizeof(val), "%lld", (long long)args[i].value); break;
		case ARG_DOUBLE: snprintf(val, sizeof(val), "%.17g", dv.d); break;
		case ARG_STRING: v = args[i].str; break;
		case ARG_BOOL: v = args[i].value ? "true" : "false"; break;
		case ARG_BLOB: v = "(blob)"; break;
		default:
			snprintf(val, sizeof(val), "%llu", (unsigned long long)args[i].value);
		}
		if (left < 8)
			break;
		p = stpcpy(p, "arg\t");
		left -= 4;
		put_escaped_buf(&p, &left, args[i].name);
		if (left < 4)
			break;
		p = stpcpy(p, "\t");
		left--;
		put_escaped_buf(&p, &left, v);
		if (left > 2) {
			*p++ = '\n';
			*p = 0;
			left--;
		}
	}
	return intern(buf, (size_t)(p - buf));
}

static void on_event(struct checker *ck, unsigned et, uint64_t pid, uint64_t tid,
		     const char *cat, const char *name, uint64_t ts, uint64_t end_ns,
		     uint64_t extra, const struct arg *args, unsigned nargs, size_t off)
{
	struct thread *t = thread_state(ck, pid, tid);
	unsigned long long p = pid, d = tid;
	struct frame *top;
	unsigned i;

	t->events++;
	if (et == 0)
		count_add(&ck->instants, &ck->ninstants, &ck->capinstants, name);
	if (et == 0 && ck->events) {
		ck->instant_list = grow_array(ck->instant_list, &ck->capinstant_list,
					      ck->ninstant_list + 1, sizeof(struct instant));
		ck->instant_list[ck->ninstant_list++] = (struct instant){
			.pid = pid, .tid = tid, .ts = ts, .name = name,
			.args = format_args(args, nargs) };
	}
	/* Slice-track events must come in time order per thread; counters, async and flow
	 * events live on other tracks and may come late (readers sort them). */
	if (et <= 4 && et != 1) {
		if (t->has_last && ts < t->last_ns)
			issue(ck, false, "time-order",
			      "thread pid=%llu tid=%llu: timestamp %llu ns is earlier than the previous slice-track event's %llu ns (record at offset 0x%zx)",
			      p, d, (unsigned long long)ts, (unsigned long long)t->last_ns,
			      t->last_off);
		else
			t->has_last = true, t->last_ns = ts, t->last_off = off;
	}
	switch (et) {
	case 2:
		pop_complete(t, ts, false);
		t->begins++;
		push(ck, t, (struct frame){ .kind = 'B', .name = name, .cat = cat, .begin = ts,
					   .off = off, .rec = ck->rec_index,
					   .args = ck->events ? format_args(args, nargs) : NULL });
		break;
	case 3:
		t->ends++;
		pop_complete(t, ts, false);
		if (t->nstack && t->stack[t->nstack - 1].kind == 'X') {
			top = &t->stack[t->nstack - 1];
			issue(ck, false, "nesting",
			      "thread pid=%llu tid=%llu: duration end '%s' at %llu ns falls inside complete event '%s' [%llu, %llu] ns that began after the slice being closed (partial overlap)",
			      p, d, name, (unsigned long long)ts, top->name,
			      (unsigned long long)top->begin, (unsigned long long)top->end);
			while (t->nstack && t->stack[t->nstack - 1].kind == 'X')
				t->nstack--;
		}
		if (!t->nstack) {
			issue(ck, false, "end-without-begin",
			      "thread pid=%llu tid=%llu: duration end '%s' (category '%s') at %llu ns with no open duration begin",
			      p, d, name, cat, (unsigned long long)ts);
			return;
		}
		top = &t->stack[t->nstack - 1];
		if ((top->name != name || top->cat != cat) &&
		    !(ck->anonymous_end && !*name && !*cat))
			issue(ck, false, "end-mismatch",
			      "thread pid=%llu tid=%llu: duration end '%s' (category '%s') at %llu ns does not match the innermost open begin '%s' (category '%s') (begun at %llu ns, offset 0x%zx)",
			      p, d, name, cat, (unsigned long long)ts, top->name, top->cat,
			      (unsigned long long)top->begin, top->off);
		if (top->listed >= 0) {
			t->frames[top->listed].end = ts;
			t->frames[top->listed].has_end = true;
		}
		t->nstack--;
		t->pairs++;
		if (t->nstack && t->stack[t->nstack - 1].kind == 'X' &&
		    t->stack[t->nstack - 1].end < ts) {
			struct frame *x = &t->stack[t->nstack - 1];

			issue(ck, false, "nesting",
			      "thread pid=%llu tid=%llu: slice '%s' [%llu, %llu] ns ends after its enclosing complete event '%s' [%llu, %llu] ns",
			      p, d, top->name, (unsigned long long)top->begin,
			      (unsigned long long)ts, x->name, (unsigned long long)x->begin,
			      (unsigned long long)x->end);
		}
		break;
	case 4:
		if (end_ns < ts) {
			issue(ck, false, "bad-value",
			      "thread pid=%llu tid=%llu: complete event '%s' ends (%llu ns) before it begins (%llu ns)",
			      p, d, name, (unsigned long long)end_ns, (unsigned long long)ts);
			return;
		}
		t->completes++;
		pop_complete(t, ts, end_ns == ts);
		if (t->nstack && t->stack[t->nstack - 1].kind == 'X' &&
		    t->stack[t->nstack - 1].end < end_ns) {
			top = &t->stack[t->nstack - 1];
			issue(ck, false, "nesting",
			      "thread pid=%llu tid=%llu: complete event '%s' [%llu, %llu] ns partially overlaps enclosing complete event '%s' [%llu, %llu] ns",
			      p, d, name, (unsigned long long)ts, (unsigned long long)end_ns,
			      top->name, (unsigned long long)top->begin,
			      (unsigned long long)top->end);
		}
		push(ck, t, (struct frame){ .kind = 'X', .name = name, .cat = cat, .begin = ts,
					   .end = end_ns, .has_end = true, .off = off,
					   .rec = ck->rec_index,
					   .args = ck->events ? format_args(args, nargs) : NULL });
		break;
	case 1:
		if (!nargs)
			compat_once(ck, 0, "counter event without arguments (no values to plot)");
		for (i = 0; i < nargs; i++)
			if (args[i].type < ARG_I32 || args[i].type > ARG_DOUBLE)
				compat_once(ck, 1, "a counter has a non-numeric argument; Perfetto ignores it");
		break;
	case 5:
	case 6:
	case 7:
		on_async(ck, et, pid, cat, name, extra);
		break;
	case 8:
	case 9:
	case 10:
		on_flow(ck, et, extra);
		break;
	}
}

/* ---- records --------------------------------------------------------------------------- */

static struct provider *provider_new(struct checker *ck, uint32_t id, const char *name)
{
	struct provider *p;
	size_t i;

	for (i = 0; i < ck->nproviders; i++)
		if (ck->providers[i]->id == id) {
			free(ck->providers[i]);
			break;
		}
	if (i == MAX_PROVIDERS)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p) {
		fprintf(stderr, "fxtcheck: out of memory\n");
		exit(2);
	}
	p->id = id;
	p->name = name;
	p->ticks_per_second = NS_PER_SEC;	/* no initialization record: 1 tick = 1 ns */
	ck->providers[i] = p;
	if (i == ck->nproviders)
		ck->nproviders++;
	return p;
}

static int r_metadata(struct checker *ck, uint64_t h, struct cur *c)
{
	unsigned mtype = (h >> 16) & 0xf;
	uint32_t id = (h >> 20) & 0xffffffff;
	const char *name;
	size_t i;

	switch (mtype) {
	case 1:
		count_record(ck, "metadata.provider_info");
		if (reserved(ck, h >> 60, "[60..63] of provider info") ||
		    stream(ck, c, (h >> 52) & 0xff, "provider name", true, &name))
			return -EINVAL;
		ck->prov = provider_new(ck, id, name);
		if (!ck->prov)
			return rec_error(ck, "bad-value", "more than %d providers", MAX_PROVIDERS);
		return 0;
	case 2:
		count_record(ck, "metadata.provider_section");
		if (reserved(ck, h >> 52, "[52..63] of provider section"))
			return -EINVAL;
		for (i = 0; i < ck->nproviders; i++)
			if (ck->providers[i]->id == id) {
				ck->prov = ck->providers[i];
				return 0;
			}
		issue(ck, true, "perfetto-compat",
		      "provider section for provider id %u with no preceding provider info record (Perfetto drops the following records)",
		      id);
		ck->prov = provider_new(ck, id, "");
		if (!ck->prov)
			return rec_error(ck, "bad-value", "more than %d providers", MAX_PROVIDERS);
		return 0;
	case 3:
		count_record(ck, "metadata.provider_event");
		if (reserved(ck, h >> 56, "[56..63] of provider event"))
			return -EINVAL;
		if (!((h >> 52) & 0xf))
			issue(ck, true, "dropped-records",
			      "provider %u reports its buffer filled up: records were likely dropped",
			      id);
		else
			issue(ck, true, "unknown-type", "provider event id %u is not defined",
			      (unsigned)((h >> 52) & 0xf));
		return 0;
	case 4:
		if ((h >> 20) & 0xf) {
			count_record(ck, "metadata.trace_info");
			issue(ck, true, "unknown-type", "trace info type %u is not defined; skipped",
			      (unsigned)((h >> 20) & 0xf));
			c->pos = c->end;
			return 0;
		}
		count_record(ck, "metadata.magic");
		if (h != FXT_MAGIC)
			return rec_error(ck, "wrong-magic",
					 "malformed magic number record 0x%016llx (expected 0x%016llx, exactly 1 word)",
					 (unsigned long long)h, FXT_MAGIC);
		return 0;
	default:
		count_record(ck, "metadata.unknown");
		issue(ck, true, "unknown-type", "metadata type %u is not defined; skipped", mtype);
		c->pos = c->end;
		return 0;
	}
}

static int r_init(struct checker *ck, uint64_t h, struct cur *c, size_t size)
{
	uint64_t tps;

	count_record(ck, "initialization");
	if (reserved(ck, h >> 16, "[16..63] of initialization record") ||
	    word(ck, c, "ticks per second", &tps))
		return -EINVAL;
	if (!tps)
		return rec_error(ck, "bad-value", "initialization record: ticks per second is 0");
	ck->prov->ticks_per_second = tps;
	if (size == 4) {
		/* magic-trace's extension (janestreet/tracing): base ticks and base time
		 * (ns since the Unix epoch) follow. */
		if (word(ck, c, "base ticks", &ck->prov->base_ticks) ||
		    word(ck, c, "base time", &ck->prov->base_time_ns))
			return -EINVAL;
		ck->prov->has_base = true;
	} else if (size > 2) {
		issue(ck, true, "extension", "initialization record has %zu extra words beyond the spec",
		      size - 2);
		c->pos = c->end;
	}
	return 0;
}

static int r_string(struct checker *ck, uint64_t h, struct cur *c)
{
	unsigned idx = (h >> 16) & 0x7fff, len = (h >> 32) & 0x7fff;
	const char *s;
	char what[48];

	count_record(ck, "string");
	snprintf(what, sizeof(what), "string record (index %u)", idx);
	if (reserved(ck, (h >> 31) & 1, "[31] of string record") ||
	    reserved(ck, (h >> 47) & 1, "[47] of string record") ||
	    reserved(ck, h >> 48, "[48..63] of string record") ||
	    stream(ck, c, len, what, true, &s))
		return -EINVAL;
	if (len > SPEC_MAX_STRING)
		issue(ck, true, "string-too-long", "string of %u bytes exceeds %d", len,
		      SPEC_MAX_STRING);
	if (!idx) {
		issue(ck, true, "ignored-record",
		      "string record for index 0 (reserved for the empty string) must be ignored");
		return 0;
	}
	if (ck->prov->strings[idx])
		ck->strings_redefined++;
	else
		ck->strings_defined++;
	if ((long)idx > ck->max_string_index)
		ck->max_string_index = idx;
	ck->prov->strings[idx] = s;
	return 0;
}

static int r_thread(struct checker *ck, uint64_t h, struct cur *c)
{
	unsigned idx = (h >> 16) & 0xff;
	uint64_t pid, tid;

	count_record(ck, "thread");
	if (reserved(ck, h >> 24, "[24..63] of thread record") ||
	    word(ck, c, "process koid", &pid) || word(ck, c, "thread koid", &tid))
		return -EINVAL;
	check_koid(ck, pid);
	check_koid(ck, tid);
	if (!idx) {
		issue(ck, true, "ignored-record",
		      "thread record for index 0 (reserved for inline threads) must be ignored");
		return 0;
	}
	if (ck->prov->thread_defined[idx])
		ck->threads_redefined++;
	else
		ck->threads_defined++;
	ck->prov->thread_defined[idx] = true;
	ck->prov->thread_pid[idx] = pid;
	ck->prov->thread_tid[idx] = tid;
	return 0;
}

static int r_event(struct checker *ck, uint64_t h, struct cur *c, size_t off)
{
	unsigned et = (h >> 16) & 0xf, nargs = (h >> 20) & 0xf;
	uint64_t ticks, pid, tid, extra = 0, ts, end_ns = 0;
	const char *cat, *name;
	struct arg args[16];
	char type[32];

	if (et <= 10)
		snprintf(type, sizeof(type), "event.%s", event_names[et]);
	else
		snprintf(type, sizeof(type), "event.type%u", et);
	count_record(ck, type);
	if (word(ck, c, "timestamp", &ticks) ||
	    thread_ref(ck, c, (h >> 24) & 0xff, "thread", &pid, &tid) ||
	    string_ref(ck, c, (h >> 32) & 0xffff, "category", &cat) ||
	    string_ref(ck, c, (h >> 48) & 0xffff, "name", &name) ||
	    read_args(ck, c, nargs, args))
		return -EINVAL;
	if (et > 10) {
		issue(ck, true, "unknown-type", "event type %u is not defined by the spec; skipped", et);
		c->pos = c->end;
		return 0;
	}
	/* counter, complete, async and flow events end with one more word */
	if (et == 1 || et >= 4) {
		if (word(ck, c, "event data word", &extra))
			return -EINVAL;
	}
	if (to_ns(ck, ticks, "timestamp", &ts))
		return -EINVAL;
	if (et == 4 && to_ns(ck, extra, "end timestamp", &end_ns))
		return -EINVAL;
	on_event(ck, et, pid, tid, cat, name, ts, end_ns, extra, args, nargs, off);
	return 0;
}

static int r_blob(struct checker *ck, uint64_t h, struct cur *c)
{
	const char *name;
	unsigned type = (h >> 48) & 0xff;

	count_record(ck, "blob");
	if (reserved(ck, (h >> 47) & 1, "[47] of blob record") ||
	    reserved(ck, h >> 56, "[56..63] of blob record") ||
	    string_ref(ck, c, (h >> 16) & 0xffff, "blob name", &name) ||
	    stream(ck, c, (h >> 32) & 0x7fff, "blob payload", false, NULL))
		return -EINVAL;
	if (type < 1 || type > 3)
		issue(ck, true, "unknown-type", "blob type %u is not defined", type);
	return 0;
}

static int r_userspace(struct checker *ck, uint64_t h, struct cur *c)
{
	uint64_t ptr, pid, tid;
	const char *name;
	struct arg args[16];
	unsigned tref = (h >> 16) & 0xff;

	count_record(ck, "userspace_object");
	if (reserved(ck, h >> 44, "[44..63] of userspace object record") ||
	    word(ck, c, "pointer", &ptr))
		return -EINVAL;
	if (!tref) {
		if (word(ck, c, "process koid", &pid))
			return -EINVAL;
		check_koid(ck, pid);
	} else if (thread_ref(ck, c, tref, "process", &pid, &tid)) {
		return -EINVAL;
	}
	if (string_ref(ck, c, (h >> 24) & 0xffff, "object name", &name) ||
	    read_args(ck, c, (h >> 40) & 0xf, args))
		return -EINVAL;
	return 0;
}

static void name_koid(struct koid_name **arr, size_t *n, size_t *cap, uint64_t koid,
		      const char *name, bool has_pid, uint64_t pid)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if ((*arr)[i].koid == koid)
			break;
	if (i == *n) {
		*arr = grow_array(*arr, cap, *n + 1, sizeof(**arr));
		(*n)++;
		(*arr)[i].has_pid = false;
	}
	(*arr)[i].koid = koid;
	(*arr)[i].name = name;
	if (has_pid) {
		(*arr)[i].has_pid = true;
		(*arr)[i].pid = pid;
	}
}

static const struct koid_name *find_koid(const struct koid_name *arr, size_t n, uint64_t koid)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (arr[i].koid == koid)
			return &arr[i];
	return NULL;
}

static int r_kernel_object(struct checker *ck, uint64_t h, struct cur *c)
{
	unsigned otype = (h >> 16) & 0xff, nargs = (h >> 40) & 0xf, i;
	const struct arg *proc = NULL;
	struct arg args[16];
	const char *name;
	uint64_t koid;

	count_record(ck, "kernel_object");
	if (reserved(ck, h >> 44, "[44..63] of kernel object record") ||
	    word(ck, c, "koid", &koid) ||
	    string_ref(ck, c, (h >> 24) & 0xffff, "object name", &name) ||
	    read_args(ck, c, nargs, args))
		return -EINVAL;
	if (otype == 1) {		/* ZX_OBJ_TYPE_PROCESS */
		check_koid(ck, koid);
		name_koid(&ck->process_names, &ck->nprocess_names, &ck->capprocess_names, koid,
			  name, false, 0);
	} else if (otype == 2) {	/* ZX_OBJ_TYPE_THREAD */
		check_koid(ck, koid);
		for (i = 0; i < nargs; i++)
			if (!strcmp(args[i].name, "process"))
				proc = &args[i];
		if (!proc)
			issue(ck, true, "perfetto-compat",
			      "thread kernel object %llu ('%s') has no 'process' koid argument; Perfetto attributes it to pid 0",
			      (unsigned long long)koid, name);
		else if (proc->type != ARG_KOID)
			issue(ck, true, "perfetto-compat",
			      "thread kernel object %llu: 'process' argument has type %s, Perfetto requires koid (type 8) and drops the record",
			      (unsigned long long)koid,
			      proc->type <= ARG_BLOB ? arg_type_names[proc->type] : "unknown");
		name_koid(&ck->thread_names, &ck->nthread_names, &ck->capthread_names, koid, name,
			  proc && proc->type == ARG_KOID, proc ? proc->value : 0);
	}
	return 0;
}

static int r_scheduling(struct checker *ck, uint64_t h, struct cur *c)
{
	unsigned stype = h >> 60, state = 0;
	uint64_t ts, ns, a, b;
	struct arg args[16];
	char type[40];

	switch (stype) {
	case 0:
		count_record(ck, "scheduling.legacy_context_switch");
		state = (h >> 24) & 0xf;
		if (word(ck, c, "timestamp", &ts) || to_ns(ck, ts, "timestamp", &ns) ||
		    thread_ref(ck, c, (h >> 28) & 0xff, "outgoing thread", &a, &b) ||
		    thread_ref(ck, c, (h >> 36) & 0xff, "incoming thread", &a, &b))
			return -EINVAL;
		break;
	case 1:
	case 2:
		count_record(ck, stype == 1 ? "scheduling.context_switch" :
					      "scheduling.thread_wakeup");
		if (stype == 1) {
			state = (h >> 36) & 0xf;
			if (reserved(ck, (h >> 40) & 0xfffff, "[40..59] of context switch record"))
				return -EINVAL;
		} else if (reserved(ck, (h >> 36) & 0xffffff, "[36..59] of thread wakeup record")) {
			return -EINVAL;
		}
		if (word(ck, c, "timestamp", &ts) || to_ns(ck, ts, "timestamp", &ns) ||
		    word(ck, c, stype == 1 ? "outgoing thread koid" : "waking thread koid", &a))
			return -EINVAL;
		check_koid(ck, a);
		if (stype == 1) {
			if (word(ck, c, "incoming thread koid", &b))
				return -EINVAL;
			check_koid(ck, b);
		}
		if (read_args(ck, c, (h >> 16) & 0xf, args))
			return -EINVAL;
		break;
	default:
		snprintf(type, sizeof(type), "scheduling.type%u", stype);
		count_record(ck, type);
		issue(ck, true, "unknown-type", "scheduling record type %u is not defined; skipped",
		      stype);
		c->pos = c->end;
		return 0;
	}
	if (state > 5)
		issue(ck, true, "unknown-type", "thread state %u is not defined (0..5)", state);
	return 0;
}

static int r_log(struct checker *ck, uint64_t h, struct cur *c)
{
	uint64_t ts, ns, pid, tid;

	count_record(ck, "log");
	if (reserved(ck, (h >> 31) & 1, "[31] of log record") ||
	    reserved(ck, h >> 40, "[40..63] of log record") ||
	    word(ck, c, "timestamp", &ts) || to_ns(ck, ts, "timestamp", &ns) ||
	    thread_ref(ck, c, (h >> 32) & 0xff, "thread", &pid, &tid) ||
	    stream(ck, c, (h >> 16) & 0x7fff, "log message", true, NULL))
		return -EINVAL;
	return 0;
}

static int r_large(struct checker *ck, uint64_t h, struct cur *c, size_t size)
{
	unsigned ltype = (h >> 36) & 0xf, fmt = (h >> 40) & 0xf;
	uint64_t fh, ts, ns, pid, tid, bsize;
	const char *s;
	struct arg args[16];
	char type[32];

	if (size >= 4096)
		compat_once(ck, 2, "large record of >= 4096 words: Perfetto reads record sizes from bits [4..15] only and will lose framing here");
	if (ltype) {
		snprintf(type, sizeof(type), "large.type%u", ltype);
		count_record(ck, type);
		issue(ck, true, "unknown-type", "large record type %u is not defined; skipped", ltype);
		c->pos = c->end;
		return 0;
	}
	snprintf(type, sizeof(type), "large.blob.format%u", fmt);
	count_record(ck, type);
	if (reserved(ck, h >> 44, "[44..63] of large blob record"))
		return -EINVAL;
	if (fmt > 1) {
		issue(ck, true, "unknown-type", "large blob format %u is not defined; skipped", fmt);
		c->pos = c->end;
		return 0;
	}
	if (word(ck, c, "format header", &fh))
		return -EINVAL;
	if (fmt == 0) {
		if (reserved(ck, fh >> 44, "[44..63] of large blob format header") ||
		    string_ref(ck, c, fh & 0xffff, "category", &s) ||
		    string_ref(ck, c, (fh >> 16) & 0xffff, "name", &s) ||
		    word(ck, c, "timestamp", &ts) || to_ns(ck, ts, "timestamp", &ns) ||
		    thread_ref(ck, c, (fh >> 36) & 0xff, "thread", &pid, &tid) ||
		    read_args(ck, c, (fh >> 32) & 0xf, args))
			return -EINVAL;
	} else if (reserved(ck, fh >> 32, "[32..63] of large blob format header") ||
		   string_ref(ck, c, fh & 0xffff, "category", &s) ||
		   string_ref(ck, c, (fh >> 16) & 0xffff, "name", &s)) {
		return -EINVAL;
	}
	if (word(ck, c, "blob size", &bsize) ||
	    stream(ck, c, bsize, "blob payload", false, NULL))
		return -EINVAL;
	return 0;
}

static void finish(struct checker *ck)
{
	size_t i, j;

	for (i = 0; i < ck->nthreads; i++) {
		struct thread *t = &ck->threads[i];

		for (j = 0; j < t->nstack; j++) {
			struct frame *f = &t->stack[j];

			if (f->kind != 'B')
				continue;
			ck->unclosed++;
			ck->rec_off = f->off;
			ck->rec_index = f->rec;
			ck->rec_type = "event.duration_begin";
			issue(ck, true, "unclosed",
			      "thread pid=%llu tid=%llu: duration begin '%s' (category '%s') at %llu ns (depth %d) is never ended",
			      (unsigned long long)t->pid, (unsigned long long)t->tid, f->name,
			      f->cat, (unsigned long long)f->begin, f->depth);
		}
	}
	ck->rec_off = ck->len;
	ck->rec_index = -1;
	ck->rec_type = "end-of-trace";
	for (i = 0; i < ck->nasyncs; i++)
		if (ck->asyncs[i].open > 0)
			issue(ck, true, "async", "async '%s' (category '%s') id %llu (pid %llu) never ended",
			      ck->asyncs[i].name, ck->asyncs[i].cat,
			      (unsigned long long)ck->asyncs[i].id,
			      (unsigned long long)ck->asyncs[i].pid);
	for (i = 0; i < ck->nflows; i++)
		issue(ck, true, "flow", "flow id %llu never ended", (unsigned long long)ck->flows[i]);
}

static void run(struct checker *ck)
{
	size_t off = 0, n = ck->len;

	ck->rec_index = -1;
	ck->prov = provider_new(ck, 0, "");
	if (!n) {
		ck->rec_index = 0;
		ck->rec_type = "-";
		issue(ck, false, "truncated", "empty input: no magic number record");
		finish(ck);
		return;
	}
	while (off < n) {
		uint64_t h;
		unsigned rtype;
		size_t size;
		struct cur c;
		int err = 0;

		ck->rec_index++;
		ck->rec_off = off;
		if (n - off < 8) {
			ck->rec_type = "-";
			issue(ck, false, "truncated",
			      "file ends with a partial word: %zu trailing bytes (records are whole 8-byte words)",
			      n - off);
			break;
		}
		memcpy(&h, ck->data + off, 8);
		rtype = h & 0xf;
		size = (h >> 4) & (rtype == 15 ? 0xffffffffULL : 0xfff);
		ck->rec_type = record_names[rtype] ? record_names[rtype] : "unknown";
		if (!ck->rec_index && h != FXT_MAGIC) {
			issue(ck, false, "wrong-magic",
			      "first record must be the magic number record 0x%016llx (bytes 10 00 04 46 78 54 16 00); found 0x%016llx%s",
			      FXT_MAGIC, (unsigned long long)h,
			      h == FXT_MAGIC_SWAPPED ? " (byte-swapped: big-endian traces are not supported)" : "");
			break;
		}
		if (!size) {
			issue(ck, false, "zero-size", "record header 0x%016llx declares a size of 0 words",
			      (unsigned long long)h);
			break;
		}
		if (size > (n - off) / 8) {
			issue(ck, false, "overrun",
			      "record declares %zu words (%zu bytes) but only %zu bytes remain in the file (truncated trailing record or bad size field)",
			      size, size * 8, n - off);
			break;
		}
		ck->records++;
		ck->rec_failed = false;
		c = (struct cur){ .pos = off + 8, .end = off + size * 8, .base = off,
				  .code = "size-mismatch", .ctx = "record" };
		switch (rtype) {
		case 0: err = r_metadata(ck, h, &c); break;
		case 1: err = r_init(ck, h, &c, size); break;
		case 2: err = r_string(ck, h, &c); break;
		case 3: err = r_thread(ck, h, &c); break;
		case 4: err = r_event(ck, h, &c, off); break;
		case 5: err = r_blob(ck, h, &c); break;
		case 6: err = r_userspace(ck, h, &c); break;
		case 7: err = r_kernel_object(ck, h, &c); break;
		case 8: err = r_scheduling(ck, h, &c); break;
		case 9: err = r_log(ck, h, &c); break;
		case 15: err = r_large(ck, h, &c, size); break;
		default: {
			char type[24];

			snprintf(type, sizeof(type), "unknown.type%u", rtype);
			count_record(ck, type);
			issue(ck, true, "unknown-type",
			      "record type %u is not defined by the spec; skipped (%zu words)", rtype,
			      size);
			c.pos = c.end;
		}
		}
		if (!err && c.pos != c.end)
			issue(ck, false, "size-mismatch",
			      "record header declares %zu words but its content is %zu words", size,
			      (c.pos - off) / 8);
		off += size * 8;
	}
	finish(ck);
}

/* ---- output ---------------------------------------------------------------------------- */

static void put_escaped(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		default: fputc(*s, f);
		}
	}
}

static int cmp_thread(const void *a, const void *b)
{
	const struct thread *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int cmp_count(const void *a, const void *b)
{
	return strcmp(((const struct count *)a)->name, ((const struct count *)b)->name);
}

static const char *thread_name(const struct checker *ck, uint64_t tid)
{
	const struct koid_name *k = find_koid(ck->thread_names, ck->nthread_names, tid);

	return k ? k->name : NULL;
}

static void print_stacks(const struct checker *ck, FILE *f)
{
	size_t i, j;

	for (i = 0; i < ck->nthreads; i++) {
		const struct thread *t = &ck->threads[i];
		const char *name = thread_name(ck, t->tid);

		if (!t->nframes)
			continue;
		fprintf(f, "# thread pid=%llu tid=%llu name=", (unsigned long long)t->pid,
			(unsigned long long)t->tid);
		put_escaped(f, name ? name : "");
		fputc('\n', f);
		for (j = 0; j < t->nframes; j++) {
			const struct frame *fr = &t->frames[j];

			fprintf(f, "%d ", fr->depth);
			put_escaped(f, fr->name);
			fprintf(f, " %llu ", (unsigned long long)fr->begin);
			if (fr->has_end)
				fprintf(f, "%llu\n", (unsigned long long)fr->end);
			else
				fputs("-\n", f);
		}
	}
}

static void print_events(const struct checker *ck, FILE *f)
{
	size_t i, j;

	for (i = 0; i < ck->nprocess_names; i++) {
		fprintf(f, "process\t%llu\t", (unsigned long long)ck->process_names[i].koid);
		put_escaped(f, ck->process_names[i].name);
		fputc('\n', f);
	}
	for (i = 0; i < ck->nthread_names; i++) {
		const struct koid_name *k = &ck->thread_names[i];

		fprintf(f, "thread\t%llu\t%llu\t", (unsigned long long)(k->has_pid ? k->pid : 0),
			(unsigned long long)k->koid);
		put_escaped(f, k->name);
		fputc('\n', f);
	}
	for (i = 0; i < ck->nthreads; i++) {
		const struct thread *t = &ck->threads[i];

		for (j = 0; j < t->nframes; j++) {
			const struct frame *fr = &t->frames[j];

			fprintf(f, "slice\t%llu\t%llu\t%d\t%llu\t", (unsigned long long)t->pid,
				(unsigned long long)t->tid, fr->depth,
				(unsigned long long)fr->begin);
			if (fr->has_end)
				fprintf(f, "%llu\t", (unsigned long long)fr->end);
			else
				fputs("-\t", f);
			put_escaped(f, fr->name);
			fputc('\n', f);
			if (fr->args)
				fputs(fr->args, f);
		}
	}
	for (i = 0; i < ck->ninstant_list; i++) {
		const struct instant *in = &ck->instant_list[i];

		fprintf(f, "instant\t%llu\t%llu\t%llu\t", (unsigned long long)in->pid,
			(unsigned long long)in->tid, (unsigned long long)in->ts);
		put_escaped(f, in->name);
		fputc('\n', f);
		if (in->args)
			fputs(in->args, f);
	}
}

static void print_thread_line(FILE *f, uint64_t pid, uint64_t tid, const char *name,
			      const char *process, const struct thread *t)
{
	fprintf(f, "  pid=%llu tid=%llu name=%s%s%s process=%s%s%s: ", (unsigned long long)pid,
		(unsigned long long)tid, name ? "'" : "", name ? name : "None", name ? "'" : "",
		process ? "'" : "", process ? process : "None", process ? "'" : "");
	if (!t) {
		fputs("0 events, B/E/X=0/0/0, max depth 0\n", f);
		return;
	}
	size_t open = 0, i;

	for (i = 0; i < t->nstack; i++)
		open += t->stack[i].kind == 'B';
	fprintf(f, "%ld events, B/E/X=%ld/%ld/%ld, max depth %d", t->events, t->begins, t->ends,
		t->completes, t->max_depth);
	if (open)
		fprintf(f, ", %zu open at end", open);
	fputc('\n', f);
}

static void print_summary(struct checker *ck, FILE *f)
{
	long begins = 0, ends = 0, completes = 0, pairs = 0;
	int max_depth = 0;
	size_t i, nthreads_listed = ck->nthreads;
	const struct koid_name *k;

	if (ck->ncounts)
		qsort(ck->counts, ck->ncounts, sizeof(*ck->counts), cmp_count);
	fprintf(f, "fxtcheck: %s: %s%s\n", ck->source, ck->n_errors ? "INVALID" : "VALID",
		ck->strict ? " (strict)" : "");
	fprintf(f, "size: %zu bytes%s, records: %ld\n", ck->len,
		ck->gzipped ? " (after gzip decompression)" : "", ck->records);
	fputs("record counts:\n", f);
	for (i = 0; i < ck->ncounts; i++)
		fprintf(f, "  %-36s %ld\n", ck->counts[i].name, ck->counts[i].n);
	for (i = 0; i < ck->nproviders; i++) {
		const struct provider *p = ck->providers[i];

		fprintf(f, "provider %u '%s': ticks_per_second=%llu", p->id, p->name,
			(unsigned long long)p->ticks_per_second);
		if (p->has_base)
			fprintf(f, " base_ticks=%llu base_time_ns=%llu",
				(unsigned long long)p->base_ticks,
				(unsigned long long)p->base_time_ns);
		fputc('\n', f);
	}
	fprintf(f, "string table: %ld indices defined, %ld redefinitions, max index %ld; thread table: %ld defined, %ld redefinitions\n",
		ck->strings_defined, ck->strings_redefined, ck->max_string_index,
		ck->threads_defined, ck->threads_redefined);
	for (i = 0; i < ck->nthread_names; i++) {
		k = &ck->thread_names[i];
		size_t j;

		for (j = 0; j < ck->nthreads; j++)
			if (ck->threads[j].tid == k->koid)
				break;
		nthreads_listed += j == ck->nthreads;
	}
	fprintf(f, "threads: %zu\n", nthreads_listed);
	for (i = 0; i < ck->nthreads; i++) {
		const struct thread *t = &ck->threads[i];

		k = find_koid(ck->process_names, ck->nprocess_names, t->pid);
		print_thread_line(f, t->pid, t->tid, thread_name(ck, t->tid), k ? k->name : NULL, t);
		begins += t->begins;
		ends += t->ends;
		completes += t->completes;
		pairs += t->pairs;
		if (t->max_depth > max_depth)
			max_depth = t->max_depth;
	}
	for (i = 0; i < ck->nthread_names; i++) {
		const struct koid_name *tn = &ck->thread_names[i];
		uint64_t pid = tn->has_pid ? tn->pid : 0;
		size_t j;

		for (j = 0; j < ck->nthreads; j++)
			if (ck->threads[j].tid == tn->koid)
				break;
		if (j < ck->nthreads)
			continue;
		k = find_koid(ck->process_names, ck->nprocess_names, pid);
		print_thread_line(f, pid, tn->koid, tn->name, k ? k->name : NULL, NULL);
	}
	fprintf(f, "duration events: begin=%ld end=%ld complete=%ld slices=%ld max_depth=%d unclosed=%ld\n",
		begins, ends, completes, pairs + completes, max_depth, ck->unclosed);
	if (!ck->has_time)
		fputs("time span: no timestamped records\n", f);
	else
		fprintf(f, "time span: %llu ns (first %llu ns, last %llu ns, %s tick conversion)\n",
			(unsigned long long)(ck->last_ns - ck->first_ns),
			(unsigned long long)ck->first_ns, (unsigned long long)ck->last_ns,
			ck->perfetto_ns ? "perfetto" : "exact");
	if (ck->ninstants) {
		fputs("instants:", f);
		for (i = 0; i < ck->ninstants; i++)
			fprintf(f, " '%s'=%ld", ck->instants[i].name, ck->instants[i].n);
		fputc('\n', f);
	}
	fprintf(f, "warnings: %ld, errors: %ld\n", ck->n_warnings, ck->n_errors);
	for (i = 0; i < ck->nwarn_kept && i < 20; i++)
		fprintf(f, "  warning: %s\n", ck->warnings[i]);
	if (ck->nerr_kept) {
		fprintf(f, "error: %s\n", ck->errors[0]);
		if (ck->n_errors > 1)
			fprintf(f, "  (%ld more error(s))\n", ck->n_errors - 1);
	}
}

/* The whole input, gzip-decompressed when it is gzip (zlib reads plain files as they are). */
static int read_input(const char *path, uint8_t **data, size_t *len, bool *gzipped)
{
	gzFile gz = strcmp(path, "-") ? gzopen(path, "rb") : gzdopen(dup(0), "rb");
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = NULL;
	int got, err = 0;

	if (!gz)
		return errno ? -errno : -ENOMEM;
	buf = malloc(cap);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		if (n == cap) {
			uint8_t *nb = realloc(buf, cap *= 2);

			if (!nb) {
				err = -ENOMEM;
				goto out;
			}
			buf = nb;
		}
		got = gzread(gz, buf + n, (unsigned)(cap - n > (1u << 30) ? 1u << 30 : cap - n));
		if (got < 0) {
			int zerr;

			gzerror(gz, &zerr);
			err = zerr == Z_ERRNO ? -errno : -EBADMSG;
			goto out;
		}
		if (!got)
			break;
		n += got;
	}
	/* a gzip stream cut short reads as a short file: zlib says so only here */
	{
		int zerr;

		gzerror(gz, &zerr);
		if (zerr != Z_OK) {
			err = zerr == Z_ERRNO ? -errno : -EBADMSG;
			goto out;
		}
	}
	*gzipped = !gzdirect(gz);
out:
	gzclose(gz);
	if (err) {
		free(buf);
		return err;
	}
	*data = buf;
	*len = n;
	return 0;
}

/* Everything the checker allocated (the interned strings stay: they live as long as the
 * process), so that a leak checker run over the tests sees none. */
static void checker_free(struct checker *ck)
{
	size_t i;

	for (i = 0; i < ck->nproviders; i++)
		free(ck->providers[i]);
	for (i = 0; i < ck->nthreads; i++) {
		free(ck->threads[i].stack);
		free(ck->threads[i].frames);
	}
	free(ck->threads);
	free(ck->thread_names);
	free(ck->process_names);
	free(ck->counts);
	free(ck->instants);
	free(ck->instant_list);
	free(ck->asyncs);
	free(ck->flows);
	free(ck->koid_warned);
	for (i = 0; i < ck->nerr_kept; i++)
		free(ck->errors[i]);
	for (i = 0; i < ck->nwarn_kept; i++)
		free(ck->warnings[i]);
	free(ck->errors);
	free(ck->warnings);
}

static int usage(void)
{
	fprintf(stderr, "usage: fxtcheck FILE [--strict] [--stacks | --events] [--allow-anonymous-end] [--perfetto-ns] [--max-issues N]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct checker ck = { .max_issues = 100 };
	const char *path = NULL;
	uint8_t *data = NULL;
	int i, err;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--strict"))
			ck.strict = true;
		else if (!strcmp(argv[i], "--stacks"))
			ck.stacks = true;
		else if (!strcmp(argv[i], "--events"))
			ck.events = true;
		else if (!strcmp(argv[i], "--allow-anonymous-end"))
			ck.anonymous_end = true;
		else if (!strcmp(argv[i], "--perfetto-ns"))
			ck.perfetto_ns = true;
		else if (!strcmp(argv[i], "--max-issues") && i + 1 < argc)
			ck.max_issues = strtol(argv[++i], NULL, 10) > 0 ? strtol(argv[i], NULL, 10) : 1;
		else if (argv[i][0] == '-' && argv[i][1])
			return usage();
		else if (!path)
			path = argv[i];
		else
			return usage();
	}
	if (!path)
		return usage();
	ck.source = path;
	err = read_input(path, &data, &ck.len, &ck.gzipped);
	if (err == -EBADMSG) {
		/* gzip that does not decompress: the trace is invalid, not unreadable */
		ck.gzipped = true;
		ck.rec_index = 0;
		ck.rec_type = "-";
		ck.prov = provider_new(&ck, 0, "");
		issue(&ck, false, "gzip", "cannot decompress gzip input");
	} else if (err) {
		fprintf(stderr, "fxtcheck: cannot read %s: %s\n", path, strerror(-err));
		return 2;
	} else {
		ck.data = data;
		run(&ck);
	}
	if (ck.nthreads)
		qsort(ck.threads, ck.nthreads, sizeof(*ck.threads), cmp_thread);
	if (ck.stacks || ck.events) {
		if (ck.stacks)
			print_stacks(&ck, stdout);
		else
			print_events(&ck, stdout);
		if (ck.nerr_kept)
			fprintf(stderr, "fxtcheck: INVALID: %s\n", ck.errors[0]);
	} else {
		print_summary(&ck, stdout);
	}
	free(data);
	checker_free(&ck);
	if (fflush(stdout))
		return 2;
	return ck.n_errors ? 1 : 0;
}
