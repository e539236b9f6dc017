/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The kernel's side of the singlestep clock (bpf/ss_clock.bpf.c): each traced
 * thread's system calls as the kernel ran them and the wakes traced threads give each
 * other. See doc/singlestep-clock.md.
 */
#ifndef PTBPF_SS_KCLOCK_H_USER
#define PTBPF_SS_KCLOCK_H_USER

#include <stddef.h>
#include <sys/types.h>

#include "ss_kclock_abi.h"

struct ss_kclock;

/*
 * Load and attach the programs. Returns 0, or -errno with a reason in `why` (no BPF
 * here, not permitted, no tp_btf): the caller then measures system calls itself.
 */
int ss_kclock__open(struct ss_kclock **out, char *why, size_t why_size);
void ss_kclock__close(struct ss_kclock *k);

/* Follow the system calls of every thread of process `tgid`. Returns 0 or -errno. */
int ss_kclock__trace(struct ss_kclock *k, pid_t tgid);

/* Thread `tid`'s last system call. Returns 0, or -ENOENT if none was seen. */
int ss_kclock__call(struct ss_kclock *k, pid_t tid, struct ss_kclock_call *out);

/* Thread `tid` is gone: its slot is freed. */
void ss_kclock__forget(struct ss_kclock *k, pid_t tid);

#endif /* PTBPF_SS_KCLOCK_H_USER */
