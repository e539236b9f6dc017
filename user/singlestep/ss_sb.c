// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "ss_sb.h"

struct ss_sb {
	struct pd_record *recs;		/* strings owned (malloc'ed) */
	size_t nr, cap;
};

int ss_sb__new(struct ss_sb **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

static char **owned_string(struct pd_record *r)
{
	switch (r->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		return &r->mmap.filename;
	case PERF_RECORD_COMM:
		return &r->comm.comm;
	default:
		return NULL;
	}
}

void ss_sb__free(struct ss_sb *sb)
{
	size_t i;

	if (!sb)
		return;
	for (i = 0; i < sb->nr; i++) {
		char **s = owned_string(&sb->recs[i]);

		if (s)
			free(*s);
	}
	free(sb->recs);
	free(sb);
}

int ss_sb__add(struct ss_sb *sb, struct pd_record *rec, uint32_t pid, uint32_t tid,
	       uint64_t time, uint32_t cpu, uint64_t id)
{
	struct pd_record *r;
	char **s;

	if (array_grow_sz((void **)&sb->recs, &sb->cap, sb->nr + 1, sizeof(*sb->recs)))
		return -ENOMEM;
	r = &sb->recs[sb->nr];
	*r = *rec;
	r->sample = (struct pd_sample_id){
		.pid = pid,
		.tid = tid,
		.time = time,
		.cpu = cpu,
		.id = id,
		.valid = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			 PERF_SAMPLE_IDENTIFIER,
	};
	s = owned_string(r);
	if (s && *s) {
		*s = strdup(*s);
		if (!*s)
			return -ENOMEM;
	}
	sb->nr++;
	return 0;
}

int ss_sb__comm(struct ss_sb *sb, pid_t pid, pid_t tid, const char *comm, bool exec,
		uint64_t time, uint32_t cpu)
{
	struct pd_record r = { .type = PERF_RECORD_COMM };

	r.misc = PERF_RECORD_MISC_USER | (exec ? PERF_RECORD_MISC_COMM_EXEC : 0);
	r.comm.pid = pid;
	r.comm.tid = tid;
	r.comm.comm = (char *)comm;
	return ss_sb__add(sb, &r, pid, tid, time, cpu, SS_ID_SB(cpu));
}

static int task(struct ss_sb *sb, uint32_t type, pid_t pid, pid_t ppid, pid_t tid, pid_t ptid,
		uint64_t time, uint32_t cpu)
{
	struct pd_record r = { .type = type };

	r.task.pid = pid;
	r.task.ppid = ppid;
	r.task.tid = tid;
	r.task.ptid = ptid;
	r.task.time = time;
	return ss_sb__add(sb, &r, pid, tid, time, cpu, SS_ID_SB(cpu));
}

int ss_sb__fork(struct ss_sb *sb, pid_t pid, pid_t ppid, pid_t tid, pid_t ptid, uint64_t time,
		uint32_t cpu)
{
	return task(sb, PERF_RECORD_FORK, pid, ppid, tid, ptid, time, cpu);
}

int ss_sb__exit(struct ss_sb *sb, pid_t pid, pid_t ppid, pid_t tid, pid_t ptid, uint64_t time,
		uint32_t cpu)
{
	return task(sb, PERF_RECORD_EXIT, pid, ppid, tid, ptid, time, cpu);
}

int ss_sb__switch(struct ss_sb *sb, uint32_t cpu, pid_t prev_pid, pid_t prev_tid,
		  pid_t next_pid, pid_t next_tid, bool preempt, uint64_t time)
{
	struct pd_record r = { .type = PERF_RECORD_SWITCH_CPU_WIDE };
	int err;

	/* perf (have_sched_switch = 3) takes the incoming thread from the switch-out record. */
	r.misc = PERF_RECORD_MISC_SWITCH_OUT | (preempt ? PERF_RECORD_MISC_SWITCH_OUT_PREEMPT : 0);
	r.sw.next_prev_pid = next_pid;
	r.sw.next_prev_tid = next_tid;
	err = ss_sb__add(sb, &r, prev_pid, prev_tid, time, cpu, SS_ID_SB(cpu));
	if (err)
		return err;
	r.misc = 0;
	r.sw.next_prev_pid = prev_pid;
	r.sw.next_prev_tid = prev_tid;
	return ss_sb__add(sb, &r, next_pid, next_tid, time, cpu, SS_ID_SB(cpu));
}

int ss_sb__itrace_start(struct ss_sb *sb, pid_t pid, pid_t tid, uint64_t time, uint32_t cpu)
{
	struct pd_record r = { .type = PERF_RECORD_ITRACE_START };

	r.itrace_start.pid = pid;
	r.itrace_start.tid = tid;
	return ss_sb__add(sb, &r, pid, tid, time, cpu, SS_ID_PT(cpu));
}

size_t ss_sb__count(const struct ss_sb *sb)
{
	return sb->nr;
}

int ss_sb__to_capture(const struct ss_sb *sb, struct capture *cap)
{
	size_t i;
	int err;

	for (i = 0; i < sb->nr; i++) {
		err = capture__add_record(cap, &sb->recs[i]);
		if (err)
			return err;
	}
	return 0;
}
