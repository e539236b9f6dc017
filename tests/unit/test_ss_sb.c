// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Sideband records of the singlestep backend, as perf reads them. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "perfdata.h"
#include "ss_sb.h"

static void test_records(void **state)
{
	struct pd_record mmap = { .type = PERF_RECORD_MMAP2 };
	const struct pd_record *r;
	struct capture *cap = capture__new();
	char name[32] = "/bin/true";
	struct ss_sb *sb;

	assert_non_null(cap);
	assert_int_equal(ss_sb__new(&sb), 0);
	assert_int_equal(ss_sb__comm(sb, 10, 11, "worker", true, 100, 1), 0);
	mmap.mmap.pid = mmap.mmap.tid = 10;
	mmap.mmap.addr = 0x400000;
	mmap.mmap.len = 0x1000;
	mmap.mmap.filename = name;
	assert_int_equal(ss_sb__add(sb, &mmap, 10, 10, 101, 0, SS_ID_SB(0)), 0);
	/* The record owns a copy: the caller's buffer may change. */
	strcpy(name, "/bin/false");
	assert_int_equal(ss_sb__fork(sb, 10, 1, 12, 11, 102, 1), 0);
	assert_int_equal(ss_sb__exit(sb, 10, 1, 12, 11, 103, 1), 0);
	assert_int_equal(ss_sb__itrace_start(sb, 10, 11, 104, 1), 0);
	assert_int_equal(ss_sb__count(sb), 5);
	assert_int_equal(ss_sb__to_capture(sb, cap), 0);
	assert_int_equal(cap->nr_records, 5);

	r = &cap->records[0];
	assert_int_equal(r->type, PERF_RECORD_COMM);
	assert_true(r->misc & PERF_RECORD_MISC_COMM_EXEC);
	assert_string_equal(r->comm.comm, "worker");
	assert_int_equal(r->sample.tid, 11);
	assert_int_equal(r->sample.time, 100);
	assert_int_equal(r->sample.cpu, 1);
	assert_int_equal(r->sample.id, SS_ID_SB(1));
	assert_int_equal(r->sample.valid, PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
					  PERF_SAMPLE_IDENTIFIER);
	assert_string_equal(cap->records[1].mmap.filename, "/bin/true");
	r = &cap->records[2];
	assert_int_equal(r->type, PERF_RECORD_FORK);
	assert_int_equal(r->task.ppid, 1);
	assert_int_equal(r->task.ptid, 11);
	assert_int_equal(cap->records[3].type, PERF_RECORD_EXIT);
	r = &cap->records[4];
	assert_int_equal(r->type, PERF_RECORD_ITRACE_START);
	/* ITRACE_START comes from the PT event, not the sideband event. */
	assert_int_equal(r->sample.id, SS_ID_PT(1));
	ss_sb__free(sb);
	capture__free(cap);
}

/* perf takes the incoming thread from the switch-out record (have_sched_switch = 3). */
static void test_switch_pair(void **state)
{
	struct capture *cap = capture__new();
	const struct pd_record *out, *in;
	struct ss_sb *sb;

	assert_int_equal(ss_sb__new(&sb), 0);
	assert_int_equal(ss_sb__switch(sb, 1, 10, 11, 20, 21, true, 500), 0);
	assert_int_equal(ss_sb__to_capture(sb, cap), 0);
	assert_int_equal(cap->nr_records, 2);
	out = &cap->records[0];
	in = &cap->records[1];
	assert_int_equal(out->type, PERF_RECORD_SWITCH_CPU_WIDE);
	assert_int_equal(out->misc, PERF_RECORD_MISC_SWITCH_OUT |
				    PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);
	assert_int_equal(out->sample.pid, 10);
	assert_int_equal(out->sample.tid, 11);
	assert_int_equal(out->sw.next_prev_pid, 20);
	assert_int_equal(out->sw.next_prev_tid, 21);
	assert_int_equal(in->misc, 0);
	assert_int_equal(in->sample.tid, 21);
	assert_int_equal(in->sw.next_prev_tid, 11);
	assert_int_equal(in->sample.time, out->sample.time);
	assert_int_equal(in->sample.cpu, 1);
	ss_sb__free(sb);
	ss_sb__free(NULL);
	capture__free(cap);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_switch_pair),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
