/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What this process may do: its effective capabilities and the perf sysctls, as the
 * kernel checks them (perf_allow_cpu(), perf_allow_kernel() in kernel/events/core.c).
 */
#ifndef PTBPF_PRIVS_H
#define PTBPF_PRIVS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Whether capability `cap` (CAP_*) is in the effective set; false if capget fails. */
bool privs_has_cap(int cap);

/*
 * Read an integer sysctl file such as "/proc/sys/kernel/perf_event_paranoid".
 * Returns 0 or -errno (-ENOENT when the kernel has no such knob).
 */
int privs_read_sysctl(const char *path, int *value);

/*
 * Whether CPU-wide perf events (pid == -1) may be opened: CAP_PERFMON or CAP_SYS_ADMIN,
 * or kernel.perf_event_paranoid <= 0. When not, `why` (if not NULL) gets the reason and
 * the fix on one line.
 */
bool privs_cpu_wide_perf(char *why, size_t size);

/*
 * Whether kernel-mode tracing (exclude_kernel = 0) is allowed: CAP_PERFMON or
 * CAP_SYS_ADMIN, or kernel.perf_event_paranoid <= 1. Same `why` convention.
 */
bool privs_kernel_perf(char *why, size_t size);

/*
 * Whether this process can ptrace and single-step a process, tried for real on a forked
 * child (PTRACE_SEIZE, PTRACE_INTERRUPT, one PTRACE_SINGLESTEP). `evidence` gets what
 * happened (or why not, with the fix). Returns 0 or -errno.
 */
int privs_ptrace_probe(char *evidence, size_t size);

/*
 * Why PTRACE_SEIZE of `pid` failed with EPERM, on one line with the fix: another
 * tracer, the Yama scope, another user's process without CAP_SYS_PTRACE, a protected
 * (non-dumpable) process, another user namespace, else a security module.
 */
void privs_ptrace_denied(pid_t pid, char *why, size_t size);

/*
 * Raise the soft RLIMIT_NOFILE to the hard limit, as perf does (rlimit__increase_nofile()
 * in tools/perf/util/rlimit.c): the pt backend holds one PT event per CPU plus one per
 * gate per CPU, which passes the usual soft limit of 1024 on hosts of 500 CPUs. The
 * limit found is kept for privs_restore_nofile(). Returns 0 or -errno of setrlimit().
 */
int privs_raise_nofile(void);

/*
 * Put back the soft RLIMIT_NOFILE privs_raise_nofile() found: in a command ptbpf starts,
 * before exec (a program using select() must not see more than FD_SETSIZE descriptors).
 */
void privs_restore_nofile(void);

/*
 * Why attaching a probe failed with `err` (-EACCES, -EPERM) for want of a privilege, on
 * one line with the fix, or NULL when no missing privilege explains it. The kernel
 * attaches a uprobe (`uprobe`: uprobes, USDT) only with CAP_SYS_ADMIN
 * (perf_uprobe_event_init), CAP_PERFMON is not enough; a tracepoint's id is read from
 * tracefs, which is root's only (mode 0700) without CAP_DAC_READ_SEARCH.
 */
const char *privs_attach_denied(int err, bool uprobe);

/* The capabilities a capture needs without root, as `setcap` takes them. */
#define PRIVS_SETCAP_SET "cap_bpf,cap_perfmon,cap_sys_ptrace,cap_dac_read_search,cap_sys_admin"

#endif /* PTBPF_PRIVS_H */
