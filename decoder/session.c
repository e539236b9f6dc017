// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Decoding a capture (perf.data from ptbpf or `perf record -e intel_pt//`).
 *
 * The sideband is read once, in time order, into: address spaces (MMAP2 per process,
 * a new one at each exec, a copy at fork), thread names (COMM), each CPU's schedule
 * (SWITCH_CPU_WIDE, ITRACE_START: which thread runs from when), and extra events for
 * the call-stack builder (names, switches, the trigger). The AUX buffers become streams:
 * one per CPU (per thread in per-thread mode), buffers that follow each other in the AUX
 * area joined, separate snapshots kept apart (each begins mid-packet, and joining them
 * would decode garbage at the seam). The libipt configuration (cpu and errata, MTC and
 * CTC ratios, nominal frequency) and the TSC -> perf time conversion come from the
 * capture's header, AUXTRACE_INFO and TIME_CONV.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "array.h"
#include "log.h"
#include "piece.h"
#include "ptd.h"
#include "symtab.h"

struct sched_list {
	uint32_t cpu;
	struct ptd_sched *v;
	size_t nr, cap;
};

/* One stream to be: AUX buffers of one queue that follow each other. */
struct queue {
	uint32_t cpu, tid;		/* per-CPU: cpu; per-thread: tid (cpu = -1) */
	uint64_t end;			/* AUX offset just past the last buffer joined */
	const uint8_t *bytes;		/* the stream: one AUX buffer's own, or `data` */
	uint8_t *data;			/* joined bytes, once there are two buffers (malloc) */
	size_t size, cap;
	uint64_t first_offset;		/* ordering key */
	int fd;				/* a file holding `bytes` at file_off (-1: none): the
					 * skip's PSB probes read it there (capture__file_range) */
	uint64_t file_off;
};

struct session {
	const struct capture *cap;
	const struct decode_opts *opts;
	struct ptd_images im;
	struct symbols *sy;
	struct sched_list *scheds;	/* per CPU */
	size_t nr_scheds, cap_scheds;
	struct ptd_event *extra;	/* sideband events, sorted by time at the end */
	size_t nr_extra, cap_extra;
	const char **names;		/* COMM names, referenced by PTD_COMM events */
	size_t nr_names, cap_names;
	struct queue *queues;
	size_t nr_queues, cap_queues;
	struct {
		uint32_t tid, pid;	/* tid -> pid, from the sideband */
		int32_t name;		/* its COMM (index in names), -1 if none yet */
	} *tids;
	size_t nr_tids, cap_tids;
	uint64_t aux_truncated, aux_partial, aux_collision, aux_gaps;	/* decode_stats */
	struct pt_config config;
	struct ptd_clock clock;
	bool timeless;
	uint64_t last_record_time;
	/* --pid (with the children they fork, if asked) and --tid: what is decoded */
	bool selecting;
	uint32_t *sel_pids;
	size_t nr_sel_pids, cap_sel_pids;
	struct ptd_range **ranges;	/* per queue: what to decode of it, NULL: all */
	size_t *nr_ranges;
};

static uint64_t rec_time(const struct pd_record *r)
{
	return r->sample.valid & PERF_SAMPLE_TIME ? r->sample.time : 0;
}

/* ---------------------------------------------------------------- config */

/* The config of the capture's PT event (0: none). */
static uint64_t pt_event_config(const struct capture *cap)
{
	uint32_t i;

	for (i = 0; i < cap->nr_attrs; i++)
		if (cap->attrs[i].attr.type == cap->pt.pmu_type)
			return cap->attrs[i].attr.config;
	return 0;
}

void ptd_config_timing(struct pt_config *cfg, const struct capture *cap)
{
	const struct pd_pt_info *pt = &cap->pt;
	uint64_t config = pt_event_config(cap);

	/* AUXTRACE_INFO holds masks of the config fields, as perf writes them */
	if ((config & pt->mtc_bit) && pt->mtc_freq_bits)
		cfg->mtc_freq = (uint8_t)((config & pt->mtc_freq_bits) >>
					  __builtin_ctzll(pt->mtc_freq_bits));
	cfg->nom_freq = (uint8_t)pt->max_non_turbo_ratio;
	cfg->cpuid_0x15_eax = (uint32_t)pt->tsc_ctc_ratio_d;
	cfg->cpuid_0x15_ebx = (uint32_t)pt->tsc_ctc_ratio_n;
}

/* "GenuineIntel,6,94,3" -> cpu; the errata follow. */
static void config_from_capture(struct session *ss)
{
	const struct capture *cap = ss->cap;
	const struct pd_pt_info *pt = &cap->pt;
	unsigned family = 0, model = 0, stepping = 0;
	uint64_t config = pt_event_config(cap);
	uint32_t i;

	pt_config_init(&ss->config);
	if (cap->host.cpuid && !strncmp(cap->host.cpuid, "GenuineIntel,", 13) &&
	    sscanf(cap->host.cpuid + 13, "%u,%u,%u", &family, &model, &stepping) == 3)
		ptd_config_cpu(&ss->config, family, model, stepping);
	ptd_config_timing(&ss->config, cap);

	ss->clock.shift = (uint16_t)pt->time_shift;
	ss->clock.mult = (uint32_t)pt->time_mult;
	ss->clock.zero = pt->time_zero;
	for (i = 0; i < cap->nr_records; i++) {
		const struct pd_record *r = &cap->records[i];

		if (r->type != PD_RECORD_TIME_CONV)
			continue;
		ss->clock.shift = (uint16_t)r->time_conv.time_shift;
		ss->clock.mult = (uint32_t)r->time_conv.time_mult;
		ss->clock.zero = r->time_conv.time_zero;
		ss->clock.short_cyc = r->time_conv.cap_user_time_short;
		ss->clock.cycles = r->time_conv.time_cycles;
		ss->clock.mask = r->time_conv.time_mask;
		break;
	}
	/* without the TSC in the trace or a conversion, time is instruction counts */
	ss->timeless = !pt->cap_user_time_zero || !ss->clock.mult ||
		       (pt->tsc_bit && config && !(config & pt->tsc_bit));
}

int ptdecode_first_time(const struct capture *cap, uint64_t *ns)
{
	struct session ss = { .cap = cap };
	uint64_t first = UINT64_MAX, t;
	size_t i;

	config_from_capture(&ss);
	if (ss.timeless)
		return -ENODATA;
	/* each buffer of a queue from its first PSB: a continuation's start is mid-packet */
	for (i = 0; i < cap->nr_aux; i++)
		if (cap->aux[i].size && cap->aux[i].data &&
		    !ptd_first_time(cap->aux[i].data, cap->aux[i].size, &ss.config, &ss.clock,
				    &t) && t < first)
			first = t;
	if (first == UINT64_MAX)
		return -ENODATA;
	*ns = first;
	return 0;
}

/* ---------------------------------------------------------------- sideband */

static int add_extra(struct session *ss, enum ptd_kind kind, uint64_t time, uint32_t pid,
		     uint32_t tid, int32_t code)
{
	struct ptd_event *ev;

	if (array_grow_sz((void **)&ss->extra, &ss->cap_extra, ss->nr_extra + 1,
			  sizeof(*ss->extra)))
		return -ENOMEM;
	ev = &ss->extra[ss->nr_extra++];
	memset(ev, 0, sizeof(*ev));
	ev->time = time;
	ev->pid = pid;
	ev->tid = tid;
	ev->kind = (uint16_t)kind;
	ev->code = code;
	ev->cpu = UINT32_MAX;
	ev->asid = UINT32_MAX;
	return 0;
}

static int add_sched(struct session *ss, uint32_t cpu, uint64_t time, uint32_t pid, uint32_t tid)
{
	struct sched_list *l = NULL;
	size_t i;

	for (i = 0; i < ss->nr_scheds; i++)
		if (ss->scheds[i].cpu == cpu)
			l = &ss->scheds[i];
	if (!l) {
		if (array_grow_sz((void **)&ss->scheds, &ss->cap_scheds, ss->nr_scheds + 1,
				  sizeof(*l)))
			return -ENOMEM;
		l = &ss->scheds[ss->nr_scheds++];
		memset(l, 0, sizeof(*l));
		l->cpu = cpu;
	}
	if (array_grow_sz((void **)&l->v, &l->cap, l->nr + 1,
			  sizeof(*l->v)))
		return -ENOMEM;
	l->v[l->nr++] = (struct ptd_sched){ .time = time, .pid = pid, .tid = tid };
	return 0;
}

/* Any pid and tid a record holds is a thread to know (-1 included: no sentinel here). */
static int note_tid(struct session *ss, uint32_t pid, uint32_t tid)
{
	size_t i;

	for (i = ss->nr_tids; i-- > 0;)
		if (ss->tids[i].tid == tid) {
			ss->tids[i].pid = pid;
			return 0;
		}
	if (array_grow_sz((void **)&ss->tids, &ss->cap_tids, ss->nr_tids + 1,
			  sizeof(*ss->tids)))
		return -ENOMEM;
	ss->tids[ss->nr_tids].tid = tid;
	ss->tids[ss->nr_tids].name = -1;
	ss->tids[ss->nr_tids++].pid = pid;
	return 0;
}

static int32_t *name_of(struct session *ss, uint32_t tid)
{
	size_t i;

	for (i = ss->nr_tids; i-- > 0;)
		if (ss->tids[i].tid == tid)
			return &ss->tids[i].name;
	return NULL;
}

/* ---------------------------------------------------------------- selection */

static bool pid_selected(const struct session *ss, uint32_t pid)
{
	size_t i;

	for (i = 0; i < ss->nr_sel_pids; i++)
		if (ss->sel_pids[i] == pid)
			return true;
	return false;
}

static int select_pid(struct session *ss, uint32_t pid)
{
	if (array_grow_sz((void **)&ss->sel_pids, &ss->cap_sel_pids, ss->nr_sel_pids + 1,
		 sizeof(*ss->sel_pids)))
		return -ENOMEM;
	ss->sel_pids[ss->nr_sel_pids++] = pid;
	return 0;
}

/* Is the flow of thread `tid` of process `pid` wanted? (struct ptd_stream_opts.selected) */
static bool thread_selected(void *ctx, uint32_t pid, uint32_t tid)
{
	const struct session *ss = ctx;
	size_t i;

	if (!ss->selecting)
		return true;
	for (i = 0; i < ss->opts->nr_tids; i++)
		if (ss->opts->tids[i] == tid)
			return true;
	return pid_selected(ss, pid);
}

static int init_selection(struct session *ss)
{
	const struct decode_opts *o = ss->opts;
	size_t i;
	int err;

	ss->selecting = o->nr_pids || o->nr_tids;
	for (i = 0; i < o->nr_pids; i++) {
		err = select_pid(ss, o->pids[i]);
		if (err)
			return err;
	}
	return 0;
}

/* A new thread or process has its parent's name until it sets its own (perf does so). */
static int on_fork(struct session *ss, const struct pd_record *r, uint64_t t)
{
	int32_t *parent, *child;
	int err;

	err = note_tid(ss, r->task.pid, r->task.tid);
	if (err)
		return err;
	if (ss->opts->children && r->task.pid != r->task.ppid &&
	    pid_selected(ss, r->task.ppid) && !pid_selected(ss, r->task.pid)) {
		err = select_pid(ss, r->task.pid);
		if (err)
			return err;
	}
	if (r->task.pid != r->task.ppid && ptd_aspace_find(&ss->im, r->task.pid, t) < 0) {
		err = ptd_aspace_fork(&ss->im, r->task.ppid, r->task.pid, t);
		if (err < 0)
			return err;
	}
	parent = name_of(ss, r->task.ptid);
	child = name_of(ss, r->task.tid);
	if (!parent || *parent < 0 || !child || *child >= 0)
		return 0;
	*child = *parent;
	return add_extra(ss, PTD_COMM, t, r->task.pid, r->task.tid, *parent);
}

static uint32_t pid_of(const struct session *ss, uint32_t tid)
{
	size_t i;

	for (i = ss->nr_tids; i-- > 0;)
		if (ss->tids[i].tid == tid)
			return ss->tids[i].pid;
	return tid;
}

/* The address space a record of `pid` at `time` adds to (made on first use). */
static int as_of(struct session *ss, uint32_t pid, uint64_t time)
{
	int as = ptd_aspace_find(&ss->im, pid, time);

	return as >= 0 ? as : ptd_aspace_new(&ss->im, pid, time);
}

/*
 * The build-id of a user file in the capture's HEADER_BUILD_ID list: where perf record
 * (and ptbpf) put them, unless MMAP2 carries one (perf record --buildid-mmap). Without it
 * --debug-dir and ~/.debug cannot be searched, nor a stale file at the path noticed.
 */
static const struct pd_build_id *header_build_id(const struct capture *cap, const char *name)
{
	size_t i;

	for (i = 0; i < cap->nr_build_ids; i++) {
		const struct pd_build_id *b = &cap->build_ids[i];

		if ((b->misc & PERF_RECORD_MISC_CPUMODE_MASK) != PERF_RECORD_MISC_KERNEL &&
		    b->filename && !strcmp(b->filename, name))
			return b;
	}
	return NULL;
}

static int on_mmap(struct session *ss, const struct pd_record *r)
{
	bool kernel = (r->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
	const uint8_t *build_id = r->mmap.build_id;
	uint8_t build_id_size = r->mmap.build_id_size;
	const struct pd_build_id *hb;
	bool exec;
	int as;

	if (kernel)
		return 0;	/* kernel code comes from the kcore copy */
	if (r->type == PERF_RECORD_MMAP2)
		exec = r->mmap.prot & 4 /* PROT_EXEC */;
	else
		exec = !(r->misc & PERF_RECORD_MISC_MMAP_DATA);
	/* nothing mapped, no code to decode there (the reader refuses wrapping ranges) */
	if ((!exec && strcmp(r->mmap.filename, "[vdso]")) || !r->mmap.len)
		return 0;
	as = as_of(ss, r->mmap.pid, rec_time(r));
	if (as < 0)
		return as;
	if (!build_id_size && (hb = header_build_id(ss->cap, r->mmap.filename))) {
		build_id = hb->id;
		build_id_size = hb->size;
	}
	return ptd_aspace_map_file(&ss->im, as, r->mmap.filename, r->mmap.addr, r->mmap.len,
				   r->mmap.pgoff, true, build_id, build_id_size);
}

static int on_comm(struct session *ss, const struct pd_record *r, uint64_t t)
{
	int err;

	err = note_tid(ss, r->comm.pid, r->comm.tid);
	if (err)
		return err;
	if (r->misc & PERF_RECORD_MISC_COMM_EXEC) {
		/* exec: a new address space; its mappings follow */
		err = ptd_aspace_new(&ss->im, r->comm.pid, t);
		if (err < 0)
			return err;
	}
	if (array_grow_sz((void **)&ss->names, &ss->cap_names, ss->nr_names + 1,
			  sizeof(*ss->names)))
		return -ENOMEM;
	ss->names[ss->nr_names] = r->comm.comm;
	*name_of(ss, r->comm.tid) = (int32_t)ss->nr_names;
	err = add_extra(ss, PTD_COMM, t, r->comm.pid, r->comm.tid, (int32_t)ss->nr_names++);
	if (!err)
		ss->extra[ss->nr_extra - 1].reason = !!(r->misc & PERF_RECORD_MISC_COMM_EXEC);
	return err;
}

static int cmp_record_time(const void *a, const void *b, void *ctx)
{
	const struct capture *cap = ctx;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	uint64_t tx = rec_time(&cap->records[x]), ty = rec_time(&cap->records[y]);

	if (tx != ty)
		return tx < ty ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int cmp_sched(const void *a, const void *b)
{
	const struct ptd_sched *x = a, *y = b;

	return x->time < y->time ? -1 : x->time > y->time;
}

static int cmp_extra(const void *a, const void *b)
{
	const struct ptd_event *x = a, *y = b;

	/* stable: the sequence number is kept in `offset` while sorting */
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/*
 * PERF_RECORD_AUX: the kernel's word on the trace it just published. TRUNCATED: data
 * was lost (perf_aux_output_end() in kernel/events/ring_buffer.c passes the driver's
 * flags on; perf's intel_pt_process_event() makes it a "Lost trace data" error, which
 * `perf script --itrace=e` prints); PARTIAL: the trace has gaps (PT stopped while VMX
 * was on, intel_pt_handle_vmx()); COLLISION: samples collided (other PMUs; perf's
 * session warnings count all three). Each is a gap marked on the thread that ran on that
 * CPU then; OVERWRITE alone is every snapshot-mode record and says nothing.
 */
static int on_aux(struct session *ss, const struct pd_record *r, uint64_t t)
{
	uint64_t damage = r->aux.flags & (PERF_AUX_FLAG_TRUNCATED | PERF_AUX_FLAG_PARTIAL |
					  PERF_AUX_FLAG_COLLISION);

	if (!damage)
		return 0;
	ss->aux_truncated += !!(damage & PERF_AUX_FLAG_TRUNCATED);
	ss->aux_partial += !!(damage & PERF_AUX_FLAG_PARTIAL);
	ss->aux_collision += !!(damage & PERF_AUX_FLAG_COLLISION);
	ss->aux_gaps++;
	if (!(r->sample.valid & PERF_SAMPLE_TID))
		return 0;
	return add_extra(ss, PTD_GAP, t, r->sample.pid, r->sample.tid, (int32_t)damage);
}

static int read_sideband(struct session *ss)
{
	const struct capture *cap = ss->cap;
	size_t *order, i, timed = 0;
	int err = 0;

	order = malloc((cap->nr_records ? cap->nr_records : 1) * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (i = 0; i < cap->nr_records; i++) {
		order[i] = i;
		timed += rec_time(&cap->records[i]) != 0;
	}
	/* perf writes each CPU's ring in turn: sort by time (file order when untimed) */
	if (timed)
		qsort_r(order, cap->nr_records, sizeof(*order), cmp_record_time, (void *)cap);

	for (i = 0; i < cap->nr_records && !err; i++) {
		const struct pd_record *r = &cap->records[order[i]];
		uint64_t t = rec_time(r);
		bool has_cpu = r->sample.valid & PERF_SAMPLE_CPU;

		if (t > ss->last_record_time)
			ss->last_record_time = t;
		switch (r->type) {
		case PERF_RECORD_MMAP:
		case PERF_RECORD_MMAP2:
			err = on_mmap(ss, r);
			break;
		case PERF_RECORD_COMM:
			err = on_comm(ss, r, t);
			break;
		case PERF_RECORD_FORK:
			err = on_fork(ss, r, t);
			break;
		case PERF_RECORD_ITRACE_START:
			err = note_tid(ss, r->itrace_start.pid, r->itrace_start.tid);
			if (!err && has_cpu)
				err = add_sched(ss, r->sample.cpu, t, r->itrace_start.pid,
						r->itrace_start.tid);
			break;
		case PERF_RECORD_SWITCH_CPU_WIDE:
		case PERF_RECORD_SWITCH: {
			bool out = r->misc & PERF_RECORD_MISC_SWITCH_OUT;
			uint32_t pid = r->sample.pid, tid = r->sample.tid;

			if (!(r->sample.valid & PERF_SAMPLE_TID))
				break;
			err = add_extra(ss, out ? PTD_SWITCH_OUT : PTD_SWITCH_IN, t, pid, tid, 0);
			if (err || !has_cpu || r->type != PERF_RECORD_SWITCH_CPU_WIDE)
				break;
			/* who runs from now on: the next task, or the one switched in */
			if (out)
				err = add_sched(ss, r->sample.cpu, t, r->sw.next_prev_pid,
						r->sw.next_prev_tid);
			else
				err = add_sched(ss, r->sample.cpu, t, pid, tid);
			break;
		}
		case PERF_RECORD_AUX:
			err = on_aux(ss, r, t);
			break;
		default:
			break;
		}
	}
	free(order);
	if (err)
		return err;
	for (i = 0; i < ss->nr_scheds; i++)
		qsort(ss->scheds[i].v, ss->scheds[i].nr, sizeof(*ss->scheds[i].v), cmp_sched);
	return 0;
}

/* Switch events only for threads of processes we decode; the trigger; then sort. */
static int finish_extra(struct session *ss)
{
	const struct capture *cap = ss->cap;
	size_t i, n = 0;
	int err;

	for (i = 0; i < ss->nr_extra; i++) {
		struct ptd_event *ev = &ss->extra[i];

		if ((ev->kind == PTD_SWITCH_IN || ev->kind == PTD_SWITCH_OUT) &&
		    ptd_aspace_find(&ss->im, ev->pid, ev->time) < 0)
			continue;
		if ((ev->kind == PTD_SWITCH_IN || ev->kind == PTD_SWITCH_OUT ||
		     ev->kind == PTD_COMM || ev->kind == PTD_GAP) &&
		    !thread_selected(ss, ev->pid, ev->tid))
			continue;
		ss->extra[n++] = *ev;
	}
	ss->nr_extra = n;
	for (i = 0; i < cap->nr_records; i++) {
		const struct pd_record *r = &cap->records[i];

		if (r->type != PD_RECORD_PTBPF_TRIGGER)
			continue;
		if (!thread_selected(ss, r->trigger.pid, r->trigger.tid))
			break;
		/* with no perf time, the trigger is the last thing that happened */
		err = add_extra(ss, PTD_TRIGGER, r->trigger.time ? r->trigger.time :
			       ss->last_record_time, r->trigger.pid, r->trigger.tid, 0);
		if (err)
			return err;
		break;
	}
	for (i = 0; i < ss->nr_extra; i++)
		ss->extra[i].offset = i;
	if (ss->nr_extra)	/* none: no array (qsort(NULL) is undefined) */
		qsort(ss->extra, ss->nr_extra, sizeof(*ss->extra), cmp_extra);
	for (i = 0; i < ss->nr_extra; i++) {
		struct ptd_event *ev = &ss->extra[i];
		int as = ptd_aspace_find(&ss->im, ev->pid, ev->time);

		ev->offset = 0;
		ev->asid = as >= 0 ? (uint32_t)as : UINT32_MAX;
	}
	return 0;
}

static const struct pd_trigger *find_trigger(const struct capture *cap)
{
	size_t i;

	for (i = 0; i < cap->nr_records; i++)
		if (cap->records[i].type == PD_RECORD_PTBPF_TRIGGER)
			return &cap->records[i].trigger;
	return NULL;
}

/* --kernel: the capture's kcore copy (perf record --kcore layout: kcore_dir/kcore). */
static int add_kernel(struct session *ss)
{
	const struct capture *cap = ss->cap;
	char path[PATH_MAX], jit[PATH_MAX];
	int err;

	if (!cap->kcore_dir) {
		elog("%s: no kcore copy in this capture, cannot decode the kernel (capture with "
		     "--kernel, or perf record --kcore)\n", cap->path ? cap->path : "capture");
		return -ENOENT;
	}
	snprintf(path, sizeof(path), "%s/kcore", cap->kcore_dir);
	/* the trigger programs' JIT code, which the trace runs through up to the freeze */
	snprintf(jit, sizeof(jit), "%s/bpf_jit", cap->kcore_dir);
	err = ptd_images_add_kcore(&ss->im, path, access(jit, R_OK) ? NULL : jit);
	if (err)
		elog("%s: cannot load the kernel's code: %s\n", path,
		     ptd_image_strerror(err));
	return err;
}

/* ---------------------------------------------------------------- streams */

static int add_to_queue(struct session *ss, const struct pd_auxtrace *a, bool per_cpu)
{
	struct queue *q = NULL;
	size_t i;

	if (!a->size || !a->data)
		return 0;
	for (i = ss->nr_queues; i-- > 0;) {
		struct queue *c = &ss->queues[i];

		if ((per_cpu ? c->cpu == a->cpu : c->tid == a->tid) && c->end == a->offset) {
			q = c;
			break;
		}
	}
	if (!q) {
		if (array_grow_sz((void **)&ss->queues, &ss->cap_queues, ss->nr_queues + 1,
				  sizeof(*q)))
			return -ENOMEM;
		q = &ss->queues[ss->nr_queues++];
		memset(q, 0, sizeof(*q));
		q->cpu = per_cpu ? a->cpu : UINT32_MAX;
		q->tid = per_cpu ? UINT32_MAX : a->tid;
		q->first_offset = a->offset;
	}
	/* Most queues are one buffer: read it where the capture holds it. */
	if (!q->size) {
		q->bytes = a->data;
		if (capture__file_range(ss->cap, a->data, a->size, &q->fd, &q->file_off))
			q->fd = -1;
		goto joined;
	}
	q->fd = -1;
	if (q->size + a->size > q->cap) {
		bool borrowed = !q->data;	/* bytes is still the first buffer itself */

		if (array_grow_sz((void **)&q->data, &q->cap, q->size + a->size, 1))
			return -ENOMEM;
		if (borrowed)
			memcpy(q->data, q->bytes, q->size);
		q->bytes = q->data;
	}
	memcpy(q->data + q->size, a->data, a->size);
joined:
	q->size += a->size;
	q->end = a->offset + a->size;
	return 0;
}

static int cmp_queue(const void *a, const void *b)
{
	const struct queue *x = a, *y = b;

	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->first_offset < y->first_offset ? -1 : x->first_offset > y->first_offset;
}

static const struct sched_list *sched_of(const struct session *ss, uint32_t cpu)
{
	size_t i;

	for (i = 0; i < ss->nr_scheds; i++)
		if (ss->scheds[i].cpu == cpu)
			return &ss->scheds[i];
	return NULL;
}

/* ---------------------------------------------------------------- skipping */

/*
 * Time after a segment in which a switch still counts for it: the stream's attribution
 * takes a neighbour up to two entries ahead when its own choice does not map the code
 * (see attribute() in decode.c), for a switch and a return to user space that are a few
 * hundred ns apart, below the trace's time resolution (MTC).
 */
#define ATTRIBUTE_SLACK_NS 100000

/*
 * Does a selected thread run on this CPU at some time in [a, b]? The schedule's entry
 * at `a`, those that start up to `b`, and up to two after them that start within the
 * slack. *hint: where the previous search started (the segments come in time order).
 */
static bool runs_selected(const struct session *ss, const struct sched_list *sl, uint64_t a,
			  uint64_t b, size_t *hint)
{
	size_t k = *hint, last, j;

	while (k + 1 < sl->nr && sl->v[k + 1].time <= a)
		k++;
	*hint = k;
	for (last = k; last + 1 < sl->nr && sl->v[last + 1].time <= b; last++)
		;
	for (j = 0; j < 2 && last + 1 < sl->nr &&
		    sl->v[last + 1].time - b <= ATTRIBUTE_SLACK_NS; j++)
		last++;
	for (; k <= last; k++)
		if (thread_selected((void *)ss, sl->v[k].pid, sl->v[k].tid))
			return true;
	return false;
}

/* The PSBs a queue is first probed at, one per COARSE_STEP bytes. */
#define COARSE_STEP (32 * 1024)

struct plan {
	struct session *ss;
	const struct sched_list *sl;	/* the CPU's schedule when selecting by it, or NULL */
	uint64_t win_start, win_end;	/* the window, when opts->window_ns */
	size_t hint;			/* runs_selected()'s */
	struct ptd_range *r;		/* the result */
	size_t nr, cap;
};

/* Is the stretch of trace between times a and b wanted? (0: a PSB+ without time) */
static bool hot(struct plan *p, uint64_t a, uint64_t b)
{
	if (!a || !b)
		return true;
	if (p->sl && !runs_selected(p->ss, p->sl, a, b, &p->hint))
		return false;
	if (p->ss->opts->window_ns && (b < p->win_start || a > p->win_end))
		return false;
	return true;
}

static int add_range(struct plan *p, uint64_t begin, uint64_t end)
{
	if (p->nr && p->r[p->nr - 1].end == begin) {
		p->r[p->nr - 1].end = end;
		return 0;
	}
	if (array_grow_sz((void **)&p->r, &p->cap, p->nr + 1, sizeof(*p->r)))
		return -ENOMEM;
	p->r[p->nr++] = (struct ptd_range){ begin, end };
	return 0;
}

/*
 * What to decode of queue `q`: the PSB-to-PSB segments in which a selected thread ran
 * (by the CPU's schedule; a per-thread buffer is its thread's) and that overlap the
 * window, joined into ranges. A segment's time is from its PSB's TSC to the next
 * one's. The queue is probed at a PSB every COARSE_STEP bytes first, and only the
 * stretches between probes that are wanted as a whole are searched for all their PSBs:
 * a stretch unwanted as a whole has no wanted segment, and is never read.
 * *out stays NULL when everything is decoded.
 */
static int plan_ranges(struct session *ss, const struct queue *q, const struct sched_list *sl,
		       uint64_t win_start, uint64_t win_end, struct ptd_range **out, size_t *nr)
{
	const struct decode_opts *o = ss->opts;
	bool by_thread = ss->selecting && q->cpu != UINT32_MAX && sl && sl->nr;
	struct plan p = { .ss = ss, .sl = by_thread ? sl : NULL, .win_start = win_start,
			  .win_end = win_end };
	struct ptd_psb_src src = { .buf = q->bytes, .size = q->size, .fd = q->fd,
				   .file_off = q->file_off };
	struct ptd_psb *coarse = NULL, *fine = NULL;
	size_t nc = 0, cap = 0, nf, i, j;
	uint64_t off = 0;
	int err = 0;

	*out = NULL;
	*nr = 0;
	if (ss->selecting && q->cpu == UINT32_MAX &&
	    !thread_selected(ss, pid_of(ss, q->tid), q->tid)) {
		/* a per-thread buffer of a thread not selected: none of it */
		*out = malloc(sizeof(**out));
		return *out ? 0 : -ENOMEM;
	}
	if (!by_thread && !o->window_ns)
		return 0;
	for (;;) {
		struct ptd_psb psb;

		err = ptd_psb_src_next(&src, &ss->config, &ss->clock, off, &psb);
		if (err == -ENOENT) {
			err = 0;
			break;
		}
		if (err)
			goto out;
		if (array_grow_sz((void **)&coarse, &cap, nc + 1, sizeof(*coarse))) {
			err = -ENOMEM;
			goto out;
		}
		coarse[nc++] = psb;
		off = (psb.offset / COARSE_STEP + 1) * COARSE_STEP;
	}
	if (!nc)
		goto out;	/* no PSB: nothing a decode could sync to, as it is */
	for (j = 0; j < nc; j++) {
		uint64_t end = j + 1 < nc ? coarse[j + 1].offset : q->size;
		uint64_t b = j + 1 < nc ? coarse[j + 1].time : UINT64_MAX;

		if (!hot(&p, coarse[j].time, b))
			continue;
		err = ptd_psb_src_index(&src, &ss->config, &ss->clock, coarse[j].offset, end,
					&fine, &nf);
		for (i = 0; !err && i < nf; i++) {
			if (hot(&p, fine[i].time, i + 1 < nf ? fine[i + 1].time : b))
				err = add_range(&p, fine[i].offset,
						i + 1 < nf ? fine[i + 1].offset : end);
		}
		free(fine);
		if (err)
			goto out;
	}
	/* nothing wanted: an empty list, not NULL (which decodes all) */
	if (!p.r && !(p.r = malloc(sizeof(*p.r)))) {
		err = -ENOMEM;
		goto out;
	}
	*out = p.r;
	*nr = p.nr;
	p.r = NULL;
out:
	free(p.r);
	free(coarse);
	return err;
}

/*
 * The pages of a queue's bytes that the decode reads, mapped in one call each range
 * (perfdata maps a capture unpopulated): a page faulted in one at a time costs much
 * more, on a VM several microseconds. Older kernels (before 5.14) fault them in.
 */
static void populate(const struct queue *q, const struct ptd_range *r, size_t nr)
{
#ifdef MADV_POPULATE_READ
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), a, b;
	size_t i;

	if (q->fd < 0)
		return;		/* in memory already */
	for (i = 0; i < (r ? nr : 1); i++) {
		a = (uintptr_t)q->bytes + (r ? r[i].begin : 0);
		b = (uintptr_t)q->bytes + (r ? r[i].end : q->size);
		a &= ~(page - 1);
		b = (b + page - 1) & ~(page - 1);
		if (b > a)
			madvise((void *)a, b - a, MADV_POPULATE_READ);
	}
#else
	(void)q;
	(void)r;
	(void)nr;
#endif
}

/*
 * Below this much PT to decode, the fast path costs more than it saves: loading capstone
 * and decoding each run once (cold) outweigh what the cached runs save on so few bytes.
 * Measured (task-clock, -j 1, block decoder against fast path): every test capture
 * (0.2 to 38 KiB of PT) 1.2 to 3.5 ms slower with it; the kAFL mruby and qemu traces cut
 * to 128 KiB 0.6 ms slower, to 256 KiB 1.2 and 4.2 ms faster: break-even at 144 to 173
 * KiB. PTBPF_FAST_MIN_PT=BYTES sets it (0: the fast path always; the test suite's).
 */
#define FAST_MIN_PT (128u << 10)

static uint64_t fast_min_pt(void)
{
	const char *e = getenv("PTBPF_FAST_MIN_PT");

	return e && *e ? strtoull(e, NULL, 0) : FAST_MIN_PT;
}

/* The PT bytes the decode will read: every queue's ranges, or all of it without. */
static uint64_t bytes_to_decode(const struct session *ss)
{
	uint64_t n = 0;
	size_t i, k;

	for (i = 0; i < ss->nr_queues; i++) {
		if (!ss->ranges[i]) {
			n += ss->queues[i].size;
			continue;
		}
		for (k = 0; k < ss->nr_ranges[i]; k++)
			n += ss->ranges[i][k].end - ss->ranges[i][k].begin;
	}
	return n;
}

/* The capture's PT bytes, all of its AUX buffers. */
static uint64_t aux_bytes(const struct capture *cap)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < cap->nr_aux; i++)
		n += cap->aux[i].size;
	return n;
}

static void session_free(struct session *ss)
{
	size_t i;

	for (i = 0; ss->ranges && i < ss->nr_queues; i++)
		free(ss->ranges[i]);
	free(ss->ranges);
	free(ss->nr_ranges);
	free(ss->sel_pids);
	for (i = 0; i < ss->nr_scheds; i++)
		free(ss->scheds[i].v);
	for (i = 0; i < ss->nr_queues; i++)
		free(ss->queues[i].data);
	free(ss->scheds);
	free(ss->queues);
	free(ss->extra);
	free(ss->names);
	free(ss->tids);
	symbols__free(ss->sy);
	ptd_images_fini(&ss->im);
}

int ptdecode_capture(const struct capture *cap, const struct decode_opts *opts,
		     struct decode_stats *stats)
{
	struct ptd_output_opts oo = { .opts = opts };
	struct ptd_stream **streams = NULL;
	struct session ss = { .cap = cap, .opts = opts };
	const struct pd_trigger *trigger;
	uint64_t base = UINT64_MAX, win_start, win_end;
	bool per_cpu, fast;
	double t0 = ptd_seconds();
	size_t i, nr_streams = 0;
	int err;

	if (!cap || !opts)
		return -EINVAL;
	ptd_mark("session");
	if (stats)
		memset(stats, 0, sizeof(*stats));
	if (!cap->pt.present || !cap->nr_aux) {
		elog("%s: no Intel PT data in this capture%s\n", cap->path ? cap->path : "capture",
		     cap->pt.present ? " (no AUX buffers)" : " (no intel_pt AUXTRACE_INFO)");
		return -ENODATA;
	}
	err = ptd_images_init(&ss.im, opts->sysroot, opts->debug_dir, opts->strict);
	if (err)
		return err;
	/* joined in cleanup (ptd_decode_cancel()); not for a capture too small for the
	 * fast path (what it decodes is at most its AUX bytes) */
	ptd_decode_prepare(opts->jobs, !opts->no_fast && aux_bytes(cap) >= fast_min_pt());
	ptd_images_set_vdso(&ss.im, cap->vdso, cap->vdso_size);
	config_from_capture(&ss);
	if (opts->kernel) {
		err = add_kernel(&ss);
		if (err)
			goto cleanup;
	}
	err = init_selection(&ss);
	if (err)
		goto cleanup;
	err = read_sideband(&ss);
	if (err)
		goto cleanup;
	if (stats) {
		stats->aux_truncated = ss.aux_truncated;
		stats->aux_partial = ss.aux_partial;
		stats->aux_collision = ss.aux_collision;
		stats->gaps = ss.aux_gaps;
	}
	if (opts->window_ns && ss.timeless) {
		elog("%s: --window: the trace has no timestamps (captured without TSC), so no "
		     "window can be told: decode it without --window\n",
		     cap->path ? cap->path : "capture");
		err = -EINVAL;
		goto cleanup;
	}

	per_cpu = cap->pt.per_cpu_mmaps;
	for (i = 0; i < cap->nr_aux && !err; i++)
		err = add_to_queue(&ss, &cap->aux[i], per_cpu);
	if (err)
		goto cleanup;
	if (!ss.nr_queues) {
		elog("%s: the capture's PT buffers are empty\n", cap->path ? cap->path : "capture");
		err = -ENODATA;
		goto cleanup;
	}
	qsort(ss.queues, ss.nr_queues, sizeof(*ss.queues), cmp_queue);

	/* every image now: --strict fails here, before any decoding */
	for (i = 0; i < ss.im.nr_as; i++) {
		err = ptd_images_build(&ss.im, (int)i);
		if (err) {
			elog("missing binaries (--strict)\n");
			goto cleanup;
		}
	}
	ss.sy = symbols__new(&ss.im, opts->debug_dir);
	if (!ss.sy) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (opts->kernel) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/kallsyms", cap->kcore_dir);
		err = symbols__load_kallsyms(ss.sy, path);
		if (err) {
			elog("%s: %s; kernel frames show as kcore+0xoff\n", path,
			     err == -ENODATA ? "no text symbols (kptr_restrict?)" : strerror(-err));
			err = 0;
		}
	}
	symbols__preload(ss.sy);
	err = finish_extra(&ss);
	if (err)
		goto cleanup;

	streams = calloc(ss.nr_queues, sizeof(*streams));
	ss.ranges = calloc(ss.nr_queues, sizeof(*ss.ranges));
	ss.nr_ranges = calloc(ss.nr_queues, sizeof(*ss.nr_ranges));
	if (!streams || !ss.ranges || !ss.nr_ranges) {
		err = -ENOMEM;
		goto cleanup;
	}
	/* the window ends at the trigger; without one, at the capture's last record */
	trigger = find_trigger(cap);
	win_end = trigger && trigger->time ? trigger->time : ss.last_record_time;
	win_start = win_end > opts->window_ns ? win_end - opts->window_ns : 0;
	for (i = 0; i < ss.nr_queues; i++) {
		const struct queue *q = &ss.queues[i];
		const struct sched_list *sl = per_cpu ? sched_of(&ss, q->cpu) : NULL;

		err = plan_ranges(&ss, q, sl, win_start, win_end, &ss.ranges[i], &ss.nr_ranges[i]);
		if (err)
			goto cleanup;
		/* a stream that may split: its pieces map their pages (ptd_stream_populate()) */
		if (opts->jobs <= 1 || ss.ranges[i])
			populate(q, ss.ranges[i], ss.nr_ranges[i]);
	}
	/* a small capture: no fast path, nor capstone (the same output either way) */
	fast = !opts->no_fast && bytes_to_decode(&ss) >= fast_min_pt();
	if (stats)
		stats->fast_off_small = !opts->no_fast && !fast;
	for (i = 0; i < ss.nr_queues; i++) {
		const struct queue *q = &ss.queues[i];
		const struct sched_list *sl = per_cpu ? sched_of(&ss, q->cpu) : NULL;
		struct ptd_stream_opts so = {
			.buf = q->bytes,
			.size = q->size,
			.config = ss.config,
			.clock = ss.clock,
			.images = &ss.im,
			.symbols = ss.sy,
			.sched = sl ? sl->v : NULL,
			.nr_sched = sl ? sl->nr : 0,
			.fixed_tid = per_cpu ? 0 : q->tid,
			.fixed_pid = per_cpu ? 0 : pid_of(&ss, q->tid),
			.fixed_as = -1,
			.ranges = ss.ranges[i],
			.nr_ranges = ss.nr_ranges[i],
			.selected = ss.selecting ? thread_selected : NULL,
			.selected_ctx = &ss,
			.index = (uint32_t)i,
			.timeless = ss.timeless,
			.fast = fast,
			.populate = q->fd >= 0 && opts->jobs > 1 && !ss.ranges[i],
		};
		uint64_t t;

		if (!ss.timeless && !ptd_first_time(q->bytes, q->size, &ss.config, &ss.clock, &t) &&
		    t < base)
			base = t;
		err = ptd_stream_new(&so, &streams[i]);
		if (err) {
			elog("cannot decode the capture's PT: bad decoder configuration\n");
			goto cleanup;
		}
		nr_streams++;
	}
	if (base == UINT64_MAX)
		base = ss.timeless ? 0 : ss.extra && ss.nr_extra ? ss.extra[0].time : 0;

	oo.symbols = ss.sy;
	oo.time_base = base;
	oo.names = ss.names;
	oo.trigger = trigger;
	oo.cap = oo.trigger ? cap : NULL;
	if (stats)
		stats->seconds = ptd_seconds() - t0;
	ptd_mark("session set up");
	/* the pieces decode while the output opens (truncating an old file takes a while) */
	if (ptd_decode_start(streams, nr_streams, opts->jobs > 0 ? opts->jobs : 1))
		ptd_decode_cancel();
	err = ptd_output_run(&oo, streams, nr_streams, ss.extra, ss.nr_extra, stats);
	ptd_mark("output closed");

cleanup:
	/* before the streams go: the helpers decode pieces of them */
	ptd_decode_cancel();
	for (i = 0; i < nr_streams; i++)
		ptd_stream_free(streams[i]);
	free(streams);
	session_free(&ss);
	ptd_mark("session freed");
	return err;
}
