// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The pt backend where there is no Intel PT: what it says and returns, on this host and
 * on fake sysfs trees (tests/data/sysfs-*, and trees made here).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "backend.h"
#include "pt_pmu.h"

static char stderr_path[64];

static const char *tree(const char *name)
{
	static char path[PATH_MAX];
	const char *top = getenv("TOP");

	snprintf(path, sizeof(path), "%s/tests/data/sysfs-%s", top && *top ? top : ".", name);
	return path;
}

/* Run open() with stderr captured; returns its result and the text it printed. */
static int open_capturing(const struct capture_opts *o, struct backend **b, char *text,
			  size_t size)
{
	int saved = dup(2), fd, err;
	FILE *f;
	size_t n;

	fflush(stderr);
	fd = open(stderr_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	dup2(fd, 2);
	close(fd);
	err = pt_backend_ops.open(o, NULL, b);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	f = fopen(stderr_path, "r");
	n = fread(text, 1, size - 1, f);
	text[n] = '\0';
	fclose(f);
	return err;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static struct capture_opts opts(void)
{
	return (struct capture_opts){ .buffer_size = 4u << 20, .psb_period = -1 };
}

static void test_usable_matches_doctor(void **state)
{
	char why[512], doctor[512];
	bool usable;

	/* on a fake tree without the PMU, and on this host: the line doctor prints */
	setenv("PTBPF_SYSFS_ROOT", tree("nopt"), 1);
	assert_false(pt_backend_ops.usable(why, sizeof(why)));
	assert_false(pt_pmu_usable(tree("nopt"), doctor, sizeof(doctor)));
	assert_string_equal(why, doctor);
	assert_non_null(strstr(why, "no Intel PT PMU: "));
	unsetenv("PTBPF_SYSFS_ROOT");
	usable = pt_backend_ops.usable(why, sizeof(why));
	assert_int_equal(usable, pt_pmu_usable("/sys", doctor, sizeof(doctor)));
	if (!usable)
		assert_string_equal(why, doctor);
	assert_string_equal(pt_backend_ops.name, "pt");
}

static void test_open_without_pmu(void **state)
{
	struct capture_opts o = opts();
	struct backend *b = (void *)1;
	char text[1024], why[512];

	setenv("PTBPF_SYSFS_ROOT", tree("nopt"), 1);
	assert_int_equal(open_capturing(&o, &b, text, sizeof(text)), -ENODEV);
	assert_null(b);
	pt_pmu_usable(tree("nopt"), why, sizeof(why));
	/* one line: "ptbpf: --backend pt: " and doctor's reason with its fix */
	assert_non_null(strstr(text, "--backend pt: "));
	assert_non_null(strstr(text, why));
	assert_non_null(strchr(text, '\n'));
	assert_int_equal(strchr(text, '\n') - text, strlen(text) - 1);
	unsetenv("PTBPF_SYSFS_ROOT");
}

static void test_open_config_errors(void **state)
{
	struct capture_opts o = opts();
	struct backend *b = NULL;
	char text[1024];

	if (geteuid()) {
		printf("SKIP: the fake PMU is only usable with CAP_PERFMON; run as root\n");
		skip();
	}
	/* the exact errors of pt_pmu__config() reach the user, and open() fails with them */
	setenv("PTBPF_SYSFS_ROOT", tree("broadwell"), 1);
	o.timing = TIMING_MTC;
	o.timing_given = true;
	assert_int_equal(open_capturing(&o, &b, text, sizeof(text)), -EOPNOTSUPP);
	assert_string_equal(text, "ptbpf: --timing mtc: this CPU has no MTC packets (caps/mtc=0); "
			    "use --timing tsc\n");
	o = opts();
	setenv("PTBPF_SYSFS_ROOT", tree("skylake"), 1);
	o.psb_period = 9;
	assert_int_equal(open_capturing(&o, &b, text, sizeof(text)), -EINVAL);
	assert_string_equal(text, "ptbpf: --psb-period 9 is not allowed on this CPU: "
			    "caps/psb_periods=0x3f allows 0-5\n");
	o = opts();
	o.buffer_size = 12288;
	assert_int_equal(open_capturing(&o, &b, text, sizeof(text)), -EINVAL);
	assert_non_null(strstr(text, "--buffer-size 12288: a power of two"));
	unsetenv("PTBPF_SYSFS_ROOT");
}

static void test_open_filter_errors(void **state)
{
	char *filters[] = { "/nonexistent/bin:main", "/proc/self/exe:no_such_function_xyz" };
	struct capture_opts o = opts();
	struct backend *b = NULL;
	char text[1024];

	if (geteuid()) {
		printf("SKIP: the fake PMU is only usable with CAP_PERFMON; run as root\n");
		skip();
	}
	setenv("PTBPF_SYSFS_ROOT", tree("skylake"), 1);
	o.filters[0] = filters[0];
	o.nr_filters = 1;
	assert_true(open_capturing(&o, &b, text, sizeof(text)) < 0);
	assert_non_null(strstr(text, "--filter /nonexistent/bin:main: cannot read symbols of "
				     "/nonexistent/bin"));
	o.filters[0] = filters[1];
	assert_int_equal(open_capturing(&o, &b, text, sizeof(text)), -EINVAL);
	assert_non_null(strstr(text, "no function 'no_such_function_xyz' in /proc/self/exe"));
	/* more ranges than the CPU has: caught before any symbol is read */
	o.filters[1] = filters[1];
	o.filters[2] = filters[1];
	o.nr_filters = 3;
	assert_int_equal(open_capturing(&o, &b, text, sizeof(text)), -EINVAL);
	assert_non_null(strstr(text, "--filter given 3 times, but this CPU has 2 address ranges"));
	unsetenv("PTBPF_SYSFS_ROOT");
}

/* A PMU sysfs describes but this kernel does not have: perf_event_open fails, cleanly. */
static void test_open_fails_cleanly(void **state)
{
	char dir[128], path[256], text[1024];
	struct capture_opts o = opts();
	struct backend *b = (void *)1;
	int before, err;
	FILE *f;

	if (geteuid()) {
		printf("SKIP: the fake PMU is only usable with CAP_PERFMON; run as root\n");
		skip();
	}
	snprintf(dir, sizeof(dir), "/tmp/ptbpf-test-pt-%d", getpid());
	snprintf(path, sizeof(path), "mkdir -p %s/bus/event_source/devices/intel_pt/format", dir);
	assert_int_equal(system(path), 0);
	snprintf(path, sizeof(path), "%s/bus/event_source/devices/intel_pt/type", dir);
	f = fopen(path, "w");
	fprintf(f, "%d\n", 0x7ffffff0);
	fclose(f);
	snprintf(path, sizeof(path), "%s/bus/event_source/devices/intel_pt/format/tsc", dir);
	f = fopen(path, "w");
	fprintf(f, "config:10\n");
	fclose(f);
	setenv("PTBPF_SYSFS_ROOT", dir, 1);
	before = count_fds();
	err = open_capturing(&o, &b, text, sizeof(text));
	assert_true(err < 0);
	assert_null(b);
	assert_non_null(strstr(text, "--backend pt: cannot open intel_pt on CPU "));
	/* nothing left open (the capture file of this test aside) */
	assert_int_equal(count_fds(), before);
	/* --kernel where /proc/kcore is missing: said before anything is opened */
	if (access("/proc/kcore", R_OK)) {
		o.kernel = true;
		assert_int_equal(open_capturing(&o, &b, text, sizeof(text)), -ENODEV);
		assert_non_null(strstr(text, "--kernel: /proc/kcore: "));
	}
	unsetenv("PTBPF_SYSFS_ROOT");
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	assert_int_equal(system(path), 0);
}

static void test_null_args(void **state)
{
	struct capture_opts o = opts();
	struct run_hooks hooks = {};
	struct backend *b = NULL;

	assert_int_equal(pt_backend_ops.open(NULL, NULL, &b), -EINVAL);
	assert_int_equal(pt_backend_ops.open(&o, NULL, NULL), -EINVAL);
	assert_int_equal(pt_backend_ops.start(NULL), -EINVAL);
	assert_int_equal(pt_backend_ops.run(NULL, &hooks), -EINVAL);
	assert_int_equal(pt_backend_ops.freeze(NULL), -EINVAL);
	assert_int_equal(pt_backend_ops.snapshot(NULL, NULL), -EINVAL);
	assert_int_equal(pt_backend_ops.resume(NULL), -EINVAL);
	assert_int_equal(pt_backend_ops.attach_gates(NULL, NULL), -EINVAL);
	assert_int_equal(pt_backend_ops.trigger_mode(NULL), TRIGGER_ATTACH_LINKS);
	assert_string_equal(pt_backend_ops.describe(NULL), "pt");
	pt_backend_ops.usable(NULL, 0);	/* no buffer for the reason: still answers */
	pt_backend_ops.close(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_usable_matches_doctor),
		cmocka_unit_test(test_open_without_pmu),
		cmocka_unit_test(test_open_config_errors),
		cmocka_unit_test(test_open_filter_errors),
		cmocka_unit_test(test_open_fails_cleanly),
		cmocka_unit_test(test_null_args),
	};
	int ret;

	snprintf(stderr_path, sizeof(stderr_path), "/tmp/ptbpf-test-pt-stderr-%d", getpid());
	ret = cmocka_run_group_tests_name("pt_backend", tests, NULL, NULL);
	unlink(stderr_path);
	return ret;
}
