// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The singlestep backend's clock, kernel side (include/ss_kclock.h): the length of each
 * system call of a traced thread as the thread itself ran it, and who woke it.
 *
 * Under ptrace the tracer learns of a return only once it is scheduled and has waited
 * for the stop; on a loaded machine that is milliseconds late. sys_exit fires in the
 * thread before its ptrace stop (syscall_exit_work: trace_sys_exit, then
 * ptrace_report_syscall_exit), so exit - enter is the call, without the stop.
 *
 * sched_waking runs in the waker's context: a traced thread inside a system call that
 * wakes another traced thread (a pipe write, a signal, an eventfd, a futex, a thread's
 * exit) is an edge the user side orders on the trace's clock. A wake from an interrupt
 * (a timer ending a sleep) runs in whatever task was current: in_task_context() leaves
 * those out.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "ss_kclock_abi.h"

#define SS_KCLOCK_THREADS 4096

/* The traced processes (tgid), filled by ptbpf. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SS_KCLOCK_THREADS);
	__type(key, __u32);
	__type(value, __u8);
} traced SEC(".maps");

/* Per traced thread (tid): its last system call. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SS_KCLOCK_THREADS);
	__type(key, __u32);
	__type(value, struct ss_kclock_call);
} calls SEC(".maps");

static __always_inline bool is_traced(__u32 tgid)
{
	return bpf_map_lookup_elem(&traced, &tgid) != NULL;
}

static __always_inline __u64 run_delay(void)
{
	return bpf_get_current_task_btf()->sched_info.run_delay;
}

/*
 * In process context: this program's frame lies on the current task's own kernel
 * stack. x86-64 runs hard and soft interrupts on the per-CPU IRQ stack and NMIs on
 * their own, so a wake from a timer that ends a sleep is not on it. (The preempt count
 * would say the same, but it is a per-CPU variable the verifier finds only with
 * CONFIG_KALLSYMS_ALL.) 32 KiB covers THREAD_SIZE with KASAN's doubling.
 */
static __always_inline bool in_task_context(void)
{
	struct task_struct *task = bpf_get_current_task_btf();
	volatile __u64 marker = 0;
	__u64 here = (__u64)&marker, stack = (__u64)task->stack;

	return here - stack < 32768;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(ss_sys_enter, struct pt_regs *regs, long nr)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct ss_kclock_call *c, fresh = {};

	if (!is_traced(id >> 32))
		return 0;
	c = bpf_map_lookup_elem(&calls, &tid);
	if (!c) {
		bpf_map_update_elem(&calls, &tid, &fresh, BPF_NOEXIST);
		c = bpf_map_lookup_elem(&calls, &tid);
		if (!c)
			return 0;
	}
	c->exit_ns = 0;
	c->wake_ns = 0;
	c->waker = 0;
	c->nr = (__u32)nr;
	c->enter_delay_ns = run_delay();
	c->enter_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(ss_sys_exit, struct pt_regs *regs, long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct ss_kclock_call *c;

	if (!is_traced(id >> 32))
		return 0;
	c = bpf_map_lookup_elem(&calls, &tid);
	if (!c)
		return 0;
	c->exit_ns = bpf_ktime_get_ns();
	c->exit_delay_ns = run_delay();
	return 0;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(ss_waking, struct task_struct *p)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, wakee = (__u32)p->pid;
	struct ss_kclock_call *waker, *c;

	if (!is_traced(id >> 32) || !is_traced((__u32)p->tgid) || wakee == tid ||
	    !in_task_context())
		return 0;
	waker = bpf_map_lookup_elem(&calls, &tid);
	/* only from inside a system call: a page fault's wake is not the program's */
	if (!waker || waker->exit_ns || !waker->enter_ns)
		return 0;
	c = bpf_map_lookup_elem(&calls, &wakee);
	if (!c)
		return 0;
	c->waker = tid;
	c->waker_enter_ns = waker->enter_ns;
	c->wake_ns = bpf_ktime_get_ns();
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
