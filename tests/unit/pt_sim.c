// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The simulated kernel of the pt backend (pt_sim.h). */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>

#include "pt_pmu.h"
#include "pt_sim.h"

const char *sim_sysfs_tree(const char *name)
{
	static char path[PATH_MAX];
	const char *top = getenv("TOP");

	snprintf(path, sizeof(path), "%s/tests/data/sysfs-%s", top && *top ? top : ".", name);
	return path;
}

/* The eventfd's id (/proc/self/fdinfo, Linux 6.0+), -1 if it is not an eventfd. */
static long long eventfd_id(int fd)
{
	char path[64], line[128];
	long long id = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "eventfd-id: %lld", &id) == 1)
			break;
	if (f)
		fclose(f);
	return id;
}

struct sim_event sim[SIM_MAX];
int nr_sim;
bool sim_refuse_aux_pause;

struct sim_event *sim_by_fd(int fd)
{
	int i;

	for (i = nr_sim - 1; i >= 0; i--)
		if (sim[i].used && sim[i].fd == fd)
			return &sim[i];
	return NULL;
}

/* The newest PT event of a CPU. */
struct sim_event *sim_pt(int cpu)
{
	int i;

	for (i = nr_sim - 1; i >= 0; i--)
		if (sim[i].pt && sim[i].cpu == cpu)
			return &sim[i];
	return NULL;
}

bool sim_alive(const struct sim_event *e)
{
	return e->used && e->fd >= 0 && eventfd_id(e->fd) == e->efd_id;
}

/*
 * intel_pt is an exclusive PMU: on a CPU, one PT event at a time
 * (exclusive_event_installable()), and never CPU-wide and per-task ones at once
 * (exclusive_event_init(): pmu->exclusive_cnt counts one kind up, the other down).
 */
static bool sim_exclusive_busy(int pid, int cpu)
{
	int i;

	for (i = 0; i < nr_sim; i++) {
		const struct sim_event *e = &sim[i];

		if (e->attr.type != SIM_PT_TYPE || !sim_alive(e))
			continue;
		if ((e->pid == -1) != (pid == -1) || (pid == -1 && e->cpu == cpu))
			return true;
	}
	return false;
}

struct perf_event_mmap_page *sim_pc(struct sim_event *e)
{
	return (void *)e->map;
}

int pt_sys_perf_event_open(struct perf_event_attr *attr, int pid, int cpu, int group_fd)
{
	struct sim_event *e, *leader = group_fd >= 0 ? sim_by_fd(group_fd) : NULL;
	struct perf_event_mmap_page *pc;

	if (attr->type != SIM_PT_TYPE && !leader)
		return syscall(SYS_perf_event_open, attr, pid, cpu, group_fd,
			       PERF_FLAG_FD_CLOEXEC);
	/*
	 * perf_event_open(): a group lives on one CPU, in one context: a per-task member
	 * (a uprobe scoped to the target) cannot join a CPU-wide PT leader.
	 */
	if (leader && (leader->cpu != cpu || leader->pid != pid)) {
		errno = EINVAL;
		return -1;
	}
	if (leader && (pt_attr_aux_action(attr) & PT_AUX_PAUSE) && sim_refuse_aux_pause) {
		errno = EINVAL;		/* a kernel before 6.13: reserved bits */
		return -1;
	}
	/* perf_event_open(): "pid == -1 && cpu == -1" is invalid */
	if (pid == -1 && cpu == -1) {
		errno = EINVAL;
		return -1;
	}
	if (attr->type == SIM_PT_TYPE && sim_exclusive_busy(pid, cpu)) {
		errno = EBUSY;
		return -1;
	}
	assert_true(nr_sim < SIM_MAX);
	e = &sim[nr_sim++];
	memset(e, 0, sizeof(*e));
	e->used = true;
	/* a PT event of the backend's; pt_open_probe_event()'s probes sample nothing */
	e->pt = attr->type == SIM_PT_TYPE && attr->sample_type;
	e->attr = *attr;
	e->pid = pid;
	e->cpu = cpu;
	e->group_fd = group_fd;
	e->id = 5000 + nr_sim;
	e->memfd = -1;
	e->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	e->efd_id = eventfd_id(e->fd);
	if (!e->pt)
		return e->fd;
	e->memfd = memfd_create("sim-pt", MFD_CLOEXEC);
	assert_int_equal(ftruncate(e->memfd, SIM_PAGE + SIM_DATA + SIM_AUX_MAX), 0);
	e->map = mmap(NULL, SIM_PAGE + SIM_DATA + SIM_AUX_MAX, PROT_READ | PROT_WRITE,
		      MAP_SHARED, e->memfd, 0);
	assert_true(e->map != MAP_FAILED);
	pc = sim_pc(e);
	pc->data_offset = SIM_PAGE;
	pc->data_size = SIM_DATA;
	pc->lock = 2;
	pc->cap_user_time_zero = 1;
	pc->time_shift = 31;
	pc->time_mult = 0x2aaaaaab;
	pc->time_zero = 0x1234567;
	return e->fd;
}

void *pt_sys_mmap(size_t len, int prot, int fd, long offset)
{
	struct sim_event *e = sim_by_fd(fd);

	if (!e)
		return mmap(NULL, len, prot, MAP_SHARED, fd, offset);
	if (!e->pt || (offset && ((size_t)offset != SIM_PAGE + SIM_DATA || len > SIM_AUX_MAX)) ||
	    (!offset && len != SIM_PAGE + SIM_DATA)) {
		errno = EINVAL;
		return MAP_FAILED;
	}
	if (offset) {
		/* perf_mmap() checks the user page describes this mapping */
		assert_int_equal(sim_pc(e)->aux_offset, offset);
		assert_int_equal(sim_pc(e)->aux_size, len);
		e->aux_len = len;
		e->aux_prot = prot;
	}
	return mmap(NULL, len, prot, MAP_SHARED, e->memfd, offset);
}

/* read() of a simulated event: its count (perf_read() without read_format). */
ssize_t pt_sys_read(int fd, void *buf, size_t len)
{
	struct sim_event *e = sim_by_fd(fd);

	if (!e)
		return read(fd, buf, len);
	if (len < sizeof(e->count)) {
		errno = ENOSPC;
		return -1;
	}
	memcpy(buf, &e->count, sizeof(e->count));
	return sizeof(e->count);
}

/* What the kernel does to the data ring: copy a record at data_head. */
void sim_write_record(struct sim_event *e, const struct pd_record *r)
{
	struct perf_event_mmap_page *pc = sim_pc(e);
	uint8_t buf[512];
	int n = pd_record_encode(r, PT_SAMPLE_TYPE, true, buf, sizeof(buf));
	uint64_t i;

	assert_true(n > 0);
	for (i = 0; i < (uint64_t)n; i++)
		e->map[SIM_PAGE + ((pc->data_head + i) % SIM_DATA)] = buf[i];
	pc->data_head += n;
}

struct pd_sample_id sim_sample(struct sim_event *e, uint64_t time)
{
	return (struct pd_sample_id){ .pid = 1, .tid = 1, .time = time, .cpu = e->cpu,
				      .id = e->id, .valid = PT_SAMPLE_TYPE };
}

/*
 * PERF_EVENT_IOC_SET_FILTER on a PT event, with the kernel's rules: "ACTION RANGE" pairs
 * separated by spaces, commas or newlines (perf_event_parse_addr_filter() in
 * kernel/events/core.c), RANGE "0xADDR/0xSIZE[@FILE]".
 * - A file-based range on a CPU-wide event (pid -1): -EOPNOTSUPP, "only per-task events".
 * - An address range before Linux 5.18 (sim_before_5_18): -EINVAL with exclude_kernel
 *   (core.c, until "perf/core: Allow kernel address filter when not filtering the
 *   kernel"), and -EINVAL for a user address (pt_event_addr_filters_validate() in
 *   arch/x86/events/intel/pt.c checked valid_kernel_ip() until "Relax address filter
 *   validation"); both changes came in 5.18.
 * - "filter" needs a size (core.c); "start" and more ranges than caps/num_address_ranges
 *   (2 on the Skylake tree) are -EOPNOTSUPP (pt_event_addr_filters_validate()).
 */
bool sim_before_5_18;

static int sim_set_filter(struct sim_event *e, const char *arg)
{
	char copy[512], *tok, *save = NULL;
	bool want_action = true, start = false;
	int ranges = 0;

	snprintf(copy, sizeof(copy), "%s", arg);
	for (tok = strtok_r(copy, " ,\n", &save); tok; tok = strtok_r(NULL, " ,\n", &save)) {
		unsigned long long addr, size = 0;
		char *at = strchr(tok, '@');

		if (want_action) {
			if (strcmp(tok, "filter") && strcmp(tok, "start") && strcmp(tok, "stop"))
				goto inval;
			start = !strcmp(tok, "start");
			want_action = false;
			continue;
		}
		want_action = true;
		if (sscanf(tok, "%llx/%llx", &addr, &size) < 1 || !size)
			goto inval;
		if (at && e->pid == -1) {
			errno = EOPNOTSUPP;
			return -1;
		}
		if (!at && sim_before_5_18 &&
		    (e->attr.exclude_kernel || addr < 0xffff800000000000ull))
			goto inval;
		if (start || ++ranges > 2) {
			errno = EOPNOTSUPP;
			return -1;
		}
	}
	if (!want_action)
		goto inval;
	snprintf(e->filter, sizeof(e->filter), "%s", arg);
	return 0;
inval:
	errno = EINVAL;
	return -1;
}

size_t sim_aux_per_run;

int pt_sys_ioctl(int fd, unsigned long request, unsigned long arg)
{
	struct sim_event *e = sim_by_fd(fd);
	struct pd_record aux = { .type = PERF_RECORD_AUX };
	size_t i;

	if (!e)
		return ioctl(fd, request, arg);
	switch (request) {
	case PERF_EVENT_IOC_ID:
		*(uint64_t *)arg = e->id;
		return 0;
	case PERF_EVENT_IOC_ENABLE:
		e->enables++;
		return 0;
	case PERF_EVENT_IOC_DISABLE:
		e->disables++;
		/* PT ran since the enable: sim_aux_per_run bytes more in the ring */
		for (i = 0; sim_aux_per_run && e->aux_len && i < sim_aux_per_run; i++)
			e->map[SIM_PAGE + SIM_DATA + (e->pending_head + i) % e->aux_len] =
				(uint8_t)(0x10 * (e->cpu + 1) + e->disables) | 1;
		if (e->aux_len)
			e->pending_head += sim_aux_per_run;
		/* pt_event_stop(PERF_EF_UPDATE) -> perf_aux_output_end() */
		__atomic_store_n(&sim_pc(e)->aux_head, e->pending_head, __ATOMIC_RELEASE);
		aux.aux.aux_offset = e->pending_head;
		aux.aux.aux_size = e->aux_len;
		aux.aux.flags = PERF_AUX_FLAG_OVERWRITE | e->aux_flags;
		aux.sample = sim_sample(e, 900 + e->cpu);
		sim_write_record(e, &aux);
		return 0;
	case PERF_EVENT_IOC_SET_FILTER:
		return sim_set_filter(e, (const char *)arg);
	}
	errno = ENOTTY;
	return -1;
}

void sim_reset(void)
{
	int i;

	for (i = 0; i < nr_sim; i++) {
		if (sim[i].map)
			munmap(sim[i].map, SIM_PAGE + SIM_DATA + SIM_AUX_MAX);
		if (sim[i].memfd >= 0)
			close(sim[i].memfd);
	}
	memset(sim, 0, sizeof(sim));
	nr_sim = 0;
	sim_refuse_aux_pause = false;
	sim_before_5_18 = false;
	sim_aux_per_run = 0;
}

char sim_root[128];

/* A Skylake PMU of type SIM_PT_TYPE (the tree sysfs-skylake with another type file). */
void sim_tree(void)
{
	char cmd[2 * PATH_MAX];
	FILE *f;

	snprintf(sim_root, sizeof(sim_root), "/tmp/ptbpf-test-sim-%d", getpid());
	snprintf(cmd, sizeof(cmd), "rm -rf %s && cp -r %s %s", sim_root, sim_sysfs_tree("skylake"),
		 sim_root);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "%s/bus/event_source/devices/intel_pt/type", sim_root);
	f = fopen(cmd, "w");
	fprintf(f, "%u\n", SIM_PT_TYPE);
	fclose(f);
	setenv("PTBPF_SYSFS_ROOT", sim_root, 1);
}

void sim_tree_free(void)
{
	char cmd[256];

	unsetenv("PTBPF_SYSFS_ROOT");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", sim_root);
	assert_int_equal(system(cmd), 0);
}
