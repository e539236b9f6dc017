// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The daemon's system-wide PT capture on the simulated kernel (pt_sim.h): the rings
 * module alone (user/daemon/pt_capture.c), then the whole daemon in a child process with
 * a pt rule that has no pid, fired through the real trigger plane by a real process.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "commands.h"
#include "perfdata.h"
#include "pt_capture.h"
#include "pt_pmu.h"
#include "pt_sim.h"
#include "trigger_abi.h"

/* What the daemon's rule probes: a real function of this binary. */
__attribute__((noinline)) int ptbpf_test_pt_fire(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

static uint64_t mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int online_count(void)
{
	return sysconf(_SC_NPROCESSORS_ONLN);
}

static bool need_root(void)
{
	if (geteuid()) {
		printf("SKIP: the simulated PMU is only usable with CAP_PERFMON; run as root\n");
		return false;
	}
	return true;
}

/* The backend's PT events still open: every one CPU-wide, one per CPU. */
static int alive_pt_events(void)
{
	int i, n = 0;

	for (i = 0; i < nr_sim; i++)
		n += sim[i].pt && sim_alive(&sim[i]);
	return n;
}

static void test_rings_per_cpu(void **state)
{
	struct pt_capture *pc = NULL, *again = NULL;
	struct perf_event_attr a;
	int ncpu = online_count(), cpu, i;
	char why[512];

	if (!need_root())
		skip();
	sim_tree();
	assert_int_equal(pt_capture__open(16384, false, why, sizeof(why), &pc), 0);
	assert_non_null(pc);
	assert_int_equal(alive_pt_events(), ncpu);
	for (cpu = 0; cpu < ncpu; cpu++) {
		struct sim_event *e = sim_pt(cpu);

		assert_non_null(e);
		assert_true(sim_alive(e));
		assert_int_equal(e->pid, -1);	/* system-wide: every task on the CPU */
		assert_int_equal(e->cpu, cpu);
		assert_int_equal(e->group_fd, -1);
		assert_int_equal(e->enables, 1);
		assert_int_equal(e->attr.exclude_kernel, 1);
		/* the AUX area mapped read-only: the kernel's overwrite (snapshot) mode */
		assert_int_equal(e->aux_prot, PROT_READ);
		assert_int_equal(e->aux_len, 16384);
		/* the sideband the decode needs, on the event itself */
		assert_true(e->attr.mmap2 && e->attr.comm && e->attr.task &&
			    e->attr.context_switch && e->attr.sample_id_all);
	}
	assert_false(pt_capture__kernel(pc));

	/* intel_pt is exclusive per CPU: a second set of rings is refused, with the fix */
	assert_int_equal(pt_capture__open(16384, false, why, sizeof(why), &again), -EBUSY);
	assert_null(again);
	assert_non_null(strstr(why, "in use by another tracer"));
	assert_int_equal(alive_pt_events(), ncpu);	/* the first set is untouched */
	/* and so is a per-task PT event while CPU-wide ones exist */
	a = sim_pt(0)->attr;
	assert_int_equal(pt_sys_perf_event_open(&a, getpid(), -1, -1), -1);
	assert_int_equal(errno, EBUSY);
	/* a CPU-wide event needs a CPU */
	assert_int_equal(pt_sys_perf_event_open(&a, -1, -1, -1), -1);
	assert_int_equal(errno, EINVAL);

	pt_capture__free(pc);
	assert_int_equal(alive_pt_events(), 0);	/* nothing left open */
	for (i = 0; i < nr_sim; i++)
		assert_false(sim_alive(&sim[i]));
	/* once closed, the rings can be had again */
	assert_int_equal(pt_capture__open(65536, false, why, sizeof(why), &pc), 0);
	assert_int_equal(sim_pt(0)->aux_len, 65536);
	pt_capture__free(pc);

	/* the kernel too: this host has no /proc/kcore to decode it with, and says so */
	if (access("/proc/kcore", R_OK)) {
		assert_int_equal(pt_capture__open(16384, true, why, sizeof(why), &pc), -ENODEV);
		assert_null(pc);
		assert_non_null(strstr(why, "/proc/kcore"));
	}
	sim_reset();
	sim_tree_free();
}

static void test_open_without_pt(void **state)
{
	struct pt_capture *pc = (void *)1;
	char why[512], doctor[512];

	/* a host without the PMU: -ENODEV and the line doctor prints */
	setenv("PTBPF_SYSFS_ROOT", sim_sysfs_tree("nopt"), 1);
	assert_int_equal(pt_capture__open(16384, false, why, sizeof(why), &pc), -ENODEV);
	assert_null(pc);
	pt_pmu_usable(sim_sysfs_tree("nopt"), doctor, sizeof(doctor));
	assert_string_equal(why, doctor);
	unsetenv("PTBPF_SYSFS_ROOT");
}

static const struct pd_record *find_record(const struct capture *cap, uint32_t type, uint32_t pid)
{
	size_t i;

	for (i = 0; i < cap->nr_records; i++) {
		const struct pd_record *r = &cap->records[i];

		if (r->type != type)
			continue;
		if (type == PERF_RECORD_COMM && r->comm.pid == pid)
			return r;
		if (type == PERF_RECORD_MMAP2 && r->mmap.pid == pid)
			return r;
		if (type == PD_RECORD_PTBPF_TRIGGER && r->trigger.pid == pid)
			return r;
	}
	return NULL;
}

/* Every CPU's AUX buffer: `size` bytes of that CPU's run `run` (pt_sim's fill). */
static void check_aux(const struct capture *cap, uint64_t size, int run)
{
	size_t i, j;

	assert_int_equal(cap->nr_aux, online_count());
	for (i = 0; i < cap->nr_aux; i++) {
		const struct pd_auxtrace *a = &cap->aux[i];

		assert_int_equal(a->cpu, i);
		assert_int_equal(a->tid, (uint32_t)-1);
		assert_int_equal(a->size, size);
		for (j = 0; j < a->size; j++)
			assert_int_equal(a->data[j], (uint8_t)(0x10 * (a->cpu + 1) + run) | 1);
	}
}

static char data_path[64];	/* test_fire_snapshot's capture */

/* A fire, by hand: freeze, snapshot with every CPU and the sideband, resume; twice. */
static void test_fire_snapshot(void **state)
{
	struct trigger_rec rec = { .type = REC_TRIGGER, .kind = TRIGGER_UPROBE };
	struct pd_record c = { .type = PERF_RECORD_COMM };
	struct capture *cap = NULL;
	const struct pd_record *r;
	struct pt_capture *pc = NULL;
	char why[512], *path = data_path, exe[PATH_MAX];
	int ncpu = online_count(), cpu;
	ssize_t n;

	if (!need_root())
		skip();
	sim_tree();
	sim_aux_per_run = 3000;
	snprintf(data_path, sizeof(data_path), "/tmp/ptbpf-test-dpt-%d.data", getpid());
	assert_int_equal(pt_capture__open(16384, false, why, sizeof(why), &pc), 0);

	/* sideband on CPU 1's ring: a thread of another process, named, drained in the loop */
	c.comm.pid = 4242;
	c.comm.tid = 4243;
	c.comm.comm = "other";
	c.sample = sim_sample(sim_pt(ncpu > 1 ? 1 : 0), 100);
	sim_write_record(sim_pt(ncpu > 1 ? 1 : 0), &c);
	assert_int_equal(pt_capture__drain(pc), 0);

	rec.pid = getpid();
	rec.tid = getpid();
	rec.ktime_ns = mono_now();
	rec.ip = (uintptr_t)ptbpf_test_pt_fire;
	assert_false(pt_capture__busy(pc, rec.ktime_ns));
	assert_int_equal(pt_capture__take(pc, &rec, "uprobe /proc/self/exe:ptbpf_test_pt_fire",
					  path), 0);
	for (cpu = 0; cpu < ncpu; cpu++) {
		assert_int_equal(sim_pt(cpu)->disables, 1);	/* frozen */
		assert_int_equal(sim_pt(cpu)->enables, 2);	/* and resumed */
	}
	assert_int_equal(alive_pt_events(), ncpu);		/* the rings kept */
	assert_int_equal(pt_capture__snapshots(pc), 1);
	printf("freeze to resume: %.2f ms (%d simulated CPUs, 16 KiB rings)\n",
	       pt_capture__last_ns(pc) / 1e6, ncpu);
	/* a fire from before the snapshot ended is no new capture; a later one is */
	assert_true(pt_capture__busy(pc, rec.ktime_ns));
	assert_false(pt_capture__busy(pc, mono_now()));

	assert_int_equal(perfdata_read(path, &cap), 0);
	check_aux(cap, 3000, 1);
	assert_non_null(find_record(cap, PERF_RECORD_COMM, 4242));	/* the drained sideband */
	/* the fired process from /proc: it started before the rings */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	r = find_record(cap, PERF_RECORD_MMAP2, getpid());
	assert_non_null(r);
	for (; r < cap->records + cap->nr_records; r++)
		if (r->type == PERF_RECORD_MMAP2 && r->mmap.pid == (uint32_t)getpid() &&
		    !strcmp(r->mmap.filename, exe))
			break;
	assert_true(r < cap->records + cap->nr_records);
	assert_non_null(find_record(cap, PERF_RECORD_COMM, getpid()));
	r = find_record(cap, PD_RECORD_PTBPF_TRIGGER, getpid());
	assert_non_null(r);
	assert_int_equal(r->trigger.kind, TRIGGER_UPROBE);
	assert_int_equal(r->trigger.ktime, rec.ktime_ns);
	assert_int_equal(r->trigger.ip, rec.ip);
	assert_string_equal(r->trigger.desc, "uprobe /proc/self/exe:ptbpf_test_pt_fire");
	assert_int_equal(cap->attrs[0].attr.type, SIM_PT_TYPE);
	assert_int_equal(cap->attrs[0].nr_ids, ncpu);
	capture__free(cap);
	cap = NULL;

	/* the next fire: only what each kept ring got since */
	rec.ktime_ns = mono_now();
	assert_false(pt_capture__busy(pc, rec.ktime_ns));
	assert_int_equal(pt_capture__take(pc, &rec, NULL, path), 0);
	assert_int_equal(perfdata_read(path, &cap), 0);
	check_aux(cap, 3000, 2);
	assert_null(find_record(cap, PERF_RECORD_COMM, 4242));	/* given once */
	capture__free(cap);
	unlink(path);

	/* a file that cannot be written: the error, and the rings run on */
	assert_int_equal(pt_capture__take(pc, &rec, NULL, "/nonexistent/dir/x.data"), -ENOENT);
	for (cpu = 0; cpu < ncpu; cpu++)
		assert_int_equal(sim_pt(cpu)->enables, 4);
	pt_capture__free(pc);
	assert_int_equal(alive_pt_events(), 0);
	sim_reset();
	sim_tree_free();
}

/* ---- the whole daemon, in a child, on the simulated kernel ---- */

static char tmp[64];
static pid_t daemon_pid, storm_pid;	/* stopped by the teardown if a check failed */

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *slurp(const char *path)
{
	static char buf[1 << 20];
	FILE *f = fopen(path, "r");
	size_t n = 0;

	buf[0] = '\0';
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	return buf;
}

static bool wait_text(const char *path, const char *text, int secs)
{
	int i;

	for (i = 0; i < secs * 20; i++) {
		if (strstr(slurp(path), text))
			return true;
		usleep(50000);
	}
	return false;
}

/* Files in `dir` ending in `suffix`; the first one's path into `first`. */
static int count_files(const char *dir, const char *suffix, char *first, size_t size)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	while (d && (de = readdir(d))) {
		size_t l = strlen(de->d_name), s = strlen(suffix);

		if (l > s && !strcmp(de->d_name + l - s, suffix) && de->d_name[0] != '.') {
			if (!n++ && first)
				snprintf(first, size, "%s/%s", dir, de->d_name);
		}
	}
	if (d)
		closedir(d);
	return n;
}

/* A metric's value in the textfile, -1 if absent. */
static long long metric(const char *name)
{
	char path[128], *p;

	snprintf(path, sizeof(path), "%s/prom/ptbpf.prom", tmp);
	p = strstr(slurp(path), name);
	return p ? strtoll(p + strlen(name), NULL, 10) : -1;
}

static pid_t start_daemon(void)
{
	char cfg[128], state[128], logp[128];
	pid_t pid;

	snprintf(cfg, sizeof(cfg), "%s/ptbpf.yaml", tmp);
	snprintf(state, sizeof(state), "%s/state", tmp);
	snprintf(logp, sizeof(logp), "%s/daemon.log", tmp);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		char *argv[] = { "ptbpf daemon", "--config", cfg, "--state-dir", state, NULL };
		int fd = open(logp, O_WRONLY | O_CREAT | O_APPEND, 0600);

		prctl(PR_SET_PDEATHSIG, SIGKILL);

		dup2(fd, 2);
		close(fd);
		_exit(cmd_daemon(5, argv));
	}
	return pid;
}

/* `ptbpf daemon status` of the test's daemon into `out`; its exit status. */
static int run_status(const char *out)
{
	char state[128];
	int status;
	pid_t pid;

	snprintf(state, sizeof(state), "%s/state", tmp);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		char *argv[] = { "ptbpf daemon", "status", "--state-dir", state, NULL };
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(fd, 1);
		close(fd);
		fd = cmd_daemon(4, argv);
		fflush(stdout);
		_exit(fd);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Calls the probed function as fast as it can until killed. */
static pid_t start_storm(void)
{
	pid_t pid = fork();
	volatile int x = 0;

	assert_true(pid >= 0);
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			x = ptbpf_test_pt_fire(x);
	}
	return pid;
}

static int stop(pid_t pid)
{
	int status;

	kill(pid, SIGTERM);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

/*
 * A pt rule without a pid on a (simulated) PT host: armed on the system-wide rings, in
 * the trigger plane with the events-only rules; a process calling the probed function
 * ~10^5 times a second gives exactly max_per_hour captures, each a snapshot of every CPU
 * with the fired process's threads and mappings, spooled with its manifest; every other
 * fire is counted with its reason; SIGTERM leaves the daemon cleanly.
 */
static void test_daemon_pt_rule(void **state)
{
	char exe[PATH_MAX], text[3 * PATH_MAX + 512], path[PATH_MAX + 64], logp[128], cmd[256];
	struct capture *cap = NULL;
	const struct pd_record *r;
	long long captured, fires, snap, budget;
	pid_t daemon, storm;
	int status, i;
	ssize_t n;

	if (!need_root())
		skip();
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	sim_tree();
	sim_aux_per_run = 2048;
	snprintf(tmp, sizeof(tmp), "/tmp/ptbpf-test-dpt-%d", getpid());
	snprintf(cmd, sizeof(cmd), "rm -rf %s && mkdir -p %s/prom && chmod 0755 %s", tmp, tmp,
		 tmp);
	assert_int_equal(system(cmd), 0);
	snprintf(text, sizeof(text),
		 "spool: {dir: %s/spool, max_bytes: 100M, max_files: 100}\n"
		 "metrics: {textfile_dir: %s/prom}\n"
		 "rules:\n"
		 "  - name: pt-wide\n"
		 "    match: {binary: %s}\n"
		 "    trigger: {uprobe: \"%s:ptbpf_test_pt_fire\"}\n"
		 "    capture: {backend: pt, buffer_size: 16K}\n"
		 "    budget: {max_per_hour: 3}\n", tmp, tmp, exe, exe);
	snprintf(path, sizeof(path), "%s/ptbpf.yaml", tmp);
	write_file(path, text);
	chmod(path, 0644);
	snprintf(logp, sizeof(logp), "%s/daemon.log", tmp);

	daemon = daemon_pid = start_daemon();
	if (!wait_text(logp, "\"event\":\"ready\"", 30))
		fail_msg("the daemon did not get ready:\n%s", slurp(logp));
	/* armed, not "unavailable: system-wide pt capture is not implemented" */
	if (!strstr(slurp(logp), "\"rule\":\"pt-wide\",\"event\":\"armed\""))
		fail_msg("the pt rule is not armed:\n%s", slurp(logp));
	assert_non_null(strstr(slurp(logp), "pt capture on the system-wide rings"));
	assert_non_null(strstr(slurp(logp), "\"event\":\"pt_rings\""));

	storm = storm_pid = start_storm();
	snprintf(path, sizeof(path), "%s/spool/pt-wide", tmp);
	for (i = 0; i < 300 && count_files(path, ".perf.data.zst", NULL, 0) < 3; i++)
		usleep(100000);
	sleep(2);	/* time for a fourth, which must not come */
	stop(storm);
	storm_pid = 0;
	if (count_files(path, ".perf.data.zst", NULL, 0) != 3)
		fail_msg("%d captures, not 3:\n%s", count_files(path, ".perf.data.zst", NULL, 0),
			 slurp(logp));
	assert_int_equal(count_files(path, ".json", NULL, 0), 3);

	/* the metrics: 3 spooled, every other fire suppressed with its reason */
	snprintf(text, sizeof(text), "%s/prom/ptbpf.prom", tmp);
	for (i = 0; i < 100 && metric("ptbpf_captures_total{rule=\"pt-wide\",result=\"spooled\"} ")
	     != 3; i++)
		usleep(100000);
	captured = metric("ptbpf_captures_total{rule=\"pt-wide\",result=\"spooled\"} ");
	fires = metric("ptbpf_rule_fires_total{rule=\"pt-wide\"} ");
	snap = metric("ptbpf_captures_suppressed_total{rule=\"pt-wide\",reason=\"snapshot\"} ");
	budget = metric("ptbpf_captures_suppressed_total{rule=\"pt-wide\",reason=\"budget\"} ");
	printf("pt-wide: %lld fires, %lld captures, suppressed: %lld while a snapshot was taken, "
	       "%lld over budget\n", fires, captured, snap, budget);
	assert_int_equal(captured, 3);
	assert_true(snap >= 0 && budget > 0);
	assert_true(fires > 3);
	assert_int_equal(metric("ptbpf_captures_total{rule=\"pt-wide\",result=\"failed\"} "), 0);
	assert_int_equal(metric("ptbpf_rules{state=\"armed\"} "), 1);

	/* one capture: every CPU's ring, the fired process's mappings, the trigger */
	assert_int_equal(count_files(path, ".perf.data.zst", text, sizeof(text)), 3);
	assert_int_equal(perfdata_read(text, &cap), 0);
	assert_int_equal(cap->nr_aux, online_count());
	for (i = 0; i < (int)cap->nr_aux; i++)
		assert_true(cap->aux[i].size > 0 && cap->aux[i].size <= 16384);
	r = find_record(cap, PD_RECORD_PTBPF_TRIGGER, storm);
	assert_non_null(r);
	assert_int_equal(r->trigger.kind, TRIGGER_UPROBE);
	assert_int_equal(r->trigger.tid, storm);
	for (i = 0; i < (int)cap->nr_records; i++)
		if (cap->records[i].type == PERF_RECORD_MMAP2 &&
		    cap->records[i].mmap.pid == (uint32_t)storm &&
		    !strcmp(cap->records[i].mmap.filename, exe))
			break;
	assert_true(i < (int)cap->nr_records);
	capture__free(cap);
	/* its manifest names the fired process */
	count_files(path, ".json", text, sizeof(text));
	snprintf(cmd, sizeof(cmd), "\"pid\":%d,", storm);
	if (!strstr(slurp(text), cmd)) {
		snprintf(cmd, sizeof(cmd), "\"pid\": %d,", storm);
		assert_non_null(strstr(slurp(text), cmd));
	}

	/* fire -> spooled of each capture, as the daemon logged it */
	{
		const char *log, *p = slurp(logp);

		printf("pt-wide: fire -> spooled");
		while ((p = strstr(p, "\"fire_to_spooled_ns\":"))) {
			p += strlen("\"fire_to_spooled_ns\":");
			printf(" %.2f ms", strtoull(p, NULL, 10) / 1e6);
		}
		printf("; frozen (freeze to resume)");
		for (log = p = slurp(logp); (p = strstr(p, " ms from freeze to resume")); p++) {
			const char *b = p;

			while (b > log && b[-1] != ' ')
				b--;
			printf(" %.*s ms", (int)(p - b), b);
		}
		printf(" (%d simulated CPUs, 16 KiB rings, the daemon's PT path without the "
		       "hardware)\n", online_count());
	}

	/* `ptbpf daemon status`: the rule armed, the rings and their snapshots */
	snprintf(path, sizeof(path), "%s/status.txt", tmp);
	assert_int_equal(run_status(path), 0);
	if (!strstr(slurp(path), "rule pt-wide: armed") ||
	    !strstr(slurp(path), "system-wide PT rings: pt: ") ||
	    !strstr(slurp(path), "; 3 snapshots"))
		fail_msg("status:\n%s", slurp(path));

	/* a reload without the pt rule: the rings go, the plane runs on */
	snprintf(text, sizeof(text),
		 "spool: {dir: %s/spool, max_bytes: 100M, max_files: 100}\n"
		 "metrics: {textfile_dir: %s/prom}\n"
		 "rules:\n"
		 "  - name: feed\n"
		 "    match: {binary: %s}\n"
		 "    trigger: {uprobe: \"%s:ptbpf_test_pt_fire\"}\n"
		 "    capture: {backend: events-only}\n", tmp, tmp, exe, exe);
	snprintf(path, sizeof(path), "%s/ptbpf.yaml", tmp);
	write_file(path, text);
	kill(daemon, SIGHUP);
	if (!wait_text(logp, "no pt rule armed: the PT rings are closed", 30))
		fail_msg("the rings stay after the pt rule went:\n%s", slurp(logp));

	status = stop(daemon);
	daemon_pid = 0;
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_non_null(strstr(slurp(logp), "no pt rule armed") ?: strstr(slurp(logp),
		"\"event\":\"stopping\""));
}

/* After a failed check too: no process, event, tree or file of the test is left. */
static int teardown(void **state)
{
	char cmd[128];

	if (storm_pid > 0) {
		kill(storm_pid, SIGKILL);
		waitpid(storm_pid, NULL, 0);
	}
	if (daemon_pid > 0) {
		kill(daemon_pid, SIGKILL);
		waitpid(daemon_pid, NULL, 0);
	}
	storm_pid = daemon_pid = 0;
	if (data_path[0])
		unlink(data_path);
	if (tmp[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
		if (system(cmd))
			return -1;
		tmp[0] = '\0';
	}
	sim_reset();
	if (sim_root[0] && getenv("PTBPF_SYSFS_ROOT"))
		sim_tree_free();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_rings_per_cpu, teardown),
		cmocka_unit_test_teardown(test_open_without_pt, teardown),
		cmocka_unit_test_teardown(test_fire_snapshot, teardown),
		cmocka_unit_test_teardown(test_daemon_pt_rule, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
