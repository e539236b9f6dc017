/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A stepping tracer whose death harms nothing. When a tracer dies, the kernel
 * (exit_ptrace -> __ptrace_detach -> __ptrace_unlink) unlinks its tracees but does not
 * clear a pending single-step's trap flag (only the PTRACE_DETACH request calls
 * ptrace_disable -> user_disable_single_step), nor drop a SIGTRAP a tracee is stopped
 * with: the tracee then dies of SIGTRAP. So under singlestep the process the user
 * started (and may SIGKILL, or the OOM killer may pick) is a small guardian; the work,
 * tracing included, runs in its child, which learns of the guardian's death through
 * PR_SET_PDEATHSIG and detaches every tracee with PTRACE_DETACH before it exits.
 */
#ifndef PTBPF_GUARDIAN_H
#define PTBPF_GUARDIAN_H

#include <stdbool.h>
#include <sys/types.h>

/* The signal the worker gets when the guardian dies (handled like SIGTERM, see below). */
#define GUARDIAN_DEATH_SIGNAL SIGTERM

/*
 * Fork the worker. Returns 0 in the worker (GUARDIAN_DEATH_SIGNAL is then blocked:
 * the caller reads it from a signalfd), < 0 (negative errno) when no worker could be
 * made, and never returns in the guardian, which forwards SIGINT/SIGTERM/SIGHUP sent
 * to it by kill(2) and exits with the worker's exit status.
 */
int guardian_split(void);

/* In the worker: the guardian's pid; 0 when ptbpf runs as one process. */
pid_t guardian_pid(void);

/* In the worker: whether the guardian is gone (then: let the target go and exit). */
bool guardian_gone(void);

/*
 * In the worker, once the target exists: make the worker the OOM killer's last choice
 * (oom_score_adj -999; needs CAP_SYS_RESOURCE, skipped without it).
 */
void guardian_protect(void);

#endif /* PTBPF_GUARDIAN_H */
