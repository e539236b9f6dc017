// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pt_pmu.h"

/* tests/data/sysfs-NAME, found from $TOP (set by tests/run.sh) or the current directory */
static const char *tree(const char *name)
{
	static char path[PATH_MAX];
	const char *top = getenv("TOP");

	snprintf(path, sizeof(path), "%s/tests/data/sysfs-%s", top && *top ? top : ".", name);
	return path;
}

static struct pt_pmu *open_tree(const char *name)
{
	struct pt_pmu *pmu = NULL;

	assert_int_equal(pt_pmu__new(tree(name), &pmu), 0);
	assert_non_null(pmu);
	return pmu;
}

static void test_format_parse(void **state)
{
	struct pt_format_field f;

	assert_int_equal(pt_format_parse("config:0", &f), 0);
	assert_int_equal(f.word, 0);
	assert_int_equal(f.mask, 1);
	assert_int_equal(pt_format_parse("config:14-17\n", &f), 0);
	assert_int_equal(f.mask, 0xfull << 14);
	assert_int_equal(pt_format_parse("config:55", &f), 0);
	assert_int_equal(f.mask, 1ull << 55);
	assert_int_equal(pt_format_parse("config1:0-3,8", &f), 0);
	assert_int_equal(f.word, 1);
	assert_int_equal(f.mask, 0x10f);
	assert_int_equal(pt_format_parse("config2:63", &f), 0);
	assert_int_equal(f.word, 2);
	assert_int_equal(f.mask, 1ull << 63);

	assert_int_equal(pt_format_parse("config:", &f), -EINVAL);
	assert_int_equal(pt_format_parse("config:64", &f), -EINVAL);
	assert_int_equal(pt_format_parse("config:5-3", &f), -EINVAL);
	assert_int_equal(pt_format_parse("config:1-", &f), -EINVAL);
	assert_int_equal(pt_format_parse("config3:1", &f), -EINVAL);
	assert_int_equal(pt_format_parse("event=0x3c", &f), -EINVAL);
	assert_int_equal(pt_format_parse("config:1x", &f), -EINVAL);
	assert_int_equal(pt_format_parse(NULL, &f), -EINVAL);
	assert_int_equal(pt_format_parse("config:1", NULL), -EINVAL);
}

static void test_format_set_get(void **state)
{
	struct pt_format_field period = { .word = 0, .mask = 0xfull << 14 };
	struct pt_format_field split = { .word = 1, .mask = 0x3 | (0x3 << 8) };
	uint64_t config[3] = { 0xffffffffffffffffull, 0, 0 };

	assert_int_equal(pt_format_set(&period, 3, config), 0);
	assert_int_equal(config[0], ~(0xfull << 14) | (3ull << 14));
	assert_int_equal(pt_format_get(&period, config), 3);
	assert_int_equal(pt_format_set(&period, 16, config), -ERANGE);
	/* value bits go to the mask's bits, lowest first */
	assert_int_equal(pt_format_set(&split, 0xd, config), 0);
	assert_int_equal(config[1], 0x1 | (0x3 << 8));
	assert_int_equal(pt_format_get(&split, config), 0xd);

	assert_int_equal(pt_format_set(NULL, 1, config), -EINVAL);
	assert_int_equal(pt_format_set(&period, 1, NULL), -EINVAL);
	assert_int_equal(pt_format_get(NULL, config), 0);
	assert_int_equal(pt_format_get(&period, NULL), 0);
}

static void test_skylake(void **state)
{
	struct pt_pmu *pmu = open_tree("skylake");
	struct pt_format_field f;
	uint32_t v, num, den;

	assert_int_equal(pt_pmu__type(pmu), 8);
	assert_non_null(strstr(pt_pmu__dir(pmu), "bus/event_source/devices/intel_pt"));
	assert_int_equal(pt_pmu__cap(pmu, "mtc_periods", &v), 0);
	assert_int_equal(v, 0x249);
	assert_int_equal(pt_pmu__cap(pmu, "cycle_thresholds", &v), 0);
	assert_int_equal(v, 0x3fff);
	assert_int_equal(pt_pmu__cap(pmu, "num_address_ranges", &v), 0);
	assert_int_equal(v, 2);
	assert_int_equal(pt_pmu__cap(pmu, "no_such_cap", &v), -ENOENT);
	assert_int_equal(pt_pmu__format(pmu, "psb_period", &f), 0);
	assert_int_equal(f.mask, 0xfull << 24);
	assert_int_equal(pt_pmu__format(pmu, "notnt", &f), 0);
	assert_int_equal(f.mask, 1ull << 55);
	assert_int_equal(pt_pmu__max_nonturbo_ratio(pmu, &v), 0);
	assert_int_equal(v, 40);
	assert_int_equal(pt_pmu__tsc_art_ratio(pmu, &num, &den), 0);
	assert_int_equal(num, 334);
	assert_int_equal(den, 2);
	pt_pmu__free(pmu);
}

static void test_broadwell_old_kernel(void **state)
{
	struct pt_pmu *pmu = open_tree("broadwell");
	struct pt_format_field f;
	uint32_t v, num, den;

	assert_int_equal(pt_pmu__type(pmu), 7);
	assert_int_equal(pt_pmu__cap(pmu, "psb_cyc", &v), 0);
	assert_int_equal(v, 0);
	/* an older kernel: no ptwrite cap, no ptw/notnt/event fields */
	assert_int_equal(pt_pmu__cap(pmu, "ptwrite", &v), -ENOENT);
	assert_int_equal(pt_pmu__format(pmu, "ptw", &f), -ENOENT);
	assert_int_equal(pt_pmu__format(pmu, "notnt", &f), -ENOENT);
	assert_int_equal(pt_pmu__format(pmu, "mtc_period", &f), 0);
	assert_int_equal(pt_pmu__tsc_art_ratio(pmu, &num, &den), 0);
	assert_int_equal(num, 0);
	assert_int_equal(den, 0);
	pt_pmu__free(pmu);
}

static void test_missing(void **state)
{
	struct pt_pmu *pmu = (struct pt_pmu *)1;
	uint32_t v, num, den;
	char why[512];

	assert_int_equal(pt_pmu__new(tree("nopt"), &pmu), -ENOENT);
	assert_null(pmu);
	assert_int_equal(pt_pmu__new(tree("does-not-exist"), &pmu), -ENOENT);

	pmu = open_tree("missing-cap");
	assert_int_equal(pt_pmu__cap(pmu, "mtc_periods", &v), -ENOENT);
	assert_int_equal(pt_pmu__max_nonturbo_ratio(pmu, &v), -ENOENT);
	assert_int_equal(pt_pmu__tsc_art_ratio(pmu, &num, &den), -ENOENT);
	pt_pmu__free(pmu);

	assert_false(pt_pmu_usable(tree("nopt"), why, sizeof(why)));
	assert_non_null(strstr(why, "no Intel PT PMU: "));
	assert_non_null(strstr(why, "sysfs-nopt/bus/event_source/devices/intel_pt does not exist"));
	assert_non_null(strstr(why, "; fix: "));
	assert_non_null(strstr(why, "--backend singlestep"));
	/* no buffer: still answers */
	assert_false(pt_pmu_usable(tree("nopt"), NULL, 0));
}

static void test_sysfs_root_env(void **state)
{
	unsetenv("PTBPF_SYSFS_ROOT");
	assert_string_equal(pt_sysfs_root(), "/sys");
	setenv("PTBPF_SYSFS_ROOT", "", 1);
	assert_string_equal(pt_sysfs_root(), "/sys");
	setenv("PTBPF_SYSFS_ROOT", tree("skylake"), 1);
	assert_string_equal(pt_sysfs_root(), tree("skylake"));
	unsetenv("PTBPF_SYSFS_ROOT");
}

static void test_null_args(void **state)
{
	struct pt_pmu *pmu = open_tree("skylake");
	struct pt_format_field f;
	uint32_t v, num, den;

	assert_int_equal(pt_pmu__new(tree("skylake"), NULL), -EINVAL);
	pt_pmu__free(NULL);
	assert_null(pt_pmu__dir(NULL));
	assert_int_equal(pt_pmu__type(NULL), 0);
	assert_int_equal(pt_pmu__cap(NULL, "mtc", &v), -EINVAL);
	assert_int_equal(pt_pmu__cap(pmu, NULL, &v), -EINVAL);
	assert_int_equal(pt_pmu__cap(pmu, "mtc", NULL), -EINVAL);
	assert_int_equal(pt_pmu__format(NULL, "pt", &f), -EINVAL);
	assert_int_equal(pt_pmu__format(pmu, "pt", NULL), -EINVAL);
	assert_int_equal(pt_pmu__max_nonturbo_ratio(NULL, &v), -EINVAL);
	assert_int_equal(pt_pmu__max_nonturbo_ratio(pmu, NULL), -EINVAL);
	assert_int_equal(pt_pmu__tsc_art_ratio(NULL, &num, &den), -EINVAL);
	assert_int_equal(pt_pmu__tsc_art_ratio(pmu, &num, NULL), -EINVAL);
	pt_pmu__free(pmu);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_parse),
		cmocka_unit_test(test_format_set_get),
		cmocka_unit_test(test_skylake),
		cmocka_unit_test(test_broadwell_old_kernel),
		cmocka_unit_test(test_missing),
		cmocka_unit_test(test_sysfs_root_env),
		cmocka_unit_test(test_null_args),
	};

	return cmocka_run_group_tests_name("pt_pmu", tests, NULL, NULL);
}
