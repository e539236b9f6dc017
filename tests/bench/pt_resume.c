// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The pt backend's resume() after a snapshot, on a simulated 256-CPU host (issue 20: the
 * goal is under 50 ms). The backend's perf system calls (pt_sys_*, weak in pt_pmu.c) are
 * replaced here by a lean kernel: each event is an eventfd, each PT event's user page,
 * data ring and AUX area a memfd, whose AUX part is zeroed at open as the kernel's
 * rb_alloc_aux() does (__GFP_ZERO). The CPUs come from a fake sysfs tree (a copy of
 * tests/data/sysfs-skylake with devices/system/cpu/online "0-255").
 *
 * Figures: resume() after a snapshot (the rings kept and re-enabled) and, as the
 * baseline, what resume() did before: close every group and open it again (what it still
 * does for a ring it has no reference for, as before the first snapshot), each the best of
 * a few rounds. The simulated ioctls cost no system call: on a real host, add one
 * PERF_EVENT_IOC_ENABLE (a cross-CPU call) per CPU to the first figure. Needs root (the
 * PMU check wants CAP_PERFMON).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "backend.h"
#include "pt_pmu.h"

#define NR_CPUS 256
#define SIM_TYPE 0x7fffff02u
#define SIM_PAGE 4096ul
#define SIM_DATA (256 * SIM_PAGE)	/* the backend's DATA_PAGES */
#define AUX_SIZE (1ul << 20)
#define MAX_EVENTS 2048		/* fds below this are simulated events */
#define ROUNDS 5
#define BASELINE_ROUNDS 2		/* slow: every ring is zeroed again */
#define GOAL_MS 50.0

struct sim_event {
	int fd, memfd;
	uint8_t *map;			/* user page, data ring, AUX */
};

static struct sim_event sim[MAX_EVENTS];

static struct sim_event *sim_by_fd(int fd)
{
	if (fd < 0 || fd >= MAX_EVENTS || !sim[fd].map)
		return NULL;
	return &sim[fd];
}

int pt_sys_perf_event_open(struct perf_event_attr *attr, int pid, int cpu, int group_fd)
{
	struct perf_event_mmap_page *pc;
	struct sim_event *e;
	int fd;

	if (attr->type != SIM_TYPE)
		return syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC);
	fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fd < 0 || fd >= MAX_EVENTS) {
		if (fd >= 0)
			close(fd);
		errno = EMFILE;
		return -1;
	}
	e = &sim[fd];
	e->fd = fd;
	e->memfd = memfd_create("sim-pt", MFD_CLOEXEC);
	if (e->memfd < 0 || ftruncate(e->memfd, SIM_PAGE + SIM_DATA + AUX_SIZE))
		abort();
	e->map = mmap(NULL, SIM_PAGE + SIM_DATA + AUX_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		      e->memfd, 0);
	if (e->map == MAP_FAILED)
		abort();
	/* rb_alloc_aux(): the AUX pages come zeroed */
	memset(e->map + SIM_PAGE + SIM_DATA, 0, AUX_SIZE);
	pc = (void *)e->map;
	pc->data_offset = SIM_PAGE;
	pc->data_size = SIM_DATA;
	pc->cap_user_time_zero = 1;
	pc->time_shift = 31;
	pc->time_mult = 0x2aaaaaab;
	return fd;
}

void *pt_sys_mmap(size_t len, int prot, int fd, long offset)
{
	struct sim_event *e = sim_by_fd(fd);

	if (!e)
		return mmap(NULL, len, prot, MAP_SHARED, fd, offset);
	return mmap(NULL, len, prot, MAP_SHARED, e->memfd, offset);
}

int pt_sys_ioctl(int fd, unsigned long request, unsigned long arg)
{
	struct sim_event *e = sim_by_fd(fd);

	if (!e)
		return ioctl(fd, request, arg);
	switch (request) {
	case PERF_EVENT_IOC_ID:
		*(uint64_t *)arg = 1000 + fd;
		return 0;
	case PERF_EVENT_IOC_ENABLE:
	case PERF_EVENT_IOC_DISABLE:
	case PERF_EVENT_IOC_SET_FILTER:
		return 0;
	}
	errno = ENOTTY;
	return -1;
}

/* close() of a simulated event frees its memory, as the kernel frees the rings */
static void sim_forget_closed(void)
{
	for (int fd = 0; fd < MAX_EVENTS; fd++) {
		if (!sim[fd].map || fcntl(fd, F_GETFD) >= 0)
			continue;
		munmap(sim[fd].map, SIM_PAGE + SIM_DATA + AUX_SIZE);
		close(sim[fd].memfd);
		memset(&sim[fd], 0, sizeof(sim[fd]));
	}
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * What the simulator leaves out: one real PERF_EVENT_IOC_ENABLE, measured on a CPU-wide
 * software event of the last CPU (a cross-CPU call like the PT event's), in ms; < 0 if
 * no event could be opened.
 */
static double real_enable_ms(void)
{
	struct perf_event_attr a = { .size = sizeof(a), .type = PERF_TYPE_SOFTWARE,
				     .config = PERF_COUNT_SW_DUMMY, .disabled = 1 };
	long cpu = sysconf(_SC_NPROCESSORS_ONLN) - 1;
	double best = 1e9, t;
	int fd, i;

	fd = syscall(SYS_perf_event_open, &a, -1, cpu > 0 ? cpu : 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -1;
	for (i = 0; i < 200; i++) {
		t = now_ms();
		ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
		t = now_ms() - t;
		ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
		if (t < best)
			best = t;
	}
	close(fd);
	return best;
}

static int make_tree(char *root, size_t size)
{
	const char *top = getenv("TOP");
	char cmd[3 * PATH_MAX];
	FILE *f;

	snprintf(root, size, "/tmp/ptbpf-bench-pt-resume-%d", getpid());
	snprintf(cmd, sizeof(cmd), "rm -rf %s && cp -r %s/tests/data/sysfs-skylake %s && "
		 "mkdir -p %s/devices/system/cpu", root, top && *top ? top : ".", root, root);
	if (system(cmd))
		return -1;
	snprintf(cmd, sizeof(cmd), "%s/bus/event_source/devices/intel_pt/type", root);
	f = fopen(cmd, "w");
	if (!f)
		return -1;
	fprintf(f, "%u\n", SIM_TYPE);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s/devices/system/cpu/online", root);
	f = fopen(cmd, "w");
	if (!f)
		return -1;
	fprintf(f, "0-%d\n", NR_CPUS - 1);
	fclose(f);
	return 0;
}

int main(void)
{
	struct capture_opts o = { .buffer_size = AUX_SIZE, .psb_period = -1 };
	double resume_ms = 1e9, reopen_ms = 1e9, enable_ms, t;
	struct backend *b = NULL;
	struct capture *cap;
	char root[128], cmd[256];
	int round, rc = 1;

	if (geteuid()) {
		printf("pt_resume: skipped: needs root (CAP_PERFMON for the PMU check)\n");
		return 0;
	}
	if (make_tree(root, sizeof(root))) {
		printf("pt_resume: cannot make the fake sysfs tree under /tmp\n");
		return 1;
	}
	setenv("PTBPF_SYSFS_ROOT", root, 1);
	if (pt_backend_ops.open(&o, NULL, &b) || pt_backend_ops.start(b))
		goto out;
	/*
	 * The baseline first: before any snapshot no ring has a reference to tell its new
	 * bytes by, so resume() closes and reopens every group, as it always did before.
	 */
	for (round = 0; round < BASELINE_ROUNDS; round++) {
		if (pt_backend_ops.freeze(b))
			goto out;
		t = now_ms();
		if (pt_backend_ops.resume(b))
			goto out;
		t = now_ms() - t;
		sim_forget_closed();
		if (t < reopen_ms)
			reopen_ms = t;
	}
	for (round = 0; round < ROUNDS; round++) {
		cap = capture__new();
		if (!cap || pt_backend_ops.freeze(b) || pt_backend_ops.snapshot(b, cap))
			goto out;
		capture__free(cap);
		t = now_ms();
		if (pt_backend_ops.resume(b))
			goto out;
		t = now_ms() - t;
		if (t < resume_ms)
			resume_ms = t;
	}
	printf("pt resume after a snapshot, %d CPUs, %lu KiB rings (simulated kernel, best of "
	       "%d):\n", NR_CPUS, AUX_SIZE >> 10, ROUNDS);
	printf("  resume (rings kept, re-enabled)        %8.3f ms  (goal < %.0f ms: %s)\n",
	       resume_ms, GOAL_MS, resume_ms < GOAL_MS ? "met" : "NOT met");
	enable_ms = real_enable_ms();
	if (enable_ms >= 0)
		printf("  + %d real PERF_EVENT_IOC_ENABLE (%.1f us each here)  %8.3f ms  (goal: %s)\n",
		       NR_CPUS, enable_ms * 1e3, resume_ms + NR_CPUS * enable_ms,
		       resume_ms + NR_CPUS * enable_ms < GOAL_MS ? "met" : "NOT met");
	printf("  baseline: close + reopen every group   %8.3f ms\n", reopen_ms);
	t = resume_ms + NR_CPUS * (enable_ms > 0 ? enable_ms : 0);
	printf("  ratio baseline / resume                %8.0fx\n", reopen_ms / (t > 0.001 ? t : 0.001));
	rc = t < GOAL_MS ? 0 : 1;
out:
	if (rc && resume_ms >= 1e9)
		printf("pt_resume: the simulated backend failed\n");
	pt_backend_ops.close(b);
	sim_forget_closed();
	unsetenv("PTBPF_SYSFS_ROOT");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd))
		rc = 1;
	return rc;
}
