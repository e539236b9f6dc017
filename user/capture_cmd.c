// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The capture command: pick a backend, start or attach the target, arm the triggers,
 * run until a trigger fires (or Ctrl-C/SIGTERM, --duration, the target's exit), freeze,
 * snapshot, write the perf.data (--keep-capture), decode it to FXT, print a summary;
 * again for each of --max-snapshots. The target is never left stopped, ptraced or
 * probed: the backend and the triggers let it go before ptbpf waits or exits.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "capture_session.h"
#include "cli.h"
#include "commands.h"
#include "guardian.h"
#include "log.h"
#include "output_plan.h"
#include "perfdata.h"
#include "ptdecode.h"
#include "symtab.h"
#include "target.h"
#include "triggers.h"

struct capture_run {
	const struct capture_opts *opts;
	struct capture_session s;	/* target, triggers, signals, timer; s.reason says
					 * why the backend's run() returned */
	const struct backend_ops *ops;
	struct backend *b;
	struct output_plan plan;
	uint64_t checks;
	unsigned poll_every;		/* check() calls between polls of the session's fds */
	struct trigger_rec fire;	/* reason STOP_TRIGGER: its first fire */
	bool discard_fires;		/* between snapshots: fires of untraced time */
	unsigned snapshots;		/* written so far */
};

static int on_fire(void *ctx, const struct trigger_rec *r)
{
	struct capture_run *run = ctx;

	if (run->discard_fires || run->s.reason != STOP_NONE)
		return 0;
	run->fire = *r;
	run->s.reason = STOP_TRIGGER;
	return 0;
}

/* Called by the backend between steps (singlestep) or when an fd is readable (pt). */
static int check(void *ctx)
{
	struct capture_run *run = ctx;
	int err;

	if (run->s.trig) {
		/* Cheap: two loads from the mapped ring buffer when nothing fired. */
		err = triggers__consume(run->s.trig, on_fire, run);
		if (err < 0)
			return err;
		if (run->s.reason != STOP_NONE)
			return 1;
	}
	if (run->checks++ % run->poll_every)
		return 0;
	return capture_session__poll_stop(&run->s);
}

/*
 * The backend of --backend, else pt where usable. Choosing singlestep by default fills
 * `notice` (printed once the capture starts, so that errors before stay one line).
 */
static const struct backend_ops *choose_backend(const struct capture_opts *opts,
						char *notice, size_t size)
{
	char why[512] = "";

	notice[0] = '\0';
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
	/* The reason without its fix: the fix is what this notice says. */
	why[strcspn(why, ";")] = '\0';
	snprintf(notice, size, "%s: using the singlestep backend (software PT: the program runs "
		 "10^4 to 10^5 times slower while it computes; --backend singlestep silences "
		 "this)", why);
	return &ss_backend_ops;
}

/*
 * Run-queue latency has no meaning for a single-stepped program: each step is a stop
 * and a wakeup by ptbpf, so the waits for a CPU it would measure are the tracer's.
 */
static int check_backend_triggers(const struct capture_opts *opts, const struct backend_ops *ops)
{
	int i;

	if (ops != &ss_backend_ops)
		return 0;
	for (i = 0; i < opts->nr_triggers; i++) {
		if (opts->triggers[i].kind != TRIGGER_RUNQ_LATENCY)
			continue;
		elog("--latency-over without --uprobe (run-queue latency) cannot be measured under "
		     "the singlestep backend: every step stops and wakes the program, so its waits "
		     "for a CPU would be ptbpf's; find them with --dry-run (the program runs "
		     "untraced) or capture on a host with Intel PT\n");
		return -EINVAL;
	}
	return 0;
}

static const char *target_end(struct target *t, char *buf, size_t size);

/*
 * HEADER_BUILD_ID for every file the capture maps, read from the files now (as perf
 * record does at its end): a capture decoded on another host finds its binaries by
 * build-id (build-id caches, debuginfod), and a file replaced since is noticed.
 */
static int add_build_ids(struct capture *cap)
{
	size_t i, j;
	int err;

	for (i = 0; i < cap->nr_records; i++) {
		const struct pd_record *r = &cap->records[i];
		struct pd_build_id bid = { .pid = -1, .misc = PERF_RECORD_MISC_USER };
		uint32_t size = 0;
		bool have = false;

		if ((r->type != PERF_RECORD_MMAP2 && r->type != PERF_RECORD_MMAP) ||
		    !r->mmap.filename || r->mmap.filename[0] != '/')
			continue;
		for (j = 0; j < cap->nr_build_ids && !have; j++)
			have = cap->build_ids[j].filename &&
			       !strcmp(cap->build_ids[j].filename, r->mmap.filename);
		if (have)
			continue;
		if (r->mmap.build_id_size) {
			size = r->mmap.build_id_size;
			memcpy(bid.id, r->mmap.build_id, size);
		} else if (symtab__read_build_id(r->mmap.filename, bid.id, sizeof(bid.id), &size) ||
			   !size) {
			continue;	/* gone, unreadable, or no build-id note */
		}
		bid.size = (uint8_t)size;
		bid.filename = r->mmap.filename;
		err = capture__add_build_id(cap, &bid);
		if (err)
			return err;
	}
	return 0;
}

static int add_trigger_record(struct capture *cap, const struct capture_run *run)
{
	struct pd_record r = { .type = PD_RECORD_PTBPF_TRIGGER };
	struct pd_trigger *tr = &r.trigger;
	const struct target *t = run->s.target;
	char desc[160], end[64];

	tr->pid = t->pid;
	tr->tid = t->pid;
	switch (run->s.reason) {
	case STOP_SIGNAL:
		tr->kind = PD_STOP_SIGNAL;
		snprintf(desc, sizeof(desc), "signal: %s", strsignal(run->s.signo ?: SIGINT));
		break;
	case STOP_EXIT:
		/* a kill is not an exit: the summary and the trace say which it was */
		tr->kind = PD_STOP_EXIT;
		snprintf(desc, sizeof(desc), "exit: %s %s", t->comm,
			 target_end(run->s.target, end, sizeof(end)));
		break;
	case STOP_DURATION:
		tr->kind = PD_STOP_DURATION;
		snprintf(desc, sizeof(desc), "duration");
		break;
	default:
		snprintf(desc, sizeof(desc), "%s", triggers__describe(run->s.trig, run->fire.index) ?:
			 trigger_kind_name(run->fire.kind));
		trigger_rec_to_pd(&run->fire, tr);
		break;
	}
	/* Where the firing thread's trace ends, in the capture's own clock. */
	if (run->ops->locate)
		run->ops->locate(run->b, tr->tid, tr->ktime, &tr->cpu, &tr->time);
	tr->desc = desc;
	return capture__add_record(cap, &r);
}

/*
 * How the target ended, as far as ptbpf knows: "exited with status 0", "was killed by
 * SIGKILL", or "exited" (a -p target is not our child: its status is not ours to read).
 */
static const char *target_end(struct target *t, char *buf, size_t size)
{
	int status;

	if (t->spawned && t->exit_status < 0 && waitpid(t->pid, &status, WNOHANG) == t->pid)
		t->exit_status = status;
	if (t->exit_status < 0)
		snprintf(buf, size, "exited");
	else if (WIFSIGNALED(t->exit_status))
		/* the name, not strsignal()'s "Killed": "killed by Killed" says nothing */
		snprintf(buf, size, "was killed by SIG%s",
			 sigabbrev_np(WTERMSIG(t->exit_status)) ?: "?");
	else
		snprintf(buf, size, "exited with status %d", WEXITSTATUS(t->exit_status));
	return buf;
}

static void print_trigger(const struct capture_run *run, const struct capture *cap)
{
	const struct pd_trigger *tr = NULL;
	char lat[32];
	size_t i;

	for (i = 0; i < cap->nr_records && !tr; i++)
		if (cap->records[i].type == PD_RECORD_PTBPF_TRIGGER)
			tr = &cap->records[i].trigger;
	if (!tr)
		return;
	fprintf(stderr, "  trigger   %s\n", tr->desc ? tr->desc : trigger_kind_name(tr->kind));
	if (tr->kind == PD_STOP_SIGNAL || tr->kind == PD_STOP_EXIT || tr->kind == PD_STOP_DURATION)
		return;
	fprintf(stderr, "            fired in thread %u (pid %u) on cpu %u", tr->tid, tr->pid, tr->cpu);
	if (tr->ip)
		fprintf(stderr, " at 0x%" PRIx64, tr->ip);
	if (tr->latency_ns)
		fprintf(stderr, ", latency %s", fmt_duration(tr->latency_ns, lat, sizeof(lat)));
	fprintf(stderr, "\n");
}

static void print_summary(const struct capture_run *run, const struct capture *cap,
			  const char *fxt, const char *data, const struct decode_stats *st)
{
	char span[32], slow[32];
	struct stat sb;
	size_t i, j;

	fprintf(stderr, "ptbpf: snapshot %u of %s (pid %d)\n", run->snapshots, run->s.target->comm,
	       run->s.target->pid);
	print_trigger(run, cap);
	fprintf(stderr, "  backend   %s\n", run->ops->describe(run->b));
	fprintf(stderr, "  captured ");
	for (i = 0; i < cap->nr_aux; i++) {
		uint64_t bytes = cap->aux[i].size;

		/* one line item per CPU (several buffers of one CPU are summed) */
		for (j = 0; j < i; j++)
			if (cap->aux[j].cpu == cap->aux[i].cpu)
				break;
		if (j < i)
			continue;
		for (j = i + 1; j < cap->nr_aux; j++)
			if (cap->aux[j].cpu == cap->aux[i].cpu)
				bytes += cap->aux[j].size;
		fprintf(stderr, " cpu %u: %" PRIu64 " bytes%s", cap->aux[i].cpu, bytes,
		       i + 1 < cap->nr_aux ? "," : "");
	}
	fprintf(stderr, "%s\n", cap->nr_aux ? "" : " no trace bytes");
	if (st) {
		fprintf(stderr, "  covers    %s of execution: %" PRIu64 " instructions, %" PRIu64
		       " thread(s), %" PRIu64 " calls, %" PRIu64 " decode error(s)",
		       fmt_duration(st->last_time - st->first_time, span, sizeof(span)), st->insns,
		       st->threads, st->calls, st->errors);
		/* lost trace the kernel reported (PERF_RECORD_AUX flags), marked in the FXT */
		if (st->gaps)
			fprintf(stderr, ", %" PRIu64 " gap(s) the kernel reported", st->gaps);
		fputc('\n', stderr);
		if (st->slowest_ns)
			fprintf(stderr, "  slowest   %s  %s\n", fmt_duration(st->slowest_ns, slow, sizeof(slow)),
			       st->slowest_path);
		if (st->fast_off_small)
			vlog("  decoded   libipt's block decoder alone: %" PRIu64 " bytes of PT, too "
			     "few for the fast path to pay%s\n", st->bytes, st->verified_fast ?
			     " (and the fast path, --verify-fast: no difference)" : "");
		else if (!run->opts->no_fast)
			vlog("  decoded   fast path %" PRIu64 " of %" PRIu64 " blocks%s\n",
			     st->fast_blocks, st->blocks, st->verified_fast ?
			     ", checked against libipt's block decoder (--verify-fast): no difference"
			     : "");
		else
			vlog("  decoded   libipt's block decoder alone (--no-fast), %" PRIu64 " blocks%s\n",
			     st->blocks, st->verified_fast ? " (and the fast path, --verify-fast: no "
			     "difference)" : "");
		fprintf(stderr, "  trace     %s (%lld bytes)\n", fxt,
		       stat(fxt, &sb) ? 0LL : (long long)sb.st_size);
	}
	if (data)
		fprintf(stderr, "  capture   %s (%lld bytes; perf script --itrace=cr -i %s)\n", data,
		       stat(data, &sb) ? 0LL : (long long)sb.st_size, data);
	if (st)
		fprintf(stderr, "  open it   https://ui.perfetto.dev -> Open trace file -> %s\n", fxt);
	
}

/* Freeze, snapshot, write and decode snapshot number run->snapshots + 1. */
static int take_snapshot(struct capture_run *run)
{
	const struct capture_opts *opts = run->opts;
	struct decode_stats st = {};
	struct capture *cap = NULL;
	char *fxt = NULL, *data = NULL;
	bool verify_failed;
	int err;

	err = run->ops->freeze(run->b);
	if (err) {
		elog("cannot freeze the %s rings: %s\n", run->ops->name, strerror(-err));
		return err;
	}
	cap = capture__new();
	if (!cap)
		return -ENOMEM;
	err = run->ops->snapshot(run->b, cap);
	/* A --verify difference still writes the capture that shows it, then fails. */
	verify_failed = err == -EILSEQ;
	if (verify_failed)
		err = 0;
	err = err ?: add_trigger_record(cap, run) ?: add_build_ids(cap);
	if (err) {
		elog("snapshot failed: %s\n", strerror(-err));
		goto cleanup;
	}
	if (!cap->nr_aux && run->ops == &ss_backend_ops) {
		/* not "no Intel PT data": stepping traces what runs, and nothing did */
		elog("%s (pid %d) ran no instructions while traced (it waited in the kernel "
		     "throughout): nothing to snapshot; trace it longer (--duration) or when it "
		     "works\n", run->s.target->comm, run->s.target->pid);
		err = -ENODATA;
		goto cleanup;
	}
	run->snapshots++;
	err = output_plan__paths(&run->plan, run->snapshots, &fxt, &data);
	if (err)
		goto cleanup;
	if (data) {
		/* both print what went wrong */
		err = output_move_aside(data) ?: perfdata_write(data, cap);
		if (err)
			goto cleanup;
	}
	if (opts->decode) {
		/* the target's threads (test_decode_select checks what that skips) */
		uint32_t target_pid = (uint32_t)run->s.target->pid;
		struct decode_opts dopts = capture_session__decode_opts(opts, &target_pid, fxt);

		err = output_move_aside(fxt) ?: ptdecode_capture(cap, &dopts, &st);
		if (err) {
			elog("cannot decode the snapshot to %s: %s%s%s\n", fxt, strerror(-err),
			     data ? "; the capture is kept in " : "", data ? data : "");
			goto cleanup;
		}
	}
	print_summary(run, cap, fxt, data, opts->decode ? &st : NULL);
	if (verify_failed) {
		elog("--verify: the trace differs from the stepped instructions\n");
		err = -EILSEQ;
	}

cleanup:
	capture__free(cap);
	free(fxt);
	free(data);
	return err;
}

/*
 * A command ptbpf started, once the session is over and the target let go. ptbpf is an
 * observer: stopping it (Ctrl-C, SIGTERM, --duration) does not stop the command, which
 * runs on untraced. After a trigger's last snapshot ptbpf waits for the command, as
 * `perf record -- CMD` does; Ctrl-C then stops it.
 */
static void finish_command(struct capture_run *run)
{
	struct target *t = run->s.target;
	struct pollfd pfd[2] = {
		{ .fd = t->pidfd, .events = POLLIN },
		{ .fd = run->s.sfd, .events = POLLIN },
	};
	int status;

	if (!t->spawned || !t->released || t->exit_status >= 0)
		return;
	if (waitpid(t->pid, &status, WNOHANG) == t->pid) {
		t->exit_status = status;
		return;
	}
	if (!run->snapshots || run->s.reason == STOP_SIGNAL || run->s.reason == STOP_DURATION ||
	    t->pidfd < 0 || run->s.sfd < 0 || guardian_gone()) {
		elog("%s (pid %d) runs on, untraced\n", t->comm, t->pid);
		return;
	}
	elog("%s (pid %d) runs on, untraced; waiting for it to exit (Ctrl-C stops it)\n", t->comm,
	     t->pid);
	while (poll(pfd, 2, -1) < 0 && errno == EINTR)
		;
	/* ptbpf's own end (its guardian killed) is no reason to end the command */
	if (pfd[1].revents && guardian_gone())
		return;
	if (pfd[1].revents)
		kill(t->pid, SIGTERM);
	if (waitpid(t->pid, &status, 0) == t->pid)
		t->exit_status = status;
}

/* Let the target go: backend first (gate-mode perf events hold tracefs probes). */
static void release_target(struct capture_run *run)
{
	if (run->b)
		run->ops->close(run->b);
	run->b = NULL;
	capture_session__release_triggers(&run->s);
}

static int arm(struct capture_run *run)
{
	const struct capture_opts *opts = run->opts;
	enum trigger_attach_mode mode = TRIGGER_ATTACH_LINKS;
	int err;

	err = run->ops->open(opts, run->s.target, &run->b);
	if (err)
		return exit_status(err);
	if (opts->nr_triggers) {
		if (run->ops->trigger_mode)
			mode = run->ops->trigger_mode(run->b);
		err = capture_session__arm(&run->s, mode);
		if (!err && mode == TRIGGER_ATTACH_GATE && run->ops->attach_gates)
			err = run->ops->attach_gates(run->b, run->s.trig);
		if (err)
			return exit_status(err);
	}
	/* after the target's fork: it must not inherit blocked signals */
	err = capture_session__watch(&run->s);
	if (err) {
		elog("cannot set up signals and timers: %s\n", strerror(-err));
		return 1;
	}
	err = run->ops->start(run->b);
	if (err) {
		elog("cannot start the %s backend: %s\n", run->ops->name, strerror(-err));
		return 1;
	}
	if (run->s.target->spawned && target__release(run->s.target))
		return 2;
	return 0;
}

static void describe_wait(const struct capture_run *run)
{
	char what[256] = "Ctrl-C or the target's exit";
	int i, n = 0;

	if (run->s.trig && triggers__count(run->s.trig)) {
		n = snprintf(what, sizeof(what), "%s", triggers__describe(run->s.trig, 0));
		for (i = 1; i < triggers__count(run->s.trig) && n < (int)sizeof(what); i++)
			n += snprintf(what + n, sizeof(what) - n, " or %s",
				      triggers__describe(run->s.trig, i));
	}
	elog("recording %s (pid %d) with the %s backend; waiting for %s\n", run->s.target->comm,
	     run->s.target->pid, run->ops->name, what);
}

int cmd_capture(struct capture_opts *opts)
{
	struct capture_run run = { .opts = opts };
	struct run_hooks hooks = { .check = check, .ctx = &run };
	bool final_snapshot = !opts->nr_triggers || opts->snapshot_on_exit;
	char end[64], notice[640];
	int err, ret = 1;

	/* Without decoding, the capture is the only output. */
	if (!opts->decode)
		opts->keep_capture = true;
	/* Each fire is a snapshot: none while it is taken (triggers__arm() after resume). */
	opts->fire_once_per_arm = true;
	run.ops = choose_backend(opts, notice, sizeof(notice));
	if (check_backend_triggers(opts, run.ops))
		return 2;
	run.poll_every = run.ops->poll_every ? run.ops->poll_every : 1;
	/* A stepping tracer must outlive a SIGKILL of ptbpf: see user/guardian.h. */
	if (run.ops == &ss_backend_ops) {
		err = guardian_split();
		if (err) {
			elog("cannot start the tracing process: %s\n", strerror(-err));
			return 1;
		}
	}
	if (run.ops == &pt_backend_ops && opts->backend == BACKEND_PT) {
		char why[512];

		if (!pt_backend_ops.usable(why, sizeof(why))) {
			elog("--backend pt: %s\n", why);
			return 2;
		}
	}

	capture_session__init(&run.s, opts);
	err = capture_session__start_target(&run.s, false);
	if (err)
		return exit_status(err);
	guardian_protect();
	err = output_plan__init(&run.plan, opts->output, opts->keep_capture,
				opts->keep_capture_path, run.s.target->comm, run.s.target->pid,
				time(NULL), opts->max_snapshots > 1);
	if (err)
		goto cleanup;	/* said in one line; the command, held before exec, never ran */
	ret = arm(&run);
	if (ret)
		goto cleanup;
	ret = 1;
	hooks.fds = run.s.fds;
	hooks.nr_fds = run.s.nr_fds;
	hooks.trace_clock = triggers__trace_clock(run.s.trig);
	if (notice[0])
		elog("%s\n", notice);
	describe_wait(&run);

	while (run.snapshots < opts->max_snapshots) {
		bool snapshot;

		run.s.reason = STOP_NONE;
		err = run.ops->run(run.b, &hooks);
		if (err < 0) {
			elog("the %s backend failed: %s\n", run.ops->name, strerror(-err));
			goto cleanup;
		}
		if (err == RUN_TARGET_EXITED) {
			/* A fire from the target's last moments still names the snapshot. */
			if (run.s.reason == STOP_NONE || run.s.reason == STOP_DURATION ||
			    run.s.reason == STOP_SIGNAL)
				check(&run);
			if (run.s.reason == STOP_NONE || run.s.reason == STOP_DURATION ||
			    run.s.reason == STOP_SIGNAL)
				run.s.reason = STOP_EXIT;
		}
		/* BPF fires always snapshot; the session's end only when asked to. */
		switch (run.s.reason) {
		case STOP_EXIT:
		case STOP_SIGNAL:
		case STOP_DURATION:
			/* ptbpf was killed: let the target go at once, nothing more */
			snapshot = final_snapshot && !guardian_gone();
			break;
		default:
			snapshot = true;
			break;
		}
		if (snapshot) {
			err = take_snapshot(&run);
			if (err)
				goto cleanup;
		}
		if (run.s.reason == STOP_EXIT || run.s.reason == STOP_SIGNAL ||
		    run.s.reason == STOP_DURATION || run.snapshots >= opts->max_snapshots)
			break;
		/* Fires while the rings were frozen describe untraced time: drop them. */
		run.discard_fires = true;
		if (run.s.trig)
			triggers__consume(run.s.trig, on_fire, &run);
		run.discard_fires = false;
		err = run.ops->resume(run.b);
		if (!err && run.s.trig)
			err = triggers__arm(run.s.trig);
		if (err) {
			elog("cannot resume the %s backend: %s\n", run.ops->name, strerror(-err));
			goto cleanup;
		}
	}

	if (run.s.trig)
		triggers__print_stats(run.s.trig);
	release_target(&run);
	if (!run.snapshots) {
		switch (run.s.reason) {
		case STOP_EXIT:
			elog("no snapshot: %s %s before the trigger fired\n", run.s.target->comm,
			     target_end(run.s.target, end, sizeof(end)));
			break;
		case STOP_SIGNAL:
			elog("no snapshot: stopped by %s before the trigger fired (--snapshot-on-exit "
			     "takes one anyway)\n", strsignal(run.s.signo ?: SIGINT));
			break;
		case STOP_DURATION:
			elog("no snapshot: the trigger did not fire within --duration "
			     "(--snapshot-on-exit takes one anyway)\n");
			break;
		default:
			elog("no snapshot was taken\n");
			break;
		}
		goto cleanup;
	}
	ret = 0;

cleanup:
	release_target(&run);
	finish_command(&run);
	capture_session__close(&run.s);
	output_plan__free(&run.plan);
	return ret;
}
