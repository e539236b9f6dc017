// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The daemon's system-wide PT rings (pt_capture.h), on the pt backend opened without a
 * target (user/pt/pt_backend.c: every PT event is CPU-wide already, pid -1 on each online
 * CPU; a capture command's target only adds its /proc synthesis and --filter).
 *
 * As `perf record -a --snapshot -e intel_pt//` and magic-trace do it: one PT event per
 * CPU, the AUX area mapped read-only so the kernel overwrites it, the sideband (mmap2,
 * comm, task, SWITCH_CPU_WIDE) on the same event's data ring, drained into a bounded
 * history whenever it is half full. A snapshot disables every CPU's event (that
 * publishes aux_head: pt_event_stop() with PERF_EF_UPDATE), copies, and re-enables them
 * (perf_aux_output_begin() continues at the published head). The freeze is the loader's
 * PERF_EVENT_IOC_DISABLE when the plane's record arrives: the plane's programs are not
 * aux_pause members of the PT groups (the CLI's in-kernel gate, Linux 6.13+), so the
 * rings run on for the few milliseconds between the fire and its record.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "cli.h"
#include "daemon.h"
#include "log.h"
#include "perfdata.h"
#include "pt_capture.h"
#include "triggers.h"

struct pt_capture {
	struct capture_opts opts;	/* outlives the backend, as open() asks */
	struct backend *b;
	bool kernel;
	uint64_t busy_until;		/* CLOCK_MONOTONIC ns the last snapshot's resume ended */
	uint64_t last_ns;
	unsigned snapshots;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* The backend's error lines while it opens: the first one is the reason. */
struct why_sink {
	char *buf;
	size_t size;
	log_sink_fn prev;
	void *prev_ctx;
};

static void why_sink(void *ctx, int level, const char *msg)
{
	struct why_sink *w = ctx;

	if (level == LOG_ERROR && !w->buf[0]) {
		snprintf(w->buf, w->size, "%s", msg);
		w->buf[strcspn(w->buf, "\n")] = '\0';
	}
	/* the user's sink (the daemon's JSON log) sees them all the same */
	if (w->prev)
		w->prev(w->prev_ctx, level, msg);
	else
		fputs(msg, stderr);
}

int pt_capture__open(uint64_t buffer_size, bool kernel, char *why, size_t why_size,
		     struct pt_capture **out)
{
	const struct backend_ops *ops = &pt_backend_ops;
	struct why_sink w = { .buf = why, .size = why_size };
	struct pt_capture *pc;
	int err;

	*out = NULL;
	if (why_size)
		why[0] = '\0';
	if (!ops->usable(why, why_size))
		return -ENODEV;
	pc = calloc(1, sizeof(*pc));
	if (!pc)
		return -ENOMEM;
	pc->opts.system_wide = true;
	pc->opts.buffer_size = buffer_size;
	pc->opts.kernel = kernel;
	pc->opts.psb_period = -1;
	pc->kernel = kernel;
	log_get_sink(&w.prev, &w.prev_ctx);
	log_set_sink(why_sink, &w);
	err = ops->open(&pc->opts, NULL, &pc->b);
	if (!err)
		err = ops->start(pc->b);
	log_set_sink(w.prev, w.prev_ctx);
	if (err) {
		if (why_size && !why[0])
			snprintf(why, why_size, "cannot open the system-wide PT rings: %s",
				 strerror(-err));
		pt_capture__free(pc);
		return err;
	}
	*out = pc;
	return 0;
}

void pt_capture__free(struct pt_capture *pc)
{
	if (!pc)
		return;
	pt_backend_ops.close(pc->b);	/* disables and unmaps every CPU's rings */
	free(pc);
}

bool pt_capture__kernel(const struct pt_capture *pc)
{
	return pc && pc->kernel;
}

uint64_t pt_capture__buffer_size(const struct pt_capture *pc)
{
	return pc ? pc->opts.buffer_size : 0;
}

int pt_capture__fd(const struct pt_capture *pc)
{
	return pc ? pt_backend_ops.sideband_fd(pc->b) : -EINVAL;
}

int pt_capture__drain(struct pt_capture *pc)
{
	return pc ? pt_backend_ops.drain(pc->b) : -EINVAL;
}

bool pt_capture__busy(const struct pt_capture *pc, uint64_t ktime_ns)
{
	return pc && ktime_ns < pc->busy_until;
}

/* The fire as the capture's trigger record, placed on the trace's clock. */
static int add_trigger(struct pt_capture *pc, struct capture *cap, const struct trigger_rec *rec,
		       const char *desc)
{
	struct pd_record r = { .type = PD_RECORD_PTBPF_TRIGGER };
	struct pd_trigger *tr = &r.trigger;

	trigger_rec_to_pd(rec, tr);
	tr->index = 0;		/* the rule's only trigger (rec->index is its plane index) */
	tr->desc = (char *)(desc ?: trigger_kind_name(rec->kind));
	pt_backend_ops.locate(pc->b, tr->tid, tr->ktime, &tr->cpu, &tr->time);
	return capture__add_record(cap, &r);
}

int pt_capture__take(struct pt_capture *pc, const struct trigger_rec *rec, const char *desc,
		     const char *path)
{
	const struct backend_ops *ops = &pt_backend_ops;
	uint64_t start = mono_ns();
	struct capture *cap = NULL;
	int err, rerr;

	if (!pc || !rec || !path)
		return -EINVAL;
	err = ops->freeze(pc->b);
	if (!err)
		err = ops->focus(pc->b, rec->pid);
	if (!err) {
		cap = capture__new();
		err = cap ? 0 : -ENOMEM;
	}
	if (!err)
		err = ops->snapshot(pc->b, cap);
	/* the capture holds its own copy of the rings now: they run on while it is written */
	rerr = ops->resume(pc->b);
	if (rerr)
		elog("pt: cannot resume the system-wide PT rings: %s\n", strerror(-rerr));
	pc->busy_until = mono_ns();
	pc->last_ns = pc->busy_until - start;
	if (!err)
		err = add_trigger(pc, cap, rec, desc);
	if (!err)
		err = perfdata_write(path, cap);
	/*
	 * The kernel text a kernel: true snapshot copied: the spool keeps one file per
	 * capture, so the kernel part decodes only on a host with this kernel's text.
	 */
	if (cap && cap->kcore_dir)
		rm_tree(cap->kcore_dir);
	capture__free(cap);
	if (!err)
		pc->snapshots++;
	return err ?: rerr;
}

unsigned pt_capture__snapshots(const struct pt_capture *pc)
{
	return pc ? pc->snapshots : 0;
}

uint64_t pt_capture__last_ns(const struct pt_capture *pc)
{
	return pc ? pc->last_ns : 0;
}

const char *pt_capture__describe(const struct pt_capture *pc)
{
	return pc ? pt_backend_ops.describe(pc->b) : "";
}
