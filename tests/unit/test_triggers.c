// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The trigger plane's API: invalid arguments, syscall table, loading for real (root). */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "perfdata.h"
#include "syscalls.h"
#include "target.h"
#include "triggers.h"

static int count_cb(void *ctx, const struct trigger_rec *rec)
{
	(*(int *)ctx)++;
	return 0;
}

/* count_cb for fires of trig_slow, which must carry its name from the kernel. */
static int count_slow_cb(void *ctx, const struct trigger_rec *rec)
{
	assert_string_equal(rec->comm, "trig_slow");
	return count_cb(ctx, rec);
}

static void test_null_args(void **state)
{
	struct capture_opts o = { .nth = 1, .max_snapshots = 1 };
	struct trigger_stats st;
	struct trigger_gate g;
	struct triggers *t = (void *)1;

	assert_int_equal(triggers__new(NULL, 1, TRIGGER_ATTACH_LINKS, &t), -EINVAL);
	assert_int_equal(triggers__new(&o, 1, TRIGGER_ATTACH_LINKS, NULL), -EINVAL);
	assert_int_equal(triggers__new(&o, 1, 7, &t), -EINVAL);
	/* a target is needed unless system-wide */
	assert_int_equal(triggers__new(&o, 0, TRIGGER_ATTACH_LINKS, &t), -EINVAL);
	o.nr_triggers = MAX_TRIGGERS + 1;
	assert_int_equal(triggers__new(&o, 1, TRIGGER_ATTACH_LINKS, &t), -EINVAL);

	assert_int_equal(triggers__attach(NULL), -EINVAL);
	assert_int_equal(triggers__arm(NULL), -EINVAL);
	assert_int_equal(triggers__ringbuf_fd(NULL), -EINVAL);
	assert_int_equal(triggers__consume(NULL, count_cb, NULL), -EINVAL);
	assert_int_equal(triggers__fire_count(NULL), 0);
	assert_int_equal(triggers__count(NULL), -EINVAL);
	assert_null(triggers__describe(NULL, 0));
	assert_int_equal(triggers__kind(NULL, 0), TRIGGER_NONE);
	assert_int_equal(triggers__nr_gates(NULL), -EINVAL);
	assert_int_equal(triggers__gate(NULL, 0, &g), -EINVAL);
	assert_int_equal(triggers__attach_gate(NULL, 0, 3), -EINVAL);
	assert_int_equal(triggers__stats(NULL, 0, &st), -EINVAL);
	assert_int_equal(triggers__dropped(NULL), 0);
	triggers__print_stats(NULL);
	triggers__free(NULL);
}

static void test_kind_names(void **state)
{
	assert_string_equal(trigger_kind_name(TRIGGER_UPROBE), "uprobe");
	assert_string_equal(trigger_kind_name(TRIGGER_UPROBE_LATENCY), "uprobe_latency");
	assert_string_equal(trigger_kind_name(TRIGGER_RUNQ_LATENCY), "runq_latency");
	assert_string_equal(trigger_kind_name(TRIGGER_SYSCALL_LATENCY), "syscall_latency");
	assert_string_equal(trigger_kind_name(TRIGGER_KPROBE), "kprobe");
	assert_string_equal(trigger_kind_name(TRIGGER_TRACEPOINT), "tracepoint");
	assert_string_equal(trigger_kind_name(1234), "none");
	assert_int_equal(exit_status(0), 0);
	assert_int_equal(exit_status(-ENOENT), 2);
	assert_int_equal(exit_status(-EOPNOTSUPP), 2);
	assert_int_equal(exit_status(-ENODEV), 2);
	assert_int_equal(exit_status(-ENOMEM), 1);
}

static void test_syscall_table(void **state)
{
	const char *close[4];
	int n;

	/* x86_64 numbers that never change */
	assert_int_equal(syscall_nr("read"), 0);
	assert_int_equal(syscall_nr("nanosleep"), 35);
	assert_int_equal(syscall_nr("clock_nanosleep"), 230);
	assert_int_equal(syscall_nr("no_such_call"), -ENOENT);
	assert_int_equal(syscall_nr(NULL), -EINVAL);
	assert_string_equal(syscall_name(35), "nanosleep");
	assert_null(syscall_name(-1));
	assert_null(syscall_name(100000));
	n = syscall_suggest("nanoslep", close, 4);
	assert_true(n >= 1);
	assert_string_equal(close[0], "nanosleep");
	assert_int_equal(syscall_suggest(NULL, close, 4), 0);
	assert_int_equal(syscall_suggest("read", NULL, 4), 0);
}

static bool can_bpf(void)
{
	return geteuid() == 0;
}

/* No trigger: loads, has a ring buffer, never fires. */
static void test_empty(void **state)
{
	struct capture_opts o = { .nth = 1, .max_snapshots = 1 };
	struct triggers *t = NULL;
	int n = 0;

	if (!can_bpf()) {
		printf("SKIP: loading BPF needs root\n");
		skip();
	}
	assert_int_equal(triggers__new(&o, getpid(), TRIGGER_ATTACH_LINKS, &t), 0);
	assert_non_null(t);
	assert_int_equal(triggers__count(t), 0);
	assert_true(triggers__ringbuf_fd(t) >= 0);
	assert_int_equal(triggers__attach(t), 0);
	assert_int_equal(triggers__consume(t, count_cb, &n), 0);
	assert_int_equal(triggers__consume(t, NULL, &n), -EINVAL);
	assert_int_equal(n, 0);
	assert_int_equal(triggers__fire_count(t), 0);
	assert_int_equal(triggers__nr_gates(t), 0);
	assert_null(triggers__describe(t, 0));
	/* attaching twice is refused */
	triggers__free(t);
}

/*
 * --kprobe: the program must pass the verifier; where the kernel has no kprobes, attaching
 * fails with -EOPNOTSUPP (exit 2) and says so.
 */
static void test_kprobe_loads(void **state)
{
	struct capture_opts o = { .nth = 1, .max_snapshots = 1, .nr_triggers = 1 };
	struct triggers *t = NULL;
	int err;

	if (!can_bpf()) {
		printf("SKIP: loading BPF needs root\n");
		skip();
	}
	o.triggers[0].kind = TRIGGER_KPROBE;
	o.triggers[0].arg = "do_nanosleep";
	o.triggers[0].syscall_nr = -1;
	assert_int_equal(triggers__new(&o, getpid(), TRIGGER_ATTACH_LINKS, &t), 0);
	assert_string_equal(triggers__describe(t, 0), "kprobe do_nanosleep");
	err = triggers__attach(t);
	if (access("/sys/bus/event_source/devices/kprobe", F_OK)) {
		assert_int_equal(err, -EOPNOTSUPP);
		assert_int_equal(exit_status(err), 2);
	} else {
		assert_int_equal(err, 0);
	}
	triggers__free(t);
}

static const char *slow_target(void)
{
	static char path[4096];
	const char *build = getenv("BUILD");

	snprintf(path, sizeof(path), "%s/targets/trig_slow", build ? build : "build");
	return access(path, X_OK) ? NULL : path;
}

/* Consume fires until there are `want`, for up to 3 s. */
/* Fires of trig_slow, until there are `want`. */
static void wait_fires(struct triggers *t, int *fires, int want)
{
	int i;

	for (i = 0; i < 300 && *fires < want; i++) {
		usleep(10000);
		assert_true(triggers__consume(t, count_slow_cb, fires) >= 0);
	}
}

/*
 * A capture (fire_once_per_arm) fires once per arming: the target runs on while the
 * loader takes the snapshot, and its hits then must not use up --max-snapshots (nor
 * describe untraced time). A probe hit about every millisecond, --max-snapshots 3: one
 * fire after each arming, three in all.
 */
static void test_once_per_arm(void **state)
{
	struct capture_opts o = { .nth = 1, .max_snapshots = 3, .nr_triggers = 1,
				  .fire_once_per_arm = true };
	char spec[4200], cmd[4300];
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	struct target *target = NULL;
	struct triggers *t = NULL;
	struct trigger_stats st;
	int fires = 0, round;

	if (!can_bpf() || !slow_target()) {
		printf("SKIP: needs root and the test target trig_slow (make targets)\n");
		skip();
	}
	snprintf(spec, sizeof(spec), "%s:slow_path", slow_target());
	snprintf(cmd, sizeof(cmd), "exec %s -t 1 -n 100000 -i 1000 -s 0 >/dev/null",
		 slow_target());
	o.triggers[0].kind = TRIGGER_UPROBE;
	o.triggers[0].arg = spec;
	o.triggers[0].syscall_nr = -1;
	assert_int_equal(target__spawn(argv, &target), 0);
	assert_int_equal(triggers__new(&o, target->pid, TRIGGER_ATTACH_LINKS, &t), 0);
	assert_int_equal(triggers__attach(t), 0);
	assert_int_equal(target__release(target), 0);
	for (round = 1; round <= 4; round++) {
		wait_fires(t, &fires, round < 3 ? round : 3);
		/* dozens of hits more, none of them fires until the next arming */
		usleep(50000);
		assert_true(triggers__consume(t, count_slow_cb, &fires) >= 0);
		assert_int_equal(fires, round < 3 ? round : 3);
		assert_int_equal(triggers__arm(t), 0);
	}
	assert_int_equal(triggers__stats(t, 0, &st), 0);
	assert_int_equal(st.fired, 3);
	assert_true(st.suppressed > 10);
	triggers__free(t);
	kill(target->pid, SIGKILL);
	waitpid(target->pid, NULL, 0);
	target->spawned = false;	/* reaped */
	target__free(target);
}

/* Invalid trigger arguments are refused before anything is loaded. */
static void test_bad_specs(void **state)
{
	struct capture_opts o = { .nth = 1, .max_snapshots = 1, .nr_triggers = 1 };
	struct triggers *t = NULL;

	o.triggers[0].syscall_nr = -1;
	o.triggers[0].kind = TRIGGER_UPROBE;
	o.triggers[0].arg = "/nonexistent/bin:main";
	assert_int_equal(triggers__new(&o, getpid(), TRIGGER_ATTACH_LINKS, &t), -ENOENT);
	o.triggers[0].arg = "/bin/true:0xzz";
	assert_int_equal(triggers__new(&o, getpid(), TRIGGER_ATTACH_LINKS, &t), -EINVAL);
	o.triggers[0].arg = "/bin/true:main+zz";
	assert_int_equal(triggers__new(&o, getpid(), TRIGGER_ATTACH_LINKS, &t), -EINVAL);
	/* this test program has symbols */
	o.triggers[0].arg = "/proc/self/exe:no_such_function";
	assert_int_equal(triggers__new(&o, getpid(), TRIGGER_ATTACH_LINKS, &t), -ENOENT);
	o.triggers[0].kind = TRIGGER_UPROBE_LATENCY;
	o.triggers[0].latency_ns = 1000;
	o.triggers[0].arg = "/proc/self/exe:main+4";
	assert_int_equal(triggers__new(&o, getpid(), TRIGGER_ATTACH_LINKS, &t), -EINVAL);
	o.triggers[0].kind = TRIGGER_KPROBE;
	o.triggers[0].arg = "a:b";
	assert_int_equal(triggers__new(&o, getpid(), TRIGGER_ATTACH_LINKS, &t), -EINVAL);
	o.triggers[0].kind = TRIGGER_TRACEPOINT;
	o.triggers[0].arg = "nocolon";
	assert_int_equal(triggers__new(&o, getpid(), TRIGGER_ATTACH_LINKS, &t), -EINVAL);
	o.triggers[0].kind = TRIGGER_SYSCALL_LATENCY;
	o.triggers[0].arg = NULL;
	o.triggers[0].syscall_name = "nanoslep";
	assert_int_equal(triggers__new(&o, getpid(), TRIGGER_ATTACH_LINKS, &t), -EINVAL);
	assert_null(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_null_args),
		cmocka_unit_test(test_kind_names),
		cmocka_unit_test(test_syscall_table),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_kprobe_loads),
		cmocka_unit_test(test_once_per_arm),
		cmocka_unit_test(test_bad_specs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
