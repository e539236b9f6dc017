/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The trigger plane: the BPF programs of bpf/trigger.bpf.c, configured from the command
 * line, attached, and read through one BPF ring buffer of struct trigger_rec
 * (include/trigger_abi.h). Conditions (nth, max, cooldown, warmup) are enforced in the
 * kernel; user space only sees the fires.
 *
 * Links mode (any kernel with BPF ring buffers), as the capture loop and --dry-run use it:
 *
 *	triggers__new(opts, tgid, TRIGGER_ATTACH_LINKS, &t);	resolve, configure, load
 *	triggers__attach(t);					attach; warmup starts
 *	target__release(target);
 *	epoll on triggers__ringbuf_fd(t) → triggers__consume(t, cb, ctx);   (non-blocking)
 *	triggers__print_stats(t);				-v
 *	triggers__free(t);					detach everything
 *
 * Gate mode (the pt backend's in-kernel freeze, aux_pause, Linux 6.13+): the trigger that
 * fires is a tracepoint perf event (a real tracepoint, or a uprobe/kprobe that
 * triggers__new() defines once in tracefs, group "ptbpf_<pid>"), and the program's return
 * value gates it (1 = fire). triggers__attach() attaches only the helpers that record
 * (entry uprobes of latency triggers, wakeups, sys_enter). Then, for each gate i:
 *
 *	triggers__gate(t, i, &g);
 *	per CPU N: perf_event_open({ .type = PERF_TYPE_TRACEPOINT, .config = g.tp_id,
 *		.sample_period = 1, aux_pause = 1, exclude_kernel = 0 }, -1, N, pt_fd[N], 0);
 *	triggers__attach_gate(t, i, fd_of_any_one_cpu);	once per gate: one program list
 *							per tracepoint serves every CPU
 *	...
 *	close every per-CPU perf fd, THEN triggers__free(t): tracefs refuses to remove a probe
 *	(EBUSY) while a perf event holds it.
 *
 * Fires come from any thread of the target (tgid filtered in BPF), or from any thread on
 * the host with opts->system_wide (tgid 0).
 *
 * Errors: every function returns 0 (or a count) or -errno, and triggers__new() and
 * triggers__attach*() have already printed one line saying what is wrong and how to fix
 * it. exit_status(err) (user/cli.h) tells whether it was the user's input or the host
 * (exit 2) rather than a failure of the job (exit 1).
 */
#ifndef PTBPF_TRIGGERS_H
#define PTBPF_TRIGGERS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <linux/types.h>
#include <bpf/libbpf.h>

#include "cli.h"
#include "trigger_abi.h"

struct triggers;

/*
 * What the running kernel's BPF offers the trigger programs. The minimum kernel of each
 * is in README's requirements; without the optional ones the triggers still load.
 */
struct trigger_features {
	bool ringbuf;		/* BPF ring buffer (Linux 5.8): required */
	bool tp_btf;		/* BTF tracepoints sched_switch, sys_enter (5.5): else tp programs */
	bool task_storage;	/* task storage in tracing programs (5.12): else, the run queue's
				 * wakeup times go in a hash, with the tp programs */
	bool atomics;		/* BPF atomics that return a value (5.12): else plain counters,
				 * and two CPUs qualifying at once may both fire */
};

/* Probe the running kernel (loads tiny programs and maps; needs CAP_BPF). */
int triggers__probe_features(struct trigger_features *f);

/*
 * libbpf's messages for ptbpf: its warnings on expected failures (probing, a program
 * a kernel refuses) only with -vv, its debug output with -vvv.
 */
int triggers__libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args);

/*
 * Load (then unload) every program one trigger of each kind needs on this kernel with
 * these features, as a capture would, for ptbpf doctor. `desc` receives which variants
 * they were. Returns 0 or the load's -errno.
 */
int triggers__check_load(const struct trigger_features *f, char *desc, size_t size);

enum trigger_attach_mode {
	TRIGGER_ATTACH_LINKS = 0,	/* libbpf links; the loader freezes on the ring record */
	TRIGGER_ATTACH_GATE = 1,	/* tracepoint perf events gated by the program's return */
};

/* Called for each fire; a negative return stops triggers__consume() with that error. */
typedef int (*trigger_cb)(void *ctx, const struct trigger_rec *rec);

/*
 * Resolve every trigger of `opts` (binaries, symbols, syscalls, tracepoints), set the
 * per-run rodata (tgid, thresholds, nth, max = opts->max_snapshots with 0 meaning no
 * limit, cooldown, warmup), and load the programs (the verifier runs here). `tgid` is the
 * target's; it is ignored with opts->system_wide. A command line with no BPF trigger is
 * fine: the object then has a ring buffer that never fires.
 */
int triggers__new(const struct capture_opts *opts, pid_t tgid, enum trigger_attach_mode mode,
		  struct triggers **out);

/*
 * The daemon's trigger plane: one object for many rules, loaded once with every program a
 * rule of any kind may need; each rule is a slot (rec->index), the BPF cookie of its own
 * probes, with its own process, nth, cooldown and budget in the kernel (bpf/trigger.bpf.c).
 * Adding or removing a rule attaches or detaches that rule's probes only: the others'
 * links, counters and budgets are not touched. Needs BPF cookies (Linux 5.15).
 *
 *	triggers__plane_new(&t);				load; nothing attached
 *	triggers__plane_add(t, spec, &scope, -1, &slot);	resolve, set, attach: armed
 *	triggers__plane_remove(t, slot);			detach, clear the slot
 *
 * A changed rule, make-before-break: its new slot is attached waiting for the old one,
 *	triggers__plane_add(t, spec, &scope, old_slot, &slot);
 *	triggers__plane_activate(t, slot);	one store: the old slot quiet, the new one fires
 *	triggers__plane_remove(t, old_slot);
 * so that no hit is missed outside the instant of that store, and none fires in both.
 *
 * Up to PLANE_MAX_RULES rules, of which PLANE_MAX_LATENCY_RULES of each of the kinds
 * run-queue latency, syscall latency and tracepoint (include/trigger_abi.h); past that
 * triggers__plane_add() says so and returns -ENOSPC.
 */
struct trigger_scope {
	pid_t tgid;		/* the rule's process, 0: any */
	__u64 nth;		/* fire from its Nth qualifying hit on (0 or 1: the first) */
	__u64 max;		/* fires allowed until triggers__set_index_budget(); 0: no limit */
	__u64 cooldown_ns;
};
int triggers__plane_new(struct triggers **out);
int triggers__plane_add(struct triggers *t, const struct trigger_spec *spec,
			const struct trigger_scope *scope, int replaces, int *slot);
int triggers__plane_activate(struct triggers *t, int slot);
int triggers__plane_remove(struct triggers *t, int slot);
/* Rules (slots in use) in the plane. */
int triggers__plane_rules(const struct triggers *t);
/*
 * A plane rule's budget: `max` fires (0 = no limit) of which `used` are spent (a new
 * hour: 0) and, when not 0, the CLOCK_MONOTONIC ns of its last fire, from which its
 * cooldown runs.
 */
int triggers__set_index_budget(struct triggers *t, int index, __u64 max, __u64 used,
			       __u64 last_fire_ns);

/*
 * Resolve every trigger of `opts` (binaries, symbols, syscalls, tracepoints) without
 * loading anything: what triggers__new() would refuse in the input, said the same way.
 * For checking a configuration ahead of time (the daemon's rules).
 */
int triggers__check(const struct capture_opts *opts);

/* Attach (links mode: everything; gate mode: the recording helpers), then arm. */
int triggers__attach(struct triggers *t);

/*
 * (Re)start the warmup clock: hits before now + --warmup are ignored; with
 * opts->fire_once_per_arm, the triggers may fire again (once).
 */
int triggers__arm(struct triggers *t);

/* An fd that is readable (EPOLLIN) when fire records are waiting: the ring buffer map. */
int triggers__ringbuf_fd(const struct triggers *t);

/*
 * Where a backend whose program runs on a clock of its own (singlestep) keeps that
 * clock (include/trigger_abi.h): latency triggers measure on it. Mapped BPF memory: a
 * plain store is seen by the next probe hit.
 */
struct trace_clock *triggers__trace_clock(struct triggers *t);

/*
 * Hand every waiting record to `cb`, without blocking. Returns how many were consumed,
 * or -errno (cb's negative return included). Cheap when nothing is waiting (two loads from
 * the mapped ring), so it can run between single steps of a ptraced target.
 */
int triggers__consume(struct triggers *t, trigger_cb cb, void *ctx);

/* Total fires so far (records written or dropped), read from the mapped .bss. */
__u64 triggers__fire_count(const struct triggers *t);

/* How many triggers (command-line order: rec->index indexes them). */
int triggers__count(const struct triggers *t);
/* What trigger `index` is, e.g. "uprobe /bin/x:slow_path" (NULL if out of range). */
const char *triggers__describe(const struct triggers *t, int index);
/* Its kind (TRIGGER_NONE if out of range). */
enum trigger_kind triggers__kind(const struct triggers *t, int index);

/*
 * "sym+0xoff" for a user address `addr` of fire `rec` (its ip or func_ip), through the
 * symbols of the trigger's binary: the binary's load address follows from rec->func_ip,
 * the probed address; for a kprobe's fire, the kernel address through /proc/kallsyms.
 * Returns 0, or -ENOENT (another kind of trigger, not in that binary or the kernel's
 * text, kallsyms unreadable).
 */
int triggers__symbolize(const struct triggers *t, const struct trigger_rec *rec, __u64 addr,
			char *buf, size_t size);

/* ---- gate mode ---- */

struct trigger_gate {
	int index;		/* the trigger (command-line order) this gate fires for */
	const char *name;	/* tracefs event, "GROUP/NAME" (e.g. "ptbpf_1234/u0_slow_path") */
	__u64 tp_id;		/* attr.config for PERF_TYPE_TRACEPOINT (events/GROUP/NAME/id) */
	int prog_fd;		/* the deciding program (returns 1 to fire) */
};

/*
 * Whether every trigger of `o` can be a gate: tracefs must have uprobe_events or
 * kprobe_events for the probes, --usdt has no gate, and no two triggers may gate on the
 * same tracepoint (the kernel ANDs the programs of a tracepoint). Returns 0, or
 * -EOPNOTSUPP with `why` saying which rule; a backend then uses links mode.
 */
int triggers__gate_mode_check(const struct capture_opts *o, char *why, size_t size);

/* Gates to open per CPU; 0 in links mode. */
int triggers__nr_gates(const struct triggers *t);
int triggers__gate(const struct triggers *t, int i, struct trigger_gate *g);
/*
 * Attach gate i's program (its trigger's own copy, which knows its index) to one of its
 * per-CPU perf events. Once per gate. On success the link owns `perf_fd` (libbpf's
 * bpf_link_perf_detach() closes it in triggers__free()): the caller must not close it.
 * On failure it is still the caller's.
 */
int triggers__attach_gate(struct triggers *t, int i, int perf_fd);

/* ---- counters (kept in the kernel, read from the mapped .bss) ---- */

struct trigger_stats {
	__u64 hits;		/* the hook ran for a thread in scope */
	__u64 qualifying;	/* met the trigger's condition, past warmup and cooldown */
	__u64 fired;		/* fires (records written or dropped) */
	__u64 suppressed;	/* met the condition, but warmup/cooldown/nth/max said no */
};

int triggers__stats(const struct triggers *t, int index, struct trigger_stats *st);
/* Fires whose record did not fit in the ring buffer. */
__u64 triggers__dropped(const struct triggers *t);

/* Each loaded program's name and run time (with BPF_ENABLE_STATS on), for metrics. */
typedef int (*triggers_prog_cb)(void *ctx, const char *name, __u64 run_time_ns, __u64 run_cnt);
int triggers__prog_stats(const struct triggers *t, triggers_prog_cb cb, void *ctx);
/*
 * The fds of the loaded programs (the pt backend records their JIT images for --kernel
 * decoding): up to `max` into `fds`; returns how many there are, or -EINVAL.
 */
int triggers__prog_fds(const struct triggers *t, int *fds, int max);

/* One line per trigger on stderr at -v (vlog), plus drops. */
void triggers__print_stats(const struct triggers *t);

/* Detach, unload, remove our tracefs probes. NULL-safe. */
void triggers__free(struct triggers *t);

struct pd_trigger;
/*
 * A fire as a capture's trigger record: kind, index, cpu, pid, tid, ktime, ip, latency
 * and arguments from `rec`; desc and time are the caller's.
 */
void trigger_rec_to_pd(const struct trigger_rec *rec, struct pd_trigger *tr);

#endif /* PTBPF_TRIGGERS_H */
