// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <linux/capability.h>

#include "privs.h"

static void test_sysctl(void **state)
{
	char path[64];
	FILE *f;
	int v;

	snprintf(path, sizeof(path), "/tmp/ptbpf-test-privs-%d", getpid());
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("-1\n", f);
	fclose(f);
	assert_int_equal(privs_read_sysctl(path, &v), 0);
	assert_int_equal(v, -1);
	f = fopen(path, "w");
	fputs("junk\n", f);
	fclose(f);
	assert_int_equal(privs_read_sysctl(path, &v), -EINVAL);
	unlink(path);
	assert_int_equal(privs_read_sysctl(path, &v), -ENOENT);
	assert_int_equal(privs_read_sysctl(NULL, &v), -EINVAL);
	assert_int_equal(privs_read_sysctl("/proc/sys/kernel/perf_event_paranoid", NULL),
			 -EINVAL);
}

static void test_caps(void **state)
{
	assert_false(privs_has_cap(-1));
	assert_false(privs_has_cap(1000));
	/* root has them all; others need not: compare with /proc/self/status instead */
	if (geteuid() == 0)
		assert_true(privs_has_cap(CAP_SYS_ADMIN));
}

static void test_perf_allowed(void **state)
{
	char why[512] = "";

	/* Either allowed, or a reason with a fix. */
	if (!privs_cpu_wide_perf(why, sizeof(why)))
		assert_non_null(strstr(why, "fix: "));
	why[0] = '\0';
	if (!privs_kernel_perf(why, sizeof(why)))
		assert_non_null(strstr(why, "fix: "));
	privs_cpu_wide_perf(NULL, 0);
	privs_kernel_perf(NULL, 0);
}

static void test_ptrace_probe(void **state)
{
	char ev[512];
	int err;

	assert_int_equal(privs_ptrace_probe(NULL, 10), -EINVAL);
	assert_int_equal(privs_ptrace_probe(ev, 0), -EINVAL);
	err = privs_ptrace_probe(ev, sizeof(ev));
	if (err)
		assert_non_null(strstr(ev, "PTRACE_"));
	else
		assert_non_null(strstr(ev, "single-stepped"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sysctl),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_perf_allowed),
		cmocka_unit_test(test_ptrace_probe),
	};

	return cmocka_run_group_tests_name("privs", tests, NULL, NULL);
}
