// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The data ring as the kernel lays it out: a perf_event_mmap_page, then data_size bytes
 * of records written at data_head (a running byte count), wrapping at the end.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "data_ring.h"
#include "pt_pmu.h"

#define PAGE 4096
#define DATA_PAGES 2
#define DATA_SIZE (DATA_PAGES * PAGE)

struct mapping {
	struct perf_event_mmap_page *pc;
	uint8_t *data;
};

static struct mapping *map_new(void)
{
	struct mapping *m = calloc(1, sizeof(*m));
	uint8_t *base = aligned_alloc(PAGE, PAGE + DATA_SIZE);

	memset(base, 0, PAGE + DATA_SIZE);
	m->pc = (void *)base;
	m->pc->data_offset = PAGE;
	m->pc->data_size = DATA_SIZE;
	m->data = base + PAGE;
	return m;
}

static void map_free(struct mapping *m)
{
	free(m->pc);
	free(m);
}

/* What the kernel does: copy at head, wrapping, then publish the new head. */
static void kwrite(struct mapping *m, const void *rec, size_t len)
{
	uint64_t head = m->pc->data_head, off = head & (DATA_SIZE - 1);
	size_t first = DATA_SIZE - off < len ? DATA_SIZE - off : len;

	memcpy(m->data + off, rec, first);
	memcpy(m->data, (const uint8_t *)rec + first, len - first);
	m->pc->data_head = head + len;
}

static size_t encode(const struct pd_record *r, uint8_t *buf, size_t size)
{
	int n = pd_record_encode(r, PT_SAMPLE_TYPE, true, buf, size);

	assert_true(n > 0);
	return n;
}

static struct pd_record comm_rec(uint32_t tid, const char *comm, uint64_t time)
{
	struct pd_record r = { .type = PERF_RECORD_COMM };

	r.comm.pid = 100;
	r.comm.tid = tid;
	r.comm.comm = (char *)comm;
	r.sample.pid = 100;
	r.sample.tid = tid;
	r.sample.time = time;
	r.sample.cpu = 1;
	r.sample.id = 77;
	r.sample.valid = PT_SAMPLE_TYPE;
	return r;
}

struct seen {
	int n;
	struct pd_record recs[64];
	uint8_t raw[64][512];
	int stop_after;		/* return -EIO after this many, 0: never */
};

static int collect(void *ctx, const struct perf_event_header *h)
{
	struct seen *s = ctx;

	if (s->stop_after && s->n == s->stop_after)
		return -EIO;
	assert_true(h->size <= sizeof(s->raw[0]));
	assert_int_equal((uintptr_t)h & 7, 0);
	memcpy(s->raw[s->n], h, h->size);
	assert_int_equal(pd_record_parse(s->raw[s->n], h->size, PT_SAMPLE_TYPE, true,
					 &s->recs[s->n]), 0);
	s->n++;
	return 0;
}

static void test_drain_simple(void **state)
{
	struct mapping *m = map_new();
	struct seen s = {};
	struct pd_record r;
	uint8_t buf[256];
	size_t n;
	int i;

	for (i = 0; i < 3; i++) {
		r = comm_rec(100 + i, i == 1 ? "worker-1" : "main", 1000 + i);
		n = encode(&r, buf, sizeof(buf));
		kwrite(m, buf, n);
	}
	assert_int_equal(data_ring_pending(m->pc), m->pc->data_head);
	assert_int_equal(data_ring_drain(m->pc, m->data, DATA_SIZE, collect, &s), 3);
	assert_int_equal(m->pc->data_tail, m->pc->data_head);
	assert_int_equal(data_ring_pending(m->pc), 0);
	assert_int_equal(s.recs[1].type, PERF_RECORD_COMM);
	assert_int_equal(s.recs[1].comm.tid, 101);
	assert_string_equal(s.recs[1].comm.comm, "worker-1");
	assert_int_equal(s.recs[2].sample.time, 1002);
	assert_int_equal(s.recs[2].sample.id, 77);
	assert_int_equal(s.recs[2].sample.cpu, 1);
	/* nothing new: nothing delivered */
	assert_int_equal(data_ring_drain(m->pc, m->data, DATA_SIZE, collect, &s), 0);
	map_free(m);
}

/* A record split across the end of the ring comes out whole. */
static void test_drain_wrapped(void **state)
{
	struct mapping *m = map_new();
	struct seen s = {};
	struct pd_record r = { .type = PERF_RECORD_MMAP2 };
	uint8_t buf[512];
	size_t n;
	int i;

	/* the ring has gone round three times already: head and tail are running counts */
	m->pc->data_head = m->pc->data_tail = 3ull * DATA_SIZE + DATA_SIZE - 40;
	r.mmap.pid = r.mmap.tid = 100;
	r.mmap.addr = 0x400000;
	r.mmap.len = 0x2000;
	r.mmap.pgoff = 0x1000;
	r.mmap.prot = 5;
	r.mmap.flags = 2;
	r.mmap.ino = 1234;
	r.mmap.filename = "/usr/lib/x86_64-linux-gnu/libc.so.6";
	r.sample = comm_rec(100, "", 5000).sample;
	n = encode(&r, buf, sizeof(buf));
	assert_true(n > 40);
	kwrite(m, buf, n);
	for (i = 0; i < 2; i++) {
		struct pd_record c = comm_rec(200 + i, "after-wrap", 6000 + i);

		kwrite(m, buf, encode(&c, buf, sizeof(buf)));
	}
	assert_int_equal(data_ring_drain(m->pc, m->data, DATA_SIZE, collect, &s), 3);
	assert_int_equal(s.recs[0].type, PERF_RECORD_MMAP2);
	assert_int_equal(s.recs[0].mmap.addr, 0x400000);
	assert_int_equal(s.recs[0].mmap.ino, 1234);
	assert_string_equal(s.recs[0].mmap.filename, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	assert_int_equal(s.recs[0].sample.time, 5000);
	assert_string_equal(s.recs[2].comm.comm, "after-wrap");
	assert_int_equal(m->pc->data_tail, m->pc->data_head);
	map_free(m);
}

/* The kernel's LOST record (the ring was full) is passed on like any other. */
static void test_drain_lost(void **state)
{
	struct mapping *m = map_new();
	struct seen s = {};
	struct pd_record r = comm_rec(1, "x", 1), lost = { .type = PERF_RECORD_LOST };
	uint8_t buf[256];

	lost.lost.id = 77;
	lost.lost.lost = 12;
	lost.sample = r.sample;
	kwrite(m, buf, encode(&r, buf, sizeof(buf)));
	kwrite(m, buf, encode(&lost, buf, sizeof(buf)));
	assert_int_equal(data_ring_drain(m->pc, m->data, DATA_SIZE, collect, &s), 2);
	assert_int_equal(s.recs[1].type, PERF_RECORD_LOST);
	assert_int_equal(s.recs[1].lost.lost, 12);
	assert_int_equal(s.recs[1].lost.id, 77);
	map_free(m);
}

static void test_drain_errors(void **state)
{
	struct mapping *m = map_new();
	struct seen s = { .stop_after = 1 };
	struct pd_record r = comm_rec(1, "x", 1);
	struct perf_event_header bad = { .type = PERF_RECORD_COMM, .size = 4 };
	uint8_t buf[256];
	uint64_t after_first;

	kwrite(m, buf, encode(&r, buf, sizeof(buf)));
	after_first = m->pc->data_head;
	kwrite(m, buf, encode(&r, buf, sizeof(buf)));
	/* the callback's error stops the drain; what it took stays consumed */
	assert_int_equal(data_ring_drain(m->pc, m->data, DATA_SIZE, collect, &s), -EIO);
	assert_int_equal(s.n, 1);
	assert_int_equal(m->pc->data_tail, after_first);
	s.stop_after = 0;
	assert_int_equal(data_ring_drain(m->pc, m->data, DATA_SIZE, collect, &s), 1);

	/* a header smaller than a header: skip to head */
	kwrite(m, &bad, sizeof(bad));
	kwrite(m, buf, encode(&r, buf, sizeof(buf)));
	assert_int_equal(data_ring_drain(m->pc, m->data, DATA_SIZE, collect, &s), -EINVAL);
	assert_int_equal(m->pc->data_tail, m->pc->data_head);
	/* a record longer than what was written */
	bad.size = 64;
	kwrite(m, &bad, sizeof(bad));
	assert_int_equal(data_ring_drain(m->pc, m->data, DATA_SIZE, collect, &s), -EINVAL);
	/* head more than a ring ahead of tail */
	m->pc->data_head = m->pc->data_tail + DATA_SIZE + 8;
	assert_int_equal(data_ring_drain(m->pc, m->data, DATA_SIZE, collect, &s), -EINVAL);

	assert_int_equal(data_ring_drain(NULL, m->data, DATA_SIZE, collect, &s), -EINVAL);
	assert_int_equal(data_ring_drain(m->pc, NULL, DATA_SIZE, collect, &s), -EINVAL);
	assert_int_equal(data_ring_drain(m->pc, m->data, DATA_SIZE, NULL, &s), -EINVAL);
	assert_int_equal(data_ring_drain(m->pc, m->data, 0, collect, &s), -EINVAL);
	assert_int_equal(data_ring_drain(m->pc, m->data, 3 * PAGE, collect, &s), -EINVAL);
	map_free(m);
}

static void test_time_conv(void **state)
{
	struct mapping *m = map_new();
	struct pd_record tc;

	m->pc->time_shift = 31;
	m->pc->time_mult = 0x2aaaaaab;
	m->pc->time_zero = 0xfffd1234deadull;
	m->pc->time_cycles = 77;
	m->pc->time_mask = 0xffff;
	m->pc->cap_user_time_zero = 1;
	m->pc->cap_user_time_short = 1;
	m->pc->lock = 4;
	assert_int_equal(data_ring_time_conv(m->pc, &tc), 0);
	assert_int_equal(tc.type, PD_RECORD_TIME_CONV);
	assert_int_equal(tc.time_conv.time_shift, 31);
	assert_int_equal(tc.time_conv.time_mult, 0x2aaaaaab);
	assert_int_equal(tc.time_conv.time_zero, 0xfffd1234deadull);
	assert_int_equal(tc.time_conv.time_cycles, 77);
	assert_int_equal(tc.time_conv.time_mask, 0xffff);
	assert_true(tc.time_conv.cap_user_time_zero);
	assert_true(tc.time_conv.cap_user_time_short);

	/* the kernel in the middle of an update, for ever */
	m->pc->lock = 5;
	assert_int_equal(data_ring_time_conv(m->pc, &tc), -EBUSY);
	m->pc->lock = 6;
	m->pc->cap_user_time_zero = 0;
	assert_int_equal(data_ring_time_conv(m->pc, &tc), -EOPNOTSUPP);
	assert_int_equal(data_ring_time_conv(NULL, &tc), -EINVAL);
	assert_int_equal(data_ring_time_conv(m->pc, NULL), -EINVAL);
	map_free(m);
}

static int count_cb(void *ctx, const struct perf_event_header *h)
{
	const struct pd_record *want = ctx;
	struct pd_record r;

	assert_int_equal(pd_record_parse(h, h->size, PT_SAMPLE_TYPE, true, &r), 0);
	assert_int_equal(r.type, want->type);
	return 0;
}

static int first_time(void *ctx, const struct perf_event_header *h)
{
	struct pd_record r;

	assert_int_equal(pd_record_parse(h, h->size, PT_SAMPLE_TYPE, true, &r), 0);
	*(uint64_t *)ctx = r.sample.time;
	return -1;	/* only the first */
}

static void test_fifo(void **state)
{
	struct record_fifo *f = record_fifo__new(DATA_RING_MAX_RECORD * 2);
	struct pd_record r;
	uint8_t buf[256];
	uint64_t t, dropped_total = 0;
	size_t n;
	int i, d;

	assert_non_null(f);
	for (i = 0; i < 10000; i++) {
		r = comm_rec(i, "a-thread-name", i);
		n = encode(&r, buf, sizeof(buf));
		d = record_fifo__push(f, (void *)buf);
		assert_true(d >= 0);
		dropped_total += d;
	}
	assert_int_equal(record_fifo__dropped(f), dropped_total);
	assert_true(dropped_total > 0);
	assert_int_equal(record_fifo__count(f) + dropped_total, 10000);
	/* the newest are kept, oldest first */
	assert_int_equal(record_fifo__for_each(f, first_time, &t), -1);
	assert_int_equal(t, dropped_total);
	r.type = PERF_RECORD_COMM;
	assert_int_equal(record_fifo__for_each(f, count_cb, &r), (int)record_fifo__count(f));
	/* never more than the capacity */
	assert_true(record_fifo__count(f) * n <= DATA_RING_MAX_RECORD * 2);

	record_fifo__clear(f);
	assert_int_equal(record_fifo__count(f), 0);
	assert_int_equal(record_fifo__for_each(f, count_cb, &r), 0);
	assert_int_equal(record_fifo__push_cb(f, (void *)buf), 0);
	assert_int_equal(record_fifo__count(f), 1);

	assert_int_equal(record_fifo__push(NULL, (void *)buf), -EINVAL);
	assert_int_equal(record_fifo__push(f, NULL), -EINVAL);
	((struct perf_event_header *)buf)->size = 4;
	assert_int_equal(record_fifo__push(f, (void *)buf), -EINVAL);
	assert_int_equal(record_fifo__for_each(NULL, count_cb, &r), -EINVAL);
	assert_int_equal(record_fifo__for_each(f, NULL, &r), -EINVAL);
	assert_int_equal(record_fifo__count(NULL), 0);
	assert_int_equal(record_fifo__dropped(NULL), 0);
	record_fifo__clear(NULL);
	record_fifo__free(f);
	record_fifo__free(NULL);
	assert_null(record_fifo__new(100));
	assert_int_equal(errno, EINVAL);
}

/* A record bigger than half the history is refused rather than emptying it. */
static void test_fifo_big(void **state)
{
	struct record_fifo *f = record_fifo__new(DATA_RING_MAX_RECORD);
	uint8_t *big = calloc(1, DATA_RING_MAX_RECORD);
	struct perf_event_header *h = (void *)big;

	h->type = PERF_RECORD_MMAP2;
	h->size = DATA_RING_MAX_RECORD / 2 + 8;
	assert_int_equal(record_fifo__push(f, h), -E2BIG);
	h->size = DATA_RING_MAX_RECORD / 2;
	assert_int_equal(record_fifo__push(f, h), 0);
	assert_int_equal(record_fifo__push(f, h), 0);
	/* the third needs room: the first goes */
	assert_int_equal(record_fifo__push(f, h), 1);
	assert_int_equal(record_fifo__count(f), 2);
	free(big);
	record_fifo__free(f);
}


/* ---- the same code on a real kernel ring ---- */

/*
 * A CPU-wide software dummy event carrying exactly the PT event's sideband bits
 * (pt_attr_pt()), on the CPU this test runs on: what the kernel writes there is what
 * the pt backend drains from each CPU's PT event.
 */
struct kring {
	int fd, cpu;
	uint64_t id;
	struct perf_event_mmap_page *pc;
	size_t data_size;
};

static bool kring_open(struct kring *k, size_t data_pages)
{
	static const uint64_t config[3];
	struct perf_event_attr a;
	cpu_set_t set;

	k->cpu = sched_getcpu();
	CPU_ZERO(&set);
	CPU_SET(k->cpu, &set);
	assert_int_equal(sched_setaffinity(0, sizeof(set), &set), 0);
	pt_attr_pt(&a, PERF_TYPE_SOFTWARE, config, false);
	a.config = PERF_COUNT_SW_DUMMY;
	k->fd = syscall(SYS_perf_event_open, &a, -1, k->cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (k->fd < 0) {
		printf("SKIP: cannot open a CPU-wide perf event here: %s\n", strerror(errno));
		return false;
	}
	k->data_size = data_pages * PAGE;
	k->pc = mmap(NULL, PAGE + k->data_size, PROT_READ | PROT_WRITE, MAP_SHARED, k->fd, 0);
	assert_true(k->pc != MAP_FAILED);
	assert_int_equal(ioctl(k->fd, PERF_EVENT_IOC_ID, &k->id), 0);
	assert_int_equal(ioctl(k->fd, PERF_EVENT_IOC_ENABLE, 0), 0);
	return true;
}

static void kring_close(struct kring *k)
{
	cpu_set_t set;
	int i;

	munmap(k->pc, PAGE + k->data_size);
	close(k->fd);
	CPU_ZERO(&set);
	for (i = 0; i < CPU_SETSIZE; i++)
		CPU_SET(i, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* Most children one test runs (test_kernel_ring_lost: 61). */
#define MAX_CHILDREN 64

struct kseen {
	const struct kring *k;
	/*
	 * The /bin/true children this test ran. The event is CPU-wide: it also sees every
	 * other process on the CPU, such as another test run's /bin/true.
	 */
	pid_t children[MAX_CHILDREN];
	int nr_children;
	int comm_exec, mmap_true, switches, lost, total;
	uint64_t last_time;
};

/* Run /bin/true to its end, as a child this test knows. */
static void run_true(struct kseen *s)
{
	pid_t pid;
	int status;

	assert_true(s->nr_children < MAX_CHILDREN);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	s->children[s->nr_children++] = pid;
	assert_int_equal(waitpid(pid, &status, 0), pid);
}

static bool our_child(const struct kseen *s, uint32_t pid)
{
	int i;

	for (i = 0; i < s->nr_children; i++)
		if ((uint32_t)s->children[i] == pid)
			return true;
	return false;
}

static int kcheck(void *ctx, const struct perf_event_header *h)
{
	struct kseen *s = ctx;
	struct pd_record r;
	int err = pd_record_parse(h, h->size, PT_SAMPLE_TYPE, true, &r);

	assert_true(err == 0 || err == -ENOTSUP);
	if (err)
		return 0;
	s->total++;
	/* every record carries the trailer of PT_SAMPLE_TYPE, of this event and CPU */
	assert_int_equal(r.sample.cpu, s->k->cpu);
	assert_int_equal(r.sample.id, s->k->id);
	assert_true(r.sample.time >= s->last_time);
	s->last_time = r.sample.time;
	switch (r.type) {
	case PERF_RECORD_COMM:
		if ((r.misc & PERF_RECORD_MISC_COMM_EXEC) && !strcmp(r.comm.comm, "true") &&
		    our_child(s, r.comm.pid))
			s->comm_exec++;
		break;
	case PERF_RECORD_MMAP2:
		if (strstr(r.mmap.filename, "/true") && (r.mmap.prot & PROT_EXEC) &&
		    our_child(s, r.mmap.pid))
			s->mmap_true++;
		break;
	case PERF_RECORD_SWITCH_CPU_WIDE:
		s->switches++;
		break;
	case PERF_RECORD_LOST:
		s->lost += r.lost.lost;
		break;
	}
	return 0;
}

static void test_kernel_ring(void **state)
{
	struct kring k;
	struct kseen s = { .k = &k };
	struct pd_record tc;
	int n, err;

	/*
	 * 1 MiB: the event records every switch on the CPU, and while the child forks and
	 * execs (slower in the sanitizer build) a loaded machine switches thousands of times;
	 * a full ring drops what comes next, the child's COMM among it.
	 */
	if (!kring_open(&k, 256))
		skip();
	run_true(&s);
	/*
	 * The event sees every task switch on the CPU, this test's own included: stop it, or
	 * the kernel may write past the head the drain consumed up to before it is compared.
	 */
	assert_int_equal(ioctl(k.fd, PERF_EVENT_IOC_DISABLE, 0), 0);
	n = data_ring_drain(k.pc, (uint8_t *)k.pc + PAGE, k.data_size, kcheck, &s);
	assert_true(n > 0);
	assert_int_equal(s.comm_exec, 1);
	assert_true(s.mmap_true >= 1);
	assert_true(s.switches > 0);
	assert_int_equal(k.pc->data_tail, k.pc->data_head);
	/* the conversion is there where the clock allows it (kvm-clock VMs may not) */
	err = data_ring_time_conv(k.pc, &tc);
	assert_true(err == 0 || err == -EOPNOTSUPP);
	if (!err)
		assert_true(tc.time_conv.time_mult != 0);
	kring_close(&k);
}

/* One page of ring, many records, drained often: head and tail run far past the size. */
static void test_kernel_ring_wraps(void **state)
{
	struct kring k;
	struct kseen s = { .k = &k };
	int i, n;

	if (!kring_open(&k, 1))
		skip();
	for (i = 0; i < 40; i++) {
		run_true(&s);
		n = data_ring_drain(k.pc, (uint8_t *)k.pc + PAGE, k.data_size, kcheck, &s);
		assert_true(n >= 0);
	}
	assert_true(k.pc->data_head > 4 * k.data_size);
	assert_int_equal(s.comm_exec + (s.lost ? 40 - s.comm_exec : 0), 40);
	kring_close(&k);
}

/* Not drained: the ring fills, and the kernel reports what it dropped with LOST. */
static void test_kernel_ring_lost(void **state)
{
	struct kring k;
	struct kseen s = { .k = &k };
	int i;

	if (!kring_open(&k, 1))
		skip();
	for (i = 0; i < 60; i++)
		run_true(&s);
	assert_true(data_ring_drain(k.pc, (uint8_t *)k.pc + PAGE, k.data_size, kcheck, &s) > 0);
	/* LOST comes with the next record written after room was made */
	run_true(&s);
	assert_true(data_ring_drain(k.pc, (uint8_t *)k.pc + PAGE, k.data_size, kcheck, &s) > 0);
	assert_true(s.lost > 0);
	assert_true(s.comm_exec < 61);
	kring_close(&k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drain_simple),
		cmocka_unit_test(test_drain_wrapped),
		cmocka_unit_test(test_drain_lost),
		cmocka_unit_test(test_drain_errors),
		cmocka_unit_test(test_time_conv),
		cmocka_unit_test(test_fifo),
		cmocka_unit_test(test_fifo_big),
		cmocka_unit_test(test_kernel_ring),
		cmocka_unit_test(test_kernel_ring_wraps),
		cmocka_unit_test(test_kernel_ring_lost),
	};

	return cmocka_run_group_tests_name("data_ring", tests, NULL, NULL);
}
