/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Capture backends: `pt` (Intel PT hardware, user/pt/pt_backend.c) and `singlestep`
 * (software PT from a ptraced target, user/singlestep/ss_backend.c). Both fill the same struct
 * capture (include/perfdata.h), written by the same perf.data writer.
 *
 * Life cycle, driven by user/capture_cmd.c:
 *   open(target stopped) -> [target released] -> run -> freeze -> snapshot -> resume -> run ...
 *   -> close (never leaves the target stopped, ptraced or probed).
 */
#ifndef PTBPF_BACKEND_H
#define PTBPF_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cli.h"
#include "perfdata.h"
#include "triggers.h"

struct backend;
struct target;
struct trace_clock;

/*
 * What the capture loop gives a backend's run(): fds to watch (the BPF ring buffer,
 * a signalfd, the target's pidfd, a timerfd) and a check() that reads them.
 * The pt backend sleeps in epoll on `fds` and calls check() when one is readable;
 * the singlestep backend calls check() between steps (cheap: the ring buffer is
 * mmapped) and polls `fds` every few thousand steps.
 */
struct run_hooks {
	const int *fds;
	int nr_fds;
	/* > 0: stop now (a trigger fired, a signal, a timeout), 0: go on, < 0: error. */
	int (*check)(void *ctx);
	void *ctx;
	/*
	 * NULL, or where a backend that runs the program on a clock of its own (the
	 * singlestep backend's trace clock) keeps that clock's time, so that latency
	 * triggers measure what the program would have taken untraced.
	 */
	struct trace_clock *trace_clock;
};

enum run_result {
	RUN_STOPPED = 0,	/* check() asked to stop; tracing is still on */
	RUN_TARGET_EXITED = 1,	/* every thread of the target is gone */
};

struct backend_ops {
	const char *name;	/* "pt", "singlestep" */
	/*
	 * check() calls between two polls of run_hooks.fds (signal, timer): 1 for a backend
	 * that calls check() only when an fd is readable, more for one that calls it after
	 * every step of the target.
	 */
	unsigned poll_every;
	/*
	 * Whether this host can run the backend; on false, `why` (if not NULL) gets a
	 * one-line reason with the fix, as ptbpf doctor words it.
	 */
	bool (*usable)(char *why, size_t why_size);
	/*
	 * Open the rings for `t` (spawned and held before exec, or a running pid). `opts`
	 * must outlive the backend. When the host lacks what the backend needs, open()
	 * prints the line usable() would give and returns -ENODEV; a configuration this
	 * host does not allow (a --psb-period the CPU lacks...) is printed and returns
	 * -EINVAL or -EOPNOTSUPP. Both are the capture's exit status 2.
	 */
	int (*open)(const struct capture_opts *opts, struct target *t, struct backend **out);
	/*
	 * Optional (NULL: links). How the trigger plane should attach for this backend, asked
	 * after open() and before triggers__new(): TRIGGER_ATTACH_GATE when the backend
	 * freezes in the kernel (pt with aux_pause, Linux 6.13+).
	 */
	enum trigger_attach_mode (*trigger_mode)(struct backend *b);
	/*
	 * Optional. In gate mode, after triggers__attach() and before start(): open the
	 * per-CPU gate events in the backend's groups and attach the gate programs. The
	 * backend must be closed before triggers__free() (tracefs keeps probes that perf
	 * events still hold).
	 */
	int (*attach_gates)(struct backend *b, struct triggers *t);
	/* Start tracing; the caller then releases a spawned target. */
	int (*start)(struct backend *b);
	/* Run until hooks->check() > 0 (returns RUN_STOPPED) or the target is gone. */
	int (*run)(struct backend *b, const struct run_hooks *hooks);
	/* Stop tracing everywhere (after a trigger: as close to it as the path allows). */
	int (*freeze)(struct backend *b);
	/* Copy rings and sideband into `cap` (attrs, pt info, records, aux, vDSO). */
	int (*snapshot)(struct backend *b, struct capture *cap);
	/* Re-arm for the next snapshot. */
	int (*resume)(struct backend *b);
	/* One line for the summary: freeze path, rings, what ran. */
	const char *(*describe)(struct backend *b);
	/* Detach and free; NULL-safe. */
	void (*close)(struct backend *b);
	/*
	 * Optional (NULL if the backend cannot tell): where the trigger belongs on the
	 * capture's time axis (perf clock ns), and its CPU, for the trigger record. `tid`
	 * fired at `ktime` (bpf_ktime_get_ns(), CLOCK_MONOTONIC; 0 for a session's end).
	 * Returns 0 or -ENOENT.
	 */
	int (*locate)(struct backend *b, uint32_t tid, uint64_t ktime, uint32_t *cpu,
		      uint64_t *time);
	/*
	 * Optional: a backend opened system-wide (opts->system_wide, no target: the pt
	 * backend's rings in the daemon), driven by its user's own loop instead of run().
	 * sideband_fd() is readable when a ring's sideband should be drained (an epoll fd:
	 * it nests in the caller's epoll), drain() drains what is there. focus() names the
	 * process the next snapshot is about: its threads and mappings are read from /proc
	 * then (it may have started before the rings), as a target's are.
	 */
	int (*sideband_fd)(struct backend *b);
	int (*drain)(struct backend *b);
	int (*focus)(struct backend *b, pid_t pid);
};

extern const struct backend_ops pt_backend_ops;
extern const struct backend_ops ss_backend_ops;

#endif /* PTBPF_BACKEND_H */
