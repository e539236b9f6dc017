/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Sideband of the singlestep backend: the records the kernel would have written to the
 * PT events' data rings (notes/kernel-pt-abi.md §4), kept in time order for every
 * snapshot. Each carries the sample_id trailer of a per-CPU event, as perf record's
 * per-CPU intel_pt + dummy (context_switch) events would.
 */
#ifndef PTBPF_SS_SB_H
#define PTBPF_SS_SB_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "perfdata.h"

/* Sample ids: the PT event and the sideband (dummy) event of each virtual CPU. */
#define SS_ID_PT(cpu) (0x1000ull + (cpu))
#define SS_ID_SB(cpu) (0x2000ull + (cpu))

struct ss_sb;

int ss_sb__new(struct ss_sb **out);
void ss_sb__free(struct ss_sb *sb);

/* Any record; strings are copied. The trailer is filled from pid, tid, time, cpu. */
int ss_sb__add(struct ss_sb *sb, struct pd_record *rec, uint32_t pid, uint32_t tid,
	       uint64_t time, uint32_t cpu, uint64_t id);

int ss_sb__comm(struct ss_sb *sb, pid_t pid, pid_t tid, const char *comm, bool exec,
		uint64_t time, uint32_t cpu);
int ss_sb__fork(struct ss_sb *sb, pid_t pid, pid_t ppid, pid_t tid, pid_t ptid, uint64_t time,
		uint32_t cpu);
int ss_sb__exit(struct ss_sb *sb, pid_t pid, pid_t ppid, pid_t tid, pid_t ptid, uint64_t time,
		uint32_t cpu);
/*
 * One context switch on `cpu`: the switch-out record of `prev` naming `next`, and the
 * switch-in record of `next` naming `prev` (0/0 is the idle task).
 */
int ss_sb__switch(struct ss_sb *sb, uint32_t cpu, pid_t prev_pid, pid_t prev_tid,
		  pid_t next_pid, pid_t next_tid, bool preempt, uint64_t time);
int ss_sb__itrace_start(struct ss_sb *sb, pid_t pid, pid_t tid, uint64_t time, uint32_t cpu);

size_t ss_sb__count(const struct ss_sb *sb);
/* Append every record to `cap`. */
int ss_sb__to_capture(const struct ss_sb *sb, struct capture *cap);

#endif /* PTBPF_SS_SB_H */
