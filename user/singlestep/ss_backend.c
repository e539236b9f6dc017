// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The singlestep backend: software Intel PT. Every thread of the target is ptraced and
 * single-stepped; each step is classified (user/singlestep/ss_insn.c) and encoded as user-only PT
 * hardware would encode it (user/singlestep/ss_enc.c) into the ring of the virtual CPU the thread
 * runs on. Sideband (user/singlestep/ss_sb.c) is what the kernel would write for per-CPU PT.
 *
 * Threads run on `--cpus` virtual CPUs in rounds: each round steps the current thread of
 * every virtual CPU once, all at the same virtual time, and waits for those steps. A
 * thread whose step may block (a system call, a signal delivery) is "in flight" and does
 * not hold up the round; if another thread waits for its CPU, it is switched out. After
 * a quantum of instructions a thread gives its CPU to a waiting one.
 *
 * What a step turned out to be comes from the ptrace stop that ends it (measured on this
 * kernel, see notes/uprobes-and-singlestep.md):
 *   SIGTRAP TRAP_TRACE       the instruction executed
 *   SIGTRAP TRAP_BRKPT       a system call returned (its exit report)
 *   SIGTRAP SI_USER at 0xcc  a probed instruction executed (the uprobe's own SIGTRAP)
 *   SIGTRAP TRAP_UNK (5)     after injecting a signal: stopped at the handler's entry
 *   other signals            signal-delivery-stop: nothing executed; delivered next time
 *   PTRACE_EVENT_*           clone, fork, exec, exit inside a system call
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <linux/futex.h>
#include <linux/prctl.h>

#include "array.h"
#include "aux_ring.h"
#include "backend.h"
#include "log.h"
#include "privs.h"
#include "proc_synth.h"
#include "pt_pmu.h"
#include "ss_enc.h"
#include "ss_insn.h"
#include "ss_kclock.h"
#include "ss_mm.h"
#include "ss_sb.h"
#include "ss_verify.h"
#include "target.h"
#include "vdso.h"

/* The PMU type the capture names for its (virtual) intel_pt event. */
#define SS_PMU_TYPE 8
/* Instructions a thread runs before a waiting thread may take its CPU. */
#define SS_QUANTUM 10000
/*
 * --clock virtual: one instruction per round, this many ns each. Perf estimates the
 * time of an instruction between timing packets as 2 TSC ticks per instruction (scaled
 * by max_non_turbo_ratio / CBR, equal here): a faster clock would put trace after the
 * sideband that follows it, and give it to the wrong thread.
 */
#define SS_NS_PER_INSN 2
/* A thread in a system call for longer than this gives its CPU to a waiting one. */
#define SS_BLOCKED_NS 2000000ull
/* Most threads and processes followed. */
#define SS_MAX_THREADS 4096
/* Addresses where threads meet (atomics, futexes, plain stores) whose clock is kept: 8-way sets. */
#define SS_SYNC_SLOTS 65536
#define SS_SYNC_WAYS 8
/*
 * Per-thread clocks: virtual CPUs added to the --cpus ones, each with its own ring, for
 * a thread that would otherwise go on a CPU whose clock is ahead of its own (which
 * would stretch its last system call to that time).
 */
#define SS_CLOCK_CPUS 6
/* System calls per thread whose start on its clock is kept, for the threads they woke. */
#define SS_CALL_HISTORY 16

/* The kernel's restart codes in rax at a system call exit (include/linux/errno.h). */
#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516

#ifndef TRAP_UNK
#define TRAP_UNK 5
#endif

enum tstate {
	TS_NEW,		/* attached; its first stop has not been seen */
	TS_STOPPED,	/* in a ptrace stop we have dealt with: ready to step */
	TS_STEPPING,	/* resumed for one instruction that cannot block */
	TS_INFLIGHT,	/* resumed and may block (system call, signal delivery, unknown code) */
	TS_GONE,
};

struct ss_proc {
	pid_t pid;
	pid_t ppid;
	struct ss_mm *mm;		/* current address space, NULL before the first exec */
};

struct ss_thread {
	pid_t tid;
	pid_t ptid;			/* the thread that created it (FORK/EXIT records) */
	struct ss_proc *proc;
	enum tstate state;
	int cpu;			/* virtual CPU it is on, -1 if none */
	bool queued;			/* waiting in the run queue */
	uint64_t quantum;		/* instructions left in its slice */
	/* Where it stands (TS_STOPPED): */
	uint64_t ip;
	int pending_sig;		/* to deliver with the next resume */
	bool maybe_restart;		/* at a syscall exit the kernel restarts (ip - 2) */
	/* The step in flight: */
	uint64_t step_ip;
	struct ss_mm *step_mm;
	struct ss_insn step_insn;
	bool step_known;		/* step_insn is valid */
	bool in_syscall;		/* inside a system call: the next TRAP_BRKPT ends it */
	uint64_t syscall_end;		/* b->now when the last system call returned */
	bool syscall_unencoded;		/* the syscall at step_ip is not encoded yet */
	uint64_t syscall_time;		/* b->now when that syscall was resumed: hardware
					 * disables tracing as it starts, not as it ends */
	long sysno;			/* its number, -1 */
	unsigned long sysarg0, sysarg1;	/* its first arguments */
	int injected;			/* signal delivered with the resume, 0 if none */
	uint64_t resumed_ns;		/* wall clock of the resume */
	/* A stop that came before we knew the thread (a clone child can beat its parent). */
	int early_status;
	bool has_early;
	bool unwanted;			/* a process --follow-forks did not ask for: detach */
	int last_cpu;			/* CPU of its last encoded instruction, -1 if none */
	uint64_t last_time;		/* and when */
	uint64_t clk;			/* its own trace clock (--clock mixed): the time of
					 * its last instruction or sideband record */
	struct user_regs_struct regs;	/* at its last stop: what the next step starts with */
	uint64_t syscall_runq_ns;	/* its run-queue wait (schedstat) at the syscall's start */
	int schedstat_fd;		/* /proc/TID/schedstat, kept open (-1: not yet) */
	uint64_t sync_addr;		/* its last atomic's address, */
	uint64_t sync_prev, sync_set;	/* that address's clock before and after it */
	uint64_t load_addr;		/* the plain load in flight's address, */
	bool load_pending;		/* to look at again when it is done (step_done()) */
	/* Its last system calls as the kernel entered them (enter_ns) and where each
	 * started on its clock: a thread it woke ends its wait after that (ring). */
	struct {
		uint64_t enter_ns, clk;
	} calls[SS_CALL_HISTORY];
	unsigned int calls_next;
	uint64_t kcall_enter_ns;	/* the last call taken from the kernel's side */
};

struct ss_vcpu {
	struct ss_enc *enc;
	struct ss_thread *cur;
	bool itrace_started;
	uint64_t clk;			/* time of the last packet or record on this CPU */
};

/* The trace clock of the last atomic or futex wake at an address (key 0: free). */
struct ss_sync {
	uint64_t addr;			/* 8-byte aligned; 0: a free slot */
	pid_t pid;			/* of the process whose memory it is */
	uint64_t clk;
};

struct backend {
	const struct capture_opts *opts;
	struct target *target;
	struct ss_enc_config enc_cfg;
	struct ss_dis *dis;
	struct ss_sb *sb;
	struct ss_verify *verify;
	struct ss_vcpu *cpus;
	int nr_cpus;			/* in use: --cpus, and those added (max_cpus) */
	int max_cpus;
	struct ss_thread **threads;
	int nr_threads;
	size_t cap_threads;
	struct ss_proc **procs;
	int nr_procs;
	size_t cap_procs;
	struct ss_mm **mms;		/* every address space, by ss_mm__id() */
	int nr_mms;
	size_t cap_mms;
	struct ss_thread **runq;	/* FIFO of ready threads without a CPU */
	int runq_head, runq_len;
	int nr_live;			/* threads not gone */
	int sigchld_fd;
	sigset_t old_mask;
	bool mask_set;
	unsigned long ptrace_opts;
	uint64_t now;			/* time of the current round (perf clock ns = TSC);
					 * per-thread clocks: the latest time given out */
	bool per_thread;		/* --clock mixed: each thread keeps its own clock */
	struct ss_sync *sync;		/* per_thread: SS_SYNC_SLOTS */
	struct ss_kclock *kclock;	/* per_thread: system calls and wakes from the
					 * kernel; NULL: measured by ptbpf (no BPF) */
	const struct run_hooks *hooks;	/* of the run in progress: the triggers' clock */
	uint64_t round;
	uint64_t steps;			/* instructions encoded */
	uint64_t t_start_ns, t_run_ns;	/* wall clock of run() */
	uint64_t now_start;		/* the trace clock at start() */
	uint64_t progress_ns;		/* wall clock of the last progress line, 0: none yet */
	bool progress;			/* stderr is a terminal: show progress */
	uint8_t *vdso;
	size_t vdso_size;
	bool warned_unknown;
	char desc[256];
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* ---- threads, processes, run queue ---- */

static struct ss_thread *thread_find(struct backend *b, pid_t tid)
{
	int i;

	for (i = 0; i < b->nr_threads; i++)
		if (b->threads[i]->tid == tid && b->threads[i]->state != TS_GONE)
			return b->threads[i];
	return NULL;
}

/* Thread `tid`, gone or not: the latest one of that tid. */
static struct ss_thread *thread_find_any(struct backend *b, pid_t tid)
{
	int i;

	for (i = b->nr_threads - 1; i >= 0; i--)
		if (b->threads[i]->tid == tid)
			return b->threads[i];
	return NULL;
}

static struct ss_thread *thread_new(struct backend *b, pid_t tid, struct ss_proc *p)
{
	struct ss_thread *t;

	if (b->nr_threads >= SS_MAX_THREADS) {
		elog("singlestep: more than %d threads, not following thread %d\n", SS_MAX_THREADS,
		     tid);
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t || array_grow_sz((void **)&b->threads, &b->cap_threads, (size_t)b->nr_threads + 1,
				sizeof(*b->threads))) {
		free(t);
		return NULL;
	}
	t->tid = tid;
	t->proc = p;
	t->state = TS_NEW;
	t->cpu = -1;
	t->last_cpu = -1;
	t->sysno = -1;
	t->clk = b->now;
	t->schedstat_fd = -1;
	b->threads[b->nr_threads++] = t;
	b->nr_live++;
	return t;
}

static struct ss_proc *proc_new(struct backend *b, pid_t pid, pid_t ppid)
{
	struct ss_proc *p = calloc(1, sizeof(*p));

	if (!p || array_grow_sz((void **)&b->procs, &b->cap_procs, (size_t)b->nr_procs + 1,
				sizeof(*b->procs))) {
		free(p);
		return NULL;
	}
	p->pid = pid;
	p->ppid = ppid;
	b->procs[b->nr_procs++] = p;
	/* a process the kernel side misses only measures its calls the old way */
	if (b->kclock && ss_kclock__trace(b->kclock, pid))
		dlog("singlestep: process %d: its system calls are timed by ptbpf\n", pid);
	return p;
}

static int runq_push(struct backend *b, struct ss_thread *t)
{
	if (t->queued)
		return 0;
	if (b->runq_len == SS_MAX_THREADS)
		return -ENOSPC;
	b->runq[(b->runq_head + b->runq_len++) % SS_MAX_THREADS] = t;
	t->queued = true;
	return 0;
}

static struct ss_thread *runq_pop(struct backend *b)
{
	struct ss_thread *t;

	while (b->runq_len) {
		t = b->runq[b->runq_head];
		b->runq_head = (b->runq_head + 1) % SS_MAX_THREADS;
		b->runq_len--;
		t->queued = false;
		/* Threads that left meanwhile are skipped. */
		if (t->state == TS_STOPPED && t->cpu < 0)
			return t;
	}
	return NULL;
}

/* ---- sideband ---- */

static int thread_cpu(const struct ss_thread *t)
{
	return t && t->cpu >= 0 ? t->cpu : 0;
}

/*
 * The time of a sideband record: after the trace that came before it, before the trace
 * that follows, so perf puts each piece of a CPU's trace on the right side of it.
 */
static uint64_t sb_time(struct backend *b)
{
	return ++b->now;
}

static void clock_seen(struct backend *b, uint64_t t)
{
	if (t > b->now)
		b->now = t;
}

/* A record of thread t's (its CPU's, if it has one): after what it did so far. */
static uint64_t sb_time_thread(struct backend *b, struct ss_thread *t)
{
	struct ss_vcpu *v;

	if (!b->per_thread)
		return sb_time(b);
	v = t->cpu >= 0 ? &b->cpus[t->cpu] : NULL;
	if (v && v->clk > t->clk)
		t->clk = v->clk;
	t->clk++;
	if (v)
		v->clk = t->clk;
	clock_seen(b, t->clk);
	return t->clk;
}

/*
 * A record of a whole process (a new mapping, exec): after everything so far, and every
 * thread of the process goes on after it, so that its trace finds the mapping.
 */
static uint64_t sb_time_proc(struct backend *b, pid_t pid)
{
	uint64_t now = sb_time(b);
	int i;

	if (!b->per_thread)
		return now;
	for (i = 0; i < b->nr_threads; i++) {
		struct ss_thread *t = b->threads[i];

		if (t->state == TS_GONE || !t->proc || t->proc->pid != pid || t->clk >= now)
			continue;
		t->clk = now;
		if (t->cpu >= 0 && b->cpus[t->cpu].clk < now)
			b->cpus[t->cpu].clk = now;
	}
	return now;
}

/* New sideband about process `pid`: its CPUs put time into the trace before going on. */
static void sync_cpus_of(struct backend *b, pid_t pid)
{
	int c;

	for (c = 0; c < b->nr_cpus; c++)
		if (b->cpus[c].cur && b->cpus[c].cur->proc->pid == pid)
			ss_enc__need_sync(b->cpus[c].enc);
}

static int on_new_map(void *ctx, struct ss_mm *mm, const struct ss_map *m)
{
	struct backend *b = ctx;
	pid_t pid = ss_mm__pid(mm);
	struct pd_record r;

	ss_map__record(m, pid, &r);
	sync_cpus_of(b, pid);
	dlog("singlestep: %d maps %s at %#" PRIx64 "-%#" PRIx64 "\n", pid, m->name, m->start,
	     m->end);
	return ss_sb__add(b->sb, &r, pid, pid, sb_time_proc(b, pid), 0, SS_ID_SB(0));
}

static int emit_comm(struct backend *b, struct ss_thread *t, bool exec)
{
	char comm[32];

	if (proc_read_comm(t->proc->pid, t->tid, comm, sizeof(comm)))
		return 0;	/* gone meanwhile */
	sync_cpus_of(b, t->proc->pid);
	return ss_sb__comm(b->sb, t->proc->pid, t->tid, comm, exec,
			   exec ? sb_time_proc(b, t->proc->pid) : sb_time_thread(b, t),
			   thread_cpu(t));
}

static struct ss_mm *mm_by_id(void *ctx, int id)
{
	struct backend *b = ctx;

	return id >= 0 && id < b->nr_mms ? b->mms[id] : NULL;
}

static int mm_register(struct backend *b, struct ss_mm *mm)
{
	if (array_grow_sz((void **)&b->mms, &b->cap_mms, (size_t)b->nr_mms + 1, sizeof(*b->mms)))
		return -ENOMEM;
	b->mms[b->nr_mms++] = mm;
	return 0;
}

static int proc_exec_mm(struct backend *b, struct ss_proc *p)
{
	struct ss_mm *mm;
	int err;

	err = ss_mm__new(p->pid, b->nr_mms, on_new_map, b, &mm);
	if (err)
		return err;
	err = mm_register(b, mm);
	if (err) {
		ss_mm__free(mm);
		return err;
	}
	p->mm = mm;
	return 0;
}

/* ---- virtual CPUs ---- */

static int switch_in(struct backend *b, int c, struct ss_thread *t)
{
	struct ss_vcpu *v = &b->cpus[c];
	int err;

	/* Its clock goes on from the CPU's: a thread behind it waited for the CPU. */
	v->cur = t;
	t->cpu = c;
	err = ss_sb__switch(b->sb, c, 0, 0, t->proc->pid, t->tid, false, sb_time_thread(b, t));
	if (!err && !v->itrace_started) {
		err = ss_sb__itrace_start(b->sb, t->proc->pid, t->tid, sb_time_thread(b, t), c);
		v->itrace_started = true;
	}
	dlog("singlestep: CPU %d: thread %d in (state %d)\n", c, t->tid, t->state);
	t->quantum = SS_QUANTUM;
	/* Each thread's piece of the CPU's trace starts at a sync point with its time. */
	ss_enc__need_sync(v->enc);
	return err;
}

/* The current thread leaves CPU c; tracing was already disabled for it. */
static int switch_out(struct backend *b, int c, bool preempt)
{
	struct ss_vcpu *v = &b->cpus[c];
	struct ss_thread *t = v->cur;

	if (!t)
		return 0;
	uint64_t now;

	dlog("singlestep: CPU %d: thread %d out (state %d%s)\n", c, t->tid, t->state,
	     preempt ? ", preempted" : "");
	now = sb_time_thread(b, t);
	v->cur = NULL;
	t->cpu = -1;
	return ss_sb__switch(b->sb, c, t->proc->pid, t->tid, 0, 0, preempt, now);
}

/* ---- encoding ---- */

/* Forget what has left the rings: a wrapped ring is decoded from its first PSB. */
static void trim_verify_logs(struct backend *b)
{
	int c;

	for (c = 0; c < b->nr_cpus; c++) {
		struct ss_enc *e = b->cpus[c].enc;
		uint64_t total = ss_enc__total(e), size = ss_enc__ring_size(e);
		const struct ss_psb_mark *m;
		size_t nr, i;

		if (total <= size)
			continue;
		ss_enc__trim_psb(e, total - size);
		m = ss_enc__psb_marks(e, &nr);
		for (i = 0; i < nr && m[i].offset < total - size; i++)
			;
		if (i < nr)
			ss_verify__trim(b->verify, c, m[i].insn);
	}
}

static int encode_at(struct backend *b, struct ss_thread *t, uint64_t ip, struct ss_mm *mm,
		     const struct ss_insn *insn, uint64_t next, uint64_t now)
{
	struct ss_vcpu *v;
	int err;

	if (t->cpu < 0)
		return 0;	/* finished after it was switched out: outside the trace */
	v = &b->cpus[t->cpu];
	if (b->verify) {
		err = ss_verify__log(b->verify, t->cpu, ip, ss_mm__id(mm));
		if (err)
			return err;
	}
	err = ss_enc__begin(v->enc, ip, now);
	if (!err)
		err = ss_enc__end(v->enc, insn, ip, next);
	if (err)
		return err;
	t->last_cpu = t->cpu;
	t->last_time = now;
	if (b->verify && !(++b->steps & 0xffff))
		trim_verify_logs(b);
	else if (!b->verify)
		b->steps++;
	if (t->quantum)
		t->quantum--;
	return 0;
}

static int encode(struct backend *b, struct ss_thread *t, uint64_t ip, struct ss_mm *mm,
		  const struct ss_insn *insn, uint64_t next)
{
	return encode_at(b, t, ip, mm, insn, next, b->per_thread ? t->clk : b->now);
}

/*
 * The syscall instruction of the step in flight, once it is known to have run, at the
 * time it started (the clock may have moved on while it blocked: --clock mixed, real).
 */
static int encode_syscall(struct backend *b, struct ss_thread *t)
{
	if (!t->syscall_unencoded)
		return 0;
	t->syscall_unencoded = false;
	return encode_at(b, t, t->step_ip, t->step_mm, &t->step_insn, 0,
			 t->syscall_time ? t->syscall_time : b->per_thread ? t->clk : b->now);
}

/* Tracing on t's CPU stops before `ip` for a reason outside the instructions. */
static int async_disable(struct backend *b, struct ss_thread *t, uint64_t ip)
{
	if (t->cpu < 0)
		return 0;
	return ss_enc__async_disable(b->cpus[t->cpu].enc, ip);
}

/* ---- ptrace ---- */

static int get_regs(pid_t tid, struct user_regs_struct *regs)
{
	if (ptrace(PTRACE_GETREGS, tid, NULL, regs))
		return -errno;
	return 0;
}

static bool restart_pending(const struct user_regs_struct *regs)
{
	long rax = (long)regs->rax;

	return (long)regs->orig_rax >= 0 &&
	       (rax == -ERESTARTSYS || rax == -ERESTARTNOINTR || rax == -ERESTARTNOHAND ||
		rax == -ERESTART_RESTARTBLOCK);
}

/* ---- the per-thread clock (--clock mixed) ---- */

/*
 * Where threads meet: the clock of the last atomic instruction or futex wake at an
 * address of process `pid`. A full set gives up its oldest entry: an edge lost there
 * only lets a later meeting at that address go unordered.
 */
static struct ss_sync *sync_find(struct backend *b, pid_t pid, uint64_t addr, bool create)
{
	struct ss_sync *set, *oldest;
	uint64_t h;
	int i;

	addr &= ~7ull;
	if (!addr)
		return NULL;
	h = ((addr >> 3) ^ (uint64_t)pid * 0x9e3779b97f4a7c15ull) * 0x9e3779b97f4a7c15ull;
	set = &b->sync[(h >> 40) % (SS_SYNC_SLOTS / SS_SYNC_WAYS) * SS_SYNC_WAYS];
	oldest = set;
	for (i = 0; i < SS_SYNC_WAYS; i++) {
		if (set[i].addr == addr && set[i].pid == pid)
			return &set[i];
		if (set[i].clk < oldest->clk)
			oldest = &set[i];
	}
	if (!create)
		return NULL;
	*oldest = (struct ss_sync){ .addr = addr, .pid = pid };
	return oldest;
}

/* What the BPF programs read as thread t's clock while it steps on CPU c. */
static void publish_thread_clock(struct backend *b, int c, const struct ss_thread *t)
{
	struct trace_clock *tc = b->hooks ? b->hooks->trace_clock : NULL;

	if (!tc || c >= TRACE_CLOCK_SLOTS)
		return;
	__atomic_store_n(&tc->slot[c].tid, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&tc->slot[c].now_ns, t->clk, __ATOMIC_RELEASE);
	__atomic_store_n(&tc->slot[c].tid, (uint32_t)t->tid, __ATOMIC_RELEASE);
	__atomic_store_n(&tc->now_ns, b->now, __ATOMIC_RELEASE);
}

static bool futex_wakes(unsigned long op)
{
	switch (op & FUTEX_CMD_MASK) {
	case FUTEX_WAKE:
	case FUTEX_REQUEUE:
	case FUTEX_CMP_REQUEUE:
	case FUTEX_WAKE_OP:
	case FUTEX_UNLOCK_PI:
	case FUTEX_WAKE_BITSET:
		return true;
	default:
		return false;
	}
}

static bool futex_waits(unsigned long op)
{
	switch (op & FUTEX_CMD_MASK) {
	case FUTEX_WAIT:
	case FUTEX_LOCK_PI:
	case FUTEX_WAIT_BITSET:
	case FUTEX_WAIT_REQUEUE_PI:
	case FUTEX_LOCK_PI2:
		return true;
	default:
		return false;
	}
}

/*
 * Thread t is about to step its next instruction: its time. Per thread, 2 ns after its
 * last one, and not before its CPU's last packet; an atomic instruction comes after the
 * last one at its address (whichever thread ran it: the lock it takes was released
 * before), and a futex wake is noted for the wait it ends.
 */
static void clock_step(struct backend *b, struct ss_thread *t)
{
	struct ss_vcpu *v = t->cpu >= 0 ? &b->cpus[t->cpu] : NULL;
	struct ss_sync *s;
	uint64_t addr;

	if (!b->per_thread) {
		t->clk = b->now;
		return;
	}
	if (v && v->clk > t->clk)
		t->clk = v->clk;
	t->clk += SS_NS_PER_INSN;
	t->load_pending = false;
	if (t->step_known && t->step_insn.atomic &&
	    !ss_insn__mem_addr(&t->step_insn, &t->regs, t->ip, &addr) &&
	    (s = sync_find(b, t->proc->pid, addr, true))) {
		if (s->clk >= t->clk)
			t->clk = s->clk + 1;
		t->sync_addr = addr & ~7ull;
		t->sync_prev = s->clk;
		s->clk = t->sync_set = t->clk;
	} else if (t->step_known && t->step_insn.mem_access && !ss_insn__thread_private(&t->step_insn) &&
		   !ss_insn__mem_addr(&t->step_insn, &t->regs, t->ip, &addr)) {
		/*
		 * A plain load after a store reads what it wrote, or later: threads are
		 * stepped one instruction at a time, so the order of the steps is the real
		 * order. It comes after that store (a flag another thread spins on); a store
		 * leaves its time, the latest one, as the value it leaves.
		 */
		if ((t->step_insn.mem_access & SS_MEM_READ) &&
		    (s = sync_find(b, t->proc->pid, addr, false)) && s->clk >= t->clk) {
			dlog("singlestep: thread %d: load at %#" PRIx64 " from %#" PRIx64
			     " moves its clock %" PRIu64 " ns on\n", t->tid, t->ip, addr,
			     s->clk + 1 - t->clk);
			t->clk = s->clk + 1;
		}
		if (t->step_insn.mem_access & SS_MEM_READ) {
			t->load_addr = addr;
			t->load_pending = true;
		}
		if ((t->step_insn.mem_access & SS_MEM_WRITE) &&
		    (s = sync_find(b, t->proc->pid, addr, true))) {
			s->clk = t->clk;
		}
	}
	if (t->sysno == SYS_futex && futex_wakes(t->sysarg1) &&
	    (s = sync_find(b, t->proc->pid, t->sysarg0, true)) && s->clk < t->clk)
		s->clk = t->clk;
	/*
	 * A thread that waits after its atomic found the lock taken: that attempt released
	 * nothing, and the holder's release must not wait for its clock.
	 */
	if (t->sysno == SYS_futex && futex_waits(t->sysarg1) &&
	    (t->sysarg0 & ~7ull) == t->sync_addr &&
	    (s = sync_find(b, t->proc->pid, t->sysarg0, false)) && s->clk == t->sync_set)
		s->clk = t->sync_prev;
	if (v) {
		v->clk = t->clk;
		publish_thread_clock(b, t->cpu, t);
	}
	clock_seen(b, t->clk);
}

/*
 * Nanoseconds thread t has waited on a run queue (0 if unknown). The file stays open: it
 * is read twice per system call, and a stop held longer changes what the program does
 * (a short timer fires at the return instead of in the code after it).
 */
static uint64_t runq_wait_ns(struct ss_thread *t)
{
	char path[64], buf[96];
	unsigned long long run, wait;
	ssize_t n;

	if (t->schedstat_fd < 0) {
		snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", t->proc->pid, t->tid);
		t->schedstat_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (t->schedstat_fd < 0)
			return 0;
	}
	n = pread(t->schedstat_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return sscanf(buf, "%llu %llu", &run, &wait) == 2 ? wait : 0;
}

/*
 * Where waker w's system call that the kernel entered at `enter_ns` started on w's
 * clock (the wake came during it), 0 if no longer known. A thread gone since woke as
 * it exited (its joiner, through CLONE_CHILD_CLEARTID): after all it did.
 */
static uint64_t waker_clock(struct backend *b, const struct ss_thread *w, uint64_t enter_ns)
{
	struct ss_kclock_call cur;
	int i;

	if (w->state == TS_GONE)
		return w->clk;
	for (i = 0; i < SS_CALL_HISTORY; i++)
		if (w->calls[i].enter_ns == enter_ns)
			return w->calls[i].clk;
	/* the call is still in flight for ptbpf */
	if (w->in_syscall && !ss_kclock__call(b->kclock, w->tid, &cur) && cur.enter_ns == enter_ns)
		return w->syscall_time;
	return 0;
}

/*
 * Thread t's system call as the kernel ran it, if its side saw it: `real`, its length
 * less its run-queue waits; `woken`, the clock of the traced thread that woke it, and
 * `after`, what of `real` came after that wake (0: no such wake). Returns false if
 * there is no record of this call (no BPF; a call the kernel side missed).
 */
static bool kernel_call(struct backend *b, struct ss_thread *t, uint64_t *real, uint64_t *woken,
			uint64_t *after)
{
	struct ss_kclock_call call;
	const struct ss_thread *w;
	uint64_t waited;

	if (!b->kclock || ss_kclock__call(b->kclock, t->tid, &call) || !call.exit_ns ||
	    call.exit_ns < call.enter_ns || call.enter_ns < t->resumed_ns ||
	    call.enter_ns == t->kcall_enter_ns)
		return false;
	t->kcall_enter_ns = call.enter_ns;
	t->calls[t->calls_next++ % SS_CALL_HISTORY].enter_ns = call.enter_ns;
	t->calls[(t->calls_next - 1) % SS_CALL_HISTORY].clk = t->syscall_time;
	waited = call.exit_delay_ns - call.enter_delay_ns;
	*real = call.exit_ns - call.enter_ns;
	*real = waited < *real ? *real - waited : 0;
	*woken = 0;
	if (call.wake_ns >= call.enter_ns && call.wake_ns <= call.exit_ns &&
	    (w = thread_find_any(b, (pid_t)call.waker)))
		*woken = waker_clock(b, w, call.waker_enter_ns);
	/* the wakee's own time after the wake: mostly the run-queue wait just subtracted */
	*after = call.exit_ns - call.wake_ns;
	*after = waited < *after ? *after - waited : 0;
	dlog("singlestep: thread %d: syscall %ld: %" PRIu64 " ns in the kernel, %" PRIu64
	     " ns of it on a run queue; woken by thread %d (0: none)\n", t->tid, t->sysno,
	     (uint64_t)(call.exit_ns - call.enter_ns), (uint64_t)waited,
	     *woken ? (int)call.waker : 0);
	return true;
}

/*
 * Thread t's system call returned (`ret`): it lasted as long as the kernel kept it (a
 * sleep, I/O, a timeout), less its waits for a real CPU (a loaded machine's, not the
 * program's). A call another traced thread ended (a wake seen by the kernel side; a
 * futex wait returning 0) lasted mostly that thread's stepping: it ends just after
 * the wake on the waker's clock. The kernel side times each call as the thread ran it;
 * without it, from the resume to the stop that reports the return, which counts ptbpf
 * noticing the return late.
 */
static void clock_syscall_end(struct backend *b, struct ss_thread *t, long ret)
{
	uint64_t now = mono_ns(), end, woken = 0, after = 0, real, waited;
	const struct ss_sync *s;

	if (!b->per_thread)
		return;
	if (!kernel_call(b, t, &real, &woken, &after)) {
		real = now > t->resumed_ns ? now - t->resumed_ns : 0;
		waited = runq_wait_ns(t) - t->syscall_runq_ns;
		if (t->syscall_runq_ns && waited < real)
			real -= waited;
		dlog("singlestep: thread %d: syscall %ld: %" PRIu64 " ns, %" PRIu64
		     " ns of it on a run queue\n", t->tid, t->sysno, real, waited);
	}
	end = t->syscall_time + real;
	if (woken) {
		end = (woken > t->syscall_time ? woken : t->syscall_time) + 1 + after;
	} else if (t->sysno == SYS_futex && futex_waits(t->sysarg1) && ret == 0) {
		s = sync_find(b, t->proc->pid, t->sysarg0, false);
		/* no wake seen (a thread's exit wakes its joiner): after all so far */
		woken = s ? s->clk : b->now;
		end = (woken > t->syscall_time ? woken : t->syscall_time) + 1;
	}
	if (end > t->clk)
		t->clk = end;
	clock_seen(b, t->clk);
}

static int resume(struct backend *b, struct ss_thread *t)
{
	struct user_regs_struct regs;
	struct ss_mm *mm = t->proc->mm;
	int err, sig;

	t->step_ip = t->ip;
	t->step_mm = mm;
	t->step_known = false;
	t->sysno = -1;
	t->injected = 0;
	err = mm ? ss_mm__insn(mm, b->dis, t->ip, &t->step_insn) : -EFAULT;
	/* Else the step will tell (step_done()). */
	t->step_known = !err;
	if (t->step_known && t->step_insn.cls == SS_INSN_SYSCALL) {
		if (!get_regs(t->tid, &regs)) {
			t->sysno = (long)regs.rax;
			t->sysarg0 = regs.rdi;
			t->sysarg1 = regs.rsi;
		}
		t->in_syscall = true;
		t->syscall_unencoded = true;
	}
	clock_step(b, t);
	if (t->in_syscall && t->syscall_unencoded) {
		t->syscall_time = b->per_thread ? t->clk : b->now;
		if (b->per_thread && !b->kclock)
			t->syscall_runq_ns = runq_wait_ns(t);
	}
	sig = t->pending_sig;
	t->pending_sig = 0;
	/* before: the kernel side's call must begin after it (kernel_call()) */
	t->resumed_ns = mono_ns();
	if (ptrace(PTRACE_SINGLESTEP, t->tid, NULL, (void *)(long)sig)) {
		err = -errno;
		if (err == -ESRCH) {
			/* Killed meanwhile: wait for its exit report. */
			t->state = TS_INFLIGHT;
			return 0;
		}
		elog("singlestep: PTRACE_SINGLESTEP of thread %d: %s\n", t->tid, strerror(-err));
		return err;
	}
	t->injected = sig;
	t->state = (t->step_known && t->step_insn.cls != SS_INSN_SYSCALL && !sig &&
		    !t->maybe_restart) ? TS_STEPPING : TS_INFLIGHT;
	return 0;
}

static int cont(struct ss_thread *t, int sig)
{
	if (ptrace(PTRACE_SINGLESTEP, t->tid, NULL, (void *)(long)sig) && errno != ESRCH)
		return -errno;
	return 0;
}

/* Maps changed or the thread renamed itself: what the kernel would have reported. */
static int after_syscall(struct backend *b, struct ss_thread *t)
{
	switch (t->sysno) {
	case SYS_mmap:
	case SYS_mprotect:
	case SYS_munmap:
	case SYS_mremap:
	case SYS_pkey_mprotect:
	case SYS_shmat:
	case SYS_remap_file_pages: {
		int err = t->proc->mm ? ss_mm__refresh(t->proc->mm) : 0;

		return err < 0 && err != -ESRCH ? err : 0;
	}
	case SYS_prctl:
		if (t->sysarg0 == PR_SET_NAME)
			return emit_comm(b, t, false);
		return 0;
	default:
		return 0;
	}
}

/*
 * The step ran past the next instruction: a hypervisor that emulates an instruction
 * (CPUID in a VM) may deliver the single-step trap one instruction late. Straight-line
 * code from `from` to `next` ran; anything else is a gap in the trace.
 */
static int catch_up(struct backend *b, struct ss_thread *t, uint64_t from, uint64_t next)
{
	struct ss_insn insn;
	uint64_t ip = from;
	int i, err;

	for (i = 0; i < 4 && ip != next; i++) {
		if (ss_mm__insn(t->step_mm, b->dis, ip, &insn) || insn.cls != SS_INSN_OTHER)
			break;
		ip += insn.len;
	}
	if (ip != next) {
		dlog("singlestep: thread %d: stepped from %#" PRIx64 " to %#" PRIx64 "\n", t->tid,
		     from, next);
		return async_disable(b, t, from);
	}
	for (ip = from; ip != next; ip += insn.len) {
		ss_mm__insn(t->step_mm, b->dis, ip, &insn);
		err = encode(b, t, ip, t->step_mm, &insn, ip + insn.len);
		if (err)
			return err;
	}
	return 0;
}

/*
 * A plain load ran: threads on other virtual CPUs were in flight with it, so a store
 * noted after this thread's clock_step() may have run before the load and been what it
 * read (a spin flag set while the reader's step was in flight). Looked at again now that
 * the load is done: every store that ran before it was noted before its own resume.
 * One noted but not yet run moves the reader too: only too strict, never misordered.
 */
static void load_done(struct backend *b, struct ss_thread *t)
{
	struct ss_sync *s;

	if (!t->load_pending)
		return;
	t->load_pending = false;
	s = sync_find(b, t->proc->pid, t->load_addr, false);
	/* (equal: its own store, a read-modify-write's, noted for this very step) */
	if (!s || s->clk <= t->clk)
		return;
	dlog("singlestep: thread %d: load from %#" PRIx64 " (a store while it was in flight) "
	     "moves its clock %" PRIu64 " ns on\n", t->tid, t->load_addr, s->clk + 1 - t->clk);
	t->clk = s->clk + 1;
	if (t->cpu >= 0 && b->cpus[t->cpu].clk < t->clk)
		b->cpus[t->cpu].clk = t->clk;
	clock_seen(b, t->clk);
}

/* The instruction at `ip` ran and execution went on at `next`. */
static int step_done(struct backend *b, struct ss_thread *t, uint64_t ip, uint64_t next)
{
	struct ss_insn insn = t->step_insn;
	const struct ss_map *m;
	int err;

	if (!t->step_known) {
		m = t->step_mm ? ss_mm__find(t->step_mm, ip) : NULL;
		if (m && m->kind == SS_MAP_UPROBES && (next <= ip || next - ip > SS_INSN_MAX_LEN)) {
			/*
			 * The uretprobe trampoline leaves through its last instruction, a ret
			 * to the address the system call put on the stack (Linux 6.11+:
			 * push, push, push, mov, syscall, pop, pop, ret).
			 */
			insn = (struct ss_insn){ .len = 1, .cls = SS_INSN_RET };
			err = ss_mm__learn_uprobes(t->step_mm, ip, &insn);
			return err ? err : encode(b, t, ip, t->step_mm, &insn, next);
		}
		if (!m || next <= ip || next - ip > SS_INSN_MAX_LEN) {
			if (!b->warned_unknown)
				elog("singlestep: thread %d: cannot decode the instruction at "
				     "%#" PRIx64 "; the trace has a gap there\n", t->tid, ip);
			b->warned_unknown = true;
			return async_disable(b, t, ip);
		}
		/*
		 * No branch went elsewhere, so the step tells the length: the [uprobes]
		 * trampoline, which cannot be read, or an instruction capstone does not know
		 * (capstone 4 lacks some AVX-512), which libipt decodes from the file.
		 */
		insn = (struct ss_insn){ .len = next - ip, .cls = SS_INSN_OTHER };
		if (m->kind == SS_MAP_UPROBES)
			err = ss_mm__learn_uprobes(t->step_mm, ip, &insn);
		else
			err = ss_mm__learn(t->step_mm, ip, &insn);
		if (err)
			return err;
	}
	load_done(b, t);
	/* A rep-prefixed string instruction traps after each iteration: one instruction. */
	if (insn.cls == SS_INSN_OTHER && next == ip)
		return 0;
	err = encode(b, t, ip, t->step_mm, &insn, next);
	if (!err && insn.cls == SS_INSN_OTHER && next != ip + insn.len)
		err = catch_up(b, t, ip + insn.len, next);
	return err;
}

/* A SIGTRAP/TRAP_BRKPT stop: the system call in flight returned. */
static int syscall_done(struct backend *b, struct ss_thread *t,
			const struct user_regs_struct *regs)
{
	static const struct ss_insn syscall_insn = { .len = 2, .cls = SS_INSN_SYSCALL };
	uint8_t op[2];
	int err = 0;

	if (t->in_syscall) {
		err = encode_syscall(b, t);
		clock_syscall_end(b, t, (long)regs->rax);
		t->syscall_end = b->per_thread ? t->clk : b->now;
	} else if (t->maybe_restart && t->step_mm &&
		   ss_mm__read(t->step_mm, t->step_ip - 2, op, 2) == 2 && op[0] == 0x0f &&
		   op[1] == 0x05 && !(t->step_known && t->step_insn.cls == SS_INSN_SYSCALL)) {
		/* The kernel restarted the interrupted call: the syscall before ip ran again. */
		err = encode(b, t, t->step_ip - 2, t->step_mm, &syscall_insn, 0);
	} else if (!t->step_known && t->step_mm) {
		const struct ss_map *m = ss_mm__find(t->step_mm, t->step_ip);

		if (m && m->kind == SS_MAP_UPROBES) {
			/* The uretprobe trampoline's own system call back to the caller. */
			err = ss_mm__learn_uprobes(t->step_mm, t->step_ip, &syscall_insn);
			if (!err)
				err = encode(b, t, t->step_ip, t->step_mm, &syscall_insn, 0);
		} else {
			err = async_disable(b, t, t->step_ip);
		}
	} else {
		err = step_done(b, t, t->step_ip, regs->rip);
	}
	if (!err)
		err = after_syscall(b, t);
	t->in_syscall = false;
	t->syscall_unencoded = false;
	return err;
}

static bool is_probe_step(struct ss_thread *t, const siginfo_t *si)
{
	uint8_t file_byte;
	int mem;

	/* The uprobe's SIGTRAP is sent by the kernel as the thread itself (send_sig). */
	if (si->si_code != SI_USER || si->si_pid != t->proc->pid || !t->step_mm)
		return false;
	mem = ss_mm__mem_byte(t->step_mm, t->tid, t->step_ip);
	if (mem != 0xcc)
		return false;
	return ss_mm__read(t->step_mm, t->step_ip, &file_byte, 1) == 1 && file_byte != 0xcc;
}

static void thread_ready(struct backend *b, struct ss_thread *t,
			 const struct user_regs_struct *regs)
{
	t->state = TS_STOPPED;
	t->ip = regs->rip;
	t->regs = *regs;
	if (t->cpu < 0)
		runq_push(b, t);
}

static int release_cpu(struct backend *b, struct ss_thread *t)
{
	return t->cpu >= 0 ? switch_out(b, t->cpu, false) : 0;
}

/*
 * The thread's trace ends where it stands (exit, exit_group of another thread, SIGKILL,
 * which no PTRACE_EVENT_EXIT stop announces; a freeze; the CPU given away while it is
 * blocked): its system call ran, or tracing stops before the instruction it was at.
 */
static int end_trace(struct backend *b, struct ss_thread *t)
{
	if (t->cpu < 0)
		return 0;
	if (t->state == TS_STOPPED || t->state == TS_NEW)
		return async_disable(b, t, t->ip);
	if (t->in_syscall)
		return encode_syscall(b, t);
	return async_disable(b, t, t->step_ip);
}

static int thread_gone(struct backend *b, struct ss_thread *t, bool reaped, int status)
{
	int err;

	err = end_trace(b, t);
	if (!err)
		err = release_cpu(b, t);
	if (!err)
		err = ss_sb__exit(b->sb, t->proc->pid, t->proc->ppid, t->tid, t->ptid,
				  sb_time_thread(b, t), 0);
	t->state = TS_GONE;
	b->nr_live--;
	if (t->schedstat_fd >= 0)
		close(t->schedstat_fd);
	t->schedstat_fd = -1;
	if (b->kclock)
		ss_kclock__forget(b->kclock, t->tid);
	/* a tracer learns how its tracees end, children or not (-p): killed is not exited */
	if (reaped && b->target && t->tid == b->target->pid)
		b->target->exit_status = status;
	return err;
}

/* A clone/fork/vfork event: the child is attached by the kernel, stopped or about to be. */
static int new_child(struct backend *b, struct ss_thread *parent, int event)
{
	unsigned long msg = 0;
	struct ss_thread *c;
	struct ss_proc *p = parent->proc;
	uint64_t now;
	long tgid = 0;
	pid_t tid;
	int err;

	if (ptrace(PTRACE_GETEVENTMSG, parent->tid, NULL, &msg))
		return -errno;
	tid = (pid_t)msg;
	/* clone() without CLONE_THREAD is a process, whatever event reported it. */
	proc_status_field(tid, "Tgid", &tgid);
	if (event != PTRACE_EVENT_CLONE || (tgid && tgid != p->pid)) {
		struct ss_mm *mm = NULL;

		p = proc_new(b, tid, parent->proc->pid);
		if (!p)
			return -ENOMEM;
		if (parent->proc->mm) {
			err = ss_mm__fork(parent->proc->mm, tid, b->nr_mms, &mm);
			if (!err)
				err = mm_register(b, mm);
			if (err) {
				ss_mm__free(mm);
				return err;
			}
		}
		p->mm = mm;
	}
	c = thread_find(b, tid);
	if (!c)
		c = thread_new(b, tid, p);
	if (!c)
		return -ENOMEM;
	c->proc = p;
	c->ptid = parent->tid;
	sync_cpus_of(b, p->pid);
	now = sb_time_thread(b, parent);
	/* the child's clock starts where its parent's stands */
	c->clk = now;
	err = ss_sb__fork(b->sb, p->pid, parent->proc->pid, tid, parent->tid, now,
			  thread_cpu(parent));
	if (err)
		return err;
	if (!b->opts->follow_forks && p != parent->proc) {
		/* A new process that --follow-forks did not ask for: let it go once stopped. */
		dlog("singlestep: not following process %d\n", tid);
		c->unwanted = true;
		if (c->has_early) {
			ptrace(PTRACE_DETACH, tid, NULL, NULL);
			c->state = TS_GONE;
			b->nr_live--;
		}
	}
	return 0;
}

static int handle_event(struct backend *b, struct ss_thread *t, int event)
{
	unsigned long msg = 0;
	int err = 0;

	switch (event) {
	case PTRACE_EVENT_CLONE:
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
		err = encode_syscall(b, t);
		if (!err)
			err = new_child(b, t, event);
		return err ? err : cont(t, 0);
	case PTRACE_EVENT_EXEC:
		ptrace(PTRACE_GETEVENTMSG, t->tid, NULL, &msg);
		if ((pid_t)msg != t->tid) {
			/* A non-leader thread exec'd: it takes over the leader's tid. */
			struct ss_thread *real = thread_find(b, (pid_t)msg);

			if (real) {
				pid_t tid = t->tid;

				err = thread_gone(b, t, false, 0);
				real->tid = tid;
				t = real;
			}
		}
		err = encode_syscall(b, t);
		if (!err)
			err = emit_comm(b, t, true);
		if (!err)
			err = proc_exec_mm(b, t->proc);
		/* The exec'd image starts at a sync point whose time follows its MMAP2s. */
		if (!err && t->cpu >= 0)
			ss_enc__need_sync(b->cpus[t->cpu].enc);
		t->in_syscall = true;
		t->maybe_restart = false;
		t->pending_sig = 0;
		return err ? err : cont(t, 0);
	case PTRACE_EVENT_EXIT:
		err = end_trace(b, t);
		if (!err)
			err = release_cpu(b, t);
		t->state = TS_INFLIGHT;
		if (ptrace(PTRACE_CONT, t->tid, NULL, NULL) && errno != ESRCH && !err)
			err = -errno;
		return err;
	default:
		return cont(t, 0);
	}
}

static bool is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

static int handle_stop(struct backend *b, struct ss_thread *t, int status)
{
	struct user_regs_struct regs;
	siginfo_t si;
	int sig, event, err;

	if (WIFEXITED(status) || WIFSIGNALED(status))
		return thread_gone(b, t, true, status);
	if (!WIFSTOPPED(status))
		return 0;
	err = get_regs(t->tid, &regs);
	if (err)
		return err == -ESRCH ? 0 : err;
	sig = WSTOPSIG(status);
	event = status >> 16;

	if (event == PTRACE_EVENT_STOP) {
		/* First stop of a new thread, our interrupt, or a group-stop. */
		if (is_stop_signal(sig)) {
			if (t->state == TS_STOPPED)
				err = async_disable(b, t, t->ip);
			else if (t->state != TS_NEW)
				err = async_disable(b, t, t->step_ip);
			if (!err)
				err = release_cpu(b, t);
			t->state = TS_INFLIGHT;
			if (ptrace(PTRACE_LISTEN, t->tid, NULL, NULL) && errno != ESRCH && !err)
				err = -errno;
			return err;
		}
		if (t->state == TS_NEW)
			t->maybe_restart = restart_pending(&regs);
		else if (t->in_syscall && t->syscall_unencoded)
			t->in_syscall = t->syscall_unencoded = false;
		thread_ready(b, t, &regs);
		return 0;
	}
	if (event)
		return handle_event(b, t, event);

	if (sig == SIGTRAP && ptrace(PTRACE_GETSIGINFO, t->tid, NULL, &si)) {
		/*
		 * Killed (SIGKILL) since the stop was reported: what it was is gone with it.
		 * Taking it for a signal-delivery stop would lose the step it may report;
		 * its exit report ends the trace before the instruction in flight instead.
		 */
		if (errno == ESRCH)
			return 0;
	} else if (sig == SIGTRAP) {
		switch (si.si_code) {
		case TRAP_TRACE:
			if (t->injected) {
				/* The injected signal was ignored; the instruction then ran. */
				t->injected = 0;
			}
			err = step_done(b, t, t->step_ip, regs.rip);
			t->maybe_restart = false;
			thread_ready(b, t, &regs);
			return err;
		case TRAP_BRKPT:
			err = syscall_done(b, t, &regs);
			t->maybe_restart = restart_pending(&regs);
			thread_ready(b, t, &regs);
			return err;
		case TRAP_UNK:
			if (t->injected) {
				/* At the handler's entry: the signal interrupted step_ip. */
				err = async_disable(b, t, t->step_ip);
				t->injected = 0;
				t->maybe_restart = false;
				if (t->in_syscall && t->syscall_unencoded)
					t->in_syscall = t->syscall_unencoded = false;
				thread_ready(b, t, &regs);
				return err;
			}
			break;
		case SI_USER:
			if (is_probe_step(t, &si)) {
				/*
				 * The kernel maps [uprobes] at the first hit; its MMAP2 goes here,
				 * as the kernel's would, not when a return first runs into it.
				 */
				err = ss_mm__has_uprobes(t->step_mm) ? 0 :
								       ss_mm__refresh(t->step_mm);
				if (err < 0)
					return err;
				err = step_done(b, t, t->step_ip, regs.rip);
				t->maybe_restart = false;
				thread_ready(b, t, &regs);
				return err;
			}
			break;
		case SI_KERNEL:
			/* An int3 of the program ran: the instruction, then its SIGTRAP. */
			if (t->step_known && t->step_insn.cls == SS_INSN_SYSCALL &&
			    t->step_insn.len == 1 && regs.rip == t->step_ip + 1) {
				err = encode_syscall(b, t);
				t->in_syscall = false;
				t->pending_sig = SIGTRAP;
				thread_ready(b, t, &regs);
				return err;
			}
			break;
		default:
			break;
		}
	}
	/* Signal-delivery-stop: nothing ran; the signal goes with the next resume. */
	if (t->in_syscall && t->syscall_unencoded)
		t->in_syscall = t->syscall_unencoded = false;
	t->pending_sig = sig;
	t->injected = 0;
	thread_ready(b, t, &regs);
	return 0;
}

static int dispatch(struct backend *b, pid_t pid, int status)
{
	struct ss_thread *t = thread_find(b, pid);

	if (!t) {
		/* A clone child stopping before its parent's event told us about it. */
		t = thread_new(b, pid, NULL);
		if (!t)
			return -ENOMEM;
		t->early_status = status;
		t->has_early = true;
		return 0;
	}
	if (t->unwanted) {
		if (WIFSTOPPED(status))
			ptrace(PTRACE_DETACH, pid, NULL, NULL);
		t->state = TS_GONE;
		b->nr_live--;
		return 0;
	}
	if (!t->proc)
		return 0;
	return handle_stop(b, t, status);
}

static void all_gone(struct backend *b)
{
	int i;

	for (i = 0; i < b->nr_threads; i++) {
		if (b->threads[i]->state == TS_GONE)
			continue;
		end_trace(b, b->threads[i]);
		b->threads[i]->cpu = -1;
		b->threads[i]->state = TS_GONE;
	}
	for (i = 0; i < b->nr_cpus; i++)
		b->cpus[i].cur = NULL;
	b->nr_live = 0;
}

/* Deal with every stop already waiting (WNOHANG), or wait for one (`block`). */
static int reap(struct backend *b, bool block, int *handled)
{
	int status, err;
	pid_t pid;

	for (;;) {
		pid = waitpid(-1, &status, __WALL | (block ? 0 : WNOHANG));
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			if (errno != ECHILD)
				return -errno;
			/* Nothing left to wait for: whatever we still follow is gone. */
			all_gone(b);
			return 0;
		}
		if (!pid)
			return 0;
		err = dispatch(b, pid, status);
		if (err)
			return err;
		if (handled)
			(*handled)++;
		block = false;
	}
}

/* Early children whose parent's event has now been seen. */
static int adopt_early(struct backend *b)
{
	int i, err;

	for (i = 0; i < b->nr_threads; i++) {
		struct ss_thread *t = b->threads[i];

		if (t->has_early && t->proc && t->state == TS_NEW && !t->unwanted) {
			t->has_early = false;
			err = handle_stop(b, t, t->early_status);
			if (err)
				return err;
		}
	}
	return 0;
}

static int nr_in_state(const struct backend *b, enum tstate state)
{
	int i, n = 0;

	for (i = 0; i < b->nr_threads; i++)
		n += b->threads[i]->state == state;
	return n;
}

/* ---- scheduling ---- */

/*
 * A free CPU for thread t. Per-thread clocks: the one whose clock is latest but not past
 * t's, else the earliest: a CPU's trace cannot go back in time, so t's clock moves on
 * to the CPU's (as if it had waited for it) by as little as the CPUs allow.
 */
/* (t NULL: any free CPU; -1: none) */
static int pick_cpu(const struct backend *b, const struct ss_thread *t)
{
	int c, best = -1, earliest = -1;

	for (c = 0; c < b->nr_cpus; c++) {
		const struct ss_vcpu *v = &b->cpus[c];

		if (v->cur)
			continue;
		if (!b->per_thread || !t)
			return c;
		if (v->clk <= t->clk && (best < 0 || v->clk > b->cpus[best].clk))
			best = c;
		if (earliest < 0 || v->clk < b->cpus[earliest].clk)
			earliest = c;
	}
	if (best < 0 && earliest >= 0 && b->nr_cpus < b->max_cpus)
		return b->nr_cpus;	/* a new one: its clock starts at 0 */
	return best >= 0 ? best : earliest;
}

/* CPU c, if it is a new one (pick_cpu()): its ring. */
static int add_cpu(struct backend *b, int c)
{
	int err;

	if (c < b->nr_cpus)
		return 0;
	err = ss_enc__new(&b->enc_cfg, &b->cpus[c].enc);
	if (err)
		return err;
	b->nr_cpus++;
	dlog("singlestep: CPU %d added for the per-thread clock\n", c);
	return 0;
}

static int schedule(struct backend *b)
{
	struct ss_thread *next;
	int c, err = 0;

	for (c = 0; c < b->nr_cpus && !err; c++) {
		struct ss_vcpu *v = &b->cpus[c];
		struct ss_thread *t = v->cur;

		if (t && b->runq_len) {
			if (t->state == TS_INFLIGHT && mono_ns() - t->resumed_ns >= SS_BLOCKED_NS) {
				/* Blocked in the kernel: its syscall ran; give the CPU away. */
				err = end_trace(b, t);
				if (!err)
					err = switch_out(b, c, false);
			} else if (t->state == TS_STOPPED && !t->quantum) {
				err = async_disable(b, t, t->ip);
				if (!err)
					err = switch_out(b, c, true);
				if (!err)
					err = runq_push(b, t);
			}
		}
	}
	while (!err && pick_cpu(b, NULL) >= 0 && (next = runq_pop(b))) {
		c = pick_cpu(b, next);
		err = add_cpu(b, c);
		if (!err)
			err = switch_in(b, c, next);
	}
	return err;
}

static uint64_t advance_clock(struct backend *b)
{
	uint64_t t;

	if (b->opts->clock == SS_CLOCK_REAL) {
		t = mono_ns();
		return t > b->now ? t : b->now + 1;
	}
	return b->now + SS_NS_PER_INSN;
}

/*
 * The trace's clock, for the latency triggers (run_hooks): its time, and from when it
 * runs with real time because every thread waits in the kernel (idle_since, 0: it
 * does not; a system call that returns then is timed on real time by the BPF program,
 * before ptbpf learns of it). --clock virtual never counts waits.
 */
static void publish_clock(struct backend *b, const struct run_hooks *hooks, uint64_t idle_since)
{
	if (!hooks || !hooks->trace_clock)
		return;
	if (b->per_thread) {
		/* each stepping thread's own clock is in its slot (clock_step()) */
		hooks->trace_clock->nr_slots = b->nr_cpus < TRACE_CLOCK_SLOTS ? b->nr_cpus :
										TRACE_CLOCK_SLOTS;
		__atomic_store_n(&hooks->trace_clock->per_thread, 1, __ATOMIC_RELEASE);
		__atomic_store_n(&hooks->trace_clock->now_ns, b->now, __ATOMIC_RELEASE);
		return;
	}
	if (b->opts->clock == SS_CLOCK_VIRTUAL)
		idle_since = 0;
	/* the time first: a probe between the stores counts the wait twice, never not */
	__atomic_store_n(&hooks->trace_clock->now_ns, b->now, __ATOMIC_RELEASE);
	__atomic_store_n(&hooks->trace_clock->idle_since_ns, idle_since, __ATOMIC_RELEASE);
}

/* Nothing to step: sleep until a stop or one of the capture loop's fds. */
static int idle_wait(struct backend *b, const struct run_hooks *hooks)
{
	struct pollfd pfd[17];
	struct signalfd_siginfo ssi;
	uint64_t t0 = mono_ns();
	int n = 0, i;

	pfd[n++] = (struct pollfd){ .fd = b->sigchld_fd, .events = POLLIN };
	for (i = 0; hooks && i < hooks->nr_fds && n < 17; i++)
		pfd[n++] = (struct pollfd){ .fd = hooks->fds[i], .events = POLLIN };
	publish_clock(b, hooks, t0);
	if (poll(pfd, n, 100) < 0 && errno != EINTR)
		return -errno;
	while (read(b->sigchld_fd, &ssi, sizeof(ssi)) == sizeof(ssi))
		;
	publish_clock(b, hooks, 0);
	return 0;
}

/* How many times slower than its trace's clock the program ran while stepped. */
static double slowdown(const struct backend *b)
{
	uint64_t traced = b->now - b->now_start;

	return traced ? (double)b->t_run_ns / traced : 0.0;
}

#define SS_PROGRESS_NS 1000000000ull	/* a progress line a second, after the first */

/* On a terminal, a long run says how it goes: one line, rewritten in place. */
static void show_progress(struct backend *b, uint64_t run_start)
{
	uint64_t now = mono_ns(), run_ns;
	double secs;

	if (!b->progress || now - (b->progress_ns ?: b->t_start_ns) < SS_PROGRESS_NS)
		return;
	b->progress_ns = now;
	run_ns = b->t_run_ns + (now - run_start);
	secs = run_ns / 1e9;
	fprintf(stderr, "\rptbpf: stepping: %" PRIu64 " instructions in %.0fs (%.0f/s), %d "
		"thread(s), %.0fx slower than the trace's clock\033[K", b->steps, secs,
		b->steps / secs, b->nr_live,
		b->now > b->now_start ? (double)run_ns / (b->now - b->now_start) : 0.0);
}

/* The progress line ends before anything else is printed. */
static void end_progress(struct backend *b)
{
	if (b->progress_ns)
		fprintf(stderr, "\r\033[K");
	b->progress_ns = 0;
}

static int ss_run(struct backend *b, const struct run_hooks *hooks)
{
	uint64_t t0 = mono_ns();
	int err = 0, stepped, c, r;

	b->hooks = hooks;

	for (;;) {
		err = adopt_early(b);
		if (err)
			break;
		if (!b->nr_live) {
			err = RUN_TARGET_EXITED;
			break;
		}
		err = schedule(b);
		if (err)
			break;
		/* This round's instructions come after everything written so far. */
		for (c = 0; c < b->nr_cpus; c++)
			if (b->cpus[c].cur && b->cpus[c].cur->state == TS_STOPPED)
				break;
		if (c < b->nr_cpus) {
			b->round++;
			if (!b->per_thread)
				b->now = advance_clock(b);
			publish_clock(b, hooks, 0);
		}
		stepped = 0;
		for (c = 0; c < b->nr_cpus; c++) {
			struct ss_thread *t = b->cpus[c].cur;

			if (t && t->state == TS_STOPPED) {
				err = resume(b, t);
				if (err)
					goto out;
				stepped++;
			}
		}
		/* Every plain step stops promptly: the round ends when they all have. */
		while (!err && nr_in_state(b, TS_STEPPING))
			err = reap(b, true, NULL);
		/* Other stops (system calls returning, new threads) are taken as they come. */
		if (!err && (nr_in_state(b, TS_INFLIGHT) || nr_in_state(b, TS_NEW)))
			err = reap(b, false, NULL);
		if (err)
			break;
		if (!stepped) {
			bool ready = b->runq_len;

			for (c = 0; c < b->nr_cpus && !ready; c++)
				ready = b->cpus[c].cur && b->cpus[c].cur->state == TS_STOPPED;
			if (!ready && b->nr_live) {
				err = idle_wait(b, hooks);
				if (err)
					break;
			}
		}
		if (b->progress && !(b->round & 1023))
			show_progress(b, t0);
		if (hooks && hooks->check) {
			r = hooks->check(hooks->ctx);
			if (r) {
				err = r > 0 ? RUN_STOPPED : r;
				break;
			}
		}
	}
out:
	b->t_run_ns += mono_ns() - t0;
	end_progress(b);
	b->hooks = NULL;
	return err;
}

/* ---- attach, detach ---- */

static int seize(struct backend *b, pid_t tid, bool interrupt)
{
	if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)b->ptrace_opts)) {
		int err = -errno;
		char why[320];

		/* doctor's ptrace check is on a child of ptbpf: say what differs for this one */
		if (err == -EPERM) {
			privs_ptrace_denied(tid, why, sizeof(why));
			elog("cannot trace thread %d: ptrace not permitted: %s\n", tid, why);
		} else if (err != -ESRCH) {
			elog("cannot trace thread %d: ptrace: %s\n", tid, strerror(-err));
		}
		return err;
	}
	if (interrupt && ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) && errno != ESRCH)
		return -errno;
	return 0;
}

/* Every thread of a running process; new ones may appear while we attach. */
static int attach_all(struct backend *b, struct ss_proc *p)
{
	char path[64];
	bool again = true;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", p->pid);
	while (again && !err) {
		struct dirent *de;
		DIR *d = opendir(path);

		if (!d)
			return errno == ENOENT ? -ESRCH : -errno;
		again = false;
		while ((de = readdir(d)) && !err) {
			pid_t tid = (pid_t)strtol(de->d_name, NULL, 10);
			struct ss_thread *t;

			if (tid <= 0 || thread_find(b, tid))
				continue;
			err = seize(b, tid, true);
			if (err == -ESRCH) {
				err = 0;
				continue;
			}
			if (err)
				break;
			t = thread_new(b, tid, p);
			if (!t)
				err = -ENOMEM;
			again = true;
		}
		closedir(d);
	}
	return err;
}

/* Whether SIGTRAP is queued for thread `tid` (the step trap of a step we started). */
static bool sigtrap_pending(pid_t pid, pid_t tid)
{
	unsigned long long mask = 0;
	char path[64], line[128];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SigPnd: %llx", &mask) == 1)
			break;
	fclose(f);
	return mask & (1ull << (SIGTRAP - 1));
}

/* A SIGTRAP stop that our stepping caused, as opposed to one meant for the program. */
static bool our_sigtrap(struct ss_thread *t)
{
	siginfo_t si;

	if (ptrace(PTRACE_GETSIGINFO, t->tid, NULL, &si))
		return true;
	switch (si.si_code) {
	case TRAP_TRACE:
	case TRAP_BRKPT:
	case TRAP_UNK:
		return true;
	case SI_USER:
		return is_probe_step(t, &si);
	default:
		return false;
	}
}

/*
 * Let thread t go where it stands, stopping it first if it runs (PTRACE_INTERRUPT). A
 * step trap still queued would kill the untraced program (SIGTRAP's default action): it
 * is taken at its signal-delivery-stop and dropped; a signal meant for the program is
 * handed over with PTRACE_DETACH. Children created meanwhile are let go too.
 */
static void let_go(struct backend *b, struct ss_thread *t)
{
	pid_t pid = t->proc ? t->proc->pid : t->tid;
	int status, sig = 0, event;
	bool stopped = t->state == TS_STOPPED || t->has_early;
	unsigned long msg;

	if (stopped) {
		sig = t->has_early ? 0 : t->pending_sig;
	} else if (ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL)) {
		t->state = TS_GONE;
		return;
	}
	for (;;) {
		if (!stopped) {
			pid_t w = waitpid(t->tid, &status, __WALL);

			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0 || WIFEXITED(status) || WIFSIGNALED(status))
				break;
			event = status >> 16;
			sig = 0;
			if (!event && WSTOPSIG(status) == SIGTRAP && !our_sigtrap(t))
				sig = SIGTRAP;
			else if (!event && WSTOPSIG(status) != SIGTRAP)
				sig = WSTOPSIG(status);
			if (event == PTRACE_EVENT_CLONE || event == PTRACE_EVENT_FORK ||
			    event == PTRACE_EVENT_VFORK) {
				/* A new TS_NEW thread: the loop of detach_all() lets it go. */
				if (!ptrace(PTRACE_GETEVENTMSG, t->tid, NULL, &msg) &&
				    !thread_find(b, (pid_t)msg))
					thread_new(b, (pid_t)msg, NULL);
			}
		}
		stopped = false;
		if (!sig && sigtrap_pending(pid, t->tid)) {
			/* Run to the queued trap's delivery-stop, without stepping. */
			if (ptrace(PTRACE_CONT, t->tid, NULL, NULL))
				break;
			continue;
		}
		ptrace(PTRACE_DETACH, t->tid, NULL, (void *)(long)sig);
		break;
	}
	t->state = TS_GONE;
}

static void detach_all(struct backend *b)
{
	int i;

	/* let_go() may add children it found: the loop picks them up too. */
	for (i = 0; i < b->nr_threads; i++)
		if (b->threads[i]->state != TS_GONE)
			let_go(b, b->threads[i]);
}

/* ---- backend ops ---- */

static bool ss_usable(char *why, size_t why_size)
{
	char evidence[512];
	int err = privs_ptrace_probe(evidence, sizeof(evidence));

	if (why && why_size)
		snprintf(why, why_size, "%s", evidence);
	return !err;
}

static void ss_close(struct backend *b);

static uint64_t psb_bytes(const struct capture_opts *opts)
{
	uint64_t bytes;

	if (opts->psb_period >= 0)
		return 1ull << (opts->psb_period + 11);
	/* perf's default (psb_period=3), but several per ring so a wrapped ring has one. */
	bytes = 1ull << 14;
	while (bytes > 256 && bytes > opts->buffer_size / 8)
		bytes >>= 1;
	return bytes;
}

static int ss_open(const struct capture_opts *opts, struct target *target, struct backend **out)
{
	struct backend *b;
	struct ss_proc *p;
	struct ss_thread *t;
	sigset_t chld;
	int c, err;

	if (opts->kernel) {
		elog("--kernel: the singlestep backend sees user space only (ptrace steps user "
		     "instructions); kernel tracing needs --backend pt\n");
		return -EOPNOTSUPP;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->opts = opts;
	b->target = target;
	b->sigchld_fd = -1;
	b->nr_cpus = opts->cpus > 0 ? opts->cpus : 2;
	b->now = mono_ns();
	b->per_thread = opts->clock == SS_CLOCK_MIXED;
	b->max_cpus = b->nr_cpus;
	if (b->per_thread)
		b->max_cpus = b->nr_cpus + SS_CLOCK_CPUS < TRACE_CLOCK_SLOTS ?
				      b->nr_cpus + SS_CLOCK_CPUS : TRACE_CLOCK_SLOTS;
	if (b->max_cpus < b->nr_cpus)
		b->max_cpus = b->nr_cpus;
	b->enc_cfg = (struct ss_enc_config){
		.ring_size = opts->buffer_size,
		.psb_period = psb_bytes(opts),
		.retcomp = !opts->noretcomp,
		.tsc = true,
		.mtc = opts->timing != TIMING_TSC,
		.cyc = opts->timing == TIMING_CYC,
		/* Virtual: perf's defaults, a 25 MHz crystal (40 TSC ticks per CTC tick).
		 * Real: steps take tens of µs, so a slower crystal and MTC period keep MTC's
		 * 8 bits from wrapping between steps. */
		.mtc_freq = opts->clock == SS_CLOCK_REAL ? 8 : 3,
		.ctc_eax = 1,
		.ctc_ebx = opts->clock == SS_CLOCK_REAL ? 500 : 40,
		.cbr = 20,
		.log_psb = opts->verify,
	};
	b->ptrace_opts = PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | PTRACE_O_TRACEEXIT;
	if (opts->follow_forks)
		b->ptrace_opts |= PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK;

	b->runq = calloc(SS_MAX_THREADS, sizeof(*b->runq));
	b->cpus = calloc(b->max_cpus, sizeof(*b->cpus));
	if (b->per_thread)
		b->sync = calloc(SS_SYNC_SLOTS, sizeof(*b->sync));
	if (b->per_thread) {
		char why[160];

		err = ss_kclock__open(&b->kclock, why, sizeof(why));
		if (err)
			elog("note: --clock mixed: the kernel side of the clock is unavailable (%s); "
			     "system calls are timed by ptbpf, so a loaded machine lengthens them "
			     "and waits ended by pipes or signals are not ordered\n", why);
	}
	err = !b->runq || !b->cpus || (b->per_thread && !b->sync) ? -ENOMEM : 0;
	err = err ?: ss_dis__new(&b->dis);
	err = err ?: ss_sb__new(&b->sb);
	for (c = 0; !err && c < b->nr_cpus; c++)
		err = ss_enc__new(&b->enc_cfg, &b->cpus[c].enc);
	if (!err && opts->verify)
		err = ss_verify__new(b->max_cpus, mm_by_id, b, &b->verify);
	if (err)
		goto fail;
	err = vdso_read(&b->vdso, &b->vdso_size);
	if (err && err != -ENOENT)
		goto fail;

	/* Stops of the tracees wake idle_wait() through SIGCHLD. */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &chld, &b->old_mask)) {
		err = -errno;
		goto fail;
	}
	b->mask_set = true;
	b->sigchld_fd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
	if (b->sigchld_fd < 0) {
		err = -errno;
		goto fail;
	}

	p = proc_new(b, target->pid, 0);
	if (!p) {
		err = -ENOMEM;
		goto fail;
	}
	if (target->spawned && !target->released) {
		/* Held before exec: it runs untraced until its exec stop. */
		err = seize(b, target->pid, false);
		t = err ? NULL : thread_new(b, target->pid, p);
		if (!err && !t)
			err = -ENOMEM;
		if (t)
			t->state = TS_INFLIGHT;
	} else {
		err = attach_all(b, p);
		if (!err && !b->nr_threads)
			err = -ESRCH;	/* every thread was gone by the time we seized it */
		if (!err)
			err = proc_exec_mm(b, p);
		for (c = 0; !err && c < b->nr_threads; c++)
			err = emit_comm(b, b->threads[c], false);
	}
	if (err)
		goto fail;
	*out = b;
	return 0;

fail:
	/* the target was there when it was looked up: it ended while we attached */
	if (err == -ESRCH)
		elog("process %d exited while ptbpf attached to it: nothing to trace\n",
		     target->pid);
	ss_close(b);
	return err;
}

static int ss_start(struct backend *b)
{
	b->t_start_ns = mono_ns();
	b->now_start = b->now;
	b->progress = isatty(STDERR_FILENO);
	return 0;
}

static int ss_freeze(struct backend *b)
{
	int c, err = 0;

	/* A thread on a CPU is never TS_NEW: it got there from the run queue. */
	for (c = 0; c < b->nr_cpus && !err; c++)
		if (b->cpus[c].cur)
			err = end_trace(b, b->cpus[c].cur);
	return err;
}

/*
 * The PMU the encoder stands for, described as the kernel's intel_pt/format/ files
 * describe a real one, and read with the pt backend's parser: the capture's attr.config
 * and the bits the decoder reads back from it then follow one description.
 */
static const struct {
	const char *name, *format;
} ss_pt_format[] = {
	{ "pt", "config:0" },		{ "cyc", "config:1" },
	{ "mtc", "config:9" },		{ "tsc", "config:10" },
	{ "noretcomp", "config:11" },	{ "branch", "config:13" },
	{ "mtc_period", "config:14-17" }, { "psb_period", "config:24-27" },
};

/* The field format/NAME of the encoder's PMU. */
static struct pt_format_field ss_pt_field(const char *name)
{
	struct pt_format_field f = { 0 };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ss_pt_format); i++)
		if (!strcmp(ss_pt_format[i].name, name) && !pt_format_parse(ss_pt_format[i].format, &f))
			break;
	return f;	/* the table is ours: every name above parses */
}

/* Put `value` into format/NAME of config; -ERANGE when it does not fit the field. */
static int ss_pt_set(const char *name, uint64_t value, uint64_t config[3])
{
	struct pt_format_field f = ss_pt_field(name);

	return pt_format_set(&f, value, config);
}

/* attr.config of the PT event: pt, branch, tsc; mtc with its period; psb_period... */
static int ss_pt_config(const struct backend *b, uint64_t *out)
{
	uint64_t config[3] = { 0 }, psb_log2 = 0;
	int err;

	while ((1ull << (psb_log2 + 1)) <= b->enc_cfg.psb_period)
		psb_log2++;
	err = ss_pt_set("pt", 1, config) ?: ss_pt_set("branch", 1, config) ?:
	      ss_pt_set("tsc", 1, config);
	if (!err && b->enc_cfg.mtc)
		err = ss_pt_set("mtc", 1, config) ?: ss_pt_set("mtc_period", b->enc_cfg.mtc_freq, config);
	if (!err && psb_log2 >= 11)
		err = ss_pt_set("psb_period", psb_log2 - 11, config);
	if (!err && !b->enc_cfg.retcomp)
		err = ss_pt_set("noretcomp", 1, config);
	if (!err && b->enc_cfg.cyc)
		err = ss_pt_set("cyc", 1, config);
	*out = config[0];
	return err;
}

static int add_attrs(struct backend *b, struct capture *cap)
{
	struct perf_event_attr pt = { .size = sizeof(pt) }, sb;
	uint64_t *ids = calloc(2 * b->nr_cpus, sizeof(*ids));
	uint64_t config;
	int c, err;

	if (!ids)
		return -ENOMEM;
	for (c = 0; c < b->nr_cpus; c++) {
		ids[c] = SS_ID_PT(c);
		ids[b->nr_cpus + c] = SS_ID_SB(c);
	}
	pt.type = SS_PMU_TYPE;
	err = ss_pt_config(b, &config);
	pt.config = config;
	if (err) {
		elog("singlestep: the PT config does not fit its format: %s\n", strerror(-err));
		free(ids);
		return err;
	}
	pt.sample_period = 1;
	pt.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			 PERF_SAMPLE_IDENTIFIER;
	pt.exclude_kernel = pt.exclude_hv = 1;
	pt.sample_id_all = 1;
	sb = pt;
	sb.type = PERF_TYPE_SOFTWARE;
	sb.config = PERF_COUNT_SW_DUMMY;
	sb.mmap = sb.mmap2 = sb.comm = sb.comm_exec = sb.task = sb.context_switch = 1;
	err = capture__add_attr(cap, &pt, ids, b->nr_cpus, "intel_pt//u");
	if (!err)
		err = capture__add_attr(cap, &sb, ids + b->nr_cpus, b->nr_cpus, "dummy:u");
	if (!err)
		err = capture__add_pmu(cap, SS_PMU_TYPE, "intel_pt");
	free(ids);
	return err;
}

static void fill_host(struct backend *b, struct capture *cap)
{
	struct utsname u;

	if (!uname(&u)) {
		cap->host.hostname = capture__strdup(cap, u.nodename);
		cap->host.osrelease = capture__strdup(cap, u.release);
	}
	cap->host.arch = capture__strdup(cap, "x86_64");
	cap->host.cpudesc = capture__strdup(cap, "ptbpf singlestep (software Intel PT)");
	cap->host.version = capture__strdup(cap, "ptbpf " PTBPF_VERSION);
	cap->host.nr_cpus_online = cap->host.nr_cpus_avail = b->nr_cpus;
}

/* Returns 0, or -EILSEQ when the trace of CPU c is not what was stepped (said why). */
static int verify_cpu(struct backend *b, int c, const uint8_t *lin, size_t n, uint64_t first)
{
	const struct ss_psb_mark *marks;
	struct ss_verify_result res;
	size_t nr;
	int err;

	marks = ss_enc__psb_marks(b->cpus[c].enc, &nr);
	err = ss_verify__check(b->verify, c, &b->enc_cfg, lin, n, first, marks, nr, &res);
	if (err == -EILSEQ) {
		elog("verify: CPU %d: FAILED at trace offset %#" PRIx64 ", instruction #%" PRIu64
		     ": expected IP %#" PRIx64 ", decoded IP %#" PRIx64 ": %s\n", c, res.offset,
		     res.insn, res.expected_ip, res.decoded_ip, res.what);
		return err;
	}
	if (err) {
		elog("verify: CPU %d: cannot decode: %s\n", c, strerror(-err));
		return -EILSEQ;
	}
	/* Always printed: tests and users look for it. */
	elog("verify: CPU %d: %" PRIu64 " instructions decoded as stepped (%" PRIu64
	     " before the first PSB in the ring)\n", c, res.checked, res.skipped);
	return 0;
}

static int ss_snapshot(struct backend *b, struct capture *cap)
{
	size_t size = b->enc_cfg.ring_size;
	uint8_t *lin = malloc(size);
	bool differs = false;
	int c, err;

	if (!lin)
		return -ENOMEM;
	fill_host(b, cap);
	err = add_attrs(b, cap);
	cap->pt = (struct pd_pt_info){
		.pmu_type = SS_PMU_TYPE,
		.time_shift = 0,
		.time_mult = 1,
		.time_zero = 0,
		.cap_user_time_zero = 1,
		.tsc_bit = ss_pt_field("tsc").mask,
		.noretcomp_bit = ss_pt_field("noretcomp").mask,
		.have_sched_switch = 3,
		.snapshot_mode = 1,
		.per_cpu_mmaps = 1,
		.mtc_bit = ss_pt_field("mtc").mask,
		.mtc_freq_bits = ss_pt_field("mtc_period").mask,
		.tsc_ctc_ratio_n = b->enc_cfg.ctc_ebx,
		.tsc_ctc_ratio_d = b->enc_cfg.ctc_eax,
		.cyc_bit = ss_pt_field("cyc").mask,
		.max_non_turbo_ratio = b->enc_cfg.cbr,
		.present = true,
	};
	if (!err)
		err = ss_sb__to_capture(b->sb, cap);
	if (!err && b->vdso)
		err = capture__set_vdso(cap, b->vdso, b->vdso_size);
	for (c = 0; !err && c < b->nr_cpus; c++) {
		struct ss_enc *e = b->cpus[c].enc;
		uint64_t total = ss_enc__total(e), first;
		struct pd_auxtrace aux = { 0 };
		struct pd_record r = { .type = PERF_RECORD_AUX };
		bool wrapped;
		size_t n;

		/* The same linearisation as the pt backend's, on a ring laid out the same way. */
		n = aux_ring_copy(ss_enc__ring(e), size, total, false, lin, &wrapped);
		first = total - n;
		r.aux.aux_offset = total & (size - 1);
		r.aux.aux_size = size;
		r.aux.flags = PERF_AUX_FLAG_OVERWRITE;
		err = ss_sb__add(b->sb, &r, 0, 0, sb_time(b), c, SS_ID_PT(c));
		err = err ?: capture__add_record(cap, &r);
		if (err || !n)
			continue;
		aux.size = n;
		aux.offset = first;
		aux.reference = b->now;
		aux.idx = c;
		aux.cpu = c;
		aux.tid = UINT32_MAX;
		err = capture__add_aux(cap, &aux, lin);
		if (!err && b->verify && verify_cpu(b, c, lin, n, first) == -EILSEQ)
			differs = true;
	}
	free(lin);
	/* The capture is complete either way: it is what shows the difference. */
	return err ? err : differs ? -EILSEQ : 0;
}

static int ss_resume(struct backend *b)
{
	return 0;
}

static const char *ss_describe(struct backend *b)
{
	double secs = b->t_run_ns / 1e9;
	int asked = b->opts->cpus > 0 ? b->opts->cpus : 2;
	char added[48] = "";

	if (b->nr_cpus > asked)
		snprintf(added, sizeof(added), " (%d for the per-thread clock)", b->nr_cpus - asked);
	snprintf(b->desc, sizeof(b->desc),
		 "singlestep: %d virtual CPUs%s, %" PRIu64 " KiB rings, %" PRIu64 " instructions "
		 "stepped in %.2fs (%.0f/s), clock %s, %.0fx slower than the trace's clock",
		 b->nr_cpus, added, b->enc_cfg.ring_size >> 10, b->steps, secs,
		 secs > 0 ? b->steps / secs : 0.0,
		 b->opts->clock == SS_CLOCK_REAL	 ? "real" :
		 b->opts->clock == SS_CLOCK_MIXED ? "mixed" :
						    "virtual", slowdown(b));
	return b->desc;
}

static void ss_close(struct backend *b)
{
	int i;

	if (!b)
		return;
	detach_all(b);
	for (i = 0; i < b->max_cpus && b->cpus; i++)
		ss_enc__free(b->cpus[i].enc);
	for (i = 0; i < b->nr_threads; i++) {
		if (b->threads[i]->schedstat_fd >= 0)
			close(b->threads[i]->schedstat_fd);
		free(b->threads[i]);
	}
	for (i = 0; i < b->nr_procs; i++)
		free(b->procs[i]);
	for (i = 0; i < b->nr_mms; i++)
		ss_mm__free(b->mms[i]);
	if (b->sigchld_fd >= 0)
		close(b->sigchld_fd);
	if (b->mask_set)
		sigprocmask(SIG_SETMASK, &b->old_mask, NULL);
	ss_verify__free(b->verify);
	ss_kclock__close(b->kclock);
	ss_sb__free(b->sb);
	ss_dis__free(b->dis);
	free(b->threads);
	free(b->procs);
	free(b->mms);
	free(b->runq);
	free(b->cpus);
	free(b->sync);
	free(b->vdso);
	free(b);
}

/* The stepped trace has its own clock: the thread's last step is where it fired. */
static int ss_locate(struct backend *b, uint32_t tid, uint64_t ktime, uint32_t *cpu,
		     uint64_t *time)
{
	int i;

	for (i = 0; i < b->nr_threads; i++) {
		struct ss_thread *t = b->threads[i];

		if (t->tid != (pid_t)tid || t->last_cpu < 0)
			continue;
		*cpu = t->last_cpu;
		*time = t->last_time;
		/*
		 * A fire at a system call's end (--syscall-latency-over) comes before the
		 * thread's next instruction: the call lasts until then, on the trace's clock.
		 */
		if (t->in_syscall && b->per_thread)
			*time = t->syscall_time + (ktime > t->resumed_ns ? ktime - t->resumed_ns : 0);
		else if (t->in_syscall)
			*time = b->now;
		else if (t->syscall_end && t->last_time == t->syscall_time)
			*time = t->syscall_end;
		return 0;
	}
	return -ENOENT;
}

const struct backend_ops ss_backend_ops = {
	.name = "singlestep",
	/* check() runs after every step: poll the signal and timer fds every 64 steps */
	.poll_every = 64,
	.usable = ss_usable,
	.open = ss_open,
	.start = ss_start,
	.run = ss_run,
	.freeze = ss_freeze,
	.snapshot = ss_snapshot,
	.resume = ss_resume,
	.describe = ss_describe,
	.close = ss_close,
	.locate = ss_locate,
};
