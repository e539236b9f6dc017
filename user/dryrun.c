// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * --dry-run: the triggers alone, no capture. Each fire is printed as one JSON line on
 * stdout (like bcc's funclatency/runqslower, but machine-readable). It ends when the
 * target exits, on Ctrl-C/SIGTERM, after --duration, or, with -p/--system-wide and an
 * explicit --max-snapshots, once that many fires were printed.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "capture_session.h"
#include "commands.h"
#include "log.h"
#include "perfdata.h"
#include "proc_synth.h"
#include "syscalls.h"
#include "target.h"
#include "triggers.h"

struct dry_run {
	struct triggers *trig;
	__u64 printed;
};

static void add_u64(struct json_object *o, const char *key, __u64 v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

static void add_str(struct json_object *o, const char *key, const char *v)
{
	json_object_object_add(o, key, json_object_new_string(v));
}

static void add_hex(struct json_object *o, const char *key, __u64 v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)v);
	add_str(o, key, buf);
}

/* "sym+0xoff" beside an address, where the trigger's binary knows it. */
static void add_sym(struct dry_run *d, struct json_object *o, const char *key,
		    const struct trigger_rec *r, __u64 addr)
{
	char buf[256];

	if (!triggers__symbolize(d->trig, r, addr, buf, sizeof(buf)))
		add_str(o, key, buf);
}

static int print_fire(void *ctx, const struct trigger_rec *r)
{
	struct dry_run *d = ctx;
	enum trigger_kind kind = r->kind;
	struct json_object *o;
	const char *name;
	char comm[32];
	__u32 pid = r->pid;
	long tgid;

	o = json_object_new_object();
	if (!o)
		return -ENOMEM;
	/* The tgid of a thread the BPF side could not name (tp fallback, system-wide). */
	if (!pid && !proc_status_field(r->tid, "Tgid", &tgid))
		pid = tgid;
	add_u64(o, "time_ns", r->ktime_ns);
	add_u64(o, "trigger", r->index);
	add_str(o, "kind", trigger_kind_name(kind));
	name = triggers__describe(d->trig, r->index);
	if (name)
		add_str(o, "spec", name);
	add_u64(o, "seq", r->seq);
	add_u64(o, "cpu", r->cpu);
	add_u64(o, "pid", pid);
	add_u64(o, "tid", r->tid);
	/* The name at the fire; /proc only for a record without one. */
	snprintf(comm, sizeof(comm), "%.*s", (int)sizeof(r->comm), r->comm);
	if (!comm[0])
		proc_read_comm(pid ? pid : r->tid, r->tid, comm, sizeof(comm));
	if (comm[0])
		add_str(o, "comm", comm);
	switch (kind) {
	case TRIGGER_UPROBE:
	case TRIGGER_USDT:
	case TRIGGER_KPROBE:
		add_hex(o, "ip", r->ip);
		add_sym(d, o, "sym", r, r->ip);
		add_hex(o, "arg0", r->arg0);
		add_hex(o, "arg1", r->arg1);
		break;
	case TRIGGER_UPROBE_LATENCY:
		add_u64(o, "latency_ns", r->latency_ns);
		add_hex(o, "ip", r->ip);
		add_sym(d, o, "sym", r, r->ip);
		add_hex(o, "func_ip", r->func_ip);
		add_sym(d, o, "func", r, r->func_ip);
		add_hex(o, "arg0", r->arg0);
		add_hex(o, "arg1", r->arg1);
		break;
	case TRIGGER_RUNQ_LATENCY:
		add_u64(o, "latency_ns", r->latency_ns);
		add_u64(o, "prev_tid", r->aux);
		break;
	case TRIGGER_SYSCALL_LATENCY:
		add_u64(o, "latency_ns", r->latency_ns);
		add_u64(o, "syscall_nr", r->arg0);
		name = syscall_name((int)r->arg0);
		if (name)
			add_str(o, "syscall", name);
		json_object_object_add(o, "ret", json_object_new_int64((__s64)r->arg1));
		break;
	case TRIGGER_TRACEPOINT:
		add_hex(o, "arg0", r->arg0);
		add_hex(o, "arg1", r->arg1);
		break;
	default:
		break;
	}
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	d->printed++;
	return 0;
}

static int epoll_add(int ep, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

int cmd_dry_run(struct capture_opts *opts)
{
	struct capture_opts o = *opts;
	struct capture_session s;
	struct dry_run d = {};
	struct target *target;
	struct epoll_event ev;
	int ep = -1, err, ret = 1, n, i;
	bool done = false, stop_at_max;

	/* A dry run shows every fire unless the user asked for a limit. */
	if (!o.max_snapshots_set)
		o.max_snapshots = 0;
	stop_at_max = o.max_snapshots_set && !o.cmd;

	capture_session__init(&s, &o);
	err = capture_session__start_target(&s, true);
	if (err) {
		ret = (err == -ENOMEM) ? 1 : 2;
		goto cleanup;
	}
	target = s.target;

	/* the ring buffer is read even without a trigger: the loop waits on it */
	err = capture_session__arm(&s, TRIGGER_ATTACH_LINKS);
	if (err) {
		ret = exit_status(err);
		goto cleanup;
	}
	d.trig = s.trig;
	if (!triggers__count(d.trig))
		elog("dry run without a trigger: nothing will fire (see --help for triggers)\n");

	/* After the fork: the target must not inherit blocked signals. */
	err = capture_session__watch(&s);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (err || ep < 0) {
		elog("dry run: cannot set up signals, timer and epoll: %s\n",
		     strerror(err ? -err : errno));
		goto cleanup;
	}
	for (i = 0; i < s.nr_fds; i++)
		if (epoll_add(ep, s.fds[i]))
			break;
	if (i < s.nr_fds || (target && target->pidfd >= 0 && epoll_add(ep, target->pidfd))) {
		elog("dry run: epoll: %s\n", strerror(errno));
		goto cleanup;
	}

	if (target) {
		err = target__release(target);
		if (err) {
			ret = 2;
			goto cleanup;
		}
	}
	vlog("dry run: %d trigger(s) armed%s%s\n", triggers__count(d.trig),
	     target ? " on " : "", target ? target->comm : "");

	ret = 0;
	while (!done) {
		/* Without a pidfd, look at the target twice a second. */
		n = epoll_wait(ep, &ev, 1, target && target->pidfd < 0 ? 500 : -1);
		if (n < 0 && errno != EINTR) {
			elog("dry run: epoll_wait: %s\n", strerror(errno));
			ret = 1;
			break;
		}
		err = triggers__consume(d.trig, print_fire, &d);
		if (err < 0) {
			elog("dry run: reading fires: %s\n", strerror(-err));
			ret = 1;
			break;
		}
		if (stop_at_max && d.printed >= o.max_snapshots)
			break;
		if (n <= 0) {
			if (target && target->pidfd < 0 && kill(target->pid, 0) && errno == ESRCH)
				done = true;
			continue;
		}
		if (capture_session__stop_on(&s, ev.data.fd)) {
			if (s.reason == STOP_SIGNAL)
				vlog("dry run: %s, stopping\n", strsignal(s.signo));
			else
				vlog("dry run: --duration elapsed\n");
			done = true;
		} else if (target && ev.data.fd == target->pidfd) {
			done = true;
		}
	}
	/* Fires written just before the end. */
	triggers__consume(d.trig, print_fire, &d);
	if (target && target->spawned) {
		int status;

		/* Reap the target if it is gone (it is ours); never wait for a live one. */
		if (waitpid(target->pid, &status, WNOHANG) == target->pid)
			target->exit_status = status;
	}
	triggers__print_stats(d.trig);
	vlog("dry run: %llu fire(s)\n", (unsigned long long)d.printed);

cleanup:
	capture_session__close(&s);
	if (ep >= 0)
		close(ep);
	return ret;
}
