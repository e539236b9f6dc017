// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "hostinfo.h"

static const char skylake[] =
	"processor\t: 0\n"
	"vendor_id\t: GenuineIntel\n"
	"cpu family\t: 6\n"
	"model\t\t: 94\n"
	"model name\t: Intel(R) Core(TM) i7-6700K CPU @ 4.00GHz\n"
	"stepping\t: 3\n"
	"flags\t\t: fpu vme intel_pt\n"
	"\n"
	"processor\t: 1\n"
	"vendor_id\t: OtherVendor\n"
	"\n";

static void test_cpuid(void **state)
{
	char buf[64], model[64];

	assert_int_equal(hostinfo_cpuid(skylake, buf, sizeof(buf), model, sizeof(model)), 0);
	assert_string_equal(buf, "GenuineIntel,6,94,3");
	assert_string_equal(model, "Intel(R) Core(TM) i7-6700K CPU @ 4.00GHz");
	/* the model name is optional */
	assert_int_equal(hostinfo_cpuid(skylake, buf, sizeof(buf), NULL, 0), 0);
	/* only the first block counts */
	assert_int_equal(hostinfo_cpuid("processor\t: 0\nvendor_id\t: X\n\nstepping\t: 1\n", buf,
					sizeof(buf), NULL, 0), -ENOENT);
	assert_int_equal(hostinfo_cpuid(NULL, buf, sizeof(buf), NULL, 0), -EINVAL);
	assert_int_equal(hostinfo_cpuid(skylake, NULL, 10, NULL, 0), -EINVAL);
	assert_int_equal(hostinfo_cpuid(skylake, buf, 0, NULL, 0), -EINVAL);
}

static void test_fill(void **state)
{
	struct capture *cap = capture__new();

	cap->host.hostname = capture__strdup(cap, "kept");
	assert_int_equal(hostinfo_fill(cap), 0);
	assert_string_equal(cap->host.hostname, "kept");
	assert_non_null(cap->host.osrelease);
	assert_string_equal(cap->host.arch, "x86_64");
	/* every x86 /proc/cpuinfo has the four fields */
	assert_non_null(cap->host.cpuid);
	assert_int_equal(cap->host.nr_cpus_online, sysconf(_SC_NPROCESSORS_ONLN));
	assert_true(cap->host.nr_cpus_avail >= cap->host.nr_cpus_online);
	capture__free(cap);
	assert_int_equal(hostinfo_fill(NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpuid),
		cmocka_unit_test(test_fill),
	};

	return cmocka_run_group_tests_name("hostinfo", tests, NULL, NULL);
}
