/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A simulated kernel for the pt backend, shared by the unit tests that run it on this
 * PT-less host (test_pt_backend.c, test_daemon_pt.c).
 *
 * The backend's perf system calls (pt_sys_*, weak in user/pt/pt_pmu.c) are replaced by
 * pt_sim.c, linked into every unit test. PT events of type SIM_PT_TYPE, and members
 * joined to them, are simulated: the event fd is an eventfd (so epoll works), its user
 * page, data ring and AUX area live in a memfd the test maps too, IOC_DISABLE publishes
 * a prepared aux_head and writes PERF_RECORD_AUX as perf_aux_output_end() does. Every
 * other call goes to the real kernel, so a test that does not use the PMU of type
 * SIM_PT_TYPE (sim_tree()) sees no difference.
 *
 * What the kernel refuses, the simulator refuses the same way (each with its source):
 * - a CPU-wide event on no CPU (pid -1, cpu -1): -EINVAL (perf_event_open());
 * - intel_pt is an exclusive PMU (PERF_PMU_CAP_EXCLUSIVE): a second PT event on a CPU
 *   that has one, and a CPU-wide PT event while a per-task one exists (or the reverse):
 *   -EBUSY (exclusive_event_installable(), exclusive_event_init() in kernel/events/core.c);
 * - a group member on another CPU or task than its leader: -EINVAL;
 * - an aux_pause member before Linux 6.13 (sim_refuse_aux_pause): -EINVAL;
 * - address filters as the kernel takes them (sim_set_filter() in pt_sim.c).
 */
#ifndef PTBPF_TESTS_PT_SIM_H
#define PTBPF_TESTS_PT_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

#include "perfdata.h"

#define SIM_PT_TYPE 0x7fffff01u
#define SIM_MAX 128
#define SIM_PAGE 4096ul
#define SIM_DATA (256 * SIM_PAGE)
#define SIM_AUX_MAX (1ul << 20)

struct sim_event {
	bool used, pt;
	int fd, memfd;
	long long efd_id;		/* its eventfd's id: tells it from a reused fd number */
	struct perf_event_attr attr;
	int pid, cpu, group_fd;
	uint64_t id;
	int enables, disables;
	char filter[256];
	uint8_t *map;			/* the test's view: user page, data ring, AUX */
	size_t aux_len;			/* what the backend mapped */
	int aux_prot;
	uint64_t pending_head;		/* aux_head IOC_DISABLE publishes */
	uint64_t aux_flags;		/* extra PERF_AUX_FLAG_* of that AUX record */
	uint64_t count;			/* what read() returns: a gate's let-through hits */
};


extern struct sim_event sim[SIM_MAX];
extern int nr_sim;
extern bool sim_refuse_aux_pause;	/* a kernel before 6.13: no aux_pause members */
extern bool sim_before_5_18;		/* address filters as before Linux 5.18 */
extern char sim_root[128];		/* the sysfs tree sim_tree() made */
/*
 * Bytes "PT wrote" into a PT event's AUX ring between an enable and the disable that
 * publishes them (0: none, the test writes the ring itself): each disable fills that
 * many bytes from the pending head, CPU- and run-specific, never 0.
 */
extern size_t sim_aux_per_run;

/* tests/data/sysfs-NAME (under $TOP when set). */
const char *sim_sysfs_tree(const char *name);
/* The simulated event behind `fd` (the newest with that number), or NULL. */
struct sim_event *sim_by_fd(int fd);
/* The newest PT event of a CPU. */
struct sim_event *sim_pt(int cpu);
/* Whether the backend still holds the event (its fd is open and is that event's). */
bool sim_alive(const struct sim_event *e);
struct perf_event_mmap_page *sim_pc(struct sim_event *e);
/* What the kernel does to the data ring: copy a record at data_head. */
void sim_write_record(struct sim_event *e, const struct pd_record *r);
struct pd_sample_id sim_sample(struct sim_event *e, uint64_t time);
/* Forget every simulated event; the refusal switches back to a current kernel. */
void sim_reset(void);
/* A Skylake PMU of type SIM_PT_TYPE in a temporary tree, as PTBPF_SYSFS_ROOT. */
void sim_tree(void);
void sim_tree_free(void);

#endif /* PTBPF_TESTS_PT_SIM_H */
