/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The intel_pt PMU as sysfs describes it: type, config fields (format/), capabilities
 * (caps/) and timing ratios (notes/kernel-pt-abi.md §1). One parser for `ptbpf doctor`
 * and the pt backend. The sysfs root is injectable (PTBPF_SYSFS_ROOT) so tests run on
 * fake trees (tests/data/sysfs-NAME/).
 */
#ifndef PTBPF_PT_PMU_H
#define PTBPF_PT_PMU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <linux/perf_event.h>

#include "cli.h"
#include "perfdata.h"

/* The PMU directory below the sysfs root. */
#define PT_PMU_SUBDIR "bus/event_source/devices/intel_pt"

struct pt_pmu;

/* Which bits of which config word a file in format/ names ("config:14-17", "config1:0"). */
struct pt_format_field {
	int word;		/* 0: attr.config, 1: attr.config1, 2: attr.config2 */
	uint64_t mask;		/* the field's bits in that word; the value fills them low first */
};

/* $PTBPF_SYSFS_ROOT when set and not empty, else "/sys". */
const char *pt_sysfs_root(void);

/*
 * Read <sysfs_root>/bus/event_source/devices/intel_pt. Returns 0, -ENOENT when there is
 * no such PMU, -EINVAL when its type or a format file cannot be parsed, -ENOMEM.
 */
int pt_pmu__new(const char *sysfs_root, struct pt_pmu **out);
void pt_pmu__free(struct pt_pmu *pmu);

/* The PMU's directory, for messages. */
const char *pt_pmu__dir(const struct pt_pmu *pmu);
/* perf_event_attr.type of the PMU. */
uint32_t pt_pmu__type(const struct pt_pmu *pmu);
/* caps/NAME (the files hold hex numbers). 0, -ENOENT if the file is absent, -EINVAL. */
int pt_pmu__cap(const struct pt_pmu *pmu, const char *name, uint32_t *val);
/* format/NAME. 0, -ENOENT if the kernel has no such field, -EINVAL. */
int pt_pmu__format(const struct pt_pmu *pmu, const char *name, struct pt_format_field *f);
/* max_nonturbo_ratio (MSR_PLATFORM_INFO[15:8]). 0 or -ENOENT. */
int pt_pmu__max_nonturbo_ratio(const struct pt_pmu *pmu, uint32_t *ratio);
/* tsc_art_ratio "num:den" = CPUID.0x15 EBX:EAX; 0:0 means not enumerated. 0 or -ENOENT. */
int pt_pmu__tsc_art_ratio(const struct pt_pmu *pmu, uint32_t *num, uint32_t *den);

/* Parse the text of one file in format/. 0 or -EINVAL. */
int pt_format_parse(const char *text, struct pt_format_field *f);
/*
 * Put `value` into the field's bits of config[f->word] (bits of the value go to the
 * mask's bits, lowest first, as perf does). 0, -ERANGE if the value has more bits than
 * the field, -EINVAL.
 */
int pt_format_set(const struct pt_format_field *f, uint64_t value, uint64_t config[3]);
/* The field's value in `config` (the inverse of pt_format_set). */
uint64_t pt_format_get(const struct pt_format_field *f, const uint64_t config[3]);

/*
 * Whether the pt backend can run on this host: the PMU is there and per-CPU perf events
 * are allowed. When not, `why` (if not NULL) gets one line with the evidence and the fix,
 * the same line `ptbpf doctor` prints.
 */
bool pt_pmu_usable(const char *sysfs_root, char *why, size_t size);

/* ---- configuration: what the pt backend asks of PT ---- */

/* The part of struct capture_opts that shapes the PT event. */
struct pt_request {
	enum pt_timing timing;	/* TIMING_MTC, TIMING_TSC, TIMING_CYC */
	bool timing_given;	/* false: mtc where the CPU has it, else tsc (perf's default) */
	int psb_period;		/* -1: perf's default (3, or the nearest the CPU allows) */
	bool noretcomp;		/* no return compression */
	bool kernel;		/* trace the kernel too (exclude_kernel = 0) */
	int nr_filters;		/* address filter ranges wanted (--filter) */
};

/* struct pt_request from the command line. */
void pt_request_from_opts(const struct capture_opts *opts, struct pt_request *req);

/*
 * attr.config, config1, config2 for `req`: each field placed where format/ says, each
 * value checked against caps/ with the rules of the kernel's pt_event_valid(), defaults
 * as perf picks them (tsc, mtc with mtc_period 3 or the nearest allowed, psb_period
 * likewise, pt and branch). On error `err` gets one line naming the option, the value
 * and what this CPU allows, and the return is -EINVAL (a value not allowed),
 * -EOPNOTSUPP (a feature the CPU lacks) or -ENOENT (a format or caps file this kernel
 * does not have).
 */
int pt_pmu__config(const struct pt_pmu *pmu, const struct pt_request *req, uint64_t config[3],
		   char *err, size_t size);

/*
 * The allowed values of a caps/ bitmap as perf prints them: "0,3,6,9", "0-5", "none".
 * `always0` adds 0, which the kernel accepts for psb_period and cyc_thresh.
 */
const char *pt_allowed_str(uint32_t bitmap, bool always0, char *buf, size_t size);

/*
 * perf's pick among allowed values: `target` if allowed, else the highest allowed value
 * below it, else the lowest above it; -1 if none (intel_pt_pick_bit()).
 */
int pt_pick_value(uint32_t bitmap, int target);

/* The aux_action word of perf_event_attr (6.13+; __reserved_3 in older UAPI headers). */
#define PT_AUX_START_PAUSED	(1u << 0)
#define PT_AUX_PAUSE		(1u << 1)
#define PT_AUX_RESUME		(1u << 2)
#define PT_ATTR_AUX_ACTION_OFFSET 116

static inline void pt_attr_set_aux_action(struct perf_event_attr *attr, uint32_t bits)
{
	memcpy((char *)attr + PT_ATTR_AUX_ACTION_OFFSET, &bits, sizeof(bits));
}

static inline uint32_t pt_attr_aux_action(const struct perf_event_attr *attr)
{
	uint32_t bits;

	memcpy(&bits, (const char *)attr + PT_ATTR_AUX_ACTION_OFFSET, sizeof(bits));
	return bits;
}

/* Sample fields of every record on the PT event's data ring (the sample_id_all trailer). */
#define PT_SAMPLE_TYPE                                                                      \
	(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)

/*
 * One CPU's PT event (notes/kernel-pt-abi.md §1.7, §9): type and config from sysfs,
 * disabled, sample_period 1 without freq (as perf), user only unless `kernel`, and the
 * sideband on the event itself: mmap, mmap2, comm, comm_exec, task, context_switch
 * (SWITCH_CPU_WIDE, per-CPU), sample_id_all with PT_SAMPLE_TYPE; text_poke with `kernel`.
 */
void pt_attr_pt(struct perf_event_attr *attr, uint32_t type, const uint64_t config[3], bool kernel);

/*
 * A trigger member of a CPU's PT group (§3.6): the tracepoint `tp_id`, sampling
 * (sample_period 1), aux_pause, exclude_kernel 0 (perf_tp_event_match() drops kernel-mode
 * hits of an exclude_kernel event), enabled with its leader.
 */
void pt_attr_trigger(struct perf_event_attr *attr, uint64_t tp_id);

/*
 * The perf system calls of the pt backend and of the probes here. They are weak
 * symbols: a test links its own to run the backend against a simulated kernel
 * (tests/unit/test_pt_backend.c). Each returns what the system call does, or -1 with
 * errno set. pt_sys_perf_event_open() always adds PERF_FLAG_FD_CLOEXEC.
 */
int pt_sys_perf_event_open(struct perf_event_attr *attr, int pid, int cpu, int group_fd);
int pt_sys_ioctl(int fd, unsigned long request, unsigned long arg);
void *pt_sys_mmap(size_t len, int prot, int fd, long offset);
/* read(2) of an event's count (8 bytes without read_format). */
ssize_t pt_sys_read(int fd, void *buf, size_t len);

/*
 * Whether this kernel takes aux_pause members in a PT group, tried for real: a software
 * dummy event with aux_pause joined to the PT event `leader_fd` on `cpu` (the kernel
 * checks the flag and the leader's PERF_PMU_CAP_AUX_PAUSE; before 6.13 the bits were
 * reserved and refused with EINVAL). Returns 0 if accepted, else -errno of the refusal.
 */
int pt_probe_aux_pause(int leader_fd, int cpu);

/*
 * Whether this kernel takes a user-space address range as an address filter on a
 * CPU-wide, user-only PT event, tried for real on `probe_fd` (pt_open_probe_event()).
 * Before Linux 5.18, perf_event_parse_addr_filter() refused an address range with
 * exclude_kernel and intel_pt's pt_event_addr_filters_validate() took only kernel
 * addresses (-EINVAL). Returns 0 if accepted, else -errno of the refusal.
 */
int pt_probe_address_filter(int probe_fd);

/*
 * Open one disabled, user-only PT event of PMU `type` on `cpu` with the default config
 * bits that every PT CPU accepts (tsc), for probes. Returns the fd or -errno.
 */
int pt_open_probe_event(uint32_t type, int cpu);

/*
 * The intel_pt AUXTRACE_INFO words that come from the PMU and the config (perf's
 * intel_pt_info_fill()): PMU type, the tsc/noretcomp/mtc/cyc bits and mtc_period field
 * (as config masks, like perf), the TSC:CTC ratio, max_nonturbo_ratio, per-CPU snapshot
 * mode with SWITCH_CPU_WIDE sideband. Time conversion and filter are the caller's.
 */
void pt_pmu__fill_info(const struct pt_pmu *pmu, struct pd_pt_info *info);

#endif /* PTBPF_PT_PMU_H */
