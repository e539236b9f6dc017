/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The daemon's system-wide PT rings: one pt backend opened without a target (an Intel PT
 * event per online CPU, pid -1, AUX in overwrite mode, sideband on its data ring), armed
 * while any pt capture rule is. A fire of such a rule (from the trigger plane, after its
 * match and budgets) takes one snapshot: freeze every CPU, copy every ring and the
 * sideband (plus /proc of the fired process) into a perf.data, resume.
 *
 *	pt_capture__open(buffer_size, kernel, why, size, &pc);	epoll on pt_capture__fd(pc)
 *	readable: pt_capture__drain(pc)
 *	a fire:   pt_capture__busy(pc, rec->ktime_ns)? suppressed : pt_capture__take(...)
 *	pt_capture__free(pc);
 */
#ifndef PTBPF_DAEMON_PT_CAPTURE_H
#define PTBPF_DAEMON_PT_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trigger_abi.h"

struct pt_capture;

/*
 * Open and enable the rings: `buffer_size` bytes of AUX per CPU (0: the backend's
 * default), user space only unless `kernel`. -ENODEV when this host has no usable Intel
 * PT; any other refusal (the kernel's, or a configuration this CPU lacks) as -errno. On
 * error, `why` gets the backend's one-line reason with its fix.
 */
int pt_capture__open(uint64_t buffer_size, bool kernel, char *why, size_t why_size,
		     struct pt_capture **out);
void pt_capture__free(struct pt_capture *pc);

/* What the rings were opened with. */
bool pt_capture__kernel(const struct pt_capture *pc);
uint64_t pt_capture__buffer_size(const struct pt_capture *pc);
/* Readable when some CPU's sideband ring is half full: then pt_capture__drain(). */
int pt_capture__fd(const struct pt_capture *pc);
int pt_capture__drain(struct pt_capture *pc);

/*
 * Whether a fire at `ktime_ns` (CLOCK_MONOTONIC) came while a snapshot was being taken
 * or before it ended (the rings were frozen, or its trace is in that snapshot): such a
 * fire is suppressed, not captured again.
 */
bool pt_capture__busy(const struct pt_capture *pc, uint64_t ktime_ns);

/*
 * One snapshot for the fire `rec` (the trigger `desc` describes): freeze, copy every
 * CPU's ring and sideband and /proc of rec->pid, resume, then write the copy to `path`
 * (a perf.data with the trigger record). The rings are resumed whatever happened.
 * 0 or -errno.
 */
int pt_capture__take(struct pt_capture *pc, const struct trigger_rec *rec, const char *desc,
		     const char *path);

/* Snapshots taken, and the last one's time from freeze to resume (the rings' gap). */
unsigned pt_capture__snapshots(const struct pt_capture *pc);
uint64_t pt_capture__last_ns(const struct pt_capture *pc);
/* One line: CPUs, ring size, freeze path (the backend's describe()). */
const char *pt_capture__describe(const struct pt_capture *pc);

#endif /* PTBPF_DAEMON_PT_CAPTURE_H */
