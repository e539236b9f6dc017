// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli.h"

static void test_parse_duration(void **state)
{
	uint64_t ns;

	assert_int_equal(parse_duration("200us", &ns), 0);
	assert_int_equal(ns, 200000);
	assert_int_equal(parse_duration("5ms", &ns), 0);
	assert_int_equal(ns, 5000000);
	assert_int_equal(parse_duration("2s", &ns), 0);
	assert_int_equal(ns, 2000000000ull);
	assert_int_equal(parse_duration("7ns", &ns), 0);
	assert_int_equal(ns, 7);
	/* a unit is required: "200" alone is ambiguous */
	assert_int_equal(parse_duration("200", &ns), -EINVAL);
	assert_int_equal(parse_duration("ms", &ns), -EINVAL);
	assert_int_equal(parse_duration("-5ms", &ns), -EINVAL);
	assert_int_equal(parse_duration("5 ms", &ns), -EINVAL);
	assert_int_equal(parse_duration("5min", &ns), -EINVAL);
	assert_int_equal(parse_duration(NULL, &ns), -EINVAL);
	assert_int_equal(parse_duration("99999999999999999999s", &ns), -EINVAL);
	assert_int_equal(parse_duration("99999999999s", &ns), -ERANGE);
}

static void test_parse_size(void **state)
{
	uint64_t b;

	assert_int_equal(parse_size("4M", &b), 0);
	assert_int_equal(b, 4u << 20);
	assert_int_equal(parse_size("512k", &b), 0);
	assert_int_equal(b, 512u << 10);
	assert_int_equal(parse_size("1G", &b), 0);
	assert_int_equal(b, 1ull << 30);
	assert_int_equal(parse_size("4096", &b), 0);
	assert_int_equal(b, 4096);
	assert_int_equal(parse_size("4MiB", &b), 0);
	assert_int_equal(parse_size("4X", &b), -EINVAL);
	assert_int_equal(parse_size("", &b), -EINVAL);
	assert_int_equal(parse_size("M", &b), -EINVAL);
}

static void test_parse_u64(void **state)
{
	uint64_t v;

	assert_int_equal(parse_u64("3", 1, 10, &v), 0);
	assert_int_equal(v, 3);
	assert_int_equal(parse_u64("0", 1, 10, &v), -ERANGE);
	assert_int_equal(parse_u64("11", 1, 10, &v), -ERANGE);
	assert_int_equal(parse_u64("-1", 0, 10, &v), -EINVAL);
	assert_int_equal(parse_u64("3x", 0, 10, &v), -EINVAL);
	assert_int_equal(parse_u64(NULL, 0, 10, &v), -EINVAL);
}

static int parse(struct capture_opts *o, int argc, char **argv)
{
	return cli_parse_capture(argc, argv, o);
}

static void test_capture_cmdline(void **state)
{
	char *argv[] = { "ptbpf", "--uprobe", "./bin:slow_path", "--latency-over", "200us",
			 "--nth", "3", "--", "./bin", "--flag", NULL };
	struct capture_opts o;

	assert_int_equal(parse(&o, 10, argv), 0);
	assert_int_equal(o.nr_triggers, 1);
	assert_int_equal(o.triggers[0].kind, TRIGGER_UPROBE_LATENCY);
	assert_int_equal(o.triggers[0].latency_ns, 200000);
	assert_string_equal(o.triggers[0].arg, "./bin:slow_path");
	assert_int_equal(o.nth, 3);
	assert_non_null(o.cmd);
	assert_string_equal(o.cmd[0], "./bin");
	assert_string_equal(o.cmd[1], "--flag");
	assert_null(o.cmd[2]);
	assert_int_equal(o.buffer_size, 4u << 20);
	cli_free_capture(&o);
}

static void test_capture_runq_and_syscall(void **state)
{
	char *argv[] = { "ptbpf", "--latency-over", "2ms", "--syscall-latency-over", "5ms",
			 "--syscall", "nanosleep", "-p", "1", NULL };
	struct capture_opts o;

	assert_int_equal(parse(&o, 9, argv), 0);
	assert_int_equal(o.nr_triggers, 2);
	assert_int_equal(o.triggers[0].kind, TRIGGER_SYSCALL_LATENCY);
	assert_int_equal(o.triggers[0].latency_ns, 5000000);
	assert_string_equal(o.triggers[0].syscall_name, "nanosleep");
	assert_int_equal(o.triggers[1].kind, TRIGGER_RUNQ_LATENCY);
	assert_int_equal(o.triggers[1].latency_ns, 2000000);
	assert_int_equal(o.pid, 1);
	assert_null(o.cmd);
	cli_free_capture(&o);
}

static void test_capture_choices(void **state)
{
	char *argv[] = { "ptbpf", "--backend", "singlestep", "--clock", "virtual", "--timing", "cyc",
			 "--decode=no", "--keep-capture", "x.data", "--", "./bin", NULL };
	char *bad[] = { "ptbpf", "--backend", "amd", "-p", "1", NULL };
	struct capture_opts o;

	assert_int_equal(parse(&o, 12, argv), 0);
	assert_int_equal(o.backend, BACKEND_SINGLESTEP);
	assert_int_equal(o.clock, SS_CLOCK_VIRTUAL);
	assert_int_equal(o.timing, TIMING_CYC);
	assert_true(o.timing_given);
	assert_false(o.decode);
	assert_true(o.keep_capture);
	/* "--keep-capture FILE.data", the DESIGN's spelling, takes the file */
	assert_string_equal(o.keep_capture_path, "x.data");
	assert_string_equal(o.cmd[0], "./bin");
	cli_free_capture(&o);
	assert_int_equal(parse(&o, 5, bad), 2);
	cli_free_capture(&o);
	/* defaults */
	char *plain[] = { "ptbpf", "-p", "1", NULL };
	assert_int_equal(parse(&o, 3, plain), 0);
	assert_int_equal(o.clock, SS_CLOCK_MIXED);
	assert_int_equal(o.backend, BACKEND_AUTO);
	assert_true(o.decode);
	assert_false(o.keep_capture);
	cli_free_capture(&o);
}

static void test_capture_usage_errors(void **state)
{
	char *no_target[] = { "ptbpf", "--uprobe", "a:b", NULL };
	char *both[] = { "ptbpf", "-p", "1", "--", "true", NULL };
	char *bad_dur[] = { "ptbpf", "--latency-over", "200", "-p", "1", NULL };
	char *bad_size[] = { "ptbpf", "--buffer-size", "3M", "-p", "1", NULL };
	char *bad_uprobe[] = { "ptbpf", "--uprobe", "slow_path", "-p", "1", NULL };
	char *bad_syscall[] = { "ptbpf", "--syscall", "read", "-p", "1", NULL };
	char *zero_duration[] = { "ptbpf", "--duration", "0s", "-p", "1", NULL };
	struct capture_opts o;

	assert_int_equal(parse(&o, 3, no_target), 2);
	cli_free_capture(&o);
	assert_int_equal(parse(&o, 5, both), 2);
	cli_free_capture(&o);
	assert_int_equal(parse(&o, 5, bad_dur), 2);
	cli_free_capture(&o);
	assert_int_equal(parse(&o, 5, bad_size), 2);
	cli_free_capture(&o);
	assert_int_equal(parse(&o, 5, bad_uprobe), 2);
	cli_free_capture(&o);
	assert_int_equal(parse(&o, 5, bad_syscall), 2);
	cli_free_capture(&o);
	assert_int_equal(parse(&o, 5, zero_duration), 2);	/* not "no --duration" */
	cli_free_capture(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_duration),
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_parse_u64),
		cmocka_unit_test(test_capture_cmdline),
		cmocka_unit_test(test_capture_runq_and_syscall),
		cmocka_unit_test(test_capture_choices),
		cmocka_unit_test(test_capture_usage_errors),
	};

	return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}
