// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "tracefs.h"

static void test_tracefs_path(void **state)
{
	char events[256];
	const char *path;
	bool mounted = true;

	path = tracefs_path(&mounted);
	if (!path) {
		printf("SKIP: tracefs is not mounted and cannot be mounted here: %s\n",
		       strerror(errno));
		skip();
	}
	snprintf(events, sizeof(events), "%s/events", path);
	assert_int_equal(access(events, F_OK), 0);
	/* a second call finds the same mount and mounts nothing */
	assert_string_equal(tracefs_path(&mounted), path);
	assert_false(mounted);
	/* the out-parameter is optional */
	assert_string_equal(tracefs_path(NULL), path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tracefs_path),
	};

	return cmocka_run_group_tests_name("tracefs", tests, NULL, NULL);
}
