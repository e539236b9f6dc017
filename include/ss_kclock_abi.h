/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The singlestep clock's kernel side (bpf/ss_clock.bpf.c, read by
 * user/singlestep/ss_kclock.c): per traced thread, its last system call as the kernel
 * ran it, and the last wake another traced thread gave it meanwhile. Times are
 * bpf_ktime_get_ns() (CLOCK_MONOTONIC), taken by the thread itself at the
 * raw_syscalls tracepoints, so a tracer noticing the return late changes nothing.
 */
#ifndef PTBPF_SS_KCLOCK_ABI_H
#define PTBPF_SS_KCLOCK_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

struct ss_kclock_call {
	__u64 enter_ns;		/* sys_enter: the thread entered the kernel */
	__u64 exit_ns;		/* sys_exit, before any ptrace stop; 0 while inside */
	__u64 enter_delay_ns;	/* its run-queue wait so far (sched_info.run_delay) then */
	__u64 exit_delay_ns;	/* and at sys_exit: the difference is the machine's */
	__u64 wake_ns;		/* last wake by a traced thread in a system call, 0: none */
	__u64 waker_enter_ns;	/* that waker's system call (its enter_ns) */
	__u32 waker;		/* its tid */
	__u32 nr;		/* system call number */
};

#endif /* PTBPF_SS_KCLOCK_ABI_H */
