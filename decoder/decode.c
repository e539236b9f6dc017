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
 * and decoded by any thread; split.c merges the chunks of all streams by time, and
 * decodes one stream in pieces on several cores, with the pieces and their joins made
 * here ("pieces" below: only the stream's state tells what happens at a seam).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "fastpath.h"
#include "log.h"
#include "piece.h"

/*
 * A piece's last instruction until its first block: the one the piece before ended
 * with, which the join fills in (ptd_piece_join()); never a real instruction's address.
 */
#define PTD_IP_SEAM UINT64_MAX

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

/*
 * An address space set on the decoder at a position since the last sync: after `insns`
 * instructions and `events` events.
 */
struct as_change {
	uint64_t insns, events;
	int as;
};

/*
 * Calls and returns a stretch may go through, disables and enables it may take (each one
 * an event: within a chunk's slack, see stretch_lim()). callgrind, mruby: 64 ended 7.7 K
 * stretches at a disable for want of room; 256 cuts 0.4 % of the instructions, 1024 only
 * 0.1 % more (40 KiB a stream).
 */
#define STRETCH_EDGES 256

struct ptd_stream {
	struct ptd_stream_opts o;
	struct pt_block_decoder *dec;
	/*
	 * The fast path (decoder/fastpath.c, o.fast): it steps while on_fast; what it
	 * cannot take, the block decoder takes from there to the next sync, after it
	 * replayed the steps since that sync (fast_sync_off, with the address spaces of
	 * as_log set when they were).
	 */
	struct ptd_fast *fast;
	bool on_fast;
	uint64_t fast_sync_off;
	int fast_sync_as;
	uint64_t fast_insns, fast_events;	/* position since that sync */
	bool fast_pending;		/* the last step left an event pending */
	struct as_change *as_log;
	size_t nr_as_log, cap_as_log;
	uint64_t fast_blocks, fast_fallbacks, replayed;
	enum stream_state state;
	int status;		/* pts_* flags of the last libipt call */
	uint64_t last_sync;	/* trace offset of the last sync point */
	bool synced;		/* last_sync is valid */

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
	/* synced with tracing on: START at the first block (beside uret and xol: on_block()
	 * and stretch_lim() test the three at once) */
	bool need_start;

	/* the calls and returns of a stretch (ptd_fast_stretch()), for on_stretch() */
	struct ptd_stretch_edge edges[STRETCH_EDGES];

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
	/*
	 * as_maps()'s last map: [maps_start, maps_end) of address space maps_as (an empty
	 * range: none). Every start of tracing asks (attribute()), mostly in the same map.
	 */
	int maps_as;
	uint64_t maps_start, maps_end;
	bool maps_exec;
	/*
	 * as_for()'s last answer: address space found_as for found_pid at any time of
	 * [found_from, found_until) (an empty range: none).
	 */
	uint32_t found_pid;
	int found_as;
	uint64_t found_from, found_until;
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
	/* events whose `from` is PTD_IP_SEAM, and the thread they are of */
	uint64_t seam_events;
	uint32_t seam_pid, seam_tid;

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

/* now() when the time is stale, with a clock: asked of the decoder. */
static uint64_t now_asked(struct ptd_stream *s)
{
	uint32_t lost_mtc, lost_cyc;
	uint64_t tsc;

	s->time_stale = false;
	if ((s->on_fast ? ptd_fast_time(s->fast, &tsc, &lost_mtc, &lost_cyc)
			: pt_blk_time(s->dec, &tsc, &lost_mtc, &lost_cyc)) >= 0 &&
	    tsc != s->last_tsc) {
		s->last_tsc = tsc;
		s->now = ptd_clock_ns(&s->o.clock, tsc);
	}
	return s->now;
}

/*
 * The time at the decoder's position, asked of libipt only when an event needs it:
 * most blocks end in a conditional branch that makes no event. Without a clock it is
 * the instruction count, in line (every call and return asks).
 */
static inline uint64_t now(struct ptd_stream *s)
{
	if (!s->time_stale)
		return s->now;
	if (!s->o.timeless)
		return now_asked(s);
	/* no clock: instructions stand in for nanoseconds */
	s->time_stale = false;
	s->now = s->st.insns;
	return s->now;
}

/* ---------------------------------------------------------------- events */

static inline int attribute(struct ptd_stream *s, uint64_t ip);

static inline struct ptd_event *emit(struct ptd_stream *s, enum ptd_kind kind, uint64_t time)
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

	if (s->on_fast)
		ptd_fast_get_offset(s->fast, &off);
	else
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
		attribute(s, ip == PTD_IP_SEAM ? 0 : ip);
	dlog("[%" PRIx64 ", %" PRIx64 ": error: %s]\n", off, ip, ptd_errstr(code));
	/* on at the next PSB */
	s->state = ST_SYNC;
	ev = emit(s, PTD_ERROR, now(s));
	if (!ev)
		return;
	ev->from = ip;
	ev->offset = off;
	ev->code = code;
	s->seam_events += ip == PTD_IP_SEAM;
}

/* ---------------------------------------------------------------- threads */

/* The address space of `pid` at `time` (raw mode: the only one), -ENOENT if none. */
static inline int as_for(struct ptd_stream *s, uint32_t pid, uint64_t time)
{
	if (s->o.fixed_as >= 0 && !s->o.nr_sched)
		return s->o.fixed_as;
	/* every start of tracing asks, mostly for the same process at much the same time */
	if (pid != s->found_pid || time < s->found_from || time >= s->found_until) {
		s->found_as = ptd_aspace_find_span(s->o.images, pid, time, &s->found_from,
						   &s->found_until);
		s->found_pid = pid;
	}
	return s->found_as;
}

static __attribute__((noinline)) bool as_maps_slow(struct ptd_stream *s, int as, uint64_t ip)
{
	const struct ptd_map *m;
	const struct ptd_aspace *a;

	m = as >= 0 ? ptd_aspace_lookup(s->o.images, as, ip) : NULL;
	if (!m)
		return false;
	a = &s->o.images->as[as];
	if (m >= a->maps && m < a->maps + a->nr_maps) {
		/* the address space's own map (not the kernel's it falls back to) */
		s->maps_as = as;
		s->maps_start = m->start;
		s->maps_end = m->end;
		s->maps_exec = m->exec;
	}
	return m->exec;
}

/* Whether address space `as` maps `ip` executable: its last map's answer in line. */
static inline bool as_maps(struct ptd_stream *s, int as, uint64_t ip)
{
	if (as == s->maps_as && ip >= s->maps_start && ip < s->maps_end)
		return s->maps_exec;
	return as_maps_slow(s, as, ip);
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

/* The decoders read the code of address space `as` (-1: none) from `image`. */
static int stream_set_image(struct ptd_stream *s, struct pt_image *image, int as)
{
	if (s->fast) {
		ptd_fast_set_as(s->fast, image ? as : -1);
		if (s->on_fast) {
			/* for a replay on the block decoder (fast_fallback()) */
			if (s->nr_as_log == s->cap_as_log) {
				size_t n = s->cap_as_log ? 2 * s->cap_as_log : 16;
				struct as_change *v = realloc(s->as_log, n * sizeof(*v));

				if (!v)
					return -pte_nomem;
				s->as_log = v;
				s->cap_as_log = n;
			}
			s->as_log[s->nr_as_log++] = (struct as_change){ s->fast_insns,
								       s->fast_events,
								       image ? as : -1 };
			return 0;
		}
	}
	return pt_blk_set_image(s->dec, image);
}

/* Sets the current thread and its image; returns 0 or a libipt error. */
static __attribute__((noinline)) int set_thread_changed(struct ptd_stream *s, uint32_t pid,
							  uint32_t tid, int as)
{
	int err = 0;

	if (as != s->as || !s->have_thread) {
		struct pt_image *image = stream_image(s, as);
		const struct ptd_aspace *a;
		uint32_t i;

		if (as >= 0 && !image)
			as = -1;
		err = stream_set_image(s, image, as);
		/* its [uprobes] page, looked at on every return */
		a = as >= 0 ? &s->o.images->as[as] : NULL;
		s->up_start = s->up_end = 0;
		for (i = 0; a && i < a->nr_maps; i++)
			if (a->maps[i].uprobes) {
				s->up_start = a->maps[i].start;
				s->up_end = a->maps[i].end;
			}
	}
	if (!s->have_thread || pid != s->pid || tid != s->tid) {
		s->selected = !s->o.selected || s->o.selected(s->o.selected_ctx, pid, tid);
		/* the last instruction decoded was another thread's, not this one's */
		if (s->have_thread)
			s->last_ip = 0;
		else if (s->last_ip == PTD_IP_SEAM) {
			s->seam_pid = pid;
			s->seam_tid = tid;
		}
	}
	s->pid = pid;
	s->tid = tid;
	s->as = as;
	s->have_thread = true;
	s->fn_valid = false;
	return err;
}

/* Whether the thread is (pid, tid) in address space `as` already. */
static inline bool same_thread(const struct ptd_stream *s, uint32_t pid, uint32_t tid, int as)
{
	return as == s->as && s->have_thread && pid == s->pid && tid == s->tid;
}

/* As set_thread_changed(), in line for the usual start of tracing: the same thread. */
static inline int set_thread(struct ptd_stream *s, uint32_t pid, uint32_t tid, int as)
{
	if (same_thread(s, pid, tid, as)) {
		s->fn_valid = false;
		return 0;
	}
	return set_thread_changed(s, pid, tid, as);
}

/*
 * Tracing starts at `ip` at time `t`: which thread is it (*pid, *tid, and the address
 * space, or a negative errno)? The CPU's schedule says, at the precision of the trace's
 * time; when its choice does not map `ip` but a neighbouring entry's process does, the
 * neighbour is right (the switch and the return to user space are a few hundred ns
 * apart, below MTC resolution). Asking again at the same time gives the same answer.
 * In line: each enable asks (kAFL's filters: 340 K on mruby).
 */
static inline __attribute__((always_inline)) int thread_at(struct ptd_stream *s, uint64_t ip,
							     uint64_t t, uint32_t *pid,
							     uint32_t *tid)
{
	const struct ptd_sched *sc = s->o.sched;
	size_t i = s->sched_idx, n = s->o.nr_sched;
	int as;

	if (!n) {
		*pid = s->o.fixed_pid;
		*tid = s->o.fixed_tid;
		return as_for(s, s->o.fixed_pid, t);
	}
	while (i + 1 < n && sc[i + 1].time <= t)
		i++;
	s->sched_idx = i;
	as = as_for(s, sc[i].pid, t);
	if (ip && !as_maps(s, as, ip)) {
		size_t j;

		for (j = i + 1; j < n && j <= i + 2; j++) {
			int a = as_for(s, sc[j].pid, t);

			if (as_maps(s, a, ip)) {
				s->sched_idx = i = j;
				as = a;
				break;
			}
		}
	}
	*pid = sc[i].pid;
	*tid = sc[i].tid;
	return as;
}

/* Tracing starts at `ip` now: its thread becomes the stream's (thread_at()). */
static inline __attribute__((always_inline)) int attribute(struct ptd_stream *s, uint64_t ip)
{
	uint32_t pid, tid;
	int as = thread_at(s, ip, now(s), &pid, &tid);

	return set_thread(s, pid, tid, as);
}

/* Tracing started at `ip` now, in the stream's thread: its START. */
static inline __attribute__((always_inline)) void tracing_started(struct ptd_stream *s,
								  uint64_t ip)
{
	struct ptd_event *ev;

	s->enabled = true;
	s->need_start = false;
	ev = emit(s, PTD_START, now(s));
	if (ev)
		ev->to = ip;
}

/* (in line, as stop_tracing(): on_event() makes one of each per disable and enable pair,
 * kAFL's filters: 340 K on mruby) */
static inline __attribute__((always_inline)) int start_tracing(struct ptd_stream *s, uint64_t ip)
{
	int err = attribute(s, ip);

	if (err < 0)
		return err;
	tracing_started(s, ip);
	return 0;
}

/* ---------------------------------------------------------------- branches */

/*
 * The class of the instruction at `p` (a block's last instruction that libipt left
 * as ptic_error: an indirect jump or a far transfer).
 */
enum pt_insn_class ptd_classify(const uint8_t *p, size_t n, enum pt_exec_mode mode)
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
			s->class_cache = ptd_zalloc_written(CLASS_CACHE_SIZE *
							sizeof(*s->class_cache));
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
		.iclass = (uint8_t)(n ? ptd_classify(buf, n, p->mode) : ptic_other),
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

/* The function range holding `addr`: symbols__func_range()'s answer, through the cache. */
static int fn_lookup(struct ptd_stream *s, uint64_t addr, uint64_t *start, uint64_t *end)
{
	if (!s->fn_cache)
		s->fn_cache = symbols__range_cache_new();	/* NULL: looked up each time */
	return symbols__func_range_cached(s->o.symbols, s->fn_cache, s->as, addr, start, end);
}

/* The function the flow is in becomes [start, end) of fn_lookup()'s answer `r`. */
static void fn_set(struct ptd_stream *s, int r, uint64_t start, uint64_t end)
{
	s->fn_start = start;
	s->fn_end = end;
	s->fn_valid = r >= 0;
	s->fn_known = r == 0;
}

/* The function the flow is in, when not known: the one of `from`, a jump's address. */
static void fn_from(struct ptd_stream *s, uint64_t from)
{
	uint64_t start = 0, end = 0;
	int r;

	if (s->fn_valid)
		return;
	r = fn_lookup(s, from, &start, &end);
	fn_set(s, r, start, end);
}

/*
 * Did a jump from `from` to `to` leave its function? Most jumps stay inside the range
 * of the current function: two compares. Otherwise the target's function is looked
 * up and becomes the current one. Between two addresses with no symbol nothing can be
 * told: no jump.
 */
static __attribute__((noinline)) bool jump_leaves_slow(struct ptd_stream *s, uint64_t from,
							 uint64_t to)
{
	uint64_t start, end;
	bool leaves;
	int r;

	fn_from(s, from);
	if (s->fn_valid && to >= s->fn_start && to < s->fn_end)
		return false;
	r = fn_lookup(s, to, &start, &end);
	leaves = (s->fn_valid && s->fn_known) || r == 0;
	fn_set(s, r, start, end);
	return leaves;
}

/* jump_leaves_slow()'s usual answer in line: a known function that holds the target. */
static inline bool jump_leaves(struct ptd_stream *s, uint64_t from, uint64_t to)
{
	if (s->fn_valid && to >= s->fn_start && to < s->fn_end)
		return false;
	return jump_leaves_slow(s, from, to);
}

/* 1: ip is in the [uprobes] page, 2: at its start (the uretprobe trampoline), else 0. */
static int in_uprobes(const struct ptd_stream *s, uint64_t ip)
{
	if (ip < s->up_start || ip >= s->up_end)
		return 0;
	return ip == s->up_start ? 2 : 1;
}

/* A call's or return's event: its counter, the function left, the event at `time`. */
static inline void call_return_event(struct ptd_stream *s, bool ret, uint64_t from, uint64_t to,
				     uint64_t time)
{
	struct ptd_event *ev;

	if (ret)
		s->st.returns++;
	else
		s->st.calls++;
	s->fn_valid = false;
	ev = emit(s, ret ? PTD_RETURN : PTD_CALL, time);
	if (ev) {
		ev->from = from;
		ev->to = to;
	}
}

/* The previous block's branch went to `to`. In line: every block's on_block() asks. */
static inline __attribute__((always_inline)) void resolve(struct ptd_stream *s, uint64_t to)
{
	struct pending_branch *p = &s->pend;
	struct ptd_event *ev;

	if (!p->valid)
		return;
	p->valid = false;
	switch (pending_class(s)) {
	case ptic_call:
	case ptic_far_call:
		call_return_event(s, false, p->ip, to, p->time ? p->time : now(s));
		return;
	case ptic_return:
	case ptic_far_return:
		if (s->as >= 0 && in_uprobes(s, to)) {
			/* uretprobe: the trampoline returns where tracing resumes */
			s->uret = true;
			s->uret_from = p->ip;
			s->uret_time = p->time;
			return;
		}
		call_return_event(s, true, p->ip, to, p->time ? p->time : now(s));
		return;
	case ptic_jump:
	case ptic_cond_jump:
	case ptic_far_jump:
		if (!s->o.symbols || s->as < 0 || !jump_leaves(s, p->ip, to))
			return;
		break;
	default:
		return;
	}
	ev = emit(s, PTD_JUMP, p->time ? p->time : now(s));
	if (ev) {
		ev->from = p->ip;
		ev->to = to;
	}
}

/* The branch at `ip` ends the block just decoded: its target is the next block's ip. */
static void set_pending(struct ptd_stream *s, uint64_t ip, enum pt_insn_class iclass,
			enum pt_exec_mode mode, int isid)
{
	struct pending_branch *p = &s->pend;

	s->last_ip = ip;
	p->valid = true;
	p->ip = ip;
	/* a branch that may make an event keeps the time it was taken at */
	p->time = iclass == ptic_cond_jump || iclass == ptic_other ? 0 : now(s);
	p->iclass = iclass;
	p->mode = mode;
	p->isid = isid;
	p->size = 0;
}

/*
 * on_block()'s rare cases: a start of tracing, a uretprobe's trampoline, a probed
 * instruction's copy. Whether the block's branch is the program's (false: nothing more).
 */
static bool on_block_rare(struct ptd_stream *s, const struct pt_block *b)
{
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
		return false;
	}
	return true;
}

static void on_block(struct ptd_stream *s, const struct pt_block *b)
{
	struct pending_branch *p = &s->pend;

	if ((s->need_start || s->uret || s->xol) && !on_block_rare(s, b))
		return;
	resolve(s, b->ip);
	set_pending(s, b->end_ip, b->iclass, b->mode, b->isid);
	if (b->truncated && b->size <= sizeof(p->raw)) {
		memcpy(p->raw, b->raw, b->size);
		p->size = b->size;
	}
}

/*
 * The function of a stretch's first jump (ptd_stretch_lim.range): jump_leaves()'s. The
 * fast path keeps the answer with the run and hands it back (struct ptd_stretch): it
 * becomes the function the flow is in there (fn_set()).
 */
static int stretch_range(void *ctx, uint64_t from, uint64_t *lo, uint64_t *hi)
{
	return fn_lookup(ctx, from, lo, hi);
}

/*
 * An edge's time (ptd_stretch_lim.time): what now() would say there, given the fast
 * decoder's time query's answer (status, tsc) there; as now_asked().
 */
static uint64_t stretch_time(void *ctx, int status, uint64_t tsc)
{
	struct ptd_stream *s = ctx;

	if (status >= 0 && tsc != s->last_tsc) {
		s->last_tsc = tsc;
		s->now = ptd_clock_ns(&s->o.clock, tsc);
	}
	return s->now;
}

/*
 * Whether a stretch may take an enable at `ip` (ptd_stretch_lim.resume), its event's
 * time `tsc`, after `insns` of its instructions: on_event() would make its START alone,
 * in the thread tracing stopped in (the time is now()'s there, as on_event() sets it).
 */
static bool stretch_resume(void *ctx, uint64_t ip, uint64_t tsc, uint64_t insns)
{
	struct ptd_stream *s = ctx;
	uint64_t t = s->o.timeless ? s->st.insns + insns : ptd_clock_ns(&s->o.clock, tsc);
	uint32_t pid, tid;
	int as;

	if (s->uret || (s->as >= 0 && in_uprobes(s, ip) == 1))
		return false;
	as = thread_at(s, ip, t, &pid, &tid);
	return same_thread(s, pid, tid, as);
}

/* The branch before the next block, as a stretch from there sees it (stretch_after()). */
enum stretch_after {
	AFTER_NONE,	/* no stretch may start here */
	AFTER_CALLRET,	/* a call or return with its time: its event waits, the function
			 * it leaves is forgotten */
	AFTER_JUMP,	/* a jump, judged by the function of its ip (found now) */
	AFTER_OTHER,	/* nothing pending that makes an event */
};

/*
 * Whether a stretch may start at the next block, and what the branch before it does to
 * the function the flow is in. stretch_lim() asks it; a block taken alone because an
 * event binds further on (a disable: 340 K on mruby) asks it too, so that the function
 * is left as a stretch would have left it. In line: a stretch follows every enable.
 */
static inline __attribute__((always_inline)) enum stretch_after
stretch_after(struct ptd_stream *s)
{
	struct pending_branch *p = &s->pend;
	uint64_t still = 0xfff - (s->still_blocks & 0xfff);

	if (s->need_start || s->uret || s->xol || s->st.blocks >= s->budget || !still)
		return AFTER_NONE;
	switch (p->valid ? pending_class(s) : ptic_other) {
	case ptic_return:
	case ptic_far_return:
		/* a return into the uretprobe trampoline waits for where it lands */
		if (s->as >= 0 && in_uprobes(s, ptd_fast_ip(s->fast)))
			return AFTER_NONE;
		/* fall through */
	case ptic_call:
	case ptic_far_call:
		/*
		 * Its event is made after the stretch, before its blocks are counted, at the
		 * time the branch was taken (0: read later, at the next block: not here). It
		 * leaves the function: the first jump's address tells the new one.
		 */
		if (!p->time)
			return AFTER_NONE;
		s->fn_valid = false;
		return AFTER_CALLRET;
	case ptic_jump:
	case ptic_cond_jump:
	case ptic_far_jump:
		/* resolve() asks jump_leaves(), which judges it by the function of its ip */
		if (s->o.symbols && s->as >= 0)
			fn_from(s, p->ip);
		return AFTER_JUMP;
	default:
		return AFTER_OTHER;
	}
}

/*
 * Whether the next blocks may go as a stretch (ptd_fast_stretch()): blocks at which
 * on_block() would only count or make a call's or return's event (no START, no
 * trampoline, no event between them), within the budget and the endless-loop checks,
 * whose look at the trace offset stays with a block of its own. Fills `lim`. *defer:
 * the branch before them makes an event (a call or return), made by on_stretch() if
 * there are blocks, else by the next block's on_block() as always.
 */
static bool stretch_lim(struct ptd_stream *s, struct ptd_stretch_lim *lim, bool *defer)
{
	enum stretch_after after = stretch_after(s);
	bool symbols = s->o.symbols && s->as >= 0;
	uint64_t still = 0xfff - (s->still_blocks & 0xfff);

	if (after == AFTER_NONE)
		return false;
	lim->max_blocks = s->budget - s->st.blocks;
	if (lim->max_blocks > still)
		lim->max_blocks = still;
	lim->check_entry = false;
	lim->ask_range = false;
	lim->range = symbols ? stretch_range : NULL;
	lim->ctx = s;
	/*
	 * Its calls and returns, each an event: no more than fill the chunk (the step's
	 * other events, at most two, go into its slack).
	 */
	lim->edges = s->edges;
	lim->max_edges = STRETCH_EDGES;
	if (s->nr_out + lim->max_edges > PTD_CHUNK_EVENTS)
		lim->max_edges = s->nr_out < PTD_CHUNK_EVENTS ?
				 (unsigned)(PTD_CHUNK_EVENTS - s->nr_out) : 0;
	/* resolve(): a return into the trampoline waits for where it lands */
	lim->up_start = s->as >= 0 ? s->up_start : 0;
	lim->up_end = s->as >= 0 ? s->up_end : 0;
	lim->time = s->o.timeless ? NULL : stretch_time;
	lim->resume = stretch_resume;
	*defer = after == AFTER_CALLRET;
	if (after == AFTER_CALLRET && symbols) {
		lim->lo = lim->hi = 0;
		lim->ask_range = true;
		return true;
	}
	if (after == AFTER_JUMP && symbols)
		lim->check_entry = true;
	if (!symbols) {
		lim->lo = 0;
		lim->hi = UINT64_MAX;
	} else if (s->fn_valid) {
		/* jump_leaves(): a target in the function's range is no event, no change */
		lim->lo = s->fn_start;
		lim->hi = s->fn_end;
	} else if (!lim->check_entry) {
		/* no branch to judge (tracing started): jump_leaves() asks at the first jump */
		lim->lo = lim->hi = 0;
		lim->ask_range = true;
	} else {
		return false;
	}
	return true;
}

/* Tracing stopped after `ip`; it would go on at `next` (0: unknown) if nothing intervened. */
static inline __attribute__((always_inline)) void stop_tracing(struct ptd_stream *s,
							       enum cs_stop_reason why,
							       uint64_t ip, uint64_t next)
{
	struct ptd_event *ev;

	s->enabled = false;
	ev = emit(s, PTD_STOP, now(s));
	if (ev) {
		ev->from = ip;
		ev->to = next;
		ev->reason = (uint16_t)why;
		s->seam_events += ip == PTD_IP_SEAM;
	}
}

/* The time now() says at edge `e` of a stretch that began after `insns0` instructions. */
static uint64_t edge_now(const struct ptd_stream *s, const struct ptd_stretch_edge *e,
			 uint64_t insns0)
{
	return s->o.timeless ? insns0 + e->insns : e->time;
}


/*
 * Edge `e` of a stretch at `time`: a call's or return's event, as resolve() makes it, or
 * a disable's STOP or an enable's START, as on_event() makes them at their event's time
 * (the enable's thread is the stream's: stretch_resume()).
 */
static inline void edge_event(struct ptd_stream *s, const struct ptd_stretch_edge *e,
			      uint64_t time)
{
	switch (e->kind) {
	case PTD_EDGE_CALL:
	case PTD_EDGE_RETURN:
		call_return_event(s, e->kind == PTD_EDGE_RETURN, e->from, e->to, time);
		return;
	case PTD_EDGE_STOP:
	case PTD_EDGE_START:
		s->now = time;
		s->time_stale = false;
		s->pend.valid = false;
		if (e->kind == PTD_EDGE_STOP) {
			stop_tracing(s, CS_STOP_UNTRACED, e->from, 0);
		} else {
			/* attribute() found the same thread (stretch_resume()): set_thread()'s */
			s->fn_valid = false;
			tracing_started(s, e->to);
		}
		return;
	}
}

/*
 * A stretch of blocks went by (ptd_fast_stretch()): count them as on_block() would, and
 * make the events of its calls and returns as resolve() would have, but the last one's
 * when it ends the stretch: it is pending, as after its block; and those of the
 * disables and enables it took, as on_event() would have.
 */
static void on_stretch(struct ptd_stream *s, const struct ptd_stretch *st, bool defer)
{
	uint64_t insns0 = s->st.insns;
	unsigned k, events = st->nr_edges - st->edge_last;

	/* the call or return into its first block */
	if (defer)
		resolve(s, st->ip);
	for (k = 0; k < events; k++)
		edge_event(s, &s->edges[k], edge_now(s, &s->edges[k], insns0));
	/* the function since its last edge (or since it began) */
	if (st->ranged)
		fn_set(s, st->range, st->lo, st->hi);
	s->fast_insns += st->insns;
	s->fast_blocks += st->blocks;
	s->fast_events += st->events;
	s->st.fast_stretched += st->blocks;
	s->st.fast_edges += st->nr_edges - st->events;
	s->st.insns += st->insns;
	s->st.blocks += st->blocks;
	s->still_blocks += (uint32_t)st->blocks;
	if (st->toggled_last) {
		/* tracing stopped after its last block (and resumed): no branch is pending,
		 * the time is the last event's (edge_event()) */
		s->last_ip = st->end_ip;
		return;
	}
	if (st->edge_last) {
		/* set_pending() takes its time from now(): the edge's */
		s->now = edge_now(s, &s->edges[events], insns0);
		s->time_stale = false;
	} else {
		s->time_stale = true;
	}
	/* its jumps made no event; the last branch's is judged at the next block */
	set_pending(s, st->end_ip, st->iclass, ptem_64bit, st->isid);
	s->time_stale = true;
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
			s->seam_events += s->last_ip == PTD_IP_SEAM;
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

/* The stream's configuration over its bytes up to `end`. */
static struct pt_config bytes_config(const struct ptd_stream_opts *o, uint64_t end)
{
	struct pt_config cfg = o->config;

	cfg.size = sizeof(cfg);
	cfg.begin = (uint8_t *)o->buf;
	cfg.end = (uint8_t *)o->buf + end;
	return cfg;
}

/*
 * A block decoder over the stream's bytes up to `end`, offsets counted from the start
 * of the stream; NULL when libipt refuses the configuration.
 */
static struct pt_block_decoder *open_decoder(const struct ptd_stream_opts *o, uint64_t end)
{
	struct pt_config cfg = bytes_config(o, end);

	/* every call and jump ends a block: that is where the events are */
	cfg.flags.variant.block.end_on_call = 1;
	cfg.flags.variant.block.end_on_jump = 1;
	return pt_blk_alloc_decoder(&cfg);
}

/* The fast path over the same bytes, NULL without o.fast (or if refused: no fast path). */
static struct ptd_fast *open_fast(const struct ptd_stream_opts *o, uint64_t end)
{
	struct pt_config cfg = bytes_config(o, end);

	return o->fast ? ptd_fast_new(&cfg, o->images) : NULL;
}

/* Adds a fast decoder's tracelet figures to `st`. */
static void fast_tl_stats_add(struct decode_stats *st, const struct ptd_fast_stats *fs)
{
	st->fast_tl_lookups += fs->tl_lookups;
	st->fast_tl_hits += fs->tl_hits;
	st->fast_tl_blocks += fs->tl_blocks;
	st->fast_tl_evictions += fs->tl_evictions;
}

/* Adds the fast decoder's figures to the stream's before it goes. */
static void ptd_fast_stats_add(struct ptd_stream *s)
{
	struct ptd_fast_stats fs;

	if (!s->fast)
		return;
	ptd_fast_stats(s->fast, &fs);
	s->st.fast_lookups += fs.lookups;
	s->st.fast_hits += fs.hits;
	s->st.fast_stored += fs.stored;
	s->st.fast_flushes += fs.flushes;
	fast_tl_stats_add(&s->st, &fs);
}

/*
 * The fast path cannot take the next step: the block decoder takes over, synced where
 * the fast path last synced and replayed to where it is: as many instructions and
 * events (libipt may cut the same instructions into more blocks, see
 * verify_one()), with the address spaces set where they were.
 */
static int fast_fallback(struct ptd_stream *s)
{
	struct pt_block block;
	struct pt_event ev;
	uint64_t insns = 0, events = 0;
	size_t k = 0;
	int status;

	s->on_fast = false;
	s->fast_fallbacks++;
	status = pt_blk_set_image(s->dec, stream_image(s, s->fast_sync_as));
	if (status >= 0)
		status = pt_blk_sync_set(s->dec, s->fast_sync_off);
	while (status >= 0) {
		for (; k < s->nr_as_log && s->as_log[k].insns == insns &&
		       s->as_log[k].events == events; k++)
			pt_blk_set_image(s->dec, stream_image(s, s->as_log[k].as));
		if (insns == s->fast_insns && events == s->fast_events &&
		    !(status & pts_event_pending) == !s->fast_pending)
			break;
		if (insns > s->fast_insns || events > s->fast_events) {
			status = -pte_internal;
			break;
		}
		if (status & pts_event_pending) {
			status = pt_blk_event(s->dec, &ev, sizeof(ev));
			events++;
		} else {
			status = pt_blk_next(s->dec, &block, sizeof(block));
			insns += block.ninsn;
			s->replayed++;
		}
	}
	if (status < 0)
		elog("ptbpf: internal: the fast path's replay on the block decoder failed after "
		     "%" PRIu64 " instructions and %" PRIu64 " events: %s\n", insns, events,
		     pt_errstr(pt_errcode(status)));
	return status;
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
	if (s->fast) {
		/* its run cache goes on: a cold one costs a range more than its decode */
		struct pt_config cfg = bytes_config(&s->o, r->end);

		if (ptd_fast_set_end(s->fast, &cfg) < 0) {
			ptd_fast_stats_add(s);
			ptd_fast_free(s->fast);
			s->fast = NULL;
		}
		s->on_fast = false;
	}
	s->range = k;
	s->range_open = true;
	/*
	 * The stretch skipped before it ran other threads only: whatever the last
	 * instruction decoded was, the whole decode has another thread's there (see
	 * set_thread()).
	 */
	s->last_ip = 0;
	image = s->have_thread ? stream_image(s, s->as) : NULL;
	if (image) {
		pt_blk_set_image(dec, image);
		if (s->fast)
			ptd_fast_set_as(s->fast, s->as);
	}
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

/* One step: a sync, or events and blocks until the chunk is full or a sync is due. */
static void stream_step(struct ptd_stream *s)
{
	struct ptd_stretch_lim lim;
	struct ptd_stretch stretch;
	struct pt_block block;
	struct pt_event ev;
	bool defer;
	int status;

	/* the usual step first: a block on the fast path, with no event pending */
	if (s->state == ST_RUN && !(s->status & (pts_event_pending | pts_eos)) && s->on_fast)
		goto block;
	if (s->state == ST_SYNC) {
		uint64_t off = 0;

		if (s->range_open) {
			s->range_open = false;
			s->on_fast = s->fast != NULL;
			status = s->fast ? ptd_fast_sync_set(s->fast, s->o.ranges[s->range].begin)
					 : pt_blk_sync_set(s->dec, s->o.ranges[s->range].begin);
		} else if (s->on_fast) {
			status = ptd_fast_sync_forward(s->fast);
		} else {
			status = pt_blk_sync_forward(s->dec);
			if (status >= 0 && s->fast &&
			    pt_blk_get_sync_offset(s->dec, &off) >= 0) {
				/* back to the fast path at the block decoder's PSB */
				int st = ptd_fast_sync_set(s->fast, off);

				s->on_fast = st == status;
			}
		}
		if (status == PTD_FAST_FALLBACK) {
			/* the PSB+ holds what the fast path leaves to the block decoder */
			s->on_fast = false;
			s->fast_fallbacks++;
			status = -pte_internal;
			if (ptd_fast_get_sync_offset(s->fast, &off) >= 0) {
				struct pt_image *image = s->have_thread ? stream_image(s, s->as) : NULL;

				pt_blk_set_image(s->dec, image);
				status = pt_blk_sync_set(s->dec, off);
			}
		}
		if (status < 0) {
			if (status != -pte_eos) {
				emit_error(s, status, 0);
				if (s->state == ST_DONE)
					return;
				/* no progress, no hope: the same as ptxed */
				if ((s->on_fast ? ptd_fast_get_offset(s->fast, &off)
						: pt_blk_get_offset(s->dec, &off)) >= 0 &&
				    (!s->synced || off > s->last_sync)) {
					s->last_sync = off;
					s->synced = true;
					return;
				}
			}
			stream_end(s);
			return;
		}
		if ((s->on_fast ? ptd_fast_get_sync_offset(s->fast, &off)
				: pt_blk_get_sync_offset(s->dec, &off)) >= 0) {
			if (s->on_fast) {
				s->fast_sync_off = off;
				s->fast_sync_as = s->have_thread ? s->as : -1;
				s->fast_insns = s->fast_events = 0;
				s->fast_pending = status & pts_event_pending;
				s->nr_as_log = 0;
			}
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
event:
		status = s->on_fast ? ptd_fast_event(s->fast, &ev) : PTD_FAST_FALLBACK;
event_failed:
		if (status == PTD_FAST_FALLBACK) {
			if (s->on_fast)
				fast_fallback(s);
			status = pt_blk_event(s->dec, &ev, sizeof(ev));
		} else if (status >= 0) {
			s->fast_events++;
			s->fast_pending = status & pts_event_pending;
		}
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
		goto next;
	}
	if (s->status & pts_eos) {
		s->state = ST_SYNC;
		return;
	}

block:
	if (!s->on_fast) {
		status = PTD_FAST_FALLBACK;
	} else if (ptd_fast_event_waits(s->fast)) {
		stretch_after(s);
		status = ptd_fast_next(s->fast, &block);
	} else if (stretch_lim(s, &lim, &defer)) {
		status = ptd_fast_stretch(s->fast, &block, &lim, &stretch);
		if (stretch.blocks)
			on_stretch(s, &stretch, defer);
		else if (stretch.ranged)
			fn_set(s, stretch.range, stretch.lo, stretch.hi);
		if (stretch.event_status) {
			/* it ended at its events, the next one pending if that failed */
			if (status < 0) {
				s->fast_pending = true;
				goto event_failed;
			}
			s->fast_pending = status & pts_event_pending;
			s->status = status;
			goto next;
		}
	} else {
		status = ptd_fast_next(s->fast, &block);
	}
	if (status == PTD_FAST_FALLBACK) {
		if (s->on_fast)
			fast_fallback(s);
		status = pt_blk_next(s->dec, &block, sizeof(block));
	} else if (status >= 0) {
		s->fast_insns += block.ninsn;
		s->fast_pending = status & pts_event_pending;
		if (block.ninsn)
			s->fast_blocks++;
	}
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
next:
	/*
	 * The next step at once, as ptd_stream_fill()'s loop would make it: an event after
	 * the stretch it ended, the stretch after an event (kAFL's filters: 340 K disable
	 * and enable pairs on mruby), without a return and a call between them.
	 */
	if (s->state != ST_RUN || s->nr_out >= PTD_CHUNK_EVENTS)
		return;
	if (s->status & pts_event_pending)
		goto event;
	if (!(s->status & pts_eos))
		goto block;
}

/*
 * A stream that is done decodes no more: its decoders go (the fast decoder's warm cache
 * to the next stream's: the next piece of a split stream), its state stays (the join).
 */
static void stream_release(struct ptd_stream *s)
{
	ptd_fast_stats_add(s);
	ptd_fast_free(s->fast);
	s->fast = NULL;
	s->on_fast = false;
	pt_blk_free_decoder(s->dec);
	s->dec = NULL;
}

void ptd_stream_release(struct ptd_stream *s)
{
	stream_release(s);
}

/* Decodes until `out` holds about PTD_CHUNK_EVENTS events or the trace ends (piece.h). */
size_t ptd_stream_fill(struct ptd_stream *s, struct ptd_event *out)
{
	s->out = out;
	s->nr_out = 0;
	while (s->state != ST_DONE && s->nr_out < PTD_CHUNK_EVENTS)
		stream_step(s);
	if (s->state == ST_DONE) {
		s->pos = s->stop ? s->stop : s->o.size;
		stream_release(s);
	} else {
		s->pos = trace_offset(s);
	}
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
	s->fast = open_fast(opts, opts->nr_ranges ? opts->ranges[0].end : opts->size);
	s->on_fast = s->fast != NULL;
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
	ptd_fast_free(s->fast);
	free(s->as_log);
	symbols__range_cache_free(s->fn_cache);
	free(s->class_cache);
	for (i = 0; i < s->nr_images; i++)
		pt_image_free(s->images[i]);
	free(s->images);
	free(s);
}

static void print_event(const char *how, const struct ptd_event *e)
{
	if (!e) {
		elog("  %s: no event (the stream ended)\n", how);
		return;
	}
	elog("  %s: kind %u time %" PRIu64 " from %#" PRIx64 " to %#" PRIx64 " offset %#" PRIx64
	     " pid %u tid %u as %u reason %u code %d\n", how, e->kind, e->time, e->from, e->to,
	     e->offset, e->pid, e->tid, e->asid, e->reason, e->code);
}

static bool same_event(const struct ptd_event *a, const struct ptd_event *b)
{
	return a->time == b->time && a->from == b->from && a->to == b->to &&
	       a->offset == b->offset && a->pid == b->pid && a->tid == b->tid &&
	       a->asid == b->asid && a->kind == b->kind && a->reason == b->reason &&
	       a->code == b->code;
}

/* Stream `o` decoded both ways, event by event. */
static int verify_one(const struct ptd_stream_opts *o, size_t idx)
{
	struct ptd_stream *ref = NULL, *fast = NULL;
	struct ptd_event *ea = NULL, *eb = NULL;
	struct ptd_stream_opts ro = *o, fo = *o;
	struct decode_stats sa = { 0 }, sb = { 0 };
	size_t na = 0, nb = 0, ia = 0, ib = 0;
	uint64_t n = 0;
	int err;

	ro.fast = false;
	fo.fast = true;
	ea = malloc((PTD_CHUNK_EVENTS + PTD_CHUNK_SLACK) * sizeof(*ea));
	eb = malloc((PTD_CHUNK_EVENTS + PTD_CHUNK_SLACK) * sizeof(*eb));
	err = ea && eb ? ptd_stream_new(&ro, &ref) : -ENOMEM;
	if (!err)
		err = ptd_stream_new(&fo, &fast);
	if (err)
		goto out;
	for (;; n++) {
		if (ia == na && ref->state != ST_DONE) {
			na = ptd_stream_fill(ref, ea);
			ia = 0;
		}
		if (ib == nb && fast->state != ST_DONE) {
			nb = ptd_stream_fill(fast, eb);
			ib = 0;
		}
		if (ia == na && ib == nb && ref->state == ST_DONE && fast->state == ST_DONE)
			break;
		if (ia == na && ref->state != ST_DONE)
			continue;
		if (ib == nb && fast->state != ST_DONE)
			continue;
		if (ia < na && ib < nb && same_event(&ea[ia], &eb[ib])) {
			ia++;
			ib++;
			continue;
		}
		elog("--verify-fast: stream %zu: event %" PRIu64 " differs (trace offset %#"
		     PRIx64 "):\n", idx, n, ia < na ? ea[ia].offset ? ea[ia].offset : ref->pos
						    : ref->pos);
		print_event("block decoder", ia < na ? &ea[ia] : NULL);
		print_event("fast path", ib < nb ? &eb[ib] : NULL);
		err = -EDOM;
		goto out;
	}
	ptd_stream_stats(ref, &sa);
	ptd_stream_stats(fast, &sb);
	/*
	 * Not the blocks: libipt cuts a block short where its block cache's fill meets an
	 * entry made before (by any decoder sharing the section), so its count depends on
	 * what was decoded before; the fast path's blocks always run to the branch.
	 */
	if (sa.insns != sb.insns || sa.errors != sb.errors || sa.calls != sb.calls ||
	    sa.returns != sb.returns || sa.syncs != sb.syncs || sa.overflows != sb.overflows) {
		elog("--verify-fast: stream %zu: the figures differ: instructions %" PRIu64
		     " / %" PRIu64 ", errors %" PRIu64 " / %" PRIu64 ", syncs %" PRIu64 " / %"
		     PRIu64 " (block decoder / fast path)\n",
		     idx, sa.insns, sb.insns, sa.errors, sb.errors, sa.syncs, sb.syncs);
		err = -EDOM;
	}
out:
	ptd_stream_free(ref);
	ptd_stream_free(fast);
	free(ea);
	free(eb);
	return err;
}

int ptd_streams_verify_fast(struct ptd_stream **streams, size_t nr)
{
	size_t i;
	int err;

	for (i = 0; i < nr; i++) {
		err = verify_one(&streams[i]->o, i);
		if (err)
			return err;
	}
	return 0;
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
	st->fast_lookups += s->st.fast_lookups;
	st->fast_hits += s->st.fast_hits;
	st->fast_stored += s->st.fast_stored;
	st->fast_flushes += s->st.fast_flushes;
	/* a split stream's own are its pieces' (split.c), counted in s->st */
	st->fast_blocks += s->fast_blocks + s->st.fast_blocks;
	st->fast_fallbacks += s->fast_fallbacks + s->st.fast_fallbacks;
	st->fast_replayed += s->replayed + s->st.fast_replayed;
	st->fast_stretched += s->st.fast_stretched;
	st->fast_edges += s->st.fast_edges;
	st->fast_tl_lookups += s->st.fast_tl_lookups;
	st->fast_tl_hits += s->st.fast_tl_hits;
	st->fast_tl_blocks += s->st.fast_tl_blocks;
	st->fast_tl_evictions += s->st.fast_tl_evictions;
	st->split_pieces += s->st.split_pieces;
	st->split_redecoded += s->st.split_redecoded;
	if (s->fast) {
		struct ptd_fast_stats fs;

		ptd_fast_stats(s->fast, &fs);
		st->fast_lookups += fs.lookups;
		st->fast_hits += fs.hits;
		st->fast_stored += fs.stored;
		st->fast_flushes += fs.flushes;
		fast_tl_stats_add(st, &fs);
	}
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


/* ---------------------------------------------------------------- pieces */

bool ptd_stream_done(const struct ptd_stream *s)
{
	return s->state == ST_DONE;
}

uint64_t ptd_stream_done_bytes(const struct ptd_stream *s)
{
	return s->pos > s->piece.begin ? s->pos - s->piece.begin : 0;
}

const struct ptd_stream_opts *ptd_stream_opts(const struct ptd_stream *s)
{
	return &s->o;
}

struct decode_stats *ptd_stream_counts(struct ptd_stream *s)
{
	return &s->st;
}

/* A piece's thread when the stream has one thread throughout (else the schedule's). */
static int piece_thread(struct ptd_stream *s)
{
	if (!s->o.nr_sched && s->o.fixed_as >= 0)
		return set_thread(s, s->o.fixed_pid, s->o.fixed_tid, s->o.fixed_as);
	return 0;
}

void ptd_stream_caches_take(struct ptd_stream *s, struct ptd_caches *c)
{
	c->classes = s->class_cache;
	c->fns = s->fn_cache;
	s->class_cache = NULL;
	s->fn_cache = NULL;
}

void ptd_stream_caches_give(struct ptd_stream *s, struct ptd_caches *c)
{
	free(s->class_cache);
	symbols__range_cache_free(s->fn_cache);
	s->class_cache = c->classes;
	s->fn_cache = c->fns;
	c->classes = NULL;
	c->fns = NULL;
}

void ptd_caches_free(struct ptd_caches *c)
{
	free(c->classes);
	symbols__range_cache_free(c->fns);
	c->classes = NULL;
	c->fns = NULL;
}

void ptd_stream_populate(const struct ptd_stream *s, uint64_t begin, uint64_t end)
{
#ifdef MADV_POPULATE_READ
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = ((uintptr_t)s->o.buf + begin) & ~(page - 1);
	uintptr_t b = ((uintptr_t)s->o.buf + end + page - 1) & ~(page - 1);

	if (s->o.populate && b > a)
		madvise((void *)a, b - a, MADV_POPULATE_READ);
#else
	(void)s;
	(void)begin;
	(void)end;
#endif
}

struct ptd_stream *ptd_piece_new(const struct ptd_stream *parent, uint64_t begin,
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
		s->last_ip = PTD_IP_SEAM;
		s->o.ranges = &s->piece;
		s->o.nr_ranges = 1;
		s->range_open = true;
		s->withhold = true;
	}
	s->st.bytes = (stop ? stop : parent->o.size) - begin;
	/* in the thread that decodes it: the pieces' pages are mapped in parallel */
	ptd_stream_populate(s, begin, end);
	s->dec = open_decoder(&s->o, end);
	s->fast = open_fast(&s->o, end);
	s->on_fast = s->fast != NULL;
	if (!s->dec || piece_thread(s) < 0) {
		ptd_stream_free(s);
		return NULL;
	}
	return s;
}

static int join(const struct ptd_stream *prev, struct ptd_stream *next,
		const struct ptd_event *first, uint64_t blocks_before, uint64_t add_prev,
		uint64_t add_next, size_t index, struct ptd_join *j)
{
	const struct piece_head *h = &next->head;
	struct ptd_event *ev;

	memset(j, 0, sizeof(*j));
	dlog("[piece %zu at %" PRIx64 ": end %d, %" PRIu64 " insns, %" PRIu64 " blocks]\n",
	     index, prev->piece.begin, prev->end, prev->st.insns, prev->st.blocks);
	if (!next->head_valid || h->events_before || prev->uret || prev->xol)
		goto again;
	/*
	 * The work budget: next's own ran out, or the sequential decode's would have, with
	 * the blocks of the pieces before (budget_check()).
	 */
	if (next->work_limit_hit || (int64_t)blocks_before + next->peak > (int64_t)PTD_BLOCKS_BASE) {
		dlog("[piece %zu at %" PRIx64 ": decoded again to the end (work budget)]\n",
		     index + 1, next->piece.begin);
		return 2;
	}
	/*
	 * A return of prev into the [uprobes] trampoline: the sequential decode follows the
	 * trampoline to where the return lands, next took it for the program's own code.
	 */
	if (prev->end == PE_CLEAN && h->block && h->as >= 0 && h->as == prev->as &&
	    in_uprobes(prev, h->ip))
		goto again;
	if (prev->end == PE_CLEAN && prev->enabled && h->block && h->pid == prev->pid &&
	    h->tid == prev->tid && h->as == prev->as) {
		/* the flow goes on: the last branch of prev lands on next's first block */
		struct ptd_stream t = *prev;
		uint64_t branch_time = t.pend.time;

		t.out = j->ev;
		t.nr_out = 0;
		t.now = h->time;
		t.time_stale = false;
		resolve(&t, h->ip);
		j->calls = t.st.calls - prev->st.calls;
		j->returns = t.st.returns - prev->st.returns;
		if (t.nr_out)
			j->ev[0].time = branch_time ? branch_time + add_prev : h->time + add_next;
		j->nr = t.nr_out;
		j->clean = true;
		return 0;
	}
	if (prev->end == PE_SYNC) {
		/* the sequential decode resyncs at next's PSB too: next's START */
		if (h->block && next->selected && h->as >= 0) {
			ev = &j->ev[j->nr++];
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
		j->clean = true;
		return 0;
	}
again:
	dlog("[piece %zu at %" PRIx64 ": decoded again (end %d%s%s%s, head %d/%d, tid %u/%u, "
	     "%" PRIu64 " events before, first %d)]\n",
	     index + 1, next->piece.begin, prev->end, prev->end_after_error ? " after error" : "",
	     prev->enabled ? " enabled" : "", prev->uret || prev->xol ? " uprobes" : "",
	     next->head_valid, next->head.block, prev->tid, next->head.tid,
	     next->head.events_before, first ? first->kind : 0);
	return 1;
}

/*
 * The stops, errors and overflows `next` made before its first block name the last
 * instruction the sequential decode had there: prev's, unless tracing restarted in
 * another thread. Those events are all in its first chunk (`ev`, nr) unless it made
 * thousands before a block: then it is decoded again (1).
 */
static int fill_seam_ip(const struct ptd_stream *prev, struct ptd_stream *next,
			struct ptd_event *ev, size_t nr)
{
	uint64_t ip = prev->last_ip, n = 0;
	size_t i;

	/* no thread yet: no event either (it is done, or its first chunk was not full) */
	if (!next->have_thread || (!next->seam_events && next->last_ip != PTD_IP_SEAM))
		return 0;
	if (prev->have_thread && (prev->pid != next->seam_pid || prev->tid != next->seam_tid))
		ip = 0;
	for (i = 0; i < nr; i++)
		n += ev[i].from == PTD_IP_SEAM;
	if (n != next->seam_events)
		return 1;
	for (i = 0; i < nr; i++)
		if (ev[i].from == PTD_IP_SEAM)
			ev[i].from = ip;
	/* still no block: what it decodes next has that instruction too (not busy here) */
	if (next->last_ip == PTD_IP_SEAM)
		next->last_ip = ip;
	next->seam_events = 0;
	return 0;
}

int ptd_piece_join(const struct ptd_stream *prev, struct ptd_stream *next,
		   struct ptd_event *first, size_t nr_first, uint64_t blocks_before,
		   uint64_t add_prev, uint64_t add_next, size_t index, struct ptd_join *j)
{
	int again = join(prev, next, first, blocks_before, add_prev, add_next, index, j);

	if (!again && fill_seam_ip(prev, next, first, first ? nr_first : 0)) {
		dlog("[piece %zu at %" PRIx64 ": decoded again (stops before its first block "
		     "beyond its first chunk)]\n", index + 1, next->piece.begin);
		again = 1;
	}
	return again;
}
