// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Call-stack reconstruction: control-flow events of each thread in, nested FXT slices out.
 * The output rules are in include/callstack.h ("Output"); this explains the machinery.
 *
 * Each thread has an internal stack of frames (struct cs_frame) and a log of slots
 * (struct fxt_packed), one per slice begun in the current epoch, in begin order, plus the
 * end events of slices that are written as begin/end pairs. A frame's slot is filled in
 * when the frame closes: complete event (X) when that is exact, else begin (B) and an END
 * slot appended at that moment, which is the right place in the file for the end event
 * (after everything inside the slice, before anything after it).
 *
 * Outermost frames. The frame at the bottom of the stack when the epoch began, and every
 * frame pushed below everything by a return above the first frame, start at the epoch's
 * start; they are kept apart as "prefix" slots (struct cs_prefix) and written before the
 * log, outermost (found last) first. Such a frame encloses every slot logged before it
 * was found, so a slot's depth in the output is its depth on the internal stack plus the
 * number of prefix frames found after it was logged.
 *
 * X or B/E. Perfetto (SliceTracker::MaybeCloseStack) pops a complete slice when an event
 * arrives at or after its end, unless both are zero-length (those stack, like instants).
 * So a slice is written as X only if it has a non-zero length and nothing inside it (a
 * child's begin, an instant, a child's end event) happens at its end time; frames track
 * the time of the latest such event ("inner"). Everything else is a begin/end pair,
 * which nests exactly whatever the timestamps.
 *
 * Depth limit. Frames deeper than max_depth on the internal stack are not logged (they
 * can only get deeper in the output); the writer pass hides slots whose output depth is
 * above max_depth and renames the one at max_depth "[depth limit]".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "array.h"
#include "callstack.h"

/*
 * Inlined into the event functions: each call or return goes through several of these,
 * and the calls between them cost as much as their work.
 */
#define HOT inline __attribute__((always_inline))

/* Frames below the top that callstack__return() looks at itself for the one returned to. */
#define UNWIND_NEAR 8
/* Frames kept on the internal stack; deeper calls are only counted (runaway recursion). */
#define CS_STACK_LIMIT (1u << 16)
/* Entries of the (pid, address) -> symbol cache, a power of two. */
#define CS_CACHE_SIZE CS_SYM_CACHE_ENTRIES
/* The longest x86 instruction: a return lands at most this far after its call. */
#define X86_MAX_INSN 15

/*
 * A slot is the FXT writer's packed event (struct fxt_packed: 16 bytes, as the log holds
 * every slice of an epoch), so that the log goes to the writer as it is: bits 0..47 of bd
 * ns since the epoch start (begin, or the END's or INSTANT's time), bits 48..63 the depth
 * on the internal stack; nk the writer string id (INSTANT: index in cs->inst) and the
 * kind; dur SLOT_X's length in ns, else 0.
 */
enum slot_kind {
	SLOT_PENDING = 0,			/* an open frame's begin; X or B once it closes */
	SLOT_X = FXT_EVENT_COMPLETE,		/* complete event [begin, begin + dur] */
	SLOT_B = FXT_EVENT_BEGIN,		/* begin event; an END slot follows */
	SLOT_END = FXT_EVENT_END,		/* end event at `begin` */
	SLOT_INSTANT = 4,			/* instant event at `begin`; never to the writer */
};

#define SLOT_KIND_SHIFT FXT_PACKED_TYPE_SHIFT
#define SLOT_NAME_MASK FXT_PACKED_NAME_MASK
#define SLOT_TIME_BITS FXT_PACKED_TIME_BITS
#define SLOT_TIME_MAX FXT_PACKED_TIME_MAX

/* An outermost frame, begun at the epoch start (see the top of the file). */
struct cs_prefix {
	struct fxt_packed s;	/* its slot; begin 0, depth 0 */
	uint32_t found;		/* log length when it was found: it encloses slots before */
};

enum frame_kind {
	FRAME_CALL,		/* made by a call at `site` */
	FRAME_ROOT,		/* outermost: where the epoch began, or a parent found by
				 * returning into it; its call site is unknown */
	FRAME_GAP,		/* [syscall] or [untraced], until tracing resumes */
};

/* Where a frame's slot is: an index in the log, or one of these. */
#define SLOT_NONE	UINT32_MAX		/* not logged: too deep to be shown */
#define SLOT_WRITTEN	(UINT32_MAX - 1)	/* written early as a begin event */
#define SLOT_PREFIX	0x80000000u		/* | index in the prefix array */

struct cs_frame {
	uint64_t site;		/* address of the call instruction that made it; 0 unknown */
	uint64_t func;		/* start address of its function; 0 unknown */
	uint64_t begin;		/* ns, absolute */
	uint64_t called;	/* ns of the call that made it: its begin, or an earlier one
				 * when it replaced its caller's callee by a tail call */
	uint64_t inner;		/* ns of the latest begin, instant or end event inside it
				 * (its own begin while there is none) */
	uint32_t name;		/* writer string id */
	uint32_t slot;		/* see SLOT_NONE and friends */
	enum frame_kind kind;	/* how it was made, hence how it ends */
	uint32_t pad[3];	/* 64 bytes: a frame's address is a shift of its index */
};

struct cs_thread {
	uint32_t pid, tid;	/* the thread's key */
	uint32_t fxt;		/* writer thread id */
	bool live;		/* an epoch is open (it has a root frame) */
	bool written;		/* this epoch was written early: parents are no longer
				 * back-dated to its start */
	uint64_t last;		/* latest timestamp seen, ns; later ones are clamped to it */
	uint64_t t0;		/* start of the epoch, ns */
	struct cs_frame *st;	/* internal stack, st[0] outermost */
	uint32_t depth, capst;	/* frames on it; room for */
	/* the usual cases' room checks in one compare each (see room_update()): a frame at
	 * a depth below depth_room is logged and has room on the stack; the log takes a
	 * slot while nlog is below log_room */
	uint32_t depth_room, log_room;
	uint64_t untracked;	/* frames above CS_STACK_LIMIT, only counted */
	struct fxt_packed *log;	/* this epoch's slots, in file order */
	uint32_t nlog, caplog;	/* slots held; room for */
	/* of the slots held: the deepest begin or end's depth, how many are ends and instants
	 * (write_held() hands the log to the writer whole when no slot needs write_slot()) */
	uint32_t log_deepest, log_ends, log_instants;
	struct cs_prefix *pre;	/* outermost frames, in the order found */
	uint32_t npre, cappre;	/* prefix frames held; room for */
	/* signal delivery (see signal_entry()) */
	bool stopped;		/* tracing is stopped: resume is valid */
	uint8_t nr_sig;		/* handlers entered and not returned from */
	uint64_t resume;	/* where the stopped code would go on; 0 unknown */
	uint64_t sig[8];	/* where each handler returns to (the interrupted code) */
	struct cs_thread *hnext;/* next in the hash bucket */
};

/* An instant event held in a log until it is written. */
struct cs_instant {
	uint32_t name;				/* writer string id */
	unsigned nargs;				/* arguments in args */
	struct fxt_arg args[FXT_MAX_ARGS];	/* names and string values are owned copies */
};

/* (pid, address) -> symbol, direct mapped; 24 bytes so that the cache stays small. */
struct cs_cache_ent {
	uint64_t addr;		/* key; UINT64_MAX for an empty entry */
	uint64_t start;		/* function start; 0 unknown */
	uint32_t pid;		/* key */
	uint32_t name;		/* writer string id of the display name; CACHE_KNOWN set when
				 * the symbolizer knew the address */
};
#define CACHE_KNOWN 0x80000000u

/* What sym_lookup() says about an address. */
struct cs_sym {
	uint32_t name;		/* writer string id: symbol name, or "[unknown @ 0xADDR]" */
	bool known;		/* the symbolizer knew the address */
	uint64_t start;		/* function start; 0 unknown */
};

/* Symbolizer name pointer -> writer string id (names are interned once per pointer). */
struct cs_name_ent {
	const char *ptr;	/* NULL: free entry */
	uint32_t id;		/* writer string id of its text */
};

struct callstack {
	struct fxt_writer *w;		/* where slices go; not ours */
	cs_symbolize_fn symbolize;	/* opts.symbolize, may be NULL */
	void *ctx;			/* opts.ctx */
	unsigned max_depth;	/* shown depths are 0..max_depth (the last one the marker) */
	unsigned max_buffer;	/* slots a thread holds before writing early */
	int err;		/* first error, sticky */

	struct cs_thread **thash;	/* (pid, tid) buckets, chained by hnext */
	uint32_t thmask;		/* buckets - 1 (a power of two) */
	uint32_t nthreads;		/* threads seen */
	struct cs_thread *last_th;	/* the thread of the previous event */

	struct cs_cache_ent *cache;	/* CS_CACHE_SIZE entries, two ways per set */
	struct cs_name_ent *names;	/* open-addressed by pointer */
	uint32_t nmask, nnames;		/* size of names - 1; entries used */

	struct cs_instant **inst;	/* held instants (NULL once written); slots index this */
	uint32_t ninst, capinst;	/* instants made; room for */

	/* writer string ids of the synthetic names */
	uint32_t id_unknown, id_syscall, id_untraced, id_limit, id_error, id_overflow;
	struct cs_stats st;		/* counters and the slowest call, for callstack__stats() */
};

static int fail(struct callstack *cs, int err)
{
	if (err && !cs->err) {
		cs->err = err;
		/* the usual cases, which start from last_th, need no test of cs->err: nothing
		 * sets last_th again once cs->err is set (everything else tests it first) */
		cs->last_th = NULL;
	}
	return err;
}

/* ---- symbols ------------------------------------------------------------------------ */

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ULL ^ b;

	return h ^ (h >> 31);
}

static int name_id(struct callstack *cs, const char *ptr, uint32_t *id)
{
	uint32_t j, i;
	int err;

	for (j = mix((uintptr_t)ptr, 0) & cs->nmask; cs->names[j].ptr; j = (j + 1) & cs->nmask) {
		if (cs->names[j].ptr == ptr) {
			*id = cs->names[j].id;
			return 0;
		}
	}
	err = fxt_intern(cs->w, ptr, id);
	if (err)
		return err;
	if ((cs->nnames + 1) * 2 > cs->nmask + 1) {
		uint32_t size = (cs->nmask + 1) * 2;
		struct cs_name_ent *t = calloc(size, sizeof(*t));

		if (!t)
			return -ENOMEM;
		for (i = 0; i <= cs->nmask; i++) {
			if (!cs->names[i].ptr)
				continue;
			for (j = mix((uintptr_t)cs->names[i].ptr, 0) & (size - 1); t[j].ptr;
			     j = (j + 1) & (size - 1))
				;
			t[j] = cs->names[i];
		}
		free(cs->names);
		cs->names = t;
		cs->nmask = size - 1;
		for (j = mix((uintptr_t)ptr, 0) & cs->nmask; cs->names[j].ptr;
		     j = (j + 1) & cs->nmask)
			;
	}
	cs->names[j].ptr = ptr;
	cs->names[j].id = *id;
	cs->nnames++;
	return 0;
}

/* The symbolizer's answer for `addr`, put in cache entry e. */
static int sym_resolve(struct callstack *cs, uint32_t pid, uint64_t addr,
		       struct cs_cache_ent *e)
{
	struct cs_symbol sym = { 0 };
	uint32_t name;
	char buf[48];
	int err;

	cs->st.sym_misses++;
	if (cs->symbolize && !cs->symbolize(cs->ctx, pid, addr, &sym) && sym.name) {
		err = name_id(cs, sym.name, &name);
		name |= CACHE_KNOWN;
	} else {
		snprintf(buf, sizeof(buf), "[unknown @ 0x%" PRIx64 "]", addr);
		err = fxt_intern(cs->w, buf, &name);
		sym.start = 0;
	}
	if (err)
		return err;
	e->addr = addr;
	e->pid = pid;
	e->name = name;
	e->start = sym.start;
	return 0;
}

/*
 * What is known of `addr`, through the cache: two ways per set, the newer entry first,
 * so that two hot addresses that hash alike do not evict each other.
 */
static HOT int sym_lookup(struct callstack *cs, uint32_t pid, uint64_t addr,
			     struct cs_sym *out)
{
	struct cs_cache_ent *e = &cs->cache[mix(addr, pid) & (CS_CACHE_SIZE - 2)], tmp;
	int err;

	cs->st.sym_lookups++;	/* and misses in sym_resolve(): hits are the rest */
	if (addr == UINT64_MAX) {	/* the empty key: never cached */
		e = &tmp;
		err = sym_resolve(cs, pid, addr, e);
		if (err)
			return err;
	} else if (!(e[0].addr == addr && e[0].pid == pid)) {
		if (e[1].addr == addr && e[1].pid == pid) {
			e = &e[1];
		} else {
			e[1] = e[0];
			err = sym_resolve(cs, pid, addr, e);
			if (err)
				return err;
		}
	}
	out->name = e->name & ~CACHE_KNOWN;
	out->known = e->name & CACHE_KNOWN;
	out->start = e->start;
	return 0;
}

/* ---- threads ------------------------------------------------------------------------ */

static struct cs_thread *thread_find(struct callstack *cs, uint32_t pid, uint32_t tid)
{
	struct cs_thread *th, **b;
	int err;

	b = &cs->thash[mix(pid, tid) & cs->thmask];
	for (th = *b; th; th = th->hnext)
		if (th->pid == pid && th->tid == tid)
			return cs->last_th = th;
	th = calloc(1, sizeof(*th));
	if (!th) {
		fail(cs, -ENOMEM);
		return NULL;
	}
	th->pid = pid;
	th->tid = tid;
	err = fxt_thread_id(cs->w, pid, tid, &th->fxt);
	if (err) {
		free(th);
		fail(cs, err);
		return NULL;
	}
	th->hnext = *b;
	*b = th;
	cs->nthreads++;
	return cs->last_th = th;
}

static HOT struct cs_thread *thread_get(struct callstack *cs, uint32_t pid, uint32_t tid)
{
	struct cs_thread *th = cs->last_th;

	if (th && th->pid == pid && th->tid == tid)
		return th;
	return thread_find(cs, pid, tid);
}

/* Per-thread monotonic time: a timestamp before the thread's latest is raised to it. */
static HOT uint64_t clamp_time(struct callstack *cs, struct cs_thread *th, uint64_t t)
{
	if (t < th->last) {
		cs->st.clamps++;
		return th->last;
	}
	th->last = t;
	return t;
}

static HOT uint64_t slot_time(const struct cs_thread *th, uint64_t t)
{
	uint64_t rel = t - th->t0;

	return rel > SLOT_TIME_MAX ? SLOT_TIME_MAX : rel;
}

static HOT struct fxt_packed make_slot(const struct cs_thread *th, uint64_t t, uint32_t depth,
				enum slot_kind kind, uint32_t name)
{
	struct fxt_packed s;

	s.bd = slot_time(th, t) | (uint64_t)(depth > 0xffff ? 0xffff : depth) << SLOT_TIME_BITS;
	s.nk = (name & SLOT_NAME_MASK) | (uint32_t)kind << SLOT_KIND_SHIFT;
	s.dur = 0;
	return s;
}

/* make_slot() for a depth of at most max_depth (<= CS_MAX_DEPTH): never clamped */
static HOT struct fxt_packed make_slot_shallow(const struct cs_thread *th, uint64_t t,
					       uint32_t depth, enum slot_kind kind, uint32_t name)
{
	struct fxt_packed s;

	s.bd = slot_time(th, t) | (uint64_t)depth << SLOT_TIME_BITS;
	s.nk = (name & SLOT_NAME_MASK) | (uint32_t)kind << SLOT_KIND_SHIFT;
	s.dur = 0;
	return s;
}

static HOT enum slot_kind slot_kind(const struct fxt_packed *s)
{
	return (enum slot_kind)(s->nk >> SLOT_KIND_SHIFT);
}

static HOT void set_kind(struct fxt_packed *s, enum slot_kind kind)
{
	s->nk = (s->nk & SLOT_NAME_MASK) | (uint32_t)kind << SLOT_KIND_SHIFT;
}

/* depth_room and log_room again, after capst, caplog or npre changed. */
static void room_update(const struct callstack *cs, struct cs_thread *th)
{
	th->depth_room = th->capst < cs->max_depth + 1 ? th->capst : cs->max_depth + 1;
	th->log_room = th->npre >= cs->max_buffer ? 0 : cs->max_buffer - th->npre;
	if (th->log_room > th->caplog)
		th->log_room = th->caplog;
}

/* ---- writing ------------------------------------------------------------------------ */

static void instant_free(struct cs_instant *in)
{
	unsigned i;

	if (!in)
		return;
	for (i = 0; i < in->nargs; i++) {
		free((char *)in->args[i].name);
		if (in->args[i].type == FXT_ARG_STRING)
			free((char *)in->args[i].s);
	}
	free(in);
}

/*
 * Writes one slot at output depth `depth`. Outermost frames (`prefix`) were active before
 * the epoch began: argument inferred_start says their start is the epoch's, not theirs.
 * The frame at max_depth is the "[depth limit]" marker; argument function names it.
 */
static int write_slot(struct callstack *cs, struct cs_thread *th, const struct fxt_packed *s,
		      uint32_t depth, bool prefix)
{
	uint64_t t = th->t0 + (s->bd & SLOT_TIME_MAX);
	uint32_t name = s->nk & SLOT_NAME_MASK;
	enum slot_kind kind = slot_kind(s);
	struct fxt_arg args[2];
	struct cs_instant *in;
	unsigned nargs = 0;
	int err;

	if (kind == SLOT_INSTANT) {
		in = cs->inst[name];
		cs->inst[name] = NULL;
		err = in ? fxt_instant_id(cs->w, th->fxt, 0, in->name, t, in->args, in->nargs) : 0;
		instant_free(in);
		return err;
	}
	if (depth > cs->max_depth) {
		if (kind != SLOT_END)
			cs->st.depth_capped++;
		return 0;
	}
	if (kind == SLOT_END)
		return fxt_end_id(cs->w, th->fxt, 0, depth == cs->max_depth ? cs->id_limit : name,
				  t, NULL, 0);
	/* an int32 1, not a bool: Perfetto's FXT importer (v20.1 and later) knows argument
	 * types 0-8 only and shows a bool as "unknown" (doc/fxt.md) */
	if (prefix)
		args[nargs++] = (struct fxt_arg){ .name = "inferred_start", .type = FXT_ARG_INT32,
						  .i = 1 };
	if (depth == cs->max_depth) {
		args[nargs++] = (struct fxt_arg){ .name = "function", .type = FXT_ARG_STRING,
						  .s = fxt_string(cs->w, name) };
		name = cs->id_limit;
	}
	cs->st.slices++;
	if (kind == SLOT_X)
		return fxt_complete_id(cs->w, th->fxt, 0, name, t, t + s->dur, args, nargs);
	return fxt_begin_id(cs->w, th->fxt, 0, name, t, args, nargs);
}

/*
 * Writes what the thread holds: its prefix frames, outermost first, then its log. The
 * log's slices without arguments (all but instants and the depth-limit marker) go to
 * the writer as they are, a run at a time: the same records as write_slot() one by one.
 */
static int write_held(struct callstack *cs, struct cs_thread *th)
{
	uint32_t m = th->npre, i, j = 0, k, run, depth = 0, limit = cs->max_depth;
	uint64_t slices = 0;
	int err = 0;

	if (th->nlog + m > cs->st.max_held)
		cs->st.max_held = th->nlog + m;
	for (i = m; i-- > 0 && !err;)
		err = write_slot(cs, th, &th->pre[i].s, m - 1 - i, true);
	/* no instant, and every slot shallower than the limit even below all prefix frames */
	if (!err && th->nlog && !th->log_instants && th->log_deepest + m < limit) {
		err = fxt_events_id(cs->w, th->fxt, 0, th->t0, th->log, th->nlog);
		slices = th->nlog - th->log_ends;
		k = th->nlog;
	} else {
		k = 0;
	}
	for (; k < th->nlog && !err;) {
		/* the run up to the next slot that needs write_slot() */
		for (run = k; k < th->nlog; k++) {
			const struct fxt_packed *s = &th->log[k];
			enum slot_kind kind = slot_kind(s);

			while (j < m && th->pre[j].found <= k)
				j++;
			depth = (uint32_t)(s->bd >> SLOT_TIME_BITS) + (m - j);
			if (kind == SLOT_INSTANT || depth >= limit)
				break;
			slices += kind != SLOT_END;
		}
		if (k > run)
			err = fxt_events_id(cs->w, th->fxt, 0, th->t0, &th->log[run], k - run);
		if (k < th->nlog && !err)
			err = write_slot(cs, th, &th->log[k++], depth, false);
	}
	cs->st.slices += slices;
	th->nlog = 0;
	th->log_deepest = th->log_ends = th->log_instants = 0;
	th->npre = 0;
	room_update(cs, th);
	return fail(cs, err);
}

/* Too much held: write it now; open frames become begin events, ended when they close. */
static int write_early(struct callstack *cs, struct cs_thread *th)
{
	uint32_t i;

	for (i = 0; i < th->depth; i++) {
		struct cs_frame *f = &th->st[i];

		if (f->slot == SLOT_NONE || f->slot == SLOT_WRITTEN)
			continue;
		if (f->slot & SLOT_PREFIX)
			set_kind(&th->pre[f->slot & ~SLOT_PREFIX].s, SLOT_B);
		else
			set_kind(&th->log[f->slot], SLOT_B);
		f->slot = SLOT_WRITTEN;
	}
	th->written = true;
	cs->st.early_writes++;
	return write_held(cs, th);
}

/*
 * The log grows as an epoch goes on and keeps its memory for the next epochs. Its new
 * pages are populated in one call, not zeroed: faulting them in one by one (as zeroing
 * does) costs a lot in a VM, and a slot is always written before it is read.
 */
static int log_grow(struct cs_thread *th)
{
	const uintptr_t page = 4096;
	uint32_t cap = th->caplog ? th->caplog * 2 : 16;
	struct fxt_packed *log;
	uintptr_t from, to;

	if (th->caplog > UINT32_MAX / 2)
		return -ENOMEM;
	log = realloc(th->log, (size_t)cap * sizeof(*log));
	if (!log)
		return -ENOMEM;
	from = ((uintptr_t)(log + th->caplog) + page - 1) & ~(page - 1);
	to = (uintptr_t)(log + cap) & ~(page - 1);
	if (to > from + 64 * page)
		madvise((void *)from, to - from, MADV_POPULATE_WRITE);	/* a hint */
	th->log = log;
	th->caplog = cap;
	return 0;
}

/* log_append()'s rare cases: too much held, or no room. */
static __attribute__((noinline)) int log_make_room(struct callstack *cs, struct cs_thread *th)
{
	int err;

	if (th->nlog + th->npre >= cs->max_buffer) {
		err = write_early(cs, th);
		if (err)
			return err;
	}
	if (th->nlog == th->caplog) {
		err = log_grow(th);
		if (err)
			return fail(cs, err);
		room_update(cs, th);
	}
	return 0;
}

static HOT int log_append(struct callstack *cs, struct cs_thread *th, struct fxt_packed s,
			  uint32_t *index)
{
	int err;

	if (th->nlog + th->npre >= cs->max_buffer || th->nlog == th->caplog) {
		err = log_make_room(cs, th);
		if (err)
			return err;
	}
	if (index)
		*index = th->nlog;
	th->log[th->nlog++] = s;
	return 0;
}

/* ---- frames ------------------------------------------------------------------------- */

static HOT void note_inner(struct cs_thread *th, uint64_t t)
{
	if (th->depth && th->st[th->depth - 1].inner < t)
		th->st[th->depth - 1].inner = t;
}

static HOT int push(struct callstack *cs, struct cs_thread *th, enum frame_kind kind, uint64_t site,
		uint64_t func, uint32_t name, uint64_t t)
{
	struct cs_frame *f;
	int err;

	if (th->depth >= CS_STACK_LIMIT) {
		th->untracked++;
		cs->st.depth_capped++;
		return 0;
	}
	if (th->depth == th->capst) {
		err = array_grow((void **)&th->st, &th->capst, th->depth + 1, sizeof(*th->st));
		if (err)
			return fail(cs, err);
		room_update(cs, th);
	}
	note_inner(th, t);
	f = &th->st[th->depth];
	f->site = site;
	f->func = func;
	f->begin = t;
	f->called = t;
	f->inner = t;
	f->name = name;
	f->kind = kind;
	f->slot = SLOT_NONE;
	if (th->depth > cs->max_depth) {
		cs->st.depth_capped++;
	} else {
		err = log_append(cs, th, make_slot(th, t, th->depth, SLOT_PENDING, name), &f->slot);
		if (err)
			return err;
		if (th->depth > th->log_deepest)
			th->log_deepest = th->depth;
		/* log_append may have written early: the new frame is then open, not written */
	}
	th->depth++;
	return 0;
}

/* A new outermost frame: back-dated to the epoch start unless the epoch was written early. */
static int push_root(struct callstack *cs, struct cs_thread *th, uint64_t func, uint32_t name,
		     uint64_t t)
{
	struct cs_frame *f;
	int err;

	if (th->written)
		return push(cs, th, FRAME_ROOT, 0, func, name, t);
	err = array_grow((void **)&th->pre, &th->cappre, th->npre + 1, sizeof(*th->pre));
	if (!err)
		err = array_grow((void **)&th->st, &th->capst, 1, sizeof(*th->st));
	if (err)
		return fail(cs, err);
	th->pre[th->npre].s = make_slot(th, th->t0, 0, SLOT_PENDING, name);
	th->pre[th->npre].found = th->nlog;
	f = &th->st[0];
	f->site = 0;
	f->func = func;
	f->begin = th->t0;
	f->called = th->t0;
	f->inner = t;		/* everything logged so far is inside it */
	f->name = name;
	f->kind = FRAME_ROOT;
	f->slot = SLOT_PREFIX | th->npre++;
	th->depth = 1;
	room_update(cs, th);
	return 0;
}

/* Closes the innermost frame at `t`. */
static HOT int pop(struct callstack *cs, struct cs_thread *th, uint64_t t)
{
	struct cs_frame *f = &th->st[th->depth - 1];
	struct fxt_packed *s = NULL;
	bool x = f->inner < t && t - f->begin <= UINT32_MAX;
	int err = 0;

	if (f->slot == SLOT_WRITTEN)
		x = false;
	else if (f->slot == SLOT_NONE)
		x = true;	/* nothing written: nothing for the parent to avoid */
	else if (f->slot & SLOT_PREFIX)
		s = &th->pre[f->slot & ~SLOT_PREFIX].s;
	else
		s = &th->log[f->slot];
	if (s && x) {
		set_kind(s, SLOT_X);
		s->dur = (uint32_t)(t - f->begin);
	} else if (s) {
		set_kind(s, SLOT_B);
	}
	if (!x) {
		err = log_append(cs, th, make_slot(th, t, th->depth - 1, SLOT_END, f->name), NULL);
		if (!err) {
			th->log_ends++;
			if (th->depth - 1 > th->log_deepest)
				th->log_deepest = th->depth - 1;
		}
	}
	th->depth--;
	if (th->depth) {
		struct cs_frame *p = &th->st[th->depth - 1];
		uint64_t in = x ? f->inner : t;

		if (p->inner < in)
			p->inner = in;
	}
	return err;
}

/* pop(), out of line: the usual cases' way out stays small */
static __attribute__((noinline)) int pop_any(struct callstack *cs, struct cs_thread *th,
					     uint64_t t)
{
	return pop(cs, th, t);
}

/*
 * pop()'s usual cases, spelled out: the frame's slot in the log, closed as a complete
 * event (nothing inside it at its end), or as a begin event and an END slot appended
 * with room in the log (a gap of no length: no timing in the trace). False, and nothing
 * done, for anything else (pop()'s).
 */
static HOT bool pop_usual(struct cs_thread *th, uint64_t t)
{
	struct cs_frame *f = &th->st[th->depth - 1];
	uint32_t depth = th->depth - 1;
	struct fxt_packed *s;

	if (f->slot >= SLOT_PREFIX)
		return false;
	s = &th->log[f->slot];
	if (f->inner < t && t - f->begin <= UINT32_MAX) {
		set_kind(s, SLOT_X);
		s->dur = (uint32_t)(t - f->begin);
		th->depth = depth;
		/* a parent's inner is at most its child's begin, hence its inner */
		if (depth)
			f[-1].inner = f->inner;
		return true;
	}
	if (th->nlog >= th->log_room)
		return false;
	set_kind(s, SLOT_B);
	th->log[th->nlog++] = make_slot(th, t, depth, SLOT_END, f->name);
	th->log_ends++;
	if (depth > th->log_deepest)
		th->log_deepest = depth;
	th->depth = depth;
	if (depth)
		f[-1].inner = t;	/* t is the thread's last time (usual_thread()) */
	return true;
}

/* Closes the innermost frame at `t`: pop_usual(), else pop(). */
static HOT int pop_top(struct callstack *cs, struct cs_thread *th, uint64_t t)
{
	return pop_usual(th, t) ? 0 : pop_any(cs, th, t);
}

static int pop_to(struct callstack *cs, struct cs_thread *th, uint32_t depth, uint64_t t)
{
	int err = 0;

	while (th->depth > depth && !err)
		err = pop(cs, th, t);
	return err;
}

/* Starts an epoch at `t` in the function containing `ip`. */
static int epoch_begin(struct callstack *cs, struct cs_thread *th, uint64_t ip, uint64_t t)
{
	struct cs_sym e;
	int err;

	err = sym_lookup(cs, th->pid, ip, &e);
	if (err)
		return fail(cs, err);
	th->live = true;
	th->written = false;
	th->t0 = t;
	th->depth = 0;
	th->untracked = 0;
	th->nlog = th->npre = 0;
	room_update(cs, th);
	th->log_deepest = th->log_ends = th->log_instants = 0;
	return push_root(cs, th, e.start, e.known ? e.name : cs->id_unknown, t);
}

/* Ends the epoch at `t`: every frame closes, everything held is written. */
static int epoch_end(struct callstack *cs, struct cs_thread *th, uint64_t t)
{
	int err;

	if (!th->live)
		return 0;
	err = pop_to(cs, th, 0, t);
	if (!err)
		err = write_held(cs, th);
	th->live = false;
	th->untracked = 0;
	return err;
}

/* Common prologue of flow events: the thread, its clamped time, a live epoch, no open gap. */
static HOT struct cs_thread *enter(struct callstack *cs, uint32_t pid, uint32_t tid, uint64_t ip,
			       uint64_t *t)
{
	struct cs_thread *th;

	if (cs->err)
		return NULL;
	th = thread_get(cs, pid, tid);
	if (!th)
		return NULL;
	*t = clamp_time(cs, th, *t);
	if (!th->live && epoch_begin(cs, th, ip, *t))
		return NULL;
	if (th->depth && th->st[th->depth - 1].kind == FRAME_GAP && pop(cs, th, *t))
		return NULL;
	if (!th->depth && push_root(cs, th, 0, cs->id_unknown, *t))
		return NULL;
	return th;
}

/* A return lands at most one instruction after its call. */
static HOT bool returns_to(uint64_t site, uint64_t to)
{
	return site && to > site && to - site <= X86_MAX_INSN;
}

/*
 * The deepest of frames 0..below-1 whose call returns to `to`, or -1 (frame 0, a root,
 * has no call site and never matches).
 */
static inline int frame_called_at(const struct cs_thread *th, uint32_t below, uint64_t to)
{
	uint32_t i;

	for (i = below; i-- > 0;)
		if (returns_to(th->st[i].site, to))
			return i;
	return -1;
}

/* The deepest of frames 0..below-1 running function `func` (0: unknown, none), or -1. */
static inline int frame_running(const struct cs_thread *th, uint32_t below, uint64_t func)
{
	uint32_t i;

	for (i = below; func && i-- > 0;)
		if (th->st[i].func == func)
			return i;
	return -1;
}

/* ---- the slowest call ------------------------------------------------------------- */

/*
 * Frame i returns at `t`: the summary keeps the longest such call, with its path
 * "a > b > c" (frames 0..i, outermost first, as the trace nests them; cut at the front
 * to fit). Only calls that return to their call site count: a frame closed by an unwind,
 * an error or the end of the data has no measured end.
 */
static void note_return(struct callstack *cs, const struct cs_thread *th, uint32_t i, uint64_t t)
{
	static const char dots[] = "... > ";
	char *buf = cs->st.slowest_path;
	const size_t size = sizeof(cs->st.slowest_path);
	size_t len = 0, l;
	uint32_t k;

	if (th->st[i].kind != FRAME_CALL || t - th->st[i].called <= cs->st.slowest_ns)
		return;
	cs->st.slowest_ns = t - th->st[i].called;
	cs->st.slowest_pid = th->pid;
	cs->st.slowest_tid = th->tid;
	buf[0] = '\0';
	for (k = i + 1; k-- > 0;) {
		const char *name = fxt_string(cs->w, th->st[k].name);
		char tmp[512];

		if (th->st[k].kind == FRAME_GAP)
			continue;
		l = (size_t)snprintf(tmp, sizeof(tmp), "%s%s", name ? name : "[unknown]",
				     len ? " > " : "");
		if (l >= sizeof(tmp))
			l = sizeof(tmp) - 1;
		if (len + l + 1 > size) {
			if (len + sizeof(dots) <= size) {
				memmove(buf + sizeof(dots) - 1, buf, len + 1);
				memcpy(buf, dots, sizeof(dots) - 1);
			}
			return;
		}
		memmove(buf + l, buf, len + 1);
		memcpy(buf, tmp, l);
		len += l;
	}
}

int callstack__note_open_call(struct callstack *cs, uint32_t pid, uint32_t tid, uint64_t t)
{
	struct cs_thread *th;
	uint32_t i;

	if (!cs)
		return -EINVAL;
	if (cs->err)
		return cs->err;
	/* only a thread already seen: no thread is made (nor named in the file) for this */
	for (th = cs->thash[mix(pid, tid) & cs->thmask]; th; th = th->hnext)
		if (th->pid == pid && th->tid == tid)
			break;
	if (!th || !th->live || th->untracked)
		return 0;
	for (i = th->depth; i-- > 0;) {
		if (th->st[i].kind == FRAME_GAP)
			continue;
		if (th->st[i].kind == FRAME_CALL && t > th->st[i].called)
			note_return(cs, th, i, t);
		break;
	}
	return 0;
}

/* ---- signals ------------------------------------------------------------------------- */

/*
 * The kernel enters a signal handler where tracing resumes: not where the stopped code
 * would go on, and at a function's entry. That is a call, made from the interrupted
 * point; the handler returns into the signal trampoline (__restore_rt), which no frame
 * expects, and that return goes back to the interrupted point. A longjmp out of a handler
 * (a jump into a function's body), a decode error or an overflow forgets the handlers.
 * Exec is no signal: the end of the old image's epoch forgets where it would resume.
 */

/* Tracing resumed at `ip`: whether that is a handler's entry (pushed on th->sig). */
static int signal_entry(struct callstack *cs, struct cs_thread *th, uint64_t ip, bool *entered)
{
	struct cs_sym e;
	int err;

	*entered = false;
	if (th->stopped && th->resume && ip != th->resume) {
		err = sym_lookup(cs, th->pid, ip, &e);
		if (err)
			return err;
		if (e.known && e.start == ip) {
			*entered = true;
			if (th->nr_sig < ARRAY_SIZE(th->sig))
				th->sig[th->nr_sig++] = th->resume;
		}
	}
	th->stopped = false;
	return 0;
}

/* ---- the API ------------------------------------------------------------------------ */

/* callstack__call(), every case. */
static __attribute__((noinline)) int call_any(struct callstack *cs, uint32_t pid, uint32_t tid,
					      uint64_t from, uint64_t to, uint64_t t)
{
	struct cs_sym e;
	struct cs_thread *th;
	int err;

	if (!cs)
		return -EINVAL;
	th = enter(cs, pid, tid, from, &t);
	if (!th)
		return cs->err;
	cs->st.calls++;
	err = sym_lookup(cs, pid, to, &e);
	if (err)
		return fail(cs, err);
	return push(cs, th, FRAME_CALL, from, e.start ? e.start : to, e.name, t);
}

/* callstack__return(), every case. */
static __attribute__((noinline)) int return_any(struct callstack *cs, uint32_t pid, uint32_t tid,
						uint64_t from, uint64_t to, uint64_t t)
{
	struct cs_sym e;
	struct cs_thread *th;
	int i, err;

	if (!cs)
		return -EINVAL;
	th = enter(cs, pid, tid, from, &t);
	if (!th)
		return cs->err;
	cs->st.returns++;
	/* a handler's return into the trampoline: back to the interrupted code */
	if (th->nr_sig && frame_called_at(th, th->depth, to) < 0)
		to = th->sig[--th->nr_sig];
	if (th->untracked) {
		th->untracked--;
		return 0;
	}
	if (returns_to(th->st[th->depth - 1].site, to)) {
		note_return(cs, th, th->depth - 1, t);
		return pop(cs, th, t);
	}
	/* landing after the call of a deeper frame: longjmp-like, pop through to it */
	i = frame_called_at(th, th->depth - 1, to);
	if (i >= 0) {
		note_return(cs, th, i, t);
		cs->st.unwinds++;
		return pop_to(cs, th, i, t);
	}
	err = sym_lookup(cs, pid, to, &e);
	if (err)
		return fail(cs, err);
	/* landing inside a deeper frame's function: an unwinder's landing pad */
	i = frame_running(th, th->depth - 1, e.start);
	if (i >= 0) {
		cs->st.unwinds++;
		return pop_to(cs, th, i + 1, t);
	}
	/* above everything seen: the function returned into was active all along */
	cs->st.unknown_parents++;
	if (th->written)
		cs->st.late_parents++;
	err = pop_to(cs, th, 0, t);
	if (!err)
		err = push_root(cs, th, e.start, e.known ? e.name : cs->id_unknown, t);
	return fail(cs, err);
}

/*
 * The thread of the previous event, if the usual case holds for it: no error, an epoch
 * open with a frame on top that is not a gap, and time not going back (nothing to clamp).
 * What enter() does then is nothing but take the time.
 */
static HOT struct cs_thread *usual_thread(struct callstack *cs, uint32_t pid, uint32_t tid,
					  uint64_t t)
{
	struct cs_thread *th = cs ? cs->last_th : NULL;

	/* no test of cs->err (see fail()) nor of th->live: a thread whose epoch is not
	 * open has no frame */
	if (!th || th->pid != pid || th->tid != tid || t < th->last || !th->depth ||
	    th->st[th->depth - 1].kind == FRAME_GAP)
		return NULL;
	return th;
}

/*
 * A call or a return goes through here millions of times: its usual case is spelled out,
 * the same steps as call_any() and return_any() take for it (see usual_thread(); a call
 * whose target is in the symbol cache's first way, its frame logged with room in the
 * log, not logged past the depth limit, or only counted past CS_STACK_LIMIT; a return to
 * the top frame's call site, or only counted); anything else goes to those.
 */
/*
 * A frame begun at `t` on top of another, as push() makes it, without its slot: there is
 * room for it on the stack.
 */
static HOT struct cs_frame *frame_on_top(struct cs_thread *th, enum frame_kind kind,
					 uint64_t site, uint64_t func, uint32_t name, uint64_t t)
{
	struct cs_frame *f = &th->st[th->depth];

	th->last = t;
	/* no frame's inner is later than th->last, and t is not earlier (usual_thread()) */
	f[-1].inner = t;
	f->site = site;
	f->func = func;
	f->begin = t;
	f->called = t;
	f->inner = t;
	f->name = name;
	f->kind = kind;
	return f;
}

/*
 * push()'s usual case: the frame logged, with room on the stack and in the log (depth
 * below th->depth_room, nlog below th->log_room), on top of another.
 */
static HOT void push_logged(struct cs_thread *th, enum frame_kind kind, uint64_t site,
			    uint64_t func, uint32_t name, uint64_t t)
{
	struct cs_frame *f = frame_on_top(th, kind, site, func, name, t);

	f->slot = th->nlog;
	th->log[th->nlog++] = make_slot_shallow(th, t, th->depth, SLOT_PENDING, name);
	if (th->depth > th->log_deepest)
		th->log_deepest = th->depth;
	th->depth++;
}

/* A frame of callstack__call()'s usual case, begun at `t`; not its slot. */
static HOT struct cs_frame *call_frame(struct callstack *cs, struct cs_thread *th,
				       const struct cs_cache_ent *e, uint64_t from,
				       uint64_t to, uint64_t t)
{
	cs->st.calls++;
	cs->st.sym_lookups++;
	return frame_on_top(th, FRAME_CALL, from, e->start ? e->start : to,
			    e->name & ~CACHE_KNOWN, t);
}

/* callstack__call()'s usual case past the depth limit: the frame is not logged. */
static __attribute__((noinline)) int call_deep(struct callstack *cs, struct cs_thread *th,
					       const struct cs_cache_ent *e, uint64_t from,
					       uint64_t to, uint64_t t)
{
	if (th->depth >= CS_STACK_LIMIT) {
		/* runaway recursion: only counted */
		th->last = t;
		cs->st.calls++;
		cs->st.sym_lookups++;
		th->untracked++;
		cs->st.depth_capped++;
		return 0;
	}
	if (th->depth >= th->capst)
		return call_any(cs, th->pid, th->tid, from, to, t);
	call_frame(cs, th, e, from, to, t)->slot = SLOT_NONE;
	cs->st.depth_capped++;
	th->depth++;
	return 0;
}

int callstack__call(struct callstack *cs, uint32_t pid, uint32_t tid, uint64_t from, uint64_t to,
		    uint64_t t)
{
	struct cs_thread *th = usual_thread(cs, pid, tid, t);
	const struct cs_cache_ent *e;

	if (!th || to == UINT64_MAX)
		return call_any(cs, pid, tid, from, to, t);
	e = &cs->cache[mix(to, pid) & (CS_CACHE_SIZE - 2)];
	if (e->addr != to || e->pid != pid)
		return call_any(cs, pid, tid, from, to, t);
	if (th->depth >= th->depth_room || th->nlog >= th->log_room) {
		if (th->depth > cs->max_depth)
			return call_deep(cs, th, e, from, to, t);
		return call_any(cs, pid, tid, from, to, t);
	}
	cs->st.calls++;
	cs->st.sym_lookups++;
	push_logged(th, FRAME_CALL, from, e->start ? e->start : to, e->name & ~CACHE_KNOWN, t);
	return 0;
}

/* callstack__return() for a usual thread, but not its shortest case. */
static __attribute__((noinline)) int return_near(struct callstack *cs, uint32_t pid,
						 uint32_t tid, uint64_t from, uint64_t to,
						 uint64_t t)
{
	struct cs_thread *th = usual_thread(cs, pid, tid, t);
	const struct cs_frame *f;
	uint32_t i, lowest;

	if (!th || (th->untracked && th->nr_sig))
		return return_any(cs, pid, tid, from, to, t);
	if (th->untracked) {
		th->last = t;
		cs->st.returns++;
		th->untracked--;
		return 0;
	}
	/*
	 * To the call site of the top frame, or of one of the few below it (the frames
	 * above it never returned: pop through to it): no handler's return, whatever
	 * handlers are open. Deeper than that, return_any() looks.
	 */
	f = &th->st[th->depth - 1];
	if (returns_to(f->site, to)) {
		th->last = t;
		cs->st.returns++;
		if (t - f->called > cs->st.slowest_ns)
			note_return(cs, th, th->depth - 1, t);
		return pop_top(cs, th, t);
	}
	lowest = th->depth > UNWIND_NEAR ? th->depth - UNWIND_NEAR : 0;
	for (i = th->depth - 1; i > lowest && !returns_to(th->st[i - 1].site, to); i--)
		;
	if (i == lowest)
		return return_any(cs, pid, tid, from, to, t);
	f = &th->st[--i];
	th->last = t;
	cs->st.returns++;
	if (t - f->called > cs->st.slowest_ns)
		note_return(cs, th, i, t);
	cs->st.unwinds++;
	/* pop_to(), inlined: a call less for a few frames */
	do {
		int err = pop_top(cs, th, t);

		if (err)
			return err;
	} while (th->depth > i);
	return 0;
}

/*
 * The usual cases, a return to the call site of the top frame or of one of the few
 * below it that is not the slowest call yet, call nothing but tail calls (return_near()
 * takes the rest, from the start: nothing has changed when it is called).
 */
int callstack__return(struct callstack *cs, uint32_t pid, uint32_t tid, uint64_t from,
		      uint64_t to, uint64_t t)
{
	struct cs_thread *th = usual_thread(cs, pid, tid, t);
	const struct cs_frame *f;
	uint32_t i, lowest;

	if (!th || th->untracked)
		return return_near(cs, pid, tid, from, to, t);
	i = th->depth - 1;
	f = &th->st[i];
	if (!returns_to(f->site, to)) {
		lowest = th->depth > UNWIND_NEAR ? th->depth - UNWIND_NEAR : 0;
		for (; i > lowest && !returns_to(th->st[i - 1].site, to); i--)
			;
		if (i == lowest)
			return return_any(cs, pid, tid, from, to, t);
		f = &th->st[--i];
		if (t - f->called > cs->st.slowest_ns)
			return return_near(cs, pid, tid, from, to, t);
		cs->st.unwinds++;
	} else if (t - f->called > cs->st.slowest_ns) {
		return return_near(cs, pid, tid, from, to, t);
	}
	th->last = t;
	cs->st.returns++;
	do {
		if (!pop_usual(th, t))
			return pop_to(cs, th, i, t);
	} while (th->depth > i);
	return 0;
}

int callstack__jump(struct callstack *cs, uint32_t pid, uint32_t tid, uint64_t from, uint64_t to,
		    uint64_t t)
{
	struct cs_sym e;
	struct cs_thread *th;
	struct cs_frame *top;
	enum frame_kind kind;
	uint64_t site, called;
	int i, err;

	if (!cs)
		return -EINVAL;
	th = enter(cs, pid, tid, from, &t);
	if (!th)
		return cs->err;
	cs->st.jumps++;
	if (th->untracked && !th->nr_sig)
		return 0;
	err = sym_lookup(cs, pid, to, &e);
	if (err)
		return fail(cs, err);
	/* a longjmp out of a handler */
	if (th->nr_sig && !(e.known && e.start == to))
		th->nr_sig = 0;
	if (th->untracked)
		return 0;
	if (e.start == to) {
		/* a function's entry: a tail call, even into a function deeper on the stack */
		cs->st.tail_calls++;
	} else {
		/* longjmp: to the return address of a frame's call, or into a deeper body */
		i = frame_called_at(th, th->depth, to);
		if (i >= 0) {
			cs->st.unwinds++;
			return pop_to(cs, th, i, t);
		}
		i = frame_running(th, th->depth - 1, e.start);
		if (i >= 0) {
			cs->st.unwinds++;
			return pop_to(cs, th, i + 1, t);
		}
	}
	/* into another function: the frame is replaced and keeps its return address */
	top = &th->st[th->depth - 1];
	site = top->site;
	kind = top->kind;
	called = top->called;
	err = pop(cs, th, t);
	if (!err)
		err = push(cs, th, kind, site, e.start ? e.start : to, e.name, t);
	/* the call it completes was made earlier: that is what its return times */
	if (!err && th->depth && !th->untracked)
		th->st[th->depth - 1].called = called;
	return fail(cs, err);
}

/* callstack__stop(), every case. */
static __attribute__((noinline)) int stop_any(struct callstack *cs, uint32_t pid, uint32_t tid,
					      enum cs_stop_reason why, uint64_t ip,
					      uint64_t resume, uint64_t t)
{
	struct fxt_arg arg = { .name = "ip", .type = FXT_ARG_POINTER, .u = ip };
	struct cs_thread *th;
	int err;

	if (!cs)
		return -EINVAL;
	switch (why) {
	case CS_STOP_SYSCALL:
	case CS_STOP_UNTRACED:
		th = enter(cs, pid, tid, ip, &t);
		if (!th)
			return cs->err;
		th->stopped = true;
		th->resume = resume;
		cs->st.gaps++;
		return push(cs, th, FRAME_GAP, 0, 0,
			    why == CS_STOP_SYSCALL ? cs->id_syscall : cs->id_untraced, t);
	case CS_STOP_OVERFLOW:
	case CS_STOP_END:
		break;
	default:
		return -EINVAL;
	}
	if (cs->err)
		return cs->err;
	th = thread_get(cs, pid, tid);
	if (!th)
		return cs->err;
	t = clamp_time(cs, th, t);
	/* the end of data (or of an image, at exec) may resume; an overflow lost the place */
	th->stopped = why == CS_STOP_END;
	th->resume = why == CS_STOP_END ? resume : 0;
	if (why == CS_STOP_OVERFLOW)
		th->nr_sig = 0;
	err = epoch_end(cs, th, t);
	if (!err && why == CS_STOP_OVERFLOW) {
		cs->st.overflows++;
		err = fxt_instant_id(cs->w, th->fxt, 0, cs->id_overflow, t, &arg, 1);
	}
	return fail(cs, err);
}

/*
 * A system call or untraced code entered, its usual case spelled out (see
 * usual_thread()): a gap's frame pushed, as stop_any() does.
 */
int callstack__stop(struct callstack *cs, uint32_t pid, uint32_t tid, enum cs_stop_reason why,
		    uint64_t ip, uint64_t resume, uint64_t t)
{
	struct cs_thread *th;
	uint32_t name;

	if ((why != CS_STOP_SYSCALL && why != CS_STOP_UNTRACED) ||
	    !(th = usual_thread(cs, pid, tid, t)))
		return stop_any(cs, pid, tid, why, ip, resume, t);
	th->last = t;
	th->stopped = true;
	th->resume = resume;
	cs->st.gaps++;
	name = why == CS_STOP_SYSCALL ? cs->id_syscall : cs->id_untraced;
	if (th->depth >= th->depth_room || th->nlog >= th->log_room)
		return push(cs, th, FRAME_GAP, 0, 0, name, t);
	push_logged(th, FRAME_GAP, 0, 0, name, t);
	return 0;
}

/* Resumed elsewhere (left untraced code by returning): back to that frame if known. */
static int resume_in_frame(struct callstack *cs, struct cs_thread *th, uint32_t pid, uint64_t ip,
			   uint64_t t)
{
	struct cs_sym e;
	int i, err;

	err = sym_lookup(cs, pid, ip, &e);
	if (err)
		return fail(cs, err);
	if (e.start && th->st[th->depth - 1].func != e.start) {
		i = frame_running(th, th->depth - 1, e.start);
		if (i >= 0) {
			err = pop_to(cs, th, i + 1, t);
			if (err)
				return fail(cs, err);
		}
	}
	return 0;
}

/* callstack__start(), every case. */
static __attribute__((noinline)) int start_any(struct callstack *cs, uint32_t pid, uint32_t tid,
					       uint64_t ip, uint64_t t)
{
	struct cs_thread *th;
	bool handler;
	int err;

	if (!cs)
		return -EINVAL;
	th = enter(cs, pid, tid, ip, &t);
	if (!th)
		return cs->err;
	err = signal_entry(cs, th, ip, &handler);
	if (err)
		return fail(cs, err);
	err = resume_in_frame(cs, th, pid, ip, t);
	if (err)
		return err;
	/* a signal handler: called from where the thread was stopped */
	return handler ? callstack__call(cs, pid, tid, th->resume - 1, ip, t) : 0;
}

/*
 * Tracing resumed after a gap, the usual case spelled out: the previous event's thread,
 * no error, its epoch open with the gap's frame on top of another, the time not going
 * back, and not a signal handler's entry; the same steps as start_any() takes for it.
 */
int callstack__start(struct callstack *cs, uint32_t pid, uint32_t tid, uint64_t ip, uint64_t t)
{
	struct cs_thread *th = cs ? cs->last_th : NULL;
	const struct cs_cache_ent *e;

	if (!th || th->pid != pid || th->tid != tid || t < th->last ||
	    th->depth < 2 || th->st[th->depth - 1].kind != FRAME_GAP ||
	    (th->stopped && th->resume && ip != th->resume))
		return start_any(cs, pid, tid, ip, t);
	/*
	 * resume_in_frame()'s usual case: `ip` in the symbol cache's first way, in the
	 * function of the frame under the gap (or in none known); and pop_usual()'s. Else
	 * start_any(), which does the same from the start (nothing has changed yet): only
	 * tail calls here.
	 */
	e = &cs->cache[mix(ip, pid) & (CS_CACHE_SIZE - 2)];
	if (e->addr != ip || e->pid != pid || ip == UINT64_MAX ||
	    (e->start && th->st[th->depth - 2].func != e->start) || !pop_usual(th, t))
		return start_any(cs, pid, tid, ip, t);
	th->last = t;
	th->stopped = false;
	cs->st.sym_lookups++;
	return 0;
}

int callstack__error(struct callstack *cs, uint32_t pid, uint32_t tid, uint64_t offset,
		     uint64_t ip, const char *msg, uint64_t t)
{
	struct fxt_arg args[3] = {
		{ .name = "offset", .type = FXT_ARG_UINT64, .u = offset },
		{ .name = "ip", .type = FXT_ARG_POINTER, .u = ip },
		{ .name = "message", .type = FXT_ARG_STRING, .s = msg ? msg : "" },
	};
	struct cs_thread *th;
	int err;

	if (!cs)
		return -EINVAL;
	if (cs->err)
		return cs->err;
	th = thread_get(cs, pid, tid);
	if (!th)
		return cs->err;
	t = clamp_time(cs, th, t);
	cs->st.errors++;
	th->nr_sig = 0;
	th->stopped = false;
	err = epoch_end(cs, th, t);
	if (!err)
		err = fxt_instant_id(cs->w, th->fxt, 0, cs->id_error, t, args, 3);
	return fail(cs, err);
}

static int thread_time(struct callstack *cs, uint32_t pid, uint32_t tid, uint64_t t)
{
	struct cs_thread *th;

	if (!cs)
		return -EINVAL;
	if (cs->err)
		return cs->err;
	th = thread_get(cs, pid, tid);
	if (!th)
		return cs->err;
	clamp_time(cs, th, t);
	return 0;
}

int callstack__switch_out(struct callstack *cs, uint32_t pid, uint32_t tid, uint64_t t)
{
	return thread_time(cs, pid, tid, t);
}

int callstack__switch_in(struct callstack *cs, uint32_t pid, uint32_t tid, uint64_t t)
{
	return thread_time(cs, pid, tid, t);
}

int callstack__instant(struct callstack *cs, uint32_t pid, uint32_t tid, const char *name,
		       uint64_t t, const struct fxt_arg *args, unsigned nargs)
{
	struct cs_instant *in;
	struct cs_thread *th;
	uint32_t idx;
	unsigned i;
	int err;

	if (!cs || nargs > FXT_MAX_ARGS || (nargs && !args))
		return -EINVAL;
	if (cs->err)
		return cs->err;
	th = thread_get(cs, pid, tid);
	if (!th)
		return cs->err;
	t = clamp_time(cs, th, t);
	if (!th->live)
		return fail(cs, fxt_instant(cs->w, pid, tid, NULL, name, t, args, nargs));

	in = calloc(1, sizeof(*in));
	if (!in)
		return fail(cs, -ENOMEM);
	err = fxt_intern(cs->w, name, &in->name);
	for (i = 0; i < nargs && !err; i++) {
		in->args[i] = args[i];
		in->args[i].name = strdup(args[i].name ? args[i].name : "");
		in->nargs = i + 1;
		if (args[i].type == FXT_ARG_STRING) {
			in->args[i].s = strdup(args[i].s ? args[i].s : "");
			if (!in->args[i].s)
				in->args[i].type = FXT_ARG_BOOL;	/* nothing to free */
		}
		if (!in->args[i].name || (args[i].type == FXT_ARG_STRING &&
					  in->args[i].type != FXT_ARG_STRING))
			err = -ENOMEM;
	}
	if (!err)
		err = array_grow((void **)&cs->inst, &cs->capinst, cs->ninst + 1,
				 sizeof(*cs->inst));
	if (err) {
		instant_free(in);
		return fail(cs, err);
	}
	idx = cs->ninst++;
	cs->inst[idx] = in;
	note_inner(th, t);
	err = log_append(cs, th, make_slot(th, t, th->depth, SLOT_INSTANT, idx), NULL);
	th->log_instants += !err;
	return err;
}

/* ---- lifetime ----------------------------------------------------------------------- */

struct callstack *callstack__new(struct fxt_writer *w, const struct callstack_opts *opts)
{
	static const struct callstack_opts defaults;
	struct callstack *cs;
	int err;

	if (!w) {
		errno = EINVAL;
		return NULL;
	}
	if (!opts)
		opts = &defaults;
	cs = calloc(1, sizeof(*cs));
	if (!cs)
		goto nomem;
	cs->w = w;
	cs->symbolize = opts->symbolize;
	cs->ctx = opts->ctx;
	cs->max_depth = opts->max_depth && opts->max_depth < CS_MAX_DEPTH ? opts->max_depth
									   : CS_MAX_DEPTH;
	cs->max_buffer = opts->max_buffer ? opts->max_buffer : CS_MAX_BUFFER;
	cs->thmask = 255;
	cs->thash = calloc(cs->thmask + 1, sizeof(*cs->thash));
	cs->cache = malloc(CS_CACHE_SIZE * sizeof(*cs->cache));
	cs->nmask = 1023;
	cs->names = calloc(cs->nmask + 1, sizeof(*cs->names));
	if (!cs->thash || !cs->cache || !cs->names)
		goto nomem;
	memset(cs->cache, 0xff, CS_CACHE_SIZE * sizeof(*cs->cache));
	err = fxt_intern(w, "[unknown]", &cs->id_unknown);
	err = err ?: fxt_intern(w, "[syscall]", &cs->id_syscall);
	err = err ?: fxt_intern(w, "[untraced]", &cs->id_untraced);
	err = err ?: fxt_intern(w, "[depth limit]", &cs->id_limit);
	err = err ?: fxt_intern(w, "[decode error]", &cs->id_error);
	err = err ?: fxt_intern(w, "[overflow]", &cs->id_overflow);
	if (err) {
		callstack__free(cs);
		errno = -err;
		return NULL;
	}
	return cs;
nomem:
	callstack__free(cs);
	errno = ENOMEM;
	return NULL;
}

int callstack__finish(struct callstack *cs)
{
	struct cs_thread *th;
	uint32_t b;

	if (!cs)
		return 0;
	for (b = 0; b <= cs->thmask; b++)
		for (th = cs->thash[b]; th; th = th->hnext)
			if (th->live && !cs->err)
				epoch_end(cs, th, th->last);
	return cs->err;
}

void callstack__free(struct callstack *cs)
{
	struct cs_thread *th, *next;
	uint32_t b;

	if (!cs)
		return;
	for (b = 0; cs->thash && b <= cs->thmask; b++) {
		for (th = cs->thash[b]; th; th = next) {
			next = th->hnext;
			free(th->st);
			free(th->log);
			free(th->pre);
			free(th);
		}
	}
	for (b = 0; b < cs->ninst; b++)
		instant_free(cs->inst[b]);
	free(cs->inst);
	free(cs->thash);
	free(cs->cache);
	free(cs->names);
	free(cs);
}

void callstack__stats(const struct callstack *cs, struct cs_stats *out)
{
	if (!out)
		return;
	memset(out, 0, sizeof(*out));
	if (cs) {
		*out = cs->st;
		out->sym_hits = cs->st.sym_lookups - cs->st.sym_misses;
	}
}
