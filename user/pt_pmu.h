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

#endif /* PTBPF_PT_PMU_H */
