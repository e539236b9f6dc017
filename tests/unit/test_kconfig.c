// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "kconfig.h"

static void test_kconfig(void **state)
{
	const char *src = NULL;
	char val[32];
	int ret;

	assert_int_equal(kconfig_get(NULL, val, sizeof(val), NULL), -EINVAL);
	assert_int_equal(kconfig_get("", val, sizeof(val), NULL), -EINVAL);
	assert_int_equal(kconfig_get("CONFIG_X", val, 0, NULL), -EINVAL);
	ret = kconfig_get("CONFIG_BPF_SYSCALL", val, sizeof(val), &src);
	if (ret == -ENOENT) {
		printf("SKIP: no /proc/config.gz or /boot/config-* on this host\n");
		skip();
	}
	/* ptbpf cannot run without BPF, so a readable config has it */
	assert_int_equal(ret, 1);
	assert_string_equal(val, "y");
	assert_non_null(src);
	assert_int_equal(kconfig_get("CONFIG_PTBPF_NO_SUCH_OPTION", val, sizeof(val), NULL), 0);
	/* a prefix of a real option is not that option */
	assert_int_equal(kconfig_get("CONFIG_BPF_SYS", val, sizeof(val), NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kconfig),
	};

	return cmocka_run_group_tests_name("kconfig", tests, NULL, NULL);
}
