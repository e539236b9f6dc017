/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Where tracefs is, for tracepoint ids and tracefs-defined uprobes/kprobes. */
#ifndef PTBPF_TRACEFS_H
#define PTBPF_TRACEFS_H

#include <stdbool.h>

/*
 * The mounted tracefs: /sys/kernel/tracing, or /sys/kernel/debug/tracing on older
 * setups. These are the only two places libbpf looks, so when neither is mounted it is
 * mounted at /sys/kernel/tracing, as perf does. Returns the path, or NULL with errno set
 * (EACCES when it is mounted but only root may read it, EPERM without CAP_SYS_ADMIN to mount
 * it, ENODEV when the kernel has no tracefs). `mounted_now`
 * (optional) tells whether this call mounted it.
 */
const char *tracefs_path(bool *mounted_now);

/*
 * Undo tracefs_path()'s mount (mounted_now true): tracefs is left as ptbpf found it.
 * Lazily (MNT_DETACH): a user that opened it meanwhile keeps it until done.
 */
void tracefs_unmount(bool mounted_now);

#endif /* PTBPF_TRACEFS_H */
