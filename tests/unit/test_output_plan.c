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
#include <sys/stat.h>
#include <cmocka.h>

#include "output_plan.h"

static void test_replace_ext(void **state)
{
	char *s;

	s = output_replace_ext("a/b.fxt", ".data");
	assert_string_equal(s, "a/b.data");
	free(s);
	s = output_replace_ext("b.fxt.gz", ".data");
	assert_string_equal(s, "b.data");
	free(s);
	s = output_replace_ext("noext", ".data");
	assert_string_equal(s, "noext.data");
	free(s);
}

static void test_default_names(void **state)
{
	struct output_plan p;
	char *fxt, *data;

	/* 2026-11-29 12:00:00 UTC, printed in local time: only check the shape. */
	assert_int_equal(output_plan__init(&p, NULL, true, NULL, "my server/1", 42, 1795953600,
					   false), 0);
	assert_true(!strncmp(p.fxt, "ptbpf-my_server_1-42-", 21));
	assert_true(strlen(p.fxt) == strlen("ptbpf-my_server_1-42-20261129-120000.fxt"));
	assert_non_null(p.data);
	assert_true(!strcmp(p.data + strlen(p.data) - 5, ".data"));
	assert_int_equal(output_plan__paths(&p, 1, &fxt, &data), 0);
	assert_string_equal(fxt, p.fxt);
	assert_string_equal(data, p.data);
	free(fxt);
	free(data);
	output_plan__free(&p);
}

static void test_numbered(void **state)
{
	struct output_plan p;
	char *fxt, *data;

	assert_int_equal(output_plan__init(&p, "/tmp/run.fxt.gz", true, "/tmp/cap.data", "x", 1,
					   0, true), 0);
	assert_int_equal(output_plan__paths(&p, 3, &fxt, &data), 0);
	assert_string_equal(fxt, "/tmp/run.3.fxt.gz");
	assert_string_equal(data, "/tmp/cap.3.data");
	free(fxt);
	free(data);
	output_plan__free(&p);
	assert_int_equal(output_plan__init(&p, "/tmp/run.fxt", false, NULL, "x", 1, 0, false), 0);
	assert_int_equal(output_plan__paths(&p, 1, &fxt, &data), 0);
	assert_string_equal(fxt, "/tmp/run.fxt");
	assert_null(data);
	free(fxt);
	output_plan__free(&p);
}

static void test_unwritable_dir(void **state)
{
	struct output_plan p;

	assert_int_equal(output_plan__init(&p, "/nonexistent-dir/x.fxt", false, NULL, "x", 1, 0,
					   false), -ENOENT);
	assert_null(p.fxt);
	assert_int_equal(output_plan__init(&p, "/tmp/x.fxt", true, "/nonexistent-dir/x.data",
					   "x", 1, 0, false), -ENOENT);
	assert_null(p.fxt);
}

static void test_move_aside(void **state)
{
	char path[64], old[80];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/ptbpf-output-test-%d.fxt", getpid());
	snprintf(old, sizeof(old), "%s.old", path);
	unlink(old);
	assert_int_equal(output_move_aside(path), 0);	/* nothing there: nothing to do */
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(output_move_aside(path), 0);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(access(old, F_OK), 0);
	unlink(old);
}

/* A device or FIFO (-o /dev/null) is written in place: never renamed, refused for a perf.data. */
static void test_not_regular(void **state)
{
	char fifo[64], old[80];
	struct output_plan p;

	snprintf(fifo, sizeof(fifo), "/tmp/ptbpf-output-fifo-%d", getpid());
	snprintf(old, sizeof(old), "%s.old", fifo);
	unlink(fifo);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(output_move_aside(fifo), 0);
	assert_int_equal(access(old, F_OK), -1);
	assert_int_equal(access(fifo, F_OK), 0);
	assert_int_equal(output_plan__init(&p, fifo, false, NULL, "x", 1, 0, false), 0);
	output_plan__free(&p);
	assert_int_equal(output_plan__init(&p, "/tmp/x.fxt", true, fifo, "x", 1, 0, false),
			 -EINVAL);
	assert_null(p.fxt);
	unlink(old);
	unlink(fifo);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replace_ext),
		cmocka_unit_test(test_default_names),
		cmocka_unit_test(test_numbered),
		cmocka_unit_test(test_unwritable_dir),
		cmocka_unit_test(test_move_aside),
		cmocka_unit_test(test_not_regular),
	};

	return cmocka_run_group_tests_name("output", tests, NULL, NULL);
}
