// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The capture command: pick a backend, start or attach the target, arm the triggers,
 * run until a trigger fires (or Ctrl-C/SIGTERM, --duration, the target's exit), freeze,
 * take the snapshot and write it as perf.data.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "commands.h"
#include "log.h"
#include "perfdata.h"
#include "target.h"
#include "triggers.h"

/* Rounds of the singlestep backend between polls of the fds below. */
#define POLL_EVERY 64

struct capture_run {
	const struct capture_opts *opts;
	struct triggers *trig;
	int fds[3];			/* signalfd, timerfd, trigger ring buffer; -1 if none */
	int nr_fds;
	int sfd, tfd;
	uint64_t checks;
	enum trigger_kind reason;	/* why run() stopped */
	char signal_name[32];
	struct trigger_rec fire;	/* reason is a BPF trigger: its first fire */
};

static int on_fire(void *ctx, const struct trigger_rec *r)
{
	struct capture_run *run = ctx;

	if (run->reason == TRIGGER_NONE) {
		run->fire = *r;
		run->reason = r->kind;
	}
	return 0;
}

/* Called by the backend between steps (singlestep) or when an fd is readable (pt). */
static int check(void *ctx)
{
	struct capture_run *run = ctx;
	struct pollfd pfd[2];
	int n = 0, err;

	if (run->trig) {
		/* Cheap: two loads from the mapped ring buffer when nothing fired. */
		err = triggers__consume(run->trig, on_fire, run);
		if (err < 0)
			return err;
		if (run->reason != TRIGGER_NONE)
			return 1;
	}
	if (run->checks++ % POLL_EVERY)
		return 0;
	pfd[n++] = (struct pollfd){ .fd = run->sfd, .events = POLLIN };
	if (run->tfd >= 0)
		pfd[n++] = (struct pollfd){ .fd = run->tfd, .events = POLLIN };
	if (poll(pfd, n, 0) <= 0)
		return 0;
	if (pfd[0].revents) {
		struct signalfd_siginfo si;

		if (read(run->sfd, &si, sizeof(si)) == sizeof(si))
			snprintf(run->signal_name, sizeof(run->signal_name), "%s",
				 strsignal(si.ssi_signo));
		run->reason = TRIGGER_SIGNAL;
		return 1;
	}
	run->reason = TRIGGER_DURATION;
	return 1;
}

static const struct backend_ops *choose_backend(const struct capture_opts *opts)
{
	char why[512] = "";

	switch (opts->backend) {
	case BACKEND_PT:
		return &pt_backend_ops;
	case BACKEND_SINGLESTEP:
		return &ss_backend_ops;
	default:
		break;
	}
	if (pt_backend_ops.usable(why, sizeof(why)))
		return &pt_backend_ops;
	elog("no Intel PT on this host (%s): using the singlestep backend, which single-steps "
	     "every instruction with ptrace, thousands of times slower than the program runs; "
	     "--backend singlestep hides this notice\n", why);
	return &ss_backend_ops;
}

/* --keep-capture FILE, or next to the output, or ptbpf-<comm>-<pid>-<time>.data. */
static char *capture_path(const struct capture_opts *opts, const struct target *t)
{
	char stamp[32], *path = NULL;
	struct tm tm;
	time_t now = time(NULL);
	const char *dot;
	size_t len;

	if (opts->keep_capture_path)
		return strdup(opts->keep_capture_path);
	if (opts->output) {
		dot = strstr(opts->output, ".fxt");
		len = dot ? (size_t)(dot - opts->output) : strlen(opts->output);
		if (asprintf(&path, "%.*s.data", (int)len, opts->output) < 0)
			return NULL;
		return path;
	}
	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	if (asprintf(&path, "ptbpf-%s-%d-%s.data", t->comm, t->pid, stamp) < 0)
		return NULL;
	return path;
}

static int add_trigger_record(struct capture *cap, const struct capture_run *run,
			      const struct backend_ops *ops, struct backend *b,
			      const struct target *t)
{
	struct pd_record r = { .type = PD_RECORD_PTBPF_TRIGGER };
	struct pd_trigger *tr = &r.trigger;
	char desc[128];

	tr->kind = run->reason;
	tr->pid = t->pid;
	tr->tid = t->pid;
	switch (run->reason) {
	case TRIGGER_SIGNAL:
		snprintf(desc, sizeof(desc), "signal: %s", run->signal_name);
		break;
	case TRIGGER_EXIT:
		snprintf(desc, sizeof(desc), "exit: %s", t->comm);
		break;
	case TRIGGER_DURATION:
		snprintf(desc, sizeof(desc), "duration");
		break;
	default:
		snprintf(desc, sizeof(desc), "%s", triggers__describe(run->trig, run->fire.index) ?:
			 trigger_kind_name(run->reason));
		tr->index = run->fire.index;
		tr->cpu = run->fire.cpu;
		tr->pid = run->fire.pid;
		tr->tid = run->fire.tid;
		tr->ktime = run->fire.ktime_ns;
		tr->ip = run->fire.ip;
		tr->latency_ns = run->fire.latency_ns;
		tr->arg0 = run->fire.arg0;
		tr->arg1 = run->fire.arg1;
		break;
	}
	/* Where the firing thread's trace ends, in the capture's own clock. */
	if (ops->locate)
		ops->locate(b, tr->tid, &tr->cpu, &tr->time);
	tr->desc = desc;
	return capture__add_record(cap, &r);
}

/*
 * The triggers, attached the way the backend freezes: BPF links whose ring buffer the
 * capture loop reads, or (pt with aux_pause) gates in the backend's PT groups.
 */
static int arm_triggers(struct capture_run *run, const struct backend_ops *ops,
			struct backend *b, const struct target *t)
{
	enum trigger_attach_mode mode = ops->trigger_mode ? ops->trigger_mode(b) :
							      TRIGGER_ATTACH_LINKS;
	int err;

	if (!run->opts->nr_triggers)
		return 0;
	err = triggers__new(run->opts, t->pid, mode, &run->trig);
	if (!err)
		err = triggers__attach(run->trig);
	if (!err && mode == TRIGGER_ATTACH_GATE && ops->attach_gates)
		err = ops->attach_gates(b, run->trig);
	return err;
}

static int setup_fds(struct capture_run *run)
{
	sigset_t mask;

	/* After the target's fork: it must not inherit blocked signals. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &mask, NULL))
		return -errno;
	run->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (run->sfd < 0)
		return -errno;
	run->fds[run->nr_fds++] = run->sfd;
	if (run->opts->duration_ns) {
		struct itimerspec its = {
			.it_value.tv_sec = run->opts->duration_ns / 1000000000ull,
			.it_value.tv_nsec = run->opts->duration_ns % 1000000000ull,
		};

		run->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (run->tfd < 0 || timerfd_settime(run->tfd, 0, &its, NULL))
			return -errno;
		run->fds[run->nr_fds++] = run->tfd;
	}
	if (run->trig)
		run->fds[run->nr_fds++] = triggers__ringbuf_fd(run->trig);
	return 0;
}

int cmd_capture(struct capture_opts *opts)
{
	struct capture_run run = { .opts = opts, .sfd = -1, .tfd = -1 };
	const struct backend_ops *ops = choose_backend(opts);
	struct run_hooks hooks = { .check = check, .ctx = &run };
	struct target *target = NULL;
	struct backend *b = NULL;
	struct capture *cap = NULL;
	char *path = NULL;
	bool verify_failed = false;
	struct stat st;
	int err, ret = 1;

	if (opts->cmd)
		err = target__spawn(opts->cmd, &target);
	else
		err = target__attach_pid(opts->pid, &target);
	if (err) {
		ret = err == -ENOMEM ? 1 : 2;
		goto cleanup;
	}
	err = ops->open(opts, target, &b);
	if (err) {
		ret = err == -ENOMEM || err == -EIO ? 1 : 2;
		goto cleanup;
	}
	err = arm_triggers(&run, ops, b, target);
	if (err) {
		ret = triggers__usage_error(err) ? 2 : 1;
		goto cleanup;
	}
	err = setup_fds(&run);
	if (err) {
		elog("capture: cannot set up signals and timers: %s\n", strerror(-err));
		goto cleanup;
	}
	hooks.fds = run.fds;
	hooks.nr_fds = run.nr_fds;

	err = ops->start(b);
	if (!err && target->spawned)
		err = target__release(target);
	if (err) {
		ret = 2;
		goto cleanup;
	}
	vlog("capture: %s backend, %d trigger(s), tracing %s (%d)\n", ops->name, opts->nr_triggers,
	     target->comm, target->pid);

	err = ops->run(b, &hooks);
	if (err < 0) {
		elog("capture: %s backend failed: %s\n", ops->name, strerror(-err));
		goto cleanup;
	}
	if (err == RUN_TARGET_EXITED) {
		/* A fire from the target's last moments still names the snapshot. */
		check(&run);
		if (run.reason == TRIGGER_NONE || run.reason == TRIGGER_SIGNAL ||
		    run.reason == TRIGGER_DURATION)
			run.reason = TRIGGER_EXIT;
	}
	err = ops->freeze(b);
	cap = err ? NULL : capture__new();
	if (!err && !cap)
		err = -ENOMEM;
	err = err ?: ops->snapshot(b, cap);
	/* A --verify difference still writes the capture that shows it, then fails. */
	verify_failed = err == -EILSEQ;
	if (verify_failed)
		err = 0;
	err = err ?: add_trigger_record(cap, &run, ops, b, target);
	if (err) {
		elog("capture: snapshot failed: %s\n", strerror(-err));
		goto cleanup;
	}
	path = capture_path(opts, target);
	if (!path) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = perfdata_write(path, cap);
	if (err) {
		elog("capture: cannot write %s: %s\n", path, strerror(-err));
		goto cleanup;
	}
	elog("wrote %s (%lld bytes): %s\n", path, stat(path, &st) ? 0LL : (long long)st.st_size,
	     ops->describe(b));
	if (opts->decode)
		elog("decoding to FXT is not wired into capture yet: decode the capture with "
		     "`ptbpf decode %s -o OUT.fxt`\n", path);
	if (target->exit_status >= 0)
		vlog("capture: %s exited with status %d\n", target->comm, target->exit_status);
	if (verify_failed)
		elog("capture: --verify: the trace differs from the stepped instructions\n");
	ret = verify_failed ? 1 : 0;

cleanup:
	/* The backend lets the target go before the triggers leave it. */
	if (b)
		ops->close(b);
	triggers__free(run.trig);
	target__free(target);
	capture__free(cap);
	free(path);
	if (run.tfd >= 0)
		close(run.tfd);
	if (run.sfd >= 0)
		close(run.sfd);
	return ret;
}
