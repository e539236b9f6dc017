// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * PT streams -> control-flow events, with libipt's block decoder.
 *
 * A stream is the trace of one CPU (or of one thread's buffer). Its decoder runs the
 * libipt loop of ptxed: sync forward to a PSB; drain events while pts_event_pending;
 * take blocks with pt_blk_next; on an error, report it (trace offset, ip, message),
 * count the instructions decoded before it, and sync forward again; stop when a resync
 * does not move. Blocks end at every branch because the config asks for end_on_call
 * and end_on_jump, so a block's end instruction class and the next block's start ip
 * are a branch and its target: calls, returns and jumps that leave a function become
 * events. Events are produced in chunks, so a stream can be suspended between chunks
 * and decoded by any thread; ptd_decode_streams() merges the chunks of all streams by
 * time, in an order that depends only on the events, not on the number of threads.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "ptd.h"

/* Events per chunk, and chunks a stream may decode ahead of the merge. */
#define CHUNK_EVENTS 4096
#define CHUNK_SLACK 16
#define MAX_AHEAD 4
/* Entries of a stream's cache of what branch instructions say (see pending_insn()). */
#define CLASS_CACHE_SIZE 4096

enum stream_state {
	ST_SYNC,		/* looking for the next PSB */
	ST_RUN,			/* synchronized: events and blocks */
	ST_DONE,		/* end of trace, or a resync that did not move */
};

/* The branch that ended the previous block; its target is the next block's ip. */
struct pending_branch {
	uint64_t ip;		/* the branch instruction */
	uint64_t time;		/* ns when its block was decoded */
	enum pt_insn_class iclass;	/* libipt's class; ptic_error: decode it ourselves */
	enum pt_exec_mode mode;
	int isid;		/* section of the instruction, for pt_iscache_read() */
	uint8_t raw[pt_max_insn_size];	/* the instruction, when the block was truncated */
	uint8_t size;		/* bytes in raw, 0 if not truncated */
	bool valid;
};

/*
 * What the bytes of the branch at (section, ip) say, read once: its class where libipt
 * left it as ptic_error (libipt's block cache knows where a block ends but not what its
 * last instruction is, so the same few indirect branches come back millions of times),
 * and where a far call returns to (every system call's stop asks). Direct mapped.
 */
struct class_ent {
	uint64_t ip;
	int isid;		/* 0: an empty entry (libipt's section ids start at 1) */
	uint8_t mode;		/* enum pt_exec_mode: the class of prefixed bytes depends on it */
	uint8_t iclass;		/* enum pt_insn_class */
	uint8_t far_len;	/* a far call's length (it returns to ip + far_len); 0: none */
};

/* How a piece of a split stream (see "pieces" below) ended. */
enum piece_end {
	PE_NONE,		/* not a piece, or not ended yet */
	PE_CLEAN,		/* the flow reached the next piece's PSB+ FUP */
	PE_SYNC,		/* a resync (after an error) found the next piece's PSB */
	PE_EOS,			/* the bytes ended (tracing off at the next PSB, or lost) */
};

/* What a piece did first, for joining it to the one before. */
struct piece_head {
	bool block;		/* its first sync had a FUP: the START at its first block is
				 * withheld, here (else: no FUP, tracing off) */
	uint64_t ip, time;	/* that block's ip and time */
	uint32_t pid, tid;	/* the thread it attributed the block to */
	int as;
	uint64_t events_before;	/* events it emitted before */
};

struct ptd_stream {
	struct ptd_stream_opts o;
	struct pt_block_decoder *dec;
	enum stream_state state;
	int status;		/* pts_* flags of the last libipt call */
	uint64_t last_sync;	/* trace offset of the last sync point */
	bool synced;		/* last_sync is valid */
	bool need_start;	/* synced with tracing on: START at the first block */

	/* the thread the trace belongs to now */
	uint32_t pid, tid;
	int as;			/* its address space, -1: unknown (its events are dropped) */
	bool selected;		/* its events are wanted (o.selected) */
	size_t sched_idx;	/* current entry of o.sched */
	bool have_thread;
	bool enabled;		/* tracing on: between START and STOP */

	struct pending_branch pend;
	uint64_t last_ip;	/* last instruction decoded */
	/* a return into the [uprobes] trampoline: emitted when tracing resumes */
	uint64_t uret_from, uret_time;
	bool uret;
	bool xol;		/* in a probed instruction's out-of-line copy ([uprobes]) */

	uint64_t now;		/* ns of the current position (see now()) */
	bool time_stale;	/* `now` needs asking libipt again */
	uint64_t last_time;	/* time of the last event emitted */
	uint64_t last_tsc;	/* TSC value `now` was converted from */

	struct ptd_event *out;	/* chunk being filled */
	size_t nr_out;

	/*
	 * The function the flow is in, for telling jumps that leave it: [fn_start, fn_end)
	 * when fn_valid; a range between functions when !fn_known. Calls, returns and
	 * restarts invalidate it; it is looked up again at the next jump.
	 */
	uint64_t fn_start, fn_end;
	bool fn_valid, fn_known;
	struct symbols_range_cache *fn_cache;	/* this stream's function ranges by address */
	struct class_ent *class_cache;	/* CLASS_CACHE_SIZE entries, made on first use */
	uint64_t up_start, up_end;	/* the [uprobes] page of the address space, if any */
	struct decode_stats st;
	uint64_t pos;		/* trace offset reached (progress) */
	/* blocks decoded since the trace offset was last seen to move from still_off */
	uint32_t still_blocks;
	uint64_t still_off;
	/*
	 * The work budget (see PTD_BLOCKS_BASE): blocks may exceed PTD_BLOCKS_PER_BYTE * the
	 * bytes passed by at most PTD_BLOCKS_BASE, the bytes counted from the start of the
	 * stream, or of the piece. `budget` is the block count at which to look again
	 * (the offset is read only then); `peak` the most blocks did exceed it by (see
	 * budget_check()).
	 */
	uint64_t budget;
	int64_t peak;
	bool work_limit_hit;	/* a piece after the first ran out of its budget, or looped */
	size_t range;		/* o.ranges: the one being decoded */
	bool range_open;	/* the decoder is set at its start, not synced yet */

	/* a piece of a split stream */
	struct ptd_range piece;	/* its bytes (o.ranges points here for pieces after the first) */
	uint64_t stop;		/* the next piece's PSB: decoding ends there, 0: no piece */
	uint64_t stop_ip;	/* the FUP ip of its PSB+, 0: none (tracing off there) */
	enum piece_end end;
	bool end_after_error;	/* PE_EOS while resyncing after an error */
	bool error_resync;	/* an error sent it to resync; cleared by the sync */
	bool withhold;		/* the first sync's START is withheld, into head */
	bool cont;		/* a continuation: its first sync changes no state */
	bool head_valid;
	struct piece_head head;
	uint64_t emitted;	/* events emitted */

	/*
	 * The stream's own copies of the address spaces' libipt images: a decoder moves
	 * the section it finds to the front of its image's list, so an image is no more
	 * shared between decoder threads than a decoder is (the sections, and their block
	 * caches, are: they live in the image section cache).
	 */
	struct pt_image **images;
	uint32_t nr_images;
};

/* ---------------------------------------------------------------- time */

uint64_t ptd_clock_ns(const struct ptd_clock *c, uint64_t tsc)
{
	uint64_t quot, rem;

	if (!c->mult) {
		if (c->ns_per_tick > 0 && c->ns_per_tick != 1.0) {
			double ns = (double)tsc * c->ns_per_tick;

			/* a TSC from the trace at a slow --tsc-hz: beyond 2^64 ns is undefined */
			return ns < 18446744073709551616.0 ? (uint64_t)ns : UINT64_MAX;
		}
		return tsc;
	}
	if (c->short_cyc)
		tsc = c->cycles + ((tsc - c->cycles) & c->mask);
	quot = tsc >> c->shift;
	rem = tsc & ((1ull << c->shift) - 1);
	return c->zero + quot * c->mult + ((rem * c->mult) >> c->shift);
}

/*
 * The time at the decoder's position, asked of libipt only when an event needs it:
 * most blocks end in a conditional branch that makes no event.
 */
static uint64_t now(struct ptd_stream *s)
{
	uint32_t lost_mtc, lost_cyc;
	uint64_t tsc;

	if (!s->time_stale)
		return s->now;
	s->time_stale = false;
	if (s->o.timeless) {
		/* no clock: instructions stand in for nanoseconds */
		s->now = s->st.insns;
	} else if (pt_blk_time(s->dec, &tsc, &lost_mtc, &lost_cyc) >= 0 && tsc != s->last_tsc) {
		s->last_tsc = tsc;
		s->now = ptd_clock_ns(&s->o.clock, tsc);
	}
	return s->now;
}

/* ---------------------------------------------------------------- events */

static int attribute(struct ptd_stream *s, uint64_t ip);

static struct ptd_event *emit(struct ptd_stream *s, enum ptd_kind kind, uint64_t time)
{
	struct ptd_event *ev;

	/* events of threads we know nothing about (other processes), or not selected */
	if (s->as < 0 || !s->selected)
		return NULL;
	/*
	 * A stream's times never go back: libipt's time after a block can be ahead of the
	 * time stamped on the event that follows it (the query decoder reads ahead).
	 */
	if (time < s->last_time)
		time = s->last_time;
	s->last_time = time;
	s->emitted++;
	ev = &s->out[s->nr_out++];
	ev->time = time;
	ev->from = ev->to = ev->offset = 0;
	ev->pid = s->pid;
	ev->tid = s->tid;
	ev->asid = s->as < 0 ? UINT32_MAX : (uint32_t)s->as;
	ev->kind = (uint16_t)kind;
	ev->reason = 0;
	ev->code = 0;
	ev->cpu = s->o.index;
	return ev;
}

static uint64_t trace_offset(struct ptd_stream *s)
{
	uint64_t off = 0;

	pt_blk_get_offset(s->dec, &off);
	return off;
}

const char *ptd_errstr(int code)
{
	if (code == PTD_ERR_ENDLESS)
		return "endless loop: no trace packet read for millions of blocks";
	if (code == PTD_ERR_BUDGET)
		return "decode budget exceeded: more blocks than the trace's size allows "
		       "(PTD_BLOCKS_PER_BYTE), resync at the next PSB";
	return pt_errstr(pt_errcode(code));
}

static void emit_error(struct ptd_stream *s, int code, uint64_t ip)
{
	struct ptd_event *ev;
	uint64_t off = trace_offset(s);

	if (s->stop && off > s->stop) {
		/*
		 * A piece's error in the next piece's PSB+, where its bytes end: the
		 * sequential decode reads on past it and may not fail there. The piece ends
		 * without it; the join decodes the next piece again (PE_EOS after an error).
		 */
		s->end = PE_EOS;
		s->end_after_error = true;
		s->state = ST_DONE;
		return;
	}
	s->st.errors++;
	s->error_resync = true;
	/* an error before tracing started still belongs to whoever ran then */
	if (!s->have_thread && s->o.nr_sched)
		attribute(s, ip);
	dlog("[%" PRIx64 ", %" PRIx64 ": error: %s]\n", off, ip, ptd_errstr(code));
	/* on at the next PSB */
	s->state = ST_SYNC;
	ev = emit(s, PTD_ERROR, now(s));
	if (!ev)
		return;
	ev->from = ip;
	ev->offset = off;
	ev->code = code;
}

/* ---------------------------------------------------------------- threads */

/* The address space of `pid` at `time` (raw mode: the only one), -ENOENT if none. */
static int as_for(struct ptd_stream *s, uint32_t pid, uint64_t time)
{
	if (s->o.fixed_as >= 0 && !s->o.nr_sched)
		return s->o.fixed_as;
	return ptd_aspace_find(s->o.images, pid, time);
}

static bool as_maps(struct ptd_stream *s, int as, uint64_t ip)
{
	const struct ptd_map *m = as >= 0 ? ptd_aspace_lookup(s->o.images, as, ip) : NULL;

	return m && m->exec;
}

/* The stream's copy of address space `as`'s image, made on first use; NULL on failure. */
static struct pt_image *stream_image(struct ptd_stream *s, int as)
{
	struct pt_image *src, *copy, **v;

	if (as < 0)
		return NULL;
	if ((uint32_t)as >= s->nr_images) {
		uint32_t n = (uint32_t)as + 8;

		v = realloc(s->images, n * sizeof(*v));
		if (!v)
			return NULL;
		memset(v + s->nr_images, 0, (n - s->nr_images) * sizeof(*v));
		s->images = v;
		s->nr_images = n;
	}
	if (s->images[as])
		return s->images[as];
	src = ptd_aspace_image(s->o.images, as);
	if (!src)
		return NULL;
	copy = pt_image_alloc(NULL);
	if (!copy)
		return NULL;
	/* read-only: decoders never use the shared images themselves */
	if (pt_image_copy(copy, src) < 0) {
		pt_image_free(copy);
		return NULL;
	}
	s->images[as] = copy;
	return copy;
}

/* Sets the current thread and its image; returns 0 or a libipt error. */
static int set_thread(struct ptd_stream *s, uint32_t pid, uint32_t tid, int as)
{
	int err = 0;

	if (as != s->as || !s->have_thread) {
		struct pt_image *image = stream_image(s, as);
		const struct ptd_aspace *a;
		uint32_t i;

		if (as >= 0 && !image)
			as = -1;
		err = pt_blk_set_image(s->dec, image);
		/* its [uprobes] page, looked at on every return */
		a = as >= 0 ? &s->o.images->as[as] : NULL;
		s->up_start = s->up_end = 0;
		for (i = 0; a && i < a->nr_maps; i++)
			if (a->maps[i].uprobes) {
				s->up_start = a->maps[i].start;
				s->up_end = a->maps[i].end;
			}
	}
	if (!s->have_thread || pid != s->pid || tid != s->tid)
		s->selected = !s->o.selected || s->o.selected(s->o.selected_ctx, pid, tid);
	s->pid = pid;
	s->tid = tid;
	s->as = as;
	s->have_thread = true;
	s->fn_valid = false;
	return err;
}

/*
 * Tracing starts at `ip` at the current time: which thread is it? The CPU's schedule
 * says, at the precision of the trace's time; when its choice does not map `ip` but
 * a neighbouring entry's process does, the neighbour is right (the switch and the
 * return to user space are a few hundred ns apart, below MTC resolution).
 */
static int attribute(struct ptd_stream *s, uint64_t ip)
{
	const struct ptd_sched *sc = s->o.sched;
	size_t i = s->sched_idx, n = s->o.nr_sched;
	int as;

	if (!n)
		return set_thread(s, s->o.fixed_pid, s->o.fixed_tid,
				  as_for(s, s->o.fixed_pid, now(s)));
	while (i + 1 < n && sc[i + 1].time <= now(s))
		i++;
	s->sched_idx = i;
	as = as_for(s, sc[i].pid, now(s));
	if (ip && !as_maps(s, as, ip)) {
		size_t j;

		for (j = i + 1; j < n && j <= i + 2; j++) {
			int a = as_for(s, sc[j].pid, now(s));

			if (as_maps(s, a, ip)) {
				s->sched_idx = i = j;
				as = a;
				break;
			}
		}
	}
	return set_thread(s, sc[i].pid, sc[i].tid, as);
}

static int start_tracing(struct ptd_stream *s, uint64_t ip)
{
	struct ptd_event *ev;
	int err;

	err = attribute(s, ip);
	if (err < 0)
		return err;
	s->enabled = true;
	s->need_start = false;
	ev = emit(s, PTD_START, now(s));
	if (ev)
		ev->to = ip;
	return 0;
}

/* ---------------------------------------------------------------- branches */

/*
 * The class of the instruction at `p` (a block's last instruction that libipt left
 * as ptic_error: an indirect jump or a far transfer).
 */
static enum pt_insn_class classify(const uint8_t *p, size_t n, enum pt_exec_mode mode)
{
	size_t i = 0;

	for (; i < n; i++) {
		uint8_t b = p[i];

		if (b == 0x66 || b == 0x67 || b == 0xf0 || b == 0xf2 || b == 0xf3 ||
		    b == 0x2e || b == 0x36 || b == 0x3e || b == 0x26 || b == 0x64 || b == 0x65)
			continue;
		if (mode == ptem_64bit && (b & 0xf0) == 0x40)
			continue;
		break;
	}
	if (i >= n)
		return ptic_error;
	switch (p[i]) {
	case 0xc2:
	case 0xc3:
		return ptic_return;
	case 0xca:
	case 0xcb:
	case 0xcf:
		return ptic_far_return;
	case 0xe8:
		return ptic_call;
	case 0xe9:
	case 0xeb:
		return ptic_jump;
	case 0x9a:
	case 0xcc:
	case 0xcd:
	case 0xce:
	case 0xf1:
		return ptic_far_call;
	case 0xea:
		return ptic_far_jump;
	case 0x0f:
		if (i + 1 >= n)
			return ptic_error;
		switch (p[i + 1]) {
		case 0x05:
		case 0x34:
			return ptic_far_call;
		case 0x07:
		case 0x35:
			return ptic_far_return;
		default:
			return (p[i + 1] & 0xf0) == 0x80 ? ptic_cond_jump : ptic_other;
		}
	case 0xff:
		if (i + 1 >= n)
			return ptic_error;
		switch ((p[i + 1] >> 3) & 7) {
		case 2:
			return ptic_call;
		case 3:
			return ptic_far_call;
		case 4:
			return ptic_jump;
		case 5:
			return ptic_far_jump;
		default:
			return ptic_other;
		}
	default:
		if ((p[i] & 0xf0) == 0x70 || (p[i] >= 0xe0 && p[i] <= 0xe3))
			return ptic_cond_jump;
		return ptic_other;
	}
}

/* The bytes of the pending branch instruction; returns how many, 0 if unreadable. */
static size_t pending_bytes(struct ptd_stream *s, uint8_t *buf)
{
	struct pending_branch *p = &s->pend;
	int n;

	if (p->size) {
		memcpy(buf, p->raw, p->size);
		return p->size;
	}
	n = pt_iscache_read(s->o.images->iscache, buf, pt_max_insn_size, p->isid, p->ip);
	return n > 0 ? (size_t)n : 0;
}

/*
 * The length of the far call (syscall, int) in `buf`, up to where it returns; 0 when it is
 * not one whose length is known.
 */
static uint8_t far_call_len(const uint8_t *buf, size_t n)
{
	size_t i;

	for (i = 0; i < n && (buf[i] == 0x66 || buf[i] == 0x67 || buf[i] == 0xf2 ||
			      buf[i] == 0xf3 || (buf[i] & 0xf0) == 0x40); i++)
		;
	if (i < n && (buf[i] == 0xcc || buf[i] == 0xce || buf[i] == 0xf1))
		return (uint8_t)(i + 1);
	if (i + 1 < n && (buf[i] == 0xcd || (buf[i] == 0x0f && (buf[i + 1] == 0x05 ||
								buf[i + 1] == 0x34))))
		return (uint8_t)(i + 2);
	return 0;
}

/*
 * What the pending branch's bytes say, read from its section (pt_iscache_read takes the
 * cache's lock and copies) only the first time its (section, ip, mode) is seen; a
 * truncated instruction's own bytes are looked at each time (they are rare), in `tmp`.
 */
static const struct class_ent *pending_insn(struct ptd_stream *s, struct class_ent *tmp)
{
	struct pending_branch *p = &s->pend;
	uint8_t buf[pt_max_insn_size];
	struct class_ent *e = tmp;
	size_t n;

	if (!p->size && p->isid > 0) {
		if (!s->class_cache)
			s->class_cache = calloc(CLASS_CACHE_SIZE, sizeof(*s->class_cache));
		if (s->class_cache) {	/* NULL: no memory, read each time */
			e = &s->class_cache[((p->ip * 0x9e3779b97f4a7c15ull) >> 40 ^
					     (uint64_t)p->isid) & (CLASS_CACHE_SIZE - 1)];
			if (e->ip == p->ip && e->isid == p->isid && e->mode == p->mode)
				return e;
		}
	}
	n = pending_bytes(s, buf);
	*e = (struct class_ent){
		.ip = p->ip,
		.isid = p->isid,
		.mode = (uint8_t)p->mode,
		.iclass = (uint8_t)(n ? classify(buf, n, p->mode) : ptic_other),
		.far_len = far_call_len(buf, n),
	};
	return e;
}

static enum pt_insn_class pending_class(struct ptd_stream *s)
{
	struct pending_branch *p = &s->pend;
	struct class_ent tmp;

	if (p->iclass == ptic_error)
		p->iclass = (enum pt_insn_class)pending_insn(s, &tmp)->iclass;
	return p->iclass;
}

/*
 * Where a far call (syscall, int) returns to: the next instruction, 0 when its length
 * is not known. Tells a syscall's return from a signal handler's entry.
 */
static uint64_t far_call_next(struct ptd_stream *s)
{
	struct class_ent tmp;
	uint8_t len = pending_insn(s, &tmp)->far_len;

	return len ? s->pend.ip + len : 0;
}

/*
 * Did a jump from `from` to `to` leave its function? Most jumps stay inside the range
 * of the current function: two compares. Otherwise the target's function is looked
 * up and becomes the current one. Between two addresses with no symbol nothing can be
 * told: no jump.
 */
static bool jump_leaves(struct ptd_stream *s, uint64_t from, uint64_t to)
{
	uint64_t start, end;
	bool leaves;
	int r;

	if (!s->fn_cache)
		s->fn_cache = symbols__range_cache_new();	/* NULL: looked up each time */
	if (!s->fn_valid) {
		r = symbols__func_range_cached(s->o.symbols, s->fn_cache, s->as, from,
					       &s->fn_start, &s->fn_end);
		s->fn_valid = r >= 0;
		s->fn_known = r == 0;
	}
	if (s->fn_valid && to >= s->fn_start && to < s->fn_end)
		return false;
	r = symbols__func_range_cached(s->o.symbols, s->fn_cache, s->as, to, &start, &end);
	leaves = (s->fn_valid && s->fn_known) || r == 0;
	s->fn_start = start;
	s->fn_end = end;
	s->fn_valid = r >= 0;
	s->fn_known = r == 0;
	return leaves;
}

/* 1: ip is in the [uprobes] page, 2: at its start (the uretprobe trampoline), else 0. */
static int in_uprobes(const struct ptd_stream *s, uint64_t ip)
{
	if (ip < s->up_start || ip >= s->up_end)
		return 0;
	return ip == s->up_start ? 2 : 1;
}

/* The previous block's branch went to `to`. */
static void resolve(struct ptd_stream *s, uint64_t to)
{
	struct pending_branch *p = &s->pend;
	struct ptd_event *ev;
	enum ptd_kind kind;

	if (!p->valid)
		return;
	p->valid = false;
	switch (pending_class(s)) {
	case ptic_call:
	case ptic_far_call:
		kind = PTD_CALL;
		s->st.calls++;
		s->fn_valid = false;
		break;
	case ptic_return:
	case ptic_far_return:
		if (s->as >= 0 && in_uprobes(s, to)) {
			/* uretprobe: the trampoline returns where tracing resumes */
			s->uret = true;
			s->uret_from = p->ip;
			s->uret_time = p->time;
			return;
		}
		kind = PTD_RETURN;
		s->st.returns++;
		s->fn_valid = false;
		break;
	case ptic_jump:
	case ptic_cond_jump:
	case ptic_far_jump:
		if (!s->o.symbols || s->as < 0 || !jump_leaves(s, p->ip, to))
			return;
		kind = PTD_JUMP;
		break;
	default:
		return;
	}
	ev = emit(s, kind, p->time ? p->time : now(s));
	if (ev) {
		ev->from = p->ip;
		ev->to = to;
	}
}

static void on_block(struct ptd_stream *s, const struct pt_block *b)
{
	struct pending_branch *p = &s->pend;

	if (s->need_start && s->withhold) {
		/* a piece's first block: its START waits for the join with the piece before */
		s->withhold = false;
		s->need_start = false;
		s->enabled = true;
		if (attribute(s, b->ip) < 0)
			s->as = -1;
		s->head_valid = true;
		s->head.block = true;
		s->head.ip = b->ip;
		s->head.time = now(s);
		s->head.pid = s->pid;
		s->head.tid = s->tid;
		s->head.as = s->as;
		s->head.events_before = s->emitted;
	} else if (s->need_start && start_tracing(s, b->ip) < 0) {
		s->as = -1;
	}
	if (s->uret && !in_uprobes(s, b->ip)) {
		/* out of the uretprobe trampoline: where the return really landed */
		struct ptd_event *ev = emit(s, PTD_RETURN, s->uret_time);

		if (ev) {
			ev->from = s->uret_from;
			ev->to = b->ip;
		}
		s->st.returns++;
		s->uret = false;
		s->pend.valid = false;
	}
	if (s->uret || s->xol) {
		/* the trampoline's or a probed copy's branches are not the program's */
		s->last_ip = b->end_ip;
		return;
	}
	resolve(s, b->ip);
	s->last_ip = b->end_ip;
	p->valid = true;
	p->ip = b->end_ip;
	/* a branch that may make an event keeps the time it was taken at */
	p->time = b->iclass == ptic_cond_jump || b->iclass == ptic_other ? 0 : now(s);
	p->iclass = b->iclass;
	p->mode = b->mode;
	p->isid = b->isid;
	p->size = 0;
	if (b->truncated && b->size <= sizeof(p->raw)) {
		memcpy(p->raw, b->raw, b->size);
		p->size = b->size;
	}
}

/* Tracing stopped after `ip`; it would go on at `next` (0: unknown) if nothing intervened. */
static void stop_tracing(struct ptd_stream *s, enum cs_stop_reason why, uint64_t ip,
			 uint64_t next)
{
	struct ptd_event *ev;

	s->enabled = false;
	ev = emit(s, PTD_STOP, now(s));
	if (ev) {
		ev->from = ip;
		ev->to = next;
		ev->reason = (uint16_t)why;
	}
}

static int on_event(struct ptd_stream *s, const struct pt_event *e)
{
	enum pt_insn_class cls;
	struct ptd_event *ev;

	if (e->has_tsc && !s->o.timeless) {
		if (e->tsc != s->last_tsc) {
			s->last_tsc = e->tsc;
			s->now = ptd_clock_ns(&s->o.clock, e->tsc);
		}
		s->time_stale = false;
	}
	switch (e->type) {
	case ptev_enabled:
		if (s->uret && in_uprobes(s, e->variant.enabled.ip)) {
			/* back in the trampoline after its system call: its ret follows */
			s->enabled = true;
			s->need_start = false;
			return 0;
		}
		if (s->uret) {
			/* the system call returned past the trampoline: the return landed here */
			s->uret = false;
			s->pend.valid = false;
			s->enabled = true;
			s->need_start = false;
			ev = emit(s, PTD_RETURN, s->uret_time);
			if (ev) {
				ev->from = s->uret_from;
				ev->to = e->variant.enabled.ip;
			}
			s->st.returns++;
			return 0;
		}
		s->pend.valid = false;
		if (s->as >= 0 && in_uprobes(s, e->variant.enabled.ip) == 1) {
			/*
			 * An entry uprobe's instruction stepped out of line: part of the gap
			 * its int3 opened, closed where tracing resumes in the program.
			 */
			s->xol = true;
			return 0;
		}
		return start_tracing(s, e->variant.enabled.ip);

	case ptev_disabled:
		if (s->uret || s->xol) {
			s->xol = false;
			s->pend.valid = false;
			return 0;
		}
		cls = s->pend.valid ? pending_class(s) : ptic_other;
		if (cls == ptic_far_call)
			stop_tracing(s, CS_STOP_SYSCALL, s->last_ip, far_call_next(s));
		else
			stop_tracing(s, CS_STOP_UNTRACED, s->last_ip, 0);
		s->pend.valid = false;
		return 0;

	case ptev_async_disabled:
		resolve(s, e->variant.async_disabled.at);
		if (s->uret || s->xol) {
			s->xol = false;
			return 0;
		}
		stop_tracing(s, CS_STOP_UNTRACED, s->last_ip, e->variant.async_disabled.at);
		return 0;

	case ptev_async_branch:
		/* an interrupt taken in traced code: a call its iret returns from */
		resolve(s, e->variant.async_branch.from);
		ev = emit(s, PTD_CALL, now(s));
		if (ev) {
			ev->from = e->variant.async_branch.from;
			ev->to = e->variant.async_branch.to;
		}
		return 0;

	case ptev_overflow:
		s->st.overflows++;
		s->pend.valid = false;
		s->uret = s->xol = false;
		ev = emit(s, PTD_OVERFLOW, now(s));
		if (ev) {
			ev->offset = trace_offset(s);
			ev->from = s->last_ip;
			ev->to = e->ip_suppressed ? 0 : e->variant.overflow.ip;
		}
		s->enabled = !e->ip_suppressed;
		if (s->enabled)
			return attribute(s, e->variant.overflow.ip);
		return 0;

	case ptev_stop:
		s->pend.valid = false;
		stop_tracing(s, CS_STOP_UNTRACED, s->last_ip, 0);
		return 0;

	default:
		/* paging, vmcs, exec mode, tsx, power, ptwrite, cbr: no control flow */
		return 0;
	}
}

/* ---------------------------------------------------------------- the loop */

static void stream_synced(struct ptd_stream *s, int status)
{
	if (s->cont) {
		/* a continuation of the piece before: the flow goes on through this PSB */
		s->cont = false;
		s->error_resync = false;
		s->status = status;
		s->state = ST_RUN;
		s->time_stale = true;
		return;
	}
	if (s->withhold && (status & pts_ip_suppressed)) {
		/* tracing off at the piece's PSB: nothing to withhold */
		s->withhold = false;
		s->head_valid = true;
		s->head.block = false;
		s->head.events_before = s->emitted;
	}
	s->status = status;
	s->state = ST_RUN;
	s->error_resync = false;
	s->st.syncs++;
	s->pend.valid = false;
	s->uret = s->xol = false;
	s->fn_valid = false;
	s->time_stale = true;
	/* PSB+ with a FUP: tracing is on, with no event to say so */
	s->need_start = !(status & pts_ip_suppressed);
	s->enabled = false;
	/*
	 * The first block needs the right image before it is decoded, and its ip is not
	 * known yet: attribute by time alone now, by time and ip at the first block.
	 */
	if (s->need_start && s->o.nr_sched && attribute(s, 0) < 0)
		s->as = -1;
}

/*
 * A block decoder over the stream's bytes up to `end`, offsets counted from the start
 * of the stream; NULL when libipt refuses the configuration.
 */
static struct pt_block_decoder *open_decoder(const struct ptd_stream_opts *o, uint64_t end)
{
	struct pt_config cfg = o->config;

	cfg.size = sizeof(cfg);
	cfg.begin = (uint8_t *)o->buf;
	cfg.end = (uint8_t *)o->buf + end;
	/* every call and jump ends a block: that is where the events are */
	cfg.flags.variant.block.end_on_call = 1;
	cfg.flags.variant.block.end_on_jump = 1;
	return pt_blk_alloc_decoder(&cfg);
}

/*
 * The next of o.ranges: a decoder that ends where it ends (the flow past it is not
 * wanted), synced at its PSB by the next step, with the current image.
 */
static int open_range(struct ptd_stream *s, size_t k)
{
	const struct ptd_range *r = &s->o.ranges[k];
	struct pt_block_decoder *dec = open_decoder(&s->o, r->end);
	struct pt_image *image;

	if (!dec)
		return -EINVAL;
	pt_blk_free_decoder(s->dec);
	s->dec = dec;
	s->range = k;
	s->range_open = true;
	image = s->have_thread ? stream_image(s, s->as) : NULL;
	if (image)
		pt_blk_set_image(dec, image);
	return 0;
}

/* The decoder reached the end of its bytes: on to the next range, or done. */
static void stream_end(struct ptd_stream *s)
{
	if (s->stop && s->end == PE_NONE) {
		s->end = PE_EOS;
		s->end_after_error = s->state == ST_SYNC && s->error_resync;
	}
	s->state = ST_DONE;
	if (s->range + 1 < s->o.nr_ranges && !open_range(s, s->range + 1))
		s->state = ST_SYNC;
}

/*
 * Over budget as of the last look: has the trace moved on since? -1: the budget is
 * spent. With f = blocks - PTD_BLOCKS_PER_BYTE * offset (offsets only grow, blocks by
 * one): a stream, or the first piece, may go on while f <= PTD_BLOCKS_BASE; a later
 * piece, starting at byte b, while f <= PTD_BLOCKS_BASE - PTD_BLOCKS_PER_BYTE * b (its
 * own bytes pay for its work). A later piece also keeps the peak of f (exact: f can
 * only rise while blocks pass the last look's bound): the sequential decode, with the
 * blocks of the pieces before added, would have run out where that sum passes
 * PTD_BLOCKS_BASE, and the join (join()) decodes the piece again then.
 */
static int budget_check(struct ptd_stream *s)
{
	int64_t per_byte = PTD_BLOCKS_PER_BYTE, base = (int64_t)PTD_BLOCKS_BASE;
	int64_t begin = (int64_t)s->piece.begin;
	int64_t off = (int64_t)trace_offset(s), f = (int64_t)s->st.blocks - per_byte * off;
	int64_t limit = base - per_byte * begin, watch;

	if (f > limit) {
		if (begin)
			s->work_limit_hit = true;
		return -1;
	}
	if (begin && f > s->peak)
		s->peak = f;
	/* the next look: when f may pass the peak (a later piece) or the limit */
	watch = begin ? (s->peak > -per_byte * begin ? s->peak : -per_byte * begin) : limit;
	s->budget = (uint64_t)(per_byte * off + watch);
	return 0;
}

/* One step: a sync, an event, or a block. */
static void stream_step(struct ptd_stream *s)
{
	struct pt_block block;
	int status;

	if (s->state == ST_SYNC) {
		uint64_t off = 0;

		if (s->range_open) {
			s->range_open = false;
			status = pt_blk_sync_set(s->dec, s->o.ranges[s->range].begin);
		} else {
			status = pt_blk_sync_forward(s->dec);
		}
		if (status < 0) {
			if (status != -pte_eos) {
				emit_error(s, status, 0);
				if (s->state == ST_DONE)
					return;
				/* no progress, no hope: the same as ptxed */
				if (pt_blk_get_offset(s->dec, &off) >= 0 &&
				    (!s->synced || off > s->last_sync)) {
					s->last_sync = off;
					s->synced = true;
					return;
				}
			}
			stream_end(s);
			return;
		}
		if (pt_blk_get_sync_offset(s->dec, &off) >= 0) {
			if (s->stop && off >= s->stop) {
				/* a resync found the next piece's PSB: it is that piece's */
				s->end = PE_SYNC;
				s->state = ST_DONE;
				return;
			}
			if (s->synced && off <= s->last_sync) {
				stream_end(s);
				return;
			}
			s->last_sync = off;
			s->synced = true;
		}
		stream_synced(s, status);
		return;
	}

	if (s->status & pts_event_pending) {
		struct pt_event ev;

		status = pt_blk_event(s->dec, &ev, sizeof(ev));
		if (status < 0) {
			emit_error(s, status, s->last_ip);
			return;
		}
		s->status = status;
		status = on_event(s, &ev);
		if (status < 0) {
			emit_error(s, status, s->last_ip);
			return;
		}
		/*
		 * A piece ends where the flow reaches the next piece's PSB+: at the FUP's ip,
		 * where its MODE.Exec status update binds (the next piece starts there).
		 */
		if (s->stop && ev.status_update && !ev.ip_suppressed &&
		    ev.type == ptev_exec_mode && ev.variant.exec_mode.ip == s->stop_ip &&
		    trace_offset(s) > s->stop) {
			s->end = PE_CLEAN;
			s->state = ST_DONE;
		}
		return;
	}
	if (s->status & pts_eos) {
		s->state = ST_SYNC;
		return;
	}

	status = pt_blk_next(s->dec, &block, sizeof(block));
	/* count ninsn even on error: the block holds what decoded before it */
	s->st.insns += block.ninsn;
	s->time_stale = true;
	if (block.ninsn) {
		if (++s->st.blocks > s->budget && budget_check(s) < 0) {
			emit_error(s, PTD_ERR_BUDGET, block.end_ip);
			return;
		}
		on_block(s, &block);
		/* the offset, looked at every 4096 blocks: has any packet been read? */
		if (!(++s->still_blocks & 0xfff)) {
			uint64_t off = trace_offset(s);

			if (off != s->still_off) {
				s->still_off = off;
				s->still_blocks = 0;
			} else if (s->still_blocks >= PTD_STILL_BLOCKS && status >= 0) {
				s->still_blocks = 0;
				/* a later piece counts from its PSB, the sequential decode not */
				if (s->piece.begin)
					s->work_limit_hit = true;
				emit_error(s, PTD_ERR_ENDLESS, block.end_ip);
				return;
			}
		}
	}
	if (status < 0) {
		if (status == -pte_eos) {
			stream_end(s);
			return;
		}
		emit_error(s, status, block.ninsn ? block.end_ip : block.ip);
		return;
	}
	s->status = status;
}

/* Decode until `out` holds about CHUNK_EVENTS events or the trace ends; returns the count. */
static size_t stream_fill(struct ptd_stream *s, struct ptd_event *out)
{
	s->out = out;
	s->nr_out = 0;
	while (s->state != ST_DONE && s->nr_out < CHUNK_EVENTS)
		stream_step(s);
	if (s->state == ST_DONE)
		s->pos = s->stop ? s->stop : s->o.size;
	else
		s->pos = trace_offset(s);
	s->out = NULL;
	return s->nr_out;
}

int ptd_stream_new(const struct ptd_stream_opts *opts, struct ptd_stream **out)
{
	struct ptd_stream *s;
	size_t i;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = *opts;
	s->as = -1;
	s->budget = PTD_BLOCKS_BASE;
	s->selected = true;
	if (opts->ranges) {
		/* nothing to decode: a stream that is done before it starts */
		s->state = opts->nr_ranges ? ST_SYNC : ST_DONE;
		for (i = 0; i < opts->nr_ranges; i++)
			s->st.bytes += opts->ranges[i].end - opts->ranges[i].begin;
		s->st.skipped = opts->size - s->st.bytes;
	} else {
		s->st.bytes = opts->size;
	}
	s->dec = open_decoder(opts, opts->nr_ranges ? opts->ranges[0].end : opts->size);
	if (!s->dec) {
		free(s);
		return -EINVAL;
	}
	s->range_open = opts->nr_ranges > 0;
	if (!opts->nr_sched && opts->fixed_as >= 0) {
		int err = set_thread(s, opts->fixed_pid, opts->fixed_tid, opts->fixed_as);

		if (err < 0) {
			ptd_stream_free(s);
			return ptd_errno(err);
		}
	}
	*out = s;
	return 0;
}

void ptd_stream_free(struct ptd_stream *s)
{
	uint32_t i;

	if (!s)
		return;
	pt_blk_free_decoder(s->dec);
	symbols__range_cache_free(s->fn_cache);
	free(s->class_cache);
	for (i = 0; i < s->nr_images; i++)
		pt_image_free(s->images[i]);
	free(s->images);
	free(s);
}

void ptd_stream_stats(const struct ptd_stream *s, struct decode_stats *st)
{
	st->insns += s->st.insns;
	st->blocks += s->st.blocks;
	st->calls += s->st.calls;
	st->returns += s->st.returns;
	st->errors += s->st.errors;
	st->overflows += s->st.overflows;
	st->syncs += s->st.syncs;
	st->bytes += s->st.bytes;
	st->skipped += s->st.skipped;
}

int ptd_first_time(const uint8_t *buf, size_t size, const struct pt_config *cfg_in,
		   const struct ptd_clock *clock, uint64_t *ns)
{
	struct pt_packet_decoder *pkt;
	struct pt_packet p;
	int err = -ENOENT;

	pkt = ptd_pkt_open(buf, size, cfg_in);
	if (!pkt)
		return -EINVAL;
	/* the first TSC after the first PSB, within the first few hundred packets */
	if (pt_pkt_sync_forward(pkt) >= 0) {
		int i;

		for (i = 0; i < 1024 && pt_pkt_next(pkt, &p, sizeof(p)) >= 0; i++) {
			if (p.type != ppt_tsc)
				continue;
			*ns = ptd_clock_ns(clock, p.payload.tsc.tsc);
			err = 0;
			break;
		}
	}
	pt_pkt_free_decoder(pkt);
	return err;
}

/* ---------------------------------------------------------------- merge */

struct chunk {
	struct ptd_event *ev;
	size_t nr;
	struct chunk *next;
};

/* A piece of a stream in the merge: its decoded-ahead chunks (guarded by the lock). */
struct piece {
	struct ptd_stream *s;
	struct chunk *head, *tail;	/* decoded, not yet merged */
	unsigned queued;		/* chunks in head..tail */
	bool busy;			/* a thread is decoding it */
	bool finished;			/* fully decoded */
};

/* One stream in the merge: its pieces (one when not split) and the merge cursor. */
struct lane {
	struct ptd_stream *s;
	struct piece *pc;		/* pieces, in trace order */
	size_t nr_pc;
	size_t nr_live;			/* pieces in use: a decode to the end replaced the rest */
	size_t at;			/* the piece being merged; later ones decode ahead */
	bool wanted;			/* the merge waits for it */
	struct chunk *cur;		/* chunk being merged (merge thread only) */
	size_t pos;			/* next event in cur */
	uint64_t floor;			/* the last time merged: times never go back */
	uint64_t add;			/* timeless: instructions of the pieces before */
	struct ptd_event join[2];	/* events the join with the piece before adds */
	size_t nr_join, join_pos;
	uint32_t clean_joins;		/* joins that are no resync (one sync less) */
	uint64_t join_calls, join_returns;	/* counted by the joins' events */
	uint64_t delivered;		/* events the merge took from it */
	uint64_t skip;			/* events of a replay to drop: taken already */
};

struct merge {
	struct lane *lanes;
	size_t nr;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct chunk *free;		/* recycled chunks (free_lock) */
	pthread_mutex_t free_lock;
	bool stop;			/* the merge failed: workers quit */
	int err;			/* first decode allocation error */
};

#define CHUNK_BYTES ((CHUNK_EVENTS + CHUNK_SLACK) * sizeof(struct ptd_event))

/*
 * A chunk's events, mapped with their pages in place: the pieces of a split stream
 * decode ahead of the merge, into hundreds of chunks, and a page fault per 4 KiB costs
 * more than the events it holds on a virtual machine (a tenth of the CPU of the decode).
 */
static struct ptd_event *chunk_events_alloc(void)
{
	void *p = mmap(NULL, CHUNK_BYTES, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * Chunks are recycled through a free list: a fresh 200 KiB allocation per chunk is an
 * mmap and its page faults, a cost per event as high as decoding it.
 */
static struct chunk *get_chunk(struct merge *m)
{
	struct chunk *c;

	pthread_mutex_lock(&m->free_lock);
	c = m->free;
	if (c)
		m->free = c->next;
	pthread_mutex_unlock(&m->free_lock);
	if (c)
		return c;
	c = malloc(sizeof(*c));
	if (c)
		c->ev = chunk_events_alloc();
	if (!c || !c->ev) {
		free(c);
		return NULL;
	}
	return c;
}

static void put_chunk(struct merge *m, struct chunk *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&m->free_lock);
	c->next = m->free;
	m->free = c;
	pthread_mutex_unlock(&m->free_lock);
}

static void free_chunks(struct chunk *c)
{
	while (c) {
		struct chunk *n = c->next;

		munmap(c->ev, CHUNK_BYTES);
		free(c);
		c = n;
	}
}

static struct chunk *decode_chunk(struct merge *m, struct ptd_stream *s, int *err)
{
	struct chunk *c = get_chunk(m);

	if (!c) {
		*err = -ENOMEM;
		return NULL;
	}
	c->nr = stream_fill(s, c->ev);
	c->next = NULL;
	return c;
}

/* Adds a decoded chunk to its piece; called with the lock held. */
static void piece_push(struct merge *m, struct piece *p, struct chunk *c)
{
	if (p->s->state == ST_DONE)
		p->finished = true;
	if (!c)
		return;
	if (!c->nr) {
		put_chunk(m, c);
		return;
	}
	if (p->tail)
		p->tail->next = c;
	else
		p->head = c;
	p->tail = c;
	p->queued++;
}

/*
 * The piece a worker should decode next, or NULL: the merge's current pieces first (the
 * one it waits for before all), each at most MAX_AHEAD chunks ahead; then the pieces
 * after them, decoded whole in the background.
 */
static struct piece *pick(struct merge *m)
{
	struct piece *best = NULL;
	int best_rank = -1;
	size_t i, k;

	for (i = 0; i < m->nr; i++) {
		struct lane *l = &m->lanes[i];

		for (k = l->at; k < l->nr_live; k++) {
			struct piece *p = &l->pc[k];
			int rank;

			if (p->busy || p->finished || (k == l->at && p->queued >= MAX_AHEAD))
				continue;
			rank = k == l->at ? 2 + l->wanted : 1;
			if (rank > best_rank || (rank == best_rank && best && p->queued < best->queued)) {
				best = p;
				best_rank = rank;
			}
			break;
		}
		/* the current piece is busy or full: the next one that is neither */
		for (k = l->at + 1; !best && k < l->nr_live; k++) {
			struct piece *p = &l->pc[k];

			if (!p->busy && !p->finished) {
				best = p;
				best_rank = 1;
			}
		}
	}
	return best;
}

static void *worker(void *arg)
{
	struct merge *m = arg;

	pthread_mutex_lock(&m->lock);
	for (;;) {
		struct piece *p;
		struct chunk *c;
		int err = 0;

		if (m->stop)
			break;
		p = pick(m);
		if (!p) {
			/* even when all is decoded: a join may ask for a piece again */
			pthread_cond_wait(&m->cond, &m->lock);
			continue;
		}
		p->busy = true;
		pthread_mutex_unlock(&m->lock);
		c = decode_chunk(m, p->s, &err);
		pthread_mutex_lock(&m->lock);
		p->busy = false;
		if (err) {
			m->err = err;
			p->finished = true;
		}
		piece_push(m, p, c);
		pthread_cond_broadcast(&m->cond);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

/* ---------------------------------------------------------------- pieces */

/*
 * One CPU's stream on several cores. The stream is split at PSBs into pieces of about
 * equal size, decoded in parallel, and joined in the merge, in trace order, so that the
 * events are those of the sequential decode:
 * - A piece ends where the sequential decode crosses the next piece's PSB+: at the
 *   MODE.Exec status update bound to its FUP's ip (PE_CLEAN), with the state there
 *   (thread, tracing on, the branch whose target the next block gives); or where a
 *   resync after an error finds that PSB (PE_SYNC); or where the bytes end, up to that
 *   PSB+'s PSBEND, with tracing off (PE_EOS).
 * - A piece after the first syncs at its PSB and withholds the START of its first
 *   block (piece_head). The join then gives what the sequential decode makes there: the
 *   call, return or jump the previous piece's last branch makes with that block
 *   (PE_CLEAN, same thread), the START (PE_SYNC: the sequential decode resyncs there too),
 *   or nothing (tracing off across the PSB). The hardware starts return compression
 *   afresh at each PSB, so no return of a piece needs a call of the piece before.
 * - Anything else (the trampoline of a uretprobe or a probed instruction's copy across
 *   the PSB, a return into the trampoline at the seam, another thread by the schedule,
 *   an error at the seam, events before the first block, a work budget that ran out)
 *   and the piece is decoded again, as a continuation of the state the piece before
 *   ended in, the way the sequential decode goes on through the PSB.
 * Times: a piece's never go back from the previous piece's; without timing packets,
 * times are instruction counts, and a piece's start from the pieces before.
 */
#define MIN_PIECE ((uint64_t)1 << 20)

/* Bytes per piece at least (PTBPF_DECODE_PIECE overrides: the tests split small traces). */
static uint64_t min_piece(void)
{
	const char *e = getenv("PTBPF_DECODE_PIECE");
	unsigned long long v;
	char *end;

	if (e && *e) {
		v = strtoull(e, &end, 0);
		if (!*end && v)
			return v;
	}
	return MIN_PIECE;
}

/* The ip of a FUP in a PSB+ (compressed against 0: the last ip is reset at PSB). */
static uint64_t psb_fup_ip(const struct pt_packet_ip *ip)
{
	switch (ip->ipc) {
	case pt_ipc_update_16:
		return ip->ip & 0xffff;
	case pt_ipc_update_32:
		return ip->ip & 0xffffffff;
	case pt_ipc_update_48:
		return ip->ip & 0xffffffffffffull;
	case pt_ipc_sext_48:
		return (uint64_t)((int64_t)(ip->ip << 16) >> 16);
	case pt_ipc_full:
		return ip->ip;
	default:
		return 0;
	}
}

/*
 * The offset just past the PSBEND of the PSB+ at `psb`, and its FUP's ip in *fup_ip (0:
 * none); 0 if that PSB+ cannot end a piece: a FUP without MODE.Exec (no status update
 * would mark where the flow meets it).
 */
static uint64_t boundary_end(const struct ptd_stream *s, uint64_t psb, uint64_t *fup_ip)
{
	struct pt_packet_decoder *pkt = ptd_pkt_open(s->o.buf, s->o.size, &s->o.config);
	bool fup = false, exec = false;
	uint64_t end = 0, off;

	*fup_ip = 0;
	struct pt_packet p;
	int i;

	if (!pkt)
		return 0;
	if (pt_pkt_sync_set(pkt, psb) >= 0) {
		for (i = 0; i < 64 && pt_pkt_get_offset(pkt, &off) >= 0 &&
			    pt_pkt_next(pkt, &p, sizeof(p)) >= 0; i++) {
			if (p.type == ppt_fup) {
				fup = true;
				*fup_ip = psb_fup_ip(&p.payload.ip);
			}
			if (p.type == ppt_mode && p.payload.mode.leaf == pt_mol_exec)
				exec = true;
			if (p.type == ppt_psbend) {
				end = fup && !exec ? 0 : off + p.size;
				break;
			}
		}
	}
	pt_pkt_free_decoder(pkt);
	return end;
}

/* Thread and image of a piece's stream from `from` (NULL: the parent's fixed thread). */
static int piece_thread(struct ptd_stream *s, const struct ptd_stream *from)
{
	if (from) {
		struct pt_image *image;

		s->pid = from->pid;
		s->tid = from->tid;
		s->as = from->as;
		s->selected = from->selected;
		s->have_thread = from->have_thread;
		s->up_start = from->up_start;
		s->up_end = from->up_end;
		s->sched_idx = from->sched_idx;
		image = s->have_thread ? stream_image(s, s->as) : NULL;
		return image ? pt_blk_set_image(s->dec, image) : 0;
	}
	if (!s->o.nr_sched && s->o.fixed_as >= 0)
		return set_thread(s, s->o.fixed_pid, s->o.fixed_tid, s->o.fixed_as);
	return 0;
}

/*
 * A piece of `parent`: bytes [begin, stop) decoded with a decoder that reads up to
 * `end` (the PSB+ at stop, to meet it); stop 0: to the end. The first piece syncs like
 * the whole stream would; the others at their PSB.
 */
static struct ptd_stream *piece_new(const struct ptd_stream *parent, uint64_t begin,
				    uint64_t stop, uint64_t stop_ip, uint64_t end)
{
	struct ptd_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->o = parent->o;
	s->o.ranges = NULL;
	s->o.nr_ranges = 0;
	s->as = -1;
	s->selected = true;
	s->budget = PTD_BLOCKS_BASE;
	if (begin) {
		/* no peak yet: f starts at -PTD_BLOCKS_PER_BYTE * begin (budget_check()) */
		s->peak = -(int64_t)PTD_BLOCKS_PER_BYTE * (int64_t)begin;
		s->budget = 0;
	}
	s->stop = stop;
	s->stop_ip = stop_ip;
	s->piece = (struct ptd_range){ begin, end };
	if (begin) {
		s->o.ranges = &s->piece;
		s->o.nr_ranges = 1;
		s->range_open = true;
		s->withhold = true;
	}
	s->st.bytes = (stop ? stop : parent->o.size) - begin;
	s->dec = open_decoder(&s->o, end);
	if (!s->dec || piece_thread(s, NULL) < 0) {
		ptd_stream_free(s);
		return NULL;
	}
	return s;
}

/*
 * Splits lane `l`'s stream into `n` pieces at PSBs near equal offsets (a PSB+ that
 * cannot end a piece is passed over); a stream that does not split keeps one piece,
 * itself. 0 or -ENOMEM.
 */
static int split(struct lane *l, size_t n)
{
	const struct ptd_stream *s = l->s;
	uint64_t at[64], end[64], ip[64], first;
	size_t k = 0, i, tries;
	struct ptd_psb psb;

	l->pc = calloc(n, sizeof(*l->pc));
	if (!l->pc)
		return -ENOMEM;
	l->nr_pc = 1;
	l->pc[0].s = l->s;
	if (n < 2 || s->o.ranges || s->o.size < 2 * min_piece())
		return 0;
	if (n > 64)
		n = 64;
	/* the first piece holds the first PSB: the bytes before it (a ring that wrapped) hold
	 * no sync point, and a piece without one would decode nothing of its own */
	if (ptd_psb_next(s->o.buf, s->o.size, &s->o.config, &s->o.clock, 0, &psb))
		return 0;
	first = psb.offset;
	for (i = 1; i < n; i++) {
		uint64_t from = s->o.size / n * i;

		/*
		 * A PSB+ with a FUP first: tracing is on there, and the pieces join unless
		 * something unusual happens at the seam. Without one, the decoder may still
		 * be tracing (a PSB+ between a PGD and its packets...): the last resort.
		 */
		bool fallback = false;
		uint64_t fb_at = 0, fb_end = 0;
		size_t found = k;

		for (tries = 0; tries < 16; tries++) {
			if (ptd_psb_next(s->o.buf, s->o.size, &s->o.config, &s->o.clock, from, &psb))
				break;
			from = psb.offset + 1;
			if (psb.offset <= first || (k && psb.offset <= at[k - 1]))
				continue;
			end[k] = boundary_end(s, psb.offset, &ip[k]);
			if (end[k] && ip[k]) {
				at[k++] = psb.offset;
				break;
			}
			if (end[k] && !fallback) {
				fallback = true;
				fb_at = psb.offset;
				fb_end = end[k];
			}
		}
		if (k == found && fallback && (!k || fb_at > at[k - 1])) {
			at[k] = fb_at;
			end[k] = fb_end;
			ip[k++] = 0;
		}
	}
	if (!k)
		return 0;
	for (i = 0; i <= k; i++) {
		struct ptd_stream *p = piece_new(s, i ? at[i - 1] : 0, i < k ? at[i] : 0,
						 i < k ? ip[i] : 0, i < k ? end[i] : s->o.size);

		if (!p)
			goto fail;
		l->pc[i].s = p;
		l->nr_pc = i + 1;
	}
	return 0;
fail:
	for (i = 0; i < l->nr_pc; i++)
		ptd_stream_free(l->pc[i].s);
	l->nr_pc = 1;
	l->pc[0].s = l->s;
	return -ENOMEM;
}

/* Is lane `l` split (its pieces are streams of their own)? */
static bool split_lane(const struct lane *l)
{
	return l->pc && l->pc[0].s != l->s;
}

/*
 * Joins piece `next` to `prev` (fully decoded): 0, with the events the sequential decode
 * makes at the seam in l->join; 1: `next` must be decoded again as a continuation; 2:
 * so must the rest of the stream (a trace that spends the work budget: decoding each
 * piece again from the start would cost the sequential decode once per piece).
 * `first` is next's first event, NULL if it has none.
 */
static int join(struct lane *l, const struct ptd_stream *prev, struct ptd_stream *next,
		const struct ptd_event *first, uint64_t add_prev, uint64_t add_next)
{
	const struct piece_head *h = &next->head;
	struct ptd_event *ev;
	uint64_t blocks_before = 0;
	size_t k;

	l->nr_join = l->join_pos = 0;
	if (!next->head_valid || h->events_before || prev->uret || prev->xol)
		return 1;
	/*
	 * The work budget: next's own ran out, or the sequential decode's would have, with
	 * the blocks of the pieces before (budget_check()).
	 */
	for (k = 0; k <= l->at; k++)
		if (l->pc[k].s)
			blocks_before += l->pc[k].s->st.blocks;
	if (next->work_limit_hit || (int64_t)blocks_before + next->peak > (int64_t)PTD_BLOCKS_BASE)
		return 2;
	/*
	 * A return of prev into the [uprobes] trampoline: the sequential decode follows the
	 * trampoline to where the return lands, next took it for the program's own code.
	 */
	if (prev->end == PE_CLEAN && h->block && h->as >= 0 && h->as == prev->as &&
	    in_uprobes(prev, h->ip))
		return 1;
	if (prev->end == PE_CLEAN && prev->enabled && h->block && h->pid == prev->pid &&
	    h->tid == prev->tid && h->as == prev->as) {
		/* the flow goes on: the last branch of prev lands on next's first block */
		struct ptd_stream t = *prev;
		uint64_t branch_time = t.pend.time;

		t.out = l->join;
		t.nr_out = 0;
		t.now = h->time;
		t.time_stale = false;
		resolve(&t, h->ip);
		l->join_calls += t.st.calls - prev->st.calls;
		l->join_returns += t.st.returns - prev->st.returns;
		if (t.nr_out)
			l->join[0].time = branch_time ? branch_time + add_prev : h->time + add_next;
		l->nr_join = t.nr_out;
		l->clean_joins++;
		return 0;
	}
	if (prev->end == PE_SYNC) {
		/* the sequential decode resyncs at next's PSB too: next's START */
		if (h->block && next->selected && h->as >= 0) {
			ev = &l->join[l->nr_join++];
			memset(ev, 0, sizeof(*ev));
			ev->kind = PTD_START;
			ev->time = h->time + add_next;
			ev->to = h->ip;
			ev->pid = h->pid;
			ev->tid = h->tid;
			ev->asid = (uint32_t)h->as;
			ev->cpu = next->o.index;
		}
		return 0;
	}
	if (prev->end == PE_EOS && !prev->end_after_error && !prev->enabled && !h->block &&
	    (!first || first->kind == PTD_START)) {
		/* tracing off across the PSB: next goes on from its own START */
		l->clean_joins++;
		return 0;
	}
	return 1;
}

/*
 * The sequential decode itself, from the start of the stream to the end of `next` (of
 * the stream: to_end): what replaces a piece that does not join. Its first l->delivered
 * events are the ones the merge already took (the joins before were exact), and are
 * dropped.
 */
static struct ptd_stream *replay(struct lane *l, const struct ptd_stream *next, bool to_end)
{
	if (to_end)
		return piece_new(l->s, 0, 0, 0, l->s->o.size);
	return piece_new(l->s, 0, next->stop, next->stop_ip, next->piece.end);
}

/* Frees a piece's queued chunks and its stream (not the lane's own). */
static void piece_drop(struct merge *m, struct lane *l, struct piece *p)
{
	while (p->head) {
		struct chunk *c = p->head;

		p->head = c->next;
		put_chunk(m, c);
	}
	p->tail = NULL;
	p->queued = 0;
	if (p->s != l->s)
		ptd_stream_free(p->s);
	p->s = NULL;
}

/*
 * The merge moves from piece l->at to the next: waits for the next piece's first chunk,
 * joins it, or decodes it again as a continuation. 0 or -ENOMEM.
 */
static int next_piece(struct merge *m, struct lane *l, bool threaded)
{
	struct piece *prev = &l->pc[l->at], *next = &l->pc[l->at + 1];
	uint64_t add_prev = l->add;
	int err = 0, again;

	if (threaded)
		pthread_mutex_lock(&m->lock);
	while (threaded && (next->busy || (!next->head && !next->finished))) {
		l->wanted = true;
		pthread_cond_broadcast(&m->cond);
		pthread_cond_wait(&m->cond, &m->lock);
	}
	l->wanted = false;
	if (!threaded) {
		while (!next->head && !next->finished) {
			struct chunk *c = decode_chunk(m, next->s, &err);

			if (err) {
				next->finished = true;
				break;
			}
			piece_push(m, next, c);
		}
	}
	if (!err) {
		/* without time, a piece's "times" count its instructions from 0 */
		if (next->s->o.timeless)
			l->add += prev->s->st.insns;
		dlog("[piece %zu at %" PRIx64 ": end %d, %" PRIu64 " insns, %" PRIu64 " blocks]\n",
		     l->at, prev->s->piece.begin, prev->s->end, prev->s->st.insns, prev->s->st.blocks);
		again = join(l, prev->s, next->s, next->head ? &next->head->ev[0] : NULL, add_prev,
			     l->add);
		if (again) {
			struct ptd_stream *c = replay(l, next->s, again == 2);

			dlog("[piece %zu at %" PRIx64 ": decoded again (end %d%s%s%s, head %d/%d, "
			     "tid %u/%u, "
			     "%" PRIu64 " events before, first %d)]\n",
			     l->at + 1, next->s->piece.begin, prev->s->end,
			     prev->s->end_after_error ? " after error" : "",
			     prev->s->enabled ? " enabled" : "", prev->s->uret || prev->s->xol ?
			     " uprobes" : "", next->s->head_valid, next->s->head.block,
			     prev->s->tid, next->s->head.tid,
			     next->s->head.events_before, next->head ? next->head->ev[0].kind : 0);
			if (!c) {
				err = -ENOMEM;
			} else {
				size_t k;

				piece_drop(m, l, next);
				next->s = c;
				next->finished = false;
				/*
				 * The pieces after it are out of use (a thread may still be
				 * decoding one: they are freed with the merge).
				 */
				if (again == 2)
					l->nr_live = l->at + 2;
				/* it counts from the start: the pieces before count no more */
				for (k = 0; k <= l->at; k++)
					if (l->pc[k].s)
						memset(&l->pc[k].s->st, 0, sizeof(l->pc[k].s->st));
				l->clean_joins = 0;
				l->join_calls = l->join_returns = 0;
				l->add = 0;
				l->nr_join = 0;
				l->skip = l->delivered;
			}
		}
	}
	l->at++;
	if (threaded) {
		pthread_cond_broadcast(&m->cond);
		pthread_mutex_unlock(&m->lock);
	}
	return err;
}

/* Adjusts a chunk's times as the merge takes it: never back, plus the pieces' base. */
static void adjust_times(struct lane *l, struct ptd_event *ev, size_t n, uint64_t add)
{
	size_t i;

	if (!split_lane(l))
		return;
	for (i = 0; i < n; i++) {
		uint64_t t = ev[i].time + add;

		ev[i].time = t < l->floor ? l->floor : t;
		l->floor = ev[i].time;
	}
}

/* The next event of a lane, or NULL when it has no more; merge thread only. */
static const struct ptd_event *lane_head(struct merge *m, struct lane *l, bool threaded)
{
	struct piece *p;

	if (l->join_pos < l->nr_join)
		return &l->join[l->join_pos];
	if (l->cur && l->pos < l->cur->nr)
		return &l->cur->ev[l->pos];
	put_chunk(m, l->cur);
	l->cur = NULL;
	l->pos = 0;
	for (;;) {
		p = &l->pc[l->at];
		if (!threaded) {
			/* decode on demand, in this thread */
			while (!p->head && !p->finished) {
				int err = 0;
				struct chunk *c = decode_chunk(m, p->s, &err);

				if (err) {
					m->err = err;
					p->finished = true;
				}
				piece_push(m, p, c);
			}
		} else {
			pthread_mutex_lock(&m->lock);
			while (!p->head && !p->finished) {
				l->wanted = true;
				pthread_cond_broadcast(&m->cond);
				pthread_cond_wait(&m->cond, &m->lock);
			}
			l->wanted = false;
		}
		if (p->head) {
			l->cur = p->head;
			p->head = p->head->next;
			l->cur->next = NULL;
			if (!p->head)
				p->tail = NULL;
			p->queued--;
			if (threaded) {
				pthread_cond_broadcast(&m->cond);
				pthread_mutex_unlock(&m->lock);
			}
			if (l->skip) {
				/* a replay's events the merge took already */
				size_t n = l->skip < l->cur->nr ? l->skip : l->cur->nr;

				l->skip -= n;
				l->pos = n;
				adjust_times(l, l->cur->ev + n, l->cur->nr - n, l->add);
				if (n == l->cur->nr)
					return lane_head(m, l, threaded);
				return &l->cur->ev[n];
			}
			adjust_times(l, l->cur->ev, l->cur->nr, l->add);
			return &l->cur->ev[0];
		}
		if (threaded)
			pthread_mutex_unlock(&m->lock);
		/* this piece is done: on to the next, joined */
		if (l->at + 1 >= l->nr_live)
			return NULL;
		{
			int err = next_piece(m, l, threaded);

			if (err) {
				m->err = err;
				return NULL;
			}
		}
		if (l->nr_join) {
			/* their times are the stream's already */
			adjust_times(l, l->join, l->nr_join, 0);
			return &l->join[0];
		}
	}
}

/* The merge took lane l's head event. */
static void lane_next(struct lane *l)
{
	l->delivered++;
	if (l->join_pos < l->nr_join)
		l->join_pos++;
	else
		l->pos++;
}

double ptd_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void progress(struct merge *m, double start, double *last, bool final)
{
	uint64_t done = 0, total = 0;
	double t = ptd_seconds();
	size_t i, k;

	if (!final && (t - start < 1.0 || t - *last < 0.5))
		return;
	if (final && *last == 0)
		return;
	*last = t;
	for (i = 0; i < m->nr; i++) {
		for (k = 0; k < m->lanes[i].nr_live; k++) {
			const struct ptd_stream *s = m->lanes[i].pc[k].s;

			if (s && s->pos > s->piece.begin)
				done += s->pos - s->piece.begin;
		}
		total += m->lanes[i].s->o.size;
	}
	fprintf(stderr, "\rptbpf: decoding %5.1f%% of %.1f MB of PT (%.1f MB/s)%s",
		total ? 100.0 * done / total : 100.0, total / 1e6, done / 1e6 / (t - start),
		final ? "\n" : "");
}

static bool before(const struct ptd_event *a, const struct ptd_event *b)
{
	if (a->time != b->time)
		return a->time < b->time;
	return a->cpu < b->cpu;
}

/* A split lane's figures are its pieces', as the sequential decode would count them. */
static void lane_stats(struct lane *l)
{
	struct decode_stats st = {};
	size_t k;

	if (!split_lane(l))
		return;
	for (k = 0; k < l->nr_live; k++)
		if (l->pc[k].s)
			ptd_stream_stats(l->pc[k].s, &st);
	l->s->st.insns = st.insns;
	l->s->st.blocks = st.blocks;
	l->s->st.calls = st.calls + l->join_calls;
	l->s->st.returns = st.returns + l->join_returns;
	l->s->st.errors = st.errors;
	l->s->st.overflows = st.overflows;
	l->s->st.syncs = st.syncs - l->clean_joins;
}

int ptd_decode_streams(struct ptd_stream **streams, size_t nr, int jobs,
		       const struct ptd_event *extra, size_t nr_extra, const struct ptd_sink *sink,
		       bool show_progress)
{
	struct merge m = { .nr = nr };
	pthread_t *tids = NULL;
	int nthreads = 0, err = 0, i;
	size_t k, x = 0, pieces = 0;
	double start = ptd_seconds(), last = 0;
	unsigned long iter = 0;

	m.lanes = calloc(nr ? nr : 1, sizeof(*m.lanes));
	if (!m.lanes)
		return -ENOMEM;
	pthread_mutex_init(&m.lock, NULL);
	pthread_mutex_init(&m.free_lock, NULL);
	pthread_cond_init(&m.cond, NULL);
	for (k = 0; k < nr; k++) {
		m.lanes[k].s = streams[k];
		/* more threads than streams: the streams split at PSBs, two pieces a thread */
		err = split(&m.lanes[k], jobs > (int)nr ? (size_t)(2 * jobs / (int)nr) : 1);
		if (err)
			goto cleanup;
		m.lanes[k].nr_live = m.lanes[k].nr_pc;
		pieces += m.lanes[k].nr_pc;
	}

	/* one piece needs no helper: the merge thread decodes it */
	if (jobs > (int)pieces)
		jobs = (int)pieces;
	if (jobs > 1) {
		tids = calloc((size_t)jobs, sizeof(*tids));
		if (!tids) {
			err = -ENOMEM;
			goto cleanup;
		}
		for (i = 0; i < jobs; i++) {
			if (pthread_create(&tids[i], NULL, worker, &m))
				break;
			nthreads++;
		}
	}

	for (;;) {
		const struct ptd_event *best = NULL, *ev;
		struct lane *bl = NULL;

		for (k = 0; k < nr; k++) {
			ev = lane_head(&m, &m.lanes[k], nthreads > 0);
			if (ev && (!best || before(ev, best))) {
				best = ev;
				bl = &m.lanes[k];
			}
		}
		/* sideband goes first among equal times: a COMM names what follows */
		if (x < nr_extra && (!best || extra[x].time <= best->time)) {
			best = &extra[x++];
			bl = NULL;
		}
		if (!best)
			break;
		err = sink->event(sink->ctx, best);
		if (err)
			break;
		if (bl)
			lane_next(bl);
		if (show_progress && !(++iter & 0xfff))
			progress(&m, start, &last, false);
	}
	if (!err)
		err = m.err;
	if (show_progress)
		progress(&m, start, &last, true);

cleanup:
	pthread_mutex_lock(&m.lock);
	m.stop = true;
	pthread_cond_broadcast(&m.cond);
	pthread_mutex_unlock(&m.lock);
	for (i = 0; i < nthreads; i++)
		pthread_join(tids[i], NULL);
	for (k = 0; k < nr; k++) {
		struct lane *l = &m.lanes[k];
		size_t p;

		lane_stats(l);
		for (p = 0; p < l->nr_pc; p++)
			piece_drop(&m, l, &l->pc[p]);
		free_chunks(l->cur);
		free(l->pc);
	}
	free_chunks(m.free);
	free(tids);
	free(m.lanes);
	pthread_mutex_destroy(&m.lock);
	pthread_mutex_destroy(&m.free_lock);
	pthread_cond_destroy(&m.cond);
	return err;
}
