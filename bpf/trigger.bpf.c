// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Trigger programs: decide, in the kernel, the moment the rings are frozen.
 *
 * Every hook filters the target's threads, measures what its trigger measures, and hands
 * a candidate to try_fire(), which applies the run's conditions (warmup, cooldown, nth,
 * max) so that a storm of hits never wakes the loader. A fire writes one struct
 * trigger_rec to the ring buffer `rb`.
 *
 * The same programs run in two attachment modes (user/triggers.c):
 * - links: ordinary libbpf links; the return value does not matter (0 for kprobe-type
 *   programs, which is cheapest; 1 for tracepoint programs, so that we never silence
 *   another perf user of the same tracepoint);
 * - gate (rodata gate_mode): filters on per-CPU tracepoint perf events, where the return
 *   value decides whether the event overflows (1 = fire = aux_pause on that CPU).
 *
 * Kernels back to 5.10 load them: each entry hook exists once per trigger index
 * (uprobe_hit_3 serves trigger 3), since the attach cookie that would let one program
 * serve them all needs BPF perf links (5.15); the atomics whose result is read need 5.12,
 * so this file is also built without them (trigger_noatomics.bpf.c), and the loader picks
 * the object the kernel takes; task storage in tracing programs needs 5.12 (the loader
 * then uses the tp programs for the run queue).
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include <bpf/usdt.bpf.h>

#include "trigger_abi.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define TASK_RUNNING 0

/* Per-run settings, written by the loader before load. */
const volatile __u32 targ_tgid = 0;		/* 0: every process (--system-wide) */
/*
 * Never a fire in ptbpf's own processes: itself, its guardian (user/guardian.h), and a
 * command it started until that command's exec (before it, the child is ptbpf's code,
 * named "ptbpf", waiting for the go-ahead: its waits and system calls are ptbpf's).
 */
const volatile __u32 self_tgid = 0;
const volatile __u32 guardian_tgid = 0;	/* 0: none */
const volatile __u32 spawn_tgid = 0;		/* 0: none (-p) */
const volatile bool gate_mode = false;		/* return values gate perf events */
const volatile __u64 nth = 1;			/* fire from the Nth qualifying hit on */
const volatile __u64 max_fires = 0;		/* 0: no limit */
const volatile __u64 cooldown_ns = 0;
const volatile __u64 warmup_ns = 0;
/*
 * A capture freezes the rings at each fire and the target runs on while the loader takes
 * the snapshot: fires until it re-arms describe untraced time, and must not use up nth or
 * max_fires, or the later snapshots never come. So one fire per arming.
 */
const volatile bool once_per_arm = false;
const volatile __u32 runq_index = 0;		/* index of the run-queue latency trigger */
const volatile __u32 kinds[MAX_TRIGGERS] = {};	/* enum trigger_kind per index */
const volatile __u64 thresh_ns[MAX_TRIGGERS] = {}; /* latency triggers: threshold */
const volatile __s32 syscall_nrs[MAX_TRIGGERS] = {}; /* syscall triggers: nr, -1 = any */

/*
 * The daemon's trigger plane (user/triggers.h, triggers__plane_new): one object for all
 * its rules, loaded once; a rule is a slot, the BPF cookie of its probes (the plane_*
 * programs), with a process, nth, budget and cooldown of its own in place of the run-wide
 * ones above (warmup and once_per_arm do not apply). Its settings are written by the
 * loader before the slot's probes are attached, so they live in .bss, not .rodata.
 */
const volatile bool per_index = false;
#define SLOT_MASK (PLANE_MAX_RULES - 1)
__u32 idx_kind[PLANE_MAX_RULES] = {};		/* enum trigger_kind; 0: free slot */
__u64 idx_thresh_ns[PLANE_MAX_RULES] = {};	/* latency rules: threshold */
__s32 idx_syscall_nr[PLANE_MAX_RULES] = {};	/* syscall rules: nr, -1 = any */
__u32 idx_tgid[PLANE_MAX_RULES] = {};		/* 0: any process */
__u64 idx_nth[PLANE_MAX_RULES] = {};		/* fire from the Nth qualifying hit on */
__u64 idx_cooldown_ns[PLANE_MAX_RULES] = {};
/* Fires allowed (0: no limit); written by the loader, which also clears idx_slots (a new hour). */
__u64 idx_max[PLANE_MAX_RULES] = {};
__u64 idx_slots[PLANE_MAX_RULES] = {};
__u64 idx_seq[PLANE_MAX_RULES] = {};
__u64 idx_last_fire_ns[PLANE_MAX_RULES] = {};	/* the loader may set it (a cooldown running on) */
/*
 * Make-before-break of a changed rule: its new slot is attached while the old one still
 * runs, and waits (idx_pred = old slot + 1) until the loader retires the old slot
 * (idx_retired = 1): one store hands the rule over, so a hit fires in one of them.
 */
__u32 idx_pred[PLANE_MAX_RULES] = {};
__u32 idx_retired[PLANE_MAX_RULES] = {};
/*
 * Slots of the run-queue and syscall latency rules, which share one hook each: slot + 1,
 * 0 a hole (a rule removed: one store, its neighbours never move); nr_* is the high-water
 * mark.
 */
__u32 runq_list[PLANE_MAX_LATENCY_RULES] = {};
__u32 nr_runq_list = 0;
__u32 sys_list[PLANE_MAX_LATENCY_RULES] = {};
__u32 nr_sys_list = 0;
/*
 * Tracepoint rules likewise: the kernel runs a program once per tracepoint (the same one
 * twice is EEXIST), so each tracepoint has one link, its cookie a group number, and its
 * rules are the entries of tp_list whose idx_tp_group is that number.
 */
__u32 tp_list[PLANE_MAX_LATENCY_RULES] = {};
__u32 nr_tp_list = 0;
__u32 idx_tp_group[PLANE_MAX_RULES] = {};

/* Written by the loader once everything is attached; warmup counts from here. */
__u64 armed_ns = 0;
/* once_per_arm: a fire since the last arming (cleared by the loader). */
__u32 disarmed = 0;
/* The command ptbpf started (spawn_tgid) has exec'd: from then on it is the program. */
__u32 spawn_execed = 0;
/*
 * The program's own clock (include/trigger_abi.h), kept by the singlestep backend: stepping
 * makes the program run ~10^4 times slower, and the trace's clock counts what it would
 * have taken. Latencies are measured on it, so a call fires on its untraced length.
 */
struct trace_clock trace_clock = {};

/* Counters, per trigger index or plane slot, read by the loader (-v, the daemon's metrics). */
__u64 hits[PLANE_MAX_RULES] = {};	/* hook ran for a thread in scope */
__u64 qualifying[PLANE_MAX_RULES] = {};	/* met its own condition, past warmup and cooldown */
__u64 fired[PLANE_MAX_RULES] = {};	/* records written (or attempted: see dropped) */
__u64 suppressed[PLANE_MAX_RULES] = {};	/* met its condition but warmup/cooldown/nth/max said no */
__u64 dropped = 0;			/* ring buffer full */
__u64 depth_overflow = 0;		/* latency uprobe nested deeper than TRIGGER_MAX_DEPTH */

/* Run-wide state of the conditions. */
__u64 seq_counter = 0;			/* qualifying hits so far (all triggers) */
__u64 fire_slots = 0;			/* fires handed out so far */
__u64 last_fire_ns = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} rb SEC(".maps");

/* Latency uprobes: entries of the calls in flight, per thread and trigger. */
struct call_key {
	__u32 tid;
	__u32 index;
};

struct call_stack {
	__u32 depth;		/* calls in flight; may exceed TRIGGER_MAX_DEPTH */
	__u32 pad;
	__u64 ts[TRIGGER_MAX_DEPTH];	/* entry time */
	__u64 sp[TRIGGER_MAX_DEPTH];	/* stack pointer at entry: matches the return */
	__u64 ip[TRIGGER_MAX_DEPTH];	/* entry address */
	__u64 arg0[TRIGGER_MAX_DEPTH];
	__u64 arg1[TRIGGER_MAX_DEPTH];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct call_key);
	__type(value, struct call_stack);
} calls SEC(".maps");

static struct call_stack empty_stack;

/* Run-queue latency: when each thread of the target became runnable. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} runq_start SEC(".maps");

/*
 * The same, for the tp_btf programs: kept in the task itself, which costs a fraction of
 * an LRU hash update and delete on every wakeup and switch (runqslower does the same).
 * 0: not waiting.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} runq_task_start SEC(".maps");

/* tp fallback: threads known to belong to the target (tp records carry no tgid). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u32);
} target_tids SEC(".maps");

/* Syscall latency: the syscall in flight per thread. */
struct sys_entry {
	__u64 ts;
	__u64 kts;		/* bpf_ktime_get_ns(): per-thread trace clocks time calls in real time */
	__s64 nr;
	__u64 arg0;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct sys_entry);
} sys_start SEC(".maps");

/* Now, on the program's clock (see trace_clock): for latencies only. */
static __always_inline __u64 program_ns(void)
{
	__u64 t = trace_clock.now_ns, idle, now;
	__u32 tid, i, n;

	if (!t)
		return bpf_ktime_get_ns();
	if (trace_clock.per_thread) {
		/* the thread's own clock: it steps on one of the virtual CPUs */
		tid = (__u32)bpf_get_current_pid_tgid();
		n = trace_clock.nr_slots;
		for (i = 0; i < TRACE_CLOCK_SLOTS && i < n; i++)
			if (trace_clock.slot[i].tid == tid)
				return trace_clock.slot[i].now_ns;
		return t;
	}
	/* every thread waits (a system call returning now): real time counts */
	idle = trace_clock.idle_since_ns;
	if (idle) {
		now = bpf_ktime_get_ns();
		if (now > idle)
			t += now - idle;
	}
	return t;
}

/*
 * BPF atomics that return a value (fetch-and-add, compare-and-swap, exchange): Linux 5.12;
 * an older verifier refuses the object that holds one, even where it never runs. Without
 * them (TRIGGER_NO_ATOMICS) the conditions use a plain read-modify-write: two CPUs that
 * qualify in the same instant may then both fire, or share a sequence number.
 */
#ifndef TRIGGER_NO_ATOMICS
#define fetch_add(p, v) __sync_fetch_and_add(p, v)
#define cmpxchg(p, old, new) __sync_val_compare_and_swap(p, old, new)
#define test_and_set(p) __sync_lock_test_and_set(p, 1)
#else
static __always_inline __u64 fetch_add(__u64 *p, __u64 v)
{
	__u64 old = *(volatile __u64 *)p;

	*(volatile __u64 *)p = old + v;
	return old;
}

/* Sets *p to `new` if it holds `old`; returns what it held. */
static __always_inline __u64 cmpxchg(__u64 *p, __u64 old, __u64 new)
{
	__u64 cur = *(volatile __u64 *)p;

	if (cur == old)
		*(volatile __u64 *)p = new;
	return cur;
}

/* Sets *p to 1; returns what it held. */
static __always_inline __u32 test_and_set(__u32 *p)
{
	__u32 old = *(volatile __u32 *)p;

	*(volatile __u32 *)p = 1;
	return old;
}
#endif

static __always_inline bool in_scope(__u32 tgid)
{
	if (tgid == self_tgid || (guardian_tgid && tgid == guardian_tgid))
		return false;
	if (spawn_tgid && tgid == spawn_tgid && !spawn_execed)
		return false;
	return !targ_tgid || tgid == targ_tgid;
}

SEC("tp/sched/sched_process_exec")
int spawn_exec(void *ctx)
{
	if ((__u32)(bpf_get_current_pid_tgid() >> 32) == spawn_tgid)
		spawn_execed = 1;
	return 0;
}

/* What a hook knows about a candidate fire. */
struct cand {
	__u32 index;
	__u32 kind;
	__u32 pid;
	__u32 tid;
	__u64 now;
	__u64 ip;
	__u64 func_ip;
	__u64 latency_ns;
	__u64 arg0;
	__u64 arg1;
	__u64 aux;
	const char *comm;	/* the thread's name in the kernel; NULL: it is current */
};

/*
 * The run's conditions, in the order a user reads them: hits during warmup or cooldown
 * (or, in a capture, before the loader re-armed) are ignored; the others are numbered;
 * from the Nth on they fire, up to max_fires.
 * Returns 1 if it fired.
 */
static __always_inline int emit_fire(struct cand *c, __u32 i, __u64 seq)
{
	struct trigger_rec *rec;

	__sync_fetch_and_add(&fired[i], 1);
	rec = bpf_ringbuf_reserve(&rb, sizeof(*rec), 0);
	if (!rec) {
		/* Still a fire: in gate mode the rings freeze; the loader learns it late. */
		__sync_fetch_and_add(&dropped, 1);
		return 1;
	}
	rec->type = REC_TRIGGER;
	rec->kind = c->kind;
	rec->index = i;
	rec->cpu = bpf_get_smp_processor_id();
	rec->pid = c->pid;
	rec->tid = c->tid;
	rec->ktime_ns = c->now;
	rec->ip = c->ip;
	rec->latency_ns = c->latency_ns;
	rec->arg0 = c->arg0;
	rec->arg1 = c->arg1;
	rec->seq = seq;
	rec->func_ip = c->func_ip;
	rec->aux = c->aux;
	if (c->comm)
		bpf_probe_read_kernel_str(rec->comm, sizeof(rec->comm), c->comm);
	else
		bpf_get_current_comm(rec->comm, sizeof(rec->comm));
	bpf_ringbuf_submit(rec, 0);
	return 1;
}

/* The plane's conditions (per_index): trigger i's own process, cooldown, nth and budget. */
static __always_inline int try_fire_index(struct cand *c, __u32 i)
{
	__u64 seq, slot, last, cooldown;
	__u32 pred;

	i &= SLOT_MASK;
	if (idx_tgid[i] && c->pid != idx_tgid[i])
		return 0;	/* not this rule's process: not a hit of it */
	/* a changed rule: the old slot until it is retired, then the new one */
	if (idx_retired[i])
		return 0;
	pred = idx_pred[i];
	if (pred && !idx_retired[(pred - 1) & SLOT_MASK])
		return 0;
	cooldown = idx_cooldown_ns[i];
	last = idx_last_fire_ns[i];
	if (cooldown && last && (__s64)(c->now - last) < (__s64)cooldown)
		goto suppress;
	__sync_fetch_and_add(&qualifying[i], 1);
	seq = fetch_add(&idx_seq[i], 1) + 1;
	if (seq < idx_nth[i])
		goto suppress;
	if (!cooldown)
		idx_last_fire_ns[i] = c->now;
	else if (cmpxchg(&idx_last_fire_ns[i], last, c->now) != last)
		goto suppress;
	slot = fetch_add(&idx_slots[i], 1);
	if (idx_max[i] && slot >= idx_max[i])
		goto suppress;
	return emit_fire(c, i, seq);

suppress:
	__sync_fetch_and_add(&suppressed[i], 1);
	return 0;
}

static __noinline int try_fire(struct cand *c)
{
	__u32 i = c->index;
	__u64 seq, slot, last;

	if (per_index)
		return try_fire_index(c, i);
	if (i >= MAX_TRIGGERS)
		return 0;
	if (warmup_ns && (!armed_ns || (__s64)(c->now - armed_ns) < (__s64)warmup_ns))
		goto suppress;
	last = last_fire_ns;
	if (cooldown_ns && last && (__s64)(c->now - last) < (__s64)cooldown_ns)
		goto suppress;
	if (once_per_arm && disarmed)
		goto suppress;

	__sync_fetch_and_add(&qualifying[i], 1);
	seq = fetch_add(&seq_counter, 1) + 1;
	if (seq < nth)
		goto suppress;
	/* two CPUs may get here at once: one of them fires */
	if (once_per_arm && test_and_set(&disarmed))
		goto suppress;
	/* the same for the cooldown: the CPU that moves last_fire_ns on from `last` fires */
	if (!cooldown_ns)
		last_fire_ns = c->now;
	else if (cmpxchg(&last_fire_ns, last, c->now) != last)
		goto suppress;
	slot = fetch_add(&fire_slots, 1);
	if (max_fires && slot >= max_fires)
		goto suppress;
	return emit_fire(c, i, seq);

suppress:
	__sync_fetch_and_add(&suppressed[i], 1);
	return 0;
}

/* A latency trigger's threshold: the run's (command line) or the plane slot's. */
static __always_inline __u64 threshold(__u32 i)
{
	return per_index ? idx_thresh_ns[i & SLOT_MASK] : thresh_ns[i & (MAX_TRIGGERS - 1)];
}

/* Return value of a kprobe-type program (uprobe, uretprobe, kprobe). */
static __always_inline int kprobe_ret(int fire)
{
	return gate_mode ? fire : 0;
}

/* Return value of a tracepoint program. */
static __always_inline int tp_ret(int fire)
{
	return gate_mode ? fire : 1;
}

/*
 * Return value of a tracepoint program that is never a gate (it is a link in both modes):
 * the kernel runs one program list per tracepoint before every perf event of it, so a 0
 * would silence every other perf user of the tracepoint.
 */
#define TP_LINK_RET 1

/*
 * The hooks of each trigger: one program per trigger index, named HOOK_INDEX (uprobe_hit_0
 * ... uprobe_hit_15), as a constant in its code instead of an attach cookie (5.15).
 */
#define FOR_EACH_TRIGGER(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) \
			    X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) \
			    X(22) X(23) X(24) X(25) X(26) X(27) X(28) X(29) X(30) X(31)
_Static_assert(MAX_TRIGGERS == 32, "FOR_EACH_TRIGGER names every trigger index");

/* An entry probe hit (uprobe, kprobe, USDT): trigger `index`, with two arguments. */
static __always_inline int entry_hit(struct pt_regs *ctx, __u32 kind, __u64 index,
				     __u64 arg0, __u64 arg1)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct cand c = {};

	if (!in_scope(id >> 32) || index >= (per_index ? PLANE_MAX_RULES : MAX_TRIGGERS))
		return 0;
	c.index = index;
	__sync_fetch_and_add(&hits[c.index], 1);
	c.kind = kind;
	c.pid = id >> 32;
	c.tid = (__u32)id;
	c.now = bpf_ktime_get_ns();
	c.ip = PT_REGS_IP(ctx);
	c.func_ip = c.ip;
	c.arg0 = arg0;
	c.arg1 = arg1;
	return kprobe_ret(try_fire(&c));
}

/* A uprobe or kprobe of trigger `index` hit. */
static __always_inline int probe_hit(struct pt_regs *ctx, __u32 kind, __u32 index)
{
	return entry_hit(ctx, kind, index, PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx));
}

/* --uprobe BIN:SYM: the function was entered. */
#define UPROBE_HIT(i)							\
	SEC("uprobe")							\
	int BPF_KPROBE(uprobe_hit_##i)					\
	{								\
		return probe_hit(ctx, TRIGGER_UPROBE, i);		\
	}
FOR_EACH_TRIGGER(UPROBE_HIT)

/*
 * --usdt BIN:PROVIDER:NAME: the program passed its USDT probe (libbpf's USDT support: the
 * USDT cookie is the trigger's index, the probe's first two arguments are arg0, arg1).
 */
SEC("usdt")
int usdt_hit(struct pt_regs *ctx)
{
	long arg0 = 0, arg1 = 0;

	bpf_usdt_arg(ctx, 0, &arg0);
	bpf_usdt_arg(ctx, 1, &arg1);
	return entry_hit(ctx, TRIGGER_USDT, bpf_usdt_cookie(ctx), arg0, arg1);
}

/* --latency-over with --uprobe: remember the entry (recursion: one slot per depth). */
static __always_inline int uprobe_entry(struct pt_regs *ctx, __u32 index)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct call_key key = { .tid = (__u32)id };
	struct call_stack *st;
	__u32 d;

	if (!in_scope(id >> 32))
		return 0;
	/* the plane: only the rule's own process's calls are worth timing */
	if (per_index && idx_tgid[index & SLOT_MASK] &&
	    idx_tgid[index & SLOT_MASK] != (__u32)(id >> 32))
		return 0;
	key.index = index;
	st = bpf_map_lookup_elem(&calls, &key);
	if (!st) {
		bpf_map_update_elem(&calls, &key, &empty_stack, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&calls, &key);
		if (!st)
			return 0;
	}
	d = st->depth;
	if (d >= TRIGGER_MAX_DEPTH) {
		/* Too deep to time: counted so that the matching return is not mistaken. */
		st->depth = d + 1;
		__sync_fetch_and_add(&depth_overflow, 1);
		return 0;
	}
	st->ts[d] = program_ns();
	st->sp[d] = PT_REGS_SP(ctx);
	st->ip[d] = PT_REGS_IP(ctx);
	st->arg0[d] = PT_REGS_PARM1(ctx);
	st->arg1[d] = PT_REGS_PARM2(ctx);
	st->depth = d + 1;
	return 0;
}

#define UPROBE_ENTRY(i)							\
	SEC("uprobe")							\
	int BPF_KPROBE(uprobe_entry_##i)				\
	{								\
		return uprobe_entry(ctx, i);				\
	}
FOR_EACH_TRIGGER(UPROBE_ENTRY)

/* The call returns: its entry is the innermost one whose stack pointer matches. */
static __always_inline int uretprobe_exit(struct pt_regs *ctx, __u32 index)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct call_key key = { .tid = (__u32)id };
	struct call_stack *st;
	struct cand c = {};
	__u64 now, ret_sp;
	__u32 d, i, slot;

	if (!in_scope(id >> 32))
		return 0;
	now = bpf_ktime_get_ns();
	key.index = index;
	st = bpf_map_lookup_elem(&calls, &key);
	if (!st || !st->depth)
		return 0;
	d = st->depth;
	if (d > TRIGGER_MAX_DEPTH) {
		st->depth = d - 1;
		return 0;
	}
	/*
	 * After `ret` the stack pointer is one slot above the entry's. Entries deeper than
	 * the match belong to frames left without a return (longjmp): drop them. With no
	 * match (the kernel reported another sp), trust the nesting.
	 */
	ret_sp = PT_REGS_SP(ctx);
	slot = d - 1;
	for (i = 0; i < TRIGGER_MAX_DEPTH; i++) {
		if (i >= d)
			break;
		if (st->sp[(d - 1 - i) & (TRIGGER_MAX_DEPTH - 1)] + 8 == ret_sp) {
			slot = d - 1 - i;
			break;
		}
	}
	slot &= TRIGGER_MAX_DEPTH - 1;
	st->depth = slot;

	c.index = key.index & (per_index ? SLOT_MASK : MAX_TRIGGERS - 1);
	__sync_fetch_and_add(&hits[c.index], 1);
	/* a call entered before the trace clock started has no length on it */
	c.latency_ns = program_ns() - st->ts[slot];
	if ((__s64)c.latency_ns < 0 || c.latency_ns <= threshold(c.index))
		return 0;
	c.kind = TRIGGER_UPROBE_LATENCY;
	c.pid = id >> 32;
	c.tid = (__u32)id;
	c.now = now;
	c.ip = PT_REGS_IP(ctx);
	c.func_ip = st->ip[slot];
	c.arg0 = st->arg0[slot];
	c.arg1 = st->arg1[slot];
	return kprobe_ret(try_fire(&c));
}

#define URETPROBE_EXIT(i)						\
	SEC("uretprobe")						\
	int BPF_KRETPROBE(uretprobe_exit_##i)				\
	{								\
		return uretprobe_exit(ctx, i);				\
	}
FOR_EACH_TRIGGER(URETPROBE_EXIT)

/* --kprobe SYM: the kernel function was entered in a thread in scope. */
#define KPROBE_HIT(i)							\
	SEC("kprobe")							\
	int BPF_KPROBE(kprobe_hit_##i)					\
	{								\
		return probe_hit(ctx, TRIGGER_KPROBE, i);		\
	}
FOR_EACH_TRIGGER(KPROBE_HIT)

/*
 * --tracepoint CAT:NAME: a hit in a thread in scope. The record's first two 8-byte words
 * after the common header stand for the "arguments" (the format file says what they are).
 */
static __always_inline int tracepoint_hit(void *ctx, __u32 index)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct cand c = {};
	__u64 args[2] = {};

	if (!in_scope(id >> 32))
		return tp_ret(0);
	c.index = index & SLOT_MASK;
	__sync_fetch_and_add(&hits[c.index], 1);
	bpf_probe_read_kernel(args, sizeof(args), ctx + sizeof(struct trace_entry));
	c.kind = TRIGGER_TRACEPOINT;
	c.pid = id >> 32;
	c.tid = (__u32)id;
	c.now = bpf_ktime_get_ns();
	c.arg0 = args[0];
	c.arg1 = args[1];
	return tp_ret(try_fire(&c));
}

#define TRACEPOINT_HIT(i)						\
	SEC("tp")							\
	int tracepoint_hit_##i(void *ctx)				\
	{								\
		return tracepoint_hit(ctx, i);				\
	}
FOR_EACH_TRIGGER(TRACEPOINT_HIT)

/*
 * The daemon's trigger plane: one program per hook for every rule, the rule's slot being
 * the BPF cookie of its probe (Linux 5.15), so that adding or removing a rule attaches or
 * detaches its own probes and nothing else (user/triggers.c, triggers__plane_add).
 */
static __always_inline __u32 plane_slot(void *ctx)
{
	return (__u32)bpf_get_attach_cookie(ctx) & SLOT_MASK;
}

SEC("uprobe")
int BPF_KPROBE(plane_uprobe_hit)
{
	return probe_hit(ctx, TRIGGER_UPROBE, plane_slot(ctx));
}

SEC("uprobe")
int BPF_KPROBE(plane_uprobe_entry)
{
	return uprobe_entry(ctx, plane_slot(ctx));
}

SEC("uretprobe")
int BPF_KRETPROBE(plane_uretprobe_exit)
{
	return uretprobe_exit(ctx, plane_slot(ctx));
}

SEC("kprobe")
int BPF_KPROBE(plane_kprobe_hit)
{
	return probe_hit(ctx, TRIGGER_KPROBE, plane_slot(ctx));
}

SEC("tp")
int plane_tracepoint_hit(void *ctx)
{
	__u32 group = (__u32)bpf_get_attach_cookie(ctx), k, n = nr_tp_list, e, i;

	for (k = 0; k < PLANE_MAX_LATENCY_RULES && k < n; k++) {
		e = tp_list[k];
		if (!e)
			continue;
		i = (e - 1) & SLOT_MASK;
		if (idx_tp_group[i] == group)
			tracepoint_hit(ctx, i);
	}
	return TP_LINK_RET;
}

/* ---- run-queue latency (runqslower's method) ---- */

static __always_inline void runq_enqueue(__u32 tgid, __u32 tid)
{
	__u64 ts;

	if (!tid || !in_scope(tgid))
		return;
	ts = bpf_ktime_get_ns();
	bpf_map_update_elem(&runq_start, &tid, &ts, BPF_ANY);
}

/* `next` is about to run after waiting since `start`: fire if it waited too long. */
static __always_inline int runq_qualify(__u64 start, __u32 next_tid, __u32 next_tgid,
					const char *next_comm, __u32 prev_tid)
{
	struct cand c = {};
	__u32 i = runq_index & (MAX_TRIGGERS - 1);
	int fire = 0;

	c.now = bpf_ktime_get_ns();
	c.latency_ns = c.now - start;
	c.kind = TRIGGER_RUNQ_LATENCY;
	c.pid = next_tgid;
	c.tid = next_tid;
	c.aux = prev_tid;
	c.comm = next_comm;
	if (per_index) {
		/* the plane may hold several run-queue rules: each has its threshold */
		__u32 k, n = nr_runq_list, e;

		for (k = 0; k < PLANE_MAX_LATENCY_RULES && k < n; k++) {
			e = runq_list[k];
			if (!e)
				continue;
			i = (e - 1) & SLOT_MASK;
			__sync_fetch_and_add(&hits[i], 1);
			if (c.latency_ns <= idx_thresh_ns[i])
				continue;
			c.index = i;
			fire |= try_fire(&c);
		}
		return fire;
	}
	__sync_fetch_and_add(&hits[i], 1);
	if (c.latency_ns <= thresh_ns[i])
		return 0;
	c.index = i;
	return try_fire(&c);
}

/* The hash's side of a switch (tp programs, gate mode). */
static __always_inline int runq_switch(__u32 next_tid, __u32 next_tgid, const char *next_comm,
				       __u32 prev_tid)
{
	__u64 *tsp, start;

	/* Most switches on a host are other processes': no map lookup for them. */
	if (next_tgid && !in_scope(next_tgid))
		return 0;
	tsp = bpf_map_lookup_elem(&runq_start, &next_tid);
	if (!tsp)
		return 0;
	start = *tsp;
	bpf_map_delete_elem(&runq_start, &next_tid);
	return runq_qualify(start, next_tid, next_tgid, next_comm, prev_tid);
}

/* `p` became runnable (tp_btf). Gate mode's switch is a tp program: it reads the hash. */
/* tp_btf arguments are BTF pointers: read directly, without a bpf_probe_read call each. */
static __always_inline void runq_enqueue_task(struct task_struct *p)
{
	__u32 tgid = p->tgid, tid = p->pid;
	__u64 *ts;

	if (gate_mode) {
		runq_enqueue(tgid, tid);
		return;
	}
	if (!tid || !in_scope(tgid))
		return;
	ts = bpf_task_storage_get(&runq_task_start, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (ts)
		*ts = bpf_ktime_get_ns();
}

/* task_struct.state before Linux 5.14 renamed it __state (a CO-RE flavor of it). */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline long task_state(struct task_struct *t)
{
	struct task_struct___pre514 *old = (void *)t;

	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ(old, state);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sched_wakeup, struct task_struct *p)
{
	runq_enqueue_task(p);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(sched_wakeup_new, struct task_struct *p)
{
	runq_enqueue_task(p);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 next_tgid = next->tgid, next_tid = next->pid;
	__u64 *ts, start;

	/* A preempted thread is runnable again from now on. */
	if (task_state(prev) == TASK_RUNNING)
		runq_enqueue_task(prev);
	if (!next_tid || !in_scope(next_tgid))
		return 0;
	ts = bpf_task_storage_get(&runq_task_start, next, 0, 0);
	if (!ts || !*ts)
		return 0;
	start = *ts;
	*ts = 0;
	runq_qualify(start, next_tid, next_tgid, next->comm, prev->pid);
	return 0;
}

/*
 * tp variants: for kernels without tp_btf, and for gate mode (only a tracepoint perf
 * event can pause PT). Their records have no tgid: the target's threads are learnt when
 * they are switched out (then they are `current`).
 */
static __always_inline bool tp_tid_in_scope(__u32 tid)
{
	return !targ_tgid || bpf_map_lookup_elem(&target_tids, &tid);
}

/* A thread of the target became runnable (sched_wakeup, sched_wakeup_new). */
static __always_inline int tp_wakeup(struct trace_event_raw_sched_wakeup_template *ctx)
{
	__u32 tid = ctx->pid;

	if (tp_tid_in_scope(tid))
		runq_enqueue(targ_tgid, tid);
	return TP_LINK_RET;
}

SEC("tp/sched/sched_wakeup")
int tp_sched_wakeup(struct trace_event_raw_sched_wakeup_template *ctx)
{
	return tp_wakeup(ctx);
}

SEC("tp/sched/sched_wakeup_new")
int tp_sched_wakeup_new(struct trace_event_raw_sched_wakeup_template *ctx)
{
	return tp_wakeup(ctx);
}

SEC("tp/sched/sched_switch")
int tp_sched_switch(struct trace_event_raw_sched_switch *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 prev = ctx->prev_pid, next = ctx->next_pid, one = 1;

	/* prev is current here. */
	if (prev && in_scope(id >> 32)) {
		if (targ_tgid)
			bpf_map_update_elem(&target_tids, &prev, &one, BPF_ANY);
		if (ctx->prev_state == TASK_RUNNING)
			runq_enqueue(id >> 32, prev);
	}
	/* System-wide, next's tgid is unknown here: 0, the loader looks it up. */
	return tp_ret(runq_switch(next, targ_tgid, ctx->next_comm, prev));
}

/* ---- syscall latency ---- */

static __always_inline void sys_enter_common(long nr, __u64 arg0)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct sys_entry e;
	__u32 tid = (__u32)id;

	if (!in_scope(id >> 32))
		return;
	e.ts = program_ns();
	e.kts = bpf_ktime_get_ns();
	e.nr = nr;
	e.arg0 = arg0;
	bpf_map_update_elem(&sys_start, &tid, &e, BPF_ANY);
}

/* The plane: every syscall rule sees the call. */
static __always_inline int sys_exit_plane(struct cand *c, __u64 id, __u64 now)
{
	__u32 k, n = nr_sys_list, e, i;
	__s32 nr;
	int fire = 0;

	for (k = 0; k < PLANE_MAX_LATENCY_RULES && k < n; k++) {
		e = sys_list[k];
		if (!e)
			continue;
		i = (e - 1) & SLOT_MASK;
		nr = idx_syscall_nr[i];
		if (nr >= 0 && nr != (__s64)c->arg0)
			continue;
		__sync_fetch_and_add(&hits[i], 1);
		if (c->latency_ns <= idx_thresh_ns[i])
			continue;
		c->index = i;
		c->kind = TRIGGER_SYSCALL_LATENCY;
		c->pid = id >> 32;
		c->tid = (__u32)id;
		c->now = now;
		fire |= try_fire(c);
	}
	return fire;
}

static __always_inline int sys_exit_common(long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct sys_entry *e;
	struct cand c = {};
	__u32 tid = (__u32)id, i;
	__u64 now;

	if (!in_scope(id >> 32))
		return 0;
	e = bpf_map_lookup_elem(&sys_start, &tid);
	if (!e)
		return 0;
	now = bpf_ktime_get_ns();
	/* per-thread trace clocks: a system call lasts its real length (ss_backend.c) */
	c.latency_ns = trace_clock.per_thread ? now - e->kts : program_ns() - e->ts;
	if ((__s64)c.latency_ns < 0)
		c.latency_ns = 0;
	c.arg0 = e->nr;
	c.arg1 = ret;
	bpf_map_delete_elem(&sys_start, &tid);
	if (per_index)
		return sys_exit_plane(&c, id, now);
	for (i = 0; i < MAX_TRIGGERS; i++) {
		if (kinds[i] != TRIGGER_SYSCALL_LATENCY)
			continue;
		if (syscall_nrs[i] >= 0 && syscall_nrs[i] != (__s64)c.arg0)
			continue;
		__sync_fetch_and_add(&hits[i], 1);
		if (c.latency_ns <= thresh_ns[i])
			continue;
		c.index = i;
		c.kind = TRIGGER_SYSCALL_LATENCY;
		c.pid = id >> 32;
		c.tid = tid;
		c.now = now;
		return try_fire(&c);
	}
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter, struct pt_regs *regs, long id)
{
	sys_enter_common(id, PT_REGS_PARM1_CORE_SYSCALL(regs));
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit, struct pt_regs *regs, long ret)
{
	sys_exit_common(ret);
	return 0;
}

SEC("tp/raw_syscalls/sys_enter")
int tp_sys_enter(struct trace_event_raw_sys_enter *ctx)
{
	sys_enter_common(ctx->id, ctx->args[0]);
	return TP_LINK_RET;
}

SEC("tp/raw_syscalls/sys_exit")
int tp_sys_exit(struct trace_event_raw_sys_exit *ctx)
{
	return tp_ret(sys_exit_common(ctx->ret));
}
