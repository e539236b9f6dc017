// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The pt backend where there is no Intel PT: what it says and returns, on this host and
 * on fake sysfs trees (tests/data/sysfs-*, and trees made here), and on the simulated
 * kernel of pt_sim.h.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "backend.h"
#include "pt_pmu.h"
#include "pt_sim.h"
#include "symtab.h"
#include "target.h"
#include "triggers.h"

static char stderr_path[64];


/* Send stderr to stderr_path; returns the real stderr for stderr_end(). */
static int stderr_begin(void)
{
	int saved = dup(2), fd;

	fflush(stderr);
	fd = open(stderr_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	dup2(fd, 2);
	close(fd);
	return saved;
}

/* Put stderr back; `text` gets what was printed since stderr_begin(). */
static void stderr_end(int saved, char *text, size_t size)
{
	FILE *f;
	size_t n;

	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	f = fopen(stderr_path, "r");
	n = fread(text, 1, size - 1, f);
	text[n] = '\0';
	fclose(f);
}

/* Run open() with stderr captured; returns its result and the text it printed. */
static int open_capturing(const struct capture_opts *o, struct target *t, struct backend **b,
			  char *text, size_t size)
{
	int saved = stderr_begin(), err;

	err = pt_backend_ops.open(o, t, b);
	stderr_end(saved, text, size);
	return err;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static struct capture_opts opts(void)
{
	return (struct capture_opts){ .buffer_size = 4u << 20, .psb_period = -1 };
}

static void test_usable_matches_doctor(void **state)
{
	char why[512], doctor[512];
	bool usable;

	/* on a fake tree without the PMU, and on this host: the line doctor prints */
	setenv("PTBPF_SYSFS_ROOT", sim_sysfs_tree("nopt"), 1);
	assert_false(pt_backend_ops.usable(why, sizeof(why)));
	assert_false(pt_pmu_usable(sim_sysfs_tree("nopt"), doctor, sizeof(doctor)));
	assert_string_equal(why, doctor);
	assert_non_null(strstr(why, "no Intel PT PMU: "));
	unsetenv("PTBPF_SYSFS_ROOT");
	usable = pt_backend_ops.usable(why, sizeof(why));
	assert_int_equal(usable, pt_pmu_usable("/sys", doctor, sizeof(doctor)));
	if (!usable)
		assert_string_equal(why, doctor);
	assert_string_equal(pt_backend_ops.name, "pt");
}

static void test_open_without_pmu(void **state)
{
	struct capture_opts o = opts();
	struct backend *b = (void *)1;
	char text[1024], why[512];

	setenv("PTBPF_SYSFS_ROOT", sim_sysfs_tree("nopt"), 1);
	assert_int_equal(open_capturing(&o, NULL, &b, text, sizeof(text)), -ENODEV);
	assert_null(b);
	pt_pmu_usable(sim_sysfs_tree("nopt"), why, sizeof(why));
	/* one line: "ptbpf: --backend pt: " and doctor's reason with its fix */
	assert_non_null(strstr(text, "--backend pt: "));
	assert_non_null(strstr(text, why));
	assert_non_null(strchr(text, '\n'));
	assert_int_equal(strchr(text, '\n') - text, strlen(text) - 1);
	unsetenv("PTBPF_SYSFS_ROOT");
}

static void test_open_config_errors(void **state)
{
	struct capture_opts o = opts();
	struct backend *b = NULL;
	char text[1024];

	if (geteuid()) {
		printf("SKIP: the fake PMU is only usable with CAP_PERFMON; run as root\n");
		skip();
	}
	/* the exact errors of pt_pmu__config() reach the user, and open() fails with them */
	setenv("PTBPF_SYSFS_ROOT", sim_sysfs_tree("broadwell"), 1);
	o.timing = TIMING_MTC;
	o.timing_given = true;
	assert_int_equal(open_capturing(&o, NULL, &b, text, sizeof(text)), -EOPNOTSUPP);
	assert_string_equal(text, "ptbpf: --timing mtc: this CPU has no MTC packets (caps/mtc=0); "
			    "use --timing tsc\n");
	o = opts();
	setenv("PTBPF_SYSFS_ROOT", sim_sysfs_tree("skylake"), 1);
	o.psb_period = 9;
	assert_int_equal(open_capturing(&o, NULL, &b, text, sizeof(text)), -EINVAL);
	assert_string_equal(text, "ptbpf: --psb-period 9 is not allowed on this CPU: "
			    "caps/psb_periods=0x3f allows 0-5\n");
	o = opts();
	o.buffer_size = 12288;
	assert_int_equal(open_capturing(&o, NULL, &b, text, sizeof(text)), -EINVAL);
	assert_non_null(strstr(text, "--buffer-size 12288: a power of two"));
	unsetenv("PTBPF_SYSFS_ROOT");
}

static void test_open_filter_errors(void **state)
{
	char *filters[] = { "/nonexistent/bin:main", "/proc/self/exe:no_such_function_xyz" };
	struct capture_opts o = opts();
	struct backend *b = NULL;
	char text[1024];

	if (geteuid()) {
		printf("SKIP: the fake PMU is only usable with CAP_PERFMON; run as root\n");
		skip();
	}
	setenv("PTBPF_SYSFS_ROOT", sim_sysfs_tree("skylake"), 1);
	o.filters[0] = filters[0];
	o.nr_filters = 1;
	assert_true(open_capturing(&o, NULL, &b, text, sizeof(text)) < 0);
	assert_non_null(strstr(text, "--filter /nonexistent/bin:main: cannot read symbols of "
				     "/nonexistent/bin"));
	o.filters[0] = filters[1];
	assert_int_equal(open_capturing(&o, NULL, &b, text, sizeof(text)), -EINVAL);
	assert_non_null(strstr(text, "no function 'no_such_function_xyz' in /proc/self/exe"));
	/* more ranges than the CPU has: caught before any symbol is read */
	o.filters[1] = filters[1];
	o.filters[2] = filters[1];
	o.nr_filters = 3;
	assert_int_equal(open_capturing(&o, NULL, &b, text, sizeof(text)), -EINVAL);
	assert_non_null(strstr(text, "--filter given 3 times, but this CPU has 2 address ranges"));
	unsetenv("PTBPF_SYSFS_ROOT");
}

/* A PMU sysfs describes but this kernel does not have: perf_event_open fails, cleanly. */
static void test_open_fails_cleanly(void **state)
{
	char dir[128], path[256], text[1024];
	struct capture_opts o = opts();
	struct backend *b = (void *)1;
	int before, err;
	FILE *f;

	if (geteuid()) {
		printf("SKIP: the fake PMU is only usable with CAP_PERFMON; run as root\n");
		skip();
	}
	snprintf(dir, sizeof(dir), "/tmp/ptbpf-test-pt-%d", getpid());
	snprintf(path, sizeof(path), "mkdir -p %s/bus/event_source/devices/intel_pt/format", dir);
	assert_int_equal(system(path), 0);
	snprintf(path, sizeof(path), "%s/bus/event_source/devices/intel_pt/type", dir);
	f = fopen(path, "w");
	fprintf(f, "%d\n", 0x7ffffff0);
	fclose(f);
	snprintf(path, sizeof(path), "%s/bus/event_source/devices/intel_pt/format/tsc", dir);
	f = fopen(path, "w");
	fprintf(f, "config:10\n");
	fclose(f);
	setenv("PTBPF_SYSFS_ROOT", dir, 1);
	before = count_fds();
	err = open_capturing(&o, NULL, &b, text, sizeof(text));
	assert_true(err < 0);
	assert_null(b);
	assert_non_null(strstr(text, "--backend pt: cannot open intel_pt on CPU "));
	/* nothing left open (the capture file of this test aside) */
	assert_int_equal(count_fds(), before);
	/* --kernel where /proc/kcore is missing: said before anything is opened */
	if (access("/proc/kcore", R_OK)) {
		o.kernel = true;
		assert_int_equal(open_capturing(&o, NULL, &b, text, sizeof(text)), -ENODEV);
		assert_non_null(strstr(text, "--kernel: /proc/kcore: "));
	}
	unsetenv("PTBPF_SYSFS_ROOT");
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	assert_int_equal(system(path), 0);
}


static int online_count(void)
{
	return sysconf(_SC_NPROCESSORS_ONLN);
}

static void fill(uint8_t *p, size_t from, size_t to, uint8_t base)
{
	for (size_t i = from; i < to; i++)
		p[i] = (uint8_t)(base + i) | 1;
}

struct sim_hooks {
	int calls, stop_after;
};

static int sim_check(void *ctx)
{
	struct sim_hooks *h = ctx;

	return ++h->calls >= h->stop_after;
}

int ptbpf_test_filter_target(int x);

/* Small rings, and --filter on a function of this test. */
static struct capture_opts self_filter_opts(void)
{
	struct capture_opts o = opts();

	o.buffer_size = 16384;
	o.filters[0] = "/proc/self/exe:ptbpf_test_filter_target";
	o.nr_filters = 1;
	return o;
}

/* The size of ptbpf_test_filter_target in this binary's symbol table. */
static size_t filter_target_size(void)
{
	struct symtab *st = NULL;
	const struct sym *fn;
	size_t size;

	assert_int_equal(symtab__load("/proc/self/exe", &st), 0);
	assert_int_equal(symtab__lookup(st, "ptbpf_test_filter_target", &fn, 1), 1);
	size = fn->size;
	symtab__free(st);
	return size;
}

/*
 * open, start, run, freeze, snapshot, resume, close against the simulated kernel, and
 * what ends up in struct capture, field by field.
 */
static void test_sim_capture(void **state)
{
	struct capture_opts o = opts();
	struct target t = { .pid = getpid(), .pidfd = -1, .exit_status = -1 };
	struct sim_hooks hc = { .stop_after = 1 };
	int pipefd[2], ncpu = online_count(), i, first_pt;
	struct run_hooks hooks = { .fds = pipefd, .nr_fds = 1, .check = sim_check, .ctx = &hc };
	struct backend *b = NULL;
	struct capture *cap;
	struct pd_record r;
	struct sim_event *e0, *e1, *probe = NULL;
	uint64_t last = 0;
	size_t n;
	int kernel_recs = 0, aux_recs = 0, synth_comm = 0;
	char text[2048], want_filter[64];

	if (geteuid() || ncpu < 2) {
		printf("SKIP: needs root (CAP_PERFMON for the PMU check) and two CPUs\n");
		skip();
	}
	sim_tree();
	o = self_filter_opts();
	snprintf(want_filter, sizeof(want_filter), "filter 0x%lx/0x%zx",
		 (unsigned long)ptbpf_test_filter_target, filter_target_size());
	assert_int_equal(open_capturing(&o, &t, &b, text, sizeof(text)), 0);
	assert_non_null(b);
	assert_string_equal(text, "");

	/* one PT event per online CPU, as the notes lay out the attr, then the probe */
	first_pt = 0;
	for (i = 0; i < nr_sim; i++) {
		struct sim_event *e = &sim[i];

		if (!e->pt) {
			probe = e;
			continue;
		}
		assert_int_equal(e->attr.type, SIM_PT_TYPE);
		assert_int_equal(e->attr.config, 0x300e601);
		assert_int_equal(e->attr.disabled, 1);
		assert_int_equal(e->attr.sample_type, PT_SAMPLE_TYPE);
		assert_int_equal(e->attr.context_switch, 1);
		assert_int_equal(e->attr.exclude_kernel, 1);
		assert_int_equal(e->attr.watermark, 1);
		assert_int_equal(e->attr.wakeup_watermark, SIM_DATA / 2);
		assert_int_equal(e->pid, -1);
		assert_int_equal(e->group_fd, -1);
		assert_int_equal(e->cpu, first_pt++);
		/* overwrite mode: the AUX area mapped without PROT_WRITE, at aux_offset */
		assert_int_equal(e->aux_prot, PROT_READ);
		assert_int_equal(e->aux_len, 16384);
		assert_int_equal(sim_pc(e)->aux_offset, SIM_PAGE + SIM_DATA);
		/*
		 * the address filter: the function where this process maps it, no file (the
		 * kernel refuses file-based filters on CPU-wide events)
		 */
		assert_string_equal(e->filter, want_filter);
	}
	assert_int_equal(first_pt, ncpu);
	assert_non_null(probe);
	assert_int_equal(probe->attr.type, PERF_TYPE_SOFTWARE);
	assert_int_equal(pt_attr_aux_action(&probe->attr), PT_AUX_PAUSE);
	assert_int_equal(probe->group_fd, sim_pt(0)->fd);
	assert_int_equal(probe->cpu, 0);
	/* no trigger: links; the probe said the kernel could pause */
	assert_int_equal(pt_backend_ops.trigger_mode(b), TRIGGER_ATTACH_LINKS);

	assert_int_equal(pt_backend_ops.start(b), 0);
	e0 = sim_pt(0);
	e1 = sim_pt(1);
	assert_int_equal(e0->enables, 1);

	/* what the hardware and the kernel write meanwhile */
	{
		uint8_t *aux0 = e0->map + SIM_PAGE + SIM_DATA;
		uint8_t *aux1 = e1->map + SIM_PAGE + SIM_DATA;
		struct pd_record c = { .type = PERF_RECORD_COMM };
		struct pd_record m = { .type = PERF_RECORD_MMAP2 };
		struct pd_record sw = { .type = PERF_RECORD_SWITCH_CPU_WIDE };
		struct pd_record lost = { .type = PERF_RECORD_LOST };

		fill(aux0, 0, 16384, 3);	/* CPU 0 went round; head at 100 */
		e0->pending_head = 100;
		e0->aux_flags = PERF_AUX_FLAG_TRUNCATED;
		fill(aux1, 0, 500, 7);		/* CPU 1 wrote 500 bytes */
		e1->pending_head = 500;
		c.comm.pid = c.comm.tid = 1;
		c.comm.comm = "worker";
		c.sample = sim_sample(e0, 100);
		sim_write_record(e0, &c);
		m.mmap.pid = m.mmap.tid = 1;
		m.mmap.addr = 0x400000;
		m.mmap.len = 0x1000;
		m.mmap.prot = PROT_READ | PROT_EXEC;
		m.mmap.filename = "/usr/bin/worker";
		m.sample = sim_sample(e1, 200);
		sim_write_record(e1, &m);
		sw.sw.next_prev_pid = sw.sw.next_prev_tid = 2;
		sw.sample = sim_sample(e0, 300);
		sim_write_record(e0, &sw);
		sw.sample = sim_sample(e1, 400);
		sim_write_record(e1, &sw);
		lost.lost.id = e0->id;
		lost.lost.lost = 7;
		lost.sample = sim_sample(e0, 500);
		sim_write_record(e0, &lost);
	}

	/* run: the data rings' wakeups and the hooks; check() stops it */
	assert_int_equal(pipe(pipefd), 0);
	assert_int_equal(write(pipefd[1], "x", 1), 1);
	assert_int_equal(eventfd_write(e0->fd, 1), 0);
	assert_int_equal(pt_backend_ops.run(b, &hooks), RUN_STOPPED);
	assert_int_equal(hc.calls, 1);

	assert_int_equal(pt_backend_ops.freeze(b), 0);
	for (i = 0; i < nr_sim; i++)
		if (sim[i].pt)
			assert_int_equal(sim[i].disables, 1);

	cap = capture__new();
	fflush(stderr);
	assert_int_equal(pt_backend_ops.snapshot(b, cap), 0);

	assert_int_equal(cap->nr_attrs, 1);
	assert_int_equal(cap->attrs[0].attr.type, SIM_PT_TYPE);
	assert_int_equal(cap->attrs[0].nr_ids, ncpu);
	assert_int_equal(cap->attrs[0].ids[0], e0->id);
	assert_int_equal(cap->attrs[0].ids[1], e1->id);
	assert_string_equal(cap->attrs[0].name, "intel_pt//u");
	assert_true(cap->pt.present);
	assert_int_equal(cap->pt.pmu_type, SIM_PT_TYPE);
	assert_int_equal(cap->pt.time_shift, 31);
	assert_int_equal(cap->pt.time_mult, 0x2aaaaaab);
	assert_int_equal(cap->pt.time_zero, 0x1234567);
	assert_int_equal(cap->pt.cap_user_time_zero, 1);
	assert_int_equal(cap->pt.snapshot_mode, 1);
	assert_int_equal(cap->pt.per_cpu_mmaps, 1);
	assert_int_equal(cap->pt.have_sched_switch, 3);
	assert_int_equal(cap->pt.mtc_freq_bits, 0x3c000);
	assert_string_equal(cap->pt.filter, want_filter);	/* AUXTRACE_INFO: what was set */
	assert_non_null(cap->host.cpuid);
	assert_non_null(cap->vdso);

	assert_int_equal(cap->records[0].type, PD_RECORD_TIME_CONV);
	for (n = 1; n < cap->nr_records; n++) {
		r = cap->records[n];
		if (r.sample.time == 0) {
			/* synthesized from /proc for the target, before the kernel's records */
			assert_int_equal(kernel_recs, 0);
			assert_int_equal(r.sample.pid, getpid());
			synth_comm += r.type == PERF_RECORD_COMM;
			continue;
		}
		kernel_recs++;
		assert_true(r.sample.time >= last);	/* CPUs merged in time order */
		last = r.sample.time;
		if (r.type == PERF_RECORD_AUX) {
			aux_recs++;
			assert_true(r.aux.flags & PERF_AUX_FLAG_OVERWRITE);
			if (r.sample.cpu == 0)
				assert_true(r.aux.flags & PERF_AUX_FLAG_TRUNCATED);
		}
	}
	assert_true(synth_comm >= 1);
	assert_int_equal(kernel_recs, 5 + ncpu);
	assert_int_equal(aux_recs, ncpu);

	/* AUX: CPU 0 linearised from head, CPU 1 from 0 to head; others wrote nothing */
	assert_int_equal(cap->nr_aux, 2);
	assert_int_equal(cap->aux[0].cpu, 0);
	assert_int_equal(cap->aux[0].size, 16384);
	assert_memory_equal(cap->aux[0].data, e0->map + SIM_PAGE + SIM_DATA + 100, 16384 - 100);
	assert_memory_equal(cap->aux[0].data + 16384 - 100, e0->map + SIM_PAGE + SIM_DATA, 100);
	assert_int_equal(cap->aux[1].cpu, 1);
	assert_int_equal(cap->aux[1].size, 500);
	assert_int_equal(cap->aux[1].tid, (uint32_t)-1);
	assert_true(cap->aux[1].reference != 0);
	assert_memory_equal(cap->aux[1].data, e1->map + SIM_PAGE + SIM_DATA, 500);
	capture__free(cap);

	/*
	 * resume: the same groups and rings, enabled again (PT goes on from aux_head); the
	 * next snapshot holds what each CPU wrote since, told by the bytes before its old head
	 */
	i = nr_sim;
	assert_int_equal(pt_backend_ops.resume(b), 0);
	assert_int_equal(nr_sim, i);
	assert_true(sim_pt(0) == e0);
	assert_int_equal(e0->enables, 2);
	assert_int_equal(e1->enables, 2);
	assert_string_equal(e0->filter, want_filter);	/* the kept events keep their filter */
	fill(e0->map + SIM_PAGE + SIM_DATA, 100, 1300, 9);	/* CPU 0: 1200 bytes more */
	e0->pending_head = 1300;
	fill(e1->map + SIM_PAGE + SIM_DATA, 0, 16384, 5);	/* CPU 1: a whole lap, to 600 */
	e1->pending_head = 600;
	assert_int_equal(pt_backend_ops.freeze(b), 0);
	cap = capture__new();
	assert_int_equal(pt_backend_ops.snapshot(b, cap), 0);
	assert_int_equal(cap->nr_aux, 2);
	assert_int_equal(cap->aux[0].cpu, 0);
	assert_int_equal(cap->aux[0].size, 1200);
	assert_int_equal(cap->aux[0].offset, 16384);	/* the AUX stream goes on */
	assert_memory_equal(cap->aux[0].data, e0->map + SIM_PAGE + SIM_DATA + 100, 1200);
	assert_int_equal(cap->aux[1].cpu, 1);
	assert_int_equal(cap->aux[1].size, 16384);
	assert_memory_equal(cap->aux[1].data, e1->map + SIM_PAGE + SIM_DATA + 600, 16384 - 600);
	capture__free(cap);
	assert_non_null(strstr(pt_backend_ops.describe(b), "from user space"));
	pt_backend_ops.close(b);
	close(pipefd[0]);
	close(pipefd[1]);
	sim_reset();
	sim_tree_free();
}

/* The function the address filter above names: a real symbol of this binary. */
__attribute__((noinline)) int ptbpf_test_filter_target(int x)
{
	return x * 3 + 1;
}

/* With a trigger and aux_pause: every CPU's group gets the trigger as an aux_pause member. */
static void test_sim_gates(void **state)
{
	struct trigger_spec *ts;
	struct capture_opts o = opts();
	struct backend *b = NULL;
	struct triggers *t = NULL;
	struct trigger_gate g;
	int i, members = 0, ncpu = online_count();
	char text[2048];

	if (geteuid() || ncpu < 2) {
		printf("SKIP: needs root (BPF, tracefs) and two CPUs\n");
		skip();
	}
	sim_tree();
	ts = &o.triggers[o.nr_triggers++];
	ts->kind = TRIGGER_TRACEPOINT;
	ts->arg = "sched:sched_switch";
	ts->syscall_nr = -1;
	o.max_snapshots = 1;
	o.nth = 1;
	o.buffer_size = 16384;
	assert_int_equal(open_capturing(&o, NULL, &b, text, sizeof(text)), 0);
	assert_int_equal(pt_backend_ops.trigger_mode(b), TRIGGER_ATTACH_GATE);
	assert_int_equal(triggers__new(&o, getpid(), TRIGGER_ATTACH_GATE, &t), 0);
	assert_int_equal(triggers__attach(t), 0);
	assert_int_equal(triggers__nr_gates(t), 1);
	assert_int_equal(triggers__gate(t, 0, &g), 0);
	assert_int_equal(pt_backend_ops.attach_gates(b, t), 0);

	for (i = 0; i < nr_sim; i++) {
		struct sim_event *e = &sim[i], *leader;

		if (e->pt || e->attr.type != PERF_TYPE_TRACEPOINT)
			continue;
		/* notes/kernel-pt-abi.md §3.6: tracepoint, period 1, aux_pause, kernel on */
		leader = sim_by_fd(e->group_fd);
		assert_non_null(leader);
		assert_true(leader->pt);
		assert_int_equal(e->cpu, leader->cpu);
		assert_int_equal(e->pid, -1);
		assert_int_equal(e->attr.config, g.tp_id);
		assert_int_equal(e->attr.sample_period, 1);
		assert_int_equal(pt_attr_aux_action(&e->attr), PT_AUX_PAUSE);
		assert_int_equal(e->attr.exclude_kernel, 0);
		assert_int_equal(e->attr.disabled, 0);
		members++;
	}
	assert_int_equal(members, ncpu);
	assert_non_null(strstr(pt_backend_ops.describe(b), "in the kernel"));
	/* why the gates are CPU-wide: a member scoped to one process is refused */
	{
		struct perf_event_attr a;

		pt_attr_trigger(&a, g.tp_id);
		assert_int_equal(pt_sys_perf_event_open(&a, getpid(), 0, sim_pt(0)->fd), -1);
		assert_int_equal(errno, EINVAL);
	}
	/*
	 * The gate on CPU 1 let one hit through: it paused PT there, which stays paused
	 * through DISABLE/ENABLE. resume() reopens that group alone, with its member, and
	 * re-enables the others; the program stays attached.
	 */
	{
		struct sim_event *pt0 = sim_pt(0), *pt1 = sim_pt(1);
		struct capture *cap = capture__new();
		int before = nr_sim;

		assert_int_equal(pt_backend_ops.start(b), 0);
		for (i = 0; i < nr_sim; i++)
			if (!sim[i].pt && sim[i].group_fd == pt1->fd &&
			    sim[i].attr.type == PERF_TYPE_TRACEPOINT)
				sim[i].count = 1;
		assert_int_equal(pt_backend_ops.freeze(b), 0);
		assert_int_equal(pt_backend_ops.snapshot(b, cap), 0);
		capture__free(cap);
		assert_int_equal(pt_backend_ops.resume(b), 0);
		assert_true(sim_pt(0) == pt0);
		assert_int_equal(pt0->enables, 2);
		assert_true(sim_pt(1) != pt1);
		assert_int_equal(sim_pt(1)->enables, 1);
		assert_int_equal(nr_sim, before + 2);	/* CPU 1's PT event and its member */
		for (i = members = 0; i < nr_sim; i++)
			if (!sim[i].pt && sim[i].attr.type == PERF_TYPE_TRACEPOINT)
				members++;
		assert_int_equal(members, ncpu + 1);
	}
	/*
	 * The backend before the triggers: tracefs keeps probes perf events hold. The
	 * anchor fd belongs to the BPF link (bpf_link_perf_detach() closes it): every fd
	 * number close() frees is taken by an unrelated file at once, and triggers__free()
	 * must leave all of those open.
	 */
	{
		int nfds = 0, freed[256], k, devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);

		assert_true(devnull >= 0);
		for (k = 3; k < 1024 && nfds < 256; k++)
			if (k != devnull && fcntl(k, F_GETFD) >= 0)
				freed[nfds++] = k;
		pt_backend_ops.close(b);
		for (k = i = 0; i < nfds; i++) {
			if (fcntl(freed[i], F_GETFD) >= 0)
				continue;
			assert_int_equal(dup2(devnull, freed[i]), freed[i]);
			freed[k++] = freed[i];
		}
		triggers__free(t);
		for (i = 0; i < k; i++) {
			assert_true(fcntl(freed[i], F_GETFD) >= 0);
			close(freed[i]);
		}
		close(devnull);
	}
	sim_reset();

	/* a kernel that refuses aux_pause members: the loader freezes */
	sim_refuse_aux_pause = true;
	assert_int_equal(open_capturing(&o, NULL, &b, text, sizeof(text)), 0);
	assert_int_equal(pt_backend_ops.trigger_mode(b), TRIGGER_ATTACH_LINKS);
	assert_non_null(strstr(pt_backend_ops.describe(b), "from user space"));
	pt_backend_ops.close(b);
	sim_reset();

	/* PTBPF_PT_FREEZE=ioctl forces the user-space path (tests/hw/run.sh) */
	setenv("PTBPF_PT_FREEZE", "ioctl", 1);
	assert_int_equal(open_capturing(&o, NULL, &b, text, sizeof(text)), 0);
	assert_int_equal(pt_backend_ops.trigger_mode(b), TRIGGER_ATTACH_LINKS);
	pt_backend_ops.close(b);
	unsetenv("PTBPF_PT_FREEZE");
	sim_reset();
	sim_tree_free();
}

/* The trigger mode open() leads to, and what it printed, for triggers `specs`. */
static enum trigger_attach_mode sim_mode(const struct trigger_spec *specs, int n, char *text,
					 size_t size)
{
	struct capture_opts o = opts();
	struct backend *b = NULL;
	enum trigger_attach_mode mode;
	int saved;

	o.buffer_size = 16384;
	o.nr_triggers = n;
	memcpy(o.triggers, specs, n * sizeof(*specs));
	assert_int_equal(open_capturing(&o, NULL, &b, text, size), 0);
	saved = stderr_begin();
	mode = pt_backend_ops.trigger_mode(b);
	stderr_end(saved, text, size);
	pt_backend_ops.close(b);
	sim_reset();
	return mode;
}

/*
 * Gate mode only where the kernel lets every trigger gate: the programs of one
 * tracepoint are ANDed (bpf_prog_run_array() in include/linux/bpf.h), so two triggers
 * gating on one tracepoint silence each other; a probe needs tracefs' uprobe_events or
 * kprobe_events. Elsewhere the loader freezes (links mode), saying why.
 */
static void test_sim_gate_rules(void **state)
{
	struct trigger_spec tp = { .kind = TRIGGER_TRACEPOINT, .arg = "sched:sched_switch",
				   .syscall_nr = -1 };
	struct trigger_spec runq = { .kind = TRIGGER_RUNQ_LATENCY, .latency_ns = 1000000,
				     .syscall_nr = -1 };
	struct trigger_spec sys = { .kind = TRIGGER_SYSCALL_LATENCY, .latency_ns = 1000000,
				    .syscall_nr = -1 };
	struct trigger_spec up = { .kind = TRIGGER_UPROBE, .arg = "/bin/true:main",
				   .syscall_nr = -1 };
	struct trigger_spec specs[3];
	char text[2048];
	pid_t child;
	int status;

	if (geteuid()) {
		printf("SKIP: needs root (CAP_PERFMON for the PMU check, mounts)\n");
		skip();
	}
	sim_tree();
	specs[0] = tp;
	assert_int_equal(sim_mode(specs, 1, text, sizeof(text)), TRIGGER_ATTACH_GATE);
	assert_string_equal(text, "");
	/* run-queue latency gates on sched_switch too */
	specs[1] = runq;
	assert_int_equal(sim_mode(specs, 2, text, sizeof(text)), TRIGGER_ATTACH_LINKS);
	assert_non_null(strstr(text, "the loader will freeze PT"));
	assert_non_null(strstr(text, "tracepoint sched/sched_switch (triggers 1 and 2)"));
	assert_non_null(strstr(text, "bpf_prog_run_array"));
	/* the same tracepoint twice */
	specs[1] = tp;
	assert_int_equal(sim_mode(specs, 2, text, sizeof(text)), TRIGGER_ATTACH_LINKS);
	/* syscall triggers share one program: one gate, no conflict; nor with another tp */
	specs[0] = sys;
	specs[1] = sys;
	specs[2] = tp;
	assert_int_equal(sim_mode(specs, 3, text, sizeof(text)), TRIGGER_ATTACH_GATE);
	specs[2] = tp;
	specs[2].arg = "raw_syscalls:sys_exit";
	assert_int_equal(sim_mode(specs, 3, text, sizeof(text)), TRIGGER_ATTACH_LINKS);
	/* --usdt has no gate: links mode rather than a refusal */
	specs[0] = up;
	specs[0].kind = TRIGGER_USDT;
	assert_int_equal(sim_mode(specs, 1, text, sizeof(text)), TRIGGER_ATTACH_LINKS);
	assert_non_null(strstr(text, "--usdt"));

	/* a tracefs without uprobe_events, in a mount namespace of a child's own */
	specs[0] = up;
	assert_int_equal(sim_mode(specs, 1, text, sizeof(text)), TRIGGER_ATTACH_GATE);
	child = fork();
	assert_true(child >= 0);
	if (!child) {
		if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		    mount("none", "/sys/kernel/tracing", "tmpfs", 0, NULL) ||
		    mkdir("/sys/kernel/tracing/events", 0755))
			_exit(77);
		if (sim_mode(specs, 1, text, sizeof(text)) != TRIGGER_ATTACH_LINKS)
			_exit(1);
		_exit(strstr(text, "no uprobe_events") ? 0 : 2);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		printf("no mount namespace here: the tracefs case was not run\n");
	else
		assert_int_equal(WEXITSTATUS(status), 0);
	sim_tree_free();
}

static int stop_at_once(void *ctx)
{
	return 1;
}

/*
 * --filter against the kernel's rules (sim_set_filter()): never a file-based range on the
 * CPU-wide events; an address range in the target, which a kernel before 5.18 refuses
 * (said, with the version); no target, nothing to place the range in (said up front); a
 * command ptbpf starts gets the range once it has exec'd, at the address where it maps
 * the function's bytes.
 */
static void test_sim_filter_rules(void **state)
{
	struct capture_opts o = opts();
	struct target self = { .pid = getpid(), .pidfd = -1, .exit_status = -1 };
	int ready[2];
	struct run_hooks hooks = { .fds = ready, .nr_fds = 1, .check = stop_at_once };
	struct target *cmd = NULL;
	struct backend *b = NULL;
	struct symtab *st = NULL;
	const struct sym *fn;
	char text[2048], bin[PATH_MAX], spec[PATH_MAX + 16], path[64];
	char *argv[] = { bin, "-t", "1", "-n", "5000", "-i", "1000", NULL };
	unsigned long long vaddr, size;
	uint8_t in_file[16], in_target[16];
	uint64_t off;
	int fd, i, status, saved;
	const char *build = getenv("BUILD");

	if (geteuid()) {
		printf("SKIP: needs root (CAP_PERFMON for the PMU check)\n");
		skip();
	}
	sim_tree();
	o = self_filter_opts();

	/* a kernel before 5.18: said at open, before a command ptbpf starts runs */
	sim_before_5_18 = true;
	assert_int_equal(open_capturing(&o, &self, &b, text, sizeof(text)), -EOPNOTSUPP);
	assert_null(b);
	assert_non_null(strstr(text, "the kernel refused the address filter 'filter 0x"));
	assert_non_null(strstr(text, "--filter needs Linux 5.18"));
	assert_int_equal(strchr(text, '\n') - text, strlen(text) - 1);
	sim_reset();

	/* nothing to place the range in */
	assert_int_equal(open_capturing(&o, NULL, &b, text, sizeof(text)), -EINVAL);
	assert_non_null(strstr(text, "--filter with --backend pt needs a target process"));
	o.system_wide = true;
	assert_int_equal(open_capturing(&o, &self, &b, text, sizeof(text)), -EINVAL);
	assert_non_null(strstr(text, "needs a target process"));
	o.system_wide = false;
	sim_reset();

	/* a command ptbpf starts: the range is set after its exec */
	snprintf(bin, sizeof(bin), "%s/targets/trig_slow", build ? build : "build");
	if (access(bin, X_OK)) {
		printf("SKIP: %s not built (make targets)\n", bin);
		sim_tree_free();
		skip();
	}
	snprintf(spec, sizeof(spec), "%s:slow_path", bin);
	o.filters[0] = spec;
	/* its report of each call goes nowhere */
	fflush(stdout);
	saved = dup(1);
	fd = open("/dev/null", O_WRONLY);
	dup2(fd, 1);
	close(fd);
	assert_int_equal(target__spawn(argv, &cmd), 0);
	dup2(saved, 1);
	close(saved);
	assert_int_equal(open_capturing(&o, cmd, &b, text, sizeof(text)), 0);
	assert_string_equal(text, "");
	assert_string_equal(sim_pt(0)->filter, "");
	assert_non_null(strstr(pt_backend_ops.describe(b), "address filter at the target's exec"));
	assert_int_equal(pt_backend_ops.start(b), 0);
	assert_int_equal(target__release(cmd), 0);
	/* a hook fd ready at once: run() applies the filter, then check() stops it */
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(write(ready[1], "x", 1), 1);
	assert_int_equal(pt_backend_ops.run(b, &hooks), RUN_STOPPED);
	close(ready[0]);
	close(ready[1]);
	for (i = 0; i < nr_sim; i++)
		if (sim[i].pt)
			assert_string_equal(sim[i].filter, sim_pt(0)->filter);
	assert_int_equal(sscanf(sim_pt(0)->filter, "filter 0x%llx/0x%llx", &vaddr, &size), 2);
	/* the bytes at that address in the target are slow_path's, from the file */
	assert_int_equal(symtab__load(bin, &st), 0);
	assert_int_equal(symtab__lookup(st, "slow_path", &fn, 1), 1);
	assert_int_equal(size, fn->size);
	assert_int_equal(symtab__addr_to_offset(st, fn->addr, &off), 0);
	symtab__free(st);
	fd = open(bin, O_RDONLY);
	assert_int_equal(pread(fd, in_file, sizeof(in_file), off), sizeof(in_file));
	close(fd);
	snprintf(path, sizeof(path), "/proc/%d/mem", cmd->pid);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, in_target, sizeof(in_target), vaddr), sizeof(in_target));
	close(fd);
	assert_memory_equal(in_file, in_target, sizeof(in_file));
	assert_non_null(strstr(pt_backend_ops.describe(b), ", address filter,"));
	pt_backend_ops.close(b);
	kill(cmd->pid, SIGKILL);
	assert_int_equal(waitpid(cmd->pid, &status, 0), cmd->pid);
	cmd->spawned = false;	/* reaped here */
	target__free(cmd);
	sim_reset();

	/*
	 * A command that never maps the binary: one that ends at once is traced whole
	 * (run() says it exited), one that lives on is an error after a second.
	 */
	{
		char *quick[] = { "true", NULL }, *slow[] = { "sleep", "5", NULL };

		assert_int_equal(target__spawn(quick, &cmd), 0);
		assert_int_equal(open_capturing(&o, cmd, &b, text, sizeof(text)), 0);
		assert_int_equal(target__release(cmd), 0);
		assert_int_equal(pipe(ready), 0);
		assert_int_equal(write(ready[1], "x", 1), 1);
		assert_int_equal(pt_backend_ops.run(b, &hooks), RUN_TARGET_EXITED);
		assert_string_equal(sim_pt(0)->filter, "");
		pt_backend_ops.close(b);
		assert_int_equal(waitpid(cmd->pid, &status, 0), cmd->pid);
		cmd->spawned = false;
		target__free(cmd);
		sim_reset();

		assert_int_equal(target__spawn(slow, &cmd), 0);
		assert_int_equal(open_capturing(&o, cmd, &b, text, sizeof(text)), 0);
		assert_int_equal(target__release(cmd), 0);
		saved = stderr_begin();
		i = pt_backend_ops.run(b, &hooks);
		stderr_end(saved, text, sizeof(text));
		assert_int_equal(i, -ENOENT);
		assert_non_null(strstr(text, "the binary is not mapped in the target"));
		close(ready[0]);
		close(ready[1]);
		pt_backend_ops.close(b);
		kill(cmd->pid, SIGKILL);
		assert_int_equal(waitpid(cmd->pid, &status, 0), cmd->pid);
		cmd->spawned = false;
		target__free(cmd);
		sim_reset();
	}
	sim_tree_free();
}

/* Closing leaves nothing open, whatever was opened. */
static void test_sim_close(void **state)
{
	struct capture_opts o = opts();
	struct backend *b = NULL;
	char text[2048];
	int before, i, held = 0;

	if (geteuid()) {
		printf("SKIP: needs root (CAP_PERFMON for the PMU check)\n");
		skip();
	}
	sim_tree();
	o.buffer_size = 16384;
	before = count_fds();
	assert_int_equal(open_capturing(&o, NULL, &b, text, sizeof(text)), 0);
	assert_int_equal(pt_backend_ops.start(b), 0);
	pt_backend_ops.close(b);
	for (i = 0; i < nr_sim; i++)
		held += sim[i].memfd >= 0;
	/* only the simulator's own memfds remain */
	assert_int_equal(count_fds(), before + held);
	sim_reset();
	sim_tree_free();
}

static uint64_t mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* perf time of a TSC value by the sim's user page: time_zero + tsc * time_mult >> time_shift */
static uint64_t sim_perf_time(struct sim_event *e, uint64_t tsc)
{
	struct perf_event_mmap_page *pc = sim_pc(e);

	return pc->time_zero + (uint64_t)((unsigned __int128)tsc * pc->time_mult >> pc->time_shift);
}

/*
 * The trigger on the trace's time axis: a fire 5 ms ago (bpf_ktime_get_ns(), CLOCK_MONOTONIC)
 * lands 5 ms before the perf time of the TSC, through the user page's conversion. The TSC
 * and the clock are read before and after the call, which bounds the answer exactly.
 */
static void test_sim_locate(void **state)
{
	struct capture_opts o = opts();
	struct backend *b = NULL;
	struct sim_event *e0;
	uint32_t cpu = 7;
	uint64_t time = 0, tsc_a, tsc_b, mono_a, mono_b, ktime, lo, hi;
	char text[2048];

	if (geteuid()) {
		printf("SKIP: needs root (CAP_PERFMON for the PMU check)\n");
		skip();
	}
	assert_non_null(pt_backend_ops.locate);
	sim_tree();
	o.buffer_size = 16384;
	assert_int_equal(open_capturing(&o, NULL, &b, text, sizeof(text)), 0);
	e0 = sim_pt(0);
	tsc_a = __builtin_ia32_rdtsc();
	mono_a = mono_now();
	ktime = mono_a - 5000000;
	assert_int_equal(pt_backend_ops.locate(b, 1, ktime, &cpu, &time), 0);
	mono_b = mono_now();
	tsc_b = __builtin_ia32_rdtsc();
	lo = sim_perf_time(e0, tsc_a) - (mono_b - ktime) - 2;
	hi = sim_perf_time(e0, tsc_b) - (mono_a - ktime) + 2;
	assert_true(time >= lo && time <= hi);
	assert_int_equal(cpu, 7);	/* the fire's CPU is the record's own */
	/* no fire time (a session's end), or no conversion: the decoder's fallback */
	assert_int_equal(pt_backend_ops.locate(b, 1, 0, &cpu, &time), -ENOENT);
	sim_pc(e0)->cap_user_time_zero = 0;
	assert_int_equal(pt_backend_ops.locate(b, 1, mono_now(), &cpu, &time), -ENOENT);
	assert_int_equal(pt_backend_ops.locate(NULL, 1, mono_now(), &cpu, &time), -ENOENT);
	pt_backend_ops.close(b);
	sim_reset();
	sim_tree_free();
}

static void test_null_args(void **state)
{
	struct capture_opts o = opts();
	struct run_hooks hooks = {};
	struct backend *b = NULL;

	assert_int_equal(pt_backend_ops.open(NULL, NULL, &b), -EINVAL);
	assert_int_equal(pt_backend_ops.open(&o, NULL, NULL), -EINVAL);
	assert_int_equal(pt_backend_ops.start(NULL), -EINVAL);
	assert_int_equal(pt_backend_ops.run(NULL, &hooks), -EINVAL);
	assert_int_equal(pt_backend_ops.freeze(NULL), -EINVAL);
	assert_int_equal(pt_backend_ops.snapshot(NULL, NULL), -EINVAL);
	assert_int_equal(pt_backend_ops.resume(NULL), -EINVAL);
	assert_int_equal(pt_backend_ops.attach_gates(NULL, NULL), -EINVAL);
	assert_int_equal(pt_backend_ops.trigger_mode(NULL), TRIGGER_ATTACH_LINKS);
	assert_string_equal(pt_backend_ops.describe(NULL), "pt");
	pt_backend_ops.usable(NULL, 0);	/* no buffer for the reason: still answers */
	pt_backend_ops.close(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_usable_matches_doctor),
		cmocka_unit_test(test_open_without_pmu),
		cmocka_unit_test(test_open_config_errors),
		cmocka_unit_test(test_open_filter_errors),
		cmocka_unit_test(test_open_fails_cleanly),
		cmocka_unit_test(test_sim_capture),
		cmocka_unit_test(test_sim_gates),
		cmocka_unit_test(test_sim_gate_rules),
		cmocka_unit_test(test_sim_filter_rules),
		cmocka_unit_test(test_sim_close),
		cmocka_unit_test(test_sim_locate),
		cmocka_unit_test(test_null_args),
	};
	int ret;

	snprintf(stderr_path, sizeof(stderr_path), "/tmp/ptbpf-test-pt-stderr-%d", getpid());
	ret = cmocka_run_group_tests_name("pt_backend", tests, NULL, NULL);
	unlink(stderr_path);
	return ret;
}
