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
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "ptd.h"

/* Events per chunk, and chunks a stream may decode ahead of the merge. */
#define CHUNK_EVENTS 4096
#define CHUNK_SLACK 16
#define MAX_AHEAD 4

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
	uint64_t up_start, up_end;	/* the [uprobes] page of the address space, if any */
	struct decode_stats st;
	uint64_t pos;		/* trace offset reached (progress) */
	/* blocks decoded since the trace offset was last seen to move from still_off */
	uint32_t still_blocks;
	uint64_t still_off;
	/* blocks allowed so far: PTD_BLOCKS_BASE + PTD_BLOCKS_PER_BYTE * offset reached */
	uint64_t budget;
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

	/* events of threads we know nothing about (other processes) are dropped */
	if (s->as < 0)
		return NULL;
	/*
	 * A stream's times never go back: libipt's time after a block can be ahead of the
	 * time stamped on the event that follows it (the query decoder reads ahead).
	 */
	if (time < s->last_time)
		time = s->last_time;
	s->last_time = time;
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

	s->st.errors++;
	/* an error before tracing started still belongs to whoever ran then */
	if (!s->have_thread && s->o.nr_sched)
		attribute(s, ip);
	dlog("[%" PRIx64 ", %" PRIx64 ": error: %s]\n", off, ip, ptd_errstr(code));
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

/* Sets the current thread and its image; returns 0 or a libipt error. */
static int set_thread(struct ptd_stream *s, uint32_t pid, uint32_t tid, int as)
{
	int err = 0;

	if (as != s->as || !s->have_thread) {
		struct pt_image *image = as >= 0 ? ptd_aspace_image(s->o.images, as) : NULL;
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

static enum pt_insn_class pending_class(struct ptd_stream *s)
{
	struct pending_branch *p = &s->pend;
	uint8_t buf[pt_max_insn_size];
	size_t n;

	if (p->iclass != ptic_error)
		return p->iclass;
	n = pending_bytes(s, buf);
	p->iclass = n ? classify(buf, n, p->mode) : ptic_other;
	return p->iclass;
}

/*
 * Where a far call (syscall, int) returns to: the next instruction, 0 when its length
 * is not known. Tells a syscall's return from a signal handler's entry.
 */
static uint64_t far_call_next(struct ptd_stream *s)
{
	uint8_t buf[pt_max_insn_size];
	size_t n = pending_bytes(s, buf), i;

	for (i = 0; i < n && (buf[i] == 0x66 || buf[i] == 0x67 || buf[i] == 0xf2 ||
			      buf[i] == 0xf3 || (buf[i] & 0xf0) == 0x40); i++)
		;
	if (i < n && (buf[i] == 0xcc || buf[i] == 0xce || buf[i] == 0xf1))
		return s->pend.ip + i + 1;
	if (i + 1 < n && (buf[i] == 0xcd || (buf[i] == 0x0f && (buf[i + 1] == 0x05 ||
								buf[i + 1] == 0x34))))
		return s->pend.ip + i + 2;
	return 0;
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

	if (!s->fn_valid) {
		r = symbols__func_range(s->o.symbols, s->as, from, &s->fn_start, &s->fn_end);
		s->fn_valid = r >= 0;
		s->fn_known = r == 0;
	}
	if (s->fn_valid && to >= s->fn_start && to < s->fn_end)
		return false;
	r = symbols__func_range(s->o.symbols, s->as, to, &start, &end);
	leaves = (s->fn_valid && s->fn_known) || r == 0;
	s->fn_start = start;
	s->fn_end = end;
	s->fn_valid = r >= 0;
	s->fn_known = r == 0;
	return leaves;
}

/* 1: ip is in the [uprobes] page, 2: at its start (the uretprobe trampoline), else 0. */
static int in_uprobes(struct ptd_stream *s, uint64_t ip)
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

	if (s->need_start && start_tracing(s, b->ip) < 0)
		s->as = -1;
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
	s->status = status;
	s->state = ST_RUN;
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

/* One step: a sync, an event, or a block. */
static void stream_step(struct ptd_stream *s)
{
	struct pt_block block;
	int status;

	if (s->state == ST_SYNC) {
		uint64_t off = 0;

		status = pt_blk_sync_forward(s->dec);
		if (status < 0) {
			if (status != -pte_eos) {
				emit_error(s, status, 0);
				/* no progress, no hope: the same as ptxed */
				if (pt_blk_get_offset(s->dec, &off) >= 0 &&
				    (!s->synced || off > s->last_sync)) {
					s->last_sync = off;
					s->synced = true;
					return;
				}
			}
			s->state = ST_DONE;
			return;
		}
		if (pt_blk_get_sync_offset(s->dec, &off) >= 0) {
			if (s->synced && off <= s->last_sync) {
				s->state = ST_DONE;
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
			s->state = ST_SYNC;
			return;
		}
		s->status = status;
		status = on_event(s, &ev);
		if (status < 0) {
			emit_error(s, status, s->last_ip);
			s->state = ST_SYNC;
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
		/* over budget as of the last look: has the trace moved on since? */
		if (++s->st.blocks > s->budget) {
			s->budget = PTD_BLOCKS_BASE + PTD_BLOCKS_PER_BYTE * trace_offset(s);
			if (s->st.blocks > s->budget) {
				emit_error(s, PTD_ERR_BUDGET, block.end_ip);
				s->state = ST_SYNC;
				return;
			}
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
				emit_error(s, PTD_ERR_ENDLESS, block.end_ip);
				s->state = ST_SYNC;
				return;
			}
		}
	}
	if (status < 0) {
		if (status == -pte_eos) {
			s->state = ST_DONE;
			return;
		}
		emit_error(s, status, block.ninsn ? block.end_ip : block.ip);
		s->state = ST_SYNC;
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
	s->pos = s->state == ST_DONE ? s->o.size : trace_offset(s);
	s->out = NULL;
	return s->nr_out;
}

int ptd_stream_new(const struct ptd_stream_opts *opts, struct ptd_stream **out)
{
	struct pt_config cfg = opts->config;
	struct ptd_stream *s;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = *opts;
	s->as = -1;
	s->budget = PTD_BLOCKS_BASE;
	cfg.size = sizeof(cfg);
	cfg.begin = (uint8_t *)opts->buf;
	cfg.end = (uint8_t *)opts->buf + opts->size;
	/* every call and jump ends a block: that is where the events are */
	cfg.flags.variant.block.end_on_call = 1;
	cfg.flags.variant.block.end_on_jump = 1;
	s->dec = pt_blk_alloc_decoder(&cfg);
	if (!s->dec) {
		free(s);
		return -EINVAL;
	}
	s->st.bytes = opts->size;
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
	if (!s)
		return;
	pt_blk_free_decoder(s->dec);
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
}

int ptd_first_time(const uint8_t *buf, size_t size, const struct pt_config *cfg_in,
		   const struct ptd_clock *clock, uint64_t *ns)
{
	struct pt_config cfg = *cfg_in;
	struct pt_packet_decoder *pkt;
	struct pt_packet p;
	int err = -ENOENT;

	cfg.size = sizeof(cfg);
	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + size;
	pkt = pt_pkt_alloc_decoder(&cfg);
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

/* One stream in the merge: its decoded-ahead chunks and the merge cursor. */
struct lane {
	struct ptd_stream *s;
	struct chunk *head, *tail;	/* decoded, not yet merged (guarded by the lock) */
	unsigned queued;		/* chunks in head..tail */
	bool busy;			/* a thread is decoding it */
	bool finished;			/* the stream is fully decoded */
	bool wanted;			/* the merge waits for it */
	struct chunk *cur;		/* chunk being merged (merge thread only) */
	size_t pos;			/* next event in cur */
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
		c->ev = malloc((CHUNK_EVENTS + CHUNK_SLACK) * sizeof(*c->ev));
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

		free(c->ev);
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

/* Adds a decoded chunk to its lane; called with the lock held. */
static void lane_push(struct merge *m, struct lane *l, struct chunk *c)
{
	if (l->s->state == ST_DONE)
		l->finished = true;
	if (!c)
		return;
	if (!c->nr) {
		put_chunk(m, c);
		return;
	}
	if (l->tail)
		l->tail->next = c;
	else
		l->head = c;
	l->tail = c;
	l->queued++;
}

static void *worker(void *arg)
{
	struct merge *m = arg;

	pthread_mutex_lock(&m->lock);
	for (;;) {
		struct lane *pick = NULL;
		struct chunk *c;
		size_t i;
		int err = 0;

		if (m->stop)
			break;
		for (i = 0; i < m->nr; i++) {
			struct lane *l = &m->lanes[i];

			if (l->busy || l->finished || l->queued >= MAX_AHEAD)
				continue;
			if (!pick || l->wanted > pick->wanted ||
			    (l->wanted == pick->wanted && l->queued < pick->queued))
				pick = l;
		}
		if (!pick) {
			bool all = true;

			for (i = 0; i < m->nr; i++)
				all &= m->lanes[i].finished;
			if (all)
				break;
			pthread_cond_wait(&m->cond, &m->lock);
			continue;
		}
		pick->busy = true;
		pthread_mutex_unlock(&m->lock);
		c = decode_chunk(m, pick->s, &err);
		pthread_mutex_lock(&m->lock);
		pick->busy = false;
		if (err) {
			m->err = err;
			pick->finished = true;
		}
		lane_push(m, pick, c);
		pthread_cond_broadcast(&m->cond);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

/* The next event of a lane, or NULL when it has no more; merge thread only. */
static const struct ptd_event *lane_head(struct merge *m, struct lane *l, bool threaded)
{
	if (l->cur && l->pos < l->cur->nr)
		return &l->cur->ev[l->pos];
	put_chunk(m, l->cur);
	l->cur = NULL;
	l->pos = 0;
	if (!threaded) {
		/* decode on demand, in this thread */
		while (!l->head && !l->finished) {
			int err = 0;
			struct chunk *c = decode_chunk(m, l->s, &err);

			if (err) {
				m->err = err;
				l->finished = true;
			}
			lane_push(m, l, c);
		}
	} else {
		pthread_mutex_lock(&m->lock);
		while (!l->head && !l->finished) {
			l->wanted = true;
			pthread_cond_broadcast(&m->cond);
			pthread_cond_wait(&m->cond, &m->lock);
		}
		l->wanted = false;
	}
	if (l->head) {
		l->cur = l->head;
		l->head = l->head->next;
		l->cur->next = NULL;
		if (!l->head)
			l->tail = NULL;
		l->queued--;
		if (threaded) {
			pthread_cond_broadcast(&m->cond);
			pthread_mutex_unlock(&m->lock);
		}
		return &l->cur->ev[0];
	}
	if (threaded)
		pthread_mutex_unlock(&m->lock);
	return NULL;
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
	size_t i;

	if (!final && (t - start < 1.0 || t - *last < 0.5))
		return;
	if (final && *last == 0)
		return;
	*last = t;
	for (i = 0; i < m->nr; i++) {
		done += m->lanes[i].s->pos;
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

int ptd_decode_streams(struct ptd_stream **streams, size_t nr, int jobs,
		       const struct ptd_event *extra, size_t nr_extra, const struct ptd_sink *sink,
		       bool show_progress)
{
	struct merge m = { .nr = nr };
	pthread_t *tids = NULL;
	int nthreads = 0, err = 0, i;
	size_t k, x = 0;
	double start = ptd_seconds(), last = 0;
	unsigned long iter = 0;

	m.lanes = calloc(nr ? nr : 1, sizeof(*m.lanes));
	if (!m.lanes)
		return -ENOMEM;
	for (k = 0; k < nr; k++)
		m.lanes[k].s = streams[k];
	pthread_mutex_init(&m.lock, NULL);
	pthread_mutex_init(&m.free_lock, NULL);
	pthread_cond_init(&m.cond, NULL);

	/* one stream needs no helper: the merge thread decodes it */
	if (jobs > (int)nr)
		jobs = (int)nr;
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
			bl->pos++;
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
		free_chunks(m.lanes[k].head);
		free_chunks(m.lanes[k].cur);
	}
	free_chunks(m.free);
	free(tids);
	free(m.lanes);
	pthread_mutex_destroy(&m.lock);
	pthread_mutex_destroy(&m.free_lock);
	pthread_cond_destroy(&m.cond);
	return err;
}
