// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * perf.data reader and writer (perfdata/perfdata*.c): invalid arguments, the record
 * codec, write -> read round trips of every record kind, what the writer fixes or
 * refuses, and corrupt files (truncated anywhere, overflowing sizes, offsets past the
 * end, zero-size records, unknown types, bogus counts), each with its one error line.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "array.h"
#include "perfdata.h"
#include "symtab.h"
#include "trigger_abi.h"
#include "perfdata_int.h"

#define PT_ID0 11
#define PT_ID1 12
#define SB_ID0 21
#define SB_ID1 22
#define ST (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | \
	    PERF_SAMPLE_IDENTIFIER)

static char path_buf[256];

/*
 * A file name of this test process in /dev/shm, else /tmp: the truncation tests write
 * thousands of small files, and ext4 flushes a file rewritten after O_TRUNC on close.
 */
static const char *tmp_dir(void)
{
	return access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm";
}

static const char *tmp_path(const char *name)
{
	snprintf(path_buf, sizeof(path_buf), "%s/ptbpf-test-perfdata-%d-%s", tmp_dir(), getpid(),
		 name);
	return path_buf;
}

static void set_sample(struct pd_record *r, uint32_t cpu, uint64_t id, uint64_t time)
{
	r->sample.pid = 100;
	r->sample.tid = 101;
	r->sample.time = time;
	r->sample.cpu = cpu;
	r->sample.id = id;
	r->sample.valid = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			  PERF_SAMPLE_IDENTIFIER;
}

static void add(struct capture *cap, struct pd_record *r, uint32_t cpu, uint64_t id, uint64_t t)
{
	set_sample(r, cpu, id, t);
	assert_int_equal(capture__add_record(cap, r), 0);
}

/* A capture with every record kind, in time order, as a backend would make it. */
static struct capture *full_capture(void)
{
	static const uint64_t pt_ids[] = { PT_ID0, PT_ID1 }, sb_ids[] = { SB_ID0, SB_ID1 };
	struct perf_event_attr pt = { .size = sizeof(pt) }, sb;
	struct capture *cap = capture__new();
	struct pd_build_id bid = { .pid = 100, .misc = PERF_RECORD_MISC_USER, .size = 20,
				   .filename = "/usr/bin/true" };
	struct pd_auxtrace aux = { 0 };
	struct pd_record r;
	uint8_t data[3][64];
	int i;

	assert_non_null(cap);
	pt.type = 8;
	pt.config = 0x300e601;
	pt.sample_period = 1;
	pt.sample_type = ST;
	pt.sample_id_all = 1;
	pt.exclude_kernel = 1;
	sb = pt;
	sb.type = PERF_TYPE_SOFTWARE;
	sb.config = PERF_COUNT_SW_DUMMY;
	sb.context_switch = sb.mmap2 = sb.comm = sb.task = 1;
	assert_int_equal(capture__add_attr(cap, &pt, pt_ids, 2, "intel_pt//u"), 0);
	assert_int_equal(capture__add_attr(cap, &sb, sb_ids, 2, "dummy:u"), 0);

	cap->pt = (struct pd_pt_info){
		.pmu_type = 8, .time_shift = 31, .time_mult = 672770566, .time_zero = 12345,
		.cap_user_time_zero = 1, .tsc_bit = 0x400, .noretcomp_bit = 0x800,
		.have_sched_switch = 3, .snapshot_mode = 1, .per_cpu_mmaps = 1, .mtc_bit = 0x200,
		.mtc_freq_bits = 0x3c000, .tsc_ctc_ratio_n = 266, .tsc_ctc_ratio_d = 2,
		.cyc_bit = 0x2, .max_non_turbo_ratio = 32, .cap_event_trace = 0,
		.present = true,
	};
	cap->pt.filter = capture__strdup(cap, "filter 0x401000/0x100@/bin/x");
	cap->host.hostname = capture__strdup(cap, "host");
	cap->host.osrelease = capture__strdup(cap, "6.18.0");
	cap->host.arch = capture__strdup(cap, "x86_64");
	cap->host.cpudesc = capture__strdup(cap, "Some CPU");
	cap->host.cpuid = capture__strdup(cap, "GenuineIntel,6,85,4");
	cap->host.cmdline = capture__strdup(cap, "ptbpf --uprobe ./x:f -- ./x");
	cap->host.version = capture__strdup(cap, "ptbpf test");
	cap->host.nr_cpus_avail = 4;
	cap->host.nr_cpus_online = 2;
	cap->host.total_mem_kb = 1024;
	cap->host.first_sample_time = 1000;
	cap->host.last_sample_time = 2000;

	memset(&r, 0, sizeof(r));
	r.type = PD_RECORD_TIME_CONV;
	r.time_conv.time_shift = 31;
	r.time_conv.time_mult = 672770566;
	r.time_conv.time_zero = 12345;
	r.time_conv.time_cycles = 7;
	r.time_conv.time_mask = 0xffff;
	r.time_conv.cap_user_time_zero = true;
	r.time_conv.cap_user_time_short = true;
	assert_int_equal(capture__add_record(cap, &r), 0);

	memset(&r, 0, sizeof(r));
	r.type = PERF_RECORD_COMM;
	r.misc = PERF_RECORD_MISC_COMM_EXEC;
	r.comm.pid = 100;
	r.comm.tid = 101;
	r.comm.comm = "target";
	add(cap, &r, 0, SB_ID0, 1000);

	memset(&r, 0, sizeof(r));
	r.type = PERF_RECORD_FORK;
	r.task.pid = 100;
	r.task.ppid = 99;
	r.task.tid = 102;
	r.task.ptid = 101;
	r.task.time = 1001;
	add(cap, &r, 1, SB_ID1, 1001);

	memset(&r, 0, sizeof(r));
	r.type = PERF_RECORD_MMAP;
	r.misc = PERF_RECORD_MISC_USER;
	r.mmap.pid = 100;
	r.mmap.tid = 101;
	r.mmap.addr = 0x400000;
	r.mmap.len = 0x1000;
	r.mmap.pgoff = 0;
	r.mmap.filename = "/old/style/mmap";
	add(cap, &r, 0, SB_ID0, 1002);

	memset(&r, 0, sizeof(r));
	r.type = PERF_RECORD_MMAP2;
	r.misc = PERF_RECORD_MISC_USER;
	r.mmap.pid = 100;
	r.mmap.tid = 101;
	r.mmap.addr = 0x401000;
	r.mmap.len = 0x2000;
	r.mmap.pgoff = 0x1000;
	r.mmap.maj = 8;
	r.mmap.min = 1;
	r.mmap.ino = 123456;
	r.mmap.ino_generation = 7;
	r.mmap.prot = 5;
	r.mmap.flags = 2;
	r.mmap.filename = "/a/file/with/a/longer/name/to/pad";
	add(cap, &r, 0, SB_ID0, 1003);

	memset(&r, 0, sizeof(r));
	r.type = PERF_RECORD_MMAP2;
	r.misc = PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID;
	r.mmap.pid = 100;
	r.mmap.tid = 101;
	r.mmap.addr = 0x7f0000000000;
	r.mmap.len = 0x3000;
	r.mmap.pgoff = 0;
	for (i = 0; i < 20; i++)
		r.mmap.build_id[i] = 0xa0 + i;
	r.mmap.build_id_size = 20;
	r.mmap.prot = 5;
	r.mmap.flags = 2;
	r.mmap.filename = "/lib/libc.so.6";
	add(cap, &r, 1, SB_ID1, 1004);

	memset(&r, 0, sizeof(r));
	r.type = PERF_RECORD_ITRACE_START;
	r.itrace_start.pid = 100;
	r.itrace_start.tid = 101;
	add(cap, &r, 0, PT_ID0, 1005);

	memset(&r, 0, sizeof(r));
	r.type = PERF_RECORD_SWITCH_CPU_WIDE;
	r.sw.next_prev_pid = 0;
	r.sw.next_prev_tid = 0;
	add(cap, &r, 0, SB_ID0, 1006);

	memset(&r, 0, sizeof(r));
	r.type = PD_RECORD_PTBPF_TRIGGER;
	r.trigger.kind = 2;
	r.trigger.index = 1;
	r.trigger.cpu = 1;
	r.trigger.pid = 100;
	r.trigger.tid = 102;
	r.trigger.time = 1007;
	r.trigger.ktime = 99999;
	r.trigger.ip = 0x401234;
	r.trigger.latency_ns = 5000000;
	r.trigger.arg0 = 1;
	r.trigger.arg1 = 2;
	r.trigger.desc = "uprobe:./x:f latency>5ms";
	assert_int_equal(capture__add_record(cap, &r), 0);

	memset(&r, 0, sizeof(r));
	r.type = PERF_RECORD_SWITCH;
	r.misc = PERF_RECORD_MISC_SWITCH_OUT | PERF_RECORD_MISC_SWITCH_OUT_PREEMPT;
	add(cap, &r, 1, SB_ID1, 1008);

	memset(&r, 0, sizeof(r));
	r.type = PERF_RECORD_LOST;
	r.lost.id = SB_ID1;
	r.lost.lost = 17;
	add(cap, &r, 1, SB_ID1, 1009);

	memset(&r, 0, sizeof(r));
	r.type = PERF_RECORD_LOST_SAMPLES;
	r.lost_samples.lost = 3;
	add(cap, &r, 1, SB_ID1, 1010);

	memset(&r, 0, sizeof(r));
	r.type = PERF_RECORD_EXIT;
	r.task.pid = 100;
	r.task.ppid = 99;
	r.task.tid = 102;
	r.task.ptid = 101;
	r.task.time = 1011;
	add(cap, &r, 1, SB_ID1, 1011);

	memset(&r, 0, sizeof(r));
	r.type = PERF_RECORD_AUX;
	r.aux.aux_offset = 0x1000;
	r.aux.aux_size = 0x2000;
	r.aux.flags = PERF_AUX_FLAG_TRUNCATED | PERF_AUX_FLAG_OVERWRITE | PERF_AUX_FLAG_PARTIAL |
		      PERF_AUX_FLAG_COLLISION;
	add(cap, &r, 0, PT_ID0, 1012);

	memset(&r, 0, sizeof(r));
	r.type = PD_RECORD_PTBPF_TRIGGER;
	r.trigger.kind = 8;
	r.trigger.cpu = 0;
	r.trigger.time = 1013;
	assert_int_equal(capture__add_record(cap, &r), 0);

	for (i = 0; i < 3; i++) {
		memset(data[i], 0x10 + i, sizeof(data[i]));
		aux.size = 16 + 16 * i;
		aux.offset = 0x100 * i;
		aux.reference = 0xabcdef00 + i;
		aux.idx = i % 2;
		aux.cpu = i % 2;
		aux.tid = UINT32_MAX;
		assert_int_equal(capture__add_aux(cap, &aux, data[i]), 0);
	}
	for (i = 0; i < 20; i++)
		bid.id[i] = i + 1;
	assert_int_equal(capture__add_build_id(cap, &bid), 0);
	assert_int_equal(capture__add_pmu(cap, 8, "intel_pt"), 0);
	assert_int_equal(capture__add_pmu(cap, 1, "software"), 0);
	assert_int_equal(capture__set_vdso(cap, "not an ELF image, 32 bytes long", 32), 0);
	return cap;
}

static void assert_str_eq(const char *a, const char *b)
{
	if (!a || !b)
		assert_ptr_equal(a, b);
	else
		assert_string_equal(a, b);
}

static void compare_records(const struct pd_record *a, const struct pd_record *b)
{
	assert_int_equal(a->type, b->type);
	assert_int_equal(a->misc, b->misc);
	if (a->type != PD_RECORD_PTBPF_TRIGGER && a->type != PD_RECORD_TIME_CONV)
		assert_memory_equal(&a->sample, &b->sample, sizeof(a->sample));
	switch (a->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		assert_int_equal(a->mmap.pid, b->mmap.pid);
		assert_int_equal(a->mmap.tid, b->mmap.tid);
		assert_int_equal(a->mmap.addr, b->mmap.addr);
		assert_int_equal(a->mmap.len, b->mmap.len);
		assert_int_equal(a->mmap.pgoff, b->mmap.pgoff);
		assert_str_eq(a->mmap.filename, b->mmap.filename);
		if (a->type == PERF_RECORD_MMAP)
			break;
		assert_int_equal(a->mmap.maj, b->mmap.maj);
		assert_int_equal(a->mmap.min, b->mmap.min);
		assert_int_equal(a->mmap.ino, b->mmap.ino);
		assert_int_equal(a->mmap.ino_generation, b->mmap.ino_generation);
		assert_int_equal(a->mmap.prot, b->mmap.prot);
		assert_int_equal(a->mmap.flags, b->mmap.flags);
		assert_int_equal(a->mmap.build_id_size, b->mmap.build_id_size);
		assert_memory_equal(a->mmap.build_id, b->mmap.build_id, 20);
		break;
	case PERF_RECORD_COMM:
		assert_int_equal(a->comm.pid, b->comm.pid);
		assert_int_equal(a->comm.tid, b->comm.tid);
		assert_str_eq(a->comm.comm, b->comm.comm);
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		assert_memory_equal(&a->task, &b->task, sizeof(a->task));
		break;
	case PERF_RECORD_SWITCH_CPU_WIDE:
		assert_memory_equal(&a->sw, &b->sw, sizeof(a->sw));
		break;
	case PERF_RECORD_ITRACE_START:
		assert_memory_equal(&a->itrace_start, &b->itrace_start, sizeof(a->itrace_start));
		break;
	case PERF_RECORD_AUX:
		assert_memory_equal(&a->aux, &b->aux, sizeof(a->aux));
		break;
	case PERF_RECORD_LOST:
		assert_memory_equal(&a->lost, &b->lost, sizeof(a->lost));
		break;
	case PERF_RECORD_LOST_SAMPLES:
		assert_int_equal(a->lost_samples.lost, b->lost_samples.lost);
		break;
	case PD_RECORD_TIME_CONV:
		assert_int_equal(a->time_conv.time_shift, b->time_conv.time_shift);
		assert_int_equal(a->time_conv.time_mult, b->time_conv.time_mult);
		assert_int_equal(a->time_conv.time_zero, b->time_conv.time_zero);
		assert_int_equal(a->time_conv.time_cycles, b->time_conv.time_cycles);
		assert_int_equal(a->time_conv.time_mask, b->time_conv.time_mask);
		assert_int_equal(a->time_conv.cap_user_time_zero, b->time_conv.cap_user_time_zero);
		assert_int_equal(a->time_conv.cap_user_time_short,
				 b->time_conv.cap_user_time_short);
		break;
	case PD_RECORD_PTBPF_TRIGGER: {
		struct pd_trigger ta = a->trigger, tb = b->trigger;

		assert_str_eq(ta.desc, tb.desc);
		ta.desc = tb.desc = NULL;
		assert_memory_equal(&ta, &tb, sizeof(ta));
		break;
	}
	}
}

static void compare_captures(const struct capture *a, const struct capture *b)
{
	struct pd_pt_info pa = a->pt, pb = b->pt;
	size_t i;

	assert_int_equal(a->nr_attrs, b->nr_attrs);
	for (i = 0; i < a->nr_attrs; i++) {
		struct perf_event_attr x = a->attrs[i].attr, y = b->attrs[i].attr;

		x.size = y.size = 0;
		assert_memory_equal(&x, &y, sizeof(x));
		assert_int_equal(a->attrs[i].nr_ids, b->attrs[i].nr_ids);
		assert_memory_equal(a->attrs[i].ids, b->attrs[i].ids, a->attrs[i].nr_ids * 8);
		assert_str_eq(a->attrs[i].name, b->attrs[i].name);
	}
	assert_str_eq(pa.filter, pb.filter);
	pa.filter = pb.filter = NULL;
	pa.nr_priv = pb.nr_priv = 0;
	pa.auxtrace_type = pb.auxtrace_type = 0;
	assert_memory_equal(&pa, &pb, sizeof(pa));
	assert_int_equal(a->nr_records, b->nr_records);
	for (i = 0; i < a->nr_records; i++)
		compare_records(&a->records[i], &b->records[i]);
	assert_int_equal(a->nr_aux, b->nr_aux);
	for (i = 0; i < a->nr_aux; i++) {
		assert_int_equal(a->aux[i].size, b->aux[i].size);
		assert_int_equal(a->aux[i].offset, b->aux[i].offset);
		assert_int_equal(a->aux[i].reference, b->aux[i].reference);
		assert_int_equal(a->aux[i].idx, b->aux[i].idx);
		assert_int_equal(a->aux[i].tid, b->aux[i].tid);
		assert_int_equal(a->aux[i].cpu, b->aux[i].cpu);
		assert_memory_equal(a->aux[i].data, b->aux[i].data, a->aux[i].size);
	}
	assert_int_equal(a->vdso_size, b->vdso_size);
	assert_memory_equal(a->vdso, b->vdso, a->vdso_size);
	assert_str_eq(a->host.hostname, b->host.hostname);
	assert_str_eq(a->host.osrelease, b->host.osrelease);
	assert_str_eq(a->host.arch, b->host.arch);
	assert_str_eq(a->host.cpudesc, b->host.cpudesc);
	assert_str_eq(a->host.cpuid, b->host.cpuid);
	assert_str_eq(a->host.cmdline, b->host.cmdline);
	assert_str_eq(a->host.version, b->host.version);
	assert_int_equal(a->host.nr_cpus_avail, b->host.nr_cpus_avail);
	assert_int_equal(a->host.nr_cpus_online, b->host.nr_cpus_online);
	assert_int_equal(a->host.total_mem_kb, b->host.total_mem_kb);
	assert_int_equal(a->host.first_sample_time, b->host.first_sample_time);
	assert_int_equal(a->host.last_sample_time, b->host.last_sample_time);
	assert_int_equal(a->nr_build_ids, b->nr_build_ids);
	for (i = 0; i < a->nr_build_ids; i++) {
		assert_int_equal(a->build_ids[i].pid, b->build_ids[i].pid);
		assert_int_equal(a->build_ids[i].size, b->build_ids[i].size);
		assert_memory_equal(a->build_ids[i].id, b->build_ids[i].id, 20);
		assert_str_eq(a->build_ids[i].filename, b->build_ids[i].filename);
	}
	assert_int_equal(a->nr_pmus, b->nr_pmus);
	for (i = 0; i < a->nr_pmus; i++) {
		assert_int_equal(a->pmus[i].type, b->pmus[i].type);
		assert_str_eq(a->pmus[i].name, b->pmus[i].name);
	}
}

/* perfdata_read() with stderr caught: returns its result, `msg` gets what it printed. */
static int read_caught(const char *path, struct capture **cap, char *msg, size_t size)
{
	char errpath[300];
	int saved, fd, err;
	ssize_t n;

	snprintf(errpath, sizeof(errpath), "%s/ptbpf-test-perfdata-%d-stderr", tmp_dir(), getpid());
	fd = open(errpath, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	fflush(stderr);
	saved = dup(2);
	dup2(fd, 2);
	err = perfdata_read(path, cap);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, msg, size - 1, 0);
	msg[n > 0 ? n : 0] = 0;
	close(fd);
	unlink(errpath);
	return err;
}

/* Reading `path` fails with -EINVAL and exactly one error line that contains `what`. */
static void expect_error(const char *path, const char *what)
{
	struct capture *cap = (void *)1;
	char msg[1024];
	int err;
	char *nl;

	err = read_caught(path, &cap, msg, sizeof(msg));
	printf("  %s", msg);
	if (err != -EINVAL || !strstr(msg, what))
		fprintf(stderr, "expected -EINVAL and \"%s\", got %d and: %s", what, err, msg);
	assert_int_equal(err, -EINVAL);
	assert_null(cap);
	assert_non_null(strstr(msg, what));
	nl = strchr(msg, '\n');
	assert_non_null(nl);
	assert_int_equal(nl[1], 0);
	assert_non_null(strstr(msg, ": offset "));
}

/* The bytes of a file. */
static uint8_t *slurp(const char *path, size_t *size)
{
	struct stat st;
	uint8_t *buf;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc(st.st_size + 1);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, st.st_size, 0), st.st_size);
	close(fd);
	*size = st.st_size;
	return buf;
}

static void spit(const char *path, const void *buf, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, size), (ssize_t)size);
	close(fd);
}

/* The full capture written to a temp file, its bytes in *buf. */
static uint8_t *written_full(char *path, size_t path_size, size_t *size)
{
	struct capture *cap = full_capture();
	uint8_t *buf;

	snprintf(path, path_size, "%s", tmp_path("full.data"));
	assert_int_equal(perfdata_write(path, cap), 0);
	capture__free(cap);
	buf = slurp(path, size);
	return buf;
}

static struct pd_file_header *hdr(uint8_t *buf)
{
	return (struct pd_file_header *)buf;
}

/* File offset of the n-th record of `type` in the data section (0 if none). */
static uint64_t find_record(uint8_t *buf, uint32_t type, int n)
{
	uint64_t off = hdr(buf)->data.offset, end = off + hdr(buf)->data.size;

	while (off < end) {
		struct perf_event_header *h = (void *)(buf + off);

		if (h->type == type && n-- == 0)
			return off;
		off += h->size;
		if (h->type == PD_RECORD_AUXTRACE)
			off += pd_get64(buf + off - PD_AUXTRACE_SIZE + 8);
	}
	return 0;
}

/* File offset of the section table entry of feature `feat` (0 if absent). */
static uint64_t find_feature(uint8_t *buf, unsigned int feat)
{
	struct pd_file_header *h = hdr(buf);
	unsigned int i, idx = 0;

	if (!((h->adds_features[feat / 64] >> (feat % 64)) & 1))
		return 0;
	for (i = 0; i < feat; i++)
		idx += (h->adds_features[i / 64] >> (i % 64)) & 1;
	return h->data.offset + h->data.size + idx * sizeof(struct pd_file_section);
}

static struct pd_file_section *feature(uint8_t *buf, unsigned int feat)
{
	uint64_t off = find_feature(buf, feat);

	assert_true(off != 0);
	return (struct pd_file_section *)(buf + off);
}

/* ------------------------------------------------------------------------------------ */

static void test_null_args(void **state)
{
	struct perf_event_attr attr = { 0 };
	struct pd_record rec = { .type = PERF_RECORD_COMM };
	struct pd_auxtrace aux = { .size = 8 };
	struct pd_build_id bid = { .size = 21 };
	struct capture *cap = capture__new(), *out = (void *)1;
	uint8_t buf[64];

	assert_non_null(cap);
	capture__free(NULL);
	assert_int_equal(capture__add_attr(NULL, &attr, NULL, 0, NULL), -EINVAL);
	assert_int_equal(capture__add_attr(cap, NULL, NULL, 0, NULL), -EINVAL);
	assert_int_equal(capture__add_attr(cap, &attr, NULL, 2, NULL), -EINVAL);
	assert_int_equal(capture__add_record(NULL, &rec), -EINVAL);
	assert_int_equal(capture__add_record(cap, NULL), -EINVAL);
	assert_int_equal(capture__add_aux(NULL, &aux, buf), -EINVAL);
	assert_int_equal(capture__add_aux(cap, NULL, buf), -EINVAL);
	assert_int_equal(capture__add_aux(cap, &aux, NULL), -EINVAL);
	assert_int_equal(capture__set_vdso(NULL, buf, 8), -EINVAL);
	assert_int_equal(capture__set_vdso(cap, NULL, 8), -EINVAL);
	assert_int_equal(capture__set_vdso(cap, buf, 0), -EINVAL);
	assert_null(capture__strdup(NULL, "x"));
	assert_null(capture__strdup(cap, NULL));
	assert_int_equal(capture__add_build_id(NULL, &bid), -EINVAL);
	assert_int_equal(capture__add_build_id(cap, NULL), -EINVAL);
	assert_int_equal(capture__add_build_id(cap, &bid), -EINVAL);	/* size > 20 */
	assert_int_equal(capture__add_pmu(NULL, 1, "x"), -EINVAL);
	assert_int_equal(capture__add_pmu(cap, 1, NULL), -EINVAL);
	assert_null(capture__alloc(NULL, 8));
	assert_null(capture__attr_by_id(NULL, 1));
	assert_null(capture__attr_by_id(cap, 1));
	assert_null(capture__record_attr(NULL, &rec));
	assert_null(capture__record_attr(cap, NULL));
	assert_null(capture__record_attr(cap, &rec));	/* no attrs */
	assert_int_equal(pd_tsc_to_time(NULL, 5), 5);
	assert_int_equal(pd_time_to_tsc(NULL, 5), 5);
	assert_string_equal(pd_record_type_name(9999), "unknown");
	assert_int_equal(pd_record_encode(NULL, 0, false, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(pd_record_encode(&rec, 0, false, NULL, 8), -EINVAL);
	assert_int_equal(pd_record_parse(NULL, 8, 0, false, &rec), -EINVAL);
	assert_int_equal(pd_record_parse(buf, 8, 0, false, NULL), -EINVAL);
	assert_int_equal(pd_record_parse(buf, 4, 0, false, &rec), -EINVAL);
	assert_int_equal(perfdata_read(NULL, &out), -EINVAL);
	assert_int_equal(perfdata_read("x", NULL), -EINVAL);
	assert_int_equal(perfdata_write(NULL, cap), -EINVAL);
	assert_int_equal(perfdata_write("", cap), -EINVAL);
	assert_int_equal(perfdata_write(tmp_path("null.data"), NULL), -EINVAL);
	assert_int_equal(perfdata_print_info(NULL, stdout), -EINVAL);
	assert_int_equal(perfdata_print_info(cap, NULL), -EINVAL);
	assert_int_equal(symtab__image_build_id(NULL, 8, buf, buf), -EINVAL);
	capture__free(cap);
}

/* Both spellings of every trigger kind, and what an unknown kind is called. */
static void test_trigger_kind_names(void **state)
{
	static const struct {
		uint32_t kind;
		const char *name, *label;
	} k[] = {
		{ TRIGGER_UPROBE, "uprobe", "uprobe" },
		{ TRIGGER_UPROBE_LATENCY, "uprobe_latency", "uprobe latency" },
		{ TRIGGER_RUNQ_LATENCY, "runq_latency", "run-queue latency" },
		{ TRIGGER_SYSCALL_LATENCY, "syscall_latency", "syscall latency" },
		{ TRIGGER_KPROBE, "kprobe", "kprobe" },
		{ TRIGGER_TRACEPOINT, "tracepoint", "tracepoint" },
		{ PD_STOP_SIGNAL, "signal", "signal" },
		{ PD_STOP_EXIT, "exit", "target exit" },
		{ PD_STOP_DURATION, "duration", "duration" },
		{ TRIGGER_NONE, "none", "unknown" },
		{ 1234, "none", "unknown" },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(k); i++) {
		assert_string_equal(trigger_kind_name(k[i].kind), k[i].name);
		assert_string_equal(trigger_kind_label(k[i].kind), k[i].label);
	}
}

/* Every record kind through encode -> parse, with the longest and with no trailer. */
static void test_record_codec(void **state)
{
	static const uint64_t types[] = { PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
					  PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
					  PERF_SAMPLE_IDENTIFIER, 0 };
	struct capture *cap = full_capture();
	uint8_t buf[512];
	size_t i, t;

	for (t = 0; t < 2; t++) {
		for (i = 0; i < cap->nr_records; i++) {
			struct pd_record in = cap->records[i], out;
			int n;

			if (in.type == PD_RECORD_PTBPF_TRIGGER) {
				assert_int_equal(pd_record_encode(&in, 0, false, buf, sizeof(buf)),
						 -EINVAL);
				continue;
			}
			in.sample.stream_id = 77;
			in.sample.valid = types[t];
			if (in.type == PD_RECORD_TIME_CONV)
				in.sample.valid = 0;
			n = pd_record_encode(&in, types[t], !!types[t], buf, sizeof(buf));
			assert_true(n > 0);
			assert_int_equal(n % 8, 0);
			assert_int_equal(((struct perf_event_header *)buf)->size, n);
			assert_int_equal(pd_record_parse(buf, n, types[t], !!types[t], &out), 0);
			if (!types[t] && in.type != PD_RECORD_TIME_CONV)
				memset(&in.sample, 0, sizeof(in.sample));
			compare_records(&in, &out);
			/* A buffer one byte short is refused whole. */
			assert_int_equal(pd_record_encode(&in, types[t], !!types[t], buf, n - 1),
					 -ENOSPC);
			/* A record cut short of its fixed fields is malformed. */
			if (in.type != PERF_RECORD_SWITCH) {
				size_t trailer = in.type == PD_RECORD_TIME_CONV
							 ? 0 : pd_sample_id_size(types[t]);

				((struct perf_event_header *)buf)->size = 8 + trailer;
				assert_int_equal(pd_record_parse(buf, n, types[t], !!types[t],
								 &out), -EINVAL);
			}
		}
	}
	/* A string without its NUL, a size past the buffer, samples and unknown types. */
	{
		struct pd_record out;
		struct perf_event_header *h = (void *)buf;

		memset(buf, 'A', sizeof(buf));
		h->type = PERF_RECORD_COMM;
		h->size = 32;
		assert_int_equal(pd_record_parse(buf, 32, 0, false, &out), -EINVAL);
		assert_int_equal(pd_record_parse(buf, 16, 0, false, &out), -EINVAL);
		h->type = PERF_RECORD_SAMPLE;
		assert_int_equal(pd_record_parse(buf, 32, 0, false, &out), -ENOTSUP);
		h->type = 40;
		assert_int_equal(pd_record_parse(buf, 32, 0, false, &out), -ENOTSUP);
		h->type = PERF_RECORD_MMAP2;
		h->misc = PERF_RECORD_MISC_MMAP_BUILD_ID;
		h->size = 80;
		buf[8 + 32] = 21;	/* build id size > 20 */
		assert_int_equal(pd_record_parse(buf, 80, 0, false, &out), -EINVAL);
	}
	capture__free(cap);
}

static void test_round_trip(void **state)
{
	struct capture *cap = full_capture(), *back = NULL;
	const char *path = tmp_path("rt.data");
	struct stat st;
	char tmpl[300];

	umask(0);
	assert_int_equal(perfdata_write(path, cap), 0);
	umask(022);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(perfdata_read(path, &back), 0);
	compare_captures(cap, back);
	assert_int_equal(back->nr_rounds, 1);
	assert_int_equal(back->nr_skipped, 0);
	assert_int_equal(back->file_size, st.st_size);
	assert_string_equal(back->path, path);
	assert_int_equal(back->pt.nr_priv, PD_PT_PRIV_WORDS + 4 + 1);	/* filter: 4 words */
	assert_true(back->features & (1ULL << PD_FEAT_AUXTRACE));
	/* Writing again over it works, and leaves no temporary behind. */
	assert_int_equal(perfdata_write(path, back), 0);
	snprintf(tmpl, sizeof(tmpl), "ls %s/.ptbpf-test-perfdata-%d-rt.data.* 2>/dev/null",
		 tmp_dir(), getpid());
	assert_int_not_equal(system(tmpl), 0);
	capture__free(back);
	capture__free(cap);
	unlink(path);
}

/* Payloads are padded to 8 bytes with zeros (PAD packets). */
static void test_aux_padding(void **state)
{
	struct capture *cap = full_capture(), *back = NULL;
	const char *path = tmp_path("pad.data");
	struct pd_auxtrace aux = { .size = 13, .cpu = 1, .tid = UINT32_MAX, .reference = 0 };
	uint8_t data[13];

	memset(data, 0x55, sizeof(data));
	assert_int_equal(capture__add_aux(cap, &aux, data), 0);
	assert_int_equal(perfdata_write(path, cap), 0);
	assert_int_equal(perfdata_read(path, &back), 0);
	assert_int_equal(back->nr_aux, 4);
	assert_int_equal(back->aux[3].size, 16);
	assert_memory_equal(back->aux[3].data, data, 13);
	assert_int_equal(back->aux[3].data[13] | back->aux[3].data[14] | back->aux[3].data[15], 0);
	/* perf needs a non-zero reference. */
	assert_int_not_equal(back->aux[3].reference, 0);
	capture__free(back);
	capture__free(cap);
	unlink(path);
}

/* Files hold per-CPU rounds: the reader sorts by time, stably. */
static void test_sorted_on_read(void **state)
{
	struct capture *cap = full_capture(), *back = NULL;
	const char *path = tmp_path("sort.data");
	struct pd_record r = { .type = PERF_RECORD_ITRACE_START };
	size_t i;

	add(cap, &r, 0, PT_ID0, 1003);	/* after records of time 1004..1013 */
	r.itrace_start.pid = 1;
	add(cap, &r, 0, PT_ID0, 1003);	/* same time: stays after the one above */
	assert_int_equal(perfdata_write(path, cap), 0);
	assert_int_equal(perfdata_read(path, &back), 0);
	assert_int_equal(back->nr_records, cap->nr_records);
	for (i = 1; i < back->nr_records; i++) {
		const struct pd_record *p = &back->records[i - 1], *q = &back->records[i];
		uint64_t tp = p->type == PD_RECORD_PTBPF_TRIGGER ? p->trigger.time : p->sample.time;
		uint64_t tq = q->type == PD_RECORD_PTBPF_TRIGGER ? q->trigger.time : q->sample.time;

		assert_true(tp <= tq);
	}
	for (i = 0; i < back->nr_records; i++)
		if (back->records[i].type == PERF_RECORD_ITRACE_START &&
		    back->records[i].sample.time == 1003)
			break;
	assert_int_equal(back->records[i].itrace_start.pid, 0);
	assert_int_equal(back->records[i + 1].itrace_start.pid, 1);
	capture__free(back);
	capture__free(cap);
	unlink(path);
}

/* This process's vDSO image and its size, NULL if it has none. */
static const void *vdso_image(size_t *size)
{
	unsigned long lo, hi, base = getauxval(AT_SYSINFO_EHDR);
	const void *image = NULL;
	char line[256];
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "[vdso]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo == base) {
			image = (const void *)lo;
			*size = hi - lo;
		}
	if (f)
		fclose(f);
	return image;
}

/* What the writer adds so that perf accepts a minimal capture. */
static void test_writer_fills_in(void **state)
{
	struct perf_event_attr pt = { .size = sizeof(pt), .type = 8, .sample_type = ST,
				      .sample_id_all = 1 }, sb = pt;
	struct capture *cap = capture__new(), *back = NULL;
	const char *path = tmp_path("fill.data");
	size_t vdso_size = 0;
	const void *vdso = vdso_image(&vdso_size);
	struct pd_record r = { .type = PERF_RECORD_COMM, .comm = { 1, 1, "x" } };
	struct pd_auxtrace aux = { .size = 8, .cpu = 5, .tid = UINT32_MAX };
	uint8_t bid[20], len;
	size_t i;

	sb.type = PERF_TYPE_SOFTWARE;
	sb.config = PERF_COUNT_SW_DUMMY;
	assert_int_equal(capture__add_attr(cap, &pt, NULL, 0, NULL), 0);
	assert_int_equal(capture__add_attr(cap, &sb, NULL, 0, NULL), 0);
	cap->pt.present = true;
	cap->pt.pmu_type = 8;
	cap->pt.time_mult = 3;
	cap->pt.per_cpu_mmaps = 1;
	r.sample.time = 5;
	r.sample.valid = PERF_SAMPLE_TIME;
	assert_int_equal(capture__add_record(cap, &r), 0);
	assert_int_equal(capture__add_aux(cap, &aux, "12345678"), 0);
	if (vdso)
		assert_int_equal(capture__set_vdso(cap, vdso, vdso_size), 0);
	assert_int_equal(perfdata_write(path, cap), 0);
	assert_int_equal(perfdata_read(path, &back), 0);
	/* Ids made up, the record's trailer names the sideband attr. */
	assert_int_equal(back->attrs[0].nr_ids, 1);
	assert_int_equal(back->attrs[1].nr_ids, 1);
	assert_int_not_equal(back->attrs[0].ids[0], back->attrs[1].ids[0]);
	assert_int_equal(back->nr_records, 2);
	assert_int_equal(back->records[0].type, PD_RECORD_TIME_CONV);
	assert_int_equal(back->records[0].time_conv.time_mult, 3);
	assert_ptr_equal(capture__record_attr(back, &back->records[1]), &back->attrs[1]);
	assert_int_equal(back->records[1].sample.time, 5);
	/* NRCPUS from the CPUs seen; default names for the events. */
	assert_int_equal(back->host.nr_cpus_avail, 6);
	assert_int_equal(back->host.nr_cpus_online, 6);
	assert_string_equal(back->attrs[0].name, "intel_pt//");
	assert_string_equal(back->attrs[1].name, "dummy");
	assert_string_equal(back->host.arch, "x86_64");
	assert_int_equal(back->nr_pmus, 2);
	if (vdso) {
		assert_int_equal(symtab__image_build_id(vdso, vdso_size, bid, &len), 0);
		for (i = 0; i < back->nr_build_ids; i++)
			if (!strcmp(back->build_ids[i].filename, "[vdso]"))
				break;
		assert_true(i < back->nr_build_ids);
		assert_int_equal(back->build_ids[i].size, len);
		assert_memory_equal(back->build_ids[i].id, bid, len);
	}
	capture__free(back);
	capture__free(cap);
	unlink(path);
}

static void expect_write_refused(struct capture *cap, const char *path)
{
	assert_int_equal(perfdata_write(path, cap), -EINVAL);
	assert_int_not_equal(access(path, F_OK), 0);
}

static void test_writer_refuses(void **state)
{
	struct capture *cap;
	const char *path = tmp_path("refused.data");
	struct pd_record r = { .type = 40 };

	cap = capture__new();
	expect_write_refused(cap, path);	/* no attrs */
	capture__free(cap);

	cap = full_capture();
	cap->attrs[1].attr.sample_type &= ~PERF_SAMPLE_IDENTIFIER;
	expect_write_refused(cap, path);	/* perf could not tell records apart */
	capture__free(cap);

	cap = full_capture();
	cap->attrs[1].attr.sample_id_all = 0;
	expect_write_refused(cap, path);
	capture__free(cap);

	cap = full_capture();
	cap->aux[0].data = NULL;
	expect_write_refused(cap, path);
	capture__free(cap);

	cap = full_capture();
	assert_int_equal(capture__add_record(cap, &r), 0);
	expect_write_refused(cap, path);	/* a type ptbpf cannot write */
	capture__free(cap);

	cap = full_capture();
	assert_int_equal(perfdata_write("/nonexistent-dir-ptbpf/x.data", cap), -ENOENT);
	capture__free(cap);
}

static void test_tsc_conversion(void **state)
{
	struct pd_pt_info pt = { .time_shift = 31, .time_mult = 672770566,
				 .time_zero = 18446744061102431664ULL };
	uint64_t tsc, t;

	/* skl-control_flow: mult/2^31 = 0.31 ns per tick; back from ns within 4 ticks. */
	for (tsc = 1; tsc < (1ULL << 50); tsc = tsc * 3 + 12345) {
		int64_t d;

		t = pd_tsc_to_time(&pt, tsc);
		d = (int64_t)(pd_time_to_tsc(&pt, t) - tsc);
		assert_true(d >= -4 && d <= 4);
	}
	assert_int_equal(pd_tsc_to_time(&pt, 1ULL << 31), pt.time_zero + 672770566);
	pt.time_mult = 0;
	assert_int_equal(pd_tsc_to_time(&pt, 77), 77);
	pt = (struct pd_pt_info){ .time_shift = 0, .time_mult = 1, .time_zero = 100 };
	assert_int_equal(pd_tsc_to_time(&pt, 77), 177);
	assert_int_equal(pd_time_to_tsc(&pt, 177), 77);
}

/*
 * Cut the file anywhere. With the header as written, the data section overruns the
 * file; with the header saying the data ends at the cut (and no features), a cut at a
 * record boundary is a shorter, valid file and any other cut names the cut record.
 */
static void test_truncation_everywhere(void **state)
{
	char path[300], cut[300];
	size_t size, len, nr_ok = 0, nr_bad = 0;
	uint8_t *buf = written_full(path, sizeof(path), &size), *copy;
	uint64_t doff = hdr(buf)->data.offset, dend = doff + hdr(buf)->data.size;
	uint64_t *bounds = calloc(1024, sizeof(*bounds)), off;
	size_t nb = 0, b;

	snprintf(cut, sizeof(cut), "%s", tmp_path("cut.data"));
	for (off = doff; off < dend;) {
		struct perf_event_header *h = (void *)(buf + off);

		bounds[nb++] = off;
		off += h->size;
		if (h->type == PD_RECORD_AUXTRACE)
			off += pd_get64(buf + off - PD_AUXTRACE_SIZE + 8);
	}
	bounds[nb++] = dend;
	copy = malloc(size);
	for (len = 0; len < size; len++) {
		struct capture *cap = NULL;
		char msg[1024];
		int err;

		spit(cut, buf, len);
		err = read_caught(cut, &cap, msg, sizeof(msg));
		assert_int_not_equal(err, 0);
		assert_null(cap);
		assert_non_null(strstr(msg, "offset "));
		assert_ptr_equal(strchr(msg, '\n'), msg + strlen(msg) - 1);
		if (len <= doff || len > dend)
			continue;
		memcpy(copy, buf, len);
		hdr(copy)->data.size = len - doff;
		memset(hdr(copy)->adds_features, 0, sizeof(hdr(copy)->adds_features));
		spit(cut, copy, len);
		for (b = 0; b < nb && bounds[b] != len; b++)
			;
		err = read_caught(cut, &cap, msg, sizeof(msg));
		if (b < nb) {
			assert_int_equal(err, 0);
			capture__free(cap);
			nr_ok++;
		} else {
			assert_int_equal(err, -EINVAL);
			assert_true(strstr(msg, "extends past the end of the data section") ||
				    strstr(msg, "truncated record header"));
			nr_bad++;
		}
	}
	/* Every record boundary after the first record read as a valid, shorter file. */
	assert_int_equal(nr_ok, nb - 1);
	assert_true(nr_bad > 100);
	free(copy);
	free(bounds);
	free(buf);
	unlink(cut);
	unlink(path);
}

/* One corruption: `fn` edits the bytes of a good file; reading must fail with `what`. */
struct corruption {
	const char *name;
	void (*fn)(uint8_t *buf, size_t *size);
	const char *what;
};

static void c_magic(uint8_t *b, size_t *s) { memcpy(b, "GARBAGE!", 8); }
static void c_swapped(uint8_t *b, size_t *s) { hdr(b)->magic = PD_MAGIC2_SWAPPED; }
static void c_v1(uint8_t *b, size_t *s) { memcpy(b, "PERFFILE", 8); }
static void c_pipe(uint8_t *b, size_t *s) { hdr(b)->size = 16; }
static void c_hdr_size(uint8_t *b, size_t *s) { hdr(b)->size = 99; }
static void c_attr_size0(uint8_t *b, size_t *s) { hdr(b)->attr_size = 0; }
static void c_attr_size_big(uint8_t *b, size_t *s) { hdr(b)->attr_size = 1ULL << 40; }
static void c_attrs_off(uint8_t *b, size_t *s) { hdr(b)->attrs.offset = *s + 8; }
static void c_attrs_ovf(uint8_t *b, size_t *s) { hdr(b)->attrs.size = UINT64_MAX - 7; }
static void c_attrs_frac(uint8_t *b, size_t *s) { hdr(b)->attrs.size -= 8; }
static void c_attrs_none(uint8_t *b, size_t *s) { hdr(b)->attrs.size = 0; }
static void c_attrs_many(uint8_t *b, size_t *s)
{
	hdr(b)->attrs.size = hdr(b)->attr_size * 1000000;
}

static void c_ids_off(uint8_t *b, size_t *s)
{
	struct pd_file_header *h = hdr(b);
	struct pd_file_section *ids = (void *)(b + h->attrs.offset + h->attr_size - 16);

	ids->offset = UINT64_MAX - 4;
}

static void c_attr_struct_size(uint8_t *b, size_t *s)
{
	struct perf_event_attr *a = (void *)(b + hdr(b)->attrs.offset);

	a->size = 4000;
}

static void c_data_ovf(uint8_t *b, size_t *s) { hdr(b)->data.size = UINT64_MAX; }
static void c_data_off(uint8_t *b, size_t *s) { hdr(b)->data.offset = *s + 1; }
static void c_data_in_hdr(uint8_t *b, size_t *s) { hdr(b)->data.offset = 8; }

static struct perf_event_header *rec_at_n(uint8_t *b, uint32_t type, int n)
{
	uint64_t off = find_record(b, type, n);

	assert_true(off != 0);
	return (void *)(b + off);
}

static struct perf_event_header *rec_at(uint8_t *b, uint32_t type)
{
	return rec_at_n(b, type, 0);
}

/* Store a u64 at an unaligned place (the version shares a word with the kind). */
static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static void c_zero_size(uint8_t *b, size_t *s) { rec_at(b, PERF_RECORD_COMM)->size = 0; }
static void c_tiny_size(uint8_t *b, size_t *s) { rec_at(b, PERF_RECORD_COMM)->size = 4; }

static void c_huge_record(uint8_t *b, size_t *s)
{
	/* The last record (FINISHED_ROUND) claims more bytes than the data section has. */
	rec_at(b, PD_RECORD_FINISHED_ROUND)->size = 0xfff8;
}

static void c_aux_payload(uint8_t *b, size_t *s)
{
	struct perf_event_header *h = rec_at(b, PD_RECORD_AUXTRACE);

	memcpy((uint8_t *)h + 8, &(uint64_t){ UINT64_MAX - 16 }, 8);
}

static void c_aux_short(uint8_t *b, size_t *s)
{
	/* An AUXTRACE of 8 bytes: no room for its fields. */
	struct perf_event_header *h = rec_at(b, PD_RECORD_FINISHED_ROUND);

	h->type = PD_RECORD_AUXTRACE;
}

static void c_comm_no_nul(uint8_t *b, size_t *s)
{
	struct perf_event_header *h = rec_at(b, PERF_RECORD_COMM);

	/* Name and its padding up to the trailer (4 u64: TID, TIME, CPU, IDENTIFIER). */
	memset((uint8_t *)h + 16, 'A', h->size - 16 - 32);
}

static void c_mmap_wraps(uint8_t *b, size_t *s)
{
	/* a length that runs past the top of the address space (the decoder cannot map it) */
	put64((uint8_t *)rec_at(b, PERF_RECORD_MMAP2) + 8 + 16, UINT64_MAX);
}

static void c_timeconv_shift(uint8_t *b, size_t *s)
{
	put64((uint8_t *)rec_at(b, PD_RECORD_TIME_CONV) + 8, 0xffff);
}

static void c_auxinfo_shift(uint8_t *b, size_t *s)
{
	/* private word 1 (after the header, type and padding, and the PMU type) */
	put64((uint8_t *)rec_at(b, PD_RECORD_AUXTRACE_INFO) + 24, 64);
}

static void c_unknown_id(uint8_t *b, size_t *s)
{
	struct perf_event_header *h = rec_at(b, PERF_RECORD_COMM);
	struct perf_event_attr *a = (void *)(b + hdr(b)->attrs.offset);

	/* Attrs with different sample_type: records are told apart by their id. */
	a->sample_type &= ~PERF_SAMPLE_IP;
	memcpy((uint8_t *)h + h->size - 8, &(uint64_t){ 999 }, 8);
}

static void c_no_common_id(uint8_t *b, size_t *s)
{
	struct perf_event_attr *a = (void *)(b + hdr(b)->attrs.offset);

	a->sample_type &= ~PERF_SAMPLE_IDENTIFIER;
}

static void c_sample_id_all(uint8_t *b, size_t *s)
{
	struct perf_event_attr *a = (void *)(b + hdr(b)->attrs.offset);

	a->sample_id_all = 0;
}

static void c_filter_len(uint8_t *b, size_t *s)
{
	uint8_t *p = (uint8_t *)rec_at(b, PD_RECORD_AUXTRACE_INFO);

	memcpy(p + 16 + 16 * 8, &(uint64_t){ 1ULL << 40 }, 8);
}

static void c_auxinfo_short(uint8_t *b, size_t *s)
{
	/* FINISHED_ROUND turned into an 8-byte AUXTRACE_INFO. */
	rec_at(b, PD_RECORD_FINISHED_ROUND)->type = PD_RECORD_AUXTRACE_INFO;
}

static void c_feat_off(uint8_t *b, size_t *s) { feature(b, PD_FEAT_HOSTNAME)->offset = *s; }
static void c_feat_ovf(uint8_t *b, size_t *s) { feature(b, PD_FEAT_CPUID)->size = UINT64_MAX; }

static void c_table_off(uint8_t *b, size_t *s)
{
	/* A feature bit more than the table holds entries for, at the very end. */
	hdr(b)->adds_features[3] |= 1ULL << 63;
	*s = find_feature(b, 255);
}

static void put_u32_in(uint8_t *b, unsigned int feat, uint64_t at, uint32_t v)
{
	memcpy(b + feature(b, feat)->offset + at, &v, 4);
}

static void c_str_len(uint8_t *b, size_t *s) { put_u32_in(b, PD_FEAT_HOSTNAME, 0, 1 << 30); }
static void c_cmdline_nr(uint8_t *b, size_t *s) { put_u32_in(b, PD_FEAT_CMDLINE, 0, 1 << 30); }
static void c_evdesc_nr(uint8_t *b, size_t *s) { put_u32_in(b, PD_FEAT_EVENT_DESC, 0, 1 << 30); }
static void c_evdesc_sz(uint8_t *b, size_t *s) { put_u32_in(b, PD_FEAT_EVENT_DESC, 4, 0); }
static void c_pmu_nr(uint8_t *b, size_t *s) { put_u32_in(b, PD_FEAT_PMU_MAPPINGS, 0, 1 << 30); }
static void c_aux_idx_nr(uint8_t *b, size_t *s) { put_u32_in(b, PD_FEAT_AUXTRACE, 4, 1); }
static void c_aux_idx_off(uint8_t *b, size_t *s) { put_u32_in(b, PD_FEAT_AUXTRACE, 12, 1); }
static void c_bid_size(uint8_t *b, size_t *s) { put_u32_in(b, PD_FEAT_BUILD_ID, 4, 0); }
/* ptbpf's records (type 65): the vDSO's one chunk first, then the two triggers. */
static uint8_t *ptbpf_body(uint8_t *b, int n)
{
	return (uint8_t *)rec_at_n(b, PD_RECORD_HEADER_EVENT_TYPE, n) + 8 +
	       sizeof(struct pd_ptbpf_header);
}

static void c_ptbpf_ver(uint8_t *b, size_t *s)
{
	uint32_t version = 2;

	memcpy(ptbpf_body(b, 1) - 4, &version, 4);
}

static void c_trig_desc(uint8_t *b, size_t *s)
{
	struct perf_event_header *h = rec_at_n(b, PD_RECORD_HEADER_EVENT_TYPE, 1);
	size_t fixed = 8 + sizeof(struct pd_ptbpf_header) + sizeof(struct pd_trigger_disk);

	memset((uint8_t *)h + fixed, 'A', h->size - fixed);
}

static void c_vdso_size(uint8_t *b, size_t *s) { put64(ptbpf_body(b, 0) + 16, 1 << 20); }
static void c_vdso_total(uint8_t *b, size_t *s) { put64(ptbpf_body(b, 0), UINT64_MAX); }
static void c_vdso_short(uint8_t *b, size_t *s) { put64(ptbpf_body(b, 0), 64); }
static void c_vdso_order(uint8_t *b, size_t *s) { put64(ptbpf_body(b, 0) + 8, 8); }

static void c_nrcpus_short(uint8_t *b, size_t *s) { feature(b, PD_FEAT_NRCPUS)->size = 6; }

static const struct corruption corruptions[] = {
	{ "bad magic", c_magic, "not a perf.data file (magic" },
	{ "big endian", c_swapped, "big-endian perf.data files are not supported" },
	{ "version 1", c_v1, "version 1 (PERFFILE) is not supported" },
	{ "pipe mode", c_pipe, "pipe-mode perf.data" },
	{ "header size", c_hdr_size, "file header size 99" },
	{ "attr size 0", c_attr_size0, "attr entry size 0 is not plausible" },
	{ "attr size huge", c_attr_size_big, "is not plausible" },
	{ "attrs past the end", c_attrs_off, "attrs section" },
	{ "attrs size overflow", c_attrs_ovf, "lies outside the file" },
	{ "attrs not whole", c_attrs_frac, "not a whole number" },
	{ "no attrs", c_attrs_none, "no events" },
	{ "bogus attr count", c_attrs_many, "attrs section" },
	{ "ids past the end", c_ids_off, "ids [0xfffffffffffffffb" },
	{ "attr size field", c_attr_struct_size, "size 4000 does not fit" },
	{ "data size overflow", c_data_ovf, "data section" },
	{ "data past the end", c_data_off, "lies outside the file" },
	{ "data in the header", c_data_in_hdr, "overlaps the file header" },
	{ "zero-size record", c_zero_size, "zero-size record" },
	{ "record under 8 bytes", c_tiny_size, "smaller than its 8-byte header" },
	{ "record past the data", c_huge_record, "extends past the end of the data section" },
	{ "AUXTRACE payload overflow", c_aux_payload, "AUXTRACE payload of" },
	{ "AUXTRACE too short", c_aux_short, "AUXTRACE record of 8 bytes" },
	{ "COMM without NUL", c_comm_no_nul, "malformed COMM record" },
	{ "MMAP2 past the top", c_mmap_wraps, "malformed MMAP2 record" },
	{ "TIME_CONV shift", c_timeconv_shift, "malformed TIME_CONV record" },
	{ "AUXTRACE_INFO shift", c_auxinfo_shift, "intel_pt time shift 64 cannot convert" },
	{ "unknown sample id", c_unknown_id, "sample id 999 matches no event" },
	{ "no common id position", c_no_common_id, "no common id position" },
	{ "sample_id_all differs", c_sample_id_all, "sample_id_all differs" },
	{ "filter length", c_filter_len, "filter string of" },
	{ "AUXTRACE_INFO too short", c_auxinfo_short, "AUXTRACE_INFO record of 8 bytes" },
	{ "feature past the end", c_feat_off, "hostname feature section" },
	{ "feature size overflow", c_feat_ovf, "cpuid feature section" },
	{ "feature table past the end", c_table_off, "feature section table" },
	{ "string length", c_str_len, "hostname feature: hostname" },
	{ "cmdline count", c_cmdline_nr, "arguments cannot fit" },
	{ "event_desc count", c_evdesc_nr, "events cannot fit" },
	{ "event_desc attr size", c_evdesc_sz, "attr size 0 is not plausible" },
	{ "pmu count", c_pmu_nr, "PMUs cannot fit" },
	{ "auxtrace index count", c_aux_idx_nr, "index entries cannot fit" },
	{ "auxtrace index offset", c_aux_idx_off, "lies outside the file" },
	{ "build-id entry size", c_bid_size, "entry size 0 outside" },
	{ "ptbpf record version", c_ptbpf_ver, "ptbpf record version 2" },
	{ "trigger without NUL", c_trig_desc, "malformed ptbpf trigger record" },
	{ "vDSO chunk size", c_vdso_size, "vDSO chunk of 1048576 bytes overruns" },
	{ "vDSO size", c_vdso_total, "vDSO of 18446744073709551615 bytes in a file of" },
	{ "vDSO incomplete", c_vdso_short, "the vDSO chunks hold 32 of its 64 bytes" },
	{ "vDSO chunk order", c_vdso_order, "does not follow the 0 bytes before it" },
	{ "nrcpus short", c_nrcpus_short, "nrcpus feature: online CPUs" },
};

static void test_corrupt_files(void **state)
{
	char path[300], bad[300];
	size_t size, i;
	uint8_t *good = written_full(path, sizeof(path), &size);

	snprintf(bad, sizeof(bad), "%s", tmp_path("bad.data"));
	for (i = 0; i < ARRAY_SIZE(corruptions); i++) {
		uint8_t *b = malloc(size);
		size_t s = size;

		memcpy(b, good, size);
		corruptions[i].fn(b, &s);
		spit(bad, b, s);
		printf("%s:\n", corruptions[i].name);
		expect_error(bad, corruptions[i].what);
		free(b);
	}
	free(good);
	unlink(bad);
	unlink(path);
}

/*
 * Random damage (bytes set to random, 0 or 0xff values, random cuts): every read either
 * succeeds or fails with one error line; never a crash (run under ASan to see more).
 */
static void test_random_corruption(void **state)
{
	char path[300], bad[300];
	size_t size, i, j, ok = 0;
	uint8_t *good = written_full(path, sizeof(path), &size), *b = malloc(size);
	unsigned int seed = 42;

	snprintf(bad, sizeof(bad), "%s", tmp_path("random.data"));
	for (i = 0; i < 1500; i++) {
		struct capture *cap = NULL;
		size_t len = rand_r(&seed) % 4 ? size : rand_r(&seed) % size;
		char msg[1024];
		FILE *devnull;
		int err;

		memcpy(b, good, size);
		for (j = 1 + rand_r(&seed) % 8; j; j--) {
			size_t pos = rand_r(&seed) % size;

			switch (rand_r(&seed) % 3) {
			case 0:
				b[pos] = 0;
				break;
			case 1:
				b[pos] = 0xff;
				break;
			default:
				b[pos] = rand_r(&seed);
			}
		}
		spit(bad, b, len);
		err = read_caught(bad, &cap, msg, sizeof(msg));
		if (err) {
			assert_null(cap);
			assert_ptr_equal(strchr(msg, '\n'), msg + strlen(msg) - 1);
			continue;
		}
		devnull = fopen("/dev/null", "w");
		assert_int_equal(perfdata_print_info(cap, devnull), 0);
		fclose(devnull);
		capture__free(cap);
		ok++;
	}
	/* Most damage lands in payloads and strings, which read fine. */
	assert_true(ok > 100 && ok < 1500);
	free(b);
	free(good);
	unlink(bad);
	unlink(path);
}

/*
 * Unknown record types, unknown feature sections and EVENT_TYPE records that are not
 * ptbpf's are skipped, as perf does.
 */
static void test_unknown_skipped(void **state)
{
	char path[300], other[300];
	size_t size, i, triggers = 0;
	uint8_t *b = written_full(path, sizeof(path), &size);
	struct capture *cap = NULL, *ref = NULL;

	snprintf(other, sizeof(other), "%s", tmp_path("unknown.data"));
	assert_int_equal(perfdata_read(path, &ref), 0);
	/* A user type perf does not know, a kernel type ptbpf does not keep. */
	rec_at(b, PD_RECORD_FINISHED_ROUND)->type = 0x7777;
	rec_at(b, PERF_RECORD_LOST_SAMPLES)->type = 40;
	/* A pipe-mode EVENT_TYPE record where the second trigger was. */
	put64(ptbpf_body(b, 2) - 16, 0x1234);
	/* Feature 250 (unknown) takes the last table slot, SAMPLE_TIME's (21). */
	assert_int_equal(find_feature(b, PD_FEAT_SAMPLE_TIME) + 16,
			 feature(b, PD_FEAT_BUILD_ID)->offset);
	hdr(b)->adds_features[0] &= ~(1ULL << PD_FEAT_SAMPLE_TIME);
	hdr(b)->adds_features[250 / 64] |= 1ULL << (250 % 64);
	spit(other, b, size);
	assert_int_equal(perfdata_read(other, &cap), 0);
	assert_int_equal(cap->nr_skipped, 3);
	assert_int_equal(cap->nr_rounds, 0);
	assert_int_equal(cap->nr_records, ref->nr_records - 2);
	for (i = 0; i < cap->nr_records; i++)
		triggers += cap->records[i].type == PD_RECORD_PTBPF_TRIGGER;
	assert_int_equal(triggers, 1);
	assert_int_equal(cap->host.first_sample_time, 0);
	assert_string_equal(cap->host.hostname, "host");
	assert_non_null(cap->vdso);
	capture__free(cap);
	capture__free(ref);
	free(b);
	unlink(other);
	unlink(path);
}

/* The directory form: DIR/data, DIR/kcore_dir, DIR/data.N of perf record --threads. */
static void test_directory_form(void **state)
{
	char path[300], dir[300], data[400], extra[400], cmd[900];
	size_t size, n;
	uint8_t *b = written_full(path, sizeof(path), &size);
	struct capture *cap = NULL, *ref = NULL;
	uint64_t off = find_record(b, PERF_RECORD_COMM, 0);

	snprintf(dir, sizeof(dir), "%s", tmp_path("dir.data"));
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/kcore_dir", dir);
	assert_int_equal(system(cmd), 0);
	snprintf(data, sizeof(data), "%s/data", dir);
	spit(data, b, size);
	/* data.0 holds one more COMM, as perf record --threads writes it (records only). */
	snprintf(extra, sizeof(extra), "%s/data.0", dir);
	spit(extra, b + off, ((struct perf_event_header *)(b + off))->size);
	assert_int_equal(perfdata_read(path, &ref), 0);
	assert_int_equal(perfdata_read(dir, &cap), 0);
	assert_int_equal(cap->nr_records, ref->nr_records + 1);
	n = strlen(dir);
	assert_memory_equal(cap->kcore_dir, dir, n);
	assert_string_equal(cap->kcore_dir + n, "/kcore_dir");
	capture__free(cap);
	capture__free(ref);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	free(b);
	unlink(path);
}

/* The summary names what is in the capture. */
static void test_print_info(void **state)
{
	struct capture *cap = full_capture();
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	assert_int_equal(perfdata_print_info(cap, f), 0);
	fclose(f);
	assert_non_null(strstr(text, "cpus:       2 online, 4 available"));
	assert_non_null(strstr(text, "( pt mtc tsc branch mtc_period=3 psb_period=3 )"));
	assert_non_null(strstr(text, "per-CPU buffers, snapshot (overwrite) mode"));
	assert_non_null(strstr(text, "cpu 0: 2 buffers, 64 bytes"));
	assert_non_null(strstr(text, "cpu 1: 1 buffer, 32 bytes"));
	assert_non_null(strstr(text, "100/101 target (exec)"));
	assert_non_null(strstr(text, "0x401000-0x403000 pgoff 0x1000 /a/file/with"));
	assert_non_null(strstr(text, "build-id a0a1a2"));
	assert_non_null(strstr(text, "uprobe latency \"uprobe:./x:f latency>5ms\" (#1) cpu 1"));
	assert_non_null(strstr(text, "latency 5000000 ns"));
	assert_non_null(strstr(text, "target exit"));
	assert_non_null(strstr(text, "filter:     filter 0x401000"));
	free(text);
	capture__free(cap);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_null_args),
		cmocka_unit_test(test_trigger_kind_names),
		cmocka_unit_test(test_record_codec),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_aux_padding),
		cmocka_unit_test(test_sorted_on_read),
		cmocka_unit_test(test_writer_fills_in),
		cmocka_unit_test(test_writer_refuses),
		cmocka_unit_test(test_tsc_conversion),
		cmocka_unit_test(test_truncation_everywhere),
		cmocka_unit_test(test_corrupt_files),
		cmocka_unit_test(test_random_corruption),
		cmocka_unit_test(test_unknown_skipped),
		cmocka_unit_test(test_directory_form),
		cmocka_unit_test(test_print_info),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
