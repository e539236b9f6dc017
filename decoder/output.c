// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Sinks of the merged event stream.
 *
 * FXT and text: the call-stack builder (decoder/callstack.c) over the FXT writer, which
 * in text mode prints what `fxtcheck --stacks` prints. The builder asks for symbols by
 * (pid, address); the sink remembers which address space each process is in, from the
 * events it passes on, and answers through the symbolizer.
 *
 * Calls: one line per event, "PID/TID TIME_NS KIND FROM TO NAME", for diffing with
 * `perf script --itrace=cr` (tests/integration/decode_perf_*.sh). The call-stack builder
 * runs beside it with its slices thrown away, for the summary's slowest call: one model
 * of the stack serves every format.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <linux/types.h>

#include "array.h"
#include "fxt.h"
#include "log.h"
#include "ptd.h"
#include "trigger_abi.h"

/* pid -> address space its events are in now. */
struct pid_as {
	uint32_t pid;		/* key: any value, -1 included */
	int32_t as;
	bool used;		/* false: an empty slot */
};

/* Threads that got at least one control-flow event. */
struct seen_thread {
	uint64_t key;		/* pid << 32 | tid: any value, -1/-1 included */
	bool used;		/* false: an empty slot */
};

struct ptd_output {
	struct ptd_output_opts o;
	enum decode_format format;
	struct fxt_writer *w;		/* FXT / text; calls format: /dev/null */
	struct callstack *cs;		/* every format (see the top) */
	FILE *f;			/* calls format */
	bool close_f;
	struct pid_as *pids;		/* open addressing, power of two */
	size_t pids_size, pids_used;
	struct seen_thread *seen;	/* open addressing, power of two */
	size_t seen_size, seen_used;
	/*
	 * The thread and address space of the last control-flow event, already in seen and
	 * pids: most events follow one of the same thread, and skip both tables.
	 */
	uint32_t last_pid, last_tid, last_as;
	bool have_last;
	uint64_t first_time, last_time;	/* of control-flow events */
	/*
	 * sink_event() may take a control-flow event of the last thread itself: not the
	 * calls format, a last thread known, first_time set (an event at or after last_time
	 * then changes last_time only)
	 */
	bool fast;
	bool trigger_placed;
	uint64_t trigger_time;		/* where the marker went, valid if trigger_placed */
	int err;
	int werr;			/* calls format: the first failed write, -errno */
};

static size_t hash32(uint32_t v, size_t size)
{
	return (size_t)((v * 0x9e3779b97f4a7c15ull) >> 20) & (size - 1);
}

static int pid_set(struct ptd_output *o, uint32_t pid, int as)
{
	size_t h;

	if (o->pids_used * 2 >= o->pids_size) {
		size_t size = o->pids_size ? o->pids_size * 2 : 64, i;
		struct pid_as *v = calloc(size, sizeof(*v));

		if (!v)
			return -ENOMEM;
		for (i = 0; i < o->pids_size; i++) {
			if (!o->pids[i].used)
				continue;
			h = hash32(o->pids[i].pid, size);
			while (v[h].used)
				h = (h + 1) & (size - 1);
			v[h] = o->pids[i];
		}
		free(o->pids);
		o->pids = v;
		o->pids_size = size;
	}
	h = hash32(pid, o->pids_size);
	while (o->pids[h].used && o->pids[h].pid != pid)
		h = (h + 1) & (o->pids_size - 1);
	if (!o->pids[h].used)
		o->pids_used++;
	o->pids[h].used = true;
	o->pids[h].pid = pid;
	o->pids[h].as = as;
	return 0;
}

static int pid_get(const struct ptd_output *o, uint32_t pid)
{
	size_t h;

	if (!o->pids_size)
		return -1;
	h = hash32(pid, o->pids_size);
	while (o->pids[h].used) {
		if (o->pids[h].pid == pid)
			return o->pids[h].as;
		h = (h + 1) & (o->pids_size - 1);
	}
	return -1;
}

static size_t seen_slot(const struct seen_thread *v, size_t size, uint64_t key)
{
	size_t h = hash32((uint32_t)(key ^ (key >> 32)), size);

	while (v[h].used && v[h].key != key)
		h = (h + 1) & (size - 1);
	return h;
}

static bool seen_has(const struct ptd_output *o, uint32_t pid, uint32_t tid)
{
	uint64_t key = (uint64_t)pid << 32 | tid;
	size_t h;

	if (!o->seen_size)
		return false;
	h = seen_slot(o->seen, o->seen_size, key);
	return o->seen[h].used && o->seen[h].key == key;
}

static struct seen_thread *seen_add(struct ptd_output *o, uint32_t pid, uint32_t tid)
{
	uint64_t key = (uint64_t)pid << 32 | tid;
	size_t h;

	if (o->seen_used * 2 >= o->seen_size) {
		size_t size = o->seen_size ? o->seen_size * 2 : 64, i;
		struct seen_thread *v = calloc(size, sizeof(*v));

		if (!v)
			return NULL;
		for (i = 0; i < o->seen_size; i++)
			if (o->seen[i].used)
				v[seen_slot(v, size, o->seen[i].key)] = o->seen[i];
		free(o->seen);
		o->seen = v;
		o->seen_size = size;
	}
	h = seen_slot(o->seen, o->seen_size, key);
	if (!o->seen[h].used) {
		o->seen[h].used = true;
		o->seen[h].key = key;
		o->seen_used++;
	}
	return &o->seen[h];
}

static int symbolize(void *ctx, uint32_t pid, uint64_t addr, struct cs_symbol *out)
{
	struct ptd_output *o = ctx;

	return symbols__lookup(o->o.symbols, pid_get(o, pid), addr, out);
}

static const char *stop_name(unsigned reason)
{
	switch (reason) {
	case CS_STOP_SYSCALL:
		return "syscall";
	case CS_STOP_UNTRACED:
		return "untraced";
	case CS_STOP_OVERFLOW:
		return "overflow";
	default:
		return "end";
	}
}

/* PERF_AUX_FLAG_* damage bits of a PTD_GAP, as words: "truncated,partial". */
static const char *gap_words(int32_t flags, char *buf, size_t size)
{
	snprintf(buf, size, "%s%s%s", flags & PERF_AUX_FLAG_TRUNCATED ? ",truncated" : "",
		 flags & PERF_AUX_FLAG_PARTIAL ? ",partial" : "",
		 flags & PERF_AUX_FLAG_COLLISION ? ",collision" : "");
	return buf[0] ? buf + 1 : buf;
}

/*
 * A gap the kernel reported (PTD_GAP): the thread's open calls end there, as at a decode
 * error (what ran in the lost trace is unknown, and the flow after it must not nest
 * under them), and a "[trace gap]" instant says what the kernel said.
 */
static int gap_instant(struct ptd_output *o, const struct ptd_event *ev)
{
	char words[64];
	struct fxt_arg args[2] = {
		{ .name = "flags", .type = FXT_ARG_STRING,
		  .s = gap_words(ev->code, words, sizeof(words)) },
		{ .name = "source", .type = FXT_ARG_STRING, .s = "PERF_RECORD_AUX" },
	};
	int err = callstack__stop(o->cs, ev->pid, ev->tid, CS_STOP_END, 0, 0, ev->time);

	return err ?: callstack__instant(o->cs, ev->pid, ev->tid, "[trace gap]", ev->time, args, 2);
}

static int trigger_instant(struct ptd_output *o, const struct ptd_event *ev)
{
	const struct pd_trigger *t = o->o.trigger;
	struct fxt_arg args[6];
	unsigned n = 0;

	args[n++] = (struct fxt_arg){ .name = "trigger", .type = FXT_ARG_STRING,
				      .s = t->desc ? t->desc : "" };
	args[n++] = (struct fxt_arg){ .name = "ip", .type = FXT_ARG_POINTER, .u = t->ip };
	args[n++] = (struct fxt_arg){ .name = "cpu", .type = FXT_ARG_UINT32, .u = t->cpu };
	if (t->latency_ns)
		args[n++] = (struct fxt_arg){ .name = "latency_ns", .type = FXT_ARG_UINT64,
					      .u = t->latency_ns };
	args[n++] = (struct fxt_arg){ .name = "arg0", .type = FXT_ARG_UINT64, .u = t->arg0 };
	args[n++] = (struct fxt_arg){ .name = "arg1", .type = FXT_ARG_UINT64, .u = t->arg1 };
	o->trigger_time = ev->time;
	return callstack__instant(o->cs, ev->pid, ev->tid, "[trigger]", ev->time, args, n);
}

static int cs_event(struct ptd_output *o, const struct ptd_event *ev)
{
	struct callstack *cs = o->cs;
	const char *name;
	int err;

	switch (ev->kind) {
	case PTD_CALL:
		return callstack__call(cs, ev->pid, ev->tid, ev->from, ev->to, ev->time);
	case PTD_RETURN:
		return callstack__return(cs, ev->pid, ev->tid, ev->from, ev->to, ev->time);
	case PTD_JUMP:
		return callstack__jump(cs, ev->pid, ev->tid, ev->from, ev->to, ev->time);
	case PTD_START:
		return callstack__start(cs, ev->pid, ev->tid, ev->to, ev->time);
	case PTD_STOP:
		return callstack__stop(cs, ev->pid, ev->tid, ev->reason, ev->from, ev->to,
				       ev->time);
	case PTD_ERROR:
		return callstack__error(cs, ev->pid, ev->tid, ev->offset, ev->from,
					ptd_errstr(ev->code), ev->time);
	case PTD_OVERFLOW:
		err = callstack__stop(cs, ev->pid, ev->tid, CS_STOP_OVERFLOW, ev->from, 0,
				      ev->time);
		if (!err && ev->to)
			err = callstack__start(cs, ev->pid, ev->tid, ev->to, ev->time);
		return err;
	case PTD_SWITCH_IN:
		return callstack__switch_in(cs, ev->pid, ev->tid, ev->time);
	case PTD_SWITCH_OUT:
		return callstack__switch_out(cs, ev->pid, ev->tid, ev->time);
	case PTD_TRIGGER:
		return o->o.trigger ? trigger_instant(o, ev) : 0;
	case PTD_GAP:
		return gap_instant(o, ev);
	case PTD_COMM:
		/*
		 * exec replaced the image: the calls that led to execve never return, and the
		 * new program's frames must not nest under them (`ptbpf -- env ./prog`).
		 */
		if (ev->reason) {
			err = callstack__stop(cs, ev->pid, ev->tid, CS_STOP_END, 0, 0, ev->time);
			if (err)
				return err;
		}
		name = o->o.names ? o->o.names[ev->code] : NULL;
		if (!name)
			return 0;
		if (ev->pid == ev->tid) {
			err = fxt_process(o->w, ev->pid, name);
			if (err)
				return err;
		}
		return fxt_thread(o->w, ev->pid, ev->tid, name);
	default:
		return 0;
	}
}

static const char *const kind_names[] = {
	[PTD_CALL] = "call",
	[PTD_RETURN] = "return",
	[PTD_JUMP] = "jump",
	[PTD_START] = "start",
	[PTD_STOP] = "stop",
	[PTD_ERROR] = "error",
	[PTD_OVERFLOW] = "overflow",
	[PTD_SWITCH_IN] = "switch-in",
	[PTD_SWITCH_OUT] = "switch-out",
	[PTD_TRIGGER] = "trigger",
	[PTD_COMM] = "comm",
	[PTD_GAP] = "gap",
};


static int calls_event(struct ptd_output *o, const struct ptd_event *ev)
{
	struct cs_symbol sym = { .name = "" };
	const char *extra = "";
	uint64_t at = ev->to;
	char words[64];

	switch (ev->kind) {
	case PTD_STOP:
		extra = stop_name(ev->reason);
		at = ev->from;
		break;
	case PTD_ERROR:
		extra = ptd_errstr(ev->code);
		at = ev->from;
		break;
	case PTD_COMM:
		extra = o->o.names ? o->o.names[ev->code] : "";
		at = 0;
		break;
	case PTD_TRIGGER:
		extra = o->o.trigger && o->o.trigger->desc ? o->o.trigger->desc : "";
		at = 0;
		break;
	case PTD_GAP:
		extra = gap_words(ev->code, words, sizeof(words));
		at = 0;
		break;
	default:
		break;
	}
	if (at && symbols__lookup(o->o.symbols, (int)ev->asid, at, &sym))
		sym.name = "[unknown]";
	/* sideband before the first PT packet has negative times */
	if (fprintf(o->f, "%u/%u %" PRId64 " %s %#" PRIx64 " %#" PRIx64 " %s%s%s\n", ev->pid,
		    ev->tid, (int64_t)(ev->time - o->o.time_base), kind_names[ev->kind], ev->from,
		    ev->to,
		    sym.name, *extra && *sym.name ? " " : "", extra) < 0) {
		o->werr = -errno;
		return o->werr;
	}
	return 0;
}

/* The calls format shows the decoder's events as they are, for diffing with perf. */
static int deliver(struct ptd_output *o, const struct ptd_event *ev)
{
	int err = o->f ? calls_event(o, ev) : 0;

	return err ?: cs_event(o, ev);
}

/* A sideband event: the thread's name, the trigger, a switch, a gap the kernel reported. */
static int sink_sideband(struct ptd_output *o, const struct ptd_event *ev)
{
	int err;

	/* the marker lands in a decoded flow if its thread has events before it */
	if (ev->kind == PTD_TRIGGER && seen_has(o, ev->pid, ev->tid)) {
		o->trigger_placed = true;
		/*
		 * A system call that fired --syscall-latency-over is still open at the
		 * trigger (the trace ends where the call returns): the call that made it
		 * counts for "slowest" with its length up to the fire, so the summary names
		 * the call the user asked about rather than an earlier one.
		 */
		if (o->o.trigger && o->o.trigger->kind == TRIGGER_SYSCALL_LATENCY) {
			err = callstack__note_open_call(o->cs, ev->pid, ev->tid, ev->time);
			if (err)
				return err;
		}
	}
	return deliver(o, ev);
}

/* A control-flow event of a thread other than the last one's (or in another address space). */
static int sink_new_thread(struct ptd_output *o, const struct ptd_event *ev)
{
	int err;

	if (!seen_add(o, ev->pid, ev->tid))
		return -ENOMEM;
	if (pid_get(o, ev->pid) != (int)ev->asid) {
		err = pid_set(o, ev->pid, (int)ev->asid);
		if (err)
			return err;
	}
	o->have_last = true;
	o->last_pid = ev->pid;
	o->last_tid = ev->tid;
	o->last_as = ev->asid;
	return 0;
}

/* What sink_event() does not take itself: sideband, a new thread, the calls format. */
static __attribute__((noinline)) int sink_other(struct ptd_output *o, const struct ptd_event *ev)
{
	int err;

	if (ev->kind >= PTD_SWITCH_IN)
		return sink_sideband(o, ev);
	if (!o->first_time || ev->time < o->first_time)
		o->first_time = ev->time;
	if (ev->time > o->last_time)
		o->last_time = ev->time;
	if (!o->have_last || ev->pid != o->last_pid || ev->tid != o->last_tid ||
	    ev->asid != o->last_as) {
		err = sink_new_thread(o, ev);
		if (err)
			return err;
	}
	o->fast = !o->f && o->have_last && o->first_time;
	return deliver(o, ev);
}

/*
 * Every event of the decode comes through here: a call or a return of the thread before
 * goes to the call-stack builder with nothing else to do.
 */
static inline int sink_event(struct ptd_output *o, const struct ptd_event *ev)
{
	if (ev->kind >= PTD_SWITCH_IN || !o->fast || ev->pid != o->last_pid ||
	    ev->tid != o->last_tid || ev->asid != o->last_as || ev->time < o->last_time)
		return sink_other(o, ev);
	o->last_time = ev->time;
	if (ev->kind == PTD_CALL)
		return callstack__call(o->cs, ev->pid, ev->tid, ev->from, ev->to, ev->time);
	if (ev->kind == PTD_RETURN)
		return callstack__return(o->cs, ev->pid, ev->tid, ev->from, ev->to, ev->time);
	/* untraced code (a PLT call into a library not traced) in and out: as often as calls */
	if (ev->kind == PTD_STOP)
		return callstack__stop(o->cs, ev->pid, ev->tid, ev->reason, ev->from, ev->to,
				       ev->time);
	if (ev->kind == PTD_START)
		return callstack__start(o->cs, ev->pid, ev->tid, ev->to, ev->time);
	return cs_event(o, ev);
}

/* The merge's runs of events (ptd_sink): the loop is all a run costs beyond its events. */
static int sink_events(void *ctx, const struct ptd_event *ev, size_t n)
{
	struct ptd_output *o = ctx;
	const struct ptd_event *end = ev + n;
	int err = 0;

	for (; !err && ev < end; ev++)
		err = sink_event(o, ev);
	return err;
}

int ptd_output_open(const struct ptd_output_opts *oo, struct ptd_output **out,
		    struct ptd_sink *sink)
{
	const struct decode_opts *opts = oo->opts;
	struct fxt_opts fo = {
		.time_base = oo->time_base,
		.text = opts->format == DECODE_TEXT,
	};
	struct callstack_opts co = { .symbolize = symbolize };
	struct ptd_output *o;
	int err = 0;

	*out = NULL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->o = *oo;
	o->format = opts->format;
	co.ctx = o;
	if (opts->format == DECODE_CALLS) {
		if (!opts->output || !strcmp(opts->output, "-")) {
			o->f = stdout;
		} else {
			o->f = fopen(opts->output, "w");
			if (!o->f) {
				err = -errno;
				elog("cannot write %s: %s\n", opts->output, strerror(errno));
				goto fail;
			}
			o->close_f = true;
		}
		/* the call stacks only for the summary: their slices go nowhere */
		err = fxt_writer__open(&o->w, "/dev/null", &fo);
		if (err) {
			elog("cannot write /dev/null: %s\n", strerror(-err));
			goto fail;
		}
	} else {
		err = fxt_writer__open(&o->w, opts->output ? opts->output : "-", &fo);
		if (err) {
			elog("cannot write %s: %s\n", opts->output ? opts->output : "stdout",
			     strerror(-err));
			goto fail;
		}
	}
	o->cs = callstack__new(o->w, &co);
	if (!o->cs) {
		err = errno ? -errno : -ENOMEM;
		goto fail;
	}
	sink->events = sink_events;
	sink->ctx = o;
	*out = o;
	return 0;
fail:
	if (o->w)
		fxt_writer__close(o->w);
	if (o->close_f)
		fclose(o->f);
	free(o);
	return err;
}

/*
 * The "ptbpf" track: one slice over the decoded span of a ptbpf capture, its arguments
 * saying what froze the rings, what recorded them and what the decode found, and the
 * trigger again as an instant at the moment it fired. Only from the capture itself, so
 * a capture decoded at once and its perf.data decoded later give the same trace.
 */
#define SUMMARY_PID 0x7ffffffeu	/* beyond any Linux pid (PID_MAX_LIMIT is 2^22) */

/*
 * Where the trace ends: its last control-flow event, or the trigger if it came later (a
 * thread frozen in a system call, or in a uretprobe's trampoline): the open slices are
 * closed there, so the span the stats report is the one the trace shows.
 */
static uint64_t trace_end(const struct ptd_output *o)
{
	return o->trigger_placed && o->trigger_time > o->last_time ? o->trigger_time :
								     o->last_time;
}

static int write_summary(struct ptd_output *o, const struct decode_stats *st)
{
	const struct capture *cap = o->o.cap;
	const struct pd_trigger *tr = o->o.trigger;
	char bytes[256] = "";
	struct fxt_arg args[FXT_MAX_ARGS];
	uint64_t end = trace_end(o);
	size_t i, len = 0;
	unsigned n = 0;
	int err;

	for (i = 0; i < cap->nr_aux && len < sizeof(bytes); i++)
		len += snprintf(bytes + len, sizeof(bytes) - len, "%scpu %u: %" PRIu64,
				i ? ", " : "", cap->aux[i].cpu, cap->aux[i].size);
	args[n++] = (struct fxt_arg){ .name = "trigger", .type = FXT_ARG_STRING,
				      .s = tr->desc ? tr->desc : "" };
	if (tr->latency_ns)
		args[n++] = (struct fxt_arg){ .name = "latency_ns", .type = FXT_ARG_UINT64,
					      .u = tr->latency_ns };
	args[n++] = (struct fxt_arg){ .name = "trigger_tid", .type = FXT_ARG_UINT32, .u = tr->tid };
	args[n++] = (struct fxt_arg){ .name = "recorded_by", .type = FXT_ARG_STRING,
				      .s = cap->host.cpudesc ? cap->host.cpudesc : "" };
	if (cap->host.hostname)
		args[n++] = (struct fxt_arg){ .name = "host", .type = FXT_ARG_STRING,
					      .s = cap->host.hostname };
	args[n++] = (struct fxt_arg){ .name = "trace_bytes", .type = FXT_ARG_STRING, .s = bytes };
	if (st) {
		args[n++] = (struct fxt_arg){ .name = "instructions", .type = FXT_ARG_UINT64,
					      .u = st->insns };
		args[n++] = (struct fxt_arg){ .name = "calls", .type = FXT_ARG_UINT64,
					      .u = st->calls };
		args[n++] = (struct fxt_arg){ .name = "decode_errors", .type = FXT_ARG_UINT64,
					      .u = st->errors };
		args[n++] = (struct fxt_arg){ .name = "trace_gaps", .type = FXT_ARG_UINT64,
					      .u = st->gaps };
	}
	args[n++] = (struct fxt_arg){ .name = "threads", .type = FXT_ARG_UINT64,
				      .u = o->seen_used };
	err = fxt_process(o->w, SUMMARY_PID, "ptbpf");
	err = err ?: fxt_thread(o->w, SUMMARY_PID, SUMMARY_PID, "capture");
	err = err ?: fxt_complete(o->w, SUMMARY_PID, SUMMARY_PID, "ptbpf", "capture",
				  o->first_time, end, args, n);
	if (!err && o->trigger_placed)
		err = fxt_instant(o->w, SUMMARY_PID, SUMMARY_PID, "ptbpf", "[trigger]",
				  o->trigger_time, args, 1);
	return err;
}

int ptd_output_close(struct ptd_output *o, struct decode_stats *stats)
{
	struct cs_stats cst;
	int err = 0, werr = 0, e;

	if (!o)
		return 0;
	err = callstack__finish(o->cs);
	callstack__stats(o->cs, &cst);
	callstack__free(o->cs);
	if (!err && o->w && o->o.cap && o->format == DECODE_FXT && o->seen_used)
		err = write_summary(o, stats);
	if (o->w) {
		e = fxt_writer__close(o->w);
		if (!err)
			err = e;
		werr = e;
	}
	if (o->f && ferror(o->f))
		werr = o->werr ?: -EIO;
	if (o->close_f && fclose(o->f) && !werr)
		werr = -errno;
	else if (!o->close_f && o->f && fflush(o->f) && !werr)
		werr = -errno;
	if (!err)
		err = werr;
	if (stats) {
		stats->write_err = werr;
		stats->threads = o->seen_used;
		stats->first_time = o->first_time;
		stats->last_time = trace_end(o);
		stats->trigger_placed = o->trigger_placed;
		stats->sym_lookups += cst.sym_lookups;
		stats->sym_hits += cst.sym_hits;
		stats->slowest_ns = cst.slowest_ns;
		stats->slowest_pid = cst.slowest_pid;
		stats->slowest_tid = cst.slowest_tid;
		memcpy(stats->slowest_path, cst.slowest_path, sizeof(stats->slowest_path));
	}
	free(o->pids);
	free(o->seen);
	free(o);
	return err;
}

/* Every event of a decode, kept (PTBPF_OUTPUT_CPU, below). */
struct event_log {
	struct ptd_event *ev;
	size_t nr, cap;
};

static int log_events(void *ctx, const struct ptd_event *ev, size_t n)
{
	struct event_log *l = ctx;

	if (array_grow_sz((void **)&l->ev, &l->cap, l->nr + n, sizeof(*l->ev)))
		return -ENOMEM;
	memcpy(l->ev + l->nr, ev, n * sizeof(*ev));
	l->nr += n;
	return 0;
}

/* CPU seconds of the process so far: user, and system (the output's writes) in *sys. */
static double cpu_seconds(double *sys)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	*sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
}

/*
 * PTBPF_OUTPUT_CPU=1 (the benchmark's): the decode's events are kept, then handed to the
 * output, whose CPU time alone (call stacks, symbols, FXT, up to the bytes written) goes
 * into stats->output_cpu (--stats prints it). The output is the same file; the decode
 * holds all its events in memory (48 bytes each).
 */
static int output_timed(const struct ptd_output_opts *oo, struct ptd_stream **streams,
			size_t nr, const struct ptd_event *extra, size_t nr_extra,
			struct decode_stats *stats)
{
	const struct decode_opts *opts = oo->opts;
	struct event_log l = {};
	struct ptd_sink rec = { .events = log_events, .ctx = &l }, sink;
	struct ptd_output *out = NULL;
	double u0, s0, u1, s1;
	size_t i;
	int err, e;

	err = ptd_decode_streams(streams, nr, opts->jobs > 0 ? opts->jobs : 1, extra, nr_extra,
				 &rec, opts->progress);
	if (stats)
		for (i = 0; i < nr; i++)
			ptd_stream_stats(streams[i], stats);
	/* the events once through the cache first: the first touch of so much memory is
	 * not the output's cost (in a virtual machine, it is most of it) */
	for (i = 0, e = 0; i < l.nr; i++)
		e += l.ev[i].kind == PTD_CALL;
	dlog("[output: %d calls]\n", e);
	u0 = cpu_seconds(&s0);
	e = ptd_output_open(oo, &out, &sink);
	if (!e && l.nr)
		e = sink.events(sink.ctx, l.ev, l.nr);
	if (out) {
		int c = ptd_output_close(out, stats);

		e = e ?: c;
	}
	u1 = cpu_seconds(&s1);
	if (stats)
		stats->output_cpu = u1 - u0 + s1 - s0;
	free(l.ev);
	return err ?: e;
}

int ptd_output_run(const struct ptd_output_opts *oo, struct ptd_stream **streams, size_t nr,
		   const struct ptd_event *extra, size_t nr_extra, struct decode_stats *stats)
{
	const struct decode_opts *opts = oo->opts;
	struct ptd_output *out;
	struct ptd_sink sink;
	double t0 = ptd_seconds();
	int err, e;
	size_t i;

	/* PTBPF_VERIFY_FAST=1: the test suite checks every decode it makes this way */
	if (opts->verify_fast || (getenv("PTBPF_VERIFY_FAST") && *getenv("PTBPF_VERIFY_FAST") &&
				  strcmp(getenv("PTBPF_VERIFY_FAST"), "0"))) {
		err = ptd_streams_verify_fast(streams, nr);
		if (err)
			return err;
		if (stats)
			stats->verified_fast = true;
	}
	if (getenv("PTBPF_OUTPUT_CPU") && !strcmp(getenv("PTBPF_OUTPUT_CPU"), "1")) {
		err = output_timed(oo, streams, nr, extra, nr_extra, stats);
		goto out;
	}
	err = ptd_output_open(oo, &out, &sink);
	if (err)
		return err;
	err = ptd_decode_streams(streams, nr, opts->jobs > 0 ? opts->jobs : 1, extra, nr_extra,
				 &sink, opts->progress);
	if (stats)
		for (i = 0; i < nr; i++)
			ptd_stream_stats(streams[i], stats);
	e = ptd_output_close(out, stats);
	if (!err)
		err = e;
out:
	if (stats)
		stats->seconds += ptd_seconds() - t0;
	/* the trace is written either way; --strict makes its errors the command's */
	if (!err && opts->strict && stats && stats->errors)
		err = -EIO;
	return err;
}
