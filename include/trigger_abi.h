/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Records the trigger BPF programs (bpf/) send to the loader (user/) over one BPF ring
 * buffer. Plain fixed-size types only: the includer provides __u32/__u64 (vmlinux.h on
 * the BPF side, <linux/types.h> in user space).
 */
#ifndef PTBPF_TRIGGER_ABI_H
#define PTBPF_TRIGGER_ABI_H

/*
 * Most triggers on one command line, and rules in the daemon's trigger plane (a power
 * of two: the BPF side masks indexes with it).
 */
#define MAX_TRIGGERS 32

/*
 * Rules in the daemon's trigger plane (user/triggers.h, triggers__plane_new): slots of
 * per-rule state in the plane object's .bss, the rule being its probes' BPF cookie. A
 * power of two (the BPF side masks slot numbers with it). The bound is not the object
 * (a slot is ~120 bytes) but the kernel's time per probe: attaching a uprobe costs
 * ~15 ms and detaching one ~50-70 ms on our VM (its unregistration waits for RCU grace
 * periods, serialized by the kernel's event_mutex), so 256 uprobe rules stop in ~15 s,
 * well inside systemd's 90 s stop timeout; 1000 took 45-70 s.
 */
#define PLANE_MAX_RULES 256
/*
 * Run-queue latency, syscall latency and tracepoint rules in the plane, of each kind:
 * their hook serves them all from a list of slots that every context switch, system call
 * or tracepoint hit walks, so it is short.
 */
#define PLANE_MAX_LATENCY_RULES 64

/* Latency uprobes: nested entries (recursion) remembered per thread and trigger. */
#define TRIGGER_MAX_DEPTH 8

enum rec_type {
	REC_TRIGGER = 1,
};

enum trigger_kind {
	TRIGGER_NONE = 0,
	TRIGGER_UPROBE = 1,		/* --uprobe: function entered */
	TRIGGER_UPROBE_LATENCY = 2,	/* --latency-over with --uprobe: call slower than DUR */
	TRIGGER_RUNQ_LATENCY = 3,	/* --latency-over alone: waited runnable longer than DUR */
	TRIGGER_SYSCALL_LATENCY = 4,	/* --syscall-latency-over */
	TRIGGER_KPROBE = 5,		/* --kprobe */
	TRIGGER_TRACEPOINT = 6,		/* --tracepoint */
	/* 7 to 9: a capture's own ends, enum pd_stop_kind (include/perfdata.h) */
	TRIGGER_USDT = 10,		/* --usdt: a USDT probe (sys/sdt.h) was hit */
};

/* Threads whose own clock the singlestep backend shows at once: one per virtual CPU. */
#define TRACE_CLOCK_SLOTS 64

struct trace_clock_slot {
	__u32 tid;		/* 0: none */
	__u32 pad;
	__u64 now_ns;		/* its clock while it steps */
};

/*
 * The traced program's own clock, kept by a backend that slows the program down (the
 * singlestep backend) in the BPF object's mapped .bss, so that latencies compare with
 * the program's untraced times: now_ns is the trace's clock (0: none, CLOCK_MONOTONIC
 * is the program's clock); while idle_since_ns is not 0 (CLOCK_MONOTONIC ns), every
 * thread waits in the kernel and the trace's clock runs with real time from now_ns.
 * With per_thread (--clock mixed), each thread has its own clock: slot[] holds those of
 * the threads stepping now (a probe hits a thread while it steps), now_ns the latest
 * time, and a system call lasts its real length (CLOCK_MONOTONIC).
 */
struct trace_clock {
	__u64 now_ns;
	__u64 idle_since_ns;
	__u32 per_thread;
	__u32 nr_slots;
	struct trace_clock_slot slot[TRACE_CLOCK_SLOTS];
};

/* One fire. */
struct trigger_rec {
	__u32 type;		/* enum rec_type: REC_TRIGGER */
	__u32 kind;		/* enum trigger_kind */
	__u32 index;		/* the trigger's position on the command line */
	__u32 cpu;
	__u32 pid;		/* tgid */
	__u32 tid;
	__u64 ktime_ns;		/* bpf_ktime_get_ns() at the fire (CLOCK_MONOTONIC): the probe
				 * hit; for latency triggers the end of the slow interval */
	__u64 ip;		/* user IP of the probe hit (uprobe/uretprobe), else 0 */
	__u64 latency_ns;	/* latency triggers: measured latency, else 0 */
	__u64 arg0, arg1;	/* the probe's first two arguments (syscall: nr, ret) */
	/* Added by the trigger plane (issue 5): */
	__u64 seq;		/* which qualifying hit this was (1-based, all triggers) */
	__u64 func_ip;		/* uprobe: the probed address; latency uprobe: the function's
				 * entry address (ip is then the return address); else 0 */
	__u64 aux;		/* runq: the tid that ran before it on this CPU; else 0 */
	char comm[16];		/* the thread's name at the fire (TASK_COMM_LEN), which a
				 * thread gone by the time the loader reads it still has */
};

#endif /* PTBPF_TRIGGER_ABI_H */
