/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Building captures of several processes from real ones (the decode benchmark, the
 * selection tests): the sideband without its schedule, and context switches on a CPU
 * as the kernel records them.
 */
#ifndef PTBPF_TESTS_CAPTURE_SYNTH_H
#define PTBPF_TESTS_CAPTURE_SYNTH_H

#include <linux/perf_event.h>
#include <stdbool.h>

#include "perfdata.h"

/* Process `from` switched out for `to` at `time`: SWITCH_CPU_WIDE out, then in (tmpl's CPU). */
static inline int capture_add_switch(struct capture *cap, const struct pd_record *tmpl,
				     uint64_t time, uint32_t from, uint32_t to)
{
	struct pd_record out = *tmpl, in = *tmpl;

	out.misc = PERF_RECORD_MISC_SWITCH_OUT;
	out.sample.pid = out.sample.tid = from;
	out.sample.time = time - 1;
	out.sw.next_prev_pid = out.sw.next_prev_tid = to;
	in.misc = 0;
	in.sample.pid = in.sample.tid = to;
	in.sample.time = time;
	in.sw.next_prev_pid = in.sw.next_prev_tid = from;
	return capture__add_record(cap, &out) ?: capture__add_record(cap, &in);
}

/*
 * Drops the capture's context switches and exits (a process that runs whenever the
 * switches to come say), keeping its first switch in *tmpl; 0, or -1 without one.
 */
static inline int capture_drop_schedule(struct capture *cap, struct pd_record *tmpl)
{
	bool have = false;
	size_t i, n = 0;

	for (i = 0; i < cap->nr_records; i++) {
		const struct pd_record *r = &cap->records[i];

		if (r->type == PERF_RECORD_SWITCH_CPU_WIDE && !have) {
			*tmpl = *r;
			have = true;
		}
		if (r->type != PERF_RECORD_SWITCH_CPU_WIDE && r->type != PERF_RECORD_EXIT)
			cap->records[n++] = *r;
	}
	cap->nr_records = n;
	return have ? 0 : -1;
}

#endif /* PTBPF_TESTS_CAPTURE_SYNTH_H */
