// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Gate mode on this kernel, without PT: the mechanism the pt backend's in-kernel freeze
 * (aux_pause) relies on. A tracefs uprobe (or uretprobe) is opened on every CPU as a
 * tracepoint perf event with a normal perf ring, the trigger program is attached once, and
 * samples must reach the rings exactly for the hits where the program returned 1.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "log.h"
#include "target.h"
#include "triggers.h"

#define RING_PAGES 8
#define MAX_CPUS 64

struct fires {
	int n;
	__u32 tids[256];
};

static int collect(void *ctx, const struct trigger_rec *rec)
{
	struct fires *f = ctx;

	if (f->n < 256)
		f->tids[f->n] = rec->tid;
	f->n++;
	return 0;
}

static const char *slow_target(void)
{
	static char path[4096];
	const char *build = getenv("BUILD");

	snprintf(path, sizeof(path), "%s/targets/trig_slow", build ? build : "build");
	return access(path, X_OK) ? NULL : path;
}

/* Samples of tgid `pid` in one CPU's ring (sample_type TID). */
static int count_samples(void *base, pid_t pid, __u32 *tids, int max)
{
	struct perf_event_mmap_page *pc = base;
	char *data = (char *)base + pc->data_offset;
	__u64 head = __atomic_load_n(&pc->data_head, __ATOMIC_ACQUIRE), tail = pc->data_tail;
	int n = 0;

	while (tail < head) {
		struct perf_event_header *h = (void *)(data + (tail % pc->data_size));

		if (h->type == PERF_RECORD_SAMPLE) {
			__u32 *p = (__u32 *)(h + 1);	/* { u32 pid, tid } */

			if ((pid_t)p[0] == pid) {
				if (n < max)
					tids[n] = p[1];
				n++;
			}
		}
		tail += h->size;
	}
	return n;
}

/* A tracepoint perf event (config: its id) whose samples say which thread hit it. */
static const struct perf_event_attr tp_sample_attr = {
	.size = sizeof(struct perf_event_attr),
	.type = PERF_TYPE_TRACEPOINT,
	.sample_period = 1,
	.sample_type = PERF_SAMPLE_TID,
	.disabled = 1,
};

static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

static bool tracefs_has(const char *needle)
{
	char line[512];
	bool found = false;
	FILE *f = fopen("/sys/kernel/tracing/uprobe_events", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

/*
 * One run: `spec` with --nth `nth` (latency `lat_ns` if not 0): at least `min_fires` fires
 * (more only if a busy machine preempted a fast call), and exactly as many samples.
 */
static void run_gate(const char *spec, uint64_t nth, uint64_t lat_ns, int min_fires)
{
	struct capture_opts o = { .nth = nth, .max_snapshots = 0, .nr_triggers = 1 };
	int ncpu = sysconf(_SC_NPROCESSORS_ONLN), fds[MAX_CPUS], i, nsamples = 0, status;
	struct perf_event_attr attr = tp_sample_attr;
	void *rings[MAX_CPUS];
	size_t ring_size = (1 + RING_PAGES) * getpagesize();
	__u32 sample_tids[256];
	struct fires fires = {};
	struct trigger_gate g;
	struct triggers *t = NULL;
	struct target *target = NULL;
	char cmd[4200], group[64];
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };

	/* the same pid execs trig_slow, quietly */
	snprintf(cmd, sizeof(cmd), "exec %s >/dev/null", slow_target());
	if (ncpu > MAX_CPUS)
		ncpu = MAX_CPUS;
	for (i = 0; i < MAX_CPUS; i++) {
		fds[i] = -1;
		rings[i] = MAP_FAILED;
	}
	o.triggers[0].kind = lat_ns ? TRIGGER_UPROBE_LATENCY : TRIGGER_UPROBE;
	o.triggers[0].latency_ns = lat_ns;
	o.triggers[0].arg = (char *)spec;
	o.triggers[0].syscall_nr = -1;

	assert_int_equal(target__spawn(argv, &target), 0);
	assert_int_equal(triggers__new(&o, target->pid, TRIGGER_ATTACH_GATE, &t), 0);
	assert_int_equal(triggers__nr_gates(t), 1);
	assert_int_equal(triggers__gate(t, 0, &g), 0);
	assert_int_equal(triggers__gate(t, 1, &g), -EINVAL);
	assert_int_equal(triggers__gate(t, 0, &g), 0);
	assert_int_equal(g.index, 0);
	assert_true(g.tp_id > 0);
	assert_true(g.prog_fd >= 0);
	snprintf(group, sizeof(group), "ptbpf_%d/", getpid());
	assert_true(tracefs_has(group));
	assert_int_equal(triggers__attach(t), 0);

	attr.config = g.tp_id;
	for (i = 0; i < ncpu; i++) {
		fds[i] = syscall(SYS_perf_event_open, &attr, -1, i, -1, PERF_FLAG_FD_CLOEXEC);
		assert_true(fds[i] >= 0);
		rings[i] = mmap(NULL, ring_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[i], 0);
		assert_true(rings[i] != MAP_FAILED);
	}
	/* once: one program list per tracefs event serves every CPU */
	assert_int_equal(triggers__attach_gate(t, 0, fds[0]), 0);
	assert_int_equal(triggers__attach_gate(t, 0, -1), -EINVAL);
	for (i = 0; i < ncpu; i++)
		assert_int_equal(ioctl(fds[i], PERF_EVENT_IOC_ENABLE, 0), 0);

	assert_int_equal(target__release(target), 0);
	assert_int_equal(waitpid(target->pid, &status, 0), target->pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_true(triggers__consume(t, collect, &fires) >= 0);

	for (i = 0; i < ncpu; i++)
		nsamples += count_samples(rings[i], target->pid, sample_tids + nsamples,
					  256 - nsamples);
	printf("%s: %d fires, %d samples in the perf rings\n", spec, fires.n, nsamples);
	assert_true(fires.n >= min_fires && fires.n <= min_fires + 3);
	assert_int_equal(nsamples, fires.n);
	qsort(fires.tids, fires.n, sizeof(__u32), cmp_u32);
	qsort(sample_tids, nsamples, sizeof(__u32), cmp_u32);
	assert_memory_equal(fires.tids, sample_tids, fires.n * sizeof(__u32));

	/*
	 * perf events first, then the tracefs probes can go (EBUSY before). fds[0] belongs
	 * to the program's link now: triggers__free() closes it.
	 */
	for (i = 0; i < ncpu; i++) {
		munmap(rings[i], ring_size);
		if (i)
			close(fds[i]);
	}
	triggers__free(t);
	assert_false(tracefs_has(group));
	target->spawned = false;	/* reaped above */
	target__free(target);
}

static void skip_unless_possible(void)
{
	if (geteuid()) {
		printf("SKIP: gate mode needs root (tracefs, perf events, BPF)\n");
		skip();
	}
	if (!slow_target()) {
		printf("SKIP: test target trig_slow not built (make targets)\n");
		skip();
	}
}

/*
 * --uprobe with --nth 51: the program returns 0 for 50 hits, then 1 for 50. A probe left
 * by a ptbpf that was killed (its pid is gone) is cleaned up on the way.
 */
static void test_gate_uprobe(void **state)
{
	char spec[4200], stale[4300], name[64];
	pid_t dead;
	FILE *f;

	skip_unless_possible();
	dead = fork();
	if (!dead)
		_exit(0);
	waitpid(dead, NULL, 0);
	snprintf(name, sizeof(name), "ptbpf_%d/", dead);
	snprintf(stale, sizeof(stale), "p:%su0 %s:0x%x\n", name, slow_target(), 0x1000);
	f = fopen("/sys/kernel/tracing/uprobe_events", "ae");
	if (f) {
		fputs(stale, f);
		fclose(f);
	}
	snprintf(spec, sizeof(spec), "%s:slow_path", slow_target());
	run_gate(spec, 51, 0, 50);
	assert_false(tracefs_has(name));
}

/* --latency-over 1ms: the uretprobe gate passes the 5 slow calls only (or a preempted one). */
static void test_gate_uretprobe(void **state)
{
	char spec[4200];

	skip_unless_possible();
	snprintf(spec, sizeof(spec), "%s:slow_path", slow_target());
	run_gate(spec, 1, 2000000, 5);
}

/*
 * In gate mode the programs that are not gates stay links: the tp fallback's sys_enter
 * (and wakeup) hooks. The kernel runs a tracepoint's one program list before every perf
 * event of it, so they must return 1, or another perf user of raw_syscalls:sys_enter
 * (here: this test's own event) would see none of its samples.
 */
static void test_links_do_not_silence(void **state)
{
	struct capture_opts o = { .nth = 1, .max_snapshots = 1, .nr_triggers = 1 };
	struct perf_event_attr attr = tp_sample_attr;
	size_t ring_size = (1 + RING_PAGES) * getpagesize();
	unsigned long long id = 0;
	struct triggers *t = NULL;
	void *ring;
	FILE *f;
	int fd, i;

	skip_unless_possible();
	f = fopen("/sys/kernel/tracing/events/raw_syscalls/sys_enter/id", "re");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%llu", &id), 1);
	fclose(f);
	setenv("PTBPF_NO_TP_BTF", "1", 1);
	o.triggers[0].kind = TRIGGER_SYSCALL_LATENCY;
	o.triggers[0].latency_ns = 1000000000;
	o.triggers[0].syscall_nr = -1;
	assert_int_equal(triggers__new(&o, getpid(), TRIGGER_ATTACH_GATE, &t), 0);
	assert_int_equal(triggers__attach(t), 0);

	attr.config = id;
	fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	assert_true(fd >= 0);
	ring = mmap(NULL, ring_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(ring != MAP_FAILED);
	assert_int_equal(ioctl(fd, PERF_EVENT_IOC_ENABLE, 0), 0);
	for (i = 0; i < 20; i++)
		getppid();
	assert_int_equal(ioctl(fd, PERF_EVENT_IOC_DISABLE, 0), 0);
	assert_true(count_samples(ring, getpid(), NULL, 0) >= 20);
	munmap(ring, ring_size);
	close(fd);
	triggers__free(t);
	unsetenv("PTBPF_NO_TP_BTF");
}

/*
 * Two gates on one tracepoint: the kernel runs every program of the tracepoint before each
 * of its perf events and fires it only if all return 1 (bpf_prog_run_array() ANDs them),
 * so run-queue latency and --tracepoint sched:sched_switch would silence each other.
 * triggers__new() refuses it in gate mode, naming both; links mode takes it.
 */
static void test_gates_share_no_tracepoint(void **state)
{
	struct capture_opts o = { .nth = 1, .max_snapshots = 1, .nr_triggers = 2 };
	struct triggers *t = NULL;
	char why[256];

	skip_unless_possible();
	o.triggers[0].kind = TRIGGER_RUNQ_LATENCY;
	o.triggers[0].latency_ns = 1000000;
	o.triggers[0].syscall_nr = -1;
	o.triggers[1].kind = TRIGGER_TRACEPOINT;
	o.triggers[1].arg = "sched:sched_switch";
	o.triggers[1].syscall_nr = -1;
	assert_int_equal(triggers__gate_mode_check(&o, why, sizeof(why)), -EOPNOTSUPP);
	assert_non_null(strstr(why, "sched/sched_switch"));
	assert_int_equal(triggers__new(&o, getpid(), TRIGGER_ATTACH_GATE, &t), -EOPNOTSUPP);
	assert_null(t);
	assert_int_equal(triggers__new(&o, getpid(), TRIGGER_ATTACH_LINKS, &t), 0);
	triggers__free(t);
	/* the same tracepoint twice */
	o.triggers[0] = o.triggers[1];
	assert_int_equal(triggers__gate_mode_check(&o, why, sizeof(why)), -EOPNOTSUPP);
	assert_int_equal(triggers__new(&o, getpid(), TRIGGER_ATTACH_GATE, &t), -EOPNOTSUPP);
	/* two run-queue triggers share one program, hence one gate */
	o.triggers[0].kind = o.triggers[1].kind = TRIGGER_RUNQ_LATENCY;
	o.triggers[0].arg = o.triggers[1].arg = NULL;
	assert_int_equal(triggers__gate_mode_check(&o, why, sizeof(why)), 0);
}

struct log_lines {
	char text[4096];
	size_t len;
};

static void keep_line(void *ctx, int level, const char *msg)
{
	struct log_lines *l = ctx;

	l->len += snprintf(l->text + l->len, sizeof(l->text) - l->len, "%s", msg);
	if (l->len >= sizeof(l->text))
		l->len = sizeof(l->text) - 1;
}

/* The libc this test runs with, from its own mappings. */
static bool find_libc(char *path, size_t size)
{
	char line[4096];
	bool found = false;
	FILE *f = fopen("/proc/self/maps", "re");

	while (f && !found && fgets(line, sizeof(line), f)) {
		char *name = strchr(line, '/');

		if (name && strstr(name, "/libc.so")) {
			name[strcspn(name, "\n")] = '\0';
			snprintf(path, size, "%s", name);
			found = true;
		}
	}
	if (f)
		fclose(f);
	return found;
}

/*
 * A gate uprobe is opened CPU-wide, which the kernel makes system-wide
 * (uprobe_perf_filter()): on a shared library that is every process mapping it, and
 * ptbpf says so; on the target's own program it says nothing.
 */
static void test_gate_library_warning(void **state)
{
	struct capture_opts o = { .nth = 1, .max_snapshots = 1, .nr_triggers = 1 };
	struct log_lines lines = {};
	struct triggers *t = NULL;
	char libc[4096], spec[4200];
	log_sink_fn old_fn;
	void *old_ctx;

	skip_unless_possible();
	if (!find_libc(libc, sizeof(libc))) {
		printf("SKIP: no libc.so in this test's mappings (a static build?)\n");
		skip();
	}
	o.triggers[0].kind = TRIGGER_UPROBE;
	o.triggers[0].syscall_nr = -1;
	o.triggers[0].arg = spec;
	log_get_sink(&old_fn, &old_ctx);
	log_set_sink(keep_line, &lines);
	snprintf(spec, sizeof(spec), "%s:getpid", libc);
	assert_int_equal(triggers__new(&o, getpid(), TRIGGER_ATTACH_GATE, &t), 0);
	triggers__free(t);
	t = NULL;
	log_set_sink(old_fn, old_ctx);
	assert_non_null(strstr(lines.text, "is a shared library (libc.so.6)"));
	assert_non_null(strstr(lines.text, "armed in every process on the host that maps it"));

	lines.len = 0;
	lines.text[0] = '\0';
	log_set_sink(keep_line, &lines);
	snprintf(spec, sizeof(spec), "%s:slow_path", slow_target());
	assert_int_equal(triggers__new(&o, getpid(), TRIGGER_ATTACH_GATE, &t), 0);
	triggers__free(t);
	log_set_sink(old_fn, old_ctx);
	assert_null(strstr(lines.text, "shared library"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gate_uprobe),
		cmocka_unit_test(test_gate_uretprobe),
		cmocka_unit_test(test_links_do_not_silence),
		cmocka_unit_test(test_gates_share_no_tracepoint),
		cmocka_unit_test(test_gate_library_warning),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
